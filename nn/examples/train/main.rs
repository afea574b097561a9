//! Trains a small convolutional network to read handwritten digits, every forward and
//! backward step in tessera kernels: conv 3x3 + ReLU, conv 3x3 stride 2 + ReLU, flatten,
//! linear, softmax cross-entropy, SGD with momentum.
//!
//! The digits are the 1797 8x8 images of scikit-learn's `load_digits` (UCI optdigits, CC BY
//! 4.0), shipped in the repository (`digits.rs` says where they come from); 355 are held out
//! to measure the accuracy. `--data stripes` trains on synthetic stripe images instead, and
//! `--large` on larger ones, at a size worth a GPU.
//!
//! ```text
//! cargo xtask example                                  # the default: digits, under a minute on a CPU
//! cargo run --release -p tessera-nn --example train -- --large       # stripes of 32x32, a size worth a GPU
//! cargo run --release -p tessera-nn --example train -- --steps 300   # any size, more steps
//! cargo run --release -p tessera-nn --example train -- --save model.safetensors
//! cargo run --release -p tessera-nn --example train -- --load model.safetensors --steps 0   # evaluate only
//! cargo run --release -p tessera-nn --example train -- --help
//! ```
//!
//! It prints the adapter, the loss as it falls (with a progress bar when stderr is a terminal),
//! the accuracy on held-out images and the GPU time of each kernel. Every step's loss goes to
//! `target/train/loss.csv` and is drawn in `target/train/loss.png` (with `--save PATH`, beside
//! `PATH` instead). `--save` writes the trained parameters as a safetensors file, `--load`
//! starts from one (of the same size: `--large` or not).
//!
//! Its tests (the checkpoint round trip, the loss curve, the kernel names) run with the
//! workspace's (`cargo xtask test`), or alone with `cargo test --release -p tessera-nn --example train`.

#[path = "../common/buffers.rs"]
mod buffers;
#[path = "../common/checkpoint.rs"]
mod checkpoint;
#[path = "../common/curve.rs"]
mod curve;
mod data;
mod digits;
mod net;

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use data::Dataset;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use net::{Net, NetConfig};
use tessera::{Runtime, Timing, TimingSource};
use tessera_nn::{Precision, SgdConfig};

const USAGE: &str = "\
Trains a small convolutional network to read handwritten digits (or to tell synthetic stripes
apart), every step in tessera kernels.

usage: cargo run --release -p tessera-nn --example train -- [OPTIONS]

options:
  --data NAME    digits (default: 8x8 handwritten digits, 1442 to train, 355 held out) or
                 stripes (12x12 synthetic stripes in four orientations)
  --large        stripes of 32x32, a larger network and batch (256), 200 steps: a size worth a GPU
  --steps N      train N steps (default 200, or 80 on stripes); 0 only evaluates
  --save PATH    write the trained parameters to PATH (safetensors); the loss curve goes beside it
  --load PATH    start from the parameters in PATH (saved at the same size)
  --tensor-cores multiply on the tensor cores (f16 products, f32 sums; needs a GPU with them)
  -h, --help     print this text";

/// The images the network learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Data {
    /// The handwritten digits in `digits.bin`.
    Digits,
    /// Synthetic stripes, `train_images` to train and `test_images` held out.
    Stripes { train_images: u32, test_images: u32 },
}

impl Data {
    /// `--data stripes`: the default size's synthetic set.
    const STRIPES: Data = Data::Stripes {
        train_images: 1024,
        test_images: 256,
    };

    /// The data `--data NAME` names.
    fn named(name: &str) -> Result<Data, lexopt::Error> {
        match name {
            "digits" => Ok(Data::Digits),
            "stripes" => Ok(Data::STRIPES),
            other => Err(format!("--data takes `digits` or `stripes`, not `{other}`").into()),
        }
    }
}

/// What the command line chose.
#[derive(Debug)]
struct Options {
    config: NetConfig,
    data: Data,
    steps: u32,
    save: Option<PathBuf>,
    load: Option<PathBuf>,
}

impl Options {
    /// The options of `args` (without the program's name), or `None` when the user asked
    /// for help.
    fn parse(
        args: impl IntoIterator<Item = impl Into<std::ffi::OsString>>,
    ) -> Result<Option<Self>, lexopt::Error> {
        use lexopt::prelude::*;
        let (mut large, mut tensor_cores) = (false, false);
        let (mut steps, mut data) = (None, None);
        let (mut save, mut load) = (None, None);
        let mut parser = lexopt::Parser::from_args(args);
        while let Some(arg) = parser.next()? {
            match arg {
                Long("data") => data = Some(Data::named(&parser.value()?.string()?)?),
                Long("large") => large = true,
                Long("tensor-cores") => tensor_cores = true,
                Long("steps") => steps = Some(parser.value()?.parse()?),
                Long("save") => save = Some(PathBuf::from(parser.value()?)),
                Long("load") => load = Some(PathBuf::from(parser.value()?)),
                Short('h') | Long("help") => return Ok(None),
                _ => return Err(arg.unexpected()),
            }
        }
        let (config, data, default_steps) = Self::network_and_data(large, data)?;
        let mut options = Options {
            config,
            data,
            steps: default_steps,
            save,
            load,
        };
        if let Some(steps) = steps {
            options.steps = steps;
        }
        if tensor_cores {
            options.config.precision = Precision::TensorCoreF16;
        }
        Ok(Some(options))
    }

    /// The network, the data and the default number of steps that `--large` and `--data`
    /// (if given) choose.
    fn network_and_data(
        large: bool,
        data: Option<Data>,
    ) -> Result<(NetConfig, Data, u32), lexopt::Error> {
        Ok(match (large, data) {
            (true, Some(Data::Digits)) => {
                return Err("--large trains on stripes of 32x32; the digits are 8x8".into())
            }
            (true, _) => (
                NetConfig {
                    batch: 256,
                    image: 32,
                    channels: [32, 64],
                    classes: data::CLASSES,
                    precision: Precision::F32,
                },
                Data::Stripes {
                    train_images: 8192,
                    test_images: 1024,
                },
                200,
            ),
            (false, Some(stripes @ Data::Stripes { .. })) => (
                NetConfig {
                    batch: 32,
                    image: 12,
                    channels: [8, 16],
                    classes: data::CLASSES,
                    precision: Precision::F32,
                },
                stripes,
                80,
            ),
            (false, _) => (
                NetConfig {
                    batch: 32,
                    image: digits::SIZE,
                    channels: [8, 16],
                    classes: digits::CLASSES,
                    precision: Precision::F32,
                },
                Data::Digits,
                200,
            ),
        })
    }

    /// The training and the held-out images.
    fn datasets(&self) -> (Dataset, Dataset) {
        match self.data {
            Data::Digits => digits::digits(),
            Data::Stripes {
                train_images,
                test_images,
            } => (
                Dataset::stripes(train_images, self.config.image, 1),
                Dataset::stripes(test_images, self.config.image, 2),
            ),
        }
    }

    /// Where the loss curve goes: beside `--save`'s file, or in `target/train/`.
    fn curve_paths(&self) -> (PathBuf, PathBuf) {
        match &self.save {
            Some(save) => (
                save.with_extension("loss.csv"),
                save.with_extension("loss.png"),
            ),
            None => {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/train");
                (dir.join("loss.csv"), dir.join("loss.png"))
            }
        }
    }
}

pub fn main() -> ExitCode {
    let options = match Options::parse(std::env::args_os().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}; see --help");
            return ExitCode::from(1);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Trains (or only evaluates) as the options say, printing as it goes.
fn run(options: &Options) -> Result<(), Box<dyn Error>> {
    let config = options.config;
    let rt = Runtime::new()?;
    println!("adapter: {}", rt.info());
    let (train, test) = options.datasets();
    print_setup(options, &train, &test);
    let mut net = Net::new(&rt, config, SGD, 3)?;
    let sizes: Vec<String> = net
        .parameters()
        .iter()
        .map(|(name, param)| format!("{name} {}", param.value.len()))
        .collect();
    println!("parameters: {}", sizes.join(", "));
    if let Some(path) = &options.load {
        checkpoint::load(&rt, net.parameters(), path)?;
        println!("loaded the parameters from {}", path.display());
    }

    let training = Training::run(&rt, &mut net, options, &train)?;

    let (loss, correct) = evaluate(&rt, &mut net, &test)?;
    println!(
        "held-out images: loss {loss:.4}, accuracy {:.1}% ({correct}/{})",
        100.0 * correct as f32 / test.len() as f32,
        test.len()
    );
    if options.steps > 0 {
        println!(
            "training took {:.2} s of wall time",
            training.elapsed.as_secs_f64()
        );
    }
    if let Some(path) = &options.save {
        checkpoint::save(&rt, net.parameters(), path)?;
        println!("saved the parameters to {}", path.display());
    }
    write_curve(options, &training.losses);
    training.print_step_time();
    training.print_kernel_times();
    Ok(())
}

/// Prints the data and the network that will learn it.
fn print_setup(options: &Options, train: &Dataset, test: &Dataset) {
    let config = options.config;
    let data = match options.data {
        Data::Digits => "handwritten digits",
        Data::Stripes { .. } => "synthetic stripes",
    };
    println!(
        "data: {data}, {} images to train, {} held out",
        train.len(),
        test.len()
    );
    println!(
        "network: conv 1->{c1} 3x3 + ReLU, conv {c1}->{c2} 3x3 stride 2 + ReLU, linear -> {k}; \
         {n}x{n} images, batch {b}, {s} steps",
        c1 = config.channels[0],
        c2 = config.channels[1],
        k = config.classes,
        n = config.image,
        b = config.batch,
        s = options.steps,
    );
}

/// What the training loop measured: every step's loss, its wall time and the GPU's timings.
struct Training {
    /// The loss of every step, in order.
    losses: Vec<f32>,
    /// The wall time of the whole loop.
    elapsed: Duration,
    /// Each kernel's GPU time and calls in the profiled (second) step.
    kernel_times: BTreeMap<String, (Duration, u32)>,
    /// The profiled step's GPU time, if it ran.
    profiled: Option<Duration>,
    /// The GPU time of the steps after the second, all together.
    gpu_total: Duration,
    /// How many steps `gpu_total` adds up.
    timed_steps: u32,
    /// What timed those steps (`None` where there were none).
    timed_by: Option<TimingSource>,
}

impl Training {
    /// Trains `net` for `options.steps` steps on `train`, printing the loss as it falls (with
    /// a progress bar on stderr). The first step includes the pipelines' first use and is not
    /// timed; the second is profiled (each kernel timed in a compute pass of its own, which
    /// slows the step), the others timed as they run.
    fn run(
        rt: &Runtime,
        net: &mut Net,
        options: &Options,
        train: &Dataset,
    ) -> Result<Self, Box<dyn Error>> {
        let config = options.config;
        let started = Instant::now();
        let mut training = Training {
            losses: Vec::with_capacity(options.steps as usize),
            elapsed: Duration::ZERO,
            kernel_times: BTreeMap::new(),
            profiled: None,
            gpu_total: Duration::ZERO,
            timed_steps: 0,
            timed_by: None,
        };
        let report_every = (options.steps / 10).max(1);
        let progress = progress_bar(options.steps)?;
        for step in 0..options.steps {
            let (images, labels) = train.batch(step * config.batch, config.batch);
            let profile = step == 1;
            let (loss, timing) = net.train_step(rt, &images, &labels, profile)?;
            if !loss.is_finite() {
                progress.abandon();
                return Err(format!("the loss diverged at step {step}: {loss}").into());
            }
            training.losses.push(loss);
            training.record(step, timing);
            if step % report_every == 0 || step + 1 == options.steps {
                // To stdout, with the bar (on stderr) cleared meanwhile: neither garbles the other.
                progress.suspend(|| println!("step {step:>4}: loss {loss:.4}"));
            }
            progress.set_message(format!("loss {loss:.4}"));
            progress.inc(1);
        }
        progress.finish_and_clear();
        training.elapsed = started.elapsed();
        Ok(training)
    }

    /// Takes in the GPU's `timing` of step `step`: per kernel for the profiled second step,
    /// as a whole for the later ones, not at all for the first.
    fn record(&mut self, step: u32, timing: Timing) {
        if step == 1 {
            self.profiled = Some(timing.total);
            for (label, time) in timing.dispatches {
                let entry = self.kernel_times.entry(label).or_default();
                entry.0 += time.unwrap_or_default();
                entry.1 += 1;
            }
        } else if step > 1 {
            self.gpu_total += timing.total;
            self.timed_steps += 1;
            self.timed_by = Some(timing.source);
        }
    }

    /// Prints the mean GPU time of the unprofiled steps after the second, or why there is none.
    fn print_step_time(&self) {
        let (gpu_total, timed_steps) = (self.gpu_total, self.timed_steps);
        let per_step = |total: Duration, steps: u32| total.as_secs_f64() * 1e3 / f64::from(steps);
        match self.timed_by {
            None => println!(
                "no unprofiled steps after the second (the first builds the pipelines, the \
                 second is profiled): no GPU time per step"
            ),
            Some(TimingSource::GpuTimestamps) => println!(
                "GPU time per step: {:.3} ms (mean over {timed_steps} steps)",
                per_step(gpu_total, timed_steps)
            ),
            Some(TimingSource::WallClock) => println!(
                "this adapter has no timestamp queries: {:.3} ms per step by the wall clock (mean \
                 over {timed_steps} steps), no per-kernel times",
                per_step(gpu_total, timed_steps)
            ),
        }
    }

    /// Prints the profiled step's table of GPU time per kernel, slowest first, where the
    /// adapter timed each kernel.
    fn print_kernel_times(self) {
        let each_timed = self.kernel_times.values().any(|(time, _)| !time.is_zero());
        if let (Some(total), true) = (self.profiled, each_timed) {
            println!(
                "per kernel, in the second step (profiled: each kernel in a compute pass of its \
                 own, {:.3} ms in all):",
                total.as_secs_f64() * 1e3
            );
            let mut rows = kernel_rows(self.kernel_times);
            rows.sort_by_key(|row| std::cmp::Reverse(row.1));
            let width = rows.iter().map(|row| row.0.len()).max().unwrap_or(0);
            for (name, time, calls) in rows {
                println!(
                    "  {name:<width$} {:>8.3} ms, {calls:>2} call{}",
                    time.as_secs_f64() * 1e3,
                    if calls == 1 { "" } else { "s" },
                );
            }
        }
    }
}

/// SGD with momentum, the same for every data set.
const SGD: SgdConfig = SgdConfig {
    learning_rate: 0.02,
    momentum: 0.9,
    weight_decay: 0.0,
};

/// The mean loss over every image of `test` and how many the network classifies correctly,
/// in batches of the network's size (the last one shorter).
fn evaluate(rt: &Runtime, net: &mut Net, test: &Dataset) -> tessera::Result<(f32, u32)> {
    let batch = net.config.batch;
    let (mut correct, mut loss_sum) = (0, 0.0f64);
    for first in (0..test.len()).step_by(batch as usize) {
        let count = batch.min(test.len() - first);
        let (images, labels) = test.batch(first, count);
        let (loss, right) = net.evaluate(rt, &images, &labels)?;
        correct += right;
        loss_sum += f64::from(loss) * f64::from(count);
    }
    Ok(((loss_sum / f64::from(test.len().max(1))) as f32, correct))
}

/// A bar on stderr with the steps per second and the time left; hidden (drawing nothing) when
/// stderr is not a terminal or there is nothing to train.
fn progress_bar(steps: u32) -> Result<ProgressBar, Box<dyn Error>> {
    if steps == 0 {
        return Ok(ProgressBar::hidden());
    }
    let style = ProgressStyle::with_template(
        "{bar:32.cyan/blue} {pos}/{len} steps, {rate}, {eta} left, {msg}",
    )?
    .with_key(
        "rate",
        |state: &ProgressState, out: &mut dyn std::fmt::Write| {
            // The default `{per_sec}` prints four decimals and no unit.
            let _ = write!(out, "{:.2} steps/s", state.per_sec());
        },
    )
    .progress_chars("=> ");
    Ok(ProgressBar::new(u64::from(steps)).with_style(style))
}

/// Writes the loss curve's CSV and PNG and says where; a PNG that cannot be drawn (no font) is a
/// line of output, not a failure.
fn write_curve(options: &Options, losses: &[f32]) {
    if losses.is_empty() {
        return;
    }
    let (csv, png) = options.curve_paths();
    match curve::write_csv(losses, &csv) {
        Ok(()) => println!("loss of every step: {}", csv.display()),
        Err(e) => println!("no loss CSV: {e}"),
    }
    match curve::write_png(losses, &png) {
        Ok(()) => println!("loss curve: {}", png.display()),
        Err(e) => println!("no loss plot: {e}"),
    }
}

/// The timing table's rows: a short name per kernel instance, its total time and calls. Rows
/// of one kernel with different instances keep their instance's parameters, so they stay apart.
fn kernel_rows(times: BTreeMap<String, (Duration, u32)>) -> Vec<(String, Duration, u32)> {
    let mut by_name: BTreeMap<String, u32> = BTreeMap::new();
    for label in times.keys() {
        *by_name.entry(short_name(label).0).or_default() += 1;
    }
    times
        .into_iter()
        .map(|(label, (time, calls))| {
            let (name, instance) = short_name(&label);
            let name = if by_name.get(&name).copied().unwrap_or(0) > 1 && !instance.is_empty() {
                format!("{name} ({instance})")
            } else {
                name
            };
            (name, time, calls)
        })
        .collect()
}

/// A kernel's entry point split into a readable name and its instance's parameters:
/// `conv_grad_input_reg4_block64` is `("conv dgrad", "reg4 block64")`. The parameters are the
/// trailing words that end in digits.
fn short_name(label: &str) -> (String, String) {
    let words: Vec<&str> = label.split('_').collect();
    let base = words
        .iter()
        .position(|w| w.ends_with(|c: char| c.is_ascii_digit()))
        .unwrap_or(words.len());
    let (kernel, instance) = words.split_at(base);
    let readable = match kernel.join("_").as_str() {
        "conv_forward" => "conv fwd".to_owned(),
        "conv_grad_bias" => "conv bias grad".to_owned(),
        "conv_activation_grad" => "conv relu grad".to_owned(),
        "gemm_forward" => "linear fwd".to_owned(),
        "grad_pre" => "linear act grad".to_owned(),
        "d_operands" => "linear dgrad + wgrad".to_owned(),
        "d_bias" => "linear bias grad".to_owned(),
        "cross_entropy" => "softmax + loss".to_owned(),
        "softmax_cross_entropy_grad" => "softmax + loss grad".to_owned(),
        "sgd_step" => "sgd".to_owned(),
        _ => {
            // Word by word: conv_grad_input_tile is "conv dgrad tile".
            let mut out: Vec<&str> = Vec::new();
            let mut rest = kernel;
            while let Some((&word, tail)) = rest.split_first() {
                match (word, tail.first().copied()) {
                    ("grad", Some("input")) => {
                        out.push("dgrad");
                        rest = &tail[1..];
                    }
                    ("grad", Some("weight")) => {
                        out.push("wgrad");
                        rest = &tail[1..];
                    }
                    ("forward", _) => {
                        out.push("fwd");
                        rest = tail;
                    }
                    _ => {
                        out.push(word);
                        rest = tail;
                    }
                }
            }
            out.join(" ")
        }
    };
    (readable, instance.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default configuration, as `cargo xtask example` runs it: trained on the digits, it
    /// classifies at least 90% of the held-out ones (94.6%, 336 of 355, on lavapipe, 2026-11-23).
    /// Trains as `args` say and asserts that at least 90% of the held-out digits come out
    /// right; a network the device cannot build (`--tensor-cores` without them) must be
    /// refused with `MissingFeature` instead.
    fn learns_the_digits(args: &[&str]) {
        let options = Options::parse(args.iter().copied()).unwrap().unwrap();
        assert_eq!(options.data, Data::Digits);
        let rt = Runtime::new().unwrap();
        let (train, test) = options.datasets();
        let mut net = match Net::new(&rt, options.config, SGD, 3) {
            Err(tessera::Error::MissingFeature { .. })
                if options.config.precision == Precision::TensorCoreF16 =>
            {
                return;
            }
            net => net.unwrap(),
        };
        let batch = options.config.batch;
        for step in 0..options.steps {
            let (images, labels) = train.batch(step * batch, batch);
            net.train_step(&rt, &images, &labels, false).unwrap();
        }
        let (loss, correct) = evaluate(&rt, &mut net, &test).unwrap();
        eprintln!(
            "{args:?}: {correct} of {} held-out digits right (loss {loss})",
            test.len()
        );
        assert!(
            correct * 10 >= test.len() * 9,
            "{correct} of {} held-out digits right (loss {loss})",
            test.len()
        );
    }

    #[test]
    fn by_default_it_learns_the_digits() {
        learns_the_digits(&[]);
    }

    #[test]
    fn on_tensor_cores_it_learns_the_digits_or_is_refused() {
        learns_the_digits(&["--tensor-cores"]);
    }

    #[test]
    fn options_choose_the_data_and_refuse_what_does_not_fit() {
        let parse = |args: &[&str]| Options::parse(args.iter().copied());
        let stripes = parse(&["--data", "stripes", "--steps", "5"])
            .unwrap()
            .unwrap();
        assert!(matches!(stripes.data, Data::Stripes { .. }));
        assert_eq!((stripes.steps, stripes.config.classes), (5, data::CLASSES));
        let large = parse(&["--large"]).unwrap().unwrap();
        assert_eq!(large.config.image, 32);
        let error = parse(&["--large", "--data", "digits"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--large trains on stripes of 32x32; the digits are 8x8"
        );
        let error = parse(&["--data", "mnist"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--data takes `digits` or `stripes`, not `mnist`"
        );
        assert!(parse(&["--help"]).unwrap().is_none());
        assert_eq!(stripes.config.precision, Precision::F32);
        let tensor = parse(&["--tensor-cores"]).unwrap().unwrap();
        assert_eq!(tensor.config.precision, Precision::TensorCoreF16);
    }

    #[test]
    fn kernel_names_are_short_and_distinct_rows_stay_distinct() {
        assert_eq!(
            short_name("conv_grad_input_reg4_block64_padded65_depth16_loads4"),
            (
                "conv dgrad".to_owned(),
                "reg4 block64 padded65 depth16 loads4".to_owned()
            )
        );
        assert_eq!(short_name("sgd_step").0, "sgd");
        assert_eq!(short_name("conv_forward_reduce").0, "conv fwd reduce");
        assert_eq!(short_name("conv_grad_weight_reduce").0, "conv wgrad reduce");
        assert_eq!(short_name("winograd_input_tiles").0, "winograd input tiles");
        let ms = Duration::from_millis(1);
        let times = BTreeMap::from([
            ("conv_forward_reg4".to_owned(), (ms, 1)),
            ("conv_forward_reg8".to_owned(), (ms, 1)),
            ("sgd_step_block64".to_owned(), (ms, 6)),
        ]);
        let names: Vec<String> = kernel_rows(times).into_iter().map(|r| r.0).collect();
        assert_eq!(names, ["conv fwd (reg4)", "conv fwd (reg8)", "sgd"]);
    }
}
