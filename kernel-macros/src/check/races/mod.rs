//! Data races on workgroup memory that show in the code itself: an element of a workgroup
//! array written by one invocation and read by another with no `workgroup_barrier()` between
//! them, where the read may see the old value. WGSL leaves such a read's value undefined, and
//! on a GPU it usually works until it does not (a reduction finished without barriers "because
//! a warp runs in lockstep"; a tree reduction missing the barrier between its steps).
//!
//! The check reports only what it can see for certain, so that a correct kernel never fails to
//! compile. It follows, along every path through one function's body (a kernel or a helper
//! lent workgroup arrays), the writes `a[w] = ..` since the last barrier, and reports a read
//! `a[r]` that is not an element the invocation wrote itself when:
//!
//! - **a neighbour's element**: `w` steps one element per invocation (the invocation's index
//!   `t`: `local_index()`, a row's `local_id().x`, or a helper's parameter every call passes
//!   one of those; plus an offset the same in every invocation) and `r` is `w + d`, `w - d`,
//!   `d + w` or `w ^ d` with `d` the same in every
//!   invocation, not `0` and, as a literal, smaller than the workgroup (`s[t + 16]` after
//!   `s[t] = ..`): invocation `t + d` writes it; or
//! - **one element for all**: `r` is the same in every invocation, outside any `if` or loop
//!   that depends on the invocation (whose reader may be the writer itself), and either `w` is
//!   the invocation's index (`s[0]` after `s[t] = ..`) or `w` is `r` written inside such an
//!   `if` (`if t == 0 { s[0] = .. }`); a workgroup value (`*total`) written inside such an `if`
//!   likewise.
//!
//! Indices are compared as expressions, with immutable `let`s replaced by their values; a write
//! whose index names a variable assigned after it matches nothing from then on. A loop's body is
//! followed twice, so that a write in one turn meets the reads of the next (in the outer four
//! loops of a nest). A call of a helper that executes a barrier counts as a barrier; a
//! helper's own accesses are checked in its body, from an empty start (a write before the
//! call and a read inside it are not seen).
//! Atomics, `workgroup_uniform_load` (a barrier itself) and accesses through fragments are not
//! reads or writes here. What the check cannot see (an index computed by a helper, a race across
//! a call, storage buffers) it leaves alone: it finds the common mistakes, not every race.

mod values;

use std::collections::{HashMap, HashSet};

use crate::diag::Errors;
use crate::ir::builtins::{Builtin, Form, Signature};
use crate::ir::*;
use values::{root_local, visit_stmts, Class, Values, FUEL};

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
    let row = kernel.workgroup_size[1..].iter().all(|&n| n <= 1);
    let indices = index_params(kernel, row);
    let none = HashSet::new();
    let mut reported = HashSet::new();
    let mut walk =
        |body: &Block, arrays, workgroup_values, params: &[FnParam], indices: &[bool]| {
            let values = Values::of(body, params, indices, row);
            let mut walker = Walker {
                arrays,
                invocations: kernel.workgroup_size.iter().product(),
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
    walk(&kernel.body, arrays, &workgroup_values, &[], &[]);
    for helper in &kernel.helpers {
        let name = helper.name.to_string();
        let Some(lent) = lent.get(&name) else {
            continue;
        };
        let arrays = lent_names(helper, lent);
        if !arrays.is_empty() {
            let indices = indices.get(&name).map_or(&[][..], Vec::as_slice);
            walk(&helper.body, arrays, &none, &helper.params, indices);
        }
    }
}

/// By helper name, which of its parameters every call passes the invocation's index
/// (`local_index()`, which a helper cannot read itself, or a parameter that is one).
fn index_params(kernel: &Variant, row: bool) -> HashMap<String, Vec<bool>> {
    let helpers: HashMap<String, &Function> = kernel
        .helpers
        .iter()
        .map(|h| (h.name.to_string(), h))
        .collect();
    let mut known: HashMap<String, Vec<bool>> = HashMap::new();
    // Helpers do not recurse, so this settles within as many rounds as calls nest.
    for _ in 0..=kernel.helpers.len() {
        let mut seen: HashMap<String, Vec<Option<bool>>> = HashMap::new();
        let mut calls = |body: &Block, params: &[FnParam], indices: &[bool]| {
            let values = Values::of(body, params, indices, row);
            visit_exprs(body, &mut |e| {
                let ExprKind::Call(name, args) = &e.kind else {
                    return;
                };
                let Some(callee) = helpers.get(&name.to_string()) else {
                    return;
                };
                let flags = seen
                    .entry(name.to_string())
                    .or_insert_with(|| vec![None; callee.params.len()]);
                for (flag, arg) in flags.iter_mut().zip(args) {
                    let index = values.invocation_index(arg);
                    *flag = Some(flag.map_or(index, |all| all && index));
                }
            });
        };
        calls(&kernel.body, &[], &[]);
        for helper in &kernel.helpers {
            let indices = known
                .get(&helper.name.to_string())
                .cloned()
                .unwrap_or_default();
            calls(&helper.body, &helper.params, &indices);
        }
        let next: HashMap<String, Vec<bool>> = seen
            .into_iter()
            .map(|(name, flags)| (name, flags.into_iter().map(|f| f == Some(true)).collect()))
            .collect();
        if next == known {
            break;
        }
        known = next;
    }
    known
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
            let arrays = lent_names(helper, flags);
            changed |= mark(&helper.body, &arrays, &mut lent);
        }
        if !changed {
            return lent;
        }
    }
}

/// The names of `helper`'s parameters that `lent` marks.
fn lent_names(helper: &Function, lent: &[bool]) -> HashSet<String> {
    (helper.params.iter().zip(lent))
        .filter(|(_, &lent)| lent)
        .map(|(p, _)| p.name.to_string())
        .collect()
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
    /// Invocations per workgroup.
    invocations: u32,
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
        // An element this invocation wrote itself (`s[t + 64]` after `s[t + 64] = ..`).
        // (one made outside any `if` the reader is not in, so that the reader made it).
        let own = |write: &Write<'b>| match (slot, write.slot) {
            (Slot::Element(index), Slot::Element(written)) => {
                let mut fuel = FUEL;
                write.array == name
                    && write.depth <= self.varying_depth
                    && self.values.same(index, written, &mut fuel)
            }
            _ => false,
        };
        if self.pending.iter().any(own) {
            return;
        }
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
                    && (self.varying_depth == 0 && self.first_elements(index, written)
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

    /// Whether `written` steps one element per invocation: the invocation's index, plus an
    /// offset the same in every invocation.
    fn one_per_invocation(&self, written: &Expr) -> bool {
        match &self.values.resolved(written).kind {
            ExprKind::Binary(BinOp::Add, a, b) => {
                self.values.invocation_index(a) && self.values.class(b) == Class::Uniform
                    || self.values.invocation_index(b) && self.values.class(a) == Class::Uniform
            }
            _ => self.values.invocation_index(written),
        }
    }

    /// Whether the elements every invocation reads (`s[read]`, the same in all) are among
    /// those the invocations wrote through `s[written]`: `written` is the invocation's index
    /// and `read` an element a workgroup's invocations cover (a literal below their number,
    /// or a value the same in every invocation).
    fn first_elements(&self, read: &Expr, written: &Expr) -> bool {
        let in_range = match &self.values.resolved(read).kind {
            ExprKind::Int(v) => *v < u64::from(self.invocations),
            _ => true,
        };
        in_range && self.values.invocation_index(written)
    }

    /// Whether `read` is `written` moved by an amount the same in every invocation: `w + d`,
    /// `w - d`, `d + w`, `w ^ d`, `d ^ w` (`d` not `0`, and a literal `d` smaller than the
    /// workgroup), where `written` steps one element per invocation (`s[t]`, `s[t + base]`):
    /// invocation `t + d` writes the element read.
    fn neighbour(&self, read: &Expr, written: &Expr) -> bool {
        if !self.one_per_invocation(written) {
            return false;
        }
        let read = self.values.resolved(read);
        let ExprKind::Binary(op, a, b) = &read.kind else {
            return false;
        };
        let moved = |index: &Expr, by: &Expr| {
            let mut fuel = FUEL;
            let by = self.values.resolved(by);
            let within = match &by.kind {
                ExprKind::Int(d) => *d < u64::from(self.invocations),
                _ => true,
            };
            self.values.class(by) == Class::Uniform
                && !by.is_zero()
                && within
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
    format!("{array}[{}]", strip_parens(&index.rust_text()))
}

#[cfg(test)]
mod tests;
