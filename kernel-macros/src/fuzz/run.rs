//! One case through the whole macro (`expand::kernels`, as rustc calls it) on a thread of its
//! own with rustc's 8 MiB stack, named after the case's seed: a stack overflow aborts the test
//! process, and Rust's message then names that thread, so the seed is never lost. A panic is
//! caught and recorded with its location.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Once;
use std::time::{Duration, Instant};

use proc_macro2::TokenStream;

/// rustc's main thread stack, on which proc macros run.
const STACK: usize = 8 << 20;

/// The prefix of every case thread's name; the panic hook stays quiet on these threads.
pub const THREAD_PREFIX: &str = "fuzz case ";

/// What the macro made of a case.
pub enum Verdict {
    /// No errors: the WGSL constants of the expanded module (`WGSL` as `all`, the narrower
    /// texts by their names in lower case, `wgsl_plain`).
    Accepted(Vec<(String, String)>),
    /// The `compile_error!` messages.
    Rejected(Vec<String>),
    Panicked(String),
    /// The expansion is not a Rust file: rustc would report errors that are not the macro's.
    NotRust(String),
}

/// A verdict and how long the macro took.
pub struct Ran {
    pub verdict: Verdict,
    pub elapsed: Duration,
    /// The input's length as text, in bytes.
    pub size: usize,
    /// The input as text, kept for the verdicts that are failures.
    pub input: Option<String>,
}

thread_local! {
    /// The last panic on this thread: message and location.
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `build`'s case on a fresh thread named `name` (which starts with [`THREAD_PREFIX`]);
/// `None` when it has not finished after `patience` (the thread is left running).
pub fn on_thread<F>(name: String, patience: Duration, build: F) -> Option<Ran>
where
    F: FnOnce() -> (TokenStream, TokenStream) + Send + 'static,
{
    quiet_panics_on_case_threads();
    let (send, receive) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(name)
        .stack_size(STACK)
        .spawn(move || {
            let (args, input) = build();
            let _ = send.send(expand(args, input));
        });
    spawned.expect("a thread for the case");
    receive.recv_timeout(patience).ok()
}

/// The macro on one module, panics caught.
pub fn expand(args: TokenStream, input: TokenStream) -> Ran {
    let text = input.to_string();
    let start = Instant::now();
    let output = panic::catch_unwind(AssertUnwindSafe(|| crate::expand::kernels(args, input)));
    let elapsed = start.elapsed();
    let verdict = match output {
        Ok(tokens) => read_output(tokens),
        Err(_) => Verdict::Panicked(
            PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "a panic without a message".into()),
        ),
    };
    let size = text.len();
    let input = match verdict {
        Verdict::Accepted(_) => None,
        _ => Some(text),
    };
    Ran {
        verdict,
        elapsed,
        size,
        input,
    }
}

/// Installs, once, a panic hook that records the panics of case threads instead of printing
/// them, and hands every other panic to the previous hook.
fn quiet_panics_on_case_threads() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            if !thread.name().is_some_and(|n| n.starts_with(THREAD_PREFIX)) {
                return previous(info);
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            PANIC.with(|p| *p.borrow_mut() = Some(format!("{message}{location}")));
        }));
    });
}

/// The errors and WGSL constants of the macro's output.
fn read_output(tokens: TokenStream) -> Verdict {
    let file: syn::File = match syn::parse2(tokens) {
        Ok(file) => file,
        Err(error) => return Verdict::NotRust(error.to_string()),
    };
    let mut messages = Vec::new();
    let mut wgsl = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Macro(m)
                if m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "compile_error") =>
            {
                let message = syn::parse2::<syn::LitStr>(m.mac.tokens.clone())
                    .map(|l| l.value())
                    .unwrap_or_else(|_| m.mac.tokens.to_string());
                messages.push(message);
            }
            syn::Item::Mod(module) => wgsl.extend(wgsl_constants(module)),
            _ => {}
        }
    }
    match messages.is_empty() {
        true => Verdict::Accepted(wgsl),
        false => Verdict::Rejected(messages),
    }
}

fn wgsl_constants(module: &syn::ItemMod) -> Vec<(String, String)> {
    let items = module
        .content
        .as_ref()
        .map(|(_, items)| items.as_slice())
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Const(c) => {
                let name = match c.ident.to_string() {
                    name if name == "WGSL" => "all".to_owned(),
                    name if name.starts_with("WGSL_") => name.to_lowercase(),
                    _ => return None,
                };
                match &*c.expr {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => Some((name, s.value())),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}
