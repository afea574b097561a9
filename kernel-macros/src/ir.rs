//! The kernel IR: what `parse/` produces from syn, what `check/` types and validates, what
//! `lower/` turns into WGSL and what `expand/` turns into launchers. It is the only thing the
//! stages share. Every node that can be the subject of an error carries the [`Span`] of the
//! user's tokens; types of expressions and locals start [`Ty::Unknown`] and are filled in by
//! `check/`.
//!
//! The nodes are in files by what they model: the types in `ir/ty.rs`, the tree of module,
//! kernels, instances and variants in `ir/module.rs`, statements and expressions in
//! `ir/body.rs`, and the walks over bodies in `ir/visit.rs`. `ir/builtins.rs` is the builtins'
//! table, `ir/eval.rs` the constant evaluator.

mod body;
pub mod builtins;
pub mod eval;
mod module;
mod ty;
mod visit;

use quote::ToTokens;

pub use body::*;
pub use module::*;
pub use ty::*;
pub use visit::*;

/// Where in the user's code a node came from: the spans of its first and last token, so an
/// error underlines the whole expression (stable Rust cannot join spans).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub first: proc_macro2::Span,
    pub last: proc_macro2::Span,
}

impl Span {
    /// The span of everything in `tokens`.
    pub fn of(tokens: &impl ToTokens) -> Self {
        let mut trees = tokens.to_token_stream().into_iter();
        let first = trees
            .next()
            .map_or_else(proc_macro2::Span::call_site, |t| t.span());
        let last = trees.last().map_or(first, |t| t.span());
        Span { first, last }
    }

    /// The Rust source line the node starts on.
    pub fn line(self) -> usize {
        self.first.start().line
    }
}

impl From<proc_macro2::Span> for Span {
    fn from(span: proc_macro2::Span) -> Self {
        Span {
            first: span,
            last: span,
        }
    }
}
