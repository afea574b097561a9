//! The attributes: `#[kernel(workgroup = [..], grid = [..], constants(..), specialize(..),
//! limits(..), features(..))]` on entry points, `#[constants(..)]` on a set of constants, and
//! the argument-free `#[kernels]` on the module. Values stay syn expressions here; `kernel.rs` evaluates them per instance.

use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::Token;

use crate::diag::Errors;
use crate::ir::{Feature, Span};
use crate::parse::keywords::*;

/// The arguments of `#[kernel(...)]`, unevaluated.
#[derive(Default)]
pub struct KernelAttr {
    pub workgroup: Option<(Vec<syn::Expr>, Span)>,
    pub grid: Option<Vec<syn::Expr>>,
    /// `constants(NAME = [v1, v2], DERIVED = expr)` or `constants = SetName`.
    pub constants: Constants,
    pub specializations: Vec<syn::Expr>,
    /// `limits(invocations = 1024, workgroup_memory = 49152)`.
    pub limits: Vec<(syn::Ident, syn::Expr)>,
    pub features: Vec<(Feature, Span)>,
    /// `types(T = [f32, Vec4<f32>])`: a type parameter and the element types it is
    /// instantiated for.
    pub types: Vec<(syn::Ident, Vec<syn::Type>)>,
}

const USAGE: &str = "write `#[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]`, optionally with \
                     `constants(TILE = [8, 16])`, `specialize(p.stride == 1)`, \
                     `types(T = [f32, f16])`, `limits(invocations = 1024, workgroup_memory = 32768)` \
                     and `features(f16, subgroups, cooperative_matrix)`";

pub fn kernel_attr(attr: &syn::Attribute, errors: &mut Errors) -> Option<KernelAttr> {
    let mut out = KernelAttr::default();
    let mut given: Vec<&str> = Vec::new();
    let parsed = attr.parse_nested_meta(|meta| {
        let path = &meta.path;
        // The arguments that take one value: a second would silently replace the first.
        if let Some(&key) = [WORKGROUP_SIZE, GRID, CONSTANTS]
            .iter()
            .find(|&&key| path.is_ident(key))
        {
            if given.contains(&key) {
                return Err(meta.error(format!("`{key}` is given twice; keep one")));
            }
            given.push(key);
        }
        if path.is_ident(WORKGROUP_SIZE) {
            let value: syn::Expr = meta.value()?.parse()?;
            out.workgroup = Some((dimensions(&value)?, Span::of(&value)));
        } else if path.is_ident(GRID) {
            out.grid = Some(dimensions(&meta.value()?.parse()?)?);
        } else if path.is_ident(CONSTANTS) {
            out.constants = if meta.input.peek(Token![=]) {
                Constants::Named(meta.value()?.parse()?)
            } else {
                Constants::Listed(constant_decls(&meta)?)
            };
        } else if path.is_ident(SPECIALIZE) {
            out.specializations.extend(parenthesized_exprs(meta.input)?);
        } else if path.is_ident(TYPES) {
            meta.parse_nested_meta(|param| {
                let name = param.path.require_ident()?.clone();
                let list = || {
                    param.error(format!(
                        "list the element types `{name}` stands for: `{name} = [f32, f16]`"
                    ))
                };
                let input = param.value()?;
                if !input.peek(syn::token::Bracket) {
                    return Err(list());
                }
                let content;
                syn::bracketed!(content in input);
                let types: Vec<syn::Type> =
                    Punctuated::<syn::Type, Token![,]>::parse_terminated(&content)?
                        .into_iter()
                        .collect();
                if types.is_empty() {
                    return Err(list());
                }
                out.types.push((name, types));
                Ok(())
            })?;
        } else if path.is_ident(LIMITS) {
            meta.parse_nested_meta(|limit| {
                let name = limit.path.require_ident()?.clone();
                if name != LIMIT_INVOCATIONS && name != LIMIT_WORKGROUP_MEMORY {
                    return Err(limit.error(format!(
                        "unknown limit; kernels can raise `{LIMIT_INVOCATIONS}` and `{LIMIT_WORKGROUP_MEMORY}`"
                    )));
                }
                if out.limits.iter().any(|(earlier, _)| *earlier == name) {
                    return Err(limit.error(format!(
                        "`{name}` is declared twice in `limits(...)`; keep one value"
                    )));
                }
                out.limits.push((name, limit.value()?.parse()?));
                Ok(())
            })?;
        } else if path.is_ident(FEATURES) {
            meta.parse_nested_meta(|feature| {
                let found = match () {
                    _ if feature.path.is_ident(FEATURE_F16) => Feature::F16,
                    _ if feature.path.is_ident(FEATURE_SUBGROUPS) => Feature::Subgroups,
                    _ if feature.path.is_ident(FEATURE_COOPERATIVE_MATRIX) => Feature::CooperativeMatrix,
                    _ => return Err(feature.error(
                        "unknown feature; kernels can declare `f16`, `subgroups` and `cooperative_matrix`",
                    )),
                };
                out.features.push((found, Span::of(&feature.path)));
                Ok(())
            })?;
        } else {
            return Err(meta.error(format!("unknown kernel argument; {USAGE}")));
        }
        Ok(())
    });
    if let Err(error) = parsed {
        errors.push(error);
        return None;
    }
    if out.workgroup.is_none() {
        errors.spanned(attr, format!("the kernel needs a workgroup size; {USAGE}"));
    }
    if out.grid.is_none() {
        errors.spanned(attr, format!("the kernel needs a dispatch grid; {USAGE}"));
    }
    (out.workgroup.is_some() && out.grid.is_some()).then_some(out)
}

/// The constants of a kernel: none, its own list, or a set of the module by name.
#[derive(Default)]
pub enum Constants {
    #[default]
    None,
    Listed(Vec<ConstDecl>),
    Named(syn::Ident),
}

/// One entry of `constants(...)`.
pub enum ConstDecl {
    /// `NAME = [v1, v2]`: the values an instance may have; part of what identifies it.
    Listed(syn::Ident, Vec<syn::Expr>),
    /// `zip(A = [a1, a2], B = [b1, b2])`: lists whose `i`-th values go together (`a1` with
    /// `b1`), each constant part of the identity.
    Zipped(Vec<(syn::Ident, Vec<syn::Expr>)>),
    /// `NAME = expr`: computed from the constants before it; not part of the identity.
    Derived(syn::Ident, Box<syn::Expr>),
}

impl ConstDecl {
    /// The constants it declares, in order.
    pub fn names(&self) -> Vec<&syn::Ident> {
        match self {
            ConstDecl::Listed(name, _) | ConstDecl::Derived(name, _) => vec![name],
            ConstDecl::Zipped(lists) => lists.iter().map(|(name, _)| name).collect(),
        }
    }
}

/// The keyword of lists that vary together in `constants(...)`.
const ZIP: &str = "zip";

/// The `NAME = [..]` and `NAME = expr` entries of a `constants(...)` list.
pub fn constant_decls(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Vec<ConstDecl>> {
    let mut decls = Vec::new();
    meta.parse_nested_meta(|constant| {
        decls.push(constant_decl(&constant)?);
        Ok(())
    })?;
    Ok(decls)
}

fn constant_decl(constant: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<ConstDecl> {
    let name = constant.path.require_ident()?.clone();
    if name == ZIP && constant.input.peek(syn::token::Paren) {
        return zipped_lists(name, constant);
    }
    Ok(match constant.value()?.parse::<syn::Expr>()? {
        syn::Expr::Array(array) => ConstDecl::Listed(name, array.elems.into_iter().collect()),
        single => ConstDecl::Derived(name, Box::new(single)),
    })
}

/// `zip(A = [..], B = [..])`: lists of one length, each value of one going with the values
/// at the same place in the others.
fn zipped_lists(zip: syn::Ident, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<ConstDecl> {
    let empty = "`zip(..)` needs lists that vary together, like `zip(BLOCK = [128, 64], \
                 INVOCATIONS = [512, 256])`";
    let inside = meta.input.fork();
    let content;
    syn::parenthesized!(content in inside);
    if content.is_empty() {
        return Err(syn::Error::new_spanned(&zip, empty));
    }
    let mut lists: Vec<(syn::Ident, Vec<syn::Expr>)> = Vec::new();
    meta.parse_nested_meta(|constant| {
        let name = constant.path.require_ident()?.clone();
        match constant.value()?.parse::<syn::Expr>()? {
            syn::Expr::Array(array) => {
                lists.push((name, array.elems.into_iter().collect()));
                Ok(())
            }
            single => Err(syn::Error::new_spanned(
                single,
                format!(
                    "`{name}` inside `zip(..)` needs a list of values, like `{name} = [128, 64]`; \
                     declare a derived constant after the `zip(..)`"
                ),
            )),
        }
    })?;
    let Some((first, values)) = lists.first() else {
        return Err(syn::Error::new_spanned(&zip, empty));
    };
    if let Some((name, other)) = lists.iter().find(|(_, other)| other.len() != values.len()) {
        return Err(syn::Error::new_spanned(
            name,
            format!(
                "the lists of `zip(..)` go together value by value, so they need one length: \
                 `{first}` has {} values and `{name}` {}",
                values.len(),
                other.len()
            ),
        ));
    }
    Ok(ConstDecl::Zipped(lists))
}

/// `#[constants(REG = [8, 4], BLOCK = SPAN * REG)]` on a unit struct of the module: a named
/// set of constants several kernels share.
pub fn constant_set_attr(item: &syn::ItemStruct) -> Option<&syn::Attribute> {
    item.attrs.iter().find(|a| a.path().is_ident(CONSTANTS))
}

/// The entries of a set's `#[constants(...)]`.
pub fn constant_set_decls(attr: &syn::Attribute, errors: &mut Errors) -> Vec<ConstDecl> {
    let mut decls = Vec::new();
    let parsed = attr.parse_nested_meta(|constant| {
        decls.push(constant_decl(&constant)?);
        Ok(())
    });
    if let Err(error) = parsed {
        errors.push(error);
    }
    decls
}

fn dimensions(value: &syn::Expr) -> syn::Result<Vec<syn::Expr>> {
    match value {
        syn::Expr::Array(array) if (1..=3).contains(&array.elems.len()) => {
            Ok(array.elems.iter().cloned().collect())
        }
        other => Err(syn::Error::new_spanned(
            other,
            "expected an array of one to three dimensions, like `[16, 16]`",
        )),
    }
}

fn parenthesized_exprs(input: ParseStream<'_>) -> syn::Result<Vec<syn::Expr>> {
    let content;
    syn::parenthesized!(content in input);
    Ok(
        Punctuated::<syn::Expr, Token![,]>::parse_terminated(&content)?
            .into_iter()
            .collect(),
    )
}

/// `#[kernels]` takes no arguments: families are declared as structs in the module.
pub fn module_attr(args: proc_macro2::TokenStream, errors: &mut Errors) {
    if !args.is_empty() {
        errors.spanned(
            args,
            "`#[kernels]` takes no arguments; declare a family of kernels in the module as \
             `#[family(first, second)] struct Name { bindings }`",
        );
    }
}
