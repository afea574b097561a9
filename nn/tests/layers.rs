//! The layers `Linear` and `Conv2d`: against an f64 reference (Linear) and against the op
//! they wrap run on the same parameters (Conv2d, whose op `tests/conv.rs` checks against
//! its reference); buffers that follow the batch size; initialization; errors.
//! Tolerance for the reference: 1e-4 relative to the larger magnitude or 1.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, rng, runtime, values};
use tessera::{GpuBuffer, Runtime};
use tessera_nn::{
    Activation, Conv2d, Conv2dBackward, Conv2dConfig, Conv2dForward, Convolution, Init, Linear,
    LinearConfig, Padding,
};

fn read(rt: &Runtime, buffer: &GpuBuffer<f32>) -> Vec<f32> {
    buffer.read(rt).unwrap()
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Forward and backward of a ReLU layer and one without activation, each at two row counts
/// (the second smaller, so the layer's buffers are replaced), against the definition in f64.
#[test]
fn linear_matches_reference_at_every_row_count() {
    let rt = runtime();
    let mut rng = rng(41);
    for activation in [Activation::Relu, Activation::None] {
        let (inputs, outputs) = (5usize, 3usize);
        let config = LinearConfig::new(inputs as u32, outputs as u32)
            .activation(activation)
            .init(Init::Uniform { seed: 2 });
        let mut layer = Linear::new(&rt, config).unwrap();
        let w = read(&rt, layer.weight());
        let b = read(&rt, layer.bias());
        for rows in [4usize, 2] {
            let (xv, gv) = (
                values(&mut rng, rows * inputs),
                values(&mut rng, rows * outputs),
            );
            let (x, grad_y) = (rt.upload(&xv).unwrap(), rt.upload(&gv).unwrap());
            let mut batch = rt.batch();
            layer.forward(&mut batch, &x).unwrap();
            let grad_x = layer.backward(&mut batch, &x, &grad_y).unwrap();
            batch.submit().unwrap();
            let grad_x = read(&rt, grad_x);

            let mut want_y = vec![0.0f32; rows * outputs];
            let mut want_gx = vec![0.0f64; rows * inputs];
            let mut want_gw = vec![0.0f64; inputs * outputs];
            let mut want_gb = vec![0.0f64; outputs];
            for r in 0..rows {
                for o in 0..outputs {
                    let pre = f64::from(b[o])
                        + (0..inputs)
                            .map(|i| f64::from(xv[r * inputs + i]) * f64::from(w[i * outputs + o]))
                            .sum::<f64>();
                    let (y, slope) = match activation {
                        Activation::Relu if pre <= 0.0 => (0.0, 0.0),
                        _ => (pre, 1.0),
                    };
                    want_y[r * outputs + o] = y as f32;
                    let g = f64::from(gv[r * outputs + o]) * slope;
                    want_gb[o] += g;
                    for i in 0..inputs {
                        want_gx[r * inputs + i] += g * f64::from(w[i * outputs + o]);
                        want_gw[i * outputs + o] += f64::from(xv[r * inputs + i]) * g;
                    }
                }
            }
            let f = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
            assert_close(&read(&rt, layer.output().unwrap()), &want_y, 1e-4);
            assert_close(&grad_x, &f(want_gx), 1e-4);
            assert_close(&read(&rt, layer.grad_weight()), &f(want_gw.clone()), 1e-4);
            assert_close(&read(&rt, layer.grad_bias()), &f(want_gb.clone()), 1e-4);

            // Without the input's gradient, the parameters' gradients are the same
            // (overwritten, not added to).
            let mut batch = rt.batch();
            layer.backward_params(&mut batch, &x, &grad_y).unwrap();
            batch.submit().unwrap();
            assert_close(&read(&rt, layer.grad_weight()), &f(want_gw), 1e-4);
            assert_close(&read(&rt, layer.grad_bias()), &f(want_gb), 1e-4);
        }
    }
}

/// The layer runs exactly what its op runs on the same parameters: the same bits, forward
/// and backward, strided and padded, with and without the input's gradient.
#[test]
fn conv2d_layer_runs_its_op() {
    let rt = runtime();
    let mut rng = rng(43);
    let config = Conv2dConfig::new(2, [5, 4], 3, [3, 3])
        .stride([2, 1])
        .padding(Padding::uniform(1))
        .activation(Activation::Tanh)
        .init(Init::Uniform { seed: 5 });
    let mut layer = Conv2d::new(&rt, config).unwrap();
    assert_eq!(layer.output_size(), [3, 4]);
    assert_eq!(layer.output_features(), 3 * 3 * 4);
    let op = Convolution::new(&rt).unwrap();
    for images in [3u32, 1] {
        let shape = config.shape(images);
        let xv = values(&mut rng, shape.input_len());
        let gv = values(&mut rng, shape.output_len().unwrap());
        let (x, grad_y) = (rt.upload(&xv).unwrap(), rt.upload(&gv).unwrap());
        let mut batch = rt.batch();
        layer.forward(&mut batch, &x).unwrap();
        let grad_x = layer.backward(&mut batch, &x, &grad_y).unwrap();
        batch.submit().unwrap();
        let grad_x = bits(&read(&rt, grad_x));

        let out = shape.output_len().unwrap();
        let (mut pre, mut y) = (rt.zeros(out).unwrap(), rt.zeros(out).unwrap());
        let mut want_gx = rt.zeros(shape.input_len()).unwrap();
        let mut want_gw = rt.zeros(shape.weight_len()).unwrap();
        let mut want_gb = rt.zeros(3).unwrap();
        let mut batch = rt.batch();
        let forward = Conv2dForward {
            shape,
            activation: Activation::Tanh,
            x: &x,
            w: layer.weight(),
            bias: layer.bias(),
            pre: Some(&mut pre),
            y: &mut y,
        };
        op.forward(&mut batch, forward).unwrap();
        let backward = Conv2dBackward {
            shape,
            activation: Activation::Tanh,
            x: &x,
            w: layer.weight(),
            pre: Some(&pre),
            grad_y: &grad_y,
            grad_x: Some(&mut want_gx),
            grad_w: &mut want_gw,
            grad_bias: &mut want_gb,
        };
        op.backward(&mut batch, backward).unwrap();
        batch.submit().unwrap();
        let context = format!("{images} images");
        let output = read(&rt, layer.output().unwrap());
        assert_eq!(bits(&output), bits(&read(&rt, &y)), "{context}");
        assert_eq!(grad_x, bits(&read(&rt, &want_gx)), "{context}");
        let grad_w = bits(&read(&rt, layer.grad_weight()));
        assert_eq!(grad_w, bits(&read(&rt, &want_gw)), "{context}");
        let grad_b = bits(&read(&rt, layer.grad_bias()));
        assert_eq!(grad_b, bits(&read(&rt, &want_gb)), "{context}");

        let mut batch = rt.batch();
        layer.backward_params(&mut batch, &x, &grad_y).unwrap();
        batch.submit().unwrap();
        assert_eq!(bits(&read(&rt, layer.grad_weight())), grad_w, "{context}");
    }
}

#[test]
fn initializations_are_seeded_and_bounded() {
    let rt = runtime();
    let linear = |init| {
        let layer = Linear::new(&rt, LinearConfig::new(100, 20).init(init)).unwrap();
        (read(&rt, layer.weight()), read(&rt, layer.bias()))
    };
    let (he, he_bias) = linear(Init::HeUniform { seed: 1 });
    let bound = (6.0f32 / 100.0).sqrt();
    assert!(he.iter().all(|w| w.abs() < bound));
    assert!(
        he.iter().any(|w| w.abs() > 0.9 * bound),
        "the whole range is used"
    );
    assert!(he_bias.iter().all(|&b| b == 0.0));
    assert_eq!(bits(&linear(Init::HeUniform { seed: 1 }).0), bits(&he));
    assert_ne!(bits(&linear(Init::HeUniform { seed: 2 }).0), bits(&he));

    let (uniform, uniform_bias) = linear(Init::default());
    assert!(uniform.iter().chain(&uniform_bias).all(|w| w.abs() < 0.1));
    assert!(uniform_bias.iter().any(|&b| b != 0.0));

    // A filter's fan-in is its input channels times its taps.
    let conv = Conv2dConfig::new(4, [6, 6], 2, [3, 3]).init(Init::HeUniform { seed: 3 });
    let layer = Conv2d::new(&rt, conv).unwrap();
    let filter = read(&rt, layer.weight());
    assert_eq!(filter.len(), 2 * 4 * 9);
    let bound = (6.0f32 / 36.0).sqrt();
    assert!(filter.iter().all(|w| w.abs() < bound));
    assert!(filter.iter().any(|w| w.abs() > 0.8 * bound));
}

#[test]
fn layers_say_what_is_wrong_with_their_input() {
    let rt = runtime();
    let message = |error: tessera::Error| error.to_string();
    let zero = Linear::new(&rt, LinearConfig::new(0, 3)).unwrap_err();
    assert_eq!(
        message(zero),
        "linear: in_features and out_features must be at least 1, got 0 and 3"
    );
    let mut layer = Linear::new(&rt, LinearConfig::new(5, 3)).unwrap();
    let ragged = rt.zeros::<f32>(7).unwrap();
    let error = layer.forward(&mut rt.batch(), &ragged).unwrap_err();
    assert_eq!(
        message(error),
        "linear: the input has 7 values, which is not a whole number of in_features (5 values)"
    );
    assert_eq!(
        message(layer.output().unwrap_err()),
        "linear: no forward pass has run yet"
    );
    let x = rt.zeros::<f32>(10).unwrap();
    let grad_y = rt.zeros::<f32>(6).unwrap();
    let error = layer.backward(&mut rt.batch(), &x, &grad_y).unwrap_err();
    assert_eq!(
        message(error),
        "linear: backward needs a forward pass of the same input first"
    );

    let too_large = Conv2dConfig::new(1, [2, 2], 1, [3, 3]);
    let error = Conv2d::new(&rt, too_large).unwrap_err();
    assert!(message(error).contains("the filter spans 3 rows"));
    let mut conv = Conv2d::new(&rt, Conv2dConfig::new(2, [3, 3], 1, [1, 1])).unwrap();
    let error = conv.forward(&mut rt.batch(), &ragged).unwrap_err();
    assert_eq!(
        message(error),
        "conv2d: the input has 7 values, which is not a whole number of one input image (18 \
         values)"
    );
}
