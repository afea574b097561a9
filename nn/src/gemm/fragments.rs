//! The kernels of [`Precision::TensorCoreF16`](crate::Precision::TensorCoreF16): what a GEMM
//! builds to run its products on the tensor cores.

use super::super::kernels;
use tessera::{Prepare, Result, Runtime};

/// The kernels of [`Precision::TensorCoreF16`], in both blockings of
/// [`kernels::TensorBlocking`].
#[derive(Clone, Debug)]
pub(super) struct Fragments {
    pub(super) forward: kernels::Blocked<kernels::GemmForwardFragments<f32>>,
    pub(super) forward_vectors: kernels::Blocked<kernels::GemmForwardFragments<[f32; 4]>>,
    /// Adds up the slices of a forward in slices.
    pub(super) forward_reduce: kernels::GemmForwardFragmentsReduce,
    /// Recorded in place of the backward's `d_operands`.
    pub(super) operands: kernels::Blocked<kernels::DOperandsFragments>,
    /// The forward over vectors in the wide blocking ([`kernels::WideTensorBlocking`]),
    /// unless the device lacks the invocations or workgroup memory it takes.
    pub(super) wide: Option<kernels::GemmForwardFragmentsWide>,
}

/// Builds every pipeline (see [`Gemm::prepare`]).
impl Prepare for Fragments {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Fragments {
            forward, forward_vectors, forward_reduce, operands, wide;
        })
    }
}

impl Fragments {
    pub(super) fn new(rt: &Runtime) -> Result<Self> {
        Ok(Fragments {
            // SAFETY (all three): every index is guarded (see "Bounds" in `kernels`).
            forward: kernels::Blocked::on_fragments_with_deep(|b| unsafe {
                kernels::GemmForwardFragments::<f32>::with_constants_unchecked(rt, b)
            })?,
            forward_vectors: kernels::Blocked::on_fragments_with_deep(|b| unsafe {
                kernels::GemmForwardFragments::<[f32; 4]>::with_constants_unchecked(rt, b)
            })?,
            operands: kernels::Blocked::on_fragments_with_deep(|b| unsafe {
                kernels::DOperandsFragments::with_constants_unchecked(rt, b)
            })?,
            forward_reduce: kernels::GemmForwardFragmentsReduce::new(rt)?,
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            wide: kernels::unless_too_large(unsafe {
                kernels::GemmForwardFragmentsWide::with_constants_unchecked(
                    rt,
                    kernels::WideTensorBlocking {
                        depth: 32,
                        block: 256,
                    },
                )
            })?,
        })
    }
}
