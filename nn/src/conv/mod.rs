//! 2-D convolution over NCHW images, forward and both gradients: the op ([`Convolution`])
//! and its calls' arguments here, each pass in a file of its own, what each runs planned in
//! `plan`.

use super::kernels;
use super::precision::Passes;
use super::spare::Spare;
use super::split::Split;
use super::tune;
use super::{Activation, Precision};
use filter_gradient::WeightBuffers;
use forward::ForwardBuffers;
use fragments::Fragments;
use input_gradient::InputBuffers;
use plan::Direction;
use tessera::half::f16;
use tessera::{Batch, GpuBuffer, Result, Runtime};
use winograd::winograd_family;

mod backward;
mod filter_gradient;
mod forward;
mod fragments;
mod input_gradient;
mod plan;
mod shape;
#[cfg(test)]
mod tests;
mod winograd;

pub use shape::{Conv2dShape, Padding};

/// Whether passes may run as streams on `rt`'s device: on Vulkan only. A stream's workgroups
/// pass their parts of a shared block to one another within one dispatch, which WGSL's
/// memory model does not order; naga's Vulkan code makes `storage_barrier` a device-scope
/// fence, which does (`kernels::stream_arrive`). Elsewhere (Metal's barriers order device
/// memory for one threadgroup) a way with a stream runs as it would whole (the forward and
/// the input gradient by taps).
fn streams_on(rt: &Runtime) -> bool {
    rt.info().backend == tessera::wgpu::Backend::Vulkan
}

/// One [`Convolution::forward`]: `y = act(conv(x, w) + bias)`.
#[derive(Debug)]
pub struct Conv2dForward<'a> {
    /// The sizes of `x`, `w` and `y`.
    pub shape: Conv2dShape,
    /// The activation applied to `conv(x, w) + bias`.
    pub activation: Activation,
    /// The input images, `[batch, in_channels, h, w]`.
    pub x: &'a GpuBuffer<f32>,
    /// The filter, `[out_channels, in_channels, kernel_h, kernel_w]`.
    pub w: &'a GpuBuffer<f32>,
    /// `[out_channels]`.
    pub bias: &'a GpuBuffer<f32>,
    /// Output-shaped: `conv(x, w) + bias` before the activation, which the backward pass
    /// reads. `None` when no backward pass follows, or with [`Activation::None`] (then `y`
    /// holds it); the forward then writes `y` alone, one output-sized store fewer.
    pub pre: Option<&'a mut GpuBuffer<f32>>,
    /// The output images, `[batch, out_channels, out_h, out_w]`.
    pub y: &'a mut GpuBuffer<f32>,
}

/// One [`Convolution::backward`]: from the output's gradient, the gradients of the input
/// (when asked), the filter and the bias. Each gradient is overwritten (see [`crate`]'s
/// "Gradients").
#[derive(Debug)]
pub struct Conv2dBackward<'a> {
    /// The forward's shape.
    pub shape: Conv2dShape,
    /// The forward's activation.
    pub activation: Activation,
    /// The forward's input.
    pub x: &'a GpuBuffer<f32>,
    /// The forward's filter.
    pub w: &'a GpuBuffer<f32>,
    /// The forward's `pre`; may be `None` only with [`Activation::None`].
    pub pre: Option<&'a GpuBuffer<f32>>,
    /// Output-shaped: the gradient of the output `y`.
    pub grad_y: &'a GpuBuffer<f32>,
    /// Input-shaped: the input's gradient; `None` skips it (a network's first layer needs
    /// none).
    pub grad_x: Option<&'a mut GpuBuffer<f32>>,
    /// Filter-shaped: the filter's gradient.
    pub grad_w: &'a mut GpuBuffer<f32>,
    /// `[out_channels]`: the bias's gradient.
    pub grad_bias: &'a mut GpuBuffer<f32>,
}

/// One [`Convolution::grad_input`]: the input's gradient alone.
#[derive(Debug)]
pub struct Conv2dGradInput<'a> {
    /// The forward's shape.
    pub shape: Conv2dShape,
    /// The forward's filter.
    pub w: &'a GpuBuffer<f32>,
    /// Output-shaped: the gradient before the activation (for a convolution without
    /// activation, the output's gradient).
    pub grad_pre: &'a GpuBuffer<f32>,
    /// Input-shaped: the input's gradient (overwritten).
    pub grad_x: &'a mut GpuBuffer<f32>,
}

/// One [`Convolution::grad_weight`]: the filter's gradient alone.
#[derive(Debug)]
pub struct Conv2dGradWeight<'a> {
    /// The forward's shape.
    pub shape: Conv2dShape,
    /// The forward's input.
    pub x: &'a GpuBuffer<f32>,
    /// Output-shaped: the gradient before the activation (for a convolution without
    /// activation, the output's gradient).
    pub grad_pre: &'a GpuBuffer<f32>,
    /// Filter-shaped: the filter's gradient (overwritten).
    pub grad_w: &'a mut GpuBuffer<f32>,
}

/// 2-D convolution + bias + activation over NCHW images, forward and backward, built once
/// per runtime.
///
/// All three passes are implicit GEMMs over 128 x 128 or 64 x 64 output blocks (autotuned,
/// see [`crate`]): the forward over (output channel, output pixel), the input gradient over
/// (input channel, input pixel) with a stride-1 specialization, the filter gradient over
/// (output channel, input channel x tap). When the output alone would leave the GPU idle (the
/// forward of small images or a batch of one; the filter gradient, whose output is the
/// filter), the long sum is split into slices computed by separate workgroups and added up
/// afterwards; the slices' partial sums live in scratch memory the op keeps and grows.
///
/// The filter gradient of a 3 x 3 convolution of stride 1 and dilation 1 may also run by
/// Winograd's minimal filtering F(3x3, 4x4): the output is cut into tiles of 4 x 4 pixels,
/// each tile and the 6 x 6 input patch it sees are transformed into 36 points, one GEMM per
/// point sums their products over the tiles, and the sums are transformed back into the
/// filter; a quarter of the multiplications, at the price of scratch memory for the
/// transformed tiles (36 values per 16 output pixels, per input and per output channel) and
/// rounding errors a few times those of the direct sum. Autotuning times both; with it off,
/// Winograd runs wherever its scratch fits one binding of the device.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Activation, Convolution, Conv2dForward, Conv2dShape, Padding};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let conv = Convolution::new(&rt)?;
/// let shape = Conv2dShape::new(1, 1, [4, 4], 2, [3, 3]).padding(Padding::uniform(1));
/// let x = rt.upload(&[1.0f32; 16])?;
/// let w = rt.upload(&[1.0f32; 18])?;
/// let bias = rt.zeros::<f32>(2)?;
/// let mut y = rt.zeros::<f32>(shape.output_len()?)?;
/// let mut batch = rt.batch();
/// let (activation, pre) = (Activation::Relu, None); // no backward pass follows
/// conv.forward(&mut batch, Conv2dForward { shape, activation, x: &x, w: &w, bias: &bias, pre, y: &mut y })?;
/// batch.submit()?;
/// assert_eq!(y.read(&rt)?[5], 9.0); // an interior pixel sees all nine taps
/// # Ok(()) }
/// ```
///
/// This is the op under the layer [`Conv2d`](crate::Conv2d), which owns its parameters
/// and buffers; use it directly to manage them yourself. A clone shares the pipelines and
/// grows its own scratch memory.
///
/// With [`Precision::TensorCoreF16`] ([`Convolution::with_precision`]) the forward and both
/// gradients run their products on the tensor cores, cut into slices or stride phases as the
/// f32 passes are; only the input gradient of at most 4 input channels stays in f32, as do
/// the bias, the activation and its derivative.
#[derive(Clone, Debug)]
pub struct Convolution {
    /// The passes it multiplies with: f32 alone, or the tensor-core kernels too.
    passes: Passes<Fragments>,
    forward: kernels::Blocked<kernels::ConvForward>,
    /// The forward in slices of the summed dimension, for outputs too small to fill the GPU.
    forward_split: kernels::Blocked<kernels::ConvForwardSplit>,
    /// The backward family but the filter gradient, with each blocking of the input gradient.
    backward: kernels::Blocked<kernels::ConvBackward>,
    /// The filter gradient as an implicit GEMM, its sum in slices.
    grad_weight: kernels::Blocked<kernels::ConvGradWeightSplit>,
    /// The filter gradient of 3 x 3 convolutions of stride 1 by Winograd's F(3x3, 4x4).
    grad_weight_winograd: kernels::Blocked<kernels::ConvGradWeightWinograd>,
    /// The input gradient in slices of the summed dimension, for inputs too small to fill
    /// the GPU.
    grad_input_split: kernels::Blocked<kernels::ConvGradInputSplit>,
    /// The input gradient of convolutions with few input channels.
    grad_input_few: kernels::ConvGradInputFew,
    /// The input gradient of strided convolutions, one sub-problem per stride phase.
    grad_input_phased: kernels::Blocked<kernels::ConvGradInputPhased>,
    /// Adds up the bias gradient's slices (when `backward` sums it in slices).
    add_up_bias: kernels::DBias,
    /// Partial sums: the split forward's slices, the input gradient's, and the filter
    /// gradient's after the first.
    partials: Spare,
    /// `pre` when the caller keeps none.
    pre: Spare,
    /// The filter as a tensor-core pass by taps reads it (`kernels::conv_weights_by_tap`,
    /// `kernels::conv_weights_transposed_by_tap`), in halves (two to each of its `f32`s).
    weights_by_tap: Spare,
    /// The backward's gradient before the activation.
    grad_pre: Spare,
    /// The sums of the bias gradient's slices.
    bias_sums: Spare,
    /// Winograd's transformed input tiles, gradient tiles and products.
    winograd: [Spare; 3],
    /// The counts of a stream's shared blocks' parts (zeros between dispatches).
    arrivals: Spare<u32>,
}

impl Convolution {
    /// Builds the forward and backward pipelines, in strict f32 ([`Precision::F32`]).
    ///
    /// Each kernel's pipeline is compiled when a call first runs it, so the first call of a
    /// shape pays for compiling the kernels it runs (with autotuning, those of every
    /// candidate it times), and kernels no call runs are never compiled;
    /// [`Convolution::prepare`] compiles them all up front.
    ///
    /// As [`Gemm::new`](super::Gemm::new): on a device with only WebGPU's default 16 KiB of
    /// workgroup memory, every pass runs in the 64 x 64 blocking.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Self::with_precision(rt, Precision::F32)
    }

    /// Builds the op multiplying in `precision`.
    ///
    /// # Errors
    ///
    /// [`Error::MissingFeature`](tessera::Error::MissingFeature) for
    /// [`Precision::TensorCoreF16`] on a device without tensor cores for 16 x 16 x 16 `f16`
    /// fragments accumulated in `f32`, or whose subgroups cannot be 32 invocations wide.
    pub fn with_precision(rt: &Runtime, precision: Precision) -> Result<Self> {
        let passes = Passes::new(rt, precision, "nn::Convolution", Fragments::new)?;
        let forward_reduce = kernels::ConvForwardReduce::new(rt)?;
        let input_reduce = kernels::ConvGradInputReduce::new(rt)?;
        let activation_grad = kernels::ConvActivationGrad::new(rt)?;
        let reduce = kernels::ConvGradWeightReduce::new(rt)?;
        let grad_bias = kernels::ConvGradBias::new(rt)?;
        let grad_input_split = kernels::Blocked::new(|b| {
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            let partial =
                unsafe { kernels::ConvGradInputPartial::with_constants_unchecked(rt, b) }?;
            Ok(kernels::ConvGradInputSplit::from_members(
                partial,
                input_reduce.clone(),
            ))
        })?;
        let forward_split = kernels::Blocked::new(|b| {
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            let partial = unsafe { kernels::ConvForwardPartial::with_constants_unchecked(rt, b) }?;
            Ok(kernels::ConvForwardSplit::from_members(
                partial,
                forward_reduce.clone(),
            ))
        })?;
        let backward = kernels::Blocked::new(|b| {
            Ok(kernels::ConvBackward::from_members(
                activation_grad.clone(),
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::ConvGradInput::with_constants_unchecked(rt, b) }?,
                grad_bias.clone(),
            ))
        })?;
        let grad_weight = kernels::Blocked::new(|b| {
            Ok(kernels::ConvGradWeightSplit::from_members(
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::ConvGradWeight::with_constants_unchecked(rt, b) }?,
                reduce.clone(),
            ))
        })?;
        let grad_weight_winograd = winograd_family(rt)?;
        Ok(Convolution {
            passes,
            forward: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::ConvForward::with_constants_unchecked(rt, b) }
            })?,
            forward_split,
            backward,
            grad_weight,
            grad_weight_winograd,
            grad_input_split,
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            grad_input_few: unsafe { kernels::ConvGradInputFew::new_unchecked(rt) }?,
            grad_input_phased: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::ConvGradInputPhased::with_constants_unchecked(rt, b) }
            })?,
            add_up_bias: kernels::DBias::new(rt)?,
            partials: Spare::default(),
            pre: Spare::default(),
            weights_by_tap: Spare::default(),
            grad_pre: Spare::default(),
            bias_sums: Spare::default(),
            winograd: Default::default(),
            arrivals: Spare::default(),
        })
    }

    /// Builds every pipeline the op may run now, instead of each at the first call that
    /// runs it: for a program that would rather pay the driver's compilation (seconds on
    /// the tensor cores) before its first step, or time its first steps at full speed.
    ///
    /// ```no_run
    /// # fn main() -> tessera::Result<()> {
    /// let rt = tessera::Runtime::new()?;
    /// let conv = tessera_nn::Convolution::new(&rt)?;
    /// conv.prepare(&rt)?; // every shape's first call now compiles nothing
    /// # Ok(())
    /// # }
    /// ```
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Convolution {
            passes, forward, forward_split, backward, grad_weight, grad_weight_winograd,
            grad_input_split, grad_input_few, grad_input_phased, add_up_bias;
            partials, pre, weights_by_tap, grad_pre, bias_sums, winograd, arrivals
        })
    }

    /// How the op multiplies.
    pub fn precision(&self) -> Precision {
        self.passes.precision()
    }

    /// The tensor-core kernels, which every plan on the tensor cores was made from.
    fn tensor_cores(&self) -> &Fragments {
        self.passes.planned()
    }
}

/// The scratch memory the passes share.
impl Convolution {
    /// Records a pass whose sum `cut` cuts into slices, each writing as much as the pass in
    /// `direction`: `record` with `p` so cut and scratch for the slices' partial sums.
    fn record_sliced(
        &self,
        batch: &mut Batch<'_>,
        (cut, direction): (Split, Direction),
        mut p: kernels::ConvParams,
        record: impl FnOnce(&mut Batch<'_>, &kernels::ConvParams, &mut GpuBuffer<f32>) -> Result<()>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let [rows, columns] = direction.outputs(&p);
        let mut partials = self.partials.lock();
        let partial = partials.at_least(batch.runtime(), cut.partials(rows, columns))?;
        record(batch, &p, partial)
    }

    /// Records a stream of `workers` workgroups: `record` with its scratch, `len` partial
    /// sums and the counts of its shared blocks' parts.
    fn record_stream(
        &self,
        batch: &mut Batch<'_>,
        len: usize,
        workers: u32,
        record: impl FnOnce(&mut Batch<'_>, &mut GpuBuffer<f32>, &mut GpuBuffer<u32>) -> Result<()>,
    ) -> Result<()> {
        let (mut partials, mut arrivals) = (self.partials.lock(), self.arrivals.lock());
        let rt = batch.runtime();
        let partial = partials.at_least(rt, len)?;
        let arrivals = arrivals.at_least(rt, workers as usize)?;
        record(batch, partial, arrivals)
    }

    /// Records a pass over the filter `w` laid out by taps: `copy` of it into scratch (in
    /// halves, two to each of its `f32`s), then `record` over the copy.
    fn record_over_copy(
        &self,
        batch: &mut Batch<'_>,
        w: &GpuBuffer<f32>,
        copy: impl FnOnce(&mut Batch<'_>, &mut GpuBuffer<f16>) -> Result<()>,
        record: impl FnOnce(&mut Batch<'_>, &GpuBuffer<[f16; 4]>) -> Result<()>,
    ) -> Result<()> {
        let mut by_tap = self.weights_by_tap.lock();
        let copied = by_tap.at_least(batch.runtime(), w.len().div_ceil(2))?;
        copy(batch, &mut *copied.view_as_mut()?)?;
        record(batch, &*copied.view_as()?)
    }
}

/// How `operation` runs for `shape`, among `ways` (see [`tune::way`]); with autotuning off,
/// the fixed one beside them.
fn tuned<W: tune::Candidate>(
    rt: &Runtime,
    operation: &str,
    shape: &Conv2dShape,
    p: &kernels::ConvParams,
    (ways, fixed): (&[W], W),
    record: impl FnMut(&mut Batch<'_>, W, &mut Scratch) -> Result<()>,
) -> Result<W> {
    let scratch = |rt: &Runtime| Scratch::new(rt, shape);
    let problem = tune::Problem {
        operation,
        sizes: &sizes(p),
        exact: &exact(p),
    };
    tune::way(rt, problem, ways, fixed, scratch, record)
}

/// The sizes a convolution's tuned choices depend on (rounded into buckets): images, input
/// channels, input height and width, output channels.
fn sizes(p: &kernels::ConvParams) -> [u32; 5] {
    [p.batch, p.in_channels, p.in_h, p.in_w, p.out_channels]
}

/// What its tuned choices depend on exactly: the window, stride and dilation.
fn exact(p: &kernels::ConvParams) -> [u32; 6] {
    [
        p.kernel_h,
        p.kernel_w,
        p.stride_h,
        p.stride_w,
        p.dilation_h,
        p.dilation_w,
    ]
}

/// Buffers of a convolution's sizes for timing candidates, the inputs filled with noise (`pre`
/// doubles as the output's gradient).
struct Scratch {
    x: GpuBuffer<f32>,
    w: GpuBuffer<f32>,
    bias: GpuBuffer<f32>,
    pre: GpuBuffer<f32>,
    y: GpuBuffer<f32>,
    grad_x: GpuBuffer<f32>,
    grad_w: GpuBuffer<f32>,
}

impl Scratch {
    fn new(rt: &Runtime, shape: &Conv2dShape) -> Result<Self> {
        let output = shape.output_len()?;
        Ok(Scratch {
            x: tune::noise(rt, shape.input_len())?,
            w: tune::noise(rt, shape.weight_len())?,
            bias: tune::noise(rt, shape.out_channels as usize)?,
            pre: tune::noise(rt, output)?,
            y: rt.zeros(output)?,
            grad_x: rt.zeros(shape.input_len())?,
            grad_w: rt.zeros(shape.weight_len())?,
        })
    }

    /// A forward's buffers: `x`, `w` and `bias` into `pre` and `y`.
    fn forward(&mut self) -> ForwardBuffers<'_> {
        ForwardBuffers {
            x: &self.x,
            w: &self.w,
            bias: &self.bias,
            pre: &mut self.pre,
            y: &mut self.y,
        }
    }

    /// An input gradient's buffers, `pre` as the gradient before the activation.
    fn input(&mut self) -> InputBuffers<'_> {
        InputBuffers {
            w: &self.w,
            grad_pre: &self.pre,
            grad_x: &mut self.grad_x,
        }
    }

    /// A filter gradient's buffers, `pre` as the gradient before the activation.
    fn weight(&mut self) -> WeightBuffers<'_> {
        WeightBuffers {
            x: &self.x,
            grad_pre: &self.pre,
            grad_w: &mut self.grad_w,
        }
    }
}
