//! tessera's kernel macros: a small compiler from annotated Rust to WGSL and launchers.
//!
//! The stages, one module each, share only the IR ([`ir`]):
//!
//! ```text
//! parse/     syn -> IR (attributes, signatures, bodies); knows no WGSL
//! check/     types, names, limits, uniform layouts; fills in every type
//! lower/     IR -> WGSL text + source map (WGSL byte range -> Rust span)
//! validate   naga parses and validates the WGSL; errors mapped back to Rust spans
//! expand/    Rust tokens: the module, WGSL constant, launcher types, Params impls
//! ```

mod check;
mod diag;
mod expand;
mod ir;
mod lower;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Turns a module of GPU kernels into WGSL and typed launchers.
///
/// See the `tessera` crate for the kernel language.
#[proc_macro_attribute]
pub fn kernels(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::kernels(args.into(), input.into()).into()
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
