//! Error accumulation for every stage: errors are collected with the user's spans and reported
//! together, so one mistake does not hide the next.

use std::fmt::Display;

use proc_macro2::{Punct, Spacing, TokenStream, TokenTree};

use crate::ir::Span;

/// The errors found so far. The same message at the same place is kept once (a kernel with
/// several instances is checked once per instance).
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
    seen: std::collections::HashSet<String>,
}

impl Errors {
    /// Records an error at `span`.
    pub fn at(&mut self, span: impl Into<Span>, message: impl Display) {
        let span = span.into();
        // Two tokens carrying the first and last span make `new_spanned` underline the range.
        let ends: TokenStream = [span.first, span.last]
            .into_iter()
            .map(|s| {
                let mut punct = Punct::new('.', Spacing::Alone);
                punct.set_span(s);
                TokenTree::Punct(punct)
            })
            .collect();
        self.push(syn::Error::new_spanned(ends, message));
    }

    /// Records an error spanning the tokens of `tokens`.
    pub fn spanned(&mut self, tokens: impl quote::ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error that is already a `syn::Error`.
    pub fn push(&mut self, error: syn::Error) {
        let key = format!("{:?}{error}", error.span());
        if self.seen.insert(key) {
            self.errors.push(error);
        }
    }

    /// Records every error of `other`.
    pub fn append(&mut self, other: Errors) {
        other.errors.into_iter().for_each(|e| self.push(e));
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// All errors combined into one, or `Ok` when there are none.
    pub fn finish(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        first.extend(errors);
        Err(first)
    }
}
