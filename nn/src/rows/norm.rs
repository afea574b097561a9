//! RMSNorm and LayerNorm along the last dimension, with a learned scale (and bias).

use super::{
    dispatch, kernels, row_args, row_kernels, widths, RowArgs, RowElement, RowKernels, RowsShape,
    Widths,
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
    RowKernels<kernels::RmsNormGradX<E>, kernels::RmsNormGradX<<E as RowElement>::Vector>>,
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
        let forward = row_kernels!(rt, RmsNormForward)?;
        let grad_x = row_kernels!(rt, RmsNormGradX)?;
        let sums = (widths!(rt, RmsNormGradScale), widths!(rt, SumChunks));
        Ok(RmsNorm(Norm::new(
            RmsNorm::DEFAULT_EPS,
            forward,
            grad_x,
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

    /// Records the gradients with respect to `x` and `scale`, from the forward's `rstd`.
    pub fn backward(&self, batch: &mut Batch<'_>, mut args: RmsNormBackward<'_, E>) -> Result<()> {
        let plan = args.plan(self.0.eps)?;
        let p = &plan.params;
        dispatch!(plan, self.0.grad_x, [plan.segment]; rms_grad_x(batch, p, &mut args))?;
        let mut held = self.0.partial.lock();
        let partial = held.at_least(batch.runtime(), p.chunks as usize * p.cols as usize)?;
        dispatch!(plan, self.0.grad_params; rms_grad_scale(batch, p, &args, partial))?;
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
    RowKernels<kernels::LayerNormGradX<E>, kernels::LayerNormGradX<<E as RowElement>::Vector>>,
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
        let forward = row_kernels!(rt, LayerNormForward)?;
        let grad_x = row_kernels!(rt, LayerNormGradX)?;
        let sums = (widths!(rt, LayerNormGradParams), widths!(rt, SumChunkPairs));
        Ok(LayerNorm(Norm::new(
            LayerNorm::DEFAULT_EPS,
            forward,
            grad_x,
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
        let mut held = self.0.partial.lock();
        let len = 2 * p.chunks as usize * p.cols as usize;
        let partial = held.at_least(batch.runtime(), len)?;
        dispatch!(plan, self.0.grad_params; layer_grad_params(batch, p, &args, partial))?;
        let sums = (args.grad_scale, args.grad_bias);
        dispatch!(plan, self.0.sum_chunks; sum_chunk_pairs(batch, p, partial, sums))
    }
}

/// What [`RmsNorm`] and [`LayerNorm`] are made of: their `eps`, their kernels in both widths
/// (the forward and the gradient with respect to `x`, an instance per segment; the parameters'
/// gradients summed over chunks of rows, and the pass that sums the chunks) and the scratch
/// memory between the last two.
#[derive(Clone, Debug)]
struct Norm<Forward, GradX, GradParams, SumChunks> {
    eps: f32,
    forward: Forward,
    grad_x: GradX,
    grad_params: GradParams,
    sum_chunks: SumChunks,
    /// The chunks' sums of each parameter's gradient.
    partial: Spare,
}

impl<F: Prepare, G: Prepare, P: Prepare, S: Prepare> Norm<F, G, P, S> {
    fn new(eps: f32, forward: F, grad_x: G, (grad_params, sum_chunks): (P, S)) -> Self {
        let partial = Spare::default();
        Norm {
            eps,
            forward,
            grad_x,
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
        prepare_fields!(rt, self => Norm { forward, grad_x, grad_params, sum_chunks; eps, partial })
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
