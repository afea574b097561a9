//! The attention section of `BENCHMARKS.md`: one device run of
//! `nn/examples/attention_bench.rs` (`DIR/attention/tessera.md`) beside
//! `bench/attention_bench.py` (`DIR/attention/python.md`), joined by shape, mask and pass
//! into one table. `DIR/attention/run.txt` says which commit and day ran: `commit C` and
//! `date D` lines.
//!
//! Every table row is `| shape | mask | pass | who | ms | TFLOP/s |`; `who` is `tessera f32`,
//! `tessera tensor cores, f32 storage`, `tessera tensor cores, f16 storage`, `PyTorch SDPA
//! f32` or `PyTorch SDPA f16 (flash)`. The section's table sets tessera's strict f32 beside
//! SDPA f32 and its tensor cores over f16 storage beside SDPA's f16 flash backend; the plot
//! (`docs/benchmarks-attention.png`) has a bar for each row with both f32 figures.

use std::fmt::Write as _;
use std::path::Path;

/// One row of one table.
#[derive(Clone, Debug, PartialEq)]
struct Figure {
    shape: String,
    mask: String,
    pass: String,
    who: String,
    tflops: f64,
}

/// The figures of one table file, and its first line (the device) where it is not a row;
/// `file` names it in errors.
fn parse(text: &str, file: &str) -> Result<(Vec<Figure>, Option<String>), String> {
    let mut figures = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line.trim().split('|').map(str::trim).collect();
        let [_, shape, mask, pass, who, _ms, tflops, _] = cells[..] else {
            continue;
        };
        if shape == "shape" || shape.starts_with("---") {
            continue;
        }
        let tflops = tflops.parse().map_err(|_| {
            format!(
                "{file}:{}: expected `| shape | mask | pass | who | ms | TFLOP/s |`",
                number + 1
            )
        })?;
        figures.push(Figure {
            shape: shape.into(),
            mask: mask.into(),
            pass: pass.into(),
            who: who.into(),
            tflops,
        });
    }
    let device = text
        .lines()
        .next()
        .filter(|l| !l.trim_start().starts_with('|'))
        .map(str::to_owned);
    Ok((figures, device))
}

/// The attention section: its Markdown and its plot's bars.
pub(super) struct Section {
    pub(super) markdown: String,
    /// `(shape · mask · pass, tessera over SDPA f32)` for each row that has both.
    pub(super) bars: Vec<(String, f64)>,
}

/// The figure of `who` for `f`'s shape, mask and pass, if the run has one.
fn find(figures: &[Figure], f: &Figure, who: &str) -> Option<f64> {
    figures
        .iter()
        .find(|o| o.shape == f.shape && o.mask == f.mask && o.pass == f.pass && o.who == who)
        .map(|o| o.tflops)
}

/// The plot's bars: each tessera row with a PyTorch f32 counterpart, in the table's order.
fn bars(figures: &[Figure]) -> Vec<(String, f64)> {
    figures
        .iter()
        .filter(|f| f.who == "tessera f32")
        .filter_map(|f| {
            let ratio = f.tflops / find(figures, f, "PyTorch SDPA f32")?;
            Some((format!("{} · {} · {}", f.shape, f.mask, f.pass), ratio))
        })
        .collect()
}

/// `who` of tessera's rows on the tensor cores over f16 storage.
const TENSOR_F16: &str = "tessera tensor cores, f16 storage";

/// The section's Markdown, from the run's figures, devices and (commit, date).
fn markdown(figures: &[Figure], devices: &[String], (commit, date): (&str, &str)) -> String {
    let find = |f: &Figure, who: &str| find(figures, f, who);
    let mut text = String::from("\n## Attention\n\n");
    let _ = writeln!(
        text,
        "One device run of `nn/examples/attention_bench.rs` and `bench/attention_bench.py`, \
         {date}, commit `{commit}` (raw tables in `bench/results/attention`). TFLOP/s as \
         FlashAttention counts them: the forward `4 * BH * N^2 * D`, half under the causal \
         mask, the backward 2.5 times the forward. The first *ratio* is tessera's strict f32 \
         over PyTorch's `scaled_dot_product_attention` in f32 (the issue's targets: 1.2 \
         forward, 1.0 backward), the second tessera on the tensor cores over f16 storage \
         over SDPA's f16 flash backend (targets 0.5 forward, 0.4 backward). \
         `notes/attention.md` says what each kernel is and what is next.\n"
    );
    for device in devices {
        let _ = writeln!(text, "- {device}");
    }
    text.push_str(
        "\n| BH x N x D | mask | pass | tessera f32 | SDPA f32 | ratio | tessera f16 (tensor \
         cores) | SDPA f16 (flash) | ratio |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    for f in figures.iter().filter(|f| f.who == "tessera f32") {
        let f32 = find(f, "PyTorch SDPA f32");
        let ratio = f32.map(|t| f.tflops / t);
        let (tensor, f16) = (find(f, TENSOR_F16), find(f, "PyTorch SDPA f16 (flash)"));
        let f16_ratio = tensor.zip(f16).map(|(t, p)| t / p);
        let _ = writeln!(
            text,
            "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {} |",
            f.shape,
            f.mask,
            f.pass,
            f.tflops,
            cell(f32),
            cell(ratio),
            cell(tensor),
            cell(f16),
            cell(f16_ratio)
        );
    }
    text.push_str(
        "\n![tessera strict f32 over PyTorch SDPA f32, per shape, mask and pass]\
         (docs/benchmarks-attention.png)\n",
    );
    text
}

/// The section from `DIR/attention`, or `None` where the run has no such folder.
pub(super) fn section(dir: &Path) -> Result<Option<Section>, String> {
    let dir = dir.join("attention");
    if !dir.exists() {
        return Ok(None);
    }
    let (mut figures, mut devices) = (Vec::new(), Vec::new());
    for name in ["tessera.md", "python.md"] {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let (rows, device) = parse(&text, name)?;
        figures.extend(rows);
        devices.extend(device);
    }
    let (commit, date) = super::commit_and_date(&dir)?;
    Ok(Some(Section {
        markdown: markdown(&figures, &devices, (&commit, &date)),
        bars: bars(&figures),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tessera_rows_join_pytorch_rows_of_the_same_shape_mask_and_pass() {
        let ours = "Some GPU (Vulkan)\n| shape | mask | pass | who | ms | TFLOP/s |\n\
                    | --- | --- | --- | --- | --- | --- |\n\
                    | 2x8x4 | none | forward | tessera f32 | 1.0 | 3.00 |\n\
                    | 2x8x4 | causal | backward | tessera f32 | 1.0 | 1.00 |\n\
                    | 2x8x4 | none | forward | tessera tensor cores, f16 storage | 1.0 | 12.00 |\n";
        let theirs = "Some GPU (PyTorch 9)\n\
                      | 2x8x4 | none | forward | PyTorch SDPA f32 | 0.5 | 6.00 |\n\
                      | 2x8x4 | none | forward | PyTorch SDPA f16 (flash) | 0.1 | 30.00 |\n";
        let (mut figures, device) = parse(ours, "tessera.md").unwrap();
        assert_eq!(device.as_deref(), Some("Some GPU (Vulkan)"));
        figures.extend(parse(theirs, "python.md").unwrap().0);
        let text = markdown(&figures, &["Some GPU".into()], ("abc1234", "2026-11-29"));
        assert!(text.contains("commit `abc1234`"), "{text}");
        assert!(
            text.contains("| 2x8x4 | none | forward | 3.00 | 6.00 | 0.50 | 12.00 | 30.00 | 0.40 |"),
            "{text}"
        );
        assert!(
            text.contains("| 2x8x4 | causal | backward | 1.00 | - | - | - | - | - |"),
            "{text}"
        );
        assert_eq!(bars(&figures), [("2x8x4 · none · forward".to_owned(), 0.5)]);
        let bad = "| 2x8x4 | none | forward | tessera f32 | 1.0 | fast |\n";
        let error = parse(bad, "tessera.md").unwrap_err();
        assert!(error.starts_with("tessera.md:1: expected"), "{error}");
    }
}
