//! 2-D convolution over NCHW images, forward and both gradients.

use super::gemm::{add_up_rows, forward_pre};
use super::kernels;
use super::precision;
use super::spare::Spare;
use super::split::{ColumnSums, Split, MIN_SLICE};
use super::tune::{self, ConvWay, FragmentTile, Stream, Tile, WeightWay};
use plan::{ForwardPlan, InputPlan, Sum, TapPlan, TensorPlan, WeightPlan};

mod plan;
use super::{invalid, Activation, Precision};
use tessera::half::f16;
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// Zero padding added around each image, per side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Padding {
    /// Rows added above.
    pub top: u32,
    /// Rows added below.
    pub bottom: u32,
    /// Columns added on the left.
    pub left: u32,
    /// Columns added on the right.
    pub right: u32,
}

impl Padding {
    /// The same padding on every side.
    pub const fn uniform(pad: u32) -> Self {
        Padding::symmetric(pad, pad)
    }

    /// `h` rows above and below, `w` columns left and right (PyTorch's `padding=(h, w)`).
    pub const fn symmetric(h: u32, w: u32) -> Self {
        Padding {
            top: h,
            bottom: h,
            left: w,
            right: w,
        }
    }
}

/// The shape of a convolution of `[batch, in_channels, h, w]` images with an
/// `[out_channels, in_channels, kernel_h, kernel_w]` filter; all pairs are `[h, w]`.
///
/// ```
/// use tessera_nn::{Conv2dShape, Padding};
/// let shape = Conv2dShape::new(8, 3, [32, 32], 16, [3, 3])
///     .stride([2, 2])
///     .padding(Padding::uniform(1));
/// assert_eq!(shape.output().unwrap(), [16, 16]);
/// assert_eq!(shape.output_len().unwrap(), 8 * 16 * 16 * 16);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dShape {
    /// Images in the batch.
    pub batch: u32,
    /// Channels of each input image.
    pub in_channels: u32,
    /// Height and width of each input image.
    pub input: [u32; 2],
    /// Channels of each output image (filters).
    pub out_channels: u32,
    /// Height and width of the filter.
    pub kernel: [u32; 2],
    /// Step between windows; `[1, 1]` by default.
    pub stride: [u32; 2],
    /// Zero padding; none by default.
    pub padding: Padding,
    /// Spacing between filter taps; `[1, 1]` by default.
    pub dilation: [u32; 2],
}

impl Conv2dShape {
    /// A convolution with stride 1, no padding and no dilation.
    pub const fn new(
        batch: u32,
        in_channels: u32,
        input: [u32; 2],
        out_channels: u32,
        kernel: [u32; 2],
    ) -> Self {
        Conv2dShape {
            batch,
            in_channels,
            input,
            out_channels,
            kernel,
            stride: [1, 1],
            padding: Padding::uniform(0),
            dilation: [1, 1],
        }
    }

    /// The same shape with `stride`.
    pub const fn stride(self, stride: [u32; 2]) -> Self {
        Conv2dShape { stride, ..self }
    }

    /// The same shape with `padding`.
    pub const fn padding(self, padding: Padding) -> Self {
        Conv2dShape { padding, ..self }
    }

    /// The same shape with `dilation`.
    pub const fn dilation(self, dilation: [u32; 2]) -> Self {
        Conv2dShape { dilation, ..self }
    }

    /// Height and width of the output images; an error when a dimension is zero or the
    /// (dilated) filter does not fit in the padded image.
    pub fn output(&self) -> Result<[u32; 2]> {
        let Conv2dShape {
            batch,
            in_channels,
            input,
            out_channels,
            kernel,
            stride,
            padding,
            dilation,
        } = *self;
        let sizes = [
            ("batch", batch),
            ("in_channels", in_channels),
            ("out_channels", out_channels),
            ("input height", input[0]),
            ("input width", input[1]),
            ("kernel height", kernel[0]),
            ("kernel width", kernel[1]),
            ("stride height", stride[0]),
            ("stride width", stride[1]),
            ("dilation height", dilation[0]),
            ("dilation width", dilation[1]),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(invalid("conv2d", format!("{name} must be at least 1")));
        }
        let axis = |name: &str, size: u32, before: u32, after: u32, axis: usize| {
            let padded = u64::from(size) + u64::from(before) + u64::from(after);
            let reach = u64::from(dilation[axis]) * (u64::from(kernel[axis]) - 1) + 1;
            if reach > padded {
                return Err(invalid(
                    "conv2d",
                    format!(
                        "the filter spans {reach} {name}s (kernel {} with dilation {}), more \
                         than the {padded} of the padded input; pad more or use a smaller \
                         kernel",
                        kernel[axis], dilation[axis]
                    ),
                ));
            }
            Ok(((padded - reach) / u64::from(stride[axis]) + 1) as u32)
        };
        Ok([
            axis("row", input[0], padding.top, padding.bottom, 0)?,
            axis("column", input[1], padding.left, padding.right, 1)?,
        ])
    }

    /// Elements of the input, `batch * in_channels * h * w`.
    pub fn input_len(&self) -> usize {
        product(&[self.batch, self.in_channels, self.input[0], self.input[1]])
    }

    /// Elements of the filter, `out_channels * in_channels * kernel_h * kernel_w`.
    pub fn weight_len(&self) -> usize {
        product(&[
            self.out_channels,
            self.in_channels,
            self.kernel[0],
            self.kernel[1],
        ])
    }

    /// Elements of the output, `batch * out_channels * out_h * out_w`.
    pub fn output_len(&self) -> Result<usize> {
        let [h, w] = self.output()?;
        Ok(product(&[self.batch, self.out_channels, h, w]))
    }

    /// The kernels' parameters, after checking that every index fits in 32 bits.
    fn params(&self, activation: Activation) -> Result<kernels::ConvParams> {
        let [out_h, out_w] = self.output()?;
        let largest = self
            .input_len()
            .max(self.weight_len())
            .max(self.output_len()?);
        if largest > u32::MAX as usize {
            return Err(invalid(
                "conv2d",
                format!("a tensor of {largest} elements exceeds the 2^32 that kernels index"),
            ));
        }
        Ok(kernels::ConvParams {
            batch: self.batch,
            in_channels: self.in_channels,
            in_h: self.input[0],
            in_w: self.input[1],
            out_channels: self.out_channels,
            out_h,
            out_w,
            kernel_h: self.kernel[0],
            kernel_w: self.kernel[1],
            stride_h: self.stride[0],
            stride_w: self.stride[1],
            pad_top: self.padding.top,
            pad_left: self.padding.left,
            dilation_h: self.dilation[0],
            dilation_w: self.dilation[1],
            activation: activation.code(),
            keep_pre: 1,
            splits: 1,
            split_depth: 0,
            // Whole: a slice's end is clamped to the dimension it cuts.
            bias_splits: 1,
            bias_split_depth: u32::MAX,
            workers: 0,
        })
    }
}

/// Whether passes may run as streams on `rt`'s device: on Vulkan only. A stream's workgroups
/// pass their parts of a shared block to one another within one dispatch, which WGSL's
/// memory model does not order; naga's Vulkan code makes `storage_barrier` a device-scope
/// fence, which does (`kernels::stream_arrive`). Elsewhere (Metal's barriers order device
/// memory for one threadgroup) a way with a stream runs as it would whole (the forward and
/// the input gradient by taps).
fn streams_on(rt: &Runtime) -> bool {
    rt.info().backend == tessera::wgpu::Backend::Vulkan
}

/// The partial sums the filter gradient's slices after the first need.
fn weight_partials(p: &kernels::ConvParams, filter: usize) -> usize {
    (p.splits as usize).saturating_sub(1).saturating_mul(filter)
}

fn product(dims: &[u32]) -> usize {
    dims.iter().map(|&d| d as usize).product()
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
    /// The tensor-core kernels, built only for [`Precision::TensorCoreF16`].
    fragments: Option<Fragments>,
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

/// `$kernel` in each blocking of `kernels::Streams` (`streams`) or of the `kernels::Blocked`
/// constructor `$blockings`, built on `$rt` without bounds checks (the caller's SAFETY comment
/// says why that is sound).
macro_rules! unchecked {
    ($rt:ident, streams, $kernel:ident) => {
        kernels::Streams::new(|b| unsafe { kernels::$kernel::with_constants_unchecked($rt, b) })?
    };
    ($rt:ident, $blockings:ident, $kernel:ident) => {
        kernels::Blocked::$blockings(|b| unsafe {
            kernels::$kernel::with_constants_unchecked($rt, b)
        })?
    };
}

/// The split tensor-core pass `$split` in each blocking: its `$partial` built on `$rt`
/// without bounds checks (as [`unchecked`]), and `$reduce`.
macro_rules! split {
    ($rt:ident, $split:ident, $partial:ident, $reduce:ident) => {
        kernels::Blocked::on_fragments(|b| {
            let partial = unsafe { kernels::$partial::with_constants_unchecked($rt, b) }?;
            Ok(kernels::$split::from_members(partial, $reduce.clone()))
        })?
    };
}

/// The kernels of [`Precision::TensorCoreF16`], in both blockings of
/// [`kernels::TensorBlocking`].
#[derive(Clone, Debug)]
struct Fragments {
    /// Lays the filter out for the forward's sum, taps outermost.
    weights_by_tap: kernels::ConvWeightsByTap,
    forward: kernels::Blocked<kernels::ConvForwardFragments>,
    /// The forward by taps, for input channels a multiple of the blocking's depth.
    forward_by_tap: kernels::Blocked<kernels::ConvForwardFragmentsByTap>,
    /// The forward over a staged window, for stride 1 and input channels a multiple of the
    /// window blocking's step, where the device has the workgroup memory.
    forward_window: Option<kernels::Blocked<kernels::ConvForwardWindow>>,
    /// The forward over a staged window with every tap's filter slice staged at once, for
    /// filters of at most its taps, where the device has the workgroup memory.
    forward_all_taps: Option<kernels::ConvForwardWindow>,
    /// The forward in slices of the summed dimension.
    forward_split: kernels::Blocked<kernels::ConvForwardFragmentsSplit>,
    forward_by_tap_split: kernels::Blocked<kernels::ConvForwardFragmentsByTapSplit>,
    /// The forward by taps as a stream of workgroups sharing the blocks' steps evenly, where
    /// the device has the invocations.
    forward_by_tap_stream: Option<kernels::Streams<kernels::ConvForwardFragmentsByTapStreamed>>,
    grad_input: kernels::Blocked<kernels::ConvGradInputFragments>,
    /// The input gradient in slices of the summed dimension.
    grad_input_split: kernels::Blocked<kernels::ConvGradInputFragmentsSplit>,
    /// Lays the filter out for the input gradient by taps.
    weights_transposed_by_tap: kernels::ConvWeightsTransposedByTap,
    /// The input gradient by taps, for stride 1 and output channels a multiple of the
    /// blocking's depth, whole and in slices.
    grad_input_by_tap: kernels::Blocked<kernels::ConvGradInputFragmentsByTap>,
    grad_input_by_tap_split: kernels::Blocked<kernels::ConvGradInputFragmentsByTapSplit>,
    /// The input gradient by taps as a stream (see `forward_by_tap_stream`).
    grad_input_by_tap_stream:
        Option<kernels::Streams<kernels::ConvGradInputFragmentsByTapStreamed>>,
    /// The stride-1 input gradient over a staged window, for output channels a multiple of
    /// the window blocking's step, where the device has the workgroup memory.
    grad_input_window: Option<kernels::Blocked<kernels::ConvGradInputWindow>>,
    /// `forward_all_taps` for the stride-1 input gradient.
    grad_input_all_taps: Option<kernels::ConvGradInputWindow>,
    /// The input gradient of strided convolutions, one stride phase at a time.
    grad_input_phased: kernels::Blocked<kernels::ConvGradInputPhasedFragments>,
    grad_weight: kernels::Blocked<kernels::ConvGradWeightFragments>,
    /// The filter gradient by taps, for input channels a multiple of the blocking's block.
    grad_weight_by_tap: kernels::Blocked<kernels::ConvGradWeightFragmentsByTap>,
    /// The filter gradient as a stream (see `forward_by_tap_stream`).
    grad_weight_stream: Option<kernels::Streams<kernels::ConvGradWeightFragmentsStreamed>>,
    reduce: kernels::ConvGradWeightReduce,
}

impl Fragments {
    /// Builds every pipeline (see [`Convolution::prepare`]).
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        // Every field named: a kernel added to the struct must be added here.
        let Fragments {
            weights_by_tap,
            forward,
            forward_by_tap,
            forward_window,
            forward_all_taps,
            forward_split,
            forward_by_tap_split,
            forward_by_tap_stream,
            grad_input,
            grad_input_split,
            weights_transposed_by_tap,
            grad_input_by_tap,
            grad_input_by_tap_split,
            grad_input_by_tap_stream,
            grad_input_window,
            grad_input_all_taps,
            grad_input_phased,
            grad_weight,
            grad_weight_by_tap,
            grad_weight_stream,
            reduce,
        } = self;
        weights_by_tap.prepare(rt)?;
        weights_transposed_by_tap.prepare(rt)?;
        reduce.prepare(rt)?;
        forward.try_for_each(|k| k.prepare(rt))?;
        forward_by_tap.try_for_each(|k| k.prepare(rt))?;
        forward_split.try_for_each(|k| k.prepare(rt))?;
        forward_by_tap_split.try_for_each(|k| k.prepare(rt))?;
        if let Some(streams) = forward_by_tap_stream {
            streams.try_for_each(|k| k.prepare(rt))?;
        }
        grad_input.try_for_each(|k| k.prepare(rt))?;
        grad_input_split.try_for_each(|k| k.prepare(rt))?;
        grad_input_by_tap.try_for_each(|k| k.prepare(rt))?;
        grad_input_by_tap_split.try_for_each(|k| k.prepare(rt))?;
        if let Some(streams) = grad_input_by_tap_stream {
            streams.try_for_each(|k| k.prepare(rt))?;
        }
        grad_input_phased.try_for_each(|k| k.prepare(rt))?;
        grad_weight.try_for_each(|k| k.prepare(rt))?;
        grad_weight_by_tap.try_for_each(|k| k.prepare(rt))?;
        if let Some(streams) = grad_weight_stream {
            streams.try_for_each(|k| k.prepare(rt))?;
        }
        if let Some(forward) = forward_window {
            forward.try_for_each(|k| k.prepare(rt))?;
        }
        if let Some(grad_input) = grad_input_window {
            grad_input.try_for_each(|k| k.prepare(rt))?;
        }
        if let Some(forward) = forward_all_taps {
            forward.prepare(rt)?;
        }
        match grad_input_all_taps {
            Some(grad_input) => grad_input.prepare(rt),
            None => Ok(()),
        }
    }

    fn new(rt: &Runtime) -> Result<Self> {
        let forward_reduce = kernels::ConvForwardFragmentsReduce::new(rt)?;
        let by_tap_reduce = kernels::ConvForwardFragmentsByTapReduce::new(rt)?;
        let input_by_tap_reduce = kernels::ConvGradInputFragmentsByTapReduce::new(rt)?;
        let input_reduce = kernels::ConvGradInputFragmentsReduce::new(rt)?;
        // SAFETY (every unchecked constructor below): every index is guarded (see "Bounds" in
        // `kernels`; the kernels by taps run only for channels a multiple of their blocking's
        // step or, the filter gradient's, of its block, and the windows only where
        // `plan::over_window` holds: see `plan`; a stream's slots of `partial`, two a
        // workgroup, are what its binding's length asks for).
        let all_taps = kernels::WindowBlocking::ALL_TAPS_AT_ONCE;
        let fragments = Fragments {
            weights_by_tap: kernels::ConvWeightsByTap::new(rt)?,
            forward: unchecked!(rt, on_fragments, ConvForwardFragments),
            forward_split: split!(
                rt,
                ConvForwardFragmentsSplit,
                ConvForwardFragmentsPartial,
                forward_reduce
            ),
            forward_by_tap: unchecked!(rt, on_fragments, ConvForwardFragmentsByTap),
            forward_window: unchecked!(rt, on_windows, ConvForwardWindow),
            forward_all_taps: kernels::unless_too_large(unsafe {
                kernels::ConvForwardWindow::with_constants_unchecked(rt, all_taps)
            })?,
            forward_by_tap_split: split!(
                rt,
                ConvForwardFragmentsByTapSplit,
                ConvForwardFragmentsByTapPartial,
                by_tap_reduce
            ),
            forward_by_tap_stream: unchecked!(rt, streams, ConvForwardFragmentsByTapStreamed),
            grad_input: unchecked!(rt, on_fragments, ConvGradInputFragments),
            grad_input_split: split!(
                rt,
                ConvGradInputFragmentsSplit,
                ConvGradInputFragmentsPartial,
                input_reduce
            ),
            weights_transposed_by_tap: kernels::ConvWeightsTransposedByTap::new(rt)?,
            grad_input_by_tap: unchecked!(rt, on_fragments, ConvGradInputFragmentsByTap),
            grad_input_by_tap_split: split!(
                rt,
                ConvGradInputFragmentsByTapSplit,
                ConvGradInputFragmentsByTapPartial,
                input_by_tap_reduce
            ),
            grad_input_by_tap_stream: unchecked!(rt, streams, ConvGradInputFragmentsByTapStreamed),
            grad_input_window: unchecked!(rt, on_windows, ConvGradInputWindow),
            grad_input_all_taps: kernels::unless_too_large(unsafe {
                kernels::ConvGradInputWindow::with_constants_unchecked(rt, all_taps)
            })?,
            grad_input_phased: unchecked!(rt, on_fragments, ConvGradInputPhasedFragments),
            grad_weight: unchecked!(rt, on_fragments, ConvGradWeightFragments),
            grad_weight_by_tap: unchecked!(rt, on_fragments, ConvGradWeightFragmentsByTap),
            grad_weight_stream: unchecked!(rt, streams, ConvGradWeightFragmentsStreamed),
            reduce: kernels::ConvGradWeightReduce::new(rt)?,
        };
        // After the kernels, which refuse a device without tensor cores first.
        precision::check_tensor_core_subgroups(rt, "nn::Convolution")?;
        Ok(fragments)
    }
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
        let fragments = match precision {
            Precision::F32 => None,
            Precision::TensorCoreF16 => Some(Fragments::new(rt)?),
        };
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
            fragments,
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
        // Every field named: a kernel added to the struct must be added here.
        let Convolution {
            fragments,
            forward,
            forward_split,
            backward,
            grad_weight,
            grad_weight_winograd,
            grad_input_split,
            grad_input_few,
            grad_input_phased,
            add_up_bias,
            partials: _,
            pre: _,
            weights_by_tap: _,
            grad_pre: _,
            bias_sums: _,
            winograd: _,
            arrivals: _,
        } = self;
        if let Some(fragments) = fragments {
            fragments.prepare(rt)?;
        }
        grad_input_few.prepare(rt)?;
        add_up_bias.prepare(rt)?;
        forward.try_for_each(|k| k.prepare(rt))?;
        forward_split.try_for_each(|k| k.prepare(rt))?;
        backward.try_for_each(|k| k.prepare(rt))?;
        grad_weight.try_for_each(|k| k.prepare(rt))?;
        grad_weight_winograd.try_for_each(|k| k.prepare(rt))?;
        grad_input_split.try_for_each(|k| k.prepare(rt))?;
        grad_input_phased.try_for_each(|k| k.prepare(rt))
    }

    /// How the op multiplies.
    pub fn precision(&self) -> Precision {
        match self.fragments {
            Some(_) => Precision::TensorCoreF16,
            None => Precision::F32,
        }
    }

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
        let (ways, fixed) = match self.fragments {
            Some(_) => (&ConvWay::ON_TENSOR_CORES[..], ConvWay::fixed_window(rows)),
            None => (&ConvWay::IN_F32[..], ConvWay::fixed(rows)),
        };
        let operation = "nn::Convolution::forward";
        let way = tuned(
            batch.runtime(),
            operation,
            shape,
            &p,
            ways,
            fixed,
            |tune, way, s| {
                let io = ForwardBuffers {
                    x: &s.x,
                    w: &s.w,
                    bias: &s.bias,
                    pre: &mut s.pre,
                    y: &mut s.y,
                };
                self.forward_way(tune, way, p, io)
            },
        )?;
        let mut spare = self.pre.lock();
        let pre = match pre {
            Some(pre) => pre,
            None => spare.at_least(batch.runtime(), shape.output_len()?)?,
        };
        let io = ForwardBuffers { x, w, bias, pre, y };
        self.forward_way(batch, way, p, io)
    }

    /// The blockings the forward's kernels were built in, for its plans.
    fn forward_caps(&self, rt: &Runtime) -> plan::Caps {
        plan::Caps {
            f32: self
                .forward_split
                .each(|k| k.conv_forward_partial().constants()),
            tensor: self.fragments.as_ref().map(|f| {
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
    fn forward_way(
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
    fn record_forward(
        &self,
        batch: &mut Batch<'_>,
        plan: ForwardPlan,
        p: kernels::ConvParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        macro_rules! args {
            ($args:ident) => {
                kernels::$args {
                    p: &p,
                    x: io.x,
                    w: io.w,
                    bias: io.bias,
                    pre: io.pre,
                    y: io.y,
                }
            };
        }
        match plan {
            ForwardPlan::F32 {
                tile,
                sum: Sum::Whole,
            } => (self.forward.get(tile.pick())).record(batch, args!(ConvForwardArgs)),
            ForwardPlan::F32 {
                tile,
                sum: Sum::Sliced(cut),
            } => self.forward_f32_sliced(batch, tile, cut, p, io),
            ForwardPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Whole,
            }) => {
                let gather = self.tensor_cores().forward.get(tile.pick());
                gather.record(batch, args!(ConvForwardFragmentsArgs))
            }
            ForwardPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Sliced(cut),
            }) => self.forward_gather_sliced(batch, tile, cut, p, io),
            ForwardPlan::TensorCores(TensorPlan::OverTaps(plan)) => {
                self.forward_over_taps(batch, plan, p, io)
            }
        }
    }

    /// The tensor-core kernels, which every plan on the tensor cores was made from.
    fn tensor_cores(&self) -> &Fragments {
        (self.fragments.as_ref()).expect("plans on the tensor cores come from their kernels")
    }

    /// The f32 forward in `tile`, its sum cut as `cut` says.
    fn forward_f32_sliced(
        &self,
        batch: &mut Batch<'_>,
        tile: Tile,
        cut: Split,
        mut p: kernels::ConvParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let mut partials = self.partials.lock();
        let columns = p.batch * p.out_h * p.out_w;
        let len = cut.partials(p.out_channels, columns);
        let args = kernels::ConvForwardSplitArgs {
            p: &p,
            x: io.x,
            w: io.w,
            bias: io.bias,
            partial: partials.at_least(batch.runtime(), len)?,
            pre: io.pre,
            y: io.y,
        };
        self.forward_split.get(tile.pick()).record(batch, args)
    }

    /// The forward on the tensor cores gathering, in `tile`, its sum cut as `cut` says.
    fn forward_gather_sliced(
        &self,
        batch: &mut Batch<'_>,
        tile: FragmentTile,
        cut: Split,
        mut p: kernels::ConvParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let mut partials = self.partials.lock();
        let columns = p.batch * p.out_h * p.out_w;
        let len = cut.partials(p.out_channels, columns);
        let args = kernels::ConvForwardFragmentsSplitArgs {
            p: &p,
            x: io.x,
            w: io.w,
            bias: io.bias,
            partial: partials.at_least(batch.runtime(), len)?,
            pre: io.pre,
            y: io.y,
        };
        (self.tensor_cores().forward_split)
            .get(tile.pick())
            .record(batch, args)
    }

    /// The forward over the filter laid out by taps (its copy recorded first), as `plan`
    /// says.
    fn forward_over_taps(
        &self,
        batch: &mut Batch<'_>,
        plan: TapPlan,
        p: kernels::ConvParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let p = plan.params(p);
        let mut by_tap = self.weights_by_tap.lock();
        let w_by_tap = by_tap.at_least(batch.runtime(), io.w.len().div_ceil(2))?;
        let args = kernels::ConvWeightsByTapArgs {
            p: &p,
            w: io.w,
            w_by_tap: &mut *w_by_tap.view_as_mut()?,
        };
        self.tensor_cores().weights_by_tap.record(batch, args)?;
        self.record_forward_taps(batch, plan, &p, &*w_by_tap.view_as()?, io)
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
        let mut partials = self.partials.lock();
        let rt = batch.runtime();
        macro_rules! args {
            ($args:ident) => {
                kernels::$args {
                    p,
                    x,
                    w_by_tap,
                    bias,
                    pre,
                    y,
                }
            };
        }
        let built = "a plan comes from the kernels built";
        match plan {
            TapPlan::AllTaps => {
                let window = f.forward_all_taps.as_ref().expect(built);
                window.record(batch, args!(ConvForwardWindowArgs))
            }
            TapPlan::Window { tile } => {
                let window = f.forward_window.as_ref().expect(built).get(tile.pick());
                window.record(batch, args!(ConvForwardWindowArgs))
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Whole,
            } => {
                let by_tap = f.forward_by_tap.get(tile.pick());
                by_tap.record(batch, args!(ConvForwardFragmentsByTapArgs))
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Sliced(cut),
            } => {
                let columns = p.batch * p.out_h * p.out_w;
                let len = cut.partials(p.out_channels, columns);
                let args = kernels::ConvForwardFragmentsByTapSplitArgs {
                    p,
                    x,
                    w_by_tap,
                    bias,
                    partial: partials.at_least(rt, len)?,
                    pre,
                    y,
                };
                f.forward_by_tap_split.get(tile.pick()).record(batch, args)
            }
            TapPlan::Stream(stream) => {
                let streams = f.forward_by_tap_stream.as_ref();
                let kernel = streams.expect(built).get(stream.tile);
                let mut arrivals = self.arrivals.lock();
                let len = kernel.constants().partials(p.workers);
                let args = kernels::ConvForwardFragmentsByTapStreamedArgs {
                    p,
                    x,
                    w_by_tap,
                    bias,
                    partial: partials.at_least(rt, len)?,
                    arrivals: arrivals.at_least(rt, p.workers as usize)?,
                    pre,
                    y,
                };
                kernel.record(batch, args)
            }
        }
    }

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
    fn check_backward(
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
    fn record_family(
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
    fn input_way(
        &self,
        rt: &Runtime,
        shape: &Conv2dShape,
        p: kernels::ConvParams,
    ) -> Result<ConvWay> {
        if plan::by_few_channels(&p) {
            return Ok(ConvWay::fixed(p.in_channels));
        }
        let operation = "nn::Convolution::grad_input";
        let (ways, fixed) = match self.fragments {
            // One stride phase at a time, never split.
            Some(_) if plan::by_phases(&p) => (
                &ConvWay::PHASED_ON_TENSOR_CORES[..],
                ConvWay::fixed_gather(p.in_channels),
            ),
            Some(_) => (
                &ConvWay::ON_TENSOR_CORES[..],
                ConvWay::fixed_window(p.in_channels),
            ),
            None => (&ConvWay::IN_F32[..], ConvWay::fixed(p.in_channels)),
        };
        tuned(rt, operation, shape, &p, ways, fixed, |tune, way, s| {
            let io = InputBuffers {
                w: &s.w,
                grad_pre: &s.pre,
                grad_x: &mut s.grad_x,
            };
            self.grad_input_way(tune, way, p, io)
        })
    }

    /// The blockings the input gradient's kernels were built in, for its plans.
    fn input_caps(&self, rt: &Runtime) -> plan::Caps {
        plan::Caps {
            f32: (self.grad_input_split).each(|k| k.conv_grad_input_partial().constants()),
            tensor: self.fragments.as_ref().map(|f| plan::TapCaps {
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
    fn grad_input_way(
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
    fn record_grad_input(
        &self,
        batch: &mut Batch<'_>,
        plan: InputPlan,
        p: kernels::ConvParams,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        macro_rules! args {
            ($args:ident) => {
                kernels::$args {
                    p: &p,
                    w: io.w,
                    grad_pre: io.grad_pre,
                    grad_x: io.grad_x,
                }
            };
        }
        match plan {
            InputPlan::Few => (self.grad_input_few).record(batch, args!(ConvGradInputFewArgs)),
            InputPlan::Phased { tile } => {
                let phased = self.grad_input_phased.get(tile.pick());
                phased.record(batch, args!(ConvGradInputPhasedArgs))
            }
            InputPlan::PhasedOnTensorCores { tile } => {
                let phased = self.tensor_cores().grad_input_phased.get(tile.pick());
                phased.record(batch, args!(ConvGradInputPhasedFragmentsArgs))
            }
            InputPlan::F32 {
                tile,
                sum: Sum::Whole,
            } => {
                let family = self.backward.get(tile.pick());
                (family.conv_grad_input()).record(batch, args!(ConvGradInputArgs))
            }
            InputPlan::F32 {
                tile,
                sum: Sum::Sliced(cut),
            } => self.grad_input_f32_sliced(batch, tile, cut, p, io),
            InputPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Whole,
            }) => {
                let gather = self.tensor_cores().grad_input.get(tile.pick());
                gather.record(batch, args!(ConvGradInputFragmentsArgs))
            }
            InputPlan::TensorCores(TensorPlan::Gather {
                tile,
                sum: Sum::Sliced(cut),
            }) => self.grad_input_gather_sliced(batch, tile, cut, p, io),
            InputPlan::TensorCores(TensorPlan::OverTaps(plan)) => {
                self.grad_input_over_taps(batch, plan, p, io)
            }
        }
    }

    /// The f32 input gradient in `tile`, its sum cut as `cut` says.
    fn grad_input_f32_sliced(
        &self,
        batch: &mut Batch<'_>,
        tile: Tile,
        cut: Split,
        mut p: kernels::ConvParams,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let mut partials = self.partials.lock();
        let len = cut.partials(p.in_channels, p.batch * p.in_h * p.in_w);
        let args = kernels::ConvGradInputSplitArgs {
            p: &p,
            w: io.w,
            grad_pre: io.grad_pre,
            partial: partials.at_least(batch.runtime(), len)?,
            grad_x: io.grad_x,
        };
        self.grad_input_split.get(tile.pick()).record(batch, args)
    }

    /// The input gradient on the tensor cores gathering, in `tile`, its sum cut as `cut`
    /// says.
    fn grad_input_gather_sliced(
        &self,
        batch: &mut Batch<'_>,
        tile: FragmentTile,
        cut: Split,
        mut p: kernels::ConvParams,
        io: InputBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let mut partials = self.partials.lock();
        let len = cut.partials(p.in_channels, p.batch * p.in_h * p.in_w);
        let args = kernels::ConvGradInputFragmentsSplitArgs {
            p: &p,
            w: io.w,
            grad_pre: io.grad_pre,
            partial: partials.at_least(batch.runtime(), len)?,
            grad_x: io.grad_x,
        };
        let split = &self.tensor_cores().grad_input_split;
        split.get(tile.pick()).record(batch, args)
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
        let mut by_tap = self.weights_by_tap.lock();
        let w_transposed = by_tap.at_least(batch.runtime(), io.w.len().div_ceil(2))?;
        let args = kernels::ConvWeightsTransposedByTapArgs {
            p: &p,
            w: io.w,
            w_transposed: &mut *w_transposed.view_as_mut()?,
        };
        self.tensor_cores()
            .weights_transposed_by_tap
            .record(batch, args)?;
        // (The copy ran with the parameters before the split or the stream, which it reads
        // none of.)
        let p = &plan.params(p);
        self.record_grad_input_taps(batch, plan, p, &*w_transposed.view_as()?, io)
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
        let mut partials = self.partials.lock();
        let rt = batch.runtime();
        match plan {
            TapPlan::AllTaps | TapPlan::Window { .. } => {
                let args = kernels::ConvGradInputWindowArgs {
                    p,
                    w_transposed,
                    grad_pre,
                    grad_x,
                };
                let window = match plan {
                    TapPlan::Window { tile } => {
                        (f.grad_input_window.as_ref()).map(|k| k.get(tile.pick()))
                    }
                    _ => f.grad_input_all_taps.as_ref(),
                };
                window
                    .expect("a window plan comes from its kernel")
                    .record(batch, args)
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Whole,
            } => {
                let args = kernels::ConvGradInputFragmentsByTapArgs {
                    p,
                    w_transposed,
                    grad_pre,
                    grad_x,
                };
                f.grad_input_by_tap.get(tile.pick()).record(batch, args)
            }
            TapPlan::ByTap {
                tile,
                sum: Sum::Sliced(cut),
            } => {
                let len = cut.partials(p.in_channels, p.batch * p.in_h * p.in_w);
                let args = kernels::ConvGradInputFragmentsByTapSplitArgs {
                    p,
                    w_transposed,
                    grad_pre,
                    partial: partials.at_least(rt, len)?,
                    grad_x,
                };
                f.grad_input_by_tap_split
                    .get(tile.pick())
                    .record(batch, args)
            }
            TapPlan::Stream(stream) => {
                let streams = f.grad_input_by_tap_stream.as_ref();
                let kernel = streams
                    .expect("a stream plan comes from its kernels")
                    .get(stream.tile);
                let mut arrivals = self.arrivals.lock();
                let len = kernel.constants().partials(p.workers);
                let args = kernels::ConvGradInputFragmentsByTapStreamedArgs {
                    p,
                    w_transposed,
                    grad_pre,
                    partial: partials.at_least(rt, len)?,
                    arrivals: arrivals.at_least(rt, p.workers as usize)?,
                    grad_x,
                };
                kernel.record(batch, args)
            }
        }
    }

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
    fn weight_way(
        &self,
        rt: &Runtime,
        shape: &Conv2dShape,
        p: kernels::ConvParams,
    ) -> Result<WeightWay> {
        let operation = "nn::Convolution::grad_weight";
        let (ways, fixed) = if self.fragments.is_some() {
            (
                &WeightWay::ON_TENSOR_CORES[..],
                WeightWay::fixed_on_tensor_cores(p.out_channels),
            )
        } else if by_winograd(&p, rt) {
            let winograd = WeightWay::fixed_winograd(p.out_channels.min(p.in_channels));
            (&WeightWay::IN_F32_OR_WINOGRAD[..], winograd)
        } else {
            let f32 = &WeightWay::IN_F32_OR_WINOGRAD[..2];
            (f32, WeightWay::fixed(p.out_channels))
        };
        tuned(rt, operation, shape, &p, ways, fixed, |tune, way, s| {
            let io = WeightBuffers {
                x: &s.x,
                grad_pre: &s.pre,
                grad_w: &mut s.grad_w,
            };
            self.weight_pass(tune, WeightPass::Record, way, p, io)
        })
    }

    /// The blockings the filter gradient's kernels were built in, for its plans.
    fn weight_caps(&self, rt: &Runtime) -> plan::WeightCaps {
        plan::WeightCaps {
            f32: self.grad_weight.each(|k| k.conv_grad_weight().constants()),
            winograd: (self.grad_weight_winograd).each(|k| k.winograd_multiply().constants()),
            tensor: self.fragments.as_ref().map(|f| {
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
    fn weight_pass(
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
    fn weight_f32(
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

    /// The filter gradient by Winograd's F(3x3, 4x4), its products in `tile`, sliced as `p`
    /// says.
    fn weight_winograd(
        &self,
        batch: &mut Batch<'_>,
        pass: WeightPass,
        tile: Tile,
        p: kernels::ConvParams,
        io: WeightBuffers<'_>,
    ) -> Result<()> {
        let family = self.grad_weight_winograd.get(tile.pick());
        let tiles = plan::winograd_tiles(&p);
        let points = kernels::POINTS as usize;
        let pairs = p.out_channels as usize * p.in_channels as usize;
        let rt = batch.runtime();
        let [input_tiles, gradient_tiles, products] = &self.winograd;
        let (mut input_tiles, mut gradient_tiles) = (input_tiles.lock(), gradient_tiles.lock());
        let mut products = products.lock();
        let mut args = kernels::ConvGradWeightWinogradArgs {
            p: &p,
            x: io.x,
            grad_pre: io.grad_pre,
            input_tiles: input_tiles.at_least(rt, points * p.in_channels as usize * tiles)?,
            gradient_tiles: gradient_tiles
                .at_least(rt, points * p.out_channels as usize * tiles)?,
            products: products.at_least(rt, p.splits as usize * points * pairs)?,
            grad_w: io.grad_w,
        };
        match pass {
            WeightPass::Check => family.check_lengths(&mut args),
            WeightPass::Record => family.record(batch, args),
        }
    }

    /// The filter gradient on the tensor cores in `tile`, by taps or not (`pass.1`), sliced
    /// as `p` says, then its slices added up.
    fn weight_on_tensor_cores(
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
    fn weight_stream(
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
        let (mut partials, mut arrivals) = (self.partials.lock(), self.arrivals.lock());
        let rt = batch.runtime();
        let len = kernel.constants().partials(p.workers);
        let args = kernels::ConvGradWeightFragmentsStreamedArgs {
            p: &p,
            x: io.x,
            grad_pre: io.grad_pre,
            partial: partials.at_least(rt, len)?,
            arrivals: arrivals.at_least(rt, p.workers as usize)?,
            grad_w: io.grad_w,
        };
        match pass {
            WeightPass::Check => kernel.check_lengths(&args),
            WeightPass::Record => kernel.record(batch, args),
        }
    }
}

/// A forward's buffers.
struct ForwardBuffers<'b> {
    x: &'b GpuBuffer<f32>,
    w: &'b GpuBuffer<f32>,
    bias: &'b GpuBuffer<f32>,
    pre: &'b mut GpuBuffer<f32>,
    y: &'b mut GpuBuffer<f32>,
}

/// An input gradient's buffers.
struct InputBuffers<'b> {
    w: &'b GpuBuffer<f32>,
    grad_pre: &'b GpuBuffer<f32>,
    grad_x: &'b mut GpuBuffer<f32>,
}

/// A filter gradient's buffers.
struct WeightBuffers<'b> {
    x: &'b GpuBuffer<f32>,
    grad_pre: &'b GpuBuffer<f32>,
    grad_w: &'b mut GpuBuffer<f32>,
}

/// What a backward reads and writes.
struct BackwardBuffers<'b> {
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

/// Whether [`Convolution::weight_pass`] records the pass or only checks its buffers (for a caller
/// that records other work first and checks every buffer before recording anything).
#[derive(Clone, Copy, Debug)]
enum WeightPass {
    Check,
    Record,
}

/// Winograd's filter gradient in both blockings of its products.
fn winograd_family(rt: &Runtime) -> Result<kernels::Blocked<kernels::ConvGradWeightWinograd>> {
    // SAFETY (each): every index is guarded (see "Bounds" in `kernels`).
    let input_tiles = unsafe { kernels::WinogradInputTiles::new_unchecked(rt) }?;
    let gradient_tiles = unsafe { kernels::WinogradGradientTiles::new_unchecked(rt) }?;
    let filter = unsafe { kernels::WinogradFilter::new_unchecked(rt) }?;
    kernels::Blocked::new(|b| {
        Ok(kernels::ConvGradWeightWinograd::from_members(
            input_tiles.clone(),
            gradient_tiles.clone(),
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            unsafe { kernels::WinogradMultiply::with_constants_unchecked(rt, b) }?,
            filter.clone(),
        ))
    })
}

/// Whether the filter gradient of `p` may run by Winograd's F(3x3, 4x4): a 3 x 3 filter of
/// stride 1 and dilation 1, whose transformed tiles and products fit `u32` indices and one
/// binding of `rt`'s device.
fn by_winograd(p: &kernels::ConvParams, rt: &Runtime) -> bool {
    // The window, stride and dilation.
    if exact(p) != [3, 3, 1, 1, 1, 1] {
        return false;
    }
    let tiles = plan::winograd_tiles(p) as u64;
    let points = u64::from(kernels::POINTS);
    let channels = u64::from(p.out_channels.max(p.in_channels));
    let pairs = u64::from(p.out_channels) * u64::from(p.in_channels);
    // `Split` cuts no slice shorter than `MIN_SLICE` tiles.
    let most_slices = tiles.div_ceil(MIN_SLICE).max(1);
    let largest = (points * channels * tiles).max(points * pairs * most_slices);
    let limits = &rt.info().limits;
    let binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    largest <= u64::from(u32::MAX) && largest * 4 <= binding
}

/// How `operation` runs for `shape`, among `ways` (see [`tune::way`]); with autotuning off,
/// `fixed`.
fn tuned<W: tune::Candidate>(
    rt: &Runtime,
    operation: &str,
    shape: &Conv2dShape,
    p: &kernels::ConvParams,
    ways: &[W],
    fixed: W,
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
}

#[cfg(test)]
mod tests {
    use super::plan::{over_window, streams, Direction::*};
    use super::*;
    use crate::Padding;

    #[test]
    fn passes_run_over_a_window_where_the_filter_reaches_at_most_128_positions() {
        let params = |shape: Conv2dShape| shape.params(Activation::None).unwrap();
        let (by_tap, all) = (
            kernels::WindowBlocking::tap_by_tap(128, 512),
            kernels::WindowBlocking::ALL_TAPS_AT_ONCE,
        );
        let square = |n, ci, hw, co, k, stride, pad| {
            Conv2dShape::new(n, ci, [hw, hw], co, [k, k])
                .stride([stride, stride])
                .padding(Padding::uniform(pad))
        };
        // The ResNet layers: a 3 x 3 filter reaches 2 rows of the padded grid and 2 more.
        for (hw, channels) in [(56, 64), (28, 128), (14, 256), (7, 512)] {
            let p = params(square(32, channels, hw, channels, 3, 1, 1));
            assert!(
                over_window(&p, Forward, by_tap) && over_window(&p, GradInput, by_tap),
                "{hw}"
            );
        }
        // 3 x 3 over outputs 61 wide reaches 2 * 63 + 2 = 128 positions; 62 wide, 130.
        let p = params(Conv2dShape::new(1, 32, [4, 63], 32, [3, 3]));
        assert!(over_window(&p, Forward, by_tap) && !over_window(&p, GradInput, by_tap));
        let p = params(Conv2dShape::new(1, 32, [4, 64], 32, [3, 3]));
        assert!(!over_window(&p, Forward, by_tap));
        // Dilation widens the reach: 2 * 2 * (9 + 4) + 4 = 56.
        let dilated = square(2, 64, 9, 64, 3, 1, 2).dilation([2, 2]);
        assert!(over_window(&params(dilated), Forward, by_tap));
        // Strided passes, and summed channels that are not a multiple of 32, do not.
        assert!(!over_window(
            &params(square(2, 64, 9, 64, 3, 2, 1)),
            Forward,
            by_tap
        ));
        let p = params(square(2, 40, 8, 72, 3, 1, 1));
        assert!(!over_window(&p, Forward, by_tap) && !over_window(&p, GradInput, by_tap));
        let p = params(square(2, 64, 8, 72, 3, 1, 1));
        assert!(over_window(&p, Forward, by_tap) && !over_window(&p, GradInput, by_tap));
        // Every tap's filter slice at once: the ResNet layers, summed channels a multiple of
        // 16, filters of at most 9 taps.
        for (hw, channels) in [(56, 64), (28, 128), (14, 256), (7, 512)] {
            let p = params(square(32, channels, hw, channels, 3, 1, 1));
            assert!(
                over_window(&p, Forward, all) && over_window(&p, GradInput, all),
                "{hw}"
            );
        }
        let p = params(square(2, 48, 8, 40, 3, 1, 1));
        assert!(over_window(&p, Forward, all) && !over_window(&p, GradInput, all));
        assert!(!over_window(&p, Forward, by_tap));
        let p = params(square(2, 64, 8, 64, 5, 1, 2));
        assert!(!over_window(&p, Forward, all) && over_window(&p, Forward, by_tap));
        let p = params(Conv2dShape::new(1, 32, [4, 64], 32, [3, 3]));
        assert!(!over_window(&p, Forward, all));
    }

    #[test]
    fn a_pass_streams_only_where_its_iterations_are_counted_in_u32() {
        let [square, wide, long] = [(128, 128), (256, 128), (128, 256)]
            .map(|(block, cols)| kernels::StreamBlocking { block, cols });
        assert_eq!(kernels::StreamBlocking::ALL, [square, wide, long]);
        assert_eq!((square.depth(), square.invocations()), (32, 512));
        // 128@28: 196 blocks of 36 steps.
        assert!(streams(128, 32 * 28 * 28, 128 * 9, square));
        // 2^16 blocks of 128 positions, of 2^16 - 1 steps: the most iterations `u32` counts,
        // less 2^16; one step more is 2^32.
        assert!(streams(128, 1 << 23, 32 * 65535, square));
        assert!(!streams(128, 1 << 23, 32 * 65536, square));
        // The oblong blocks hold twice the outputs: 256 rows make the same 2^16 blocks.
        for oblong in [wide, long] {
            assert!(streams(256, 1 << 23, 32 * 65535, oblong));
            assert!(!streams(256, 1 << 23, 32 * 65536, oblong));
        }
    }

    /// A filter of `co` output and `ci` input channels and `kh` x `kw` taps, numbered, on the
    /// device; its shape's parameters; and element (`o`, `i`, `r`, `c`) of it on the host.
    fn numbered_filter(
        rt: &Runtime,
        co: usize,
        ci: usize,
        [kh, kw]: [usize; 2],
    ) -> (
        GpuBuffer<f32>,
        kernels::ConvParams,
        impl Fn(usize, usize, usize, usize) -> f32,
    ) {
        let shape = Conv2dShape::new(1, ci as u32, [6, 6], co as u32, [kh as u32, kw as u32])
            .padding(Padding::uniform(1));
        let p = shape.params(Activation::None).unwrap();
        let values: Vec<f32> = (0..co * ci * kh * kw).map(|i| i as f32).collect();
        let w = rt.upload(&values).unwrap();
        let at = move |o, i, r, c| values[((o * ci + i) * kh + r) * kw + c];
        (w, p, at)
    }

    /// The filters the copies' tests lay out: taps of every size differing from the
    /// channels', fewer than `kernels::COPY_TAPS`, as many, and more (two rounds and part of a
    /// third), one tap.
    const COPIED_FILTERS: [[usize; 2]; 4] = [[3, 2], [3, 3], [4, 5], [1, 1]];

    /// The tensor-core forward's filter layout, on any device with `f16` (lavapipe
    /// included): element (output channel, tap row, tap column, input channel) of `w`, as a
    /// half, at that position of the result, for filters whose every size differs.
    #[test]
    fn weights_by_tap_put_each_filter_tap_outermost() {
        let rt = Runtime::new().unwrap();
        let (co, ci) = (3, 5);
        let kernel = kernels::ConvWeightsByTap::new(&rt).unwrap();
        for [kh, kw] in COPIED_FILTERS {
            let (w, p, at) = numbered_filter(&rt, co, ci, [kh, kw]);
            let mut w_by_tap = rt.zeros::<f16>(w.len()).unwrap();
            let args = kernels::ConvWeightsByTapArgs {
                p: &p,
                w: &w,
                w_by_tap: &mut w_by_tap,
            };
            kernel.launch(&rt, args).unwrap();
            let mut want = Vec::new();
            for o in 0..co {
                for r in 0..kh {
                    for c in 0..kw {
                        for i in 0..ci {
                            want.push(f16::from_f32(at(o, i, r, c)));
                        }
                    }
                }
            }
            assert_eq!(w_by_tap.read(&rt).unwrap(), want, "{kh} x {kw}");
        }
    }

    /// The tensor-core input gradient's filter layout: element (input channel, tap row, tap
    /// column, output channel) of `w`, as a half, at that position, for channels that fill
    /// one tile of the copy and part of the next (and values past 2048, which `f16` rounds).
    #[test]
    fn weights_transposed_by_tap_put_input_channels_outermost() {
        let rt = Runtime::new().unwrap();
        let (co, ci) = (20, 18);
        let kernel = kernels::ConvWeightsTransposedByTap::new(&rt).unwrap();
        for [kh, kw] in COPIED_FILTERS {
            let (w, p, at) = numbered_filter(&rt, co, ci, [kh, kw]);
            let mut w_transposed = rt.zeros::<f16>(w.len()).unwrap();
            let args = kernels::ConvWeightsTransposedByTapArgs {
                p: &p,
                w: &w,
                w_transposed: &mut w_transposed,
            };
            kernel.launch(&rt, args).unwrap();
            let mut want = Vec::new();
            for i in 0..ci {
                for r in 0..kh {
                    for c in 0..kw {
                        for o in 0..co {
                            want.push(f16::from_f32(at(o, i, r, c)));
                        }
                    }
                }
            }
            assert_eq!(w_transposed.read(&rt).unwrap(), want, "{kh} x {kw}");
        }
    }

    /// The streams' schedule and hand-over of parts (`kernels::stream_schedule_model`), on any
    /// device: every blocking, over 136 output channels (ragged blocks of 128 and 256 rows) of
    /// 3 images of 10 x 10 (ragged blocks of 128 and 256 columns), summing 64 channels x 9
    /// taps; by 1 workgroup (every block whole), 3 and 4 (whole blocks, then the rest in
    /// parts), 5, 7, 13 and 40 (every block in parts, some ranges over three blocks) and 500
    /// (more than there are iterations). Each runs twice on the same counts, which must be
    /// back at zero after each.
    #[test]
    fn stream_schedules_add_up_every_part_of_every_block() {
        let rt = Runtime::new().unwrap();
        let shape = Conv2dShape::new(3, 64, [10, 10], 136, [3, 3]).padding(Padding::uniform(1));
        let mut p = shape.params(Activation::None).unwrap();
        let len = shape.output_len().unwrap();
        let bias: Vec<f32> = (0..136).map(|c| c as f32).collect();
        let bias_buffer = rt.upload(&bias).unwrap();
        let mut arrivals = rt.zeros::<u32>(500).unwrap();
        for &blocking in kernels::StreamBlocking::ALL {
            let model = kernels::StreamScheduleModel::with_constants(&rt, blocking).unwrap();
            let steps = 64 * 9 / blocking.depth();
            let sum = (steps * (steps + 1) / 2) as f32;
            for workers in [1, 3, 4, 5, 7, 13, 40, 500] {
                p.workers = workers;
                let mut partial = rt.zeros(blocking.partials(workers)).unwrap();
                for round in 0..2 {
                    let (mut pre, mut y) = (rt.zeros(len).unwrap(), rt.zeros(len).unwrap());
                    let args = kernels::StreamScheduleModelArgs {
                        p: &p,
                        bias: &bias_buffer,
                        partial: &mut partial,
                        arrivals: &mut arrivals,
                        pre: &mut pre,
                        y: &mut y,
                    };
                    model.launch(&rt, args).unwrap();
                    let at = |i: usize| bias[i / 100 % 136] + sum;
                    let want: Vec<f32> = (0..len).map(at).collect();
                    let case = format!("{blocking:?}, {workers} workers, round {round}");
                    assert_eq!(pre.read(&rt).unwrap(), want, "pre, {case}");
                    assert_eq!(y.read(&rt).unwrap(), want, "y, {case}");
                    let counts = arrivals.read(&rt).unwrap();
                    let left: Vec<(usize, &u32)> =
                        counts.iter().enumerate().filter(|(_, &c)| c != 0).collect();
                    assert!(left.is_empty(), "{case}: counts left {left:?}");
                }
            }
        }
    }

    /// Every pass as a stream of workgroups against the same pass not streamed (the forward
    /// and the input gradient by taps whole), on a device with tensor cores, in every stream
    /// blocking. 160 -> 96 channels over 3 images of 10 x 10: the forward ragged blocks of 45
    /// steps (3 of 128 x 128 or 256 x 128, 2 of 128 x 256), the input gradient of 27 (6, 3
    /// and 4), the filter gradient 96 x 1440 of 10, the last 12 deep (12, 12 and 6). Run by one
    /// workgroup (every block whole); by 2, 4 and 5, whole blocks first where there are as
    /// many, then the rest in parts; by 7 and 13, every block in parts, some ranges over
    /// three blocks; by 100, an iteration or two each; by more than there are iterations.
    /// The streams run one after another on the same counts, so a count left above zero
    /// would show as a block nobody finished.
    /// Records the forward, the input gradient and the filter gradient of `p` run `ways`,
    /// from `x`, `w`, `bias` and `grad_pre` into `pre`, `y`, `grad_x` and `grad_w`.
    fn record_passes(
        conv: &Convolution,
        batch: &mut Batch<'_>,
        (way, weight): (ConvWay, WeightWay),
        p: kernels::ConvParams,
        [x, w, bias, grad_pre]: [&GpuBuffer<f32>; 4],
        [pre, y, grad_x, grad_w]: [&mut GpuBuffer<f32>; 4],
    ) {
        let io = ForwardBuffers { x, w, bias, pre, y };
        conv.forward_way(batch, way, p, io).unwrap();
        let io = InputBuffers {
            w,
            grad_pre,
            grad_x,
        };
        conv.grad_input_way(batch, way, p, io).unwrap();
        let io = WeightBuffers {
            x,
            grad_pre,
            grad_w,
        };
        (conv.weight_pass(batch, WeightPass::Record, weight, p, io)).unwrap();
    }

    #[test]
    fn passes_as_streams_match_the_passes_whole() {
        let rt = Runtime::new().unwrap();
        let tensor = match Convolution::with_precision(&rt, Precision::TensorCoreF16) {
            Err(tessera::Error::MissingFeature { .. }) => return,
            built => built.unwrap(),
        };
        let shape = Conv2dShape::new(3, 160, [10, 10], 96, [3, 3]).padding(Padding::uniform(1));
        let p = shape.params(Activation::Relu).unwrap();
        let wave = |len: usize, f: f32| -> Vec<f32> {
            (0..len).map(|i| (i as f32 * f).sin() * 0.5).collect()
        };
        let up = |v: &[f32]| rt.upload(v).unwrap();
        let len = shape.output_len().unwrap();
        let x = up(&wave(shape.input_len(), 0.37));
        let w = up(&wave(shape.weight_len(), 0.11));
        let bias = up(&wave(96, 0.7));
        let grad_pre = up(&wave(len, 0.23));
        let zeros = |len: usize| rt.zeros::<f32>(len).unwrap();
        // pre, y, grad_x and grad_w, and the kernels that ran.
        let run = |way: ConvWay, weight: WeightWay| {
            let (mut pre, mut y, mut grad_x) = (zeros(len), zeros(len), zeros(shape.input_len()));
            let mut grad_w = zeros(shape.weight_len());
            let mut batch = rt.batch();
            let ways = (way, weight);
            let inputs = [&x, &w, &bias, &grad_pre];
            let outputs = [&mut pre, &mut y, &mut grad_x, &mut grad_w];
            record_passes(&tensor, &mut batch, ways, p, inputs, outputs);
            let ran: Vec<String> = (batch.submit_timed().unwrap().dispatches.into_iter())
                .map(|(label, _)| label)
                .collect();
            // Each stream leaves its counts of the shared blocks' parts as it found them.
            let mut arrivals = tensor.arrivals.lock();
            let arrivals = arrivals.at_least(&rt, 1).unwrap().read(&rt).unwrap();
            assert!(arrivals.iter().all(|&count| count == 0), "{arrivals:?}");
            let [pre, y, grad_x, grad_w] = [pre, y, grad_x, grad_w].map(|b| b.read(&rt).unwrap());
            ([pre, y, grad_x, grad_w], ran)
        };
        let (tile, schedule) = (FragmentTile::Many, tune::Schedule::ByTap { split: false });
        let by_tap = ConvWay::TensorCores { tile, schedule };
        let (want, _) = run(by_tap, WeightWay::TensorCores { tile, by_tap: true });
        let blockings = [
            (kernels::StreamTile::Square, "block128_cols128"),
            (kernels::StreamTile::Wide, "block256_cols128"),
            (kernels::StreamTile::Long, "block128_cols256"),
        ];
        for ((blocking, blocks), workers) in blockings
            .into_iter()
            .flat_map(|b| [1, 2, 4, 5, 7, 13, 100, 500].map(|workers| (b, workers)))
        {
            let stream = tune::Stream {
                tile: blocking,
                workers,
            };
            let (got, ran) = run(ConvWay::Streamed(stream), WeightWay::Streamed(stream));
            for pass in ["forward", "grad_input"] {
                let stream =
                    format!("conv_{pass}_fragments_by_tap_streamed_{blocks}_kernel_h3_kernel_w3");
                assert!(ran.contains(&stream), "{stream} not in {ran:?}");
            }
            let stream = format!("conv_grad_weight_fragments_streamed_{blocks}");
            assert!(ran.contains(&stream), "{stream} not in {ran:?}");
            for (name, (got, want)) in ["pre", "y", "grad_x", "grad_w"]
                .into_iter()
                .zip(got.iter().zip(&want))
            {
                let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    let close = (g - w).abs() <= 1e-5 * scale;
                    let case = format!("{blocks}, {workers} workers");
                    assert!(close, "{name}[{i}] in {case}: {g} against {w}");
                }
            }
        }
    }
}
