//! Families -> IR: `#[family(first, second, ..)] struct Name { bindings }` declares the
//! bindings (and their `#[len]`) of kernels launched together, once; each member then takes
//! the bindings it uses by name, without repeating their lengths.

use crate::diag::Errors;
use crate::ir::{self, Span};
use crate::parse::consts::Consts;
use crate::parse::keywords::{FAMILY, LEN, WORKGROUP_MEMORY};
use crate::parse::{host, kernel, names};

/// The `#[family(..)]` attribute of `item`, if it has one.
pub fn family_attr(item: &syn::ItemStruct) -> Option<&syn::Attribute> {
    item.attrs.iter().find(|a| a.path().is_ident(FAMILY))
}

/// A family struct; its lengths may use the module's constants (`consts`), not those of a
/// set, whose instances differ between members. Bindings that cannot be read are reported
/// and left out.
pub fn family(
    item: &syn::ItemStruct,
    params: &[ir::ParamsStruct],
    consts: &Consts,
    errors: &mut Errors,
) -> Option<ir::Family> {
    let attr = family_attr(item)?;
    let members = match attr.parse_args_with(
        syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
    ) {
        Ok(members) if !members.is_empty() => members.into_iter().collect(),
        Ok(_) => {
            errors.spanned(attr, usage());
            return None;
        }
        Err(error) => {
            errors.push(syn::Error::new(error.span(), usage()));
            return None;
        }
    };
    let syn::Fields::Named(fields) = &item.fields else {
        errors.spanned(
            &item.fields,
            "a family declares its bindings as named fields: `struct Name { p: &Params, \
             #[len(p.n)] x: &[f32] }`",
        );
        return None;
    };
    let mut declared = Vec::new();
    let mut lens = Vec::new();
    let mut names = names::Declared::default();
    for field in &fields.named {
        let Some(name) = field.ident.clone() else {
            continue;
        };
        if !names.declare(&name, "binding", errors) {
            continue;
        }
        if let Some((binding, len)) = family_binding(field, name, params, errors) {
            if let Some(len) = len {
                lens.push((declared.len(), len));
            }
            declared.push(binding);
        }
    }
    let uniform = declared.iter().find_map(|b: &ir::FamilyBinding| {
        matches!(b.binding.kind, ir::BindingKind::Uniform { .. }).then(|| b.binding.name.clone())
    });
    for (index, expr) in lens {
        let Some(expr) = consts.apply(&expr).map_err(|e| errors.push(e)).ok() else {
            continue;
        };
        declared[index].binding.len =
            host::host_expr(&expr, uniform.as_ref(), host::Place::FamilyLen, errors);
    }
    Some(ir::Family {
        name: item.ident.clone(),
        docs: kernel::doc_lines(&item.attrs),
        members,
        bindings: declared,
    })
}

fn usage() -> String {
    "list the family's kernels in launch order: `#[family(first, second)]`".to_owned()
}

fn family_binding(
    field: &syn::Field,
    name: syn::Ident,
    params: &[ir::ParamsStruct],
    errors: &mut Errors,
) -> Option<(ir::FamilyBinding, Option<syn::Expr>)> {
    let mut len = None;
    for attr in &field.attrs {
        if attr.path().is_ident(LEN) {
            len = attr
                .parse_args::<syn::Expr>()
                .map_err(|error| errors.push(error))
                .ok();
        } else if attr.path().is_ident(WORKGROUP_MEMORY) {
            errors.spanned(
                attr,
                "workgroup arrays belong to the kernels that use them: declare `#[workgroup] \
                 name: &mut [T; N]` as a parameter of the member kernel instead",
            );
            return None;
        } else if !attr.path().is_ident("doc") {
            errors.spanned(
                attr,
                "unknown attribute; a family's bindings accept `#[len(expr)]` and doc comments",
            );
        }
    }
    let (ty, optional) = match optional_inner(&field.ty) {
        Some(inner) => (inner, true),
        None => (&field.ty, false),
    };
    let kind = kernel::binding_kind(ty, params)
        .map_err(|error| errors.push(error))
        .ok()?;
    if matches!(kind, ir::BindingKind::Uniform { .. }) {
        if optional {
            errors.spanned(
                &field.ty,
                "the parameters cannot be optional; take `&P`, or make the buffers that depend \
                 on them optional",
            );
            return None;
        }
        if let Some(expr) = &len {
            errors.spanned(
                expr,
                "`#[len]` belongs on storage bindings (`&[T]`, `&mut [T]`)",
            );
            len = None;
        }
    }
    let binding = ir::Binding {
        name,
        kind,
        len: None,
        span: Span::of(field),
        host: ir::HostElement::Fixed,
    };
    let declared = ir::FamilyBinding {
        binding,
        optional,
        docs: kernel::doc_lines(&field.attrs),
    };
    Some((declared, len))
}

/// `T` of `Option<T>`.
fn optional_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Option" || path.qself.is_some() {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            syn::GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}
