//! The input gradient: `grad_x` from the gradient before the activation, directly for few
//! input channels, by stride phases, or as the forward runs (in f32, or on the tensor cores
//! gathering, by taps, over a staged window or as a stream).

use super::plan::{self, Direction, InputPlan, Sum, TapPlan, TensorPlan};
use super::{kernels, streams_on, tuned, Convolution, Passes};
use crate::tune::ConvWay;
use crate::{Activation, Conv2dGradInput, Conv2dShape};
use tessera::half::f16;
use tessera::{Batch, GpuBuffer, Result, Runtime};

impl Convolution {
    /// Records only the input's gradient, `grad_x`, from the gradient before the activation
    /// (for a convolution without activation, the output's gradient).
    ///
    /// The blocking is autotuned; with autotuning off it is the small one for at most 64
    /// input channels. On the tensor cores, for stride 1 and output channels a multiple of the
    /// blocking's step, it may first copy the filter into a layout of its own and run by taps
    /// (whole, in slices or as a stream) or over a staged window, as the forward may.
    pub fn grad_input(&self, batch: &mut Batch<'_>, args: Conv2dGradInput<'_>) -> Result<()> {
        let Conv2dGradInput {
            shape,
            w,
            grad_pre,
            grad_x,
        } = args;
        let p = shape.params(Activation::None)?;
        let way = self.input_way(batch.runtime(), &shape, p)?;
        let io = InputBuffers {
            w,
            grad_pre,
            grad_x,
        };
        self.grad_input_way(batch, way, p, io)
    }

    /// How the input gradient runs for `shape` (nothing to choose with few input channels).
    pub(super) fn input_way(
        &self,
        rt: &Runtime,
        shape: &Conv2dShape,
        p: kernels::ConvParams,
    ) -> Result<ConvWay> {
        if plan::by_few_channels(&p) {
            return Ok(ConvWay::fixed(p.in_channels));
        }
        let operation = "nn::Convolution::grad_input";
        let ways = match self.passes {
            // One stride phase at a time, never split.
            Passes::TensorCores(_) if plan::by_phases(&p) => (
                &ConvWay::PHASED_ON_TENSOR_CORES[..],
                ConvWay::fixed_gather(p.in_channels),
            ),
            Passes::TensorCores(_) => (
                &ConvWay::ON_TENSOR_CORES[..],
                ConvWay::fixed_window(p.in_channels),
            ),
            Passes::F32 => (&ConvWay::IN_F32[..], ConvWay::fixed(p.in_channels)),
        };
        tuned(rt, operation, shape, &p, ways, |tune, way, s| {
            self.grad_input_way(tune, way, p, s.input())
        })
    }

    /// The blockings the input gradient's kernels were built in, for its plans.
    pub(super) fn input_caps(&self, rt: &Runtime) -> plan::Caps {
        plan::Caps {
            f32: (self.grad_input_split).each(|k| k.conv_grad_input_partial().constants()),
            tensor: self.passes.tensor_cores().map(|f| plan::TapCaps {
                steps: f.grad_input.each(|k| k.constants()),
                cuts: (f.grad_input_split)
                    .each(|k| k.conv_grad_input_fragments_partial().constants()),
                window: f
                    .grad_input_window
                    .as_ref()
                    .map(|w| w.each(|k| k.constants())),
                all_taps: f.grad_input_all_taps.as_ref().map(|k| k.constants()),
                streams: (f.grad_input_by_tap_stream.as_ref())
                    .filter(|_| streams_on(rt))
                    .map(|s| s.each(|k| k.constants())),
            }),
        }
    }

    /// The input gradient run `way`, as [`plan::grad_input`] plans it.
    pub(super) fn grad_input_way(
        &self,
        batch: &mut Batch<'_>,
        way: ConvWay,
        p: kernels::ConvParams,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        let plan = plan::grad_input(&p, way, &self.input_caps(batch.runtime()));
        self.record_grad_input(batch, plan, p, io)
    }

    /// Records the input gradient as `plan` says.
    pub(super) fn record_grad_input(
        &self,
        batch: &mut Batch<'_>,
        plan: InputPlan,
        p: kernels::ConvParams,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        let InputBuffers {
            w,
            grad_pre,
            grad_x,
        } = io;
        macro_rules! args {
            ($args:ident, $p:expr $(, $scratch:ident)*) => {
                kernels::$args {
                    p: $p,
                    w,
                    grad_pre,
                    $($scratch,)*
                    grad_x,
                }
            };
        }
        let sliced = |cut| (cut, Direction::GradInput);
        match plan {
            InputPlan::Few => (self.grad_input_few).record(batch, args!(ConvGradInputFewArgs, &p)),
            InputPlan::Phased { tile } => {
                let phased = self.grad_input_phased.get(tile.pick());
                phased.record(batch, args!(ConvGradInputPhasedArgs, &p))
            }
            InputPlan::PhasedOnTensorCores { tile } => {
                let phased = self.tensor_cores().grad_input_phased.get(tile.pick());
                phased.record(batch, args!(ConvGradInputPhasedFragmentsArgs, &p))
            }
            InputPlan::F32 {
                tile,
                sum: Sum::Whole,
            } => {
                let family = self.backward.get(tile.pick());
                (family.conv_grad_input()).record(batch, args!(ConvGradInputArgs, &p))
            }
            InputPlan::F32 {
                tile,
                sum: Sum::Sliced(cut),
            } => self.record_sliced(batch, sliced(cut), p, |batch, p, partial| {
                let split = self.grad_input_split.get(tile.pick());
                split.record(batch, args!(ConvGradInputSplitArgs, p, partial))
            }),
            InputPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Whole,
            }) => {
                let gather = self.tensor_cores().grad_input.get(tile.pick());
                gather.record(batch, args!(ConvGradInputFragmentsArgs, &p))
            }
            InputPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Sliced(cut),
            }) => self.record_sliced(batch, sliced(cut), p, |batch, p, partial| {
                let split = self.tensor_cores().grad_input_split.get(tile.pick());
                split.record(batch, args!(ConvGradInputFragmentsSplitArgs, p, partial))
            }),
            InputPlan::TensorCores(TensorPlan::OverTaps(plan)) => {
                let io = InputBuffers {
                    w,
                    grad_pre,
                    grad_x,
                };
                self.grad_input_over_taps(batch, plan, p, io)
            }
        }
    }

    /// The input gradient over the filter laid out by taps (its copy recorded first), as
    /// `plan` says.
    fn grad_input_over_taps(
        &self,
        batch: &mut Batch<'_>,
        plan: TapPlan,
        p: kernels::ConvParams,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        let w = io.w;
        let copy = |batch: &mut Batch<'_>, w_transposed: &mut GpuBuffer<f16>| {
            let args = kernels::ConvWeightsTransposedByTapArgs {
                p: &p,
                w,
                w_transposed,
            };
            self.tensor_cores()
                .weights_transposed_by_tap
                .record(batch, args)
        };
        // (The copy runs with the parameters before the split or the stream, which it reads
        // none of.)
        let p = &plan.params(p);
        self.record_over_copy(batch, w, copy, |batch, w_transposed| {
            self.record_grad_input_taps(batch, plan, p, w_transposed, io)
        })
    }

    /// Records the input gradient over the filter laid out by taps, `w_transposed`, as `plan`
    /// says.
    fn record_grad_input_taps(
        &self,
        batch: &mut Batch<'_>,
        plan: TapPlan,
        p: &kernels::ConvParams,
        w_transposed: &GpuBuffer<[f16; 4]>,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        let f = self.tensor_cores();
        let InputBuffers {
            grad_pre, grad_x, ..
        } = io;
        macro_rules! args {
            ($args:ident, $p:expr $(, $scratch:ident)*) => {
                kernels::$args {
                    p: $p,
                    w_transposed,
                    grad_pre,
                    $($scratch,)*
                    grad_x,
                }
            };
        }
        let built = "a plan comes from the kernels built";
        match plan {
            TapPlan::AllTaps => {
                let window = f.grad_input_all_taps.as_ref().expect(built);
                window.record(batch, args!(ConvGradInputWindowArgs, p))
            }
            TapPlan::Window { tile } => {
                let window = f.grad_input_window.as_ref().expect(built).get(tile.pick());
                window.record(batch, args!(ConvGradInputWindowArgs, p))
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Whole,
            } => {
                let by_tap = f.grad_input_by_tap.get(tile.pick());
                by_tap.record(batch, args!(ConvGradInputFragmentsByTapArgs, p))
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Sliced(cut),
            } => {
                let sliced = (cut, Direction::GradInput);
                self.record_sliced(batch, sliced, *p, |batch, p, partial| {
                    let split = f.grad_input_by_tap_split.get(tile.pick());
                    split.record(
                        batch,
                        args!(ConvGradInputFragmentsByTapSplitArgs, p, partial),
                    )
                })
            }
            TapPlan::Stream(stream) => {
                let streams = f.grad_input_by_tap_stream.as_ref();
                let kernel = streams.expect(built).get(stream.tile);
                let len = kernel.constants().partials(p.workers);
                self.record_stream(batch, len, p.workers, |batch, partial, arrivals| {
                    let args = args!(
                        ConvGradInputFragmentsByTapStreamedArgs,
                        p,
                        partial,
                        arrivals
                    );
                    kernel.record(batch, args)
                })
            }
        }
    }
}

/// An input gradient's buffers.
pub(super) struct InputBuffers<'b> {
    pub(super) w: &'b GpuBuffer<f32>,
    pub(super) grad_pre: &'b GpuBuffer<f32>,
    pub(super) grad_x: &'b mut GpuBuffer<f32>,
}
