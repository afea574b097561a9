//! Barriers must be reached by every invocation of a workgroup together. This pass follows
//! which values may differ between invocations (invocation ids, read-write storage, workgroup
//! memory, atomics, and everything computed from them) and reports a barrier inside control
//! flow that depends on one (an `if`, a loop, a `match`, or code after an early `return`), at
//! the barrier. naga 30 does not check this for barriers, so tessera does.

use std::collections::{HashMap, HashSet};

use crate::diag::Errors;
use crate::ir::builtins::{Builtin, Uniformity};
use crate::ir::*;

/// Checks every barrier of `kernel`, including barriers inside helpers it calls.
pub fn check(kernel: &Variant, errors: &mut Errors) {
    let memory = kernel
        .bindings
        .iter()
        .map(|b| (b.name.to_string(), binding_varies(&b.kind)))
        .chain(kernel.shared.iter().map(|s| (s.name.to_string(), true)))
        .collect();
    let mut analysis = Analysis::new(&kernel.helpers, memory, HashSet::new());
    analysis.run(&kernel.body);
    for (span, message) in analysis.found {
        errors.at(span, message);
    }
}

/// Whether reads of a binding may differ between invocations (read-write storage may).
fn binding_varies(kind: &BindingKind) -> bool {
    matches!(kind, BindingKind::Storage { writable: true, .. })
}

/// Names of helpers that execute a barrier, directly or through other helpers.
fn helpers_with_barriers(helpers: &[Function]) -> HashSet<String> {
    let mut with = HashSet::new();
    loop {
        let before = with.len();
        for helper in helpers {
            let mut calls_barrier = false;
            visit_exprs(&helper.body, &mut |e| match &e.kind {
                ExprKind::Call(name, _) => calls_barrier |= with.contains(&name.to_string()),
                ExprKind::Builtin(builtin, _) => {
                    calls_barrier |= builtin.uniformity == Uniformity::Barrier
                }
                _ => {}
            });
            if calls_barrier {
                with.insert(helper.name.to_string());
            }
        }
        if with.len() == before {
            return with;
        }
    }
}

/// Why control flow is non-uniform: the span of the condition (or early exit) responsible.
type Flow = Option<Span>;

struct Analysis<'k> {
    helpers: &'k [Function],
    barrier_helpers: HashSet<String>,
    /// Buffers, workgroup arrays and lent arrays by name: whether their contents may differ
    /// between invocations.
    memory: HashMap<String, bool>,
    /// Locals that may hold different values in different invocations.
    varying: HashSet<LocalId>,
    /// The flow on entry of each enclosing loop, and the first non-uniform `break`/`continue`.
    loops: Vec<(Flow, Option<Span>)>,
    report: bool,
    found: Vec<(Span, String)>,
}

impl<'k> Analysis<'k> {
    fn new(
        helpers: &'k [Function],
        memory: HashMap<String, bool>,
        varying: HashSet<LocalId>,
    ) -> Self {
        Analysis {
            helpers,
            barrier_helpers: helpers_with_barriers(helpers),
            memory,
            varying,
            loops: Vec::new(),
            report: false,
            found: Vec::new(),
        }
    }

    /// Analyses a function body: silent passes until the varying locals stop growing, then
    /// one that reports.
    fn run(&mut self, body: &Block) {
        loop {
            let before = self.varying.len();
            self.block(body, None);
            if self.varying.len() == before {
                break;
            }
        }
        self.report = true;
        self.block(body, None);
    }

    /// The barriers inside a helper called with `args`: its value parameters vary when their
    /// arguments do; what it is lent is taken to vary.
    fn helper_body(&mut self, helper: &Function, args: &[Expr], flow: Flow) {
        let mut varying = HashSet::new();
        for (param, arg) in helper.params.iter().zip(args) {
            if param.kind == ParamKind::Value && self.expr(arg, flow) {
                varying.insert(param.local);
            }
        }
        // Lent arrays and read-write buffers may differ between invocations; parameters and
        // read-only buffers do not.
        let memory = helper
            .reference_params()
            .map(|p| {
                let varies = match p.kind {
                    ParamKind::Storage => p.mutable,
                    ParamKind::Uniform(_) => false,
                    ParamKind::Array | ParamKind::Value => true,
                };
                (p.name.to_string(), varies)
            })
            .collect();
        let mut inner = Analysis::new(self.helpers, memory, varying);
        inner.run(&helper.body);
        self.found.extend(inner.found);
    }

    /// Analyses `block` under `flow`; returns the span of a `return` taken in non-uniform flow.
    fn block(&mut self, block: &Block, mut flow: Flow) -> Flow {
        let mut returned = None;
        for stmt in block {
            if let Some(exit) = self.stmt(stmt, flow) {
                returned = returned.or(Some(exit));
                flow = flow.or(Some(exit));
            }
        }
        returned
    }

    fn stmt(&mut self, stmt: &Stmt, flow: Flow) -> Flow {
        match &stmt.kind {
            StmtKind::Let { init, local, .. } => {
                let varying = init.as_ref().is_some_and(|e| self.expr(e, flow));
                if varying || flow.is_some() {
                    self.varying.insert(*local);
                }
                None
            }
            StmtKind::Assign { target, value, .. } => {
                let varying = self.expr(value, flow) | self.expr(target, flow);
                if let (true, Some(local)) = (varying || flow.is_some(), root_local(target)) {
                    self.varying.insert(local);
                }
                None
            }
            StmtKind::Expr(e) => {
                self.expr(e, flow);
                None
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let inner = self.condition(cond, flow);
                let a = self.block(then, inner);
                let b = otherwise.as_ref().and_then(|o| self.block(o, inner));
                a.or(b)
            }
            StmtKind::Match { scrutinee, arms } => {
                let inner = self.condition(scrutinee, flow);
                arms.iter()
                    .fold(None, |exit, arm| exit.or(self.block(&arm.body, inner)))
            }
            StmtKind::For(f) => {
                let varying = self.expr(&f.start, flow)
                    | self.expr(&f.end, flow)
                    | f.step.as_ref().is_some_and(|s| self.expr(s, flow));
                let inner = flow.or(varying.then_some(f.end.span));
                if inner.is_some() {
                    self.varying.insert(f.local);
                }
                self.loop_body(&f.body, inner)
            }
            StmtKind::While { cond, body } => {
                let inner = self.condition(cond, flow);
                self.loop_body(body, inner)
            }
            StmtKind::Loop(body) => self.loop_body(body, flow),
            StmtKind::Block(body) => self.block(body, flow),
            StmtKind::Break | StmtKind::Continue => {
                if let Some((entry, first)) = self.loops.last_mut() {
                    if entry.is_none() && flow.is_some() {
                        *first = first.or(flow);
                    }
                }
                None
            }
            StmtKind::Return(value) => {
                if let Some(value) = value {
                    self.expr(value, flow);
                }
                flow
            }
        }
    }

    /// The flow inside a construct controlled by `cond`.
    fn condition(&mut self, cond: &Expr, flow: Flow) -> Flow {
        let varying = self.expr(cond, flow);
        flow.or(varying.then_some(cond.span))
    }

    /// A loop body: a non-uniform `break` or `continue` makes later iterations non-uniform.
    fn loop_body(&mut self, body: &Block, flow: Flow) -> Flow {
        let report = std::mem::replace(&mut self.report, false);
        self.loops.push((flow, None));
        self.block(body, flow);
        let (_, early_exit) = self.loops.pop().unwrap_or((flow, None));
        self.report = report;
        let inner = flow.or(early_exit);
        self.loops.push((inner, None));
        let exit = self.block(body, inner);
        self.loops.pop();
        exit
    }

    /// Whether `e` may differ between invocations; reports barriers reached in non-uniform flow.
    fn expr(&mut self, e: &Expr, flow: Flow) -> bool {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => false,
            ExprKind::Path(_, Some(local)) => self.varying.contains(local),
            ExprKind::Path(_, None) => false,
            ExprKind::Field(base, _)
            | ExprKind::Cast(base, _)
            | ExprKind::Bitcast(base, _)
            | ExprKind::Unary(_, base)
            | ExprKind::Repeat(base, _) => self.expr(base, flow),
            ExprKind::Index(base, index) => {
                let index = self.expr(index, flow);
                match &base.kind {
                    ExprKind::Path(name, None) => index || self.is_varying_memory(name),
                    _ => self.expr(base, flow) | index,
                }
            }
            ExprKind::Binary(_, a, b) => self.expr(a, flow) | self.expr(b, flow),
            ExprKind::Array(items) => items
                .iter()
                .fold(false, |v, item| self.expr(item, flow) | v),
            ExprKind::Call(name, args) => self.call(e, name, args, flow),
            ExprKind::Builtin(builtin, args) => self.builtin(e, builtin, args, flow),
            // `check/` resolved every method to a builtin.
            ExprKind::Method(..) => false,
            ExprKind::If(cond, a, b) => {
                let inner = self.condition(cond, flow);
                let varying = inner.is_some();
                self.block_expr(a, inner) | self.block_expr(b, inner) | varying
            }
            ExprKind::Match(scrutinee, arms) => {
                let inner = self.condition(scrutinee, flow);
                arms.iter().fold(inner.is_some(), |v, arm| {
                    self.block_expr(&arm.body, inner) | v
                })
            }
            ExprKind::Block(block) => self.block_expr(block, flow),
            // What is lent to a helper may vary; the barriers inside it are checked with it.
            ExprKind::Ref(..) => true,
        }
    }

    fn block_expr(&mut self, block: &BlockExpr, flow: Flow) -> bool {
        self.block(&block.stmts, flow);
        self.expr(&block.tail, flow)
    }

    /// A helper call: its barriers are checked where it is called, and inside it with what
    /// it is given.
    fn call(&mut self, e: &Expr, name: &proc_macro2::Ident, args: &[Expr], flow: Flow) -> bool {
        let key = name.to_string();
        // The result may vary with what the helper reads: a varying value, or memory lent to
        // it that varies (read-write storage, workgroup arrays, local arrays).
        let varying_args = args.iter().fold(false, |v, arg| {
            let lends_varying =
                matches!(&arg.kind, ExprKind::Path(name, None) if self.is_varying_memory(name));
            self.expr(arg, flow) | lends_varying | v
        });
        if self.barrier_helpers.contains(&key) {
            if let (Some(cause), true) = (flow, self.report) {
                self.found.push((e.span, barrier_message(&key, cause)));
            }
            if self.report && flow.is_none() {
                if let Some(helper) = self.helpers.iter().find(|h| h.name == *name) {
                    self.helper_body(helper, args, flow);
                }
            }
        }
        varying_args
    }

    fn builtin(&mut self, e: &Expr, builtin: &Builtin, args: &[Expr], flow: Flow) -> bool {
        let varying_args = args.iter().fold(false, |v, arg| self.expr(arg, flow) | v);
        match builtin.uniformity {
            Uniformity::Barrier => {
                if let (Some(cause), true) = (flow, self.report) {
                    self.found
                        .push((e.span, barrier_message(builtin.name, cause)));
                }
                false
            }
            Uniformity::Uniform => false,
            Uniformity::Varying => true,
            Uniformity::Pure => varying_args,
        }
    }

    /// Reads of read-write storage and of workgroup memory may differ between invocations.
    fn is_varying_memory(&self, name: &proc_macro2::Ident) -> bool {
        self.memory.get(&name.to_string()).copied().unwrap_or(false)
    }
}

fn barrier_message(name: &str, cause: Span) -> String {
    format!(
        "`{name}()` must be reached by every invocation of the workgroup together, but here it depends \
         on a value that differs between invocations (line {}); move the barrier out of that `if`, loop \
         or early `return`, or make the condition depend only on parameters and workgroup ids",
        cause.line()
    )
}

/// The local an assignment writes through, if any.
fn root_local(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Path(_, local) => *local,
        ExprKind::Index(base, _) | ExprKind::Field(base, _) => root_local(base),
        _ => None,
    }
}
