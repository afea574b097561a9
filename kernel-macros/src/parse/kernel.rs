//! Kernel and helper signatures -> IR: `#[kernel(workgroup = [..], grid = [..])]`, bindings
//! from typed parameters (`&[T]`, `&mut [T]`, `&Params`), `#[len(..)]` and `#[workgroup]`.

use crate::diag::Errors;
use crate::ir::{self, Scalar, Span, Ty};
use crate::parse::attr::{self, KernelAttr};
use crate::parse::consts::{self, Consts, Value};
use crate::parse::keywords::{
    ATOMIC_I32, ATOMIC_U32, KERNEL, LEN, LIMIT_INVOCATIONS, WORKGROUP_MEMORY,
};
use crate::parse::{body, host, ty};

/// The `#[kernel(...)]` attribute of `function`, if it has one.
pub fn kernel_attr(function: &syn::ItemFn) -> Option<&syn::Attribute> {
    function
        .attrs
        .iter()
        .find(|attr| attr.path().is_ident(KERNEL))
}

/// A `#[kernel]` function: one IR kernel per instance of its constants (one when it has none).
pub fn kernel(
    function: &syn::ItemFn,
    attr: &syn::Attribute,
    params: &[ir::ParamsStruct],
    consts: &Consts,
    errors: &mut Errors,
) -> Vec<ir::Kernel> {
    let Some(args) = attr::kernel_attr(attr, errors) else {
        return Vec::new();
    };
    let requirements = requirements(&args, consts, errors);
    let mut kernels = Vec::new();
    for (index, (env, constants)) in instances(&args.constants, consts, errors)
        .into_iter()
        .enumerate()
    {
        let variant = ir::Variant {
            instance: index,
            constants,
            specialization: None,
        };
        if let Some(kernel) = instance(function, &args, &env, variant, params, errors) {
            kernels.push(ir::Kernel {
                requirements: requirements.clone(),
                ..kernel
            });
        }
    }
    kernels
}

/// Every combination of the values of `constants(...)`, each with the module's constants.
/// A value may use the module's constants and the constants declared before it, so
/// `constants(REG = [8, 4], BLOCK = [16 * REG])` gives two instances.
fn instances(
    declared: &[(syn::Ident, Vec<syn::Expr>)],
    consts: &Consts,
    errors: &mut Errors,
) -> Vec<(Consts, Vec<(syn::Ident, String)>)> {
    let mut instances = vec![(consts.clone(), Vec::new())];
    for (name, values) in declared {
        let mut next = Vec::new();
        for (env, labels) in &instances {
            for value in values {
                let Some(v) = consts::eval(value, env).and_then(|v| u32::try_from(v).ok()) else {
                    report_bad_constant(name, value, env, errors);
                    continue;
                };
                let mut labels = labels.clone();
                labels.push((name.clone(), v.to_string()));
                next.push((env.with(&name.to_string(), Value::U32(v)), labels));
            }
        }
        instances = next;
    }
    instances
}

fn report_bad_constant(name: &syn::Ident, value: &syn::Expr, env: &Consts, errors: &mut Errors) {
    match consts::undeclared(value, env) {
        Some(unknown) => errors.spanned(
            unknown,
            format!(
                "`{unknown}` is used before it is declared; declare `const {unknown}: u32 = ...;` \
                 above the kernel, or list it earlier in `constants(...)`"
            ),
        ),
        None => errors.spanned(
            value,
            format!("`{name}` needs a `u32` value known at compile time"),
        ),
    }
}

fn requirements(args: &KernelAttr, consts: &Consts, errors: &mut Errors) -> ir::Requirements {
    let mut requirements = ir::Requirements {
        features: args.features.clone(),
        ..Default::default()
    };
    for (name, value) in &args.limits {
        let Some(v) = consts::eval(value, consts).and_then(|v| u32::try_from(v).ok()) else {
            errors.spanned(value, "a limit must be a `u32` known at compile time");
            continue;
        };
        let slot = if name == LIMIT_INVOCATIONS {
            &mut requirements.invocations
        } else {
            &mut requirements.workgroup_memory
        };
        *slot = Some((v, Span::of(value)));
    }
    requirements
}

/// One instance: the kernel's tokens with the instance's constants substituted, parsed.
fn instance(
    function: &syn::ItemFn,
    args: &KernelAttr,
    env: &Consts,
    variant: ir::Variant,
    params: &[ir::ParamsStruct],
    errors: &mut Errors,
) -> Option<ir::Kernel> {
    let substituted =
        |expr: &syn::Expr, errors: &mut Errors| env.apply(expr).map_err(|e| errors.push(e)).ok();
    let function: syn::ItemFn = env.apply(function).map_err(|e| errors.push(e)).ok()?;
    check_plain_signature(&function.sig, errors);
    if let syn::ReturnType::Type(_, ret) = &function.sig.output {
        errors.spanned(
            ret,
            "a kernel returns nothing; write its results into a `&mut [T]` parameter",
        );
    }
    let (workgroup, workgroup_span) = args.workgroup.as_ref()?;
    let mut workgroup_size = [1u32; 3];
    for (slot, element) in workgroup_size.iter_mut().zip(workgroup) {
        match consts::eval(element, env)
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| *v > 0)
        {
            Some(v) => *slot = v,
            None => errors.spanned(
                element,
                "a workgroup size must be a positive integer known at compile time",
            ),
        }
    }
    let mut bindings = Vec::new();
    let mut shared = Vec::new();
    let mut lens = Vec::new();
    let mut rejected_params = Vec::new();
    for input in &function.sig.inputs {
        match input {
            syn::FnArg::Typed(arg) => {
                let declared = bindings.len() + shared.len();
                let len = kernel_param(arg, params, &mut bindings, &mut shared, errors);
                if let Some(len) = len {
                    lens.push((bindings.len() - 1, len));
                }
                if bindings.len() + shared.len() == declared {
                    if let syn::Pat::Ident(pat) = &*arg.pat {
                        rejected_params.push(pat.ident.clone());
                    }
                }
            }
            syn::FnArg::Receiver(receiver) => {
                errors.spanned(receiver, "a kernel cannot take `self`")
            }
        }
    }
    let uniforms: Vec<&ir::Binding> = bindings
        .iter()
        .filter(|b| matches!(b.kind, ir::BindingKind::Uniform { .. }))
        .collect();
    if let [_, second, ..] = uniforms[..] {
        errors.at(
            second.span,
            "a kernel takes at most one `Params` struct; put all parameters in one struct",
        );
    }
    let uniform = uniforms.first().map(|b| b.name.clone());
    for (index, expr) in lens {
        bindings[index].len = host::host_expr(&expr, uniform.as_ref(), false, errors);
    }
    let mut grid = Vec::new();
    for expr in args.grid.iter().flatten() {
        if let Some(expr) = substituted(expr, errors) {
            grid.extend(host::host_expr(&expr, uniform.as_ref(), true, errors));
        }
    }
    let specializations = args
        .specializations
        .iter()
        .filter_map(|condition| specialization(condition, uniform.as_ref(), errors))
        .collect();
    Some(ir::Kernel {
        name: function.sig.ident.clone(),
        docs: doc_lines(&function.attrs),
        variant,
        specializations,
        requirements: ir::Requirements::default(),
        workgroup_size,
        workgroup_span: *workgroup_span,
        grid,
        bindings,
        shared,
        rejected_params,
        body: body::block(&function.block, errors),
        locals: Vec::new(),
    })
}

/// `p.field == value` conditions joined by `&&`.
fn specialization(
    condition: &syn::Expr,
    uniform: Option<&syn::Ident>,
    errors: &mut Errors,
) -> Option<ir::Specialization> {
    let usage = |name: &str| {
        format!("a specialization is `{name}.field == value`, or several joined by `&&`, with integer values")
    };
    let Some(uniform) = uniform else {
        errors.spanned(
            condition,
            "only a kernel with a `Params` struct can be specialized: on its fields",
        );
        return None;
    };
    let mut conditions = Vec::new();
    let mut pending = vec![condition];
    while let Some(expr) = pending.pop() {
        match expr {
            syn::Expr::Paren(inner) => pending.push(&inner.expr),
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
                pending.push(&b.right);
                pending.push(&b.left);
            }
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Eq(_)) => {
                let field = match &*b.left {
                    syn::Expr::Field(syn::ExprField {
                        base,
                        member: syn::Member::Named(field),
                        ..
                    }) if matches!(&**base, syn::Expr::Path(p) if p.path.is_ident(uniform)) => {
                        field.clone()
                    }
                    other => {
                        errors.spanned(other, usage(&uniform.to_string()));
                        return None;
                    }
                };
                let Some(value) = consts::eval(&b.right, &Consts::default()) else {
                    errors.spanned(&b.right, usage(&uniform.to_string()));
                    return None;
                };
                conditions.push((field, value, Span::of(expr)));
            }
            other => {
                errors.spanned(other, usage(&uniform.to_string()));
                return None;
            }
        }
    }
    Some(ir::Specialization { conditions })
}

/// Adds the binding or workgroup array `arg` declares; returns its `#[len(..)]` expression.
fn kernel_param(
    arg: &syn::PatType,
    params: &[ir::ParamsStruct],
    bindings: &mut Vec<ir::Binding>,
    shared: &mut Vec<ir::SharedVar>,
    errors: &mut Errors,
) -> Option<syn::Expr> {
    let syn::Pat::Ident(pat) = &*arg.pat else {
        errors.spanned(&arg.pat, "a kernel parameter must be a plain name");
        return None;
    };
    let name = pat.ident.clone();
    let span = Span::of(arg);
    let mut is_shared = false;
    let mut len = None;
    for attr in &arg.attrs {
        if attr.path().is_ident(WORKGROUP_MEMORY) {
            is_shared = true;
        } else if attr.path().is_ident(LEN) {
            len = Some(attr);
        } else {
            errors.spanned(
                attr,
                "unknown parameter attribute; kernels accept `#[len(expr)]` and `#[workgroup]`",
            );
        }
    }
    if is_shared {
        match shared_ty(&arg.ty) {
            Ok(ty) => shared.push(ir::SharedVar { name, ty, span }),
            Err(error) => errors.push(error),
        }
        return None;
    }
    let kind = match binding_kind(&arg.ty, params) {
        Ok(kind) => kind,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let len = len.and_then(|attr| {
        if matches!(kind, ir::BindingKind::Uniform { .. }) {
            errors.spanned(
                attr,
                "`#[len]` belongs on storage parameters (`&[T]`, `&mut [T]`)",
            );
            return None;
        }
        attr.parse_args::<syn::Expr>()
            .map_err(|error| errors.push(error))
            .ok()
    });
    bindings.push(ir::Binding {
        name,
        kind,
        len: None,
        span,
    });
    len
}

fn binding_kind(ty: &syn::Type, params: &[ir::ParamsStruct]) -> syn::Result<ir::BindingKind> {
    let unsupported = || {
        syn::Error::new_spanned(
            ty,
            "unsupported kernel parameter type; a kernel takes `&[T]` (read-only storage), `&mut [T]` \
             (read-write storage) with T one of `f32`, `u32`, `i32`, `AtomicU32`, `AtomicI32`, \
             `&P` for a `#[derive(Params)]` struct `P` of this module, or `#[workgroup] name: &mut [T; N]`",
        )
    };
    let syn::Type::Reference(reference) = ty else {
        return Err(unsupported());
    };
    let writable = reference.mutability.is_some();
    match &*reference.elem {
        syn::Type::Slice(slice) => {
            let element = storage_element(&slice.elem).ok_or_else(unsupported)?;
            Ok(ir::BindingKind::Storage { element, writable })
        }
        syn::Type::Path(path) => {
            let index = params
                .iter()
                .position(|p| path.path.is_ident(&p.name))
                .ok_or_else(unsupported)?;
            if writable {
                return Err(syn::Error::new_spanned(
                    ty,
                    "kernels cannot write their parameters; take `&P`",
                ));
            }
            Ok(ir::BindingKind::Uniform { params: index })
        }
        _ => Err(unsupported()),
    }
}

fn storage_element(ty: &syn::Type) -> Option<Ty> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let ident = path.path.get_ident()?.to_string();
    match ident.as_str() {
        ATOMIC_U32 => Some(Ty::Atomic(Scalar::U32)),
        ATOMIC_I32 => Some(Ty::Atomic(Scalar::I32)),
        "f32" | "f16" | "u32" | "i32" => ty::scalar(&ident).map(Ty::Scalar),
        _ => None,
    }
}

fn shared_ty(ty: &syn::Type) -> syn::Result<Ty> {
    let usage = "workgroup memory is declared as `#[workgroup] name: &mut [T; N]`";
    let syn::Type::Reference(reference) = ty else {
        return Err(syn::Error::new_spanned(ty, usage));
    };
    if reference.mutability.is_none() {
        return Err(syn::Error::new_spanned(ty, usage));
    }
    match ty::value_ty(&reference.elem)? {
        array @ Ty::Array(..) => Ok(array),
        _ => Err(syn::Error::new_spanned(ty, usage)),
    }
}

/// Rejects what kernels and helpers cannot be: generic, async, unsafe, variadic, const.
fn check_plain_signature(sig: &syn::Signature, errors: &mut Errors) {
    if !sig.generics.params.is_empty() {
        errors.spanned(&sig.generics, "kernels and helpers cannot be generic");
    }
    if let Some(token) = &sig.asyncness {
        errors.spanned(token, "kernels and helpers cannot be `async`");
    }
    if let Some(token) = &sig.unsafety {
        errors.spanned(token, "kernels and helpers cannot be `unsafe`");
    }
    if let Some(token) = &sig.constness {
        errors.spanned(token, "kernels and helpers cannot be `const fn`");
    }
}

/// A helper function: plain typed parameters, an optional return type.
pub fn helper(function: &syn::ItemFn, errors: &mut Errors) -> Option<ir::Function> {
    check_plain_signature(&function.sig, errors);
    let mut params = Vec::new();
    for input in &function.sig.inputs {
        let syn::FnArg::Typed(arg) = input else {
            errors.spanned(input, "a helper cannot take `self`");
            continue;
        };
        let syn::Pat::Ident(pat) = &*arg.pat else {
            errors.spanned(&arg.pat, "a helper parameter must be a plain name");
            continue;
        };
        match ty::value_ty(&arg.ty) {
            Ok(ty) => params.push(ir::FnParam {
                name: pat.ident.clone(),
                ty,
                mutable: pat.mutability.is_some(),
                local: ir::LocalId::default(),
            }),
            Err(error) => errors.push(error),
        }
    }
    let ret = match &function.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ret) => match ty::value_ty(ret) {
            Ok(ty) => Some(ty),
            Err(error) => {
                errors.push(error);
                None
            }
        },
    };
    let body = body::function_body(&function.block, ret.is_some(), errors);
    Some(ir::Function {
        name: function.sig.ident.clone(),
        params,
        ret,
        body,
        locals: Vec::new(),
    })
}

/// The text of `///` comments among `attrs`.
fn doc_lines(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => Some(text.value()),
            _ => None,
        })
        .collect()
}
