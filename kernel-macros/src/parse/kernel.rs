//! Kernel and helper signatures -> IR: `#[kernel(workgroup = [..], grid = [..])]`, bindings
//! from typed parameters (`&[T]`, `&mut [T]`, `&Params`), `#[len(..)]` and `#[workgroup]`.

use crate::diag::Errors;
use crate::ir::{self, Scalar, Span, Ty};
use crate::parse::keywords::{
    ATOMIC_I32, ATOMIC_U32, GRID, KERNEL, LEN, WORKGROUP_MEMORY, WORKGROUP_SIZE,
};
use crate::parse::{body, host, ty};

/// The `#[kernel(...)]` attribute of `function`, if it has one.
pub fn kernel_attr(function: &syn::ItemFn) -> Option<&syn::Attribute> {
    function
        .attrs
        .iter()
        .find(|attr| attr.path().is_ident(KERNEL))
}

/// `workgroup = [..]` and `grid = [..]`.
struct KernelArgs {
    workgroup_size: [u32; 3],
    workgroup_span: Span,
    grid: Vec<syn::Expr>,
}

fn kernel_args(attr: &syn::Attribute, errors: &mut Errors) -> Option<KernelArgs> {
    let usage = "write `#[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]`";
    let pairs = match attr.parse_args_with(
        syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated,
    ) {
        Ok(pairs) => pairs,
        Err(error) => {
            errors.at(error.span(), format!("{error}; {usage}"));
            return None;
        }
    };
    let mut workgroup = None;
    let mut grid = None;
    for pair in pairs {
        let elements: Vec<syn::Expr> = match &pair.value {
            syn::Expr::Array(array) if (1..=3).contains(&array.elems.len()) => {
                array.elems.iter().cloned().collect()
            }
            other => {
                errors.spanned(
                    other,
                    "expected an array of one to three dimensions, like `[16, 16]`",
                );
                continue;
            }
        };
        if pair.path.is_ident(WORKGROUP_SIZE) {
            workgroup = Some((elements, Span::of(&pair.value)));
        } else if pair.path.is_ident(GRID) {
            grid = Some(elements);
        } else {
            errors.spanned(&pair.path, format!("unknown kernel argument; {usage}"));
        }
    }
    let Some((workgroup, workgroup_span)) = workgroup else {
        errors.spanned(attr, format!("the kernel needs a workgroup size; {usage}"));
        return None;
    };
    let Some(grid) = grid else {
        errors.spanned(attr, format!("the kernel needs a dispatch grid; {usage}"));
        return None;
    };
    let mut workgroup_size = [1u32; 3];
    for (slot, element) in workgroup_size.iter_mut().zip(&workgroup) {
        match element {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(int),
                ..
            }) if int.base10_parse::<u32>().is_ok_and(|n| n > 0) => {
                *slot = int.base10_parse().unwrap_or(1);
            }
            other => errors.spanned(other, "a workgroup size must be a positive integer literal"),
        }
    }
    Some(KernelArgs {
        workgroup_size,
        workgroup_span,
        grid,
    })
}

/// A `#[kernel]` function. Returns `None` when its attribute cannot be read.
pub fn kernel(
    function: &syn::ItemFn,
    attr: &syn::Attribute,
    params: &[ir::ParamsStruct],
    errors: &mut Errors,
) -> Option<ir::Kernel> {
    check_plain_signature(&function.sig, errors);
    if let syn::ReturnType::Type(_, ret) = &function.sig.output {
        errors.spanned(
            ret,
            "a kernel returns nothing; write its results into a `&mut [T]` parameter",
        );
    }
    let args = kernel_args(attr, errors);
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
    let body = body::block(&function.block, errors);
    let args = args?;
    let grid = args
        .grid
        .iter()
        .filter_map(|expr| host::host_expr(expr, uniform.as_ref(), true, errors))
        .collect();
    Some(ir::Kernel {
        name: function.sig.ident.clone(),
        docs: doc_lines(&function.attrs),
        workgroup_size: args.workgroup_size,
        workgroup_span: args.workgroup_span,
        grid,
        bindings,
        shared,
        rejected_params,
        body,
        locals: Vec::new(),
    })
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
        "f32" | "u32" | "i32" => ty::scalar(&ident).map(Ty::Scalar),
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
