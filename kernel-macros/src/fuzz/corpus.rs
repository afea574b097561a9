//! The project's own kernels modules, read from their files at test time: the seeds of the
//! mutation cases, and modules the harness runs unchanged (so Tint sees their WGSL too).

use proc_macro2::TokenStream;
use quote::ToTokens;

/// The files holding `#[kernels]` modules.
const SOURCES: &[(&str, &str)] = &[
    ("nn", include_str!("../../../nn/src/kernels/mod.rs")),
    ("kernels", include_str!("../../../tests/kernels.rs")),
    ("variants", include_str!("../../../tests/variants.rs")),
    ("helpers", include_str!("../../../tests/helpers.rs")),
    ("vectors", include_str!("../../../tests/vectors.rs")),
    ("cooperative", include_str!("../../../tests/cooperative.rs")),
    (
        "quickstart",
        include_str!("../../../examples/quickstart.rs"),
    ),
    ("bench", include_str!("../../../nn/examples/bench.rs")),
    ("libraries", include_str!("../../../tests/libraries.rs")),
    ("widths", include_str!("../../../tests/widths.rs")),
    ("subgroups", include_str!("../../../tests/subgroups.rs")),
];

/// The files holding `#[tessera::device]` libraries, whose items stand in for the
/// `#[device] use` of a corpus module as the library's callback would put them.
const LIBRARIES: &[&str] = &[
    include_str!("../../../tests/library/src/lib.rs"),
    include_str!("../../../tests/libraries.rs"),
    include_str!("../../../nn/src/kernels/params.rs"),
    include_str!("../../../nn/src/kernels/activation.rs"),
    include_str!("../../../nn/src/kernels/staging.rs"),
    include_str!("../../../nn/src/kernels/fragments.rs"),
    include_str!("../../../nn/src/kernels/wide.rs"),
    include_str!("../../../nn/src/kernels/conv.rs"),
    include_str!("../../../nn/src/kernels/window.rs"),
    include_str!("../../../nn/src/kernels/stream.rs"),
    include_str!("../../../nn/src/kernels/gradients.rs"),
    include_str!("../../../nn/src/kernels/winograd.rs"),
];

/// One module as the macro receives it, kept as text so that threads can share it (token
/// streams cannot cross threads).
#[derive(Clone)]
pub struct Module {
    /// `file.module`, or `file.module.kernel` for a module cut down to one kernel.
    pub name: String,
    /// The tokens inside `#[kernels(..)]`.
    pub args: String,
    /// `mod name { .. }` without the `#[kernels]` attribute.
    pub item: String,
}

impl Module {
    pub fn tokens(&self) -> (TokenStream, TokenStream) {
        (parse(&self.args), parse(&self.item))
    }
}

fn parse(text: &str) -> TokenStream {
    text.parse().expect("the corpus was printed from tokens")
}

/// The modules mutations start from.
pub struct Corpus {
    /// Every `#[kernels]` module of [`SOURCES`].
    pub whole: Vec<Module>,
    /// Each of them cut down to one kernel (and no families): cheaper to compile, so most
    /// mutations start from one.
    pub singles: Vec<Module>,
}

/// Every `#[kernels]` module of [`SOURCES`], whole and cut down to each kernel.
pub fn corpus() -> Corpus {
    let whole: Vec<Module> = SOURCES
        .iter()
        .flat_map(|(file, text)| {
            let file_ast = syn::parse_file(text).expect("a project source file parses");
            file_ast
                .items
                .into_iter()
                .filter_map(|item| kernels_module(file, item))
                .collect::<Vec<_>>()
        })
        .collect();
    let singles = whole.iter().flat_map(single_kernel_modules).collect();
    Corpus { whole, singles }
}

/// A `#[kernels]` module item, with the attribute taken off and its arguments kept.
fn kernels_module(file: &str, item: syn::Item) -> Option<Module> {
    let syn::Item::Mod(mut module) = item else {
        return None;
    };
    resolve_imports(&mut module);
    let position = module.attrs.iter().position(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "kernels")
    })?;
    let attr = module.attrs.remove(position);
    let args = match attr.meta {
        syn::Meta::List(list) => list.tokens.to_string(),
        _ => String::new(),
    };
    Some(Module {
        name: format!("{file}.{}", module.ident),
        args,
        item: module.to_token_stream().to_string(),
    })
}

/// The module once per kernel, holding that kernel and every item that is not a kernel or a
/// family.
fn single_kernel_modules(whole: &Module) -> Vec<Module> {
    let module: syn::ItemMod = syn::parse_str(&whole.item).expect("printed from a module");
    let items = module.content.map(|(_, items)| items).unwrap_or_default();
    let is_kernel = |item: &syn::Item| match item {
        syn::Item::Fn(f) => f.attrs.iter().any(|a| a.path().is_ident("kernel")),
        _ => false,
    };
    let is_family = |item: &syn::Item| match item {
        syn::Item::Struct(s) => s.attrs.iter().any(|a| a.path().is_ident("family")),
        _ => false,
    };
    let shared: Vec<&syn::Item> = items
        .iter()
        .filter(|i| !is_kernel(i) && !is_family(i))
        .collect();
    items
        .iter()
        .filter(|i| is_kernel(i))
        .map(|kernel| {
            let name = match kernel {
                syn::Item::Fn(f) => f.sig.ident.to_string(),
                _ => unreachable!("filtered to functions"),
            };
            let ident = &module.ident;
            let item = quote::quote! { mod #ident { #(#shared)* #kernel } };
            Module {
                name: format!("{}.{name}", whole.name),
                args: whole.args.clone(),
                item: item.to_string(),
            }
        })
        .collect()
}

/// Puts each library a module imports (`#[device] use path::name;`) in place of the import, as
/// `expand` does through the library's macro: the fuzzer calls `compile` directly.
pub(crate) fn resolve_imports(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else {
        return;
    };
    for item in items.iter_mut() {
        let Some(Ok(path)) = crate::parse::library::import_path(item) else {
            continue;
        };
        let name = path.segments.last().map(|s| s.ident.clone());
        let Some(groups) = name.and_then(|name| library_groups(&name, 0)) else {
            continue;
        };
        let marker = crate::parse::library::resolved_marker(&path);
        let groups = groups.iter().map(crate::parse::library::Group::to_item);
        *item = syn::parse_quote! { #marker mod library { #(#groups)* } };
    }
}

/// The library `name`'s items, then those of the libraries it imports, as its macro hands them
/// over (one group per library, named by the library as origin).
fn library_groups(name: &syn::Ident, depth: usize) -> Option<Vec<crate::parse::library::Group>> {
    let mut own = Vec::new();
    let mut imported = Vec::new();
    for item in library_items(name)? {
        match crate::parse::library::import_path(&item) {
            Some(Ok(path)) if depth < 8 => {
                let name = path.segments.last().map(|s| s.ident.clone());
                imported.extend(name.and_then(|name| library_groups(&name, depth + 1))?);
            }
            Some(_) => {}
            None => own.push(item),
        }
    }
    let group = crate::parse::library::Group {
        origin: name.to_string(),
        name: name.clone(),
        items: own,
    };
    Some(std::iter::once(group).chain(imported).collect())
}

/// The items of the `#[tessera::device]` module `name` of [`LIBRARIES`].
fn library_items(name: &syn::Ident) -> Option<Vec<syn::Item>> {
    LIBRARIES.iter().find_map(|text| {
        let file = syn::parse_file(text).expect("a project source file parses");
        file.items.into_iter().find_map(|item| match item {
            syn::Item::Mod(module)
                if module.ident == *name
                    && module.attrs.iter().any(|a| {
                        a.path()
                            .segments
                            .last()
                            .is_some_and(|s| s.ident == "device")
                    }) =>
            {
                module.content.map(|(_, items)| items)
            }
            _ => None,
        })
    })
}
