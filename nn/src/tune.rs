//! How each GEMM-shaped op runs: which blocking, whether a sum too long for its output may be
//! split into slices, and for the filter gradient of a 3 x 3 convolution, which algorithm. Tuned per device and shape bucket by
//! [`Runtime::autotune`](tessera::Runtime::autotune), or, with autotuning off, [`Way::fixed`].

use std::sync::OnceLock;

use super::kernels;
use tessera::{size_bucket, source_hash, Batch, GpuBuffer, Result, Runtime, TuneKey};

/// One way to run a GEMM-shaped op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Way {
    /// The index of the blocking in [`kernels::Blocked`]: 0 the large, 1 the small, on the
    /// tensor cores also [`kernels::DEEP`], [`kernels::MANY`] and, for the GEMM forward,
    /// [`kernels::WIDE`]; a convolution's stream takes [`kernels::MANY`], [`kernels::WIDE`]
    /// or [`kernels::LONG`] from [`kernels::Streams`].
    pub blocking: usize,
    /// Whether the op may cut its sum into slices when its output alone cannot fill the GPU
    /// (`Split::of` decides how many); otherwise it runs whole.
    pub split: bool,
    /// Whether the op runs by Winograd's minimal filtering instead of as an implicit GEMM
    /// (only the filter gradient of 3 x 3 convolutions of stride 1 has that way).
    pub winograd: bool,
    /// Whether the op multiplies on the tensor cores ([`super::Precision::TensorCoreF16`]);
    /// `blocking` then indexes the op's [`kernels::Blocked`] on fragments (with
    /// [`kernels::DEEP`]), and `split` counts as in f32 (the convolution's filter gradient
    /// always may split).
    pub fragments: bool,
    /// Whether a convolution's tensor-core pass may run tap by tap: the forward and the
    /// stride-1 input gradient sum tap by tap (`kernels::conv_fragments_by_tap_tile`, after
    /// laying the filter out for it) when the summed channels are a multiple of the
    /// blocking's step; the filter gradient's blocks each cover one tap
    /// (`kernels::conv_grad_weight_fragments_by_tap`) when the input channels are a multiple
    /// of the blocking's block.
    pub by_tap: bool,
    /// Whether a convolution's tensor-core pass may run over a staged window
    /// (`kernels::conv_window_tile`): the forward and the stride-1 input gradient, where the
    /// summed channels are a multiple of the window blocking's step, the filter's reach fits
    /// its window and the device has its workgroup memory; otherwise the way runs by taps.
    pub window: bool,
    /// Whether a pass over a staged window stages every tap's filter slice at once
    /// (`kernels::conv_window_tile` in `kernels::WindowBlocking::ALL_TAPS_AT_ONCE`) where the
    /// filter has at most its taps, the summed channels are a multiple of its step and the
    /// device has its workgroup memory; otherwise the way runs as `window` says. Only with
    /// `window`.
    pub all_taps: bool,
    /// The workgroups of a convolution pass that run as a stream
    /// (`kernels::conv_forward_fragments_by_tap_streamed`), 0 for none: as many as the GPU
    /// holds at once, sharing the blocks' steps evenly. The forward and the input gradient
    /// only with `by_tap` and where the pass runs by taps, the filter gradient as it is
    /// (`kernels::conv_grad_weight_fragments_streamed`); only on Vulkan (`conv::streams_on`
    /// says why).
    pub workers: u32,
}

impl Way {
    /// Both blockings, each whole and split: for ops whose slices cost an extra pass.
    pub const ALL: [Way; 4] = [
        Way::new(0, true),
        Way::new(1, true),
        Way::new(0, false),
        Way::new(1, false),
    ];

    /// Both blockings, split as the op's own rule says: for ops that always may split (the
    /// filter gradient).
    pub const BLOCKINGS: [Way; 2] = [Way::new(0, true), Way::new(1, true)];

    /// Both blockings of Winograd's filter gradient (which always may split its sum).
    pub const WINOGRAD: [Way; 2] = [
        Way::new(0, true).by_winograd(),
        Way::new(1, true).by_winograd(),
    ];

    /// Both blockings on the tensor cores, and the large blocks in 512 invocations
    /// ([`kernels::MANY`]).
    pub const FRAGMENTS: [Way; 3] = [
        Way::on_fragments(0),
        Way::on_fragments(1),
        Way::on_fragments(kernels::MANY),
    ];

    /// [`Way::FRAGMENTS`] by taps and then as they are, then as streams of 132 workgroups
    /// (see [`Way::SPLIT_FRAGMENTS_OR_WINDOW`]) in each stream blocking: for the
    /// convolution's filter gradient (which always may split its sum).
    pub const FRAGMENTS_BY_TAP_OR_STREAMED: [Way; 9] = [
        Way::on_fragments(0).by_tap(),
        Way::on_fragments(1).by_tap(),
        Way::on_fragments(kernels::MANY).by_tap(),
        Way::on_fragments(0),
        Way::on_fragments(1),
        Way::on_fragments(kernels::MANY),
        Way::on_fragments(kernels::MANY).streamed(132),
        Way::on_fragments(kernels::WIDE).streamed(132),
        Way::on_fragments(kernels::LONG).streamed(132),
    ];

    /// Both blockings on the tensor cores over a staged window, the window with every tap's
    /// filter slice staged at once, then [`Way::FRAGMENTS`] each split where the output alone
    /// cannot fill the GPU and whole, by taps and then as they are, then by taps as streams:
    /// for the convolution's forward and input gradient (laying the filter out for a pass by
    /// taps or over a window is a dispatch of its own, which small problems may not recover).
    ///
    /// A stream wants as many workgroups as the GPU runs at once, which wgpu does not tell:
    /// its blockings (`kernels::StreamBlocking`) run one workgroup a core, and the streams of
    /// 128 x 128 blocks offer the core counts of NVIDIA's H100 (SXM 132, PCIe 114) and A100
    /// (108), the oblong blocks ([`kernels::WIDE`], [`kernels::LONG`]) the first. On a GPU
    /// with fewer cores a stream's last workgroups wait for the first (slower, never wrong),
    /// and the tuner takes another way.
    pub const SPLIT_FRAGMENTS_OR_WINDOW: [Way; 20] = [
        Way::on_fragments(0).splitting().over_window(),
        Way::on_fragments(1).splitting().over_window(),
        Way::on_fragments(1).splitting().over_all_taps(),
        Way::on_fragments(0).splitting().by_tap(),
        Way::on_fragments(1).splitting().by_tap(),
        Way::on_fragments(kernels::MANY).splitting().by_tap(),
        Way::on_fragments(0).by_tap(),
        Way::on_fragments(1).by_tap(),
        Way::on_fragments(kernels::MANY).by_tap(),
        Way::on_fragments(0).splitting(),
        Way::on_fragments(1).splitting(),
        Way::on_fragments(kernels::MANY).splitting(),
        Way::on_fragments(0),
        Way::on_fragments(1),
        Way::on_fragments(kernels::MANY),
        Way::on_fragments(kernels::MANY).by_tap().streamed(132),
        Way::on_fragments(kernels::MANY).by_tap().streamed(114),
        Way::on_fragments(kernels::MANY).by_tap().streamed(108),
        Way::on_fragments(kernels::WIDE).by_tap().streamed(132),
        Way::on_fragments(kernels::LONG).by_tap().streamed(132),
    ];

    /// Both blockings on the tensor cores, the deep one ([`kernels::DEEP`]: 128 x 128 blocks
    /// of 64-deep slices) and the large blocks in 512 invocations ([`kernels::MANY`]), each
    /// split where the output alone cannot fill the GPU and whole: for the GEMM backward
    /// (and, with the f32 ways, its forward).
    pub const SPLIT_DEEP_FRAGMENTS: [Way; 8] = [
        Way::on_fragments(0).splitting(),
        Way::on_fragments(1).splitting(),
        Way::on_fragments(kernels::DEEP).splitting(),
        Way::on_fragments(kernels::MANY).splitting(),
        Way::on_fragments(0),
        Way::on_fragments(1),
        Way::on_fragments(kernels::DEEP),
        Way::on_fragments(kernels::MANY),
    ];

    /// [`Way::SPLIT_DEEP_FRAGMENTS`], the wide blocking ([`kernels::WIDE`]), then
    /// [`Way::ALL`] in strict f32: for a GEMM forward in tensor-core precision (an output
    /// narrower than a fragment may run faster in f32).
    pub const FRAGMENTS_OR_SPLIT: [Way; 13] = [
        Way::on_fragments(kernels::WIDE),
        Way::on_fragments(0).splitting(),
        Way::on_fragments(1).splitting(),
        Way::on_fragments(kernels::DEEP).splitting(),
        Way::on_fragments(kernels::MANY).splitting(),
        Way::on_fragments(0),
        Way::on_fragments(1),
        Way::on_fragments(kernels::DEEP),
        Way::on_fragments(kernels::MANY),
        Way::new(0, true),
        Way::new(1, true),
        Way::new(0, false),
        Way::new(1, false),
    ];

    const fn new(blocking: usize, split: bool) -> Self {
        Way {
            blocking,
            split,
            winograd: false,
            fragments: false,
            by_tap: false,
            window: false,
            all_taps: false,
            workers: 0,
        }
    }

    /// Blocking `blocking` on the tensor cores, whole.
    pub const fn on_fragments(blocking: usize) -> Self {
        Way {
            fragments: true,
            ..Way::new(blocking, false)
        }
    }

    /// The same way, its sum split where its output alone cannot fill the GPU.
    pub(crate) const fn splitting(self) -> Self {
        Way {
            split: true,
            ..self
        }
    }

    /// The same way, summing tap by tap where the op can.
    pub const fn by_tap(self) -> Self {
        Way {
            by_tap: true,
            ..self
        }
    }

    /// The same blocking, over a staged window where the op can, otherwise by taps where it
    /// can (and split where the way allows it).
    pub const fn over_window(self) -> Self {
        Way {
            window: true,
            by_tap: true,
            ..self
        }
    }

    /// [`Way::over_window`], every tap's filter slice staged at once where the op can
    /// (otherwise the way runs as [`Way::over_window`] says).
    pub const fn over_all_taps(self) -> Self {
        Way {
            all_taps: true,
            ..self.over_window()
        }
    }

    /// The same way as a stream of `workers` workgroups (see [`Way::workers`]).
    pub const fn streamed(self, workers: u32) -> Self {
        Way { workers, ..self }
    }

    /// The same blocking and split, by Winograd's minimal filtering.
    pub const fn by_winograd(self) -> Self {
        Way {
            winograd: true,
            ..self
        }
    }

    /// The way with autotuning off, for an output whose narrower side has `rows`: the small
    /// blocks unless the large ones fill, split when the output is small.
    pub fn fixed(rows: u32) -> Self {
        Way::new(kernels::fixed_blocking(rows), true)
    }

    /// [`Way::fixed`] on the tensor cores, never split.
    pub fn fixed_fragments(rows: u32) -> Self {
        Way::on_fragments(kernels::fixed_blocking(rows))
    }

    /// [`Way::fixed`] on the tensor cores, split where the output is small.
    pub fn fixed_split_fragments(rows: u32) -> Self {
        Way::fixed_fragments(rows).splitting()
    }

    /// [`Way::fixed_split_fragments`] over a staged window where the op can: for at most 64
    /// rows, every tap's filter slice staged at once where it can (the blocks of
    /// `kernels::WindowBlocking::ALL_TAPS_AT_ONCE` have 64 rows).
    pub fn fixed_window(rows: u32) -> Self {
        let way = Way::fixed_split_fragments(rows);
        match way.blocking {
            0 => way.over_window(),
            _ => way.over_all_taps(),
        }
    }
}

/// The hash of the WGSL the candidates run: the `nn` kernels that need no optional feature,
/// or with `fragments`, the whole module (the tensor-core kernels are built from it).
fn wgsl_hash(fragments: bool) -> u64 {
    static PORTABLE: OnceLock<u64> = OnceLock::new();
    static WHOLE: OnceLock<u64> = OnceLock::new();
    if fragments {
        *WHOLE.get_or_init(|| source_hash(kernels::WGSL))
    } else {
        *PORTABLE.get_or_init(|| source_hash(kernels::WGSL_PLAIN))
    }
}

/// The way `operation` runs, among `ways`, for a problem of `sizes` (rounded to powers of
/// two for the bucket) and `exact` values (taken as they are); with autotuning off, `fixed`
/// (one of `ways`).
///
/// Tuning records candidates into batches of their own with scratch buffers from `scratch`,
/// made once when a tuning first needs them, never with the caller's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn way<S>(
    rt: &Runtime,
    operation: &str,
    sizes: &[u32],
    exact: &[u32],
    ways: &[Way],
    fixed: Way,
    scratch: impl Fn(&Runtime) -> Result<S>,
    mut record: impl FnMut(&mut Batch<'_>, Way, &mut S) -> Result<()>,
) -> Result<Way> {
    let bucket: Vec<u32> = sizes
        .iter()
        .map(|&size| size_bucket(size))
        .chain(exact.iter().copied())
        .collect();
    let fragments = ways.iter().any(|w| w.fragments);
    let key = TuneKey::new(operation, wgsl_hash(fragments), &bucket);
    let fixed_index = ways.iter().position(|&w| w == fixed).unwrap_or(0);
    let mut made: Option<S> = None;
    let chosen = rt.autotune(&key, ways.len(), fixed_index, |batch, index| {
        let scratch = match &mut made {
            Some(scratch) => scratch,
            None => made.insert(scratch(batch.runtime())?),
        };
        record(batch, ways[index], scratch)
    })?;
    Ok(ways.get(chosen).copied().unwrap_or(fixed))
}

/// A scratch input of `len` values in [-0.5, 0.5) for timing candidates. Not zeros: NVIDIA
/// GPUs can compress all-zero memory, and candidates should be timed on data that costs what
/// real data costs.
pub(crate) fn noise(rt: &Runtime, len: usize) -> Result<GpuBuffer<f32>> {
    let values: Vec<f32> = (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        .collect();
    rt.upload(&values)
}
