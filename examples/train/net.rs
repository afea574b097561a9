//! The network the example trains, every step in tessera kernels:
//! conv 3x3 + ReLU, conv 3x3 stride 2 + ReLU, flatten, linear, softmax cross-entropy, and an
//! SGD-with-momentum update of all six parameter tensors.

use rand::RngExt;
use tessera::nn::{
    Activation, Conv2d, Conv2dGrads, Conv2dShape, Gemm, GemmGrads, GemmShape, Padding, Sgd,
    SgdConfig, SoftmaxCrossEntropy,
};
use tessera::{Batch, GpuBuffer, Result, Runtime, Timing};

use crate::data::rng;

/// The network's sizes.
#[derive(Clone, Copy, Debug)]
pub struct NetConfig {
    /// Images per step.
    pub batch: u32,
    /// Height and width of the (single-channel) input images.
    pub image: u32,
    /// Output channels of the two convolutions.
    pub channels: [u32; 2],
    /// Classes the linear layer scores.
    pub classes: u32,
}

/// One tensor per parameter of the network, in [`Tensors::NAMES`] order.
pub struct Tensors {
    pub conv1_w: GpuBuffer<f32>,
    pub conv1_b: GpuBuffer<f32>,
    pub conv2_w: GpuBuffer<f32>,
    pub conv2_b: GpuBuffer<f32>,
    pub linear_w: GpuBuffer<f32>,
    pub linear_b: GpuBuffer<f32>,
}

impl Tensors {
    pub const NAMES: [&'static str; 6] = [
        "conv1.weight",
        "conv1.bias",
        "conv2.weight",
        "conv2.bias",
        "linear.weight",
        "linear.bias",
    ];

    fn from_fn(mut make: impl FnMut(usize) -> Result<GpuBuffer<f32>>) -> Result<Self> {
        Ok(Tensors {
            conv1_w: make(0)?,
            conv1_b: make(1)?,
            conv2_w: make(2)?,
            conv2_b: make(3)?,
            linear_w: make(4)?,
            linear_b: make(5)?,
        })
    }

    pub fn all(&self) -> [&GpuBuffer<f32>; 6] {
        [
            &self.conv1_w,
            &self.conv1_b,
            &self.conv2_w,
            &self.conv2_b,
            &self.linear_w,
            &self.linear_b,
        ]
    }

    pub fn all_mut(&mut self) -> [&mut GpuBuffer<f32>; 6] {
        [
            &mut self.conv1_w,
            &mut self.conv1_b,
            &mut self.conv2_w,
            &mut self.conv2_b,
            &mut self.linear_w,
            &mut self.linear_b,
        ]
    }
}

/// The ops, built once.
struct Ops {
    conv: Conv2d,
    linear: Gemm,
    loss: SoftmaxCrossEntropy,
    sgd: Sgd,
}

/// What a forward pass keeps for the backward pass, and the backward pass's scratch.
struct Activations {
    pre1: GpuBuffer<f32>,
    y1: GpuBuffer<f32>,
    pre2: GpuBuffer<f32>,
    y2: GpuBuffer<f32>,
    pre3: GpuBuffer<f32>,
    logits: GpuBuffer<f32>,
    probs: GpuBuffer<f32>,
    losses: GpuBuffer<f32>,
    grad_logits: GpuBuffer<f32>,
    grad_pre3: GpuBuffer<f32>,
    grad_y2: GpuBuffer<f32>,
    grad_pre2: GpuBuffer<f32>,
    grad_y1: GpuBuffer<f32>,
    grad_pre1: GpuBuffer<f32>,
}

/// The network with its parameters, gradients, optimizer state and buffers on the GPU.
pub struct Net {
    pub config: NetConfig,
    pub params: Tensors,
    /// The shape of each parameter tensor, in [`Tensors::NAMES`] order (row-major).
    // Read by checkpoint.rs; tests/train.rs includes this file without it.
    #[allow(dead_code)]
    pub shapes: [Vec<usize>; 6],
    pub grads: Tensors,
    velocity: Tensors,
    ops: Ops,
    conv1: Conv2dShape,
    conv2: Conv2dShape,
    linear: GemmShape,
    x: GpuBuffer<f32>,
    labels: GpuBuffer<u32>,
    act: Activations,
}

impl Net {
    /// A network with He-uniform weights drawn from `seed` and zero biases.
    pub fn new(rt: &Runtime, config: NetConfig, sgd: SgdConfig, seed: u64) -> Result<Self> {
        let NetConfig {
            batch,
            image,
            channels: [c1, c2],
            classes,
        } = config;
        let conv1 =
            Conv2dShape::new(batch, 1, [image, image], c1, [3, 3]).padding(Padding::uniform(1));
        let [h1, w1] = conv1.output()?;
        let conv2 = Conv2dShape::new(batch, c1, [h1, w1], c2, [3, 3])
            .stride([2, 2])
            .padding(Padding::uniform(1));
        let [h2, w2] = conv2.output()?;
        let features = c2 * h2 * w2;
        let linear = GemmShape {
            m: batch,
            n: classes,
            k: features,
        };

        let sizes = [
            conv1.weight_len(),
            c1 as usize,
            conv2.weight_len(),
            c2 as usize,
            (features * classes) as usize,
            classes as usize,
        ];
        let fan_in = [9, 1, 9 * c1, 1, features, 1];
        // Filters are `[out, in, 3, 3]`; the linear layer's weight is the `[k, n]` operand of
        // `logits = features · weight`.
        let shapes = [
            vec![c1 as usize, 1, 3, 3],
            vec![c1 as usize],
            vec![c2 as usize, c1 as usize, 3, 3],
            vec![c2 as usize],
            vec![features as usize, classes as usize],
            vec![classes as usize],
        ];
        let mut rng = rng(seed);
        let params = Tensors::from_fn(|i| {
            if i % 2 == 1 {
                return rt.zeros(sizes[i]);
            }
            let bound = (6.0 / fan_in[i] as f32).sqrt();
            let values: Vec<f32> = (0..sizes[i])
                .map(|_| rng.random_range(-1.0..1.0) * bound)
                .collect();
            rt.upload(&values)
        })?;
        let grads = Tensors::from_fn(|i| rt.zeros(sizes[i]))?;
        let velocity = Tensors::from_fn(|i| rt.zeros(sizes[i]))?;

        let (out1, out2) = (conv1.output_len()?, conv2.output_len()?);
        let logits = (batch * classes) as usize;
        let act = Activations {
            pre1: rt.zeros(out1)?,
            y1: rt.zeros(out1)?,
            pre2: rt.zeros(out2)?,
            y2: rt.zeros(out2)?,
            pre3: rt.zeros(logits)?,
            logits: rt.zeros(logits)?,
            probs: rt.zeros(logits)?,
            losses: rt.zeros(batch as usize)?,
            grad_logits: rt.zeros(logits)?,
            grad_pre3: rt.zeros(logits)?,
            grad_y2: rt.zeros(out2)?,
            grad_pre2: rt.zeros(out2)?,
            grad_y1: rt.zeros(out1)?,
            grad_pre1: rt.zeros(out1)?,
        };
        Ok(Net {
            config,
            params,
            shapes,
            grads,
            velocity,
            ops: Ops {
                conv: Conv2d::new(rt)?,
                linear: Gemm::new(rt)?,
                loss: SoftmaxCrossEntropy::new(rt)?,
                sgd: Sgd::new(rt, sgd)?,
            },
            conv1,
            conv2,
            linear,
            x: rt.zeros(conv1.input_len())?,
            labels: rt.zeros(batch as usize)?,
            act,
        })
    }

    /// Copies a batch of images and labels to the GPU.
    pub fn load(&mut self, rt: &Runtime, images: &[f32], labels: &[u32]) -> Result<()> {
        self.x.write(rt, images)?;
        self.labels.write(rt, labels)
    }

    /// Records the forward pass and the loss of the loaded batch.
    pub fn record_forward(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let (ops, p, a) = (&self.ops, &self.params, &mut self.act);
        let relu = Activation::Relu;
        ops.conv.forward(
            batch,
            &self.conv1,
            relu,
            &self.x,
            &p.conv1_w,
            &p.conv1_b,
            &mut a.pre1,
            &mut a.y1,
        )?;
        ops.conv.forward(
            batch,
            &self.conv2,
            relu,
            &a.y1,
            &p.conv2_w,
            &p.conv2_b,
            &mut a.pre2,
            &mut a.y2,
        )?;
        // NCHW activations are already the rows of the flattened [batch, features] matrix.
        ops.linear.forward(
            batch,
            self.linear,
            Activation::None,
            &a.y2,
            &p.linear_w,
            &p.linear_b,
            &mut a.pre3,
            &mut a.logits,
        )?;
        let (rows, classes) = (self.config.batch, self.config.classes);
        ops.loss.forward(
            batch,
            rows,
            classes,
            &a.logits,
            &self.labels,
            &mut a.probs,
            &mut a.losses,
        )
    }

    /// Records the backward pass into `grads`; call after [`record_forward`](Self::record_forward).
    pub fn record_backward(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let (ops, p, g, a) = (&self.ops, &self.params, &mut self.grads, &mut self.act);
        let relu = Activation::Relu;
        let (rows, classes) = (self.config.batch, self.config.classes);
        ops.loss.backward(
            batch,
            rows,
            classes,
            &a.probs,
            &self.labels,
            &mut a.grad_logits,
        )?;
        let linear_grads = GemmGrads {
            grad_pre: &mut a.grad_pre3,
            grad_a: &mut a.grad_y2,
            grad_b: &mut g.linear_w,
            grad_bias: &mut g.linear_b,
        };
        ops.linear.backward(
            batch,
            self.linear,
            Activation::None,
            &a.y2,
            &p.linear_w,
            &a.pre3,
            &a.grad_logits,
            linear_grads,
        )?;
        let conv2_grads = Conv2dGrads {
            grad_pre: &mut a.grad_pre2,
            grad_x: Some(&mut a.grad_y1),
            grad_w: &mut g.conv2_w,
            grad_bias: &mut g.conv2_b,
        };
        ops.conv.backward(
            batch,
            &self.conv2,
            relu,
            &a.y1,
            &p.conv2_w,
            &a.pre2,
            &a.grad_y2,
            conv2_grads,
        )?;
        let conv1_grads = Conv2dGrads {
            grad_pre: &mut a.grad_pre1,
            grad_x: None,
            grad_w: &mut g.conv1_w,
            grad_bias: &mut g.conv1_b,
        };
        ops.conv.backward(
            batch,
            &self.conv1,
            relu,
            &self.x,
            &p.conv1_w,
            &a.pre1,
            &a.grad_y1,
            conv1_grads,
        )
    }

    /// Records an SGD step of every parameter from `grads`.
    pub fn record_update(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let tensors = self
            .params
            .all_mut()
            .into_iter()
            .zip(self.grads.all())
            .zip(self.velocity.all_mut());
        for ((param, grad), velocity) in tensors {
            self.ops.sgd.step(batch, param, grad, velocity)?;
        }
        Ok(())
    }

    /// One training step on a batch as one submission: forward, backward, update. Returns the
    /// batch's mean loss before the update and the GPU's timing of every kernel.
    pub fn train_step(
        &mut self,
        rt: &Runtime,
        images: &[f32],
        labels: &[u32],
    ) -> Result<(f32, Timing)> {
        self.load(rt, images, labels)?;
        let mut batch = rt.batch();
        self.record_forward(&mut batch)?;
        self.record_backward(&mut batch)?;
        self.record_update(&mut batch)?;
        let timing = batch.submit_timed()?;
        Ok((self.mean_loss(rt)?, timing))
    }

    /// The mean loss of a batch and how many of its images the network classifies correctly.
    pub fn evaluate(&mut self, rt: &Runtime, images: &[f32], labels: &[u32]) -> Result<(f32, u32)> {
        self.load(rt, images, labels)?;
        let mut batch = rt.batch();
        self.record_forward(&mut batch)?;
        batch.submit()?;
        let probs = self.act.probs.read(rt)?;
        let classes = self.config.classes as usize;
        let correct = probs
            .chunks(classes)
            .zip(labels)
            .filter(|(row, &label)| argmax(row) == label as usize)
            .count();
        Ok((self.mean_loss(rt)?, correct as u32))
    }

    /// The mean loss the last forward pass computed.
    pub fn mean_loss(&self, rt: &Runtime) -> Result<f32> {
        SoftmaxCrossEntropy::mean(&self.act.losses.read(rt)?)
    }
}

fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}
