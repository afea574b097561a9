//! Specialization: for every `specialize(p.field == value)` of a kernel, a copy of each of its
//! checked variants with those fields replaced by their values, in the kernel's body and in
//! every helper it lends its parameters to. The user writes the general body once; the
//! launcher picks a variant whose condition holds.
//!
//! Every variant's body and helpers are then folded (`x * 1`, `x / 1`, `x % 1`, `x + 0`,
//! always-true tests and dead branches simplified away), the general ones too: a body over an
//! element type written once for every width (`if E::LANES > 1 && across`, `i * E::LANES`)
//! comes out for each width as it would have been written for that width alone.

mod fold;

use crate::check::consts;
use crate::diag::Errors;
use crate::ir::{
    BindingKind, Block, Expr, ExprKind, LocalId, Module, ParamKind, Specialization, Ty, Variant,
};

/// Adds each instance's specialized variants after its general one. A value that makes a
/// constant WGSL rejects (a divisor of 0, a shift by 32) is reported at the expression.
pub fn specialize(module: &mut Module, errors: &mut Errors) {
    for kernel in &mut module.kernels {
        for instance in &mut kernel.instances {
            instance.variants.iter_mut().for_each(fold_variant);
            let general = instance.general();
            let specialized: Vec<Variant> = kernel
                .specializations
                .iter()
                .enumerate()
                .map(|(index, specialization)| variant(general, index, specialization))
                .collect();
            for (variant, specialization) in specialized.iter().zip(&kernel.specializations) {
                consts::variant(variant, Some(specialization), errors);
            }
            instance.variants.extend(specialized);
        }
    }
}

/// Folds the body of `variant` and of each of its helpers.
fn fold_variant(variant: &mut Variant) {
    fold::fold_block(&mut variant.body);
    for helper in &mut variant.helpers {
        fold::fold_block(&mut helper.body);
    }
}

fn variant(general: &Variant, index: usize, specialization: &Specialization) -> Variant {
    let mut specialized = general.clone();
    specialized.specialization = Some(index);
    let uniform = specialized
        .bindings
        .iter()
        .find(|b| matches!(b.kind, BindingKind::Uniform { .. }))
        .map(|b| b.name.clone());
    let Some(uniform) = uniform else {
        return specialized;
    };
    let values: Vec<(String, i64)> = specialization
        .conditions
        .iter()
        .map(|(field, value, _)| (field.to_string(), *value))
        .collect();
    // The kernel names its parameters by the binding (never a local).
    substitute(&mut specialized.body, &values, |name, local| {
        local.is_none() && *name == uniform
    });
    // A helper names them by its `&Params` parameter: the caller's, since a kernel has one.
    for helper in &mut specialized.helpers {
        let params: Vec<(syn::Ident, LocalId)> = helper
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Uniform(_)))
            .map(|p| (p.name.clone(), p.local))
            .collect();
        if params.is_empty() {
            continue;
        }
        let replaced = substitute(&mut helper.body, &values, |name, local| {
            params
                .iter()
                .any(|(param, id)| param == name && local.is_none_or(|l| l == *id))
        });
        // A copy with values folded in is a different WGSL function from the general one.
        if replaced {
            helper.fingerprint = format!(
                "{} specialized for {}",
                helper.fingerprint,
                specialization.describe()
            );
        }
    }
    specialized
}

/// Replaces `params.field` by the field's value wherever `is_params(name, local)` says the path
/// names the parameters, then folds `block`. Returns whether anything was replaced.
fn substitute(
    block: &mut Block,
    values: &[(String, i64)],
    is_params: impl Fn(&syn::Ident, Option<LocalId>) -> bool,
) -> bool {
    let mut replaced = false;
    let mut replace = |e: &mut Expr| {
        let ExprKind::Field(base, field) = &e.kind else {
            return;
        };
        let ExprKind::Path(name, local) = &base.kind else {
            return;
        };
        if !is_params(name, *local) {
            return;
        }
        let Some((_, value)) = values.iter().find(|(f, _)| field == f) else {
            return;
        };
        let Ty::Scalar(scalar) = e.ty else {
            return;
        };
        let literal = Expr {
            kind: ExprKind::Int(value.unsigned_abs()),
            span: e.span,
            ty: Ty::Scalar(scalar),
        };
        replaced = true;
        *e = if *value < 0 {
            Expr {
                kind: ExprKind::Unary(crate::ir::UnOp::Neg, Box::new(literal)),
                span: e.span,
                ty: Ty::Scalar(scalar),
            }
        } else {
            literal
        };
    };
    fold::rewrite_block(block, &mut replace);
    fold::fold_block(block);
    replaced
}
