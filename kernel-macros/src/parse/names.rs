//! The rules for names the user declares once and the macro turns into Rust items: a kernel's
//! name becomes its launcher type (`grad_pre` -> `GradPre`), a constant's name a field or
//! method of its constants type (`REG` -> `reg`). Each name is declared once: a second kernel,
//! helper, parameter or constant of the same name is refused at the second, naming the first,
//! and left out so it causes no further errors. (WGSL names are `lower/names.rs`'s concern.)

use syn::ext::IdentExt;

use crate::diag::Errors;
use crate::ir::{self, Span};
use crate::parse::attr::ConstDecl;

/// The launcher type's name for the kernel `name`, or an error at the name when its CamelCase
/// spelling is no Rust type name.
pub fn launcher(name: &syn::Ident, errors: &mut Errors) -> Option<syn::Ident> {
    let camel = match ir::launcher_name(name) {
        Ok(mut launcher) => {
            launcher.set_span(name.span());
            return Some(launcher);
        }
        Err(camel) => camel,
    };
    let gives = if camel.is_empty() {
        "no name at all".to_owned()
    } else if camel == "Self" {
        "`Self`, which Rust reserves".to_owned()
    } else {
        format!("`{camel}`, which is not a Rust identifier")
    };
    let suggestion = match name.unraw().to_string().trim_matches('_') {
        "" => "kernel".to_owned(),
        stem => format!("kernel_{stem}"),
    };
    errors.spanned(
        name,
        format!(
            "tessera names a kernel's launcher after the kernel in CamelCase (`grad_pre` -> \
             `GradPre`), and `{name}` gives {gives}; rename the kernel, e.g. `{suggestion}`"
        ),
    );
    None
}

/// The names declared so far in one namespace, each with what it names and where.
#[derive(Default)]
pub struct Declared {
    /// Each name under its key, with what it names, as written, and where.
    names: Vec<(String, &'static str, String, Span)>,
}

impl Declared {
    /// Records `name` (a `what`: "kernel", "helper", "parameter"); when the name is taken,
    /// reports it at `name` and returns false.
    pub fn declare(&mut self, name: &syn::Ident, what: &'static str, errors: &mut Errors) -> bool {
        let key = name.unraw().to_string();
        self.declare_as(&key, name, what, errors)
    }

    /// [`Declared::declare`] under `key`, when two spellings stand for one name.
    fn declare_as(
        &mut self,
        key: &str,
        name: &syn::Ident,
        what: &'static str,
        errors: &mut Errors,
    ) -> bool {
        let Some((_, first, written, span)) = self.names.iter().find(|(taken, ..)| taken == key)
        else {
            let span = Span::from(name.span());
            self.names
                .push((key.to_owned(), what, name.to_string(), span));
            return true;
        };
        let line = span.line();
        let message = if *name == written.as_str() {
            let article = if first.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            format!("`{name}` is already the name of {article} {first} (line {line}); rename one of them")
        } else {
            format!(
                "`{name}` and the {first} `{written}` (line {line}) would both be `{key}` on the \
                 host; rename one of them"
            )
        };
        errors.spanned(name, message);
        false
    }
}

/// The module's functions with each name once: a later kernel or helper named like an earlier
/// one is reported and left out.
pub fn distinct_functions(
    functions: Vec<syn::ItemFn>,
    is_kernel: impl Fn(&syn::ItemFn) -> bool,
    errors: &mut Errors,
) -> Vec<syn::ItemFn> {
    let mut declared = Declared::default();
    functions
        .into_iter()
        .filter(|f| {
            let what = if is_kernel(f) { "kernel" } else { "helper" };
            declared.declare(&f.sig.ident, what, errors)
        })
        .collect()
}

/// The entries of a `constants(..)` list with each name once, and each name one its host type
/// can have as a field or method (`REG` -> `reg`): two names that differ only in case would
/// give one field, and `SELF`, `SUPER` and `CRATE` give none.
pub fn distinct_constants<'d>(decls: &'d [ConstDecl], errors: &mut Errors) -> Vec<&'d ConstDecl> {
    let mut declared = Declared::default();
    decls
        .iter()
        .filter(|decl| {
            // Every name is checked (and reported), and a declaration with a bad one dropped.
            let checked: Vec<bool> = decl
                .names()
                .into_iter()
                .map(|name| {
                    let member = constant_member(name);
                    if matches!(member.as_str(), "self" | "super" | "crate") {
                        errors.spanned(
                            name,
                            format!(
                                "the constant `{name}` would be the field `{member}` of its \
                                 constants type, which Rust reserves; rename it"
                            ),
                        );
                        return false;
                    }
                    declared.declare_as(&member, name, "constant", errors)
                })
                .collect();
            checked.into_iter().all(|ok| ok)
        })
        .collect()
}

/// The host field or method name of a constant, as text: `BLOCK` -> `block`.
pub fn constant_member(name: &syn::Ident) -> String {
    name.unraw().to_string().to_lowercase()
}

/// Whether `name` is a constant the macro adds to every kernels module.
pub fn is_generated_const(name: &syn::Ident) -> bool {
    let name = name.to_string();
    name == "WGSL" || name == "WGSL_PLAIN" || name.starts_with("WGSL_WITH_")
}
