//! Bounds on how deeply a module's code may nest, checked before anything recursive walks it.
//!
//! Two limits, for two reasons:
//!
//! - [`tokens`] runs on the raw token trees before syn parses them, with an explicit stack. syn
//!   parses (and prints back, and drops) nested code by recursion; unoptimized, as proc macros
//!   are usually built, it overflows rustc's 8 MiB stack at about 320 nested `if`s, 650 nested
//!   parentheses or 3000 chained prefix operators, and `rustc` dies without a diagnostic.
//! - [`Nesting`] counts, while a body is parsed, how deeply the WGSL it becomes will nest, and
//!   cuts the body off where that passes [`MAX_NESTING`]. Every later stage then walks a tree
//!   of bounded depth, and the WGSL stays inside what naga and Tint (Chrome's WGSL compiler)
//!   accept.

use std::cell::Cell;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;

use crate::diag::Errors;

/// The most brackets, braces and parentheses the module's tokens may nest.
///
/// Far below syn's own limit (about 320 nested `if`s on an 8 MiB stack, unoptimized), and above
/// what any body within [`MAX_NESTING`] needs.
pub const MAX_TOKEN_DEPTH: usize = 128;

/// The most tokens one chain of code may hold: the tokens of a statement (up to `;` or `,`)
/// together with those of the statements enclosing it.
///
/// An operator chain (`a + b + ...`, `x.f().g()...`, `- - x`) nests one syn node per operator
/// without nesting tokens; syn parses prefix chains, and prints every chain, by recursion
/// (about 3000 levels overflow an unoptimized build). 1024 tokens leave room for
/// [`MAX_TOKEN_DEPTH`] groups on the same path and are more than any body within
/// [`MAX_NESTING`] can use.
pub const MAX_TOKEN_CHAIN: usize = 1024;

/// The deepest WGSL nesting a function body may lower to, in Tint's units.
///
/// Tint counts nested statements up to 127 (`if` 2, a loop 2, `switch` 3, a block 1; tessera
/// wraps a `for` loop in a block, so 3) and its parser's recursion up to about 126 (each
/// brace, parenthesis, bracket and call 1, a prefix operator with its parentheses 2, shared
/// between statements and the expressions inside them). naga stops at 127 nested braces. The
/// weights in [`Nesting`] are the larger of the two for each construct, and 100 leaves room
/// for the entry point's own braces and for builtins whose WGSL adds parentheses.
pub const MAX_NESTING: u32 = 100;

/// Checks the nesting of `tokens` without recursion: at most [`MAX_TOKEN_DEPTH`] groups deep
/// and [`MAX_TOKEN_CHAIN`] tokens along any chain.
pub fn tokens(tokens: TokenStream) -> syn::Result<()> {
    // One entry per open group: its remaining tokens, the chain length its statements start
    // from, and the chain length the enclosing group resumes from once it is closed.
    let mut stack = vec![Open {
        trees: tokens.into_iter().peekable(),
        base: 0,
        resume: 0,
    }];
    let mut chain = 0usize;
    while let Some(open) = stack.last_mut() {
        let Some(tree) = open.trees.next() else {
            chain = open.resume;
            stack.pop();
            continue;
        };
        chain += 1;
        if chain > MAX_TOKEN_CHAIN {
            return Err(too_long(tree.span()));
        }
        match tree {
            TokenTree::Punct(p) if matches!(p.as_char(), ';' | ',') => chain = open.base,
            TokenTree::Group(group) => {
                // `if c { .. } let x = ..;`: a block followed by a new statement ends one.
                let ends_statement = group.delimiter() == Delimiter::Brace
                    && open.trees.peek().is_none_or(starts_statement);
                let resume = if ends_statement { open.base } else { chain };
                if stack.len() > MAX_TOKEN_DEPTH {
                    return Err(too_deep(group.span_open()));
                }
                stack.push(Open {
                    trees: group.stream().into_iter().peekable(),
                    base: chain,
                    resume,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// A group being read by [`tokens`].
struct Open {
    trees: std::iter::Peekable<proc_macro2::token_stream::IntoIter>,
    base: usize,
    resume: usize,
}

/// Whether a token after a block starts the next statement (rather than continuing an
/// expression, as `else`, `as` and operators do).
fn starts_statement(tree: &TokenTree) -> bool {
    match tree {
        TokenTree::Ident(ident) => ident != "else" && ident != "as",
        TokenTree::Punct(p) => p.as_char() == '#',
        TokenTree::Literal(_) => true,
        TokenTree::Group(_) => false,
    }
}

fn too_deep(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "this code nests more than {MAX_TOKEN_DEPTH} brackets, braces or parentheses deep, \
             more than tessera can compile; move inner parts into `let` bindings or helper \
             functions"
        ),
    )
}

fn too_long(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "this expression is longer than tessera can compile (more than {MAX_TOKEN_CHAIN} \
             tokens in one chain of operators); split it into `let` bindings"
        ),
    )
}

thread_local! {
    /// The WGSL nesting of the construct being parsed, in [`MAX_NESTING`]'s units. A counter
    /// beside the parser rather than an argument of its every function: only [`Nesting`]
    /// changes it, and it is back to 0 once a body is parsed.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether the outermost construct being parsed was reported as too deep already: one
    /// error per statement, not one per construct past the limit.
    static REPORTED: Cell<bool> = const { Cell::new(false) };
}

/// A construct the parser is inside of; leaving it (dropping this) gives its nesting back.
pub struct Nesting {
    weight: u32,
}

impl Nesting {
    /// Enters the expression `e`; `None`, with an error at `e`, when it would nest deeper than
    /// [`MAX_NESTING`] (its parts are then not parsed).
    pub fn expr(e: &syn::Expr, errors: &mut Errors) -> Option<Nesting> {
        Nesting::enter(expr_weight(e), e, errors)
    }

    /// Enters the statement `e` (an `if`, loop, `match` or block in statement position).
    pub fn stmt(e: &syn::Expr, errors: &mut Errors) -> Option<Nesting> {
        Nesting::enter(stmt_weight(e), e, errors)
    }

    /// Enters `else if`: lowered as an `if` inside the `else` block.
    pub fn else_if(e: &syn::ExprIf, errors: &mut Errors) -> Option<Nesting> {
        Nesting::enter(IF, e, errors)
    }

    fn enter(weight: u32, tokens: &impl ToTokens, errors: &mut Errors) -> Option<Nesting> {
        let depth = DEPTH.with(Cell::get).saturating_add(weight);
        if depth > MAX_NESTING {
            if REPORTED.with(|r| r.replace(true)) {
                return None;
            }
            errors.spanned(
                tokens,
                format!(
                    "this nests deeper than WGSL allows: tessera accepts {MAX_NESTING} levels of \
                     operators, calls, indexing, blocks, `if`s, `match`es and loops in one \
                     function; split the expression with `let` bindings, or move inner code into \
                     a helper function"
                ),
            );
            return None;
        }
        DEPTH.with(|d| d.set(depth));
        Some(Nesting { weight })
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| {
            d.set(d.get().saturating_sub(self.weight));
            d.get()
        });
        if depth == 0 {
            REPORTED.with(|r| r.set(false));
        }
    }
}

/// An `if`: Tint counts the statement and its block.
const IF: u32 = 2;

/// What an expression adds to the WGSL nesting of its operands: binary operators are printed
/// in parentheses, a prefix operator as `-(x)`, casts and calls as calls; `if`, `match` and
/// blocks used as values become statements. Parentheses are not printed (the lowering adds its
/// own); leaves add nothing.
fn expr_weight(e: &syn::Expr) -> u32 {
    match e {
        syn::Expr::Binary(_)
        | syn::Expr::Cast(_)
        | syn::Expr::Field(_)
        | syn::Expr::Index(_)
        | syn::Expr::Array(_)
        | syn::Expr::Repeat(_)
        | syn::Expr::Reference(_)
        | syn::Expr::Block(_) => 1,
        // Builtins' WGSL may wrap an argument in parentheses of its own.
        syn::Expr::Unary(_) | syn::Expr::Call(_) | syn::Expr::MethodCall(_) => 2,
        syn::Expr::If(_) => IF,
        // `switch` with a `case` block.
        syn::Expr::Match(_) => 3,
        _ => 0,
    }
}

/// What a statement adds to the nesting of the statements inside it.
fn stmt_weight(e: &syn::Expr) -> u32 {
    match e {
        syn::Expr::Block(_) => 1,
        syn::Expr::If(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => IF,
        // A `for` loop is a WGSL loop inside a block that holds its bounds; a `match`, a
        // `switch` with a `case` block.
        syn::Expr::ForLoop(_) | syn::Expr::Match(_) => 3,
        _ => 0,
    }
}
