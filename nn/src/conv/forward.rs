//! The forward pass: `y = act(conv(x, w) + bias)`, in f32 or on the tensor cores (gathering,
//! by taps, over a staged window or as a stream).

use super::plan::{self, Direction, ForwardPlan, Sum, TapPlan, TensorPlan};
use super::{kernels, streams_on, tuned, Convolution, Passes};
use crate::tune::ConvWay;
use crate::Conv2dForward;
use tessera::half::f16;
use tessera::{Batch, GpuBuffer, Result, Runtime};

impl Convolution {
    /// Records `y = act(conv(x, w) + bias)`, keeping `conv(x, w) + bias` in `pre` when
    /// given.
    ///
    /// The blocking is autotuned (see [`Runtime::autotune`]); with autotuning off it is the
    /// small one for at most 64 output channels. On the tensor cores, with input channels a
    /// multiple of the blocking's step (32 in both blockings), the forward may first copy the
    /// filter into a layout of its own (taps outermost), which makes larger convolutions
    /// faster; the tuner decides. With stride 1 and a filter that reaches at most 128
    /// positions of the output grid padded by its reach (`(kernel_h - 1) * dilation_h *
    /// (out_w + (kernel_w - 1) * dilation_w) + (kernel_w - 1) * dilation_w`: a 3 x 3 filter
    /// over outputs up to 61 pixels wide), it may also run over a staged window: each block
    /// stages its input once per 32 channels for every tap, or, for a filter of at most 9
    /// taps and input channels a multiple of 16, once per 16 channels together with every
    /// tap's filter (with autotuning off it does, where it can: the latter for at most 64
    /// output channels, the former in workgroups of 512 invocations where the device has
    /// them). Tap by tap, it may also run as a stream (on Vulkan): as many workgroups as the
    /// GPU holds at once share the blocks' steps evenly, and the last of a shared block's
    /// workgroups to finish its part adds up the block's parts, for outputs whose blocks
    /// would leave the GPU's last wave part idle; a stream's blocks are 128 x 128, or 256
    /// output channels by 128 positions, or 128 by 256, as the tuner finds faster.
    pub fn forward(&self, batch: &mut Batch<'_>, args: Conv2dForward<'_>) -> Result<()> {
        let Conv2dForward {
            shape,
            activation,
            x,
            w,
            bias,
            pre,
            y,
        } = args;
        let shape = &shape;
        let p = kernels::ConvParams {
            keep_pre: u32::from(pre.is_some()),
            ..shape.params(activation)?
        };
        let rows = p.out_channels;
        let ways = match self.passes {
            Passes::TensorCores(_) => (&ConvWay::ON_TENSOR_CORES[..], ConvWay::fixed_window(rows)),
            Passes::F32 => (&ConvWay::IN_F32[..], ConvWay::fixed(rows)),
        };
        let operation = "nn::Convolution::forward";
        let way = tuned(
            batch.runtime(),
            operation,
            shape,
            &p,
            ways,
            |tune, way, s| self.forward_way(tune, way, p, s.forward()),
        )?;
        let mut spare = self.pre.lock();
        let pre = spare.unless_given(pre, batch.runtime(), shape.output_len()?)?;
        let io = ForwardBuffers { x, w, bias, pre, y };
        self.forward_way(batch, way, p, io)
    }

    /// The blockings the forward's kernels were built in, for its plans.
    pub(super) fn forward_caps(&self, rt: &Runtime) -> plan::Caps {
        plan::Caps {
            f32: self
                .forward_split
                .each(|k| k.conv_forward_partial().constants()),
            tensor: self.passes.tensor_cores().map(|f| {
                let cuts =
                    (f.forward_split).each(|k| k.conv_forward_fragments_partial().constants());
                plan::TapCaps {
                    steps: cuts.clone(),
                    cuts,
                    window: f.forward_window.as_ref().map(|w| w.each(|k| k.constants())),
                    all_taps: f.forward_all_taps.as_ref().map(|k| k.constants()),
                    streams: (f.forward_by_tap_stream.as_ref())
                        .filter(|_| streams_on(rt))
                        .map(|s| s.each(|k| k.constants())),
                }
            }),
        }
    }

    /// The forward run `way`, as [`plan::forward`] plans it.
    pub(super) fn forward_way(
        &self,
        batch: &mut Batch<'_>,
        way: ConvWay,
        p: kernels::ConvParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let plan = plan::forward(&p, way, &self.forward_caps(batch.runtime()));
        self.record_forward(batch, plan, p, io)
    }

    /// Records the forward as `plan` says.
    pub(super) fn record_forward(
        &self,
        batch: &mut Batch<'_>,
        plan: ForwardPlan,
        p: kernels::ConvParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let ForwardBuffers { x, w, bias, pre, y } = io;
        macro_rules! args {
            ($args:ident, $p:expr $(, $scratch:ident)*) => {
                kernels::$args {
                    p: $p,
                    x,
                    w,
                    bias,
                    $($scratch,)*
                    pre,
                    y,
                }
            };
        }
        let sliced = |cut| (cut, Direction::Forward);
        match plan {
            ForwardPlan::F32 {
                tile,
                sum: Sum::Whole,
            } => (self.forward.get(tile.pick())).record(batch, args!(ConvForwardArgs, &p)),
            ForwardPlan::F32 {
                tile,
                sum: Sum::Sliced(cut),
            } => self.record_sliced(batch, sliced(cut), p, |batch, p, partial| {
                let split = self.forward_split.get(tile.pick());
                split.record(batch, args!(ConvForwardSplitArgs, p, partial))
            }),
            ForwardPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Whole,
            }) => {
                let gather = self.tensor_cores().forward.get(tile.pick());
                gather.record(batch, args!(ConvForwardFragmentsArgs, &p))
            }
            ForwardPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Sliced(cut),
            }) => self.record_sliced(batch, sliced(cut), p, |batch, p, partial| {
                let split = self.tensor_cores().forward_split.get(tile.pick());
                split.record(batch, args!(ConvForwardFragmentsSplitArgs, p, partial))
            }),
            ForwardPlan::TensorCores(TensorPlan::OverTaps(plan)) => {
                let p = plan.params(p);
                let copy = |batch: &mut Batch<'_>, w_by_tap: &mut GpuBuffer<f16>| {
                    let args = kernels::ConvWeightsByTapArgs { p: &p, w, w_by_tap };
                    self.tensor_cores().weights_by_tap.record(batch, args)
                };
                let io = ForwardBuffers { x, w, bias, pre, y };
                self.record_over_copy(batch, w, copy, |batch, w_by_tap| {
                    self.record_forward_taps(batch, plan, &p, w_by_tap, io)
                })
            }
        }
    }

    /// Records the forward over the filter laid out by taps, `w_by_tap`, as `plan` says.
    fn record_forward_taps(
        &self,
        batch: &mut Batch<'_>,
        plan: TapPlan,
        p: &kernels::ConvParams,
        w_by_tap: &GpuBuffer<[f16; 4]>,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let f = self.tensor_cores();
        let ForwardBuffers {
            x, bias, pre, y, ..
        } = io;
        macro_rules! args {
            ($args:ident, $p:expr $(, $scratch:ident)*) => {
                kernels::$args {
                    p: $p,
                    x,
                    w_by_tap,
                    bias,
                    $($scratch,)*
                    pre,
                    y,
                }
            };
        }
        let built = "a plan comes from the kernels built";
        match plan {
            TapPlan::AllTaps => {
                let window = f.forward_all_taps.as_ref().expect(built);
                window.record(batch, args!(ConvForwardWindowArgs, p))
            }
            TapPlan::Window { tile } => {
                let window = f.forward_window.as_ref().expect(built).get(tile.pick());
                window.record(batch, args!(ConvForwardWindowArgs, p))
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Whole,
            } => {
                let by_tap = f.forward_by_tap.get(tile.pick());
                by_tap.record(batch, args!(ConvForwardFragmentsByTapArgs, p))
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Sliced(cut),
            } => {
                let sliced = (cut, Direction::Forward);
                self.record_sliced(batch, sliced, *p, |batch, p, partial| {
                    let split = f.forward_by_tap_split.get(tile.pick());
                    split.record(batch, args!(ConvForwardFragmentsByTapSplitArgs, p, partial))
                })
            }
            TapPlan::Stream(stream) => {
                let streams = f.forward_by_tap_stream.as_ref();
                let kernel = streams.expect(built).get(stream.tile);
                let len = kernel.constants().partials(p.workers);
                self.record_stream(batch, len, p.workers, |batch, partial, arrivals| {
                    let args = args!(ConvForwardFragmentsByTapStreamedArgs, p, partial, arrivals);
                    kernel.record(batch, args)
                })
            }
        }
    }
}

/// A forward's buffers.
pub(super) struct ForwardBuffers<'b> {
    pub(super) x: &'b GpuBuffer<f32>,
    pub(super) w: &'b GpuBuffer<f32>,
    pub(super) bias: &'b GpuBuffer<f32>,
    pub(super) pre: &'b mut GpuBuffer<f32>,
    pub(super) y: &'b mut GpuBuffer<f32>,
}
