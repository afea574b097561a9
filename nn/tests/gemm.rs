//! `tessera_nn::Gemm` against an f64 CPU reference: every activation, forward and backward,
//! shapes with M, N, K of 1, shapes that are not multiples of the 128 x 128 block, and a
//! property test over random shapes of every path. Tolerance: 1e-4 relative (f32
//! accumulation).

#[path = "../../tests/common/mod.rs"]
mod common;
mod gemm_case;

use std::collections::BTreeSet;

use common::{
    assert_close, entry_points, kernels_run, plain_device_runtime, property_cases, property_seed,
    rng, runtime, tuning_runtime, values, ChaCha8Rng, RngExt,
};
use gemm_case::{GemmCase, Operands};
use tessera::{Error, GpuBuffer, Runtime};
use tessera_nn::{Activation, Gemm, GemmBackward, GemmForward, GemmShape};

fn act(x: f64, a: Activation) -> f64 {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    match a {
        Activation::None => x,
        Activation::Relu => x.max(0.0),
        Activation::Gelu => 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh()),
        Activation::Silu => x * sigmoid(x),
        Activation::Sigmoid => sigmoid(x),
        Activation::Tanh => x.tanh(),
    }
}

/// The derivative by central differences of the reference activation.
fn act_grad(x: f64, a: Activation) -> f64 {
    if a == Activation::Relu {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    let h = 1e-6;
    (act(x + h, a) - act(x - h, a)) / (2.0 * h)
}

/// Runs forward and backward for `shape` on random data, compares every result with the f64
/// reference, and returns the entry points that ran.
fn check_shape(
    rt: &Runtime,
    gemm: &Gemm,
    shape: GemmShape,
    activation: Activation,
    rng: &mut ChaCha8Rng,
) -> Vec<String> {
    let mut case = GemmCase::new(rt, shape, rng);
    // Without activation the output is `pre` itself: neither pass needs it kept.
    let keep_pre = activation != Activation::None;
    let mut batch = rt.batch();
    let args = case.forward(activation, keep_pre);
    gemm.forward(&mut batch, args).unwrap();
    let mut ran = kernels_run(batch);
    let mut batch = rt.batch();
    let args = case.backward(activation, keep_pre);
    gemm.backward(&mut batch, args).unwrap();
    ran.extend(kernels_run(batch));

    let want = Reference::of(shape, activation, &case.host);
    let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let label = format!("{shape:?} {activation:?}");
    let mut outputs = vec![("y", case.y.read(rt).unwrap(), f(&want.y))];
    if keep_pre {
        outputs.push(("pre", case.pre.read(rt).unwrap(), f(&want.pre)));
    }
    for (name, got, want) in outputs.into_iter().chain([
        ("grad_a", case.grad_a.read(rt).unwrap(), f(&want.grad_a)),
        ("grad_b", case.grad_b.read(rt).unwrap(), f(&want.grad_b)),
        (
            "grad_bias",
            case.grad_bias.read(rt).unwrap(),
            f(&want.grad_bias),
        ),
    ]) {
        assert_eq!(got.len(), want.len(), "{name} of {label}");
        eprintln!("checking {name} of {label}");
        assert_close(&got, &want, 1e-4);
    }
    ran
}

/// The f64 reference of the forward and backward passes of a GEMM.
struct Reference {
    pre: Vec<f64>,
    y: Vec<f64>,
    grad_a: Vec<f64>,
    grad_b: Vec<f64>,
    grad_bias: Vec<f64>,
}

impl Reference {
    /// The reference of `shape` through `activation` on `operands`.
    fn of(shape: GemmShape, activation: Activation, operands: &Operands) -> Self {
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let Operands {
            a: av,
            b: bv,
            bias: biasv,
            grad_y: gyv,
        } = operands;
        let mut want_pre = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                want_pre[i * n + j] = biasv[j] as f64
                    + (0..k)
                        .map(|l| av[i * k + l] as f64 * bv[l * n + j] as f64)
                        .sum::<f64>();
            }
        }
        let want_y: Vec<f64> = want_pre.iter().map(|&z| act(z, activation)).collect();
        let want_gp: Vec<f64> = want_pre
            .iter()
            .zip(gyv)
            .map(|(&z, &g)| g as f64 * act_grad(z, activation))
            .collect();
        let mut want_ga = vec![0.0f64; m * k];
        let mut want_gb = vec![0.0f64; k * n];
        let mut want_gbias = vec![0.0f64; n];
        for i in 0..m {
            for j in 0..n {
                let g = want_gp[i * n + j];
                want_gbias[j] += g;
                for l in 0..k {
                    want_ga[i * k + l] += g * bv[l * n + j] as f64;
                    want_gb[l * n + j] += av[i * k + l] as f64 * g;
                }
            }
        }
        Reference {
            pre: want_pre,
            y: want_y,
            grad_a: want_ga,
            grad_b: want_gb,
            grad_bias: want_gbias,
        }
    }
}

#[test]
fn gemm_forward_and_backward_match_reference_for_every_activation() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let mut rng = rng(7);
    for activation in Activation::ALL {
        check_shape(
            &rt,
            &gemm,
            GemmShape {
                m: 19,
                n: 21,
                k: 35,
            },
            activation,
            &mut rng,
        );
    }
}

#[test]
fn gemm_handles_dimensions_of_one_and_ragged_tiles() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let mut rng = rng(11);
    let shapes = [
        (1, 1, 1),
        (1, 17, 1),
        (17, 1, 3),
        (1, 1, 40),
        (16, 16, 16),
        (33, 15, 17),
        // Past one 128 x 128 block in every dimension, and past one 8-deep slice.
        (130, 129, 131),
    ];
    for (m, n, k) in shapes {
        check_shape(
            &rt,
            &gemm,
            GemmShape { m, n, k },
            Activation::Gelu,
            &mut rng,
        );
    }
}

#[test]
fn after_prepare_no_call_compiles_a_kernel() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    assert_eq!(rt.cached_pipelines(), 0, "`new` compiles nothing");
    gemm.prepare(&rt).unwrap();
    let prepared = rt.cached_pipelines();
    assert!(prepared > 0);
    let mut rng = rng(23);
    // Small and large blocks, vectors and scalars, and a long sum split over a small output.
    for (m, n, k) in [(5, 7, 3), (130, 128, 64), (4, 4, 3000)] {
        check_shape(
            &rt,
            &gemm,
            GemmShape { m, n, k },
            Activation::Relu,
            &mut rng,
        );
    }
    assert_eq!(rt.cached_pipelines(), prepared);
}

#[test]
fn gemm_splits_a_long_sum_over_a_small_output() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let mut rng = rng(5);
    // Small and large blocks, two and four slices, the last slice ragged; each shape needs more
    // scratch than the one before.
    let shapes = [(5, 3, 1500), (70, 33, 2100), (130, 129, 1100)];
    for (m, n, k) in shapes {
        let shape = GemmShape { m, n, k };
        check_shape(&rt, &gemm, shape, Activation::Silu, &mut rng);
        // The forward ran as partial products and their sum, not as one pass.
        let (a, b, bias) = (
            rt.zeros::<f32>((m * k) as usize).unwrap(),
            rt.zeros::<f32>((k * n) as usize).unwrap(),
            rt.zeros::<f32>(n as usize).unwrap(),
        );
        let mut y = rt.zeros::<f32>((m * n) as usize).unwrap();
        let mut batch = rt.batch();
        let args = GemmForward {
            shape,
            activation: Activation::None,
            a: &a,
            b: &b,
            bias: &bias,
            pre: None,
            y: &mut y,
        };
        gemm.forward(&mut batch, args).unwrap();
        let ran = kernels_run(batch);
        assert_eq!(ran.len(), 2, "{shape:?} ran {ran:?}");
        assert!(ran[0].starts_with("gemm_forward_partial"), "{ran:?}");
        assert!(ran[1].starts_with("gemm_forward_reduce"), "{ran:?}");
    }
}

/// The backward of a small layer over many rows (a large batch): `grad_b` (`k x n`) and the
/// bias gradient are too small to fill the GPU, so both sum `m` in slices that a second pass
/// adds up; `grad_a` has blocks enough and runs whole.
#[test]
fn gemm_backward_splits_the_sums_over_many_rows() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let mut rng = rng(13);
    // Scalar and vector operands, small and large blocks, the last slice ragged.
    for (m, n, k) in [(1500, 5, 3), (2100, 8, 12), (1100, 70, 130)] {
        let shape = GemmShape { m, n, k };
        let ran = check_shape(&rt, &gemm, shape, Activation::Relu, &mut rng);
        let backward: Vec<&str> = ran
            .iter()
            .skip_while(|e| !e.starts_with("grad_pre"))
            // Less the blocking's suffix (`_reg8`).
            .map(|e| e.split("_reg").next().unwrap_or(e))
            .collect();
        let operands = if n % 4 == 0 && k % 4 == 0 {
            "d_operands_vec4_f32"
        } else {
            "d_operands_f32"
        };
        let want = [
            "grad_pre",
            operands,
            "d_operands_reduce",
            "d_bias",
            "d_bias",
        ];
        assert_eq!(backward, want, "{shape:?} ran {ran:?}");
    }
}

/// Random shapes of every path, against the f64 reference: small blocks (a side of at most
/// 64), large blocks with ragged tiles, and a long sum over a small output in slices, for
/// either blocking (with many rows too, so that the backward sums `grad_b` and the bias in
/// slices). The cases cycle through the four paths on the test's device, then on one
/// with WebGPU's default 16 KiB of workgroup memory (where the small blocking serves large
/// outputs too); the second eight round `k` and `n` up to multiples of 4, where the forward
/// binds its operands as vectors. So every GEMM entry point runs (asserted);
/// `TESSERA_PROPERTY_CASES` and `TESSERA_PROPERTY_SEED` run more or others.
#[test]
fn gemm_matches_reference_on_random_shapes_of_every_path() {
    let rt = runtime();
    let default_limits = plain_device_runtime(&rt);
    let devices = [
        (&rt, Gemm::new(&rt).unwrap()),
        (&default_limits, Gemm::new(&default_limits).unwrap()),
    ];
    let mut rng = rng(property_seed(2026));
    let cases = property_cases(16);
    let mut ran = BTreeSet::new();
    for case in 0..cases {
        let (rt, gemm) = &devices[case / 4 % 2];
        let (sides, depth) = match case % 4 {
            0 => ((1, 64), (1, 64)),
            1 => ((65, 150), (1, 40)),
            2 => ((1, 12), (1024, 1500)),
            _ => ((65, 90), (1024, 1300)),
        };
        let mut shape = GemmShape {
            m: rng.random_range(sides.0..=sides.1),
            n: rng.random_range(sides.0..=sides.1),
            k: rng.random_range(depth.0..=depth.1),
        };
        if case % 4 == 2 {
            shape.m = rng.random_range(depth.0..=depth.1);
        }
        if case / 8 % 2 == 1 {
            (shape.n, shape.k) = (shape.n.next_multiple_of(4), shape.k.next_multiple_of(4));
        }
        let activation = Activation::ALL[rng.random_range(0..Activation::ALL.len())];
        ran.extend(check_shape(rt, gemm, shape, activation, &mut rng));
    }
    if cases >= 16 {
        // The strict f32 kernels; the tensor-core ones run in `nn_tensor_cores`.
        let all = entry_points(
            tessera_nn::WGSL_PORTABLE,
            &["gemm_", "grad_pre", "d_operands", "d_bias"],
        );
        let missed: Vec<&String> = all
            .iter()
            .filter(|e| !ran.contains(*e) && !e.contains("_fragments_"))
            .collect();
        assert!(missed.is_empty(), "no case ran {missed:?}");
    }
}

/// A device made with WebGPU's default limits has 16 KiB of workgroup memory, less than the
/// large blocking's double-buffered slices take: there the small blocking runs in its place,
/// and the results are the same.
#[test]
fn on_a_device_with_default_limits_the_small_blocking_serves_large_outputs() {
    let rt = plain_device_runtime(&runtime());
    let gemm = Gemm::new(&rt).unwrap();
    let shape = GemmShape {
        m: 130,
        n: 150,
        k: 40,
    };
    let ran = check_shape(&rt, &gemm, shape, Activation::Relu, &mut rng(5));
    assert!(ran.iter().any(|e| e == "gemm_forward_f32_reg4"), "{ran:?}");
    assert!(!ran.iter().any(|e| e.ends_with("_reg8")), "{ran:?}");
}

#[test]
fn gemm_rejects_empty_shapes_and_short_buffers() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let (a, b, bias) = (
        rt.zeros::<f32>(4).unwrap(),
        rt.zeros::<f32>(4).unwrap(),
        rt.zeros::<f32>(2).unwrap(),
    );
    let (mut pre, mut y) = (rt.zeros::<f32>(4).unwrap(), rt.zeros::<f32>(3).unwrap());
    let mut batch = rt.batch();
    let mut forward = |shape, pre: Option<&mut GpuBuffer<f32>>| {
        let args = GemmForward {
            shape,
            activation: Activation::None,
            a: &a,
            b: &b,
            bias: &bias,
            pre,
            y: &mut y,
        };
        gemm.forward(&mut batch, args)
    };
    let empty = forward(GemmShape { m: 0, n: 2, k: 2 }, Some(&mut pre));
    assert!(matches!(empty, Err(Error::InvalidArgument { .. })));
    let short = forward(GemmShape { m: 2, n: 2, k: 2 }, Some(&mut pre));
    assert!(
        matches!(short, Err(Error::BufferTooShort { ref binding, .. }) if binding == "y"),
        "{short:?}"
    );
    assert!(batch.is_empty(), "nothing is recorded after a failed check");

    // An activation's backward pass needs the forward's `pre`.
    let (mut grad_a, mut grad_b, mut grad_bias) = (
        rt.zeros::<f32>(4).unwrap(),
        rt.zeros::<f32>(4).unwrap(),
        rt.zeros::<f32>(2).unwrap(),
    );
    let args = GemmBackward {
        shape: GemmShape { m: 2, n: 2, k: 2 },
        activation: Activation::Relu,
        a: &a,
        b: &b,
        pre: None,
        grad_y: &pre,
        grad_a: Some(&mut grad_a),
        grad_b: &mut grad_b,
        grad_bias: &mut grad_bias,
    };
    let error = gemm.backward(&mut batch, args).unwrap_err();
    assert_eq!(
        error.to_string(),
        "gemm backward: the backward pass of Relu needs the forward's `pre`; pass the buffer \
         the forward wrote it to"
    );
    assert!(batch.is_empty());
}

#[test]
fn autotuned_gemm_times_each_way_once_and_stays_correct() {
    let rt = tuning_runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let mut rng = rng(23);
    // Twice: the second run takes the remembered choices.
    for _ in 0..2 {
        let shape = GemmShape {
            m: 70,
            n: 33,
            k: 600,
        };
        check_shape(&rt, &gemm, shape, Activation::Silu, &mut rng);
    }
    let (choices, problem) = rt.autotune_report();
    assert_eq!(problem, None);
    let operations: Vec<String> = choices.iter().map(|c| c.key.to_string()).collect();
    assert_eq!(
        operations,
        [
            "nn::Gemm::backward [128, 64, 1024]",
            "nn::Gemm::forward [128, 64, 1024]"
        ]
    );
    // Each pass times both blockings, each whole and split.
    for (choice, ways) in choices.iter().zip([4, 4]) {
        assert!(
            matches!(&choice.how, tessera::Tuned::Measured(times) if times.len() == ways),
            "{choice}"
        );
    }
}

/// One runtime shared by threads that record, submit and read at once computes what one thread
/// computes alone, bit for bit.
/// Without `pre` (inference) the forward writes the same output as with it, here for two
/// sizes in one batch: the second grows the op's scratch while the first's recording still
/// holds the old buffer.
#[test]
fn gemm_forward_without_pre_writes_the_same_output() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let mut rng = rng(31);
    let shapes = [
        GemmShape { m: 3, n: 5, k: 7 },
        GemmShape {
            m: 70,
            n: 66,
            k: 20,
        },
    ];
    let buffers: Vec<_> = shapes
        .iter()
        .map(|s| {
            let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
            let a = rt.upload(&values(&mut rng, m * k)).unwrap();
            let b = rt.upload(&values(&mut rng, k * n)).unwrap();
            let bias = rt.upload(&values(&mut rng, n)).unwrap();
            (a, b, bias)
        })
        .collect();
    let outputs = |keep_pre: bool| -> Vec<Vec<f32>> {
        let mut ys: Vec<GpuBuffer<f32>> = shapes
            .iter()
            .map(|s| rt.zeros((s.m * s.n) as usize).unwrap())
            .collect();
        let mut pres: Vec<GpuBuffer<f32>> = shapes
            .iter()
            .map(|s| rt.zeros((s.m * s.n) as usize).unwrap())
            .collect();
        let mut batch = rt.batch();
        let slots = ys.iter_mut().zip(&mut pres);
        for ((shape, (a, b, bias)), (y, pre)) in shapes.iter().zip(&buffers).zip(slots) {
            let args = GemmForward {
                shape: *shape,
                activation: Activation::Gelu,
                a,
                b,
                bias,
                pre: keep_pre.then_some(pre),
                y,
            };
            gemm.forward(&mut batch, args).unwrap();
        }
        batch.submit().unwrap();
        ys.iter().map(|y| y.read(&rt).unwrap()).collect()
    };
    let bits = |v: Vec<Vec<f32>>| -> Vec<Vec<u32>> {
        v.into_iter()
            .map(|y| y.into_iter().map(f32::to_bits).collect())
            .collect()
    };
    assert_eq!(bits(outputs(false)), bits(outputs(true)));
}

#[test]
fn gemm_from_several_threads_at_once_matches_one_thread() {
    let rt = runtime();
    let gemm = Gemm::new(&rt).unwrap();
    let shapes = [
        GemmShape {
            m: 70,
            n: 90,
            k: 33,
        },
        GemmShape {
            m: 5,
            n: 7,
            k: 1100,
        },
        GemmShape { m: 20, n: 64, k: 9 },
        GemmShape {
            m: 130,
            n: 66,
            k: 17,
        },
    ];
    let run = |shape: GemmShape, seed: u64| -> Vec<f32> {
        let mut rng = rng(seed);
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let a = rt.upload(&values(&mut rng, m * k)).unwrap();
        let b = rt.upload(&values(&mut rng, k * n)).unwrap();
        let bias = rt.upload(&values(&mut rng, n)).unwrap();
        let (mut pre, mut y) = (rt.zeros(m * n).unwrap(), rt.zeros(m * n).unwrap());
        let mut outputs = Vec::new();
        for _ in 0..3 {
            let mut batch = rt.batch();
            let args = GemmForward {
                shape,
                activation: Activation::Gelu,
                a: &a,
                b: &b,
                bias: &bias,
                // Half the threads keep no `pre`: they share the op's scratch.
                pre: seed.is_multiple_of(2).then_some(&mut pre),
                y: &mut y,
            };
            gemm.forward(&mut batch, args).unwrap();
            batch.submit().unwrap();
            outputs = y.read(&rt).unwrap();
        }
        outputs
    };
    let alone: Vec<Vec<f32>> = (0..shapes.len())
        .map(|i| run(shapes[i], i as u64))
        .collect();
    let together: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..shapes.len())
            .map(|i| {
                let run = &run;
                scope.spawn(move || run(shapes[i], i as u64))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, (alone, together)) in alone.iter().zip(&together).enumerate() {
        assert!(
            alone == together,
            "{:?} differs between threads and one thread",
            shapes[i]
        );
    }
}
