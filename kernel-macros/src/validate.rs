//! naga parses and validates the generated WGSL while the macro expands. Its errors are
//! mapped back through the source map to the Rust tokens that produced the offending WGSL,
//! and phrased for the user's code where the cause is known.

use crate::ir::{Feature, Span};

use crate::diag::Errors;
use crate::lower::Wgsl;

/// Validates `wgsl`; reports problems at the mapped Rust spans (or `fallback`).
pub fn validate(wgsl: &Wgsl, features: &[Feature], fallback: Span, errors: &mut Errors) {
    let module = match naga::front::wgsl::parse_str(&wgsl.text) {
        Ok(module) => module,
        Err(error) => {
            let offset = error
                .labels()
                .find_map(|(span, _)| span.to_range())
                .map(|r| r.start);
            let span = offset.and_then(|o| wgsl.span_at(o)).unwrap_or(fallback);
            let line = offset.map(|o| line_at(&wgsl.text, o)).unwrap_or_default();
            errors.at(
                span,
                format!(
                    "tessera generated WGSL that does not parse ({}) at `{line}`; this is a bug in \
                     tessera, please report it",
                    error.message()
                ),
            );
            return;
        }
    };
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities(features));
    if let Err(error) = validator.validate(&module) {
        let span = error
            .spans()
            .filter_map(|(span, _)| map_span(wgsl, *span))
            .last()
            .unwrap_or(fallback);
        errors.at(span, describe(&error, &wgsl.text));
    }
}

/// The WGSL line holding byte `offset`, trimmed.
fn line_at(text: &str, offset: usize) -> &str {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    text[start..end].trim()
}

fn map_span(wgsl: &Wgsl, span: naga::Span) -> Option<Span> {
    let range = span.to_range()?;
    wgsl.span_at(range.start)
}

/// The user-facing message for a naga validation error: its first line and naga's notes
/// (`= Shader requires capability ..`), which say what is wrong.
fn describe(error: &naga::WithSpan<naga::valid::ValidationError>, source: &str) -> String {
    let rendered = error.emit_to_string(source);
    let first = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid WGSL");
    let notes: Vec<&str> = rendered
        .lines()
        .filter_map(|l| l.trim().strip_prefix("= "))
        .collect();
    let mut message = format!(
        "naga rejected the WGSL generated for this code: {}",
        first.trim_start_matches("error: ")
    );
    for note in notes {
        message.push_str(": ");
        message.push_str(note);
    }
    message
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
                }
            },
        )
}
