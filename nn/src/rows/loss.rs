//! Softmax cross-entropy, the classification loss.

use super::{dispatch, kernels, row_kernels, RowKernels, RowsShape};
use crate::invalid;
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// `rows` rows of `classes` scores each: the shape of a classifier's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LossShape {
    /// Rows (examples), each with one label.
    pub rows: u32,
    /// Scores per row.
    pub classes: u32,
}

/// One [`SoftmaxCrossEntropy::forward`].
#[derive(Debug)]
pub struct LossForward<'a> {
    /// The sizes of `logits` and `labels`.
    pub shape: LossShape,
    /// `[rows, classes]`: the scores.
    pub logits: &'a GpuBuffer<f32>,
    /// `[rows]`: each row's class.
    pub labels: &'a GpuBuffer<u32>,
    /// `[rows, classes]`: the softmax of each row, which the backward pass reads.
    pub probs: &'a mut GpuBuffer<f32>,
    /// `[rows]`: each row's loss.
    pub losses: &'a mut GpuBuffer<f32>,
}

/// One [`SoftmaxCrossEntropy::backward`].
#[derive(Debug)]
pub struct LossBackward<'a> {
    /// The forward's shape.
    pub shape: LossShape,
    /// The forward's `probs`.
    pub probs: &'a GpuBuffer<f32>,
    /// The forward's `labels`.
    pub labels: &'a GpuBuffer<u32>,
    /// `[rows, classes]`: the gradient of the mean loss with respect to the logits
    /// (overwritten).
    pub grad_logits: &'a mut GpuBuffer<f32>,
}

/// Softmax cross-entropy over rows of logits with one integer label per row: the forward
/// writes each row's probabilities and loss, the backward the gradient of the mean loss.
///
/// The forward runs a workgroup a row, as [`Softmax`](crate::Softmax) does, over rows of any
/// length (a vocabulary's): a row that one segment of the row kernels holds (up to
/// [`MAX_COLS`](crate::MAX_COLS) classes) is read once, a longer one twice.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{LossBackward, LossForward, LossShape, SoftmaxCrossEntropy};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let loss = SoftmaxCrossEntropy::new(&rt)?;
/// let shape = LossShape { rows: 2, classes: 3 };
/// let logits = rt.upload(&[2.0f32, 0.0, 0.0, 0.0, 3.0, 0.0])?;
/// let labels = rt.upload(&[0u32, 1])?;
/// let (mut probs, mut losses) = (rt.zeros::<f32>(6)?, rt.zeros::<f32>(2)?);
/// let mut grad_logits = rt.zeros::<f32>(6)?;
/// let mut batch = rt.batch();
/// let (logits, labels) = (&logits, &labels);
/// loss.forward(&mut batch, LossForward { shape, logits, labels, probs: &mut probs, losses: &mut losses })?;
/// let probs = &probs;
/// loss.backward(&mut batch, LossBackward { shape, probs, labels, grad_logits: &mut grad_logits })?;
/// batch.submit()?;
/// let mean = SoftmaxCrossEntropy::mean(&losses.read(&rt)?)?;
/// assert!(mean > 0.0 && mean < 0.2);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SoftmaxCrossEntropy {
    forward: RowKernels<kernels::CrossEntropy, kernels::CrossEntropy<[f32; 4]>>,
    backward: crate::kernels::SoftmaxCrossEntropyGrad,
}

impl SoftmaxCrossEntropy {
    /// Makes the op; its kernels compile at their first use.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(SoftmaxCrossEntropy {
            forward: row_kernels!(rt, CrossEntropy)?,
            backward: crate::kernels::SoftmaxCrossEntropyGrad::new(rt)?,
        })
    }

    /// Records `probs = softmax(logits)` and each row's loss `-ln probs[label]`. A label
    /// outside `0..classes` makes that row's loss -1, which [`mean`](Self::mean) reports as
    /// an error.
    pub fn forward(&self, batch: &mut Batch<'_>, args: LossForward<'_>) -> Result<()> {
        let LossShape { rows, classes } = args.shape;
        // Checked here first, so that an empty shape is reported in the loss's own words
        // (`classes`, not the row kernels' `cols`).
        params(args.shape)?;
        let plan = RowsShape {
            rows,
            cols: classes,
        }
        .plan_for(OPERATION, 0.0)?;
        dispatch!(plan, self.forward, [plan.segment]; record_forward(batch, &plan.params, args))
    }

    /// Records the gradient of the mean loss over the rows with respect to the logits,
    /// `(probs - one_hot(label)) / rows`, from the forward's `probs`.
    pub fn backward(&self, batch: &mut Batch<'_>, args: LossBackward<'_>) -> Result<()> {
        self.backward_scaled(batch, args, 1.0)
    }

    /// Records the gradient of `loss_scale` times the mean loss, `loss_scale * (probs -
    /// one_hot(label)) / rows`: loss scaling, for a backward on the tensor cores.
    ///
    /// [`Precision::TensorCoreF16`](crate::Precision::TensorCoreF16) rounds the gradients it
    /// multiplies to f16, whose normal range ends at about 6e-5: a mean's gradients over
    /// thousands of rows fall below it and lose most of their digits (a GPT trained so ends
    /// far above its f32 loss). A `loss_scale` of about `rows` keeps them in range; every
    /// gradient behind the loss then carries the factor, which
    /// [`GradClip::clip_scaled`](crate::GradClip::clip_scaled) takes off before the optimizer
    /// sees them. `loss_scale` must be finite and above 0.
    pub fn backward_scaled(
        &self,
        batch: &mut Batch<'_>,
        args: LossBackward<'_>,
        loss_scale: f32,
    ) -> Result<()> {
        let LossBackward {
            shape,
            probs,
            labels,
            grad_logits,
        } = args;
        if !(loss_scale.is_finite() && loss_scale > 0.0) {
            let problem = format!("`loss_scale` is {loss_scale}: pass a finite number above 0");
            return Err(invalid(OPERATION, problem));
        }
        let mut p = params(shape)?;
        p.scale *= loss_scale;
        self.backward.record(
            batch,
            crate::kernels::SoftmaxCrossEntropyGradArgs {
                p: &p,
                probs,
                labels,
                grad_logits,
            },
        )
    }

    /// The mean of the per-row losses the forward wrote (read back to the host); an error
    /// naming the first row whose label was out of range.
    pub fn mean(losses: &[f32]) -> Result<f32> {
        if losses.is_empty() {
            return Err(invalid(OPERATION, "no losses to average".into()));
        }
        if let Some(row) = losses.iter().position(|&l| l < 0.0) {
            return Err(invalid(
                OPERATION,
                format!("the label of row {row} is not below the number of classes"),
            ));
        }
        let sum: f64 = losses.iter().map(|&l| f64::from(l)).sum();
        Ok((sum / losses.len() as f64) as f32)
    }
}

/// The op's name in errors.
const OPERATION: &str = "softmax cross-entropy";

fn params(shape: LossShape) -> Result<crate::kernels::LossParams> {
    let LossShape { rows, classes } = shape;
    if rows == 0 || classes == 0 {
        return Err(invalid(
            OPERATION,
            format!("rows and classes must be at least 1, got {rows} and {classes}"),
        ));
    }
    Ok(crate::kernels::LossParams {
        rows,
        classes,
        scale: 1.0 / rows as f32,
    })
}

/// Records `kernel`, the forward in the width of `U`, with `args`' buffers viewed as `U`s.
fn record_forward<U: kernels::CrossEntropyElement>(
    kernel: &kernels::CrossEntropy<U>,
    batch: &mut Batch<'_>,
    p: &kernels::RowParams,
    args: LossForward<'_>,
) -> Result<()> {
    let bound = kernels::CrossEntropyArgs {
        p,
        logits: &*args.logits.view_as()?,
        labels: args.labels,
        probs: &mut *args.probs.view_as_mut()?,
        loss: args.losses,
    };
    kernel.record(batch, bound)
}
