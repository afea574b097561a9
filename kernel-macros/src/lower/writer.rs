//! The WGSL text being written, with indentation and the source map: which byte range of the
//! WGSL came from which Rust span.

use std::fmt::Write;
use std::ops::Range;

use crate::ir::Span;

/// WGSL text and where each part of it came from.
pub struct Wgsl {
    pub text: String,
    /// Byte ranges of statements and declarations with the Rust span that produced them,
    /// outer ranges before the ranges nested in them.
    pub map: Vec<(Range<usize>, Span)>,
    /// Each WGSL function's name with what the user calls it (``the kernel `conv` ``, ``the
    /// helper `tile` ``), for messages about the WGSL.
    pub functions: Vec<(String, String)>,
}

impl Wgsl {
    /// The span of the innermost mapped range containing `offset`.
    pub fn span_at(&self, offset: usize) -> Option<Span> {
        self.map
            .iter()
            .filter(|(range, _)| range.contains(&offset))
            .min_by_key(|(range, _)| range.len())
            .map(|(_, span)| *span)
    }
}

#[derive(Default)]
pub struct Writer {
    text: String,
    map: Vec<(Range<usize>, Span)>,
    indent: usize,
}

impl Writer {
    /// Writes one line at the current indentation.
    pub fn line(&mut self, line: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.text.push_str("    ");
        }
        self.text.push_str(line.as_ref());
        self.text.push('\n');
    }

    /// Writes one line and maps it to `span`, with a comment naming the Rust line.
    pub fn mapped_line(&mut self, line: impl AsRef<str>, span: Span) {
        let start = self.text.len();
        for _ in 0..self.indent {
            self.text.push_str("    ");
        }
        self.text.push_str(line.as_ref());
        let end = self.text.len();
        let _ = writeln!(self.text, " // line {}", span.line());
        self.map.push((start..end, span));
    }

    /// Writes an opening line ending in `{`, maps it, and indents what follows.
    pub fn open(&mut self, line: impl AsRef<str>, span: Span) {
        self.mapped_line(format!("{} {{", line.as_ref()), span);
        self.indent += 1;
    }

    /// An opening line without a source line comment (declarations the user did not write).
    pub fn open_plain(&mut self, line: impl AsRef<str>) {
        let line = line.as_ref();
        self.line(if line.is_empty() {
            "{".to_owned()
        } else {
            format!("{line} {{")
        });
        self.indent += 1;
    }

    /// Dedents and writes `}` followed by `rest` (e.g. ` else {`).
    pub fn close(&mut self, rest: &str) {
        self.indent = self.indent.saturating_sub(1);
        self.line(format!("}}{rest}"));
        if rest.ends_with('{') {
            self.indent += 1;
        }
    }

    /// Maps everything written since `start` to `span` (a whole statement with its nested lines).
    pub fn map_since(&mut self, start: usize, span: Span) {
        let end = self.text.len();
        self.map.push((start..end, span));
    }

    pub fn position(&self) -> usize {
        self.text.len()
    }

    pub fn blank(&mut self) {
        self.text.push('\n');
    }

    pub fn finish(self) -> Wgsl {
        Wgsl {
            text: self.text,
            map: self.map,
            functions: Vec::new(),
        }
    }
}
