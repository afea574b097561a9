//! Device-function libraries across modules and crates, by a `macro_rules!` callback.
//!
//! A proc macro sees only its own input, so a library hands its items to the modules that
//! import it through a macro of its own:
//!
//! 1. `#[tessera::device] mod name { .. }` ([`device`]) checks what it can alone, keeps the
//!    constants, `Params` structs, sets' host types and `use` items for the host, and defines a
//!    hidden `#[macro_export]` `macro_rules!` that repeats its items, reachable by path as
//!    `path::to::name::tessera_device_library!`.
//! 2. `#[kernels] mod m { #[device] use path::to::name; .. }` ([`next_import`]) expands to a
//!    call of that macro, passing the whole module along.
//! 3. The library's macro calls back `::tessera::__private::import!` ([`import`]) with the module
//!    and its items; the items take the place of the `use` (as `#[device(from = path)] mod name
//!    { .. }`), and the module is expanded again: the next import, or the kernels themselves.
//!
//! A library that imports another goes through the same steps first (its call is marked
//! `device`, so the callback expands a library again): once resolved, its macro repeats the
//! other library's items too, one group per library they were declared in, so that a module
//! importing it needs no path into a crate it may not name. It re-exports the other library's
//! structs, which the module then names through it.
//!
//! Tokens keep their spans through every step, so a mistake is reported in the crate where it
//! was written: in the library, or at the caller's tokens.

use proc_macro2::{Punct, Spacing, TokenStream, TokenTree};
use quote::quote;
use syn::parse::{Parse, ParseStream};

use crate::compile::compile;
use crate::diag::Errors;
use crate::ir::ConstantSet;
use crate::parse::imports;
use crate::parse::library::{self, Group, Import, Importer, Library};

/// The name a library's macro is reachable by, inside the library's module.
const LIBRARY_MACRO: &str = "tessera_device_library";

/// What a library's call of another library's macro starts with, so that the callback expands
/// a library again rather than a kernels module.
const LIBRARY_CALLER: &str = "device";

/// `#[tessera::device] mod name { .. }`.
pub fn device(args: TokenStream, input: TokenStream) -> TokenStream {
    match super::read_module(&args, input) {
        Ok(item) => device_module(args, item),
        Err(error) => error.to_compile_error(),
    }
}

/// A library read: the call that fetches the next library it imports, or, once each is in,
/// the library checked and its tokens.
fn device_module(args: TokenStream, item: syn::ItemMod) -> TokenStream {
    if let Some(call) = next_import(&args, &item, Importer::Library(&item.ident)) {
        return call;
    }
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
    let mut library = library::library(items, &mut errors);
    library.imports = std::mem::take(&mut library.imports)
        .into_iter()
        .map(Import::without_kernels)
        .collect();
    library.imports = distinct_imports(&item.ident, &library, &mut errors);
    check_alone(&item, &library, &mut errors);
    let sets = library::sets(&library, &mut errors);
    let tokens = library_tokens(&item, &library, &sets);
    let errors = super::compile_errors(errors);
    quote! { #errors #tokens }
}

/// The library's imports, with each name once (see [`imports::distinct`]).
fn distinct_imports(name: &syn::Ident, library: &Library, errors: &mut Errors) -> Vec<Import> {
    let own = imports::Own {
        values: library
            .functions
            .iter()
            .map(|f| f.sig.ident.to_string())
            .chain(library.consts.iter().map(|c| c.ident.to_string()))
            .chain(library.kernels.iter().filter_map(|item| match item {
                syn::Item::Fn(kernel) => Some(kernel.sig.ident.to_string()),
                _ => None,
            }))
            .collect(),
        types: library
            .structs
            .iter()
            .chain(&library.sets)
            .chain(library.kernels.iter().filter_map(|item| match item {
                syn::Item::Struct(family) => Some(family),
                _ => None,
            }))
            .map(|s| s.ident.to_string())
            .chain(library.uses.iter().flat_map(imports::use_names))
            .collect(),
    };
    let imports = library.imports.clone();
    imports::distinct(Importer::Library(name), own, imports, errors)
}

/// Compiles the library's constants, structs and the helpers it can check alone (see
/// [`library::checkable_alone`]), beside its imports, as a kernels module without kernels, so
/// their mistakes are reported once, here, rather than in every crate that imports them.
fn check_alone(item: &syn::ItemMod, library: &Library, errors: &mut Errors) {
    let name = &item.ident;
    let consts = &library.consts;
    let structs = &library.structs;
    let functions = library::checkable_alone(library);
    let imports = library.imports.iter().map(import_item);
    let module: syn::ItemMod = syn::parse_quote! {
        mod #name { #(#consts)* #(#structs)* #(#functions)* #(#imports)* }
    };
    compile(TokenStream::new(), module, errors);
    for name in library::unknown_calls(library) {
        errors.at(
            name.span(),
            format!(
                "cannot find function `{name}` in library `{lib}`; call a helper defined in \
                 `{lib}`, in a library it imports with `#[device] use`, or a builtin",
                lib = item.ident
            ),
        );
    }
}

/// A resolved import as the importer's parser reads it: `#[device(from = path)] mod name
/// { groups }`.
fn import_item(import: &Import) -> syn::Item {
    let path = &import.path;
    let marker = library::resolved_marker(path);
    let name = import_name(path);
    let groups = import.groups.iter().map(Group::to_item);
    syn::parse_quote! {
        #marker
        mod #name { #(#groups)* }
    }
}

/// The name of a resolved import's module: the path's last segment.
fn import_name(path: &syn::Path) -> syn::Ident {
    path.segments.last().map_or_else(
        || syn::Ident::new("library", path_span(path)),
        |s| s.ident.clone(),
    )
}

/// The library's module for Rust: its `use` items, constants, structs and the host types of its
/// sets of constants, a re-export of each struct and set its imports bring, the list of its
/// device functions in its docs, and the macro that hands its items (and its imports') to
/// importing modules.
fn library_tokens(item: &syn::ItemMod, library: &Library, sets: &[ConstantSet]) -> TokenStream {
    let syn::ItemMod {
        attrs, vis, ident, ..
    } = item;
    let uses = &library.uses;
    let consts = &library.consts;
    let structs = &library.structs;
    let functions = &library.functions;
    let unique = unique_name(item);
    let own = Group {
        origin: unique.to_string(),
        name: ident.clone(),
        items: consts
            .iter()
            .cloned()
            .map(syn::Item::Const)
            .chain(structs.iter().cloned().map(syn::Item::Struct))
            .chain(library.sets.iter().cloned().map(syn::Item::Struct))
            .chain(functions.iter().cloned().map(syn::Item::Fn))
            .chain(library.kernels.iter().cloned())
            .collect(),
    };
    let groups = std::iter::once(own.to_item()).chain(
        library
            .imports
            .iter()
            .flat_map(|import| import.groups.iter().map(Group::to_item)),
    );
    let reexports = library.imports.iter().flat_map(reexports);
    let set_types = sets.iter().map(super::constants::set);
    let reachable = syn::Ident::new(LIBRARY_MACRO, proc_macro2::Span::call_site());
    let dollar = || TokenTree::Punct(Punct::new('$', Spacing::Alone));
    let (d1, d2, d3, d4) = (dollar(), dollar(), dollar(), dollar());
    let mut listing = function_docs(functions);
    listing.extend(kernel_docs(&library.kernels));
    listing.extend(import_docs(&library.imports));
    quote! {
        #(#attrs)*
        #(#[doc = #listing])*
        #vis mod #ident {
            #(#uses)*
            #(#[allow(dead_code)] #consts)*
            #(#structs)*
            #(#set_types)*
            #(#reexports)*

            #[doc(hidden)]
            #[macro_export]
            macro_rules! #unique {
                (#d1 (#d2 caller:tt)*) => {
                    ::tessera::__private::import! { #d3 (#d4 caller)* { #(#groups)* } }
                };
            }

            #[doc(hidden)]
            pub use #unique as #reachable;
        }
    }
}

/// `use path::Name;` for each struct (or set of constants) an import brings, with its
/// visibility: a module importing this library names it through it (`this_library::Name`),
/// whichever crate declared it.
fn reexports(import: &Import) -> Vec<TokenStream> {
    let path = &import.path;
    import
        .groups
        .iter()
        .flat_map(|group| &group.items)
        .filter_map(|item| match item {
            syn::Item::Struct(s) => Some(s),
            _ => None,
        })
        .map(|s| {
            let (vis, name) = (&s.vis, &s.ident);
            quote! {
                #[allow(unused_imports)]
                #vis use #path::#name;
            }
        })
        .collect()
}

/// A crate-wide name for a library's macro (`#[macro_export]` puts it at the crate's root):
/// the module's name and a hash of its tokens.
fn unique_name(item: &syn::ItemMod) -> syn::Ident {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    // The crate too: the name is the library's identity where its items meet (see
    // `parse::imports`), and two crates may hold the same tokens.
    std::env::var("CARGO_CRATE_NAME")
        .unwrap_or_default()
        .hash(&mut hasher);
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

/// Lines for the library's rustdoc naming its kernels and families, which each kernels module
/// importing it compiles as its own.
fn kernel_docs(kernels: &[syn::Item]) -> Vec<String> {
    if kernels.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        " # Kernels".to_owned(),
        String::new(),
        " Each kernels module that imports this library gets these as its own (launchers and \
         WGSL):"
            .to_owned(),
        String::new(),
    ];
    for item in kernels {
        let (name, kind, attrs) = match item {
            syn::Item::Fn(function) => (&function.sig.ident, "", &function.attrs),
            syn::Item::Struct(family) => (&family.ident, " (a family)", &family.attrs),
            _ => continue,
        };
        let summary = attrs
            .iter()
            .find_map(doc_text)
            .map(|d| format!(": {}", d.trim()))
            .unwrap_or_default();
        lines.push(format!(" - `{name}`{kind}{summary}"));
    }
    lines
}

/// Lines for the library's rustdoc naming the libraries it imports, whose items a module
/// importing this one gets too.
fn import_docs(imports: &[Import]) -> Vec<String> {
    if imports.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        " # Imported libraries".to_owned(),
        String::new(),
        " A module that imports this library gets their helpers, constants and structs too:"
            .to_owned(),
        String::new(),
    ];
    for import in imports {
        let path = signature_text(quote::ToTokens::to_token_stream(&import.path));
        lines.push(format!(" - `{path}`"));
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

/// The first import of a kernels module or library that is still a `#[device] use`, as the
/// call of its library's macro that resolves it; `None` when every import is resolved (or
/// malformed, which the parser reports).
pub fn next_import(
    args: &TokenStream,
    module: &syn::ItemMod,
    importer: Importer<'_>,
) -> Option<TokenStream> {
    let (_, items) = module.content.as_ref()?;
    let path = items
        .iter()
        .find_map(|item| library::import_path(item).and_then(Result::ok))?;
    let from_parent = match library::from_parent(&path, importer) {
        Ok(from_parent) => from_parent,
        Err(error) => return Some(error.to_compile_error()),
    };
    let reachable = syn::Ident::new(LIBRARY_MACRO, path_span(&path));
    let caller = match importer {
        Importer::Kernels => None,
        Importer::Library(_) => Some(syn::Ident::new(
            LIBRARY_CALLER,
            proc_macro2::Span::call_site(),
        )),
    };
    Some(quote! {
        #from_parent :: #reachable ! { #caller { #args } #path #module }
    })
}

/// The span of the path's last segment, where rustc reports a path that is no library.
fn path_span(path: &syn::Path) -> proc_macro2::Span {
    path.segments
        .last()
        .map_or_else(proc_macro2::Span::call_site, |s| s.ident.span())
}

/// What a library's macro hands back: `[device] { args } path module { groups }`.
struct Callback {
    /// Whether the importer is a library (the call starts with `device`).
    library: bool,
    args: TokenStream,
    path: syn::Path,
    module: syn::ItemMod,
    items: Vec<syn::Item>,
}

impl Parse for Callback {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let library = input.peek(syn::Ident);
        if library {
            input.parse::<syn::Ident>()?;
        }
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
            library,
            args,
            path,
            module,
            items,
        })
    }
}

/// `::tessera::__private::import!`, called back by a library's macro: puts the library's items
/// in place of its `#[device] use`, then expands the kernels module, or the library, again.
pub fn import(input: TokenStream) -> TokenStream {
    let Callback {
        library,
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
            let name = import_name(&path);
            let marker = library::resolved_marker(&path);
            module_items[at] = syn::parse_quote! {
                #marker
                mod #name { #(#items)* }
            };
        }
    }
    match library {
        true => device_module(args, module),
        false => super::kernels_module(args, module),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_librarys_imports_are_listed_by_their_paths() {
        let import = Import {
            path: syn::parse_quote!(super::activations),
            groups: Vec::new(),
        };
        let lines = import_docs(&[import]);
        assert_eq!(lines.last().unwrap(), " - `super::activations`");
        assert!(import_docs(&[]).is_empty());
    }

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
