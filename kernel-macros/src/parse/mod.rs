//! syn -> IR. Reads a `#[tessera::kernels]` module: `#[derive(Params)]` structs, `#[kernel]`
//! entry points and helper functions. Nothing here knows WGSL; unsupported Rust is reported at
//! its tokens with what to write instead.

mod attr;
mod body;
pub mod consts;
mod host;
mod kernel;
pub mod keywords;
pub mod params;
mod ty;

use crate::diag::Errors;
use crate::ir;

/// What the module attribute hands on: the IR, plus the Rust items that stay in the module.
pub struct Parsed {
    pub module: ir::Module,
    /// Items emitted unchanged (the params structs, `use` items, plain Rust structs).
    pub passthrough: Vec<syn::Item>,
    /// The module's attributes and visibility.
    pub attrs: Vec<syn::Attribute>,
    pub vis: syn::Visibility,
}

/// Parses the module. Kernels whose signature cannot be read are left out of the IR (their
/// errors are in `errors`); everything else that can be parsed is.
pub fn module(
    args: proc_macro2::TokenStream,
    input: syn::ItemMod,
    errors: &mut Errors,
) -> Option<Parsed> {
    let families = attr::module_attr(args, errors);
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
    for item in items {
        match item {
            syn::Item::Struct(ref s) if params::is_params(s) => {
                params.push(params::params_struct(s, errors));
                passthrough.push(item);
            }
            syn::Item::Struct(_) | syn::Item::Use(_) => passthrough.push(item),
            syn::Item::Const(ref constant) => {
                // A constant that could not be evaluated (already reported) still gets a value,
                // so its uses do not add errors of their own.
                let value = consts::module_const(constant, &module_consts, errors).unwrap_or(consts::Value::U32(1));
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
    let mut module = ir::Module {
        name: input.ident,
        params,
        helpers: Vec::new(),
        kernels: Vec::new(),
        families,
    };
    for function in functions {
        match kernel::kernel_attr(&function) {
            Some(attr) => {
                module.kernels.extend(kernel::kernel(
                    &function,
                    attr,
                    &module.params,
                    &module_consts,
                    errors,
                ));
            }
            None => {
                let Ok(function) = module_consts.apply(&function).map_err(|e| errors.push(e))
                else {
                    continue;
                };
                if let Some(helper) = kernel::helper(&function, errors) {
                    module.helpers.push(helper);
                }
            }
        }
    }
    Some(Parsed {
        module,
        passthrough,
        attrs: input.attrs,
        vis: input.vis,
    })
}

#[cfg(test)]
mod tests;
