//! `#[derive(Params)]` structs -> [`ir::ParamsStruct`]: fields of scalars and vectors.

use crate::diag::Errors;
use crate::ir::{self, Ty};
use crate::parse::keywords::PARAMS_DERIVE;

/// Whether `item` derives `Params`.
pub fn is_params(item: &syn::ItemStruct) -> bool {
    item.attrs.iter().any(|attr| {
        attr.path().is_ident("derive")
            && attr
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|paths| {
                    paths
                        .iter()
                        .any(|p| p.segments.last().is_some_and(|s| s.ident == PARAMS_DERIVE))
                })
    })
}

/// Reads the struct's fields. A field of an unsupported type is reported and left out.
pub fn params_struct(item: &syn::ItemStruct, errors: &mut Errors) -> ir::ParamsStruct {
    let repr_c = item.attrs.iter().any(|attr| {
        attr.path().is_ident("repr")
            && attr
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|reprs| reprs.iter().any(|r| r == "C"))
    });
    if !item.generics.params.is_empty() {
        errors.spanned(&item.generics, "a `Params` struct cannot be generic");
    }
    let syn::Fields::Named(named) = &item.fields else {
        errors.spanned(
            &item.fields,
            "a `Params` struct needs named fields: `struct P { n: u32 }`",
        );
        return ir::ParamsStruct {
            name: item.ident.clone(),
            fields: Vec::new(),
            refused: Vec::new(),
            repr_c,
        };
    };
    let mut fields = Vec::new();
    let mut refused = Vec::new();
    for field in &named.named {
        let Some(name) = field.ident.clone() else {
            continue;
        };
        if fields.iter().any(|f: &ir::ParamsField| f.name == name) || refused.contains(&name) {
            errors.spanned(
                &name,
                format!("`{name}` is already a field of this struct; give this one another name"),
            );
            continue;
        }
        match field_ty(&field.ty) {
            Ok(ty) => fields.push(ir::ParamsField {
                name,
                ty,
                span: ir::Span::of(&field.ty),
            }),
            Err(error) => {
                errors.push(error);
                refused.push(name);
            }
        }
    }
    ir::ParamsStruct {
        name: item.ident.clone(),
        fields,
        refused,
        repr_c,
    }
}

/// `ty` as the user would write it: its tokens without the spaces token printing puts around
/// `<`, `>`, `,`, `;` and `::` (`Vec4<f32>`, not `Vec4 < f32 >`).
fn spelled(ty: &syn::Type) -> String {
    let text = quote::ToTokens::to_token_stream(ty).to_string();
    [
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        (" ;", ";"),
        (" :: ", "::"),
    ]
    .iter()
    .fold(text, |text, (from, to)| text.replace(from, to))
}

/// A field type: `f32`, `u32`, `i32`, or `[T; 2..=4]` of those, which WGSL sees as `vecN<T>`.
fn field_ty(ty: &syn::Type) -> syn::Result<Ty> {
    let unsupported = || {
        let written = spelled(ty);
        syn::Error::new_spanned(
            ty,
            format!(
                "a `Params` field cannot be `{written}`: WGSL's uniforms hold `f32`, `u32`, \
                 `i32`, and arrays `[T; 2]`, `[T; 3]` or `[T; 4]` of those (WGSL vectors)"
            ),
        )
    };
    let text = quote::ToTokens::to_token_stream(ty).to_string();
    if text.contains("usize") || text.contains("f16") {
        return Err(unsupported());
    }
    match super::ty::value_ty(ty).map_err(|_| unsupported())? {
        Ty::Scalar(s) if s.is_numeric() => Ok(Ty::Scalar(s)),
        Ty::Array(element, n @ 2..=4) => match *element {
            Ty::Scalar(s) if s.is_numeric() => Ok(Ty::Vector(n as u8, s)),
            _ => Err(unsupported()),
        },
        _ => Err(unsupported()),
    }
}
