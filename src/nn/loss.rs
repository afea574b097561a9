//! Softmax cross-entropy, the classification loss.

use super::{invalid, kernels};
use crate::{Batch, GpuBuffer, Result, Runtime};

/// Softmax cross-entropy over rows of logits with one integer label per row: the forward
/// writes each row's probabilities and loss, the backward the gradient of the mean loss.
///
/// ```no_run
/// # use tessera::{nn::SoftmaxCrossEntropy, Runtime};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let loss = SoftmaxCrossEntropy::new(&rt)?;
/// let logits = rt.upload(&[2.0f32, 0.0, 0.0, 0.0, 3.0, 0.0])?; // 2 rows of 3 classes
/// let labels = rt.upload(&[0u32, 1])?;
/// let (mut probs, mut losses) = (rt.zeros::<f32>(6)?, rt.zeros::<f32>(2)?);
/// let mut grad = rt.zeros::<f32>(6)?;
/// let mut batch = rt.batch();
/// loss.forward(&mut batch, 2, 3, &logits, &labels, &mut probs, &mut losses)?;
/// loss.backward(&mut batch, 2, 3, &probs, &labels, &mut grad)?;
/// batch.submit()?;
/// let mean = SoftmaxCrossEntropy::mean(&losses.read(&rt)?)?;
/// assert!(mean > 0.0 && mean < 0.2);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SoftmaxCrossEntropy {
    forward: kernels::SoftmaxCrossEntropy,
    backward: kernels::SoftmaxCrossEntropyGrad,
}

impl SoftmaxCrossEntropy {
    /// Builds both pipelines.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(SoftmaxCrossEntropy {
            forward: kernels::SoftmaxCrossEntropy::new(rt)?,
            backward: kernels::SoftmaxCrossEntropyGrad::new(rt)?,
        })
    }

    /// Records, for `rows` rows of `classes` logits, `probs = softmax(logits)` and each row's
    /// loss `-ln probs[label]`. A label outside `0..classes` makes that row's loss -1, which
    /// [`mean`](Self::mean) reports as an error.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        batch: &mut Batch<'_>,
        rows: u32,
        classes: u32,
        logits: &GpuBuffer<f32>,
        labels: &GpuBuffer<u32>,
        probs: &mut GpuBuffer<f32>,
        losses: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let p = params(rows, classes)?;
        self.forward.record(
            batch,
            kernels::SoftmaxCrossEntropyArgs {
                p: &p,
                logits,
                labels,
                probs,
                loss: losses,
            },
        )
    }

    /// Records the gradient of the mean loss over the rows with respect to the logits,
    /// `(probs - one_hot(label)) / rows`, from the forward's `probs`.
    pub fn backward(
        &self,
        batch: &mut Batch<'_>,
        rows: u32,
        classes: u32,
        probs: &GpuBuffer<f32>,
        labels: &GpuBuffer<u32>,
        grad_logits: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let p = params(rows, classes)?;
        self.backward.record(
            batch,
            kernels::SoftmaxCrossEntropyGradArgs {
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
            return Err(invalid(
                "softmax cross-entropy",
                "no losses to average".into(),
            ));
        }
        if let Some(row) = losses.iter().position(|&l| l < 0.0) {
            return Err(invalid(
                "softmax cross-entropy",
                format!("the label of row {row} is not below the number of classes"),
            ));
        }
        let sum: f64 = losses.iter().map(|&l| f64::from(l)).sum();
        Ok((sum / losses.len() as f64) as f32)
    }
}

fn params(rows: u32, classes: u32) -> Result<kernels::LossParams> {
    if rows == 0 || classes == 0 {
        return Err(invalid(
            "softmax cross-entropy",
            format!("rows and classes must be at least 1, got {rows} and {classes}"),
        ));
    }
    Ok(kernels::LossParams {
        rows,
        classes,
        scale: 1.0 / rows as f32,
    })
}
