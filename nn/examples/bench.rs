//! Throughput of the `tessera_nn` kernels on the shapes `bench/torch_bench.py` runs in PyTorch
//! (the workloads of the GPU training crates tessera replaces): GEMM + bias + GELU forward and backward, and convolution
//! forward, input gradient and filter gradient on ResNet layers.
//!
//! ```text
//! cargo run --release -p tessera-nn --example bench            # every shape (meant for a GPU)
//! cargo run --release -p tessera-nn --example bench -- --small # small shapes, a smoke test on a CPU adapter
//! cargo run --release -p tessera-nn --example bench -- --conv  # convolutions only (`--gemm`: GEMMs only)
//! cargo run --release -p tessera-nn --example bench -- --launch # launch cost against raw wgpu only
//! cargo run --release -p tessera-nn --example bench -- --out DIR # also DIR/tessera.csv and DIR/tessera.md
//! cargo run --release -p tessera-nn --example bench -- --conv --by-kernel # and each dispatch, profiled
//! cargo run --release -p tessera-nn --example bench -- --gemm --only "M=4096 N=4096" # shapes whose label has it
//! ```
//!
//! Each figure is the median of 3 submissions of 10 launches, each submission one batch run
//! as a program runs it (one compute pass), timed by GPU timestamps at the pass's beginning
//! and end where the adapter has them (the wall clock otherwise; the header says which).
//! `--by-kernel` profiles one more launch (`Batch::submit_profiled`: each dispatch in a pass
//! of its own, so its times add up to more than the figure). Every op is autotuned first,
//! unless `TESSERA_AUTOTUNE=off`. The CSV (`work,pass,ms,tflops`) uses the
//! `work` labels of `bench/torch_bench.py`, and `cargo xtask bench-report` joins the two.

use std::time::Duration;

use std::fmt::Write as _;

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use tessera::{wgpu, Batch, GpuBuffer, Result, Runtime};
use tessera_nn::{
    Activation, Conv2dBackward, Conv2dForward, Conv2dGradInput, Conv2dGradWeight, Conv2dShape,
    Convolution, Gemm, GemmBackward, GemmForward, GemmShape, Padding, Precision,
};

#[tessera::kernels]
mod tiny {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Step {
        pub add: f32,
        pub n: u32,
    }

    /// The smallest useful kernel: launch cost is all there is to time.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn add(p: &Step, #[len(p.n)] x: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            x[i] += p.add;
        }
    }
}

const REPS: u32 = 10;

/// Every figure of the run, for the CSV and markdown files.
#[derive(Default)]
struct Report {
    /// (work, pass, time, TFLOP/s; none for launch costs).
    rows: Vec<(String, &'static str, Duration, Option<f64>)>,
}

impl Report {
    fn add(&mut self, work: &str, pass: &'static str, time: Duration, tflops: Option<f64>) {
        self.rows.push((work.to_owned(), pass, time, tflops));
    }

    fn csv(&self, adapter: &str) -> String {
        let mut out = format!("# adapter: {adapter}\nwork,pass,ms,tflops\n");
        for (work, pass, time, tflops) in &self.rows {
            let tflops = tflops.map_or(String::new(), |t| format!("{t:.4}"));
            let _ = writeln!(out, "{work},{pass},{:.6},{tflops}", ms(*time));
        }
        out
    }

    fn markdown(&self, adapter: &str) -> String {
        let mut out = format!(
            "adapter: {adapter}\n\n| work | pass | ms | TFLOP/s |\n| --- | --- | ---: | ---: |\n"
        );
        for (work, pass, time, tflops) in &self.rows {
            let tflops = tflops.map_or("-".to_owned(), |t| format!("{t:.2}"));
            let _ = writeln!(out, "| {work} | {pass} | {:.4} | {tflops} |", ms(*time));
        }
        out
    }
}

/// How long [`time`] keeps the GPU busy with what it times before measuring: the host's work
/// between two figures (making buffers, tuning) can leave the GPU idle long enough for its
/// clocks to drop (an H200's SM clock falls from 1980 to 345 MHz within half a second), and
/// one warm-up launch does not bring them back (`examples/large_buffers.rs` in the root crate).
const WARM_UP: Duration = Duration::from_millis(200);

/// The median over 3 submissions of the time per launch of what `record` adds to a batch,
/// after launches that keep the GPU busy for at least [`WARM_UP`].
fn time(rt: &Runtime, mut record: impl FnMut(&mut Batch<'_>) -> Result<()>) -> Result<Duration> {
    let start = std::time::Instant::now();
    while start.elapsed() < WARM_UP {
        let mut warm = rt.batch();
        for _ in 0..REPS {
            record(&mut warm)?;
        }
        warm.submit()?;
        rt.wait()?;
    }
    let mut times = Vec::new();
    for _ in 0..3 {
        let mut batch = rt.batch();
        for _ in 0..REPS {
            record(&mut batch)?;
        }
        times.push(batch.submit_timed()?.total / REPS);
    }
    times.sort();
    Ok(times[1])
}

/// Where one launch of what `record` adds to a batch spends its GPU time: each dispatch's
/// entry point and time, in order (empty without timestamps).
fn breakdown(rt: &Runtime, mut record: impl FnMut(&mut Batch<'_>) -> Result<()>) -> Result<String> {
    let mut batch = rt.batch();
    record(&mut batch)?;
    let timing = batch.submit_profiled()?;
    let parts: Vec<String> = timing
        .dispatches
        .iter()
        .filter_map(|(label, time)| Some(format!("{label} {:.3}", ms((*time)?))))
        .collect();
    Ok(parts.join(", "))
}

/// `len` values uniform in [-0.5, 0.5) from the library's seeded generator.
fn random(rt: &Runtime, len: usize, seed: u64) -> Result<GpuBuffer<f32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..len).map(|_| rng.random_range(-0.5..0.5)).collect();
    rt.upload(&values)
}

fn tflops(flop: f64, t: Duration) -> f64 {
    flop / t.as_secs_f64() / 1e12
}

fn ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3
}

fn bench_gemm(rt: &Runtime, gemm: &Gemm, shape: GemmShape, report: &mut Report) -> Result<()> {
    let precision = match gemm.precision() {
        Precision::F32 => "",
        Precision::TensorCoreF16 => " tensor-core-f16",
    };
    let GemmShape { m, n, k } = shape;
    let (m_, n_, k_) = (m as usize, n as usize, k as usize);
    let (a, b, bias, grad_y) = (
        random(rt, m_ * k_, 1)?,
        random(rt, k_ * n_, 2)?,
        random(rt, n_, 3)?,
        random(rt, m_ * n_, 4)?,
    );
    let (mut pre, mut y) = (rt.zeros(m_ * n_)?, rt.zeros(m_ * n_)?);
    let (mut grad_a, mut grad_b, mut grad_bias) =
        (rt.zeros(m_ * k_)?, rt.zeros(k_ * n_)?, rt.zeros(n_)?);
    let gelu = Activation::Gelu;
    // As in training: `pre` kept for the backward pass, every gradient written.
    let forward = time(rt, |batch| {
        let args = GemmForward {
            shape,
            activation: gelu,
            a: &a,
            b: &b,
            bias: &bias,
            pre: Some(&mut pre),
            y: &mut y,
        };
        gemm.forward(batch, args)
    })?;
    let backward = time(rt, |batch| {
        let args = GemmBackward {
            shape,
            activation: gelu,
            a: &a,
            b: &b,
            pre: Some(&pre),
            grad_y: &grad_y,
            grad_a: Some(&mut grad_a),
            grad_b: &mut grad_b,
            grad_bias: &mut grad_bias,
        };
        gemm.backward(batch, args)
    })?;
    let flop = 2.0 * f64::from(m) * f64::from(n) * f64::from(k);
    let work = format!("gemm M={m} N={n} K={k}{precision}");
    report.add(&work, "forward", forward, Some(tflops(flop, forward)));
    report.add(
        &work,
        "backward",
        backward,
        Some(tflops(2.0 * flop, backward)),
    );
    let both = forward + backward;
    report.add(
        &work,
        "forward+backward",
        both,
        Some(tflops(3.0 * flop, both)),
    );
    println!(
        "gemm M={m} K={k} N={n}{precision}: forward {:.3} ms {:.2} TFLOP/s | backward {:.3} ms {:.2} TFLOP/s | \
         forward+backward {:.2} TFLOP/s (6MNK)",
        ms(forward),
        tflops(flop, forward),
        ms(backward),
        tflops(2.0 * flop, backward),
        tflops(3.0 * flop, forward + backward),
    );
    Ok(())
}

/// The label `bench/torch_bench.py` gives the same convolution.
fn conv_label(shape: &Conv2dShape) -> String {
    let Padding {
        top,
        bottom,
        left,
        right,
    } = shape.padding;
    let padding = if [bottom, left, right] == [top; 3] {
        format!("p{top}")
    } else {
        format!("pad t{top} b{bottom} l{left} r{right}")
    };
    let dilation = match shape.dilation[0] {
        1 => String::new(),
        d => format!(" d{d}"),
    };
    format!(
        "conv N={} Ci={} {}x{} Co={} k{}x{} s{} {padding}{dilation}",
        shape.batch,
        shape.in_channels,
        shape.input[0],
        shape.input[1],
        shape.out_channels,
        shape.kernel[0],
        shape.kernel[1],
        shape.stride[0],
    )
}

/// Random operands of a convolution: its input, filter, bias and output gradient.
struct ConvOperands {
    x: GpuBuffer<f32>,
    w: GpuBuffer<f32>,
    bias: GpuBuffer<f32>,
    grad_y: GpuBuffer<f32>,
}

impl ConvOperands {
    /// The operands of `shape`, each from a seed of its own.
    fn random(rt: &Runtime, shape: &Conv2dShape) -> Result<Self> {
        Ok(ConvOperands {
            x: random(rt, shape.input_len(), 5)?,
            w: random(rt, shape.weight_len(), 6)?,
            bias: random(rt, shape.out_channels as usize, 7)?,
            grad_y: random(rt, shape.output_len()?, 8)?,
        })
    }
}

/// The floating-point operations of one pass of `shape` (two per multiply-add; the forward,
/// dgrad and wgrad each do as many).
fn conv_flop(shape: &Conv2dShape) -> Result<f64> {
    let [oh, ow] = shape.output()?;
    Ok(2.0
        * f64::from(shape.batch)
        * f64::from(shape.out_channels)
        * f64::from(oh)
        * f64::from(ow)
        * f64::from(shape.in_channels)
        * f64::from(shape.kernel[0])
        * f64::from(shape.kernel[1]))
}

fn bench_conv(
    rt: &Runtime,
    conv: &Convolution,
    shape: Conv2dShape,
    report: &mut Report,
    by_kernel: bool,
) -> Result<()> {
    let flop = conv_flop(&shape)?;
    let operands = ConvOperands::random(rt, &shape)?;
    let ConvOperands { x, w, bias, grad_y } = &operands;
    let mut y = rt.zeros(shape.output_len()?)?;
    let mut grad_x = rt.zeros(shape.input_len())?;
    let mut grad_w = rt.zeros(shape.weight_len())?;
    // The three passes as closures, each run once timed as a whole and once per kernel.
    // As in training without an activation (and as cuDNN's convolution): `y` alone, which
    // the backward pass reads as `pre`.
    let mut forward = |batch: &mut Batch<'_>| {
        let args = Conv2dForward {
            shape,
            activation: Activation::None,
            x,
            w,
            bias,
            pre: None,
            y: &mut y,
        };
        conv.forward(batch, args)
    };
    let mut dgrad = |batch: &mut Batch<'_>| {
        let args = Conv2dGradInput {
            shape,
            w,
            grad_pre: grad_y,
            grad_x: &mut grad_x,
        };
        conv.grad_input(batch, args)
    };
    let mut wgrad = |batch: &mut Batch<'_>| {
        let args = Conv2dGradWeight {
            shape,
            x,
            grad_pre: grad_y,
            grad_w: &mut grad_w,
        };
        conv.grad_weight(batch, args)
    };
    let times = [
        time(rt, &mut forward)?,
        time(rt, &mut dgrad)?,
        time(rt, &mut wgrad)?,
    ];
    let work = match conv.precision() {
        Precision::F32 => conv_label(&shape),
        Precision::TensorCoreF16 => format!("{} tensor-core-f16", conv_label(&shape)),
    };
    report_conv(report, &work, flop, times);
    if by_kernel {
        let forward = breakdown(rt, &mut forward)?;
        let dgrad = breakdown(rt, &mut dgrad)?;
        let wgrad = breakdown(rt, &mut wgrad)?;
        println!("  forward (ms): {forward}\n  dgrad: {dgrad}\n  wgrad: {wgrad}");
        let backward = conv_backward_breakdown(rt, conv, shape, &operands)?;
        println!("  backward: {backward}");
    }
    Ok(())
}

/// Adds the forward, dgrad and wgrad `times` of the convolution `work` to `report`, and
/// prints them with their TFLOP/s.
fn report_conv(report: &mut Report, work: &str, flop: f64, times: [Duration; 3]) {
    let [forward_time, dgrad_time, wgrad_time] = times;
    report.add(
        work,
        "forward",
        forward_time,
        Some(tflops(flop, forward_time)),
    );
    report.add(work, "dgrad", dgrad_time, Some(tflops(flop, dgrad_time)));
    report.add(work, "wgrad", wgrad_time, Some(tflops(flop, wgrad_time)));
    println!(
        "{work}: forward {:.3} ms {:.2} TFLOP/s | dgrad {:.3} ms {:.2} TFLOP/s | wgrad {:.3} ms \
         {:.2} TFLOP/s",
        ms(forward_time),
        tflops(flop, forward_time),
        ms(dgrad_time),
        tflops(flop, dgrad_time),
        ms(wgrad_time),
        tflops(flop, wgrad_time),
    );
}

/// The profile of the whole backward pass of training (which also computes the bias
/// gradient) of `shape` on `operands`, into gradient buffers of its own.
fn conv_backward_breakdown(
    rt: &Runtime,
    conv: &Convolution,
    shape: Conv2dShape,
    operands: &ConvOperands,
) -> Result<String> {
    let (mut grad_x, mut grad_w) = (rt.zeros(shape.input_len())?, rt.zeros(shape.weight_len())?);
    let mut grad_bias = rt.zeros(shape.out_channels as usize)?;
    breakdown(rt, |batch| {
        let args = Conv2dBackward {
            shape,
            activation: Activation::None,
            x: &operands.x,
            w: &operands.w,
            pre: None,
            grad_y: &operands.grad_y,
            grad_x: Some(&mut grad_x),
            grad_w: &mut grad_w,
            grad_bias: &mut grad_bias,
        };
        conv.backward(batch, args)
    })
}

/// Dispatches per launch-cost measurement.
const LAUNCHES: u32 = 2000;

/// The median of five runs of `f`, divided by `per`.
fn median_of_5(per: u32, mut f: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let mut times = (0..5).map(|_| f()).collect::<Result<Vec<_>>>()?;
    times.sort();
    Ok(times[2] / per)
}

fn us(t: Duration) -> f64 {
    t.as_secs_f64() * 1e6
}

/// The same WGSL dispatched by hand through wgpu, the way an application that owns its
/// pipeline would: pipeline, uniform buffer and bind group made once.
struct Raw {
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
}

impl Raw {
    fn new(rt: &Runtime, entry_point: &str, x: &GpuBuffer<f32>, step: tiny::Step) -> Result<Self> {
        use wgpu::util::DeviceExt;
        let device = rt.device();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(tiny::WGSL.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some(entry_point),
            compilation_options: Default::default(),
            cache: None,
        });
        let uniform = |contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents,
                usage: wgpu::BufferUsages::UNIFORM,
            })
        };
        let params =
            uniform(&[tessera::__private::bytemuck::bytes_of(&step), &[0u8; 8][..]].concat());
        // The launcher's logical grid: one workgroup of one.
        let grid = uniform(tessera::__private::bytemuck::bytes_of(&[1u32, 1, 1, 1]));
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: x.raw().as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: grid.as_entire_binding(),
                },
            ],
        });
        match pollster::block_on(scope.pop()) {
            Some(error) => Err(tessera::Error::Internal {
                operation: "building the raw wgpu pipeline of the launch benchmark".into(),
                message: error.to_string(),
            }),
            None => Ok(Raw { pipeline, group }),
        }
    }

    /// Records `count` dispatches the way `how` says, submits and waits.
    fn run(&self, rt: &Runtime, count: u32, how: Encoding) -> Result<Duration> {
        let start = std::time::Instant::now();
        let (submits, passes) = match how {
            Encoding::OnePass => (1, 1),
            Encoding::PassEach => (1, count),
            Encoding::SubmitEach => (count, 1),
        };
        for _ in 0..submits {
            let mut encoder = rt.device().create_command_encoder(&Default::default());
            for _ in 0..passes {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                for _ in 0..count / submits / passes {
                    pass.set_pipeline(&self.pipeline);
                    pass.set_bind_group(0, &self.group, &[]);
                    pass.dispatch_workgroups(1, 1, 1);
                }
            }
            rt.queue().submit([encoder.finish()]);
        }
        rt.wait()?;
        Ok(start.elapsed())
    }
}

/// How [`Raw::run`] records its dispatches.
#[derive(Clone, Copy)]
enum Encoding {
    /// All in one compute pass of one command buffer.
    OnePass,
    /// A compute pass each, in one command buffer.
    PassEach,
    /// A command buffer and a submission each.
    SubmitEach,
}

/// Launch cost of a one-workgroup kernel: tessera's batch and `launch()` against raw wgpu.
fn bench_launch(rt: &Runtime, out: &mut Report) -> Result<()> {
    let n = 64;
    let step = tiny::Step { add: 1.0, n };
    let mut x = rt.zeros::<f32>(n as usize)?;
    let add = tiny::Add::new(rt)?;
    // Compiled now, as the raw pipeline is, rather than in the first timed run.
    add.prepare(rt)?;
    let raw = Raw::new(rt, add.entry_point(), &x, step)?;
    let dispatches =
        bench_raw_launches(rt, &raw, out)? + bench_tessera_launches(rt, &add, step, &mut x, out)?;
    let expected = f64::from(dispatches);

    let wrong = x
        .read(rt)?
        .iter()
        .filter(|&&v| f64::from(v) != expected)
        .count();
    if wrong > 0 {
        return Err(tessera::Error::Internal {
            operation: "the launch benchmark".into(),
            message: format!("{wrong} of {n} elements are not {expected}: dispatches were lost"),
        });
    }
    Ok(())
}

/// Prints the launch cost `per` dispatch of `what` and adds it to `out`.
fn report_launch(out: &mut Report, what: &str, per: Duration) {
    println!("launch {what}: {:.2} us per dispatch", us(per));
    // The CSV separates fields with commas.
    let what = what.replace(", ", "; ");
    out.add(&format!("launch: {what}"), "per dispatch", per, None);
}

/// Launch costs of the kernel dispatched by hand through wgpu; returns how many dispatches
/// ran (each adds one to every element).
fn bench_raw_launches(rt: &Runtime, raw: &Raw, out: &mut Report) -> Result<u32> {
    report_launch(
        out,
        "raw wgpu, one pass, bind group reused, end to end",
        median_of_5(LAUNCHES, || raw.run(rt, LAUNCHES, Encoding::OnePass))?,
    );
    report_launch(
        out,
        "raw wgpu, a pass per dispatch, end to end",
        median_of_5(LAUNCHES, || raw.run(rt, LAUNCHES, Encoding::PassEach))?,
    );
    report_launch(
        out,
        "raw wgpu, a submission per dispatch, end to end",
        median_of_5(LAUNCHES, || raw.run(rt, LAUNCHES, Encoding::SubmitEach))?,
    );
    report_launch(
        out,
        "raw wgpu, one dispatch submitted and waited for",
        median_of_5(1, || raw.run(rt, 1, Encoding::OnePass))?,
    );
    Ok(LAUNCHES * 3 * 5 + 5)
}

/// Launch costs of `add` on `x` through a tessera batch and through `launch()`; returns how
/// many dispatches ran (each adds one to every element).
fn bench_tessera_launches(
    rt: &Runtime,
    add: &tiny::Add,
    step: tiny::Step,
    x: &mut GpuBuffer<f32>,
    out: &mut Report,
) -> Result<u32> {
    let mut recording = Vec::new();
    let batch = median_of_5(LAUNCHES, || {
        let start = std::time::Instant::now();
        let mut batch = rt.batch();
        for _ in 0..LAUNCHES {
            add.record(&mut batch, tiny::AddArgs { p: &step, x })?;
        }
        recording.push(start.elapsed());
        batch.submit()?;
        rt.wait()?;
        Ok(start.elapsed())
    })?;
    recording.sort();
    report_launch(out, "tessera batch, recording", recording[2] / LAUNCHES);
    report_launch(out, "tessera batch, end to end", batch);
    let launches = median_of_5(LAUNCHES, || {
        let start = std::time::Instant::now();
        for _ in 0..LAUNCHES {
            add.launch(rt, tiny::AddArgs { p: &step, x })?;
        }
        rt.wait()?;
        Ok(start.elapsed())
    })?;
    report_launch(out, "tessera launch() one by one, end to end", launches);
    let single = median_of_5(1, || {
        let start = std::time::Instant::now();
        add.launch(rt, tiny::AddArgs { p: &step, x })?;
        rt.wait()?;
        Ok(start.elapsed())
    })?;
    report_launch(out, "tessera launch(), submitted and waited for", single);
    Ok(LAUNCHES * 2 * 5 + 5)
}

/// Keeps the GPU busy for three seconds with a large GEMM (compute) and a large convolution
/// (memory traffic), so that neither tuning nor the first figures are taken at idle clocks:
/// on the H100 the first memory-heavy shape of a process ran 5x slower for about two seconds
/// after a GEMM-only warm-up. Untuned: tuning is what must not run cold.
fn warm_up(rt: &Runtime, gemm: &Gemm, conv: &Convolution) -> Result<()> {
    let mode = rt.autotune_mode();
    rt.set_autotune(tessera::Autotune::Off);
    let shape = GemmShape {
        m: 4096,
        n: 4096,
        k: 4096,
    };
    let square = 4096 * 4096;
    let (a, b, bias) = (rt.zeros(square)?, rt.zeros(square)?, rt.zeros(4096)?);
    let (mut pre, mut y) = (rt.zeros(square)?, rt.zeros(square)?);
    let image = Conv2dShape::new(32, 64, [56, 56], 64, [3, 3]).padding(Padding::uniform(1));
    let (x, w, image_bias) = (
        rt.zeros(image.input_len())?,
        rt.zeros(image.weight_len())?,
        rt.zeros(64)?,
    );
    let (mut image_pre, mut image_y) = (
        rt.zeros(image.output_len()?)?,
        rt.zeros(image.output_len()?)?,
    );
    let gelu = Activation::Gelu;
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        let mut batch = rt.batch();
        for _ in 0..10 {
            let args = GemmForward {
                shape,
                activation: gelu,
                a: &a,
                b: &b,
                bias: &bias,
                pre: Some(&mut pre),
                y: &mut y,
            };
            gemm.forward(&mut batch, args)?;
            let args = Conv2dForward {
                shape: image,
                activation: gelu,
                x: &x,
                w: &w,
                bias: &image_bias,
                pre: Some(&mut image_pre),
                y: &mut image_y,
            };
            conv.forward(&mut batch, args)?;
        }
        batch.submit()?;
        rt.wait()?;
    }
    rt.set_autotune(mode);
    Ok(())
}

const USAGE: &str = "\
usage: bench [--small] [--gemm] [--conv] [--launch] [--tensor-cores] [--by-kernel] [--only TEXT]
             [--out DIR]

  --small      small shapes (for a CPU adapter)
  --gemm, --conv, --launch
               run only these parts (none given: all)
  --tensor-cores
               the GEMMs and convolutions in Precision::TensorCoreF16 (f16 products on
               the tensor cores, f32 sums) instead of strict f32
  --by-kernel  each convolution pass's time per dispatch too, and the whole backward's
  --only TEXT  only the GEMMs and convolutions whose label contains TEXT (e.g. \"M=4096 N=4096\",
               \"Ci=64 56x56 Co=64 k3x3\")
  --out DIR    write the results as CSV files into DIR";

/// What the command line chose.
#[derive(Default)]
struct Options {
    small: bool,
    by_kernel: bool,
    gemm: bool,
    conv: bool,
    launch: bool,
    tensor_cores: bool,
    only: Option<String>,
    out: Option<String>,
}

impl Options {
    /// The options, or `None` when the user asked for help.
    fn parse() -> std::result::Result<Option<Options>, lexopt::Error> {
        use lexopt::prelude::*;
        let mut options = Options::default();
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next()? {
            match arg {
                Long("small") => options.small = true,
                Long("by-kernel") => options.by_kernel = true,
                Long("gemm") => options.gemm = true,
                Long("conv") => options.conv = true,
                Long("launch") => options.launch = true,
                Long("tensor-cores") => options.tensor_cores = true,
                Long("only") => options.only = Some(parser.value()?.string()?),
                Long("out") => options.out = Some(parser.value()?.string()?),
                Short('h') | Long("help") => return Ok(None),
                _ => return Err(arg.unexpected()),
            }
        }
        // No part named: every part.
        if !(options.gemm || options.conv || options.launch) {
            (options.gemm, options.conv, options.launch) = (true, true, true);
        }
        Ok(Some(options))
    }
}

/// Runs the benchmark; an error is printed as the sentence its type writes.
fn main() -> std::process::ExitCode {
    let options = match Options::parse() {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("error: {error}; see --help");
            return std::process::ExitCode::FAILURE;
        }
    };
    match bench(&options) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn bench(options: &Options) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let Options {
        small,
        by_kernel,
        gemm: run_gemm,
        conv: run_conv,
        launch: run_launch,
        tensor_cores,
        ref only,
        ref out,
    } = *options;
    let chosen = |label: &str| only.as_deref().is_none_or(|text| label.contains(text));
    let rt = Runtime::new()?;
    print_header(&rt);
    let mut report = Report::default();
    let precision = match tensor_cores {
        true => Precision::TensorCoreF16,
        false => Precision::F32,
    };
    let gemm = Gemm::with_precision(&rt, precision)?;
    let conv = Convolution::with_precision(&rt, precision)?;
    if !small {
        // Every kernel compiled first: a pipeline compiled between two shapes idles the GPU
        // long enough for its clocks to fall, and the next shape (its tuning included) then
        // runs up to 4x slow.
        gemm.prepare(&rt)?;
        conv.prepare(&rt)?;
        warm_up(&rt, &gemm, &conv)?;
    }
    if run_launch {
        bench_launch(&rt, &mut report)?;
    }
    let gemm_label = |&&(m, n, k): &&(u32, u32, u32)| format!("gemm M={m} N={n} K={k}");
    for &(m, n, k) in gemm_shapes(small)
        .iter()
        .filter(|s| run_gemm && chosen(&gemm_label(s)))
    {
        bench_gemm(&rt, &gemm, GemmShape { m, n, k }, &mut report)?;
    }
    for shape in conv_shapes(small)
        .into_iter()
        .filter(|s| run_conv && chosen(&conv_label(s)))
    {
        bench_conv(&rt, &conv, shape, &mut report, by_kernel)?;
    }

    for choice in rt.autotune_report().0 {
        println!("tuned {choice}");
    }
    if let Some(problem) = rt.autotune_report().1 {
        println!("autotuning: {problem}");
    }
    if let Some(dir) = out {
        write_report(&rt, &report, std::path::Path::new(dir))?;
    }
    Ok(())
}

/// Prints the adapter and how the figures are timed.
fn print_header(rt: &Runtime) {
    let timed_by = if rt.info().has_timestamps() {
        "GPU timestamps around one compute pass"
    } else {
        "wall clock"
    };
    println!("adapter: {}", rt.info());
    println!(
        "timed by {timed_by}; median of 3 submissions of {REPS} launches; autotuning {:?}",
        rt.autotune_mode()
    );
}

/// The GEMMs to run, as (M, N, K): square, the two rectangular shapes of a transformer's MLP,
/// then the skinny ones (a classifier over a long feature vector, a few rows over a wide
/// vocabulary, a small layer over a large batch, whose weight gradient sums over the batch).
fn gemm_shapes(small: bool) -> &'static [(u32, u32, u32)] {
    if small {
        &[(128, 128, 128), (100, 130, 70), (4, 4, 2048)]
    } else {
        &[
            (1024, 1024, 1024),
            (2048, 2048, 2048),
            (4096, 4096, 4096),
            (8192, 4096, 1024),
            (4096, 3072, 768),
            (256, 4, 16384),
            (35, 8457, 2048),
            (4096, 1024, 1024),
            (65536, 64, 64),
        ]
    }
}

/// The convolutions to run: ResNet's layers and other shapes worth timing.
fn conv_shapes(small: bool) -> Vec<Conv2dShape> {
    // Square images of `hw` pixels, square kernels of `k` taps.
    let conv2d = |n, ci, hw, co, k, stride, pad| {
        Conv2dShape::new(n, ci, [hw, hw], co, [k, k])
            .stride([stride, stride])
            .padding(Padding::uniform(pad))
    };
    let uneven = Padding {
        top: 1,
        bottom: 2,
        left: 1,
        right: 2,
    };
    if small {
        vec![
            conv2d(2, 8, 14, 8, 3, 1, 1),
            conv2d(2, 8, 14, 16, 3, 2, 1),
            conv2d(1, 5, 9, 7, 4, 1, 0).padding(uneven),
        ]
    } else {
        vec![
            // ResNet's 3x3 layers, a strided one, the stem, and two 1x1 ones.
            conv2d(32, 64, 56, 64, 3, 1, 1),
            conv2d(32, 128, 28, 128, 3, 1, 1),
            conv2d(32, 256, 14, 256, 3, 1, 1),
            conv2d(32, 512, 7, 512, 3, 1, 1),
            conv2d(32, 64, 56, 128, 3, 2, 1),
            conv2d(32, 3, 224, 64, 7, 2, 3),
            conv2d(32, 256, 56, 64, 1, 1, 0),
            conv2d(32, 1024, 14, 256, 1, 1, 0),
            // Other shapes: odd channel counts, 5x5, dilation, asymmetric padding, batch 1.
            conv2d(32, 67, 28, 131, 3, 1, 1),
            conv2d(32, 64, 28, 64, 5, 1, 2),
            conv2d(32, 128, 28, 128, 3, 1, 2).dilation([2, 2]),
            conv2d(32, 64, 28, 64, 4, 1, 0).padding(uneven),
            conv2d(1, 256, 14, 256, 3, 1, 1),
        ]
    }
}

/// Writes `report` as `tessera.csv` and `tessera.md` into `dir`, creating it.
fn write_report(rt: &Runtime, report: &Report, dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let adapter = rt.info().to_string();
    std::fs::write(dir.join("tessera.csv"), report.csv(&adapter))?;
    std::fs::write(dir.join("tessera.md"), report.markdown(&adapter))?;
    println!("wrote {}", dir.join("tessera.csv").display());
    Ok(())
}
