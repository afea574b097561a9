//! The shape of a convolution: its images, filter, stride, padding and dilation, and the
//! kernels' parameters made from it.

use super::super::{invalid, kernels, Activation};
use tessera::Result;

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
    pub(super) fn params(&self, activation: Activation) -> Result<kernels::ConvParams> {
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

fn product(dims: &[u32]) -> usize {
    dims.iter().map(|&d| d as usize).product()
}
