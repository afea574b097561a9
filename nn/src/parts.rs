//! Parts of nn's kernels for kernels of your own: device-function libraries that a
//! `#[tessera::kernels]` module imports with `#[device] use`, as it imports `tessera::std`.
//!
//! - [`gemm`]: the f32 GEMM blocking nn's GEMMs and convolutions run on (a 16 x 16 workgroup
//!   a 128 x 128 or 64 x 64 output block, operands staged in workgroup memory, a register
//!   tile an invocation), its mainloop, the tile's positions and store, and the split sums:
//!   a GEMM-shaped kernel with a prologue or an epilogue of its own.
//! - [`tensor_gemm`]: the tensor-core blocking of nn's `Precision::TensorCoreF16` passes (f16
//!   products, f32 sums), its fragment mainloop and stores, for the same on the tensor cores.
//! - [`activation`]: every [`Activation`](crate::Activation) and its derivative on the
//!   device, `kind` being [`Activation::code`](crate::Activation::code).
//!
//! nn's own epilogues (bias, `pre` and activation over its `GemmParams`) stay nn's: a kernel
//! built on these parts writes its tile as it likes.

pub use crate::kernels::activation::activation;
pub use crate::kernels::fragments::fragments as tensor_gemm;
pub use crate::kernels::staging::staging as gemm;
