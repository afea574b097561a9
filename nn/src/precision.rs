//! How the GEMM-shaped ops and attention multiply: strict f32, or f16 on the tensor cores.

/// How an op's products are computed. Chosen when the op is built
/// ([`Gemm::with_precision`](super::Gemm::with_precision),
/// [`Attention::with_precision`](super::Attention::with_precision)); inputs, outputs and
/// gradients are `f32` buffers either way, but for attention on the tensor cores, which also
/// takes `f16` ones ([`AttentionElement`](super::AttentionElement)).
///
/// ```no_run
/// use tessera_nn::{Gemm, Precision};
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
    /// about `1e-3` relative (measured against f64 in `tests/tensor_cores.rs`), and the
    /// sums keep f32's precision. Operands beyond f16's range (65504) become infinite, and
    /// those below its normal range (about `6e-5`) keep few digits: a backward whose
    /// gradients are a mean's over many rows wants loss scaling
    /// ([`SoftmaxCrossEntropy::backward_scaled`](crate::SoftmaxCrossEntropy::backward_scaled),
    /// [`GradClip::clip_scaled`](crate::GradClip::clip_scaled)). Attention also rounds its
    /// probabilities and their gradients to `f16` before multiplying them (its outputs came
    /// within 4e-3 of f64's, its gradients within 3.3e-3, relative to their largest
    /// magnitude, in `tests/attention.rs` on an H200).
    /// Needs a device whose tensor cores multiply 16 x 16 x 16 `f16` fragments into `f32`,
    /// and whose subgroups may be 32 invocations wide (the kernels share a workgroup's
    /// fragments among subgroups of 32; see [`RuntimeInfo::subgroup_sizes`]): the op's
    /// constructor returns [`Error::MissingFeature`](tessera::Error::MissingFeature) otherwise.
    /// A device whose subgroups may also be of other widths (AMD's 32 or 64) is not refused,
    /// and the kernels have run only on NVIDIA's, which are always 32.
    ///
    /// [`RuntimeInfo::subgroup_sizes`]: tessera::RuntimeInfo::subgroup_sizes
    TensorCoreF16,
}

/// The passes an op multiplies with, chosen once when it is built from its [`Precision`]:
/// the f32 kernels alone, or the tensor-core kernels `F` too (the f32 kernels then stand in
/// for the ways a shape or a device leaves off the tensor cores).
#[derive(Clone, Debug)]
pub(crate) enum Passes<F> {
    /// [`Precision::F32`].
    F32,
    /// [`Precision::TensorCoreF16`]: its kernels.
    TensorCores(F),
}

impl<F> Passes<F> {
    /// The passes of `precision` for `op` (named in its errors) on `rt`, the tensor-core
    /// kernels made by `build`.
    pub(crate) fn new(
        rt: &tessera::Runtime,
        precision: Precision,
        op: &str,
        build: impl FnOnce(&tessera::Runtime) -> tessera::Result<F>,
    ) -> tessera::Result<Self> {
        match precision {
            Precision::F32 => Ok(Passes::F32),
            Precision::TensorCoreF16 => {
                let kernels = build(rt)?;
                // After the kernels, which refuse a device without tensor cores first.
                check_tensor_core_subgroups(rt, op)?;
                Ok(Passes::TensorCores(kernels))
            }
        }
    }

    /// The precision they multiply in.
    pub(crate) fn precision(&self) -> Precision {
        match self {
            Passes::F32 => Precision::F32,
            Passes::TensorCores(_) => Precision::TensorCoreF16,
        }
    }

    /// The tensor-core kernels, where built.
    pub(crate) fn tensor_cores(&self) -> Option<&F> {
        match self {
            Passes::F32 => None,
            Passes::TensorCores(kernels) => Some(kernels),
        }
    }

    /// The tensor-core kernels, which every plan on the tensor cores was made from.
    pub(crate) fn planned(&self) -> &F {
        self.tensor_cores()
            .expect("plans on the tensor cores come from their kernels")
    }
}

/// Builds every pipeline of the tensor-core kernels, where built.
impl<F: tessera::Prepare> tessera::Prepare for Passes<F> {
    fn prepare(&self, rt: &tessera::Runtime) -> tessera::Result<()> {
        self.tensor_cores().prepare(rt)
    }
}

/// Refuses the tensor-core kernels of `op` on `rt` where its subgroups cannot be 32
/// invocations wide: they index subgroups as `t / 32` and give each a tile of workgroup
/// memory (see [`Precision::TensorCoreF16`]).
pub(crate) fn check_tensor_core_subgroups(rt: &tessera::Runtime, op: &str) -> tessera::Result<()> {
    let [fewest, most] = rt.info().subgroup_sizes;
    if (fewest..=most).contains(&32) {
        return Ok(());
    }
    Err(tessera::Error::MissingFeature {
        kernel: op.to_owned(),
        feature: format!(
            "subgroups of 32 invocations for its tensor-core kernels (this adapter's have \
             {fewest} to {most})"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_cores_are_refused_where_subgroups_cannot_be_32_wide() {
        let rt = tessera::Runtime::new().unwrap();
        let [fewest, most] = rt.info().subgroup_sizes;
        match check_tensor_core_subgroups(&rt, "nn::Gemm") {
            Ok(()) => assert!(fewest <= 32 && 32 <= most, "{fewest} to {most}"),
            Err(error) => {
                assert!(!(fewest..=most).contains(&32), "{error}");
                let message = error.to_string();
                assert!(
                    message.contains("`nn::Gemm`")
                        && message.contains(&format!("have {fewest} to {most}")),
                    "{message}"
                );
            }
        }
    }
}
