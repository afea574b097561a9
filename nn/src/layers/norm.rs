//! Normalization layers: [`RmsNorm`] and [`LayerNorm`] with their learned parameters.

use super::{rows, sized, Parameter};
use crate::{
    invalid, LayerNorm, LayerNormBackward, LayerNormForward, RmsNorm, RmsNormBackward,
    RmsNormForward, RowsShape,
};
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// A normalization layer over the last dimension: a norm op with its learned parameters (a
/// `scale` that starts at ones and, for LayerNorm, a `bias` that starts at zeros, each
/// `[features]`), their gradients, and the buffers its passes write. The layers are
/// [`RmsNormLayer`] and [`LayerNormLayer`]; what this page lists holds for both.
///
/// The number of rows is read off each call's input (its length over `features`); the
/// layer's buffers follow it. Rows of any length: past [`MAX_COLS`](crate::MAX_COLS) features
/// they are read a segment at a time.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::LayerNormLayer;
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let mut norm = LayerNormLayer::new(&rt, 4)?;
/// let x = rt.upload(&[1.0f32, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 8.0])?; // two rows
/// let grad_y = rt.upload(&[1.0f32; 8])?;
/// let mut batch = rt.batch();
/// norm.forward(&mut batch, &x)?;
/// norm.backward(&mut batch, &x, &grad_y)?; // writes the gradients, returns x's
/// batch.submit()?;
/// let y = norm.output()?.read(&rt)?;
/// assert!(y[..4].iter().sum::<f32>().abs() < 1e-5); // each row centered
/// let parameters = norm.parameters(); // scale, bias
/// assert_eq!(parameters[1].grad.read(&rt)?, vec![2.0; 4]); // summed over the rows
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct NormLayer<Op: NormOp> {
    op: Op,
    features: u32,
    /// The learned parameters, in the order of `Op::PARAMETERS`.
    params: Vec<GpuBuffer<f32>>,
    /// Their gradients from the last backward pass, in the same order.
    grads: Vec<GpuBuffer<f32>>,
    /// What the last forward pass kept of each row for the backward, in the order of
    /// `Op::STATISTICS`.
    statistics: Vec<Option<GpuBuffer<f32>>>,
    /// The output of the last forward pass.
    y: Option<GpuBuffer<f32>>,
    /// The input's gradient from the last backward pass.
    grad_x: Option<GpuBuffer<f32>>,
}

/// RMSNorm with a learned scale, `y = x * rstd * scale` along each row: the [`RmsNorm`] op
/// as a [`NormLayer`].
///
/// ```no_run
/// # use tessera_nn::RmsNormLayer;
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = tessera::Runtime::new()?;
/// let norm = RmsNormLayer::new(&rt, 4096)?.with_eps(1e-5)?;
/// assert_eq!(norm.features(), 4096);
/// # Ok(()) }
/// ```
pub type RmsNormLayer = NormLayer<RmsNorm>;

/// LayerNorm with a learned scale and bias, `y = (x - mean) * rstd * scale + bias` along
/// each row: the [`LayerNorm`] op as a [`NormLayer`].
pub type LayerNormLayer = NormLayer<LayerNorm>;

impl<Op: NormOp> NormLayer<Op> {
    /// A layer over rows of `features` values, with the op's default `eps`; an error when
    /// `features` is 0.
    pub fn new(rt: &Runtime, features: u32) -> Result<Self> {
        if features == 0 {
            let problem = "features must be at least 1, got 0".to_owned();
            return Err(invalid(Op::NAME, problem));
        }
        let len = features as usize;
        let made = |(name, start): &(&str, f32)| {
            let value = rt.upload_labeled(&format!("{}.{name}", Op::NAME), &vec![*start; len])?;
            let grad = rt.zeros_labeled(&format!("{}.{name} gradient", Op::NAME), len)?;
            Ok((value, grad))
        };
        let (params, grads) = Op::PARAMETERS
            .iter()
            .map(made)
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        Ok(NormLayer {
            op: Op::build(rt)?,
            features,
            params,
            grads,
            statistics: Op::STATISTICS.iter().map(|_| None).collect(),
            y: None,
            grad_x: None,
        })
    }

    /// The layer with `eps` instead (see the op's `with_eps`).
    pub fn with_eps(self, eps: f32) -> Result<Self> {
        Ok(NormLayer {
            op: self.op.with_eps(eps)?,
            ..self
        })
    }

    /// Values per row.
    pub fn features(&self) -> u32 {
        self.features
    }

    /// Compiles every kernel the layer may run now rather than at the first call that runs
    /// it.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.op.prepare(rt)
    }

    /// Records the forward pass of `x` (rows of `features` values) and returns the output
    /// buffer, which stays the layer's.
    pub fn forward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = self.shape(x.len())?;
        let rt = batch.runtime();
        let NormLayer {
            op,
            params,
            statistics,
            y,
            ..
        } = self;
        let y = sized(y, rt, x.len(), &format!("{} output", Op::NAME))?;
        let mut kept = Vec::with_capacity(statistics.len());
        for (slot, name) in statistics.iter_mut().zip(Op::STATISTICS) {
            let label = format!("{} {name}", Op::NAME);
            kept.push(sized(slot, rt, shape.rows as usize, &label)?);
        }
        let pass = op::Forward {
            shape,
            x,
            params,
            y: &mut *y,
            statistics: &mut kept,
        };
        op.record_forward(batch, pass)?;
        Ok(y)
    }

    /// Records the backward pass for the forward's `x` and the output's gradient `grad_y`:
    /// the parameters' gradients (overwritten) and the input's, which it returns.
    pub fn backward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = self.shape(x.len())?;
        let same_input = self.y.as_ref().is_some_and(|y| y.len() == x.len());
        let kept: Option<Vec<&GpuBuffer<f32>>> =
            self.statistics.iter().map(Option::as_ref).collect();
        let (Some(statistics), true) = (kept, same_input) else {
            let problem = "backward needs a forward pass of the same input first".to_owned();
            return Err(invalid(Op::NAME, problem));
        };
        let rt = batch.runtime();
        let label = format!("{} input gradient", Op::NAME);
        let grad_x = sized(&mut self.grad_x, rt, x.len(), &label)?;
        let pass = op::Backward {
            shape,
            x,
            params: &self.params,
            statistics: &statistics,
            grad_y,
            grad_x: &mut *grad_x,
            grads: &mut self.grads,
        };
        self.op.record_backward(batch, pass)?;
        Ok(grad_x)
    }

    /// The output of the last forward pass.
    pub fn output(&self) -> Result<&GpuBuffer<f32>> {
        let problem = || invalid(Op::NAME, "no forward pass has run yet".into());
        self.y.as_ref().ok_or_else(problem)
    }

    /// The learned parameters with their gradients (`scale`, then `bias` where the layer has
    /// one), for an optimizer or a checkpoint.
    pub fn parameters(&mut self) -> Vec<Parameter<'_>> {
        let shape = vec![self.features as usize];
        let named = Op::PARAMETERS.iter().map(|(name, _)| *name);
        let pairs = self.params.iter_mut().zip(&mut self.grads);
        named
            .zip(pairs)
            .map(|(name, (value, grad))| Parameter {
                name,
                shape: shape.clone(),
                value,
                grad,
            })
            .collect()
    }

    /// The rows of an input of `len` values, checked.
    fn shape(&self, len: usize) -> Result<RowsShape> {
        let cols = self.features;
        let rows = rows(len, cols as usize, Op::NAME, "features")?;
        Ok(RowsShape { rows, cols })
    }
}

/// What a norm layer asks of its op. The trait cannot be named outside the crate: the layers
/// are [`RmsNormLayer`] and [`LayerNormLayer`].
mod op {
    use crate::RowsShape;
    use tessera::{Batch, GpuBuffer, Result, Runtime};

    pub trait NormOp: Sized + std::fmt::Debug {
        /// The layer's name in errors and buffer labels.
        const NAME: &'static str;
        /// The learned parameters, each `[features]`: their names and starting values.
        const PARAMETERS: &'static [(&'static str, f32)];
        /// What the forward keeps of each row for the backward.
        const STATISTICS: &'static [&'static str];
        fn build(rt: &Runtime) -> Result<Self>;
        fn with_eps(self, eps: f32) -> Result<Self>;
        fn prepare(&self, rt: &Runtime) -> Result<()>;
        fn record_forward(&self, batch: &mut Batch<'_>, pass: Forward<'_, '_>) -> Result<()>;
        fn record_backward(&self, batch: &mut Batch<'_>, pass: Backward<'_, '_>) -> Result<()>;
    }

    /// A forward pass as a layer hands it to its op: the parameters and the statistics in
    /// the op's order.
    pub struct Forward<'a, 'b> {
        pub shape: RowsShape,
        pub x: &'a GpuBuffer<f32>,
        pub params: &'a [GpuBuffer<f32>],
        pub y: &'a mut GpuBuffer<f32>,
        pub statistics: &'a mut [&'b mut GpuBuffer<f32>],
    }

    /// A backward pass: the forward's input, parameters and statistics, and the gradients
    /// to write (the parameters' in the op's order).
    pub struct Backward<'a, 'b> {
        pub shape: RowsShape,
        pub x: &'a GpuBuffer<f32>,
        pub params: &'a [GpuBuffer<f32>],
        pub statistics: &'a [&'b GpuBuffer<f32>],
        pub grad_y: &'a GpuBuffer<f32>,
        pub grad_x: &'a mut GpuBuffer<f32>,
        pub grads: &'a mut [GpuBuffer<f32>],
    }
}

pub use op::NormOp;

/// The error for a pass whose buffers do not match the op's lists, which the layer builds
/// from them: a bug of this crate.
fn mismatch(layer: &str) -> tessera::Error {
    tessera::Error::Internal {
        operation: layer.to_owned(),
        message: "the layer's parameters or statistics do not match its op".into(),
    }
}

/// The methods of [`NormOp`] that are `$op`'s own.
macro_rules! the_ops_own {
    ($op:ident) => {
        fn build(rt: &Runtime) -> Result<Self> {
            $op::new(rt)
        }

        fn with_eps(self, eps: f32) -> Result<Self> {
            $op::with_eps(self, eps)
        }

        fn prepare(&self, rt: &Runtime) -> Result<()> {
            $op::prepare(self, rt)
        }
    };
}

impl NormOp for RmsNorm {
    const NAME: &'static str = "rms_norm";
    const PARAMETERS: &'static [(&'static str, f32)] = &[("scale", 1.0)];
    const STATISTICS: &'static [&'static str] = &["rstd"];

    the_ops_own!(RmsNorm);

    fn record_forward(&self, batch: &mut Batch<'_>, pass: op::Forward<'_, '_>) -> Result<()> {
        let ([scale], [rstd]) = (pass.params, pass.statistics) else {
            return Err(mismatch(Self::NAME));
        };
        let rstd = &mut **rstd;
        self.forward(
            batch,
            RmsNormForward {
                shape: pass.shape,
                x: pass.x,
                scale,
                y: pass.y,
                rstd,
            },
        )
    }

    fn record_backward(&self, batch: &mut Batch<'_>, pass: op::Backward<'_, '_>) -> Result<()> {
        let ([scale], [rstd], [grad_scale]) = (pass.params, pass.statistics, pass.grads) else {
            return Err(mismatch(Self::NAME));
        };
        let args = RmsNormBackward {
            shape: pass.shape,
            x: pass.x,
            scale,
            rstd,
            grad_y: pass.grad_y,
            grad_x: pass.grad_x,
            grad_scale,
        };
        self.backward(batch, args)
    }
}

impl NormOp for LayerNorm {
    const NAME: &'static str = "layer_norm";
    const PARAMETERS: &'static [(&'static str, f32)] = &[("scale", 1.0), ("bias", 0.0)];
    const STATISTICS: &'static [&'static str] = &["mean", "rstd"];

    the_ops_own!(LayerNorm);

    fn record_forward(&self, batch: &mut Batch<'_>, pass: op::Forward<'_, '_>) -> Result<()> {
        let ([scale, bias], [mean, rstd]) = (pass.params, pass.statistics) else {
            return Err(mismatch(Self::NAME));
        };
        let (mean, rstd) = (&mut **mean, &mut **rstd);
        self.forward(
            batch,
            LayerNormForward {
                shape: pass.shape,
                x: pass.x,
                scale,
                bias,
                y: pass.y,
                mean,
                rstd,
            },
        )
    }

    fn record_backward(&self, batch: &mut Batch<'_>, pass: op::Backward<'_, '_>) -> Result<()> {
        let ([scale, _], [mean, rstd], [grad_scale, grad_bias]) =
            (pass.params, pass.statistics, pass.grads)
        else {
            return Err(mismatch(Self::NAME));
        };
        let args = LayerNormBackward {
            shape: pass.shape,
            x: pass.x,
            scale,
            mean,
            rstd,
            grad_y: pass.grad_y,
            grad_x: pass.grad_x,
            grad_scale,
            grad_bias,
        };
        self.backward(batch, args)
    }
}
