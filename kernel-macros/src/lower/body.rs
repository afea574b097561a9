//! Statements and expressions -> WGSL. Rust expressions that WGSL only has as statements
//! (`if`/`match`/blocks used as values) are hoisted into a temporary written just before the
//! statement that uses them. Locals get unique names per function, since Rust's shadowing
//! and nested scopes do not map onto WGSL's one-declaration-per-scope rule.
//!
//! This file holds the [`FnLowerer`]: the invocation ids an entry point declares, the WGSL
//! names of locals, bindings and lent parameters, and the calls of helpers. Statements are
//! written in `body/statements.rs`, expressions and builtin calls in `body/expressions.rs`,
//! and the pieces of text both use (builtin templates filled in, literals) in `body/text.rs`.

mod expressions;
mod statements;
mod text;

use std::collections::HashMap;

use proc_macro2::Ident;

use crate::ir::builtins::IdBuiltin;
use crate::ir::eval::Locals;
use crate::ir::*;
use crate::lower::helpers::{self, Lent};
use crate::lower::names::Names;
use crate::lower::writer::Writer;
use crate::lower::{wgsl_ty, Globals};

use text::argument;

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
}
