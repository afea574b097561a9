//! Checks the IR: uniform layouts, limits (workgroup size, workgroup memory), the names used in
//! grid and length expressions, and the types of every body (see [`types`]). Errors are
//! accumulated; the IR comes out with every type resolved.

pub mod builtins;
pub mod layout;
mod types;
mod uniformity;

pub use types::unroll_values;

use std::collections::HashMap;

use crate::diag::Errors;
use crate::ir::{Binding, BindingKind, HostExpr, Kernel, Module, Ty};
use types::{Checker, Env};

/// WebGPU's default `maxComputeInvocationsPerWorkgroup`.
pub const MAX_INVOCATIONS: u32 = 256;
/// WebGPU's default `maxComputeWorkgroupSizeX/Y/Z`.
pub const MAX_WORKGROUP_SIZE: [u32; 3] = [256, 256, 64];
/// WebGPU's default `maxComputeWorkgroupStorageSize` in bytes.
pub const MAX_WORKGROUP_MEMORY: u32 = 16 * 1024;

pub fn check(module: &mut Module, errors: &mut Errors) {
    let helpers: HashMap<String, (Vec<Ty>, Option<Ty>)> = module
        .helpers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                (
                    h.params.iter().map(|p| p.ty.clone()).collect(),
                    h.ret.clone(),
                ),
            )
        })
        .collect();
    for helper in &mut module.helpers {
        let env = Env {
            params: &module.params,
            helpers: helpers.clone(),
            bindings: &[],
            shared: &[],
            in_kernel: false,
        };
        let mut checker = Checker::new(&env, errors, helper.ret.clone());
        for param in &mut helper.params {
            param.local = checker.declare(&param.name, param.ty.clone(), param.mutable);
        }
        checker.block(&mut helper.body);
        checker.finish_block(&mut helper.body);
        helper.locals = checker.locals;
    }
    unique_functions(module, errors);
    for kernel in &mut module.kernels {
        limits(kernel, errors);
        host_names(kernel, module.params.as_slice(), errors);
        let body = std::mem::take(&mut kernel.body);
        let env = Env {
            params: &module.params,
            helpers: helpers.clone(),
            bindings: &kernel.bindings,
            shared: &kernel.shared,
            in_kernel: true,
        };
        let mut body = body;
        let mut checker = Checker::new(&env, errors, None);
        for name in &kernel.rejected_params {
            checker.declare(name, Ty::Unknown, true);
        }
        checker.block(&mut body);
        checker.finish_block(&mut body);
        kernel.locals = checker.locals;
        kernel.body = body;
        uniformity::check(kernel, &module.helpers, errors);
    }
}

/// Workgroup size and workgroup memory against WebGPU's default limits.
fn limits(kernel: &Kernel, errors: &mut Errors) {
    let [x, y, z] = kernel.workgroup_size;
    let invocations = x.saturating_mul(y).saturating_mul(z);
    if invocations > MAX_INVOCATIONS {
        errors.at(
            kernel.workgroup_span,
            format!(
                "a workgroup of {x} x {y} x {z} = {invocations} invocations exceeds WebGPU's limit of \
                 {MAX_INVOCATIONS} per workgroup; use a smaller workgroup"
            ),
        );
    }
    for (axis, (size, max)) in ["x", "y", "z"]
        .iter()
        .zip(kernel.workgroup_size.iter().zip(MAX_WORKGROUP_SIZE))
    {
        if *size > max {
            errors.at(
                kernel.workgroup_span,
                format!("the workgroup's {axis} size {size} exceeds WebGPU's limit of {max}"),
            );
        }
    }
    let mut total = 0u32;
    for shared in &kernel.shared {
        total = total.saturating_add(shared.ty.size_align().0);
        if total > MAX_WORKGROUP_MEMORY {
            errors.at(
                shared.span,
                format!(
                    "workgroup memory reaches {total} bytes with `{}`, above WebGPU's limit of {MAX_WORKGROUP_MEMORY} \
                     bytes (16 KiB); use smaller arrays",
                    shared.name
                ),
            );
            break;
        }
    }
}

/// Fields and buffers named in the grid and in `#[len]` expressions must exist.
fn host_names(kernel: &Kernel, params: &[crate::ir::ParamsStruct], errors: &mut Errors) {
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
                    None => {
                        let names: Vec<String> = uniform
                            .fields
                            .iter()
                            .map(|f| format!("`{}`", f.name))
                            .collect();
                        errors.at(
                            *span,
                            format!(
                                "`{}` has no field `{field}`; its fields are {}",
                                uniform.name,
                                names.join(", ")
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

/// Kernels and helpers share one namespace (one WGSL module).
fn unique_functions(module: &Module, errors: &mut Errors) {
    let mut seen = std::collections::HashSet::new();
    let names = module
        .helpers
        .iter()
        .map(|h| &h.name)
        .chain(module.kernels.iter().map(|k| &k.name));
    for name in names {
        if !seen.insert(name.to_string()) {
            errors.at(
                name.span(),
                format!("`{name}` is defined more than once in this module; rename one"),
            );
        }
    }
    for kernel in &module.kernels {
        for generated in [kernel.launcher_name(), kernel.args_name()] {
            if let Some(params) = module.params.iter().find(|p| p.name == generated) {
                errors.at(
                    params.name.span(),
                    format!(
                        "`{generated}` is the name of the launcher tessera generates for the kernel `{}`; \
                         rename this struct, e.g. `{generated}Params`",
                        kernel.name
                    ),
                );
            }
        }
    }
}
