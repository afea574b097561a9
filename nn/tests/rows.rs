//! Softmax, RMSNorm and LayerNorm, forward and backward, against f64 CPU references.
//!
//! Shapes cover both widths (`cols` a multiple of 4, read as `Vec4<f32>`, and not), rows with
//! a tail (`cols` not a multiple of the workgroup), rows held in more than one element
//! per invocation (the larger segments), several rows, and one scalar, each over `f32` and
//! `f16` storage. Tolerance over `f32`: 1e-5 for softmax, 1e-4 for the norms (their `rstd`
//! scales a sum of `cols` squares); over `f16`, whose inputs the references take rounded as the
//! GPU reads them, 2e-3 (an output rounded to `f16` is off by up to 4.9e-4 of itself, and
//! softmax's backward reads the forward's rounded `y`); each relative to the larger magnitude
//! or absolute below 1 (`assert_close`).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, kernels_run, rng, runtime, values};
use tessera::{half::f16, wgpu, Error, GpuBuffer, Runtime};
use tessera_nn::{
    LayerNorm, LayerNormBackward, LayerNormForward, LayerNormLayer, LayerNormResidualBackward,
    LayerNormResidualForward, RmsNorm, RmsNormBackward, RmsNormForward, RmsNormLayer,
    RmsNormResidualBackward, RmsNormResidualForward, RowElement, RowsShape, Softmax,
    SoftmaxBackward, SoftmaxForward, SumGradient, MAX_COLS,
};

/// `(rows, cols)`: vectors in one element an invocation; scalars; one scalar; scalars in 3 of
/// the 8 elements an invocation holds, with a tail; vectors (275 a row) likewise; the largest
/// segment (16 elements an invocation), in scalars (1030, 5 of 16) and in vectors (1025); and
/// more rows than a column kernel's lanes, in both widths.
const SHAPES: [(u32, u32); 9] = [
    (3, 8),
    (4, 5),
    (1, 1),
    (3, 301),
    (2, 1100),
    (2, 1030),
    (1, 4100),
    (70, 36),
    (33, 7),
];

/// Rows longer than a workgroup holds, which the ops take a segment at a time: in vectors
/// (one more than the 4,096 of the largest segment, and several segments with a tail) and in
/// scalars.
const LONG_ROWS: [(u32, u32); 3] = [
    (2, MAX_COLS + 4),
    (1, 3 * MAX_COLS + 36),
    (3, MAX_COLS / 4 + 1),
];

const SOFTMAX_TOLERANCE: f32 = 1e-5;
const NORM_TOLERANCE: f32 = 1e-4;
const F16_TOLERANCE: f32 = 2e-3;

/// A storage type of the row ops, converted from and to the tests' `f32`s.
trait Storage: RowElement {
    fn of(v: f32) -> Self;
    fn value(self) -> f32;
}

impl Storage for f32 {
    fn of(v: f32) -> Self {
        v
    }
    fn value(self) -> f32 {
        self
    }
}

impl Storage for f16 {
    fn of(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn value(self) -> f32 {
        self.to_f32()
    }
}

fn upload<E: Storage>(rt: &Runtime, v: &[f32]) -> GpuBuffer<E> {
    let stored: Vec<E> = v.iter().map(|&v| E::of(v)).collect();
    rt.upload(&stored).unwrap()
}

fn read<E: Storage>(rt: &Runtime, buffer: &GpuBuffer<E>) -> Vec<f32> {
    buffer.read(rt).unwrap().into_iter().map(E::value).collect()
}

/// `v` as `E` stores it.
fn rounded<E: Storage>(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&v| E::of(v).value()).collect()
}

/// Whether `rt` runs `f16` kernels; if not, the `f16` op must refuse to be made.
fn runs_f16(rt: &Runtime) -> bool {
    let runs = rt.info().features.contains(wgpu::Features::SHADER_F16);
    if !runs {
        let refused = Softmax::<f16>::new(rt);
        assert!(
            matches!(refused, Err(Error::MissingFeature { .. })),
            "{refused:?}"
        );
    }
    runs
}

/// The inputs of one case: `x` spread and shifted off zero (so centering matters), `scale`
/// near 1, `bias` and `grad_y` in [-1, 1).
struct Inputs {
    x: Vec<f32>,
    scale: Vec<f32>,
    bias: Vec<f32>,
    grad_y: Vec<f32>,
}

fn inputs(shape: RowsShape, seed: u64) -> Inputs {
    let (n, cols) = ((shape.rows * shape.cols) as usize, shape.cols as usize);
    let mut rng = rng(seed);
    Inputs {
        x: values(&mut rng, n).iter().map(|v| 3.0 * v + 0.5).collect(),
        scale: values(&mut rng, cols)
            .iter()
            .map(|v| 1.0 + 0.5 * v)
            .collect(),
        bias: values(&mut rng, cols),
        grad_y: values(&mut rng, n),
    }
}

impl Inputs {
    /// The inputs as `E` stores them.
    fn stored<E: Storage>(&self) -> Inputs {
        Inputs {
            x: rounded::<E>(&self.x),
            scale: rounded::<E>(&self.scale),
            bias: rounded::<E>(&self.bias),
            grad_y: rounded::<E>(&self.grad_y),
        }
    }
}

fn wide(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&v| f64::from(v)).collect()
}

fn narrow(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&v| v as f32).collect()
}

fn mean(v: impl Iterator<Item = f64>, n: usize) -> f64 {
    v.sum::<f64>() / n as f64
}

/// `(y, grad_x)` of softmax along rows of `cols`.
fn softmax_reference(x: &[f32], grad_y: &[f32], cols: usize) -> (Vec<f32>, Vec<f32>) {
    let (mut y, mut grad_x) = (Vec::new(), Vec::new());
    for (row, g) in wide(x).chunks(cols).zip(wide(grad_y).chunks(cols)) {
        let top = row.iter().copied().fold(f64::MIN, f64::max);
        let sum: f64 = row.iter().map(|v| (v - top).exp()).sum();
        let probs: Vec<f64> = row.iter().map(|v| (v - top).exp() / sum).collect();
        let dot: f64 = probs.iter().zip(g).map(|(p, g)| p * g).sum();
        grad_x.extend(probs.iter().zip(g).map(|(p, g)| p * (g - dot)));
        y.extend(probs);
    }
    (narrow(&y), narrow(&grad_x))
}

/// A norm's outputs and gradients, by the CPU or the GPU.
struct NormReference {
    /// The sum a residual form wrote (empty for a norm alone).
    sum: Vec<f32>,
    y: Vec<f32>,
    mean: Vec<f32>,
    rstd: Vec<f32>,
    grad_x: Vec<f32>,
    grad_scale: Vec<f32>,
    grad_bias: Vec<f32>,
}

/// LayerNorm (`centered`) or RMSNorm (`bias` unused) of `inputs` along rows of `cols`.
fn norm_reference(inputs: &Inputs, cols: usize, eps: f64, centered: bool) -> NormReference {
    let (scale, bias) = (wide(&inputs.scale), wide(&inputs.bias));
    let (mut y, mut means, mut rstds, mut grad_x) = (vec![], vec![], vec![], vec![]);
    let (mut grad_scale, mut grad_bias) = (vec![0.0; cols], vec![0.0; cols]);
    for (row, gy) in wide(&inputs.x)
        .chunks(cols)
        .zip(wide(&inputs.grad_y).chunks(cols))
    {
        let mu = if centered {
            mean(row.iter().copied(), cols)
        } else {
            0.0
        };
        let var = mean(row.iter().map(|v| (v - mu) * (v - mu)), cols);
        let rstd = 1.0 / (var + eps).sqrt();
        let xhat: Vec<f64> = row.iter().map(|v| (v - mu) * rstd).collect();
        let g: Vec<f64> = gy.iter().zip(&scale).map(|(gy, s)| gy * s).collect();
        let shift = if centered {
            mean(g.iter().copied(), cols)
        } else {
            0.0
        };
        let slope = mean(g.iter().zip(&xhat).map(|(g, h)| g * h), cols);
        for c in 0..cols {
            y.push(xhat[c] * scale[c] + if centered { bias[c] } else { 0.0 });
            grad_x.push(rstd * (g[c] - shift - xhat[c] * slope));
            grad_scale[c] += gy[c] * xhat[c];
            grad_bias[c] += gy[c];
        }
        means.push(mu);
        rstds.push(rstd);
    }
    NormReference {
        sum: Vec::new(),
        y: narrow(&y),
        mean: narrow(&means),
        rstd: narrow(&rstds),
        grad_x: narrow(&grad_x),
        grad_scale: narrow(&grad_scale),
        grad_bias: narrow(&grad_bias),
    }
}

/// Asserts `got` is `want` to `tolerance`, saying which output of which shape differs.
fn check(what: &str, shape: RowsShape, got: &[f32], want: &[f32], tolerance: f32) {
    let worst = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0f32, f32::max);
    eprintln!("{what} {shape:?}: max abs error {worst:e}");
    assert_close(got, want, tolerance);
}

#[test]
fn softmax_matches_reference() {
    check_softmax::<f32>(&runtime(), SOFTMAX_TOLERANCE);
}

#[test]
fn softmax_over_f16_matches_reference() {
    let rt = runtime();
    if runs_f16(&rt) {
        check_softmax::<f16>(&rt, F16_TOLERANCE);
    }
}

/// Checks softmax over `E` storage against the reference on every shape of [`SHAPES`] and
/// [`LONG_ROWS`].
fn check_softmax<E: Storage>(rt: &Runtime, tolerance: f32) {
    let softmax = Softmax::<E>::new(rt).unwrap();
    for (seed, (rows, cols)) in SHAPES.into_iter().chain(LONG_ROWS).enumerate() {
        let shape = RowsShape { rows, cols };
        let inputs = inputs(shape, seed as u64).stored::<E>();
        let (want_y, want_grad_x) = softmax_reference(&inputs.x, &inputs.grad_y, cols as usize);
        let x = upload::<E>(rt, &inputs.x);
        let grad_y = upload::<E>(rt, &inputs.grad_y);
        let mut y = rt.zeros::<E>(inputs.x.len()).unwrap();
        let mut grad_x = rt.zeros::<E>(inputs.x.len()).unwrap();
        let mut batch = rt.batch();
        let forward = SoftmaxForward {
            shape,
            x: &x,
            y: &mut y,
        };
        softmax.forward(&mut batch, forward).unwrap();
        let (y, grad_y, grad_x) = (&y, &grad_y, &mut grad_x);
        let backward = SoftmaxBackward {
            shape,
            y,
            grad_y,
            grad_x,
        };
        softmax.backward(&mut batch, backward).unwrap();
        batch.submit().unwrap();
        check("softmax y", shape, &read(rt, y), &want_y, tolerance);
        check(
            "softmax grad_x",
            shape,
            &read(rt, grad_x),
            &want_grad_x,
            tolerance,
        );
    }
}

/// Runs RMSNorm forward and backward on `inputs` (after adding `addend`'s, given one),
/// returning what the GPU wrote.
fn rms_norm_on_gpu<E: Storage>(
    rt: &Runtime,
    norm: &RmsNorm<E>,
    shape: RowsShape,
    inputs: &Inputs,
    addend: Option<&Addend>,
) -> NormReference {
    let (n, rows, cols) = (inputs.x.len(), shape.rows as usize, shape.cols as usize);
    let (x, scale) = (&upload::<E>(rt, &inputs.x), &upload::<E>(rt, &inputs.scale));
    let grad_y = &upload::<E>(rt, &inputs.grad_y);
    let (mut y, mut rstd) = (rt.zeros::<E>(n).unwrap(), rt.zeros::<f32>(rows).unwrap());
    let mut grad_x = rt.zeros::<E>(n).unwrap();
    let mut grad_scale = rt.zeros::<E>(cols).unwrap();
    let mut batch = rt.batch();
    let (y_out, rstd_out) = (&mut y, &mut rstd);
    let mut sum = None;
    match addend {
        None => {
            let forward = RmsNormForward {
                shape,
                x,
                scale,
                y: y_out,
                rstd: rstd_out,
            };
            norm.forward(&mut batch, forward).unwrap();
            let backward = RmsNormBackward {
                shape,
                x,
                scale,
                rstd: &rstd,
                grad_y,
                grad_x: &mut grad_x,
                grad_scale: &mut grad_scale,
            };
            norm.backward(&mut batch, backward).unwrap();
        }
        Some(addend) => {
            let residual = &upload::<E>(rt, &addend.residual);
            let sum = sum.insert(rt.zeros::<E>(n).unwrap());
            let forward = RmsNormResidualForward {
                shape,
                x,
                residual,
                scale,
                sum: &mut *sum,
                y: y_out,
                rstd: rstd_out,
            };
            norm.forward_residual(&mut batch, forward).unwrap();
            grad_x = upload::<E>(rt, &addend.skip);
            let backward = RmsNormResidualBackward {
                shape,
                sum,
                scale,
                rstd: &rstd,
                grad_y,
                grad_sum: &mut grad_x,
                grad_scale: &mut grad_scale,
            };
            norm.backward_residual(&mut batch, backward).unwrap();
        }
    }
    batch.submit().unwrap();
    NormReference {
        sum: sum.map(|sum| read(rt, &sum)).unwrap_or_default(),
        y: read(rt, &y),
        mean: vec![0.0; rows], // RMSNorm subtracts no mean: the reference's are 0
        rstd: rstd.read(rt).unwrap(),
        grad_x: read(rt, &grad_x),
        grad_scale: read(rt, &grad_scale),
        grad_bias: Vec::new(), // RMSNorm has no bias
    }
}

#[test]
fn rms_norm_matches_reference() {
    let rt = runtime();
    let norm = RmsNorm::<f32>::new(&rt).unwrap();
    let gpu = |shape, inputs: &Inputs, addend: Option<&Addend>| {
        rms_norm_on_gpu(&rt, &norm, shape, inputs, addend)
    };
    check_norm::<f32>("RMSNorm", RmsNorm::DEFAULT_EPS, false, NORM_TOLERANCE, gpu);
}

#[test]
fn rms_norm_over_f16_matches_reference() {
    let rt = runtime();
    if !runs_f16(&rt) {
        return;
    }
    let norm = RmsNorm::<f16>::new(&rt).unwrap();
    let gpu = |shape, inputs: &Inputs, addend: Option<&Addend>| {
        rms_norm_on_gpu(&rt, &norm, shape, inputs, addend)
    };
    check_norm::<f16>(
        "f16 RMSNorm",
        RmsNorm::DEFAULT_EPS,
        false,
        F16_TOLERANCE,
        gpu,
    );
}

/// The other summand of a norm's residual form, and the gradient its sum receives from
/// elsewhere, which the backward adds to.
struct Addend {
    residual: Vec<f32>,
    skip: Vec<f32>,
}

/// Checks a norm over `E` storage run by `gpu` (LayerNorm when `centered`, else RMSNorm),
/// alone and after a residual add, against the reference on every shape of [`SHAPES`] and
/// [`LONG_ROWS`].
fn check_norm<E: Storage>(
    name: &str,
    eps: f32,
    centered: bool,
    tolerance: f32,
    gpu: impl Fn(RowsShape, &Inputs, Option<&Addend>) -> NormReference,
) {
    for (seed, (rows, cols)) in SHAPES.into_iter().chain(LONG_ROWS).enumerate() {
        let shape = RowsShape { rows, cols };
        let seed = 10 * (1 + u64::from(centered)) + seed as u64;
        let inputs = inputs(shape, seed).stored::<E>();
        let want = norm_reference(&inputs, cols as usize, f64::from(eps), centered);
        let got = gpu(shape, &inputs, None);
        compare_norm(name, shape, centered, tolerance, &got, &want);

        // After a residual add: the norm of `x + residual` as `E` stores it, its input's
        // gradient added to `skip`.
        let mut rng = rng(100 + seed);
        let n = inputs.x.len();
        let addend = Addend {
            residual: rounded::<E>(&values(&mut rng, n)),
            skip: rounded::<E>(&values(&mut rng, n)),
        };
        let sum: Vec<f32> = inputs
            .x
            .iter()
            .zip(&addend.residual)
            .map(|(x, r)| x + r)
            .collect();
        let of_sum = Inputs {
            x: rounded::<E>(&sum),
            ..inputs.stored::<E>()
        };
        let mut want = norm_reference(&of_sum, cols as usize, f64::from(eps), centered);
        want.sum = of_sum.x;
        for (grad, skip) in want.grad_x.iter_mut().zip(&addend.skip) {
            *grad += skip;
        }
        let got = gpu(shape, &inputs, Some(&addend));
        let name = format!("{name} after a residual add");
        compare_norm(&name, shape, centered, tolerance, &got, &want);
    }
}

/// Asserts each output of `got` is `want`'s.
fn compare_norm(
    name: &str,
    shape: RowsShape,
    centered: bool,
    tolerance: f32,
    got: &NormReference,
    want: &NormReference,
) {
    let mut outputs = vec![
        ("sum", &got.sum, &want.sum),
        ("y", &got.y, &want.y),
        ("mean", &got.mean, &want.mean),
        ("rstd", &got.rstd, &want.rstd),
        ("grad_x", &got.grad_x, &want.grad_x),
        ("grad_scale", &got.grad_scale, &want.grad_scale),
    ];
    if centered {
        outputs.push(("grad_bias", &got.grad_bias, &want.grad_bias));
    }
    for (output, got, want) in outputs {
        assert_eq!(got.len(), want.len(), "{name} {output} {shape:?}");
        check(&format!("{name} {output}"), shape, got, want, tolerance);
    }
}

/// Runs LayerNorm forward and backward on `inputs` (after adding `addend`'s, given one),
/// returning what the GPU wrote.
fn layer_norm_on_gpu<E: Storage>(
    rt: &Runtime,
    norm: &LayerNorm<E>,
    shape: RowsShape,
    inputs: &Inputs,
    addend: Option<&Addend>,
) -> NormReference {
    let (n, rows, cols) = (inputs.x.len(), shape.rows as usize, shape.cols as usize);
    let (x, scale) = (&upload::<E>(rt, &inputs.x), &upload::<E>(rt, &inputs.scale));
    let (bias, grad_y) = (
        &upload::<E>(rt, &inputs.bias),
        &upload::<E>(rt, &inputs.grad_y),
    );
    let mut y = rt.zeros::<E>(n).unwrap();
    let (mut mean, mut rstd) = (
        rt.zeros::<f32>(rows).unwrap(),
        rt.zeros::<f32>(rows).unwrap(),
    );
    let mut grad_x = rt.zeros::<E>(n).unwrap();
    let (mut grad_scale, mut grad_bias) =
        (rt.zeros::<E>(cols).unwrap(), rt.zeros::<E>(cols).unwrap());
    let mut batch = rt.batch();
    let (y_out, mean_out, rstd_out) = (&mut y, &mut mean, &mut rstd);
    let mut sum = None;
    match addend {
        None => {
            let forward = LayerNormForward {
                shape,
                x,
                scale,
                bias,
                y: y_out,
                mean: mean_out,
                rstd: rstd_out,
            };
            norm.forward(&mut batch, forward).unwrap();
            let backward = LayerNormBackward {
                shape,
                x,
                scale,
                mean: &mean,
                rstd: &rstd,
                grad_y,
                grad_x: &mut grad_x,
                grad_scale: &mut grad_scale,
                grad_bias: &mut grad_bias,
            };
            norm.backward(&mut batch, backward).unwrap();
        }
        Some(addend) => {
            let residual = &upload::<E>(rt, &addend.residual);
            let sum = sum.insert(rt.zeros::<E>(n).unwrap());
            let forward = LayerNormResidualForward {
                shape,
                x,
                residual,
                scale,
                bias,
                sum: &mut *sum,
                y: y_out,
                mean: mean_out,
                rstd: rstd_out,
            };
            norm.forward_residual(&mut batch, forward).unwrap();
            grad_x = upload::<E>(rt, &addend.skip);
            let backward = LayerNormResidualBackward {
                shape,
                sum,
                scale,
                mean: &mean,
                rstd: &rstd,
                grad_y,
                grad_sum: &mut grad_x,
                grad_scale: &mut grad_scale,
                grad_bias: &mut grad_bias,
            };
            norm.backward_residual(&mut batch, backward).unwrap();
        }
    }
    batch.submit().unwrap();
    NormReference {
        sum: sum.map(|sum| read(rt, &sum)).unwrap_or_default(),
        y: read(rt, &y),
        mean: mean.read(rt).unwrap(),
        rstd: rstd.read(rt).unwrap(),
        grad_x: read(rt, &grad_x),
        grad_scale: read(rt, &grad_scale),
        grad_bias: read(rt, &grad_bias),
    }
}

#[test]
fn layer_norm_matches_reference() {
    let rt = runtime();
    let norm = LayerNorm::<f32>::new(&rt).unwrap();
    let gpu = |shape, inputs: &Inputs, addend: Option<&Addend>| {
        layer_norm_on_gpu(&rt, &norm, shape, inputs, addend)
    };
    check_norm::<f32>(
        "LayerNorm",
        LayerNorm::DEFAULT_EPS,
        true,
        NORM_TOLERANCE,
        gpu,
    );
}

#[test]
fn layer_norm_over_f16_matches_reference() {
    let rt = runtime();
    if !runs_f16(&rt) {
        return;
    }
    let norm = LayerNorm::<f16>::new(&rt).unwrap();
    let gpu = |shape, inputs: &Inputs, addend: Option<&Addend>| {
        layer_norm_on_gpu(&rt, &norm, shape, inputs, addend)
    };
    let eps = LayerNorm::DEFAULT_EPS;
    check_norm::<f16>("f16 LayerNorm", eps, true, F16_TOLERANCE, gpu);
}

/// The `problem` of an `InvalidArgument`, or a panic naming what came instead.
fn problem(result: tessera::Result<()>) -> String {
    match result {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("expected an invalid argument, got {other:?}"),
    }
}

#[test]
fn bad_shapes_and_buffers_are_refused() {
    let rt = runtime();
    let softmax = Softmax::new(&rt).unwrap();
    let x = rt.zeros::<f32>(MAX_COLS as usize + 4).unwrap();
    let mut y = rt.zeros::<f32>(MAX_COLS as usize + 4).unwrap();
    let mut run = |rows, cols, y_len: Option<usize>| {
        let mut batch = rt.batch();
        let mut short = rt.zeros::<f32>(y_len.unwrap_or(1)).unwrap();
        let y = if y_len.is_some() { &mut short } else { &mut y };
        problem(softmax.forward(
            &mut batch,
            SoftmaxForward {
                shape: RowsShape { rows, cols },
                x: &x,
                y,
            },
        ))
    };
    assert!(run(0, 4, None).contains("at least 1"));
    let message = run(2, 3, Some(5));
    assert!(
        message.contains("`y` holds 5 elements") && message.contains("at least 6"),
        "{message}"
    );
    let bad_eps = RmsNorm::<f32>::new(&rt).unwrap().with_eps(f32::NAN);
    assert!(matches!(bad_eps, Err(Error::InvalidArgument { .. })));
}

#[test]
fn the_width_and_segment_follow_cols() {
    let rt = runtime();
    let softmax = Softmax::new(&rt).unwrap();
    let x = rt.zeros::<f32>(4100).unwrap();
    let mut y = rt.zeros::<f32>(4100).unwrap();
    for (cols, entry) in [
        (8, "softmax_forward_vec4_f32_group64_per4"),
        (301, "softmax_forward_f32_group128_per8"),
        (4100, "softmax_forward_vec4_f32_group256_per16"),
    ] {
        let mut batch = rt.batch();
        let shape = RowsShape { rows: 1, cols };
        let forward = SoftmaxForward {
            shape,
            x: &x,
            y: &mut y,
        };
        softmax.forward(&mut batch, forward).unwrap();
        assert_eq!(kernels_run(batch), [entry], "for rows of {cols}");
    }
}

#[test]
fn prepare_builds_every_instance() {
    let rt = runtime();
    Softmax::<f32>::new(&rt).unwrap().prepare(&rt).unwrap();
    RmsNorm::<f32>::new(&rt).unwrap().prepare(&rt).unwrap();
    LayerNorm::<f32>::new(&rt).unwrap().prepare(&rt).unwrap();
    if runs_f16(&rt) {
        Softmax::<f16>::new(&rt).unwrap().prepare(&rt).unwrap();
        RmsNorm::<f16>::new(&rt).unwrap().prepare(&rt).unwrap();
        LayerNorm::<f16>::new(&rt).unwrap().prepare(&rt).unwrap();
    }
}

/// What a norm layer wrote for `inputs`, its parameters set to theirs (`scale`, then
/// `bias` where the layer has one): the output, the input's gradient and each parameter's
/// gradient, in the layer's order. A macro, as the layers share no trait callers can name.
macro_rules! layer_on_gpu {
    ($rt:expr, $layer:expr, $inputs:expr) => {{
        let (rt, layer, inputs): (&Runtime, _, &Inputs) = ($rt, $layer, $inputs);
        for parameter in layer.parameters() {
            let start = match parameter.name {
                "scale" => &inputs.scale,
                "bias" => &inputs.bias,
                other => panic!("a norm layer's parameter named {other}"),
            };
            parameter.value.write(rt, start).unwrap();
        }
        let (x, grad_y) = (
            rt.upload(&inputs.x).unwrap(),
            rt.upload(&inputs.grad_y).unwrap(),
        );
        let mut batch = rt.batch();
        layer.forward(&mut batch, &x).unwrap();
        let grad_x = layer
            .backward(&mut batch, &x, &grad_y)
            .unwrap()
            .read(rt)
            .unwrap();
        batch.submit().unwrap();
        let y = layer.output().unwrap().read(rt).unwrap();
        let grads: Vec<Vec<f32>> = layer
            .parameters()
            .iter()
            .map(|p| p.grad.read(rt).unwrap())
            .collect();
        (y, grad_x, grads)
    }};
}

#[test]
fn norm_layers_match_the_reference_with_their_parameters() {
    let rt = runtime();
    for (seed, (rows, cols)) in [(3, 8), (4, 5), (2, 1030)].into_iter().enumerate() {
        let shape = RowsShape { rows, cols };
        let inputs = inputs(shape, 40 + seed as u64);
        let cases = [
            (RmsNorm::DEFAULT_EPS, false),
            (LayerNorm::DEFAULT_EPS, true),
        ];
        for (eps, centered) in cases {
            let want = norm_reference(&inputs, cols as usize, f64::from(eps), centered);
            let (name, (y, grad_x, grads)) = if centered {
                let mut layer = LayerNormLayer::new(&rt, cols).unwrap();
                ("LayerNorm layer", layer_on_gpu!(&rt, &mut layer, &inputs))
            } else {
                let mut layer = RmsNormLayer::new(&rt, cols).unwrap();
                ("RMSNorm layer", layer_on_gpu!(&rt, &mut layer, &inputs))
            };
            let mut want_grads = vec![&want.grad_scale];
            if centered {
                want_grads.push(&want.grad_bias);
            }
            assert_eq!(grads.len(), want_grads.len(), "{name}'s parameters");
            check(&format!("{name} y"), shape, &y, &want.y, NORM_TOLERANCE);
            check(
                &format!("{name} grad_x"),
                shape,
                &grad_x,
                &want.grad_x,
                NORM_TOLERANCE,
            );
            for (got, want) in grads.iter().zip(want_grads) {
                check(
                    &format!("{name} gradient"),
                    shape,
                    got,
                    want,
                    NORM_TOLERANCE,
                );
            }
        }
    }
}

/// What a norm layer wrote running after a residual add (`forward_residual` of `inputs.x`
/// and `addend.residual`, `backward_residual` added to `addend.skip`, then written over a
/// buffer of its own), its parameters set to `inputs`': the sum, the output, the sum's
/// gradient added and written, and each parameter's gradient.
macro_rules! residual_layer_on_gpu {
    ($rt:expr, $layer:expr, $inputs:expr, $addend:expr) => {{
        let (rt, layer, inputs, addend): (&Runtime, _, &Inputs, &Addend) =
            ($rt, $layer, $inputs, $addend);
        for parameter in layer.parameters() {
            let start = if parameter.name == "scale" {
                &inputs.scale
            } else {
                &inputs.bias
            };
            parameter.value.write(rt, start).unwrap();
        }
        let upload = |v: &[f32]| rt.upload(v).unwrap();
        let (x, residual, grad_y) = (
            upload(&inputs.x),
            upload(&addend.residual),
            upload(&inputs.grad_y),
        );
        let (mut sum, mut grad_sum) = (rt.zeros::<f32>(x.len()).unwrap(), upload(&addend.skip));
        let mut batch = rt.batch();
        layer
            .forward_residual(&mut batch, &x, &residual, &mut sum)
            .unwrap();
        let mut written = rt.zeros::<f32>(x.len()).unwrap();
        for into in [
            SumGradient::Add(&mut grad_sum),
            SumGradient::Write(&mut written),
        ] {
            layer
                .backward_residual(&mut batch, &sum, &grad_y, into)
                .unwrap();
        }
        batch.submit().unwrap();
        let y = layer.output().unwrap().read(rt).unwrap();
        let grads: Vec<Vec<f32>> = layer
            .parameters()
            .iter()
            .map(|p| p.grad.read(rt).unwrap())
            .collect();
        let read = |buffer: &GpuBuffer<f32>| buffer.read(rt).unwrap();
        (read(&sum), y, [read(&grad_sum), read(&written)], grads)
    }};
}

#[test]
fn norm_layers_add_the_residual_stream() {
    let rt = runtime();
    for (seed, (rows, cols)) in [(3, 8), (4, 5)].into_iter().enumerate() {
        let shape = RowsShape { rows, cols };
        let inputs = inputs(shape, 50 + seed as u64);
        let n = inputs.x.len();
        let mut rng = rng(150 + seed as u64);
        let addend = Addend {
            residual: values(&mut rng, n),
            skip: values(&mut rng, n),
        };
        let sum: Vec<f32> = inputs
            .x
            .iter()
            .zip(&addend.residual)
            .map(|(x, r)| x + r)
            .collect();
        let of_sum = Inputs {
            x: sum.clone(),
            ..inputs.stored::<f32>()
        };
        for (eps, centered) in [
            (RmsNorm::DEFAULT_EPS, false),
            (LayerNorm::DEFAULT_EPS, true),
        ] {
            let want = norm_reference(&of_sum, cols as usize, f64::from(eps), centered);
            let want_grad: Vec<f32> = want
                .grad_x
                .iter()
                .zip(&addend.skip)
                .map(|(g, s)| g + s)
                .collect();
            let (name, (got_sum, y, [added, written], grads)) = if centered {
                let mut layer = LayerNormLayer::new(&rt, cols).unwrap();
                (
                    "LayerNorm layer",
                    residual_layer_on_gpu!(&rt, &mut layer, &inputs, &addend),
                )
            } else {
                let mut layer = RmsNormLayer::new(&rt, cols).unwrap();
                (
                    "RMSNorm layer",
                    residual_layer_on_gpu!(&rt, &mut layer, &inputs, &addend),
                )
            };
            let mut want_grads = vec![&want.grad_scale];
            if centered {
                want_grads.push(&want.grad_bias);
            }
            assert_eq!(grads.len(), want_grads.len(), "{name}'s parameters");
            check(
                &format!("{name} sum"),
                shape,
                &got_sum,
                &sum,
                NORM_TOLERANCE,
            );
            check(&format!("{name} y"), shape, &y, &want.y, NORM_TOLERANCE);
            let added_name = format!("{name} grad_sum added");
            check(&added_name, shape, &added, &want_grad, NORM_TOLERANCE);
            let written_name = format!("{name} grad_sum written");
            check(&written_name, shape, &written, &want.grad_x, NORM_TOLERANCE);
            for (got, want) in grads.iter().zip(want_grads) {
                check(
                    &format!("{name} gradient"),
                    shape,
                    got,
                    want,
                    NORM_TOLERANCE,
                );
            }
        }
    }
}

#[test]
fn norm_layers_start_at_identity_and_refuse_bad_inputs() {
    let rt = runtime();
    let mut layer = LayerNormLayer::new(&rt, 4).unwrap();
    let starts: Vec<_> = layer
        .parameters()
        .iter()
        .map(|p| (p.name, p.shape.clone(), p.value.read(&rt).unwrap()))
        .collect();
    let want = [
        ("scale", vec![4], vec![1.0; 4]),
        ("bias", vec![4], vec![0.0; 4]),
    ];
    assert_eq!(starts, want);
    let names: Vec<_> = RmsNormLayer::new(&rt, 4)
        .unwrap()
        .parameters()
        .iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["scale"]);

    let x = rt.upload(&[1.0f32; 8]).unwrap();
    let mut batch = rt.batch();
    let message = match layer.backward(&mut batch, &x, &x) {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("backward before forward gave {other:?}"),
    };
    assert!(message.contains("needs a forward pass"), "{message}");
    assert!(layer.output().is_err());
    let odd = rt.upload(&[1.0f32; 6]).unwrap();
    let message = match layer.forward(&mut batch, &odd) {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("6 values in rows of 4 gave {other:?}"),
    };
    assert!(
        message.contains("not a whole number of features"),
        "{message}"
    );
    assert!(matches!(
        RmsNormLayer::new(&rt, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        RmsNormLayer::new(&rt, 4).unwrap().with_eps(-1.0),
        Err(Error::InvalidArgument { .. })
    ));
    // A residual add of buffers of other lengths: refused, naming the buffer.
    let (mut sum, twelve) = (
        rt.zeros::<f32>(8).unwrap(),
        rt.upload(&[1.0f32; 12]).unwrap(),
    );
    let message = match layer.forward_residual(&mut batch, &x, &twelve, &mut sum) {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("a residual of 12 values to 8 gave {other:?}"),
    };
    assert!(message.contains("`residual` holds 12 values"), "{message}");
    let mut short = rt.zeros::<f32>(4).unwrap();
    let message = match layer.forward_residual(&mut batch, &x, &x, &mut short) {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("a sum of 4 values for 8 gave {other:?}"),
    };
    assert!(message.contains("`sum` holds 4 values"), "{message}");
    layer
        .forward_residual(&mut batch, &x, &x, &mut sum)
        .unwrap();
    let into = SumGradient::Add(&mut short);
    let message = match layer.backward_residual(&mut batch, &sum, &x, into) {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("a gradient of 4 values for 8 gave {other:?}"),
    };
    assert!(message.contains("`grad_sum` holds 4 values"), "{message}");
    // A forward of two rows, then a backward of three: refused, not read out of bounds.
    layer.forward(&mut batch, &x).unwrap();
    let longer = rt.upload(&[1.0f32; 12]).unwrap();
    assert!(layer.backward(&mut batch, &longer, &longer).is_err());
    batch.submit().unwrap();
}

#[test]
fn layer_norm_keeps_a_large_mean_apart_from_a_small_variance() {
    // Rows near 1000 spread by about 1: a variance taken as mean(x^2) - mean^2 in f32 would
    // lose it (1e6 against 0.3); the per-invocation moments merged pairwise keep it.
    let rt = runtime();
    let norm = LayerNorm::<f32>::new(&rt).unwrap();
    for (seed, (rows, cols)) in [(4u32, 1000u32), (3, 301), (2, 4100)]
        .into_iter()
        .enumerate()
    {
        let shape = RowsShape { rows, cols };
        let mut inputs = inputs(shape, 60 + seed as u64);
        for v in &mut inputs.x {
            *v += 1000.0;
        }
        let want = norm_reference(
            &inputs,
            cols as usize,
            f64::from(LayerNorm::DEFAULT_EPS),
            true,
        );
        let got = layer_norm_on_gpu(&rt, &norm, shape, &inputs, None);
        check("LayerNorm y near 1000", shape, &got.y, &want.y, 1e-3);
        check(
            "LayerNorm rstd near 1000",
            shape,
            &got.rstd,
            &want.rstd,
            1e-3,
        );
    }
}
