//! Trains a small convolutional network to tell stripe orientations apart, every forward and
//! backward step in tessera kernels: conv 3x3 + ReLU, conv 3x3 stride 2 + ReLU, flatten,
//! linear, softmax cross-entropy, SGD with momentum.
//!
//! ```text
//! cargo xtask example                                  # the default size, under a minute on a CPU
//! cargo run --release --example train -- --large       # a size worth a GPU
//! cargo run --release --example train -- --steps 300   # any size, more steps
//! ```
//!
//! It prints the adapter, the loss as it falls, the accuracy on held-out images and the GPU
//! time of each kernel.

mod data;
mod net;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use data::{Dataset, CLASSES};
use net::{Net, NetConfig, Tensors};
use tessera::nn::SgdConfig;
use tessera::{Runtime, TimingSource};

/// What the command line chose.
struct Options {
    config: NetConfig,
    steps: u32,
    train_images: u32,
    test_images: u32,
}

impl Options {
    fn parse() -> Result<Self, String> {
        let mut options = Options {
            config: NetConfig {
                batch: 32,
                image: 12,
                channels: [8, 16],
                classes: CLASSES,
            },
            steps: 80,
            train_images: 1024,
            test_images: 256,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--large" => {
                    options.config = NetConfig {
                        batch: 256,
                        image: 32,
                        channels: [32, 64],
                        classes: CLASSES,
                    };
                    options.steps = 200;
                    options.train_images = 8192;
                    options.test_images = 1024;
                }
                "--steps" => {
                    let value = args.next().ok_or("--steps needs a number")?;
                    options.steps = value
                        .parse()
                        .map_err(|_| format!("--steps needs a number, got `{value}`"))?;
                }
                other => {
                    return Err(format!(
                        "unknown argument `{other}`; use --large and/or --steps N"
                    ))
                }
            }
        }
        Ok(options)
    }
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = Options::parse()?;
    let config = options.config;
    let rt = Runtime::new()?;
    println!("adapter: {}", rt.info());
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

    let train = Dataset::stripes(options.train_images, config.image, 1);
    let test = Dataset::stripes(options.test_images, config.image, 2);
    let sgd = SgdConfig {
        learning_rate: 0.02,
        momentum: 0.9,
        weight_decay: 0.0,
    };
    let mut net = Net::new(&rt, config, sgd, 3)?;
    let sizes: Vec<String> = Tensors::NAMES
        .iter()
        .zip(net.params.all())
        .map(|(name, tensor)| format!("{name} {}", tensor.len()))
        .collect();
    println!("parameters: {}", sizes.join(", "));

    let started = Instant::now();
    let mut kernel_times: BTreeMap<String, (Duration, u32)> = BTreeMap::new();
    let mut gpu_total = Duration::ZERO;
    let mut timed_by = TimingSource::WallClock;
    let report_every = (options.steps / 10).max(1);
    for step in 0..options.steps {
        let (images, labels) = train.batch(step * config.batch, config.batch);
        let (loss, timing) = net.train_step(&rt, &images, &labels)?;
        if !loss.is_finite() {
            return Err(format!("the loss diverged at step {step}: {loss}").into());
        }
        // The first step includes the pipelines' first use; keep it out of the averages.
        if step > 0 {
            gpu_total += timing.total;
            timed_by = timing.source;
            for (label, time) in timing.dispatches {
                let entry = kernel_times.entry(label).or_default();
                entry.0 += time.unwrap_or_default();
                entry.1 += 1;
            }
        }
        if step % report_every == 0 || step + 1 == options.steps {
            println!("step {step:>4}: loss {loss:.4}");
        }
    }
    let elapsed = started.elapsed();

    let (mut correct, mut loss_sum) = (0, 0.0);
    let batches = options.test_images / config.batch;
    for i in 0..batches {
        let (images, labels) = test.batch(i * config.batch, config.batch);
        let (loss, right) = net.evaluate(&rt, &images, &labels)?;
        correct += right;
        loss_sum += loss;
    }
    let seen = batches * config.batch;
    println!(
        "held-out images: loss {:.4}, accuracy {:.1}% ({correct}/{seen})",
        loss_sum / batches as f32,
        100.0 * correct as f32 / seen as f32
    );
    println!("training took {:.2} s of wall time", elapsed.as_secs_f64());

    let timed_steps = options.steps.saturating_sub(1).max(1);
    match timed_by {
        TimingSource::GpuTimestamps => {
            println!(
                "GPU time per step: {:.3} ms; per kernel (mean over steps after the first):",
                gpu_total.as_secs_f64() * 1e3 / f64::from(timed_steps)
            );
            let mut rows: Vec<_> = kernel_times.into_iter().collect();
            rows.sort_by_key(|(_, (time, _))| std::cmp::Reverse(*time));
            for (label, (time, calls)) in rows {
                println!(
                    "  {label:<56} {:>8.3} ms per step, {:>2} calls per step",
                    time.as_secs_f64() * 1e3 / f64::from(timed_steps),
                    calls / timed_steps
                );
            }
        }
        TimingSource::WallClock => println!(
            "this adapter has no timestamp queries: {:.3} ms per step by the wall clock, no \
             per-kernel times",
            gpu_total.as_secs_f64() * 1e3 / f64::from(timed_steps)
        ),
    }
    Ok(())
}
