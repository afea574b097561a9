//! RMSNorm and LayerNorm along the last dimension, with a learned scale (and bias).

use super::{
    dispatch, kernels, row_args, row_kernels, widths, Plan, RowArgs, RowElement, RowKernels,
    RowsShape, Widths,
};
use crate::invalid;
use crate::spare::Spare;
use tessera::{Batch, GpuBuffer, Prepare, Result, Runtime};

/// One [`RmsNorm::forward`].
#[derive(Debug)]
pub struct RmsNormForward<'a, E: RowElement = f32> {
    /// The sizes of the buffers.
    pub shape: RowsShape,
    /// `[rows, cols]`: the input.
    pub x: &'a GpuBuffer<E>,
    /// `[cols]`: the learned scale of each column.
    pub scale: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the output (overwritten).
    pub y: &'a mut GpuBuffer<E>,
    /// `[rows]`: each row's `1 / sqrt(mean(x^2) + eps)` (overwritten), which the backward reads.
    pub rstd: &'a mut GpuBuffer<f32>,
}

row_args!(RmsNormForward, "RMSNorm forward":
    x: Matrix, scale: Columns, y: Matrix, rstd: Rows
);

/// One [`RmsNorm::backward`].
#[derive(Debug)]
pub struct RmsNormBackward<'a, E: RowElement = f32> {
    /// The forward's shape.
    pub shape: RowsShape,
    /// The forward's `x`.
    pub x: &'a GpuBuffer<E>,
    /// The forward's `scale`.
    pub scale: &'a GpuBuffer<E>,
    /// The forward's `rstd`.
    pub rstd: &'a GpuBuffer<f32>,
    /// `[rows, cols]`: the gradient of the loss with respect to `y`.
    pub grad_y: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the gradient with respect to `x` (overwritten).
    pub grad_x: &'a mut GpuBuffer<E>,
    /// `[cols]`: the gradient with respect to `scale` (overwritten).
    pub grad_scale: &'a mut GpuBuffer<E>,
}

row_args!(RmsNormBackward, "RMSNorm backward":
    x: Matrix, scale: Columns, rstd: Rows, grad_y: Matrix, grad_x: Matrix, grad_scale: Columns
);

/// One [`RmsNorm::forward_residual`]: a residual add and the norm of its sum.
#[derive(Debug)]
pub struct RmsNormResidualForward<'a, E: RowElement = f32> {
    /// The sizes of the buffers.
    pub shape: RowsShape,
    /// `[rows, cols]`: one summand, e.g. the residual stream.
    pub x: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the other, e.g. the output of the branch that skips it.
    pub residual: &'a GpuBuffer<E>,
    /// `[cols]`: the learned scale of each column.
    pub scale: &'a GpuBuffer<E>,
    /// `[rows, cols]`: `x + residual` (overwritten), the norm's input, which the backward
    /// reads.
    pub sum: &'a mut GpuBuffer<E>,
    /// `[rows, cols]`: the norm of `sum` (overwritten).
    pub y: &'a mut GpuBuffer<E>,
    /// `[rows]`: each row's `1 / sqrt(mean(sum^2) + eps)` (overwritten).
    pub rstd: &'a mut GpuBuffer<f32>,
}

row_args!(RmsNormResidualForward, "RMSNorm residual forward":
    x: Matrix, residual: Matrix, scale: Columns, sum: Matrix, y: Matrix, rstd: Rows
);

/// One [`RmsNorm::backward_residual`].
#[derive(Debug)]
pub struct RmsNormResidualBackward<'a, E: RowElement = f32> {
    /// The forward's shape.
    pub shape: RowsShape,
    /// The forward's `sum`.
    pub sum: &'a GpuBuffer<E>,
    /// The forward's `scale`.
    pub scale: &'a GpuBuffer<E>,
    /// The forward's `rstd`.
    pub rstd: &'a GpuBuffer<f32>,
    /// `[rows, cols]`: the gradient of the loss with respect to `y`.
    pub grad_y: &'a GpuBuffer<E>,
    /// `[rows, cols]`: on entry, the gradient `sum` received from everything else that reads
    /// it (the residual stream onward); the norm's gradient is added to it, making it the
    /// gradient with respect to `sum`, and so to `x` and to `residual` alike.
    pub grad_sum: &'a mut GpuBuffer<E>,
    /// `[cols]`: the gradient with respect to `scale` (overwritten).
    pub grad_scale: &'a mut GpuBuffer<E>,
}

row_args!(RmsNormResidualBackward, "RMSNorm residual backward":
    sum: Matrix, scale: Columns, rstd: Rows, grad_y: Matrix, grad_sum: Matrix,
    grad_scale: Columns
);

/// One [`LayerNorm::forward`].
#[derive(Debug)]
pub struct LayerNormForward<'a, E: RowElement = f32> {
    /// The sizes of the buffers.
    pub shape: RowsShape,
    /// `[rows, cols]`: the input.
    pub x: &'a GpuBuffer<E>,
    /// `[cols]`: the learned scale of each column.
    pub scale: &'a GpuBuffer<E>,
    /// `[cols]`: the learned bias of each column.
    pub bias: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the output (overwritten).
    pub y: &'a mut GpuBuffer<E>,
    /// `[rows]`: each row's mean (overwritten), which the backward reads.
    pub mean: &'a mut GpuBuffer<f32>,
    /// `[rows]`: each row's `1 / sqrt(var(x) + eps)` (overwritten), which the backward reads.
    pub rstd: &'a mut GpuBuffer<f32>,
}

row_args!(LayerNormForward, "LayerNorm forward":
    x: Matrix, scale: Columns, bias: Columns, y: Matrix, mean: Rows, rstd: Rows
);

/// One [`LayerNorm::backward`].
#[derive(Debug)]
pub struct LayerNormBackward<'a, E: RowElement = f32> {
    /// The forward's shape.
    pub shape: RowsShape,
    /// The forward's `x`.
    pub x: &'a GpuBuffer<E>,
    /// The forward's `scale`.
    pub scale: &'a GpuBuffer<E>,
    /// The forward's `mean`.
    pub mean: &'a GpuBuffer<f32>,
    /// The forward's `rstd`.
    pub rstd: &'a GpuBuffer<f32>,
    /// `[rows, cols]`: the gradient of the loss with respect to `y`.
    pub grad_y: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the gradient with respect to `x` (overwritten).
    pub grad_x: &'a mut GpuBuffer<E>,
    /// `[cols]`: the gradient with respect to `scale` (overwritten).
    pub grad_scale: &'a mut GpuBuffer<E>,
    /// `[cols]`: the gradient with respect to `bias` (overwritten).
    pub grad_bias: &'a mut GpuBuffer<E>,
}

row_args!(LayerNormBackward, "LayerNorm backward":
    x: Matrix, scale: Columns, mean: Rows, rstd: Rows, grad_y: Matrix, grad_x: Matrix,
    grad_scale: Columns, grad_bias: Columns
);

/// One [`LayerNorm::forward_residual`]: a residual add and the norm of its sum.
#[derive(Debug)]
pub struct LayerNormResidualForward<'a, E: RowElement = f32> {
    /// The sizes of the buffers.
    pub shape: RowsShape,
    /// `[rows, cols]`: one summand, e.g. the residual stream.
    pub x: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the other, e.g. the output of the branch that skips it.
    pub residual: &'a GpuBuffer<E>,
    /// `[cols]`: the learned scale of each column.
    pub scale: &'a GpuBuffer<E>,
    /// `[cols]`: the learned bias of each column.
    pub bias: &'a GpuBuffer<E>,
    /// `[rows, cols]`: `x + residual` (overwritten), the norm's input, which the backward
    /// reads.
    pub sum: &'a mut GpuBuffer<E>,
    /// `[rows, cols]`: the norm of `sum` (overwritten).
    pub y: &'a mut GpuBuffer<E>,
    /// `[rows]`: each row's mean of `sum` (overwritten).
    pub mean: &'a mut GpuBuffer<f32>,
    /// `[rows]`: each row's `1 / sqrt(var(sum) + eps)` (overwritten).
    pub rstd: &'a mut GpuBuffer<f32>,
}

row_args!(LayerNormResidualForward, "LayerNorm residual forward":
    x: Matrix, residual: Matrix, scale: Columns, bias: Columns, sum: Matrix, y: Matrix,
    mean: Rows, rstd: Rows
);

/// One [`LayerNorm::backward_residual`].
#[derive(Debug)]
pub struct LayerNormResidualBackward<'a, E: RowElement = f32> {
    /// The forward's shape.
    pub shape: RowsShape,
    /// The forward's `sum`.
    pub sum: &'a GpuBuffer<E>,
    /// The forward's `scale`.
    pub scale: &'a GpuBuffer<E>,
    /// The forward's `mean`.
    pub mean: &'a GpuBuffer<f32>,
    /// The forward's `rstd`.
    pub rstd: &'a GpuBuffer<f32>,
    /// `[rows, cols]`: the gradient of the loss with respect to `y`.
    pub grad_y: &'a GpuBuffer<E>,
    /// `[rows, cols]`: on entry, the gradient `sum` received from everything else that reads
    /// it (the residual stream onward); the norm's gradient is added to it, making it the
    /// gradient with respect to `sum`, and so to `x` and to `residual` alike.
    pub grad_sum: &'a mut GpuBuffer<E>,
    /// `[cols]`: the gradient with respect to `scale` (overwritten).
    pub grad_scale: &'a mut GpuBuffer<E>,
    /// `[cols]`: the gradient with respect to `bias` (overwritten).
    pub grad_bias: &'a mut GpuBuffer<E>,
}

row_args!(LayerNormResidualBackward, "LayerNorm residual backward":
    sum: Matrix, scale: Columns, mean: Rows, rstd: Rows, grad_y: Matrix, grad_sum: Matrix,
    grad_scale: Columns, grad_bias: Columns
);

/// RMSNorm of each row with a learned scale: `y = x * rstd * scale`, where
/// `rstd = 1 / sqrt(mean(x^2) + eps)`; and its backward, the gradients with respect to `x`
/// and `scale`.
///
/// Rows of any length (past [`MAX_COLS`](crate::MAX_COLS) scalars they are read twice, a
/// segment at a time, three times by the backward), in `f32`
/// storage (`RmsNorm`, the default) or `f16` (`RmsNorm<half::f16>`, computed in `f32`; see
/// [`RowElement`]). The scale's gradient sums each column over chunks of the rows in a pass of its own, then the chunks'
/// sums in another, through scratch memory the op keeps.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{RmsNorm, RmsNormBackward, RmsNormForward, RowsShape};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let norm = RmsNorm::new(&rt)?.with_eps(1e-5)?;
/// let shape = RowsShape { rows: 2, cols: 4 };
/// let x = rt.upload(&[1.0f32, -1.0, 1.0, -1.0, 2.0, 2.0, 2.0, 2.0])?;
/// let scale = rt.upload(&[1.0f32; 4])?;
/// let grad_y = rt.upload(&[1.0f32; 8])?;
/// let (mut y, mut rstd) = (rt.zeros::<f32>(8)?, rt.zeros::<f32>(2)?);
/// let (mut grad_x, mut grad_scale) = (rt.zeros::<f32>(8)?, rt.zeros::<f32>(4)?);
/// let mut batch = rt.batch();
/// let (x, scale) = (&x, &scale);
/// norm.forward(&mut batch, RmsNormForward { shape, x, scale, y: &mut y, rstd: &mut rstd })?;
/// let (rstd, grad_y) = (&rstd, &grad_y);
/// let (grad_x, grad_scale) = (&mut grad_x, &mut grad_scale);
/// let args = RmsNormBackward { shape, x, scale, rstd, grad_y, grad_x, grad_scale };
/// norm.backward(&mut batch, args)?;
/// batch.submit()?;
/// assert!((y.read(&rt)?[4] - 1.0).abs() < 1e-4);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct RmsNorm<E: RowElement = f32>(RmsNormKernels<E>);

/// RMSNorm's [`Norm`].
type RmsNormKernels<E> = Norm<
    RowKernels<kernels::RmsNormForward<E>, kernels::RmsNormForward<<E as RowElement>::Vector>>,
    RowKernels<
        kernels::RmsNormResidualForward<E>,
        kernels::RmsNormResidualForward<<E as RowElement>::Vector>,
    >,
    RowKernels<kernels::RmsNormGradX<E>, kernels::RmsNormGradX<<E as RowElement>::Vector>>,
    RowKernels<kernels::RmsNormGradSum<E>, kernels::RmsNormGradSum<<E as RowElement>::Vector>>,
    Widths<kernels::RmsNormGradScale<E>, kernels::RmsNormGradScale<<E as RowElement>::Vector>>,
    Widths<kernels::SumChunks<E>, kernels::SumChunks<<E as RowElement>::Vector>>,
>;

impl RmsNorm {
    /// The `eps` of [`new`](Self::new), whatever the element type.
    pub const DEFAULT_EPS: f32 = 1e-6;
}

impl<E: RowElement> RmsNorm<E> {
    /// Makes the op, with `eps` [`DEFAULT_EPS`](Self::DEFAULT_EPS); its kernels compile at
    /// their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        let forward = (
            row_kernels!(rt, RmsNormForward)?,
            row_kernels!(rt, RmsNormResidualForward)?,
        );
        let grad = (
            row_kernels!(rt, RmsNormGradX)?,
            row_kernels!(rt, RmsNormGradSum)?,
        );
        let sums = (widths!(rt, RmsNormGradScale), widths!(rt, SumChunks));
        Ok(RmsNorm(Norm::new(
            RmsNorm::DEFAULT_EPS,
            forward,
            grad,
            sums,
        )))
    }

    /// The op with `eps` (added to the mean square) instead; an error unless it is finite
    /// and not negative.
    pub fn with_eps(self, eps: f32) -> Result<Self> {
        Ok(RmsNorm(self.0.with_eps("RMSNorm", eps)?))
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.0.prepare(rt)
    }

    /// Records `y = x * rstd * scale` along each row, and each row's `rstd`.
    pub fn forward(&self, batch: &mut Batch<'_>, args: RmsNormForward<'_, E>) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        dispatch!(plan, self.0.forward, [plan.segment]; rms_forward(batch, &plan.params, args))
    }

    /// Records `sum = x + residual` and the norm of `sum` along each row, with each row's
    /// `rstd`: a residual add and the norm after it in one pass (a transformer block's
    /// `norm(x + branch(x))`), which saves reading the sum back. Its backward is
    /// [`backward_residual`](Self::backward_residual).
    pub fn forward_residual(
        &self,
        batch: &mut Batch<'_>,
        args: RmsNormResidualForward<'_, E>,
    ) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let (kernels, p) = (&self.0.residual_forward, &plan.params);
        dispatch!(plan, kernels, [plan.segment]; rms_residual_forward(batch, p, args))
    }

    /// Records the gradients with respect to `x` and `scale`, from the forward's `rstd`.
    pub fn backward(&self, batch: &mut Batch<'_>, mut args: RmsNormBackward<'_, E>) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let p = &plan.params;
        dispatch!(plan, self.0.grad_x, [plan.segment]; rms_grad_x(batch, p, &mut args))?;
        self.grad_scale(batch, &plan, &mut args)
    }

    /// The backward of [`forward_residual`](Self::forward_residual): adds the norm's gradient
    /// with respect to `sum` to `grad_sum` (which then holds the gradient of `x` and of
    /// `residual`), and writes `scale`'s.
    pub fn backward_residual(
        &self,
        batch: &mut Batch<'_>,
        args: RmsNormResidualBackward<'_, E>,
    ) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let mut args = RmsNormBackward {
            shape: args.shape,
            x: args.sum,
            scale: args.scale,
            rstd: args.rstd,
            grad_y: args.grad_y,
            grad_x: args.grad_sum,
            grad_scale: args.grad_scale,
        };
        let (kernels, p) = (&self.0.grad_sum, &plan.params);
        dispatch!(plan, kernels, [plan.segment]; rms_grad_sum(batch, p, &mut args))?;
        self.grad_scale(batch, &plan, &mut args)
    }

    /// Records `scale`'s gradient: the chunks' sums, then theirs.
    fn grad_scale(
        &self,
        batch: &mut Batch<'_>,
        plan: &Plan,
        args: &mut RmsNormBackward<'_, E>,
    ) -> Result<()> {
        let p = &plan.params;
        let mut held = self.0.partial.lock();
        let partial = held.at_least(batch.runtime(), p.chunks as usize * p.cols as usize)?;
        dispatch!(plan, self.0.grad_params; rms_grad_scale(batch, p, args, partial))?;
        dispatch!(plan, self.0.sum_chunks; sum_chunks(batch, p, partial, args.grad_scale))
    }
}

/// LayerNorm of each row with a learned scale and bias:
/// `y = (x - mean) * rstd * scale + bias`, where `rstd = 1 / sqrt(var(x) + eps)` (the
/// biased variance); and its backward, the gradients with respect to `x`, `scale` and `bias`.
///
/// Rows of any length (past [`MAX_COLS`](crate::MAX_COLS) scalars they are read twice, a
/// segment at a time, three times by the backward), in `f32`
/// storage (`LayerNorm`, the default) or `f16` (`LayerNorm<half::f16>`, computed in `f32`;
/// see [`RowElement`]). The parameters' gradients sum each column over chunks of the rows in a pass of their own, then
/// the chunks' sums in another, through scratch memory the op keeps.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{LayerNorm, LayerNormBackward, LayerNormForward, RowsShape};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let norm = LayerNorm::new(&rt)?;
/// let shape = RowsShape { rows: 1, cols: 3 };
/// let x = rt.upload(&[1.0f32, 2.0, 3.0])?;
/// let (scale, bias) = (rt.upload(&[1.0f32; 3])?, rt.upload(&[0.5f32; 3])?);
/// let grad_y = rt.upload(&[1.0f32, 0.0, 0.0])?;
/// let mut y = rt.zeros::<f32>(3)?;
/// let (mut mean, mut rstd) = (rt.zeros::<f32>(1)?, rt.zeros::<f32>(1)?);
/// let mut grad_x = rt.zeros::<f32>(3)?;
/// let (mut grad_scale, mut grad_bias) = (rt.zeros::<f32>(3)?, rt.zeros::<f32>(3)?);
/// let mut batch = rt.batch();
/// let (x, scale, bias) = (&x, &scale, &bias);
/// let (y, mean, rstd) = (&mut y, &mut mean, &mut rstd);
/// norm.forward(&mut batch, LayerNormForward { shape, x, scale, bias, y, mean, rstd })?;
/// let (mean, rstd, grad_y) = (&*mean, &*rstd, &grad_y);
/// let (grad_x, grad_scale, grad_bias) = (&mut grad_x, &mut grad_scale, &mut grad_bias);
/// let args = LayerNormBackward {
///     shape, x, scale, mean, rstd, grad_y, grad_x, grad_scale, grad_bias,
/// };
/// norm.backward(&mut batch, args)?;
/// batch.submit()?;
/// assert!((mean.read(&rt)?[0] - 2.0).abs() < 1e-6);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct LayerNorm<E: RowElement = f32>(LayerNormKernels<E>);

/// LayerNorm's [`Norm`].
type LayerNormKernels<E> = Norm<
    RowKernels<kernels::LayerNormForward<E>, kernels::LayerNormForward<<E as RowElement>::Vector>>,
    RowKernels<
        kernels::LayerNormResidualForward<E>,
        kernels::LayerNormResidualForward<<E as RowElement>::Vector>,
    >,
    RowKernels<kernels::LayerNormGradX<E>, kernels::LayerNormGradX<<E as RowElement>::Vector>>,
    RowKernels<kernels::LayerNormGradSum<E>, kernels::LayerNormGradSum<<E as RowElement>::Vector>>,
    Widths<
        kernels::LayerNormGradParams<E>,
        kernels::LayerNormGradParams<<E as RowElement>::Vector>,
    >,
    Widths<kernels::SumChunkPairs<E>, kernels::SumChunkPairs<<E as RowElement>::Vector>>,
>;

impl LayerNorm {
    /// The `eps` of [`new`](Self::new) (PyTorch's), whatever the element type.
    pub const DEFAULT_EPS: f32 = 1e-5;
}

impl<E: RowElement> LayerNorm<E> {
    /// Makes the op, with `eps` [`DEFAULT_EPS`](Self::DEFAULT_EPS); its kernels compile at
    /// their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        let forward = (
            row_kernels!(rt, LayerNormForward)?,
            row_kernels!(rt, LayerNormResidualForward)?,
        );
        let grad = (
            row_kernels!(rt, LayerNormGradX)?,
            row_kernels!(rt, LayerNormGradSum)?,
        );
        let sums = (widths!(rt, LayerNormGradParams), widths!(rt, SumChunkPairs));
        Ok(LayerNorm(Norm::new(
            LayerNorm::DEFAULT_EPS,
            forward,
            grad,
            sums,
        )))
    }

    /// The op with `eps` (added to the variance) instead; an error unless it is finite and
    /// not negative.
    pub fn with_eps(self, eps: f32) -> Result<Self> {
        Ok(LayerNorm(self.0.with_eps("LayerNorm", eps)?))
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.0.prepare(rt)
    }

    /// Records `y = (x - mean) * rstd * scale + bias` along each row, and each row's `mean`
    /// and `rstd`.
    pub fn forward(&self, batch: &mut Batch<'_>, args: LayerNormForward<'_, E>) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        dispatch!(plan, self.0.forward, [plan.segment]; layer_forward(batch, &plan.params, args))
    }

    /// Records `sum = x + residual` and the norm of `sum` along each row, with each row's
    /// `mean` and `rstd`: a residual add and the norm after it in one pass (a transformer
    /// block's `norm(x + branch(x))`), which saves reading the sum back. Its backward is
    /// [`backward_residual`](Self::backward_residual).
    ///
    /// ```no_run
    /// # use tessera::Runtime;
    /// # use tessera_nn::{LayerNorm, LayerNormResidualBackward, LayerNormResidualForward, RowsShape};
    /// # fn main() -> Result<(), tessera::Error> {
    /// let rt = Runtime::new()?;
    /// let norm = LayerNorm::new(&rt)?;
    /// let shape = RowsShape { rows: 1, cols: 2 };
    /// let (x, residual) = (rt.upload(&[1.0f32, 2.0])?, rt.upload(&[2.0f32, 5.0])?);
    /// let (scale, bias) = (rt.upload(&[1.0f32; 2])?, rt.upload(&[0.0f32; 2])?);
    /// let (mut sum, mut y) = (rt.zeros::<f32>(2)?, rt.zeros::<f32>(2)?);
    /// let (mut mean, mut rstd) = (rt.zeros::<f32>(1)?, rt.zeros::<f32>(1)?);
    /// let mut batch = rt.batch();
    /// let (x, residual, scale, bias) = (&x, &residual, &scale, &bias);
    /// let (sum, y) = (&mut sum, &mut y);
    /// let (mean, rstd) = (&mut mean, &mut rstd);
    /// let args = LayerNormResidualForward { shape, x, residual, scale, bias, sum, y, mean, rstd };
    /// norm.forward_residual(&mut batch, args)?;
    /// // The gradient the sum received along the residual stream, to which the norm's is added.
    /// let mut grad_sum = rt.upload(&[0.5f32, 0.5])?;
    /// let grad_y = rt.upload(&[1.0f32, -1.0])?;
    /// let (mut grad_scale, mut grad_bias) = (rt.zeros::<f32>(2)?, rt.zeros::<f32>(2)?);
    /// let args = LayerNormResidualBackward {
    ///     shape, sum: &*sum, scale, mean: &*mean, rstd: &*rstd, grad_y: &grad_y,
    ///     grad_sum: &mut grad_sum, grad_scale: &mut grad_scale, grad_bias: &mut grad_bias,
    /// };
    /// norm.backward_residual(&mut batch, args)?;
    /// batch.submit()?;
    /// assert_eq!(sum.read(&rt)?, vec![3.0, 7.0]);
    /// # Ok(()) }
    /// ```
    pub fn forward_residual(
        &self,
        batch: &mut Batch<'_>,
        args: LayerNormResidualForward<'_, E>,
    ) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let (kernels, p) = (&self.0.residual_forward, &plan.params);
        dispatch!(plan, kernels, [plan.segment]; layer_residual_forward(batch, p, args))
    }

    /// Records the gradients with respect to `x`, `scale` and `bias`, from the forward's
    /// `mean` and `rstd`.
    pub fn backward(
        &self,
        batch: &mut Batch<'_>,
        mut args: LayerNormBackward<'_, E>,
    ) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let p = &plan.params;
        dispatch!(plan, self.0.grad_x, [plan.segment]; layer_grad_x(batch, p, &mut args))?;
        self.grad_params(batch, &plan, &mut args)
    }

    /// The backward of [`forward_residual`](Self::forward_residual): adds the norm's gradient
    /// with respect to `sum` to `grad_sum` (which then holds the gradient of `x` and of
    /// `residual`), and writes `scale`'s and `bias`'s.
    pub fn backward_residual(
        &self,
        batch: &mut Batch<'_>,
        args: LayerNormResidualBackward<'_, E>,
    ) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let mut args = LayerNormBackward {
            shape: args.shape,
            x: args.sum,
            scale: args.scale,
            mean: args.mean,
            rstd: args.rstd,
            grad_y: args.grad_y,
            grad_x: args.grad_sum,
            grad_scale: args.grad_scale,
            grad_bias: args.grad_bias,
        };
        let (kernels, p) = (&self.0.grad_sum, &plan.params);
        dispatch!(plan, kernels, [plan.segment]; layer_grad_sum(batch, p, &mut args))?;
        self.grad_params(batch, &plan, &mut args)
    }

    /// Records `scale`'s and `bias`'s gradients: the chunks' sums, then theirs.
    fn grad_params(
        &self,
        batch: &mut Batch<'_>,
        plan: &Plan,
        args: &mut LayerNormBackward<'_, E>,
    ) -> Result<()> {
        let p = &plan.params;
        let mut held = self.0.partial.lock();
        let len = 2 * p.chunks as usize * p.cols as usize;
        let partial = held.at_least(batch.runtime(), len)?;
        dispatch!(plan, self.0.grad_params; layer_grad_params(batch, p, args, partial))?;
        let sums = (&mut *args.grad_scale, &mut *args.grad_bias);
        dispatch!(plan, self.0.sum_chunks; sum_chunk_pairs(batch, p, partial, sums))
    }
}

/// What [`RmsNorm`] and [`LayerNorm`] are made of: their `eps`, their kernels in both widths
/// (the forward, alone and after a residual add, and the gradient with respect to its input,
/// written or added, an instance per segment; the parameters' gradients summed over chunks of
/// rows, and the pass that sums the chunks) and the scratch memory between the last two.
#[derive(Clone, Debug)]
struct Norm<Forward, ResidualForward, GradX, GradSum, GradParams, SumChunks> {
    eps: f32,
    forward: Forward,
    residual_forward: ResidualForward,
    grad_x: GradX,
    grad_sum: GradSum,
    grad_params: GradParams,
    sum_chunks: SumChunks,
    /// The chunks' sums of each parameter's gradient.
    partial: Spare,
}

impl<F: Prepare, R: Prepare, G: Prepare, A: Prepare, P: Prepare, S: Prepare>
    Norm<F, R, G, A, P, S>
{
    fn new(
        eps: f32,
        (forward, residual_forward): (F, R),
        (grad_x, grad_sum): (G, A),
        (grad_params, sum_chunks): (P, S),
    ) -> Self {
        let partial = Spare::default();
        Norm {
            eps,
            forward,
            residual_forward,
            grad_x,
            grad_sum,
            grad_params,
            sum_chunks,
            partial,
        }
    }

    /// The norm with `eps`, or an error naming `operation` unless it is finite and not
    /// negative.
    fn with_eps(self, operation: &str, eps: f32) -> Result<Self> {
        if !(eps.is_finite() && eps >= 0.0) {
            let fix = "pass a small positive number such as 1e-5";
            let message = format!("eps must be finite and not negative, got {eps}; {fix}");
            return Err(invalid(operation, message));
        }
        Ok(Norm { eps, ..self })
    }

    fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Norm {
            forward, residual_forward, grad_x, grad_sum, grad_params, sum_chunks;
            eps, partial
        })
    }
}

// Each function below records one kernel in the width of `U`, `args`' buffers viewed as `U`s.

fn rms_forward<E: RowElement, U: kernels::RmsNormForwardElement>(
    kernel: &kernels::RmsNormForward<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: RmsNormForward<'_, E>,
) -> Result<()> {
    let bound = kernels::RmsNormForwardArgs {
        p,
        x: &*args.x.view_as()?,
        scale: &*args.scale.view_as()?,
        y: &mut *args.y.view_as_mut()?,
        rstd: args.rstd,
    };
    kernel.record(batch, bound)
}

fn rms_residual_forward<E: RowElement, U: kernels::RmsNormResidualForwardElement>(
    kernel: &kernels::RmsNormResidualForward<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: RmsNormResidualForward<'_, E>,
) -> Result<()> {
    let bound = kernels::RmsNormResidualForwardArgs {
        p,
        x: &*args.x.view_as()?,
        residual: &*args.residual.view_as()?,
        scale: &*args.scale.view_as()?,
        sum: &mut *args.sum.view_as_mut()?,
        y: &mut *args.y.view_as_mut()?,
        rstd: args.rstd,
    };
    kernel.record(batch, bound)
}

fn rms_grad_sum<E: RowElement, U: kernels::RmsNormGradSumElement>(
    kernel: &kernels::RmsNormGradSum<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: &mut RmsNormBackward<'_, E>,
) -> Result<()> {
    let bound = kernels::RmsNormGradSumArgs {
        p,
        sum: &*args.x.view_as()?,
        scale: &*args.scale.view_as()?,
        rstd: args.rstd,
        grad_y: &*args.grad_y.view_as()?,
        grad_sum: &mut *args.grad_x.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn rms_grad_x<E: RowElement, U: kernels::RmsNormGradXElement>(
    kernel: &kernels::RmsNormGradX<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: &mut RmsNormBackward<'_, E>,
) -> Result<()> {
    let bound = kernels::RmsNormGradXArgs {
        p,
        x: &*args.x.view_as()?,
        scale: &*args.scale.view_as()?,
        rstd: args.rstd,
        grad_y: &*args.grad_y.view_as()?,
        grad_x: &mut *args.grad_x.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn rms_grad_scale<E: RowElement, U: kernels::RmsNormGradScaleElement>(
    kernel: &kernels::RmsNormGradScale<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: &RmsNormBackward<'_, E>,
    partial: &mut GpuBuffer<f32>,
) -> Result<()> {
    let bound = kernels::RmsNormGradScaleArgs {
        p,
        x: &*args.x.view_as()?,
        rstd: args.rstd,
        grad_y: &*args.grad_y.view_as()?,
        partial: &mut *partial.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn sum_chunks<E: RowElement, U: kernels::SumChunksElement>(
    kernel: &kernels::SumChunks<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    partial: &GpuBuffer<f32>,
    grad_scale: &mut GpuBuffer<E>,
) -> Result<()> {
    let bound = kernels::SumChunksArgs {
        p,
        partial: &*partial.view_as()?,
        grad_scale: &mut *grad_scale.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn layer_forward<E: RowElement, U: kernels::LayerNormForwardElement>(
    kernel: &kernels::LayerNormForward<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: LayerNormForward<'_, E>,
) -> Result<()> {
    let bound = kernels::LayerNormForwardArgs {
        p,
        x: &*args.x.view_as()?,
        scale: &*args.scale.view_as()?,
        bias: &*args.bias.view_as()?,
        y: &mut *args.y.view_as_mut()?,
        mean: args.mean,
        rstd: args.rstd,
    };
    kernel.record(batch, bound)
}

fn layer_residual_forward<E: RowElement, U: kernels::LayerNormResidualForwardElement>(
    kernel: &kernels::LayerNormResidualForward<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: LayerNormResidualForward<'_, E>,
) -> Result<()> {
    let bound = kernels::LayerNormResidualForwardArgs {
        p,
        x: &*args.x.view_as()?,
        residual: &*args.residual.view_as()?,
        scale: &*args.scale.view_as()?,
        bias: &*args.bias.view_as()?,
        sum: &mut *args.sum.view_as_mut()?,
        y: &mut *args.y.view_as_mut()?,
        mean: args.mean,
        rstd: args.rstd,
    };
    kernel.record(batch, bound)
}

fn layer_grad_sum<E: RowElement, U: kernels::LayerNormGradSumElement>(
    kernel: &kernels::LayerNormGradSum<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: &mut LayerNormBackward<'_, E>,
) -> Result<()> {
    let bound = kernels::LayerNormGradSumArgs {
        p,
        sum: &*args.x.view_as()?,
        scale: &*args.scale.view_as()?,
        mean: args.mean,
        rstd: args.rstd,
        grad_y: &*args.grad_y.view_as()?,
        grad_sum: &mut *args.grad_x.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn layer_grad_x<E: RowElement, U: kernels::LayerNormGradXElement>(
    kernel: &kernels::LayerNormGradX<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: &mut LayerNormBackward<'_, E>,
) -> Result<()> {
    let bound = kernels::LayerNormGradXArgs {
        p,
        x: &*args.x.view_as()?,
        scale: &*args.scale.view_as()?,
        mean: args.mean,
        rstd: args.rstd,
        grad_y: &*args.grad_y.view_as()?,
        grad_x: &mut *args.grad_x.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn layer_grad_params<E: RowElement, U: kernels::LayerNormGradParamsElement>(
    kernel: &kernels::LayerNormGradParams<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: &LayerNormBackward<'_, E>,
    partial: &mut GpuBuffer<f32>,
) -> Result<()> {
    let bound = kernels::LayerNormGradParamsArgs {
        p,
        x: &*args.x.view_as()?,
        mean: args.mean,
        rstd: args.rstd,
        grad_y: &*args.grad_y.view_as()?,
        partial: &mut *partial.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

fn sum_chunk_pairs<E: RowElement, U: kernels::SumChunkPairsElement>(
    kernel: &kernels::SumChunkPairs<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    partial: &GpuBuffer<f32>,
    (grad_scale, grad_bias): (&mut GpuBuffer<E>, &mut GpuBuffer<E>),
) -> Result<()> {
    let bound = kernels::SumChunkPairsArgs {
        p,
        partial: &*partial.view_as()?,
        grad_scale: &mut *grad_scale.view_as_mut()?,
        grad_bias: &mut *grad_bias.view_as_mut()?,
    };
    kernel.record(batch, bound)
}
