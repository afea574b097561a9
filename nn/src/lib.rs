//! Neural-network layers and operations written in tessera: f32; row-major matrices; NCHW
//! images.
//!
//! A crate of its own, so that a crate using only the kernel language (`tessera`) compiles
//! none of these kernels; depend on both to train with them. Every op runs on a
//! [`tessera::Runtime`] and records into a [`tessera::Batch`].
//!
//! **Layers** own their parameters (initialized as [`Init`] says), the gradients and the
//! buffers their passes write; the batch size is read off each call's input:
//!
//! - [`Linear`]: `y = act(x · weight + bias)`, over [`Gemm`].
//! - [`Conv2d`]: `y = act(conv(x, w) + bias)`, over [`Convolution`].
//! - [`RmsNormLayer`] and [`LayerNormLayer`]: the norms along each row with their learned
//!   scale (and bias), starting at the identity; also after a residual add, in the same pass
//!   ([`NormLayer::forward_residual`]).
//!
//! The first two are a [`Layer`] over their op, the norms a [`NormLayer`], each with the same
//! methods (`forward`, `backward`, `parameters`, ...); what differs is each op's part.
//!
//! ```no_run
//! use tessera_nn::{Activation, Conv2d, Conv2dConfig, Init, Linear, LinearConfig, Padding};
//! # fn main() -> Result<(), tessera::Error> {
//! let rt = tessera::Runtime::new()?;
//! let conv = Conv2dConfig::new(1, [28, 28], 8, [3, 3])
//!     .padding(Padding::uniform(1))
//!     .activation(Activation::Relu)
//!     .init(Init::HeUniform { seed: 1 });
//! let mut conv = Conv2d::new(&rt, conv)?;
//! let mut linear = Linear::new(&rt, LinearConfig::new(conv.output_features(), 10))?;
//! let (x, grad_logits) = (rt.zeros::<f32>(32 * 28 * 28)?, rt.zeros::<f32>(32 * 10)?);
//! let mut batch = rt.batch();
//! let features = conv.forward(&mut batch, &x)?; // [32, 8, 28, 28], read as [32, 6272]
//! let _logits = linear.forward(&mut batch, features)?;
//! let features = conv.output()?;
//! let grad_features = linear.backward(&mut batch, features, &grad_logits)?;
//! conv.backward_params(&mut batch, &x, grad_features)?; // the first layer: no input gradient
//! batch.submit()?;
//! # Ok(()) }
//! ```
//!
//! **Operations** hold only their pipelines (and scratch memory); each call names its
//! buffers in an arguments struct ([`GemmForward`], [`Conv2dBackward`], ...), the problem's
//! sizes in its `shape` (a [`GemmShape`], [`Conv2dShape`], [`LossShape`] or [`RowsShape`]):
//!
//! - [`Gemm`]: `y = act(a · b + bias)` (split along `k` when the output alone cannot fill the
//!   GPU) and its backward (`grad_pre`, both operand gradients in one dispatch, `d_bias`, as
//!   one family).
//! - [`Convolution`]: `y = act(conv(x, w) + bias)` with stride, per-side padding and
//!   dilation (split over input channels x taps when the output cannot fill the GPU), and its
//!   backward: input gradient (stride-1 fast path; strided ones one stride phase at a time,
//!   so only the taps that land on output pixels are summed; computed directly for up to 4
//!   input channels; split when the input cannot fill the GPU), filter gradient (implicit
//!   GEMM with M = out channels, N = in channels x taps, K = images x output pixels; for 3x3
//!   filters of stride 1, also by Winograd's F(3x3, 4x4), a quarter of the
//!   multiplications), bias gradient.
//! - [`Precision`]: how [`Gemm`] and [`Convolution`] (and the layers over them) multiply:
//!   strict f32 (the default), or f16 products on the tensor cores with f32 sums
//!   ([`Precision::TensorCoreF16`]), chosen when the op is built.
//! - [`Activation`]: none, ReLU, GELU (tanh form), SiLU, sigmoid and tanh, each written once
//!   with its derivative and fused into both ops' epilogues.
//! - [`SoftmaxCrossEntropy`]: the classification loss and its gradient, over rows of any length
//!   (scaled for a backward on the tensor cores: [`SoftmaxCrossEntropy::backward_scaled`]).
//! - [`Softmax`], [`RmsNorm`] (with a learned scale) and [`LayerNorm`] (with a learned scale
//!   and bias): along each row of a `[rows, cols]` matrix, a workgroup per row holding the row
//!   in registers (rows of up to [`MAX_COLS`] scalars; longer ones are taken a segment at
//!   a time), forward and backward, over `f32` or `f16` storage ([`RowElement`]; sums in
//!   `f32`); the norms' parameter gradients are column sums over the rows. Each norm also
//!   runs after a residual add in one pass, writing the sum and its norm
//!   ([`LayerNorm::forward_residual`]), its backward adding to the sum's gradient.
//! - [`Sgd`] (with momentum) and [`Adam`] (AdamW with [`WeightDecay::Decoupled`]): parameter
//!   updates; [`GradClip`]: gradients clipped by their global norm (and unscaled from a
//!   scaled loss: [`GradClip::clip_scaled`]).
//! - [`RadixSort`]: sorts `u32` or `f32` keys in place, alone or with a value each (stable).
//! - [`Embedding`]: rows of a table looked up by id, and the table's gradient, summed per id
//!   without atomics (deterministic).
//! - [`Attention`]: scaled dot-product attention, forward and backward (causal or not,
//!   grouped queries, padded sequences), as FlashAttention computes it: in strict `f32`, or on
//!   the tensor cores ([`Precision::TensorCoreF16`]) over `f32` or `f16` storage
//!   ([`AttentionElement`]).
//! - [`Residual`]: a residual connection's sum where no norm follows it; [`Heads`]: a projection's token rows to
//!   attention's `[batch, heads, seq, head_dim]` tensors and back ([`HeadsLayout`] says where
//!   the heads sit in the rows, the three groups of a fused query-key-value projection
//!   included). `nn/examples/gpt` builds a transformer out of these and the ops above.
//!
//! Building an op or a layer compiles nothing: each kernel is compiled at the first call
//! that runs it (with autotuning, the first call of a shape also compiles and times the
//! candidates). `prepare(&rt)` on an op or a layer compiles all of its kernels at once, for a
//! program that would rather pay for that before its first step, or time its first steps:
//! on an H100 a kernel compiled between two timed calls left the GPU idle long enough for
//! its clocks to drop, and the next calls ran up to 4x slow.
//!
//! # Gradients
//!
//! Every backward pass **overwrites** the gradients it writes; none adds to what a buffer
//! held. To accumulate over several batches, sum the gradients yourself (or average the
//! losses over one larger batch). Two layers or ops never share a gradient buffer unless the
//! caller passes the same one.
//!
//! The pre-activation output `pre` is what a backward pass reads to differentiate the
//! activation: an op's forward writes it when given a buffer, and stores `y` alone with
//! `pre: None`, for inference or with [`Activation::None`], where the backward pass needs
//! none either.
//!
//! Every op records into a [`Batch`](tessera::Batch), so a whole training step is one
//! submission; `Batch::submit_timed` times it as it runs, `Batch::submit_profiled` each kernel.
//!
//! The GEMM-shaped ops choose how they run by autotuning
//! ([`Runtime::autotune`](tessera::Runtime::autotune)): the first time an op meets a device and a
//! shape bucket it times its ways on scratch buffers of the problem's sizes (before the
//! caller's batch is submitted) and keeps the fastest. The ways are both blockings and, for the
//! passes whose slices cost an extra pass (the GEMM forward, the convolution forward and input
//! gradient), each whole or split; the filter gradient of a 3x3 convolution of stride 1 is
//! timed by Winograd too. On the tensor cores the ways also include the 128 x 128 blocks in
//! workgroups of 512 invocations where the device has them, 64-deep slices for the GEMMs,
//! and the convolutions' passes by taps and over a staged window, and, on Vulkan, as streams
//! of as many workgroups as an H100 or A100 runs at once (the forward and the input gradient
//! by taps, the filter gradient as it is), in 128 x 128 blocks or oblong ones of 256 x 128 and
//! 128 x 256. With autotuning off (`TESSERA_AUTOTUNE=off`, the default on
//! software adapters, and in the tests) each takes its fixed rule: the 64 x 64 blocks when the
//! output has at most 64 rows (for [`Gemm`]'s forward, rows or columns; for convolutions,
//! output channels, or input channels for the input gradient), the 128 x 128 blocks
//! otherwise, and split whenever the output alone would leave the GPU idle; Winograd for every
//! filter gradient it fits.

/// Prepares (see [`tessera::Prepare`]) the fields of `$value`, a `$type`, named before the
/// `;`; those named after it hold no kernel. A field added to the type and named on neither
/// side stops the build, so no kernel is left unprepared.
macro_rules! prepare_fields {
    ($rt:expr, $value:expr => $type:ident { $($kernel:ident),+ $(,)? ; $($other:ident),* $(,)? }) => {{
        let $type { $($kernel,)+ $($other: _,)* } = $value;
        let kernels: &[&dyn tessera::Prepare] = &[$($kernel),+];
        tessera::Prepare::prepare(kernels, $rt)
    }};
}

mod activation;
mod attention;
mod conv;
mod embedding;
mod gemm;
mod kernels;
mod layers;
mod optim;
pub mod parts;
mod precision;
mod rows;
mod sort;
mod spare;
mod split;
mod transformer;
mod tune;

pub use activation::Activation;
pub use attention::{
    Attention, AttentionBackward, AttentionElement, AttentionForward, AttentionMask,
    AttentionShape, MAX_HEAD_DIM,
};
pub use conv::{
    Conv2dBackward, Conv2dForward, Conv2dGradInput, Conv2dGradWeight, Conv2dShape, Convolution,
    Padding,
};
pub use embedding::{Embedding, EmbeddingBackward, EmbeddingForward, EmbeddingShape};
pub use gemm::{Gemm, GemmBackward, GemmForward, GemmShape};
pub use layers::{
    Conv2d, Conv2dConfig, Init, Layer, LayerNormLayer, Linear, LinearConfig, NormLayer, Parameter,
    RmsNormLayer, SumGradient,
};
pub use optim::{Adam, AdamConfig, AdamState, GradClip, Sgd, SgdConfig, WeightDecay};
pub use precision::Precision;
pub use rows::{
    LayerNorm, LayerNormBackward, LayerNormForward, LayerNormResidualBackward,
    LayerNormResidualForward, LossBackward, LossForward, LossShape, RmsNorm, RmsNormBackward,
    RmsNormForward, RmsNormResidualBackward, RmsNormResidualForward, RowElement, RowsShape,
    Softmax, SoftmaxBackward, SoftmaxCrossEntropy, SoftmaxForward, MAX_COLS,
};
pub use sort::{RadixSort, SortKey, SortValue};
pub use transformer::{Heads, HeadsLayout, Residual};

use tessera::Error;

/// The WGSL of every `nn` kernel but the row operations' ([`WGSL_ROWS`]), as the kernels
/// module generated it (one module; each GEMM-shaped kernel in both blockings, with the shared
/// mainloop's helpers written once per blocking).
pub const WGSL: &str = kernels::WGSL;

/// The part of [`WGSL`] that needs no optional device feature: every kernel but those of
/// [`Precision::TensorCoreF16`]. A device without tensor cores builds the ops from this.
pub const WGSL_PORTABLE: &str = kernels::WGSL_PLAIN;

/// The WGSL of the row operations ([`Softmax`], [`RmsNorm`], [`LayerNorm`]), a kernels module
/// of their own; none needs an optional device feature but `SHADER_F16` for their `f16`
/// instances.
pub const WGSL_ROWS: &str = kernels::row_ops::WGSL;

/// The WGSL of [`RadixSort`], a kernels module of its own; its byte passes need subgroups
/// (without them the sort takes 4 bits a pass, which need no optional device feature).
pub const WGSL_SORT: &str = kernels::sort_ops::WGSL;

/// The WGSL of [`Attention`], a kernels module of its own: its register-tile kernels need
/// subgroups, its tensor-core kernels ([`Precision::TensorCoreF16`]) cooperative matrices and
/// `SHADER_F16`.
pub const WGSL_ATTENTION: &str = kernels::attention_ops::WGSL;

/// The part of [`WGSL_ATTENTION`] a device without tensor cores runs: every kernel but the
/// tensor-core ones (and the `f16` instance of the row statistics, which only they read).
pub const WGSL_ATTENTION_PORTABLE: &str = kernels::attention_ops::WGSL_WITH_SUBGROUPS;

/// The WGSL of [`Embedding`], a kernels module of its own; it needs no optional device feature.
pub const WGSL_EMBEDDING: &str = kernels::embedding_ops::WGSL;

/// The WGSL of [`Residual`] and [`Heads`], a kernels module of its own; it needs no optional
/// device feature.
pub const WGSL_TRANSFORMER: &str = kernels::transformer_ops::WGSL;

/// The WGSL of [`GradClip`], a kernels module of its own; it needs no optional device feature.
pub const WGSL_CLIP: &str = kernels::clip_ops::WGSL;

/// The error for arguments an op cannot work with.
fn invalid(operation: &str, problem: String) -> Error {
    Error::InvalidArgument {
        operation: operation.into(),
        problem,
    }
}
