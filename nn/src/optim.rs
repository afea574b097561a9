//! Optimizers: SGD with momentum and Adam, one parameter tensor per step call.

use super::{invalid, kernels};
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
