//! The network the example trains, every step in tessera kernels:
//! conv 3x3 + ReLU, conv 3x3 stride 2 + ReLU, flatten, linear, softmax cross-entropy, and an
//! SGD-with-momentum update of all six parameter tensors.

use crate::buffers::upload;
use tessera::{Batch, GpuBuffer, Result, Runtime, Timing};
use tessera_nn::{
    Activation, Conv2d, Conv2dConfig, Init, Linear, LinearConfig, LossBackward, LossForward,
    LossShape, Padding, Parameter, Precision, Sgd, SgdConfig, SoftmaxCrossEntropy,
};

/// The network's sizes and how it multiplies.
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
    /// How the layers multiply.
    pub precision: Precision,
}

/// The network with its parameters, gradients, optimizer state and buffers on the GPU.
pub struct Net {
    pub config: NetConfig,
    conv1: Conv2d,
    conv2: Conv2d,
    linear: Linear,
    loss: SoftmaxCrossEntropy,
    sgd: Sgd,
    /// SGD's velocity of each parameter, in [`Net::parameters`] order.
    velocity: Vec<GpuBuffer<f32>>,
    /// Images in the loaded batch (at most `config.batch` in training; any number to
    /// evaluate).
    rows: u32,
    x: GpuBuffer<f32>,
    labels: GpuBuffer<u32>,
    probs: GpuBuffer<f32>,
    losses: GpuBuffer<f32>,
    grad_logits: GpuBuffer<f32>,
}

impl Net {
    /// A network with He-uniform weights drawn from `seed` (one stream per layer) and zero
    /// biases.
    pub fn new(rt: &Runtime, config: NetConfig, sgd: SgdConfig, seed: u64) -> Result<Self> {
        let NetConfig {
            batch,
            image,
            channels: [c1, c2],
            classes,
            precision,
        } = config;
        let init = |layer: u64| Init::HeUniform {
            seed: seed.wrapping_mul(3).wrapping_add(layer),
        };
        let same = Padding::uniform(1);
        let conv1 = Conv2d::new(
            rt,
            Conv2dConfig::new(1, [image, image], c1, [3, 3])
                .padding(same)
                .activation(Activation::Relu)
                .init(init(0))
                .precision(precision),
        )?;
        let conv2 = Conv2d::new(
            rt,
            Conv2dConfig::new(c1, conv1.output_size(), c2, [3, 3])
                .stride([2, 2])
                .padding(same)
                .activation(Activation::Relu)
                .init(init(1))
                .precision(precision),
        )?;
        // NCHW activations are already the rows of the flattened [batch, features] matrix.
        let linear = Linear::new(
            rt,
            LinearConfig::new(conv2.output_features(), classes)
                .init(init(2))
                .precision(precision),
        )?;
        let logits = (batch * classes) as usize;
        let mut net = Net {
            config,
            conv1,
            conv2,
            linear,
            loss: SoftmaxCrossEntropy::new(rt)?,
            sgd: Sgd::new(rt, sgd)?,
            velocity: Vec::new(),
            rows: batch,
            x: rt.zeros((batch * image * image) as usize)?,
            labels: rt.zeros(batch as usize)?,
            probs: rt.zeros(logits)?,
            losses: rt.zeros(batch as usize)?,
            grad_logits: rt.zeros(logits)?,
        };
        let lens: Vec<usize> = net
            .parameters()
            .iter()
            .map(|(_, p)| p.value.len())
            .collect();
        net.velocity = lens
            .into_iter()
            .map(|len| rt.zeros(len))
            .collect::<Result<_>>()?;
        Ok(net)
    }

    /// Every parameter with its gradient, named as PyTorch would name them
    /// (`conv1.weight`, ...): the filters are `[out, in, 3, 3]`, the linear layer's weight
    /// the `[features, classes]` operand of `logits = features · weight`.
    pub fn parameters(&mut self) -> Vec<(String, Parameter<'_>)> {
        let layers = [
            ("conv1", self.conv1.parameters()),
            ("conv2", self.conv2.parameters()),
            ("linear", self.linear.parameters()),
        ];
        layers
            .into_iter()
            .flat_map(|(layer, params)| params.map(|p| (format!("{layer}.{}", p.name), p)))
            .collect()
    }

    /// Copies a batch of images and labels to the GPU; the buffers follow its size.
    pub fn load(&mut self, rt: &Runtime, images: &[f32], labels: &[u32]) -> Result<()> {
        let pixels = (self.config.image * self.config.image) as usize;
        if labels.is_empty() || images.len() != labels.len() * pixels {
            return Err(tessera::Error::InvalidArgument {
                operation: "net".into(),
                problem: format!(
                    "{} labels need {} pixels of images, got {}",
                    labels.len(),
                    labels.len() * pixels,
                    images.len()
                ),
            });
        }
        self.rows = labels.len() as u32;
        let logits = labels.len() * self.config.classes as usize;
        for (buffer, len) in [
            (&mut self.probs, logits),
            (&mut self.grad_logits, logits),
            (&mut self.losses, labels.len()),
        ] {
            if buffer.len() != len {
                *buffer = rt.zeros(len)?;
            }
        }
        upload(&mut self.x, rt, images)?;
        upload(&mut self.labels, rt, labels)
    }

    fn loss_shape(&self) -> LossShape {
        LossShape {
            rows: self.rows,
            classes: self.config.classes,
        }
    }

    /// Records the forward pass and the loss of the loaded batch.
    pub fn record_forward(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let shape = self.loss_shape();
        let y1 = self.conv1.forward(batch, &self.x)?;
        let y2 = self.conv2.forward(batch, y1)?;
        let logits = self.linear.forward(batch, y2)?;
        let args = LossForward {
            shape,
            logits,
            labels: &self.labels,
            probs: &mut self.probs,
            losses: &mut self.losses,
        };
        self.loss.forward(batch, args)
    }

    /// Records the backward pass into the layers' gradients; call after
    /// [`record_forward`](Self::record_forward).
    pub fn record_backward(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let args = LossBackward {
            shape: self.loss_shape(),
            probs: &self.probs,
            labels: &self.labels,
            grad_logits: &mut self.grad_logits,
        };
        self.loss.backward(batch, args)?;
        let (y1, y2) = (self.conv1.output()?, self.conv2.output()?);
        let grad_y2 = self.linear.backward(batch, y2, &self.grad_logits)?;
        let grad_y1 = self.conv2.backward(batch, y1, grad_y2)?;
        self.conv1.backward_params(batch, &self.x, grad_y1)
    }

    /// Records an SGD step of every parameter from its gradient.
    pub fn record_update(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let mut velocity = std::mem::take(&mut self.velocity);
        let sgd = self.sgd.clone();
        let stepped = self
            .parameters()
            .into_iter()
            .zip(&mut velocity)
            .try_for_each(|((_, p), v)| sgd.step(batch, p.value, p.grad, v));
        self.velocity = velocity;
        stepped
    }

    /// One training step on a batch as one submission: forward, backward, update. Returns the
    /// batch's mean loss before the update and the GPU's timing of the step, and of each
    /// kernel when `profile` (which makes the step itself slower: see
    /// `Batch::submit_profiled`).
    pub fn train_step(
        &mut self,
        rt: &Runtime,
        images: &[f32],
        labels: &[u32],
        profile: bool,
    ) -> Result<(f32, Timing)> {
        self.load(rt, images, labels)?;
        let mut batch = rt.batch();
        self.record_forward(&mut batch)?;
        self.record_backward(&mut batch)?;
        self.record_update(&mut batch)?;
        let timing = if profile {
            batch.submit_profiled()?
        } else {
            batch.submit_timed()?
        };
        Ok((self.mean_loss(rt)?, timing))
    }

    /// The mean loss of a batch and how many of its images the network classifies correctly.
    pub fn evaluate(&mut self, rt: &Runtime, images: &[f32], labels: &[u32]) -> Result<(f32, u32)> {
        self.load(rt, images, labels)?;
        let mut batch = rt.batch();
        self.record_forward(&mut batch)?;
        batch.submit()?;
        let probs = self.probs.read(rt)?;
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
        SoftmaxCrossEntropy::mean(&self.losses.read(rt)?)
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
