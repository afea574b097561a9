//! Layers: an op with its parameters, their gradients and the activations it keeps between
//! the forward and the backward pass.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use super::{invalid, Activation, Conv2dBackward, Conv2dForward, Conv2dShape, Convolution};
use super::{Gemm, GemmBackward, GemmForward, GemmShape, Padding, Precision};
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// How a layer's weights and biases start, drawn from a seeded generator (ChaCha8, which
/// `rand` documents as reproducible across platforms and versions), so that a seed gives the
/// same network everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Init {
    /// PyTorch's default for `Linear` and `Conv2d`: weights and biases uniform in
    /// `±1/sqrt(fan_in)` (its `kaiming_uniform_(a=sqrt(5))`).
    Uniform {
        /// The generator's seed.
        seed: u64,
    },
    /// He (Kaiming) uniform, for layers followed by ReLU: weights uniform in
    /// `±sqrt(6/fan_in)`, biases zero.
    HeUniform {
        /// The generator's seed.
        seed: u64,
    },
}

impl Default for Init {
    /// [`Init::Uniform`] with seed 0.
    fn default() -> Self {
        Init::Uniform { seed: 0 }
    }
}

impl Init {
    /// A weight tensor of `len` values and a bias of `bias_len`, for a layer whose every
    /// output sums `fan_in` products.
    fn draw(self, len: usize, bias_len: usize, fan_in: usize) -> (Vec<f32>, Vec<f32>) {
        let fan_in = fan_in.max(1) as f32;
        let (seed, weight_bound, bias_bound) = match self {
            Init::Uniform { seed } => (seed, fan_in.sqrt().recip(), fan_in.sqrt().recip()),
            Init::HeUniform { seed } => (seed, (6.0 / fan_in).sqrt(), 0.0),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut uniform = |bound: f32, n: usize| -> Vec<f32> {
            if bound == 0.0 {
                return vec![0.0; n];
            }
            (0..n).map(|_| rng.random_range(-bound..bound)).collect()
        };
        let weight = uniform(weight_bound, len);
        (weight, uniform(bias_bound, bias_len))
    }
}

/// A parameter tensor of a layer and its gradient, for an optimizer step or a checkpoint.
#[derive(Debug)]
pub struct Parameter<'a> {
    /// `"weight"` or `"bias"`.
    pub name: &'static str,
    /// The tensor's dimensions (row-major).
    pub shape: Vec<usize>,
    /// The values.
    pub value: &'a mut GpuBuffer<f32>,
    /// The gradient the last backward pass wrote.
    pub grad: &'a GpuBuffer<f32>,
}

/// The sizes and options of a [`Linear`] layer.
///
/// ```
/// use tessera_nn::{Activation, Init, LinearConfig};
/// let config = LinearConfig::new(784, 10)
///     .activation(Activation::Relu)
///     .init(Init::HeUniform { seed: 7 });
/// assert_eq!(config.out_features, 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinearConfig {
    /// Values per input row.
    pub in_features: u32,
    /// Values per output row.
    pub out_features: u32,
    /// The activation applied to the output; none by default.
    pub activation: Activation,
    /// How the parameters start; [`Init::default`] by default.
    pub init: Init,
    /// How the products are computed; strict f32 by default.
    pub precision: Precision,
}

impl LinearConfig {
    /// A layer from `in_features` to `out_features` values per row, without activation.
    pub const fn new(in_features: u32, out_features: u32) -> Self {
        LinearConfig {
            in_features,
            out_features,
            activation: Activation::None,
            init: Init::Uniform { seed: 0 },
            precision: Precision::F32,
        }
    }

    /// The same layer computing in `precision` ([`Precision::TensorCoreF16`]: its products on
    /// the tensor cores; [`Linear::new`] then fails with
    /// [`Error::MissingFeature`](tessera::Error::MissingFeature) on a device without them).
    pub const fn precision(self, precision: Precision) -> Self {
        LinearConfig { precision, ..self }
    }

    /// The same layer with `activation`.
    pub const fn activation(self, activation: Activation) -> Self {
        LinearConfig { activation, ..self }
    }

    /// The same layer starting from `init`.
    pub const fn init(self, init: Init) -> Self {
        LinearConfig { init, ..self }
    }
}

/// A fully connected layer, `y = act(x · weight + bias)` over rows of `x`: the [`Gemm`] op
/// with its parameters (`weight` is `[in_features, out_features]`, `bias` `[out_features]`),
/// their gradients, and the buffers its passes write.
///
/// The number of rows is read off each call's input (its length over `in_features`); the
/// layer's buffers follow it.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Linear, LinearConfig};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let mut linear = Linear::new(&rt, LinearConfig::new(4, 3))?;
/// let x = rt.upload(&[1.0f32; 8])?; // two rows
/// let grad_y = rt.upload(&[1.0f32; 6])?;
/// let mut batch = rt.batch();
/// linear.forward(&mut batch, &x)?;
/// linear.backward(&mut batch, &x, &grad_y)?; // writes the gradients, returns x's
/// batch.submit()?;
/// assert_eq!(linear.output()?.len(), 6);
/// assert_eq!(linear.grad_bias().read(&rt)?, vec![2.0; 3]); // summed over the rows
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Linear {
    op: Gemm,
    config: LinearConfig,
    state: State,
}

impl Linear {
    /// A layer with parameters drawn as `config.init` says and zero gradients.
    pub fn new(rt: &Runtime, config: LinearConfig) -> Result<Self> {
        let LinearConfig {
            in_features,
            out_features,
            ..
        } = config;
        if in_features == 0 || out_features == 0 {
            return Err(invalid(
                "linear",
                format!(
                    "in_features and out_features must be at least 1, got {in_features} and \
                     {out_features}"
                ),
            ));
        }
        let (inputs, outputs) = (in_features as usize, out_features as usize);
        Ok(Linear {
            op: Gemm::with_precision(rt, config.precision)?,
            config,
            state: State::new(rt, "linear", config.init, inputs * outputs, outputs, inputs)?,
        })
    }

    /// The layer's sizes and options.
    pub fn config(&self) -> &LinearConfig {
        &self.config
    }

    /// Compiles every kernel the layer may run now rather than at the first call that runs
    /// it (see [`Gemm::prepare`]).
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.op.prepare(rt)
    }

    /// The shape of the GEMM for an input `x`: its rows, checked.
    fn shape(&self, x: &GpuBuffer<f32>) -> Result<GemmShape> {
        let LinearConfig {
            in_features: k,
            out_features: n,
            ..
        } = self.config;
        let m = rows(x.len(), k as usize, "linear", "in_features")?;
        Ok(GemmShape { m, n, k })
    }

    /// Records the forward pass of `x` (`[rows, in_features]`) and returns the output buffer,
    /// `[rows, out_features]`, which stays the layer's (read it after the batch is
    /// submitted, or pass it to the next layer).
    pub fn forward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = self.shape(x)?;
        let activation = self.config.activation;
        let out = shape.m as usize * shape.n as usize;
        let State {
            weight, bias, keep, ..
        } = &mut self.state;
        let (pre, y) = keep.outputs(batch.runtime(), out, activation)?;
        self.op.forward(
            batch,
            GemmForward {
                shape,
                activation,
                a: x,
                b: weight,
                bias,
                pre,
                y: &mut *y,
            },
        )?;
        Ok(y)
    }

    /// Records the backward pass for the forward's `x` and the output's gradient `grad_y`:
    /// the parameters' gradients (overwritten) and the input's, which it returns.
    pub fn backward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = self.shape(x)?;
        let (op, activation) = (&self.op, self.config.activation);
        let rt = batch.runtime();
        self.state
            .backward_with_input(rt, x.len(), |state, grad_a| {
                let args = state.gemm_backward(shape, activation, x, grad_y, Some(grad_a))?;
                op.backward(batch, args)
            })
    }

    /// The backward pass without the input's gradient, for a network's first layer.
    pub fn backward_params(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
    ) -> Result<()> {
        let shape = self.shape(x)?;
        let args = self
            .state
            .gemm_backward(shape, self.config.activation, x, grad_y, None)?;
        self.op.backward(batch, args)
    }

    /// The output of the last forward pass.
    pub fn output(&self) -> Result<&GpuBuffer<f32>> {
        self.state.keep.output("linear")
    }

    /// `[in_features, out_features]`.
    pub fn weight(&self) -> &GpuBuffer<f32> {
        &self.state.weight
    }

    /// `[out_features]`.
    pub fn bias(&self) -> &GpuBuffer<f32> {
        &self.state.bias
    }

    /// The weight's gradient from the last backward pass.
    pub fn grad_weight(&self) -> &GpuBuffer<f32> {
        &self.state.grad_weight
    }

    /// The bias's gradient from the last backward pass.
    pub fn grad_bias(&self) -> &GpuBuffer<f32> {
        &self.state.grad_bias
    }

    /// The weight and the bias with their gradients, for an optimizer or a checkpoint.
    pub fn parameters(&mut self) -> [Parameter<'_>; 2] {
        let LinearConfig {
            in_features,
            out_features,
            ..
        } = self.config;
        self.state
            .parameters(vec![in_features as usize, out_features as usize])
    }
}

/// The sizes and options of a [`Conv2d`] layer: a [`Conv2dShape`] without the batch, and the
/// activation and initialization.
///
/// ```
/// use tessera_nn::{Activation, Conv2dConfig, Padding};
/// let config = Conv2dConfig::new(3, [32, 32], 16, [3, 3])
///     .stride([2, 2])
///     .padding(Padding::uniform(1))
///     .activation(Activation::Relu);
/// assert_eq!(config.shape(8).output().unwrap(), [16, 16]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dConfig {
    /// The convolution's shape; its `batch` is ignored (each call's input gives it).
    shape: Conv2dShape,
    /// The activation applied to the output; none by default.
    pub activation: Activation,
    /// How the parameters start; [`Init::default`] by default.
    pub init: Init,
    /// How the products are computed; strict f32 by default.
    pub precision: Precision,
}

impl Conv2dConfig {
    /// A layer from `in_channels` images of `input` `[h, w]` pixels to `out_channels` through
    /// a `kernel` `[h, w]` filter, with stride 1, no padding, no dilation, no activation.
    pub const fn new(
        in_channels: u32,
        input: [u32; 2],
        out_channels: u32,
        kernel: [u32; 2],
    ) -> Self {
        Conv2dConfig {
            shape: Conv2dShape::new(1, in_channels, input, out_channels, kernel),
            activation: Activation::None,
            init: Init::Uniform { seed: 0 },
            precision: Precision::F32,
        }
    }

    /// The same layer computing in `precision` (see [`Convolution::with_precision`] for
    /// which passes [`Precision::TensorCoreF16`] puts on the tensor cores; [`Conv2d::new`]
    /// fails with [`Error::MissingFeature`](tessera::Error::MissingFeature) on a device without
    /// them).
    pub const fn precision(self, precision: Precision) -> Self {
        Conv2dConfig { precision, ..self }
    }

    /// The same layer with `stride`.
    pub const fn stride(self, stride: [u32; 2]) -> Self {
        Conv2dConfig {
            shape: self.shape.stride(stride),
            ..self
        }
    }

    /// The same layer with `padding`.
    pub const fn padding(self, padding: Padding) -> Self {
        Conv2dConfig {
            shape: self.shape.padding(padding),
            ..self
        }
    }

    /// The same layer with `dilation`.
    pub const fn dilation(self, dilation: [u32; 2]) -> Self {
        Conv2dConfig {
            shape: self.shape.dilation(dilation),
            ..self
        }
    }

    /// The same layer with `activation`.
    pub const fn activation(self, activation: Activation) -> Self {
        Conv2dConfig { activation, ..self }
    }

    /// The same layer starting from `init`.
    pub const fn init(self, init: Init) -> Self {
        Conv2dConfig { init, ..self }
    }

    /// The convolution's shape for `batch` images.
    pub const fn shape(&self, batch: u32) -> Conv2dShape {
        Conv2dShape {
            batch,
            ..self.shape
        }
    }
}

/// A 2-D convolution layer over NCHW images, `y = act(conv(x, w) + bias)`: the
/// [`Convolution`] op with its parameters (the filter `[out_channels, in_channels, kernel_h,
/// kernel_w]` and `bias` `[out_channels]`), their gradients, and the buffers its passes write.
///
/// The number of images is read off each call's input (its length over one image's); the
/// layer's buffers follow it.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Activation, Conv2d, Conv2dConfig, Init, Padding};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let config = Conv2dConfig::new(1, [8, 8], 4, [3, 3])
///     .padding(Padding::uniform(1))
///     .activation(Activation::Relu)
///     .init(Init::HeUniform { seed: 1 });
/// let mut conv = Conv2d::new(&rt, config)?;
/// let x = rt.upload(&[0.5f32; 2 * 64])?; // two images
/// let mut batch = rt.batch();
/// let y = conv.forward(&mut batch, &x)?;
/// assert_eq!(y.len(), 2 * 4 * 64);
/// batch.submit()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Conv2d {
    op: Convolution,
    config: Conv2dConfig,
    state: State,
}

impl Conv2d {
    /// A layer with parameters drawn as `config.init` says and zero gradients; an error when
    /// the filter does not fit the padded input.
    pub fn new(rt: &Runtime, config: Conv2dConfig) -> Result<Self> {
        let shape = config.shape(1);
        shape.output()?;
        let [kh, kw] = shape.kernel;
        let fan_in = shape.in_channels as usize * kh as usize * kw as usize;
        let (weights, biases) = (shape.weight_len(), shape.out_channels as usize);
        Ok(Conv2d {
            op: Convolution::with_precision(rt, config.precision)?,
            config,
            state: State::new(rt, "conv2d", config.init, weights, biases, fan_in)?,
        })
    }

    /// The layer's sizes and options.
    pub fn config(&self) -> &Conv2dConfig {
        &self.config
    }

    /// Compiles every kernel the layer may run now rather than at the first call that runs
    /// it (see [`Convolution::prepare`]).
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.op.prepare(rt)
    }

    /// Height and width of the output images.
    pub fn output_size(&self) -> [u32; 2] {
        // `new` checked the shape.
        self.config.shape(1).output().unwrap_or_default()
    }

    /// Values per output image, `out_channels * h * w`: a following [`Linear`] layer's
    /// `in_features` (NCHW images are already the rows of the flattened matrix).
    pub fn output_features(&self) -> u32 {
        let [h, w] = self.output_size();
        self.config.shape.out_channels * h * w
    }

    /// The convolution's shape for an input `x`: its images, checked.
    fn shape(&self, x: &GpuBuffer<f32>) -> Result<Conv2dShape> {
        let image = self.config.shape(1).input_len();
        let images = rows(x.len(), image, "conv2d", "one input image")?;
        Ok(self.config.shape(images))
    }

    /// Records the forward pass of `x` (`[images, in_channels, h, w]`) and returns the output
    /// buffer, which stays the layer's (read it after the batch is submitted, or pass it to
    /// the next layer).
    pub fn forward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = self.shape(x)?;
        let activation = self.config.activation;
        let State {
            weight, bias, keep, ..
        } = &mut self.state;
        let (pre, y) = keep.outputs(batch.runtime(), shape.output_len()?, activation)?;
        self.op.forward(
            batch,
            Conv2dForward {
                shape,
                activation,
                x,
                w: weight,
                bias,
                pre,
                y: &mut *y,
            },
        )?;
        Ok(y)
    }

    /// Records the backward pass for the forward's `x` and the output's gradient `grad_y`:
    /// the parameters' gradients (overwritten) and the input's, which it returns.
    pub fn backward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = self.shape(x)?;
        let (op, activation) = (&self.op, self.config.activation);
        let rt = batch.runtime();
        self.state
            .backward_with_input(rt, x.len(), |state, grad_x| {
                let args = state.conv_backward(shape, activation, x, grad_y, Some(grad_x))?;
                op.backward(batch, args)
            })
    }

    /// The backward pass without the input's gradient (not computed at all), for a
    /// network's first layer.
    pub fn backward_params(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
    ) -> Result<()> {
        let shape = self.shape(x)?;
        let args = self
            .state
            .conv_backward(shape, self.config.activation, x, grad_y, None)?;
        self.op.backward(batch, args)
    }

    /// The output of the last forward pass.
    pub fn output(&self) -> Result<&GpuBuffer<f32>> {
        self.state.keep.output("conv2d")
    }

    /// `[out_channels, in_channels, kernel_h, kernel_w]`.
    pub fn weight(&self) -> &GpuBuffer<f32> {
        &self.state.weight
    }

    /// `[out_channels]`.
    pub fn bias(&self) -> &GpuBuffer<f32> {
        &self.state.bias
    }

    /// The filter's gradient from the last backward pass.
    pub fn grad_weight(&self) -> &GpuBuffer<f32> {
        &self.state.grad_weight
    }

    /// The bias's gradient from the last backward pass.
    pub fn grad_bias(&self) -> &GpuBuffer<f32> {
        &self.state.grad_bias
    }

    /// The filter and the bias with their gradients, for an optimizer or a checkpoint.
    pub fn parameters(&mut self) -> [Parameter<'_>; 2] {
        let shape = self.config.shape;
        let [kh, kw] = shape.kernel;
        let (out, inp) = (shape.out_channels as usize, shape.in_channels as usize);
        self.state
            .parameters(vec![out, inp, kh as usize, kw as usize])
    }
}

/// What a layer owns besides its op: its parameters, their gradients, and what it keeps
/// between its passes.
#[derive(Debug)]
struct State {
    weight: GpuBuffer<f32>,
    bias: GpuBuffer<f32>,
    grad_weight: GpuBuffer<f32>,
    grad_bias: GpuBuffer<f32>,
    keep: Kept,
}

impl State {
    /// Parameters drawn as `init` says for a layer (named `layer` in buffer labels) whose
    /// every output sums `fan_in` products, and zero gradients.
    fn new(
        rt: &Runtime,
        layer: &str,
        init: Init,
        weights: usize,
        biases: usize,
        fan_in: usize,
    ) -> Result<Self> {
        let (weight, bias) = init.draw(weights, biases, fan_in);
        Ok(State {
            weight: rt.upload_labeled(&format!("{layer}.weight"), &weight)?,
            bias: rt.upload_labeled(&format!("{layer}.bias"), &bias)?,
            grad_weight: rt.zeros_labeled(&format!("{layer}.weight gradient"), weights)?,
            grad_bias: rt.zeros_labeled(&format!("{layer}.bias gradient"), biases)?,
            keep: Kept::default(),
        })
    }

    /// A backward pass that writes the input's gradient: `record` gets the buffer kept for it
    /// (`len` values), which is returned once recorded.
    fn backward_with_input(
        &mut self,
        rt: &Runtime,
        len: usize,
        record: impl FnOnce(&mut State, &mut GpuBuffer<f32>) -> Result<()>,
    ) -> Result<&GpuBuffer<f32>> {
        let mut grad_x = self.keep.take_grad_input(rt, len)?;
        let recorded = record(self, &mut grad_x);
        let grad_x = self.keep.grad_x.insert(grad_x);
        recorded.map(|()| &*grad_x)
    }

    /// The arguments of a [`Gemm`]'s backward pass over these parameters.
    fn gemm_backward<'a>(
        &'a mut self,
        shape: GemmShape,
        activation: Activation,
        x: &'a GpuBuffer<f32>,
        grad_y: &'a GpuBuffer<f32>,
        grad_a: Option<&'a mut GpuBuffer<f32>>,
    ) -> Result<GemmBackward<'a>> {
        Ok(GemmBackward {
            shape,
            activation,
            a: x,
            b: &self.weight,
            pre: self
                .keep
                .pre(shape.m as usize * shape.n as usize, "linear")?,
            grad_y,
            grad_a,
            grad_b: &mut self.grad_weight,
            grad_bias: &mut self.grad_bias,
        })
    }

    /// The arguments of a [`Convolution`]'s backward pass over these parameters.
    fn conv_backward<'a>(
        &'a mut self,
        shape: Conv2dShape,
        activation: Activation,
        x: &'a GpuBuffer<f32>,
        grad_y: &'a GpuBuffer<f32>,
        grad_x: Option<&'a mut GpuBuffer<f32>>,
    ) -> Result<Conv2dBackward<'a>> {
        Ok(Conv2dBackward {
            shape,
            activation,
            x,
            w: &self.weight,
            pre: self.keep.pre(shape.output_len()?, "conv2d")?,
            grad_y,
            grad_x,
            grad_w: &mut self.grad_weight,
            grad_bias: &mut self.grad_bias,
        })
    }

    /// The weight (of `weight_shape`) and the bias with their gradients.
    fn parameters(&mut self, weight_shape: Vec<usize>) -> [Parameter<'_>; 2] {
        [
            Parameter {
                name: "weight",
                shape: weight_shape,
                value: &mut self.weight,
                grad: &self.grad_weight,
            },
            Parameter {
                name: "bias",
                shape: vec![self.bias.len()],
                value: &mut self.bias,
                grad: &self.grad_bias,
            },
        ]
    }
}

/// `len` values as rows of `width`, checked: the row count, at least one, exact, within
/// `u32`.
fn rows(len: usize, width: usize, layer: &str, what: &str) -> Result<u32> {
    if len == 0 || width == 0 || !len.is_multiple_of(width) {
        return Err(invalid(
            layer,
            format!("the input has {len} values, which is not a whole number of {what} ({width} values)"),
        ));
    }
    u32::try_from(len / width).map_err(|_| {
        invalid(
            layer,
            format!("{} rows exceed the 2^32 that kernels index", len / width),
        )
    })
}

/// What a layer keeps between its passes, each buffer sized for the last forward pass.
#[derive(Debug, Default)]
struct Kept {
    /// The output before the activation (none without activation: `y` is the same).
    pre: Option<GpuBuffer<f32>>,
    /// The output.
    y: Option<GpuBuffer<f32>>,
    /// The input's gradient.
    grad_x: Option<GpuBuffer<f32>>,
}

impl Kept {
    /// `pre` (when the activation needs it) and `y`, `len` values each.
    fn outputs(
        &mut self,
        rt: &Runtime,
        len: usize,
        activation: Activation,
    ) -> Result<(Option<&mut GpuBuffer<f32>>, &mut GpuBuffer<f32>)> {
        let pre = match activation {
            Activation::None => {
                self.pre = None;
                None
            }
            _ => Some(sized(&mut self.pre, rt, len, "layer pre-activation")?),
        };
        Ok((pre, sized(&mut self.y, rt, len, "layer output")?))
    }

    /// The input's gradient, `len` values, taken out (to be put back) while the layer
    /// records into it.
    fn take_grad_input(&mut self, rt: &Runtime, len: usize) -> Result<GpuBuffer<f32>> {
        fitted(self.grad_x.take(), rt, len, "layer input gradient")
    }

    /// The forward's `pre` for a backward pass whose output has `len` values: `None` without
    /// activation; an error when no forward pass of this size ran.
    fn pre(&self, len: usize, layer: &str) -> Result<Option<&GpuBuffer<f32>>> {
        match self.y.as_ref() {
            Some(y) if y.len() == len => Ok(self.pre.as_ref()),
            _ => Err(invalid(
                layer,
                "backward needs a forward pass of the same input first".into(),
            )),
        }
    }

    fn output(&self, layer: &str) -> Result<&GpuBuffer<f32>> {
        self.y
            .as_ref()
            .ok_or_else(|| invalid(layer, "no forward pass has run yet".into()))
    }
}

/// The buffer in `slot`, replaced by one of exactly `len` values when its length differs.
fn sized<'a>(
    slot: &'a mut Option<GpuBuffer<f32>>,
    rt: &Runtime,
    len: usize,
    label: &str,
) -> Result<&'a mut GpuBuffer<f32>> {
    let buffer = fitted(slot.take(), rt, len, label)?;
    Ok(slot.insert(buffer))
}

/// `buffer` when it has exactly `len` values, otherwise a new zeroed one labeled `label`.
fn fitted(
    buffer: Option<GpuBuffer<f32>>,
    rt: &Runtime,
    len: usize,
    label: &str,
) -> Result<GpuBuffer<f32>> {
    match buffer {
        Some(buffer) if buffer.len() == len => Ok(buffer),
        _ => rt.zeros_labeled(label, len),
    }
}
