//! One launcher per family: its members' launchers, built together, and one `record` that
//! checks every member's buffers and then records the members' dispatches in the declared
//! order, each with its own grid, into one batch (one submission).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::ir::{BindingKind, Family, Kernel, Module};

pub fn family(module: &Module, family: &Family) -> TokenStream {
    let members: Option<Vec<&Kernel>> = family
        .members
        .iter()
        .map(|m| module.kernels.iter().find(|k| k.name == *m))
        .collect();
    let Some(members) = members.filter(|m| !m.is_empty()) else {
        return TokenStream::new();
    };
    let rt = quote!(::tessera::__private::kernel_runtime);
    let name = &family.name;
    let args_ty = syn::Ident::new(&format!("{name}Args"), name.span());
    let first = members[0];
    let fields: Vec<&syn::Ident> = first.bindings.iter().map(|b| &b.name).collect();
    let field_tys: Vec<TokenStream> = first
        .bindings
        .iter()
        .map(|b| member_field_ty(module, b))
        .collect();
    let slots: Vec<&syn::Ident> = members.iter().map(|k| &k.name).collect();
    let launchers: Vec<syn::Ident> = members.iter().map(|k| k.launcher_name()).collect();
    // Each member gets the family's arguments again, `&mut` ones reborrowed.
    let member_args: Vec<TokenStream> = members
        .iter()
        .map(|k| {
            let member_args = k.args_name();
            let values = first.bindings.iter().map(|b| {
                let field = &b.name;
                match b.kind {
                    BindingKind::Storage { writable: true, .. } => {
                        quote!(#field: &mut *args.#field)
                    }
                    _ => quote!(#field: args.#field),
                }
            });
            quote!(#member_args { #(#values),* })
        })
        .collect();
    let order = family
        .members
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let doc = format!(
        "The kernels {order} of `{}` as one family: one set of bindings, launched in this order as \
         ordered passes of one submission, each with its own grid.",
        module.name
    );
    let args_doc = format!("The arguments of [`{name}`], shared by all of its kernels.");
    quote_spanned! {Span::call_site()=>
        #[doc = #doc]
        #[derive(Clone, Debug)]
        pub struct #name {
            #(#slots: #launchers,)*
        }

        #[doc = #args_doc]
        pub struct #args_ty<'a> {
            #(#[allow(missing_docs)] pub #fields: #field_tys,)*
        }

        impl #name {
            /// Builds every kernel of the family.
            pub fn new(rt: &#rt::Runtime) -> #rt::Result<Self> {
                Ok(Self { #(#slots: #launchers::new(rt)?,)* })
            }

            /// The family of these launchers, e.g. of instances built with `with_constants`.
            pub fn from_members(#(#slots: #launchers),*) -> Self {
                Self { #(#slots,)* }
            }

            /// Checks every kernel's buffers, then dispatches all of them now, in order, as
            /// one submission (without waiting for it).
            pub fn launch(&self, rt: &#rt::Runtime, args: #args_ty<'_>) -> #rt::Result<()> {
                let mut batch = rt.batch();
                self.record(&mut batch, args)?;
                batch.submit()
            }

            /// Checks every kernel's buffers, then records all of them into `batch`, in order.
            pub fn record(&self, batch: &mut #rt::Batch<'_>, mut args: #args_ty<'_>) -> #rt::Result<()> {
                let _ = &mut args;
                #(self.#slots.check_lengths(&#member_args)?;)*
                #(self.#slots.record(batch, #member_args)?;)*
                Ok(())
            }
        }
    }
}

fn member_field_ty(module: &Module, binding: &crate::ir::Binding) -> TokenStream {
    super::launcher::field_ty(module, binding)
}
