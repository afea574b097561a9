//! syn -> IR. Reads a `#[tessera::kernels]` module: `#[derive(Params)]` structs, `#[kernel]`
//! entry points and helper functions. Nothing here knows WGSL; unsupported Rust is reported at
//! its tokens with what to write instead.

mod attr;
mod body;
pub mod consts;
mod family;
mod host;
pub mod imports;
pub mod kernel;
pub mod keywords;
pub mod library;
pub mod names;
pub mod nesting;
pub mod params;
mod ty;

use crate::diag::Errors;
use crate::ir;

/// What the module attribute hands on: the IR, plus the Rust items that stay in the module.
pub struct Parsed {
    pub module: ir::Module,
    /// Items emitted unchanged (the params structs, `use` items, plain Rust structs), and a
    /// `use` of each imported library's params struct.
    pub passthrough: Vec<syn::Item>,
    /// The module's attributes and visibility.
    pub attrs: Vec<syn::Attribute>,
    pub vis: syn::Visibility,
}

impl Parsed {
    /// The names of the module's structs other than `Params` structs, sets of constants and
    /// families (those pass through unchanged).
    pub fn other_types(&self) -> Vec<proc_macro2::Ident> {
        self.passthrough
            .iter()
            .filter_map(|item| match item {
                syn::Item::Struct(s) if !params::is_params(s) => Some(s.ident.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Parses the module. Kernels whose signature cannot be read are left out of the IR (their
/// errors are in `errors`); everything else that can be parsed is.
pub fn module(
    args: proc_macro2::TokenStream,
    input: syn::ItemMod,
    errors: &mut Errors,
) -> Option<Parsed> {
    attr::module_attr(args, errors);
    let Some((_, items)) = input.content else {
        errors.spanned(
            &input,
            "`#[kernels]` needs the module's items inline: `mod name { ... }`",
        );
        return None;
    };
    let mut passthrough = Vec::new();
    let mut params = Vec::new();
    let mut functions = Vec::new();
    let mut module_consts = consts::Consts::default();
    let mut set_items = Vec::new();
    let mut family_items = Vec::new();
    let mut imports = Vec::new();
    for item in items {
        if let Some(import) = library::imported(&item) {
            imports.push(import);
            continue;
        }
        if let Some(path) = library::import_path(&item) {
            // `expand` resolves every valid import before the module is parsed.
            match path {
                Err(error) => errors.push(error),
                Ok(path) => errors.spanned(
                    path,
                    "this library's helpers did not reach the module: `#[device] use` is \
                     resolved by the `#[tessera::kernels]` attribute, and this is a bug in tessera",
                ),
            }
            continue;
        }
        match item {
            syn::Item::Struct(s) if is_constant_set(&s) => set_items.push(s),
            syn::Item::Struct(s) if family::family_attr(&s).is_some() => family_items.push(s),
            syn::Item::Struct(ref s) if params::is_params(s) => {
                params.push(params::params_struct(s, errors));
                passthrough.push(item);
            }
            syn::Item::Struct(_) | syn::Item::Use(_) => passthrough.push(item),
            syn::Item::Const(ref constant) if names::is_generated_const(&constant.ident) => {
                errors.spanned(
                    &constant.ident,
                    format!(
                        "a kernels module declares `{}` itself (the WGSL of its kernels); \
                         rename this constant",
                        constant.ident
                    ),
                );
            }
            syn::Item::Const(ref constant) => {
                // A constant that could not be evaluated (already reported) still gets a value,
                // so its uses do not add errors of their own.
                let value = consts::module_const(constant, &module_consts, errors).unwrap_or_else(|| consts::stand_in(&constant.ty));
                module_consts = module_consts.with(&constant.ident.to_string(), value);
                // The kernels use it (in WGSL) even when no Rust code does.
                let mut item = item;
                if let syn::Item::Const(constant) = &mut item {
                    constant.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
                }
                passthrough.push(item);
            }
            syn::Item::Fn(function) => functions.push(function),
            other => errors.spanned(
                &other,
                "a kernels module holds `#[derive(Params)]` structs, `#[kernel]` functions, helper \
                 functions, constants and `use` items; move this item out of the module",
            ),
        }
    }
    let own = imports::Own {
        values: functions
            .iter()
            .map(|f| f.sig.ident.to_string())
            .chain(module_consts.names().map(str::to_owned))
            .collect(),
        types: type_names(&passthrough, &set_items, &family_items),
    };
    let written_paths: Vec<String> = imports.iter().map(library::Import::written).collect();
    let imports = imports::distinct(library::Importer::Kernels, own, imports, errors);
    let mut declared = Declared {
        consts: module_consts,
        params,
        sets: Vec::new(),
        families: Vec::new(),
        passthrough,
    };
    let imported = merge_imports(imports, &mut declared, errors);
    let Declared {
        consts: module_consts,
        params,
        sets: imported_sets,
        families: imported_families,
        passthrough,
    } = declared;
    family_items.extend(imported_families);
    let imported_names: Vec<syn::Ident> = imported.iter().map(|f| f.sig.ident.clone()).collect();
    functions.extend(imported);
    let mut sets = kernel::Sets::default();
    sets.imports = written_paths;
    // The library checked its sets where it was declared.
    for item in &imported_sets {
        let set = constant_set(
            item,
            &module_consts,
            ir::SetHome::Library,
            &mut Errors::default(),
        );
        if let Some((set, envs)) = set {
            sets.add(set, envs);
        }
    }
    for item in &set_items {
        if let Some((set, envs)) = constant_set(item, &module_consts, ir::SetHome::Module, errors) {
            sets.add(set, envs);
        }
    }
    let families = family_items
        .iter()
        .filter_map(|item| family::family(item, &params, &module_consts, errors))
        .collect();
    let mut module = ir::Module {
        name: input.ident,
        constant_sets: Vec::new(),
        params,
        helpers: Vec::new(),
        generic_helpers: Vec::new(),
        kernels: Vec::new(),
        families,
    };
    let functions =
        names::distinct_functions(functions, |f| kernel::kernel_attr(f).is_some(), errors);
    let (kernels, helpers): (Vec<syn::ItemFn>, Vec<syn::ItemFn>) = functions
        .into_iter()
        .partition(|f| kernel::kernel_attr(f).is_some());
    let scope = kernel::Scope {
        params: &module.params,
        families: &module.families,
        consts: &module_consts,
        helpers: &helpers,
    };
    // The kernels that could not be read (reported): the helpers they name are not checked
    // alone, as if no kernel called them.
    let mut unread = Vec::new();
    for function in &kernels {
        if let Some(attr) = kernel::kernel_attr(function) {
            match kernel::kernel(function, attr, &scope, &mut sets, errors) {
                Some(kernel) => module.kernels.push(kernel),
                None => unread.push(quote::ToTokens::to_token_stream(&function.block)),
            }
        }
    }
    // A helper no kernel calls is still checked, with the module's constants.
    let called: std::collections::HashSet<String> = module
        .kernels
        .iter()
        .flat_map(ir::Kernel::variants)
        .flat_map(|v| {
            let generic = v.generic_helpers.iter().map(|g| g.name().to_string());
            v.helpers.iter().map(|h| h.name.to_string()).chain(generic)
        })
        .collect();
    // An imported helper no kernel calls was checked in its library's crate.
    let unused: Vec<syn::Ident> = helpers
        .iter()
        .map(|f| f.sig.ident.clone())
        .filter(|name| !called.contains(&name.to_string()) && !imported_names.contains(name))
        .filter(|name| !unread.iter().any(|block| names_ident(block.clone(), name)))
        .filter(|name| !names_set_constants(name, &helpers, &sets.sets, &module_consts, errors))
        .collect();
    // A generic helper no kernel calls is not checked: what its type parameters stand for
    // comes from the calls.
    (module.helpers, module.generic_helpers) = kernel::instance_helpers(
        unused,
        None,
        &helpers,
        &module_consts,
        &module.params,
        errors,
    );
    module.constant_sets = sets.sets;
    Some(Parsed {
        module,
        passthrough,
        attrs: input.attrs,
        vis: input.vis,
    })
}

/// What the module declares that its imports add to.
struct Declared {
    consts: consts::Consts,
    params: Vec<ir::ParamsStruct>,
    /// The imported sets of constants.
    sets: Vec<syn::ItemStruct>,
    /// The imported libraries' families (see `library::Library::kernels`).
    families: Vec<syn::ItemStruct>,
    passthrough: Vec<syn::Item>,
}

/// Adds the imports' constants, `Params` structs, sets of constants (a `use` of each struct
/// and set, see [`imported_struct`]) and families to the module's, and returns their helpers
/// and kernels.
fn merge_imports(
    imports: Vec<library::Import>,
    declared: &mut Declared,
    errors: &mut Errors,
) -> Vec<syn::ItemFn> {
    let mut helpers = Vec::new();
    for import in imports {
        for item in import.groups.into_iter().flat_map(|g| g.items) {
            match item {
                syn::Item::Const(constant) => {
                    let value = consts::module_const(&constant, &declared.consts, errors)
                        .unwrap_or_else(|| consts::stand_in(&constant.ty));
                    declared.consts = declared.consts.with(&constant.ident.to_string(), value);
                }
                syn::Item::Fn(function) => helpers.push(function),
                syn::Item::Struct(item) if family::family_attr(&item).is_some() => {
                    declared.families.push(item);
                }
                syn::Item::Struct(item) if is_constant_set(&item) => {
                    declared
                        .passthrough
                        .push(imported_struct(&import.path, &item));
                    declared.sets.push(item);
                }
                syn::Item::Struct(item) => {
                    declared.params.push(params::params_struct(&item, errors));
                    declared
                        .passthrough
                        .push(imported_struct(&import.path, &item));
                }
                // The library's own crate reported anything else.
                _ => {}
            }
        }
    }
    helpers
}

/// The type names the module declares: its structs (of every kind) and what its `use` items
/// bring, which an imported struct must not take.
fn type_names(
    passthrough: &[syn::Item],
    set_items: &[syn::ItemStruct],
    family_items: &[syn::ItemStruct],
) -> Vec<String> {
    let mut names: Vec<String> = set_items
        .iter()
        .chain(family_items)
        .map(|s| s.ident.to_string())
        .collect();
    for item in passthrough {
        match item {
            syn::Item::Struct(s) => names.push(s.ident.to_string()),
            syn::Item::Use(item) => names.extend(imports::use_names(item)),
            _ => {}
        }
    }
    names
}

/// An imported library's `Params` struct or set of constants, in the importing module: a `use`
/// of the library's one Rust type by the path the import was written with (`use
/// lib::ConvParams;`), with the struct's visibility, so that the launchers name it and the host
/// can name it through the module as well. No kernel may use it: the user did not write the
/// `use`, so it is not reported unused.
fn imported_struct(path: &syn::Path, item: &syn::ItemStruct) -> syn::Item {
    let (vis, name) = (&item.vis, &item.ident);
    syn::parse_quote! {
        #[allow(unused_imports)]
        #vis use #path::#name;
    }
}

/// Whether `tokens` hold the identifier `name`.
pub fn names_ident(tokens: proc_macro2::TokenStream, name: &syn::Ident) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => ident == *name,
        proc_macro2::TokenTree::Group(group) => names_ident(group.stream(), name),
        _ => false,
    })
}

/// Whether the helper `root`, which no kernel calls, or a helper it calls, names a constant of
/// a set: those take their values from the kernels that call a helper, so such a helper
/// cannot be checked on its own. It then gets one error, at its name, saying so (instead of
/// one at each use of a constant, and at each use of a parameter whose type needs one).
fn names_set_constants(
    root: &syn::Ident,
    helpers: &[syn::ItemFn],
    sets: &[ir::ConstantSet],
    module_consts: &consts::Consts,
    errors: &mut Errors,
) -> bool {
    let set_of = |name: &str| {
        sets.iter().find(|set| {
            set.identity.iter().any(|c| c == name) || set.derived.iter().any(|(c, _)| c == name)
        })
    };
    let mut pending = vec![root.clone()];
    let mut seen: Vec<syn::Ident> = Vec::new();
    while let Some(name) = pending.pop() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let Some(function) = helpers.iter().find(|h| h.sig.ident == name) else {
            continue;
        };
        let mut idents = Vec::new();
        idents_of(quote::ToTokens::to_token_stream(function), &mut idents);
        for ident in idents {
            let text = ident.to_string();
            if module_consts.get(&text).is_some() {
                continue;
            }
            if let Some(set) = set_of(&text) {
                let through = match name == *root {
                    true => String::new(),
                    false => format!(" (through `{name}`)"),
                };
                errors.at(
                    root.span(),
                    format!(
                        "no kernel calls `{root}`, and it uses `{text}`{through}, a constant \
                         of `{}`: a helper takes such constants from the kernels that call \
                         it, so tessera cannot check it alone. Call it from a kernel with \
                         `constants = {}`, or remove it",
                        set.name, set.name
                    ),
                );
                return true;
            }
            if helpers.iter().any(|h| h.sig.ident == ident) {
                pending.push(ident);
            }
        }
    }
    false
}

/// Every identifier in `tokens`, groups included, in order.
fn idents_of(tokens: proc_macro2::TokenStream, out: &mut Vec<syn::Ident>) {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => out.push(ident),
            proc_macro2::TokenTree::Group(group) => idents_of(group.stream(), out),
            _ => {}
        }
    }
}

/// `#[constants(...)] struct Name;`: a set of constants kernels name with `constants = Name`,
/// declared at `home` (a kernels module or a library), with each instance's constants. `None`
/// when the struct is no set.
pub fn constant_set(
    item: &syn::ItemStruct,
    consts: &consts::Consts,
    home: ir::SetHome,
    errors: &mut Errors,
) -> Option<(ir::ConstantSet, Vec<consts::Consts>)> {
    if !matches!(item.fields, syn::Fields::Unit) {
        errors.spanned(
            &item.fields,
            "a set of constants is a unit struct, `struct Name;`: tessera writes its fields",
        );
    }
    let attr = attr::constant_set_attr(item)?;
    let decls = attr::constant_set_decls(attr, errors);
    let docs = kernel::doc_lines(&item.attrs);
    Some(consts::set(
        item.ident.clone(),
        docs,
        home,
        &decls,
        consts,
        errors,
    ))
}

/// Whether a struct is a set of constants, `#[constants(..)] struct Name;`.
pub fn is_constant_set(item: &syn::ItemStruct) -> bool {
    attr::constant_set_attr(item).is_some()
}

#[cfg(test)]
mod tests;
