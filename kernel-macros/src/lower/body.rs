//! Statements and expressions -> WGSL. Rust expressions that WGSL only has as statements
//! (`if`/`match`/blocks used as values) are hoisted into a temporary written just before the
//! statement that uses them. Locals get unique names per function, since Rust's shadowing
//! and nested scopes do not map onto WGSL's one-declaration-per-scope rule.

use std::collections::HashMap;

use proc_macro2::Ident;

use crate::ir::builtins::{Builtin, IdBuiltin, Signature};
use crate::ir::eval::{self, Locals, Value};
use crate::ir::*;
use crate::lower::helpers::{self, Lent};
use crate::lower::names::Names;
use crate::lower::writer::Writer;
use crate::lower::{wgsl_ty, Globals};

/// The WGSL variable holding an invocation id in an entry point.
pub fn id_variable(id: IdBuiltin) -> &'static str {
    match id {
        IdBuiltin::GlobalId => "tsr_global_id",
        IdBuiltin::LocalId => "tsr_local_id",
        IdBuiltin::WorkgroupId => "tsr_workgroup_id",
        IdBuiltin::NumWorkgroups => "tsr_num_workgroups",
        IdBuiltin::LocalIndex => "tsr_local_index",
        IdBuiltin::SubgroupSize => "tsr_subgroup_size",
        IdBuiltin::SubgroupInvocationId => "tsr_subgroup_invocation_id",
        IdBuiltin::SubgroupId => "tsr_subgroup_id",
        IdBuiltin::NumSubgroups => "tsr_num_subgroups",
    }
}

/// The entry-point parameter of an invocation id.
pub fn id_parameter(id: IdBuiltin) -> String {
    format!(
        "@builtin({}) {}: {}",
        id.wgsl_name(),
        id_variable(id),
        wgsl_ty(&id.ty())
    )
}

/// Whether a folded dispatch computes the id (or takes it from [`FOLDED_PARAMETERS`]) rather
/// than taking it from its own entry-point parameter.
pub fn id_comes_from_fold(id: IdBuiltin) -> bool {
    !matches!(
        id,
        IdBuiltin::SubgroupSize
            | IdBuiltin::SubgroupInvocationId
            | IdBuiltin::SubgroupId
            | IdBuiltin::NumSubgroups
    )
}

/// Entry-point parameters of a kernel whose grid may be folded: the physical ids, from which
/// [`unfold_ids`] computes the logical ones the body sees.
pub const FOLDED_PARAMETERS: [&str; 4] = [
    "@builtin(workgroup_id) tsr_physical_workgroup: vec3<u32>",
    "@builtin(num_workgroups) tsr_physical_grid: vec3<u32>",
    "@builtin(local_invocation_id) tsr_local_id: vec3<u32>",
    "@builtin(local_invocation_index) tsr_local_index: u32",
];

/// Writes the prologue that turns the physical workgroup id of a folded dispatch into the
/// logical ids: the workgroup's linear index in the physical grid, decomposed along the logical
/// grid `grid` (`[x, y, z, x * y * z]`). Workgroups past the logical end return at once; the
/// whole workgroup does, so barriers stay uniform.
pub fn unfold_ids(w: &mut Writer, grid: &str, [x, y, z]: [u32; 3]) {
    w.line(
        "// The launcher may fold a grid larger than the device allows; recover the logical ids.",
    );
    w.line("let tsr_linear: u32 = tsr_physical_workgroup.x + tsr_physical_grid.x * (tsr_physical_workgroup.y + tsr_physical_grid.y * tsr_physical_workgroup.z);");
    w.line(format!("if tsr_linear >= {grid}.w {{ return; }}"));
    w.line(format!(
        "let tsr_workgroup_id: vec3<u32> = vec3<u32>(tsr_linear % {grid}.x, (tsr_linear / {grid}.x) % {grid}.y, tsr_linear / ({grid}.x * {grid}.y));"
    ));
    w.line(format!("let tsr_num_workgroups: vec3<u32> = {grid}.xyz;"));
    w.line(format!("let tsr_global_id: vec3<u32> = tsr_workgroup_id * vec3<u32>({x}u, {y}u, {z}u) + tsr_local_id;"));
}

fn builtin_id(e: &Expr) -> Option<IdBuiltin> {
    match &e.kind {
        ExprKind::Builtin(builtin, _) => builtin.id(),
        _ => None,
    }
}

/// The invocation-id builtins a body calls, in a fixed order.
pub fn used_builtins(body: &Block) -> Vec<IdBuiltin> {
    let mut used = Vec::new();
    visit_exprs(body, &mut |e| {
        if let Some(id) = builtin_id(e) {
            if !used.contains(&id) {
                used.push(id);
            }
        }
    });
    used.sort();
    used
}

/// What a name of a binding, workgroup array or lent parameter stands for in WGSL.
enum Var {
    /// A module-scope variable.
    Global(String),
    /// A pointer parameter to a lent local array (read through `(*name)`).
    Pointer(String),
}

/// Lowers one function body.
pub struct FnLowerer<'g> {
    globals: &'g Globals,
    /// The kernel the function belongs to (for a helper: the kernel it was copied for).
    kernel: usize,
    /// That kernel's helpers.
    helpers: &'g [Function],
    /// What the names of bindings, workgroup arrays and lent parameters stand for.
    vars: HashMap<String, Var>,
    names: Names,
    /// WGSL name of every local, by `LocalId`.
    locals: Vec<String>,
    /// What is known of the locals where the writing is: the unrolled loop variables in the
    /// iteration being written, and the constant integer `let`s.
    locals_known: Locals,
    /// How many `if`s and `switch`es enclose what is being written, and whether a `return`
    /// inside one came before it: fragment operations there are written as calls (see
    /// `fragment_calls.rs`).
    branches: u32,
    returned_in_branch: bool,
}

impl<'g> FnLowerer<'g> {
    pub fn new(
        globals: &'g Globals,
        (kernel, helpers): (usize, &'g [Function]),
        locals: &[Ident],
        vars: HashMap<String, Lent>,
    ) -> Self {
        let mut names = globals.functions.clone();
        for var in vars.values() {
            if let Lent::Global(name) = var {
                names.reserve(name);
            }
        }
        // A lent local array arrives as a pointer parameter under its Rust name.
        let vars = vars
            .into_iter()
            .map(|(name, lent)| {
                let var = match lent {
                    Lent::Global(global) => Var::Global(global),
                    Lent::Pointer => Var::Pointer(names.claim(&name)),
                };
                (name, var)
            })
            .collect();
        let locals = locals
            .iter()
            .map(|name| names.claim(&name.to_string()))
            .collect();
        FnLowerer {
            globals,
            kernel,
            helpers,
            vars,
            names,
            locals,
            locals_known: Locals::default(),
            branches: 0,
            returned_in_branch: false,
        }
    }

    /// The WGSL name of a pointer parameter standing for the lent local array `name`.
    pub fn pointer(&self, name: &Ident) -> Option<&str> {
        match self.vars.get(&name.to_string()) {
            Some(Var::Pointer(pointer)) => Some(pointer),
            _ => None,
        }
    }

    fn local(&self, id: LocalId) -> &str {
        &self.locals[id.0 as usize]
    }

    /// The WGSL name of a helper parameter. WGSL parameters are immutable, so a `mut`
    /// parameter arrives under a generated name and is copied by [`FnLowerer::mutable_params`].
    pub fn param_name(&mut self, param: &FnParam) -> String {
        if param.mutable {
            let local = self.local(param.local).to_owned();
            self.names.generated(&format!("arg_{local}_"))
        } else {
            self.local(param.local).to_owned()
        }
    }

    /// Copies `mut` parameters into variables of their Rust names; `arguments` are the names
    /// [`FnLowerer::param_name`] gave all parameters, in order.
    pub fn mutable_params(&mut self, w: &mut Writer, params: &[FnParam], arguments: &[String]) {
        let values = params.iter().filter(|p| p.kind == ParamKind::Value);
        for (param, argument) in values.zip(arguments).filter(|(p, _)| p.mutable) {
            let var = self.local(param.local);
            w.mapped_line(
                format!("var {var}: {} = {argument};", wgsl_ty(&param.ty)),
                param.name.span().into(),
            );
        }
    }

    fn global(&self, name: &Ident) -> String {
        match self.vars.get(&name.to_string()) {
            Some(Var::Global(global)) => global.clone(),
            Some(Var::Pointer(pointer)) => format!("(*{pointer})"),
            None => name.to_string(),
        }
    }

    /// The places the reference arguments of a call name, as [`helpers::lent`] sees them.
    fn lent_context(&self) -> HashMap<String, Lent> {
        self.vars
            .iter()
            .map(|(name, var)| {
                let lent = match var {
                    Var::Global(global) => Lent::Global(global.clone()),
                    Var::Pointer(_) => Lent::Pointer,
                };
                (name.clone(), lent)
            })
            .collect()
    }

    /// A call of a helper: value arguments, and pointers to lent local arrays; lent
    /// module-scope variables are named inside the copy the call uses.
    fn helper_call(&mut self, w: &mut Writer, helper: &Function, args: &[Expr]) -> String {
        let context = self.lent_context();
        let places = helpers::places(helper, args, &context);
        let name = self
            .globals
            .helpers
            .name(self.kernel, &helper.name.to_string(), places)
            .unwrap_or_default()
            .to_owned();
        let mut texts = Vec::new();
        for (param, arg) in helper.params.iter().zip(args) {
            if param.kind == ParamKind::Value {
                let text = self.expr(w, arg);
                texts.push(argument(&text).to_owned());
                continue;
            }
            let place = match &arg.kind {
                ExprKind::Ref(_, inner) => inner,
                _ => arg,
            };
            match &place.kind {
                ExprKind::Path(_, Some(local)) => texts.push(format!("&{}", self.local(*local))),
                ExprKind::Path(name, None) => {
                    if let Some(pointer) = self.pointer(name) {
                        texts.push(pointer.to_owned());
                    }
                }
                _ => {}
            }
        }
        format!("{name}({})", texts.join(", "))
    }

    // ---- statements ----------------------------------------------------------------------

    pub fn block(&mut self, w: &mut Writer, block: &Block) {
        for stmt in block {
            self.stmt(w, stmt);
        }
    }

    fn stmt(&mut self, w: &mut Writer, stmt: &Stmt) {
        let start = w.position();
        let span = stmt.span;
        match &stmt.kind {
            StmtKind::Let {
                mutable,
                init,
                local,
                ty,
                ..
            } => {
                let name = self.local(*local).to_owned();
                let keyword = if *mutable || matches!(ty, Ty::Array(..)) {
                    "var"
                } else {
                    "let"
                };
                // Known exactly when `check/`'s evaluation knows it (see `taken`).
                let constant = init
                    .as_ref()
                    .and_then(|e| eval::value(e, &self.locals_known));
                self.locals_known.bind(*local, *mutable, constant);
                match init {
                    Some(init) => {
                        let value = self.top_expr(w, init);
                        w.mapped_line(
                            format!("{keyword} {name}: {} = {value};", wgsl_ty(ty)),
                            span,
                        );
                    }
                    None => w.mapped_line(format!("var {name}: {};", wgsl_ty(ty)), span),
                }
            }
            StmtKind::Assign { target, op, value } => {
                let value_text = self.top_expr(w, value);
                let value_text = match op {
                    Some(BinOp::Shl | BinOp::Shr) => shift_amount(value, value_text),
                    _ => value_text,
                };
                let target_text = self.expr(w, target);
                let line = match op {
                    // WGSL has no `^=` on `bool`: `a ^= b` is `a = a != b`.
                    Some(BinOp::BitXor) if target.ty == Ty::BOOL => {
                        format!("{target_text} = {target_text} != ({value_text});")
                    }
                    Some(op) => format!("{target_text} {}= {value_text};", op.symbol()),
                    None => format!("{target_text} = {value_text};"),
                };
                w.mapped_line(line, span);
            }
            StmtKind::Expr(e) => {
                let text = self.expr(w, e);
                let line = if e.ty == Ty::Unit {
                    format!("{text};")
                } else {
                    format!("_ = {text};")
                };
                w.mapped_line(line, span);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(w, cond, then, otherwise.as_ref(), span),
            StmtKind::For(for_loop) => self.for_loop(w, for_loop, span),
            StmtKind::While { cond, body } => self.while_loop(w, cond, body, span),
            StmtKind::Block(body) => {
                w.open_plain("");
                self.block(w, body);
                w.close("");
            }
            StmtKind::Loop(body) => {
                w.open("loop", span);
                self.block(w, body);
                w.close("");
            }
            StmtKind::Break => w.mapped_line("break;", span),
            StmtKind::Continue => w.mapped_line("continue;", span),
            StmtKind::Return(None) => {
                self.returned_in_branch |= self.branches > 0;
                w.mapped_line("return;", span);
            }
            StmtKind::Return(Some(value)) => {
                let value = self.top_expr(w, value);
                self.returned_in_branch |= self.branches > 0;
                w.mapped_line(format!("return {value};"), span);
            }
            StmtKind::Match { scrutinee, arms } => {
                let scrutinee_text = self.expr(w, scrutinee);
                let breaks = arms.iter().any(|arm| breaks_out(&arm.body));
                self.switch(
                    w,
                    (&scrutinee_text, &scrutinee.ty),
                    arms,
                    span,
                    breaks,
                    |this, w, body| this.block(w, body),
                );
            }
        }
        w.map_since(start, span);
    }

    fn if_stmt(
        &mut self,
        w: &mut Writer,
        cond: &Expr,
        then: &Block,
        otherwise: Option<&Block>,
        span: Span,
    ) {
        let dropped = |taken: bool| match taken {
            true => otherwise.is_some_and(leaves),
            false => leaves(then),
        };
        match self.taken(cond).filter(|&taken| !dropped(taken)) {
            Some(true) => self.scoped_block(w, then),
            Some(false) => otherwise.into_iter().for_each(|b| self.scoped_block(w, b)),
            None => {
                let cond = self.top_expr(w, cond);
                w.open(format!("if {cond}"), span);
                self.branches += 1;
                self.block(w, then);
                if let Some(otherwise) = otherwise {
                    w.close(" else {");
                    self.block(w, otherwise);
                }
                self.branches -= 1;
                w.close("");
            }
        }
    }

    /// Which branch a condition of constants takes (in an unrolled iteration, `v > 0` with
    /// `v` known): only that branch is written, as Rust would never run the other, whose
    /// constants may be ones WGSL rejects (`a[v - 1]` where `v` is 0), unless the other
    /// holds a way out (see [`leaves`]). `check/`'s evaluation skips the same branches,
    /// knowing the same locals.
    fn taken(&self, cond: &Expr) -> Option<bool> {
        match eval::value(cond, &self.locals_known)? {
            Value::Bool(taken) => Some(taken),
            _ => None,
        }
    }

    fn scoped_block(&mut self, w: &mut Writer, block: &Block) {
        w.open_plain("");
        self.block(w, block);
        w.close("");
    }

    fn while_loop(&mut self, w: &mut Writer, cond: &Expr, body: &Block, span: Span) {
        if needs_hoisting(cond) {
            // The condition needs statements of its own, evaluated before every iteration.
            w.open("loop", span);
            let cond = self.top_expr(w, cond);
            w.mapped_line(format!("if !({cond}) {{ break; }}"), span);
        } else {
            let cond = self.top_expr(w, cond);
            w.open(format!("while {cond}"), span);
        }
        self.block(w, body);
        w.close("");
    }

    fn for_loop(&mut self, w: &mut Writer, f: &ForLoop, span: Span) {
        if let Some(values) = f.unroll.then(|| f.unroll_values()).flatten() {
            return self.unrolled(w, f, &values, span);
        }
        let ty = wgsl_ty(&f.ty);
        let var = self.local(f.local).to_owned();
        let one = int_literal(1, &f.ty);
        w.open_plain("");
        let start = self.expr(w, &f.start);
        let end = self.expr(w, &f.end);
        let end_name = self.names.generated("end");
        w.mapped_line(format!("let {end_name}: {ty} = {end};"), f.end.span);
        match (f.reversed, f.inclusive, &f.step) {
            (true, _, Some(step)) => {
                let step = self.expr(w, step);
                self.stepped_down(w, f, &start, &end_name, &step, span)
            }
            (false, false, step) | (false, true, step @ Some(_)) => {
                let step = match step {
                    Some(step) => self.expr(w, step),
                    None => one,
                };
                let cmp = if f.inclusive { "<=" } else { "<" };
                w.open(
                    format!(
                        "for (var {var}: {ty} = {start}; {var} {cmp} {end_name}; {var} += {step})"
                    ),
                    span,
                );
                self.block(w, &f.body);
                w.close("");
            }
            (false, true, None) => self.stepped_loop(w, f, &start, &end_name, span),
            (true, true, _) => {
                let start_name = self.names.generated("start");
                w.mapped_line(format!("let {start_name}: {ty} = {start};"), f.start.span);
                self.stepped_loop(w, f, &end_name, &start_name, span)
            }
            (true, false, _) => {
                // Counts down from the end; the loop variable is a copy so `continue` is safe.
                let counter = self.names.generated("i");
                let start_name = self.names.generated("start");
                w.mapped_line(format!("let {start_name}: {ty} = {start};"), f.start.span);
                w.mapped_line(format!("var {counter}: {ty} = {end_name};"), span);
                w.open("loop", span);
                w.line(format!("if {counter} <= {start_name} {{ break; }}"));
                w.line(format!("{counter} -= {one};"));
                w.line(format!("let {var}: {ty} = {counter};"));
                self.block(w, &f.body);
                w.close("");
            }
        }
        w.close("");
    }

    /// A loop from `from` to `to` inclusive, one step at a time (up for `a..=b`, down for
    /// `(a..=b).rev()`), that never steps past `to`, so it cannot overflow at the type's
    /// limits. The step happens before the body, so `continue` is safe.
    fn stepped_loop(&mut self, w: &mut Writer, f: &ForLoop, from: &str, to: &str, span: Span) {
        let (ty, var, one) = (
            wgsl_ty(&f.ty),
            self.local(f.local).to_owned(),
            int_literal(1, &f.ty),
        );
        let (counter, more) = (self.names.generated("i"), self.names.generated("more"));
        let (not_past, before, step) = if f.reversed {
            (">=", ">", "-=")
        } else {
            ("<=", "<", "+=")
        };
        w.mapped_line(format!("var {counter}: {ty} = {from};"), span);
        w.mapped_line(
            format!("var {more}: bool = {counter} {not_past} {to};"),
            span,
        );
        w.open("loop", span);
        w.line(format!("if !{more} {{ break; }}"));
        w.line(format!("let {var}: {ty} = {counter};"));
        w.line(format!("{more} = {counter} {before} {to};"));
        w.line(format!("if {more} {{ {counter} {step} {one}; }}"));
        self.block(w, &f.body);
        w.close("");
    }

    /// `(a..b).rev().step_by(s)` (from the range's last value) or `(a..b).step_by(s).rev()`
    /// (from the last value the steps up from `a` reach), down by `s` while at or above `a`.
    /// Like `stepped_loop`, it never steps past `a`, and steps before the body.
    fn stepped_down(
        &mut self,
        w: &mut Writer,
        f: &ForLoop,
        start: &str,
        end: &str,
        step: &str,
        span: Span,
    ) {
        let (ty, var, one) = (
            wgsl_ty(&f.ty),
            self.local(f.local).to_owned(),
            int_literal(1, &f.ty),
        );
        let (low, stride) = (self.names.generated("start"), self.names.generated("step"));
        let (counter, more) = (self.names.generated("i"), self.names.generated("more"));
        w.mapped_line(format!("let {low}: {ty} = {start};"), f.start.span);
        w.mapped_line(format!("let {stride}: {ty} = {step};"), span);
        let (cmp, last) = if f.inclusive {
            ("<=", end.to_owned())
        } else {
            ("<", format!("{end} - {one}"))
        };
        w.mapped_line(format!("var {more}: bool = {low} {cmp} {end};"), span);
        w.mapped_line(format!("var {counter}: {ty} = {last};"), span);
        if f.steps_from_start {
            w.line(format!(
                "{counter} = {low} + ({counter} - {low}) / {stride} * {stride};"
            ));
        }
        w.open("loop", span);
        w.line(format!("if !{more} {{ break; }}"));
        w.line(format!("let {var}: {ty} = {counter};"));
        w.line(format!("{more} = {counter} - {low} >= {stride};"));
        w.line(format!("if {more} {{ {counter} -= {stride}; }}"));
        self.block(w, &f.body);
        w.close("");
    }

    /// Writes the body once per iteration, each copy in its own block with the loop variable
    /// bound to a constant, so register arrays indexed by it keep constant indices.
    fn unrolled(&mut self, w: &mut Writer, f: &ForLoop, values: &[u64], span: Span) {
        let var = self.local(f.local).to_owned();
        for value in values {
            let literal = int_literal(*value, &f.ty);
            w.open_plain("");
            w.mapped_line(format!("// {var} = {literal}"), span);
            self.locals[f.local.0 as usize] = literal;
            let known =
                f.ty.scalar()
                    .and_then(|s| eval::int(i128::from(*value), s).ok());
            if let Some(value) = known {
                self.locals_known.enter_iteration(f.local, value);
            }
            self.block(w, &f.body);
            if known.is_some() {
                self.locals_known.leave_iteration();
            }
            w.close("");
        }
        self.locals[f.local.0 as usize] = var;
    }

    /// A `match`: a WGSL `switch`, or, where an arm holds a `break` of the loop around the
    /// `match` (`breaks`), an `if` chain over the value ([`FnLowerer::if_chain`]), since a
    /// `break` inside a `switch` leaves only the `switch`. `arm` lowers each arm's body.
    fn switch<T>(
        &mut self,
        w: &mut Writer,
        (scrutinee, ty): (&str, &Ty),
        arms: &[MatchArm<T>],
        span: Span,
        breaks: bool,
        mut arm: impl FnMut(&mut Self, &mut Writer, &T),
    ) {
        if breaks {
            return self.if_chain(w, (scrutinee, ty), arms, span, arm);
        }
        self.branches += 1;
        w.open(format!("switch {scrutinee}"), span);
        for match_arm in arms {
            let mut selectors: Vec<String> = match_arm
                .values
                .iter()
                .map(|(v, _)| signed_literal(*v, ty))
                .collect();
            if match_arm.values.is_empty() {
                selectors.push("default".to_owned());
            }
            let label = match selectors.as_slice() {
                [only] if only == "default" => "default:".to_owned(),
                _ => format!("case {}:", selectors.join(", ")),
            };
            w.open(label, match_arm.span);
            arm(self, w, &match_arm.body);
            w.close("");
        }
        self.branches -= 1;
        w.close("");
    }

    /// A `match` as `if` tests of its value, arm by arm, `_` last (as a `switch` takes
    /// `default`).
    fn if_chain<T>(
        &mut self,
        w: &mut Writer,
        (scrutinee, ty): (&str, &Ty),
        arms: &[MatchArm<T>],
        span: Span,
        mut arm: impl FnMut(&mut Self, &mut Writer, &T),
    ) {
        self.branches += 1;
        let value = self.names.generated("s");
        w.mapped_line(format!("let {value}: {} = {scrutinee};", wgsl_ty(ty)), span);
        let mut first = true;
        for match_arm in arms.iter().filter(|a| !a.values.is_empty()) {
            let tests: Vec<String> = (match_arm.values.iter())
                .map(|(v, _)| format!("({value} == {})", signed_literal(*v, ty)))
                .collect();
            let test = tests.join(" || ");
            if first {
                w.open(format!("if {test}"), match_arm.span);
                first = false;
            } else {
                w.close(&format!(" else if {test} {{"));
            }
            arm(self, w, &match_arm.body);
        }
        if let Some(default) = arms.iter().find(|a| a.values.is_empty()) {
            if first {
                w.open_plain("");
                first = false;
            } else {
                w.close(" else {");
            }
            arm(self, w, &default.body);
        }
        if !first {
            w.close("");
        }
        self.branches -= 1;
    }

    // ---- expressions ---------------------------------------------------------------------

    /// Like [`FnLowerer::expr`], for an expression that stands alone (a condition, the value
    /// of a `let`, an assignment or a `return`), where its outer parentheses are noise.
    fn top_expr(&mut self, w: &mut Writer, e: &Expr) -> String {
        let text = self.expr(w, e);
        strip_parens(&text).to_owned()
    }

    /// The value of an integer expression of literals, unrolled loop variables and constant
    /// `let`s, computed with Rust's (checked) arithmetic; `None` for anything else, overflow
    /// included. Unrolled loops make many such expressions (`kk * ROW + run * SPAN`): written
    /// as their values, they keep the module small for naga, whose checking time grows faster
    /// than linearly with a function's expressions.
    fn constant(&self, e: &Expr) -> Option<Value> {
        if e.ty.is_vector() || !e.ty.scalar().is_some_and(Scalar::is_integer) {
            return None;
        }
        match &e.kind {
            ExprKind::Int(_) => eval::literal(e)?.ok(),
            ExprKind::Path(_, Some(local)) => self.locals_known.value(*local),
            ExprKind::Unary(op, operand) => eval::unary(*op, self.constant(operand)?)?.ok(),
            ExprKind::Binary(op, left, right) => {
                eval::binary(*op, self.constant(left)?, self.constant(right)?)?.ok()
            }
            _ => None,
        }
    }

    /// The WGSL text of `e`; statements it needs first are written to `w`.
    pub fn expr(&mut self, w: &mut Writer, e: &Expr) -> String {
        if matches!(e.kind, ExprKind::Unary(..) | ExprKind::Binary(..)) {
            if let Some(value) = self.constant(e) {
                return value_literal(value);
            }
        }
        match &e.kind {
            ExprKind::Int(v) => int_literal(*v, &e.ty),
            ExprKind::Float(v) => float_literal(*v, &e.ty),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Path(_, Some(local)) => self.local(*local).to_owned(),
            ExprKind::Path(name, None) => self.global(name),
            ExprKind::Field(base, field) if matches!(base.ty, Ty::Vector(..)) => {
                let base = self.expr(w, base);
                format!("{base}.{field}")
            }
            ExprKind::Field(base, field) => {
                let base = self.expr(w, base);
                let field = field.to_string();
                let field = self.globals.fields.get(&field).unwrap_or(&field);
                format!("{base}.{field}")
            }
            ExprKind::Index(base, index) => {
                let (base, index) = (self.expr(w, base), self.top_expr(w, index));
                format!("{base}[{index}]")
            }
            // WGSL literals are unsigned: `2147483648i` does not exist to be negated.
            ExprKind::Unary(UnOp::Neg, operand)
                if matches!(operand.kind, ExprKind::Int(v) if v == 1 << 31)
                    && operand.ty == Ty::I32 =>
            {
                "(-2147483647i - 1i)".to_owned()
            }
            ExprKind::Unary(op, operand) => {
                let text = self.expr(w, operand);
                match op {
                    UnOp::Neg => format!("-({text})"),
                    UnOp::Not if operand.ty == Ty::BOOL => format!("!({text})"),
                    UnOp::Not => format!("~({text})"),
                }
            }
            // WGSL's constant evaluation rejects `<<` results Rust accepts (`1i32 << 31`, bits
            // shifted out): a constant shift is written as its value.
            ExprKind::Binary(BinOp::Shl | BinOp::Shr, ..)
                if eval::value(e, &self.locals_known).is_some() =>
            {
                eval::value(e, &self.locals_known).map_or_else(String::new, value_literal)
            }
            ExprKind::Binary(op, left, right) => {
                let l = self.expr(w, left);
                let r = self.expr(w, right);
                let r = match op {
                    BinOp::Shl | BinOp::Shr => shift_amount(right, r),
                    _ => r,
                };
                // WGSL has no `^` on `bool`; on booleans it is `!=`. naga lowers a short
                // circuit (`&&`, `||`) through a local variable, which its uniformity analysis
                // counts as varying, so a fragment operation under `a && b` would be rejected
                // with `a` and `b` uniform: where the right side has no effects, evaluating it
                // always changes nothing (WGSL's indexing and division cannot trap), so the
                // operator is written without the short circuit.
                let symbol = match op {
                    BinOp::BitXor if left.ty == Ty::BOOL => "!=",
                    BinOp::And if !may_have_effects(right) => "&",
                    BinOp::Or if !may_have_effects(right) => "|",
                    _ => op.symbol(),
                };
                format!("({l} {symbol} {r})")
            }
            ExprKind::Bitcast(value, target) => {
                let text = self.top_expr(w, value);
                format!("bitcast<{}>({text})", wgsl_ty(target))
            }
            ExprKind::Cast(value, target) => {
                let text = self.top_expr(w, value);
                match (&value.ty, target) {
                    // WGSL fills a vector only from a scalar of its own type.
                    (Ty::Scalar(from), Ty::Vector(_, to)) if from != to => {
                        format!("{}({}({text}))", wgsl_ty(target), wgsl_ty(&Ty::Scalar(*to)))
                    }
                    _ => format!("{}({text})", wgsl_ty(target)),
                }
            }
            // `check/` made every generic call a call of its copy.
            ExprKind::Call(name, args) | ExprKind::GenericCall(name, _, args) => {
                self.call(w, name, args)
            }
            ExprKind::Builtin(builtin, args) => self.builtin(w, builtin, args, &e.ty),
            // `check/` resolved every method to a builtin.
            ExprKind::Method(..) => String::new(),
            ExprKind::If(cond, then, otherwise)
                if self.taken(cond).is_some_and(|taken| {
                    !leaves(if taken { &otherwise.stmts } else { &then.stmts })
                }) =>
            {
                let temp = self.temp(w, &e.ty, e.span);
                let branch = if self.taken(cond) == Some(true) {
                    then
                } else {
                    otherwise
                };
                w.open_plain("");
                self.assign_block(w, &temp, branch);
                w.close("");
                temp
            }
            ExprKind::If(cond, then, otherwise) => {
                let temp = self.temp(w, &e.ty, e.span);
                let cond = self.top_expr(w, cond);
                w.open(format!("if {cond}"), e.span);
                self.branches += 1;
                self.assign_block(w, &temp, then);
                w.close(" else {");
                self.assign_block(w, &temp, otherwise);
                self.branches -= 1;
                w.close("");
                temp
            }
            ExprKind::Match(scrutinee, arms) => {
                let temp = self.temp(w, &e.ty, e.span);
                let scrutinee_text = self.expr(w, scrutinee);
                let breaks = arms.iter().any(|arm| breaks_out(&arm.body.stmts));
                self.switch(
                    w,
                    (&scrutinee_text, &scrutinee.ty),
                    arms,
                    e.span,
                    breaks,
                    |this, w, body| this.assign_block(w, &temp, body),
                );
                temp
            }
            ExprKind::Block(block) => {
                let temp = self.temp(w, &e.ty, e.span);
                w.open_plain("");
                self.assign_block(w, &temp, block);
                w.close("");
                temp
            }
            ExprKind::Array(elements) => {
                let texts: Vec<String> = elements.iter().map(|el| self.expr(w, el)).collect();
                format!("{}({})", wgsl_ty(&e.ty), texts.join(", "))
            }
            ExprKind::Repeat(value, n) => self.repeat(w, value, *n, &e.ty, e.span),
            // Only a helper's argument, which `helper_call` lowers.
            ExprKind::Ref(_, place) => self.expr(w, place),
        }
    }

    /// Declares a temporary of type `ty` for a hoisted value.
    fn temp(&mut self, w: &mut Writer, ty: &Ty, span: Span) -> String {
        let name = self.names.generated("t");
        w.mapped_line(format!("var {name}: {};", wgsl_ty(ty)), span);
        name
    }

    fn assign_block(&mut self, w: &mut Writer, target: &str, block: &BlockExpr) {
        self.block(w, &block.stmts);
        let value = self.top_expr(w, &block.tail);
        w.mapped_line(format!("{target} = {value};"), block.tail.span);
    }

    fn repeat(&mut self, w: &mut Writer, value: &Expr, n: u32, ty: &Ty, span: Span) -> String {
        if value.is_zero() {
            return format!("{}()", wgsl_ty(ty));
        }
        let text = self.expr(w, value);
        if !repeats_through_a_loop(value, n) {
            return format!("{}({})", wgsl_ty(ty), vec![text; n as usize].join(", "));
        }
        let temp = self.temp(w, ty, span);
        let index = self.names.generated("k");
        w.mapped_line(
            format!("for (var {index}: u32 = 0u; {index} < {n}u; {index} += 1u) {{ {temp}[{index}] = {text}; }}"),
            span,
        );
        temp
    }

    fn call(&mut self, w: &mut Writer, name: &Ident, args: &[Expr]) -> String {
        let helpers = self.helpers;
        match helpers.iter().find(|h| h.name == *name) {
            Some(helper) => self.helper_call(w, helper, args),
            // `check/` resolved every other call to a builtin.
            None => format!("{name}()"),
        }
    }

    /// A builtin call, spelled by its template (see [`crate::ir::builtins::Spelling`]).
    fn builtin(&mut self, w: &mut Writer, builtin: &Builtin, args: &[Expr], ty: &Ty) -> String {
        if let Signature::Id(id) = builtin.signature {
            return id_variable(id).to_owned();
        }
        if let Signature::FragmentStore(_) = builtin.signature {
            return self.fragment_store(w, builtin, args);
        }
        let operation = matches!(
            builtin.signature,
            Signature::FragmentLoad(_) | Signature::MultiplyAdd
        );
        if operation && (self.branches > 0 || self.returned_in_branch) {
            if let Some(call) = self.fragment_call(w, builtin, args, ty) {
                return call;
            }
        }
        let template = builtin.wgsl.template(args.first().map_or(ty, |a| &a.ty));
        let texts: Vec<String> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                // WGSL requires a const-expression for the lane of `subgroupBroadcast`, which a
                // `let` is not: `check/` made sure it has a value.
                if i == 1 && builtin.signature == Signature::SubgroupBroadcast {
                    if let Some(value) = eval::value(a, &self.locals_known) {
                        return value_literal(value);
                    }
                }
                let text = self.expr(w, a);
                // A template that spells an argument more than once (Rust's `round`,
                // `signum`, `fract`) must not run a helper call or an atomic in it twice.
                if uses(template, i) > 1 && may_have_effects(a) {
                    let name = self.names.generated("t");
                    w.mapped_line(format!("let {name} = {};", strip_parens(&text)), a.span);
                    name
                } else {
                    text
                }
            })
            .collect();
        let first_ty = args.first().map_or(ty, |a| &a.ty);
        let literal = |v: f64| match first_ty.scalar() {
            Some(s) if s.is_float() => splat(first_ty, &float_literal(v, first_ty)),
            _ => splat(first_ty, &int_literal(v as u64, first_ty)),
        };
        fill(template, &texts, |name| match name {
            "ty" => Some(wgsl_ty(ty)),
            "args" => Some(
                texts
                    .iter()
                    .map(|t| argument(t))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            "zero" => Some(literal(0.0)),
            "half" => Some(literal(0.5)),
            "one" => Some(literal(1.0)),
            "bits" => texts.first().map(|arg| float_bits(first_ty, arg)),
            "sign_bit" => Some(shaped_u32(first_ty, "0x80000000u")),
            "magnitude" => Some(shaped_u32(first_ty, "0x7fffffffu")),
            "infinity" => Some(shaped_u32(first_ty, "0x7f800000u")),
            _ => None,
        })
    }
}

impl FnLowerer<'_> {
    /// `coopStore(fragment, &place, stride)` with every operand that is not a name or a
    /// literal bound to a `let` on the lines before. naga 30's SPIR-V writer panics on a store
    /// whose index or stride is computed in the call ("Expression is not cached"): the store
    /// statement is recorded before the expressions evaluated after the place's variable.
    fn fragment_store(&mut self, w: &mut Writer, builtin: &Builtin, args: &[Expr]) -> String {
        let [fragment, place, stride] = args else {
            return String::new();
        };
        let fragment = self.bound(w, fragment);
        let place = match &place.kind {
            ExprKind::Ref(_, inner) => self.bound_place(w, inner),
            _ => self.bound_place(w, place),
        };
        let stride = self.bound(w, stride);
        fill(
            builtin.wgsl.template(&Ty::Unit),
            &[fragment, place, stride],
            |_| None,
        )
    }

    /// A fragment load or multiply-add as a call to a function that does only it (see
    /// `fragment_calls.rs`): its operands, the load's indices and stride, are the arguments.
    /// `None` for a load from a place that is not a module-scope array (a lent local array,
    /// which `check/` refuses anyway).
    fn fragment_call(
        &mut self,
        w: &mut Writer,
        builtin: &Builtin,
        args: &[Expr],
        ty: &Ty,
    ) -> Option<String> {
        let template = builtin.wgsl.template(args.first().map_or(ty, |a| &a.ty));
        let (params, texts, body) = match builtin.signature {
            Signature::FragmentLoad(_) => {
                let [place, stride] = args else {
                    return None;
                };
                let mut place = match &place.kind {
                    ExprKind::Ref(_, inner) => &**inner,
                    _ => place,
                };
                let mut indices = Vec::new();
                while let ExprKind::Index(base, index) = &place.kind {
                    indices.push(&**index);
                    place = base;
                }
                let ExprKind::Path(name, None) = &place.kind else {
                    return None;
                };
                let Some(Var::Global(global)) = self.vars.get(&name.to_string()) else {
                    return None;
                };
                let mut inside = global.clone();
                let mut params = Vec::new();
                let mut texts = Vec::new();
                for (i, index) in indices.iter().rev().enumerate() {
                    inside.push_str(&format!("[tsr_i{i}]"));
                    params.push(format!("tsr_i{i}: {}", wgsl_ty(&index.ty)));
                    texts.push(self.top_expr(w, index));
                }
                params.push(format!("tsr_stride: {}", wgsl_ty(&stride.ty)));
                texts.push(self.top_expr(w, stride));
                let body = fill(template, &[inside, "tsr_stride".to_owned()], |name| {
                    (name == "ty").then(|| wgsl_ty(ty))
                });
                (params, texts, body)
            }
            _ => {
                let names = ["tsr_a", "tsr_b", "tsr_c"].map(str::to_owned);
                let params = names
                    .iter()
                    .zip(args)
                    .map(|(name, arg)| format!("{name}: {}", wgsl_ty(&arg.ty)))
                    .collect();
                let texts = args.iter().map(|a| self.top_expr(w, a)).collect();
                (params, texts, fill(template, &names, |_| None))
            }
        };
        let name = self
            .globals
            .fragment_calls
            .borrow_mut()
            .function(&params, &wgsl_ty(ty), &body);
        Some(format!("{name}({})", texts.join(", ")))
    }

    /// `e` as a name or literal, through a fresh `let` when it is anything else.
    fn bound(&mut self, w: &mut Writer, e: &Expr) -> String {
        let text = self.top_expr(w, e);
        let simple = |t: &str| t.chars().all(|c| c.is_alphanumeric() || c == '_');
        if simple(&text) {
            return text;
        }
        let name = self.names.generated("t");
        w.mapped_line(format!("let {name} = {text};"), e.span);
        name
    }

    /// A place (`a[i]`, `tile[r][c]`) whose indices are names or literals.
    fn bound_place(&mut self, w: &mut Writer, place: &Expr) -> String {
        match &place.kind {
            ExprKind::Index(base, index) => {
                let base = self.bound_place(w, base);
                let index = self.bound(w, index);
                format!("{base}[{index}]")
            }
            _ => self.expr(w, place),
        }
    }
}

/// How many times `template` spells argument `index` (`{bits}` spells the first).
fn uses(template: &str, index: usize) -> usize {
    let bits = if index == 0 {
        template.matches("{bits}").count()
    } else {
        0
    };
    template.matches(&format!("{{{index}}}")).count() + bits
}

/// Whether evaluating `e` may do more than compute a value: call a helper (which may write
/// through its references) or an atomic method.
fn may_have_effects(e: &Expr) -> bool {
    let mut effects = false;
    visit_expr(e, &mut |e| {
        effects |= matches!(e.kind, ExprKind::Call(..) | ExprKind::Method(..))
    });
    effects
}

/// `template` with `{0}`, `{1}`, .. replaced by `args` and other `{name}`s by `named`. An
/// argument that stands alone between a call's parentheses or commas loses its outer
/// parentheses: `exp(a + b)`, not `exp((a + b))`.
fn fill(template: &str, args: &[String], named: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        let after = &rest[close + 1..];
        let alone = (out.ends_with('(') || out.ends_with(", "))
            && (after.starts_with(')') || after.starts_with(','));
        match name.parse::<usize>() {
            Ok(index) => {
                let text = args.get(index).map_or("", String::as_str);
                out.push_str(if alone { argument(text) } else { text });
            }
            Err(_) => out.push_str(&named(name).unwrap_or_default()),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `text` without parentheses around all of it.
/// A call's argument: [`strip_parens`], but a comparison keeps its parentheses, since WGSL
/// would read `h(i < 4u, j > 2u)` as the template list `h<..>`.
fn argument(text: &str) -> &str {
    let inner = strip_parens(text);
    match [" < ", " > ", " <= ", " >= "]
        .iter()
        .any(|c| inner.contains(c))
    {
        true => text,
        false => inner,
    }
}

fn strip_parens(text: &str) -> &str {
    match text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner,
        _ => text,
    }
}

/// Whether every `(` in `text` is closed, in order (so outer parentheses can be dropped).
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

/// `value` for a scalar type, or `vecN<f32>(value)` for a vector.
fn splat(ty: &Ty, value: &str) -> String {
    match ty {
        Ty::Vector(..) => format!("{}({value})", wgsl_ty(ty)),
        _ => value.to_owned(),
    }
}

/// `scalar` in the shape of `ty`: itself, or a vector of as many components.
fn shaped(ty: &Ty, scalar: &str) -> String {
    match ty {
        Ty::Vector(n, _) => format!("vec{n}<{scalar}>"),
        _ => scalar.to_owned(),
    }
}

/// The `u32` literal `value` in the shape of `ty` (splatted for a vector).
fn shaped_u32(ty: &Ty, value: &str) -> String {
    match ty {
        Ty::Vector(..) => format!("{}({value})", shaped(ty, "u32")),
        _ => value.to_owned(),
    }
}

/// The bits of the float `text` (of type `ty`) as `u32`s; an `f16` is widened to `f32` first,
/// which keeps its sign and NaN-ness.
fn float_bits(ty: &Ty, text: &str) -> String {
    let text = strip_parens(text);
    let wide = match ty.scalar() {
        Some(Scalar::F16) => format!("{}({text})", shaped(ty, "f32")),
        _ => text.to_owned(),
    };
    format!("bitcast<{}>({wide})", shaped(ty, "u32"))
}

/// WGSL shifts take a `u32` amount.
fn shift_amount(amount: &Expr, text: String) -> String {
    match amount.ty.scalar() {
        Some(Scalar::U32) => text,
        _ => format!("u32({text})"),
    }
}

/// Whether lowering `e` writes statements before it (so it cannot be re-evaluated in place).
fn needs_hoisting(e: &Expr) -> bool {
    let mut found = false;
    visit_expr(e, &mut |inner| {
        if matches!(
            inner.kind,
            ExprKind::If(..) | ExprKind::Match(..) | ExprKind::Block(_)
        ) || matches!(&inner.kind, ExprKind::Repeat(_, n) if *n > 16)
        {
            found = true;
        }
    });
    found
}

pub fn int_literal(value: u64, ty: &Ty) -> String {
    match ty.scalar() {
        Some(Scalar::U32) => format!("{value}u"),
        Some(Scalar::F32) => format!("{value}.0f"),
        Some(Scalar::F16) => format!("{value}.0h"),
        _ => format!("{value}i"),
    }
}

/// The WGSL literal of a constant integer or boolean (a negative one parenthesized; `i32::MIN`,
/// which has no literal, as `-2147483647i - 1i`).
fn value_literal(value: Value) -> String {
    match value {
        Value::Int(v, Scalar::I32) if v == i64::from(i32::MIN) => "(-2147483647i - 1i)".to_owned(),
        Value::Int(v, scalar) if v < 0 => format!("({})", signed_literal(v, &Ty::Scalar(scalar))),
        Value::Int(v, scalar) => signed_literal(v, &Ty::Scalar(scalar)),
        Value::Float(v, scalar) => float_literal(v, &Ty::Scalar(scalar)),
        Value::Bool(b) => b.to_string(),
    }
}

fn signed_literal(value: i64, ty: &Ty) -> String {
    match ty.scalar() {
        Some(Scalar::U32) => format!("{value}u"),
        _ => format!("{value}i"),
    }
}

/// A float literal of the type `ty` (`f32`, or `f16` written with WGSL's `h` suffix).
fn float_literal(value: f64, ty: &Ty) -> String {
    let suffix = if ty.scalar() == Some(Scalar::F16) {
        'h'
    } else {
        'f'
    };
    let text = format!("{:?}", value as f32);
    // The shortest text of `f32::MAX`, `3.4028235e38`, is past it as a decimal; Tint reads a
    // literal exactly and rejects it ("value cannot be represented as 'f32'"). The shortest
    // text of the same value as an `f64` is exact.
    let text = match text.parse::<f64>() {
        Ok(read) if read.abs() > f64::from(f32::MAX) => format!("{:?}", f64::from(value as f32)),
        _ => text,
    };
    if text.contains(['.', 'e', 'E']) {
        format!("{text}{suffix}")
    } else {
        format!("{text}.0{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_carry_their_type() {
        assert_eq!(int_literal(3, &Ty::U32), "3u");
        assert_eq!(int_literal(3, &Ty::I32), "3i");
        assert_eq!(float_literal(1.0, &Ty::F32), "1.0f");
        assert_eq!(float_literal(1.5, &Ty::Scalar(Scalar::F16)), "1.5h");
        assert_eq!(float_literal(1e-5, &Ty::F32), "1e-5f");
        assert_eq!(float_literal(0.5, &Ty::F32), "0.5f");
        // Not `3.4028235e38f`, which Tint rejects as past `f32::MAX`.
        assert_eq!(
            float_literal(f64::from(f32::MAX), &Ty::F32),
            "3.4028234663852886e38f"
        );
        assert_eq!(
            float_literal(-f64::from(f32::MAX), &Ty::F32),
            "-3.4028234663852886e38f"
        );
        assert_eq!(signed_literal(-2, &Ty::I32), "-2i");
    }
}
