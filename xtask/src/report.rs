//! `cargo xtask bench-report DIR --commit C --date D`: joins one device run's results,
//! `DIR/tessera.csv` (from `nn/examples/bench.rs --out DIR`) and `DIR/torch_f32.csv`,
//! `DIR/torch_tf32.csv` (from `bench/torch_bench.py --out DIR`), into `BENCHMARKS.md` and the
//! plot `docs/benchmarks.png`. Where the run also has `DIR/tensor-cores/tessera.csv` (from
//! `nn/examples/bench.rs --gemm --conv --tensor-cores --out DIR/tensor-cores`), the page gets a
//! second table: those figures against PyTorch TF32; where it has `DIR/memory` (from
//! `bench/device/memory.sh`), a section on memory-bound kernels ([`memory`]); where it has
//! `DIR/attention` (from `nn/examples/attention_bench.rs` and `bench/attention_bench.py`), a
//! section on attention ([`attention`]) and its plot `docs/benchmarks-attention.png`.
//!
//! Every CSV has the columns `work,pass,ms,tflops`; lines starting with `#` say what ran
//! (`# adapter: ...`, `# torch: ...`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

mod attention;
mod memory;

/// One figure of one run.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    work: String,
    pass: String,
    ms: f64,
    /// Absent for launch-cost rows.
    tflops: Option<f64>,
}

/// A results file: its `#` lines and its rows, in order.
#[derive(Debug, Default)]
struct Results {
    notes: Vec<String>,
    rows: Vec<Row>,
}

fn parse(text: &str, name: &str) -> Result<Results, String> {
    let mut results = Results::default();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(note) = line.strip_prefix('#') {
            results.notes.push(note.trim().to_owned());
            continue;
        }
        if line.is_empty() || line == "work,pass,ms,tflops" {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let bad = || {
            format!(
                "{name}:{}: expected `work,pass,ms,tflops`, found `{line}`",
                number + 1
            )
        };
        let [work, pass, ms, tflops] = fields[..] else {
            return Err(bad());
        };
        results.rows.push(Row {
            work: work.to_owned(),
            pass: pass.to_owned(),
            ms: ms.parse().map_err(|_| bad())?,
            tflops: match tflops {
                "" => None,
                value => Some(value.parse().map_err(|_| bad())?),
            },
        });
    }
    Ok(results)
}

fn read(dir: &Path, name: &str) -> Result<Results, String> {
    let path = dir.join(name);
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// A figure of tessera beside PyTorch's for the same work and pass.
struct Compared<'a> {
    ours: &'a Row,
    f32: Option<&'a Row>,
    tf32: Option<&'a Row>,
}

impl Compared<'_> {
    /// tessera's speed over strict-f32 PyTorch's (its time over ours).
    fn ratio(&self) -> Option<f64> {
        self.f32.map(|theirs| theirs.ms / self.ours.ms)
    }
}

fn compare<'a>(ours: &'a Results, f32: &'a Results, tf32: &'a Results) -> Vec<Compared<'a>> {
    let index = |results: &'a Results| -> HashMap<(&'a str, &'a str), &'a Row> {
        results
            .rows
            .iter()
            .map(|row| ((row.work.as_str(), row.pass.as_str()), row))
            .collect()
    };
    let (f32, tf32) = (index(f32), index(tf32));
    ours.rows
        .iter()
        .map(|row| {
            let key = (row.work.as_str(), row.pass.as_str());
            Compared {
                ours: row,
                f32: f32.get(&key).copied(),
                tf32: tf32.get(&key).copied(),
            }
        })
        .collect()
}

fn figure(row: Option<&Row>) -> String {
    match row {
        Some(Row {
            tflops: Some(tflops),
            ..
        }) => format!("{tflops:.2}"),
        Some(row) => format!("{:.3} ms", row.ms),
        None => "-".to_owned(),
    }
}

/// The folder of a run's tensor-core results, inside the run's folder.
const TENSOR_CORES: &str = "tensor-cores";

/// The folder of `DIR` with a second tessera process of the same device command, if any.
const SECOND: &str = "second";

/// How far a row may stray between two processes before the note names it.
const STRAY: f64 = 0.02;

/// The note on a second tessera process of the run: the largest difference from the table's
/// figures, and each row that differs by more than [`STRAY`]. `None` when no row is in both.
fn second_process_note(first: &Results, second: &Results) -> Option<String> {
    // Joined as `compare` joins PyTorch's figures: the second process's row in `f32`.
    let none = Results::default();
    let joined = compare(first, second, &none);
    let mut largest = 0.0f64;
    let mut strays = Vec::new();
    let mut compared = 0;
    for row in &joined {
        let (Some(ours), Some(again)) = (row.ours.tflops, row.f32.and_then(|r| r.tflops)) else {
            continue;
        };
        compared += 1;
        let change = again / ours - 1.0;
        largest = largest.max(change.abs());
        if change.abs() > STRAY {
            strays.push(format!(
                "{} {} {again:.2} TFLOP/s ({:+.1}%)",
                row.ours.work,
                row.ours.pass,
                100.0 * change
            ));
        }
    }
    if compared == 0 {
        return None;
    }
    let spread = if strays.is_empty() {
        format!("each within {:.1}% of this table's", 100.0 * largest)
    } else {
        format!(
            "up to {:.1}% from this table's; beyond {:.0}%: {}",
            100.0 * largest,
            100.0 * STRAY,
            strays.join(", ")
        )
    };
    Some(format!(
        "A second tessera process in the same device command (`{SECOND}/`), {compared} rows: \
         {spread}"
    ))
}

/// What `nn/examples/bench.rs --tensor-cores` appends to each work's label.
const TENSOR_CORE_LABEL: &str = " tensor-core-f16";

/// The works whose geometric mean the tensor-core section states (issue 13's target: above
/// cuDNN TF32 on ResNet's 3x3 stride-1 layers, every pass).
const RESNET_3X3: [&str; 4] = [
    "conv N=32 Ci=64 56x56 Co=64 k3x3 s1 p1",
    "conv N=32 Ci=128 28x28 Co=128 k3x3 s1 p1",
    "conv N=32 Ci=256 14x14 Co=256 k3x3 s1 p1",
    "conv N=32 Ci=512 7x7 Co=512 k3x3 s1 p1",
];

/// The tensor-core run's rows under the labels of the strict-f32 run (the suffix
/// `nn/examples/bench.rs` adds taken off), so that they join with PyTorch's.
fn without_tensor_core_label(mut results: Results) -> Results {
    for row in &mut results.rows {
        if let Some(work) = row.work.strip_suffix(TENSOR_CORE_LABEL) {
            row.work = work.to_owned();
        }
    }
    results
}

fn geometric_mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0u32), |(sum, count), v| (sum + v.ln(), count + 1));
    (count > 0).then(|| (sum / f64::from(count)).exp())
}

/// The section on `Precision::TensorCoreF16`: each figure beside tessera's strict f32 one
/// and PyTorch TF32's (its tensor-core mode for f32 tensors), with the ratio to the latter.
fn tensor_core_section(tensor: &Results, strict: &Results, tf32: &Results) -> String {
    // Each tensor-core row beside tessera's strict f32 figure (`f32`) and PyTorch's TF32.
    let compared = compare(tensor, strict, tf32);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## Tensor cores\n\n`Precision::TensorCoreF16` (f16 products on the tensor cores, f32 \
         sums; the caller's buffers stay f32), from `nn/examples/bench.rs --gemm --conv \
         --tensor-cores --out {TENSOR_CORES}` in the same device command as the table above. \
         *over TF32* is its speed over PyTorch's with TF32 on (inputs rounded to a \
         10-bit mantissa, as f16's, f32 sums); *tessera f32* is the table above.\n"
    );
    for note in &tensor.notes {
        let _ = writeln!(out, "- {note}");
    }
    let mean = |pass: &str, figure: fn(&Compared<'_>) -> Option<f64>| {
        geometric_mean(
            compared
                .iter()
                .filter(|c| c.ours.pass == pass && RESNET_3X3.contains(&c.ours.work.as_str()))
                .filter_map(figure),
        )
    };
    for pass in ["forward", "dgrad", "wgrad"] {
        let ours = mean(pass, |c| c.ours.tflops);
        let theirs = mean(pass, |c| c.tf32.and_then(|r| r.tflops));
        if let (Some(ours), Some(theirs)) = (ours, theirs) {
            let _ = writeln!(
                out,
                "- ResNet 3x3 stride-1 layers, {pass}, geometric mean: {ours:.1} TFLOP/s, cuDNN \
                 TF32 {theirs:.1}"
            );
        }
    }
    let _ = writeln!(
        out,
        "\n| work | pass | tensor cores ms | tensor cores | tessera f32 | PyTorch TF32 | over TF32 |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for row in compared.iter().filter(|c| c.ours.tflops.is_some()) {
        let ratio = row.tf32.map_or("-".to_owned(), |theirs| {
            format!("{:.2}x", theirs.ms / row.ours.ms)
        });
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {} | {} | {} | {ratio} |",
            row.ours.work,
            row.ours.pass,
            row.ours.ms,
            figure(Some(row.ours)),
            figure(row.f32),
            figure(row.tf32),
        );
    }
    out
}

/// What the run was: its commit and date, and the folder of its CSV files.
struct Run<'a> {
    commit: &'a str,
    date: &'a str,
    dir: &'a Path,
}

fn markdown(compared: &[Compared<'_>], notes: &[String], launch: &[&Row], run: &Run<'_>) -> String {
    let Run { commit, date, dir } = run;
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "One device run of `nn/examples/bench.rs`, {date}, commit `{commit}`, beside \
         `bench/torch_bench.py` (its note below says how many processes each PyTorch figure \
         is the fastest of: cuDNN's choices vary between processes); the raw figures are in \
         `{}`, and `cargo xtask bench-report` turns them into this page (how to run both: \
         `notes/performance.md`).\n",
        dir.display()
    );
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    let _ = writeln!(
        out,
        "\nTFLOP/s (GEMM: 2MNK per pass, 6MNK forward + backward; convolutions: 2 x output x \
         input channels x taps per pass). *ratio* is tessera's speed over PyTorch's in strict \
         f32 (TF32 off); the TF32 column is for reference: tessera computes in strict f32.\n"
    );
    let _ = writeln!(
        out,
        "| work | pass | tessera ms | tessera | PyTorch f32 | ratio | PyTorch TF32 |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for c in compared.iter().filter(|c| c.ours.tflops.is_some()) {
        let ratio = c.ratio().map_or("-".to_owned(), |r| format!("{r:.2}x"));
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {} | {} | {ratio} | {} |",
            c.ours.work,
            c.ours.pass,
            c.ours.ms,
            figure(Some(c.ours)),
            figure(c.f32),
            figure(c.tf32),
        );
    }
    if !launch.is_empty() {
        let _ = writeln!(
            out,
            "\nLaunch cost of a one-workgroup kernel, microseconds per dispatch (host and GPU, \
             end to end unless said), tessera against raw wgpu in the same process:\n"
        );
        let _ = writeln!(out, "| how | us per dispatch |\n| --- | ---: |");
        for row in launch {
            let _ = writeln!(out, "| {} | {:.2} |", row.work, row.ms * 1e3);
        }
    }
    let _ = writeln!(
        out,
        "\n![tessera over PyTorch strict f32, per work and pass](docs/benchmarks.png)\n\n\
         Bars: tessera's speed over PyTorch's strict f32, green at or above it, blue at half or \
         more, red below half."
    );
    out
}

/// Loads a TrueType font for the plot's text from the usual Debian places.
fn font() -> Result<&'static [u8], String> {
    const FONTS: [&str; 3] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    ];
    FONTS
        .iter()
        .find_map(|path| std::fs::read(path).ok())
        .map(|bytes| &*Box::leak(bytes.into_boxed_slice()))
        .ok_or_else(|| {
            format!(
                "the plot needs a TrueType font and none of {} exists; install fonts-dejavu-core",
                FONTS.join(", ")
            )
        })
}

/// Horizontal bars: tessera's speed over PyTorch strict f32 for each work and pass.
fn plot(compared: &[Compared<'_>], path: &Path) -> Result<(), String> {
    let bars: Vec<(String, f64)> = compared
        .iter()
        .filter_map(|c| Some((format!("{} · {}", c.ours.work, c.ours.pass), c.ratio()?)))
        .collect();
    let caption = "tessera over PyTorch strict f32 (1.0 = as fast)";
    plot_ratios(&bars, caption, path)
}

/// Horizontal bars of `(label, ratio)`, the first on top, under `caption`: green at or above
/// 1, blue at half or more, red below half.
fn plot_ratios(bars: &[(String, f64)], caption: &str, path: &Path) -> Result<(), String> {
    if bars.is_empty() {
        return Err(format!(
            "{}: no figure has a counterpart to plot",
            path.display()
        ));
    }
    // Drawn bottom up: reversed, the table's first row is the top bar. A bar past `CUT` is
    // drawn to it, its label saying how far it reaches.
    const CUT: f64 = 3.0;
    let bars: Vec<(String, f64)> = bars
        .iter()
        .rev()
        .map(|(label, ratio)| match *ratio > CUT {
            true => (format!("{label} ({ratio:.1}x)"), CUT),
            false => (label.clone(), *ratio),
        })
        .collect();
    plotters::style::register_font("sans-serif", FontStyle::Normal, font()?)
        .map_err(|_| "the font could not be read".to_owned())?;
    let error = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let height = 120 + 22 * bars.len() as u32;
    let root = BitMapBackend::new(path, (1400, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| error(&e))?;
    let most = bars.iter().map(|b| b.1).fold(1.2, f64::max) * 1.05;
    let count = bars.len() as i32;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 24))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(520)
        .build_cartesian_2d(0.0..most, (0..count).into_segmented())
        .map_err(|e| error(&e))?;
    chart
        .configure_mesh()
        .y_labels(bars.len())
        .y_label_formatter(&|value| match value {
            SegmentValue::CenterOf(i) => bars
                .get(*i as usize)
                .map_or(String::new(), |bar| bar.0.clone()),
            _ => String::new(),
        })
        .y_label_style(("sans-serif", 14))
        .x_desc("speed ratio")
        .disable_y_mesh()
        .draw()
        .map_err(|e| error(&e))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, ratio))| {
            let color = if *ratio >= 1.0 {
                RGBColor(46, 139, 87)
            } else if *ratio >= 0.5 {
                RGBColor(70, 110, 180)
            } else {
                RGBColor(200, 90, 60)
            };
            let i = i as i32;
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (*ratio, SegmentValue::Exact(i + 1)),
                ],
                color.filled(),
            );
            bar.set_margin(3, 3, 0, 0);
            bar
        }))
        .map_err(|e| error(&e))?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![
                (1.0, SegmentValue::Exact(0)),
                (1.0, SegmentValue::Exact(count)),
            ],
            BLACK.stroke_width(2),
        )))
        .map_err(|e| error(&e))?;
    root.present().map_err(|e| error(&e))
}

/// The command: reads the run in `dir`, writes `BENCHMARKS.md` and `docs/benchmarks.png`.
pub fn run(args: &[String]) -> Result<(), String> {
    use lexopt::prelude::*;
    let usage = "usage: cargo xtask bench-report DIR --commit COMMIT --date YYYY-MM-DD";
    let (mut dir, mut commit, mut date) = (None, None, None);
    let mut parser = lexopt::Parser::from_args(args);
    let parsed: Result<(), lexopt::Error> = (|| {
        while let Some(arg) = parser.next()? {
            match arg {
                Long("commit") => commit = Some(parser.value()?.string()?),
                Long("date") => date = Some(parser.value()?.string()?),
                Value(value) if dir.is_none() => dir = Some(value.string()?),
                _ => return Err(arg.unexpected()),
            }
        }
        Ok(())
    })();
    parsed.map_err(|e| format!("{e}; {usage}"))?;
    let (Some(dir), Some(commit), Some(date)) = (dir, commit, date) else {
        return Err(usage.to_owned());
    };
    let dir = Path::new(&dir);
    let ours = read(dir, "tessera.csv")?;
    let f32 = read(dir, "torch_f32.csv")?;
    let tf32 = read(dir, "torch_tf32.csv")?;
    let compared = compare(&ours, &f32, &tf32);
    let launch: Vec<&Row> = ours.rows.iter().filter(|r| r.tflops.is_none()).collect();
    let mut notes = ours.notes.clone();
    notes.extend(f32.notes.iter().cloned());
    let second = dir.join(SECOND);
    if second.join("tessera.csv").exists() {
        notes.extend(second_process_note(&ours, &read(&second, "tessera.csv")?));
    }
    let run = Run {
        commit: &commit,
        date: &date,
        dir,
    };
    let mut text = markdown(&compared, &notes, &launch, &run);
    let tensor_cores = dir.join(TENSOR_CORES);
    if tensor_cores.join("tessera.csv").exists() {
        let tensor = without_tensor_core_label(read(&tensor_cores, "tessera.csv")?);
        text.push_str(&tensor_core_section(&tensor, &ours, &tf32));
    }
    let memory = memory::section(dir)?;
    if let Some(memory) = &memory {
        text.push_str(&memory.markdown);
    }
    let attention = attention::section(dir)?;
    if let Some(attention) = &attention {
        text.push_str(&attention.markdown);
    }
    std::fs::write("BENCHMARKS.md", text).map_err(|e| format!("writing BENCHMARKS.md: {e}"))?;
    std::fs::create_dir_all("docs").map_err(|e| format!("creating docs/: {e}"))?;
    plot(&compared, Path::new("docs/benchmarks.png"))?;
    if let Some(memory) = &memory {
        let caption = "tessera over the faster of Triton and PyTorch (1.0 = as fast)";
        plot_ratios(
            &memory.bars,
            caption,
            Path::new("docs/benchmarks-memory.png"),
        )?;
    }
    if let Some(attention) = &attention {
        let caption = "tessera strict f32 attention over PyTorch SDPA f32 (1.0 = as fast)";
        plot_ratios(
            &attention.bars,
            caption,
            Path::new("docs/benchmarks-attention.png"),
        )?;
    }
    eprintln!("xtask: wrote BENCHMARKS.md and its plots in docs/");
    Ok(())
}

/// The commit and the day a section's run names in `dir/run.txt` (`commit C` and `date D`
/// lines).
fn commit_and_date(dir: &Path) -> Result<(String, String), String> {
    let path = dir.join("run.txt");
    let about =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let field = |key: &str| {
        about
            .lines()
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
            .ok_or_else(|| format!("{}: no `{key} ...` line", path.display()))
    };
    Ok((field("commit")?, field("date")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "# adapter: Some GPU\nwork,pass,ms,tflops\n\
                        gemm M=2 N=2 K=2,forward,2.0,1.0\n\
                        launch: batch,per dispatch,0.005,\n";
    const THEIRS: &str = "# torch: 2.11\nwork,pass,ms,tflops\ngemm M=2 N=2 K=2,forward,1.0,2.0\n";

    #[test]
    fn runs_join_on_work_and_pass_into_a_table_with_ratios() {
        let ours = parse(OURS, "ours").unwrap();
        let f32 = parse(THEIRS, "f32").unwrap();
        let tf32 = parse("", "tf32").unwrap();
        assert_eq!(ours.notes, ["adapter: Some GPU"]);
        let compared = compare(&ours, &f32, &tf32);
        assert_eq!(compared[0].ratio(), Some(0.5));
        assert_eq!(compared[1].ratio(), None);
        let launch: Vec<&Row> = ours.rows.iter().filter(|r| r.tflops.is_none()).collect();
        let run = Run {
            commit: "abc1234",
            date: "2026-11-23",
            dir: Path::new("bench/results"),
        };
        let text = markdown(&compared, &ours.notes, &launch, &run);
        assert!(
            text.contains("| gemm M=2 N=2 K=2 | forward | 2.000 | 1.00 | 2.00 | 0.50x | - |"),
            "{text}"
        );
        assert!(text.contains("| launch: batch | 5.00 |"), "{text}");
        assert!(text.contains("commit `abc1234`"), "{text}");
    }

    #[test]
    fn tensor_core_figures_join_the_f32_run_and_torch_tf32_by_work() {
        let tensor = "# adapter: Some GPU\nwork,pass,ms,tflops\n\
                      gemm M=2 N=2 K=2 tensor-core-f16,forward,0.5,4.0\n\
                      conv N=32 Ci=64 56x56 Co=64 k3x3 s1 p1 tensor-core-f16,dgrad,1.0,9.0\n";
        let tensor = without_tensor_core_label(parse(tensor, "tc").unwrap());
        let strict = parse(OURS, "ours").unwrap();
        let tf32 = "work,pass,ms,tflops\ngemm M=2 N=2 K=2,forward,0.25,8.0\n\
                    conv N=32 Ci=64 56x56 Co=64 k3x3 s1 p1,dgrad,3.0,3.0\n";
        let tf32 = parse(tf32, "tf32").unwrap();
        let text = tensor_core_section(&tensor, &strict, &tf32);
        assert!(
            text.contains("| gemm M=2 N=2 K=2 | forward | 0.500 | 4.00 | 1.00 | 8.00 | 0.50x |"),
            "{text}"
        );
        assert!(
            text.contains("dgrad, geometric mean: 9.0 TFLOP/s, cuDNN TF32 3.0"),
            "{text}"
        );
        assert!(text.contains("- adapter: Some GPU"), "{text}");
    }

    #[test]
    fn a_second_process_is_summed_up_naming_the_rows_that_strayed() {
        let first = parse(
            "work,pass,ms,tflops\ngemm,forward,1.0,10.0\nconv,dgrad,1.0,20.0\nlaunch,x,0.1,\n",
            "first",
        )
        .unwrap();
        let close = parse(
            "work,pass,ms,tflops\ngemm,forward,1.0,10.1\nconv,dgrad,1.0,19.9\n",
            "second",
        )
        .unwrap();
        assert_eq!(
            second_process_note(&first, &close).unwrap(),
            "A second tessera process in the same device command (`second/`), 2 rows: each \
             within 1.0% of this table's"
        );
        let far = parse(
            "work,pass,ms,tflops\ngemm,forward,1.0,10.1\nconv,dgrad,1.0,15.0\n",
            "second",
        )
        .unwrap();
        assert_eq!(
            second_process_note(&first, &far).unwrap(),
            "A second tessera process in the same device command (`second/`), 2 rows: up to \
             25.0% from this table's; beyond 2%: conv dgrad 15.00 TFLOP/s (-25.0%)"
        );
        let none = parse("work,pass,ms,tflops\nother,forward,1.0,1.0\n", "second").unwrap();
        assert_eq!(second_process_note(&first, &none), None);
    }

    #[test]
    fn a_malformed_line_names_its_file_and_line() {
        let error = parse("work,pass,ms,tflops\nx,y,fast,1\n", "t.csv").unwrap_err();
        assert_eq!(
            error,
            "t.csv:2: expected `work,pass,ms,tflops`, found `x,y,fast,1`"
        );
    }
}
