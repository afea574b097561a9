//! `Precision::TensorCoreF16` against references: the GEMM forward and both operand gradients
//! on the tensor cores against f64, the convolution's three passes against the strict f32
//! op, in both blockings, with ragged edges; layers of both kinds. Where the device has no
//! tensor cores (lavapipe, in CI) the ops and layers must refuse to be built instead.
//!
//! Tolerance: the rounding of both operands to f16 bounds each product's error by `2u + u²`
//! of its magnitude (`u = 2^-11`, f16's unit roundoff), so each result is checked against
//! `1.1e-3` times the sum of its products' magnitudes, plus f32's own rounding. The measured
//! error is printed (relative to the output's largest magnitude).

#[path = "../../tests/common/mod.rs"]
mod common;
mod gemm_case;

use common::{kernels_run, limited_runtime, rng, runtime, values};
use gemm_case::{GemmCase, Operands};
use tessera::wgpu::CooperativeScalarType::{F16, F32};
use tessera::{Error, Runtime};
use tessera_nn::{
    Activation, Conv2d, Conv2dConfig, Conv2dForward, Conv2dGradInput, Conv2dGradWeight,
    Conv2dShape, Convolution, Gemm, GemmShape, Init, Linear, LinearConfig, Padding, Precision,
};

fn tensor_cores(rt: &Runtime) -> bool {
    rt.info().has_cooperative_matrix(16, F16, F32)
}

/// `got` within f16 operand rounding of `want`: `bound[i]` is the sum of the magnitudes of
/// the products behind element `i`. Returns the largest error relative to the output's
/// largest magnitude.
fn assert_within_f16_rounding(name: &str, got: &[f32], want: &[f64], bound: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "{name}: lengths differ");
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
    let mut worst = 0.0f64;
    for (i, ((&g, &w), &b)) in got.iter().zip(want).zip(bound).enumerate() {
        let error = (f64::from(g) - w).abs();
        let allowed = 1.1e-3 * b + 1e-5 * (1.0 + w.abs());
        assert!(
            error <= allowed,
            "{name}, element {i}: got {g}, want {w} (error {error:e} > {allowed:e})"
        );
        worst = worst.max(error / scale);
    }
    worst
}

/// Forward and backward of `shape` on random data against f64, keeping `pre` for odd seeds
/// (it must then equal `y`, bit for bit: no activation); returns the largest relative errors
/// of `y`, `grad_a` and `grad_b`, and the entry points that ran.
fn check(rt: &Runtime, gemm: &Gemm, shape: GemmShape, seed: u64) -> ([f64; 3], Vec<String>) {
    let mut case = GemmCase::new(rt, shape, &mut rng(seed));
    let keep_pre = seed % 2 == 1;
    let mut batch = rt.batch();
    let args = case.forward(Activation::None, keep_pre);
    gemm.forward(&mut batch, args).unwrap();
    let args = case.backward(Activation::None, false);
    gemm.backward(&mut batch, args).unwrap();
    let ran = kernels_run(batch);

    let want = Reference::of(shape, &case.host);
    let label = format!("{}x{}x{}", shape.m, shape.n, shape.k);
    if keep_pre {
        let bits = |b: &tessera::GpuBuffer<f32>| -> Vec<u32> {
            b.read(rt).unwrap().into_iter().map(f32::to_bits).collect()
        };
        assert_eq!(
            bits(&case.pre),
            bits(&case.y),
            "pre of {label} differs from y"
        );
    }
    let outputs = [
        ("y", &case.y, want.y),
        ("grad_a", &case.grad_a, want.grad_a),
        ("grad_b", &case.grad_b, want.grad_b),
    ];
    let errors = outputs.map(|(name, got, (want, bound))| {
        let got = got.read(rt).unwrap();
        assert_within_f16_rounding(&format!("{name} {label}"), &got, &want, &bound)
    });
    // The bias gradient stays in f32.
    let got_gbias = case.grad_bias.read(rt).unwrap();
    for (j, (&got, &want)) in got_gbias.iter().zip(&want.grad_bias).enumerate() {
        assert!(
            (f64::from(got) - want).abs() <= 1e-4 * (1.0 + want.abs()),
            "grad_bias {label}, element {j}: got {got}, want {want}"
        );
    }
    (errors, ran)
}

/// The f64 reference of a GEMM without activation: each output of the tensor cores with the
/// sum of the magnitudes of its products, and the bias gradient.
struct Reference {
    y: (Vec<f64>, Vec<f64>),
    grad_a: (Vec<f64>, Vec<f64>),
    grad_b: (Vec<f64>, Vec<f64>),
    grad_bias: Vec<f64>,
}

impl Reference {
    /// The reference of `shape` on `operands`.
    fn of(shape: GemmShape, operands: &Operands) -> Self {
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let f64s = |v: &[f32]| -> Vec<f64> { v.iter().map(|&x| f64::from(x)).collect() };
        let (a64, b64, g64) = (f64s(&operands.a), f64s(&operands.b), f64s(&operands.grad_y));
        let (mut want_y, mut bound_y) = (vec![0.0; m * n], vec![0.0; m * n]);
        let (mut want_ga, mut bound_ga) = (vec![0.0; m * k], vec![0.0; m * k]);
        let (mut want_gb, mut bound_gb) = (vec![0.0; k * n], vec![0.0; k * n]);
        let mut want_gbias = vec![0.0; n];
        for i in 0..m {
            for j in 0..n {
                let g = g64[i * n + j];
                want_y[i * n + j] = f64::from(operands.bias[j]);
                want_gbias[j] += g;
                for l in 0..k {
                    let (x, w) = (a64[i * k + l], b64[l * n + j]);
                    want_y[i * n + j] += x * w;
                    bound_y[i * n + j] += (x * w).abs();
                    want_ga[i * k + l] += g * w;
                    bound_ga[i * k + l] += (g * w).abs();
                    want_gb[l * n + j] += x * g;
                    bound_gb[l * n + j] += (x * g).abs();
                }
            }
        }
        Reference {
            y: (want_y, bound_y),
            grad_a: (want_ga, bound_ga),
            grad_b: (want_gb, bound_gb),
            grad_bias: want_gbias,
        }
    }
}

#[test]
fn gemm_on_tensor_cores_is_within_f16_rounding_or_refused_without_them() {
    let rt = runtime();
    if !tensor_cores(&rt) {
        match Gemm::with_precision(&rt, Precision::TensorCoreF16) {
            Err(Error::MissingFeature { .. }) => {}
            Err(other) => panic!("expected MissingFeature, got {other}"),
            Ok(_) => panic!("built tensor-core kernels on a device without tensor cores"),
        }
        assert_eq!(Gemm::new(&rt).unwrap().precision(), Precision::F32);
        return;
    }
    let gemm = Gemm::with_precision(&rt, Precision::TensorCoreF16).unwrap();
    assert_eq!(gemm.precision(), Precision::TensorCoreF16);
    // With autotuning off, outputs with at most 64 rows or columns take the 64 x 64 blocks,
    // the others 128 x 128; every dimension ragged somewhere, and one longer sum. Where `k`
    // and `n` are multiples of 4 (48 x 100 x 60 in small blocks, 200 x 72 x 1000 in large
    // ones) the forward binds its operands as vectors. The first and last forwards are
    // narrower than a fragment: they run in f32, the last split (their backwards on the
    // tensor cores). The last three backwards sum in slices on the tensor cores (two each,
    // the last one ragged): `grad_a`'s over `n` in small blocks, `grad_b`'s over `m` in large
    // ones, then both. The three forwards before them sum in slices on the tensor cores (four
    // in small blocks over scalars, two in small blocks over vectors, two in large blocks
    // over scalars; the last slice ragged).
    let shapes = [
        (1, 1, 1),
        (37, 50, 70),
        (64, 200, 33),
        (48, 100, 60),
        (130, 129, 131),
        (200, 72, 1000),
        (37, 50, 2100),
        (48, 100, 1500),
        (130, 129, 1100),
        (5, 3, 1500),
        (40, 1500, 48),
        (1300, 20, 150),
        (1100, 1100, 40),
    ];
    for (seed, (m, n, k)) in shapes.into_iter().enumerate() {
        let (errors, ran) = check(&rt, &gemm, GemmShape { m, n, k }, seed as u64);
        let split_forward = ran.iter().any(|e| e == "gemm_forward_fragments_reduce");
        let sliced = [(37, 50, 2100), (48, 100, 1500), (130, 129, 1100)];
        assert_eq!(
            split_forward,
            sliced.contains(&(m, n, k)),
            "{m}x{n}x{k} ran {ran:?}"
        );
        eprintln!(
            "{m}x{n}x{k}: largest error relative to the largest output: y {:.1e}, grad_a {:.1e}, \
             grad_b {:.1e}",
            errors[0], errors[1], errors[2]
        );
    }
}

#[test]
fn a_linear_layer_on_tensor_cores_matches_its_f32_twin_or_is_refused() {
    let rt = runtime();
    let config = LinearConfig::new(300, 70).init(Init::Uniform { seed: 3 });
    let tensor = Linear::new(&rt, config.precision(Precision::TensorCoreF16));
    if !tensor_cores(&rt) {
        assert!(
            matches!(tensor, Err(Error::MissingFeature { .. })),
            "expected MissingFeature, got {tensor:?}"
        );
        return;
    }
    let (mut tensor, mut strict) = (tensor.unwrap(), Linear::new(&rt, config).unwrap());
    let x = rt.upload(&values(&mut rng(9), 40 * 300)).unwrap();
    let mut batch = rt.batch();
    tensor.forward(&mut batch, &x).unwrap();
    strict.forward(&mut batch, &x).unwrap();
    batch.submit().unwrap();
    let (got, want) = (
        tensor.output().unwrap().read(&rt).unwrap(),
        strict.output().unwrap().read(&rt).unwrap(),
    );
    let scale = want.iter().fold(0.0f32, |m, w| m.max(w.abs()));
    let worst = got
        .iter()
        .zip(&want)
        .fold(0.0f32, |m, (g, w)| m.max((g - w).abs()))
        / scale;
    eprintln!("linear 40 x 300 -> 70: largest difference from strict f32, relative: {worst:.1e}");
    assert!(worst < 2e-3, "{worst}");
}

/// The forward (through `activation`, zero bias), input gradient and filter gradient of `conv`
/// for `shape`, from `x`, `w` and the gradient before the activation `g`, then the forward's
/// `pre` (kept with an activation, else empty), and the entry points that ran.
fn conv_passes(
    rt: &Runtime,
    conv: &Convolution,
    shape: Conv2dShape,
    activation: Activation,
    [x, w, g]: [&[f32]; 3],
) -> ([Vec<f32>; 4], Vec<String>) {
    let up = |v: &[f32]| rt.upload(v).unwrap();
    let (x, w, g) = (up(x), up(w), up(g));
    let bias = rt.zeros::<f32>(shape.out_channels as usize).unwrap();
    let keep_pre = activation != Activation::None;
    let mut pre = rt.zeros::<f32>(g.len()).unwrap();
    let mut y = rt.zeros::<f32>(g.len()).unwrap();
    let mut grad_x = rt.zeros::<f32>(x.len()).unwrap();
    let mut grad_w = rt.zeros::<f32>(w.len()).unwrap();
    let mut batch = rt.batch();
    let forward = Conv2dForward {
        shape,
        activation,
        x: &x,
        w: &w,
        bias: &bias,
        pre: keep_pre.then_some(&mut pre),
        y: &mut y,
    };
    conv.forward(&mut batch, forward).unwrap();
    let input = Conv2dGradInput {
        shape,
        w: &w,
        grad_pre: &g,
        grad_x: &mut grad_x,
    };
    conv.grad_input(&mut batch, input).unwrap();
    let weight = Conv2dGradWeight {
        shape,
        x: &x,
        grad_pre: &g,
        grad_w: &mut grad_w,
    };
    conv.grad_weight(&mut batch, weight).unwrap();
    let ran = kernels_run(batch);
    let pre = if keep_pre {
        pre.read(rt).unwrap()
    } else {
        Vec::new()
    };
    let [y, grad_x, grad_w] = [y, grad_x, grad_w].map(|b| b.read(rt).unwrap());
    ([y, grad_x, grad_w, pre], ran)
}

/// Runs the three passes of `shape` on `tensor` and checks each against `strict` within f16
/// rounding (data from `seed`); returns the entry points the tensor-core passes ran.
fn check_conv(
    rt: &Runtime,
    tensor: &Convolution,
    strict: &Convolution,
    shape: Conv2dShape,
    seed: u64,
) -> Vec<String> {
    let mut rng = rng(seed);
    let x = values(&mut rng, shape.input_len());
    let w = values(&mut rng, shape.weight_len());
    let g = values(&mut rng, shape.output_len().unwrap());
    let (got, ran) = conv_passes(rt, tensor, shape, Activation::None, [&x, &w, &g]);
    let (want, _) = conv_passes(rt, strict, shape, Activation::None, [&x, &w, &g]);
    // The sums of the products' magnitudes, by the same passes on magnitudes.
    let abs = |v: &[f32]| v.iter().map(|a| a.abs()).collect::<Vec<f32>>();
    let (bound, _) = conv_passes(
        rt,
        strict,
        shape,
        Activation::None,
        [&abs(&x), &abs(&w), &abs(&g)],
    );
    for (pass, ((got, want), bound)) in ["y", "grad_x", "grad_w"]
        .into_iter()
        .zip(got.iter().zip(&want).zip(&bound))
    {
        let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
        let bound: Vec<f64> = bound.iter().map(|&v| f64::from(v)).collect();
        let error = assert_within_f16_rounding(&format!("{pass} of {shape:?}"), got, &want, &bound);
        eprintln!("{pass} of {shape:?}: largest error relative to the largest output {error:.1e}");
    }
    ran
}

/// Whether the forward and the input gradient of `shape` may run over a staged window with
/// autotuning off: stride 1, summed channels a multiple of `step`, and a filter that reaches
/// at most 128 positions past one of the result's grid padded by its reach.
fn over_window(shape: &Conv2dShape, step: u32) -> [bool; 2] {
    let [kh, kw] = shape.kernel;
    let [dh, dw] = shape.dilation;
    let [_, out_w] = shape.output().unwrap();
    let reach = |width: u32| (kh - 1) * dh * (width + (kw - 1) * dw) + (kw - 1) * dw;
    let stride_1 = shape.stride == [1, 1];
    [
        stride_1 && shape.in_channels.is_multiple_of(step) && reach(out_w) <= 128,
        stride_1 && shape.out_channels.is_multiple_of(step) && reach(shape.input[1]) <= 128,
    ]
}

/// Whether the forward and the input gradient of `shape` run over a staged window with
/// every tap's filter slice staged at once, with autotuning off: for at most 64 rows (output
/// channels, input channels), a filter of at most 9 taps and summed channels a multiple of 16.
fn all_taps(shape: &Conv2dShape) -> [bool; 2] {
    let [forward, input] = over_window(shape, 16);
    let taps = shape.kernel[0] * shape.kernel[1] <= 9;
    [
        forward && taps && shape.out_channels <= 64,
        input && taps && shape.in_channels <= 64,
    ]
}

/// Whether the forward and the input gradient of `shape` run over a staged window a tap at a
/// time, with autotuning off: where they may (a step of 32 channels) and do not stage every
/// tap at once.
fn window(shape: &Conv2dShape) -> [bool; 2] {
    let ([forward, input], [forward_taps, input_taps]) = (over_window(shape, 32), all_taps(shape));
    [forward && !forward_taps, input && !input_taps]
}

/// A convolution of `n` images of `ci` channels and `hw` pixels into `co` channels, through a
/// square filter of `k` taps a side at `stride`, the image padded by `pad` on every side.
fn conv_shape(
    n: u32,
    ci: u32,
    hw: [u32; 2],
    co: u32,
    k: u32,
    stride: u32,
    pad: u32,
) -> Conv2dShape {
    Conv2dShape::new(n, ci, hw, co, [k, k])
        .stride([stride, stride])
        .padding(Padding::uniform(pad))
}

#[test]
fn convolutions_on_tensor_cores_are_within_f16_rounding_or_refused_without_them() {
    let rt = runtime();
    if !tensor_cores(&rt) {
        match Convolution::with_precision(&rt, Precision::TensorCoreF16) {
            Err(Error::MissingFeature { .. }) => {}
            Err(other) => panic!("expected MissingFeature, got {other}"),
            Ok(_) => panic!("built tensor-core kernels on a device without tensor cores"),
        }
        let layer = Conv2d::new(
            &rt,
            Conv2dConfig::new(3, [8, 8], 4, [3, 3]).precision(Precision::TensorCoreF16),
        );
        assert!(
            matches!(layer, Err(Error::MissingFeature { .. })),
            "{layer:?}"
        );
        return;
    }
    let tensor = Convolution::with_precision(&rt, Precision::TensorCoreF16).unwrap();
    assert_eq!(tensor.precision(), Precision::TensorCoreF16);
    let strict = Convolution::new(&rt).unwrap();
    for (seed, shape) in shapes_of_every_path().into_iter().enumerate() {
        let ran = check_conv(&rt, &tensor, &strict, shape, 100 + seed as u64);
        assert_ran_the_expected_kernels(&rt, &shape, &ran);
    }
    check_every_activation(&rt, &tensor, &strict);
}

/// The shapes that run the convolution's every path on the tensor cores, with autotuning off.
fn shapes_of_every_path() -> [Conv2dShape; 28] {
    // 3x3 of stride 1 (the specializations) in both blockings, 5x5 and 1x1, strided ones
    // (input gradients one stride phase at a time: stride 2 in both blockings, and stride 3
    // of a 4x4 filter, whose phases have different numbers of taps) and one of 3 input
    // channels (whose input gradient stays f32), ragged everywhere. Some outputs are too
    // small to fill the GPU, so their sums run in slices (the last one ragged): the 5x5's
    // forward (small blocks, 3 slices), the 120 -> 150 channels' forward and input gradient
    // (large blocks) and the 40 -> 120 channels' input gradient (small blocks), 2 slices
    // each.
    // With autotuning off, the forward and the stride-1 input gradient run over a staged
    // window where the summed channels are a multiple of 32 and the filter's reach fits the
    // window (see `window`): 3x3 in both blockings (in 512 invocations; the next test runs
    // them in 256), 5x5, dilated, several images, a window
    // per 32 channels (32 to 128 summed channels), images of up to 34 x 34 (a reach of 74
    // positions). For at most 64 rows and at most 9 taps they stage every tap's filter
    // slice at once (see `all_taps`): 3x3 (16 to 64 summed channels, 16 to 64 rows, dilated
    // too) and 2x2 (48 -> 56 channels, the general kernel with fewer taps than slices). Where the reach does not fit (images 66 and 70 wide), or the stride is 2,
    // they run tap by tap: the forward in the large blocking (64 -> 72 channels of 4 x 70),
    // strided in both blockings and split (128 -> 150 channels of 9 x 9 at stride 2, the
    // second slice starting at channel 64 of a tap); the input gradient in the large
    // blocking (72 <- 64 channels of 3 x 70) and split (40 <- 128 channels of 2 x 66, small
    // blocks). 8, 70 and 120 summed channels do not divide the step.
    // The filter gradient's blocks each lie in one tap when the input channels are a multiple
    // of the block (128 large, 64 small): 5x5 and dilated 3x3 of 64 input channels in small
    // blocks, 128 input channels in small blocks (two per tap) and in large ones (stride 1
    // and 2), and in 2 slices (64 -> 16 channels of 34 x 34 in small blocks, the second
    // slice starting inside an image row; 128 -> 130 of 32 x 32 in large ones); 64 input
    // channels in large blocks do not fill a block.
    [
        conv_shape(2, 8, [10, 10], 72, 3, 1, 1),
        conv_shape(1, 70, [7, 9], 16, 5, 1, 2),
        conv_shape(3, 33, [6, 6], 40, 1, 1, 0),
        conv_shape(2, 5, [9, 9], 20, 3, 2, 1),
        conv_shape(2, 70, [9, 9], 130, 3, 2, 1),
        conv_shape(1, 9, [10, 11], 12, 4, 3, 1),
        conv_shape(2, 3, [11, 11], 130, 3, 1, 1),
        conv_shape(1, 120, [5, 5], 150, 3, 1, 1),
        conv_shape(1, 40, [4, 4], 120, 3, 1, 1),
        conv_shape(2, 64, [9, 7], 72, 3, 1, 1),
        conv_shape(2, 64, [9, 9], 80, 3, 2, 1),
        conv_shape(3, 32, [6, 6], 40, 3, 1, 1),
        conv_shape(2, 64, [8, 8], 24, 5, 1, 2),
        conv_shape(1, 128, [5, 5], 150, 3, 1, 1),
        conv_shape(2, 72, [9, 7], 64, 3, 1, 1),
        conv_shape(2, 40, [8, 8], 128, 5, 1, 2),
        conv_shape(1, 40, [4, 4], 128, 3, 1, 1),
        conv_shape(2, 128, [6, 6], 48, 3, 1, 1),
        conv_shape(2, 128, [9, 9], 130, 3, 2, 1),
        conv_shape(1, 64, [34, 34], 16, 3, 1, 1),
        conv_shape(1, 128, [32, 32], 130, 3, 1, 1),
        Conv2dShape::new(2, 64, [9, 9], 64, [3, 3])
            .padding(Padding::uniform(2))
            .dilation([2, 2]),
        conv_shape(2, 64, [4, 70], 72, 3, 1, 1),
        conv_shape(1, 128, [9, 9], 150, 3, 2, 1),
        conv_shape(1, 72, [3, 70], 64, 3, 1, 1),
        conv_shape(1, 40, [2, 66], 128, 3, 1, 1),
        conv_shape(2, 16, [5, 7], 48, 3, 1, 1),
        conv_shape(2, 48, [7, 9], 56, 2, 1, 1),
    ]
}

/// Asserts that the tensor-core passes of `shape` ran the entry points `ran` that autotuning
/// off chooses: the filter gradient by taps, over a staged window (every tap at once or tap
/// by tap) in the blocks its rows take, or by taps where the image is too wide for a window.
fn assert_ran_the_expected_kernels(rt: &Runtime, shape: &Conv2dShape, ran: &[String]) {
    let block = if shape.out_channels <= 64 { 64 } else { 128 };
    let ran_any = |kernel: &str| ran.iter().any(|e| e.starts_with(kernel));
    assert_eq!(
        ran_any("conv_grad_weight_fragments_by_tap"),
        shape.in_channels.is_multiple_of(block),
        "{shape:?} ran {ran:?}"
    );
    // Over a window, in the small blocks for at most 64 rows, otherwise the large ones,
    // in workgroups of 512 invocations where the device has them.
    let invocations = match rt.device().limits().max_compute_invocations_per_workgroup {
        512.. => 512,
        _ => 256,
    };
    // Tap by tap, 32-deep steps; every tap at once, 64 rows of 16-deep steps.
    let window_blocks = |rows: u32| match rows {
        ..=64 => format!("block64_invocations{invocations}_depth32"),
        _ => format!("block128_invocations{invocations}_depth32"),
    };
    let all_taps_blocks = "block64_invocations256_depth16_slices9_all_taps1";
    let [forward_taps, input_taps] = all_taps(shape);
    assert_eq!(
        ran_any(&format!("conv_forward_window_{all_taps_blocks}")),
        forward_taps,
        "{shape:?} ran {ran:?}"
    );
    assert_eq!(
        ran_any(&format!("conv_grad_input_window_{all_taps_blocks}")),
        input_taps,
        "{shape:?} ran {ran:?}"
    );
    let [forward, input] = window(shape);
    let forward_blocks = window_blocks(shape.out_channels);
    assert_eq!(
        ran_any(&format!("conv_forward_window_{forward_blocks}")),
        forward,
        "{shape:?} ran {ran:?}"
    );
    let input_blocks = window_blocks(shape.in_channels);
    assert_eq!(
        ran_any(&format!("conv_grad_input_window_{input_blocks}")),
        input,
        "{shape:?} ran {ran:?}"
    );
    // Too wide for the window: by taps where the summed channels allow it.
    if shape.input[1] >= 66 {
        let by_tap = |kernel: &str, channels: u32| ran_any(kernel) == channels.is_multiple_of(32);
        assert!(
            by_tap("conv_forward_fragments_by_tap", shape.in_channels)
                && by_tap("conv_grad_input_fragments_by_tap", shape.out_channels),
            "{shape:?} ran {ran:?}"
        );
    }
}

/// Checks the forward's epilogue on `tensor` against `strict` through every activation,
/// keeping `pre` (`check_conv`'s passes keep none), whole in the plain kernels (8 input
/// channels), over a staged window (64, 9 x 7) and by taps (64, 4 x 70), and in slices (120
/// input channels of 5 x 5 and 128 of 9 x 9 at stride 2, too small to fill the GPU), whose
/// reduce applies it: no activation's slope exceeds 1.13 (GELU's), so `y` stays within 1.13
/// times the rounding bound of `pre`.
fn check_every_activation(rt: &Runtime, tensor: &Convolution, strict: &Convolution) {
    let shapes = [
        conv_shape(2, 8, [10, 10], 72, 3, 1, 1),
        conv_shape(2, 64, [9, 7], 72, 3, 1, 1),
        conv_shape(2, 64, [4, 70], 72, 3, 1, 1),
        conv_shape(1, 120, [5, 5], 150, 3, 1, 1),
        conv_shape(1, 128, [9, 9], 150, 3, 2, 1),
    ];
    for (seed, shape) in shapes.into_iter().enumerate() {
        let mut rng = rng(200 + seed as u64);
        let x = values(&mut rng, shape.input_len());
        let w = values(&mut rng, shape.weight_len());
        let abs = |v: &[f32]| v.iter().map(|a| a.abs()).collect::<Vec<f32>>();
        let g = vec![0.0; shape.output_len().unwrap()];
        // `y`, and `pre` where an activation keeps it.
        let forward = |conv, activation, [x, w]: [&[f32]; 2]| {
            let ([y, _, _, pre], _) = conv_passes(rt, conv, shape, activation, [x, w, &g]);
            [y, pre]
        };
        let [bound, _] = forward(strict, Activation::None, [&abs(&x), &abs(&w)]);
        let bound: Vec<f64> = bound.iter().map(|&v| 1.13 * f64::from(v)).collect();
        for activation in Activation::ALL {
            let got = forward(tensor, activation, [&x, &w]);
            let want = forward(strict, activation, [&x, &w]);
            assert_eq!(got[1].is_empty(), activation == Activation::None);
            for (output, (got, want)) in ["y", "pre"].into_iter().zip(got.iter().zip(&want)) {
                if !got.is_empty() {
                    let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
                    let name = format!("{output} through {activation:?} of {shape:?}");
                    assert_within_f16_rounding(&name, got, &want, &bound);
                }
            }
        }
    }
}

/// With at most 256 invocations a workgroup (WebGPU's default), the passes over a staged
/// window run both their blockings in 256 invocations instead of 512, and the GEMM, whose
/// wide forward takes 512, still builds.
#[test]
fn convolutions_over_a_window_run_in_256_invocations_where_the_device_has_no_more() {
    let rt = runtime();
    let narrow = limited_runtime(&rt, |limits| {
        limits.max_compute_invocations_per_workgroup = 256;
    });
    if !tensor_cores(&rt) {
        let conv = Convolution::with_precision(&narrow, Precision::TensorCoreF16);
        assert!(
            matches!(conv, Err(Error::MissingFeature { .. })),
            "{conv:?}"
        );
        return;
    }
    assert!(Gemm::with_precision(&narrow, Precision::TensorCoreF16).is_ok());
    let tensor = Convolution::with_precision(&narrow, Precision::TensorCoreF16).unwrap();
    let strict = Convolution::new(&narrow).unwrap();
    let conv = |n, ci, hw, co, k: u32| {
        Conv2dShape::new(n, ci, hw, co, [k, k]).padding(Padding::uniform(k / 2))
    };
    // The pass over a window, and the blocks its rows take: the forward's rows are output
    // channels, the input gradient's input channels. At most 64 rows of a 3 x 3 filter
    // would stage every tap at once, so those are 5 x 5.
    let cases = [
        (conv(1, 128, [5, 5], 150, 3), "conv_forward_window_block128"),
        (conv(2, 64, [6, 6], 40, 5), "conv_forward_window_block64"),
        (
            conv(2, 72, [9, 7], 64, 3),
            "conv_grad_input_window_block128",
        ),
        (conv(2, 40, [6, 6], 32, 5), "conv_grad_input_window_block64"),
    ];
    for (seed, (shape, kernel)) in cases.into_iter().enumerate() {
        let ran = check_conv(&narrow, &tensor, &strict, shape, 300 + seed as u64);
        let narrow_blocks = format!("{kernel}_invocations256_depth32");
        assert!(
            ran.iter().any(|e| e.starts_with(&narrow_blocks)),
            "{shape:?} ran {ran:?}"
        );
    }
}
