//! Type checking of bodies: resolves every name to a local, binding or workgroup array, infers
//! the types of unsuffixed literals and `let`s the way Rust does, rejects what Rust or WGSL
//! would reject (mixed-type arithmetic, writes to read-only bindings, assignments to immutable
//! locals, `break` outside loops, ...) at the user's tokens, and writes the resolved type of
//! every expression, `let` and loop variable into the IR for `lower/`.
//!
//! This file holds the [`Checker`]: its scopes, the inference variables of literals, and the
//! finishing pass that settles them. The statements are typed in `statements.rs`, the
//! expressions in `expressions.rs`, calls of builtins and methods in `calls.rs`, calls of
//! helpers in `helpers.rs` and the operations on matrix fragments in `fragments.rs`.

use std::cell::RefCell;
use std::collections::HashMap;

use proc_macro2::Ident;

use crate::diag::Errors;
use crate::ir::builtins::Receivers;
use crate::ir::*;

mod calls;
mod expressions;
mod fragments;
mod helpers;
mod statements;

/// A helper's parameters and return type.
pub type HelperSignature = (Vec<FnParam>, Option<Ty>);

/// What a body can see besides its locals.
pub struct Env<'m> {
    pub params: &'m [ParamsStruct],
    /// Helper signatures by name.
    pub helpers: &'m HashMap<String, HelperSignature>,
    /// The generic helpers the body may call.
    pub generic: &'m [GenericHelper],
    /// The copies of generic helpers made so far, shared by every body of one variant.
    pub copies: &'m RefCell<GenericCopies>,
    /// The kernel's bindings and workgroup arrays (empty for helpers).
    pub bindings: &'m [Binding],
    pub shared: &'m [SharedVar],
    /// Whether the body is a kernel's (invocation ids are only available there).
    pub in_kernel: bool,
    /// The features the kernel declares (for a helper: the kernel it is copied into). `None`
    /// for the module's own copy of its helpers, which no kernel's features bound (each
    /// kernel's copy is checked against that kernel's).
    pub features: Option<Vec<Feature>>,
    /// For a helper copied into a kernel: the kernel's name, where a feature the helper needs
    /// and the kernel lacks is reported (the helper may come from another crate, and the
    /// kernel's attribute is what the user changes).
    pub caller: Option<&'m Ident>,
    /// The helper's own name, for those messages (`None` in kernels).
    pub helper: Option<&'m Ident>,
    /// The module's sets of constants (empty for the module's own copy of its helpers), for
    /// the message of a set's constant that the kernel does not have.
    pub sets: &'m [ConstantSet],
    /// Whether the body is written over an element type (a kernel's `T`, or a generic
    /// helper's `E`) that may be a scalar: there a scalar reads and writes as its own lane
    /// 0, `v[c]`, as a vector's lanes do.
    pub lanes: bool,
}

/// The copies of generic helpers that calls have made: a copy is made when a call first passes
/// its element types, and typed after the body that made it.
#[derive(Default)]
pub struct GenericCopies {
    /// Each copy's signature by its name (`None` where the copy did not parse).
    signatures: HashMap<String, Option<HelperSignature>>,
    /// The copies whose bodies are not typed yet.
    unchecked: Vec<Function>,
}

impl GenericCopies {
    /// The copies made since the last call, to be typed.
    pub fn take_unchecked(&mut self) -> Vec<Function> {
        std::mem::take(&mut self.unchecked)
    }
}

#[derive(Clone)]
struct Local {
    id: LocalId,
    ty: Ty,
    mutable: bool,
}

/// What a name in a body refers to.
enum Resolved<'a> {
    Local(Local),
    Binding(&'a Binding),
    Shared(&'a SharedVar),
    None,
}

pub struct Checker<'m, 'e> {
    env: &'m Env<'m>,
    errors: &'e mut Errors,
    scopes: Vec<HashMap<String, Local>>,
    /// Every local's name, indexed by `LocalId`.
    pub locals: Vec<Ident>,
    /// Resolutions of inference variables, indexed by variable number.
    vars: Vec<Option<Ty>>,
    loop_depth: u32,
    /// The function's return type; `None` in kernels and unit helpers.
    ret: Option<Ty>,
    /// Checks of literals whose type was not decided where they were used, made again once it
    /// is ([`Checker::finish_block`]).
    deferred: Vec<Deferred>,
    /// Set by [`Checker::index`] when it typed a scalar's lane (`v[c]` over an element type),
    /// which [`Checker::expr_kind`] then replaces by the scalar itself.
    scalar_lane: bool,
}

/// A check that waits for a literal's type: a use that is valid for some integer or float
/// types only.
enum Deferred {
    /// A method that applies to `receivers` only, on a receiver of type `ty`.
    Receiver {
        ty: Ty,
        receivers: Receivers,
        method: Ident,
    },
    /// A negative `match` value, valid only if the scrutinee's type `ty` is signed.
    NegativeValue { ty: Ty, span: Span },
}

impl<'m, 'e> Checker<'m, 'e> {
    /// Reports `name`, which nothing in scope declares, at `span`. A constant of a set the
    /// kernel does not name is reported with the set: at the kernel's name when a helper uses
    /// it (the helper may be another crate's, and the kernel's attribute is what changes).
    fn not_found(&mut self, name: &str, span: impl Into<Span>) {
        let set = self.env.sets.iter().filter(|s| s.named()).find(|set| {
            set.identity.iter().any(|c| c == name) || set.derived.iter().any(|(c, _)| c == name)
        });
        match (set, self.env.caller, self.env.helper) {
            (Some(set), Some(kernel), Some(helper)) => self.errors.at(
                kernel.span(),
                format!(
                    "`{kernel}` calls `{helper}`, which uses `{name}`, a constant of `{set}`: a \
                     helper takes such constants from the kernel that calls it. Give `{kernel}` \
                     `constants = {set}`, or call `{helper}` from a kernel that has it",
                    set = set.name
                ),
            ),
            (Some(set), ..) => self.errors.at(
                span,
                format!(
                    "`{name}` is a constant of `{set}`, which this kernel does not name: add \
                     `constants = {set}` to its `#[kernel(..)]`",
                    set = set.name
                ),
            ),
            (None, ..) => self
                .errors
                .at(span, format!("cannot find `{name}` in this kernel")),
        }
    }

    pub fn new(env: &'m Env<'m>, errors: &'e mut Errors, ret: Option<Ty>) -> Self {
        Checker {
            env,
            errors,
            scopes: vec![HashMap::new()],
            locals: Vec::new(),
            vars: Vec::new(),
            loop_depth: 0,
            ret,
            deferred: Vec::new(),
            scalar_lane: false,
        }
    }

    /// Declares a local in the innermost scope (shadowing is allowed, as in Rust).
    pub fn declare(&mut self, name: &Ident, ty: Ty, mutable: bool) -> LocalId {
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(name.clone());
        if name != "_" {
            let scope = self
                .scopes
                .last_mut()
                .expect("a checker always has a scope");
            scope.insert(name.to_string(), Local { id, ty, mutable });
        }
        id
    }

    fn resolve_name(&self, name: &Ident) -> Resolved<'m> {
        let key = name.to_string();
        if let Some(local) = self.scopes.iter().rev().find_map(|s| s.get(&key)) {
            return Resolved::Local(local.clone());
        }
        if let Some(binding) = self.env.bindings.iter().find(|b| b.name == key) {
            return Resolved::Binding(binding);
        }
        if let Some(shared) = self.env.shared.iter().find(|s| s.name == key) {
            return Resolved::Shared(shared);
        }
        Resolved::None
    }

    fn scoped<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.scopes.push(HashMap::new());
        let result = f(self);
        self.scopes.pop();
        result
    }

    // ---- inference variables -------------------------------------------------------------

    fn fresh_int(&mut self) -> Ty {
        self.vars.push(None);
        Ty::IntVar(self.vars.len() as u32 - 1)
    }

    fn fresh_float(&mut self) -> Ty {
        self.vars.push(None);
        Ty::FloatVar(self.vars.len() as u32 - 1)
    }

    /// Follows resolved variables to the type they stand for.
    fn shallow(&self, ty: &Ty) -> Ty {
        match ty {
            Ty::IntVar(v) | Ty::FloatVar(v) => match &self.vars[*v as usize] {
                Some(resolved) => self.shallow(resolved),
                None => ty.clone(),
            },
            Ty::LiteralVector(n, element) => match self.shallow(element) {
                Ty::Scalar(s) => Ty::Vector(*n, s),
                element => Ty::LiteralVector(*n, Box::new(element)),
            },
            _ => ty.clone(),
        }
    }

    /// `ty`, a vector of literals whose lanes are still undecided given the lanes' default
    /// type (`i32`, `f32`): for the uses that take a vector as it is (casts, methods, bit
    /// casts) rather than give it a type.
    fn settled(&mut self, ty: &Ty) -> Ty {
        match self.shallow(ty) {
            Ty::LiteralVector(n, element) => {
                let lane = match *element {
                    Ty::FloatVar(_) => Scalar::F32,
                    _ => Scalar::I32,
                };
                self.unify(&element, &Ty::Scalar(lane));
                Ty::Vector(n, lane)
            }
            other => other,
        }
    }

    /// Unifies two types; `None` when they cannot be the same type.
    fn unify(&mut self, a: &Ty, b: &Ty) -> Option<Ty> {
        let (a, b) = (self.shallow(a), self.shallow(b));
        match (&a, &b) {
            (Ty::Unknown, _) => Some(b),
            (_, Ty::Unknown) => Some(a),
            _ if a == b => Some(a),
            (Ty::IntVar(x), Ty::IntVar(_)) | (Ty::FloatVar(x), Ty::FloatVar(_)) => {
                self.vars[*x as usize] = Some(b.clone());
                Some(b)
            }
            (Ty::IntVar(x), Ty::Scalar(s)) | (Ty::Scalar(s), Ty::IntVar(x)) if s.is_integer() => {
                self.vars[*x as usize] = Some(Ty::Scalar(*s));
                Some(Ty::Scalar(*s))
            }
            (Ty::FloatVar(x), Ty::Scalar(s)) | (Ty::Scalar(s), Ty::FloatVar(x)) if s.is_float() => {
                self.vars[*x as usize] = Some(Ty::Scalar(*s));
                Some(Ty::Scalar(*s))
            }
            (Ty::Vector(n, s), Ty::Vector(m, t)) if n == m => {
                let element = self.unify(&Ty::Scalar(*s), &Ty::Scalar(*t))?;
                Some(Ty::Vector(*n, element.scalar()?))
            }
            // A vector of literals takes the lanes of the vector it meets.
            (Ty::LiteralVector(n, lanes), Ty::Vector(m, s))
            | (Ty::Vector(m, s), Ty::LiteralVector(n, lanes))
                if n == m =>
            {
                self.unify(lanes, &Ty::Scalar(*s))?;
                Some(Ty::Vector(*n, *s))
            }
            (Ty::LiteralVector(n, x), Ty::LiteralVector(m, y)) if n == m => {
                self.unify(x, y)?;
                Some(self.shallow(&a))
            }
            (Ty::Array(x, n), Ty::Array(y, m)) if n == m => {
                let element = self.unify(x, y)?;
                Some(Ty::Array(Box::new(element), *n))
            }
            _ => None,
        }
    }

    /// Unifies or reports "expected `a`, found `b`" at `span`.
    fn expect(&mut self, expected: &Ty, found: &Ty, span: Span, what: &str) -> Ty {
        match self.unify(expected, found) {
            Some(ty) => ty,
            None => {
                let (expected, found) = (self.shallow(expected), self.shallow(found));
                let hint = match (&expected, &found) {
                    (Ty::Scalar(Scalar::F32) | Ty::FloatVar(_), Ty::IntVar(_)) => {
                        "; write a float literal such as `1.0`".to_owned()
                    }
                    (Ty::Scalar(s), f)
                        if f.scalar().is_some() || matches!(f, Ty::IntVar(_) | Ty::FloatVar(_)) =>
                    {
                        format!("; convert it with `as {}`", s.rust_name())
                    }
                    _ => String::new(),
                };
                self.errors.at(
                    span,
                    format!(
                        "{what}: expected {}, found {}{hint}",
                        shown(&expected),
                        shown(&found)
                    ),
                );
                Ty::Unknown
            }
        }
    }

    /// Whether `ty` is (or may become) an integer.
    fn is_integer(&self, ty: &Ty) -> bool {
        match self.shallow(ty) {
            Ty::IntVar(_) | Ty::Unknown => true,
            Ty::LiteralVector(_, lanes) => self.is_integer(&lanes),
            other => {
                other.scalar().is_some_and(Scalar::is_integer) && !matches!(other, Ty::Atomic(_))
            }
        }
    }

    fn is_numeric(&self, ty: &Ty) -> bool {
        match self.shallow(ty) {
            Ty::IntVar(_) | Ty::FloatVar(_) | Ty::LiteralVector(..) | Ty::Unknown => true,
            Ty::Scalar(s) | Ty::Vector(_, s) => s.is_numeric(),
            _ => false,
        }
    }

    // ---- finishing -----------------------------------------------------------------------

    /// Replaces every inference variable in the body with its type; unconstrained integer
    /// literals become `i32` and float literals `f32`, as in Rust. The checks that waited for
    /// those types are made here.
    pub fn finish_block(&mut self, block: &mut Block) {
        for deferred in std::mem::take(&mut self.deferred) {
            match deferred {
                Deferred::Receiver {
                    ty,
                    receivers,
                    method,
                } => {
                    let ty = self.finish_ty(&ty);
                    if !receivers.accepts(&ty) {
                        self.errors.at(
                            method.span(),
                            format!(
                                "`{method}` does not apply to `{}` (the type this value gets from \
                                 its other uses)",
                                ty.rust_name()
                            ),
                        );
                    }
                }
                Deferred::NegativeValue { ty, span } => {
                    if self.finish_ty(&ty) == Ty::U32 {
                        self.errors.at(
                            span,
                            format!(
                                "{NEVER_NEGATIVE} (the scrutinee is a `u32` from its other uses)"
                            ),
                        );
                    }
                }
            }
        }
        visit_block_mut(block, &mut |node| match node {
            NodeMut::Expr(e) => e.ty = self.finish_ty(&e.ty),
            NodeMut::Stmt(Stmt {
                kind: StmtKind::Let { ty, .. },
                ..
            }) => *ty = self.finish_ty(ty),
            NodeMut::Stmt(Stmt {
                kind: StmtKind::For(l),
                ..
            }) => l.ty = self.finish_ty(&l.ty),
            NodeMut::Stmt(_) => {}
        });
    }

    fn finish_ty(&self, ty: &Ty) -> Ty {
        match self.shallow(ty) {
            Ty::IntVar(_) => Ty::I32,
            Ty::FloatVar(_) => Ty::F32,
            Ty::LiteralVector(n, lanes) => match self.finish_ty(&lanes) {
                Ty::Scalar(s) => Ty::Vector(n, s),
                _ => Ty::Unknown,
            },
            Ty::Array(element, n) => Ty::Array(Box::new(self.finish_ty(&element)), n),
            other => other,
        }
    }
}

const NEVER_NEGATIVE: &str = "a `u32` is never negative";

/// A type for messages: `` `f32` ``, or "an integer literal" for a literal whose type is not
/// decided (rustc's `{integer}`, which the user never wrote).
fn shown(ty: &Ty) -> String {
    match ty {
        Ty::IntVar(_) => "an integer literal".to_owned(),
        Ty::FloatVar(_) => "a float literal".to_owned(),
        other => format!("`{}`", other.rust_name()),
    }
}

fn is_literal(ty: &Ty) -> bool {
    matches!(ty, Ty::IntVar(_) | Ty::FloatVar(_))
}

fn default_scalar(ty: &Ty) -> Option<Scalar> {
    match ty {
        Ty::IntVar(_) => Some(Scalar::I32),
        Ty::FloatVar(_) => Some(Scalar::F32),
        _ => None,
    }
}

/// The name an assignment target writes through: `x`, `x[i]`, `x[i][j]`, `v.x`.
fn place_root(e: &Expr) -> Option<&Ident> {
    match &e.kind {
        ExprKind::Path(name, _) => Some(name),
        ExprKind::Index(base, _) | ExprKind::Field(base, _) => place_root(base),
        _ => None,
    }
}
