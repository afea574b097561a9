//! Host expressions (grid sizes, buffer lengths) -> Rust evaluating them in `u64` with
//! saturating arithmetic, so no parameter values can make a launcher panic or wrap.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ir::{HostExpr, HostFn, HostOp, ParamsStruct, Scalar, Ty};

/// Rust tokens computing `expr` as a `u64`; `args` is the launcher's argument struct and
/// `uniform` the name and struct of its `Params` field.
pub fn tokens(expr: &HostExpr, uniform: Option<(&syn::Ident, &ParamsStruct)>) -> TokenStream {
    match expr {
        HostExpr::Lit(value) => quote! { #value },
        HostExpr::Field { field, .. } => {
            let Some((name, params)) = uniform else {
                return quote! { 0u64 };
            };
            let signed = params
                .fields
                .iter()
                .any(|f| f.name == *field && f.ty == Ty::Scalar(Scalar::I32));
            if signed {
                quote! { (args.#name.#field.max(0) as u64) }
            } else {
                quote! { (args.#name.#field as u64) }
            }
        }
        HostExpr::Len { binding, .. } => quote! { (args.#binding.len() as u64) },
        // Grid and length expressions arrive with constants replaced by their values.
        HostExpr::Const(name) => quote! { (#name as u64) },
        HostExpr::Binary(op, a, b) => {
            let (a, b) = (tokens(a, uniform), tokens(b, uniform));
            match op {
                HostOp::Add => quote! { #a.saturating_add(#b) },
                HostOp::Sub => quote! { #a.saturating_sub(#b) },
                HostOp::Mul => quote! { #a.saturating_mul(#b) },
                HostOp::Div => quote! { #a.checked_div(#b).unwrap_or(0) },
                HostOp::Rem => quote! { #a.checked_rem(#b).unwrap_or(0) },
            }
        }
        HostExpr::Call(function, a, b) => {
            let (a, b) = (tokens(a, uniform), tokens(b, uniform));
            match function {
                HostFn::CeilDiv => quote! { ::tessera::__private::ceil_div(#a, #b) },
                HostFn::Min => quote! { ::core::cmp::min(#a, #b) },
                HostFn::Max => quote! { ::core::cmp::max(#a, #b) },
            }
        }
    }
}
