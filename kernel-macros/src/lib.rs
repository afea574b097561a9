//! tessera's kernel macros: a small compiler from annotated Rust to WGSL and launchers.
//!
//! The stages, one module each, share only the IR (`ir.rs`, with the builtins' table in
//! `ir/builtins.rs`): a tree of kernel -> instance (element type, constants) -> variant
//! (general body or a specialization; one WGSL entry point each). `compile.rs` runs them in
//! order, for the macro and for the tests:
//!
//! ```text
//! parse/     syn -> IR (attributes, signatures, bodies); knows no WGSL
//! check/     types, names, limits, uniform layouts, barrier uniformity; fills in every type
//! specialize/  one more variant per `specialize(..)`, with the values folded in
//! lower/     entry-point names into the IR; IR -> WGSL text + source map (byte range -> span)
//! validate   naga parses and validates the WGSL; errors mapped back to Rust spans
//! expand/    Rust tokens: the module, WGSL constant, launcher types, Params impls
//! ```

mod check;
mod compile;
mod diag;
mod expand;
#[cfg(test)]
mod fuzz;
mod ir;
mod lower;
mod parse;
mod specialize;
mod validate;

use proc_macro::TokenStream;

/// Turns a module of GPU kernels into WGSL (validated by naga while the macro expands) and a
/// typed launcher per `#[kernel]`.
///
/// The kernel language, the bindings and the launchers are documented in the `tessera` crate.
#[proc_macro_attribute]
pub fn kernels(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::kernels(args.into(), input.into()).into()
}

/// Turns a module of helper functions, constants and `Params` structs into a device-function
/// library, which any `#[kernels]` module or other library, in this crate or another, imports
/// with `#[device] use path::to::it;`.
///
/// Libraries are documented in the `tessera` crate.
#[proc_macro_attribute]
pub fn device(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::device(args.into(), input.into()).into()
}

/// Called back by a device library's macro with a kernels module, or a library, that imports
/// it; not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __import(input: TokenStream) -> TokenStream {
    expand::import(input.into()).into()
}

/// Marks a kernel inside a `#[kernels]` module; used anywhere else it is an error.
#[proc_macro_attribute]
pub fn kernel(_args: TokenStream, input: TokenStream) -> TokenStream {
    expand::kernel_outside_module(input.into()).into()
}

/// Derives the uniform-parameter traits for a `#[repr(C)]` struct of scalars and vectors,
/// checking at compile time that its Rust layout equals WGSL's uniform layout.
#[proc_macro_derive(Params)]
pub fn derive_params(input: TokenStream) -> TokenStream {
    expand::derive_params(input.into()).into()
}

/// Runs [`compile::compile`] on a module written with `quote!`, for the tests of each stage.
#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;

    use crate::compile::{compile, Compiled};
    use crate::diag::Errors;
    use crate::ir;

    fn compiled(tokens: TokenStream) -> Result<Compiled, Vec<String>> {
        let mut errors = Errors::default();
        crate::parse::nesting::tokens(tokens.clone()).map_err(|e| vec![e.to_string()])?;
        let item = syn::parse2(tokens).map_err(|e| vec![e.to_string()])?;
        match compile(TokenStream::new(), item, &mut errors) {
            Some(compiled) if errors.is_empty() => Ok(compiled),
            _ => Err(messages(errors)),
        }
    }

    /// The checked and specialized IR, or the error messages.
    pub fn checked(tokens: TokenStream) -> Result<ir::Module, Vec<String>> {
        compiled(tokens).map(|c| c.parsed.module)
    }

    /// The validated WGSL, or the error messages.
    pub fn wgsl(tokens: TokenStream) -> Result<String, Vec<String>> {
        compiled(tokens).map(|c| c.wgsl.map(|w| w.text).unwrap_or_default())
    }

    /// Runs `f` on a thread with rustc's 8 MiB stack, where the macro runs: a test of deeply
    /// nested input then fails by overflowing the stack as the macro would.
    pub fn on_rustc_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(f)
            .and_then(|thread| {
                thread
                    .join()
                    .map_err(|_| std::io::Error::other("the test thread panicked"))
            })
            .unwrap()
    }

    /// A module with one kernel `k(p: &P, y: &mut [f32])` (`P { n: u32 }`, 64 invocations)
    /// around `body`, and `helpers` beside it; from text, since the generated sizes are far
    /// beyond what `quote!` writes comfortably.
    pub fn kernel_module(helpers: &str, body: &str) -> TokenStream {
        let text = format!(
            "mod m {{ #[repr(C)] #[derive(Params)] struct P {{ n: u32 }} {helpers} \
             #[kernel(workgroup = [64], grid = [1])] fn k(p: &P, y: &mut [f32]) {{ {body} }} }}"
        );
        text.parse().unwrap()
    }

    fn messages(errors: Errors) -> Vec<String> {
        match errors.finish() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        }
    }
}
