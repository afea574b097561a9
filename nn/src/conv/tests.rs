//! The op's host code under test: which passes run over a window or as streams, the
//! filter copies of the passes by taps, and the streams against the passes whole.

use super::filter_gradient::{WeightBuffers, WeightPass};
use super::forward::ForwardBuffers;
use super::input_gradient::InputBuffers;
use super::plan::{over_window, streams, Direction::*};
use super::*;
use crate::tune::{ConvWay, FragmentTile, WeightWay};
use crate::Padding;
use tessera::half::f16;

#[test]
fn passes_run_over_a_window_where_the_filter_reaches_at_most_128_positions() {
    let params = |shape: Conv2dShape| shape.params(Activation::None).unwrap();
    let (by_tap, all) = (
        kernels::WindowBlocking::tap_by_tap(128, 512),
        kernels::WindowBlocking::ALL_TAPS_AT_ONCE,
    );
    let square = |n, ci, hw, co, k, stride, pad| {
        Conv2dShape::new(n, ci, [hw, hw], co, [k, k])
            .stride([stride, stride])
            .padding(Padding::uniform(pad))
    };
    // The ResNet layers: a 3 x 3 filter reaches 2 rows of the padded grid and 2 more.
    for (hw, channels) in [(56, 64), (28, 128), (14, 256), (7, 512)] {
        let p = params(square(32, channels, hw, channels, 3, 1, 1));
        assert!(
            over_window(&p, Forward, by_tap) && over_window(&p, GradInput, by_tap),
            "{hw}"
        );
    }
    // 3 x 3 over outputs 61 wide reaches 2 * 63 + 2 = 128 positions; 62 wide, 130.
    let p = params(Conv2dShape::new(1, 32, [4, 63], 32, [3, 3]));
    assert!(over_window(&p, Forward, by_tap) && !over_window(&p, GradInput, by_tap));
    let p = params(Conv2dShape::new(1, 32, [4, 64], 32, [3, 3]));
    assert!(!over_window(&p, Forward, by_tap));
    // Dilation widens the reach: 2 * 2 * (9 + 4) + 4 = 56.
    let dilated = square(2, 64, 9, 64, 3, 1, 2).dilation([2, 2]);
    assert!(over_window(&params(dilated), Forward, by_tap));
    // Strided passes, and summed channels that are not a multiple of 32, do not.
    assert!(!over_window(
        &params(square(2, 64, 9, 64, 3, 2, 1)),
        Forward,
        by_tap
    ));
    let p = params(square(2, 40, 8, 72, 3, 1, 1));
    assert!(!over_window(&p, Forward, by_tap) && !over_window(&p, GradInput, by_tap));
    let p = params(square(2, 64, 8, 72, 3, 1, 1));
    assert!(over_window(&p, Forward, by_tap) && !over_window(&p, GradInput, by_tap));
    // Every tap's filter slice at once: the ResNet layers, summed channels a multiple of
    // 16, filters of at most 9 taps.
    for (hw, channels) in [(56, 64), (28, 128), (14, 256), (7, 512)] {
        let p = params(square(32, channels, hw, channels, 3, 1, 1));
        assert!(
            over_window(&p, Forward, all) && over_window(&p, GradInput, all),
            "{hw}"
        );
    }
    let p = params(square(2, 48, 8, 40, 3, 1, 1));
    assert!(over_window(&p, Forward, all) && !over_window(&p, GradInput, all));
    assert!(!over_window(&p, Forward, by_tap));
    let p = params(square(2, 64, 8, 64, 5, 1, 2));
    assert!(!over_window(&p, Forward, all) && over_window(&p, Forward, by_tap));
    let p = params(Conv2dShape::new(1, 32, [4, 64], 32, [3, 3]));
    assert!(!over_window(&p, Forward, all));
}

#[test]
fn a_pass_streams_only_where_its_iterations_are_counted_in_u32() {
    let [square, wide, long] = [(128, 128), (256, 128), (128, 256)]
        .map(|(block, cols)| kernels::StreamBlocking { block, cols });
    assert_eq!(kernels::StreamBlocking::ALL, [square, wide, long]);
    assert_eq!((square.depth(), square.invocations()), (32, 512));
    // 128@28: 196 blocks of 36 steps.
    assert!(streams(128, 32 * 28 * 28, 128 * 9, square));
    // 2^16 blocks of 128 positions, of 2^16 - 1 steps: the most iterations `u32` counts,
    // less 2^16; one step more is 2^32.
    assert!(streams(128, 1 << 23, 32 * 65535, square));
    assert!(!streams(128, 1 << 23, 32 * 65536, square));
    // The oblong blocks hold twice the outputs: 256 rows make the same 2^16 blocks.
    for oblong in [wide, long] {
        assert!(streams(256, 1 << 23, 32 * 65535, oblong));
        assert!(!streams(256, 1 << 23, 32 * 65536, oblong));
    }
}

/// A filter of `co` output and `ci` input channels and `kh` x `kw` taps, numbered, on the
/// device; its shape's parameters; and element (`o`, `i`, `r`, `c`) of it on the host.
fn numbered_filter(
    rt: &Runtime,
    co: usize,
    ci: usize,
    [kh, kw]: [usize; 2],
) -> (
    GpuBuffer<f32>,
    kernels::ConvParams,
    impl Fn(usize, usize, usize, usize) -> f32,
) {
    let shape = Conv2dShape::new(1, ci as u32, [6, 6], co as u32, [kh as u32, kw as u32])
        .padding(Padding::uniform(1));
    let p = shape.params(Activation::None).unwrap();
    let values: Vec<f32> = (0..co * ci * kh * kw).map(|i| i as f32).collect();
    let w = rt.upload(&values).unwrap();
    let at = move |o, i, r, c| values[((o * ci + i) * kh + r) * kw + c];
    (w, p, at)
}

/// The filters the copies' tests lay out: taps of every size differing from the
/// channels', fewer than `kernels::COPY_TAPS`, as many, and more (two rounds and part of a
/// third), one tap.
const COPIED_FILTERS: [[usize; 2]; 4] = [[3, 2], [3, 3], [4, 5], [1, 1]];

/// The tensor-core forward's filter layout, on any device with `f16` (lavapipe
/// included): element (output channel, tap row, tap column, input channel) of `w`, as a
/// half, at that position of the result, for filters whose every size differs.
#[test]
fn weights_by_tap_put_each_filter_tap_outermost() {
    let rt = Runtime::new().unwrap();
    let (co, ci) = (3, 5);
    let kernel = kernels::ConvWeightsByTap::new(&rt).unwrap();
    for [kh, kw] in COPIED_FILTERS {
        let (w, p, at) = numbered_filter(&rt, co, ci, [kh, kw]);
        let mut w_by_tap = rt.zeros::<f16>(w.len()).unwrap();
        let args = kernels::ConvWeightsByTapArgs {
            p: &p,
            w: &w,
            w_by_tap: &mut w_by_tap,
        };
        kernel.launch(&rt, args).unwrap();
        let mut want = Vec::new();
        for o in 0..co {
            for r in 0..kh {
                for c in 0..kw {
                    for i in 0..ci {
                        want.push(f16::from_f32(at(o, i, r, c)));
                    }
                }
            }
        }
        assert_eq!(w_by_tap.read(&rt).unwrap(), want, "{kh} x {kw}");
    }
}

/// The tensor-core input gradient's filter layout: element (input channel, tap row, tap
/// column, output channel) of `w`, as a half, at that position, for channels that fill
/// one tile of the copy and part of the next (and values past 2048, which `f16` rounds).
#[test]
fn weights_transposed_by_tap_put_input_channels_outermost() {
    let rt = Runtime::new().unwrap();
    let (co, ci) = (20, 18);
    let kernel = kernels::ConvWeightsTransposedByTap::new(&rt).unwrap();
    for [kh, kw] in COPIED_FILTERS {
        let (w, p, at) = numbered_filter(&rt, co, ci, [kh, kw]);
        let mut w_transposed = rt.zeros::<f16>(w.len()).unwrap();
        let args = kernels::ConvWeightsTransposedByTapArgs {
            p: &p,
            w: &w,
            w_transposed: &mut w_transposed,
        };
        kernel.launch(&rt, args).unwrap();
        let mut want = Vec::new();
        for i in 0..ci {
            for r in 0..kh {
                for c in 0..kw {
                    for o in 0..co {
                        want.push(f16::from_f32(at(o, i, r, c)));
                    }
                }
            }
        }
        assert_eq!(w_transposed.read(&rt).unwrap(), want, "{kh} x {kw}");
    }
}

/// The streams' schedule and hand-over of parts (`kernels::test_models::stream_schedule_model`), on any
/// device: every blocking, over 136 output channels (ragged blocks of 128 and 256 rows) of
/// 3 images of 10 x 10 (ragged blocks of 128 and 256 columns), summing 64 channels x 9
/// taps; by 1 workgroup (every block whole), 3 and 4 (whole blocks, then the rest in
/// parts), 5, 7, 13 and 40 (every block in parts, some ranges over three blocks) and 500
/// (more than there are iterations). Each runs twice on the same counts, which must be
/// back at zero after each.
#[test]
fn stream_schedules_add_up_every_part_of_every_block() {
    let rt = Runtime::new().unwrap();
    let shape = Conv2dShape::new(3, 64, [10, 10], 136, [3, 3]).padding(Padding::uniform(1));
    let mut p = shape.params(Activation::None).unwrap();
    let len = shape.output_len().unwrap();
    let bias: Vec<f32> = (0..136).map(|c| c as f32).collect();
    let bias_buffer = rt.upload(&bias).unwrap();
    let mut arrivals = rt.zeros::<u32>(500).unwrap();
    for &blocking in kernels::StreamBlocking::ALL {
        let model =
            kernels::test_models::StreamScheduleModel::with_constants(&rt, blocking).unwrap();
        let steps = 64 * 9 / blocking.depth();
        let sum = (steps * (steps + 1) / 2) as f32;
        for workers in [1, 3, 4, 5, 7, 13, 40, 500] {
            p.workers = workers;
            let mut partial = rt.zeros(blocking.partials(workers)).unwrap();
            for round in 0..2 {
                let (mut pre, mut y) = (rt.zeros(len).unwrap(), rt.zeros(len).unwrap());
                let args = kernels::test_models::StreamScheduleModelArgs {
                    p: &p,
                    bias: &bias_buffer,
                    partial: &mut partial,
                    arrivals: &mut arrivals,
                    pre: &mut pre,
                    y: &mut y,
                };
                model.launch(&rt, args).unwrap();
                let at = |i: usize| bias[i / 100 % 136] + sum;
                let want: Vec<f32> = (0..len).map(at).collect();
                let case = format!("{blocking:?}, {workers} workers, round {round}");
                assert_eq!(pre.read(&rt).unwrap(), want, "pre, {case}");
                assert_eq!(y.read(&rt).unwrap(), want, "y, {case}");
                let counts = arrivals.read(&rt).unwrap();
                let left: Vec<(usize, &u32)> =
                    counts.iter().enumerate().filter(|(_, &c)| c != 0).collect();
                assert!(left.is_empty(), "{case}: counts left {left:?}");
            }
        }
    }
}

/// Records the forward, the input gradient and the filter gradient of `p` run `ways`,
/// from `x`, `w`, `bias` and `grad_pre` into `pre`, `y`, `grad_x` and `grad_w`.
fn record_passes(
    conv: &Convolution,
    batch: &mut Batch<'_>,
    (way, weight): (ConvWay, WeightWay),
    p: kernels::ConvParams,
    [x, w, bias, grad_pre]: [&GpuBuffer<f32>; 4],
    [pre, y, grad_x, grad_w]: [&mut GpuBuffer<f32>; 4],
) {
    let io = ForwardBuffers { x, w, bias, pre, y };
    conv.forward_way(batch, way, p, io).unwrap();
    let io = InputBuffers {
        w,
        grad_pre,
        grad_x,
    };
    conv.grad_input_way(batch, way, p, io).unwrap();
    let io = WeightBuffers {
        x,
        grad_pre,
        grad_w,
    };
    (conv.weight_pass(batch, WeightPass::Record, weight, p, io)).unwrap();
}

/// Every pass as a stream of workgroups against the same pass not streamed (the forward
/// and the input gradient by taps whole), on a device with tensor cores, in every stream
/// blocking. 160 -> 96 channels over 3 images of 10 x 10: the forward ragged blocks of 45
/// steps (3 of 128 x 128 or 256 x 128, 2 of 128 x 256), the input gradient of 27 (6, 3
/// and 4), the filter gradient 96 x 1440 of 10, the last 12 deep (12, 12 and 6). Run by one
/// workgroup (every block whole); by 2, 4 and 5, whole blocks first where there are as
/// many, then the rest in parts; by 7 and 13, every block in parts, some ranges over
/// three blocks; by 100, an iteration or two each; by more than there are iterations.
/// The streams run one after another on the same counts, so a count left above zero
/// would show as a block nobody finished.
#[test]
fn passes_as_streams_match_the_passes_whole() {
    let rt = Runtime::new().unwrap();
    let tensor = match Convolution::with_precision(&rt, Precision::TensorCoreF16) {
        Err(tessera::Error::MissingFeature { .. }) => return,
        built => built.unwrap(),
    };
    let shape = Conv2dShape::new(3, 160, [10, 10], 96, [3, 3]).padding(Padding::uniform(1));
    let p = shape.params(Activation::Relu).unwrap();
    let wave =
        |len: usize, f: f32| -> Vec<f32> { (0..len).map(|i| (i as f32 * f).sin() * 0.5).collect() };
    let up = |v: &[f32]| rt.upload(v).unwrap();
    let len = shape.output_len().unwrap();
    let x = up(&wave(shape.input_len(), 0.37));
    let w = up(&wave(shape.weight_len(), 0.11));
    let bias = up(&wave(96, 0.7));
    let grad_pre = up(&wave(len, 0.23));
    let zeros = |len: usize| rt.zeros::<f32>(len).unwrap();
    // pre, y, grad_x and grad_w, and the kernels that ran.
    let run = |way: ConvWay, weight: WeightWay| {
        let (mut pre, mut y, mut grad_x) = (zeros(len), zeros(len), zeros(shape.input_len()));
        let mut grad_w = zeros(shape.weight_len());
        let mut batch = rt.batch();
        let ways = (way, weight);
        let inputs = [&x, &w, &bias, &grad_pre];
        let outputs = [&mut pre, &mut y, &mut grad_x, &mut grad_w];
        record_passes(&tensor, &mut batch, ways, p, inputs, outputs);
        let ran: Vec<String> = (batch.submit_timed().unwrap().dispatches.into_iter())
            .map(|(label, _)| label)
            .collect();
        // Each stream leaves its counts of the shared blocks' parts as it found them.
        let mut arrivals = tensor.arrivals.lock();
        let arrivals = arrivals.at_least(&rt, 1).unwrap().read(&rt).unwrap();
        assert!(arrivals.iter().all(|&count| count == 0), "{arrivals:?}");
        let [pre, y, grad_x, grad_w] = [pre, y, grad_x, grad_w].map(|b| b.read(&rt).unwrap());
        ([pre, y, grad_x, grad_w], ran)
    };
    let (tile, schedule) = (FragmentTile::Many, tune::Schedule::ByTap { split: false });
    let by_tap = ConvWay::TensorCores { tile, schedule };
    let (want, _) = run(by_tap, WeightWay::TensorCores { tile, by_tap: true });
    let blockings = [
        (kernels::StreamTile::Square, "block128_cols128"),
        (kernels::StreamTile::Wide, "block256_cols128"),
        (kernels::StreamTile::Long, "block128_cols256"),
    ];
    for ((blocking, blocks), workers) in blockings
        .into_iter()
        .flat_map(|b| [1, 2, 4, 5, 7, 13, 100, 500].map(|workers| (b, workers)))
    {
        let stream = tune::Stream {
            tile: blocking,
            workers,
        };
        let (got, ran) = run(ConvWay::Streamed(stream), WeightWay::Streamed(stream));
        for pass in ["forward", "grad_input"] {
            let stream =
                format!("conv_{pass}_fragments_by_tap_streamed_{blocks}_kernel_h3_kernel_w3");
            assert!(ran.contains(&stream), "{stream} not in {ran:?}");
        }
        let stream = format!("conv_grad_weight_fragments_streamed_{blocks}");
        assert!(ran.contains(&stream), "{stream} not in {ran:?}");
        for (name, (got, want)) in ["pre", "y", "grad_x", "grad_w"]
            .into_iter()
            .zip(got.iter().zip(&want))
        {
            let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                let close = (g - w).abs() <= 1e-5 * scale;
                let case = format!("{blocks}, {workers} workers");
                assert!(close, "{name}[{i}] in {case}: {g} against {w}");
            }
        }
    }
}
