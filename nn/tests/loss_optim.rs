//! Softmax cross-entropy (rows of every width and length), SGD with momentum and Adam (no
//! decay, L2, decoupled: AdamW) and gradient clipping by the global norm against f64 CPU
//! references.
//! Tolerance: 1e-5 relative to the larger magnitude or 1 (a handful of f32 operations each).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, property_cases, property_seed, rng, runtime, values, RngExt};
use tessera::{Batch, Error, GpuBuffer};
use tessera_nn::{
    Adam, AdamConfig, AdamState, GradClip, LossBackward, LossForward, LossShape, Sgd, SgdConfig,
    SoftmaxCrossEntropy, WeightDecay,
};

#[test]
fn softmax_cross_entropy_matches_reference() {
    let rt = runtime();
    let loss = SoftmaxCrossEntropy::new(&rt).unwrap();
    // One class, one row, many rows, and large logits (stability); rows read as vectors
    // (classes a multiple of 4) and as scalars, in each segment of the row kernels (1000
    // classes are 250 vectors, 2000 are 500, 701 are scalars for the middle one) and longer
    // (looped: a vector segment holds 16,384 classes, a scalar one 4,096; GPT-2's vocabulary
    // of 50,257 takes 13); then random shapes (`TESSERA_PROPERTY_CASES` of them, 4 by default).
    let fixed = [
        (1, 1, 1.0),
        (1, 5, 1.0),
        (70, 3, 4.0),
        (9, 10, 80.0),
        (3, 1000, 4.0),
        (2, 701, 1.0),
        (2, 2000, 4.0),
        (2, 16_388, 4.0),
        (2, 4_101, 1.0),
        (1, 50_257, 4.0),
    ];
    let mut shapes = rng(property_seed(3));
    let random = (0..property_cases(4)).map(|_| {
        let spread = [0.5, 4.0, 80.0][shapes.random_range(0..=2) as usize];
        (
            shapes.random_range(1..=200),
            shapes.random_range(1..=70),
            spread,
        )
    });
    let mut rng = rng(3);
    for (rows, classes, spread) in fixed.into_iter().chain(random.collect::<Vec<_>>()) {
        let logits: Vec<f32> = values(&mut rng, (rows * classes) as usize)
            .into_iter()
            .map(|v| v * spread)
            .collect();
        let labels: Vec<u32> = (0..rows).map(|r| (r * 7 + 1) % classes).collect();

        let mut want_probs = Vec::new();
        let mut want_losses = Vec::new();
        let mut want_grad = Vec::new();
        for (row, &label) in logits.chunks(classes as usize).zip(&labels) {
            let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
            let top = row.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|v| (v - top).exp()).sum();
            want_losses.push((sum.ln() + top - row[label as usize]) as f32);
            for (c, v) in row.iter().enumerate() {
                let p = (v - top).exp() / sum;
                want_probs.push(p as f32);
                let target = if c == label as usize { 1.0 } else { 0.0 };
                want_grad.push(((p - target) / f64::from(rows)) as f32);
            }
        }

        let (x, y) = (rt.upload(&logits).unwrap(), rt.upload(&labels).unwrap());
        let mut probs = rt.zeros::<f32>(logits.len()).unwrap();
        let mut losses = rt.zeros::<f32>(rows as usize).unwrap();
        let mut grad = rt.zeros::<f32>(logits.len()).unwrap();
        let shape = LossShape { rows, classes };
        let mut batch = rt.batch();
        let args = LossForward {
            shape,
            logits: &x,
            labels: &y,
            probs: &mut probs,
            losses: &mut losses,
        };
        loss.forward(&mut batch, args).unwrap();
        let args = LossBackward {
            shape,
            probs: &probs,
            labels: &y,
            grad_logits: &mut grad,
        };
        loss.backward(&mut batch, args).unwrap();
        // The gradient of 64 times the mean loss (loss scaling).
        let mut scaled = rt.zeros::<f32>(logits.len()).unwrap();
        let args = LossBackward {
            shape,
            probs: &probs,
            labels: &y,
            grad_logits: &mut scaled,
        };
        loss.backward_scaled(&mut batch, args, 64.0).unwrap();
        batch.submit().unwrap();
        let want_scaled: Vec<f32> = want_grad.iter().map(|g| g * 64.0).collect();
        assert_close(&scaled.read(&rt).unwrap(), &want_scaled, 1e-5);
        assert_close(&probs.read(&rt).unwrap(), &want_probs, 1e-5);
        let got_losses = losses.read(&rt).unwrap();
        assert_close(&got_losses, &want_losses, 1e-5);
        assert_close(&grad.read(&rt).unwrap(), &want_grad, 1e-5);
        let mean = want_losses.iter().map(|&l| f64::from(l)).sum::<f64>() / f64::from(rows);
        let got_mean = SoftmaxCrossEntropy::mean(&got_losses).unwrap();
        assert!((f64::from(got_mean) - mean).abs() < 1e-5 * mean.max(1.0));
    }
}

#[test]
fn softmax_cross_entropy_reports_labels_out_of_range() {
    let rt = runtime();
    let loss = SoftmaxCrossEntropy::new(&rt).unwrap();
    let logits = rt.upload(&[0.0f32; 6]).unwrap();
    let labels = rt.upload(&[1u32, 3]).unwrap();
    let (mut probs, mut losses) = (rt.zeros::<f32>(6).unwrap(), rt.zeros::<f32>(2).unwrap());
    let forward =
        |batch: &mut Batch<'_>, rows, probs: &mut GpuBuffer<f32>, losses: &mut GpuBuffer<f32>| {
            let args = LossForward {
                shape: LossShape { rows, classes: 3 },
                logits: &logits,
                labels: &labels,
                probs,
                losses,
            };
            loss.forward(batch, args)
        };
    let mut batch = rt.batch();
    forward(&mut batch, 2, &mut probs, &mut losses).unwrap();
    batch.submit().unwrap();
    let error = SoftmaxCrossEntropy::mean(&losses.read(&rt).unwrap()).unwrap_err();
    assert!(error.to_string().contains("the label of row 1"), "{error}");

    let mut batch = rt.batch();
    let error = forward(&mut batch, 0, &mut probs, &mut losses).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");

    let mut grad = rt.zeros::<f32>(6).unwrap();
    for bad in [0.0, -2.0, f32::INFINITY] {
        let args = LossBackward {
            shape: LossShape {
                rows: 2,
                classes: 3,
            },
            probs: &probs,
            labels: &labels,
            grad_logits: &mut grad,
        };
        let error = loss
            .backward_scaled(&mut rt.batch(), args, bad)
            .unwrap_err();
        assert!(error.to_string().contains("`loss_scale`"), "{error}");
    }
}

#[test]
fn sgd_with_momentum_matches_reference_over_steps() {
    let rt = runtime();
    let config = SgdConfig {
        learning_rate: 0.1,
        momentum: 0.9,
        weight_decay: 0.01,
    };
    let sgd = Sgd::new(&rt, config).unwrap();
    let mut rng = rng(5);
    let len = 300; // past one workgroup of 256
    let mut want_w: Vec<f64> = values(&mut rng, len).into_iter().map(f64::from).collect();
    let mut want_v = vec![0.0f64; len];
    let mut w = rt
        .upload(&want_w.iter().map(|&v| v as f32).collect::<Vec<_>>())
        .unwrap();
    let mut velocity = rt.zeros::<f32>(len).unwrap();
    for _ in 0..3 {
        let g = values(&mut rng, len);
        for i in 0..len {
            let g = f64::from(g[i]) + 0.01 * want_w[i];
            want_v[i] = 0.9 * want_v[i] + g;
            want_w[i] -= 0.1 * want_v[i];
        }
        let grad = rt.upload(&g).unwrap();
        let mut batch = rt.batch();
        sgd.step(&mut batch, &mut w, &grad, &mut velocity).unwrap();
        batch.submit().unwrap();
    }
    let want: Vec<f32> = want_w.iter().map(|&v| v as f32).collect();
    assert_close(&w.read(&rt).unwrap(), &want, 1e-5);

    let short = rt.zeros::<f32>(len - 1).unwrap();
    let mut batch = rt.batch();
    let error = sgd
        .step(&mut batch, &mut w, &short, &mut velocity)
        .unwrap_err();
    assert!(error.to_string().contains("must match"), "{error}");
}

/// Adam with `weight_decay` over four steps against the update written out in `f64`.
fn check_adam(rt: &tessera::Runtime, weight_decay: WeightDecay) {
    let config = AdamConfig {
        learning_rate: 0.01,
        weight_decay,
        ..AdamConfig::default()
    };
    let adam = Adam::new(rt, config).unwrap();
    let mut rng = rng(9);
    let len = 257;
    let mut want_w: Vec<f64> = values(&mut rng, len).into_iter().map(f64::from).collect();
    let (mut m, mut v) = (vec![0.0f64; len], vec![0.0f64; len]);
    let mut w = rt
        .upload(&want_w.iter().map(|&v| v as f32).collect::<Vec<_>>())
        .unwrap();
    let mut state = AdamState::new(rt, len).unwrap();
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8f64);
    let (l2, decoupled) = match weight_decay {
        WeightDecay::None => (0.0, 0.0),
        WeightDecay::L2(decay) => (f64::from(decay), 0.0),
        WeightDecay::Decoupled(decay) => (0.0, f64::from(decay)),
    };
    for t in 1..=4 {
        let g = values(&mut rng, len);
        for i in 0..len {
            let g = f64::from(g[i]) + l2 * want_w[i];
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            let m_hat = m[i] / (1.0 - b1.powi(t));
            let v_hat = v[i] / (1.0 - b2.powi(t));
            want_w[i] *= 1.0 - 0.01 * decoupled;
            want_w[i] -= 0.01 * m_hat / (v_hat.sqrt() + eps);
        }
        let grad = rt.upload(&g).unwrap();
        let mut batch = rt.batch();
        adam.step(&mut batch, &mut w, &grad, &mut state).unwrap();
        batch.submit().unwrap();
    }
    assert_eq!(state.steps(), 4);
    let want: Vec<f32> = want_w.iter().map(|&v| v as f32).collect();
    assert_close(&w.read(rt).unwrap(), &want, 1e-5);
}

#[test]
fn adam_matches_reference_over_steps() {
    let rt = runtime();
    check_adam(&rt, WeightDecay::None);
    check_adam(&rt, WeightDecay::L2(0.1));
    // AdamW; a large decay, so that a missing or doubled shrink shows past the tolerance.
    check_adam(&rt, WeightDecay::Decoupled(0.5));
}

#[test]
fn gradients_clip_to_their_global_norm() {
    let rt = runtime();
    let mut rng = rng(13);
    // Past one workgroup, one element, several workgroups with a tail, and an empty one.
    let lens = [300, 1, 1000, 0];
    // Without a loss scale (`clip`) and with one (`clip_scaled`: the same result from
    // gradients 1024 times as large).
    for (max_norm, loss_scale) in [
        (1.0f32, 1.0f32),
        (1000.0, 1.0),
        (1.0, 1024.0),
        (1000.0, 1024.0),
    ] {
        let clip = GradClip::new(&rt, max_norm).unwrap();
        let grads: Vec<Vec<f32>> = lens.iter().map(|&n| values(&mut rng, n)).collect();
        let squares: f64 = grads.iter().flatten().map(|&x| f64::from(x).powi(2)).sum();
        let want_norm = squares.sqrt();
        let factor = (f64::from(max_norm) / (want_norm + 1e-6)).min(1.0);
        let mut buffers: Vec<GpuBuffer<f32>> = grads
            .iter()
            .map(|g| {
                if g.is_empty() {
                    rt.zeros(0)
                } else {
                    rt.upload(&g.iter().map(|&x| x * loss_scale).collect::<Vec<_>>())
                }
                .unwrap()
            })
            .collect();
        let mut norm = rt.zeros::<f32>(2).unwrap();
        let mut batch = rt.batch();
        let mut refs: Vec<&mut GpuBuffer<f32>> = buffers.iter_mut().collect();
        if loss_scale == 1.0 {
            clip.clip(&mut batch, &mut refs, &mut norm).unwrap();
        } else {
            clip.clip_scaled(&mut batch, &mut refs, &mut norm, loss_scale)
                .unwrap();
        }
        batch.submit().unwrap();
        let want = [want_norm as f32, (factor / f64::from(loss_scale)) as f32];
        assert_close(&norm.read(&rt).unwrap(), &want, 1e-5);
        for (buffer, grad) in buffers.iter().zip(&grads).filter(|(_, g)| !g.is_empty()) {
            let scaled: Vec<f32> = grad
                .iter()
                .map(|&x| (f64::from(x) * factor) as f32)
                .collect();
            assert_close(&buffer.read(&rt).unwrap(), &scaled, 1e-5);
        }
    }

    for bad in [0.0, -1.0, f32::INFINITY, f32::NAN] {
        let error = GradClip::new(&rt, bad).unwrap_err();
        assert!(error.to_string().contains("`max_norm`"), "{error}");
    }
    let clip = GradClip::new(&rt, 1.0).unwrap();
    let (mut grad, mut short) = (rt.zeros::<f32>(4).unwrap(), rt.zeros::<f32>(1).unwrap());
    let error = clip
        .clip(&mut rt.batch(), &mut [&mut grad], &mut short)
        .unwrap_err();
    assert!(error.to_string().contains("`norm` holds 1"), "{error}");
    let mut norm = rt.zeros::<f32>(2).unwrap();
    for bad in [0.0, f32::NAN] {
        let error = clip
            .clip_scaled(&mut rt.batch(), &mut [&mut grad], &mut norm, bad)
            .unwrap_err();
        assert!(error.to_string().contains("`loss_scale`"), "{error}");
    }
}
