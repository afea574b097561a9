//! `Attention`'s forward against attention computed in `f64` on the CPU: causal or not, both
//! head-dimension instances and dimensions padded up to them, queries and keys past a block
//! and not multiples of it, fewer keys than queries and more, grouped and multi-query heads,
//! a scale other than the default; and its refusals.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, rng, runtime, values};
use tessera::{Error, Runtime};
use tessera_nn::{Attention, AttentionForward, AttentionMask, AttentionShape};

/// The output and the log-sum-exp of `softmax(scale * q kᵀ + mask) v`, by definition.
fn reference(
    s: AttentionShape,
    mask: AttentionMask,
    scale: f32,
    q: &[f32],
    k: &[f32],
    v: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (queries, keys, d) = (s.queries as usize, s.keys as usize, s.head_dim as usize);
    let group = (s.heads / s.kv_heads) as usize;
    let mut out = Vec::new();
    let mut lse = Vec::new();
    for head in 0..(s.batch * s.heads) as usize {
        let kv = head / group;
        for i in 0..queries {
            let row = &q[(head * queries + i) * d..][..d];
            let seen = match mask {
                AttentionMask::None => keys,
                AttentionMask::Causal => keys.min(i + 1),
            };
            let scores: Vec<f64> = (0..seen)
                .map(|j| {
                    let key = &k[(kv * keys + j) * d..][..d];
                    let dot: f64 = row
                        .iter()
                        .zip(key)
                        .map(|(&a, &b)| a as f64 * b as f64)
                        .sum();
                    dot * scale as f64
                })
                .collect();
            let max = scores.iter().copied().fold(f64::MIN, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let sum: f64 = weights.iter().sum();
            for c in 0..d {
                let acc: f64 = (0..seen)
                    .map(|j| weights[j] * v[(kv * keys + j) * d + c] as f64)
                    .sum();
                out.push((acc / sum) as f32);
            }
            lse.push((max + sum.ln()) as f32);
        }
    }
    (out, lse)
}

/// Runs the forward on random data and compares it with the reference.
fn check(
    rt: &Runtime,
    attention: &Attention,
    shape: AttentionShape,
    mask: AttentionMask,
    scale: f32,
    seed: u64,
) {
    let mut rng = rng(seed);
    let s = shape;
    let q_len = (s.batch * s.heads * s.queries * s.head_dim) as usize;
    let kv_len = (s.batch * s.kv_heads * s.keys * s.head_dim) as usize;
    // Scores of a few units, so that the softmax is neither flat nor one-hot.
    let scaled = |v: Vec<f32>| v.into_iter().map(|x| 3.0 * x).collect::<Vec<_>>();
    let (qv, kv, vv) = (
        scaled(values(&mut rng, q_len)),
        scaled(values(&mut rng, kv_len)),
        values(&mut rng, kv_len),
    );
    let (want_out, want_lse) = reference(s, mask, scale, &qv, &kv, &vv);
    let (q, k, v) = (
        rt.upload(&qv).unwrap(),
        rt.upload(&kv).unwrap(),
        rt.upload(&vv).unwrap(),
    );
    let mut out = rt.zeros::<f32>(q_len).unwrap();
    let mut lse = rt
        .zeros::<f32>((s.batch * s.heads * s.queries) as usize)
        .unwrap();
    let mut batch = rt.batch();
    let args = AttentionForward {
        shape,
        mask,
        scale,
        q: &q,
        k: &k,
        v: &v,
        out: &mut out,
        lse: &mut lse,
    };
    attention.forward(&mut batch, args).unwrap();
    batch.submit().unwrap();
    let context = format!("{shape:?}, {mask:?}, scale {scale}");
    for (name, got, want) in [
        ("out", out.read(rt).unwrap(), want_out),
        ("lse", lse.read(rt).unwrap(), want_lse),
    ] {
        if std::panic::catch_unwind(|| assert_close(&got, &want, 1e-4)).is_err() {
            panic!("{name} differs for {context}");
        }
    }
}

fn shape(
    batch: u32,
    heads: u32,
    kv_heads: u32,
    queries: u32,
    keys: u32,
    head_dim: u32,
) -> AttentionShape {
    AttentionShape {
        batch,
        heads,
        kv_heads,
        queries,
        keys,
        head_dim,
    }
}

#[test]
fn the_forward_matches_attention_in_f64() {
    let rt = runtime();
    let attention = Attention::new(&rt).unwrap();
    let cases = [
        // Both instances exactly, past one block of queries (64) and of keys (32, 16).
        shape(2, 2, 2, 70, 70, 64),
        shape(1, 2, 2, 37, 37, 128),
        // Head dimensions padded up to an instance, and the smallest.
        shape(1, 1, 1, 20, 33, 40),
        shape(1, 2, 2, 9, 17, 100),
        shape(1, 1, 1, 5, 3, 1),
        // Fewer keys than queries, more keys, one key.
        shape(1, 2, 2, 80, 19, 64),
        shape(1, 1, 1, 12, 150, 32),
        shape(2, 1, 1, 3, 1, 16),
        // Grouped queries (two query heads a key head) and multi-query (one key head).
        shape(2, 4, 2, 21, 45, 64),
        shape(1, 3, 1, 66, 40, 24),
    ];
    for (i, s) in cases.into_iter().enumerate() {
        for mask in [AttentionMask::None, AttentionMask::Causal] {
            check(&rt, &attention, s, mask, s.default_scale(), i as u64);
        }
    }
    // A scale other than the default.
    check(
        &rt,
        &attention,
        shape(1, 2, 1, 33, 50, 48),
        AttentionMask::Causal,
        0.7,
        99,
    );
}

#[test]
fn the_forward_refuses_bad_shapes_saying_why() {
    let rt = runtime();
    let attention = Attention::new(&rt).unwrap();
    let buffer = |n: usize| rt.zeros::<f32>(n).unwrap();
    let refusal = |s: AttentionShape, scale: f32, q_len: usize| {
        let (q, k, v) = (buffer(q_len), buffer(4096), buffer(4096));
        let (mut out, mut lse) = (buffer(4096), buffer(4096));
        let mut batch = rt.batch();
        let args = AttentionForward {
            shape: s,
            mask: AttentionMask::None,
            scale,
            q: &q,
            k: &k,
            v: &v,
            out: &mut out,
            lse: &mut lse,
        };
        match attention.forward(&mut batch, args) {
            Err(Error::InvalidArgument { operation, problem }) => {
                assert_eq!(operation, "attention forward");
                problem
            }
            other => panic!("{s:?} was not refused: {other:?}"),
        }
    };
    let problem = refusal(shape(1, 3, 2, 4, 4, 8), 1.0, 4096);
    assert!(problem.contains("divides `heads`"), "{problem}");
    let problem = refusal(shape(1, 1, 1, 0, 4, 8), 1.0, 4096);
    assert!(problem.contains("`queries` is 0"), "{problem}");
    let problem = refusal(shape(1, 1, 1, 4, 4, 129), 1.0, 4096);
    assert!(
        problem.contains("largest the kernels hold, 128"),
        "{problem}"
    );
    let problem = refusal(shape(1, 1, 1, 4, 4, 8), f32::NAN, 4096);
    assert!(problem.contains("finite"), "{problem}");
    let problem = refusal(shape(1, 2, 1, 4, 4, 8), 1.0, 63);
    assert!(
        problem.contains("`q` holds 63 elements") && problem.contains("at least 64"),
        "{problem}"
    );
}
