//! The filter gradient: `grad_w` from the input and the gradient before the activation, as
//! an implicit GEMM in f32 or on the tensor cores (by taps or not, or as a stream), or by
//! Winograd (`winograd`).

use super::plan::{self, WeightPlan};
use super::winograd::by_winograd;
use super::{kernels, streams_on, tuned, Convolution, Passes};
use crate::tune::{FragmentTile, Stream, Tile, WeightWay};
use crate::{Activation, Conv2dGradWeight, Conv2dShape};
use tessera::{Batch, GpuBuffer, Result, Runtime};

impl Convolution {
    /// Records only the filter's gradient, `grad_w`, from the input and the gradient before
    /// the activation.
    ///
    /// The blocking is autotuned; with autotuning off it is the small one for at most 64
    /// output channels. On the tensor cores, with input channels a multiple of the blocking's
    /// block (128 in the large blocking, 64 in the small), each block of the filter may cover
    /// a single filter tap, which makes larger convolutions faster, and on Vulkan the pass
    /// may run as a stream, as the forward's (see [`Convolution::forward`]), for filters of
    /// few blocks with a long sum; the tuner decides.
    pub fn grad_weight(&self, batch: &mut Batch<'_>, args: Conv2dGradWeight<'_>) -> Result<()> {
        let Conv2dGradWeight {
            shape,
            x,
            grad_pre,
            grad_w,
        } = args;
        let p = shape.params(Activation::None)?;
        let way = self.weight_way(batch.runtime(), &shape, p)?;
        let io = WeightBuffers {
            x,
            grad_pre,
            grad_w,
        };
        self.weight_pass(batch, WeightPass::Record, way, p, io)
    }

    /// How the filter gradient runs for `shape`: as an implicit GEMM in either blocking
    /// (always split as `plan::split_weight_grad` says), or for the shapes Winograd's F(3x3,
    /// 4x4) fits, by it in either blocking; with autotuning off, by Winograd where it fits.
    /// On the tensor cores, as an implicit GEMM in either blocking, by taps or not, or as a
    /// stream; with autotuning off, by taps.
    pub(super) fn weight_way(
        &self,
        rt: &Runtime,
        shape: &Conv2dShape,
        p: kernels::ConvParams,
    ) -> Result<WeightWay> {
        let operation = "nn::Convolution::grad_weight";
        let ways = match self.passes {
            Passes::TensorCores(_) => (
                &WeightWay::ON_TENSOR_CORES[..],
                WeightWay::fixed_on_tensor_cores(p.out_channels),
            ),
            Passes::F32 if by_winograd(&p, rt) => {
                let winograd = WeightWay::fixed_winograd(p.out_channels.min(p.in_channels));
                (&WeightWay::IN_F32_OR_WINOGRAD[..], winograd)
            }
            Passes::F32 => {
                let f32 = &WeightWay::IN_F32_OR_WINOGRAD[..2];
                (f32, WeightWay::fixed(p.out_channels))
            }
        };
        tuned(rt, operation, shape, &p, ways, |tune, way, s| {
            self.weight_pass(tune, WeightPass::Record, way, p, s.weight())
        })
    }

    /// The blockings the filter gradient's kernels were built in, for its plans.
    pub(super) fn weight_caps(&self, rt: &Runtime) -> plan::WeightCaps {
        plan::WeightCaps {
            f32: self.grad_weight.each(|k| k.conv_grad_weight().constants()),
            winograd: (self.grad_weight_winograd).each(|k| k.winograd_multiply().constants()),
            tensor: self.passes.tensor_cores().map(|f| {
                let streams = (f.grad_weight_stream.as_ref())
                    .filter(|_| streams_on(rt))
                    .map(|s| s.each(|k| k.constants()));
                (f.grad_weight.each(|k| k.constants()), streams)
            }),
        }
    }

    /// The filter gradient run `way`, as [`plan::grad_weight`] plans it, recorded or
    /// (`WeightPass::Check`) only checked, with its scratch memory grown to what it needs
    /// either way.
    pub(super) fn weight_pass(
        &self,
        batch: &mut Batch<'_>,
        pass: WeightPass,
        way: WeightWay,
        p: kernels::ConvParams,
        io: WeightBuffers<'_>,
    ) -> Result<()> {
        let plan = plan::grad_weight(&p, way, &self.weight_caps(batch.runtime()));
        let p = plan.params(p);
        match plan {
            WeightPlan::F32 { tile, .. } => self.weight_f32(batch, pass, tile, p, io),
            WeightPlan::Winograd { tile, .. } => self.weight_winograd(batch, pass, tile, p, io),
            WeightPlan::TensorCores { tile, by_tap, .. } => {
                let pass = (pass, by_tap);
                self.weight_on_tensor_cores(batch, pass, tile, p, io)
            }
            WeightPlan::Stream(stream) => self.weight_stream(batch, pass, stream, p, io),
        }
    }

    /// The filter gradient as an implicit GEMM in f32, in `tile`, its slices as `p` says.
    pub(super) fn weight_f32(
        &self,
        batch: &mut Batch<'_>,
        pass: WeightPass,
        tile: Tile,
        p: kernels::ConvParams,
        io: WeightBuffers<'_>,
    ) -> Result<()> {
        let family = self.grad_weight.get(tile.pick());
        let mut partials = self.partials.lock();
        let needed = weight_partials(&p, io.grad_w.len());
        let mut args = kernels::ConvGradWeightSplitArgs {
            p: &p,
            x: io.x,
            grad_pre: io.grad_pre,
            partial: partials.at_least(batch.runtime(), needed)?,
            grad_w: io.grad_w,
        };
        match pass {
            WeightPass::Check => family.check_lengths(&mut args),
            WeightPass::Record => family.record(batch, args),
        }
    }

    /// The filter gradient on the tensor cores in `tile`, by taps or not (`pass.1`), sliced
    /// as `p` says, then its slices added up.
    pub(super) fn weight_on_tensor_cores(
        &self,
        batch: &mut Batch<'_>,
        (pass, by_tap): (WeightPass, bool),
        tile: FragmentTile,
        p: kernels::ConvParams,
        io: WeightBuffers<'_>,
    ) -> Result<()> {
        let f = self.tensor_cores();
        let WeightBuffers {
            x,
            grad_pre,
            grad_w,
        } = io;
        let mut partials = self.partials.lock();
        let needed = weight_partials(&p, grad_w.len());
        let partial = partials.at_least(batch.runtime(), needed)?;
        let (kernel, by_tap_kernel) = (
            f.grad_weight.get(tile.pick()),
            f.grad_weight_by_tap.get(tile.pick()),
        );
        macro_rules! args {
            ($args:ident) => {
                kernels::$args {
                    p: &p,
                    x,
                    grad_pre,
                    partial: &mut *partial,
                    grad_w: &mut *grad_w,
                }
            };
        }
        match (pass, by_tap) {
            (WeightPass::Check, false) => {
                return kernel.check_lengths(&args!(ConvGradWeightFragmentsArgs));
            }
            (WeightPass::Check, true) => {
                return by_tap_kernel.check_lengths(&args!(ConvGradWeightFragmentsByTapArgs));
            }
            (WeightPass::Record, false) => {
                kernel.record(batch, args!(ConvGradWeightFragmentsArgs))?;
            }
            (WeightPass::Record, true) => {
                by_tap_kernel.record(batch, args!(ConvGradWeightFragmentsByTapArgs))?;
            }
        }
        // One slice wrote `grad_w` whole: nothing to add (an empty dispatch still costs its
        // place in the pass).
        if p.splits == 1 {
            return Ok(());
        }
        let args = kernels::ConvGradWeightReduceArgs {
            p: &p,
            partial,
            grad_w,
        };
        f.reduce.record(batch, args)
    }

    /// The filter gradient on the tensor cores as `stream`.
    pub(super) fn weight_stream(
        &self,
        batch: &mut Batch<'_>,
        pass: WeightPass,
        stream: Stream,
        p: kernels::ConvParams,
        io: WeightBuffers<'_>,
    ) -> Result<()> {
        let streams = self.tensor_cores().grad_weight_stream.as_ref();
        let kernel = streams
            .expect("a stream plan comes from its kernels")
            .get(stream.tile);
        let len = kernel.constants().partials(p.workers);
        self.record_stream(batch, len, p.workers, |batch, partial, arrivals| {
            let args = kernels::ConvGradWeightFragmentsStreamedArgs {
                p: &p,
                x: io.x,
                grad_pre: io.grad_pre,
                partial,
                arrivals,
                grad_w: io.grad_w,
            };
            match pass {
                WeightPass::Check => kernel.check_lengths(&args),
                WeightPass::Record => kernel.record(batch, args),
            }
        })
    }
}

/// A filter gradient's buffers.
pub(super) struct WeightBuffers<'b> {
    pub(super) x: &'b GpuBuffer<f32>,
    pub(super) grad_pre: &'b GpuBuffer<f32>,
    pub(super) grad_w: &'b mut GpuBuffer<f32>,
}

/// Whether [`Convolution::weight_pass`] records the pass or only checks its buffers (for a caller
/// that records other work first and checks every buffer before recording anything).
#[derive(Clone, Copy, Debug)]
pub(super) enum WeightPass {
    Check,
    Record,
}

/// The partial sums the filter gradient's slices after the first need.
fn weight_partials(p: &kernels::ConvParams, filter: usize) -> usize {
    (p.splits as usize).saturating_sub(1).saturating_mul(filter)
}
