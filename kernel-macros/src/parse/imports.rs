//! What imports bring into a kernels module or a library: each imported library's items, merged
//! into the importer's names ([`distinct`]).
//!
//! Names live in Rust's two namespaces: helpers and constants are values (a library's helpers
//! call each other by name, so no name may shadow another), structs, sets of constants and what
//! `use` items bring are types (an imported struct or set becomes a `use` of the library's one
//! Rust type). An item that reaches the importer twice from the same library, directly and
//! through another library, is one item; any other second holder of a name is an error at the
//! import.
//!
//! Nothing here knows WGSL or emits tokens.

use crate::diag::Errors;
use crate::parse::library::{Import, Importer};

/// Rust's namespaces, as a module's items fill them.
#[derive(Clone, Copy)]
enum Namespace {
    /// Helpers and constants.
    Value,
    /// Structs, sets of constants, and the names `use` items bring.
    Type(TypeKind),
}

impl Namespace {
    fn same(self, other: Namespace) -> bool {
        matches!(
            (self, other),
            (Namespace::Value, Namespace::Value) | (Namespace::Type(_), Namespace::Type(_))
        )
    }
}

/// What an imported type name is, for messages.
#[derive(Clone, Copy)]
enum TypeKind {
    Struct,
    Set,
    /// A name the importer's own structs or `use` items bring.
    Own,
}

impl TypeKind {
    fn described(self) -> &'static str {
        match self {
            TypeKind::Set => "a set of constants",
            TypeKind::Struct | TypeKind::Own => "a struct",
        }
    }

    fn short(self) -> &'static str {
        match self {
            TypeKind::Set => "set",
            TypeKind::Struct | TypeKind::Own => "struct",
        }
    }
}

/// Who holds a name.
enum Holder {
    /// The importer itself.
    Own,
    /// The library of `origin`, reached by the import written `written`.
    Import { written: String, origin: String },
}

/// The names the importer declares: `values` (helpers and constants) and `types` (structs and
/// the names its `use` items bring, see [`use_names`]).
pub struct Own {
    pub values: Vec<String>,
    pub types: Vec<String>,
}

/// The imports with only the items whose names neither the importer nor an earlier import
/// holds. An item an earlier import brought from the same library is left out silently; any
/// other is reported at its import and left out.
pub fn distinct(
    importer: Importer<'_>,
    own: Own,
    imports: Vec<Import>,
    errors: &mut Errors,
) -> Vec<Import> {
    let mut taken: Vec<(Namespace, String, Holder)> = own
        .values
        .into_iter()
        .map(|name| (Namespace::Value, name, Holder::Own))
        .chain(
            own.types
                .into_iter()
                .map(|name| (Namespace::Type(TypeKind::Own), name, Holder::Own)),
        )
        .collect();
    let mut distinct = Vec::new();
    for mut import in imports {
        let written = import.written();
        for group in &mut import.groups {
            let origin = group.origin.clone();
            let items = std::mem::take(&mut group.items);
            for item in items {
                let Some((namespace, name)) = item_name(&item) else {
                    continue;
                };
                let holder = taken
                    .iter()
                    .find(|(n, held, _)| n.same(namespace) && *held == name)
                    .map(|(_, _, holder)| holder);
                match holder {
                    None => {
                        let holder = Holder::Import {
                            written: written.clone(),
                            origin: origin.clone(),
                        };
                        taken.push((namespace, name, holder));
                        group.items.push(item);
                    }
                    Some(Holder::Import { origin: first, .. }) if *first == origin => {}
                    Some(holder) => {
                        let kernel = crate::parse::library::is_kernel_item(&item);
                        let message = clash(importer, namespace, &name, holder, &written, kernel);
                        errors.spanned(&import.path, message);
                    }
                }
            }
        }
        distinct.push(import);
    }
    distinct
}

/// The message for `name`, brought by the import written `written`, when `holder` has it.
fn clash(
    importer: Importer<'_>,
    namespace: Namespace,
    name: &str,
    holder: &Holder,
    written: &str,
    kernel: bool,
) -> String {
    let (here, heres, whose) = match importer {
        Importer::Kernels => ("the kernels module", "the module's", "the library's"),
        Importer::Library(_) => (
            "the library that imports it",
            "the importing library's",
            "each library's",
        ),
    };
    match (holder, namespace) {
        (Holder::Import { written: other, .. }, _) => {
            let who = match importer {
                Importer::Kernels => "a kernels module",
                Importer::Library(_) => "a library",
            };
            format!(
                "`{name}` is in both `{other}` and `{written}`; {who} can import only one of \
                 two libraries that share a name"
            )
        }
        (Holder::Own, _) if kernel => format!(
            "`{name}` is a kernel (or family) of this library and a name of {here}; a \
             library's kernels become the module's own, so rename one of the two"
        ),
        (Holder::Own, Namespace::Value) => format!(
            "`{name}` is in this library and in {here}; rename {heres}, since {whose} \
             helpers may call theirs by name"
        ),
        (Holder::Own, Namespace::Type(kind)) => format!(
            "`{name}` is {kind} of this library and a name of {here}; the import brings the \
             library's {short} in, as `{written}::{name}` (one Rust type for every module that \
             imports it), so remove or rename {heres}",
            kind = kind.described(),
            short = kind.short(),
        ),
    }
}

fn item_name(item: &syn::Item) -> Option<(Namespace, String)> {
    match item {
        syn::Item::Fn(f) => Some((Namespace::Value, f.sig.ident.to_string())),
        syn::Item::Const(c) => Some((Namespace::Value, c.ident.to_string())),
        syn::Item::Struct(s) if crate::parse::is_constant_set(s) => {
            Some((Namespace::Type(TypeKind::Set), s.ident.to_string()))
        }
        syn::Item::Struct(s) => Some((Namespace::Type(TypeKind::Struct), s.ident.to_string())),
        _ => None,
    }
}

/// The names a `use` item brings (`use a::{b, c as d};` brings `b` and `d`); a glob brings
/// none that could clash, since a name declared beside it shadows it.
pub fn use_names(item: &syn::ItemUse) -> Vec<String> {
    let mut names = Vec::new();
    tree_names(&item.tree, None, &mut names);
    names
}

fn tree_names(tree: &syn::UseTree, parent: Option<&syn::Ident>, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(path) => tree_names(&path.tree, Some(&path.ident), out),
        syn::UseTree::Name(name) if name.ident == "self" => {
            out.extend(parent.map(ToString::to_string));
        }
        syn::UseTree::Name(name) => out.push(name.ident.to_string()),
        syn::UseTree::Rename(rename) => out.push(rename.rename.to_string()),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                tree_names(tree, parent, out);
            }
        }
        syn::UseTree::Glob(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::library::Group;

    fn import(path: syn::Path, groups: Vec<(&str, Vec<syn::Item>)>) -> Import {
        Import {
            path,
            groups: groups
                .into_iter()
                .map(|(origin, items)| Group {
                    origin: origin.to_owned(),
                    name: syn::parse_quote!(lib),
                    items,
                })
                .collect(),
        }
    }

    fn names(imports: &[Import]) -> Vec<String> {
        imports
            .iter()
            .flat_map(|i| &i.groups)
            .flat_map(|g| &g.items)
            .filter_map(item_name)
            .map(|(_, name)| name)
            .collect()
    }

    fn messages(errors: Errors) -> Vec<String> {
        match errors.finish() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn an_item_reaching_the_module_twice_from_one_library_is_one_item() {
        let relu: syn::Item = syn::parse_quote!(
            fn relu(x: f32) -> f32 {
                max(x, 0.0)
            }
        );
        let params: syn::Item = syn::parse_quote!(
            pub struct ConvParams {
                pub n: u32,
            }
        );
        let gelu: syn::Item = syn::parse_quote!(
            fn gelu(x: f32) -> f32 {
                x
            }
        );
        let imports = vec![
            import(
                syn::parse_quote!(lib::activations),
                vec![("a", vec![relu.clone(), params.clone()])],
            ),
            import(
                syn::parse_quote!(lib::epilogues),
                vec![("b", vec![gelu]), ("a", vec![relu, params])],
            ),
        ];
        let own = Own {
            values: Vec::new(),
            types: Vec::new(),
        };
        let mut errors = Errors::default();
        let distinct = distinct(Importer::Kernels, own, imports, &mut errors);
        assert!(errors.is_empty());
        assert_eq!(names(&distinct), ["relu", "ConvParams", "gelu"]);
    }

    #[test]
    fn a_name_held_twice_is_an_error_at_the_import() {
        let imports = vec![
            import(
                syn::parse_quote!(lib::a),
                vec![(
                    "a",
                    vec![
                        syn::parse_quote!(
                            pub struct ConvParams {
                                pub n: u32,
                            }
                        ),
                        syn::parse_quote!(
                            const K: u32 = 1;
                        ),
                    ],
                )],
            ),
            import(
                syn::parse_quote!(lib::b),
                vec![(
                    "b",
                    vec![syn::parse_quote!(
                        const K: u32 = 2;
                    )],
                )],
            ),
        ];
        let own = Own {
            values: vec!["ConvParams".to_owned()],
            types: vec!["ConvParams".to_owned()],
        };
        let mut errors = Errors::default();
        let distinct = distinct(Importer::Kernels, own, imports, &mut errors);
        assert_eq!(names(&distinct), ["K"]);
        let messages = messages(errors);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with(
            "`ConvParams` is a struct of this library and a name of the kernels module; the \
             import brings the library's struct in, as `lib::a::ConvParams`"
        ));
        assert!(messages[1].starts_with("`K` is in both `lib::a` and `lib::b`"));
    }

    #[test]
    fn a_use_brings_its_last_names() {
        let item: syn::ItemUse = syn::parse_quote!(
            use a::{
                b, c as d,
                e::{self, f},
                g::*,
            };
        );
        assert_eq!(use_names(&item), ["b", "d", "e", "f"]);
    }
}
