//! How the GEMM-shaped ops multiply: strict f32, or f16 on the tensor cores.

/// How an op's products are computed. Chosen when the op is built
/// ([`Gemm::with_precision`](super::Gemm::with_precision)); inputs, outputs and gradients
/// are `f32` buffers either way.
///
/// ```no_run
/// use tessera::nn::{Gemm, Precision};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = tessera::Runtime::new()?;
/// // Tensor cores where the device has them, strict f32 elsewhere.
/// let gemm = Gemm::with_precision(&rt, Precision::TensorCoreF16)
///     .or_else(|_| Gemm::new(&rt))?;
/// println!("{:?}", gemm.precision());
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Every product and sum in single precision, as PyTorch with TF32 off: the result of a
    /// GEMM is the exact one to about `1e-6` relative (in the sums' length times f32's
    /// rounding).
    #[default]
    F32,
    /// Operands rounded to `f16` as they are staged into workgroup memory, multiplied on the
    /// tensor cores, summed in `f32`: each product is off by f16's rounding of its operands,
    /// about `1e-3` relative (measured against f64 in `tests/nn_tensor_cores.rs`), and the
    /// sums keep f32's precision. Operands beyond f16's range (65504) become infinite.
    /// Needs a device whose tensor cores multiply 16 x 16 x 16 `f16` fragments into `f32`
    /// (the op's constructor returns [`Error::MissingFeature`](crate::Error::MissingFeature)
    /// otherwise).
    TensorCoreF16,
}
