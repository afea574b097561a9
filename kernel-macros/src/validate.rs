//! naga parses and validates the generated WGSL while the macro expands. Its errors are
//! mapped back through the source map to the Rust tokens that produced the offending WGSL,
//! and phrased for the user's code: the WGSL functions are named as the kernels and helpers
//! they come from, and names the user did not write (naga's handles `[12]`, generated
//! `tsr_..` values) are left out.

use std::error::Error;

use crate::ir::{Feature, Span};

use crate::diag::Errors;
use crate::lower::{names::GENERATED, Wgsl};

/// Whether a naga parse error comes from evaluating a constant expression (the user's
/// constants, through operations tessera's own evaluator does not fold, such as vectors and
/// math builtins): a problem with the user's constants, not with the generated WGSL.
fn is_constant_evaluation(message: &str) -> bool {
    [
        "by zero",
        "overflowed",
        "out of valid range",
        "is infinite",
        "Cannot apply math function",
        "cannot be represented",
    ]
    .iter()
    .any(|words| message.contains(words))
}

/// naga's verdict on one WGSL text. It is computed from the text alone, so that it can be
/// computed on a thread of its own (`start`): the spans of the user's tokens stay on the
/// macro's thread, where `report` maps the verdict onto them.
pub enum Verdict {
    Valid,
    Unparsed(naga::front::wgsl::ParseError),
    Invalid(Box<naga::WithSpan<naga::valid::ValidationError>>),
    /// naga panicked, with this message.
    Panicked(String),
}

/// Parses and validates `text` with the capabilities of `features`.
pub fn judge(text: &str, features: &[Feature]) -> Verdict {
    let module = match naga::front::wgsl::parse_str(text) {
        Ok(module) => module,
        Err(error) => return Verdict::Unparsed(error),
    };
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities(features));
    match validator.validate(&module) {
        Ok(_) => Verdict::Valid,
        Err(error) => Verdict::Invalid(Box::new(error)),
    }
}

/// A verdict being computed on a thread of its own (`start`), or already computed.
pub enum Pending {
    Running(std::thread::JoinHandle<Verdict>),
    Done(Verdict),
}

/// The stack of a validating thread: rustc runs the macro on 8 MiB, and naga recurses over
/// the user's nesting.
const STACK: usize = 16 << 20;

/// Starts judging `text` on a thread of its own, so that the macro can lower the next text
/// meanwhile (the nn module's texts take naga about a second each); where no thread can be
/// started, judges it here.
pub fn start(text: &str, features: &[Feature]) -> Pending {
    let (owned, wanted) = (text.to_owned(), features.to_vec());
    let thread = std::thread::Builder::new()
        .name("tessera-validate".to_owned())
        .stack_size(STACK)
        .spawn(move || judge(&owned, &wanted));
    match thread {
        Ok(thread) => Pending::Running(thread),
        Err(_) => Pending::Done(judge(text, features)),
    }
}

impl Pending {
    /// The verdict, once its thread is done.
    pub fn finish(self) -> Verdict {
        match self {
            Pending::Done(verdict) => verdict,
            Pending::Running(thread) => thread.join().unwrap_or_else(|payload| {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Verdict::Panicked(message)
            }),
        }
    }
}

/// Reports `verdict` on `wgsl` at the mapped Rust spans (or `fallback`).
pub fn report(verdict: Verdict, wgsl: &Wgsl, fallback: Span, errors: &mut Errors) {
    match verdict {
        Verdict::Valid => {}
        Verdict::Unparsed(error) => {
            let offset = error
                .labels()
                .find_map(|(span, _)| span.to_range())
                .map(|r| r.start);
            let span = offset.and_then(|o| wgsl.span_at(o)).unwrap_or(fallback);
            let message = for_the_user(error.message(), wgsl);
            let message = if is_constant_evaluation(error.message()) {
                format!(
                    "WGSL evaluates this expression when the shader is compiled, because its \
                     operands are constants, and the value cannot be computed: {message}; \
                     change the constants, or compute it from a run-time value"
                )
            } else {
                format!(
                    "tessera generated WGSL for this code that does not parse ({message}); this \
                     is a bug in tessera, please report it"
                )
            };
            errors.at(span, message);
        }
        Verdict::Invalid(error) => {
            let span = error
                .spans()
                .filter_map(|(span, _)| map_span(wgsl, *span))
                .last()
                .unwrap_or(fallback);
            errors.at(span, describe(&error, wgsl));
        }
        Verdict::Panicked(message) => errors.at(
            fallback,
            format!(
                "naga panicked while validating the WGSL generated for this module ({}); this \
                 is a bug in tessera or naga, please report it",
                for_the_user(&message, wgsl)
            ),
        ),
    }
}

fn map_span(wgsl: &Wgsl, span: naga::Span) -> Option<Span> {
    let range = span.to_range()?;
    wgsl.span_at(range.start)
}

/// The user-facing message for a naga validation error: the function it is in, its innermost
/// cause (what is wrong), and naga's notes (`Shader requires capability ..`).
fn describe(error: &naga::WithSpan<naga::valid::ValidationError>, wgsl: &Wgsl) -> String {
    let mut causes = vec![error.as_inner().to_string()];
    let mut source = error.as_inner().source();
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    let place = wgsl
        .functions
        .iter()
        .find(|(name, _)| causes.iter().any(|c| mentions(c, name)))
        .map(|(_, user)| format!(" in {user}"))
        .unwrap_or_default();
    let cause = causes.last().map(String::as_str).unwrap_or("invalid WGSL");
    let mut message = format!(
        "naga rejected the WGSL generated for this code{place}: {}",
        for_the_user(cause, wgsl)
    );
    let rendered = error.emit_to_string(&wgsl.text);
    for note in rendered.lines().filter_map(|l| l.trim().strip_prefix("= ")) {
        message.push_str("; ");
        message.push_str(&for_the_user(note, wgsl));
    }
    message
}

/// Whether `text` names `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    words(text).any(|word| word == name)
}

/// The identifier-like words of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// `text` with the WGSL functions named as the user's kernels and helpers, and without naga's
/// handles (`[12]`) and generated names (`tsr_..`), which the user never wrote.
fn for_the_user(text: &str, wgsl: &Wgsl) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric() || c == '_' || c == '[') {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        if let Some(after) = handle_end(rest) {
            rest = &rest[after..];
            // naga's `Expression([7])`: a value the span points at.
            if let (Some(open), Some(close)) = (out.strip_suffix('('), rest.strip_prefix(')')) {
                let wrapper = open.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
                out.truncate(wrapper.len());
                out.push_str("a value");
                rest = close;
            }
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len())
            .max(1);
        let word = &rest[..end];
        match wgsl.functions.iter().find(|(name, _)| name == word) {
            Some((_, user)) => out.push_str(user),
            None if word.starts_with(GENERATED) => out.push_str("a value tessera generated"),
            None => out.push_str(word),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    // Removing a handle leaves a double space ("The pointer  doesn't").
    out.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The length of a naga handle (`[12]`) at the start of `text`.
fn handle_end(text: &str) -> Option<usize> {
    let digits = text.strip_prefix('[')?;
    let len = digits.find(|c: char| !c.is_ascii_digit())?;
    (len > 0 && digits[len..].starts_with(']')).then_some(len + 2)
}

/// naga capabilities for the features the module's kernels declare.
fn capabilities(features: &[Feature]) -> naga::valid::Capabilities {
    features
        .iter()
        // `unpack_2x16_float` and `pack_2x16_float`: every Vulkan, Metal and DX12 device has it.
        .fold(
            naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32,
            |caps, feature| {
                caps | match feature {
                    Feature::F16 => naga::valid::Capabilities::SHADER_FLOAT16,
                    Feature::Subgroups => naga::valid::Capabilities::SUBGROUP,
                    Feature::CooperativeMatrix => naga::valid::Capabilities::COOPERATIVE_MATRIX,
                }
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wgsl(text: &str) -> Wgsl {
        Wgsl {
            text: text.to_owned(),
            map: Vec::new(),
            functions: vec![
                (
                    "scale_tile8".to_owned(),
                    "the kernel `scale` (instance TILE = 8)".to_owned(),
                ),
                ("twice_".to_owned(), "the helper `twice`".to_owned()),
            ],
        }
    }

    #[test]
    fn messages_name_the_users_functions_and_leave_out_generated_names() {
        let w = wgsl("");
        assert_eq!(
            for_the_user("Entry point scale_tile8 at Compute is invalid", &w),
            "Entry point the kernel `scale` (instance TILE = 8) at Compute is invalid"
        );
        assert_eq!(
            for_the_user("The pointer [49] doesn't relate to tsr_t0 in twice_", &w),
            "The pointer doesn't relate to a value tessera generated in the helper `twice`"
        );
        assert_eq!(for_the_user("a[i] and [x]", &w), "a[i] and [x]");
        assert_eq!(
            for_the_user("not fulfilled because of Expression([7]).", &w),
            "not fulfilled because of a value."
        );
    }

    #[test]
    fn a_panic_while_validating_is_reported_as_an_error() {
        let thread = std::thread::spawn(|| -> Verdict { panic!("naga fell over in scale_tile8") });
        let mut errors = Errors::default();
        let verdict = Pending::Running(thread).finish();
        report(
            verdict,
            &wgsl(""),
            proc_macro2::Span::call_site().into(),
            &mut errors,
        );
        let message = errors.finish().unwrap_err().to_string();
        assert_eq!(
            message,
            "naga panicked while validating the WGSL generated for this module (naga fell over \
             in the kernel `scale` (instance TILE = 8)); this is a bug in tessera or naga, please \
             report it"
        );
    }

    #[test]
    fn texts_validate_beside_the_macro_as_they_would_on_its_thread() {
        let valid = "@compute @workgroup_size(1) fn scale_tile8() {}\n";
        let invalid = "@group(0) @binding(0) var<storage, read> y: array<f32>;\n\
                       @compute @workgroup_size(1) fn scale_tile8() { y[0] = 1.0; }\n";
        assert!(matches!(start(valid, &[]).finish(), Verdict::Valid));
        assert!(matches!(start(invalid, &[]).finish(), Verdict::Invalid(_)));
        assert!(matches!(start("fn (", &[]).finish(), Verdict::Unparsed(_)));
    }

    #[test]
    fn a_validation_error_names_the_kernel_and_its_innermost_cause() {
        let text = "@group(0) @binding(0) var<storage, read> y: array<f32>;\n\
                    @compute @workgroup_size(1) fn scale_tile8() { y[0] = 1.0; }\n";
        let w = wgsl(text);
        let module = naga::front::wgsl::parse_str(text).unwrap();
        let error = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .unwrap_err();
        let message = describe(&error, &w);
        assert!(
            message.starts_with(
                "naga rejected the WGSL generated for this code in the kernel `scale` \
                 (instance TILE = 8): "
            ),
            "{message}"
        );
        assert!(!message.contains("scale_tile8"), "{message}");
        assert!(!message.contains('['), "{message}");
    }
}
