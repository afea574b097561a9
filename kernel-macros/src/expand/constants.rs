//! One host type per set of constants: a struct of the constants that identify an instance
//! (`Blocking { reg: 8 }`), `ALL` instances, and a `const fn` per derived constant computing it
//! from the identity the same way the kernels do, so host code never re-spells a value.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::ir::{ConstantSet, HostExpr, HostOp};

/// The Rust field or method name of the constant `name`: `BLOCK` -> `block`, `TYPE` ->
/// `r#type` (`parse` refuses the names that give `self`, `super` or `crate`).
pub fn member(name: &Ident) -> Ident {
    let member = crate::parse::names::constant_member(name);
    match syn::parse_str::<Ident>(&member) {
        Ok(mut ident) => {
            ident.set_span(name.span());
            ident
        }
        Err(_) if !matches!(member.as_str(), "self" | "super" | "crate" | "Self" | "_") => {
            Ident::new_raw(&member, name.span())
        }
        Err(_) => quote::format_ident!("{member}_", span = name.span()),
    }
}

pub fn set(set: &ConstantSet) -> TokenStream {
    let name = &set.name;
    let fields: Vec<Ident> = set.identity.iter().map(member).collect();
    let field_docs: Vec<String> = set.identity.iter().map(|c| format!("`{c}`")).collect();
    let instances = set
        .instances
        .iter()
        .map(|values| quote!(#name { #(#fields: #values),* }));
    let derived = set.derived.iter().map(|(constant, expr)| {
        let method = member(constant);
        let value = tokens(expr, set);
        let doc = format!("`{constant}`, derived from the identifying constants.");
        quote! {
            #[doc = #doc]
            pub const fn #method(&self) -> u32 {
                #value
            }
        }
    });
    let docs = &set.docs;
    let summary = set
        .instances
        .iter()
        .map(|values| {
            let pairs: Vec<String> = set
                .identity
                .iter()
                .zip(values)
                .map(|(c, v)| format!("{c} = {v}"))
                .collect();
            format!("`{}`", pairs.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let instances_doc = format!("Every declared instance, in order: {summary}.");
    quote! {
        #(#[doc = #docs])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct #name {
            #(#[doc = #field_docs] pub #fields: u32,)*
        }

        impl #name {
            #[doc = #instances_doc]
            pub const ALL: &'static [#name] = &[#(#instances),*];

            #(#derived)*
        }
    }
}

/// A derived constant's expression as `u32` arithmetic on `self` (wrapping, and 0 for a
/// division by zero, so a value outside the declared instances cannot panic).
fn tokens(expr: &HostExpr, set: &ConstantSet) -> TokenStream {
    match expr {
        HostExpr::Lit(value) => {
            let value = u32::try_from(*value).unwrap_or(u32::MAX);
            quote!(#value)
        }
        HostExpr::Const(name) if set.identity.contains(name) => {
            let field = member(name);
            quote!(self.#field)
        }
        HostExpr::Const(name) => {
            let method = member(name);
            quote!(self.#method())
        }
        HostExpr::Binary(op, a, b) => {
            let (a, b) = (tokens(a, set), tokens(b, set));
            match op {
                HostOp::Add => quote!((#a).wrapping_add(#b)),
                HostOp::Sub => quote!((#a).wrapping_sub(#b)),
                HostOp::Mul => quote!((#a).wrapping_mul(#b)),
                HostOp::Div => quote!(match #b { 0 => 0, divisor => (#a) / divisor }),
                HostOp::Rem => quote!(match #b { 0 => 0, divisor => (#a) % divisor }),
            }
        }
        // Derived expressions hold only literals, constants and arithmetic.
        HostExpr::Field { .. } | HostExpr::Len { .. } | HostExpr::Call(..) => quote!(0u32),
    }
}
