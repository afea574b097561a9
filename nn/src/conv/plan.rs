//! What a convolution pass runs for one shape, way and device: a plain value ([`ForwardPlan`],
//! [`InputPlan`], [`WeightPlan`]) made by a pure function of the shape's parameters, the
//! [`ConvWay`] or [`WeightWay`] and the blockings the device built ([`Caps`]), which
//! `Convolution` then records with one `match`. The plans hold the guards that make the
//! unchecked kernels sound (see "Bounds" in `kernels`): a pass by taps only where the summed
//! channels are a multiple of its blocking's step (the filter gradient's, of its block), a
//! pass over a window only where [`over_window`] says it fits, a stream only where its
//! iterations are counted in `u32`. Recording, buffers and scratch memory are not this
//! module's.

use super::kernels::{self, Blocked, ConvParams, Streams};
use crate::split::{Split, Steps};
use crate::tune::{ConvWay, FragmentTile, Schedule, Stream, Tile, WeightWay};

/// How a pass's sum runs: whole, or cut into slices whose partial sums a second pass (or
/// the last slice's workgroup) adds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sum {
    /// One slice.
    Whole,
    /// More than one slice, as the [`Split`] says.
    Sliced(Split),
}

impl Sum {
    /// The sum as `cut` says where the way allows slices (`split`), whole otherwise.
    fn of(cut: Split, split: bool) -> Sum {
        match split && cut.splits > 1 {
            true => Sum::Sliced(cut),
            false => Sum::Whole,
        }
    }
}

/// A forward or input-gradient pass on the tensor cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TensorPlan {
    /// As an implicit GEMM gathering the image (`conv_forward_fragments`,
    /// `conv_grad_input_fragments`, or their split forms).
    Gather { tile: FragmentTile, sum: Sum },
    /// Over the filter laid out by taps first (`conv_weights_by_tap`,
    /// `conv_weights_transposed_by_tap`).
    OverTaps(TapPlan),
}

/// A pass on the tensor cores over the filter laid out by taps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TapPlan {
    /// Tap by tap (`conv_forward_fragments_by_tap`, `conv_grad_input_fragments_by_tap`, or
    /// their split forms): made only where the summed channels are a multiple of the
    /// blocking's step.
    ByTap { tile: FragmentTile, sum: Sum },
    /// Over a staged window tap by tap, in the window blocking of `tile`: made only where
    /// [`over_window`] holds for it.
    Window { tile: FragmentTile },
    /// Over a staged window with every tap's filter slice at once
    /// (`kernels::WindowBlocking::ALL_TAPS_AT_ONCE`): made only where [`over_window`] holds
    /// for it.
    AllTaps,
    /// By taps as a stream: made only where the pass could run by taps, on a device that
    /// runs streams and where the iterations are counted in `u32` ([`streams`]).
    Stream(Stream),
}

/// A convolution's forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ForwardPlan {
    /// In f32 (`conv_forward`, or split `conv_forward_partial` and its reduce).
    F32 { tile: Tile, sum: Sum },
    /// On the tensor cores.
    TensorCores(TensorPlan),
}

/// A convolution's input gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InputPlan {
    /// Every input channel of a pixel by one invocation (`conv_grad_input_few`): at most
    /// `kernels::FEW` input channels, no dilation.
    Few,
    /// One stride phase at a time in f32 (`conv_grad_input_phased`): strided, no dilation.
    Phased { tile: Tile },
    /// One stride phase at a time on the tensor cores.
    PhasedOnTensorCores { tile: FragmentTile },
    /// In f32 (`conv_grad_input`, or split `conv_grad_input_partial` and its reduce).
    F32 { tile: Tile, sum: Sum },
    /// On the tensor cores.
    TensorCores(TensorPlan),
}

impl InputPlan {
    /// Whether the backward family's input-gradient member runs the pass (otherwise it runs
    /// on its own, after the family).
    pub fn in_family(self) -> bool {
        matches!(
            self,
            InputPlan::F32 {
                sum: Sum::Whole,
                ..
            }
        )
    }
}

/// A convolution's filter gradient; each but the stream cuts its sum as
/// [`split_weight_grad`] says and, cut, adds up its slices after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WeightPlan {
    /// As an implicit GEMM in f32 (`conv_grad_weight`).
    F32 { tile: Tile, cut: Split },
    /// By Winograd's F(3x3, 4x4), its products in `tile` (their batched cut).
    Winograd { tile: Tile, cut: Split },
    /// On the tensor cores; `by_tap` (`conv_grad_weight_fragments_by_tap`) made only where
    /// the input channels are a multiple of the blocking's block.
    TensorCores {
        tile: FragmentTile,
        by_tap: bool,
        cut: Split,
    },
    /// As a stream (`conv_grad_weight_fragments_streamed`), where [`streams`] holds.
    Stream(Stream),
}

/// The blockings a device built the tensor-core forward or input gradient in.
#[derive(Clone, Debug)]
pub(crate) struct TapCaps {
    /// Those whose step the by-tap guard checks.
    pub steps: Blocked<kernels::TensorBlocking>,
    /// Those the sum is cut for (the split pass's).
    pub cuts: Blocked<kernels::TensorBlocking>,
    /// The window blockings tap by tap, where the device has their workgroup memory.
    pub window: Option<Blocked<kernels::WindowBlocking>>,
    /// The window blocking with every tap at once, where the device has it.
    pub all_taps: Option<kernels::WindowBlocking>,
    /// The stream blockings, where the device runs streams (`conv::streams_on`).
    pub streams: Option<Streams<kernels::StreamBlocking>>,
}

/// The blockings a device built the filter gradient in.
#[derive(Clone, Debug)]
pub(crate) struct WeightCaps {
    /// The implicit GEMM's.
    pub f32: Blocked<kernels::Blocking>,
    /// Winograd's products'.
    pub winograd: Blocked<kernels::Blocking>,
    /// On the tensor cores (the pass and its stream, as in [`TapCaps`]), where built.
    pub tensor: Option<(
        Blocked<kernels::TensorBlocking>,
        Option<Streams<kernels::StreamBlocking>>,
    )>,
}

/// The blockings a device built a pass in: the f32 split pass's, and on the tensor cores
/// [`TapCaps`].
#[derive(Clone, Debug)]
pub(crate) struct Caps {
    pub f32: Blocked<kernels::Blocking>,
    pub tensor: Option<TapCaps>,
}

/// Which of a convolution's GEMM-shaped passes: what it sums and what it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The output from the input: sums input channels x taps.
    Forward,
    /// The input's gradient: sums output channels x taps.
    GradInput,
}

/// A pass's output as a GEMM's: `rows` (result channels) x `columns` (images x result
/// pixels), summing `depth` (summed channels x taps).
#[derive(Clone, Copy, Debug)]
struct Dims {
    rows: u32,
    columns: u32,
    depth: u32,
    summed: u32,
}

impl Dims {
    fn of(p: &ConvParams, direction: Direction) -> Dims {
        let taps = p.kernel_h * p.kernel_w;
        // `Conv2dShape::params` checked that the products fit.
        match direction {
            Direction::Forward => Dims {
                rows: p.out_channels,
                columns: p.batch * p.out_h * p.out_w,
                depth: p.in_channels * taps,
                summed: p.in_channels,
            },
            Direction::GradInput => Dims {
                rows: p.in_channels,
                columns: p.batch * p.in_h * p.in_w,
                depth: p.out_channels * taps,
                summed: p.out_channels,
            },
        }
    }
}

impl Direction {
    /// The rows and columns of what the pass of `p` writes, as a GEMM's (the partial sums of
    /// each of its slices).
    pub fn outputs(self, p: &ConvParams) -> [u32; 2] {
        let Dims { rows, columns, .. } = Dims::of(p, self);
        [rows, columns]
    }
}

/// The forward of `p` run `way` on a device with `caps`.
pub(crate) fn forward(p: &ConvParams, way: ConvWay, caps: &Caps) -> ForwardPlan {
    match (
        tensor_plan(p, Direction::Forward, way, caps.tensor.as_ref()),
        way,
    ) {
        (Some(plan), _) => ForwardPlan::TensorCores(plan),
        (None, way) => {
            let (tile, sum) = f32_sum(p, Direction::Forward, way, caps);
            ForwardPlan::F32 { tile, sum }
        }
    }
}

/// The input gradient of `p` run `way` on a device with `caps`.
pub(crate) fn grad_input(p: &ConvParams, way: ConvWay, caps: &Caps) -> InputPlan {
    if by_few_channels(p) {
        return InputPlan::Few;
    }
    if by_phases(p) {
        return match (way, &caps.tensor) {
            (ConvWay::TensorCores { tile, .. }, Some(_)) => InputPlan::PhasedOnTensorCores { tile },
            (ConvWay::Streamed(stream), Some(_)) => InputPlan::PhasedOnTensorCores {
                tile: stream.instead(),
            },
            (way, _) => InputPlan::Phased {
                tile: way.in_f32().0,
            },
        };
    }
    match tensor_plan(p, Direction::GradInput, way, caps.tensor.as_ref()) {
        Some(plan) => InputPlan::TensorCores(plan),
        None => {
            let (tile, sum) = f32_sum(p, Direction::GradInput, way, caps);
            InputPlan::F32 { tile, sum }
        }
    }
}

/// The f32 tile and sum of a pass run `way` (a way on the tensor cores as
/// [`ConvWay::in_f32`] says).
fn f32_sum(p: &ConvParams, direction: Direction, way: ConvWay, caps: &Caps) -> (Tile, Sum) {
    let (tile, split) = way.in_f32();
    let d = Dims::of(p, direction);
    let cut = Split::of(*caps.f32.get(tile.pick()), d.rows, d.columns, d.depth);
    (tile, Sum::of(cut, split))
}

/// The pass on the tensor cores, where the way is on them and the device built them.
fn tensor_plan(
    p: &ConvParams,
    direction: Direction,
    way: ConvWay,
    caps: Option<&TapCaps>,
) -> Option<TensorPlan> {
    let caps = caps?;
    let (tile, schedule, stream) = match way {
        ConvWay::F32 { .. } => return None,
        ConvWay::TensorCores { tile, schedule } => (tile, schedule, None),
        ConvWay::Streamed(stream) => (
            stream.instead(),
            Schedule::ByTap { split: false },
            Some(stream),
        ),
    };
    let d = Dims::of(p, direction);
    let cut = Split::of(*caps.cuts.get(tile.pick()), d.rows, d.columns, d.depth);
    let sum = Sum::of(cut, schedule.split());
    let fits = |b: kernels::WindowBlocking| over_window(p, direction, b);
    let (by_tap, window, all_taps) = match schedule {
        Schedule::Gather { .. } => (false, false, false),
        Schedule::ByTap { .. } => (true, false, false),
        Schedule::Window { all_taps } => (true, true, all_taps),
    };
    if all_taps && caps.all_taps.is_some_and(fits) {
        return Some(TensorPlan::OverTaps(TapPlan::AllTaps));
    }
    let taps_fit = by_tap && d.summed.is_multiple_of(caps.steps.get(tile.pick()).depth());
    if !taps_fit {
        // (A window tap by tap fits only where the taps do: its step, 32, is every tensor
        // blocking's.)
        return Some(TensorPlan::Gather { tile, sum });
    }
    let window = (caps.window.as_ref())
        .filter(|_| window)
        .is_some_and(|w| fits(*w.get(tile.pick())));
    let streamed = stream.filter(|s| {
        let blocking = caps.streams.as_ref().map(|streams| *streams.get(s.tile));
        s.workers > 0 && blocking.is_some_and(|b| streams(d.rows, d.columns, d.depth, b))
    });
    Some(TensorPlan::OverTaps(match (window, streamed) {
        (true, _) => TapPlan::Window { tile },
        (false, Some(stream)) => TapPlan::Stream(stream),
        (false, None) => TapPlan::ByTap { tile, sum },
    }))
}

/// The filter gradient of `p` run `way` on a device with `caps`.
pub(crate) fn grad_weight(p: &ConvParams, way: WeightWay, caps: &WeightCaps) -> WeightPlan {
    let d = WeightDims::of(p);
    let f32_plan = |tile: Tile| WeightPlan::F32 {
        tile,
        cut: split_weight_grad(p, *caps.f32.get(tile.pick())),
    };
    let Some((blockings, streams)) = &caps.tensor else {
        return match way {
            WeightWay::F32 { tile } => f32_plan(tile),
            WeightWay::Winograd { tile } => winograd(p, tile, caps),
            WeightWay::TensorCores { tile, .. } => f32_plan(tile.in_f32()),
            WeightWay::Streamed(stream) => f32_plan(stream.instead().in_f32()),
        };
    };
    let on_tensor_cores = |tile: FragmentTile, by_tap: bool| {
        let blocking = *blockings.get(tile.pick());
        WeightPlan::TensorCores {
            tile,
            by_tap: by_tap && p.in_channels.is_multiple_of(blocking.block()),
            cut: split_weight_grad(p, blocking),
        }
    };
    match way {
        WeightWay::F32 { tile } => f32_plan(tile),
        WeightWay::Winograd { tile } => winograd(p, tile, caps),
        WeightWay::TensorCores { tile, by_tap } => on_tensor_cores(tile, by_tap),
        WeightWay::Streamed(stream) => {
            let blocking = streams.as_ref().map(|streams| *streams.get(stream.tile));
            let counted = blocking.is_some_and(|b| self::streams(d.rows, d.columns, d.depth, b));
            match stream.workers > 0 && counted {
                true => WeightPlan::Stream(stream),
                false => on_tensor_cores(stream.instead(), false),
            }
        }
    }
}

/// Winograd's filter gradient of `p` in `tile`: its products' batched cut.
fn winograd(p: &ConvParams, tile: Tile, caps: &WeightCaps) -> WeightPlan {
    // `by_winograd` checked that the tiles (and so the tile count) fit `u32`.
    let tiles = winograd_tiles(p) as u32;
    let blocking = *caps.winograd.get(tile.pick());
    let cut = Split::batched(
        blocking,
        kernels::POINTS,
        p.out_channels,
        p.in_channels,
        tiles,
    );
    WeightPlan::Winograd { tile, cut }
}

/// The filter gradient as a GEMM: `rows` output channels x `columns` (input channels x
/// taps), summing `depth` (images x output pixels).
struct WeightDims {
    rows: u32,
    columns: u32,
    depth: u32,
}

impl WeightDims {
    fn of(p: &ConvParams) -> WeightDims {
        // `Conv2dShape::params` checked that the products fit.
        WeightDims {
            rows: p.out_channels,
            columns: p.in_channels * p.kernel_h * p.kernel_w,
            depth: p.batch * p.out_h * p.out_w,
        }
    }
}

/// How the filter gradient's summed dimension (images x output pixels) is cut into slices,
/// so that a small filter over many pixels still gives every core work, for the instance
/// `blocking` that runs.
pub(crate) fn split_weight_grad(p: &ConvParams, blocking: impl Steps) -> Split {
    let d = WeightDims::of(p);
    Split::of(blocking, d.rows, d.columns, d.depth)
}

/// The tiles of `TILE` x `TILE` output pixels Winograd's filter gradient cuts `p`'s output
/// into.
pub(crate) fn winograd_tiles(p: &ConvParams) -> usize {
    let edge = kernels::TILE;
    p.batch as usize * p.out_h.div_ceil(edge) as usize * p.out_w.div_ceil(edge) as usize
}

/// Whether the input gradient is computed one stride phase at a time: for strided
/// convolutions without dilation (`conv_grad_input_phased`).
pub(crate) fn by_phases(p: &ConvParams) -> bool {
    (p.stride_h > 1 || p.stride_w > 1) && p.dilation_h == 1 && p.dilation_w == 1
}

/// Whether the input gradient is computed directly, every input channel of a pixel by one
/// invocation: for at most `FEW` input channels without dilation (`conv_grad_input_few`).
pub(crate) fn by_few_channels(p: &ConvParams) -> bool {
    p.in_channels <= kernels::FEW && p.dilation_h == 1 && p.dilation_w == 1
}

/// Whether a tensor-core pass of an output of `rows x columns`, summing `depth`, may run as a
/// stream in the blocking `b`: its (block, step) iterations are counted in `u32`.
pub(crate) fn streams(rows: u32, columns: u32, depth: u32, b: kernels::StreamBlocking) -> bool {
    let blocks = u64::from(rows.div_ceil(b.block)) * u64::from(columns.div_ceil(b.cols));
    blocks * u64::from(depth.div_ceil(b.depth())) <= u64::from(u32::MAX)
}

/// Whether a tensor-core pass of `p` may run over a staged window in the blocking `b`
/// (`kernels::conv_window_tile`): the forward or the input gradient of a convolution of
/// stride 1 whose summed channels are a multiple of the blocking's step, whose filter reaches
/// at most the window's spare positions past a position of the padded grid (and, staging
/// every tap's slice at once, has at most the blocking's slices of taps), and whose padded
/// grid's positions are counted in `u32`.
pub(crate) fn over_window(
    p: &ConvParams,
    direction: Direction,
    b: kernels::WindowBlocking,
) -> bool {
    let taps = match b.all_taps {
        0 => u64::MAX,
        _ => u64::from(b.slices),
    };
    let (depth, window, cols) = (b.depth, b.window(), b.cols());
    let (summed, result) = match direction {
        Direction::Forward => (p.in_channels, [p.out_h, p.out_w]),
        Direction::GradInput => (p.out_channels, [p.in_h, p.in_w]),
    };
    let reach = [
        u64::from(p.kernel_h - 1) * u64::from(p.dilation_h),
        u64::from(p.kernel_w - 1) * u64::from(p.dilation_w),
    ];
    let grid = [
        u64::from(result[0]) + reach[0],
        u64::from(result[1]) + reach[1],
    ];
    let positions = u64::from(p.batch) * grid[0] * grid[1] + u64::from(window);
    p.stride_h == 1
        && p.stride_w == 1
        && summed.is_multiple_of(depth)
        && u64::from(p.kernel_h) * u64::from(p.kernel_w) <= taps
        && reach[0] * grid[1] + reach[1] <= u64::from(window - cols)
        && positions <= u64::from(u32::MAX)
}

impl TapPlan {
    /// The kernels' parameters for the plan: `p` with the split's slices or the stream's
    /// workgroups.
    pub fn params(self, mut p: ConvParams) -> ConvParams {
        match self {
            TapPlan::ByTap {
                sum: Sum::Sliced(cut),
                ..
            } => (p.splits, p.split_depth) = (cut.splits, cut.depth),
            TapPlan::Stream(stream) => p.workers = stream.workers,
            TapPlan::ByTap { .. } | TapPlan::Window { .. } | TapPlan::AllTaps => {}
        }
        p
    }
}

impl WeightPlan {
    /// The kernels' parameters for the plan: `p` with the cut's slices or the stream's
    /// workgroups.
    pub fn params(self, mut p: ConvParams) -> ConvParams {
        match self {
            WeightPlan::F32 { cut, .. }
            | WeightPlan::Winograd { cut, .. }
            | WeightPlan::TensorCores { cut, .. } => {
                (p.splits, p.split_depth) = (cut.splits, cut.depth);
            }
            WeightPlan::Stream(stream) => p.workers = stream.workers,
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::{Conv2dShape, Padding};
    use crate::Activation;
    use kernels::{StreamTile, WindowBlocking};

    /// The blockings of a device that builds every kernel (`streams`: and runs streams).
    fn caps(streams: bool) -> Caps {
        Caps {
            f32: Blocked::new(Ok).unwrap(),
            tensor: Some(TapCaps {
                steps: Blocked::on_fragments(Ok).unwrap(),
                cuts: Blocked::on_fragments(Ok).unwrap(),
                window: Blocked::on_windows(Ok).unwrap(),
                all_taps: Some(WindowBlocking::ALL_TAPS_AT_ONCE),
                streams: Streams::new(Ok).unwrap().filter(|_| streams),
            }),
        }
    }

    fn weight_caps(streams: bool) -> WeightCaps {
        WeightCaps {
            f32: Blocked::new(Ok).unwrap(),
            winograd: Blocked::new(Ok).unwrap(),
            tensor: Some((
                Blocked::on_fragments(Ok).unwrap(),
                Streams::new(Ok).unwrap().filter(|_| streams),
            )),
        }
    }

    /// A square convolution: `n` images of `ci` channels `hw` wide, `co` filters `k` wide.
    fn square(n: u32, ci: u32, hw: u32, co: u32, k: u32) -> ConvParams {
        let shape = Conv2dShape::new(n, ci, [hw, hw], co, [k, k]).padding(Padding::uniform(k / 2));
        shape.params(Activation::None).unwrap()
    }

    const fn on(tile: FragmentTile, schedule: Schedule) -> ConvWay {
        ConvWay::TensorCores { tile, schedule }
    }

    const STREAM: Stream = Stream {
        tile: StreamTile::Square,
        workers: 132,
    };

    #[test]
    fn the_resnet_layers_run_over_a_window() {
        let p = square(32, 64, 56, 64, 3);
        let window = on(FragmentTile::Large, Schedule::Window { all_taps: false });
        let want = TensorPlan::OverTaps(TapPlan::Window {
            tile: FragmentTile::Large,
        });
        assert_eq!(
            forward(&p, window, &caps(true)),
            ForwardPlan::TensorCores(want)
        );
        assert_eq!(
            grad_input(&p, window, &caps(true)),
            InputPlan::TensorCores(want)
        );
        let all_taps = on(FragmentTile::Small, Schedule::Window { all_taps: true });
        let want = ForwardPlan::TensorCores(TensorPlan::OverTaps(TapPlan::AllTaps));
        assert_eq!(forward(&p, all_taps, &caps(true)), want);
        // A device without the window's workgroup memory runs it by taps.
        let mut small = caps(true);
        let tensor = small.tensor.as_mut().unwrap();
        (tensor.window, tensor.all_taps) = (None, None);
        let by_tap = TapPlan::ByTap {
            tile: FragmentTile::Small,
            sum: Sum::Whole,
        };
        let want = ForwardPlan::TensorCores(TensorPlan::OverTaps(by_tap));
        assert_eq!(forward(&p, all_taps, &small), want);
    }

    #[test]
    fn a_pass_runs_by_taps_only_where_the_summed_channels_fill_its_steps() {
        // 40 input channels are not a multiple of 32; 64 output channels are.
        let p = square(8, 40, 16, 64, 3);
        let by_tap = on(FragmentTile::Large, Schedule::ByTap { split: false });
        let gather = TensorPlan::Gather {
            tile: FragmentTile::Large,
            sum: Sum::Whole,
        };
        assert_eq!(
            forward(&p, by_tap, &caps(true)),
            ForwardPlan::TensorCores(gather)
        );
        let taps = TensorPlan::OverTaps(TapPlan::ByTap {
            tile: FragmentTile::Large,
            sum: Sum::Whole,
        });
        assert_eq!(
            grad_input(&p, by_tap, &caps(true)),
            InputPlan::TensorCores(taps)
        );
        // Nor does a window or a stream then.
        let window = on(FragmentTile::Large, Schedule::Window { all_taps: false });
        let split = TensorPlan::Gather {
            tile: FragmentTile::Large,
            sum: forward_sum(&p, FragmentTile::Large),
        };
        assert_eq!(
            forward(&p, window, &caps(true)),
            ForwardPlan::TensorCores(split)
        );
        let stream = ConvWay::Streamed(STREAM);
        let many = TensorPlan::Gather {
            tile: FragmentTile::Many,
            sum: Sum::Whole,
        };
        assert_eq!(
            forward(&p, stream, &caps(true)),
            ForwardPlan::TensorCores(many)
        );
    }

    /// The forward's sum in `tile` where the way allows slices.
    fn forward_sum(p: &ConvParams, tile: FragmentTile) -> Sum {
        let d = Dims::of(p, Direction::Forward);
        let blocking = *Blocked::on_fragments(Ok).unwrap().get(tile.pick());
        Sum::of(Split::of(blocking, d.rows, d.columns, d.depth), true)
    }

    #[test]
    fn a_small_output_with_a_long_sum_runs_in_slices_where_the_way_allows() {
        // 512@7 of one image: 49 columns, a sum of 4608.
        let p = square(1, 512, 7, 512, 3);
        let sum = forward_sum(&p, FragmentTile::Large);
        assert!(matches!(sum, Sum::Sliced(cut) if cut.splits > 1), "{sum:?}");
        let split = on(FragmentTile::Large, Schedule::ByTap { split: true });
        let want = TapPlan::ByTap {
            tile: FragmentTile::Large,
            sum,
        };
        let plan = forward(&p, split, &caps(true));
        assert_eq!(plan, ForwardPlan::TensorCores(TensorPlan::OverTaps(want)));
        let want = ForwardPlan::TensorCores(TensorPlan::OverTaps(TapPlan::ByTap {
            tile: FragmentTile::Large,
            sum: Sum::Whole,
        }));
        let whole = on(FragmentTile::Large, Schedule::ByTap { split: false });
        assert_eq!(forward(&p, whole, &caps(true)), want);
        // In f32 likewise.
        let f32 = ConvWay::F32 {
            tile: Tile::Large,
            split: true,
        };
        let plan = forward(&p, f32, &caps(true));
        assert!(
            matches!(
                plan,
                ForwardPlan::F32 {
                    tile: Tile::Large,
                    sum: Sum::Sliced(_)
                }
            ),
            "{plan:?}"
        );
    }

    #[test]
    fn a_stream_runs_where_the_device_runs_streams_and_by_taps_elsewhere() {
        let p = square(32, 128, 28, 128, 3);
        let stream = ConvWay::Streamed(STREAM);
        let want = ForwardPlan::TensorCores(TensorPlan::OverTaps(TapPlan::Stream(STREAM)));
        assert_eq!(forward(&p, stream, &caps(true)), want);
        let wide = Stream {
            tile: StreamTile::Wide,
            workers: 132,
        };
        let by_tap = |tile| {
            ForwardPlan::TensorCores(TensorPlan::OverTaps(TapPlan::ByTap {
                tile,
                sum: Sum::Whole,
            }))
        };
        assert_eq!(
            forward(&p, stream, &caps(false)),
            by_tap(FragmentTile::Many)
        );
        let wide_way = ConvWay::Streamed(wide);
        assert_eq!(
            forward(&p, wide_way, &caps(false)),
            by_tap(FragmentTile::Large)
        );
        assert_eq!(
            TapPlan::Stream(STREAM).params(p).workers,
            132,
            "the stream's workgroups reach its kernel"
        );
    }

    #[test]
    fn the_input_gradient_runs_directly_by_phases_or_as_the_forward() {
        let few = square(8, 3, 32, 64, 3);
        let way = ConvWay::fixed(64);
        assert_eq!(grad_input(&few, way, &caps(true)), InputPlan::Few);
        let strided = Conv2dShape::new(8, 64, [32, 32], 64, [3, 3])
            .stride([2, 2])
            .params(Activation::None)
            .unwrap();
        let gather = ConvWay::fixed_gather(64);
        let want = InputPlan::PhasedOnTensorCores {
            tile: FragmentTile::Small,
        };
        assert_eq!(grad_input(&strided, gather, &caps(true)), want);
        let f32 = Caps {
            tensor: None,
            ..caps(true)
        };
        let want = InputPlan::Phased { tile: Tile::Small };
        assert_eq!(grad_input(&strided, gather, &f32), want);
        let p = square(32, 64, 56, 64, 3);
        let plan = grad_input(&p, ConvWay::fixed(64), &f32);
        assert!(plan.in_family(), "{plan:?}");
        assert!(!InputPlan::Few.in_family());
    }

    #[test]
    fn the_filter_gradient_runs_by_taps_where_its_blocks_cover_one_tap() {
        // 64 input channels fill the small blocks' 64 columns, not the large ones' 128.
        let p = square(32, 64, 56, 64, 3);
        let caps = weight_caps(true);
        let plan = |tile| grad_weight(&p, WeightWay::TensorCores { tile, by_tap: true }, &caps);
        assert!(matches!(
            plan(FragmentTile::Small),
            WeightPlan::TensorCores { by_tap: true, .. }
        ));
        assert!(matches!(
            plan(FragmentTile::Large),
            WeightPlan::TensorCores { by_tap: false, .. }
        ));
        let stream = WeightWay::Streamed(STREAM);
        assert_eq!(grad_weight(&p, stream, &caps), WeightPlan::Stream(STREAM));
        let fallback = grad_weight(&p, stream, &weight_caps(false));
        assert!(
            matches!(
                fallback,
                WeightPlan::TensorCores {
                    tile: FragmentTile::Many,
                    by_tap: false,
                    ..
                }
            ),
            "{fallback:?}"
        );
        // The plan's cut reaches the kernel's parameters.
        let small = Blocked::on_fragments(Ok).unwrap().small;
        let cut = split_weight_grad(&p, small);
        let params = plan(FragmentTile::Small).params(p);
        assert_eq!((params.splits, params.split_depth), (cut.splits, cut.depth));
    }

    #[test]
    fn ways_on_the_tensor_cores_run_in_f32_on_a_device_without_them() {
        let p = square(32, 64, 56, 64, 3);
        let f32 = Caps {
            tensor: None,
            ..caps(true)
        };
        let way = on(FragmentTile::Many, Schedule::Gather { split: false });
        let want = ForwardPlan::F32 {
            tile: Tile::Large,
            sum: Sum::Whole,
        };
        assert_eq!(forward(&p, way, &f32), want);
        let way = WeightWay::TensorCores {
            tile: FragmentTile::Small,
            by_tap: true,
        };
        let caps = WeightCaps {
            tensor: None,
            ..weight_caps(true)
        };
        assert!(matches!(
            grad_weight(&p, way, &caps),
            WeightPlan::F32 {
                tile: Tile::Small,
                ..
            }
        ));
    }

    #[test]
    fn a_window_tap_by_tap_steps_as_the_tensor_blockings_do() {
        // Why a window needs no check of the taps' guard of its own (`tensor_plan`).
        let steps = Blocked::on_fragments(Ok).unwrap();
        for window in [
            WindowBlocking::tap_by_tap(128, 512),
            WindowBlocking::tap_by_tap(64, 256),
        ] {
            for tile in [FragmentTile::Large, FragmentTile::Small, FragmentTile::Many] {
                assert!(window.depth.is_multiple_of(steps.get(tile.pick()).depth()));
            }
        }
    }
}
