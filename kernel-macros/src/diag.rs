//! Error accumulation for every stage: errors are collected with the user's spans and reported
//! together, so one mistake does not hide the next.

use proc_macro2::Span;
use std::fmt::Display;

/// The errors found so far.
#[derive(Default)]
pub struct Errors(Vec<syn::Error>);

impl Errors {
    /// Records an error at `span`.
    pub fn at(&mut self, span: Span, message: impl Display) {
        self.0.push(syn::Error::new(span, message));
    }

    /// Records an error spanning the tokens of `tokens`.
    pub fn spanned(&mut self, tokens: impl quote::ToTokens, message: impl Display) {
        self.0.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error that is already a `syn::Error`.
    pub fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// All errors combined into one, or `Ok` when there are none.
    pub fn finish(self) -> Result<(), syn::Error> {
        let mut errors = self.0.into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        first.extend(errors);
        Err(first)
    }
}
