//! The backward pass: the gradient through the activation, then the input's, the filter's
//! and the bias's gradients.

use super::filter_gradient::{WeightBuffers, WeightPass};
use super::input_gradient::InputBuffers;
use super::{kernels, plan, Convolution};
use crate::gemm::{add_up_rows, forward_pre};
use crate::split::{ColumnSums, Split};
use crate::tune::{ConvWay, WeightWay};
use crate::Conv2dBackward;
use tessera::{Batch, GpuBuffer, Result};

impl Convolution {
    /// Records the backward pass from `grad_y` and the forward's `x`, `w` and `pre`: the
    /// gradient through the activation, then the input's (when asked), the filter's and the
    /// bias's gradients, each overwritten.
    ///
    /// The input and filter gradients run the blockings [`Convolution::grad_input`] and
    /// [`Convolution::grad_weight`] would.
    pub fn backward(&self, batch: &mut Batch<'_>, args: Conv2dBackward<'_>) -> Result<()> {
        let Conv2dBackward {
            shape,
            activation,
            x,
            w,
            pre,
            grad_y,
            grad_x,
            grad_w,
            grad_bias,
        } = args;
        let shape = &shape;
        let p = shape.params(activation)?;
        let pre = forward_pre(pre, grad_y, activation, "conv2d backward")?;
        let rt = batch.runtime();
        let input_way = match grad_x {
            Some(_) => self.input_way(rt, shape, p)?,
            None => ConvWay::fixed(p.in_channels),
        };
        let weight_way = self.weight_way(rt, shape, p)?;
        let input_plan = plan::grad_input(&p, input_way, &self.input_caps(rt));
        // An input gradient the family's member does not compute (strided: one stride phase
        // at a time; few input channels: directly; split: in slices; on the tensor cores)
        // runs after the family, from the `grad_pre` it wrote.
        let (grad_x, mut later_x) = match grad_x {
            Some(grad_x) if !input_plan.in_family() => (None, Some(grad_x)),
            grad_x => (grad_x, None),
        };
        let mut spare = self.grad_pre.lock();
        let mut io = BackwardBuffers {
            x,
            w,
            pre,
            grad_y,
            grad_pre: spare.at_least(rt, shape.output_len()?)?,
            grad_x,
            grad_w,
            grad_bias,
        };
        let tile = input_way.in_f32().0.pick();
        let later = later_x.as_deref_mut();
        self.check_backward(batch, tile, weight_way, p, &mut io, later)?;
        let p = self.record_family(batch, self.backward.get(tile), p, &mut io)?;
        self.weight_pass(batch, WeightPass::Record, weight_way, p, io.weight())?;
        match later_x {
            Some(grad_x) => {
                let (w, grad_pre) = (io.w, &*io.grad_pre);
                let io = InputBuffers {
                    w,
                    grad_pre,
                    grad_x,
                };
                self.record_grad_input(batch, input_plan, p, io)
            }
            None => Ok(()),
        }
    }

    /// Checks every buffer of a backward before anything is recorded: the family's in
    /// `tile`, the filter gradient's run `weight_way`, and an input gradient's that runs on
    /// its own (`later_x`; the phased kernel declares the lengths every input gradient
    /// needs, the family's member leaves them to the family).
    pub(super) fn check_backward(
        &self,
        batch: &mut Batch<'_>,
        tile: kernels::Pick,
        weight_way: WeightWay,
        p: kernels::ConvParams,
        io: &mut BackwardBuffers<'_>,
        later_x: Option<&mut GpuBuffer<f32>>,
    ) -> Result<()> {
        if let Some(grad_x) = later_x {
            let phased = self.grad_input_phased.get(tile);
            phased.check_lengths(&kernels::ConvGradInputPhasedArgs {
                p: &p,
                w: io.w,
                grad_pre: io.grad_pre,
                grad_x,
            })?;
        }
        // (The bias gradient whole: its slices' sums go to scratch of the right length.)
        self.backward.get(tile).check_lengths(&mut io.args(&p))?;
        self.weight_pass(batch, WeightPass::Check, weight_way, p, io.weight())
    }

    /// Records the backward family (the gradient through the activation, the input's where
    /// its member computes it, the bias's) and, where the bias gradient sums in slices, their
    /// sum; returns `p` with the bias gradient's slices.
    pub(super) fn record_family(
        &self,
        batch: &mut Batch<'_>,
        family: &kernels::ConvBackward,
        mut p: kernels::ConvParams,
        io: &mut BackwardBuffers<'_>,
    ) -> Result<kernels::ConvParams> {
        // The bias gradient sums images x pixels for each output channel: in slices, whose
        // sums are added up after the family, when the channels alone leave the GPU idle.
        let sums = ColumnSums {
            columns: 1,
            rows: kernels::SUMS * kernels::GROUP,
        };
        let cut = Split::of(sums, 1, p.out_channels, p.batch * p.out_h * p.out_w);
        (p.bias_splits, p.bias_split_depth) = (cut.splits, cut.depth);
        if cut.splits == 1 {
            family.record(batch, io.args(&p))?;
            return Ok(p);
        }
        let mut spare_sums = self.bias_sums.lock();
        let len = cut.partials(1, p.out_channels);
        let bias_sums = spare_sums.at_least(batch.runtime(), len)?;
        let args = kernels::ConvBackwardArgs {
            grad_bias: &mut *bias_sums,
            ..io.args(&p)
        };
        family.record(batch, args)?;
        let (add_up, grad_bias) = (&self.add_up_bias, &mut *io.grad_bias);
        add_up_rows(
            batch,
            add_up,
            bias_sums,
            cut.splits,
            p.out_channels,
            grad_bias,
        )?;
        Ok(p)
    }
}

/// What a backward reads and writes.
pub(super) struct BackwardBuffers<'b> {
    x: &'b GpuBuffer<f32>,
    w: &'b GpuBuffer<f32>,
    pre: &'b GpuBuffer<f32>,
    grad_y: &'b GpuBuffer<f32>,
    grad_pre: &'b mut GpuBuffer<f32>,
    /// Where the family's member computes the input gradient.
    grad_x: Option<&'b mut GpuBuffer<f32>>,
    grad_w: &'b mut GpuBuffer<f32>,
    grad_bias: &'b mut GpuBuffer<f32>,
}

impl BackwardBuffers<'_> {
    /// The backward family's arguments, with `p`.
    fn args<'a>(&'a mut self, p: &'a kernels::ConvParams) -> kernels::ConvBackwardArgs<'a> {
        kernels::ConvBackwardArgs {
            p,
            w: self.w,
            pre: self.pre,
            grad_y: self.grad_y,
            grad_pre: &mut *self.grad_pre,
            grad_x: self.grad_x.as_deref_mut(),
            grad_bias: &mut *self.grad_bias,
        }
    }

    /// The filter gradient's buffers.
    fn weight(&mut self) -> WeightBuffers<'_> {
        WeightBuffers {
            x: self.x,
            grad_pre: self.grad_pre,
            grad_w: &mut *self.grad_w,
        }
    }
}
