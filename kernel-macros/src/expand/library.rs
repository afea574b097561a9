//! Device-function libraries across modules and crates, by a `macro_rules!` callback.
//!
//! A proc macro sees only its own input, so a library hands its items to the modules that
//! import it through a macro of its own:
//!
//! 1. `#[tessera::device] mod name { .. }` ([`device`]) checks what it can alone, keeps the
//!    constants (and `use` items) for the host, and defines a hidden `#[macro_export]`
//!    `macro_rules!` that repeats its items, reachable by path as
//!    `path::to::name::tessera_device_library!`.
//! 2. `#[kernels] mod m { #[device] use path::to::name; .. }` ([`next_import`]) expands to a
//!    call of that macro, passing the whole module along.
//! 3. The library's macro calls back `::tessera::__private::import!` ([`import`]) with the module
//!    and its items; the items take the place of the `use` (as `#[device(from = path)] mod name
//!    { .. }`), and the module is expanded again: the next import, or the kernels themselves.
//!
//! Tokens keep their spans through every step, so a mistake is reported in the crate where it
//! was written: in the library, or at the caller's tokens.

use proc_macro2::{Punct, Spacing, TokenStream, TokenTree};
use quote::quote;
use syn::parse::{Parse, ParseStream};

use crate::compile::compile;
use crate::diag::Errors;
use crate::parse::library::{self, Library};

/// The name a library's macro is reachable by, inside the library's module.
const LIBRARY_MACRO: &str = "tessera_device_library";

/// `#[tessera::device] mod name { .. }`.
pub fn device(args: TokenStream, input: TokenStream) -> TokenStream {
    let item = match super::read_module(&args, input) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Errors::default();
    if !args.is_empty() {
        errors.spanned(
            &args,
            "`#[tessera::device]` takes no arguments: a library's helpers take their element \
             type and constants from the kernels that call them",
        );
    }
    let Some((_, items)) = item.content.clone() else {
        errors.spanned(
            &item,
            "`#[tessera::device]` needs the module's items inline: `mod name { ... }`",
        );
        return super::compile_errors(errors);
    };
    let library = library::library(items, &mut errors);
    check_alone(&item, &library, &mut errors);
    let tokens = library_tokens(&item, &library);
    let errors = super::compile_errors(errors);
    quote! { #errors #tokens }
}

/// Compiles the library's constants and the helpers it can check alone (see
/// [`library::checkable_alone`]) as a kernels module without kernels, so their mistakes are
/// reported once, here, rather than in every crate that imports them.
fn check_alone(item: &syn::ItemMod, library: &Library, errors: &mut Errors) {
    let name = &item.ident;
    let consts = &library.consts;
    let functions = library::checkable_alone(library);
    let module: syn::ItemMod = syn::parse_quote! {
        mod #name { #(#consts)* #(#functions)* }
    };
    compile(TokenStream::new(), module, errors);
}

/// The library's module for Rust: its `use` items and constants, the list of its device
/// functions in its docs, and the macro that hands its items to importing modules.
fn library_tokens(item: &syn::ItemMod, library: &Library) -> TokenStream {
    let syn::ItemMod {
        attrs, vis, ident, ..
    } = item;
    let uses = &library.uses;
    let consts = &library.consts;
    let functions = &library.functions;
    let unique = unique_name(item);
    let reachable = syn::Ident::new(LIBRARY_MACRO, proc_macro2::Span::call_site());
    let dollar = || TokenTree::Punct(Punct::new('$', Spacing::Alone));
    let (d1, d2, d3, d4) = (dollar(), dollar(), dollar(), dollar());
    let listing = function_docs(functions);
    quote! {
        #(#attrs)*
        #(#[doc = #listing])*
        #vis mod #ident {
            #(#uses)*
            #(#[allow(dead_code)] #consts)*

            #[doc(hidden)]
            #[macro_export]
            macro_rules! #unique {
                (#d1 (#d2 caller:tt)*) => {
                    ::tessera::__private::import! { #d3 (#d4 caller)* { #(#consts)* #(#functions)* } }
                };
            }

            #[doc(hidden)]
            pub use #unique as #reachable;
        }
    }
}

/// A crate-wide name for a library's macro (`#[macro_export]` puts it at the crate's root):
/// the module's name and a hash of its tokens.
fn unique_name(item: &syn::ItemMod) -> syn::Ident {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    quote::ToTokens::to_token_stream(item)
        .to_string()
        .hash(&mut hasher);
    syn::Ident::new(
        &format!("__tessera_device_{}_{:016x}", item.ident, hasher.finish()),
        proc_macro2::Span::call_site(),
    )
}

/// Lines for the library's rustdoc: each device function's signature and the first line of
/// its docs (the functions are WGSL, not Rust items, so rustdoc would not list them).
fn function_docs(functions: &[syn::ItemFn]) -> Vec<String> {
    if functions.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        " # Device functions".to_owned(),
        String::new(),
    ];
    for function in functions {
        let signature = signature_text(quote::ToTokens::to_token_stream(&function.sig));
        let summary = function
            .attrs
            .iter()
            .find_map(doc_text)
            .map(|d| format!(": {}", d.trim()))
            .unwrap_or_default();
        lines.push(format!(" - `{signature}`{summary}"));
    }
    lines
}

fn doc_text(attr: &syn::Attribute) -> Option<String> {
    let syn::Meta::NameValue(meta) = &attr.meta else {
        return None;
    };
    if !meta.path.is_ident("doc") {
        return None;
    }
    match &meta.value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) => Some(text.value()),
        _ => None,
    }
}

/// Tokens printed as rustfmt would space them, for the few shapes a signature has:
/// `fn sum(x: &mut [f32; N], i: u32) -> f32`.
fn signature_text(tokens: TokenStream) -> String {
    let mut out = String::new();
    let mut previous: Option<TokenTree> = None;
    for token in tokens {
        let space = match (&previous, &token) {
            (None, _) => false,
            (Some(TokenTree::Punct(p)), _) if p.spacing() == Spacing::Joint => false,
            // After `,`, `;`, a lone `:` and the `>` of `->`; not after `::` or a generic's `>`.
            (Some(TokenTree::Punct(p)), _) => match p.as_char() {
                ',' | ';' => true,
                ':' => !out.ends_with("::"),
                '>' => out.ends_with("->"),
                _ => false,
            },
            (Some(_), TokenTree::Punct(p)) => p.as_char() == '-',
            (Some(TokenTree::Ident(i)), TokenTree::Group(g)) => {
                g.delimiter() != proc_macro2::Delimiter::Parenthesis || i == "mut"
            }
            (Some(TokenTree::Group(_)), _) => true,
            (Some(_), _) => true,
        };
        if space {
            out.push(' ');
        }
        match &token {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::Brace => ("{", "}"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                out.push_str(open);
                out.push_str(&signature_text(group.stream()));
                out.push_str(close);
            }
            other => out.push_str(&other.to_string()),
        }
        previous = Some(token);
    }
    out
}

/// The module's first import that is still a `#[device] use`, as the call of its library's
/// macro that resolves it; `None` when every import is resolved (or malformed, which the
/// parser reports).
pub fn next_import(args: &TokenStream, module: &syn::ItemMod) -> Option<TokenStream> {
    let (_, items) = module.content.as_ref()?;
    let path = items
        .iter()
        .find_map(|item| library::import_path(item).and_then(Result::ok))?;
    let from_parent = match library::from_parent(&path) {
        Ok(from_parent) => from_parent,
        Err(error) => return Some(error.to_compile_error()),
    };
    let reachable = syn::Ident::new(LIBRARY_MACRO, path_span(&path));
    Some(quote! {
        #from_parent :: #reachable ! { { #args } #path #module }
    })
}

/// The span of the path's last segment, where rustc reports a path that is no library.
fn path_span(path: &syn::Path) -> proc_macro2::Span {
    path.segments
        .last()
        .map_or_else(proc_macro2::Span::call_site, |s| s.ident.span())
}

/// What a library's macro hands back: `{ args } path module { library items }`.
struct Callback {
    args: TokenStream,
    path: syn::Path,
    module: syn::ItemMod,
    items: Vec<syn::Item>,
}

impl Parse for Callback {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let args;
        syn::braced!(args in input);
        let args = args.parse()?;
        let path = input.call(syn::Path::parse_mod_style)?;
        let module = input.parse()?;
        let content;
        syn::braced!(content in input);
        let mut items = Vec::new();
        while !content.is_empty() {
            items.push(content.parse()?);
        }
        Ok(Callback {
            args,
            path,
            module,
            items,
        })
    }
}

/// `::tessera::__private::import!`, called back by a library's macro: puts the library's items
/// in place of its `#[device] use`, then expands the module again.
pub fn import(input: TokenStream) -> TokenStream {
    let Callback {
        args,
        path,
        mut module,
        items,
    } = match syn::parse2(input) {
        Ok(callback) => callback,
        Err(error) => return error.to_compile_error(),
    };
    if let Some((_, module_items)) = &mut module.content {
        let at = module_items.iter().position(|item| {
            library::import_path(item).is_some_and(|p| p.is_ok_and(|p| p == path))
        });
        if let Some(at) = at {
            let name = path.segments.last().map_or_else(
                || syn::Ident::new("library", path_span(&path)),
                |s| s.ident.clone(),
            );
            let marker = library::resolved_marker(&path);
            module_items[at] = syn::parse_quote! {
                #marker
                mod #name { #(#items)* }
            };
        }
    }
    super::kernels_module(args, module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_listed_as_rust_writes_them() {
        let function: syn::ItemFn = syn::parse_quote! {
            fn workgroup_sum(tile: &mut [f32; GROUP], i: u32, x: Vec4<f32>, f: FragC16<f32>) -> f32 { 0.0 }
        };
        assert_eq!(
            signature_text(quote::ToTokens::to_token_stream(&function.sig)),
            "fn workgroup_sum(tile: &mut [f32; GROUP], i: u32, x: Vec4<f32>, f: FragC16<f32>) -> f32"
        );
        let function: syn::ItemFn = syn::parse_quote! { fn nudge(x: T) { } };
        assert_eq!(
            signature_text(quote::ToTokens::to_token_stream(&function.sig)),
            "fn nudge(x: T)"
        );
    }
}
