//! `tessera_nn::Convolution` against an f64 CPU reference: forward, input gradient (both the
//! stride-1 fast path and the general path), filter gradient and bias gradient, over fixed
//! edge cases (stride 1 and 2, padding 0, 1 and asymmetric, dilation 2, kernels 1 to 9, sizes
//! that are not multiples of the 128 x 128 blocks, batch 1, a grid folded past the device's
//! 65535 workgroups) and a property test over random shapes of every path.
//!
//! Tolerance: 1e-4 relative to the larger magnitude or 1 (f32 accumulation of at most a few
//! hundred products).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;

use common::{
    assert_close, entry_points, kernels_run, plain_device_runtime, property_cases, property_seed,
    rng, runtime, tuning_runtime, values, ChaCha8Rng, RngExt,
};
use tessera::{Error, Runtime};
use tessera_nn::{
    Activation, Conv2dBackward, Conv2dForward, Conv2dGradInput, Conv2dGradWeight, Conv2dShape,
    Convolution, Padding,
};

const TOLERANCE: f32 = 1e-4;

/// Output, input gradient, filter gradient and bias gradient in f64.
struct Reference {
    y: Vec<f32>,
    grad_x: Vec<f32>,
    grad_w: Vec<f32>,
    grad_bias: Vec<f32>,
}

/// The convolution by its definition; ReLU or none after it.
fn reference(
    shape: &Conv2dShape,
    relu: bool,
    x: &[f32],
    w: &[f32],
    bias: &[f32],
    grad_y: &[f32],
) -> Reference {
    let [oh_n, ow_n] = shape.output().unwrap();
    let (n_n, ci_n, co_n) = (
        shape.batch as usize,
        shape.in_channels as usize,
        shape.out_channels as usize,
    );
    let [h, wd] = shape.input.map(|v| v as i64);
    let [kh_n, kw_n] = shape.kernel.map(|v| v as usize);
    let [sh, sw] = shape.stride.map(|v| v as i64);
    let [dh, dw] = shape.dilation.map(|v| v as i64);
    let (pt, pl) = (shape.padding.top as i64, shape.padding.left as i64);
    let (oh_n, ow_n) = (oh_n as usize, ow_n as usize);
    let x_at = |n: usize, ci: usize, ih: i64, iw: i64| {
        ((n * ci_n + ci) * h as usize + ih as usize) * wd as usize + iw as usize
    };
    let w_at =
        |co: usize, ci: usize, kh: usize, kw: usize| ((co * ci_n + ci) * kh_n + kh) * kw_n + kw;

    let mut y = vec![0.0f64; n_n * co_n * oh_n * ow_n];
    let mut grad_x = vec![0.0f64; x.len()];
    let mut grad_w = vec![0.0f64; w.len()];
    let mut grad_bias = vec![0.0f64; co_n];
    for n in 0..n_n {
        for co in 0..co_n {
            for oh in 0..oh_n {
                for ow in 0..ow_n {
                    let out = ((n * co_n + co) * oh_n + oh) * ow_n + ow;
                    // Every window tap that lands inside the image, with its input index.
                    let mut taps = Vec::new();
                    for ci in 0..ci_n {
                        for kh in 0..kh_n {
                            for kw in 0..kw_n {
                                let ih = oh as i64 * sh - pt + kh as i64 * dh;
                                let iw = ow as i64 * sw - pl + kw as i64 * dw;
                                if (0..h).contains(&ih) && (0..wd).contains(&iw) {
                                    taps.push((x_at(n, ci, ih, iw), w_at(co, ci, kh, kw)));
                                }
                            }
                        }
                    }
                    let pre = f64::from(bias[co])
                        + taps
                            .iter()
                            .map(|&(xi, wi)| f64::from(x[xi]) * f64::from(w[wi]))
                            .sum::<f64>();
                    y[out] = if relu { pre.max(0.0) } else { pre };
                    let g = if relu && pre <= 0.0 {
                        0.0
                    } else {
                        f64::from(grad_y[out])
                    };
                    grad_bias[co] += g;
                    for (xi, wi) in taps {
                        grad_x[xi] += g * f64::from(w[wi]);
                        grad_w[wi] += g * f64::from(x[xi]);
                    }
                }
            }
        }
    }
    let f32s = |v: Vec<f64>| v.into_iter().map(|v| v as f32).collect();
    Reference {
        y: f32s(y),
        grad_x: f32s(grad_x),
        grad_w: f32s(grad_w),
        grad_bias: f32s(grad_bias),
    }
}

/// Runs forward and backward for `shape` on random data, compares all four results and returns
/// the entry points that ran.
fn check(
    rt: &Runtime,
    conv: &Convolution,
    shape: Conv2dShape,
    relu: bool,
    rng: &mut ChaCha8Rng,
) -> Vec<String> {
    let out_len = shape.output_len().unwrap();
    let (xv, wv, bv, gv) = (
        values(rng, shape.input_len()),
        values(rng, shape.weight_len()),
        values(rng, shape.out_channels as usize),
        values(rng, out_len),
    );
    let want = reference(&shape, relu, &xv, &wv, &bv, &gv);
    let activation = if relu {
        Activation::Relu
    } else {
        Activation::None
    };

    let (x, w, bias, grad_y) = (
        rt.upload(&xv).unwrap(),
        rt.upload(&wv).unwrap(),
        rt.upload(&bv).unwrap(),
        rt.upload(&gv).unwrap(),
    );
    let (mut pre, mut y) = (
        rt.zeros::<f32>(out_len).unwrap(),
        rt.zeros::<f32>(out_len).unwrap(),
    );
    let mut grad_x = rt.zeros::<f32>(xv.len()).unwrap();
    let mut grad_w = rt.zeros::<f32>(wv.len()).unwrap();
    let mut grad_bias = rt.zeros::<f32>(bv.len()).unwrap();

    // Without activation the output is `pre` itself: neither pass needs it kept.
    let mut batch = rt.batch();
    let args = Conv2dForward {
        shape,
        activation,
        x: &x,
        w: &w,
        bias: &bias,
        pre: relu.then_some(&mut pre),
        y: &mut y,
    };
    conv.forward(&mut batch, args).unwrap();
    let args = Conv2dBackward {
        shape,
        activation,
        x: &x,
        w: &w,
        pre: relu.then_some(&pre),
        grad_y: &grad_y,
        grad_x: Some(&mut grad_x),
        grad_w: &mut grad_w,
        grad_bias: &mut grad_bias,
    };
    conv.backward(&mut batch, args).unwrap();
    let ran = kernels_run(batch);

    let context = format!("{shape:?}, relu {relu}");
    let compare = |name: &str, got: &tessera::GpuBuffer<f32>, want: &[f32]| {
        let got = got.read(rt).unwrap();
        let result = std::panic::catch_unwind(|| assert_close(&got, want, TOLERANCE));
        if result.is_err() {
            panic!("{name} differs for {context}");
        }
    };
    compare("y", &y, &want.y);
    compare("grad_x", &grad_x, &want.grad_x);
    compare("grad_w", &grad_w, &want.grad_w);
    compare("grad_bias", &grad_bias, &want.grad_bias);
    ran
}

#[test]
fn conv2d_matches_reference_on_edge_cases() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(1);
    let base = |k: u32| Conv2dShape::new(2, 3, [9, 11], 4, [k, k]);
    let cases = [
        // Stride 1 (the input gradient's fast path) and 2, padding 0 and 1.
        base(3),
        base(3).padding(Padding::uniform(1)),
        base(3).stride([2, 2]),
        base(3).stride([2, 2]).padding(Padding::uniform(1)),
        base(3).stride([2, 1]),
        // Strided input gradients go one stride phase at a time: a 1x1 filter at stride 2
        // leaves three phases without taps (their pixels get no gradient), stride 3 with
        // padding on one side only, and input channels past one block.
        base(1).stride([2, 2]),
        base(3).stride([3, 2]).padding(Padding {
            top: 1,
            bottom: 0,
            left: 2,
            right: 0,
        }),
        Conv2dShape::new(1, 130, [5, 5], 3, [3, 3])
            .stride([2, 2])
            .padding(Padding::uniform(1)),
        // Asymmetric padding: per side, and different in h and w.
        base(3).padding(Padding {
            top: 2,
            bottom: 0,
            left: 0,
            right: 1,
        }),
        base(3).padding(Padding::symmetric(0, 2)),
        // Dilation 2, with and without stride.
        base(3).dilation([2, 2]).padding(Padding::uniform(2)),
        base(3).dilation([2, 1]).stride([2, 2]),
        // Every kernel size, up to larger than the seed's 7x7 limit. The forward has variants
        // for 3x3 and 7x7, the input gradient for 3x3 at stride 1; 7x3 and 1x3 take neither.
        base(1),
        base(5).padding(Padding::uniform(2)),
        base(7).padding(Padding::uniform(3)),
        base(7).stride([2, 2]).padding(Padding::uniform(3)),
        Conv2dShape::new(2, 2, [9, 11], 3, [7, 3]).padding(Padding::symmetric(3, 1)),
        base(9).padding(Padding::uniform(4)),
        Conv2dShape::new(1, 2, [12, 13], 3, [9, 9]).stride([2, 2]),
        Conv2dShape::new(1, 1, [5, 7], 1, [1, 3]),
        // Batch 1, single channels, a kernel as large as the input.
        Conv2dShape::new(1, 1, [1, 1], 1, [1, 1]),
        Conv2dShape::new(1, 1, [5, 5], 1, [5, 5]),
        // Channels and pixels past one 128 x 128 block, not multiples of it.
        Conv2dShape::new(1, 130, [3, 3], 131, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(3, 2, [10, 9], 5, [3, 3]).padding(Padding::uniform(1)),
        // Enough images x pixels that the filter gradient is split into slices (4, and 2
        // with a slice boundary inside an image).
        Conv2dShape::new(2, 1, [32, 32], 2, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(8, 3, [24, 24], 5, [3, 3])
            .stride([2, 2])
            .padding(Padding::uniform(1)),
    ];
    for (i, shape) in cases.into_iter().enumerate() {
        check(&rt, &conv, shape, i % 2 == 1, &mut rng);
    }
}

/// A family of random convolution shapes: each field an inclusive range the generator draws
/// from (the window square when `square`).
struct Class {
    batch: (u32, u32),
    in_channels: (u32, u32),
    out_channels: (u32, u32),
    size: (u32, u32),
    kernel: (u32, u32),
    square: bool,
    stride: (u32, u32),
    dilation: (u32, u32),
    padding: (u32, u32),
}

/// The classes the property test cycles through, each aimed at paths the others miss (entry
/// points in the comments): small channels take the 64 x 64 blocks (`reg4`), more than 64 on
/// both sides of an output the 128 x 128 ones (`reg8`), a sum of 1024 or more over a small
/// output is split (`partial`, `reduce`).
const CLASSES: [Class; 19] = {
    const ANY: Class = Class {
        batch: (1, 2),
        in_channels: (5, 8),
        out_channels: (1, 8),
        size: (3, 9),
        kernel: (3, 3),
        square: true,
        stride: (1, 1),
        dilation: (1, 1),
        padding: (0, 2),
    };
    const WIDE: (u32, u32) = (65, 70);
    const DEEP: (u32, u32) = (114, 120);
    const DEEPER: (u32, u32) = (256, 260);
    [
        // 3x3 stride 1: `_kernel_h3_kernel_w3`, `_stride_h1_stride_w1_...`, Winograd.
        ANY,
        Class {
            batch: (3, 3),
            in_channels: WIDE,
            out_channels: WIDE,
            size: (5, 6),
            ..ANY
        },
        // The same with sums of 1024 or more, split: the forward's, the input gradient's, both.
        Class {
            batch: (1, 1),
            in_channels: DEEP,
            out_channels: (20, 40),
            size: (3, 5),
            ..ANY
        },
        Class {
            batch: (1, 1),
            in_channels: (20, 40),
            out_channels: DEEP,
            size: (3, 5),
            ..ANY
        },
        Class {
            batch: (3, 3),
            in_channels: DEEP,
            out_channels: DEEP,
            size: (5, 5),
            padding: (1, 1),
            ..ANY
        },
        // Strided without dilation: one stride phase at a time (`conv_grad_input_phased`).
        Class {
            kernel: (1, 4),
            square: false,
            stride: (2, 3),
            size: (4, 11),
            ..ANY
        },
        Class {
            batch: (2, 2),
            in_channels: WIDE,
            out_channels: WIDE,
            size: (12, 14),
            kernel: (2, 4),
            square: false,
            stride: (2, 2),
            padding: (1, 1),
            ..ANY
        },
        // Few input channels (`conv_grad_input_few`) and the stem's 7x7 window.
        Class {
            in_channels: (1, 4),
            out_channels: (3, 8),
            size: (7, 14),
            kernel: (7, 7),
            stride: (1, 2),
            padding: (3, 3),
            ..ANY
        },
        Class {
            batch: (2, 2),
            in_channels: (1, 3),
            out_channels: WIDE,
            size: (16, 20),
            kernel: (7, 7),
            stride: (2, 2),
            padding: (3, 3),
            ..ANY
        },
        // Anything small: windows 1 to 5, strides and dilations 1 and 2.
        Class {
            kernel: (1, 5),
            square: false,
            stride: (1, 2),
            dilation: (1, 2),
            size: (5, 12),
            ..ANY
        },
        // Strided and dilated: the general input gradient, whole and split, in both blockings
        // (few input channels take the small one).
        Class {
            batch: (2, 2),
            in_channels: WIDE,
            out_channels: (3, 5),
            kernel: (2, 3),
            stride: (2, 2),
            dilation: (2, 2),
            size: (12, 14),
            ..ANY
        },
        Class {
            out_channels: (3, 5),
            kernel: (2, 3),
            stride: (2, 2),
            dilation: (2, 2),
            size: (8, 10),
            ..ANY
        },
        Class {
            batch: (1, 1),
            out_channels: DEEP,
            stride: (2, 2),
            dilation: (2, 2),
            size: (6, 8),
            ..ANY
        },
        Class {
            batch: (2, 2),
            in_channels: WIDE,
            out_channels: DEEP,
            stride: (2, 2),
            dilation: (2, 2),
            size: (10, 11),
            ..ANY
        },
        // Stride 1, other windows: the input gradient's stride-1 path without a fixed window.
        Class {
            kernel: (4, 5),
            square: false,
            dilation: (1, 2),
            size: (5, 10),
            ..ANY
        },
        Class {
            batch: (2, 2),
            in_channels: WIDE,
            out_channels: (3, 8),
            kernel: (1, 2),
            square: false,
            size: (7, 8),
            ..ANY
        },
        // A 2x2 window over many channels: split sums without a fixed window.
        Class {
            batch: (1, 1),
            in_channels: DEEPER,
            out_channels: (20, 40),
            size: (4, 5),
            kernel: (2, 2),
            ..ANY
        },
        Class {
            batch: (1, 1),
            in_channels: (20, 40),
            out_channels: DEEPER,
            size: (4, 5),
            kernel: (2, 2),
            ..ANY
        },
        Class {
            batch: (2, 2),
            in_channels: DEEPER,
            out_channels: DEEPER,
            size: (5, 6),
            kernel: (2, 2),
            ..ANY
        },
    ]
};

impl Class {
    fn draw(&self, rng: &mut ChaCha8Rng) -> Conv2dShape {
        let mut range = |(lo, hi): (u32, u32)| rng.random_range(lo..=hi);
        let first = range(self.kernel);
        let kernel = [
            first,
            if self.square {
                first
            } else {
                range(self.kernel)
            },
        ];
        let dilation = [range(self.dilation), range(self.dilation)];
        let stride = [range(self.stride), range(self.stride)];
        let padding = Padding {
            top: range(self.padding),
            bottom: range(self.padding),
            left: range(self.padding),
            right: range(self.padding),
        };
        let reach = |a: usize| dilation[a] * (kernel[a] - 1) + 1;
        let input = [
            range(self.size).max(reach(0)),
            range(self.size).max(reach(1)),
        ];
        Conv2dShape::new(
            range(self.batch),
            range(self.in_channels),
            input,
            range(self.out_channels),
            kernel,
        )
        .stride(stride)
        .padding(padding)
        .dilation(dilation)
    }
}

/// Random shapes of every path against the f64 reference. The cases cycle through
/// [`CLASSES`] on the test's device, then on one with WebGPU's default 16 KiB of workgroup
/// memory (where the small blocking serves large outputs too), so that every convolution
/// entry point runs (asserted); `TESSERA_PROPERTY_CASES` and `TESSERA_PROPERTY_SEED` run more
/// or others.
#[test]
fn conv2d_matches_reference_on_random_shapes_of_every_path() {
    let rt = runtime();
    let default_limits = plain_device_runtime(&rt);
    let devices = [
        (&rt, Convolution::new(&rt).unwrap()),
        (&default_limits, Convolution::new(&default_limits).unwrap()),
    ];
    let mut rng = rng(property_seed(7));
    let cases = property_cases(2 * CLASSES.len());
    let mut ran = BTreeSet::new();
    for case in 0..cases {
        let (rt, conv) = &devices[case / CLASSES.len() % 2];
        let shape = CLASSES[case % CLASSES.len()].draw(&mut rng);
        let kernels = check(rt, conv, shape, case % 3 == 0, &mut rng);
        ran.extend(kernels);
    }
    if cases >= 2 * CLASSES.len() {
        // The strict f32 kernels; the tensor-core ones, the f32 passes that sum their
        // slices (`..._fragments_reduce`) and the filter layouts of their passes by taps
        // (`conv_weights_by_tap`, `conv_weights_transposed_by_tap`, also checked by
        // themselves in the library's unit tests) run in `nn_tensor_cores`.
        let all = entry_points(tessera_nn::WGSL_PORTABLE, &["conv_", "winograd_"]);
        let missed: Vec<&String> = all
            .iter()
            .filter(|e| {
                !ran.contains(*e) && !e.contains("_fragments_") && !e.starts_with("conv_weights_")
            })
            .collect();
        assert!(missed.is_empty(), "no case ran {missed:?}");
    }
}

/// 64 * 65536 output pixels in one channel need 65536 blocks of 64 columns: one more than a
/// dimension allows.
#[test]
fn conv2d_forward_folds_a_grid_past_the_device_limit() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let images = 64 * 65_536;
    let shape = Conv2dShape::new(images, 1, [1, 1], 1, [1, 1]);
    let xv: Vec<f32> = (0..images).map(|i| (i % 1000) as f32).collect();
    let x = rt.upload(&xv).unwrap();
    let w = rt.upload(&[2.0f32]).unwrap();
    let bias = rt.upload(&[1.0f32]).unwrap();
    let mut pre = rt.zeros::<f32>(images as usize).unwrap();
    let mut y = rt.zeros::<f32>(images as usize).unwrap();
    let mut batch = rt.batch();
    conv.forward(
        &mut batch,
        Conv2dForward {
            shape,
            activation: Activation::None,
            x: &x,
            w: &w,
            bias: &bias,
            pre: Some(&mut pre),
            y: &mut y,
        },
    )
    .unwrap();
    batch.submit().unwrap();
    let got = y.read(&rt).unwrap();
    let wrong = got.iter().zip(&xv).position(|(y, x)| *y != 2.0 * x + 1.0);
    assert_eq!(wrong, None, "first wrong output");
}

/// Without `pre` (inference) the forward writes the same output as with it, whole and split.
#[test]
fn conv2d_forward_without_pre_writes_the_same_output() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(33);
    let shapes = [
        Conv2dShape::new(2, 3, [7, 6], 4, [3, 3]).padding(Padding::uniform(1)),
        // A batch of one over many input channels: split.
        Conv2dShape::new(1, 128, [4, 4], 8, [3, 3]),
    ];
    for shape in shapes {
        let x = rt.upload(&values(&mut rng, shape.input_len())).unwrap();
        let w = rt.upload(&values(&mut rng, shape.weight_len())).unwrap();
        let bias = rt
            .upload(&values(&mut rng, shape.out_channels as usize))
            .unwrap();
        let out = shape.output_len().unwrap();
        let output = |keep_pre: bool| -> (Vec<u32>, Vec<String>) {
            let (mut pre, mut y) = (rt.zeros(out).unwrap(), rt.zeros(out).unwrap());
            let mut batch = rt.batch();
            let args = Conv2dForward {
                shape,
                activation: Activation::Relu,
                x: &x,
                w: &w,
                bias: &bias,
                pre: keep_pre.then_some(&mut pre),
                y: &mut y,
            };
            conv.forward(&mut batch, args).unwrap();
            let ran = kernels_run(batch);
            let bits = y.read(&rt).unwrap().into_iter().map(f32::to_bits).collect();
            (bits, ran)
        };
        let (without, ran) = output(false);
        assert_eq!(without, output(true).0, "{shape:?}");
        let split = ran[0].starts_with("conv_forward_partial");
        assert_eq!(split, shape.batch == 1, "{shape:?} ran {ran:?}");
    }
}

#[test]
fn conv2d_rejects_bad_shapes_with_the_reason() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let too_small = Conv2dShape::new(1, 1, [2, 2], 1, [3, 3]);
    let message = too_small.output().unwrap_err().to_string();
    assert!(message.contains("the filter spans 3 rows"), "{message}");
    let zero_stride = Conv2dShape::new(1, 1, [4, 4], 1, [3, 3]).stride([0, 1]);
    let message = zero_stride.output().unwrap_err().to_string();
    assert!(
        message.contains("stride height must be at least 1"),
        "{message}"
    );

    // A buffer shorter than the shape needs is caught before anything runs.
    let shape = Conv2dShape::new(1, 1, [4, 4], 1, [3, 3]);
    let x = rt.zeros::<f32>(15).unwrap();
    let w = rt.zeros::<f32>(9).unwrap();
    let bias = rt.zeros::<f32>(1).unwrap();
    let (mut pre, mut y) = (rt.zeros::<f32>(4).unwrap(), rt.zeros::<f32>(4).unwrap());
    let mut batch = rt.batch();
    let error = conv
        .forward(
            &mut batch,
            Conv2dForward {
                shape,
                activation: Activation::None,
                x: &x,
                w: &w,
                bias: &bias,
                pre: Some(&mut pre),
                y: &mut y,
            },
        )
        .unwrap_err();
    assert!(
        matches!(&error, Error::BufferTooShort { binding, .. } if binding == "x"),
        "{error}"
    );
    assert!(batch.is_empty());
}

/// The single-pass APIs give what the full backward gives for a convolution without
/// activation, and a bad buffer in `backward` leaves the batch untouched.
#[test]
fn conv2d_single_gradients_and_checked_backward() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(21);
    let shape = Conv2dShape::new(2, 3, [7, 6], 4, [3, 3]).stride([1, 2]);
    let out_len = shape.output_len().unwrap();
    let (xv, wv, gv) = (
        values(&mut rng, shape.input_len()),
        values(&mut rng, shape.weight_len()),
        values(&mut rng, out_len),
    );
    let want = reference(&shape, false, &xv, &wv, &[0.0; 4], &gv);
    let (x, w, grad_pre) = (
        rt.upload(&xv).unwrap(),
        rt.upload(&wv).unwrap(),
        rt.upload(&gv).unwrap(),
    );
    let mut grad_x = rt.zeros::<f32>(xv.len()).unwrap();
    let mut grad_w = rt.zeros::<f32>(wv.len()).unwrap();
    let mut batch = rt.batch();
    let args = Conv2dGradInput {
        shape,
        w: &w,
        grad_pre: &grad_pre,
        grad_x: &mut grad_x,
    };
    conv.grad_input(&mut batch, args).unwrap();
    let args = Conv2dGradWeight {
        shape,
        x: &x,
        grad_pre: &grad_pre,
        grad_w: &mut grad_w,
    };
    conv.grad_weight(&mut batch, args).unwrap();
    batch.submit().unwrap();
    assert_close(&grad_x.read(&rt).unwrap(), &want.grad_x, TOLERANCE);
    assert_close(&grad_w.read(&rt).unwrap(), &want.grad_w, TOLERANCE);

    let pre = rt.zeros::<f32>(out_len).unwrap();
    // A short bias gradient, then a short filter gradient (which runs after the rest of the
    // family, so its buffers must be checked first too).
    let cases = [(3, wv.len(), "grad_bias"), (4, wv.len() - 1, "grad_w")];
    for (bias_len, w_len, short) in cases {
        let mut grad_bias = rt.zeros::<f32>(bias_len).unwrap();
        let mut grad_w = rt.zeros::<f32>(w_len).unwrap();
        let mut batch = rt.batch();
        let args = Conv2dBackward {
            shape,
            activation: Activation::Relu,
            x: &x,
            w: &w,
            pre: Some(&pre),
            grad_y: &grad_pre,
            grad_x: Some(&mut grad_x),
            grad_w: &mut grad_w,
            grad_bias: &mut grad_bias,
        };
        let error = conv.backward(&mut batch, args).unwrap_err();
        assert!(
            matches!(&error, Error::BufferTooShort { binding, .. } if binding == short),
            "{error}"
        );
        assert!(
            batch.is_empty(),
            "nothing is recorded when {short} is short"
        );
    }
}

/// 3x3 filters of stride 1 get their gradient by Winograd's F(3x3, 4x4) with autotuning off:
/// odd output sizes (tiles past the last row and column), padding 0, 2 and uneven (outputs
/// smaller and larger than the input), both blockings with channels past a block, and enough
/// tiles that the point GEMMs are split. Other windows keep the implicit GEMM.
#[test]
fn three_by_three_filter_gradients_run_by_winograd() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(91);
    let uneven = Padding {
        top: 2,
        bottom: 0,
        left: 1,
        right: 2,
    };
    let shapes = [
        Conv2dShape::new(2, 3, [7, 9], 5, [3, 3]),
        Conv2dShape::new(1, 4, [6, 5], 2, [3, 3]).padding(Padding::uniform(2)),
        Conv2dShape::new(3, 2, [5, 8], 3, [3, 3]).padding(uneven),
        // The large blocking, rows and columns past one block.
        Conv2dShape::new(1, 130, [5, 3], 70, [3, 3]).padding(Padding::uniform(1)),
        // 2 x 24 x 24 = 1152 tiles of 4 x 4: two slices of the tiles, the last one ragged.
        Conv2dShape::new(2, 2, [96, 94], 3, [3, 3]).padding(Padding::uniform(1)),
    ];
    let ran = |shape: &Conv2dShape| {
        let x = rt.zeros::<f32>(shape.input_len()).unwrap();
        let grad_pre = rt.zeros::<f32>(shape.output_len().unwrap()).unwrap();
        let mut grad_w = rt.zeros::<f32>(shape.weight_len()).unwrap();
        let mut batch = rt.batch();
        let args = Conv2dGradWeight {
            shape: *shape,
            x: &x,
            grad_pre: &grad_pre,
            grad_w: &mut grad_w,
        };
        conv.grad_weight(&mut batch, args).unwrap();
        kernels_run(batch)
    };
    for shape in shapes {
        check(&rt, &conv, shape, true, &mut rng);
        let ran = ran(&shape);
        let stages = [
            "winograd_input_tiles",
            "winograd_gradient_tiles",
            "winograd_multiply",
            "winograd_filter",
        ];
        assert_eq!(ran.len(), stages.len(), "{shape:?} ran {ran:?}");
        for (kernel, stage) in ran.iter().zip(stages) {
            assert!(kernel.starts_with(stage), "{shape:?} ran {ran:?}");
        }
    }
    let strided = Conv2dShape::new(1, 2, [7, 7], 2, [3, 3]).stride([2, 2]);
    let dilated = Conv2dShape::new(1, 2, [7, 7], 2, [3, 3]).dilation([2, 2]);
    for shape in [strided, dilated, Conv2dShape::new(1, 2, [7, 7], 2, [5, 5])] {
        let ran = ran(&shape);
        assert!(
            ran[0].starts_with("conv_grad_weight"),
            "{shape:?} ran {ran:?}"
        );
    }
}

#[test]
fn after_prepare_no_call_compiles_a_kernel() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    assert_eq!(rt.cached_pipelines(), 0, "`new` compiles nothing");
    conv.prepare(&rt).unwrap();
    let prepared = rt.cached_pipelines();
    assert!(prepared > 0);
    let mut rng = rng(29);
    // By Winograd and not; strided (by stride phases); few input channels.
    let shape = Conv2dShape::new(2, 5, [9, 9], 6, [3, 3]).padding(Padding::uniform(1));
    for shape in [
        shape,
        shape.stride([2, 2]),
        Conv2dShape::new(1, 2, [7, 6], 3, [2, 3]),
    ] {
        check(&rt, &conv, shape, true, &mut rng);
    }
    assert_eq!(rt.cached_pipelines(), prepared);
}

#[test]
fn strided_input_gradients_run_one_stride_phase_at_a_time() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let ran = |shape: Conv2dShape| {
        let w = rt.zeros::<f32>(shape.weight_len()).unwrap();
        let grad_pre = rt.zeros::<f32>(shape.output_len().unwrap()).unwrap();
        let mut grad_x = rt.zeros::<f32>(shape.input_len()).unwrap();
        let mut batch = rt.batch();
        let args = Conv2dGradInput {
            shape,
            w: &w,
            grad_pre: &grad_pre,
            grad_x: &mut grad_x,
        };
        conv.grad_input(&mut batch, args).unwrap();
        kernels_run(batch)[0].clone()
    };
    let shape = Conv2dShape::new(1, 5, [8, 8], 3, [3, 3]);
    let phased = ran(shape.stride([2, 2]));
    assert!(phased.starts_with("conv_grad_input_phased"), "{phased}");
    // Dilated and strided at once: the general gather.
    let general = ran(shape.stride([2, 2]).dilation([2, 2]));
    assert!(general.starts_with("conv_grad_input_reg"), "{general}");
}

#[test]
fn few_input_channels_get_their_gradient_directly() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(73);
    let uneven = Padding {
        top: 0,
        bottom: 2,
        left: 1,
        right: 0,
    };
    // A stem (3 channels, 7x7, stride 2), one channel at stride 1, four channels at stride 3
    // with uneven padding, two at stride (1, 2) over 70 output channels.
    let shapes = [
        Conv2dShape::new(2, 3, [15, 13], 6, [7, 7])
            .stride([2, 2])
            .padding(Padding::uniform(3)),
        Conv2dShape::new(3, 1, [9, 8], 4, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(1, 4, [10, 11], 5, [5, 5])
            .stride([3, 3])
            .padding(uneven),
        Conv2dShape::new(2, 2, [6, 9], 70, [2, 3]).stride([1, 2]),
    ];
    for shape in shapes {
        check(&rt, &conv, shape, true, &mut rng);
        let w = rt.zeros::<f32>(shape.weight_len()).unwrap();
        let grad_pre = rt.zeros::<f32>(shape.output_len().unwrap()).unwrap();
        let mut grad_x = rt.zeros::<f32>(shape.input_len()).unwrap();
        let mut batch = rt.batch();
        let args = Conv2dGradInput {
            shape,
            w: &w,
            grad_pre: &grad_pre,
            grad_x: &mut grad_x,
        };
        conv.grad_input(&mut batch, args).unwrap();
        let ran = kernels_run(batch)[0].clone();
        assert_eq!(ran, "conv_grad_input_few", "{shape:?}");
    }
}

#[test]
fn autotuned_convolutions_time_each_way_of_each_pass_and_stay_correct() {
    let rt = tuning_runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(41);
    let unit = Conv2dShape::new(2, 5, [6, 7], 70, [3, 3]).padding(Padding::uniform(1));
    let strided = Conv2dShape::new(1, 66, [9, 8], 3, [3, 3]).stride([2, 2]);
    // Each shape twice: the second run takes the remembered choices.
    for shape in [unit, strided, unit, strided] {
        check(&rt, &conv, shape, true, &mut rng);
    }
    let (choices, problem) = rt.autotune_report();
    assert_eq!(problem, None);
    let keys: Vec<String> = choices.iter().map(|c| c.key.to_string()).collect();
    let mut want = Vec::new();
    for pass in ["forward", "grad_input", "grad_weight"] {
        want.push(format!(
            "nn::Convolution::{pass} [1, 128, 16, 8, 4, 3, 3, 2, 2, 1, 1]"
        ));
        want.push(format!(
            "nn::Convolution::{pass} [2, 8, 8, 8, 128, 3, 3, 1, 1, 1, 1]"
        ));
    }
    assert_eq!(keys, want);
    // The filter gradient times both blockings (the 3x3 of stride 1 each by Winograd too);
    // the forward and input gradient each whole and split too.
    for (choice, ways) in choices.iter().zip([4, 4, 4, 4, 2, 4]) {
        assert!(
            matches!(&choice.how, tessera::Tuned::Measured(times) if times.len() == ways),
            "{choice}"
        );
    }
}

#[test]
fn small_outputs_are_computed_in_slices_of_their_sum() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(57);
    // A batch of one over many input channels (small blocks, three slices, the last one
    // ragged), 70 output channels (large blocks, two slices), and a 1x1 filter.
    let shapes = [
        Conv2dShape::new(1, 200, [5, 5], 20, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(2, 130, [6, 6], 70, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(1, 1100, [2, 3], 5, [1, 1]),
    ];
    for shape in shapes {
        check(&rt, &conv, shape, true, &mut rng);
        // The forward ran as partial sums and their total, not as one pass.
        let out_len = shape.output_len().unwrap();
        let (x, w, bias) = (
            rt.zeros::<f32>(shape.input_len()).unwrap(),
            rt.zeros::<f32>(shape.weight_len()).unwrap(),
            rt.zeros::<f32>(shape.out_channels as usize).unwrap(),
        );
        let (mut pre, mut y) = (
            rt.zeros::<f32>(out_len).unwrap(),
            rt.zeros::<f32>(out_len).unwrap(),
        );
        let mut batch = rt.batch();
        conv.forward(
            &mut batch,
            Conv2dForward {
                shape,
                activation: Activation::None,
                x: &x,
                w: &w,
                bias: &bias,
                pre: Some(&mut pre),
                y: &mut y,
            },
        )
        .unwrap();
        let ran = kernels_run(batch);
        assert_eq!(ran.len(), 2, "{shape:?} ran {ran:?}");
        assert!(ran[0].starts_with("conv_forward_partial"), "{ran:?}");
        assert!(ran[1].starts_with("conv_forward_reduce"), "{ran:?}");
    }
}

/// Few output channels over many (image, pixel) pairs: the bias gradient sums them in slices
/// (the last one ragged), whose sums `d_bias` adds up after the rest of the backward.
#[test]
fn bias_gradients_over_many_pixels_sum_in_slices() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(61);
    let shapes = [
        Conv2dShape::new(2, 2, [40, 40], 3, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(3, 5, [30, 20], 1, [1, 1]),
    ];
    for shape in shapes {
        let ran = check(&rt, &conv, shape, true, &mut rng);
        let bias = ran.iter().position(|e| e == "conv_grad_bias");
        let added = ran.iter().position(|e| e == "d_bias");
        assert!(
            matches!((bias, added), (Some(b), Some(a)) if b < a),
            "{shape:?} ran {ran:?}"
        );
    }
}

#[test]
fn small_inputs_get_their_gradient_in_slices_of_its_sum() {
    let rt = runtime();
    let conv = Convolution::new(&rt).unwrap();
    let mut rng = rng(61);
    // Few input pixels and many output channels: small blocks in three slices (the last
    // ragged), large blocks in two, and a 1x1 filter.
    let shapes = [
        Conv2dShape::new(1, 20, [5, 5], 200, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(2, 70, [6, 6], 130, [3, 3]).padding(Padding::uniform(1)),
        Conv2dShape::new(1, 5, [2, 3], 1100, [1, 1]),
    ];
    for shape in shapes {
        // Through the backward family (the slices after it) and on their own.
        check(&rt, &conv, shape, false, &mut rng);
        let (w, grad_pre) = (
            rt.zeros::<f32>(shape.weight_len()).unwrap(),
            rt.zeros::<f32>(shape.output_len().unwrap()).unwrap(),
        );
        let mut grad_x = rt.zeros::<f32>(shape.input_len()).unwrap();
        let mut batch = rt.batch();
        let args = Conv2dGradInput {
            shape,
            w: &w,
            grad_pre: &grad_pre,
            grad_x: &mut grad_x,
        };
        conv.grad_input(&mut batch, args).unwrap();
        let ran = kernels_run(batch);
        assert_eq!(ran.len(), 2, "{shape:?} ran {ran:?}");
        assert!(ran[0].starts_with("conv_grad_input_partial"), "{ran:?}");
        assert!(ran[1].starts_with("conv_grad_input_reduce"), "{ran:?}");

        // A short `grad_x` is refused before the backward records anything.
        let (x, pre) = (
            rt.zeros::<f32>(shape.input_len()).unwrap(),
            rt.zeros::<f32>(shape.output_len().unwrap()).unwrap(),
        );
        let mut short_x = rt.zeros::<f32>(shape.input_len() - 1).unwrap();
        let mut grad_w = rt.zeros::<f32>(shape.weight_len()).unwrap();
        let mut grad_bias = rt.zeros::<f32>(shape.out_channels as usize).unwrap();
        let args = Conv2dBackward {
            shape,
            activation: Activation::Relu,
            x: &x,
            w: &w,
            pre: Some(&pre),
            grad_y: &grad_pre,
            grad_x: Some(&mut short_x),
            grad_w: &mut grad_w,
            grad_bias: &mut grad_bias,
        };
        let mut batch = rt.batch();
        let error = conv.backward(&mut batch, args).unwrap_err();
        assert!(
            matches!(&error, Error::BufferTooShort { binding, .. } if binding == "grad_x"),
            "{error}"
        );
        assert!(
            batch.is_empty(),
            "nothing is recorded when a buffer is wrong"
        );
    }
}
