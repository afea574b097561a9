//! Normalization layers: [`RmsNorm`] and [`LayerNorm`] with their learned parameters.

use super::{rows, sized, Parameter};
use crate::{
    invalid, LayerNorm, LayerNormBackward, LayerNormForward, LayerNormResidualBackward,
    LayerNormResidualForward, RmsNorm, RmsNormBackward, RmsNormForward, RmsNormResidualBackward,
    RmsNormResidualForward, RowsShape,
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
        self.record_forward(batch, op::Input::Alone(x))
    }

    /// Records `sum = x + residual` into `sum` and the forward pass of `sum`, in one pass
    /// (a transformer block's `norm(x + branch(x))`, the sum being the residual stream
    /// onward), and returns the output buffer, which stays the layer's. `x`, `residual` and
    /// `sum` must be of one length. The backward is
    /// [`backward_residual`](Self::backward_residual).
    ///
    /// ```no_run
    /// # use tessera::Runtime;
    /// # use tessera_nn::{LayerNormLayer, SumGradient};
    /// # fn main() -> Result<(), tessera::Error> {
    /// let rt = Runtime::new()?;
    /// let mut norm = LayerNormLayer::new(&rt, 2)?;
    /// let (x, branch) = (rt.upload(&[1.0f32, 2.0])?, rt.upload(&[2.0f32, 5.0])?);
    /// let mut stream = rt.zeros::<f32>(2)?;
    /// let mut batch = rt.batch();
    /// norm.forward_residual(&mut batch, &x, &branch, &mut stream)?;
    /// // The stream's gradient from the layers after it; the norm's is added in place.
    /// let mut grad_stream = rt.upload(&[0.5f32, 0.5])?;
    /// let grad_y = rt.upload(&[1.0f32, -1.0])?;
    /// let into = SumGradient::Add(&mut grad_stream);
    /// norm.backward_residual(&mut batch, &stream, &grad_y, into)?;
    /// batch.submit()?;
    /// assert_eq!(stream.read(&rt)?, vec![3.0, 7.0]);
    /// # Ok(()) }
    /// ```
    pub fn forward_residual(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        residual: &GpuBuffer<f32>,
        sum: &mut GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        same_length(
            Op::NAME,
            x,
            [("residual", residual.len()), ("sum", sum.len())],
        )?;
        self.record_forward(batch, op::Input::AfterAdd { x, residual, sum })
    }

    fn record_forward(
        &mut self,
        batch: &mut Batch<'_>,
        input: op::Input<'_>,
    ) -> Result<&GpuBuffer<f32>> {
        let x_len = input.len();
        let shape = self.shape(x_len)?;
        let rt = batch.runtime();
        let NormLayer {
            op,
            params,
            statistics,
            y,
            ..
        } = self;
        let y = sized(y, rt, x_len, &format!("{} output", Op::NAME))?;
        let mut kept = Vec::with_capacity(statistics.len());
        for (slot, name) in statistics.iter_mut().zip(Op::STATISTICS) {
            let label = format!("{} {name}", Op::NAME);
            kept.push(sized(slot, rt, shape.rows as usize, &label)?);
        }
        let pass = op::Forward {
            shape,
            input,
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
        let label = format!("{} input gradient", Op::NAME);
        // Out of the layer while the pass borrows it, back in whatever the pass returns.
        let mut slot = self.grad_x.take();
        let recorded = sized(&mut slot, batch.runtime(), x.len(), &label)
            .and_then(|grad_x| self.record_backward(batch, x, grad_y, SumGradient::Write(grad_x)));
        self.grad_x = slot;
        recorded?;
        self.grad_x.as_ref().ok_or_else(|| mismatch(Op::NAME))
    }

    /// The backward of [`forward_residual`](Self::forward_residual), for its `sum` and the
    /// output's gradient `grad_y`: writes the parameters' gradients, and the gradient with
    /// respect to `sum` (and so to `x` and to `residual` alike) where `grad_sum` says.
    pub fn backward_residual(
        &mut self,
        batch: &mut Batch<'_>,
        sum: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
        grad_sum: SumGradient<'_>,
    ) -> Result<()> {
        let others = [("grad_y", grad_y.len()), ("grad_sum", grad_sum.len())];
        same_length(Op::NAME, sum, others)?;
        self.record_backward(batch, sum, grad_y, grad_sum)
    }

    fn record_backward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
        grad_x: SumGradient<'_>,
    ) -> Result<()> {
        let shape = self.shape(x.len())?;
        let same_input = self.y.as_ref().is_some_and(|y| y.len() == x.len());
        let kept: Option<Vec<&GpuBuffer<f32>>> =
            self.statistics.iter().map(Option::as_ref).collect();
        let (Some(statistics), true) = (kept, same_input) else {
            let problem = "backward needs a forward pass of the same input first".to_owned();
            return Err(invalid(Op::NAME, problem));
        };
        let pass = op::Backward {
            shape,
            x,
            params: &self.params,
            statistics: &statistics,
            grad_y,
            grad_x,
            grads: &mut self.grads,
        };
        self.op.record_backward(batch, pass)
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

    /// What a forward pass normalizes.
    pub enum Input<'a> {
        /// `x` itself.
        Alone(&'a GpuBuffer<f32>),
        /// `x + residual`, which it writes to `sum`.
        AfterAdd {
            x: &'a GpuBuffer<f32>,
            residual: &'a GpuBuffer<f32>,
            sum: &'a mut GpuBuffer<f32>,
        },
    }

    impl Input<'_> {
        /// The values normalized.
        pub fn len(&self) -> usize {
            match self {
                Input::Alone(x) | Input::AfterAdd { x, .. } => x.len(),
            }
        }
    }

    /// A forward pass as a layer hands it to its op: the parameters and the statistics in
    /// the op's order.
    pub struct Forward<'a, 'b> {
        pub shape: RowsShape,
        pub input: Input<'a>,
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
        pub grad_x: super::SumGradient<'a>,
        pub grads: &'a mut [GpuBuffer<f32>],
    }
}

pub use op::NormOp;

/// Where [`NormLayer::backward_residual`] leaves the gradient with respect to the sum its
/// forward normalized.
#[derive(Debug)]
pub enum SumGradient<'a> {
    /// Written over the buffer: nothing but the norm reads the sum (the last norm of a
    /// stack, whose sum goes nowhere else).
    Write(&'a mut GpuBuffer<f32>),
    /// Added to what the buffer holds, the gradient the sum received from everything else
    /// that reads it (the residual stream onward), so the buffer carries the stream's
    /// gradient down through every norm in place.
    Add(&'a mut GpuBuffer<f32>),
}

impl SumGradient<'_> {
    fn len(&self) -> usize {
        match self {
            SumGradient::Write(buffer) | SumGradient::Add(buffer) => buffer.len(),
        }
    }
}

/// An error of `layer` naming the first of `others` (name, length) whose length is not
/// `x`'s.
fn same_length<const N: usize>(
    layer: &str,
    x: &GpuBuffer<f32>,
    others: [(&str, usize); N],
) -> Result<()> {
    match others.into_iter().find(|&(_, len)| len != x.len()) {
        None => Ok(()),
        Some((name, len)) => {
            let want = x.len();
            let problem = format!(
                "`{name}` holds {len} values where the input holds {want}: pass a buffer of \
                 {want}"
            );
            Err(invalid(layer, problem))
        }
    }
}

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
        let (shape, y, rstd) = (pass.shape, pass.y, &mut **rstd);
        match pass.input {
            op::Input::Alone(x) => {
                let args = RmsNormForward {
                    shape,
                    x,
                    scale,
                    y,
                    rstd,
                };
                self.forward(batch, args)
            }
            op::Input::AfterAdd { x, residual, sum } => {
                let args = RmsNormResidualForward {
                    shape,
                    x,
                    residual,
                    scale,
                    sum,
                    y,
                    rstd,
                };
                self.forward_residual(batch, args)
            }
        }
    }

    fn record_backward(&self, batch: &mut Batch<'_>, pass: op::Backward<'_, '_>) -> Result<()> {
        let ([scale], [rstd], [grad_scale]) = (pass.params, pass.statistics, pass.grads) else {
            return Err(mismatch(Self::NAME));
        };
        let (shape, grad_y) = (pass.shape, pass.grad_y);
        match pass.grad_x {
            SumGradient::Write(grad_x) => {
                let args = RmsNormBackward {
                    shape,
                    x: pass.x,
                    scale,
                    rstd,
                    grad_y,
                    grad_x,
                    grad_scale,
                };
                self.backward(batch, args)
            }
            SumGradient::Add(grad_sum) => {
                let args = RmsNormResidualBackward {
                    shape,
                    sum: pass.x,
                    scale,
                    rstd,
                    grad_y,
                    grad_sum,
                    grad_scale,
                };
                self.backward_residual(batch, args)
            }
        }
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
        let (shape, y, mean, rstd) = (pass.shape, pass.y, &mut **mean, &mut **rstd);
        match pass.input {
            op::Input::Alone(x) => {
                let args = LayerNormForward {
                    shape,
                    x,
                    scale,
                    bias,
                    y,
                    mean,
                    rstd,
                };
                self.forward(batch, args)
            }
            op::Input::AfterAdd { x, residual, sum } => {
                let args = LayerNormResidualForward {
                    shape,
                    x,
                    residual,
                    scale,
                    bias,
                    sum,
                    y,
                    mean,
                    rstd,
                };
                self.forward_residual(batch, args)
            }
        }
    }

    fn record_backward(&self, batch: &mut Batch<'_>, pass: op::Backward<'_, '_>) -> Result<()> {
        let ([scale, _], [mean, rstd], [grad_scale, grad_bias]) =
            (pass.params, pass.statistics, pass.grads)
        else {
            return Err(mismatch(Self::NAME));
        };
        let (shape, grad_y) = (pass.shape, pass.grad_y);
        match pass.grad_x {
            SumGradient::Write(grad_x) => {
                let args = LayerNormBackward {
                    shape,
                    x: pass.x,
                    scale,
                    mean,
                    rstd,
                    grad_y,
                    grad_x,
                    grad_scale,
                    grad_bias,
                };
                self.backward(batch, args)
            }
            SumGradient::Add(grad_sum) => {
                let args = LayerNormResidualBackward {
                    shape,
                    sum: pass.x,
                    scale,
                    mean,
                    rstd,
                    grad_y,
                    grad_sum,
                    grad_scale,
                    grad_bias,
                };
                self.backward_residual(batch, args)
            }
        }
    }
}
