//! Device-function libraries, as the parser sees them.
//!
//! - A library is `#[tessera::device] mod name { .. }`: constants and helpers (plain `fn`s),
//!   written as in a kernels module. [`library`] reads one; [`checkable_alone`] says which of
//!   its helpers its own crate can check.
//! - A kernels module imports one with `#[device] use path::to::name;` ([`import_path`]). The
//!   library's items reach the module through the library's `macro_rules!` callback (see
//!   `expand/library.rs`) and stand in its place as `#[device(from = path)] mod name { .. }`
//!   ([`imported`]), which the module's parser reads as helpers and constants of its own.
//!
//! Nothing here knows WGSL or emits tokens.

use crate::diag::Errors;
use crate::parse::keywords::{DEVICE, KERNEL};

/// What `#[device] use ..` and the library's own attribute say: `device`.
fn is_device(attr: &syn::Attribute) -> bool {
    attr.path().is_ident(DEVICE)
}

/// The items of a library: its constants and helpers, in order, and the `use` items that pass
/// through to Rust.
pub struct Library {
    pub consts: Vec<syn::ItemConst>,
    pub functions: Vec<syn::ItemFn>,
    pub uses: Vec<syn::ItemUse>,
}

/// Reads the items of `#[tessera::device] mod name { items }`; anything a library cannot hold is
/// reported at its tokens and left out.
pub fn library(items: Vec<syn::Item>, errors: &mut Errors) -> Library {
    let mut library = Library {
        consts: Vec::new(),
        functions: Vec::new(),
        uses: Vec::new(),
    };
    for item in items {
        match item {
            syn::Item::Const(constant) => library.consts.push(constant),
            syn::Item::Fn(function) if is_kernel(&function) => errors.spanned(
                &function.sig.ident,
                "a device library holds helpers and constants; a `#[kernel]` belongs in a \
                 `#[tessera::kernels]` module, which imports the library with `#[device] use`",
            ),
            syn::Item::Fn(function) => library.functions.push(function),
            syn::Item::Use(item) if item.attrs.iter().any(is_device) => errors.spanned(
                &item,
                "a device library cannot import another one yet; import both in the kernels \
                 module that uses them",
            ),
            syn::Item::Use(item) => library.uses.push(item),
            other => errors.spanned(
                &other,
                "a device library holds helper functions, constants and `use` items; its \
                 helpers take the caller's parameter structs and memory as arguments, so move \
                 this item out of the library",
            ),
        }
    }
    library
}

fn is_kernel(function: &syn::ItemFn) -> bool {
    function.attrs.iter().any(|a| a.path().is_ident(KERNEL))
}

/// The library's helpers that its own crate can check: those that name, directly or through
/// the helpers they call, no constant or type of the library's callers. A helper over the
/// caller's element type `T`, or sized by the caller's `BLOCK`, is checked where a kernel
/// calls it, with that kernel's values. Constants are told apart from locals by Rust's naming
/// convention: an UPPER_CASE name that the library does not declare is the caller's.
pub fn checkable_alone(library: &Library) -> Vec<&syn::ItemFn> {
    let own: Vec<String> = library.consts.iter().map(|c| c.ident.to_string()).collect();
    let names = |f: &syn::ItemFn| {
        let mut idents = Vec::new();
        idents_outside_paths(quote::ToTokens::to_token_stream(f), &mut idents);
        idents
    };
    let mut deferred: Vec<bool> = library
        .functions
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
        for (i, function) in library.functions.iter().enumerate() {
            if deferred[i] {
                continue;
            }
            let calls_deferred = names(function).iter().any(|n| {
                library
                    .functions
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
    library
        .functions
        .iter()
        .zip(deferred)
        .filter(|(_, deferred)| !deferred)
        .map(|(f, _)| f)
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
                    "`#[device] use` imports one library by its path, as in `#[device] use \
                     my_crate::reductions;`; write one such item per library (its helpers and \
                     constants are then called by their names)",
                )))
            }
        }
    }
    Some(Ok(syn::Path {
        leading_colon: item.leading_colon,
        segments,
    }))
}

/// The marker a resolved import carries: `#[device(from = path)] mod name { items }`, made by
/// the library's callback in place of the `#[device] use path;` item.
pub fn resolved_marker(path: &syn::Path) -> syn::Attribute {
    syn::parse_quote!(#[device(from = #path)])
}

/// The library an item stands for, when it is a resolved import: the path the user wrote and
/// the library's items.
pub fn imported(item: &syn::Item) -> Option<(syn::Path, Vec<syn::Item>)> {
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
    let (_, items) = module.content.clone()?;
    Some((from?, items))
}

/// `path` as written inside a kernels module, made to resolve from the module's parent, where
/// the call to the library's callback is emitted: `super::x` becomes `self::x`. A path into
/// the kernels module itself (`self::x`) cannot be: `Err` at it.
pub fn from_parent(path: &syn::Path) -> Result<syn::Path, syn::Error> {
    let mut path = path.clone();
    let first = path.segments.first().map(|s| s.ident.to_string());
    match first.as_deref() {
        Some("self") if path.leading_colon.is_none() => Err(syn::Error::new_spanned(
            &path,
            "a device library cannot live inside the kernels module that imports it; declare \
             it beside the module (`#[tessera::device] mod name { .. }`) and import it with \
             `#[device] use super::name;`",
        )),
        Some("super") if path.leading_colon.is_none() => {
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

/// The imports' items whose names the module, or an earlier import, does not already have; the
/// others are reported at their import and left out (a library's helpers call each other by
/// name, so neither may shadow the other).
pub fn distinct_imports(
    own: &[syn::ItemFn],
    own_consts: &[String],
    imports: Vec<(syn::Path, Vec<syn::Item>)>,
    errors: &mut Errors,
) -> Vec<syn::Item> {
    let mut taken: Vec<(String, Option<String>)> = own
        .iter()
        .map(|f| f.sig.ident.to_string())
        .chain(own_consts.iter().cloned())
        .map(|n| (n, None))
        .collect();
    let mut distinct = Vec::new();
    for (path, items) in imports {
        let written = quote::ToTokens::to_token_stream(&path)
            .to_string()
            .replace(' ', "");
        for item in items {
            let Some(name) = item_name(&item).map(ToString::to_string) else {
                continue;
            };
            match taken.iter().find(|(n, _)| *n == name) {
                Some((_, Some(other))) => errors.spanned(
                    &path,
                    format!(
                        "`{name}` is in both `{other}` and `{written}`; a kernels module can \
                         import only one of two libraries that share a name"
                    ),
                ),
                Some((_, None)) => errors.spanned(
                    &path,
                    format!(
                        "`{name}` is in this library and in the kernels module; rename the \
                         module's, since the library's helpers may call theirs by name"
                    ),
                ),
                None => {
                    taken.push((name, Some(written.clone())));
                    distinct.push(item);
                }
            }
        }
    }
    distinct
}

fn item_name(item: &syn::Item) -> Option<&syn::Ident> {
    match item {
        syn::Item::Fn(f) => Some(&f.sig.ident),
        syn::Item::Const(c) => Some(&c.ident),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

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
        let from =
            |path: syn::Path| from_parent(&path).map(|p| quote!(#p).to_string().replace(' ', ""));
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
    }

    #[test]
    fn a_library_holds_helpers_constants_and_uses_only() {
        let module: syn::ItemMod = syn::parse_quote! {
            mod lib {
                #[kernel(workgroup = [1], grid = [1])]
                fn k(x: &mut [f32]) {}
                struct S;
                #[device] use other::lib;
            }
        };
        let mut errors = Errors::default();
        library(module.content.unwrap().1, &mut errors);
        let messages: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages.len(), 3, "{messages:#?}");
        assert!(messages[0].starts_with("a device library holds helpers and constants"));
        assert!(messages[1].starts_with("a device library holds helper functions"));
        assert!(messages[2].starts_with("a device library cannot import another one yet"));
    }
}
