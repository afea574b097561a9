//! The expressions that are not calls: names, literals, arrays, fields and swizzles, indexing,
//! operators (with the messages for mixed-type arithmetic), casts and bit casts, blocks, `if`
//! and `match` as values.

use proc_macro2::Ident;

use super::{default_scalar, fragments, is_literal, shown, Checker, Resolved};
use crate::ir::*;

impl Checker<'_, '_> {
    /// Types an expression used as a value and records its type.
    pub fn expr(&mut self, e: &mut Expr) -> Ty {
        let ty = self.expr_or_atomic(e);
        if let Ty::Atomic(_) = ty {
            self.errors.at(e.span, "read an atomic with `.load()`");
            return Ty::Unknown;
        }
        ty
    }

    /// Like [`Checker::expr`], but an atomic element (`a[i]`) is allowed: it is the receiver of
    /// an atomic method or an assignment target.
    pub(super) fn expr_or_atomic(&mut self, e: &mut Expr) -> Ty {
        let ty = self.expr_kind(e);
        let ty = match (&e.ty, ty) {
            (Ty::Unknown, ty) => ty,
            (preset, ty) => {
                let preset = preset.clone();
                self.unify(&preset, &ty).unwrap_or(preset)
            }
        };
        e.ty = ty.clone();
        ty
    }

    fn expr_kind(&mut self, e: &mut Expr) -> Ty {
        if matches!(
            e.kind,
            ExprKind::Call(..) | ExprKind::GenericCall(..) | ExprKind::Method(..)
        ) {
            return self.call_or_method(e);
        }
        if let ExprKind::Index(base, index) = &mut e.kind {
            let ty = self.index(base, index);
            if std::mem::take(&mut self.scalar_lane) {
                // A scalar's lane is the scalar: later stages see `v`, not `v[c]`.
                if let ExprKind::Index(base, _) =
                    std::mem::replace(&mut e.kind, ExprKind::Bool(false))
                {
                    e.kind = base.kind;
                }
            }
            return ty;
        }
        let span = e.span;
        let preset = e.ty.clone();
        match &mut e.kind {
            ExprKind::Int(_) if preset != Ty::Unknown => preset,
            ExprKind::Int(_) => self.fresh_int(),
            ExprKind::Float(_) if preset != Ty::Unknown => preset,
            ExprKind::Float(_) => self.fresh_float(),
            ExprKind::Bool(_) => Ty::BOOL,
            ExprKind::Path(name, local) => match self.resolve_name(name) {
                Resolved::Local(l) => {
                    *local = Some(l.id);
                    l.ty
                }
                Resolved::Binding(binding) => {
                    let message = match binding.kind {
                        BindingKind::Uniform { .. } => {
                            format!("use a field of the parameters: `{name}.field`")
                        }
                        BindingKind::Storage { .. } => {
                            format!("`{name}` is a buffer; index it: `{name}[i]`")
                        }
                    };
                    self.errors.at(span, message);
                    Ty::Unknown
                }
                // A workgroup value (`#[workgroup] s: &mut f32`), read as `*s` or `s`.
                Resolved::Shared(shared) if !matches!(shared.ty, Ty::Array(..)) => {
                    shared.ty.clone()
                }
                Resolved::Shared(_) => {
                    self.errors.at(
                        span,
                        format!("`{name}` is workgroup memory; index it: `{name}[i]`"),
                    );
                    Ty::Unknown
                }
                Resolved::None => {
                    self.not_found(&name.to_string(), span);
                    Ty::Unknown
                }
            },
            ExprKind::Field(base, field) => self.field(base, field, span),
            ExprKind::Index(base, index) => self.index(base, index),
            ExprKind::Unary(op, operand) => self.unary(*op, operand, span),
            ExprKind::Binary(op, left, right) => {
                let (l, r) = (self.expr(left), self.expr(right));
                self.binary_ty(*op, &l, &r, span, left, right)
            }
            ExprKind::Cast(value, target) => self.cast(value, target, span),
            ExprKind::Bitcast(value, target) => self.bitcast(value, target, span),
            ExprKind::Ref(..) => {
                self.errors.at(
                    span,
                    "`&` and `&mut` lend an array or a buffer to a helper, as its argument; \
                     elsewhere use the value itself",
                );
                Ty::Unknown
            }
            // Typed by `call_or_method`; a builtin is only ever checked once.
            ExprKind::Call(..)
            | ExprKind::GenericCall(..)
            | ExprKind::Method(..)
            | ExprKind::Builtin(..) => preset,
            ExprKind::If(cond, then, otherwise) => {
                self.condition(cond);
                let a = self.block_expr(then);
                let b = self.block_expr(otherwise);
                self.expect(
                    &a,
                    &b,
                    otherwise.tail.span,
                    "both branches of `if` must have one type",
                )
            }
            ExprKind::Match(scrutinee, arms) => {
                self.match_scrutinee(scrutinee, arms, span);
                let mut ty = Ty::Unknown;
                for arm in arms.iter_mut() {
                    let arm_ty = self.block_expr(&mut arm.body);
                    ty = self.expect(
                        &ty,
                        &arm_ty,
                        arm.body.tail.span,
                        "every arm of `match` must have one type",
                    );
                }
                ty
            }
            ExprKind::Block(block) => self.block_expr(block),
            ExprKind::Array(elements) => {
                let mut ty = Ty::Unknown;
                for element in elements.iter_mut() {
                    let element_ty = self.expr(element);
                    ty = self.expect(
                        &ty,
                        &element_ty,
                        element.span,
                        "array elements must have one type",
                    );
                }
                Ty::Array(Box::new(ty), elements.len() as u32)
            }
            ExprKind::Repeat(value, n) => {
                let ty = self.expr(value);
                Ty::Array(Box::new(ty), *n)
            }
        }
    }

    fn block_expr(&mut self, block: &mut BlockExpr) -> Ty {
        self.scoped(|this| {
            block.stmts.iter_mut().for_each(|stmt| this.stmt(stmt));
            this.expr(&mut block.tail)
        })
    }

    fn field(&mut self, base: &mut Expr, field: &Ident, span: Span) -> Ty {
        if let ExprKind::Path(name, _) = &base.kind {
            if let Resolved::Binding(Binding {
                kind: BindingKind::Uniform { params },
                ..
            }) = self.resolve_name(name)
            {
                let params = &self.env.params[*params];
                return match params.fields.iter().find(|f| f.name == *field) {
                    Some(f) => f.ty.clone(),
                    None if params.refused(field) => Ty::Unknown,
                    None => {
                        let names = params.field_list();
                        self.errors.at(
                            field.span(),
                            format!(
                                "`{}` has no field `{field}`; its fields are {}",
                                params.name, names
                            ),
                        );
                        Ty::Unknown
                    }
                };
            }
        }
        let base_ty = self.expr(base);
        match self.shallow(&base_ty) {
            Ty::LiteralVector(n, lanes) => match swizzle(&field.to_string(), n) {
                Some(1) => *lanes,
                Some(len) => Ty::LiteralVector(len, lanes),
                None => {
                    self.errors.at(
                        field.span(),
                        format!("a `Vec{n}` has components {}", &"xyzw"[..n as usize]),
                    );
                    Ty::Unknown
                }
            },
            Ty::Vector(n, s) => match swizzle(&field.to_string(), n) {
                Some(1) => Ty::Scalar(s),
                Some(len) => Ty::Vector(len, s),
                None => {
                    self.errors.at(
                        field.span(),
                        format!("a `Vec{n}` has components {}", &"xyzw"[..n as usize]),
                    );
                    Ty::Unknown
                }
            },
            Ty::Unknown => Ty::Unknown,
            other => {
                self.errors
                    .at(span, format!("`{}` has no fields", other.rust_name()));
                Ty::Unknown
            }
        }
    }

    fn index(&mut self, base: &mut Expr, index: &mut Expr) -> Ty {
        let index_ty = self.expr(index);
        if matches!(
            self.shallow(&index_ty),
            Ty::Vector(..) | Ty::LiteralVector(..)
        ) {
            // naga would say "Accessing with index can't be done" of the WGSL.
            self.errors.at(
                index.span,
                format!(
                    "an index is one `u32`, not a vector (`{}`); index with one of its lanes: \
                     `{}[{}.x]`",
                    self.shallow(&index_ty).rust_name(),
                    base.rust_text(),
                    index.rust_text()
                ),
            );
        } else if !self.is_integer(&index_ty) {
            self.errors.at(
                index.span,
                format!(
                    "an index must be an integer, not `{}`",
                    self.shallow(&index_ty).rust_name()
                ),
            );
        } else if let Ty::IntVar(_) = self.shallow(&index_ty) {
            self.unify(&index_ty, &Ty::U32);
        } else if self.shallow(&index_ty) == Ty::I32 {
            // Rust indexes with `usize` only, and a negative WGSL index is out of bounds.
            self.errors.at(
                index.span,
                format!(
                    "an index must be a `u32` (or `usize`), not `i32`; convert it: `{} as u32`",
                    index.rust_text()
                ),
            );
        }
        if let ExprKind::Path(name, _) = &base.kind {
            match self.resolve_name(name) {
                Resolved::Binding(Binding {
                    kind: BindingKind::Storage { element, .. },
                    ..
                }) => {
                    base.ty = Ty::Unknown;
                    return element.clone();
                }
                Resolved::Shared(shared) => {
                    if let Ty::Array(element, _) = &shared.ty {
                        // Its length bounds constant indices (`check::consts`).
                        base.ty = shared.ty.clone();
                        return (**element).clone();
                    }
                    self.errors.at(
                        base.span,
                        format!(
                            "`{name}` is one `{0}` of workgroup memory, not an array: read and \
                             write it as `*{name}` (or declare `&mut [{0}; N]` for an array)",
                            shared.ty.rust_name()
                        ),
                    );
                    return Ty::Unknown;
                }
                _ => {}
            }
        }
        let base_ty = self.expr(base);
        match self.shallow(&base_ty) {
            Ty::Array(element, _) => *element,
            Ty::Vector(_, s) => Ty::Scalar(s),
            Ty::LiteralVector(_, lanes) => *lanes,
            Ty::Unknown => Ty::Unknown,
            Ty::Scalar(s) if self.env.lanes && s != Scalar::Bool => {
                if let Some(call) = first_call(index) {
                    self.errors.at(
                        call,
                        "the lane of a scalar is the scalar, and its index is not evaluated; \
                         call this before, into a `let`",
                    );
                }
                self.scalar_lane = true;
                Ty::Scalar(s)
            }
            Ty::IntVar(_) | Ty::FloatVar(_) if self.env.lanes => {
                self.scalar_lane = true;
                base_ty
            }
            other => {
                let lanes = if self.env.lanes || !matches!(other, Ty::Scalar(_)) {
                    ""
                } else {
                    " (a scalar is read as its own lane 0, `v[0]`, only in a body over an \
                     element type: a kernel's `T` or a generic helper's)"
                };
                self.errors.at(
                    base.span,
                    format!("a `{}` cannot be indexed{lanes}", other.rust_name()),
                );
                Ty::Unknown
            }
        }
    }

    fn unary(&mut self, op: UnOp, operand: &mut Expr, span: Span) -> Ty {
        let ty = self.expr(operand);
        let shallow = self.shallow(&ty);
        let ok = match op {
            UnOp::Neg => {
                matches!(
                    shallow,
                    Ty::IntVar(_) | Ty::FloatVar(_) | Ty::LiteralVector(..) | Ty::Unknown
                ) || matches!(
                    shallow.scalar(),
                    Some(Scalar::F32 | Scalar::F16 | Scalar::I32)
                )
            }
            UnOp::Not => self.is_integer(&shallow) || shallow.scalar() == Some(Scalar::Bool),
        };
        if shallow.holds_fragment() {
            let symbol = match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
            };
            self.errors
                .at(span, fragments::no_operator(&shallow, symbol));
            return Ty::Unknown;
        }
        if !ok {
            let message = match op {
                UnOp::Neg => format!(
                    "a `{}` cannot be negated; convert it first: `-(x as i32)`",
                    shallow.rust_name()
                ),
                UnOp::Not => format!(
                    "`!` applies to `bool` and integers, not `{}`",
                    shallow.rust_name()
                ),
            };
            self.errors.at(span, message);
            return Ty::Unknown;
        }
        ty
    }

    /// The type of `left op right`, reporting a mismatch at `span`.
    pub(super) fn binary_ty(
        &mut self,
        op: BinOp,
        l: &Ty,
        r: &Ty,
        span: Span,
        left: &Expr,
        right: &Expr,
    ) -> Ty {
        let (ls, rs) = (self.shallow(l), self.shallow(r));
        if ls.holds_fragment() || rs.holds_fragment() {
            return self.fragment_arithmetic(op, &ls, &rs, span);
        }
        match op {
            BinOp::And | BinOp::Or => {
                self.expect(&Ty::BOOL, &ls, left.span, "`&&` and `||` take `bool`s");
                self.expect(&Ty::BOOL, &rs, right.span, "`&&` and `||` take `bool`s");
                Ty::BOOL
            }
            BinOp::Shl | BinOp::Shr => {
                if !self.is_integer(&ls) || !self.is_integer(&rs) {
                    self.errors.at(span, "shifts take integers on both sides");
                    return Ty::Unknown;
                }
                if let Ty::IntVar(_) = rs {
                    self.unify(&rs, &Ty::U32);
                }
                ls
            }
            _ => {
                // A vector combined with a scalar of its element type, as WGSL allows.
                let vector = |ty: &Ty| matches!(ty, Ty::Vector(..) | Ty::LiteralVector(..));
                let mixed = match (&ls, &rs) {
                    (Ty::Vector(n, s), other) | (other, Ty::Vector(n, s)) if !vector(other) => self
                        .unify(&Ty::Scalar(*s), other)
                        .map(|_| Ty::Vector(*n, *s)),
                    (Ty::LiteralVector(n, lanes), other) | (other, Ty::LiteralVector(n, lanes))
                        if !vector(other) =>
                    {
                        let lanes = self.unify(lanes, other);
                        lanes.map(|lanes| self.shallow(&Ty::LiteralVector(*n, Box::new(lanes))))
                    }
                    _ => None,
                };
                let Some(ty) = mixed.or_else(|| self.unify(&ls, &rs)) else {
                    self.mismatch(op, &ls, &rs, span, left, right);
                    return Ty::Unknown;
                };
                let bitwise = matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor);
                if bitwise && !(self.is_integer(&ty) || ty == Ty::BOOL) {
                    self.errors.at(
                        span,
                        format!(
                            "`{}` takes integers or `bool`s, not `{}`",
                            op.symbol(),
                            ty.rust_name()
                        ),
                    );
                } else if !bitwise && !op.is_comparison() && !self.is_numeric(&ty) {
                    self.errors.at(
                        span,
                        format!("`{}` takes numbers, not `{}`", op.symbol(), ty.rust_name()),
                    );
                }
                match (op.is_comparison(), &ty) {
                    (true, Ty::Vector(n, _) | Ty::LiteralVector(n, _)) => {
                        Ty::Vector(*n, Scalar::Bool)
                    }
                    (true, _) => Ty::BOOL,
                    (false, _) => ty,
                }
            }
        }
    }

    /// Reports operands of two types, suggesting a conversion of the one that can take the
    /// other's type (only the literal, when one operand is a literal).
    fn mismatch(&mut self, op: BinOp, l: &Ty, r: &Ty, span: Span, left: &Expr, right: &Expr) {
        let (a, b) = (left.rust_text(), right.rust_text());
        let sym = op.symbol();
        let what = format!("{} and {} cannot be {}", shown(l), shown(r), op.verb());
        // Nothing converts to `bool`; a `bool` beside `&`, `|` or `^` is most often a
        // condition whose comparison took the operator first (`x == 3 & ok` reads as
        // `x == (3 & ok)`).
        if *l == Ty::BOOL || *r == Ty::BOOL {
            let message = match op {
                BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => format!(
                    "{what}; `{sym}` binds tighter than `==`, `<` and the other comparisons, \
                     so a comparison written next to `{a} {sym} {b}` takes only its side of \
                     it: to join two conditions, put each comparison in parentheses"
                ),
                _ => what,
            };
            self.errors.at(span, message);
            return;
        }
        let scalars = matches!(l, Ty::Scalar(_) | Ty::IntVar(_) | Ty::FloatVar(_))
            && matches!(r, Ty::Scalar(_) | Ty::IntVar(_) | Ty::FloatVar(_));
        // A float literal is not made an integer: the integer operand is converted instead.
        let float = |t: &Ty| matches!(t, Ty::FloatVar(_));
        let message = match (scalars, is_literal(l), is_literal(r)) {
            (false, ..) => what,
            (true, false, true) if !float(r) => {
                format!("{what}; write `{a} {sym} {}`", converted(right, l))
            }
            (true, true, false) if !float(l) => {
                format!("{what}; write `{} {sym} {b}`", converted(left, r))
            }
            (true, false, true) => format!("{what}; write `{} {sym} {b}`", converted(left, r)),
            (true, true, false) => format!("{what}; write `{a} {sym} {}`", converted(right, l)),
            (true, ..) => format!(
                "{what}; write `{} {sym} {b}` or `{a} {sym} {}`",
                converted(left, r),
                converted(right, l)
            ),
        };
        self.errors.at(span, message);
    }

    fn cast(&mut self, value: &mut Expr, target: &Ty, span: Span) -> Ty {
        let from = self.expr(value);
        let from = self.settled(&from);
        if from == Ty::Unknown {
            return target.clone();
        }
        let scalar = |ty: &Ty| {
            matches!(
                ty,
                Ty::Scalar(_) | Ty::IntVar(_) | Ty::FloatVar(_) | Ty::Unknown
            )
        };
        let (from_scalar, to_scalar) = match (&from, target) {
            (f, t) if scalar(f) && scalar(t) => (f.clone(), t.clone()),
            // Vectors convert lane by lane, like `vec4<f16>(v)` in WGSL.
            (Ty::Vector(n, f), Ty::Vector(m, t)) if n == m => (Ty::Scalar(*f), Ty::Scalar(*t)),
            // A scalar fills every lane (`x as T` where `T` is `Vec4<f32>`).
            (f, Ty::Vector(_, t)) if scalar(f) => (f.clone(), Ty::Scalar(*t)),
            (Ty::Vector(n, _), Ty::Vector(m, _)) => {
                self.errors.at(
                    span,
                    format!(
                        "`as` converts a vector lane by lane, to a vector of as many lanes: \
                         `{}` has {n} and `{}` {m}; take lanes with a swizzle first (`v.xy`)",
                        from.rust_name(),
                        target.rust_name()
                    ),
                );
                return Ty::Unknown;
            }
            _ => {
                self.errors.at(
                    span,
                    format!(
                        "`as` converts between `f32`, `f16`, `u32`, `i32` and `bool`, between \
                         vectors of them with as many lanes, and from a scalar to a vector \
                         (every lane), not `{}` to `{}`",
                        from.rust_name(),
                        target.rust_name()
                    ),
                );
                return Ty::Unknown;
            }
        };
        if to_scalar == Ty::BOOL && from_scalar != Ty::BOOL {
            self.errors.at(
                span,
                "numbers cannot be cast to `bool`; compare instead: `x != 0`",
            );
        }
        target.clone()
    }

    /// `bitcast::<T>(x)`: numeric scalars or vectors of one size (`f32` <-> `u32`,
    /// `Vec2<f16>` <-> `u32`, `Vec4<f16>` <-> `Vec2<f32>`, ...). An integer literal is a `u32`.
    fn bitcast(&mut self, value: &mut Expr, target: &Ty, span: Span) -> Ty {
        let from = self.expr(value);
        let from = match self.settled(&from) {
            Ty::IntVar(_) => self.unify(&from, &Ty::U32).unwrap_or(Ty::U32),
            Ty::FloatVar(_) => self.unify(&from, &Ty::F32).unwrap_or(Ty::F32),
            other => other,
        };
        let numeric = |ty: &Ty| matches!(ty, Ty::Scalar(s) | Ty::Vector(_, s) if s.is_numeric());
        if from == Ty::Unknown {
            return target.clone();
        }
        if !numeric(target) || !numeric(&from) || from.size_align().0 != target.size_align().0 {
            let size = |ty: &Ty| match ty.size_align().0 {
                0 => "no size".to_owned(),
                bytes => format!("{bytes} bytes"),
            };
            self.errors.at(
                span,
                format!(
                    "`bitcast` reads the bits of a number or vector as another of the same size, \
                     but `{}` has {} and `{}` {}",
                    from.rust_name(),
                    size(&from),
                    target.rust_name(),
                    size(target)
                ),
            );
            return Ty::Unknown;
        }
        if (from.scalar() == Some(Scalar::F16)) != (target.scalar() == Some(Scalar::F16)) {
            self.errors.at(
                span,
                "wgpu's shader compiler (naga 30) cannot bit-cast between `f16` and 32-bit types; \
                 read two halves from a `u32` with `unpack_2x16_float(word)` and write them with \
                 `pack_2x16_float(pair)`",
            );
            return Ty::Unknown;
        }
        target.clone()
    }
}

/// The span of the first call in `e`, if it makes any.
fn first_call(e: &Expr) -> Option<Span> {
    let mut found = None;
    visit_expr(e, &mut |e| {
        if found.is_none() && matches!(e.kind, ExprKind::Call(..) | ExprKind::Method(..)) {
            found = Some(e.span);
        }
    });
    found
}

/// `e` converted to the scalar of `ty`, as Rust: `x as f32`, or `2.0` for the literal `2`.
fn converted(e: &Expr, ty: &Ty) -> String {
    let Some(target) = ty.scalar().or(default_scalar(ty)) else {
        return e.rust_text();
    };
    match e.kind {
        ExprKind::Int(v) if target.is_float() => format!("{v}.0"),
        _ => format!("{} as {}", e.rust_text(), target.rust_name()),
    }
}
/// The length of a swizzle such as `xy` on a vector of `n` components, if it is valid.
fn swizzle(field: &str, n: u8) -> Option<u8> {
    let valid = |sets: &str| field.chars().all(|c| sets[..n as usize].contains(c));
    let ok = (1..=4).contains(&field.len()) && (valid("xyzw") || valid("rgba"));
    ok.then_some(field.len() as u8)
}
