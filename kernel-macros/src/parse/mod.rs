//! syn -> IR. Reads a `#[tessera::kernels]` module: `#[derive(Params)]` structs, `#[kernel]`
//! entry points and helper functions. Nothing here knows WGSL; unsupported Rust is reported at
//! its tokens with what to write instead.

mod body;
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
pub fn module(input: syn::ItemMod, errors: &mut Errors) -> Option<Parsed> {
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
    for item in items {
        match item {
            syn::Item::Struct(ref s) if params::is_params(s) => {
                params.push(params::params_struct(s, errors));
                passthrough.push(item);
            }
            syn::Item::Struct(_) | syn::Item::Use(_) => passthrough.push(item),
            syn::Item::Fn(function) => functions.push(function),
            other => errors.spanned(
                &other,
                "a kernels module holds `#[derive(Params)]` structs, `#[kernel]` functions, helper \
                 functions and `use` items; move this item out of the module",
            ),
        }
    }
    let mut module = ir::Module {
        name: input.ident,
        params,
        helpers: Vec::new(),
        kernels: Vec::new(),
    };
    for function in functions {
        match kernel::kernel_attr(&function) {
            Some(attr) => {
                if let Some(kernel) = kernel::kernel(&function, attr, &module.params, errors) {
                    module.kernels.push(kernel);
                }
            }
            None => {
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
