//! IR -> WGSL text plus a source map. One WGSL module per kernels module: the `Params`
//! structs, the helpers, then each kernel's bindings, workgroup memory and entry point. Every
//! statement carries a comment naming the Rust line it came from.

mod body;
mod fragment_calls;
mod helpers;
pub mod names;
mod writer;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use crate::ir::{self, BindingKind, Entry, Feature, Module, Scalar, Span, Ty, Variant};
use body::FnLowerer;
use fragment_calls::FragmentCalls;
use helpers::{Copies, Lent};
pub use names::Names;
pub use writer::Wgsl;
use writer::Writer;

/// The WGSL spelling of a type.
pub fn wgsl_ty(ty: &Ty) -> String {
    match ty {
        Ty::Scalar(s) => scalar(*s).to_owned(),
        Ty::Vector(n, s) => format!("vec{n}<{}>", scalar(*s)),
        Ty::Array(element, n) => format!("array<{}, {n}>", wgsl_ty(element)),
        Ty::Atomic(s) => format!("atomic<{}>", scalar(*s)),
        Ty::Fragment(f) => format!(
            "coop_mat{0}x{0}<{1}, {2}>",
            f.size,
            scalar(f.scalar),
            f.role.letter()
        ),
        // Only reachable after errors, when no WGSL is used.
        Ty::Unknown | Ty::IntVar(_) | Ty::FloatVar(_) | Ty::LiteralVector(..) | Ty::Unit => {
            "i32".to_owned()
        }
    }
}

fn scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::F32 => "f32",
        Scalar::F16 => "f16",
        Scalar::U32 => "u32",
        Scalar::I32 => "i32",
        Scalar::Bool => "bool",
    }
}

/// Module-scope WGSL names: structs, helpers, and each kernel's bindings and workgroup arrays.
pub struct Globals {
    pub structs: Vec<String>,
    /// The WGSL name of each field name of the `Params` structs (one spelling per Rust name in
    /// every struct, so a field access needs no struct). Fields are respelled like any other
    /// name: the uniform layout check goes by their order and types, never their names.
    pub fields: HashMap<String, String>,
    /// The WGSL functions made from helpers.
    pub helpers: Copies,
    /// Per kernel (by index): the WGSL name of each binding, then of each workgroup array.
    pub kernel_vars: Vec<HashMap<String, String>>,
    /// Per kernel: the module-scope declarations it adds (shared ones come with the first user).
    kernel_decls: Vec<Vec<(String, Span)>>,
    /// Names of structs and functions: no local may take one, since WGSL would let it shadow
    /// them. (Locals may shadow other kernels' bindings, which their function never uses.)
    functions: Names,
    /// The functions fragment operations in branches are written as, asked for while the
    /// bodies are written.
    fragment_calls: RefCell<FragmentCalls>,
}

impl Globals {
    fn new(module: &Module, entries: &[Entry<'_>]) -> Self {
        let mut names = Names::default();
        let structs: Vec<String> = module
            .params
            .iter()
            .map(|p| names.claim(&p.name.to_string()))
            .collect();
        let mut field_names = Names::default();
        let mut fields = HashMap::new();
        for field in module.params.iter().flat_map(|p| &p.fields) {
            let name = field.name.to_string();
            if let std::collections::hash_map::Entry::Vacant(slot) = fields.entry(name) {
                let wgsl = field_names.claim(slot.key());
                slot.insert(wgsl);
            }
        }
        for entry in entries {
            names.reserve(&entry.variant.entry_point);
        }
        let mut functions = names.clone();
        // A binding or workgroup array keeps its own name, and is declared once for all kernels
        // that declare it identically (same binding number and type); otherwise each kernel's
        // gets the kernel's name as a prefix.
        let decls: Vec<Vec<(String, String, Span)>> = entries
            .iter()
            .map(|e| var_templates(e.variant, &structs))
            .collect();
        let mut templates: HashMap<&str, HashSet<&str>> = HashMap::new();
        for (name, template, _) in decls.iter().flatten() {
            templates.entry(name).or_default().insert(template);
        }
        let mut shared_names: HashMap<String, String> = HashMap::new();
        let mut kernel_vars = Vec::new();
        let mut kernel_decls = Vec::new();
        for (entry, kernel_templates) in entries.iter().zip(&decls) {
            let mut vars = HashMap::new();
            let mut lines = Vec::new();
            for (name, template, span) in kernel_templates {
                let wgsl_name = if templates[name.as_str()].len() == 1 {
                    if let Some(existing) = shared_names.get(name) {
                        vars.insert(name.clone(), existing.clone());
                        continue;
                    }
                    let claimed = if name == GRID_VAR {
                        names.generated("grid")
                    } else {
                        names.claim(name)
                    };
                    shared_names.insert(name.clone(), claimed.clone());
                    claimed
                } else if name == GRID_VAR {
                    names.generated("grid")
                } else {
                    names.claim(&format!("{}_{name}", entry.kernel.name))
                };
                let mut line = template.replace(NAME, &wgsl_name);
                if wgsl_name != *name && name != GRID_VAR {
                    // The Rust name, for tools that report on the WGSL (the runtime's
                    // sanitizer names arrays so).
                    line.push_str(&format!(" // `{name}`"));
                }
                lines.push((line, *span));
                vars.insert(name.clone(), wgsl_name);
            }
            kernel_vars.push(vars);
            kernel_decls.push(lines);
        }
        let helpers = Copies::plan(entries, &kernel_vars, &mut names);
        for copy in &helpers.copies {
            functions.reserve(&copy.name);
        }
        Globals {
            structs,
            fields,
            helpers,
            kernel_vars,
            kernel_decls,
            functions,
            fragment_calls: RefCell::default(),
        }
    }
}

/// Stands for the WGSL name in a declaration template.
const NAME: &str = "{name}";

/// The declaration of each binding and workgroup array of `kernel`, with `NAME` for its name.
fn var_templates(kernel: &Variant, structs: &[String]) -> Vec<(String, String, Span)> {
    let bindings = kernel.bindings.iter().enumerate().map(|(index, binding)| {
        let ty = match &binding.kind {
            BindingKind::Storage { element, writable } => {
                let access = if *writable { "read_write" } else { "read" };
                format!(
                    "var<storage, {access}> {NAME}: array<{}>;",
                    wgsl_ty(element)
                )
            }
            BindingKind::Uniform { params } => {
                format!("var<uniform> {NAME}: {};", structs[*params])
            }
        };
        (
            binding.name.to_string(),
            format!("@group(0) @binding({index}) {ty}"),
            binding.span,
        )
    });
    let grid = kernel.uses_invocation_ids().then(|| {
        let index = kernel.bindings.len();
        (
            GRID_VAR.to_owned(),
            format!("@group(0) @binding({index}) var<uniform> {NAME}: vec4<u32>;"),
            kernel.workgroup_span,
        )
    });
    let shared = kernel.shared.iter().map(|shared| {
        (
            shared.name.to_string(),
            format!("var<workgroup> {NAME}: {};", wgsl_ty(&shared.ty)),
            shared.span,
        )
    });
    bindings.chain(grid).chain(shared).collect()
}

/// The hidden uniform through which a launcher passes the logical grid `[x, y, z, x * y * z]`.
const GRID_VAR: &str = "tsr_grid";

/// Names every variant's entry point in the IR: the kernel's name, then its element type, its
/// constants and its specialization (e.g. `conv_f16_tile16_stride1`), made unique among the
/// module's WGSL names (the `Params` structs come first, as [`module`] declares them).
pub fn name_entry_points(module: &mut Module) {
    let mut names = Names::default();
    for params in &module.params {
        names.claim(&params.name.to_string());
    }
    for kernel in &mut module.kernels {
        for instance in &mut kernel.instances {
            for variant in &mut instance.variants {
                let mut name = kernel.name.to_string();
                if let Some(element) = instance.element {
                    name.push_str(&format!("_{}", element.name_part()));
                }
                for (constant, value) in &instance.constants {
                    name.push_str(&format!("_{}{value}", constant.to_string().to_lowercase()));
                }
                if let Some(index) = variant.specialization {
                    for (field, value, _) in &kernel.specializations[index].conditions {
                        let value = if *value < 0 {
                            format!("m{}", value.unsigned_abs())
                        } else {
                            value.to_string()
                        };
                        name.push_str(&format!("_{field}{value}"));
                    }
                }
                variant.entry_point = names.claim(&name);
            }
        }
    }
}

/// Lowers the whole module, after [`name_entry_points`].
pub fn module(module: &Module) -> Wgsl {
    let entries: Vec<Entry<'_>> = module.entries().collect();
    let globals = Globals::new(module, &entries);
    let mut w = Writer::default();
    w.line(format!(
        "// Generated by tessera from the kernels module `{}`. Do not edit: edit the Rust.",
        module.name
    ));
    let features = module.features();
    if features.contains(&Feature::F16) {
        w.line("enable f16;");
    }
    if features.contains(&Feature::CooperativeMatrix) {
        w.line("enable wgpu_cooperative_matrix;");
    }
    // No `enable subgroups;` for `Feature::Subgroups`, though WGSL (and so Tint, Chrome)
    // requires it: naga 30, which validates this module here and compiles it in wgpu, refuses
    // the directive ("the `subgroups` enable-extension is not yet supported", gfx-rs/wgpu#5555).
    // `tools/tint` adds it in front of the modules it checks.
    for (params, name) in module.params.iter().zip(&globals.structs) {
        w.blank();
        w.open_plain(format!("struct {name}"));
        for field in &params.fields {
            let name = &globals.fields[&field.name.to_string()];
            w.mapped_line(format!("{name}: {},", wgsl_ty(&field.ty)), field.span);
        }
        w.close("");
    }
    for copy in &globals.helpers.copies {
        w.blank();
        helper_fn(&mut w, entries[copy.kernel].variant, copy, &globals);
    }
    for (index, entry) in entries.iter().enumerate() {
        w.blank();
        kernel_fn(&mut w, index, *entry, &globals);
    }
    let fragment_calls = globals.fragment_calls.take();
    for (_, function) in fragment_calls.functions() {
        w.blank();
        for line in function.lines() {
            w.line(line);
        }
    }
    let mut wgsl = w.finish();
    let helpers = globals.helpers.copies.iter().map(|copy| {
        let helper = &entries[copy.kernel].variant.helpers[copy.helper];
        (copy.name.clone(), format!("the helper `{}`", helper.name))
    });
    let kernels = entries.iter().map(|e| {
        let kernel = match variant_note(*e) {
            note if note.is_empty() => format!("the kernel `{}`", e.kernel.name),
            note => format!("the kernel `{}` ({})", e.kernel.name, &note[2..]),
        };
        (e.variant.entry_point.clone(), kernel)
    });
    let fragment_calls = fragment_calls.functions().iter().map(|(name, _)| {
        let what = "a fragment load or multiply-add inside a branch".to_owned();
        (name.clone(), what)
    });
    wgsl.functions = helpers.chain(kernels).chain(fragment_calls).collect();
    wgsl
}

fn helper_fn(w: &mut Writer, kernel: &Variant, copy: &helpers::Copy, globals: &Globals) {
    let helper = &kernel.helpers[copy.helper];
    let mut lowerer = FnLowerer::new(
        globals,
        (copy.kernel, &kernel.helpers),
        &helper.locals,
        copy.lent.clone(),
    );
    let mut arguments = Vec::new();
    let mut params = Vec::new();
    for param in &helper.params {
        if param.kind == ir::ParamKind::Value {
            let name = lowerer.param_name(param);
            params.push(format!("{name}: {}", wgsl_ty(&param.ty)));
            arguments.push(name);
        } else if let Some(pointer) = lowerer.pointer(&param.name) {
            params.push(format!("{pointer}: ptr<function, {}>", wgsl_ty(&param.ty)));
        }
    }
    let ret = helper
        .ret
        .as_ref()
        .map(|t| format!(" -> {}", wgsl_ty(t)))
        .unwrap_or_default();
    let start = w.position();
    w.open(
        format!("fn {}({}){ret}", copy.name, params.join(", ")),
        helper.name.span().into(),
    );
    lowerer.mutable_params(w, &helper.params, &arguments);
    lowerer.block(w, &helper.body);
    w.close("");
    w.map_since(start, helper.name.span().into());
}

fn kernel_fn(w: &mut Writer, index: usize, entry: Entry<'_>, globals: &Globals) {
    let kernel = entry.variant;
    w.line(format!(
        "// kernel `{}`{}",
        kernel.name,
        variant_note(entry)
    ));
    for (line, span) in &globals.kernel_decls[index] {
        w.mapped_line(line, *span);
    }
    let [x, y, z] = kernel.workgroup_size;
    w.mapped_line(
        format!("@compute @workgroup_size({x}, {y}, {z})"),
        kernel.workgroup_span,
    );
    let builtins = body::used_builtins(&kernel.body);
    let grid = globals.kernel_vars[index].get(GRID_VAR);
    let mut params: Vec<String> = match grid {
        Some(_) => body::FOLDED_PARAMETERS
            .iter()
            .map(|p| p.to_string())
            .collect(),
        None => builtins
            .iter()
            .filter(|id| body::id_comes_from_fold(**id))
            .map(|id| body::id_parameter(*id))
            .collect(),
    };
    params.extend(
        builtins
            .iter()
            .filter(|id| !body::id_comes_from_fold(**id))
            .map(|id| body::id_parameter(*id)),
    );
    let start = w.position();
    w.open(
        format!("fn {}({})", kernel.entry_point, params.join(", ")),
        kernel.name.span().into(),
    );
    if let Some(grid) = grid {
        body::unfold_ids(w, grid, kernel.workgroup_size);
    }
    let vars = globals.kernel_vars[index]
        .iter()
        .map(|(name, wgsl)| (name.clone(), Lent::Global(wgsl.clone())))
        .collect();
    let mut lowerer = FnLowerer::new(globals, (index, &kernel.helpers), &kernel.locals, vars);
    lowerer.block(w, &kernel.body);
    w.close("");
    w.map_since(start, kernel.name.span().into());
}

#[cfg(test)]
mod cooperative_tests;
#[cfg(test)]
mod tests;

/// `, instance TILE = 16, specialized for stride == 1` for the kernel's comment line.
fn variant_note(entry: Entry<'_>) -> String {
    let Entry {
        kernel,
        instance,
        variant,
    } = entry;
    let mut note = String::new();
    if let (Some(param), Some(element)) = (&kernel.type_param, instance.element) {
        note.push_str(&format!(", {} = {}", param.name, element.rust_name()));
    }
    if !instance.constants.is_empty() {
        let values: Vec<String> = instance
            .constants
            .iter()
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        note.push_str(&format!(", instance {}", values.join(", ")));
    }
    if let Some(index) = variant.specialization {
        note.push_str(&format!(
            ", specialized for {}",
            kernel.specializations[index].describe()
        ));
    }
    note
}
