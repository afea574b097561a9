//! Type checking of bodies: resolves every name to a local, binding or workgroup array, infers
//! the types of unsuffixed literals and `let`s the way Rust does, rejects what Rust or WGSL
//! would reject (mixed-type arithmetic, writes to read-only bindings, assignments to immutable
//! locals, `break` outside loops, ...) at the user's tokens, and writes the resolved type of
//! every expression, `let` and loop variable into the IR for `lower/`.

use std::cell::RefCell;
use std::collections::HashMap;

use proc_macro2::Ident;

use crate::diag::Errors;
use crate::ir::builtins::{self, Builtin, Form, Receivers, Shape, Signature};
use crate::ir::*;

mod fragments;

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

    // ---- statements ----------------------------------------------------------------------

    pub fn block(&mut self, block: &mut Block) {
        self.scoped(|this| block.iter_mut().for_each(|stmt| this.stmt(stmt)));
    }

    fn stmt(&mut self, stmt: &mut Stmt) {
        let span = stmt.span;
        match &mut stmt.kind {
            StmtKind::Let {
                name,
                mutable,
                declared,
                init,
                local,
                ty,
            } => {
                if let (Some(declared), Some(init)) = (declared.as_ref(), init.as_mut()) {
                    self.expected(init, declared);
                }
                let init_ty = init.as_mut().map(|e| self.expr(e));
                *ty = match (declared.as_ref(), init_ty) {
                    (Some(d), Some(i)) => self.expect(
                        d,
                        &i,
                        span,
                        &format!("`{name}` is declared `{}`", d.rust_name()),
                    ),
                    (Some(d), None) => d.clone(),
                    (None, Some(i)) => i,
                    (None, None) => {
                        self.errors.at(
                            name.span(),
                            format!("give `{name}` a type or a value: `let {name}: f32 = 0.0;`"),
                        );
                        Ty::Unknown
                    }
                };
                if matches!(ty, Ty::Unit) {
                    self.errors.at(
                        span,
                        format!("`{name}` would hold no value: the expression returns nothing"),
                    );
                }
                *local = self.declare(name, ty.clone(), *mutable);
            }
            StmtKind::Assign { target, op, value } => self.assign(target, *op, value, span),
            StmtKind::Expr(e) => {
                self.expr_or_atomic(e);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.condition(cond);
                self.block(then);
                if let Some(otherwise) = otherwise {
                    self.block(otherwise);
                }
            }
            StmtKind::For(for_loop) => self.for_loop(for_loop),
            StmtKind::While { cond, body } => {
                self.condition(cond);
                self.loop_body(body);
            }
            StmtKind::Loop(body) => self.loop_body(body),
            StmtKind::Block(body) => self.block(body),
            StmtKind::Break | StmtKind::Continue if self.loop_depth == 0 => {
                self.errors
                    .at(span, "`break` and `continue` belong inside a loop");
            }
            StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Return(value) => self.return_stmt(value.as_mut(), span),
            StmtKind::Match { scrutinee, arms } => {
                self.match_scrutinee(scrutinee, arms, span);
                for arm in arms {
                    self.block(&mut arm.body);
                }
            }
        }
    }

    fn return_stmt(&mut self, value: Option<&mut Expr>, span: Span) {
        match (self.ret.clone(), value) {
            (None, None) => {}
            (None, Some(value)) => {
                self.expr(value);
                self.errors.at(
                    value.span,
                    "this function returns nothing; declare its return type: `-> f32`",
                );
            }
            (Some(ret), Some(value)) => {
                self.expected(value, &ret);
                let found = self.expr(value);
                self.expect(&ret, &found, value.span, "wrong return type");
            }
            (Some(ret), None) => self
                .errors
                .at(span, format!("return a `{}` value", ret.rust_name())),
        }
    }

    fn loop_body(&mut self, body: &mut Block) {
        self.loop_depth += 1;
        self.block(body);
        self.loop_depth -= 1;
    }

    fn condition(&mut self, cond: &mut Expr) {
        let ty = self.expr(cond);
        self.expect(&Ty::BOOL, &ty, cond.span, "a condition must be a `bool`");
    }

    fn for_loop(&mut self, f: &mut ForLoop) {
        let start = self.expr(&mut f.start);
        let end = self.expr(&mut f.end);
        let mut ty = self.expect(
            &start,
            &end,
            f.end.span,
            "the range's ends must have one type",
        );
        if let Some(step) = &mut f.step {
            let step_ty = self.expr(step);
            ty = self.expect(
                &ty,
                &step_ty,
                step.span,
                "the step must have the range's type",
            );
        }
        if !self.is_integer(&ty) {
            self.errors.at(
                f.start.span,
                format!(
                    "loop ranges are over integers, not `{}`",
                    self.shallow(&ty).rust_name()
                ),
            );
        }
        f.ty = ty.clone();
        if f.unroll {
            self.check_unroll(f);
        }
        self.loop_depth += 1;
        self.scoped(|this| {
            f.local = this.declare(&f.var, ty, false);
            f.body.iter_mut().for_each(|stmt| this.stmt(stmt));
        });
        self.loop_depth -= 1;
    }

    /// `#[unroll]` needs bounds known at compile time and no `break`/`continue` of its own.
    fn check_unroll(&mut self, f: &ForLoop) {
        match f.unroll_values().map(|v| v.len() as u64) {
            None => self.errors.at(
                Span { first: f.start.span.first, last: f.end.span.last },
                "`#[unroll]` needs bounds known at compile time (literals, constants and arithmetic on them), \
                 such as `for i in 0..TILE`; remove `#[unroll]` \
                 for a loop whose bounds are only known at run time",
            ),
            Some(n) if n > MAX_UNROLL => self.errors.at(
                f.end.span,
                format!("`#[unroll]` would write the body {n} times; unroll at most {MAX_UNROLL} iterations"),
            ),
            Some(_) => {}
        }
        if let Some(span) = own_break_or_continue(&f.body) {
            self.errors.at(
                span,
                "an `#[unroll]`ed loop cannot `break` or `continue`; use an `if` around the body",
            );
        }
    }

    /// Checks a match's scrutinee and arm values; returns the scrutinee's type.
    fn match_scrutinee<T>(&mut self, scrutinee: &mut Expr, arms: &[MatchArm<T>], span: Span) -> Ty {
        let ty = self.expr(scrutinee);
        if !self.is_integer(&ty) {
            self.errors.at(
                scrutinee.span,
                "`match` in kernels is on integers (`u32` or `i32`)",
            );
        }
        let mut seen = Vec::new();
        for (value, value_span) in arms.iter().flat_map(|arm| arm.values.iter()) {
            if *value < 0 {
                match self.shallow(&ty) {
                    Ty::U32 => self.errors.at(*value_span, NEVER_NEGATIVE),
                    ty @ Ty::IntVar(_) => self.deferred.push(Deferred::NegativeValue {
                        ty,
                        span: *value_span,
                    }),
                    _ => {}
                }
            }
            if seen.contains(value) {
                self.errors.at(
                    *value_span,
                    format!("`{value}` is matched by an earlier arm already"),
                );
            }
            seen.push(*value);
        }
        if !arms.iter().any(|arm| arm.values.is_empty()) {
            self.errors.at(
                span,
                "add a `_ => ...` arm: a `match` on integers must cover every value",
            );
        }
        ty
    }

    fn assign(&mut self, target: &mut Expr, op: Option<BinOp>, value: &mut Expr, span: Span) {
        let target_ty = self.place(target);
        if op.is_none() {
            self.expected(value, &target_ty);
        }
        let value_ty = self.expr(value);
        match op {
            Some(op) if self.shallow(&target_ty).holds_fragment() => {
                let (target, value) = (target.rust_text(), value.rust_text());
                self.errors.at(
                    span,
                    format!(
                        "a fragment takes no compound assignment; write `{target} = {target} {} {value}`",
                        op.symbol()
                    ),
                );
            }
            Some(op) => {
                let result = self.binary_ty(op, &target_ty, &value_ty, span, target, value);
                self.expect(
                    &target_ty,
                    &result,
                    span,
                    "the result must keep the target's type",
                );
            }
            None => {
                self.expect(
                    &target_ty,
                    &value_ty,
                    value.span,
                    "mismatched types in assignment",
                );
            }
        }
    }

    /// Types an assignment target and checks it may be written.
    fn place(&mut self, target: &mut Expr) -> Ty {
        let root = place_root(target).cloned();
        match root.as_ref().map(|name| (name, self.resolve_name(name))) {
            Some((name, Resolved::Local(local))) if !local.mutable => {
                self.errors.at(
                    target.span,
                    format!("`{name}` is not mutable; declare it with `let mut {name}`"),
                );
            }
            Some((name, Resolved::Binding(binding))) => match &binding.kind {
                BindingKind::Storage {
                    writable: false,
                    element,
                } => self.errors.at(
                    target.span,
                    format!(
                        "`{name}` is read-only (`&[{0}]`); declare it `&mut [{0}]` to write to it",
                        element.rust_name()
                    ),
                ),
                BindingKind::Uniform { .. } => self.errors.at(
                    target.span,
                    format!("`{name}` holds the kernel's parameters, which are read-only"),
                ),
                _ => {}
            },
            Some((name, Resolved::Shared(shared))) if !shared.writable => self.errors.at(
                target.span,
                format!(
                    "`{name}` is lent read-only (`&{0}`); take it as `&mut {0}` to write to it",
                    shared.ty.rust_name()
                ),
            ),
            Some((name, Resolved::None)) => {
                self.not_found(&name.to_string(), name.span());
                return Ty::Unknown;
            }
            None => self.errors.at(
                target.span,
                "only locals, indexed buffers and vector components can be assigned",
            ),
            _ => {}
        }
        let ty = self.expr_or_atomic(target);
        if matches!(ty, Ty::Atomic(_)) {
            self.errors.at(
                target.span,
                "atomics are written with `.store(v)` or `.fetch_add(v)`, not `=`",
            );
        }
        ty
    }

    // ---- expressions ---------------------------------------------------------------------

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
    fn expr_or_atomic(&mut self, e: &mut Expr) -> Ty {
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
    fn binary_ty(
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

    /// Types a call or a method; a builtin's becomes an [`ExprKind::Builtin`], so later stages
    /// read the builtin from the table instead of matching its name.
    fn call_or_method(&mut self, e: &mut Expr) -> Ty {
        let span = e.span;
        let expected = e.ty.clone();
        if let ExprKind::GenericCall(..) = &e.kind {
            return self.turbofish_call(e);
        }
        let (ty, builtin) = match &mut e.kind {
            ExprKind::Call(name, args) => match self.generic(name) {
                Some(generic) => {
                    let (ty, copy) = self.generic_call(name, generic, None, args, span);
                    if let Some(copy) = copy {
                        *name = copy;
                    }
                    (ty, None)
                }
                None => self.call(name, args, &expected, span),
            },
            ExprKind::Method(receiver, method, args) => self.method(receiver, method, args, span),
            _ => return Ty::Unknown,
        };
        if let Some(builtin) = builtin {
            let args = match std::mem::replace(&mut e.kind, ExprKind::Bool(false)) {
                ExprKind::Call(_, args) => args,
                ExprKind::Method(receiver, _, args) => {
                    std::iter::once(*receiver).chain(args).collect()
                }
                other => {
                    e.kind = other;
                    return ty;
                }
            };
            e.kind = ExprKind::Builtin(builtin, args);
        }
        ty
    }

    fn call(
        &mut self,
        name: &Ident,
        args: &mut [Expr],
        expected: &Ty,
        span: Span,
    ) -> (Ty, Option<&'static Builtin>) {
        let key = name.to_string();
        if let Some((params, ret)) = self.env.helpers.get(&key) {
            self.helper_call(name, params, args, &[], span);
            return (ret.clone().unwrap_or(Ty::Unit), None);
        }
        if let Some(builtin) = builtins::find(Form::Function, &key).filter(|b| b.is_cooperative()) {
            if !matches!(self.resolve_name(name), Resolved::Local(_)) {
                self.feature_allowed(builtin, name, span);
                let ty = self.cooperative(builtin, name, args, expected, span);
                return (ty, Some(builtin));
            }
        }
        if let Some(builtin) =
            builtins::find(Form::Function, &key).filter(|b| b.signature == Signature::UniformLoad)
        {
            if !matches!(self.resolve_name(name), Resolved::Local(_)) {
                return (self.uniform_load(name, args, span), Some(builtin));
            }
        }
        let arg_tys: Vec<Ty> = args.iter_mut().map(|a| self.expr(a)).collect();
        if let Resolved::Local(local) = self.resolve_name(name) {
            if local.ty != Ty::Unknown {
                self.errors.at(span, format!("`{name}` is a local value, not a function; define a helper function instead"));
            }
            return (Ty::Unknown, None);
        }
        let Some(builtin) = builtins::find(Form::Function, &key) else {
            let message = match builtins::find(Form::Method, &key).and_then(Builtin::method_form) {
                Some(form) => format!(
                    "`{name}` is a method in kernels, as in Rust: write `{form}` (for the \
                     free function, define a helper)"
                ),
                None => format!(
                    "cannot find function `{name}`; call a helper defined in this module or \
                     a builtin: {}",
                    builtins::names(builtins::called_as(Form::Function))
                ),
            };
            self.errors.at(name.span(), message);
            return (Ty::Unknown, None);
        };
        if builtin.feature.is_some() {
            self.feature_allowed(builtin, name, span);
        }
        // The subgroup ids need a feature too, and are only in kernels all the same.
        if builtin.id().is_some() && !self.env.in_kernel {
            self.errors.at(
                span,
                format!(
                    "`{name}()` is only available in kernels; pass it to the helper as an argument"
                ),
            );
        }
        let ty = match builtin.signature {
            Signature::Id(id) => {
                self.arity(name, args, 0, span);
                id.ty()
            }
            Signature::Barrier => {
                self.arity(name, args, 0, span);
                Ty::Unit
            }
            Signature::Vector(width) => self.vector_constructor(name, width, args, &arg_tys, span),
            Signature::CeilDiv => {
                if !self.arity(name, args, 2, span) {
                    return (Ty::Unknown, None);
                }
                let ty = self.expect(
                    &arg_tys[0],
                    &arg_tys[1],
                    args[1].span,
                    "`ceil_div` takes two integers of one type",
                );
                if !self.is_integer(&ty) {
                    self.errors.at(span, "`ceil_div` takes integers");
                }
                ty
            }
            Signature::SubgroupReduce(_)
            | Signature::SubgroupShuffle
            | Signature::SubgroupBroadcast
            | Signature::SubgroupVote(_) => {
                self.subgroup(name, builtin.signature, args, &arg_tys, span)
            }
            Signature::Fixed(params, ret) => {
                if !self.arity(name, args, params.len(), span) {
                    return (Ty::Unknown, None);
                }
                for ((param, arg_ty), arg) in params.iter().zip(&arg_tys).zip(args.iter()) {
                    self.expect(
                        param,
                        arg_ty,
                        arg.span,
                        &format!("wrong argument for `{name}`"),
                    );
                }
                ret.clone()
            }
            // Fragment operations and uniform loads were typed above; methods are not called
            // as functions.
            Signature::UniformLoad
            | Signature::Math(..)
            | Signature::Len
            | Signature::Atomic { .. }
            | Signature::FragmentZero
            | Signature::FragmentLoad(_)
            | Signature::FragmentStore(_)
            | Signature::MultiplyAdd => Ty::Unknown,
        };
        (ty, Some(builtin))
    }

    /// `workgroup_uniform_load(&a[i])`: the element's type, for one element of a workgroup
    /// array (WGSL's `workgroupUniformLoad` reads workgroup memory only).
    fn uniform_load(&mut self, name: &Ident, args: &mut [Expr], span: Span) -> Ty {
        if !self.arity(name, args, 1, span) {
            for arg in args.iter_mut() {
                if !matches!(arg.kind, ExprKind::Ref(..)) {
                    self.expr(arg);
                }
            }
            return Ty::Unknown;
        }
        let arg = &mut args[0];
        let place = match &mut arg.kind {
            ExprKind::Ref(false, place) => place,
            ExprKind::Ref(true, place) => {
                self.errors.at(
                    arg.span,
                    format!("`{name}` only reads: lend the element as `&a[i]`, not `&mut`"),
                );
                place
            }
            _ => {
                self.expr(arg);
                self.errors.at(
                    arg.span,
                    format!(
                        "`{name}` takes the place of one element of a workgroup array, `&a[i]`"
                    ),
                );
                return Ty::Unknown;
            }
        };
        let root = place_root(place).cloned();
        let memory = root.as_ref().map(|root| self.resolve_name(root));
        match (&place.kind, memory) {
            (ExprKind::Index(..), Some(Resolved::Shared(_))) => self.expr(place),
            // A workgroup value, `&s` (`#[workgroup] s: &mut f32`).
            (ExprKind::Path(..), Some(Resolved::Shared(shared)))
                if !matches!(shared.ty, Ty::Array(..)) =>
            {
                self.expr(place)
            }
            (_, Some(Resolved::None)) => {
                self.expr(place);
                Ty::Unknown
            }
            _ => {
                if !matches!(place.kind, ExprKind::Path(..)) {
                    self.expr(place);
                }
                self.errors.at(
                    place.span,
                    format!(
                        "`{name}` reads one element of a workgroup array, `&a[i]`: it makes a \
                         value of workgroup memory the same in every invocation; other values \
                         can be shared through a workgroup array first"
                    ),
                );
                Ty::Unknown
            }
        }
    }

    /// `load::<Vec4<f32>>(m, i)`: a call of the generic helper's copy for the types it names,
    /// which becomes a plain call of that copy (of the name as written where there is none,
    /// the mistake reported).
    fn turbofish_call(&mut self, e: &mut Expr) -> Ty {
        let span = e.span;
        let ExprKind::GenericCall(name, types, mut args) =
            std::mem::replace(&mut e.kind, ExprKind::Bool(false))
        else {
            return Ty::Unknown;
        };
        let (ty, called) = match self.generic(&name) {
            Some(generic) => {
                let (ty, copy) = self.generic_call(&name, generic, Some(&types), &mut args, span);
                (ty, copy.unwrap_or_else(|| name.clone()))
            }
            None => {
                for arg in args.iter_mut() {
                    if self.lent_ty(arg).is_none() {
                        self.expr(arg);
                    }
                }
                let what = if self.env.helpers.contains_key(&name.to_string()) {
                    "is not generic"
                } else {
                    "is no generic helper of this module"
                };
                self.errors.at(
                    name.span(),
                    format!("`{name}` {what}; call it without `::<..>`: `{name}(..)`"),
                );
                (Ty::Unknown, name)
            }
        };
        e.kind = ExprKind::Call(called, args);
        ty
    }

    /// The generic helper `name` refers to, if it is one.
    fn generic(&self, name: &Ident) -> Option<&'m GenericHelper> {
        self.env.generic.iter().find(|g| g.name() == name)
    }

    /// A call of a generic helper: what its type parameters stand for, read from the
    /// arguments' types as Rust infers them, then the call typed as one of the helper's copy
    /// for those types. Returns the call's type and the copy's name.
    fn generic_call(
        &mut self,
        name: &Ident,
        generic: &'m GenericHelper,
        named: Option<&[Ty]>,
        args: &mut [Expr],
        span: Span,
    ) -> (Ty, Option<Ident>) {
        let inputs: Vec<&syn::Type> = generic
            .item
            .sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(typed) => Some(&*typed.ty),
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        if inputs.len() != args.len() {
            for arg in args.iter_mut() {
                if self.lent_ty(arg).is_none() {
                    self.expr(arg);
                }
            }
            self.errors.at(
                span,
                format!(
                    "`{name}` takes {} argument(s), but {} were given",
                    inputs.len(),
                    args.len()
                ),
            );
            return (Ty::Unknown, None);
        }
        let type_params: Vec<&Ident> = generic.type_params().collect();
        let mut bound: Vec<Option<(Ty, Span)>> = vec![None; type_params.len()];
        let mut typed: Vec<Option<Ty>> = vec![None; args.len()];
        let mut failed = false;
        if let Some(named) = named {
            if named.len() == type_params.len() {
                bound = named.iter().map(|ty| Some((ty.clone(), span))).collect();
            } else {
                self.errors.at(
                    span,
                    format!(
                        "`{name}` takes {} type parameter(s), but {} were given",
                        type_params.len(),
                        named.len()
                    ),
                );
                failed = true;
            }
        }
        let inferred = named.is_none();
        for (i, (input, arg)) in inputs.iter().zip(args.iter_mut()).enumerate() {
            if !inferred {
                break;
            }
            if !type_params.iter().any(|p| names_type(input, p)) {
                continue;
            }
            // A reference parameter is bound to the lent memory's type (a buffer's element
            // for `&[E]`); a value parameter to the argument's.
            let (pattern, found) = match input {
                syn::Type::Reference(reference) => match (&*reference.elem, self.lent_ty(arg)) {
                    (syn::Type::Slice(slice), Some(Lent::Buffer(element))) => {
                        (&*slice.elem, element)
                    }
                    (syn::Type::Slice(_), _) | (_, Some(Lent::Buffer(_)) | None) => continue,
                    (elem, Some(Lent::Array(ty))) => (elem, ty),
                },
                _ => {
                    let ty = self.expr(arg);
                    typed[i] = Some(ty.clone());
                    (*input, ty)
                }
            };
            let found = self.settled(&found);
            if let Err((param, first)) = bind(pattern, &found, &type_params, arg.span, &mut bound) {
                self.errors.at(
                    arg.span,
                    format!(
                        "`{name}` takes `{param}` as `{}` from an earlier argument, and this one \
                         makes it `{}`; pass arguments of one element type",
                        first.rust_name(),
                        found.rust_name()
                    ),
                );
                failed = true;
            }
        }
        let mut elements = Vec::new();
        for (param, bound) in type_params.iter().zip(&bound) {
            match bound.as_ref().map(|(ty, at)| (element_of(ty), ty, at)) {
                Some((Some(element), _, _)) => elements.push(element),
                Some((None, ty, at)) => {
                    self.errors.at(
                        *at,
                        format!(
                            "`{name}` takes `{param}` as `{}` here, but `{param}` stands for an \
                             element type: a number type or a vector of one",
                            ty.rust_name()
                        ),
                    );
                    failed = true;
                }
                None if !failed => {
                    let named = inputs.iter().any(|input| names_type(input, param));
                    let why = if named {
                        "no argument's type says what it is here"
                    } else {
                        "no parameter's type names it"
                    };
                    self.errors.at(
                        span,
                        format!(
                            "cannot tell what `{param}` of `{name}` stands for: {why}; name \
                             it in the call, as in `{name}::<f32>(..)`"
                        ),
                    );
                    failed = true;
                }
                None => {}
            }
        }
        if failed {
            for (arg, typed) in args.iter_mut().zip(&typed) {
                if typed.is_none() && !matches!(arg.kind, ExprKind::Ref(..)) {
                    self.expr(arg);
                }
            }
            return (Ty::Unknown, None);
        }
        let copy = generic_copy_name(name, &elements);
        let key = copy.to_string();
        let known = self.env.copies.borrow().signatures.get(&key).cloned();
        let signature = match known {
            Some(signature) => signature,
            None => {
                let function = crate::parse::kernel::generic_copy(
                    generic,
                    &elements,
                    self.env.params,
                    self.errors,
                );
                let signature = function.as_ref().map(|f| (f.params.clone(), f.ret.clone()));
                let mut copies = self.env.copies.borrow_mut();
                copies.signatures.insert(key, signature.clone());
                copies.unchecked.extend(function);
                signature
            }
        };
        let Some((params, ret)) = signature else {
            return (Ty::Unknown, None);
        };
        self.helper_call(name, &params, args, &typed, span);
        (ret.unwrap_or(Ty::Unit), Some(copy))
    }

    /// The type of the memory the argument `arg` lends (`a`, `&a`, `&mut a`), if it names any.
    fn lent_ty(&self, arg: &Expr) -> Option<Lent> {
        let place = match &arg.kind {
            ExprKind::Ref(_, inner) => &**inner,
            _ => arg,
        };
        let ExprKind::Path(name, _) = &place.kind else {
            return None;
        };
        match self.resolve_name(name) {
            Resolved::Local(local) => Some(Lent::Array(local.ty)),
            Resolved::Shared(shared) => Some(Lent::Array(shared.ty.clone())),
            Resolved::Binding(Binding {
                kind: BindingKind::Storage { element, .. },
                ..
            }) => Some(Lent::Buffer(element.clone())),
            Resolved::Binding(_) | Resolved::None => None,
        }
    }

    /// A call of a helper whose parameters are `params`; `typed` holds the types of the value
    /// arguments typed already (a generic helper's, to learn its types), by position.
    fn helper_call(
        &mut self,
        name: &Ident,
        params: &[FnParam],
        args: &mut [Expr],
        typed: &[Option<Ty>],
        span: Span,
    ) {
        if params.len() != args.len() {
            for arg in args.iter_mut() {
                self.expr(arg);
            }
            self.errors.at(
                span,
                format!(
                    "`{name}` takes {} argument(s), but {} were given",
                    params.len(),
                    args.len()
                ),
            );
            return;
        }
        for (i, (param, arg)) in params.iter().zip(args.iter_mut()).enumerate() {
            if param.kind == ParamKind::Value {
                let arg_ty = match typed.get(i) {
                    Some(Some(ty)) => ty.clone(),
                    _ => {
                        self.expected(arg, &param.ty);
                        self.expr(arg)
                    }
                };
                self.expect(
                    &param.ty,
                    &arg_ty,
                    arg.span,
                    &format!("wrong argument for `{name}`"),
                );
            } else {
                self.reference_arg(name, param, arg);
            }
        }
    }

    /// An argument for a helper's reference parameter: a workgroup array, local array, buffer
    /// or the parameters, by name, of the type and mutability the helper asks for.
    fn reference_arg(&mut self, helper: &Ident, param: &FnParam, arg: &mut Expr) {
        let span = arg.span;
        let wanted = param_rust_ty(param, self.env.params);
        let (lent, place) = match &mut arg.kind {
            ExprKind::Ref(mutable, inner) => (Some(*mutable), &mut **inner),
            _ => (None, arg),
        };
        let ExprKind::Path(name, local) = &mut place.kind else {
            self.errors.at(
                span,
                format!(
                    "`{helper}` takes `{}: {wanted}`; pass a whole array or buffer by its name",
                    param.name
                ),
            );
            return;
        };
        let name = name.clone();
        let (found, writable) = match (param.kind, self.resolve_name(&name)) {
            (ParamKind::Array, Resolved::Shared(shared)) => (shared.ty.clone(), shared.writable),
            (ParamKind::Array, Resolved::Local(l)) if matches!(l.ty, Ty::Array(..)) => {
                *local = Some(l.id);
                if lent.is_none() {
                    let amp = if param.mutable { "&mut " } else { "&" };
                    self.errors.at(
                        span,
                        format!(
                            "`{name}` is a local array; lend it to `{helper}` as `{amp}{name}`"
                        ),
                    );
                }
                (l.ty.clone(), l.mutable)
            }
            (
                ParamKind::Storage,
                Resolved::Binding(Binding {
                    kind: BindingKind::Storage { element, writable },
                    ..
                }),
            ) => (element.clone(), *writable),
            (
                ParamKind::Uniform(wanted_struct),
                Resolved::Binding(Binding {
                    kind: BindingKind::Uniform { params },
                    ..
                }),
            ) if *params == wanted_struct => (Ty::Unknown, false),
            (_, Resolved::None) => {
                self.not_found(&name.to_string(), span);
                return;
            }
            _ => {
                self.errors.at(
                    span,
                    format!(
                        "`{helper}` takes `{}: {wanted}`, and `{name}` is not one; {}",
                        param.name,
                        reference_advice(param.kind)
                    ),
                );
                return;
            }
        };
        // Unified, not compared: a local array of float or integer literals takes its
        // element type from the parameter it is lent to.
        if self.unify(&param.ty, &found).is_none() {
            let what = match param.kind {
                ParamKind::Storage => format!("a buffer of `{}`", found.rust_name()),
                _ => format!("a `{}`", found.rust_name()),
            };
            self.errors.at(
                span,
                format!(
                    "`{helper}` takes `{}: {wanted}`, but `{name}` is {what}",
                    param.name
                ),
            );
        } else if param.mutable && !writable {
            self.errors.at(
                span,
                format!(
                    "`{helper}` writes to `{}`, but `{name}` cannot be written here; {}",
                    param.name,
                    match param.kind {
                        ParamKind::Storage => format!("declare it `&mut [{}]`", found.rust_name()),
                        _ => format!("declare it `let mut {name}`"),
                    }
                ),
            );
        } else if param.mutable && lent == Some(false) {
            self.errors.at(
                span,
                format!(
                    "`{helper}` writes to `{}`; lend it as `&mut {name}`",
                    param.name
                ),
            );
        }
    }

    /// A builtin that needs a feature is called where the kernel declares it, directly or
    /// through the helpers it calls. A helper's use is reported at the kernel, whose attribute
    /// lacks the feature: the helper may be another crate's.
    fn feature_allowed(&mut self, builtin: &Builtin, name: &Ident, span: Span) {
        let Some(feature) = builtin.feature else {
            return;
        };
        let declared = self
            .env
            .features
            .as_ref()
            .is_none_or(|features| features.contains(&feature));
        if declared {
            return;
        }
        let (what, checks) = match feature {
            Feature::CooperativeMatrix => ("runs on the tensor cores", "the device has them"),
            Feature::Subgroups => ("is a subgroup operation", "the device has subgroups"),
            Feature::F16 => ("needs `f16`", "the device supports SHADER_F16"),
        };
        let declare = feature.name();
        match (self.env.caller, self.env.helper.map(written_name)) {
            (Some(kernel), Some(helper)) => self.errors.at(
                kernel.span(),
                format!(
                    "`{kernel}` calls `{helper}`, which uses `{name}`; `{name}` {what}: declare \
                     `features({declare})` in the `#[kernel(...)]` of `{kernel}`, and its \
                     launcher will check that {checks}"
                ),
            ),
            _ => self.errors.at(
                span,
                format!(
                    "`{name}` {what}: declare `features({declare})` in the kernel's \
                     `#[kernel(...)]`, and its launcher will check that {checks}"
                ),
            ),
        }
    }

    /// A subgroup operation: its value argument, and the lane, distance or mask after it.
    fn subgroup(
        &mut self,
        name: &Ident,
        signature: Signature,
        args: &[Expr],
        arg_tys: &[Ty],
        span: Span,
    ) -> Ty {
        let arguments = match signature {
            Signature::SubgroupShuffle | Signature::SubgroupBroadcast => 2,
            _ => 1,
        };
        if !self.arity(name, args, arguments, span) {
            return Ty::Unknown;
        }
        let (value, value_ty) = (&args[0], &arg_tys[0]);
        if let Signature::SubgroupVote(result) = signature {
            if self.unify(&Ty::BOOL, value_ty).is_none() {
                self.errors.at(
                    value.span,
                    format!(
                        "`{name}` takes a `bool` condition, not `{}`; compare the value, as in \
                         `{name}(x != 0)` or `{name}(x > 0.0)`",
                        self.shallow(value_ty).rust_name()
                    ),
                );
            }
            return result.clone();
        }
        let integers = signature == Signature::SubgroupReduce(Receivers::Integer);
        let accepted = if integers {
            self.is_integer(value_ty)
        } else {
            self.is_numeric(value_ty)
        };
        if !accepted {
            let found = self.shallow(value_ty).rust_name();
            let message = if integers {
                format!(
                    "`{name}` takes integers (`u32`, `i32` or their vectors), not `{found}`; \
                     on floats, combine their bits: `{name}(x.to_bits())`"
                )
            } else {
                format!(
                    "`{name}` takes numbers (`f32`, `f16`, `u32`, `i32` or their vectors), not \
                     `{found}`; for a `bool`, use `subgroup_all`, `subgroup_any` or \
                     `subgroup_ballot`"
                )
            };
            self.errors.at(value.span, message);
        }
        if arguments == 2 {
            let what = match name.to_string().as_str() {
                "subgroup_shuffle_up" | "subgroup_shuffle_down" => {
                    "the distance, in lanes, to read from is a `u32`"
                }
                "subgroup_shuffle_xor" => "the mask to xor the lane with is a `u32`",
                _ => "the invocation to read from is a `u32`",
            };
            self.expect(&Ty::U32, &arg_tys[1], args[1].span, what);
        }
        value_ty.clone()
    }

    fn arity(&mut self, name: &Ident, args: &[Expr], n: usize, span: Span) -> bool {
        if args.len() != n {
            self.errors.at(
                span,
                format!(
                    "`{name}` takes {n} argument(s), but {} were given",
                    args.len()
                ),
            );
            return false;
        }
        true
    }

    fn vector_constructor(
        &mut self,
        name: &Ident,
        width: u8,
        args: &[Expr],
        arg_tys: &[Ty],
        span: Span,
    ) -> Ty {
        let mut element = Ty::Unknown;
        let mut components = 0u8;
        for (ty, arg) in arg_tys.iter().zip(args) {
            let (scalar_ty, count) = match self.shallow(ty) {
                Ty::Vector(n, s) => (Ty::Scalar(s), n),
                Ty::LiteralVector(n, lanes) => (*lanes, n),
                other => (other, 1),
            };
            element = self.expect(
                &element,
                &scalar_ty,
                arg.span,
                "vector components must have one type",
            );
            components += count;
        }
        if !(components == width || (args.len() == 1 && components == 1)) {
            self.errors.at(span, format!("`{name}` needs {width} components (or one to repeat), but {components} were given"));
            return Ty::Unknown;
        }
        // Of literals only, the lanes' type is decided where the vector is used.
        match self.shallow(&element) {
            Ty::Scalar(s) => Ty::Vector(width, s),
            lanes @ (Ty::IntVar(_) | Ty::FloatVar(_)) => Ty::LiteralVector(width, Box::new(lanes)),
            _ => Ty::Unknown,
        }
    }

    fn method(
        &mut self,
        receiver: &mut Expr,
        method: &Ident,
        args: &mut [Expr],
        span: Span,
    ) -> (Ty, Option<&'static Builtin>) {
        let key = method.to_string();
        if key == "len" && args.is_empty() {
            if let ExprKind::Path(name, _) = &receiver.kind {
                if let Resolved::Binding(Binding {
                    kind: BindingKind::Storage { .. },
                    ..
                }) = self.resolve_name(name)
                {
                    return (Ty::U32, builtins::find(Form::Method, "len"));
                }
            }
        }
        let receiver_ty = self.expr_or_atomic(receiver);
        let arg_tys: Vec<Ty> = args.iter_mut().map(|a| self.expr(a)).collect();
        if let Ty::Atomic(scalar) = receiver_ty {
            return self.atomic_method(method, scalar, args, &arg_tys, span);
        }
        let math = builtins::find(Form::Method, &key).and_then(|b| match b.signature {
            Signature::Math(receivers, shape) => Some((b, receivers, shape)),
            _ => None,
        });
        let Some((builtin, receivers, shape)) = math else {
            self.errors.at(
                method.span(),
                format!(
                    "unknown method `{key}`; kernels support {}; `len()` on buffers; {} on atomics",
                    builtins::names(|b| matches!(b.signature, Signature::Math(..))),
                    builtins::names(builtins::called_as(Form::Atomic)),
                ),
            );
            return (Ty::Unknown, None);
        };
        // A vector of literals takes its lanes from a vector argument (`vec3(1, 2, 3).max(v)`),
        // as the method's arguments are of the receiver's type; otherwise the default.
        if let Ty::LiteralVector(..) = self.shallow(&receiver_ty) {
            for arg_ty in &arg_tys {
                if let Ty::Vector(..) = self.shallow(arg_ty) {
                    self.unify(&receiver_ty, arg_ty);
                }
            }
        }
        let receiver_ty = self.settled(&receiver_ty);
        if receiver_ty != Ty::Unknown && !receivers.accepts(&receiver_ty) {
            self.errors.at(
                method.span(),
                format!("`{key}` does not apply to `{}`", receiver_ty.rust_name()),
            );
            return (Ty::Unknown, None);
        }
        if is_literal(&receiver_ty) {
            self.deferred.push(Deferred::Receiver {
                ty: receiver_ty.clone(),
                receivers,
                method: method.clone(),
            });
        }
        if !self.arity(method, args, shape.arguments(), span) {
            return (Ty::Unknown, None);
        }
        let mut ty = receiver_ty;
        for (arg_ty, arg) in arg_tys.iter().zip(args.iter()) {
            ty = self.expect(
                &ty,
                arg_ty,
                arg.span,
                &format!("`{key}` takes arguments of the receiver's type"),
            );
        }
        let ty = match shape {
            Shape::ToScalar | Shape::BinaryToScalar => match self.shallow(&ty) {
                // A literal's type is decided by its uses, as a scalar's would be.
                var @ (Ty::IntVar(_) | Ty::FloatVar(_)) => var,
                other => other.scalar().map(Ty::Scalar).unwrap_or(Ty::Unknown),
            },
            Shape::ToU32 => match self.shallow(&ty) {
                Ty::Vector(n, _) => Ty::Vector(n, Scalar::U32),
                Ty::FloatVar(_) => {
                    self.unify(&ty, &Ty::F32);
                    Ty::U32
                }
                _ => Ty::U32,
            },
            _ => ty,
        };
        (ty, Some(builtin))
    }

    fn atomic_method(
        &mut self,
        method: &Ident,
        scalar: Scalar,
        args: &[Expr],
        arg_tys: &[Ty],
        span: Span,
    ) -> (Ty, Option<&'static Builtin>) {
        let key = method.to_string();
        let atomic = builtins::find(Form::Atomic, &key).and_then(|b| match b.signature {
            Signature::Atomic {
                takes_value,
                returns,
            } => Some((b, takes_value, returns)),
            _ => None,
        });
        let Some((builtin, takes_value, returns)) = atomic else {
            self.errors.at(
                method.span(),
                format!(
                    "atomics support {}",
                    builtins::names(builtins::called_as(Form::Atomic))
                ),
            );
            return (Ty::Unknown, None);
        };
        if !self.arity(method, args, usize::from(takes_value), span) {
            return (Ty::Unknown, None);
        }
        if let (Some(arg_ty), Some(arg)) = (arg_tys.first(), args.first()) {
            self.expect(
                &Ty::Scalar(scalar),
                arg_ty,
                arg.span,
                "wrong value for the atomic",
            );
        }
        let ty = if returns {
            Ty::Scalar(scalar)
        } else {
            Ty::Unit
        };
        (ty, Some(builtin))
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

/// The span of a `break` or `continue` that would leave or restart this loop (not a nested one).
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

/// What an argument lends a generic helper's reference parameter.
enum Lent {
    /// A buffer, by its element type.
    Buffer(Ty),
    /// A local or workgroup array (or value), by its type.
    Array(Ty),
}

/// Whether the type `ty` names the type parameter `param`.
fn names_type(ty: &syn::Type, param: &Ident) -> bool {
    crate::parse::names_ident(quote::ToTokens::to_token_stream(ty), param)
}

/// Binds the type parameters `params` that `pattern` names to the parts of `found` in their
/// place (`[E; N]` against `[Vec4<f32>; 2]` makes `E` a `Vec4<f32>`). A parameter bound
/// before to another type is an error: the parameter and its earlier type.
fn bind(
    pattern: &syn::Type,
    found: &Ty,
    params: &[&Ident],
    at: Span,
    bound: &mut [Option<(Ty, Span)>],
) -> Result<(), (Ident, Ty)> {
    match (pattern, found) {
        (syn::Type::Paren(inner), _) => bind(&inner.elem, found, params, at, bound),
        (syn::Type::Group(inner), _) => bind(&inner.elem, found, params, at, bound),
        (syn::Type::Array(array), Ty::Array(element, _)) => {
            bind(&array.elem, element, params, at, bound)
        }
        (syn::Type::Path(path), _) if path.qself.is_none() => {
            if let Some(index) = path
                .path
                .get_ident()
                .and_then(|ident| params.iter().position(|p| *p == ident))
            {
                return match &bound[index] {
                    // A literal's type is settled by the other arguments, as in Rust.
                    Some((earlier, _)) if settles(found, earlier) => {
                        bound[index] = Some((found.clone(), at));
                        Ok(())
                    }
                    Some((earlier, _)) if earlier == found || settles(earlier, found) => Ok(()),
                    Some((earlier, _)) => Err((params[index].clone(), earlier.clone())),
                    None => {
                        bound[index] = Some((found.clone(), at));
                        Ok(())
                    }
                };
            }
            // `Vec4<E>` against a `Vec4<f32>`.
            let Some(last) = path.path.segments.last() else {
                return Ok(());
            };
            let lanes = match last.ident.to_string().as_str() {
                "Vec2" => 2,
                "Vec3" => 3,
                "Vec4" => 4,
                _ => return Ok(()),
            };
            let (syn::PathArguments::AngleBracketed(args), Ty::Vector(n, scalar)) =
                (&last.arguments, found)
            else {
                return Ok(());
            };
            match args.args.first() {
                Some(syn::GenericArgument::Type(inner)) if *n == lanes => {
                    bind(inner, &Ty::Scalar(*scalar), params, at, bound)
                }
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Whether the type `ty` is one the literal type `literal` may become (`f32` for a float
/// literal).
fn settles(ty: &Ty, literal: &Ty) -> bool {
    match (ty, literal) {
        (Ty::Scalar(scalar), Ty::IntVar(_)) => scalar.is_integer(),
        (Ty::Scalar(scalar), Ty::FloatVar(_)) => scalar.is_float(),
        (Ty::Vector(n, scalar), Ty::LiteralVector(m, element)) => {
            n == m && settles(&Ty::Scalar(*scalar), element)
        }
        _ => false,
    }
}

/// The element type `ty` is, if it is one: a number type or a vector of one (literals take
/// their default types).
fn element_of(ty: &Ty) -> Option<Element> {
    let (scalar, lanes) = match ty {
        Ty::Scalar(scalar) => (*scalar, 1),
        Ty::Vector(lanes, scalar) => (*scalar, *lanes),
        Ty::IntVar(_) => (Scalar::I32, 1),
        Ty::FloatVar(_) => (Scalar::F32, 1),
        Ty::LiteralVector(lanes, element) => (default_scalar(element)?, *lanes),
        _ => return None,
    };
    (scalar != Scalar::Bool).then_some(Element { scalar, lanes })
}

fn own_break_or_continue(block: &Block) -> Option<Span> {
    block.iter().find_map(|stmt| match &stmt.kind {
        StmtKind::Break | StmtKind::Continue => Some(stmt.span),
        StmtKind::If {
            then, otherwise, ..
        } => own_break_or_continue(then)
            .or_else(|| otherwise.as_ref().and_then(own_break_or_continue)),
        StmtKind::Block(body) => own_break_or_continue(body),
        StmtKind::Match { arms, .. } => {
            arms.iter().find_map(|arm| own_break_or_continue(&arm.body))
        }
        _ => None,
    })
}

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

/// The length of a swizzle such as `xy` on a vector of `n` components, if it is valid.
fn swizzle(field: &str, n: u8) -> Option<u8> {
    let valid = |sets: &str| field.chars().all(|c| sets[..n as usize].contains(c));
    let ok = (1..=4).contains(&field.len()) && (valid("xyzw") || valid("rgba"));
    ok.then_some(field.len() as u8)
}

/// A reference parameter's type as the user wrote it: `&mut [f32; 64]`, `&[u32]`, `&Params`.
pub fn param_rust_ty(param: &FnParam, params: &[ParamsStruct]) -> String {
    let amp = if param.mutable { "&mut " } else { "&" };
    match param.kind {
        ParamKind::Value => param.ty.rust_name(),
        ParamKind::Array => format!("{amp}{}", param.ty.rust_name()),
        ParamKind::Storage => format!("{amp}[{}]", param.ty.rust_name()),
        ParamKind::Uniform(index) => format!("&{}", params[index].name),
    }
}

fn reference_advice(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Array => "pass a workgroup array or a local array of that type",
        ParamKind::Storage => "pass a buffer parameter of the kernel with that element type",
        ParamKind::Uniform(_) => "pass the kernel's parameters of that struct",
        ParamKind::Value => "pass a value",
    }
}
