//! How each GEMM-shaped op runs, as a type per op whose values are exactly its valid ways:
//! [`GemmWay`], [`ConvWay`] (a convolution's forward and input gradient) and [`WeightWay`]
//! (its filter gradient); in f32 or on the tensor cores, in which blocks ([`Tile`],
//! [`FragmentTile`], [`GemmTile`], a [`Stream`]'s tile), whether a sum too long for its
//! output may be split into slices, and for a convolution on the tensor cores, by which
//! [`Schedule`]. Tuned per device and shape bucket by
//! [`Runtime::autotune`](tessera::Runtime::autotune) among each op's candidate lists (whose
//! members and order the tune cache's indices depend on), or, with autotuning off, by each
//! type's `fixed` rule. What a way means for one shape and device is the op's plan
//! (`conv::plan`, `gemm::plan`), not this module's.

use std::sync::OnceLock;

use super::kernels;
use tessera::{size_bucket, source_hash, Batch, GpuBuffer, Result, Runtime, TuneKey};

/// A candidate way of an op, as [`way`] tunes it.
pub(crate) trait Candidate: Copy + PartialEq {
    /// Whether the way multiplies on the tensor cores (its kernels are then built from the
    /// whole kernels module, whose hash keys the tuning).
    fn on_tensor_cores(self) -> bool;
}

/// The blocks of an f32 pass (and of Winograd's products): [`kernels::Blocking`]'s two
/// instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tile {
    /// 128 x 128 output blocks (the small ones again on a device without their workgroup
    /// memory).
    Large,
    /// 64 x 64 output blocks.
    Small,
}

impl Tile {
    /// The tile with autotuning off, for an output whose narrower side has `rows`: the small
    /// blocks unless the large ones fill.
    pub fn fixed(rows: u32) -> Tile {
        match kernels::small_blocks_fit(rows) {
            true => Tile::Small,
            false => Tile::Large,
        }
    }

    /// The instance of a [`kernels::Blocked`] kernel that runs it.
    pub const fn pick(self) -> kernels::Pick {
        match self {
            Tile::Large => kernels::Pick::Large,
            Tile::Small => kernels::Pick::Small,
        }
    }
}

/// The blocks of a convolution's pass on the tensor cores ([`kernels::TensorBlocking`], or
/// over a staged window [`kernels::WindowBlocking`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FragmentTile {
    /// 128 x 128 blocks of 32-deep slices in 256 invocations.
    Large,
    /// 64 x 64 blocks of 32-deep slices in 256 invocations.
    Small,
    /// 128 x 128 blocks in 512 invocations, where the device has them (the large ones
    /// otherwise; over a window, the large window blocking).
    Many,
}

impl FragmentTile {
    /// The tile of `f32`'s choice with autotuning off ([`Tile::fixed`]).
    const fn of(tile: Tile) -> FragmentTile {
        match tile {
            Tile::Large => FragmentTile::Large,
            Tile::Small => FragmentTile::Small,
        }
    }

    /// The instance of a [`kernels::Blocked`] kernel that runs it.
    pub const fn pick(self) -> kernels::Pick {
        match self {
            FragmentTile::Large => kernels::Pick::Large,
            FragmentTile::Small => kernels::Pick::Small,
            FragmentTile::Many => kernels::Pick::Many,
        }
    }

    /// The f32 tile that stands in for it where an f32 kernel runs (the large one for
    /// [`FragmentTile::Many`]).
    pub const fn in_f32(self) -> Tile {
        match self {
            FragmentTile::Small => Tile::Small,
            FragmentTile::Large | FragmentTile::Many => Tile::Large,
        }
    }
}

/// The blocks of a GEMM pass on the tensor cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GemmTile {
    /// [`FragmentTile`]'s blocks.
    Fragments(FragmentTile),
    /// 128 x 128 blocks of 64-deep slices, where the device has their workgroup memory (the
    /// large ones otherwise).
    Deep,
    /// The forward over vectors in 256 x 128 blocks ([`kernels::WideTensorBlocking`]) where
    /// the device has them; any other kernel, and a forward that cannot, in the large ones.
    Wide,
}

impl GemmTile {
    /// 128 x 128 blocks of 32-deep slices.
    pub const LARGE: GemmTile = GemmTile::Fragments(FragmentTile::Large);
    /// 64 x 64 blocks.
    pub const SMALL: GemmTile = GemmTile::Fragments(FragmentTile::Small);
    /// 128 x 128 blocks in 512 invocations.
    pub const MANY: GemmTile = GemmTile::Fragments(FragmentTile::Many);

    /// The instance of a [`kernels::Blocked`] kernel that runs it.
    pub const fn pick(self) -> kernels::Pick {
        match self {
            GemmTile::Fragments(tile) => tile.pick(),
            GemmTile::Deep => kernels::Pick::Deep,
            GemmTile::Wide => kernels::Pick::Large,
        }
    }
}

/// A stream: `workers` workgroups, as many as the GPU holds at once, share the blocks'
/// steps evenly (`kernels::conv_forward_fragments_by_tap_streamed`). Only on Vulkan
/// (`conv::streams_on` says why) and where the (block, step) iterations are counted in
/// `u32`; elsewhere the pass runs as [`Stream::instead`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stream {
    /// The blocks.
    pub tile: kernels::StreamTile,
    /// The workgroups.
    pub workers: u32,
}

impl Stream {
    /// The tile a pass runs in where it cannot stream: the large blocks in 512 invocations
    /// for the square blocks, the large blocks for the oblong ones.
    pub const fn instead(self) -> FragmentTile {
        match self.tile {
            kernels::StreamTile::Square => FragmentTile::Many,
            kernels::StreamTile::Wide | kernels::StreamTile::Long => FragmentTile::Large,
        }
    }
}

/// How a GEMM (forward, or both operand gradients) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GemmWay {
    /// In strict f32, in `tile`; with `split`, its sum cut into slices where its output
    /// alone cannot fill the GPU (`Split::of` decides how many).
    F32 { tile: Tile, split: bool },
    /// On the tensor cores, in `tile`, split as in f32.
    TensorCores { tile: GemmTile, split: bool },
}

impl Candidate for GemmWay {
    fn on_tensor_cores(self) -> bool {
        matches!(self, GemmWay::TensorCores { .. })
    }
}

impl GemmWay {
    /// Both blockings, each split and whole.
    pub const IN_F32: [GemmWay; 4] = [
        GemmWay::F32 {
            tile: Tile::Large,
            split: true,
        },
        GemmWay::F32 {
            tile: Tile::Small,
            split: true,
        },
        GemmWay::F32 {
            tile: Tile::Large,
            split: false,
        },
        GemmWay::F32 {
            tile: Tile::Small,
            split: false,
        },
    ];

    /// On the tensor cores, the large, small, deep and many-invocation blocks, each split
    /// where the output alone cannot fill the GPU and then whole: for the backward.
    pub const ON_TENSOR_CORES: [GemmWay; 8] = {
        const fn t(tile: GemmTile, split: bool) -> GemmWay {
            GemmWay::TensorCores { tile, split }
        }
        [
            t(GemmTile::LARGE, true),
            t(GemmTile::SMALL, true),
            t(GemmTile::Deep, true),
            t(GemmTile::MANY, true),
            t(GemmTile::LARGE, false),
            t(GemmTile::SMALL, false),
            t(GemmTile::Deep, false),
            t(GemmTile::MANY, false),
        ]
    };

    /// The wide blocks, then [`GemmWay::ON_TENSOR_CORES`], then [`GemmWay::IN_F32`]: for a
    /// forward in tensor-core precision (an output narrower than a fragment may run faster
    /// in f32).
    pub const FORWARD_ON_TENSOR_CORES: [GemmWay; 13] = {
        let [a, b, c, d, e, f, g, h] = GemmWay::ON_TENSOR_CORES;
        let [i, j, k, l] = GemmWay::IN_F32;
        let wide = GemmWay::TensorCores {
            tile: GemmTile::Wide,
            split: false,
        };
        [wide, a, b, c, d, e, f, g, h, i, j, k, l]
    };

    /// With autotuning off, for an output whose narrower side has `rows`: [`Tile::fixed`],
    /// split where the output is small.
    pub fn fixed(rows: u32) -> GemmWay {
        GemmWay::F32 {
            tile: Tile::fixed(rows),
            split: true,
        }
    }

    /// [`GemmWay::fixed`] on the tensor cores.
    pub fn fixed_on_tensor_cores(rows: u32) -> GemmWay {
        GemmWay::TensorCores {
            tile: GemmTile::Fragments(FragmentTile::of(Tile::fixed(rows))),
            split: true,
        }
    }
}

/// How a convolution's forward or input gradient runs on the tensor cores, in blocks of a
/// [`FragmentTile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// As an implicit GEMM gathering the image (`kernels::conv_forward_fragments`); with
    /// `split`, its sum cut into slices where its output alone cannot fill the GPU.
    Gather { split: bool },
    /// Tap by tap (`kernels::conv_forward_fragments_by_tap`, the filter first laid out for
    /// it) where the summed channels are a multiple of the blocking's step; otherwise
    /// [`Schedule::Gather`]. Split as there.
    ByTap { split: bool },
    /// Over a staged window (`kernels::conv_window_tile`) where the filter's reach fits the
    /// window, the summed channels are a multiple of its step and the device has its
    /// workgroup memory; with `all_taps`, every tap's filter slice staged at once
    /// (`kernels::WindowBlocking::ALL_TAPS_AT_ONCE`) where the filter has at most its taps,
    /// otherwise tap by tap. Where no window fits, [`Schedule::ByTap`], split.
    Window { all_taps: bool },
}

impl Schedule {
    /// Whether the pass may cut its sum into slices when it runs gathering or by taps.
    pub const fn split(self) -> bool {
        match self {
            Schedule::Gather { split } | Schedule::ByTap { split } => split,
            Schedule::Window { .. } => true,
        }
    }
}

/// How a convolution's forward or input gradient runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConvWay {
    /// In strict f32, in `tile`; with `split`, its sum cut into slices where its output
    /// alone cannot fill the GPU.
    F32 { tile: Tile, split: bool },
    /// On the tensor cores, in `tile`, as `schedule` says.
    TensorCores {
        tile: FragmentTile,
        schedule: Schedule,
    },
    /// On the tensor cores by taps as a stream (where it cannot stream, by taps whole in
    /// [`Stream::instead`]).
    Streamed(Stream),
}

impl Candidate for ConvWay {
    fn on_tensor_cores(self) -> bool {
        !matches!(self, ConvWay::F32 { .. })
    }
}

impl ConvWay {
    /// Both blockings, each split and whole.
    pub const IN_F32: [ConvWay; 4] = {
        const fn f(tile: Tile, split: bool) -> ConvWay {
            ConvWay::F32 { tile, split }
        }
        [
            f(Tile::Large, true),
            f(Tile::Small, true),
            f(Tile::Large, false),
            f(Tile::Small, false),
        ]
    };

    /// The three tensor-core tiles, gathering whole: for the strided input gradient (one
    /// stride phase at a time, never split).
    pub const PHASED_ON_TENSOR_CORES: [ConvWay; 3] = {
        const fn t(tile: FragmentTile) -> ConvWay {
            let schedule = Schedule::Gather { split: false };
            ConvWay::TensorCores { tile, schedule }
        }
        [
            t(FragmentTile::Large),
            t(FragmentTile::Small),
            t(FragmentTile::Many),
        ]
    };

    /// Over a staged window in both blockings and, in the small one, every tap at once;
    /// then the three tiles by taps split and whole, gathering split and whole; then by
    /// taps as streams: for the forward and the input gradient (laying the filter out for
    /// a pass by taps or over a window is a dispatch of its own, which small problems may
    /// not recover).
    ///
    /// A stream wants as many workgroups as the GPU runs at once, which wgpu does not tell:
    /// its blockings (`kernels::StreamBlocking`) run one workgroup a core, and the streams of
    /// 128 x 128 blocks offer the core counts of NVIDIA's H100 (SXM 132, PCIe 114) and A100
    /// (108), the oblong blocks the first. On a GPU with fewer cores a stream's last
    /// workgroups wait for the first (slower, never wrong), and the tuner takes another way.
    pub const ON_TENSOR_CORES: [ConvWay; 20] = {
        use FragmentTile::{Large, Many, Small};
        use Schedule::{ByTap, Gather, Window};
        const fn t(tile: FragmentTile, schedule: Schedule) -> ConvWay {
            ConvWay::TensorCores { tile, schedule }
        }
        const fn s(tile: kernels::StreamTile, workers: u32) -> ConvWay {
            ConvWay::Streamed(Stream { tile, workers })
        }
        const ONE_TAP: Schedule = Window { all_taps: false };
        const BY_TAP: Schedule = ByTap { split: true };
        const BY_TAP_WHOLE: Schedule = ByTap { split: false };
        const GATHER: Schedule = Gather { split: true };
        const GATHER_WHOLE: Schedule = Gather { split: false };
        [
            t(Large, ONE_TAP),
            t(Small, ONE_TAP),
            t(Small, Window { all_taps: true }),
            t(Large, BY_TAP),
            t(Small, BY_TAP),
            t(Many, BY_TAP),
            t(Large, BY_TAP_WHOLE),
            t(Small, BY_TAP_WHOLE),
            t(Many, BY_TAP_WHOLE),
            t(Large, GATHER),
            t(Small, GATHER),
            t(Many, GATHER),
            t(Large, GATHER_WHOLE),
            t(Small, GATHER_WHOLE),
            t(Many, GATHER_WHOLE),
            s(kernels::StreamTile::Square, 132),
            s(kernels::StreamTile::Square, 114),
            s(kernels::StreamTile::Square, 108),
            s(kernels::StreamTile::Wide, 132),
            s(kernels::StreamTile::Long, 132),
        ]
    };

    /// With autotuning off, for a result whose channels are `rows`: [`Tile::fixed`], split
    /// where the result is small.
    pub fn fixed(rows: u32) -> ConvWay {
        ConvWay::F32 {
            tile: Tile::fixed(rows),
            split: true,
        }
    }

    /// [`ConvWay::fixed`] on the tensor cores gathering whole.
    pub fn fixed_gather(rows: u32) -> ConvWay {
        ConvWay::TensorCores {
            tile: FragmentTile::of(Tile::fixed(rows)),
            schedule: Schedule::Gather { split: false },
        }
    }

    /// [`ConvWay::fixed`] on the tensor cores over a staged window where the op can: for at
    /// most 64 rows, every tap's filter slice staged at once where it can (the blocks of
    /// `kernels::WindowBlocking::ALL_TAPS_AT_ONCE` have 64 rows).
    pub fn fixed_window(rows: u32) -> ConvWay {
        let tile = Tile::fixed(rows);
        let all_taps = tile == Tile::Small;
        ConvWay::TensorCores {
            tile: FragmentTile::of(tile),
            schedule: Schedule::Window { all_taps },
        }
    }

    /// The f32 tile and split that stand in for the way where an f32 kernel runs (the
    /// backward family's members, whose instances differ only in the input gradient).
    pub const fn in_f32(self) -> (Tile, bool) {
        match self {
            ConvWay::F32 { tile, split } => (tile, split),
            ConvWay::TensorCores { tile, schedule } => (tile.in_f32(), schedule.split()),
            ConvWay::Streamed(stream) => (stream.instead().in_f32(), false),
        }
    }
}

/// How a convolution's filter gradient runs; every way but the stream cuts its sum into
/// slices where the filter alone cannot fill the GPU (`conv::split_weight_grad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WeightWay {
    /// As an implicit GEMM in strict f32.
    F32 { tile: Tile },
    /// By Winograd's minimal filtering F(3x3, 4x4), its products in `tile` (only for 3 x 3
    /// filters of stride 1, `conv::by_winograd`).
    Winograd { tile: Tile },
    /// On the tensor cores; with `by_tap`, each block covering one filter tap
    /// (`kernels::conv_grad_weight_fragments_by_tap`) where the input channels are a
    /// multiple of the blocking's block.
    TensorCores { tile: FragmentTile, by_tap: bool },
    /// On the tensor cores as a stream (`kernels::conv_grad_weight_fragments_streamed`);
    /// where it cannot stream, whole in [`Stream::instead`] (not by taps).
    Streamed(Stream),
}

impl Candidate for WeightWay {
    fn on_tensor_cores(self) -> bool {
        matches!(self, WeightWay::TensorCores { .. } | WeightWay::Streamed(_))
    }
}

impl WeightWay {
    /// Both blockings as an implicit GEMM, then both by Winograd: for the shapes Winograd
    /// fits (the first two for the others).
    pub const IN_F32_OR_WINOGRAD: [WeightWay; 4] = [
        WeightWay::F32 { tile: Tile::Large },
        WeightWay::F32 { tile: Tile::Small },
        WeightWay::Winograd { tile: Tile::Large },
        WeightWay::Winograd { tile: Tile::Small },
    ];

    /// The three tensor-core tiles by taps and then not, then as streams of 132 workgroups
    /// (see [`ConvWay::ON_TENSOR_CORES`]) in each stream tile.
    pub const ON_TENSOR_CORES: [WeightWay; 9] = {
        use FragmentTile::{Large, Many, Small};
        const fn t(tile: FragmentTile, by_tap: bool) -> WeightWay {
            WeightWay::TensorCores { tile, by_tap }
        }
        const fn s(tile: kernels::StreamTile) -> WeightWay {
            WeightWay::Streamed(Stream { tile, workers: 132 })
        }
        [
            t(Large, true),
            t(Small, true),
            t(Many, true),
            t(Large, false),
            t(Small, false),
            t(Many, false),
            s(kernels::StreamTile::Square),
            s(kernels::StreamTile::Wide),
            s(kernels::StreamTile::Long),
        ]
    };

    /// With autotuning off, for a filter of `rows` output channels: as an implicit GEMM in
    /// [`Tile::fixed`].
    pub fn fixed(rows: u32) -> WeightWay {
        WeightWay::F32 {
            tile: Tile::fixed(rows),
        }
    }

    /// With autotuning off where Winograd fits, for `rows` (the fewer channels).
    pub fn fixed_winograd(rows: u32) -> WeightWay {
        WeightWay::Winograd {
            tile: Tile::fixed(rows),
        }
    }

    /// With autotuning off on the tensor cores: [`Tile::fixed`]'s blocks by taps.
    pub fn fixed_on_tensor_cores(rows: u32) -> WeightWay {
        WeightWay::TensorCores {
            tile: FragmentTile::of(Tile::fixed(rows)),
            by_tap: true,
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

/// What a tuned choice is keyed by: the operation's name, the sizes it depends on (rounded to
/// powers of two for the bucket) and the values it depends on exactly.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Problem<'a> {
    pub operation: &'a str,
    pub sizes: &'a [u32],
    pub exact: &'a [u32],
}

/// The way `problem` runs, among `ways`; with autotuning off, `fixed` (one of `ways`).
///
/// Tuning records candidates into batches of their own with scratch buffers from `scratch`,
/// made once when a tuning first needs them, never with the caller's.
pub(crate) fn way<W: Candidate, S>(
    rt: &Runtime,
    problem: Problem<'_>,
    ways: &[W],
    fixed: W,
    scratch: impl Fn(&Runtime) -> Result<S>,
    mut record: impl FnMut(&mut Batch<'_>, W, &mut S) -> Result<()>,
) -> Result<W> {
    let Problem {
        operation,
        sizes,
        exact,
    } = problem;
    let bucket: Vec<u32> = sizes
        .iter()
        .map(|&size| size_bucket(size))
        .chain(exact.iter().copied())
        .collect();
    let fragments = ways.iter().any(|w| w.on_tensor_cores());
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

#[cfg(test)]
mod tests {
    //! The candidate lists pinned against the `Way` of flags they replaced (its builders and
    //! lists as they were): the tune cache stores a chosen candidate's index, so each list
    //! must keep its members in their order, and each fixed rule its choice.
    #![allow(dead_code)]
    use super::*;

    /// A way as the flags of the `Way` the types replaced.
    #[derive(Clone, Copy, Debug)]
    struct Flags {
        blocking: kernels::Pick,
        stream: kernels::StreamTile,
        split: bool,
        winograd: bool,
        fragments: bool,
        by_tap: bool,
        window: bool,
        all_taps: bool,
        workers: u32,
        wide: bool,
    }

    impl Flags {
        const fn of(blocking: kernels::Pick, split: bool) -> Flags {
            Flags {
                blocking,
                stream: kernels::StreamTile::Square,
                split,
                winograd: false,
                fragments: false,
                by_tap: false,
                window: false,
                all_taps: false,
                workers: 0,
                wide: false,
            }
        }

        fn streamed(stream: Stream) -> Flags {
            Flags {
                stream: stream.tile,
                workers: stream.workers,
                fragments: true,
                ..Flags::of(stream.instead().pick(), false)
            }
        }
    }

    impl GemmWay {
        /// The way's flags.
        fn flags(self) -> Flags {
            match self {
                GemmWay::F32 { tile, split } => Flags::of(tile.pick(), split),
                GemmWay::TensorCores { tile, split } => Flags {
                    fragments: true,
                    wide: tile == GemmTile::Wide,
                    ..Flags::of(tile.pick(), split)
                },
            }
        }
    }

    impl ConvWay {
        /// The way's flags.
        fn flags(self) -> Flags {
            match self {
                ConvWay::F32 { tile, split } => Flags::of(tile.pick(), split),
                ConvWay::TensorCores { tile, schedule } => {
                    let on = Flags {
                        fragments: true,
                        ..Flags::of(tile.pick(), schedule.split())
                    };
                    match schedule {
                        Schedule::Gather { .. } => on,
                        Schedule::ByTap { .. } => Flags { by_tap: true, ..on },
                        Schedule::Window { all_taps } => Flags {
                            by_tap: true,
                            window: true,
                            all_taps,
                            ..on
                        },
                    }
                }
                ConvWay::Streamed(stream) => Flags {
                    by_tap: true,
                    ..Flags::streamed(stream)
                },
            }
        }
    }

    impl WeightWay {
        /// The way's flags.
        fn flags(self) -> Flags {
            match self {
                WeightWay::F32 { tile } => Flags::of(tile.pick(), true),
                WeightWay::Winograd { tile } => Flags {
                    winograd: true,
                    ..Flags::of(tile.pick(), true)
                },
                WeightWay::TensorCores { tile, by_tap } => Flags {
                    fragments: true,
                    by_tap,
                    ..Flags::of(tile.pick(), false)
                },
                WeightWay::Streamed(stream) => Flags::streamed(stream),
            }
        }
    }

    const DEEP: usize = 2;
    const WIDE: usize = 3;
    const MANY: usize = 4;
    const LONG: usize = 5;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Way {
        blocking: usize,
        split: bool,
        winograd: bool,
        fragments: bool,
        by_tap: bool,
        window: bool,
        all_taps: bool,
        workers: u32,
    }

    impl Way {
        const ALL: [Way; 4] = [
            Way::new(0, true),
            Way::new(1, true),
            Way::new(0, false),
            Way::new(1, false),
        ];

        const BLOCKINGS: [Way; 2] = [Way::new(0, true), Way::new(1, true)];

        const WINOGRAD: [Way; 2] = [
            Way::new(0, true).by_winograd(),
            Way::new(1, true).by_winograd(),
        ];

        const FRAGMENTS: [Way; 3] = [
            Way::on_fragments(0),
            Way::on_fragments(1),
            Way::on_fragments(MANY),
        ];

        const FRAGMENTS_BY_TAP_OR_STREAMED: [Way; 9] = [
            Way::on_fragments(0).by_tap(),
            Way::on_fragments(1).by_tap(),
            Way::on_fragments(MANY).by_tap(),
            Way::on_fragments(0),
            Way::on_fragments(1),
            Way::on_fragments(MANY),
            Way::on_fragments(MANY).streamed(132),
            Way::on_fragments(WIDE).streamed(132),
            Way::on_fragments(LONG).streamed(132),
        ];

        const SPLIT_FRAGMENTS_OR_WINDOW: [Way; 20] = [
            Way::on_fragments(0).splitting().over_window(),
            Way::on_fragments(1).splitting().over_window(),
            Way::on_fragments(1).splitting().over_all_taps(),
            Way::on_fragments(0).splitting().by_tap(),
            Way::on_fragments(1).splitting().by_tap(),
            Way::on_fragments(MANY).splitting().by_tap(),
            Way::on_fragments(0).by_tap(),
            Way::on_fragments(1).by_tap(),
            Way::on_fragments(MANY).by_tap(),
            Way::on_fragments(0).splitting(),
            Way::on_fragments(1).splitting(),
            Way::on_fragments(MANY).splitting(),
            Way::on_fragments(0),
            Way::on_fragments(1),
            Way::on_fragments(MANY),
            Way::on_fragments(MANY).by_tap().streamed(132),
            Way::on_fragments(MANY).by_tap().streamed(114),
            Way::on_fragments(MANY).by_tap().streamed(108),
            Way::on_fragments(WIDE).by_tap().streamed(132),
            Way::on_fragments(LONG).by_tap().streamed(132),
        ];

        const SPLIT_DEEP_FRAGMENTS: [Way; 8] = [
            Way::on_fragments(0).splitting(),
            Way::on_fragments(1).splitting(),
            Way::on_fragments(DEEP).splitting(),
            Way::on_fragments(MANY).splitting(),
            Way::on_fragments(0),
            Way::on_fragments(1),
            Way::on_fragments(DEEP),
            Way::on_fragments(MANY),
        ];

        const FRAGMENTS_OR_SPLIT: [Way; 13] = [
            Way::on_fragments(WIDE),
            Way::on_fragments(0).splitting(),
            Way::on_fragments(1).splitting(),
            Way::on_fragments(DEEP).splitting(),
            Way::on_fragments(MANY).splitting(),
            Way::on_fragments(0),
            Way::on_fragments(1),
            Way::on_fragments(DEEP),
            Way::on_fragments(MANY),
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

        const fn on_fragments(blocking: usize) -> Self {
            Way {
                fragments: true,
                ..Way::new(blocking, false)
            }
        }

        const fn splitting(self) -> Self {
            Way {
                split: true,
                ..self
            }
        }

        const fn by_tap(self) -> Self {
            Way {
                by_tap: true,
                ..self
            }
        }

        const fn over_window(self) -> Self {
            Way {
                window: true,
                by_tap: true,
                ..self
            }
        }

        const fn over_all_taps(self) -> Self {
            Way {
                all_taps: true,
                ..self.over_window()
            }
        }

        const fn streamed(self, workers: u32) -> Self {
            Way { workers, ..self }
        }

        const fn by_winograd(self) -> Self {
            Way {
                winograd: true,
                ..self
            }
        }

        fn fixed(rows: u32) -> Self {
            Way::new(usize::from(kernels::small_blocks_fit(rows)), true)
        }

        fn fixed_fragments(rows: u32) -> Self {
            Way::on_fragments(usize::from(kernels::small_blocks_fit(rows)))
        }

        fn fixed_split_fragments(rows: u32) -> Self {
            Way::fixed_fragments(rows).splitting()
        }

        fn fixed_window(rows: u32) -> Self {
            let way = Way::fixed_split_fragments(rows);
            match way.blocking {
                0 => way.over_window(),
                _ => way.over_all_taps(),
            }
        }
    }

    /// A way as the flags it replaced.
    fn old(flags: Flags) -> Way {
        use kernels::{Pick, StreamTile};
        let blocking = match (flags.workers, flags.stream, flags.blocking, flags.wide) {
            (1.., StreamTile::Wide, ..) => WIDE,
            (1.., StreamTile::Long, ..) => LONG,
            (_, _, _, true) => WIDE,
            (_, _, Pick::Large, _) => 0,
            (_, _, Pick::Small, _) => 1,
            (_, _, Pick::Deep, _) => DEEP,
            (_, _, Pick::Many, _) => MANY,
        };
        Way {
            blocking,
            split: flags.split,
            winograd: flags.winograd,
            fragments: flags.fragments,
            by_tap: flags.by_tap,
            window: flags.window,
            all_taps: flags.all_taps,
            workers: flags.workers,
        }
    }

    fn olds<W: Copy>(ways: &[W], flags: impl Fn(W) -> Flags) -> Vec<Way> {
        ways.iter().map(|&w| old(flags(w))).collect()
    }

    #[test]
    fn the_candidate_lists_keep_their_members_in_order() {
        assert_eq!(olds(&GemmWay::IN_F32, GemmWay::flags), Way::ALL);
        assert_eq!(
            olds(&GemmWay::ON_TENSOR_CORES, GemmWay::flags),
            Way::SPLIT_DEEP_FRAGMENTS
        );
        assert_eq!(
            olds(&GemmWay::FORWARD_ON_TENSOR_CORES, GemmWay::flags),
            Way::FRAGMENTS_OR_SPLIT
        );
        assert_eq!(olds(&ConvWay::IN_F32, ConvWay::flags), Way::ALL);
        assert_eq!(
            olds(&ConvWay::PHASED_ON_TENSOR_CORES, ConvWay::flags),
            Way::FRAGMENTS
        );
        assert_eq!(
            olds(&ConvWay::ON_TENSOR_CORES, ConvWay::flags),
            Way::SPLIT_FRAGMENTS_OR_WINDOW
        );
        let weight = olds(&WeightWay::IN_F32_OR_WINOGRAD, WeightWay::flags);
        assert_eq!(weight, [Way::BLOCKINGS, Way::WINOGRAD].concat());
        assert_eq!(
            olds(&WeightWay::ON_TENSOR_CORES, WeightWay::flags),
            Way::FRAGMENTS_BY_TAP_OR_STREAMED
        );
    }

    #[test]
    fn the_fixed_rules_choose_as_before() {
        for rows in [1, 16, 63, 64, 65, 128, 1000] {
            let gemm = |w: GemmWay| old(w.flags());
            let conv = |w: ConvWay| old(w.flags());
            let weight = |w: WeightWay| old(w.flags());
            assert_eq!(gemm(GemmWay::fixed(rows)), Way::fixed(rows));
            assert_eq!(
                gemm(GemmWay::fixed_on_tensor_cores(rows)),
                Way::fixed_split_fragments(rows)
            );
            assert_eq!(conv(ConvWay::fixed(rows)), Way::fixed(rows));
            assert_eq!(
                conv(ConvWay::fixed_gather(rows)),
                Way::fixed_fragments(rows)
            );
            assert_eq!(conv(ConvWay::fixed_window(rows)), Way::fixed_window(rows));
            assert_eq!(weight(WeightWay::fixed(rows)), Way::fixed(rows));
            assert_eq!(
                weight(WeightWay::fixed_winograd(rows)),
                Way::fixed(rows).by_winograd()
            );
            assert_eq!(
                weight(WeightWay::fixed_on_tensor_cores(rows)),
                Way::fixed_fragments(rows).by_tap()
            );
        }
    }
}
