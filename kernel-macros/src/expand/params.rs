//! `#[derive(Params)]`: implements `bytemuck::Pod` for the struct once its layout is proven
//! equal to WGSL's uniform layout, and asserts the offsets at compile time as well.

use proc_macro2::TokenStream;
use quote::quote;

use crate::check::layout;
use crate::diag::Errors;
use crate::parse::params;

pub fn derive_params(input: TokenStream) -> TokenStream {
    if let Err(error) = crate::parse::nesting::tokens(input.clone()) {
        return error.to_compile_error();
    }
    let item: syn::ItemStruct = match syn::parse2(input) {
        Ok(item) => item,
        Err(error) => {
            return syn::Error::new(
                error.span(),
                "`#[derive(Params)]` applies to structs with named fields",
            )
            .to_compile_error()
        }
    };
    let mut errors = Errors::default();
    let parsed = params::params_struct(&item, &mut errors);
    layout::check(&parsed, &mut errors);
    let name = &item.ident;
    if let Err(error) = errors.finish() {
        let error = error.to_compile_error();
        // The crate does not compile with the error; the impls keep each use of the struct
        // as a kernel's parameters from adding an error of its own.
        let impls = item.generics.params.is_empty().then(|| pod_impls(name));
        return quote!(#error #impls);
    }
    let offsets = layout::offsets(&parsed);
    let assertions = parsed.fields.iter().zip(&offsets).map(|(field, at)| {
        let field = &field.name;
        let offset = at.wgsl as usize;
        quote! { assert!(::core::mem::offset_of!(#name, #field) == #offset); }
    });
    let pods = pod_impls(name);
    quote! {
        const _: () = {
            #(#assertions)*
        };
        // SAFETY: the struct is `repr(C)`, its fields are 4-byte `Pod` scalars or arrays of
        // them laid out without padding (checked above and by the macro), so every bit
        // pattern is valid and there are no uninitialised bytes.
        #pods
    }
}

fn pod_impls(name: &syn::Ident) -> TokenStream {
    quote! {
        unsafe impl ::tessera::__private::bytemuck::Zeroable for #name {}
        unsafe impl ::tessera::__private::bytemuck::Pod for #name {}
    }
}
