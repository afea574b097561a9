//! Which blocking each GEMM-shaped op runs: tuned per device and shape bucket by
//! [`Runtime::autotune`](crate::Runtime::autotune), or, with autotuning off, the fixed rule of
//! [`kernels::fixed_blocking`].

use std::sync::OnceLock;

use super::kernels;
use crate::{size_bucket, source_hash, Batch, Result, Runtime, TuneKey};

/// The hash of the WGSL every candidate runs: the one `nn` module.
fn wgsl_hash() -> u64 {
    static HASH: OnceLock<u64> = OnceLock::new();
    *HASH.get_or_init(|| source_hash(kernels::WGSL))
}

/// The blocking `operation` runs for a problem of `sizes` (rounded to powers of two for the
/// bucket) and `exact` values (taken as they are): the large one (0) or the small one (1).
///
/// Tuning records candidates into batches of their own with scratch buffers from `scratch`,
/// made once when a tuning first needs them, never with the caller's.
pub(crate) fn blocking<S>(
    rt: &Runtime,
    operation: &str,
    sizes: &[u32],
    exact: &[u32],
    fixed: usize,
    scratch: impl Fn(&Runtime) -> Result<S>,
    mut record: impl FnMut(&mut Batch<'_>, usize, &mut S) -> Result<()>,
) -> Result<usize> {
    let bucket: Vec<u32> = sizes
        .iter()
        .map(|&size| size_bucket(size))
        .chain(exact.iter().copied())
        .collect();
    let key = TuneKey::new(operation, wgsl_hash(), &bucket);
    let mut made: Option<S> = None;
    rt.autotune(&key, kernels::BLOCKINGS, fixed, |batch, choice| {
        let scratch = match &mut made {
            Some(scratch) => scratch,
            None => made.insert(scratch(batch.runtime())?),
        };
        record(batch, choice, scratch)
    })
}
