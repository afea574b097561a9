//! Specialization: for every `specialize(p.field == value)` of a kernel, a copy of each of its
//! checked variants with those fields replaced by their values and the body folded
//! (`x * 1`, `x / 1`, `x % 1`, always-true tests and dead branches simplified away). The user
//! writes the general body once; the launcher picks a variant whose condition holds.

mod fold;

use crate::ir::{BindingKind, Expr, ExprKind, Kernel, Module, Ty};

/// Adds the specialized variants, each right after the general variant it comes from.
pub fn specialize(module: &mut Module) {
    let general = std::mem::take(&mut module.kernels);
    for kernel in general {
        let specialized: Vec<Kernel> = (0..kernel.specializations.len())
            .map(|index| variant(&kernel, index))
            .collect();
        module.kernels.push(kernel);
        module.kernels.extend(specialized);
    }
}

fn variant(general: &Kernel, index: usize) -> Kernel {
    let mut kernel = general.clone();
    kernel.variant.specialization = Some(index);
    let uniform = kernel
        .bindings
        .iter()
        .find(|b| matches!(b.kind, BindingKind::Uniform { .. }))
        .map(|b| b.name.clone());
    let Some(uniform) = uniform else {
        return kernel;
    };
    let values = &general.specializations[index].conditions;
    let mut replace = |e: &mut Expr| {
        let ExprKind::Field(base, field) = &e.kind else {
            return;
        };
        let ExprKind::Path(name, None) = &base.kind else {
            return;
        };
        if *name != uniform {
            return;
        }
        if let Some((_, value, _)) = values.iter().find(|(f, _, _)| f == field) {
            let (kind, ty) = match e.ty {
                Ty::Scalar(s) => (ExprKind::Int(value.unsigned_abs()), Ty::Scalar(s)),
                _ => return,
            };
            *e = if *value < 0 {
                let positive = Expr {
                    kind,
                    span: e.span,
                    ty: ty.clone(),
                };
                Expr {
                    kind: ExprKind::Unary(crate::ir::UnOp::Neg, Box::new(positive)),
                    span: e.span,
                    ty,
                }
            } else {
                Expr {
                    kind,
                    span: e.span,
                    ty,
                }
            };
        }
    };
    fold::rewrite_block(&mut kernel.body, &mut replace);
    fold::fold_block(&mut kernel.body);
    kernel
}
