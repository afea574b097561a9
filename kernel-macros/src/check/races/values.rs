//! What the race check knows of a function's values: whether each is the same in every
//! invocation of the workgroup or made from the invocation ids, the value of each immutable
//! `let`, and when two indices are the same expression.

use std::collections::{HashMap, HashSet};

use crate::ir::builtins::{Form, IdBuiltin, Signature, Uniformity};
use crate::ir::*;

/// Whether a value is the same in every invocation of the workgroup, made from the invocation
/// ids (and such values) alone, or neither as far as the check can tell. Ordered: a value made
/// of several parts has the greatest of their classes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Class {
    Uniform,
    Invocation,
    Unknown,
}

/// What the check knows of a function's locals: the value of each immutable `let`, and the
/// class of every local.
pub struct Values<'b> {
    lets: HashMap<LocalId, &'b Expr>,
    classes: HashMap<LocalId, Class>,
    /// The parameters every call passes the invocation's index (a helper cannot read it).
    index_params: HashSet<LocalId>,
    /// Whether the workgroup is a row (`local_id().x` is then the invocation's index).
    one_dimensional: bool,
}

/// How many nodes one comparison of indices may visit (their `let`s replaced), so that a long
/// chain of `let`s stays cheap; past it, the indices count as different.
pub const FUEL: u32 = 4096;

impl<'b> Values<'b> {
    /// What is known of `body`'s values; `indices` marks the `params` that every call passes
    /// the invocation's index.
    pub fn of(
        body: &'b Block,
        params: &[FnParam],
        indices: &[bool],
        one_dimensional: bool,
    ) -> Self {
        let mut values = Values {
            lets: HashMap::new(),
            classes: HashMap::new(),
            index_params: HashSet::new(),
            one_dimensional,
        };
        for (i, param) in params.iter().enumerate() {
            if param.kind != ParamKind::Value {
                continue;
            }
            let index = indices.get(i).copied().unwrap_or(false);
            let class = if index {
                Class::Invocation
            } else {
                Class::Unknown
            };
            values.classes.insert(param.local, class);
            if index {
                values.index_params.insert(param.local);
            }
        }
        collect_lets(body, &mut values.lets);
        // Raised until nothing changes: each pass can only raise a class.
        while values.classify(body, Class::Uniform) {}
        values
    }

    /// One pass over `block` under conditions of class `around`; whether a class rose.
    fn classify(&mut self, block: &Block, around: Class) -> bool {
        let mut changed = false;
        for stmt in block {
            match &stmt.kind {
                StmtKind::Let { local, init, .. } => {
                    let class = init.as_ref().map_or(Class::Uniform, |e| self.class(e));
                    changed |= self.raise(*local, class.max(around));
                }
                StmtKind::Assign { target, value, .. } => {
                    if let Some(local) = root_local(target) {
                        let class = self.class(value).max(self.class_of_places(target));
                        changed |= self.raise(local, class.max(around));
                    }
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let inner = around.max(self.class(cond));
                    changed |= self.classify(then, inner);
                    if let Some(otherwise) = otherwise {
                        changed |= self.classify(otherwise, inner);
                    }
                }
                StmtKind::For(f) => {
                    let bounds = [Some(&f.start), Some(&f.end), f.step.as_ref()];
                    let class = bounds
                        .into_iter()
                        .flatten()
                        .map(|e| self.class(e))
                        .fold(around, Class::max);
                    changed |= self.raise(f.local, class);
                    let inner = class.max(self.conditions(&f.body));
                    changed |= self.classify(&f.body, inner);
                }
                StmtKind::While { cond, body } => {
                    let inner = around.max(self.class(cond)).max(self.conditions(body));
                    changed |= self.classify(body, inner);
                }
                StmtKind::Loop(body) => {
                    let inner = around.max(self.conditions(body));
                    changed |= self.classify(body, inner);
                }
                StmtKind::Block(body) => changed |= self.classify(body, around),
                StmtKind::Match { scrutinee, arms } => {
                    let inner = around.max(self.class(scrutinee));
                    for arm in arms {
                        changed |= self.classify(&arm.body, inner);
                    }
                }
                StmtKind::Expr(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => {}
            }
        }
        changed
    }

    /// The greatest class of the conditions around a `break`, `continue` or `return` in a
    /// loop's body: one that depends on the invocation makes the turns, and so every variable
    /// the loop assigns, depend on it.
    fn conditions(&self, body: &Block) -> Class {
        let mut class = Class::Uniform;
        self.exits(body, Class::Uniform, &mut class);
        class
    }

    fn exits(&self, block: &Block, around: Class, class: &mut Class) {
        for stmt in block {
            match &stmt.kind {
                StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => {
                    *class = (*class).max(around)
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let inner = around.max(self.class(cond));
                    self.exits(then, inner, class);
                    if let Some(otherwise) = otherwise {
                        self.exits(otherwise, inner, class);
                    }
                }
                StmtKind::Match { scrutinee, arms } => {
                    let inner = around.max(self.class(scrutinee));
                    arms.iter()
                        .for_each(|arm| self.exits(&arm.body, inner, class));
                }
                StmtKind::While { cond, body } => {
                    self.exits(body, around.max(self.class(cond)), class)
                }
                StmtKind::For(f) => self.exits(&f.body, around, class),
                StmtKind::Loop(body) | StmtKind::Block(body) => self.exits(body, around, class),
                _ => {}
            }
        }
    }

    fn raise(&mut self, local: LocalId, class: Class) -> bool {
        let entry = self.classes.entry(local).or_insert(Class::Uniform);
        let raised = class > *entry;
        *entry = (*entry).max(class);
        raised
    }

    /// The greatest class of the indices in an assigned place (`a[i][j]`).
    fn class_of_places(&self, target: &Expr) -> Class {
        match &target.kind {
            ExprKind::Index(base, index) => self.class(index).max(self.class_of_places(base)),
            ExprKind::Field(base, _) => self.class_of_places(base),
            _ => Class::Uniform,
        }
    }

    pub fn class(&self, e: &Expr) -> Class {
        let all = |args: &[Expr]| {
            args.iter()
                .map(|a| self.class(a))
                .fold(Class::Uniform, Class::max)
        };
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => Class::Uniform,
            ExprKind::Path(_, Some(local)) => {
                self.classes.get(local).copied().unwrap_or(Class::Uniform)
            }
            // The uniform parameters; a buffer or array is read through `Index` below.
            ExprKind::Path(_, None) => Class::Uniform,
            ExprKind::Field(a, _)
            | ExprKind::Unary(_, a)
            | ExprKind::Cast(a, _)
            | ExprKind::Bitcast(a, _) => self.class(a),
            ExprKind::Binary(_, a, b) => self.class(a).max(self.class(b)),
            ExprKind::Array(items) => all(items),
            ExprKind::Repeat(item, _) => self.class(item),
            ExprKind::Builtin(builtin, args) => match (builtin.signature, builtin.uniformity) {
                (Signature::Id(id), _) => match id {
                    IdBuiltin::WorkgroupId
                    | IdBuiltin::NumWorkgroups
                    | IdBuiltin::SubgroupSize
                    | IdBuiltin::NumSubgroups => Class::Uniform,
                    _ => Class::Invocation,
                },
                (_, Uniformity::Pure) if builtin.form != Form::Atomic => all(args),
                (_, Uniformity::Uniform) => Class::Uniform,
                _ => Class::Unknown,
            },
            // Memory, helpers and everything else: what they give is not followed.
            _ => Class::Unknown,
        }
    }

    /// Whether `e` is the invocation's index: `local_index()`, a row's `local_id().x`, or a
    /// parameter every call passes one of those.
    pub fn invocation_index(&self, e: &Expr) -> bool {
        match &self.resolved(e).kind {
            ExprKind::Builtin(builtin, _) => {
                builtin.signature == Signature::Id(IdBuiltin::LocalIndex)
            }
            ExprKind::Field(base, lane) => {
                self.one_dimensional
                    && lane == "x"
                    && matches!(&self.resolved(base).kind,
                        ExprKind::Builtin(b, _) if b.signature == Signature::Id(IdBuiltin::LocalId))
            }
            ExprKind::Path(_, Some(local)) => self.index_params.contains(local),
            _ => false,
        }
    }

    /// Whether `a` and `b` are the same expression, immutable `let`s replaced by their values.
    pub fn same(&self, a: &Expr, b: &Expr, fuel: &mut u32) -> bool {
        if *fuel == 0 {
            return false;
        }
        *fuel -= 1;
        let (a, b) = (self.resolved(a), self.resolved(b));
        match (&a.kind, &b.kind) {
            (ExprKind::Int(x), ExprKind::Int(y)) => x == y,
            (ExprKind::Bool(x), ExprKind::Bool(y)) => x == y,
            (ExprKind::Path(x, None), ExprKind::Path(y, None)) => x == y,
            (ExprKind::Path(_, Some(x)), ExprKind::Path(_, Some(y))) => x == y,
            (ExprKind::Field(x, f), ExprKind::Field(y, g)) => f == g && self.same(x, y, fuel),
            (ExprKind::Unary(o, x), ExprKind::Unary(p, y)) => o == p && self.same(x, y, fuel),
            (ExprKind::Cast(x, s), ExprKind::Cast(y, t)) => s == t && self.same(x, y, fuel),
            (ExprKind::Binary(o, x1, x2), ExprKind::Binary(p, y1, y2)) => {
                o == p && self.same(x1, y1, fuel) && self.same(x2, y2, fuel)
            }
            (ExprKind::Builtin(f, xs), ExprKind::Builtin(g, ys)) => {
                // An id, or math on equal arguments: the same value in one invocation.
                let repeatable = matches!(f.signature, Signature::Id(_))
                    || matches!(f.uniformity, Uniformity::Pure | Uniformity::Uniform);
                std::ptr::eq(*f, *g)
                    && repeatable
                    && f.form != Form::Atomic
                    && xs.len() == ys.len()
                    && xs.iter().zip(ys).all(|(x, y)| self.same(x, y, fuel))
            }
            _ => false,
        }
    }

    /// `e`, or the value of the immutable `let` it names.
    pub fn resolved<'e>(&'e self, e: &'e Expr) -> &'e Expr {
        let mut e = e;
        while let ExprKind::Path(_, Some(local)) = &e.kind {
            match self.lets.get(local) {
                Some(value) => e = value,
                None => break,
            }
        }
        e
    }

    /// Whether `e` (its `let`s replaced) reads one of `locals`.
    pub fn mentions(&self, e: &Expr, locals: &HashSet<LocalId>, fuel: &mut u32) -> bool {
        let mut found = false;
        visit_expr(e, &mut |e| {
            if found || *fuel == 0 {
                found = true; // out of fuel: assume it does
                return;
            }
            *fuel -= 1;
            if let ExprKind::Path(_, Some(local)) = &e.kind {
                found = locals.contains(local)
                    || self
                        .lets
                        .get(local)
                        .is_some_and(|value| self.mentions(value, locals, fuel));
            }
        });
        found
    }
}

fn collect_lets<'b>(body: &'b Block, lets: &mut HashMap<LocalId, &'b Expr>) {
    visit_stmts(body, &mut |stmt| {
        if let StmtKind::Let {
            mutable: false,
            init: Some(init),
            local,
            ..
        } = &stmt.kind
        {
            lets.insert(*local, init);
        }
    });
}

/// Every statement of `block`, nested ones included, outer before inner.
pub fn visit_stmts<'b>(block: &'b Block, f: &mut impl FnMut(&'b Stmt)) {
    for stmt in block {
        f(stmt);
        match &stmt.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                visit_stmts(then, f);
                if let Some(otherwise) = otherwise {
                    visit_stmts(otherwise, f);
                }
            }
            StmtKind::For(l) => visit_stmts(&l.body, f),
            StmtKind::While { body, .. } | StmtKind::Loop(body) | StmtKind::Block(body) => {
                visit_stmts(body, f)
            }
            StmtKind::Match { arms, .. } => arms.iter().for_each(|arm| visit_stmts(&arm.body, f)),
            _ => {}
        }
    }
}

/// The local an assignment writes (`x = ..`, `x[i] = ..`), if any.
pub fn root_local(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Path(_, local) => *local,
        ExprKind::Index(base, _) | ExprKind::Field(base, _) => root_local(base),
        _ => None,
    }
}
