//! The op's host code under test: its plans run against references, and the kernels that
//! only tuned ways reach, run directly.

use super::backward::BackwardBuffers;
use super::forward::ForwardBuffers;
use super::*;
use crate::tune::{self, GemmWay};
use tessera::Runtime;

/// `a · b` (`m x k` by `k x n`, row-major) in f64 from the f16 roundings of both.
fn product_of_halves(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let half = |x: f32| f64::from(half::f16::from_f32(x).to_f32());
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for l in 0..k {
            let x = half(a[i * k + l]);
            for j in 0..n {
                out[i * n + j] += x * half(b[l * n + j]);
            }
        }
    }
    out
}

fn assert_close(name: &str, got: &[f32], want: &[f64]) {
    let scale = want.iter().fold(1e-30f64, |s, w| s.max(w.abs()));
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        // The products are exact in f32 and the sums f32: far below f16's rounding.
        assert!(
            (f64::from(g) - w).abs() <= 1e-5 * scale,
            "{name}[{i}]: {g} against {w}"
        );
    }
}

fn transposed(v: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|i| v[i % rows * cols + i / rows])
        .collect()
}

/// The deep, wide and 512-invocation tensor-core blockings run only where the tuner picks
/// them, so no test through the public API reaches them with autotuning off: run them
/// directly, forward
/// through an activation (over operands bound as vectors where `k` and `n` are multiples
/// of 4, as scalars otherwise; whole, and over a sum long enough to run in two slices)
/// and backward, on shapes ragged in every dimension and with tail steps, against f64
/// products of the operands rounded to f16; then the forward through every activation
/// (each epilogue chooses it once for all its outputs). Skipped on a device without
/// tensor cores (lavapipe).
#[test]
fn tuned_tensor_core_blockings_match_the_reference() {
    let rt = Runtime::new().unwrap();
    let gemm = match Gemm::with_precision(&rt, Precision::TensorCoreF16) {
        Err(tessera::Error::MissingFeature { .. }) => return,
        built => built.unwrap(),
    };
    let fragments = gemm.passes.tensor_cores().unwrap();
    assert!(fragments.forward.deep.is_some() && fragments.operands.deep.is_some());
    assert!(fragments.wide.is_some());
    assert!(fragments.forward.many.is_some() && fragments.operands.many.is_some());
    let on = |tile, split| GemmWay::TensorCores { tile, split };
    let (deep, wide, many) = (
        on(tune::GemmTile::Deep, false),
        on(tune::GemmTile::Wide, false),
        on(tune::GemmTile::MANY, false),
    );
    let vectors = "gemm_forward_fragments_vec4_f32_depth64_block128_invocations256";
    let scalars = "gemm_forward_fragments_f32_depth64_block128_invocations256";
    let backward = "d_operands_fragments_depth64_block128_invocations256";
    let reduce = "gemm_forward_fragments_reduce";
    // The wide blocking: its own forward over vectors, the large blocking's otherwise
    // and for the backward.
    let wide_vectors = "gemm_forward_fragments_wide_depth32_block256";
    let large_scalars = "gemm_forward_fragments_f32_depth32_block128_invocations256";
    let large_backward = "d_operands_fragments_depth32_block128_invocations256";
    // The large blocks in 512 invocations.
    let many_vectors = "gemm_forward_fragments_vec4_f32_depth32_block128_invocations512";
    let many_scalars = "gemm_forward_fragments_f32_depth32_block128_invocations512";
    let many_backward = "d_operands_fragments_depth32_block128_invocations512";
    let cases: [(usize, GemmWay, &[&str]); 9] = [
        (300, deep, &[vectors, backward]),
        (301, deep, &[scalars, backward]),
        (
            1300,
            on(tune::GemmTile::Deep, true),
            &[vectors, reduce, backward],
        ),
        (
            1301,
            on(tune::GemmTile::Deep, true),
            &[scalars, reduce, backward],
        ),
        (300, wide, &[wide_vectors, large_backward]),
        (301, wide, &[large_scalars, large_backward]),
        (300, many, &[many_vectors, many_backward]),
        (301, many, &[many_scalars, many_backward]),
        (
            1300,
            on(tune::GemmTile::MANY, true),
            &[many_vectors, reduce, many_backward],
        ),
    ];
    for (k, way, entry_points) in cases {
        check_deep(&rt, &gemm, k, way, entry_points);
    }
}

/// The deep blocking's forward and backward on M, N = 200, 136 summed over `k`, run
/// `way`, through the kernels `entry_points` (the deep instances of those that have
/// them).
fn check_deep(rt: &Runtime, gemm: &Gemm, k: usize, way: GemmWay, entry_points: &[&str]) {
    let (m, n) = (200usize, 136usize);
    let wave =
        |len: usize, f: f32| -> Vec<f32> { (0..len).map(|i| (i as f32 * f).sin() * 0.5).collect() };
    let (av, bv, biasv, gv) = (
        wave(m * k, 0.37),
        wave(k * n, 0.11),
        wave(n, 0.7),
        wave(m * n, 0.23),
    );
    let up = |v: &[f32]| rt.upload(v).unwrap();
    let (a, b, bias, grad_y) = (up(&av), up(&bv), up(&biasv), up(&gv));
    let zeros = |len: usize| rt.zeros::<f32>(len).unwrap();
    let (mut pre, mut y, mut grad_pre) = (zeros(m * n), zeros(m * n), zeros(m * n));
    let (mut grad_a, mut grad_b, mut grad_bias) = (zeros(m * k), zeros(k * n), zeros(n));
    let shape = GemmShape {
        m: m as u32,
        n: n as u32,
        k: k as u32,
    };
    // The forward through an activation (each kernel's epilogue applies it), the
    // backward without one (so its reference needs no derivative).
    let forward = params(shape, Activation::Relu).unwrap();
    let p = params(shape, Activation::None).unwrap();
    let mut batch = rt.batch();
    let io = ForwardBuffers {
        a: &a,
        b: &b,
        bias: &bias,
        pre: &mut pre,
        y: &mut y,
    };
    gemm.forward_way(&mut batch, way, forward, io).unwrap();
    let grads = BackwardBuffers {
        a: &a,
        b: &b,
        pre: &pre,
        grad_y: &grad_y,
        grad_pre: &mut grad_pre,
        grad_a: &mut grad_a,
        grad_b: &mut grad_b,
        grad_bias: &mut grad_bias,
    };
    gemm.backward_way(&mut batch, way, p, grads).unwrap();
    let ran: Vec<String> = batch
        .submit_timed()
        .unwrap()
        .dispatches
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    for entry in entry_points {
        assert!(ran.iter().any(|r| r == entry), "{ran:?}");
    }
    let mut want_pre = product_of_halves(&av, &bv, m, n, k);
    for (i, w) in want_pre.iter_mut().enumerate() {
        *w += f64::from(biasv[i % n]);
    }
    assert_close("pre", &pre.read(rt).unwrap(), &want_pre);
    let want_y: Vec<f64> = want_pre.iter().map(|w| w.max(0.0)).collect();
    assert_close("y", &y.read(rt).unwrap(), &want_y);
    let bt = transposed(&bv, k, n);
    let want_a = product_of_halves(&gv, &bt, m, k, n);
    assert_close("grad_a", &grad_a.read(rt).unwrap(), &want_a);
    let at = transposed(&av, m, k);
    let want_b = product_of_halves(&at, &gv, k, n, m);
    assert_close("grad_b", &grad_b.read(rt).unwrap(), &want_b);

    let mut io = ForwardBuffers {
        a: &a,
        b: &b,
        bias: &bias,
        pre: &mut pre,
        y: &mut y,
    };
    check_activations(rt, gemm, way, shape, &mut io, &want_pre);
}

/// The forward of `shape` run `way` through every activation: `pre` as `want_pre`, `y`
/// the activation of the `pre` the kernel wrote (in f64 from GELU's tanh form, which
/// the kernels compute as `x * sigmoid(2u)`).
fn check_activations(
    rt: &Runtime,
    gemm: &Gemm,
    way: GemmWay,
    shape: GemmShape,
    io: &mut ForwardBuffers<'_>,
    want_pre: &[f64],
) {
    for activation in Activation::ALL {
        let forward = params(shape, activation).unwrap();
        let mut batch = rt.batch();
        let buffers = ForwardBuffers {
            pre: &mut *io.pre,
            y: &mut *io.y,
            ..*io
        };
        gemm.forward_way(&mut batch, way, forward, buffers).unwrap();
        batch.submit().unwrap();
        let got_pre = io.pre.read(rt).unwrap();
        assert_close(&format!("pre ({activation:?})"), &got_pre, want_pre);
        let want_y: Vec<f64> = got_pre
            .iter()
            .map(|&x| activated(activation, f64::from(x)))
            .collect();
        let got_y = io.y.read(rt).unwrap();
        for (i, (&g, &w)) in got_y.iter().zip(&want_y).enumerate() {
            assert!(
                (f64::from(g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "y ({activation:?}) [{i}]: {g} against {w}"
            );
        }
    }
}

/// `activation` of `x`, as `Activation` documents it.
fn activated(activation: Activation, x: f64) -> f64 {
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    match activation {
        Activation::None => x,
        Activation::Relu => x.max(0.0),
        Activation::Gelu => {
            let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            0.5 * x * (1.0 + u.tanh())
        }
        Activation::Silu => x * sigmoid(x),
        Activation::Sigmoid => sigmoid(x),
        Activation::Tanh => x.tanh(),
    }
}
