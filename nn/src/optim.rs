//! Optimizers: SGD with momentum and Adam (or AdamW), one parameter tensor per step call;
//! gradient clipping by the global norm of many.

use super::{invalid, kernels};
use crate::kernels::clip_ops as clip;
use crate::spare::Spare;
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// SGD's hyperparameters; PyTorch's `SGD(lr, momentum, weight_decay)` semantics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdConfig {
    /// Step size.
    pub learning_rate: f32,
    /// Velocity decay; 0 is plain SGD.
    pub momentum: f32,
    /// L2 penalty added to the gradient (`grad + weight_decay * param`).
    pub weight_decay: f32,
}

/// Stochastic gradient descent with momentum:
/// `velocity = momentum * velocity + grad + weight_decay * param`,
/// `param -= learning_rate * velocity`.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Sgd, SgdConfig};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let sgd = Sgd::new(&rt, SgdConfig { learning_rate: 0.1, momentum: 0.9, weight_decay: 0.0 })?;
/// let (mut w, grad) = (rt.upload(&[1.0f32, 2.0])?, rt.upload(&[1.0f32, -1.0])?);
/// let mut velocity = rt.zeros::<f32>(2)?;
/// let mut batch = rt.batch();
/// sgd.step(&mut batch, &mut w, &grad, &mut velocity)?;
/// batch.submit()?;
/// assert_eq!(w.read(&rt)?, vec![0.9, 2.1]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Sgd {
    kernel: kernels::SgdStep,
    /// The hyperparameters the next steps use.
    pub config: SgdConfig,
}

impl Sgd {
    /// Builds the update kernel.
    pub fn new(rt: &Runtime, config: SgdConfig) -> Result<Self> {
        let kernel = kernels::SgdStep::new(rt)?;
        Ok(Sgd { kernel, config })
    }

    /// Records one update of `param` from `grad`, with `velocity` (zeros at the start) as the
    /// optimizer's state for this parameter. The three buffers must have one length.
    pub fn step(
        &self,
        batch: &mut Batch<'_>,
        param: &mut GpuBuffer<f32>,
        grad: &GpuBuffer<f32>,
        velocity: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let len = same_len("sgd", param, &[grad, velocity])?;
        let SgdConfig {
            learning_rate,
            momentum,
            weight_decay,
        } = self.config;
        let p = kernels::SgdParams {
            len,
            learning_rate,
            momentum,
            weight_decay,
        };
        self.kernel.record(
            batch,
            kernels::SgdStepArgs {
                p: &p,
                grad,
                velocity,
                param,
            },
        )
    }
}

/// How Adam decays the weights.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum WeightDecay {
    /// None.
    #[default]
    None,
    /// An L2 penalty added to the gradient, `grad + decay * param`, before the moments:
    /// PyTorch's `Adam(weight_decay=decay)`.
    L2(f32),
    /// Decoupled from the gradient: each step first shrinks the weights, `param *= 1 - lr *
    /// decay`: PyTorch's `AdamW(weight_decay=decay)`, what transformers train with.
    Decoupled(f32),
}

/// Adam's hyperparameters; PyTorch's `Adam(lr, betas, eps, weight_decay)` semantics, or
/// `AdamW`'s with [`WeightDecay::Decoupled`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    /// Step size.
    pub learning_rate: f32,
    /// Decay of the first moment (PyTorch's `betas[0]`).
    pub beta1: f32,
    /// Decay of the second moment (`betas[1]`).
    pub beta2: f32,
    /// Added to the root of the second moment.
    pub epsilon: f32,
    /// How the weights decay, if they do.
    pub weight_decay: WeightDecay,
}

impl Default for AdamConfig {
    /// PyTorch's defaults: learning rate 1e-3, betas (0.9, 0.999), epsilon 1e-8, no decay.
    fn default() -> Self {
        AdamConfig {
            learning_rate: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            weight_decay: WeightDecay::None,
        }
    }
}

/// Adam's state for one parameter tensor: both moments and the number of steps taken.
#[derive(Debug)]
pub struct AdamState {
    first: GpuBuffer<f32>,
    second: GpuBuffer<f32>,
    steps: u32,
}

impl AdamState {
    /// Zero moments for a parameter of `len` elements.
    pub fn new(rt: &Runtime, len: usize) -> Result<Self> {
        Ok(AdamState {
            first: rt.zeros(len)?,
            second: rt.zeros(len)?,
            steps: 0,
        })
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u32 {
        self.steps
    }
}

/// Adam with bias-corrected moments:
/// `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g²`,
/// `param -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`; AdamW with
/// [`WeightDecay::Decoupled`].
#[derive(Clone, Debug)]
pub struct Adam {
    kernel: kernels::AdamStep,
    /// The hyperparameters the next steps use.
    pub config: AdamConfig,
}

impl Adam {
    /// Builds the update kernel.
    pub fn new(rt: &Runtime, config: AdamConfig) -> Result<Self> {
        let kernel = kernels::AdamStep::new(rt)?;
        Ok(Adam { kernel, config })
    }

    /// Records one update of `param` from `grad`, advancing `state`'s step count.
    pub fn step(
        &self,
        batch: &mut Batch<'_>,
        param: &mut GpuBuffer<f32>,
        grad: &GpuBuffer<f32>,
        state: &mut AdamState,
    ) -> Result<()> {
        let len = same_len("adam", param, &[grad, &state.first, &state.second])?;
        let AdamConfig {
            learning_rate,
            beta1,
            beta2,
            epsilon,
            weight_decay,
        } = self.config;
        let steps = state.steps.saturating_add(1);
        let (l2, decoupled) = match weight_decay {
            WeightDecay::None => (0.0, 0.0),
            WeightDecay::L2(decay) => (decay, 0.0),
            WeightDecay::Decoupled(decay) => (0.0, decay),
        };
        let p = kernels::AdamParams {
            len,
            learning_rate,
            beta1,
            beta2,
            epsilon,
            l2,
            shrink: 1.0 - learning_rate * decoupled,
            correction1: 1.0 - beta1.powi(steps as i32),
            correction2: 1.0 - beta2.powi(steps as i32),
        };
        self.kernel.record(
            batch,
            kernels::AdamStepArgs {
                p: &p,
                grad,
                first: &mut state.first,
                second: &mut state.second,
                param,
            },
        )?;
        state.steps = steps;
        Ok(())
    }
}

/// `param`'s length as the kernels' `u32`, after checking that `others` have it too.
fn same_len(operation: &str, param: &GpuBuffer<f32>, others: &[&GpuBuffer<f32>]) -> Result<u32> {
    let len = param.len();
    if let Some(other) = others.iter().find(|b| b.len() != len) {
        return Err(invalid(
            operation,
            format!(
                "the parameter has {len} elements but its gradient or state has {}; they must \
                 match",
                other.len()
            ),
        ));
    }
    u32::try_from(len).map_err(|_| {
        invalid(
            operation,
            format!("{len} elements exceed the 2^32 that kernels index"),
        )
    })
}

/// Clips gradients by their global norm, as PyTorch's `clip_grad_norm_`: where the L2 norm
/// of all of them together exceeds `max_norm`, every one is multiplied by
/// `max_norm / (norm + 1e-6)`. Everything stays on the GPU (the norm is not read back),
/// through scratch memory the op keeps (a float per 256 gradient elements).
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::GradClip;
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let clip = GradClip::new(&rt, 1.0)?;
/// let (mut a, mut b) = (rt.upload(&[3.0f32])?, rt.upload(&[4.0f32])?);
/// let mut norm = rt.zeros::<f32>(2)?;
/// let mut batch = rt.batch();
/// clip.clip(&mut batch, &mut [&mut a, &mut b], &mut norm)?;
/// batch.submit()?;
/// assert_eq!(norm.read(&rt)?[0], 5.0); // the norm before clipping
/// assert!((a.read(&rt)?[0] - 0.6).abs() < 1e-6);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct GradClip {
    sum_squares: clip::SumSquares,
    factor: clip::ClipFactor,
    scale: clip::ScaleByFactor,
    /// Each workgroup's sum of squares.
    partials: Spare<f32>,
    max_norm: f32,
}

impl GradClip {
    /// The op, clipping to a global norm of `max_norm` (finite and above 0); its kernels
    /// compile at their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime, max_norm: f32) -> Result<Self> {
        if !(max_norm.is_finite() && max_norm > 0.0) {
            let problem = format!("`max_norm` is {max_norm}: pass a finite number above 0");
            return Err(invalid("gradient clipping", problem));
        }
        Ok(GradClip {
            sum_squares: clip::SumSquares::new(rt)?,
            factor: clip::ClipFactor::new(rt)?,
            scale: clip::ScaleByFactor::new(rt)?,
            partials: Spare::default(),
            max_norm,
        })
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => GradClip { sum_squares, factor, scale; partials, max_norm })
    }

    /// Records clipping `grads` together to the global norm `max_norm`; `norm` (2 elements)
    /// gets their global norm before clipping and the factor they were multiplied by (1 where
    /// the norm was within `max_norm`).
    pub fn clip(
        &self,
        batch: &mut Batch<'_>,
        grads: &mut [&mut GpuBuffer<f32>],
        norm: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        self.clip_scaled(batch, grads, norm, 1.0)
    }

    /// Records dividing `grads` by `loss_scale`, the factor a scaled loss put on them
    /// ([`SoftmaxCrossEntropy::backward_scaled`](crate::SoftmaxCrossEntropy::backward_scaled)),
    /// and clipping them together to the global norm `max_norm`, in one pass: `norm` gets
    /// their global norm once unscaled and the factor they were multiplied by (`1 /
    /// loss_scale` where that norm was within `max_norm`). `loss_scale` must be finite and
    /// above 0.
    pub fn clip_scaled(
        &self,
        batch: &mut Batch<'_>,
        grads: &mut [&mut GpuBuffer<f32>],
        norm: &mut GpuBuffer<f32>,
        loss_scale: f32,
    ) -> Result<()> {
        if !(loss_scale.is_finite() && loss_scale > 0.0) {
            let problem = format!("`loss_scale` is {loss_scale}: pass a finite number above 0");
            return Err(invalid("gradient clipping", problem));
        }
        if norm.len() < 2 {
            let problem = format!("`norm` holds {} elements: pass a buffer of 2", norm.len());
            return Err(invalid("gradient clipping", problem));
        }
        let group = clip::GROUP as usize;
        let mut lens = Vec::with_capacity(grads.len());
        for grad in grads.iter() {
            let len = u32::try_from(grad.len()).map_err(|_| {
                let problem = format!("a gradient of {} elements: split it", grad.len());
                invalid("gradient clipping", problem)
            })?;
            lens.push(len);
        }
        let total: usize = grads.iter().map(|g| g.len().div_ceil(group)).sum();
        let total = u32::try_from(total.max(1)).map_err(|_| {
            invalid(
                "gradient clipping",
                "too many gradient elements at once".into(),
            )
        })?;
        let mut partials = self.partials.lock();
        let partials = partials.at_least(batch.runtime(), total as usize)?;
        let max_norm = self.max_norm;
        // Empty gradients add nothing to the norm and have nothing to scale.
        let mut offset = 0;
        for (grad, &len) in grads.iter().zip(&lens).filter(|(_, &len)| len > 0) {
            let p = clip::ClipParams {
                len,
                offset,
                max_norm,
                loss_scale,
            };
            self.sum_squares.record(
                batch,
                clip::SumSquaresArgs {
                    p: &p,
                    grad,
                    partials,
                },
            )?;
            offset += len.div_ceil(clip::GROUP);
        }
        let p = clip::ClipParams {
            len: offset,
            offset: 0,
            max_norm,
            loss_scale,
        };
        self.factor.record(
            batch,
            clip::ClipFactorArgs {
                p: &p,
                partials,
                norm,
            },
        )?;
        for (grad, &len) in grads.iter_mut().zip(&lens).filter(|(_, &len)| len > 0) {
            let p = clip::ClipParams {
                len,
                offset: 0,
                max_norm,
                loss_scale,
            };
            self.scale
                .record(batch, clip::ScaleByFactorArgs { p: &p, norm, grad })?;
        }
        Ok(())
    }
}
