//! The forward: `y = act(a · b + bias)`, in f32 or on the tensor cores, whole or its sum in
//! slices.

use super::plan::{self, ForwardPlan};
use super::{kernels, params, tuned, vectors, Gemm, Passes};
use crate::split::Split;
use crate::tune::{GemmTile, GemmWay, Tile};
use crate::{GemmForward, GemmShape};
use tessera::{Batch, GpuBuffer, Result};

/// The edge of a tensor-core fragment: the narrowest output the forward puts on the tensor
/// cores with autotuning off.
const FRAGMENT_EDGE: u32 = 16;
impl Gemm {
    /// The ways the forward may run, and the one with autotuning off.
    ///
    /// On the tensor cores, the forward is tuned among the fragment kernels and the f32 ways,
    /// each whole and split (a long sum over an output too small to fill the GPU). With
    /// autotuning off, an output narrower than a fragment (16) runs as in f32: on M, N, K =
    /// 256, 4, 16384 the whole fragment kernels ran several times slower than the split f32
    /// ones (H100, 2026-11-23, commits 71b552d and 8ebd0f5: 0.27-0.66 ms against 0.06;
    /// notes/performance.md), while from 35 rows on they ran faster. (Split, the fragment
    /// kernels ran that shape faster than f32 did, 0.037 against 0.059 ms at commit 505aff1;
    /// the tuner finds that, and one shape is too few to move the rule.)
    pub(super) fn forward_ways(&self, shape: GemmShape) -> (&'static [GemmWay], GemmWay) {
        let rows = shape.m.min(shape.n);
        let ways = &GemmWay::FORWARD_ON_TENSOR_CORES;
        match self.passes {
            Passes::TensorCores(_) if rows >= FRAGMENT_EDGE => {
                (ways, GemmWay::fixed_on_tensor_cores(rows))
            }
            Passes::TensorCores(_) => (ways, GemmWay::fixed(rows)),
            Passes::F32 => (&GemmWay::IN_F32, GemmWay::fixed(rows)),
        }
    }

    /// Records `y = act(a · b + bias)`, keeping `a · b + bias` in `pre` when given.
    ///
    /// The blocking is autotuned (see [`Runtime::autotune`](tessera::Runtime::autotune)); with
    /// autotuning off it is the small one when either side of the output is at most 64, the
    /// large one otherwise.
    pub fn forward(&self, batch: &mut Batch<'_>, args: GemmForward<'_>) -> Result<()> {
        let GemmForward {
            shape,
            activation,
            a,
            b,
            bias,
            pre,
            y,
        } = args;
        let p = kernels::GemmParams {
            keep_pre: u32::from(pre.is_some()),
            ..params(shape, activation)?
        };
        let ways = self.forward_ways(shape);
        let rt = batch.runtime();
        let way = tuned(rt, "nn::Gemm::forward", shape, ways, |tune, way, s| {
            self.forward_way(tune, way, p, s.forward())
        })?;
        let mut spare = self.pre.lock();
        let pre = spare.unless_given(pre, rt, shape.m as usize * shape.n as usize)?;
        self.forward_way(batch, way, p, ForwardBuffers { a, b, bias, pre, y })
    }

    /// The blockings the forward's kernels were built in, for its plans.
    pub(super) fn forward_caps(&self) -> plan::Caps {
        plan::Caps {
            f32: self.split.each(|k| k.gemm_forward_partial().constants()),
            tensor: self
                .passes
                .tensor_cores()
                .map(|f| f.forward.each(|k| k.constants())),
            wide: self.passes.tensor_cores().is_some_and(|f| f.wide.is_some()),
        }
    }

    /// The forward run `way`, as [`plan::forward`] plans it.
    pub(super) fn forward_way(
        &self,
        batch: &mut Batch<'_>,
        way: GemmWay,
        p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let binding = plan::Binding {
            operands: vectors(p, io.a, io.b).is_some(),
            // (The scratch `partial` of a pass on the tensor cores holds whole vectors too:
            // `Spare` rounds its lengths up to them.)
            others: [io.bias.len(), io.pre.len(), io.y.len()]
                .iter()
                .all(|len| len.is_multiple_of(4)),
        };
        let plan = plan::forward(&p, way, &self.forward_caps(), binding);
        self.record_forward(batch, plan, p, io)
    }

    /// Records the forward as `plan` says.
    pub(super) fn record_forward(
        &self,
        batch: &mut Batch<'_>,
        plan: ForwardPlan,
        p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let ForwardBuffers { a, b, bias, pre, y } = io;
        match plan {
            ForwardPlan::F32 {
                tile,
                vectors: true,
            } => {
                let (a, b) = &vectors(p, a, b).expect("planned over the vectors they bind as");
                let args = kernels::GemmForwardArgs {
                    p: &p,
                    a,
                    b,
                    bias,
                    pre,
                    y,
                };
                self.forward_vectors.get(tile.pick()).record(batch, args)
            }
            ForwardPlan::F32 {
                tile,
                vectors: false,
            } => {
                let args = kernels::GemmForwardArgs {
                    p: &p,
                    a,
                    b,
                    bias,
                    pre,
                    y,
                };
                self.forward.get(tile.pick()).record(batch, args)
            }
            ForwardPlan::F32Sliced { tile, cut } => {
                let io = ForwardBuffers { a, b, bias, pre, y };
                self.forward_f32_sliced(batch, tile, cut, p, io)
            }
            ForwardPlan::TensorCores { tile, cut, vectors } => {
                let io = ForwardBuffers { a, b, bias, pre, y };
                self.forward_on_tensor_cores(batch, (tile, vectors), cut, p, io)
            }
            ForwardPlan::Wide { cut } => {
                let io = ForwardBuffers { a, b, bias, pre, y };
                self.forward_wide(batch, cut, p, io)
            }
        }
    }

    /// The f32 forward in `tile`, its sum cut as `cut` says.
    pub(super) fn forward_f32_sliced(
        &self,
        batch: &mut Batch<'_>,
        tile: Tile,
        cut: Split,
        mut p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        // `Split::of` keeps `splits * m * n` within `u32`.
        let needed = cut.splits as usize * p.m as usize * p.n as usize;
        let mut partials = self.partials.lock();
        let args = kernels::GemmForwardSplitArgs {
            p: &p,
            a: io.a,
            b: io.b,
            bias: io.bias,
            partial: partials.at_least(batch.runtime(), needed)?,
            pre: io.pre,
            y: io.y,
        };
        self.split.get(tile.pick()).record(batch, args)
    }

    /// The forward in the wide blocking, whole over vectors.
    pub(super) fn forward_wide(
        &self,
        batch: &mut Batch<'_>,
        cut: Split,
        mut p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let wide = (self.tensor_cores().wide.as_ref()).expect("planned where the device has it");
        let (a, b) = &vectors(p, io.a, io.b).expect("planned over the vectors they bind as");
        let args = kernels::GemmForwardFragmentsWideArgs {
            p: &p,
            a,
            b,
            bias: &*io.bias.view_as()?,
            pre: &mut *io.pre.view_as_mut()?,
            y: &mut *io.y.view_as_mut()?,
        };
        wide.record(batch, args)
    }

    /// The forward on the tensor cores in `tile`, over vectors or not, its sum in slices as
    /// `cut` says (the first slice into `pre`, the others into scratch, then added up with
    /// the bias and the activation).
    pub(super) fn forward_on_tensor_cores(
        &self,
        batch: &mut Batch<'_>,
        (tile, vectors): (GemmTile, bool),
        cut: Split,
        mut p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let fragments = self.tensor_cores();
        let ForwardBuffers { a, b, bias, pre, y } = io;
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let mut partials = self.partials.lock();
        let outputs = p.m as usize * p.n as usize;
        let partial = partials.at_least(batch.runtime(), cut.partials(p.m, p.n) - outputs)?;
        // The reduce binds nothing the forward has not checked.
        match vectors {
            true => {
                let (a, b) =
                    &self::vectors(p, a, b).expect("planned over the vectors they bind as");
                let args = kernels::GemmForwardFragmentsArgs {
                    p: &p,
                    a,
                    b,
                    bias: &*bias.view_as()?,
                    pre: &mut *pre.view_as_mut()?,
                    y: &mut *y.view_as_mut()?,
                    partial: &mut *partial.view_as_mut()?,
                };
                fragments
                    .forward_vectors
                    .get(tile.pick())
                    .record(batch, args)?;
            }
            false => {
                let args = kernels::GemmForwardFragmentsArgs {
                    p: &p,
                    a,
                    b,
                    bias,
                    pre: &mut *pre,
                    y: &mut *y,
                    partial: &mut *partial,
                };
                fragments.forward.get(tile.pick()).record(batch, args)?;
            }
        }
        if cut.splits == 1 {
            return Ok(());
        }
        let args = kernels::GemmForwardFragmentsReduceArgs {
            p: &p,
            partial,
            bias,
            pre,
            y,
        };
        fragments.forward_reduce.record(batch, args)
    }
}

/// A forward's buffers.
pub(super) struct ForwardBuffers<'b> {
    pub(super) a: &'b GpuBuffer<f32>,
    pub(super) b: &'b GpuBuffer<f32>,
    pub(super) bias: &'b GpuBuffer<f32>,
    pub(super) pre: &'b mut GpuBuffer<f32>,
    pub(super) y: &'b mut GpuBuffer<f32>,
}
