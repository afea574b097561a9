//! Data races on workgroup memory that show in the code itself: an element of a workgroup
//! array written by one invocation and read by another with no `workgroup_barrier()` between
//! them, where the read may see the old value. WGSL leaves such a read's value undefined, and
//! on a GPU it usually works until it does not (a reduction finished without barriers "because
//! a warp runs in lockstep"; a tree reduction missing the barrier between its steps).
//!
//! The check reports only what it can see for certain, so that a correct kernel never fails to
//! compile. It follows, along every path through one function's body (a kernel or a helper
//! lent workgroup arrays), the writes `a[w] = ..` since the last barrier, and reports a read
//! `a[r]` when:
//!
//! - **a neighbour's element**: `r` is `w + d`, `w - d`, `d + w` or `w ^ d` with `d` the same
//!   in every invocation and not `0` (`s[t + 16]` after `s[t] = ..`); or
//! - **one element for all**: `r` is the same in every invocation and `w` is made from the
//!   invocation ids (`s[0]` after `s[t] = ..`), outside any `if` or loop that depends on the
//!   invocation (whose reader may be the writer itself).
//!
//! Indices are compared as expressions, with immutable `let`s replaced by their values; a write
//! whose index names a variable assigned after it matches nothing from then on. A loop's body is
//! followed twice, so that a write in one turn meets the reads of the next (in the outer four
//! loops of a nest). A call of a helper
//! that executes a barrier counts as a barrier; a helper's own accesses are checked in its
//! body, from an empty start (a write before the call and a read inside it are not seen).
//! Atomics, `workgroup_uniform_load` (a barrier itself) and accesses through fragments are not
//! reads or writes here. What the check cannot see (an index computed by a helper, a race across
//! a call, storage buffers) it leaves alone: it finds the common mistakes, not every race.

use std::collections::{HashMap, HashSet};

use crate::diag::Errors;
use crate::ir::builtins::{Builtin, Form, IdBuiltin, Signature, Uniformity};
use crate::ir::*;

/// Reports the races of `kernel`'s body and of the helpers it lends workgroup arrays.
pub fn check(kernel: &Variant, errors: &mut Errors) {
    let barriers = helpers_with_barriers(&kernel.helpers);
    let (arrays, values): (Vec<_>, Vec<_>) = kernel
        .shared
        .iter()
        .partition(|s| matches!(s.ty, Ty::Array(..)));
    let names = |vars: Vec<&SharedVar>| vars.iter().map(|s| s.name.to_string()).collect();
    let (arrays, workgroup_values): (HashSet<String>, HashSet<String>) =
        (names(arrays), names(values));
    let lent = lent_arrays(kernel, &arrays);
    let none = HashSet::new();
    let mut reported = HashSet::new();
    let mut walk = |body: &Block, arrays, workgroup_values, params: &[FnParam]| {
        let values = Values::of(body, params);
        let mut walker = Walker {
            arrays,
            workgroup_values,
            values: &values,
            barriers: &barriers,
            pending: Vec::new(),
            varying_depth: 0,
            loop_depth: 0,
            reported: &mut reported,
            errors: &mut *errors,
        };
        walker.block(body);
    };
    walk(&kernel.body, arrays, &workgroup_values, &[]);
    for helper in &kernel.helpers {
        let Some(lent) = lent.get(&helper.name.to_string()) else {
            continue;
        };
        let arrays: HashSet<String> = (helper.params.iter().zip(lent))
            .filter(|(_, &lent)| lent)
            .map(|(p, _)| p.name.to_string())
            .collect();
        if !arrays.is_empty() {
            walk(&helper.body, arrays, &none, &helper.params);
        }
    }
}

/// The helpers that execute a `workgroup_barrier()` (or a `workgroup_uniform_load`), themselves
/// or through a helper they call.
fn helpers_with_barriers(helpers: &[Function]) -> HashSet<String> {
    let mut with: HashSet<String> = HashSet::new();
    loop {
        let before = with.len();
        for helper in helpers {
            let mut barrier = false;
            visit_exprs(&helper.body, &mut |e| match &e.kind {
                ExprKind::Builtin(builtin, _) => barrier |= is_workgroup_barrier(builtin),
                ExprKind::Call(name, _) => barrier |= with.contains(&name.to_string()),
                _ => {}
            });
            if barrier {
                with.insert(helper.name.to_string());
            }
        }
        if with.len() == before {
            return with;
        }
    }
}

fn is_workgroup_barrier(builtin: &Builtin) -> bool {
    builtin.name == "workgroup_barrier" || builtin.signature == Signature::UniformLoad
}

/// By helper name, which of its parameters some call lends a workgroup array (directly from the
/// kernel, or through another helper).
fn lent_arrays(kernel: &Variant, shared: &HashSet<String>) -> HashMap<String, Vec<bool>> {
    let mut lent: HashMap<String, Vec<bool>> = HashMap::new();
    let params: HashMap<String, &Function> = kernel
        .helpers
        .iter()
        .map(|h| (h.name.to_string(), h))
        .collect();
    let mark = |body: &Block, arrays: &HashSet<String>, lent: &mut HashMap<_, Vec<bool>>| {
        let mut changed = false;
        visit_exprs(body, &mut |e| {
            let ExprKind::Call(name, args) = &e.kind else {
                return;
            };
            let Some(callee) = params.get(&name.to_string()) else {
                return;
            };
            let flags = lent
                .entry(name.to_string())
                .or_insert_with(|| vec![false; callee.params.len()]);
            for (i, arg) in args.iter().enumerate() {
                // `s` or `&mut s`.
                let arg = match &arg.kind {
                    ExprKind::Ref(_, inner) => inner,
                    _ => arg,
                };
                let lends =
                    matches!(&arg.kind, ExprKind::Path(n, None) if arrays.contains(&n.to_string()));
                if lends && i < flags.len() && !flags[i] {
                    flags[i] = true;
                    changed = true;
                }
            }
        });
        changed
    };
    mark(&kernel.body, shared, &mut lent);
    loop {
        let mut changed = false;
        for helper in &kernel.helpers {
            let Some(flags) = lent.get(&helper.name.to_string()) else {
                continue;
            };
            let arrays: HashSet<String> = (helper.params.iter().zip(flags))
                .filter(|(_, &lent)| lent)
                .map(|(p, _)| p.name.to_string())
                .collect();
            changed |= mark(&helper.body, &arrays, &mut lent);
        }
        if !changed {
            return lent;
        }
    }
}

/// Whether a value is the same in every invocation of the workgroup, made from the invocation
/// ids (and such values) alone, or neither as far as the check can tell. Ordered: a value made
/// of several parts has the greatest of their classes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Class {
    Uniform,
    Invocation,
    Unknown,
}

/// What the check knows of a function's locals: the value of each immutable `let`, and the
/// class of every local.
struct Values<'b> {
    lets: HashMap<LocalId, &'b Expr>,
    classes: HashMap<LocalId, Class>,
}

/// How many nodes one comparison of indices may visit (their `let`s replaced), so that a long
/// chain of `let`s stays cheap; past it, the indices count as different.
const FUEL: u32 = 4096;

impl<'b> Values<'b> {
    fn of(body: &'b Block, params: &[FnParam]) -> Self {
        let mut values = Values {
            lets: HashMap::new(),
            classes: HashMap::new(),
        };
        for param in params.iter().filter(|p| p.kind == ParamKind::Value) {
            values.classes.insert(param.local, Class::Unknown);
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

    fn class(&self, e: &Expr) -> Class {
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

    /// Whether `a` and `b` are the same expression, immutable `let`s replaced by their values.
    fn same(&self, a: &Expr, b: &Expr, fuel: &mut u32) -> bool {
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
    fn resolved<'e>(&'e self, e: &'e Expr) -> &'e Expr {
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
    fn mentions(&self, e: &Expr, locals: &HashSet<LocalId>, fuel: &mut u32) -> bool {
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
fn visit_stmts<'b>(block: &'b Block, f: &mut impl FnMut(&'b Stmt)) {
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
fn root_local(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Path(_, local) => *local,
        ExprKind::Index(base, _) | ExprKind::Field(base, _) => root_local(base),
        _ => None,
    }
}

/// How deep in loops a body is followed twice (a write in one turn, a read in the next).
const MAX_LOOPS_FOLLOWED: u32 = 4;

/// What a write wrote.
#[derive(Clone, Copy)]
enum Slot<'b> {
    /// `a[index]`.
    Element(&'b Expr),
    /// A workgroup value (`*total = ..`).
    Value,
    /// An element whose index names a variable assigned since: it matches no read.
    Forgotten,
}

/// A write to a workgroup array since the last barrier.
#[derive(Clone)]
struct Write<'b> {
    array: String,
    slot: Slot<'b>,
    /// The class of the element's index (a workgroup value's is `Uniform`).
    class: Class,
    /// How many `if`s and loops depending on the invocation were around the write.
    depth: u32,
    /// The place as written, for the message (`s[t]`).
    text: String,
    line: usize,
    /// Written in an earlier turn of a loop the read is in.
    earlier_turn: bool,
}

struct Walker<'w, 'b> {
    arrays: HashSet<String>,
    /// The kernel's workgroup values (`#[workgroup] total: &mut f32`).
    workgroup_values: &'w HashSet<String>,
    values: &'w Values<'b>,
    barriers: &'w HashSet<String>,
    pending: Vec<Write<'b>>,
    /// How many `if`s, loops and `match`es around the current statement depend on the
    /// invocation (or may).
    varying_depth: u32,
    /// How many loops are around the current statement.
    loop_depth: u32,
    /// The reads reported so far (by position), each once however many paths reach it.
    reported: &'w mut HashSet<String>,
    errors: &'w mut Errors,
}

impl<'b> Walker<'_, 'b> {
    fn block(&mut self, block: &'b Block) {
        for stmt in block {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &'b Stmt) {
        match &stmt.kind {
            StmtKind::Let { init, .. } => init.iter().for_each(|e| self.reads(e)),
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.reads(e),
            StmtKind::Assign { target, op, value } => self.assign(target, op.is_some(), value),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.reads(cond);
                let branches = [Some(then), otherwise.as_ref()];
                self.branches(self.values.class(cond), branches.into_iter().flatten());
            }
            StmtKind::Match { scrutinee, arms } => {
                self.reads(scrutinee);
                let branches = arms.iter().map(|arm| &arm.body);
                self.branches(self.values.class(scrutinee), branches);
            }
            StmtKind::For(f) => {
                let bounds = [Some(&f.start), Some(&f.end), f.step.as_ref()];
                let bounds: Vec<&Expr> = bounds.into_iter().flatten().collect();
                bounds.iter().for_each(|e| self.reads(e));
                let class = bounds.iter().map(|e| self.values.class(e)).max();
                let changed: HashSet<LocalId> = std::iter::once(f.local)
                    .chain(assigned_locals(&f.body))
                    .collect();
                self.turns(class.unwrap_or(Class::Uniform), &changed, |w| {
                    w.block(&f.body)
                });
            }
            StmtKind::While { cond, body } => {
                let changed = assigned_locals(body).collect();
                self.turns(self.values.class(cond), &changed, |w| {
                    w.reads(cond);
                    w.block(body);
                });
            }
            StmtKind::Loop(body) => {
                let changed = assigned_locals(body).collect();
                self.turns(Class::Uniform, &changed, |w| w.block(body));
            }
            StmtKind::Block(body) => self.block(body),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }

    /// The workgroup value an assignment writes (`*total = ..`, `range.y = ..`), if any.
    fn workgroup_value(&self, target: &'b Expr) -> Option<&'b proc_macro2::Ident> {
        match &target.kind {
            ExprKind::Path(name, None) if self.workgroup_values.contains(&name.to_string()) => {
                Some(name)
            }
            ExprKind::Field(base, _) => self.workgroup_value(base),
            _ => None,
        }
    }

    fn assign(&mut self, target: &'b Expr, compound: bool, value: &'b Expr) {
        self.reads(value);
        match workgroup_place(target, &self.arrays) {
            Some((array, index)) => {
                self.places_read(target);
                if compound {
                    self.read(array, Slot::Element(index), target.span);
                }
                let write = Write {
                    array: array.to_string(),
                    slot: Slot::Element(index),
                    class: self.values.class(index),
                    depth: self.varying_depth,
                    text: place_text(array, index),
                    line: target.span.line(),
                    earlier_turn: false,
                };
                self.push(write);
            }
            None if self.workgroup_value(target).is_some() => {
                let Some(name) = self.workgroup_value(target) else {
                    return;
                };
                if compound {
                    self.read(name, Slot::Value, target.span);
                }
                let write = Write {
                    array: name.to_string(),
                    slot: Slot::Value,
                    class: Class::Uniform,
                    depth: self.varying_depth,
                    text: name.to_string(),
                    line: target.span.line(),
                    earlier_turn: false,
                };
                self.push(write);
            }
            None => {
                self.places_read(target);
                if let Some(local) = root_local(target) {
                    self.forget(&HashSet::from([local]));
                }
            }
        }
    }

    /// The indices of an assigned place, which are read.
    fn places_read(&mut self, target: &'b Expr) {
        match &target.kind {
            ExprKind::Index(base, index) => {
                self.reads(index);
                self.places_read(base);
            }
            ExprKind::Field(base, _) => self.places_read(base),
            _ => {}
        }
    }

    /// `if` and `match`: each branch from the same writes, and after them the writes of any.
    fn branches(&mut self, class: Class, branches: impl Iterator<Item = &'b Block>) {
        let before = self.pending.clone();
        let mut after = Vec::new();
        let varying = class != Class::Uniform;
        self.varying_depth += u32::from(varying);
        for branch in branches {
            self.pending = before.clone();
            self.block(branch);
            after.append(&mut self.pending);
        }
        self.varying_depth -= u32::from(varying);
        // A missing `else` keeps the writes before.
        self.pending = before;
        for write in after {
            self.push(write);
        }
    }

    /// A loop: its body twice, the second time with the writes of the first carried over (those
    /// whose index names a variable the loop changes match nothing), then the writes of either
    /// or none.
    fn turns(&mut self, class: Class, changed: &HashSet<LocalId>, mut body: impl FnMut(&mut Self)) {
        let varying = class != Class::Uniform;
        self.varying_depth += u32::from(varying);
        self.loop_depth += 1;
        let before = self.pending.clone();
        body(self);
        // Twice at every level would take 2^depth walks: the innermost loops are walked once.
        if self.loop_depth > MAX_LOOPS_FOLLOWED {
            self.loop_depth -= 1;
            self.varying_depth -= u32::from(varying);
            let once = std::mem::replace(&mut self.pending, before);
            once.into_iter().for_each(|write| self.push(write));
            return;
        }
        let first = std::mem::replace(&mut self.pending, before.clone());
        for mut write in first {
            write.earlier_turn = true;
            self.push(write);
        }
        self.forget(changed);
        body(self);
        self.loop_depth -= 1;
        self.varying_depth -= u32::from(varying);
        let second = std::mem::replace(&mut self.pending, before);
        for write in second {
            self.push(write);
        }
    }

    fn push(&mut self, write: Write<'b>) {
        let same = |w: &Write<'b>| {
            w.array == write.array
                && w.line == write.line
                && w.text == write.text
                && w.earlier_turn == write.earlier_turn
                && matches!(w.slot, Slot::Forgotten) == matches!(write.slot, Slot::Forgotten)
        };
        if !self.pending.iter().any(same) {
            self.pending.push(write);
        }
    }

    /// After an assignment to one of `locals`: the writes whose index names it match nothing.
    fn forget(&mut self, locals: &HashSet<LocalId>) {
        for write in &mut self.pending {
            let mut fuel = FUEL;
            if let Slot::Element(index) = write.slot {
                if self.values.mentions(index, locals, &mut fuel) {
                    write.slot = Slot::Forgotten;
                }
            }
        }
    }

    /// Every read of a workgroup array in `e`, in evaluation order, and the barriers among them.
    fn reads(&mut self, e: &'b Expr) {
        match &e.kind {
            ExprKind::Index(base, index) => {
                self.reads(index);
                match &base.kind {
                    ExprKind::Path(name, None) if self.arrays.contains(&name.to_string()) => {
                        self.read(name, Slot::Element(index), e.span)
                    }
                    _ => self.reads(base),
                }
            }
            ExprKind::Builtin(builtin, args) => {
                if builtin.form == Form::Atomic {
                    // The atomic's place is not a plain read; its index is.
                    if let Some(place) = args.first() {
                        self.places_read(place);
                    }
                    args.iter().skip(1).for_each(|a| self.reads(a));
                } else if builtin.signature == Signature::UniformLoad {
                    self.pending.clear();
                } else {
                    args.iter().for_each(|a| self.reads(a));
                    if is_workgroup_barrier(builtin) {
                        self.pending.clear();
                    }
                }
            }
            ExprKind::Call(name, args) => {
                args.iter().for_each(|a| self.reads(a));
                if self.barriers.contains(&name.to_string()) {
                    self.pending.clear();
                }
            }
            ExprKind::Field(a, _)
            | ExprKind::Unary(_, a)
            | ExprKind::Cast(a, _)
            | ExprKind::Bitcast(a, _)
            | ExprKind::Repeat(a, _) => self.reads(a),
            // A whole array lent to a helper or builtin: its accesses are not followed here.
            ExprKind::Ref(_, _) => {}
            ExprKind::Binary(_, a, b) => {
                self.reads(a);
                self.reads(b);
            }
            ExprKind::Method(receiver, _, args) => {
                self.reads(receiver);
                args.iter().for_each(|a| self.reads(a));
            }
            ExprKind::GenericCall(_, _, args) | ExprKind::Array(args) => {
                args.iter().for_each(|a| self.reads(a))
            }
            ExprKind::If(cond, then, otherwise) => {
                self.reads(cond);
                let class = self.values.class(cond);
                self.value_branches(class, [&**then, &**otherwise].into_iter());
            }
            ExprKind::Match(scrutinee, arms) => {
                self.reads(scrutinee);
                let class = self.values.class(scrutinee);
                self.value_branches(class, arms.iter().map(|arm| &arm.body));
            }
            ExprKind::Block(block) => {
                self.block(&block.stmts);
                self.reads(&block.tail);
            }
            ExprKind::Path(name, None) if self.workgroup_values.contains(&name.to_string()) => {
                self.read(name, Slot::Value, e.span)
            }
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => {}
        }
    }

    /// The branches of an `if` or `match` used as a value.
    fn value_branches(&mut self, class: Class, branches: impl Iterator<Item = &'b BlockExpr>) {
        let before = self.pending.clone();
        let mut after = Vec::new();
        let varying = class != Class::Uniform;
        self.varying_depth += u32::from(varying);
        for branch in branches {
            self.pending = before.clone();
            self.block(&branch.stmts);
            self.reads(&branch.tail);
            after.append(&mut self.pending);
        }
        self.varying_depth -= u32::from(varying);
        self.pending = before;
        for write in after {
            self.push(write);
        }
    }

    /// A read of `array[index]` (or of a workgroup value): reported when a write since the
    /// last barrier makes it a race.
    fn read(&mut self, array: &proc_macro2::Ident, slot: Slot<'b>, span: Span) {
        let name = array.to_string();
        let race = self.pending.iter().find_map(|write| {
            let race = if write.array != name {
                None
            } else {
                self.race(slot, write)
            };
            race.map(|race| (race, write))
        });
        let Some((race, write)) = race else {
            return;
        };
        if !self.reported.insert(format!("{:?}", span.first)) {
            return;
        }
        let read = match slot {
            Slot::Element(index) => place_text(array, index),
            _ => name.clone(),
        };
        let when = if write.earlier_turn {
            "in the loop's previous turn"
        } else {
            "before it"
        };
        let what = match race {
            Race::Neighbour => format!(
                "`{read}` reads another invocation's element of `{name}`, which that invocation \
                 writes through `{}` (line {}) {when}",
                write.text, write.line
            ),
            Race::OneForAll => format!(
                "every invocation reads `{read}`, which one invocation writes through `{}` (line \
                 {}) {when}",
                write.text, write.line
            ),
        };
        self.errors.at(
            span,
            format!(
                "{what}, with no `workgroup_barrier()` between them: the read may see the old \
                 value (a data race); call `workgroup_barrier()` between the write and the read, \
                 where every invocation of the workgroup reaches it"
            ),
        );
    }

    /// The race between a read of `slot` and `write` (of the same array), if the check sees one.
    fn race(&self, slot: Slot<'b>, write: &Write<'b>) -> Option<Race> {
        // Outside the `if` that held the write: other invocations read what one wrote.
        let outside = write.depth > self.varying_depth;
        match (slot, write.slot) {
            (Slot::Element(index), Slot::Element(written)) => {
                let class = self.values.class(index);
                let mut fuel = FUEL;
                if self.neighbour(index, written) {
                    Some(Race::Neighbour)
                } else if class == Class::Uniform
                    && (self.varying_depth == 0 && write.class == Class::Invocation
                        || outside && self.values.same(index, written, &mut fuel))
                {
                    Some(Race::OneForAll)
                } else {
                    None
                }
            }
            (Slot::Value, Slot::Value) if outside => Some(Race::OneForAll),
            _ => None,
        }
    }

    /// Whether `read` is `written` moved by an amount the same in every invocation: `w + d`,
    /// `w - d`, `d + w`, `w ^ d`, `d ^ w` (`d` not `0`).
    fn neighbour(&self, read: &Expr, written: &Expr) -> bool {
        let read = self.values.resolved(read);
        let ExprKind::Binary(op, a, b) = &read.kind else {
            return false;
        };
        let moved = |index: &Expr, by: &Expr| {
            let mut fuel = FUEL;
            self.values.class(by) == Class::Uniform
                && !self.values.resolved(by).is_zero()
                && self.values.same(index, written, &mut fuel)
        };
        match op {
            BinOp::Add | BinOp::BitXor => moved(a, b) || moved(b, a),
            BinOp::Sub => moved(a, b),
            _ => false,
        }
    }
}

enum Race {
    Neighbour,
    OneForAll,
}

/// The workgroup array an assignment writes an element of, and the element's index.
fn workgroup_place<'b>(
    target: &'b Expr,
    arrays: &HashSet<String>,
) -> Option<(&'b proc_macro2::Ident, &'b Expr)> {
    match &target.kind {
        ExprKind::Index(base, index) => match &base.kind {
            ExprKind::Path(name, None) if arrays.contains(&name.to_string()) => Some((name, index)),
            _ => workgroup_place(base, arrays),
        },
        ExprKind::Field(base, _) => workgroup_place(base, arrays),
        _ => None,
    }
}

/// The locals a loop's body assigns (declared outside it or inside).
fn assigned_locals(body: &Block) -> impl Iterator<Item = LocalId> {
    let mut locals = Vec::new();
    visit_stmts(body, &mut |stmt| match &stmt.kind {
        StmtKind::Assign { target, .. } => locals.extend(root_local(target)),
        StmtKind::Let { local, .. } => locals.push(*local),
        StmtKind::For(f) => locals.push(f.local),
        _ => {}
    });
    locals.into_iter()
}

/// `a[i]` as the user would write it (`s[t + 16]`).
fn place_text(array: &proc_macro2::Ident, index: &Expr) -> String {
    let index = index.rust_text();
    let index = match index.strip_prefix('(').and_then(|i| i.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner.to_owned(),
        _ => index,
    };
    format!("{array}[{index}]")
}

/// Whether every `(` in `text` is closed in it, in order.
fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}
