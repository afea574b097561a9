//! The example's network end to end: its gradients against finite differences of its loss,
//! and its loss falling in training.

#[path = "../examples/common/buffers.rs"]
mod buffers;
#[path = "../examples/train/data.rs"]
mod data;
#[path = "../examples/train/net.rs"]
mod net;

#[path = "../../tests/common/mod.rs"]
mod common;

use data::{Dataset, CLASSES};
use net::{Net, NetConfig};
use tessera_nn::{Precision, SgdConfig};

const SGD: SgdConfig = SgdConfig {
    learning_rate: 0.02,
    momentum: 0.9,
    weight_decay: 0.0,
};

/// The network's mean loss in f64: conv 3x3 pad 1 + ReLU, conv 3x3 stride 2 pad 1 + ReLU,
/// linear, softmax cross-entropy. Written from the definitions, independently of the kernels.
fn loss(config: &NetConfig, params: &[Vec<f64>], images: &[f32], labels: &[u32]) -> f64 {
    let images: Vec<f64> = images.iter().map(|&v| f64::from(v)).collect();
    let [c1, c2] = config.channels.map(|c| c as usize);
    let (n, size) = (config.batch as usize, config.image as usize);
    let first = ConvRelu {
        batch: n,
        cin: 1,
        size,
        cout: c1,
        stride: 1,
    };
    let (y1, s1) = first.apply(&images, &params[0], &params[1]);
    let second = ConvRelu {
        batch: n,
        cin: c1,
        size: s1,
        cout: c2,
        stride: 2,
    };
    let (y2, s2) = second.apply(&y1, &params[2], &params[3]);
    let features = c2 * s2 * s2;
    let classes = config.classes as usize;
    let mut total = 0.0;
    for (i, &label) in labels.iter().enumerate() {
        let logits: Vec<f64> = (0..classes)
            .map(|c| {
                params[5][c]
                    + (0..features)
                        .map(|f| y2[i * features + f] * params[4][f * classes + c])
                        .sum::<f64>()
            })
            .collect();
        let top = logits.iter().cloned().fold(f64::MIN, f64::max);
        let sum: f64 = logits.iter().map(|l| (l - top).exp()).sum();
        total += sum.ln() + top - logits[label as usize];
    }
    total / labels.len() as f64
}

/// A 3x3 convolution with padding 1, then ReLU: `batch` square images of `size` pixels a
/// side and `cin` channels to `cout` channels, with `stride`.
struct ConvRelu {
    batch: usize,
    cin: usize,
    size: usize,
    cout: usize,
    stride: usize,
}

impl ConvRelu {
    /// The convolution of `x` by the filter `w` and bias `b`, then ReLU; returns the output
    /// and its (square) size.
    fn apply(&self, x: &[f64], w: &[f64], b: &[f64]) -> (Vec<f64>, usize) {
        let ConvRelu {
            batch,
            cin,
            size,
            cout,
            stride,
        } = *self;
        let out = (size + 2 - 3) / stride + 1;
        let mut y = vec![0.0; batch * cout * out * out];
        for n in 0..batch {
            for co in 0..cout {
                for oh in 0..out {
                    for ow in 0..out {
                        let mut acc = b[co];
                        for ci in 0..cin {
                            for kh in 0..3 {
                                for kw in 0..3 {
                                    let ih = (oh * stride + kh) as isize - 1;
                                    let iw = (ow * stride + kw) as isize - 1;
                                    if ih < 0
                                        || iw < 0
                                        || ih >= size as isize
                                        || iw >= size as isize
                                    {
                                        continue;
                                    }
                                    let xi =
                                        ((n * cin + ci) * size + ih as usize) * size + iw as usize;
                                    acc += x[xi] * w[((co * cin + ci) * 3 + kh) * 3 + kw];
                                }
                            }
                        }
                        y[((n * cout + co) * out + oh) * out + ow] = acc.max(0.0);
                    }
                }
            }
        }
        (y, out)
    }
}

/// Every parameter's gradient from the backward kernels against the central difference of
/// the f64 loss (step 1e-5). Tolerance: 1e-3 relative to the larger magnitude or 1e-2.
#[test]
fn network_gradients_match_finite_differences() {
    let rt = common::runtime();
    let config = NetConfig {
        batch: 3,
        image: 6,
        channels: [2, 3],
        classes: CLASSES,
        precision: Precision::F32,
    };
    let mut net = Net::new(&rt, config, SGD, 11).unwrap();
    let data = Dataset::stripes(config.batch, config.image, 5);
    let (images, labels) = data.batch(0, config.batch);

    net.load(&rt, &images, &labels).unwrap();
    let mut batch = rt.batch();
    net.record_forward(&mut batch).unwrap();
    net.record_backward(&mut batch).unwrap();
    batch.submit().unwrap();

    let to_f64 = |b: &tessera::GpuBuffer<f32>| -> Vec<f64> {
        b.read(&rt).unwrap().into_iter().map(f64::from).collect()
    };
    let named = net.parameters();
    let names: Vec<String> = named.iter().map(|(name, _)| name.clone()).collect();
    let mut params: Vec<Vec<f64>> = named.iter().map(|(_, p)| to_f64(p.value)).collect();
    let grads: Vec<Vec<f64>> = named.iter().map(|(_, p)| to_f64(p.grad)).collect();
    drop(named);

    let gpu_loss = f64::from(net.mean_loss(&rt).unwrap());
    let cpu_loss = loss(&config, &params, &images, &labels);
    assert!(
        (gpu_loss - cpu_loss).abs() < 1e-4 * cpu_loss.max(1.0),
        "loss: GPU {gpu_loss}, f64 reference {cpu_loss}"
    );

    let h = 1e-5;
    let mut checked = 0;
    for tensor in 0..params.len() {
        for i in 0..params[tensor].len() {
            let original = params[tensor][i];
            params[tensor][i] = original + h;
            let up = loss(&config, &params, &images, &labels);
            params[tensor][i] = original - h;
            let down = loss(&config, &params, &images, &labels);
            params[tensor][i] = original;
            let numeric = (up - down) / (2.0 * h);
            let analytic = grads[tensor][i];
            let scale = numeric.abs().max(analytic.abs()).max(1e-2);
            assert!(
                (numeric - analytic).abs() <= 1e-3 * scale,
                "{}[{i}]: backward gives {analytic}, finite differences {numeric}",
                names[tensor]
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 18 + 2 + 54 + 3 + 27 * 4 + 4);
}

/// Thirty SGD steps at the example's default size: the loss must fall to under half of where
/// it started, and held-out images must be classified better than chance (25%) by far.
#[test]
fn training_loss_falls() {
    let rt = common::runtime();
    let config = NetConfig {
        batch: 32,
        image: 12,
        channels: [8, 16],
        classes: CLASSES,
        precision: Precision::F32,
    };
    let mut net = Net::new(&rt, config, SGD, 3).unwrap();
    let train = Dataset::stripes(512, config.image, 1);
    let mut losses = Vec::new();
    for step in 0..30 {
        let (images, labels) = train.batch(step * config.batch, config.batch);
        losses.push(net.train_step(&rt, &images, &labels, false).unwrap().0);
    }
    let first = losses[0];
    let last: f32 = losses[25..].iter().sum::<f32>() / 5.0;
    assert!(
        last < 0.5 * first,
        "the loss went from {first} to {last}: {losses:?}"
    );

    let test = Dataset::stripes(64, config.image, 2);
    let mut correct = 0;
    for i in 0..2 {
        let (images, labels) = test.batch(i * config.batch, config.batch);
        correct += net.evaluate(&rt, &images, &labels).unwrap().1;
    }
    assert!(correct >= 48, "{correct} of 64 held-out images right");
}
