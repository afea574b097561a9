//! Device-function libraries, as the parser sees them.
//!
//! - A library is `#[tessera::device] mod name { .. }`: constants, helpers (plain `fn`s),
//!   `#[derive(Params)]` structs and sets of constants (`#[constants(..)] pub struct Name;`),
//!   written as in a kernels module, the libraries it imports, and kernels and families that
//!   each kernels module importing it takes as its own ([`Library::kernels`]). [`library`] reads one;
//!   [`checkable_alone`] says which of its helpers its own crate can check, [`sets`] reads its
//!   sets.
//! - A kernels module, or a library, imports one with `#[device] use path::to::name;`
//!   ([`import_path`]). The library's items reach the importer through the library's
//!   `macro_rules!` callback (see `expand/library.rs`) and stand in its place as
//!   `#[device(from = path)] mod name { groups }` ([`imported`]): one group per library the
//!   items were declared in (the imported one first, then those it imports), each
//!   `#[device(origin = "..")] mod name { items }` ([`Group`]). `parse/imports.rs` merges them
//!   into the importer's names.
//!
//! Nothing here knows WGSL or emits tokens.

use crate::diag::Errors;
use crate::ir::{
    self,
    builtins::{self, Form},
};
use crate::parse::consts::{self, Consts};
use crate::parse::keywords::{DEVICE, KERNEL};
use crate::parse::params;

/// What `#[device] use ..` and the library's own attribute say: `device`.
fn is_device(attr: &syn::Attribute) -> bool {
    attr.path().is_ident(DEVICE)
}

/// The items of a library: its constants, helpers, parameter structs and sets of constants, in
/// order, the `use` items that pass through to Rust, the libraries it imports, resolved, and
/// its kernels.
#[derive(Default)]
pub struct Library {
    pub consts: Vec<syn::ItemConst>,
    pub functions: Vec<syn::ItemFn>,
    pub structs: Vec<syn::ItemStruct>,
    pub sets: Vec<syn::ItemStruct>,
    pub uses: Vec<syn::ItemUse>,
    pub imports: Vec<Import>,
    /// `#[kernel]` functions and `#[family]` structs, in order: not compiled here, they travel
    /// to each kernels module that imports the library directly, which compiles them as its
    /// own (launchers and WGSL). A library importing this one does not get them.
    pub kernels: Vec<syn::Item>,
}

/// A resolved `#[device] use path;`: the path as written, and the items it brought, by the
/// library that declared them.
#[derive(Clone)]
pub struct Import {
    pub path: syn::Path,
    pub groups: Vec<Group>,
}

impl Import {
    /// The path as the user wrote it, for messages: `super::tiling`.
    pub fn written(&self) -> String {
        quote::ToTokens::to_token_stream(&self.path)
            .to_string()
            .replace(' ', "")
    }
}

/// The items one library declared, as they travel: `origin` tells the library apart from any
/// other (so that its items, reaching a module by two imports, are one), `name` is its
/// module's name.
#[derive(Clone)]
pub struct Group {
    pub origin: String,
    pub name: syn::Ident,
    pub items: Vec<syn::Item>,
}

impl Group {
    /// The group as it travels: `#[device(origin = "..")] mod name { items }`.
    pub fn to_item(&self) -> syn::Item {
        let Group {
            origin,
            name,
            items,
        } = self;
        syn::parse_quote! {
            #[device(origin = #origin)]
            mod #name { #(#items)* }
        }
    }

    /// The group an item stands for, when it is one (see [`Group::to_item`]).
    fn of(item: &syn::Item) -> Option<Group> {
        let syn::Item::Mod(module) = item else {
            return None;
        };
        let attr = module.attrs.iter().find(|a| is_device(a))?;
        let mut origin = None;
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("origin") {
                origin = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            }
            Ok(())
        })
        .ok()?;
        let (_, items) = module.content.clone()?;
        Some(Group {
            origin: origin?,
            name: module.ident.clone(),
            items,
        })
    }
}

/// Reads the items of `#[tessera::device] mod name { items }` once its imports are resolved;
/// anything a library cannot hold is reported at its tokens and left out.
pub fn library(items: Vec<syn::Item>, errors: &mut Errors) -> Library {
    let mut library = Library::default();
    for item in items {
        if let Some(import) = imported(&item) {
            library.imports.push(import);
            continue;
        }
        if let Some(path) = import_path(&item) {
            match path {
                Err(error) => errors.push(error),
                Ok(path) => errors.spanned(
                    path,
                    "this library's items did not reach the library that imports it: \
                     `#[device] use` is resolved by the `#[tessera::device]` attribute, and \
                     this is a bug in tessera",
                ),
            }
            continue;
        }
        match item {
            syn::Item::Const(constant) => library.consts.push(constant),
            syn::Item::Fn(function) if is_kernel(&function) => {
                library.kernels.push(syn::Item::Fn(function));
            }
            syn::Item::Fn(function) => library.functions.push(function),
            syn::Item::Struct(item) if super::family::family_attr(&item).is_some() => {
                library.kernels.push(syn::Item::Struct(item));
            }
            syn::Item::Struct(item) if super::is_constant_set(&item) => {
                // Kept when hidden (reported): the kernels naming it then add no errors.
                report_hidden_set(&item, errors);
                library.sets.push(item);
            }
            syn::Item::Struct(item) if params::is_params(&item) => {
                if library_struct_is_visible(&item, errors) {
                    library.structs.push(item);
                }
            }
            syn::Item::Struct(item) => errors.spanned(
                &item.ident,
                format!(
                    "a device library's structs are kernels' parameters, sets of constants or \
                     families: derive `Params` (`#[repr(C)] #[derive(Clone, Copy, \
                     tessera::Params)] pub struct {} {{ .. }}`), declare a set \
                     (`#[constants(NAME = [..])] pub struct {0};`), or move this struct out of \
                     the library",
                    item.ident
                ),
            ),
            syn::Item::Use(item) => library.uses.push(item),
            other => errors.spanned(
                &other,
                "a device library holds helper functions, constants, `#[derive(Params)]` \
                 structs, sets of constants, kernels, families and `use` items; move this item \
                 out of the library",
            ),
        }
    }
    library
}

/// Reports a library's set of constants that cannot be named where the library is imported
/// (see [`is_hidden`]): the host picks its kernels' instances with it there, and a library that
/// imports this one re-exports it with its visibility.
fn report_hidden_set(item: &syn::ItemStruct, errors: &mut Errors) {
    let name = &item.ident;
    if is_hidden(&item.vis) {
        errors.spanned(
            name,
            format!(
                "`{name}` names the instances of kernels in every module that imports this \
                 library, so it must be visible there: write `pub struct {name};` (or \
                 `pub(crate) struct {name};` for a library of this crate only)"
            ),
        );
    }
}

/// Whether an item of a library cannot be named where the library is imported: neither `pub`
/// nor `pub(crate)`.
fn is_hidden(vis: &syn::Visibility) -> bool {
    match vis {
        syn::Visibility::Public(_) => false,
        syn::Visibility::Restricted(restricted) => !restricted.path.is_ident("crate"),
        syn::Visibility::Inherited => true,
    }
}

/// Whether a library's `Params` struct, and each of its fields, can be named where the library
/// is imported: `pub`, or `pub(crate)` for a library of the crate only. The host builds the
/// struct, and the launchers of every importing module read its fields; a struct that is not is
/// reported and left out.
fn library_struct_is_visible(item: &syn::ItemStruct, errors: &mut Errors) -> bool {
    let name = &item.ident;
    if is_hidden(&item.vis) {
        errors.spanned(
            name,
            format!(
                "`{name}` is a kernel's parameter type in every module that imports this \
                 library, so it must be visible there: write `pub struct {name}` (or \
                 `pub(crate) struct {name}` for a library of this crate only)"
            ),
        );
        return false;
    }
    let mut visible = true;
    for field in &item.fields {
        if let Some(field_name) = field.ident.as_ref().filter(|_| is_hidden(&field.vis)) {
            errors.spanned(
                field_name,
                format!(
                    "the host sets `{field_name}`, and the launchers of the modules that \
                     import this library read it: write `pub {field_name}` (or \
                     `pub(crate) {field_name}` for a library of this crate only)"
                ),
            );
            visible = false;
        }
    }
    visible
}

/// The library's sets of constants, each read with the library's constants and its imports'
/// (so a derived constant may use them), its mistakes reported at the library's tokens.
pub fn sets(library: &Library, errors: &mut Errors) -> Vec<ir::ConstantSet> {
    let imported = library
        .imports
        .iter()
        .flat_map(|import| &import.groups)
        .flat_map(|group| &group.items)
        .filter_map(|item| match item {
            syn::Item::Const(constant) => Some(constant),
            _ => None,
        });
    let mut consts = Consts::default();
    // The constants' own mistakes are reported where the library is checked alone.
    let mut reported = Errors::default();
    for constant in imported.chain(&library.consts) {
        let value = consts::module_const(constant, &consts, &mut reported)
            .unwrap_or_else(|| consts::stand_in(&constant.ty));
        consts = consts.with(&constant.ident.to_string(), value);
    }
    library
        .sets
        .iter()
        .filter_map(|item| super::constant_set(item, &consts, ir::SetHome::Library, errors))
        .map(|(set, _)| set)
        .collect()
}

fn is_kernel(function: &syn::ItemFn) -> bool {
    function.attrs.iter().any(|a| a.path().is_ident(KERNEL))
}

/// Whether an item travels as a library's kernel: a `#[kernel]` function or a `#[family]`.
pub fn is_kernel_item(item: &syn::Item) -> bool {
    match item {
        syn::Item::Fn(function) => is_kernel(function),
        syn::Item::Struct(item) => super::family::family_attr(item).is_some(),
        _ => false,
    }
}

impl Import {
    /// The import without the imported libraries' kernels and families: what a library that
    /// imports another keeps (kernels go only to kernels modules, see [`Library::kernels`]).
    pub fn without_kernels(mut self) -> Import {
        for group in &mut self.groups {
            group.items.retain(|item| !is_kernel_item(item));
        }
        self
    }
}

/// The library's helpers that its own crate can check: those that name, directly or through
/// the helpers they call (its own or its imports'), no constant or type of the library's
/// callers. A helper over the caller's element type `T`, or sized by the caller's `BLOCK`, is
/// checked where a kernel calls it, with that kernel's values. Constants are told apart from
/// locals by Rust's naming convention: an UPPER_CASE name that neither the library nor its
/// imports declare is the caller's.
pub fn checkable_alone(library: &Library) -> Vec<&syn::ItemFn> {
    let imported = library
        .imports
        .iter()
        .flat_map(|import| &import.groups)
        .flat_map(|group| &group.items);
    let imported_consts = imported.clone().filter_map(|item| match item {
        syn::Item::Const(constant) => Some(constant),
        _ => None,
    });
    let imported_functions = imported.filter_map(|item| match item {
        syn::Item::Fn(function) => Some(function),
        _ => None,
    });
    let own: Vec<String> = library
        .consts
        .iter()
        .chain(imported_consts)
        .map(|c| c.ident.to_string())
        .collect();
    // The library's own helpers first: the result is the first `library.functions.len()`.
    let functions: Vec<&syn::ItemFn> = library.functions.iter().chain(imported_functions).collect();
    let names = |f: &syn::ItemFn| {
        let mut idents = Vec::new();
        idents_outside_paths(quote::ToTokens::to_token_stream(f), &mut idents);
        idents
    };
    let mut deferred: Vec<bool> = functions
        .iter()
        .map(|f| {
            names(f)
                .iter()
                .any(|n| is_upper_case(n) && !own.contains(n))
        })
        .collect();
    // A helper calling a deferred helper is deferred too.
    let mut changed = true;
    while changed {
        changed = false;
        for (i, function) in functions.iter().enumerate() {
            if deferred[i] {
                continue;
            }
            let calls_deferred = names(function).iter().any(|n| {
                functions
                    .iter()
                    .position(|g| g.sig.ident == n)
                    .is_some_and(|j| deferred[j])
            });
            if calls_deferred {
                deferred[i] = true;
                changed = true;
            }
        }
    }
    functions
        .into_iter()
        .zip(deferred)
        .take(library.functions.len())
        .filter(|(_, deferred)| !deferred)
        .map(|(f, _)| f)
        .collect()
}

/// The calls in the library's deferred helpers (those [`checkable_alone`] leaves to the
/// caller) of a function that is neither a helper of the library or its imports nor a
/// builtin: the library would take it from whichever module imports it, so it is a mistake
/// where it was written. The checked helpers' calls are checked with the rest of them.
pub fn unknown_calls(library: &Library) -> Vec<&syn::Ident> {
    use syn::visit::Visit;
    struct Calls<'a>(Vec<&'a syn::Ident>);
    impl<'a> Visit<'a> for Calls<'a> {
        fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
            if let syn::Expr::Path(path) = &*call.func {
                if let Some(ident) = path.path.get_ident() {
                    self.0.push(ident);
                }
            }
            syn::visit::visit_expr_call(self, call);
        }
    }
    let imported = library
        .imports
        .iter()
        .flat_map(|import| &import.groups)
        .flat_map(|group| &group.items)
        .filter_map(|item| match item {
            syn::Item::Fn(function) => Some(&function.sig.ident),
            _ => None,
        });
    let helpers: Vec<&syn::Ident> = library
        .functions
        .iter()
        .map(|f| &f.sig.ident)
        .chain(imported)
        .collect();
    let checked = checkable_alone(library);
    let mut calls = Calls(Vec::new());
    for function in &library.functions {
        if !checked.iter().any(|c| std::ptr::eq(*c, function)) {
            calls.visit_item_fn(function);
        }
    }
    calls
        .0
        .into_iter()
        .filter(|name| {
            let key = name.to_string();
            // A capitalised name is a type or a generic parameter: the caller's check reads it.
            !key.starts_with(|c: char| c.is_ascii_uppercase())
                && !helpers.contains(name)
                && builtins::find(Form::Function, &key).is_none()
        })
        .collect()
}

/// `BLOCK`, `T`, `N2`: a name written as Rust writes constants and generic types.
fn is_upper_case(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The identifiers of `tokens` that do not follow `::` (so `f32::MAX` gives only `f32`).
fn idents_outside_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<String>) {
    let mut colons = 0;
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => {
                if colons < 2 {
                    out.push(ident.to_string());
                }
                colons = 0;
            }
            proc_macro2::TokenTree::Punct(punct) if punct.as_char() == ':' => colons += 1,
            proc_macro2::TokenTree::Group(group) => {
                idents_outside_paths(group.stream(), out);
                colons = 0;
            }
            _ => colons = 0,
        }
    }
}

/// The library a `#[device] use path;` item imports: `Some(Ok(path))`, `Some(Err(..))` when the
/// item is a `#[device] use` that names no single library, `None` for any other item.
pub fn import_path(item: &syn::Item) -> Option<Result<syn::Path, syn::Error>> {
    let syn::Item::Use(item) = item else {
        return None;
    };
    if !item.attrs.iter().any(is_device) {
        return None;
    }
    let mut segments = syn::punctuated::Punctuated::new();
    let mut tree = &item.tree;
    loop {
        match tree {
            syn::UseTree::Path(path) => {
                segments.push(syn::PathSegment::from(path.ident.clone()));
                tree = &path.tree;
            }
            syn::UseTree::Name(name) => {
                segments.push(syn::PathSegment::from(name.ident.clone()));
                break;
            }
            other => {
                return Some(Err(syn::Error::new_spanned(
                    other,
                    "`#[device] use` imports libraries by their paths, as in `#[device] use \
                     my_crate::reductions;` or `#[device] use my_crate::{reductions, scans};`, \
                     without globs or renames (their helpers and constants are then called by \
                     their names)",
                )))
            }
        }
    }
    Some(Ok(syn::Path {
        leading_colon: item.leading_colon,
        segments,
    }))
}

/// The module with each grouped import, `#[device] use a::{b::b, c::c};`, written as one
/// `#[device] use` a library (`#[device] use a::b::b; #[device] use a::c::c;`), in place and
/// in order, each keeping the tokens (and so the spans) the user wrote.
pub fn ungrouped(mut module: syn::ItemMod) -> syn::ItemMod {
    if let Some((_, items)) = &mut module.content {
        let grouped = std::mem::take(items);
        for item in grouped {
            match item {
                syn::Item::Use(item) if item.attrs.iter().any(is_device) => {
                    let mut trees = Vec::new();
                    flatten(&item.tree, &mut Vec::new(), &mut trees);
                    items.extend(trees.into_iter().map(|tree| {
                        syn::Item::Use(syn::ItemUse {
                            tree,
                            ..item.clone()
                        })
                    }));
                }
                other => items.push(other),
            }
        }
    }
    module
}

/// The paths of a use tree, one tree each: `a::{b, c::d}` gives `a::b` and `a::c::d`.
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<syn::UsePath>, out: &mut Vec<syn::UseTree>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.clone());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, out);
            }
        }
        leaf => {
            let tree = prefix.iter().rev().fold(leaf.clone(), |tree, path| {
                syn::UseTree::Path(syn::UsePath {
                    tree: Box::new(tree),
                    ..path.clone()
                })
            });
            out.push(tree);
        }
    }
}

/// The marker a resolved import carries: `#[device(from = path)] mod name { items }`, made by
/// the library's callback in place of the `#[device] use path;` item.
pub fn resolved_marker(path: &syn::Path) -> syn::Attribute {
    syn::parse_quote!(#[device(from = #path)])
}

/// The library an item stands for, when it is a resolved import: the path the user wrote and
/// the library's items, by origin.
pub fn imported(item: &syn::Item) -> Option<Import> {
    let syn::Item::Mod(module) = item else {
        return None;
    };
    let attr = module.attrs.iter().find(|a| is_device(a))?;
    let mut from = None;
    attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("from") {
            from = Some(meta.value()?.parse::<syn::Path>()?);
        }
        Ok(())
    })
    .ok()?;
    let (_, items) = module.content.as_ref()?;
    Some(Import {
        path: from?,
        groups: items.iter().filter_map(Group::of).collect(),
    })
}

/// Who imports a library: a kernels module, or the library named.
#[derive(Clone, Copy)]
pub enum Importer<'a> {
    Kernels,
    Library(&'a syn::Ident),
}

/// `path` as written inside the importer, made to resolve from the importer's parent, where the
/// call to the library's callback is emitted: `super::x` becomes `self::x`. A path into the
/// importer itself (`self::x`), or a library's path to itself, cannot be: `Err` at it.
pub fn from_parent(path: &syn::Path, importer: Importer<'_>) -> Result<syn::Path, syn::Error> {
    let mut path = path.clone();
    let first = path.segments.first().map(|s| s.ident.to_string());
    let relative = path.leading_colon.is_none();
    if let Importer::Library(name) = importer {
        let itself = path.segments.len() == 2 && path.segments[1].ident == *name;
        if relative && first.as_deref() == Some("super") && itself {
            return Err(syn::Error::new_spanned(
                &path,
                format!(
                    "`{name}` imports itself; a library's own helpers, constants and structs \
                     are already its own: remove this `#[device] use`"
                ),
            ));
        }
    }
    match first.as_deref() {
        Some("self") if relative => Err(syn::Error::new_spanned(
            &path,
            match importer {
                Importer::Kernels => {
                    "a device library cannot live inside the kernels module that imports it; \
                     declare it beside the module (`#[tessera::device] mod name { .. }`) and \
                     import it with `#[device] use super::name;`"
                }
                Importer::Library(_) => {
                    "a device library cannot live inside the library that imports it; declare \
                     it beside that library (`#[tessera::device] mod name { .. }`) and import \
                     it with `#[device] use super::name;`"
                }
            },
        )),
        Some("super") if relative => {
            let first = path
                .segments
                .first_mut()
                .expect("the path has a first segment");
            first.ident = syn::Ident::new("self", first.ident.span());
            // `super::super::x` from the module is `super::x` from its parent.
            if path
                .segments
                .iter()
                .nth(1)
                .is_some_and(|s| s.ident == "super")
            {
                path.segments = path.segments.into_iter().skip(1).collect();
            }
            Ok(path)
        }
        _ => Ok(path),
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    /// The library read from `module` (a whole `mod`), and the messages of its errors.
    fn library_with_errors(module: syn::ItemMod) -> (Library, Vec<String>) {
        let mut errors = Errors::default();
        let library = library(module.content.unwrap().1, &mut errors);
        let messages = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(errors) => errors.into_iter().map(|e| e.to_string()).collect(),
        };
        (library, messages)
    }

    fn library_of(tokens: proc_macro2::TokenStream) -> Library {
        let module: syn::ItemMod = syn::parse2(tokens).unwrap();
        let mut errors = Errors::default();
        let library = library(module.content.unwrap().1, &mut errors);
        assert!(errors.is_empty());
        library
    }

    #[test]
    fn helpers_naming_their_callers_constants_or_types_wait_for_a_caller() {
        let library = library_of(quote! {
            mod lib {
                const OWN: u32 = 4;
                fn alone(x: f32) -> f32 { x * (OWN as f32) + f32::MAX }
                fn sized(t: &[f32; GROUP]) -> f32 { t[0] }
                fn typed(x: T) -> T { x }
                fn through(t: &[f32; GROUP]) -> f32 { sized(t) }
                fn also_alone(x: f32) -> f32 { alone(x) }
            }
        });
        let names: Vec<String> = checkable_alone(&library)
            .iter()
            .map(|f| f.sig.ident.to_string())
            .collect();
        assert_eq!(names, ["alone", "also_alone"]);
    }

    #[test]
    fn an_import_names_one_library_by_its_path() {
        let item: syn::Item = syn::parse_quote!(
            #[device]
            use my_crate::reductions;
        );
        let path = import_path(&item).unwrap().unwrap();
        assert_eq!(quote!(#path).to_string(), "my_crate :: reductions");
        let item: syn::Item = syn::parse_quote!(
            #[device]
            use my_crate::{a, b};
        );
        assert!(import_path(&item).unwrap().is_err());
        let item: syn::Item = syn::parse_quote!(
            use my_crate::a;
        );
        assert!(import_path(&item).is_none());
    }

    #[test]
    fn paths_are_made_to_resolve_from_the_modules_parent() {
        let from = |path: syn::Path| {
            from_parent(&path, Importer::Kernels).map(|p| quote!(#p).to_string().replace(' ', ""))
        };
        assert_eq!(from(syn::parse_quote!(super::lib)).unwrap(), "self::lib");
        assert_eq!(
            from(syn::parse_quote!(super::super::lib)).unwrap(),
            "super::lib"
        );
        assert_eq!(
            from(syn::parse_quote!(crate::a::lib)).unwrap(),
            "crate::a::lib"
        );
        assert_eq!(from(syn::parse_quote!(other::lib)).unwrap(), "other::lib");
        assert!(from(syn::parse_quote!(self::lib)).is_err());
        let lib: syn::Ident = syn::parse_quote!(lib);
        let path: syn::Path = syn::parse_quote!(super::lib);
        assert!(from_parent(&path, Importer::Library(&lib)).is_err());
        let path: syn::Path = syn::parse_quote!(super::other);
        assert!(from_parent(&path, Importer::Library(&lib)).is_ok());
    }

    #[test]
    fn a_library_holds_helpers_constants_params_structs_kernels_and_uses_only() {
        let module: syn::ItemMod = syn::parse_quote! {
            mod lib {
                #[kernel(workgroup = [1], grid = [1])]
                fn k(x: &mut [f32]) {}
                struct S;
                static X: u32 = 1;
                #[repr(C)]
                #[derive(Clone, Copy, tessera::Params)]
                pub struct P { pub n: u32 }
            }
        };
        let (library, messages) = library_with_errors(module);
        assert_eq!(library.structs.len(), 1);
        assert_eq!(library.kernels.len(), 1);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("a device library's structs are kernels' parameters"));
        assert!(messages[1].starts_with("a device library holds helper functions"));
    }

    #[test]
    fn a_librarys_params_struct_and_its_fields_are_visible_where_it_is_imported() {
        let module: syn::ItemMod = syn::parse_quote! {
            mod lib {
                #[derive(tessera::Params)]
                struct Hidden { pub n: u32 }
                #[derive(tessera::Params)]
                pub struct Sealed { n: u32, pub(crate) m: u32 }
                #[derive(tessera::Params)]
                pub(crate) struct Crate { pub(crate) n: u32 }
            }
        };
        let (library, messages) = library_with_errors(module);
        let kept: Vec<String> = library
            .structs
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        assert_eq!(kept, ["Crate"]);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("`Hidden` is a kernel's parameter type"));
        assert!(messages[1].starts_with("the host sets `n`"));
    }

    #[test]
    fn an_import_travels_as_groups_by_origin() {
        let group = Group {
            origin: "a-1".to_owned(),
            name: syn::parse_quote!(a),
            items: vec![syn::parse_quote!(
                const K: u32 = 1;
            )],
        };
        let inner = group.to_item();
        let marker = resolved_marker(&syn::parse_quote!(super::b));
        let item: syn::Item = syn::parse_quote!(#marker mod b { #inner });
        let import = imported(&item).unwrap();
        let path = &import.path;
        assert_eq!(quote!(#path).to_string(), "super :: b");
        assert_eq!(import.groups.len(), 1);
        assert_eq!(import.groups[0].origin, "a-1");
        assert_eq!(import.groups[0].name, "a");
        assert_eq!(import.groups[0].items.len(), 1);
    }

    #[test]
    fn a_helper_calling_an_imported_helper_over_the_callers_constants_waits_too() {
        let imported_items: Vec<syn::Item> = vec![
            syn::parse_quote!(
                const STEP: u32 = 2;
            ),
            syn::parse_quote!(
                fn stepped(x: u32) -> u32 {
                    x * STEP
                }
            ),
            syn::parse_quote!(
                fn sized(x: u32) -> u32 {
                    x * GROUP
                }
            ),
        ];
        let mut library = library_of(quote! {
            mod lib {
                fn alone(x: u32) -> u32 { stepped(x) + STEP }
                fn waits(x: u32) -> u32 { sized(x) }
            }
        });
        library.imports.push(Import {
            path: syn::parse_quote!(super::a),
            groups: vec![Group {
                origin: "a-1".to_owned(),
                name: syn::parse_quote!(a),
                items: imported_items,
            }],
        });
        let names: Vec<String> = checkable_alone(&library)
            .iter()
            .map(|f| f.sig.ident.to_string())
            .collect();
        assert_eq!(names, ["alone"]);
    }

    #[test]
    fn a_librarys_set_is_read_with_its_constants_and_checked_alone() {
        let library = library_of(quote! {
            mod lib {
                const LANES: u32 = 2;
                /// Tiles.
                #[constants(TILE = [4, 8], SPAN = TILE * LANES)]
                pub struct Tiling;
                #[constants(REG = [0, 2], BLOCK = REG * WIDE)]
                pub struct Blocking;
            }
        });
        assert_eq!(library.sets.len(), 2);
        let mut errors = Errors::default();
        let sets = sets(&library, &mut errors);
        assert_eq!(sets[0].name, "Tiling");
        assert_eq!(sets[0].instances, [vec![4], vec![8]]);
        assert_eq!(sets[0].docs, [" Tiles."]);
        // The library's `LANES` is its value in the host's `span()`.
        let (name, derived) = &sets[0].derived[0];
        assert_eq!(name, "SPAN");
        assert!(matches!(
            derived,
            ir::HostExpr::Binary(ir::HostOp::Mul, tile, lanes)
                if matches!(&**tile, ir::HostExpr::Const(c) if c == "TILE")
                    && matches!(**lanes, ir::HostExpr::Lit(2))
        ));
        let messages: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(messages[0].contains("`WIDE`"), "{messages:#?}");
    }

    #[test]
    fn a_librarys_set_is_visible_where_it_is_imported() {
        let module: syn::ItemMod = syn::parse_quote! {
            mod lib {
                #[constants(TILE = [4])]
                struct Hidden;
                #[constants(TILE = [4])]
                pub(crate) struct Crate;
            }
        };
        let (library, messages) = library_with_errors(module);
        assert_eq!(library.sets.len(), 2);
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(messages[0].starts_with("`Hidden` names the instances of kernels"));
    }
}
