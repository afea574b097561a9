//! Layers: an op with its parameters, their gradients and the activations it keeps between
//! the forward and the backward pass.

mod norm;

pub use norm::{LayerNormLayer, NormLayer, NormOp, RmsNormLayer, SumGradient};

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
    /// The gradient the last backward pass wrote (mutable, for [`GradClip`](crate::GradClip)).
    pub grad: &'a mut GpuBuffer<f32>,
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
    /// the tensor cores; [`Layer::new`] then fails with
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
    /// which passes [`Precision::TensorCoreF16`] puts on the tensor cores; [`Layer::new`]
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

/// A layer: an op ([`Gemm`] or [`Convolution`]) with its parameters (a weight and a bias),
/// their gradients, and the buffers its passes write. The layers are [`Linear`] and
/// [`Conv2d`]; what this page lists holds for both.
///
/// The batch size is read off each call's input; the layer's buffers follow it.
#[derive(Debug)]
pub struct Layer<Op: LayerOp> {
    op: Op,
    config: Op::Config,
    state: State,
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
pub type Linear = Layer<Gemm>;

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
pub type Conv2d = Layer<Convolution>;

impl<Op: LayerOp> Layer<Op> {
    /// A layer with parameters drawn as its config's `init` says and zero gradients; an
    /// error when the config describes no layer (a size of 0, a filter larger than the
    /// padded input).
    pub fn new(rt: &Runtime, config: Op::Config) -> Result<Self> {
        let sizes = Op::sizes(&config)?;
        Ok(Layer {
            op: Op::build(rt, &config)?,
            state: State::new(rt, Op::NAME, Op::init(&config), sizes)?,
            config,
        })
    }

    /// The layer's sizes and options ([`LinearConfig`] or [`Conv2dConfig`]).
    pub fn config(&self) -> &Op::Config {
        &self.config
    }

    /// Compiles every kernel the layer may run now rather than at the first call that runs
    /// it (see [`Gemm::prepare`]).
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.op.prepare(rt)
    }

    /// Records the forward pass of `x` (rows of `in_features` values, or NCHW images) and
    /// returns the output buffer, which stays the layer's (read it after the batch is
    /// submitted, or pass it to the next layer).
    pub fn forward(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
    ) -> Result<&GpuBuffer<f32>> {
        let shape = Op::shape(&self.config, x.len())?;
        let activation = Op::activation(&self.config);
        let State {
            weight, bias, keep, ..
        } = &mut self.state;
        let (pre, y) = keep.outputs(batch.runtime(), Op::output_len(&shape)?, activation)?;
        let pass = Forward {
            shape,
            activation,
            x,
            weight,
            bias,
            pre,
            y: &mut *y,
        };
        self.op.forward(batch, pass)?;
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
        let shape = Op::shape(&self.config, x.len())?;
        let outputs = Op::output_len(&shape)?;
        let (op, activation) = (&self.op, Op::activation(&self.config));
        let rt = batch.runtime();
        self.state
            .backward_with_input(rt, x.len(), |state, grad_x| {
                let pass = state.backward(Op::NAME, (shape, outputs), activation, x, grad_y)?;
                op.backward(batch, pass, Some(grad_x))
            })
    }

    /// The backward pass without the input's gradient, for a network's first layer (a
    /// [`Conv2d`] does not compute it at all).
    pub fn backward_params(
        &mut self,
        batch: &mut Batch<'_>,
        x: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
    ) -> Result<()> {
        let shape = Op::shape(&self.config, x.len())?;
        let outputs = Op::output_len(&shape)?;
        let activation = Op::activation(&self.config);
        let pass = self
            .state
            .backward(Op::NAME, (shape, outputs), activation, x, grad_y)?;
        self.op.backward(batch, pass, None)
    }

    /// The output of the last forward pass.
    pub fn output(&self) -> Result<&GpuBuffer<f32>> {
        self.state.keep.output(Op::NAME)
    }

    /// The weight: `[in_features, out_features]`, or the filter `[out_channels, in_channels,
    /// kernel_h, kernel_w]`.
    pub fn weight(&self) -> &GpuBuffer<f32> {
        &self.state.weight
    }

    /// The bias: `[out_features]` or `[out_channels]`.
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
        self.state.parameters()
    }
}

impl Conv2d {
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
}

/// What a layer asks of its op. The trait cannot be named outside the crate: the layers are
/// [`Linear`] and [`Conv2d`].
mod op {
    use super::{Activation, Init};
    use tessera::{Batch, GpuBuffer, Result, Runtime};

    pub trait LayerOp: Sized + std::fmt::Debug {
        /// The layer's sizes and options.
        type Config: Copy + std::fmt::Debug;
        /// The op's problem for one call.
        type Shape: Copy;
        /// The layer's name in errors and buffer labels.
        const NAME: &'static str;
        /// The parameters' sizes, or why `config` describes no layer.
        fn sizes(config: &Self::Config) -> Result<Sizes>;
        fn build(rt: &Runtime, config: &Self::Config) -> Result<Self>;
        fn init(config: &Self::Config) -> Init;
        fn activation(config: &Self::Config) -> Activation;
        /// The problem for an input of `input_len` values, checked.
        fn shape(config: &Self::Config, input_len: usize) -> Result<Self::Shape>;
        fn output_len(shape: &Self::Shape) -> Result<usize>;
        fn prepare(&self, rt: &Runtime) -> Result<()>;
        fn forward(&self, batch: &mut Batch<'_>, pass: Forward<'_, Self::Shape>) -> Result<()>;
        fn backward(
            &self,
            batch: &mut Batch<'_>,
            pass: Backward<'_, Self::Shape>,
            grad_x: Option<&mut GpuBuffer<f32>>,
        ) -> Result<()>;
    }

    /// A forward pass as a layer hands it to its op.
    pub struct Forward<'a, S> {
        pub shape: S,
        pub activation: Activation,
        pub x: &'a GpuBuffer<f32>,
        pub weight: &'a GpuBuffer<f32>,
        pub bias: &'a GpuBuffer<f32>,
        pub pre: Option<&'a mut GpuBuffer<f32>>,
        pub y: &'a mut GpuBuffer<f32>,
    }

    /// A backward pass as a layer hands it to its op, but for the input's gradient.
    pub struct Backward<'a, S> {
        pub shape: S,
        pub activation: Activation,
        pub x: &'a GpuBuffer<f32>,
        pub weight: &'a GpuBuffer<f32>,
        pub pre: Option<&'a GpuBuffer<f32>>,
        pub grad_y: &'a GpuBuffer<f32>,
        pub grad_weight: &'a mut GpuBuffer<f32>,
        pub grad_bias: &'a mut GpuBuffer<f32>,
    }

    /// A layer's parameters: the weight's dimensions (row-major), the bias's length, and how
    /// many products each output sums (for [`Init`]).
    pub struct Sizes {
        pub weight: Vec<usize>,
        pub bias: usize,
        pub fan_in: usize,
    }
}

use op::{Backward, Forward, LayerOp, Sizes};

impl LayerOp for Gemm {
    type Config = LinearConfig;
    type Shape = GemmShape;
    const NAME: &'static str = "linear";

    fn sizes(config: &LinearConfig) -> Result<Sizes> {
        let (inputs, outputs) = (config.in_features, config.out_features);
        if inputs == 0 || outputs == 0 {
            return Err(invalid(
                Self::NAME,
                format!(
                    "in_features and out_features must be at least 1, got {inputs} and {outputs}"
                ),
            ));
        }
        let (inputs, outputs) = (inputs as usize, outputs as usize);
        Ok(Sizes {
            weight: vec![inputs, outputs],
            bias: outputs,
            fan_in: inputs,
        })
    }

    fn build(rt: &Runtime, config: &LinearConfig) -> Result<Self> {
        Gemm::with_precision(rt, config.precision)
    }

    fn init(config: &LinearConfig) -> Init {
        config.init
    }

    fn activation(config: &LinearConfig) -> Activation {
        config.activation
    }

    fn shape(config: &LinearConfig, input_len: usize) -> Result<GemmShape> {
        let (k, n) = (config.in_features, config.out_features);
        let m = rows(input_len, k as usize, Self::NAME, "in_features")?;
        Ok(GemmShape { m, n, k })
    }

    fn output_len(shape: &GemmShape) -> Result<usize> {
        Ok(shape.m as usize * shape.n as usize)
    }

    fn prepare(&self, rt: &Runtime) -> Result<()> {
        Gemm::prepare(self, rt)
    }

    fn forward(&self, batch: &mut Batch<'_>, pass: Forward<'_, GemmShape>) -> Result<()> {
        let args = GemmForward {
            shape: pass.shape,
            activation: pass.activation,
            a: pass.x,
            b: pass.weight,
            bias: pass.bias,
            pre: pass.pre,
            y: pass.y,
        };
        Gemm::forward(self, batch, args)
    }

    fn backward(
        &self,
        batch: &mut Batch<'_>,
        pass: Backward<'_, GemmShape>,
        grad_x: Option<&mut GpuBuffer<f32>>,
    ) -> Result<()> {
        let args = GemmBackward {
            shape: pass.shape,
            activation: pass.activation,
            a: pass.x,
            b: pass.weight,
            pre: pass.pre,
            grad_y: pass.grad_y,
            grad_a: grad_x,
            grad_b: pass.grad_weight,
            grad_bias: pass.grad_bias,
        };
        Gemm::backward(self, batch, args)
    }
}

impl LayerOp for Convolution {
    type Config = Conv2dConfig;
    type Shape = Conv2dShape;
    const NAME: &'static str = "conv2d";

    fn sizes(config: &Conv2dConfig) -> Result<Sizes> {
        let shape = config.shape(1);
        shape.output()?;
        let [kh, kw] = shape.kernel.map(|k| k as usize);
        let (outputs, inputs) = (shape.out_channels as usize, shape.in_channels as usize);
        Ok(Sizes {
            weight: vec![outputs, inputs, kh, kw],
            bias: outputs,
            fan_in: inputs * kh * kw,
        })
    }

    fn build(rt: &Runtime, config: &Conv2dConfig) -> Result<Self> {
        Convolution::with_precision(rt, config.precision)
    }

    fn init(config: &Conv2dConfig) -> Init {
        config.init
    }

    fn activation(config: &Conv2dConfig) -> Activation {
        config.activation
    }

    fn shape(config: &Conv2dConfig, input_len: usize) -> Result<Conv2dShape> {
        let image = config.shape(1).input_len();
        let images = rows(input_len, image, Self::NAME, "one input image")?;
        Ok(config.shape(images))
    }

    fn output_len(shape: &Conv2dShape) -> Result<usize> {
        shape.output_len()
    }

    fn prepare(&self, rt: &Runtime) -> Result<()> {
        Convolution::prepare(self, rt)
    }

    fn forward(&self, batch: &mut Batch<'_>, pass: Forward<'_, Conv2dShape>) -> Result<()> {
        let args = Conv2dForward {
            shape: pass.shape,
            activation: pass.activation,
            x: pass.x,
            w: pass.weight,
            bias: pass.bias,
            pre: pass.pre,
            y: pass.y,
        };
        Convolution::forward(self, batch, args)
    }

    fn backward(
        &self,
        batch: &mut Batch<'_>,
        pass: Backward<'_, Conv2dShape>,
        grad_x: Option<&mut GpuBuffer<f32>>,
    ) -> Result<()> {
        let args = Conv2dBackward {
            shape: pass.shape,
            activation: pass.activation,
            x: pass.x,
            w: pass.weight,
            pre: pass.pre,
            grad_y: pass.grad_y,
            grad_x,
            grad_w: pass.grad_weight,
            grad_bias: pass.grad_bias,
        };
        Convolution::backward(self, batch, args)
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
    /// The weight's dimensions, row-major.
    weight_shape: Vec<usize>,
    keep: Kept,
}

impl State {
    /// Parameters of `sizes` drawn as `init` says for a layer (named `layer` in buffer
    /// labels), and zero gradients.
    fn new(rt: &Runtime, layer: &str, init: Init, sizes: Sizes) -> Result<Self> {
        let weights = sizes.weight.iter().product();
        let (weight, bias) = init.draw(weights, sizes.bias, sizes.fan_in);
        Ok(State {
            weight: rt.upload_labeled(&format!("{layer}.weight"), &weight)?,
            bias: rt.upload_labeled(&format!("{layer}.bias"), &bias)?,
            grad_weight: rt.zeros_labeled(&format!("{layer}.weight gradient"), weights)?,
            grad_bias: rt.zeros_labeled(&format!("{layer}.bias gradient"), sizes.bias)?,
            weight_shape: sizes.weight,
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

    /// The backward pass of layer `layer` over these parameters, for the forward of `shape`
    /// (`outputs` values) on `x` whose output's gradient is `grad_y`; an error when no
    /// forward pass of that size ran.
    fn backward<'a, S>(
        &'a mut self,
        layer: &str,
        (shape, outputs): (S, usize),
        activation: Activation,
        x: &'a GpuBuffer<f32>,
        grad_y: &'a GpuBuffer<f32>,
    ) -> Result<Backward<'a, S>> {
        Ok(Backward {
            shape,
            activation,
            x,
            weight: &self.weight,
            pre: self.keep.pre(outputs, layer)?,
            grad_y,
            grad_weight: &mut self.grad_weight,
            grad_bias: &mut self.grad_bias,
        })
    }

    /// The weight and the bias with their gradients.
    fn parameters(&mut self) -> [Parameter<'_>; 2] {
        [
            Parameter {
                name: "weight",
                shape: self.weight_shape.clone(),
                value: &mut self.weight,
                grad: &mut self.grad_weight,
            },
            Parameter {
                name: "bias",
                shape: vec![self.bias.len()],
                value: &mut self.bias,
                grad: &mut self.grad_bias,
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
