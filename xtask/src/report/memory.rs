//! The memory-bound section of `BENCHMARKS.md`: one run of `bench/device/memory.sh`, whose
//! Markdown tables (`DIR/memory/tessera-*.md` from tessera's examples, `python-*.md` from the
//! PyTorch and Triton scripts of `bench/`) are joined by work and pass into one table and the
//! plot `docs/benchmarks-memory.png`. `DIR/memory/run.txt` says which commit and day ran:
//! `commit C` and `date D` lines.
//!
//! Every table row is `| work | who | ms | TB/s |`. A tessera row's `who` is its pass
//! (`forward`, `backward`) or the kernel's variant; a Python row's starts with `PyTorch` or
//! `Triton`, then the pass, if any. Of several tessera variants of one work the fastest is
//! shown; a copy timed beside another work (the ceiling some examples print) is left out.

use std::fmt::Write as _;
use std::path::Path;

/// Who a figure is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Tessera,
    Triton,
    PyTorch,
}

/// One row of one table.
#[derive(Clone, Debug, PartialEq)]
struct Figure {
    side: Side,
    work: String,
    /// `forward`, `backward`, or empty for a kernel without passes.
    pass: String,
    /// tessera's variant (empty for the others).
    variant: String,
    ms: f64,
    tbs: f64,
}

/// The figures of one table file; `file` names it in errors.
fn parse(text: &str, file: &str, python: bool) -> Result<Vec<Figure>, String> {
    let mut figures = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line.trim().split('|').map(str::trim).collect();
        let [_, work, who, ms, tbs, _] = cells[..] else {
            continue; // The adapter line, or a message.
        };
        if work == "work" || work.starts_with("---") {
            continue;
        }
        let bad = || {
            format!(
                "{file}:{}: expected `| work | who | ms | TB/s |`",
                number + 1
            )
        };
        let (ms, tbs) = (
            ms.parse().map_err(|_| bad())?,
            tbs.parse().map_err(|_| bad())?,
        );
        let (side, rest) = match (python, who.split_once(' ').unwrap_or((who, ""))) {
            (false, _) => (Side::Tessera, who),
            (true, ("PyTorch", rest)) => (Side::PyTorch, rest),
            (true, ("Triton", rest)) => (Side::Triton, rest),
            (true, _) => continue, // A reference of the script's own, such as a device copy.
        };
        if who.contains("copy") && !work.starts_with("copy") {
            continue; // The ceiling an example times beside its work.
        }
        // `forward`, `backward (x, scale)`: a pass, and what it computes; else a variant.
        let (first, more) = rest.split_once(' ').unwrap_or((rest, ""));
        let (pass, variant) = match first {
            "forward" | "backward" => (first, more),
            _ => ("", rest),
        };
        figures.push(Figure {
            side,
            work: work.to_owned(),
            pass: pass.to_owned(),
            variant: match side {
                Side::Tessera => variant.to_owned(),
                _ => String::new(),
            },
            ms,
            tbs,
        });
    }
    Ok(figures)
}

/// One line of the section's table: tessera's fastest figure for a work and pass, and the
/// others' for the same.
struct Line<'a> {
    ours: &'a Figure,
    triton: Option<&'a Figure>,
    pytorch: Option<&'a Figure>,
}

impl Line<'_> {
    /// tessera's speed over the faster of the others.
    fn over_best(&self) -> Option<f64> {
        let best = [self.triton, self.pytorch]
            .into_iter()
            .flatten()
            .map(|f| f.tbs)
            .fold(None, |best: Option<f64>, tbs| {
                Some(best.map_or(tbs, |b| b.max(tbs)))
            })?;
        Some(self.ours.tbs / best)
    }
}

/// Joins the figures by work and pass, in the order tessera's first appear.
fn join(figures: &[Figure]) -> Vec<Line<'_>> {
    let same = |a: &Figure, b: &Figure| a.work == b.work && a.pass == b.pass;
    let mut lines: Vec<Line<'_>> = Vec::new();
    for figure in figures.iter().filter(|f| f.side == Side::Tessera) {
        match lines.iter_mut().find(|l| same(l.ours, figure)) {
            Some(line) if figure.tbs > line.ours.tbs => line.ours = figure,
            Some(_) => {}
            None => {
                let other = |side| figures.iter().find(|f| f.side == side && same(f, figure));
                lines.push(Line {
                    ours: figure,
                    triton: other(Side::Triton),
                    pytorch: other(Side::PyTorch),
                });
            }
        }
    }
    lines
}

/// The section of `BENCHMARKS.md` and its plot.
pub(super) struct Section {
    pub(super) markdown: String,
    /// Each line's label and tessera's speed over the faster of the others.
    pub(super) bars: Vec<(String, f64)>,
}

/// The section from the run in `dir/memory`; `None` where the run has no such folder.
pub(super) fn section(dir: &Path) -> Result<Option<Section>, String> {
    let dir = dir.join("memory");
    if !dir.exists() {
        return Ok(None);
    }
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let (mut figures, mut adapters) = (Vec::new(), Vec::new());
    for path in &files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into());
        let python = name.starts_with("python-");
        figures.extend(parse(&text, &name, python)?);
        if let Some(first) = text.lines().next().filter(|l| !l.starts_with('|')) {
            if !adapters.iter().any(|a| a == first) {
                adapters.push(first.to_owned());
            }
        }
    }
    let (commit, date) = super::commit_and_date(&dir)?;
    let copy = figures
        .iter()
        .find(|f| f.side == Side::PyTorch && f.work.starts_with("copy"));
    let lines = join(&figures);
    Ok(Some(Section {
        markdown: markdown(&lines, &adapters, copy, (&commit, &date)),
        bars: bars(&lines),
    }))
}

fn markdown(
    lines: &[Line<'_>],
    adapters: &[String],
    copy: Option<&Figure>,
    (commit, date): (&str, &str),
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n## Memory-bound kernels\n");
    let _ = writeln!(
        out,
        "One run of `bench/device/memory.sh`, {date}, commit `{commit}`: tessera's examples \
         (nn's row ops in `nn/examples/rows_bench.rs`, over `f32` and `f16` storage, and its \
         radix sort in `nn/examples/sort_bench.rs`; kernels built on `tessera::std` in \
         `examples/std_rows.rs` and `examples/std_scan.rs`; `examples/elementwise.rs`) beside \
         PyTorch eager and Triton kernels written from its tutorials (`bench/*.py`), one \
         process each, in one device command. Raw tables: `bench/results/memory`.\n"
    );
    for adapter in adapters {
        let _ = writeln!(out, "- {adapter}");
    }
    let copy_note = copy.map_or(String::new(), |c| {
        format!(
            "; *of copy* is tessera's bandwidth over PyTorch's device copy of the same run \
             ({}, {:.2} TB/s)",
            c.work, c.tbs
        )
    });
    let _ = writeln!(
        out,
        "\nTB/s: the bytes a pass must move (each input read once, each output written once) \
         over its time; the median of 5 timings of 20 launches after 1 s of warm-up. \
         *tessera* names the fastest of the variants an example times; *vs best* is its speed \
         over the faster of Triton and PyTorch{copy_note}. Rows without a pass are kernels of \
         a user's kind (no learned parameters; `std_rows`, `std_scan`, `elementwise`).\n"
    );
    let _ = writeln!(
        out,
        "| work | pass | tessera | ms | TB/s | Triton TB/s | PyTorch TB/s | vs best | of copy |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let tbs = |f: Option<&Figure>| f.map_or("-".to_owned(), |f| format!("{:.2}", f.tbs));
    for line in lines {
        let ours = line.ours;
        let best = line
            .over_best()
            .map_or("-".to_owned(), |r| format!("{r:.2}x"));
        let of_copy = copy.map_or("-".to_owned(), |c| {
            format!("{:.0}%", 100.0 * ours.tbs / c.tbs)
        });
        let variant = match (ours.pass.is_empty(), ours.variant.as_str()) {
            (false, "") => "nn op".to_owned(),
            (false, computes) => format!("nn op, {computes}"),
            (true, variant) => variant.to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {variant} | {:.4} | {:.2} | {} | {} | {best} | {of_copy} |",
            ours.work,
            ours.pass,
            ours.ms,
            ours.tbs,
            tbs(line.triton),
            tbs(line.pytorch),
        );
    }
    let _ = writeln!(
        out,
        "\n![tessera over the faster of Triton and PyTorch, memory-bound](docs/benchmarks-memory.png)"
    );
    out
}

/// The plot's bars: each line with a counterpart, labeled by work and pass.
fn bars(lines: &[Line<'_>]) -> Vec<(String, f64)> {
    lines
        .iter()
        .filter_map(|l| {
            let label = match l.ours.pass.as_str() {
                "" => l.ours.work.clone(),
                pass => format!("{} · {pass}", l.ours.work),
            };
            Some((label, l.over_best()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TESSERA: &str =
        "NVIDIA H200 (Vulkan)\n| work | pass | ms | TB/s |\n| --- | --- | --- | --- |\n\
        | softmax 4x8 | forward | 0.0100 | 2.00 |\n\
        | softmax 4x8 | backward (x) | 0.0200 | 1.00 |\n\
        | copy 1 MiB | f32 an invocation | 0.0400 | 1.00 |\n\
        | copy 1 MiB | Vec4<f32> an invocation | 0.0100 | 4.00 |\n\
        | scan 8 u32 | Subgroups | 0.0100 | 2.00 |\n\
        | scan 8 u32 | copy, Vec4 (the ceiling) | 0.0050 | 4.00 |\n";
    const PYTHON: &str = "NVIDIA H200 (PyTorch 2.11, Triton 3.6)\n| work | pass | ms | TB/s |\n\
        | softmax 4x8 | PyTorch forward | 0.0200 | 1.00 |\n\
        | softmax 4x8 | Triton forward | 0.0125 | 1.60 |\n\
        | softmax 4x8 | PyTorch backward | 0.0100 | 2.00 |\n\
        | softmax 4x8 | copy (PyTorch device copy) | 0.0100 | 3.00 |\n\
        | copy 1 MiB | PyTorch | 0.0100 | 4.00 |\n";

    fn figures() -> Vec<Figure> {
        let mut all = parse(TESSERA, "tessera-a.md", false).unwrap();
        all.extend(parse(PYTHON, "python-a.md", true).unwrap());
        all
    }

    #[test]
    fn tables_join_by_work_and_pass_keeping_the_fastest_variant() {
        let figures = figures();
        let lines = join(&figures);
        let keys: Vec<_> = lines
            .iter()
            .map(|l| {
                (
                    l.ours.work.as_str(),
                    l.ours.pass.as_str(),
                    l.ours.variant.as_str(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                ("softmax 4x8", "forward", ""),
                ("softmax 4x8", "backward", "(x)"),
                ("copy 1 MiB", "", "Vec4<f32> an invocation"),
                ("scan 8 u32", "", "Subgroups"),
            ]
        );
        // Forward: over Triton's 1.6 (the faster); backward: PyTorch alone; copy: level.
        let ratios: Vec<_> = lines.iter().map(Line::over_best).collect();
        assert_eq!(ratios, [Some(1.25), Some(0.5), Some(1.0), None]);
        let copy = figures
            .iter()
            .find(|f| f.side == Side::PyTorch && f.work.starts_with("copy"));
        let text = markdown(&lines, &[], copy, ("abc1234", "2026-11-29"));
        assert!(
            text.contains(
                "| softmax 4x8 | forward | nn op | 0.0100 | 2.00 | 1.60 | 1.00 | 1.25x | 50% |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| scan 8 u32 |  | Subgroups | 0.0100 | 2.00 | - | - | - | 50% |"),
            "{text}"
        );
        assert_eq!(bars(&lines).len(), 3);
    }

    #[test]
    fn a_malformed_row_names_its_file_and_line() {
        let error = parse(
            "| work | pass | ms | TB/s |\n| a | forward | fast | 1.0 |\n",
            "tessera-x.md",
            false,
        )
        .unwrap_err();
        assert_eq!(
            error,
            "tessera-x.md:2: expected `| work | who | ms | TB/s |`"
        );
    }
}
