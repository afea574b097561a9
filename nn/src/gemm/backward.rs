//! The backward: `grad_pre` through the activation, both operand gradients (in one pass) and
//! the bias gradient.

use super::plan::{self, BackwardPlan, Operands};
use super::{invalid, kernels, params, tuned, vectors, Gemm, Passes};
use crate::split::{ColumnSums, Split};
use crate::tune::GemmWay;
use crate::{Activation, GemmBackward, GemmShape};
use tessera::{Batch, GpuBuffer, Result};

impl Gemm {
    /// Records the backward pass: from `grad_y` and the forward's `pre`, the gradients of `a`,
    /// `b` and `bias` (overwritten), as four ordered passes.
    ///
    /// The operand gradients' blocking is autotuned, and whether they sum in slices; with
    /// autotuning off it is the small one when `m` or `k` (their output rows) is at most 64,
    /// and a gradient too small to fill the GPU sums in slices.
    pub fn backward(&self, batch: &mut Batch<'_>, args: GemmBackward<'_>) -> Result<()> {
        let GemmBackward {
            shape,
            activation,
            a,
            b,
            pre,
            grad_y,
            grad_a,
            grad_b,
            grad_bias,
        } = args;
        let p = params(shape, activation)?;
        let pre = forward_pre(pre, grad_y, activation, "gemm backward")?;
        let GemmShape { m, n, k } = shape;
        let ways = match self.passes {
            Passes::TensorCores(_) => (
                &GemmWay::ON_TENSOR_CORES[..],
                GemmWay::fixed_on_tensor_cores(m.min(k)),
            ),
            Passes::F32 => (&GemmWay::IN_F32[..], GemmWay::fixed(m.min(k))),
        };
        let rt = batch.runtime();
        let way = tuned(rt, "nn::Gemm::backward", shape, ways, |tune, way, s| {
            self.backward_way(tune, way, p, s.backward())
        })?;
        let (mut spare_pre, mut spare_a) = (self.grad_pre.lock(), self.grad_a.lock());
        let io = BackwardBuffers {
            a,
            b,
            pre,
            grad_y,
            grad_pre: spare_pre.at_least(rt, m as usize * n as usize)?,
            grad_a: spare_a.unless_given(grad_a, rt, m as usize * k as usize)?,
            grad_b,
            grad_bias,
        };
        self.backward_way(batch, way, p, io)
    }

    /// The blockings the backward's kernels were built in, for its plans.
    pub(super) fn backward_caps(&self) -> plan::Caps {
        plan::Caps {
            f32: self.operands.each(|k| k.constants()),
            tensor: self
                .passes
                .tensor_cores()
                .map(|f| f.operands.each(|k| k.constants())),
            wide: false,
        }
    }

    /// The backward run `way`, as [`plan::backward`] plans it.
    pub(super) fn backward_way(
        &self,
        batch: &mut Batch<'_>,
        way: GemmWay,
        p: kernels::GemmParams,
        io: BackwardBuffers<'_>,
    ) -> Result<()> {
        let binding = plan::Binding {
            operands: vectors(p, io.a, io.b).is_some(),
            others: io.grad_pre.view_as::<[f32; 4]>().is_ok(),
        };
        let plan = plan::backward(&p, way, &self.backward_caps(), binding);
        self.record_backward(batch, plan, p, io)
    }

    /// Records the backward as `plan` says, in order: `grad_pre`, both operand gradients
    /// (each summed in slices as its cut says, the slices then added up), and the bias
    /// gradient (in slices of rows when there are many, then their sum).
    pub(super) fn record_backward(
        &self,
        batch: &mut Batch<'_>,
        plan: BackwardPlan,
        p: kernels::GemmParams,
        mut io: BackwardBuffers<'_>,
    ) -> Result<()> {
        let p = plan.params(p);
        let (cut_a, cut_b) = (plan.cut_a, plan.cut_b);
        let family = &self.backward;
        // Each operand's first slice goes to its gradient, the others to `partial`.
        let needed = cut_a.partials(p.m, p.k) + cut_b.partials(p.k, p.n)
            - p.m as usize * p.k as usize
            - p.k as usize * p.n as usize;
        let mut partials = self.partials.lock();
        let partial = partials.at_least(batch.runtime(), needed)?;
        // Every buffer is checked before anything is recorded (the bias gradient whole: its
        // slices' sums go to scratch of the right length).
        family.check_lengths(&mut io.args(&p, partial))?;
        // The operand gradients' lengths are the same in every pass that computes them.
        self.operands
            .large
            .check_lengths(&io.operand_args(&p, partial))?;
        let args = kernels::GradPreArgs {
            p: &p,
            pre: io.pre,
            grad_y: io.grad_y,
            grad_pre: &mut *io.grad_pre,
        };
        family.grad_pre().record(batch, args)?;
        self.record_operands(batch, plan.operands, &p, &mut io, partial)?;
        if cut_a.splits > 1 || cut_b.splits > 1 {
            let args = kernels::DOperandsReduceArgs {
                p: &p,
                partial,
                grad_a: io.grad_a,
                grad_b: io.grad_b,
            };
            family.d_operands_reduce().record(batch, args)?;
        }
        self.record_bias_gradient(batch, family.d_bias(), p, io.grad_pre, io.grad_bias)
    }

    /// Records both operand gradients as `operands` says.
    pub(super) fn record_operands(
        &self,
        batch: &mut Batch<'_>,
        operands: Operands,
        p: &kernels::GemmParams,
        io: &mut BackwardBuffers<'_>,
        partial: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        match operands {
            Operands::TensorCores { tile } => {
                let kernels::DOperandsArgs {
                    p,
                    a,
                    grad_a,
                    b,
                    grad_b,
                    grad_pre,
                    partial,
                } = io.operand_args(p, partial);
                let args = kernels::DOperandsFragmentsArgs {
                    p,
                    a,
                    grad_a,
                    b,
                    grad_b,
                    grad_pre,
                    partial,
                };
                (self.tensor_cores().operands.get(tile.pick())).record(batch, args)
            }
            Operands::F32 {
                tile,
                vectors: true,
            } => {
                let args = kernels::DOperandsArgs {
                    p,
                    a: &*io.a.view_as::<[f32; 4]>()?,
                    grad_a: &mut *io.grad_a,
                    b: &*io.b.view_as::<[f32; 4]>()?,
                    grad_b: &mut *io.grad_b,
                    grad_pre: &*io.grad_pre.view_as::<[f32; 4]>()?,
                    partial,
                };
                self.operands_vectors.get(tile.pick()).record(batch, args)
            }
            Operands::F32 {
                tile,
                vectors: false,
            } => {
                let args = io.operand_args(p, partial);
                self.operands.get(tile.pick()).record(batch, args)
            }
        }
    }

    /// `grad_bias` = the column sums of `grad_pre` (`m x n`): in one pass, or where the rows
    /// alone would keep few workgroups busy for long, in slices of rows whose sums a second
    /// pass adds up. (On an H100 one workgroup summing 65536 rows of 64 columns took most of
    /// a millisecond; notes/performance.md.)
    pub(super) fn record_bias_gradient(
        &self,
        batch: &mut Batch<'_>,
        d_bias: &kernels::DBias,
        mut p: kernels::GemmParams,
        grad_pre: &GpuBuffer<f32>,
        grad_bias: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let sums = ColumnSums {
            columns: kernels::NARROW,
            rows: kernels::SUMS * kernels::GROUP / kernels::NARROW,
        };
        let cut = Split::of(sums, 1, p.n, p.m);
        if cut.splits == 1 {
            return d_bias.record(
                batch,
                kernels::DBiasArgs {
                    p: &p,
                    grad_pre,
                    grad_bias,
                },
            );
        }
        (p.bias_splits, p.bias_split_rows) = (cut.splits, cut.depth);
        let mut spare = self.bias_sums.lock();
        let sums = spare.at_least(batch.runtime(), cut.partials(1, p.n))?;
        d_bias.record(
            batch,
            kernels::DBiasArgs {
                p: &p,
                grad_pre,
                grad_bias: sums,
            },
        )?;
        add_up_rows(batch, d_bias, sums, cut.splits, p.n, grad_bias)
    }
}

/// The forward's `pre` a backward of `activation` reads (for `op`'s errors): as given, or
/// without activation `grad_y`, read only through the activation's derivative, which is 1
/// everywhere.
pub(crate) fn forward_pre<'b>(
    pre: Option<&'b GpuBuffer<f32>>,
    grad_y: &'b GpuBuffer<f32>,
    activation: Activation,
    op: &str,
) -> Result<&'b GpuBuffer<f32>> {
    match pre {
        Some(pre) => Ok(pre),
        None if activation == Activation::None => Ok(grad_y),
        None => Err(invalid(
            op,
            format!(
                "the backward pass of {activation:?} needs the forward's `pre`; pass the \
                 buffer the forward wrote it to"
            ),
        )),
    }
}

/// Records `out[j]` = the sum of the `rows` rows of `columns` in `sums` (a bias gradient's
/// slices' sums), by `d_bias`.
pub(crate) fn add_up_rows(
    batch: &mut Batch<'_>,
    d_bias: &kernels::DBias,
    sums: &GpuBuffer<f32>,
    rows: u32,
    columns: u32,
    out: &mut GpuBuffer<f32>,
) -> Result<()> {
    let shape = GemmShape {
        m: rows,
        n: columns,
        k: 1,
    };
    d_bias.record(
        batch,
        kernels::DBiasArgs {
            p: &params(shape, Activation::None)?,
            grad_pre: sums,
            grad_bias: out,
        },
    )
}

/// What a backward reads and writes.
pub(super) struct BackwardBuffers<'b> {
    pub(super) a: &'b GpuBuffer<f32>,
    pub(super) b: &'b GpuBuffer<f32>,
    pub(super) pre: &'b GpuBuffer<f32>,
    pub(super) grad_y: &'b GpuBuffer<f32>,
    pub(super) grad_pre: &'b mut GpuBuffer<f32>,
    pub(super) grad_a: &'b mut GpuBuffer<f32>,
    pub(super) grad_b: &'b mut GpuBuffer<f32>,
    pub(super) grad_bias: &'b mut GpuBuffer<f32>,
}

impl BackwardBuffers<'_> {
    /// The backward family's arguments, with `p` and the operand gradients' `partial`.
    fn args<'a>(
        &'a mut self,
        p: &'a kernels::GemmParams,
        partial: &'a mut GpuBuffer<f32>,
    ) -> kernels::GemmBackwardArgs<'a> {
        kernels::GemmBackwardArgs {
            p,
            pre: self.pre,
            grad_y: self.grad_y,
            grad_pre: &mut *self.grad_pre,
            grad_a: &mut *self.grad_a,
            grad_b: &mut *self.grad_b,
            partial,
            grad_bias: &mut *self.grad_bias,
        }
    }

    /// The operand gradients' arguments (`d_operands` over scalars), with `p` and `partial`.
    fn operand_args<'a>(
        &'a mut self,
        p: &'a kernels::GemmParams,
        partial: &'a mut GpuBuffer<f32>,
    ) -> kernels::DOperandsArgs<'a, f32> {
        kernels::DOperandsArgs {
            p,
            a: self.a,
            grad_a: &mut *self.grad_a,
            b: self.b,
            grad_b: &mut *self.grad_b,
            grad_pre: &*self.grad_pre,
            partial,
        }
    }
}
