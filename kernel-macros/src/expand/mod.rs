//! The Rust tokens: the module with its WGSL constant and launcher types, the `Params`
//! impls, and `compile_error!`s. Generated code reaches the runtime only through
//! `::tessera::__private`. On errors the launchers are still emitted (with empty WGSL) so one
//! mistake does not cascade into errors at every use of the launcher.

mod constants;
mod family;
mod host;
mod launcher;
mod params;

use proc_macro2::TokenStream;
use quote::quote;

use crate::diag::Errors;
use crate::{check, lower, parse, specialize, validate};

pub use params::derive_params;

/// `#[kernels] mod name { ... }`: every stage, in order.
pub fn kernels(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let item: syn::ItemMod = match syn::parse2(input) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error(),
    };
    let module_span = item.ident.span();
    let Some(mut parsed) = parse::module(args, item, &mut errors) else {
        return compile_errors(errors);
    };
    check::check(&mut parsed.module, &mut errors);
    if errors.is_empty() {
        specialize::specialize(&mut parsed.module);
    }
    let wgsl = errors.is_empty().then(|| lower::module(&parsed.module));
    if let Some(wgsl) = &wgsl {
        validate::validate(
            wgsl,
            &parsed.module.features(),
            module_span.into(),
            &mut errors,
        );
    }
    let without_f16 = wgsl
        .as_ref()
        .and_then(|_| without_f16(&mut parsed.module, module_span, &mut errors));
    let sources = Sources {
        all: wgsl.as_ref(),
        without_f16: without_f16.as_ref(),
    };
    let module = module_tokens(&parsed, sources, errors.is_empty());
    let errors = compile_errors(errors);
    quote! { #errors #module }
}

/// The WGSL of the module's kernels that need no `f16`, when others do: `enable f16;` fails
/// on a device without the feature, and the other kernels must still run there.
fn without_f16(
    module: &mut crate::ir::Module,
    span: proc_macro2::Span,
    errors: &mut Errors,
) -> Option<lower::Wgsl> {
    use crate::ir::Feature;
    let needs = |k: &crate::ir::Kernel| k.requirements.has(Feature::F16);
    if !module.kernels.iter().any(needs) || module.kernels.iter().all(needs) {
        return None;
    }
    let all = std::mem::take(&mut module.kernels);
    module.kernels = all.iter().filter(|k| !needs(k)).cloned().collect();
    let wgsl = lower::module(module);
    validate::validate(&wgsl, &module.features(), span.into(), errors);
    module.kernels = all;
    Some(wgsl)
}

/// The WGSL texts the launchers build pipelines from.
#[derive(Clone, Copy)]
struct Sources<'a> {
    all: Option<&'a lower::Wgsl>,
    /// The kernels without `f16`, when the module has kernels of both kinds.
    without_f16: Option<&'a lower::Wgsl>,
}

/// The module; with `valid` false (errors were reported), launchers are emitted without the
/// grid and length code, which could refer to what the errors are about.
fn module_tokens(parsed: &parse::Parsed, sources: Sources<'_>, valid: bool) -> TokenStream {
    let wgsl = sources.all;
    let parse::Parsed {
        module,
        passthrough,
        attrs,
        vis,
    } = parsed;
    let name = &module.name;
    // A launcher whose name a params struct already takes was reported by `check`; leaving it
    // out keeps rustc from piling its own errors on top.
    let clashes = |kernel: &crate::ir::Kernel| {
        module
            .params
            .iter()
            .any(|p| p.name == kernel.launcher_name() || p.name == kernel.args_name())
    };
    // Without WGSL (after errors) the entry point names do not matter.
    let entries: Vec<String> = module
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            wgsl.and_then(|w| w.entry_points.get(i).cloned())
                .unwrap_or_else(|| k.name.to_string())
        })
        .collect();
    let mut groups: Vec<Vec<(&crate::ir::Kernel, String)>> = Vec::new();
    for (kernel, entry) in module.kernels.iter().zip(entries) {
        match groups.last_mut() {
            Some(group) if group[0].0.name == kernel.name => group.push((kernel, entry)),
            _ => groups.push(vec![(kernel, entry)]),
        }
    }
    let launchers = groups
        .iter()
        .filter(|group| !clashes(group[0].0))
        .map(|group| launcher::launcher(module, group, sources.without_f16.is_some(), valid));
    let families = module
        .families
        .iter()
        .map(|family| family::family(module, family));
    let sets = module.constant_sets.iter().map(constants::set);
    let wgsl = wgsl.map(|w| w.text.as_str()).unwrap_or_default();
    let without_f16 = sources.without_f16.map(|w| {
        let text = w.text.as_str();
        quote! {
            /// The WGSL of the kernels that need no `f16`, for devices without it.
            #[doc(hidden)]
            pub const WGSL_WITHOUT_F16: &str = #text;
        }
    });
    let doc = format!(
        "The WGSL of every kernel in `{name}`, generated by tessera and validated by naga."
    );
    quote! {
        #(#attrs)*
        #vis mod #name {
            #(#passthrough)*

            #[doc = #doc]
            pub const WGSL: &str = #wgsl;

            #without_f16

            #(#sets)*
            #(#launchers)*
            #(#families)*
        }
    }
}

fn compile_errors(errors: Errors) -> TokenStream {
    match errors.finish() {
        Ok(()) => TokenStream::new(),
        Err(error) => error.to_compile_error(),
    }
}

/// `#[kernel]` outside a `#[kernels]` module.
pub fn kernel_outside_module(input: TokenStream) -> TokenStream {
    let span = syn::parse2::<syn::ItemFn>(input.clone())
        .map(|f| f.sig.ident.span())
        .unwrap_or_else(|_| proc_macro2::Span::call_site());
    let error = syn::Error::new(
        span,
        "`#[kernel]` functions live in a `#[tessera::kernels]` module, beside their `#[derive(Params)]` \
         structs and helpers: `#[tessera::kernels] mod my_kernels { ... }`",
    )
    .to_compile_error();
    quote! { #error }
}
