//! One launcher per family: its members' launchers, built together; one `NameArgs` struct
//! of the bindings the family declares; and one `record` that checks the buffers of every
//! member it launches and then records their dispatches in the declared order, each with its
//! own grid, into one batch (one submission). A member that uses an optional binding the
//! caller left out is not launched.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::ir::{Binding, BindingKind, Family, FamilyBinding, Kernel, Module};

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
    let fields = family.bindings.iter().map(|declared| {
        let field = &declared.binding.name;
        let ty = super::launcher::field_ty(module, &declared.binding, None);
        let ty = if declared.optional {
            quote!(::core::option::Option<#ty>)
        } else {
            ty
        };
        let mut docs = declared.docs.clone();
        if !docs.is_empty() {
            docs.push(String::new());
        }
        docs.push(use_doc(declared, &members));
        quote!(#(#[doc = #docs])* pub #field: #ty,)
    });
    let slots: Vec<&syn::Ident> = members.iter().map(|k| &k.name).collect();
    let launchers: Vec<syn::Ident> = members.iter().map(|k| k.launcher_name()).collect();
    let member_docs = members.iter().map(|k| {
        format!(
            " The launcher of `{}`, to read its constants or launch it alone.",
            k.name
        )
    });
    let checks = members
        .iter()
        .map(|k| for_member(family, k, quote!(check_lengths(&member_args))));
    let records = members
        .iter()
        .map(|k| for_member(family, k, quote!(record(batch, member_args))));
    let order = family
        .members
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut docs = family.docs.clone();
    if !docs.is_empty() {
        docs.push(String::new());
    }
    docs.push(format!(
        " The kernels {order} of `{}` as one family over the bindings of [`{args_ty}`], \
         launched in this order as ordered passes of one submission, each with its own grid.",
        module.name
    ));
    let args_doc = format!(" The bindings of [`{name}`], declared once for all of its kernels.");
    quote_spanned! {Span::call_site()=>
        #(#[doc = #docs])*
        #[derive(Clone, Debug)]
        pub struct #name {
            #(#slots: #launchers,)*
        }

        #[doc = #args_doc]
        pub struct #args_ty<'a> {
            #(#fields)*
        }

        impl #name {
            /// Makes every kernel of the family (each builds its pipelines at their first
            /// dispatch, or by its own `prepare`).
            pub fn new(rt: &#rt::Runtime) -> #rt::Result<Self> {
                Ok(Self { #(#slots: #launchers::new(rt)?,)* })
            }

            /// Builds every member's pipelines now instead of at their first dispatch (see
            /// a launcher's `prepare`).
            pub fn prepare(&self, rt: &#rt::Runtime) -> #rt::Result<()> {
                #(self.#slots.prepare(rt)?;)*
                Ok(())
            }

            /// The family of these launchers, e.g. of instances built with `with_constants`.
            pub fn from_members(#(#slots: #launchers),*) -> Self {
                Self { #(#slots,)* }
            }

            #(
                #[doc = #member_docs]
                pub fn #slots(&self) -> &#launchers {
                    &self.#slots
                }
            )*

            /// Checks the buffers of every kernel it launches, then queues them on the
            /// runtime, in order (see `Runtime::flush` for when queued dispatches run).
            pub fn launch(&self, rt: &#rt::Runtime, args: #args_ty<'_>) -> #rt::Result<()> {
                let mut batch = rt.batch();
                self.record(&mut batch, args)?;
                batch.enqueue()
            }

            /// Checks the buffers of every kernel it launches against what `args` imply,
            /// recording nothing: for a caller that records other work before the family
            /// and wants every buffer checked first. (`&mut` only lends the writable
            /// buffers to each kernel's check.)
            pub fn check_lengths(&self, args: &mut #args_ty<'_>) -> #rt::Result<()> {
                let _ = &args;
                #(#checks)*
                Ok(())
            }

            /// Checks the buffers of every kernel it launches, then records them into `batch`,
            /// in order. A kernel that uses an optional binding left as `None` is skipped.
            pub fn record(&self, batch: &mut #rt::Batch<'_>, mut args: #args_ty<'_>) -> #rt::Result<()> {
                self.check_lengths(&mut args)?;
                #(#records)*
                Ok(())
            }
        }

        impl #rt::Prepare for #name {
            fn prepare(&self, rt: &#rt::Runtime) -> #rt::Result<()> {
                Self::prepare(self, rt)
            }
        }
    }
}

/// `call` on the member's launcher with its arguments (`member_args`) taken from the family's,
/// `&mut` ones reborrowed, inside `if let` when the member uses optional bindings.
fn for_member(family: &Family, member: &Kernel, call: TokenStream) -> TokenStream {
    let slot = &member.name;
    let args_ty = member.args_name();
    let mut optional_names = Vec::new();
    let mut optional_values = Vec::new();
    let values = member.bindings().iter().filter_map(|binding| {
        let declared = family.binding(&binding.name)?;
        let field = &binding.name;
        let value = reborrow(binding, declared, quote!(args.#field), declared.optional);
        if declared.optional {
            // A local of its own name could hide `batch` or `member_args` below.
            let local = quote::format_ident!("__tessera_{}", syn::ext::IdentExt::unraw(field));
            optional_names.push(local.clone());
            optional_values.push(value);
            Some(quote!(#field: #local))
        } else {
            Some(quote!(#field: #value))
        }
    });
    let mut values: Vec<TokenStream> = values.collect();
    if member.bindings().is_empty() {
        values.push(quote!(_lifetime: ::core::marker::PhantomData));
    }
    let body = quote! {
        let member_args = #args_ty { #(#values),* };
        self.#slot.#call?;
    };
    if optional_names.is_empty() {
        quote!({ #body })
    } else {
        quote! {
            if let (#(::core::option::Option::Some(#optional_names),)*) = (#(#optional_values,)*) {
                #body
            }
        }
    }
}

/// The family's argument `value` as the member takes it: `&mut` ones reborrowed, writable
/// ones the member only reads lent shared.
fn reborrow(
    member: &Binding,
    declared: &FamilyBinding,
    value: TokenStream,
    optional: bool,
) -> TokenStream {
    let writable = |b: &Binding| matches!(b.kind, BindingKind::Storage { writable: true, .. });
    match (writable(member), writable(&declared.binding), optional) {
        (true, _, false) => quote!(&mut *#value),
        (true, _, true) => quote!(#value.as_deref_mut()),
        (false, true, false) => quote!(&*#value),
        (false, true, true) => quote!(#value.as_deref()),
        (false, false, _) => value,
    }
}

/// Which members write and read a binding, and what leaving it out skips.
fn use_doc(declared: &FamilyBinding, members: &[&Kernel]) -> String {
    let name = &declared.binding.name;
    let list = |writes: bool| {
        members
            .iter()
            .filter(|k| {
                k.bindings().iter().any(|b| {
                    b.name == *name
                        && matches!(b.kind, BindingKind::Storage { writable: true, .. }) == writes
                })
            })
            .map(|k| format!("`{}`", k.name))
            .collect::<Vec<_>>()
    };
    let (writers, readers) = (list(true), list(false));
    let mut parts = Vec::new();
    if !writers.is_empty() {
        parts.push(format!("written by {}", writers.join(", ")));
    }
    if !readers.is_empty() {
        parts.push(format!("read by {}", readers.join(", ")));
    }
    let mut text = if parts.is_empty() {
        " Used by no kernel of the family.".to_owned()
    } else {
        let joined = parts.join("; ");
        format!(" {}{}.", joined[..1].to_uppercase(), &joined[1..])
    };
    if declared.optional {
        let users: Vec<String> = writers.into_iter().chain(readers).collect();
        text.push_str(&format!(
            " Optional: with `None`, {} {} not launched.",
            users.join(", "),
            if users.len() == 1 { "is" } else { "are" }
        ));
    }
    text
}
