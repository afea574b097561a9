//! Softmax along the last dimension.

use super::{dispatch, kernels, row_args, row_kernels, RowArgs, RowElement, RowKernels, RowsShape};
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// One [`Softmax::forward`].
#[derive(Debug)]
pub struct SoftmaxForward<'a, E: RowElement = f32> {
    /// The sizes of `x` and `y`.
    pub shape: RowsShape,
    /// `[rows, cols]`: the input.
    pub x: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the softmax of each row of `x` (overwritten), which the backward reads.
    pub y: &'a mut GpuBuffer<E>,
}

row_args!(SoftmaxForward, "softmax forward": x: Matrix, y: Matrix);

/// One [`Softmax::backward`].
#[derive(Debug)]
pub struct SoftmaxBackward<'a, E: RowElement = f32> {
    /// The forward's shape.
    pub shape: RowsShape,
    /// The forward's `y`.
    pub y: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the gradient of the loss with respect to `y`.
    pub grad_y: &'a GpuBuffer<E>,
    /// `[rows, cols]`: the gradient of the loss with respect to `x` (overwritten).
    pub grad_x: &'a mut GpuBuffer<E>,
}

row_args!(SoftmaxBackward, "softmax backward": y: Matrix, grad_y: Matrix, grad_x: Matrix);

/// Softmax of each row, `y = exp(x - max) / sum(exp(x - max))`, and its backward
/// `grad_x = y * (grad_y - sum_c(grad_y * y))`.
///
/// Rows of any length: one that a workgroup holds (up to [`MAX_COLS`](crate::MAX_COLS)
/// scalars; see [`RowsShape`]) is read once by each pass, a longer one twice, a segment at a
/// time. Over `f32` storage (`Softmax`, the default) or `f16` (`Softmax<half::f16>`, computed
/// in `f32`; see [`RowElement`]).
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{RowsShape, Softmax, SoftmaxBackward, SoftmaxForward};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let softmax = Softmax::new(&rt)?;
/// let shape = RowsShape { rows: 2, cols: 3 };
/// let x = rt.upload(&[1.0f32, 2.0, 3.0, 0.0, 0.0, 0.0])?;
/// let grad_y = rt.upload(&[1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0])?;
/// let (mut y, mut grad_x) = (rt.zeros::<f32>(6)?, rt.zeros::<f32>(6)?);
/// let mut batch = rt.batch();
/// softmax.forward(&mut batch, SoftmaxForward { shape, x: &x, y: &mut y })?;
/// let (y, grad_y, grad_x) = (&y, &grad_y, &mut grad_x);
/// softmax.backward(&mut batch, SoftmaxBackward { shape, y, grad_y, grad_x })?;
/// batch.submit()?;
/// let y = y.read(&rt)?;
/// assert!((y[3] - 1.0 / 3.0).abs() < 1e-6);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Softmax<E: RowElement = f32> {
    forward: RowKernels<kernels::SoftmaxForward<E>, kernels::SoftmaxForward<E::Vector>>,
    backward: RowKernels<kernels::SoftmaxBackward<E>, kernels::SoftmaxBackward<E::Vector>>,
}

impl<E: RowElement> Softmax<E> {
    /// Makes the op; its kernels compile at their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(Softmax {
            forward: row_kernels!(rt, SoftmaxForward)?,
            backward: row_kernels!(rt, SoftmaxBackward)?,
        })
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Softmax { forward, backward; })
    }

    /// Records `y = softmax(x)` along each row.
    pub fn forward(&self, batch: &mut Batch<'_>, args: SoftmaxForward<'_, E>) -> Result<()> {
        let plan = args.plan(0.0)?;
        dispatch!(plan, self.forward, [plan.segment]; record_forward(batch, &plan.params, args))
    }

    /// Records `grad_x = y * (grad_y - sum_c(grad_y * y))` along each row, from the
    /// forward's `y`.
    pub fn backward(&self, batch: &mut Batch<'_>, args: SoftmaxBackward<'_, E>) -> Result<()> {
        let plan = args.plan(0.0)?;
        dispatch!(plan, self.backward, [plan.segment]; record_backward(batch, &plan.params, args))
    }
}

/// Records `kernel`, the forward in the width of `U`, with `args`' buffers viewed as `U`s.
fn record_forward<E: RowElement, U: kernels::SoftmaxForwardElement>(
    kernel: &kernels::SoftmaxForward<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: SoftmaxForward<'_, E>,
) -> Result<()> {
    let bound = kernels::SoftmaxForwardArgs {
        p,
        x: &*args.x.view_as()?,
        y: &mut *args.y.view_as_mut()?,
    };
    kernel.record(batch, bound)
}

/// Records `kernel`, the backward in the width of `U`, with `args`' buffers viewed as `U`s.
fn record_backward<E: RowElement, U: kernels::SoftmaxBackwardElement>(
    kernel: &kernels::SoftmaxBackward<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: SoftmaxBackward<'_, E>,
) -> Result<()> {
    let bound = kernels::SoftmaxBackwardArgs {
        p,
        y: &*args.y.view_as()?,
        grad_y: &*args.grad_y.view_as()?,
        grad_x: &mut *args.grad_x.view_as_mut()?,
    };
    kernel.record(batch, bound)
}
