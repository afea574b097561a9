//! Checks the IR: uniform layouts, limits (workgroup size, workgroup memory), the names used in
//! grid and length expressions, and the types of every body (see [`types`]). Errors are
//! accumulated; the IR comes out with every type resolved.

pub mod consts;
pub mod layout;
pub mod names;
mod races;
mod resources;
mod types;
mod uniformity;
mod unroll;

#[cfg(test)]
mod fragment_tests;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use proc_macro2::Ident;

use crate::diag::Errors;
use crate::ir::builtins::IdBuiltin;
use crate::ir::{
    is_generic_copy, written_name, Binding, BindingKind, ConstantSet, ExprKind, Feature, Function,
    GenericHelper, HostExpr, Instance, Kernel, Module, ParamKind, ParamsStruct, SharedVar, Ty,
    Variant,
};
use types::{Checker, Env, GenericCopies, HelperSignature};

/// WebGPU's default `maxComputeInvocationsPerWorkgroup`.
pub const MAX_INVOCATIONS: u32 = 256;
/// WebGPU's default `maxComputeWorkgroupSizeX/Y/Z`.
pub const MAX_WORKGROUP_SIZE: [u32; 3] = [256, 256, 64];
/// WebGPU's default `maxComputeWorkgroupStorageSize` in bytes.
pub const MAX_WORKGROUP_MEMORY: u32 = 16 * 1024;

pub fn check(module: &mut Module, errors: &mut Errors) {
    // Helpers no kernel calls are checked with the module's constants alone.
    if !recursion(&module.helpers, errors) {
        let copies = functions(
            &mut module.helpers,
            &module.generic_helpers,
            &module.params,
            None,
            errors,
        );
        module.helpers.extend(copies);
    }
    for helper in &module.helpers {
        resources::helper(helper, "", errors);
    }
    families(module, errors);
    for kernel in &mut module.kernels {
        if let Some(instance) = kernel.instances.first() {
            specializations(kernel, instance.general(), &module.params, errors);
        }
        for instance in &mut kernel.instances {
            let prefix = instance_prefix(instance);
            let lanes = instance.element.is_some();
            for variant in &mut instance.variants {
                let items = (&module.params[..], &module.constant_sets[..]);
                self::variant(variant, &prefix, lanes, items, errors);
            }
        }
    }
    // Constants are evaluated in typed bodies only: a type error would make them meaningless.
    if errors.is_empty() {
        consts::check(module, errors);
    }
}

/// Checks one variant (before `specialize`, the general body of one instance); `lanes`: its
/// instance has an element type.
fn variant(
    kernel: &mut Variant,
    prefix: &str,
    lanes: bool,
    (params, sets): (&[ParamsStruct], &[ConstantSet]),
    errors: &mut Errors,
) {
    limits(kernel, prefix, errors);
    host_names(kernel, params, errors);
    let features = kernel.requirements.feature_set();
    let name = kernel.name.clone();
    let signatures = signatures(&kernel.helpers);
    let copies = RefCell::new(GenericCopies::default());
    let caller = Some((&name, features, sets));
    typed_helpers(
        &mut kernel.helpers,
        &signatures,
        &kernel.generic_helpers,
        &copies,
        params,
        (caller.clone(), lanes),
        errors,
    );
    let mut body = std::mem::take(&mut kernel.body);
    let env = Env {
        params,
        helpers: &signatures,
        generic: &kernel.generic_helpers,
        copies: &copies,
        bindings: &kernel.bindings,
        shared: &kernel.shared,
        in_kernel: true,
        features: Some(kernel.requirements.feature_set()),
        caller: None,
        helper: None,
        sets,
        lanes,
    };
    let mut checker = Checker::new(&env, errors, None);
    for name in &kernel.rejected_params {
        checker.declare(name, Ty::Unknown, true);
    }
    checker.block(&mut body);
    checker.finish_block(&mut body);
    kernel.locals = checker.locals;
    let made = generic_copies(
        &signatures,
        &kernel.generic_helpers,
        &copies,
        params,
        (caller, lanes),
        errors,
    );
    kernel.helpers.extend(made);
    // After the copies of generic helpers are made: their calls name them only now.
    let recursive = recursion(&kernel.helpers, errors);
    subgroup_ids_in_one_dimension(kernel, &body, prefix, errors);
    unroll::check(&body, errors);
    kernel.body = body;
    resources::check(kernel, prefix, errors);
    if !recursive {
        uniformity::check(kernel, errors);
        races::check(kernel, errors);
    }
    if let (false, Some(span)) = (kernel.requirements.has(Feature::F16), kernel.first_f16()) {
        errors.at(
            span,
            "`f16` values need the kernel to declare `features(f16)` in `#[kernel(...)]`; its launcher \
             then checks that the device supports SHADER_F16",
        );
    }
}

/// `subgroup_id()` and `subgroup_invocation_id()` in a workgroup of more than one dimension,
/// which naga 30 refuses (its `InvalidMultiDimensionalSubgroupBuiltIn`): reported at the call.
fn subgroup_ids_in_one_dimension(
    kernel: &Variant,
    body: &crate::ir::Block,
    instance: &str,
    errors: &mut Errors,
) {
    let [x, y, z] = kernel.workgroup_size;
    if y <= 1 && z <= 1 {
        return;
    }
    crate::ir::visit_exprs(body, &mut |e| {
        let ExprKind::Builtin(builtin, _) = &e.kind else {
            return;
        };
        if let Some(IdBuiltin::SubgroupId | IdBuiltin::SubgroupInvocationId) = builtin.id() {
            errors.at(
                e.span,
                format!(
                    "{instance}`{}()` needs a one-dimensional workgroup, but this one is [{x}, {y}, {z}] \
                     (naga refuses the subgroup ids in more than one dimension); declare \
                     `workgroup = [{}]` and compute the 2-D position from `local_index()`",
                    builtin.name,
                    u64::from(x) * u64::from(y) * u64::from(z)
                ),
            );
        }
    });
}

/// Helper signatures by name.
fn signatures(helpers: &[Function]) -> HashMap<String, HelperSignature> {
    helpers
        .iter()
        .map(|h| (h.name.to_string(), (h.params.clone(), h.ret.clone())))
        .collect()
}

/// Types the bodies of `helpers` (the helpers of one instance, which may call each other and
/// the `generic` ones), and of the copies of generic helpers their calls make; returns the
/// copies. `caller` is the kernel the helpers are copied into, with its features; `None` for
/// the module's own copy.
fn functions(
    helpers: &mut [Function],
    generic: &[GenericHelper],
    params: &[ParamsStruct],
    caller: Option<(&Ident, Vec<Feature>, &[ConstantSet])>,
    errors: &mut Errors,
) -> Vec<Function> {
    let signatures = signatures(helpers);
    let copies = RefCell::new(GenericCopies::default());
    typed_helpers(
        helpers,
        &signatures,
        generic,
        &copies,
        params,
        (caller.clone(), false),
        errors,
    );
    generic_copies(
        &signatures,
        generic,
        &copies,
        params,
        (caller, false),
        errors,
    )
}

/// The kernel a helper is copied into, with its features and the module's sets of constants
/// (`None` for the module's own copy), and whether that kernel's instance has an element type.
type Caller<'a> = (Option<(&'a Ident, Vec<Feature>, &'a [ConstantSet])>, bool);

/// Types the copies of generic helpers made so far, and those their own calls make, until no
/// call makes a new one; returns them all.
fn generic_copies(
    signatures: &HashMap<String, HelperSignature>,
    generic: &[GenericHelper],
    copies: &RefCell<GenericCopies>,
    params: &[ParamsStruct],
    caller: Caller<'_>,
    errors: &mut Errors,
) -> Vec<Function> {
    let mut made = Vec::new();
    loop {
        let mut fresh = copies.borrow_mut().take_unchecked();
        if fresh.is_empty() {
            return made;
        }
        typed_helpers(
            &mut fresh,
            signatures,
            generic,
            copies,
            params,
            caller.clone(),
            errors,
        );
        made.append(&mut fresh);
    }
}

/// Types the bodies of `helpers`, which may call the helpers of `signatures` and `generic`.
fn typed_helpers(
    helpers: &mut [Function],
    signatures: &HashMap<String, HelperSignature>,
    generic: &[GenericHelper],
    copies: &RefCell<GenericCopies>,
    params: &[ParamsStruct],
    (caller, lanes): Caller<'_>,
    errors: &mut Errors,
) {
    for helper in helpers {
        let (bindings, shared) = lent(helper);
        let name = helper.name.clone();
        let env = Env {
            params,
            helpers: signatures,
            generic,
            copies,
            bindings: &bindings,
            shared: &shared,
            in_kernel: false,
            features: caller.as_ref().map(|(_, features, _)| features.clone()),
            caller: caller.as_ref().map(|(kernel, _, _)| *kernel),
            sets: caller.as_ref().map_or(&[], |(_, _, sets)| *sets),
            helper: Some(&name),
            lanes: lanes || is_generic_copy(&name),
        };
        let mut checker = Checker::new(&env, errors, helper.ret.clone());
        for param in helper
            .params
            .iter_mut()
            .filter(|p| p.kind == ParamKind::Value)
        {
            param.local = checker.declare(&param.name, param.ty.clone(), param.mutable);
        }
        checker.block(&mut helper.body);
        checker.finish_block(&mut helper.body);
        helper.locals = checker.locals;
        unroll::check(&helper.body, errors);
    }
}

/// A helper's reference parameters as what its body sees: buffers and parameters as bindings,
/// arrays as workgroup arrays (whether the caller lends workgroup memory or a local array).
pub fn lent(helper: &Function) -> (Vec<Binding>, Vec<SharedVar>) {
    let mut bindings = Vec::new();
    let mut shared = Vec::new();
    for param in helper.reference_params() {
        let kind = match param.kind {
            ParamKind::Array => {
                shared.push(SharedVar {
                    name: param.name.clone(),
                    ty: param.ty.clone(),
                    span: param.span,
                    writable: param.mutable,
                });
                continue;
            }
            ParamKind::Storage => BindingKind::Storage {
                element: param.ty.clone(),
                writable: param.mutable,
            },
            ParamKind::Uniform(params) => BindingKind::Uniform { params },
            ParamKind::Value => continue,
        };
        bindings.push(Binding {
            name: param.name.clone(),
            kind,
            len: None,
            span: param.span,
            host: crate::ir::HostElement::Fixed,
        });
    }
    (bindings, shared)
}

/// Reports every call that starts a cycle among `helpers` (direct or mutual recursion), at the
/// call; whether there was one. Later stages assume there is none.
fn recursion(helpers: &[Function], errors: &mut Errors) -> bool {
    let mut found = false;
    for helper in helpers {
        for (callee, span) in calls(&helper.body) {
            let Some(path) = path_back(helpers, &callee, &helper.name) else {
                continue;
            };
            let name = written_name(&helper.name);
            let how = if callee == helper.name {
                format!("`{name}` calls itself")
            } else {
                let chain: Vec<String> = path
                    .iter()
                    .map(|n| format!("`{}`", written_name(n)))
                    .collect();
                format!(
                    "`{name}` calls {}, which calls `{name}` again",
                    chain.join(", then "),
                )
            };
            errors.at(
                span,
                format!(
                    "{how}; kernels cannot recurse (a GPU has no call stack): write it as a loop"
                ),
            );
            found = true;
        }
    }
    found
}

/// The chain of helpers from `from` whose last one calls `to`, if any (`[from, ...]`; empty
/// when `from` is `to`).
fn path_back(helpers: &[Function], from: &Ident, to: &Ident) -> Option<Vec<Ident>> {
    let mut pending = vec![vec![from.clone()]];
    let mut seen = HashSet::new();
    while let Some(path) = pending.pop() {
        let last = path.last()?;
        if last == to {
            let mut chain = path;
            chain.pop();
            return Some(chain);
        }
        if !seen.insert(last.to_string()) {
            continue;
        }
        let Some(function) = helpers.iter().find(|h| h.name == *last) else {
            continue;
        };
        for (callee, _) in calls(&function.body) {
            let mut longer = path.clone();
            longer.push(callee);
            pending.push(longer);
        }
    }
    None
}

/// The functions `body` calls, with the span of each call.
fn calls(body: &crate::ir::Block) -> Vec<(Ident, crate::ir::Span)> {
    let mut found = Vec::new();
    crate::ir::visit_exprs(body, &mut |e| {
        if let ExprKind::Call(name, _) = &e.kind {
            found.push((name.clone(), e.span));
        }
    });
    found
}

/// Workgroup size and workgroup memory against WebGPU's default limits.
fn limits(kernel: &Variant, instance: &str, errors: &mut Errors) {
    let [x, y, z] = kernel.workgroup_size.map(u64::from);
    // Three `u32`s multiply to at most 2^96: saturating at `u64::MAX` still compares right.
    let invocations = x.saturating_mul(y).saturating_mul(z);
    let (max_invocations, declared) = match kernel.requirements.invocations {
        Some((declared, _)) => (declared, true),
        None => (MAX_INVOCATIONS, false),
    };
    if invocations > u64::from(max_invocations) {
        let advice = if invocations > u64::from(u32::MAX) {
            "use a smaller workgroup".to_owned()
        } else if declared {
            format!("raise `limits(invocations = {invocations})` or use a smaller workgroup")
        } else {
            format!(
                "use a smaller workgroup, or declare `limits(invocations = {invocations})` in `#[kernel(...)]` \
                 so the launcher checks the device for it"
            )
        };
        let limit = if declared {
            "the declared limit"
        } else {
            "WebGPU's default limit"
        };
        errors.at(
            kernel.workgroup_span,
            format!(
                "{instance}a workgroup of {x} x {y} x {z} = {invocations} invocations exceeds {limit} of \
                 {max_invocations} per workgroup; {advice}"
            ),
        );
    }
    if !declared {
        for (axis, (size, max)) in ["x", "y", "z"]
            .iter()
            .zip(kernel.workgroup_size.iter().zip(MAX_WORKGROUP_SIZE))
        {
            if *size > max {
                errors.at(
                    kernel.workgroup_span,
                    format!("{instance}the workgroup's {axis} size {size} exceeds WebGPU's default limit of {max}"),
                );
            }
        }
    }
    let (max_memory, declared) = match kernel.requirements.workgroup_memory {
        Some((declared, _)) => (declared, true),
        None => (MAX_WORKGROUP_MEMORY, false),
    };
    let mut total = Some(0u64);
    for shared in &kernel.shared {
        total = total.and_then(|t| t.checked_add(shared.ty.byte_size()?));
        if total.is_none_or(|t| t > u64::from(max_memory)) {
            let fits = total.is_some_and(|t| t <= u64::from(u32::MAX));
            let total = total.map_or_else(|| format!("more than {}", u64::MAX), |t| t.to_string());
            let (limit, advice) = if !fits {
                (
                    if declared {
                        "the declared limit"
                    } else {
                        "WebGPU's default limit"
                    },
                    "use smaller arrays (no device has 4 GiB of workgroup memory)".to_owned(),
                )
            } else if declared {
                (
                    "the declared limit",
                    format!("raise `limits(workgroup_memory = {total})` or use smaller arrays"),
                )
            } else {
                (
                    "WebGPU's default limit",
                    format!(
                        "use smaller arrays, or declare `limits(workgroup_memory = {total})` in `#[kernel(...)]` \
                         so the launcher checks the device for it"
                    ),
                )
            };
            errors.at(
                shared.span,
                format!(
                    "{instance}workgroup memory reaches {total} bytes with `{}`, above {limit} of {max_memory} bytes; {advice}",
                    shared.name
                ),
            );
            break;
        }
    }
}

/// "in the instance `TILE = 32`: " for kernels with constants, so an error names the instance.
fn instance_prefix(instance: &Instance) -> String {
    if instance.constants.is_empty() {
        return String::new();
    }
    let values: Vec<String> = instance
        .constants
        .iter()
        .map(|(name, value)| format!("{name} = {value}"))
        .collect();
    format!("in the instance `{}`: ", values.join(", "))
}

/// Specializations name integer fields of the kernel's parameters.
fn specializations(
    kernel: &Kernel,
    general: &Variant,
    params: &[ParamsStruct],
    errors: &mut Errors,
) {
    let uniform = general.bindings.iter().find_map(|b| match b.kind {
        BindingKind::Uniform { params: index } => Some(&params[index]),
        _ => None,
    });
    let Some(uniform) = uniform else { return };
    for (field, value, span) in kernel.specializations.iter().flat_map(|s| &s.conditions) {
        match uniform.fields.iter().find(|f| f.name == *field) {
            Some(f) if f.ty == Ty::U32 && u32::try_from(*value).is_err() => {
                errors.at(*span, format!("`{field}` is a `u32`, never {value}"))
            }
            Some(f) if f.ty == Ty::I32 && i32::try_from(*value).is_err() => {
                errors.at(*span, format!("`{field}` is an `i32`, never {value}"))
            }
            Some(f) if matches!(&f.ty, Ty::Scalar(s) if s.is_integer()) => {}
            Some(f) => errors.at(
                *span,
                format!(
                    "specializations are on integer fields; `{field}` is `{}`",
                    f.ty.rust_name()
                ),
            ),
            None if uniform.refused(field) => {}
            None => {
                let names = uniform.field_list();
                errors.at(
                    field.span(),
                    format!(
                        "`{}` has no field `{field}` to specialize on; its fields are {}",
                        uniform.name, names
                    ),
                );
            }
        }
    }
}

/// A family's members are kernels of the module, each named once in it (a kernel may serve
/// several families).
fn families(module: &Module, errors: &mut Errors) {
    let mut seen: Vec<(&Ident, &Ident)> = Vec::new();
    for family in &module.families {
        for name in &family.members {
            if !module.kernels.iter().any(|k| k.name == *name) {
                errors.at(
                    name.span(),
                    format!("`{name}` is not a `#[kernel]` of this module"),
                );
            }
            let twice = seen
                .iter()
                .any(|(member, other)| *member == name && *other == &family.name);
            if twice {
                errors.at(
                    name.span(),
                    format!("`{name}` is listed twice; a family launches each kernel once"),
                );
            }
            seen.push((name, &family.name));
        }
    }
}

/// Fields and buffers named in the grid and in `#[len]` expressions must exist.
fn host_names(kernel: &Variant, params: &[crate::ir::ParamsStruct], errors: &mut Errors) {
    let uniform = kernel.bindings.iter().find_map(|b| match b.kind {
        BindingKind::Uniform { params: index } => Some(&params[index]),
        _ => None,
    });
    let exprs = kernel
        .grid
        .iter()
        .chain(kernel.bindings.iter().filter_map(|b| b.len.as_ref()));
    for expr in exprs {
        visit_host(expr, &mut |leaf| match leaf {
            HostExpr::Field { field, span } => {
                let Some(uniform) = uniform else { return };
                match uniform.fields.iter().find(|f| f.name == *field) {
                    Some(f) if matches!(f.ty, Ty::Scalar(s) if s.is_integer()) => {}
                    Some(f) => errors.at(
                        *span,
                        format!(
                            "`{field}` is `{}`; grid and length expressions use integer fields",
                            f.ty.rust_name()
                        ),
                    ),
                    None if uniform.refused(field) => {}
                    None => {
                        let names = uniform.field_list();
                        errors.at(
                            *span,
                            format!(
                                "`{}` has no field `{field}`; its fields are {}",
                                uniform.name, names
                            ),
                        );
                    }
                }
            }
            HostExpr::Len { binding, span } => {
                let is_storage = |b: &&Binding| {
                    b.name == *binding && matches!(b.kind, BindingKind::Storage { .. })
                };
                if !kernel.bindings.iter().any(|b| is_storage(&b)) {
                    errors.at(
                        *span,
                        format!("`{binding}` is not a storage parameter of this kernel"),
                    );
                }
            }
            _ => {}
        });
    }
}

fn visit_host(expr: &HostExpr, f: &mut impl FnMut(&HostExpr)) {
    match expr {
        HostExpr::Binary(_, a, b) | HostExpr::Call(_, a, b) => {
            visit_host(a, f);
            visit_host(b, f);
        }
        leaf => f(leaf),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod uniformity_tests;
