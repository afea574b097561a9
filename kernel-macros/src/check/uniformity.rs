//! Barriers must be reached by every invocation of a workgroup together, and WGSL asks the same
//! of subgroup operations (`subgroup_add`, ...). This pass follows which values may differ
//! between invocations (invocation ids, read-write storage, workgroup memory, atomics, subgroup
//! results, and everything computed from them) and reports a barrier or subgroup operation
//! inside control flow that depends on one (an `if`, a loop, a `match`, or code after an early
//! `return`), at the operation. naga 30 checks neither (Tint checks both), so tessera does.
//!
//! Each function body is walked once, into a graph: a node per local, per condition and per
//! control-flow context, with an edge wherever one may make the other vary (a local read in an
//! assigned value or a condition, a condition around an assignment, a non-uniform `break`
//! around later iterations of its loop). Which nodes vary is then one walk of the graph from
//! the sources (ids, varying memory, atomics). Loop-carried chains of any length are closed
//! that way without iterating over the body, and the time is linear in the body's size.
//!
//! Helpers that execute a barrier are checked once each, callers before callees: a parameter
//! varies when some call, in uniform control flow, passes it a varying value or lends it
//! memory that varies. A call in non-uniform control flow is reported at the call.
//!
//! What a call gives back is read from a summary of the helper, made callees first: which of
//! its parameters reach its result (a value, or memory it is lent and reads, which varies as
//! the caller's does), and whether something varying inside it does (an atomic, a subgroup
//! result); the same for what it writes into each array it is lent `&mut`, so that a caller's
//! local array written by a helper varies as what was written does. A helper that reads
//! workgroup memory through `workgroup_uniform_load` and returns it gives back a uniform
//! value.

use std::collections::{HashMap, HashSet};

use crate::diag::Errors;
use crate::ir::builtins::{Builtin, Signature, Uniformity};
use crate::ir::*;

/// Checks every barrier of `kernel`, including barriers inside helpers it calls.
pub fn check(kernel: &Variant, errors: &mut Errors) {
    let calls = CallGraph::new(&kernel.helpers);
    let summaries = summarize(&calls);
    let memory = kernel
        .bindings
        .iter()
        .map(|b| (b.name.to_string(), Memory::Varies(binding_varies(&b.kind))))
        .chain(
            kernel
                .shared
                .iter()
                .map(|s| (s.name.to_string(), Memory::Varies(true))),
        )
        .collect();
    let mut builder = Builder::new(&calls, &summaries, memory);
    builder.block(&kernel.body, None);
    let mut reached = builder.finish(errors);
    for index in calls.callers_first() {
        let helper = &kernel.helpers[index];
        let Some(params) = reached.remove(&helper.name.to_string()) else {
            continue;
        };
        let mut builder = Builder::new(&calls, &summaries, HashMap::new());
        let nodes = builder.lend(helper);
        // A parameter that no call passed an argument counts as varying.
        for (i, node) in nodes.into_iter().enumerate() {
            if params.get(i).copied().unwrap_or(true) {
                builder.graph.seed(node, None);
            }
        }
        builder.block(&helper.body, None);
        for (name, params) in builder.finish(errors) {
            let merged = reached.entry(name).or_default();
            merged.resize(merged.len().max(params.len()), false);
            for (into, varies) in merged.iter_mut().zip(params) {
                *into |= varies;
            }
        }
    }
}

/// What a value a helper gives back depends on: the parameters (by index: a value, or the
/// memory lent) that reach it, and whether something varying inside the helper does.
#[derive(Clone, Default)]
struct Dependence {
    source: bool,
    params: Vec<bool>,
}

/// What a call of a helper gives back to its caller (see the module's docs).
#[derive(Clone, Default)]
struct Summary {
    returns: Dependence,
    /// By parameter index: what an array lent `&mut` holds after the call.
    writes: Vec<Option<Dependence>>,
}

/// Every helper's [`Summary`], by index, made callees first.
fn summarize(calls: &CallGraph) -> Vec<Summary> {
    let mut summaries = vec![Summary::default(); calls.helpers.len()];
    let mut order = calls.callers_first();
    order.reverse();
    for index in order {
        let helper = &calls.helpers[index];
        let mut builder = Builder::new(calls, &summaries, HashMap::new());
        let params = builder.lend(helper);
        let returned = builder.graph.node(None);
        builder.returned = Some(returned);
        builder.block(&helper.body, None);
        builder.graph.solve();
        let graph = &builder.graph;
        let predecessors = graph.predecessors();
        let dependence = |node: Node| {
            let reaching = reaching(&predecessors, node);
            Dependence {
                source: graph.varying[node],
                params: params.iter().map(|&p| reaching[p]).collect(),
            }
        };
        // What an array lent `&mut` holds after the call (its own contents reach it).
        let writes = (helper.params.iter().zip(&params))
            .map(|(p, &node)| (p.kind == ParamKind::Array && p.mutable).then(|| dependence(node)))
            .collect();
        summaries[index] = Summary {
            returns: dependence(returned),
            writes,
        };
    }
    summaries
}

/// Which nodes reach `target` along the edges of a graph of `predecessors`
/// ([`Graph::predecessors`]), `target` included.
fn reaching(predecessors: &[Vec<Node>], target: Node) -> Vec<bool> {
    let mut reached = vec![false; predecessors.len()];
    reached[target] = true;
    let mut pending = vec![target];
    while let Some(node) = pending.pop() {
        for &from in &predecessors[node] {
            if !std::mem::replace(&mut reached[from], true) {
                pending.push(from);
            }
        }
    }
    reached
}

/// Whether reads of a binding may differ between invocations (read-write storage may).
fn binding_varies(kind: &BindingKind) -> bool {
    matches!(kind, BindingKind::Storage { writable: true, .. })
}

/// What reading a buffer, a workgroup array or a lent array gives.
#[derive(Clone, Copy)]
enum Memory {
    /// Contents that may differ between invocations, or that may not.
    Varies(bool),
    /// Memory a helper is lent: it varies as the caller's does (the node is seeded, or
    /// while summarizing the helper, stands for the caller's memory) and as what the helper
    /// writes into it.
    Lent(Node),
}

/// Whether WGSL requires `builtin` in uniform control flow.
fn needs_uniform_flow(builtin: &Builtin) -> bool {
    matches!(
        builtin.uniformity,
        Uniformity::Barrier | Uniformity::Collective
    )
}

/// Which helpers call which, and which execute a barrier or subgroup operation (directly or
/// through a callee): "barrier" below stands for both.
struct CallGraph<'k> {
    helpers: &'k [Function],
    index: HashMap<String, usize>,
    callees: Vec<Vec<usize>>,
    with_barriers: HashSet<String>,
}

impl<'k> CallGraph<'k> {
    fn new(helpers: &'k [Function]) -> Self {
        let index: HashMap<String, usize> = helpers
            .iter()
            .enumerate()
            .map(|(i, h)| (h.name.to_string(), i))
            .collect();
        let mut callees = vec![Vec::new(); helpers.len()];
        let mut callers = vec![Vec::new(); helpers.len()];
        let mut pending = Vec::new();
        for (caller, helper) in helpers.iter().enumerate() {
            let mut barrier = false;
            visit_exprs(&helper.body, &mut |e| match &e.kind {
                ExprKind::Call(name, _) => {
                    if let Some(&callee) = index.get(&name.to_string()) {
                        callees[caller].push(callee);
                        callers[callee].push(caller);
                    }
                }
                ExprKind::Builtin(builtin, _) => barrier |= needs_uniform_flow(builtin),
                ExprKind::Binary(..) => barrier |= e.ty.holds_fragment(),
                _ => {}
            });
            if barrier {
                pending.push(caller);
            }
        }
        // A helper executes a barrier when one of its callees does.
        let mut barriers = vec![false; helpers.len()];
        while let Some(helper) = pending.pop() {
            if !std::mem::replace(&mut barriers[helper], true) {
                pending.extend(&callers[helper]);
            }
        }
        let with_barriers = helpers
            .iter()
            .zip(&barriers)
            .filter(|(_, b)| **b)
            .map(|(h, _)| h.name.to_string())
            .collect();
        CallGraph {
            helpers,
            index,
            callees,
            with_barriers,
        }
    }

    /// The helpers with every caller before its callees (`check/` rejected recursion).
    fn callers_first(&self) -> Vec<usize> {
        let mut seen = vec![false; self.helpers.len()];
        let mut finished = Vec::new();
        for root in 0..self.helpers.len() {
            if std::mem::replace(&mut seen[root], true) {
                continue;
            }
            let mut stack = vec![(root, 0)];
            while let Some((helper, next)) = stack.last_mut() {
                match self.callees[*helper].get(*next) {
                    Some(&callee) => {
                        *next += 1;
                        if !std::mem::replace(&mut seen[callee], true) {
                            stack.push((callee, 0));
                        }
                    }
                    None => {
                        finished.push(*helper);
                        stack.pop();
                    }
                }
            }
        }
        finished.reverse();
        finished
    }
}

type Node = usize;

/// What may make nodes vary, and which do once [`Graph::solve`] has run.
#[derive(Default)]
struct Graph {
    successors: Vec<Vec<Node>>,
    /// A condition's own span: what a barrier under it is blamed on.
    condition: Vec<Option<Span>>,
    varying: Vec<bool>,
    /// For a varying control-flow context, the condition that made it vary.
    cause: Vec<Option<Span>>,
    sources: Vec<Node>,
}

impl Graph {
    fn node(&mut self, condition: Option<Span>) -> Node {
        self.successors.push(Vec::new());
        self.condition.push(condition);
        self.varying.push(false);
        self.cause.push(None);
        self.successors.len() - 1
    }

    fn edge(&mut self, from: Node, to: Node) {
        if from != to {
            self.successors[from].push(to);
        }
    }

    /// Marks `node` as varying by itself (its cause, when it is a condition, is its own span).
    fn seed(&mut self, node: Node, cause: Option<Span>) {
        if !self.varying[node] {
            self.varying[node] = true;
            self.cause[node] = cause.or(self.condition[node]);
            self.sources.push(node);
        }
    }

    /// Each node's predecessors: the nodes with an edge to it.
    fn predecessors(&self) -> Vec<Vec<Node>> {
        let mut predecessors = vec![Vec::new(); self.successors.len()];
        for (from, successors) in self.successors.iter().enumerate() {
            for &to in successors {
                predecessors[to].push(from);
            }
        }
        predecessors
    }

    /// Marks everything reachable from the sources as varying. A condition is blamed on
    /// itself; a context inherits the blame of what made it vary.
    fn solve(&mut self) {
        let mut pending = std::mem::take(&mut self.sources);
        while let Some(node) = pending.pop() {
            for i in 0..self.successors[node].len() {
                let next = self.successors[node][i];
                if !self.varying[next] {
                    self.varying[next] = true;
                    self.cause[next] = self.condition[next].or(self.cause[node]);
                    pending.push(next);
                }
            }
        }
    }
}

/// What a value depends on: nodes that make it vary, or a source of variation itself.
#[derive(Default)]
struct Value {
    source: bool,
    nodes: Vec<Node>,
}

impl Value {
    fn is_uniform(&self) -> bool {
        !self.source && self.nodes.is_empty()
    }

    fn extend(&mut self, other: &Value) {
        self.source |= other.source;
        self.nodes.extend(&other.nodes);
    }
}

impl Dependence {
    /// The value this gives back for a call with arguments of `values`.
    fn of(&self, values: &[Value]) -> Value {
        let mut value = Value {
            source: self.source,
            nodes: Vec::new(),
        };
        for (arg, reaches) in values.iter().zip(&self.params) {
            if *reaches {
                value.extend(arg);
            }
        }
        value
    }
}

/// The control flow a statement runs under: `None` is uniform for certain; a node is
/// non-uniform when it varies.
type Flow = Option<Node>;

/// A barrier, a subgroup operation, or a call of a helper that executes one, and the flow it
/// is reached under.
struct BarrierSite {
    flow: Flow,
    span: Span,
    name: String,
    /// For a helper: the node of each argument, a value or how the memory lent varies
    /// (`None` when it is uniform for certain).
    args: Vec<Option<Node>>,
    kind: SiteKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SiteKind {
    Barrier,
    Subgroup,
    /// A load, store or multiply-add of matrix fragments.
    Fragment,
    /// Arithmetic on matrix fragments (`name` is the operator).
    FragmentArithmetic,
    Helper,
    /// The index into workgroup memory of `workgroup_uniform_load(&a[i])`: WGSL requires the
    /// pointer to be uniform (`flow` is the index's node, `name` the place's text).
    UniformLoadIndex,
}

/// Builds the graph of one function body.
struct Builder<'c, 'k> {
    calls: &'c CallGraph<'k>,
    /// The summaries of the helpers this body may call.
    summaries: &'c [Summary],
    /// While summarizing a helper: the node its result goes to.
    returned: Option<Node>,
    graph: Graph,
    /// Buffers, workgroup arrays and lent arrays by name: whether their contents may differ
    /// between invocations.
    memory: HashMap<String, Memory>,
    /// Each local's node, by [`LocalId`].
    locals: Vec<Node>,
    /// For each enclosing loop, the context of its later iterations: non-uniform when some
    /// invocations left an earlier one early.
    loops: Vec<Node>,
    /// Early `return`s inside value blocks, for the statement that holds them.
    value_exits: Flow,
    sites: Vec<BarrierSite>,
}

impl<'c, 'k> Builder<'c, 'k> {
    fn new(
        calls: &'c CallGraph<'k>,
        summaries: &'c [Summary],
        memory: HashMap<String, Memory>,
    ) -> Self {
        Builder {
            calls,
            summaries,
            returned: None,
            graph: Graph::default(),
            memory,
            locals: Vec::new(),
            loops: Vec::new(),
            value_exits: None,
            sites: Vec::new(),
        }
    }

    /// Solves the graph and reports the barriers reached in non-uniform flow; returns, for
    /// each helper with barriers called in uniform flow, which value parameters vary.
    fn finish(mut self, errors: &mut Errors) -> HashMap<String, Vec<bool>> {
        self.graph.solve();
        let mut reached: HashMap<String, Vec<bool>> = HashMap::new();
        for site in &self.sites {
            let cause = site
                .flow
                .filter(|&f| self.graph.varying[f])
                .map(|f| self.graph.cause[f].unwrap_or(site.span));
            match cause {
                Some(cause) => errors.at(site.span, barrier_message(site, cause)),
                None if site.kind == SiteKind::Helper => {
                    let params = reached.entry(site.name.clone()).or_default();
                    params.resize(params.len().max(site.args.len()), false);
                    for (into, arg) in params.iter_mut().zip(&site.args) {
                        *into |= arg.is_some_and(|n| self.graph.varying[n]);
                    }
                }
                None => {}
            }
        }
        reached
    }

    fn local(&mut self, id: LocalId) -> Node {
        let index = id.0 as usize;
        while self.locals.len() <= index {
            let node = self.graph.node(None);
            self.locals.push(node);
        }
        self.locals[index]
    }

    /// A node that varies when `value` does, or `None` when it is uniform for certain.
    fn node_of(&mut self, value: &Value, condition: Option<Span>) -> Option<Node> {
        if value.is_uniform() {
            return None;
        }
        let node = self.graph.node(condition);
        if value.source {
            self.graph.seed(node, None);
        }
        for &from in &value.nodes {
            self.graph.edge(from, node);
        }
        Some(node)
    }

    /// Makes `target` vary when `value` or `flow` does.
    fn assign(&mut self, target: Node, value: &Value, flow: Flow) {
        if value.source {
            self.graph.seed(target, None);
        }
        for &from in value.nodes.iter().chain(&flow) {
            self.graph.edge(from, target);
        }
    }

    /// Flow that is non-uniform when `a` or `b` is.
    fn either(&mut self, a: Flow, b: Flow) -> Flow {
        match (a, b) {
            (Some(a), Some(b)) if a != b => {
                let node = self.graph.node(None);
                self.graph.edge(a, node);
                self.graph.edge(b, node);
                Some(node)
            }
            (a, b) => a.or(b),
        }
    }

    /// The flow inside a construct controlled by `cond`, under `flow`.
    fn condition(&mut self, cond: &Expr, flow: Flow) -> Flow {
        let value = self.value(cond, flow);
        let inner = self.node_of(&value, Some(cond.span));
        self.either(flow, inner)
    }

    /// Walks `block` under `flow`; returns the flow of the early `return`s inside it.
    fn block(&mut self, block: &Block, mut flow: Flow) -> Flow {
        let mut exits = None;
        for stmt in block {
            let exit = self.stmt(stmt, flow);
            let value_exit = self.value_exits.take();
            let exit = self.either(exit, value_exit);
            if exit.is_some() {
                exits = self.either(exits, exit);
                flow = self.either(flow, exit);
            }
        }
        exits
    }

    fn stmt(&mut self, stmt: &Stmt, flow: Flow) -> Flow {
        match &stmt.kind {
            StmtKind::Let { init, local, .. } => {
                let value = match init {
                    Some(init) => self.value(init, flow),
                    None => Value::default(),
                };
                let node = self.local(*local);
                self.assign(node, &value, flow);
                None
            }
            StmtKind::Assign { target, value, .. } => {
                let mut value = self.value(value, flow);
                if let Some(node) = self.lent_node(target) {
                    let mut written = Value {
                        source: value.source,
                        nodes: value.nodes.clone(),
                    };
                    self.indices_into(target, flow, &mut written);
                    self.assign(node, &written, flow);
                }
                self.value_into(target, flow, &mut value);
                if let Some(local) = root_local(target) {
                    let node = self.local(local);
                    self.assign(node, &value, flow);
                }
                None
            }
            StmtKind::Expr(e) => {
                self.value(e, flow);
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
                self.either(a, b)
            }
            StmtKind::Match { scrutinee, arms } => {
                let inner = self.condition(scrutinee, flow);
                let mut exits = None;
                for arm in arms {
                    let exit = self.block(&arm.body, inner);
                    exits = self.either(exits, exit);
                }
                exits
            }
            StmtKind::For(f) => {
                let mut bounds = self.value(&f.start, flow);
                self.value_into(&f.end, flow, &mut bounds);
                if let Some(step) = &f.step {
                    self.value_into(step, flow, &mut bounds);
                }
                let varying_bounds = self.node_of(&bounds, Some(f.end.span));
                let inner = self.either(flow, varying_bounds);
                let var = self.local(f.local);
                self.assign(var, &Value::default(), inner);
                self.loop_body(&f.body, inner)
            }
            StmtKind::While { cond, body } => {
                let inner = self.condition(cond, flow);
                self.loop_body(body, inner)
            }
            StmtKind::Loop(body) => self.loop_body(body, flow),
            StmtKind::Block(body) => self.block(body, flow),
            StmtKind::Break | StmtKind::Continue => {
                if let (Some(flow), Some(&later)) = (flow, self.loops.last()) {
                    self.graph.edge(flow, later);
                }
                None
            }
            StmtKind::Return(value) => {
                if let Some(value) = value {
                    let value = self.value(value, flow);
                    if let Some(returned) = self.returned {
                        self.assign(returned, &value, flow);
                    }
                }
                // Invocations that returned miss the later iterations of every enclosing loop.
                if let Some(flow) = flow {
                    for i in 0..self.loops.len() {
                        self.graph.edge(flow, self.loops[i]);
                    }
                }
                flow
            }
        }
    }

    /// A loop body, run under `flow` and, in later iterations, under the non-uniform `break`s,
    /// `continue`s and `return`s of earlier ones.
    fn loop_body(&mut self, body: &Block, flow: Flow) -> Flow {
        let later = self.graph.node(None);
        let inner = self.either(flow, Some(later));
        self.loops.push(later);
        let exit = self.block(body, inner);
        self.loops.pop();
        exit
    }

    /// What `e` depends on; records the barriers it reaches.
    fn value(&mut self, e: &Expr, flow: Flow) -> Value {
        let mut value = Value::default();
        self.value_into(e, flow, &mut value);
        value
    }

    fn value_into(&mut self, e: &Expr, flow: Flow, out: &mut Value) {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {}
            ExprKind::Path(_, Some(local)) => {
                let node = self.local(*local);
                out.nodes.push(node);
            }
            // A workgroup value (`#[workgroup] s: &mut f32`) varies as workgroup memory does
            // (a buffer or array named whole is lent, or the receiver of `len()`).
            ExprKind::Path(name, None) if matches!(e.ty, Ty::Scalar(_) | Ty::Vector(..)) => {
                out.extend(&self.memory_read(name))
            }
            ExprKind::Path(_, None) => {}
            ExprKind::Field(base, _)
            | ExprKind::Cast(base, _)
            | ExprKind::Bitcast(base, _)
            | ExprKind::Unary(_, base)
            | ExprKind::Repeat(base, _) => self.value_into(base, flow, out),
            ExprKind::Index(base, index) => {
                self.value_into(index, flow, out);
                match &base.kind {
                    ExprKind::Path(name, None) => out.extend(&self.memory_read(name)),
                    _ => self.value_into(base, flow, out),
                }
            }
            ExprKind::Binary(op, a, b) => {
                self.value_into(a, flow, out);
                self.value_into(b, flow, out);
                if e.ty.holds_fragment() {
                    self.sites.push(BarrierSite {
                        flow,
                        span: e.span,
                        name: op.symbol().to_owned(),
                        args: Vec::new(),
                        kind: SiteKind::FragmentArithmetic,
                    });
                }
            }
            ExprKind::Array(items) => {
                for item in items {
                    self.value_into(item, flow, out);
                }
            }
            ExprKind::Call(name, args) | ExprKind::GenericCall(name, _, args) => {
                self.call(e, name, args, flow, out)
            }
            ExprKind::Builtin(builtin, args) => self.builtin(e, builtin, args, flow, out),
            // `check/` resolved every method to a builtin.
            ExprKind::Method(..) => {}
            ExprKind::If(cond, a, b) => {
                let inner = self.condition(cond, flow);
                out.nodes.extend(inner);
                self.block_value(a, inner, out);
                self.block_value(b, inner, out);
            }
            ExprKind::Match(scrutinee, arms) => {
                let inner = self.condition(scrutinee, flow);
                out.nodes.extend(inner);
                for arm in arms {
                    self.block_value(&arm.body, inner, out);
                }
            }
            ExprKind::Block(block) => self.block_value(block, flow, out),
            // What is lent to a helper may vary; the barriers inside it are checked with it.
            ExprKind::Ref(..) => out.source = true,
        }
    }

    fn block_value(&mut self, block: &BlockExpr, flow: Flow, out: &mut Value) {
        let exit = self.block(&block.stmts, flow);
        let pending = self.value_exits.take();
        self.value_exits = self.either(pending, exit);
        self.value_into(&block.tail, flow, out);
    }

    /// A helper call: its result varies as its summary says (with the arguments that reach
    /// it, or by itself), and so does each local array it writes through `&mut`; a helper
    /// that executes a barrier is a barrier here.
    fn call(
        &mut self,
        e: &Expr,
        name: &proc_macro2::Ident,
        args: &[Expr],
        flow: Flow,
        out: &mut Value,
    ) {
        let key = name.to_string();
        let index = self.calls.index.get(&key).copied();
        let summaries = self.summaries;
        let summary = index.and_then(|i| summaries.get(i));
        let callee = index.map(|i| &self.calls.helpers[i]);
        let helper = callee.filter(|_| self.calls.with_barriers.contains(&key));
        let mut arg_nodes = Vec::new();
        let mut values = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            // A value, or memory lent: how its reads vary.
            let value = match callee.and_then(|h| h.params.get(i)).map(|p| p.kind) {
                Some(ParamKind::Value) => self.value(arg, flow),
                Some(_) => self.lent_value(arg),
                None if matches!(arg.kind, ExprKind::Ref(..)) => self.lent_value(arg),
                None => self.value(arg, flow),
            };
            arg_nodes.push(helper.and_then(|_| self.node_of(&value, None)));
            values.push(value);
        }
        match summary {
            Some(summary) => {
                out.extend(&summary.returns.of(&values));
                for (arg, write) in args.iter().zip(&summary.writes) {
                    let Some(write) = write else {
                        continue;
                    };
                    let lent = match &arg.kind {
                        ExprKind::Ref(_, place) => &**place,
                        _ => arg,
                    };
                    let written = write.of(&values);
                    if let Some(local) = root_local(lent) {
                        let node = self.local(local);
                        self.assign(node, &written, flow);
                    } else if let Some(node) = self.lent_node(lent) {
                        self.assign(node, &written, flow);
                    }
                }
            }
            None => {
                for value in &values {
                    out.extend(value);
                }
            }
        }
        if helper.is_some() {
            self.sites.push(BarrierSite {
                flow,
                span: e.span,
                name: key,
                args: arg_nodes,
                kind: SiteKind::Helper,
            });
        }
    }

    /// In a helper: the node of the memory it is lent that `place` is in (`a` or `a[i]` for
    /// such a parameter `a`).
    fn lent_node(&self, place: &Expr) -> Option<Node> {
        match self.memory.get(&root_memory(place)?.to_string()) {
            Some(Memory::Lent(node)) => Some(*node),
            _ => None,
        }
    }

    /// Makes a node for each of `helper`'s parameters, by index: its value's local, or the
    /// memory it is lent (as [`Memory::Lent`]).
    fn lend(&mut self, helper: &Function) -> Vec<Node> {
        let mut nodes = Vec::with_capacity(helper.params.len());
        for param in &helper.params {
            let node = match param.kind {
                ParamKind::Value => self.local(param.local),
                _ => {
                    let node = self.graph.node(None);
                    let lent = Memory::Lent(node);
                    self.memory.insert(param.name.to_string(), lent);
                    node
                }
            };
            nodes.push(node);
        }
        nodes
    }

    /// The indices of the place `target` into `out` (which element is written).
    fn indices_into(&mut self, target: &Expr, flow: Flow, out: &mut Value) {
        match &target.kind {
            ExprKind::Index(base, index) => {
                self.value_into(index, flow, out);
                self.indices_into(base, flow, out);
            }
            ExprKind::Field(base, _) => self.indices_into(base, flow, out),
            _ => {}
        }
    }

    fn builtin(&mut self, e: &Expr, builtin: &Builtin, args: &[Expr], flow: Flow, out: &mut Value) {
        let mut value = Value::default();
        for arg in args {
            self.value_into(arg, flow, &mut value);
        }
        let kind = match builtin.uniformity {
            Uniformity::Barrier => SiteKind::Barrier,
            _ if builtin.is_cooperative() => SiteKind::Fragment,
            _ => SiteKind::Subgroup,
        };
        if builtin.signature == Signature::UniformLoad {
            self.uniform_load_index(args, flow);
        }
        if needs_uniform_flow(builtin) {
            self.sites.push(BarrierSite {
                flow,
                span: e.span,
                name: builtin.name.to_owned(),
                args: Vec::new(),
                kind,
            });
        }
        match builtin.uniformity {
            Uniformity::Barrier | Uniformity::Uniform => {}
            Uniformity::Collective => out.source = true,
            Uniformity::Varying => out.source = true,
            Uniformity::Pure => {
                out.source |= value.source;
                out.nodes.extend(value.nodes);
            }
        }
    }

    /// `workgroup_uniform_load(&a[i])`: a site that is reported when the index `i` differs
    /// between invocations (Tint refuses a pointer that is not uniform; naga does not check).
    fn uniform_load_index(&mut self, args: &[Expr], flow: Flow) {
        let Some(arg) = args.first() else {
            return;
        };
        let place = match &arg.kind {
            ExprKind::Ref(_, place) => &**place,
            _ => arg,
        };
        let mut index = Value::default();
        self.indices_into(place, flow, &mut index);
        let span = match &place.kind {
            ExprKind::Index(_, i) => i.span,
            _ => place.span,
        };
        if let Some(node) = self.node_of(&index, None) {
            self.sites.push(BarrierSite {
                flow: Some(node),
                span,
                name: place.rust_text(),
                args: Vec::new(),
                kind: SiteKind::UniformLoadIndex,
            });
        }
    }

    /// What a read of the memory `name` gives: reads of read-write storage and of workgroup
    /// memory may differ between invocations; a lent array varies as the caller's does.
    fn memory_read(&self, name: &proc_macro2::Ident) -> Value {
        match self.memory.get(&name.to_string()) {
            Some(Memory::Varies(varies)) => Value {
                source: *varies,
                nodes: Vec::new(),
            },
            Some(Memory::Lent(node)) => Value {
                source: false,
                nodes: vec![*node],
            },
            None => Value::default(),
        }
    }

    /// How the memory lent by the argument `arg` (`a`, `&a`, `&mut a`) varies: a local array
    /// as the local does, a buffer or workgroup array as its reads.
    fn lent_value(&mut self, arg: &Expr) -> Value {
        let place = match &arg.kind {
            ExprKind::Ref(_, place) => &**place,
            _ => arg,
        };
        if let Some(local) = root_local(place) {
            let node = self.local(local);
            return Value {
                source: false,
                nodes: vec![node],
            };
        }
        match root_memory(place) {
            Some(name) => self.memory_read(name),
            None => Value::default(),
        }
    }
}

fn barrier_message(site: &BarrierSite, cause: Span) -> String {
    let name = &crate::ir::written_name(&site.name);
    if site.kind == SiteKind::UniformLoadIndex {
        return format!(
            "`workgroup_uniform_load(&{name})` loads one element for the whole workgroup, so \
             WGSL requires its pointer to be the same in every invocation, but this index \
             depends on a value that differs between invocations; index with constants, \
             parameters and workgroup ids only, or read `{name}` directly after a \
             `workgroup_barrier()`"
        );
    }
    let subject = match site.kind {
        SiteKind::FragmentArithmetic => format!("`{name}` of fragments"),
        _ => format!("`{name}()`"),
    };
    let (what, rule) = match site.kind {
        SiteKind::Barrier => ("the barrier", ""),
        SiteKind::Subgroup => (
            "the call",
            " (WGSL requires subgroup operations in uniform control flow)",
        ),
        SiteKind::Fragment => (
            "the call",
            " (a fragment belongs to a whole subgroup, and WGSL requires its operations in \
             uniform control flow)",
        ),
        SiteKind::FragmentArithmetic => (
            "the arithmetic",
            " (a fragment belongs to a whole subgroup, and WGSL requires its operations in \
             uniform control flow)",
        ),
        SiteKind::Helper | SiteKind::UniformLoadIndex => ("the call", ""),
    };
    format!(
        "{subject} must be reached by every invocation of the workgroup together{rule}, but here it \
         depends on a value that differs between invocations (line {}); move {what} out of that \
         `if`, loop or early `return`, or make the condition depend only on parameters and workgroup ids",
        cause.line()
    )
}

/// The memory (a buffer, workgroup array or lent array) that the place `e` is in, if any.
fn root_memory(e: &Expr) -> Option<&proc_macro2::Ident> {
    match &e.kind {
        ExprKind::Path(name, None) => Some(name),
        ExprKind::Index(base, _) | ExprKind::Field(base, _) => root_memory(base),
        _ => None,
    }
}

/// The local an assignment writes through, if any.
fn root_local(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Path(_, local) => *local,
        ExprKind::Index(base, _) | ExprKind::Field(base, _) => root_local(base),
        _ => None,
    }
}
