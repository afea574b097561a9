//! The operations on matrix fragments (`features(cooperative_matrix)`). naga checks little of
//! them: it takes a loaded fragment's element type from the memory it is loaded from, checks
//! only the roles of a multiply-add (not its sizes or element types), and lets a store escape
//! the uniformity check. Each of those is checked here instead, at the user's tokens.
//!
//! `coop_zero()` and the loads make a fragment of the type their context asks for (`let a:
//! FragA16<f16> = ..`, an assignment to a fragment, a helper's parameter, a return value, and
//! through the branches of an `if` or `match` that makes one of those), as
//! `Default::default()` does in Rust: [`Checker::expected`] hands that type down.

use proc_macro2::Ident;

use super::{place_root, Checker, Resolved};
use crate::ir::builtins::{self, Builtin, Form, Signature};
use crate::ir::*;

/// The message for operator `symbol` applied to a fragment (or an array of them), which has
/// only the arithmetic of [`Checker::fragment_arithmetic`].
pub(super) fn no_operator(ty: &Ty, symbol: &str) -> String {
    format!(
        "a `{}` has no `{symbol}`: its elements are spread over a subgroup, so fragments only add \
         and subtract fragments of their type and multiply by a scalar of their element type; \
         multiply fragments with `coop_multiply_add`, or store them and compute on the elements",
        ty.rust_name()
    )
}

impl Checker<'_, '_> {
    /// The type of `l op r` where one side holds a fragment: `a + b` and `a - b` of two
    /// fragments of one type, `a * s` and `s * a` of a fragment and a scalar of its element
    /// type, element by element; anything else is an error at `span`.
    pub(super) fn fragment_arithmetic(&mut self, op: BinOp, l: &Ty, r: &Ty, span: Span) -> Ty {
        match (op, l, r) {
            (BinOp::Add | BinOp::Sub, Ty::Fragment(a), Ty::Fragment(b)) => {
                if a == b {
                    return l.clone();
                }
                self.errors.at(
                    span,
                    format!(
                        "`{}` takes two fragments of one type, not `{}` and `{}`",
                        op.symbol(),
                        a.rust_name(),
                        b.rust_name()
                    ),
                );
            }
            (BinOp::Mul, Ty::Fragment(_), Ty::Fragment(_)) => self.errors.at(
                span,
                "fragments are not multiplied with `*`: `coop_multiply_add(a, b, acc)` adds the \
                 product of an A and a B fragment to an accumulator",
            ),
            (BinOp::Mul, Ty::Fragment(f), other) | (BinOp::Mul, other, Ty::Fragment(f))
                if !other.holds_fragment() =>
            {
                if self.unify(&Ty::Scalar(f.scalar), other).is_some() {
                    return Ty::Fragment(*f);
                }
                self.errors.at(
                    span,
                    format!(
                        "a `{}` is scaled by a `{}`, not a `{}`",
                        f.rust_name(),
                        f.scalar.rust_name(),
                        other.rust_name()
                    ),
                );
            }
            _ => {
                let fragment = if l.holds_fragment() { l } else { r };
                self.errors.at(span, no_operator(fragment, op.symbol()));
            }
        }
        Ty::Unknown
    }

    /// Records `ty` as the type `e` must have when `e` is a fragment-making call (or an array
    /// of them), so the call knows what to make.
    pub(super) fn expected(&self, e: &mut Expr, ty: &Ty) {
        if !ty.holds_fragment() {
            return;
        }
        match (&mut e.kind, ty) {
            (ExprKind::Call(name, _), Ty::Fragment(_)) if self.makes_fragment(name) => {
                e.ty = ty.clone();
            }
            (ExprKind::Repeat(value, _), Ty::Array(element, _)) => self.expected(value, element),
            (ExprKind::Array(values), Ty::Array(element, _)) => {
                for value in values {
                    self.expected(value, element);
                }
            }
            // A value made in branches: each branch's value.
            (ExprKind::If(_, then, otherwise), _) => {
                self.expected(&mut then.tail, ty);
                self.expected(&mut otherwise.tail, ty);
            }
            (ExprKind::Match(_, arms), _) => {
                for arm in arms {
                    self.expected(&mut arm.body.tail, ty);
                }
            }
            (ExprKind::Block(block), _) => self.expected(&mut block.tail, ty),
            _ => {}
        }
    }

    /// Whether `name` calls `coop_zero`, a load or a multiply-add (whose accumulator operand
    /// takes the context's type), not a helper or local of that name.
    fn makes_fragment(&self, name: &Ident) -> bool {
        let key = name.to_string();
        let builtin = builtins::find(Form::Function, &key);
        !self.env.helpers.contains_key(&key)
            && self.generic(name).is_none()
            && !matches!(self.resolve_name(name), Resolved::Local(_))
            && builtin.is_some_and(|b| {
                matches!(
                    b.signature,
                    Signature::FragmentZero | Signature::FragmentLoad(_) | Signature::MultiplyAdd
                )
            })
    }

    /// Types a call of a fragment operation; `expected` is the type its context asks for.
    pub(super) fn cooperative(
        &mut self,
        builtin: &Builtin,
        name: &Ident,
        args: &mut [Expr],
        expected: &Ty,
        span: Span,
    ) -> Ty {
        let wanted = match expected {
            Ty::Fragment(fragment) => Some(*fragment),
            _ => None,
        };
        let arity = match builtin.signature {
            Signature::FragmentZero => 0,
            Signature::FragmentLoad(_) => 2,
            _ => 3,
        };
        if !self.arity(name, args, arity, span) {
            for arg in args.iter_mut() {
                if !matches!(arg.kind, ExprKind::Ref(..)) {
                    self.expr(arg);
                }
            }
            return wanted.map_or(Ty::Unknown, Ty::Fragment);
        }
        match builtin.signature {
            Signature::FragmentZero => self.made(name, wanted, span, "coop_zero()"),
            Signature::FragmentLoad(_) => {
                let element = self.memory(name, &mut args[0], false);
                self.stride(&mut args[1]);
                let ty = self.made(name, wanted, span, &format!("{name}(&a[i], stride)"));
                if let (Ty::Fragment(fragment), Some((scalar, place))) = (&ty, element) {
                    self.same_elements(name, fragment, scalar, place);
                }
                ty
            }
            Signature::FragmentStore(_) => {
                let stored = self.expr(&mut args[0]);
                let fragment = match self.shallow(&stored) {
                    Ty::Fragment(fragment) => Some(fragment),
                    Ty::Unknown => None,
                    other => {
                        self.errors.at(
                            args[0].span,
                            format!(
                                "`{name}` stores a fragment (`FragC16<f32>`, ...), not `{}`",
                                other.rust_name()
                            ),
                        );
                        None
                    }
                };
                let element = self.memory(name, &mut args[1], true);
                self.stride(&mut args[2]);
                if let (Some(fragment), Some((scalar, place))) = (fragment, element) {
                    self.same_elements(name, &fragment, scalar, place);
                }
                Ty::Unit
            }
            _ => self.multiply_add(name, args, wanted),
        }
    }

    /// The fragment `coop_zero` or a load makes: the one its context asks for.
    fn made(&mut self, name: &Ident, wanted: Option<Fragment>, span: Span, call: &str) -> Ty {
        match wanted {
            Some(fragment) => Ty::Fragment(fragment),
            None => {
                self.errors.at(
                    span,
                    format!(
                        "`{name}` makes the fragment its context asks for, and nothing here says \
                         which: write its type, `let a: FragA16<f16> = {call};`"
                    ),
                );
                Ty::Unknown
            }
        }
    }

    /// The place a load reads or a store writes, `&a[i]` / `&mut a[i]`: one element of a
    /// buffer or a workgroup array, a scalar or a vector of adjacent elements. Returns its
    /// type and the place's span.
    fn memory(&mut self, name: &Ident, arg: &mut Expr, write: bool) -> Option<(Ty, Span)> {
        let amp = if write { "&mut " } else { "&" };
        let example = format!("`{amp}a[i]`");
        let place = match &mut arg.kind {
            ExprKind::Ref(mutable, place) if *mutable || !write => place,
            ExprKind::Ref(_, place) => {
                self.errors.at(
                    arg.span,
                    format!("`{name}` writes to memory: lend the place as `&mut`"),
                );
                place
            }
            _ => {
                self.expr(arg);
                self.errors.at(
                    arg.span,
                    format!("`{name}` takes the place of the fragment's first element, {example}"),
                );
                return None;
            }
        };
        let root = place_root(place).cloned();
        let memory = root.as_ref().map(|root| self.resolve_name(root));
        let ok = match (&place.kind, memory) {
            (
                ExprKind::Index(..),
                Some(
                    Resolved::Binding(Binding {
                        kind: BindingKind::Storage { .. },
                        ..
                    })
                    | Resolved::Shared(_),
                ),
            ) => true,
            (_, Some(Resolved::None)) => {
                self.expr(place);
                return None;
            }
            _ => false,
        };
        if !ok {
            if !matches!(place.kind, ExprKind::Path(..)) {
                self.expr(place);
            }
            self.errors.at(
                place.span,
                format!(
                    "`{name}` {} one element of a buffer or a workgroup array, {example}: \
                     fragments are shared by a subgroup, so they live in memory every \
                     invocation sees",
                    if write { "writes to" } else { "reads from" },
                ),
            );
            return None;
        }
        let ty = if write {
            self.place(place)
        } else {
            self.expr(place)
        };
        match self.shallow(&ty) {
            // A vector holds adjacent elements; the stride then counts vectors.
            held @ (Ty::Scalar(_) | Ty::Vector(..)) => Some((held, place.span)),
            Ty::Unknown => None,
            other => {
                self.errors.at(
                    place.span,
                    format!(
                        "fragments are {} elements (`f16`, `f32`) or vectors of them, and this \
                         place holds `{}`; index down to one element or vector",
                        if write { "written to" } else { "read from" },
                        other.rust_name()
                    ),
                );
                None
            }
        }
    }

    /// The stride: elements (or vectors, for a place of vectors) from one row (or column) to
    /// the next, a `u32`.
    fn stride(&mut self, arg: &mut Expr) {
        let ty = self.expr(arg);
        self.expect(
            &Ty::U32,
            &ty,
            arg.span,
            "the stride counts elements from one row (or column) to the next",
        );
    }

    /// The memory holds the fragment's element type (naga would convert silently).
    fn same_elements(&mut self, name: &Ident, fragment: &Fragment, memory: Ty, span: Span) {
        let Some(scalar) = memory.scalar() else {
            return;
        };
        if fragment.scalar != scalar {
            self.errors.at(
                span,
                format!(
                    "`{name}` moves `{}` elements, and this place holds `{}`; stage the values \
                     as `{}` first, or use a fragment of `{}`",
                    fragment.rust_name(),
                    memory.rust_name(),
                    fragment.scalar.rust_name(),
                    scalar.rust_name()
                ),
            );
        }
    }

    /// `coop_multiply_add(a, b, c)`: an A, a B and a C fragment of one size, A and B of one
    /// element type. The result is `c`'s type, so the type the context asks for (`wanted`)
    /// is the one `c` makes when it is `coop_zero()` or a load.
    fn multiply_add(&mut self, name: &Ident, args: &mut [Expr], wanted: Option<Fragment>) -> Ty {
        let mut operands = [None; 3];
        for (index, (arg, role)) in args.iter_mut().zip([Role::A, Role::B, Role::C]).enumerate() {
            if let (Role::C, Some(wanted)) = (role, wanted) {
                self.expected(arg, &Ty::Fragment(wanted));
            }
            let ty = self.expr(arg);
            match self.shallow(&ty) {
                Ty::Fragment(fragment) if fragment.role == role => {
                    operands[index] = Some(fragment);
                }
                Ty::Unknown => {}
                other => self.errors.at(
                    arg.span,
                    format!(
                        "the {} operand of `{name}(a, b, c)` is a `Frag{}` fragment, found `{}`",
                        ["first", "second", "third"][index],
                        role.letter(),
                        other.rust_name()
                    ),
                ),
            }
        }
        let [Some(a), Some(b), Some(c)] = operands else {
            return match operands[2] {
                Some(c) => Ty::Fragment(c),
                None => Ty::Unknown,
            };
        };
        for (other, arg) in [(b, &args[1]), (c, &args[2])] {
            if other.size != a.size {
                self.errors.at(
                    arg.span,
                    format!(
                        "`{name}` multiplies fragments of one size: `{}` is {2}x{2} and `{}` is \
                         {3}x{3}",
                        a.rust_name(),
                        other.rust_name(),
                        a.size,
                        other.size
                    ),
                );
                return Ty::Fragment(c);
            }
        }
        if a.scalar != b.scalar {
            self.errors.at(
                args[1].span,
                format!(
                    "`{name}` multiplies operands of one element type: `{}` and `{}`",
                    a.rust_name(),
                    b.rust_name()
                ),
            );
        }
        Ty::Fragment(c)
    }
}
