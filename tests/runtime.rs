//! The runtime on a real adapter: buffer round trips, hand-written WGSL dispatched over many
//! workgroups, batches, timing, the pipeline cache, and each error as its value.

mod common;

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::runtime;
use tessera::{
    size_bucket, source_hash, Arg, Autotune, BindingKind, Error, GpuBuffer, PipelineDesc, Runtime,
    TimingSource, TuneKey, Tuned,
};

const SCALE_AND_SHIFT: &str = "
struct Params { scale: f32, shift: f32, n: u32, row: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn scale_and_shift(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y * p.row + id.x;
    if id.x < p.row && i < p.n { y[i] = x[i] * p.scale + p.shift; }
}

@compute @workgroup_size(64)
fn scale_in_place(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y * p.row + id.x;
    if id.x < p.row && i < p.n { y[i] = y[i] * p.scale + p.shift; }
}

@compute @workgroup_size(64)
fn square_in_place(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y * p.row + id.x;
    if id.x < p.row && i < p.n { y[i] = y[i] * y[i]; }
}
";

const BINDINGS: [BindingKind; 3] = [
    BindingKind::ReadOnlyStorage,
    BindingKind::ReadWriteStorage,
    BindingKind::Uniform,
];

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    scale: f32,
    shift: f32,
    n: u32,
    row: u32,
}

fn round_trip<T: bytemuck::Pod + PartialEq + std::fmt::Debug>(rt: &Runtime, data: &[T]) {
    let buffer = rt.upload(data).unwrap();
    assert_eq!(buffer.len(), data.len());
    assert_eq!(
        buffer.read(rt).unwrap(),
        data,
        "round trip of {} x {}",
        data.len(),
        std::any::type_name::<T>()
    );
}

#[test]
fn buffers_round_trip_every_element_type_and_length() {
    let rt = runtime();
    for len in [0usize, 1, 3, 7, 1000, 1 << 20] {
        round_trip(
            &rt,
            &(0..len).map(|i| i as f32 * 0.5 - 3.0).collect::<Vec<_>>(),
        );
        round_trip(
            &rt,
            &(0..len).map(|i| i as u32 ^ 0xdead_beef).collect::<Vec<_>>(),
        );
        round_trip(&rt, &(0..len).map(|i| -(i as i32)).collect::<Vec<_>>());
        round_trip(&rt, &(0..len).map(|i| i as u8).collect::<Vec<_>>());
        round_trip(&rt, &(0..len).map(|i| i as u16).collect::<Vec<_>>());
        round_trip(
            &rt,
            &(0..len).map(|i| [i as f32, 1.0, 2.0]).collect::<Vec<_>>(),
        );
    }
}

#[test]
fn zeroed_buffers_read_back_as_zeros() {
    let rt = runtime();
    for len in [0usize, 1, 5, 4097] {
        let zeros = rt.zeros::<f32>(len).unwrap();
        assert_eq!(zeros.len(), len);
        assert_eq!(zeros.is_empty(), len == 0);
        assert_eq!(zeros.read(&rt).unwrap(), vec![0.0; len]);
    }
}

#[test]
fn write_overwrites_and_checks_length() {
    let rt = runtime();
    let mut buffer = GpuBuffer::from_slice(&rt, &[1u8, 2, 3]).unwrap();
    buffer.write(&rt, &[7, 8, 9]).unwrap();
    assert_eq!(buffer.read(&rt).unwrap(), vec![7, 8, 9]);
    let error = buffer.write(&rt, &[1, 2]).unwrap_err();
    assert!(
        matches!(
            error,
            Error::LengthMismatch {
                expected: 3,
                given: 2
            }
        ),
        "{error}"
    );
    assert_eq!(
        buffer.read(&rt).unwrap(),
        vec![7, 8, 9],
        "a rejected write must change nothing"
    );
}

/// Ranges of every alignment against a host copy: reads, writes, copies, fills and clears of
/// elements of 1, 2, 4 and 12 bytes, at the start, the middle, the end and empty.
fn ranges_match_a_host_model<T>(rt: &Runtime, make: impl Fn(usize) -> T)
where
    T: bytemuck::Pod + PartialEq + std::fmt::Debug,
{
    let len = 11;
    let mut model: Vec<T> = (0..len).map(&make).collect();
    let mut buffer = rt.upload_labeled("model", &model).unwrap();
    let mut other = rt.zeros_labeled::<T>("other", len + 2).unwrap();
    let mut other_model: Vec<T> = vec![T::zeroed(); len + 2];
    let ty = std::any::type_name::<T>();
    for (start, end) in [
        (0, 0),
        (0, 1),
        (1, 2),
        (1, 4),
        (3, 11),
        (10, 11),
        (0, 11),
        (5, 5),
    ] {
        assert_eq!(
            buffer.read_range(rt, start..end).unwrap(),
            model[start..end],
            "read {start}..{end} of {ty}"
        );
        let values: Vec<T> = (start..end).map(|i| make(100 + i)).collect();
        buffer.write_range(rt, start, &values).unwrap();
        model[start..end].copy_from_slice(&values);
        assert_eq!(
            buffer.read(rt).unwrap(),
            model,
            "write {start}..{end} of {ty}"
        );
        for to in [0, 1, 2] {
            other.copy_range_from(rt, &buffer, start..end, to).unwrap();
            other_model[to..to + end - start].copy_from_slice(&model[start..end]);
            assert_eq!(
                other.read(rt).unwrap(),
                other_model,
                "copy {start}..{end} to {to} of {ty}"
            );
        }
    }
    assert_eq!(buffer.read_range(rt, 4..=6).unwrap(), model[4..=6]);
    assert_eq!(buffer.read_range(rt, 7..).unwrap(), model[7..]);
    buffer.fill(rt, make(7)).unwrap();
    assert_eq!(buffer.read(rt).unwrap(), vec![make(7); len], "fill of {ty}");
    buffer.clear(rt).unwrap();
    assert_eq!(
        buffer.read(rt).unwrap(),
        vec![T::zeroed(); len],
        "clear of {ty}"
    );
    let mut copy = rt.zeros::<T>(len).unwrap();
    copy.copy_from(rt, &buffer).unwrap();
    assert_eq!(copy.read(rt).unwrap(), vec![T::zeroed(); len]);
    assert_eq!((buffer.label(), copy.label()), ("model", "tessera buffer"));
}

#[test]
fn buffers_read_write_copy_fill_and_clear_any_range() {
    let rt = runtime();
    ranges_match_a_host_model(&rt, |i| i as u8 ^ 0x5a);
    ranges_match_a_host_model(&rt, |i| half::f16::from_f32(i as f32 - 4.5));
    ranges_match_a_host_model(&rt, |i| i as f32 * 0.25 - 1.0);
    ranges_match_a_host_model(&rt, |i| [i as u32, 7, !(i as u32)]);
}

#[test]
fn ranges_past_the_end_are_errors_that_change_nothing() {
    let rt = runtime();
    let mut x = rt.upload_labeled("x", &[1u32, 2, 3]).unwrap();
    let y = rt.upload(&[9u32; 5]).unwrap();
    let out_of_bounds = |error: Error| {
        assert!(
            matches!(
                error,
                Error::RangeOutOfBounds { len: 3, .. } | Error::RangeOutOfBounds { len: 5, .. }
            ),
            "{error}"
        );
        error.to_string()
    };
    assert_eq!(
        out_of_bounds(x.read_range(&rt, 2..4).unwrap_err()),
        "elements 2..4 are not within the buffer `x` of 3 elements; ranges end at most at the \
         buffer's length"
    );
    out_of_bounds(x.write_range(&rt, 2, &[5, 6]).unwrap_err());
    out_of_bounds(x.copy_range_from(&rt, &y, 0..2, 2).unwrap_err());
    out_of_bounds(x.copy_range_from(&rt, &y, 4..6, 0).unwrap_err());
    #[allow(clippy::reversed_empty_ranges)]
    out_of_bounds(x.read_range(&rt, 2..1).unwrap_err());
    assert!(matches!(
        x.copy_from(&rt, &y).unwrap_err(),
        Error::LengthMismatch {
            expected: 3,
            given: 5
        }
    ));
    assert_eq!(
        x.read(&rt).unwrap(),
        [1, 2, 3],
        "a refused operation changes nothing"
    );
}

/// A minimal executor: polls `future` on this thread, which sleeps until the future's waker
/// is called. Returns the output and how many times the future was polled.
fn block_on<F: Future>(future: F) -> (F::Output, usize) {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    for polls in 1.. {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return (output, polls);
        }
        std::thread::park();
    }
    unreachable!()
}

/// The output of `future`, which must be `Send` (so that a multi-threaded executor can run
/// it) and must not poll itself in a busy loop.
fn run<F: Future + Send>(future: F) -> F::Output {
    let (output, polls) = block_on(future);
    assert!(polls <= 8, "polled {polls} times");
    output
}

#[test]
fn read_async_returns_the_data() {
    let rt = runtime();
    let data: Vec<u32> = (0..12345).collect();
    let buffer = rt.upload(&data).unwrap();
    assert_eq!(pollster::block_on(buffer.read_async(&rt)).unwrap(), data);
    assert_eq!(run(buffer.read_async(&rt)).unwrap(), data);
}

#[test]
fn async_submissions_and_reads_give_what_the_blocking_ones_give() {
    let rt = runtime();
    let scale = scale_pipeline(&rt, "scale_and_shift");
    let square = scale_pipeline(&rt, "square_in_place");
    let (xs, x, mut y, p) = scale_inputs(&rt);
    let grid = [p.row.div_ceil(64), 200, 1];
    let mut batch = rt.batch();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &p), grid)
        .unwrap();
    run(batch.submit_async()).unwrap();
    let scaled: Vec<f32> = xs.iter().map(|v| v * 1.5 - 2.0).collect();
    assert_eq!(run(y.read_async(&rt)).unwrap(), scaled);
    assert_eq!(y.read(&rt).unwrap(), scaled);
    assert_eq!(
        run(y.read_range_async(&rt, 7..1000)).unwrap(),
        scaled[7..1000]
    );
    assert_eq!(y.read_range(&rt, 7..1000).unwrap(), scaled[7..1000]);

    // The copy is issued when `read_async` is called: it sees the dispatch queued before, not
    // the one queued after, however late the future is polled.
    rt.dispatch(&square, &scale_args(&x, &mut y, &p), grid)
        .unwrap();
    let squared: Vec<f32> = scaled.iter().map(|v| v * v).collect();
    let pending = y.read_async(&rt);
    let pending_range = y.read_range_async(&rt, 1..3);
    let (blocking, ranged) = (y.read(&rt).unwrap(), y.read_range(&rt, 1..3).unwrap());
    // `y` is borrowed by the pending reads: bound raw, as an application might.
    let after = [
        Arg::read(&x),
        Arg::read_write_raw(y.raw()),
        Arg::uniform(&p),
    ];
    rt.dispatch(&square, &after, grid).unwrap();
    run(rt.flush_async()).unwrap();
    run(rt.wait_async()).unwrap();
    assert_eq!(run(pending).unwrap(), blocking);
    assert_eq!(blocking, squared);
    assert_eq!(run(pending_range).unwrap(), ranged);

    // Elements smaller than the words wgpu copies, at every alignment.
    let bytes: Vec<u8> = (0..=250).collect();
    let small = rt.upload(&bytes).unwrap();
    for (start, end) in [(0, 1), (1, 2), (3, 9), (250, 251), (5, 5)] {
        assert_eq!(
            run(small.read_range_async(&rt, start..end)).unwrap(),
            small.read_range(&rt, start..end).unwrap(),
            "{start}..{end}"
        );
    }

    // Errors found before the copy come out of the future; the buffer is unchanged.
    let error = run(small.read_range_async(&rt, 250..252)).unwrap_err();
    assert!(matches!(error, Error::RangeOutOfBounds { .. }), "{error}");
    assert_eq!(run(small.read_async(&rt)).unwrap(), bytes);

    // A rejected submission is reported by the async form as by the blocking one.
    let fixed = rt
        .pipeline(&PipelineDesc::new(
            "@group(0) @binding(0) var<storage, read_write> y: array<f32, 4>;
             @compute @workgroup_size(1) fn fixed() { y[0] = 1.0; }",
            "fixed",
            &[BindingKind::ReadWriteStorage],
        ))
        .unwrap();
    let mut short = rt.zeros::<f32>(2).unwrap();
    let mut batch = rt.batch();
    batch
        .dispatch(&fixed, &[Arg::read_write(&mut short)], [1, 1, 1])
        .unwrap();
    let error = run(batch.submit_async()).unwrap_err();
    assert!(
        matches!(&error, Error::Validation { operation, .. } if operation.contains("`fixed`")),
        "{error}"
    );
    assert_eq!(run(short.read_async(&rt)).unwrap(), [0.0; 2]);
}

#[test]
fn async_timed_batches_time_what_the_blocking_ones_time() {
    let rt = runtime();
    let scale = scale_pipeline(&rt, "scale_and_shift");
    let square = scale_pipeline(&rt, "square_in_place");
    let (xs, x, mut y, p) = scale_inputs(&rt);
    let grid = [p.row.div_ceil(64), 200, 1];
    let scaled: Vec<f32> = xs.iter().map(|v| v * 1.5 - 2.0).collect();
    let squared: Vec<f32> = scaled.iter().map(|v| v * v).collect();
    for (profiled, asynchronous) in [(false, false), (false, true), (true, false), (true, true)] {
        // Issued before the batch: submitted first, untimed, and seen by the batch.
        rt.dispatch(&scale, &scale_args(&x, &mut y, &p), grid)
            .unwrap();
        let mut batch = rt.batch();
        batch
            .dispatch(&square, &scale_args(&x, &mut y, &p), grid)
            .unwrap();
        let timing = match (profiled, asynchronous) {
            (false, false) => batch.submit_timed(),
            (false, true) => run(batch.submit_timed_async()),
            (true, false) => batch.submit_profiled(),
            (true, true) => run(batch.submit_profiled_async()),
        }
        .unwrap();
        let case = format!("profiled {profiled}, async {asynchronous}: {timing:?}");
        assert_eq!(timing.dispatches.len(), 1, "{case}");
        assert_eq!(timing.dispatches[0].0, "square_in_place", "{case}");
        let gpu = timing.source == TimingSource::GpuTimestamps;
        assert_eq!(gpu, rt.info().has_timestamps(), "{case}");
        assert_eq!(timing.dispatches[0].1.is_some(), gpu && profiled, "{case}");
        assert!(timing.total > std::time::Duration::ZERO, "{case}");
        assert_eq!(y.read(&rt).unwrap(), squared, "{case}");
    }
    // An empty batch times nothing, and still submits what was issued before it.
    rt.dispatch(&scale, &scale_args(&x, &mut y, &p), grid)
        .unwrap();
    let timing = run(rt.batch().submit_timed_async()).unwrap();
    assert!(timing.dispatches.is_empty(), "{timing:?}");
    assert_eq!(read_submitted(&rt, &y), scaled);
}

/// `buffer` as the GPU holds it once what the runtime has submitted so far has run, read
/// through wgpu alone: without submitting the dispatches queued on the runtime.
fn read_submitted(app: &Runtime, buffer: &GpuBuffer<f32>) -> Vec<f32> {
    use tessera::wgpu;
    let (device, size) = (app.device(), buffer.raw().size());
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer.raw(), 0, &staging, 0, size);
    // `app` is another runtime on the same device and queue: this submits nothing of `rt`'s.
    app.queue().submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |mapped| mapped.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let values = bytemuck::cast_slice(&staging.get_mapped_range(..).unwrap()).to_vec();
    values
}

/// The issue: a batch forgotten with `mem::forget` never ran its `Drop`, and the runtime
/// never submitted its queue on its own again.
#[test]
fn a_forgotten_batch_does_not_hold_back_the_runtime() {
    let app = runtime();
    let rt = Runtime::from_wgpu(app.device().clone(), app.queue().clone());
    let add_one = scale_pipeline(&rt, "scale_in_place");
    let x = rt.zeros::<f32>(4).unwrap();
    let mut y = rt.zeros::<f32>(4).unwrap();
    let p = Params {
        scale: 1.0,
        shift: 1.0,
        n: 4,
        row: 4,
    };
    let forget_a_batch = |y: &mut GpuBuffer<f32>| {
        let mut batch = rt.batch();
        batch
            .dispatch(&add_one, &scale_args(&x, y, &p), [1, 1, 1])
            .unwrap();
        std::mem::forget(batch);
    };

    // A launch and a read after it complete, and run what the forgotten batch recorded.
    forget_a_batch(&mut y);
    rt.dispatch(&add_one, &scale_args(&x, &mut y, &p), [1, 1, 1])
        .unwrap();
    assert_eq!(y.read(&rt).unwrap(), [2.0; 4]);

    // Its dispatches submitted, it holds nothing back: the queue goes to the GPU on its own
    // once full (256 dispatches), with nothing read.
    for _ in 0..300 {
        rt.dispatch(&add_one, &scale_args(&x, &mut y, &p), [1, 1, 1])
            .unwrap();
    }
    let submitted = read_submitted(&app, &y)[0];
    assert!((258.0..=302.0).contains(&submitted), "{submitted}");
    assert_eq!(y.read(&rt).unwrap(), [302.0; 4]);

    // Forgotten with its dispatch still queued, it holds the queue back (as an open batch
    // does, for `submit_timed`) only up to 4096 queued dispatches.
    forget_a_batch(&mut y);
    for _ in 0..5000 {
        rt.dispatch(&add_one, &scale_args(&x, &mut y, &p), [1, 1, 1])
            .unwrap();
    }
    let submitted = read_submitted(&app, &y)[0];
    assert!((303.0..=5303.0).contains(&submitted), "{submitted}");
    assert_eq!(y.read(&rt).unwrap(), [5303.0; 4]);

    // Later batches record, submit and time as ever.
    let mut batch = rt.batch();
    batch
        .dispatch(&add_one, &scale_args(&x, &mut y, &p), [1, 1, 1])
        .unwrap();
    batch.submit_timed().unwrap();
    assert_eq!(y.read(&rt).unwrap(), [5304.0; 4]);
}

#[test]
fn raw_buffer_is_exposed_for_interop() {
    let rt = runtime();
    let buffer = rt.upload(&[1.0f32; 10]).unwrap();
    assert!(buffer.raw().size() >= 40);
    assert!(buffer
        .raw()
        .usage()
        .contains(tessera::wgpu::BufferUsages::STORAGE));
    assert_eq!(buffer.size_in_bytes(), 40);
}

/// 300 x 200 elements as rows of 300: a 5 x 200 grid of 64-wide workgroups.
fn scale_inputs(rt: &Runtime) -> (Vec<f32>, GpuBuffer<f32>, GpuBuffer<f32>, Params) {
    let row = 300u32;
    let n = row * 200;
    let xs: Vec<f32> = (0..n).map(|i| (i % 97) as f32 - 40.0).collect();
    let x = rt.upload(&xs).unwrap();
    let y = rt.zeros::<f32>(n as usize).unwrap();
    (
        xs,
        x,
        y,
        Params {
            scale: 1.5,
            shift: -2.0,
            n,
            row,
        },
    )
}

#[test]
fn hand_written_kernel_runs_over_many_workgroups() {
    let rt = runtime();
    let pipeline = rt
        .pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "scale_and_shift",
            &BINDINGS,
        ))
        .unwrap();
    let (xs, x, mut y, p) = scale_inputs(&rt);
    rt.dispatch(
        &pipeline,
        &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
        [p.row.div_ceil(64), 200, 1],
    )
    .unwrap();
    let want: Vec<f32> = xs.iter().map(|v| v * 1.5 - 2.0).collect();
    assert_eq!(y.read(&rt).unwrap(), want);
}

#[test]
fn batch_runs_dependent_dispatches_in_order_and_times_them() {
    let rt = runtime();
    let scale = rt
        .pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "scale_and_shift",
            &BINDINGS,
        ))
        .unwrap();
    let square = rt
        .pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "square_in_place",
            &BINDINGS,
        ))
        .unwrap();
    let (xs, x, mut y, p) = scale_inputs(&rt);
    let grid = [p.row.div_ceil(64), 200, 1];
    let want: Vec<f32> = xs
        .iter()
        .map(|v| (v * 1.5 - 2.0) * (v * 1.5 - 2.0))
        .collect();
    let expected_source = if rt.info().has_timestamps() {
        TimingSource::GpuTimestamps
    } else {
        TimingSource::WallClock
    };
    for profiled in [false, true] {
        y.write(&rt, &vec![0.0; xs.len()]).unwrap();
        let mut batch = rt.batch();
        assert!(batch.is_empty());
        for pipeline in [&scale, &square] {
            batch
                .dispatch(
                    pipeline,
                    &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
                    grid,
                )
                .unwrap();
        }
        assert_eq!(batch.len(), 2);
        let timing = if profiled {
            batch.submit_profiled().unwrap()
        } else {
            batch.submit_timed().unwrap()
        };
        assert_eq!(y.read(&rt).unwrap(), want, "profiled: {profiled}");

        let labels: Vec<&str> = timing
            .dispatches
            .iter()
            .map(|(label, _)| label.as_str())
            .collect();
        assert_eq!(labels, ["scale_and_shift", "square_in_place"]);
        assert_eq!(timing.source, expected_source);
        // Profiled on timestamps, each dispatch is timed, within the whole.
        let each: Vec<Duration> = timing.dispatches.iter().filter_map(|(_, t)| *t).collect();
        if profiled && timing.source == TimingSource::GpuTimestamps {
            assert_eq!(each.len(), 2);
            assert!(timing.total >= each.iter().sum::<Duration>());
        } else {
            assert!(each.is_empty(), "profiled: {profiled}");
        }
    }
}

/// Dispatches repeated with the same parameters share their uniform block and bind group
/// (the pass sets them once); the results show that each dispatch ran with its own
/// parameters, in order, whether they repeat, change or come back.
#[test]
fn repeated_and_changing_parameters_in_one_batch_each_take_effect() {
    let rt = runtime();
    let pipeline = |entry| {
        rt.pipeline(&PipelineDesc::new(SCALE_AND_SHIFT, entry, &BINDINGS))
            .unwrap()
    };
    let (copy, in_place) = (pipeline("scale_and_shift"), pipeline("scale_in_place"));
    let (xs, x, mut y, p) = scale_inputs(&rt);
    let grid = [p.row.div_ceil(64), 200, 1];
    let with = |scale, shift| Params { scale, shift, ..p };
    let steps = [
        (&copy, with(1.0, 0.0)),
        (&in_place, with(2.0, 1.0)),
        (&in_place, with(2.0, 1.0)),
        (&in_place, with(0.5, -3.0)),
        (&in_place, with(2.0, 1.0)),
        (&in_place, with(2.0, 1.0)),
    ];
    let mut batch = rt.batch();
    for (pipeline, params) in &steps {
        let args = [Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(params)];
        batch.dispatch(pipeline, &args, grid).unwrap();
    }
    batch.submit().unwrap();
    let want: Vec<f32> = xs
        .iter()
        .map(|&v| {
            let v = v * 2.0 + 1.0;
            let v = v * 2.0 + 1.0;
            let v = v * 0.5 - 3.0;
            let v = v * 2.0 + 1.0;
            v * 2.0 + 1.0
        })
        .collect();
    assert_eq!(y.read(&rt).unwrap(), want);
}

#[test]
fn pipelines_are_built_once_even_from_many_threads() {
    let rt = runtime();
    let desc = PipelineDesc::new(SCALE_AND_SHIFT, "scale_and_shift", &BINDINGS);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| rt.pipeline(&desc).unwrap());
        }
    });
    assert_eq!(rt.cached_pipelines(), 1);
    rt.pipeline(&desc).unwrap();
    assert_eq!(rt.cached_pipelines(), 1);
    rt.pipeline(&PipelineDesc::new(
        SCALE_AND_SHIFT,
        "square_in_place",
        &BINDINGS,
    ))
    .unwrap();
    assert_eq!(rt.cached_pipelines(), 2);
}

#[test]
fn override_constants_are_part_of_the_pipeline() {
    const FILL: &str = "
        override value: f32 = 0.0;
        @group(0) @binding(0) var<storage, read_write> y: array<f32>;
        @compute @workgroup_size(1) fn fill(@builtin(global_invocation_id) id: vec3<u32>) { y[id.x] = value; }";
    let rt = runtime();
    let bindings = [BindingKind::ReadWriteStorage];
    let mut y = rt.zeros::<f32>(4).unwrap();
    for value in [2.0, 5.0] {
        let constants = [("value", value)];
        let pipeline = rt
            .pipeline(&PipelineDesc::new(FILL, "fill", &bindings).with_constants(&constants))
            .unwrap();
        rt.dispatch(&pipeline, &[Arg::read_write(&mut y)], [4, 1, 1])
            .unwrap();
        assert_eq!(y.read(&rt).unwrap(), vec![value as f32; 4]);
    }
    assert_eq!(rt.cached_pipelines(), 2);
}

#[test]
fn a_pipeline_without_bounds_checks_is_its_own_and_computes_the_same() {
    let rt = runtime();
    let checked = PipelineDesc::new(SCALE_AND_SHIFT, "scale_and_shift", &BINDINGS);
    assert!(checked.bounds_checks());
    // SAFETY: `scale_and_shift` compares its index with `p.n`, and `p.n` is the buffers' length.
    let unchecked = unsafe { checked.clone().without_bounds_checks() };
    assert!(!unchecked.bounds_checks());
    let (xs, x, mut y, p) = scale_inputs(&rt);
    let grid = [p.row.div_ceil(64), p.n.div_ceil(p.row), 1];
    let mut results = Vec::new();
    for desc in [&checked, &unchecked] {
        let pipeline = rt.pipeline(desc).unwrap();
        rt.dispatch(
            &pipeline,
            &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
            grid,
        )
        .unwrap();
        results.push(y.read(&rt).unwrap());
    }
    assert_eq!(rt.cached_pipelines(), 2);
    let want: Vec<f32> = xs.iter().map(|v| v * p.scale + p.shift).collect();
    assert_eq!(results, [want.clone(), want]);
}

#[test]
fn from_wgpu_adopts_an_application_device() {
    let rt = runtime();
    let adopted = Runtime::from_wgpu(rt.device().clone(), rt.queue().clone());
    assert_eq!(adopted.info().limits, rt.info().limits);
    let data = [1.0f32, 2.0, 3.0];
    assert_eq!(adopted.upload(&data).unwrap().read(&adopted).unwrap(), data);
}

#[test]
fn info_reports_adapter_and_limits() {
    let rt = runtime();
    let report = rt.info().to_string();
    assert!(report.starts_with(&rt.info().name), "{report}");
    assert!(report.contains("workgroups per dimension"), "{report}");
}

#[test]
fn invalid_wgsl_is_a_validation_error() {
    let rt = runtime();
    let error = rt
        .pipeline(&PipelineDesc::new("fn broken( {", "broken", &[]))
        .unwrap_err();
    assert!(
        matches!(&error, Error::Validation { operation, .. } if operation.contains("`broken`")),
        "{error}"
    );
}

#[test]
fn missing_entry_point_is_a_validation_error() {
    let rt = runtime();
    let error = rt
        .pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "no_such_kernel",
            &BINDINGS,
        ))
        .unwrap_err();
    assert!(matches!(error, Error::Validation { .. }), "{error}");
}

#[test]
fn wrong_arguments_are_a_bindings_error() {
    let rt = runtime();
    let pipeline = rt
        .pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "scale_and_shift",
            &BINDINGS,
        ))
        .unwrap();
    let (_, x, mut y, p) = scale_inputs(&rt);
    let too_few = rt
        .dispatch(&pipeline, &[Arg::read(&x)], [1, 1, 1])
        .unwrap_err();
    assert!(matches!(too_few, Error::Bindings { .. }), "{too_few}");
    let swapped = rt.dispatch(
        &pipeline,
        &[Arg::read_write(&mut y), Arg::read(&x), Arg::uniform(&p)],
        [1, 1, 1],
    );
    assert!(matches!(swapped, Err(Error::Bindings { .. })));
}

/// Two runtimes on one adapter, `a` and `b`, each with an `x` of 1s and a `y` of 100s made in
/// the same order. The issue that asked for the checks below saw a dispatch on one runtime
/// with the other's buffers return `Ok`, then panic inside wgpu, or, buffers made in the same
/// order, silently add 10 to its own `y` instead of the other's.
fn two_runtimes_with_buffers() -> [(Runtime, GpuBuffer<f32>, GpuBuffer<f32>); 2] {
    ["a", "b"].map(|name| {
        let rt = runtime();
        let x = rt
            .upload_labeled(&format!("x of {name}"), &[1.0f32; 4])
            .unwrap();
        let y = rt
            .upload_labeled(&format!("y of {name}"), &[100.0f32; 4])
            .unwrap();
        (rt, x, y)
    })
}

/// `y += 10` over the buffers of [`two_runtimes_with_buffers`], with `scale_in_place`.
const ADD_TEN: Params = Params {
    scale: 1.0,
    shift: 10.0,
    n: 4,
    row: 4,
};

/// Asserts that `error` is an [`Error::ForeignBuffer`] of `operation` and the buffer `label`,
/// and that its message names both.
/// The buffers of [`two_runtimes_with_buffers`] still hold what they were made with.
fn assert_untouched(
    a: &Runtime,
    [x_a, y_a]: [&GpuBuffer<f32>; 2],
    b: &Runtime,
    [x_b, y_b]: [&GpuBuffer<f32>; 2],
) {
    for (rt, buffer, want) in [
        (a, x_a, 1.0),
        (a, y_a, 100.0),
        (b, x_b, 1.0),
        (b, y_b, 100.0),
    ] {
        assert_eq!(buffer.read(rt).unwrap(), [want; 4], "{}", buffer.label());
    }
}

fn assert_foreign_buffer(error: &Error, operation: &str, label: &str) {
    assert!(
        matches!(error, Error::ForeignBuffer { operation: o, buffer } if o == operation && buffer == label),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(operation) && message.contains(&format!("the buffer `{label}`")),
        "{message}"
    );
}

#[test]
fn a_dispatch_refuses_a_buffer_of_another_runtime_and_changes_no_buffer() {
    let [(a, x_a, mut y_a), (b, x_b, mut y_b)] = two_runtimes_with_buffers();
    let add_ten = scale_pipeline(&a, "scale_in_place");
    // `b`'s `y` where `a`'s belongs: the dispatch that wrote `a`'s own `y`.
    let error = a
        .dispatch(&add_ten, &scale_args(&x_a, &mut y_b, &ADD_TEN), [1, 1, 1])
        .unwrap_err();
    assert_foreign_buffer(&error, "binding 1 of `scale_in_place`", "y of b");
    // A read-only binding, in a batch: refused, and nothing recorded.
    let mut batch = a.batch();
    let error = batch
        .dispatch(&add_ten, &scale_args(&x_b, &mut y_a, &ADD_TEN), [1, 1, 1])
        .unwrap_err();
    assert_foreign_buffer(&error, "binding 0 of `scale_in_place`", "x of b");
    assert!(batch.is_empty());
    batch.submit().unwrap();
    a.wait().unwrap();
    b.wait().unwrap();
    assert_untouched(&a, [&x_a, &y_a], &b, [&x_b, &y_b]);
    // With its own buffers, the runtime dispatches as before, and `b`'s stay as they were.
    a.dispatch(&add_ten, &scale_args(&x_a, &mut y_a, &ADD_TEN), [1, 1, 1])
        .unwrap();
    assert_eq!(y_a.read(&a).unwrap(), [110.0; 4]);
    assert_eq!(y_b.read(&b).unwrap(), [100.0; 4]);
}

#[test]
fn reads_writes_fills_and_copies_refuse_a_buffer_of_another_runtime() {
    let [(a, x_a, mut y_a), (b, x_b, mut y_b)] = two_runtimes_with_buffers();
    let read = |read: Result<Vec<f32>, Error>| read.unwrap_err();
    let refused: [(Error, &str, &str); 11] = [
        (read(x_b.read(&a)), "`GpuBuffer::read`", "x of b"),
        (
            read(x_b.read_range(&a, 1..)),
            "`GpuBuffer::read_range`",
            "x of b",
        ),
        (
            read(pollster::block_on(x_b.read_async(&a))),
            "`GpuBuffer::read_async`",
            "x of b",
        ),
        (
            y_b.write(&a, &[7.0; 4]).unwrap_err(),
            "`GpuBuffer::write`",
            "y of b",
        ),
        (
            y_b.write_range(&a, 2, &[7.0]).unwrap_err(),
            "`GpuBuffer::write_range`",
            "y of b",
        ),
        (
            y_b.fill(&a, 7.0).unwrap_err(),
            "`GpuBuffer::fill`",
            "y of b",
        ),
        (y_b.clear(&a).unwrap_err(), "`GpuBuffer::clear`", "y of b"),
        (
            y_b.copy_from(&a, &x_a).unwrap_err(),
            "`GpuBuffer::copy_from` (destination)",
            "y of b",
        ),
        (
            y_a.copy_from(&a, &x_b).unwrap_err(),
            "`GpuBuffer::copy_from` (source)",
            "x of b",
        ),
        (
            y_b.copy_range_from(&a, &x_a, ..2, 0).unwrap_err(),
            "`GpuBuffer::copy_range_from` (destination)",
            "y of b",
        ),
        (
            y_a.copy_range_from(&a, &x_b, ..2, 0).unwrap_err(),
            "`GpuBuffer::copy_range_from` (source)",
            "x of b",
        ),
    ];
    for (error, operation, label) in &refused {
        assert_foreign_buffer(error, operation, label);
    }
    assert_untouched(&a, [&x_a, &y_a], &b, [&x_b, &y_b]);
}

#[test]
fn a_pipeline_of_another_runtime_is_refused_by_dispatch_and_batch() {
    let [(a, _, _), (b, x_b, mut y_b)] = two_runtimes_with_buffers();
    let add_ten = scale_pipeline(&a, "scale_in_place");
    let assert_foreign_pipeline = |error: Error| {
        assert!(
            matches!(&error, Error::ForeignPipeline { kernel } if kernel == "scale_in_place"),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.starts_with("`scale_in_place`: "), "{message}");
        assert!(message.contains("made by another Runtime"), "{message}");
    };
    let args = scale_args(&x_b, &mut y_b, &ADD_TEN);
    assert_foreign_pipeline(b.dispatch(&add_ten, &args, [1, 1, 1]).unwrap_err());
    let mut batch = b.batch();
    assert_foreign_pipeline(batch.dispatch(&add_ten, &args, [1, 1, 1]).unwrap_err());
    assert!(batch.is_empty());
    batch.submit().unwrap();
    assert_eq!(y_b.read(&b).unwrap(), [100.0; 4]);
    // The same description on `b` builds `b`'s own pipeline, which runs.
    let own = scale_pipeline(&b, "scale_in_place");
    b.dispatch(&own, &scale_args(&x_b, &mut y_b, &ADD_TEN), [1, 1, 1])
        .unwrap();
    assert_eq!(y_b.read(&b).unwrap(), [110.0; 4]);
}

#[test]
fn a_view_of_a_buffer_of_another_runtime_is_refused_too() {
    let [(a, x_a, _), (b, _, _)] = two_runtimes_with_buffers();
    let mut words = b
        .upload_labeled("words of b", &[100.0f32.to_bits(); 4])
        .unwrap();
    let add_ten = scale_pipeline(&a, "scale_in_place");
    {
        let mut floats = words.view_as_mut::<f32>().unwrap();
        let error = floats.read(&a).unwrap_err();
        assert_foreign_buffer(&error, "`GpuBuffer::read`", "words of b");
        let error = a
            .dispatch(
                &add_ten,
                &scale_args(&x_a, &mut floats, &ADD_TEN),
                [1, 1, 1],
            )
            .unwrap_err();
        assert_foreign_buffer(&error, "binding 1 of `scale_in_place`", "words of b");
        assert_eq!(floats.read(&b).unwrap(), [100.0; 4]);
    }
    let pairs = words.view_as::<[u32; 2]>().unwrap();
    let error = pairs.read(&a).unwrap_err();
    assert_foreign_buffer(&error, "`GpuBuffer::read`", "words of b");
    assert_eq!(words.read(&b).unwrap(), [100.0f32.to_bits(); 4]);
}

#[test]
fn buffer_smaller_than_the_shader_needs_is_a_validation_error() {
    const FIXED: &str = "
        @group(0) @binding(0) var<storage, read_write> y: array<f32, 64>;
        @compute @workgroup_size(1) fn fixed() { y[0] = 1.0; }";
    let rt = runtime();
    let pipeline = rt
        .pipeline(&PipelineDesc::new(
            FIXED,
            "fixed",
            &[BindingKind::ReadWriteStorage],
        ))
        .unwrap();
    let mut y = rt.zeros::<f32>(2).unwrap();
    // Only wgpu can tell; it does when the queued dispatch is submitted.
    rt.dispatch(&pipeline, &[Arg::read_write(&mut y)], [1, 1, 1])
        .unwrap();
    let error = rt.flush().unwrap_err();
    assert!(matches!(error, Error::Validation { .. }), "{error}");
    assert!(error.to_string().contains("`fixed`"), "{error}");
    // The rejected dispatch left the queue: the runtime goes on.
    rt.flush().unwrap();
    assert_eq!(y.read(&rt).unwrap(), [0.0; 2]);

    // Submitted by `queue()`, which cannot return it, the error comes with the next operation.
    rt.dispatch(&pipeline, &[Arg::read_write(&mut y)], [1, 1, 1])
        .unwrap();
    let _ = rt.queue();
    let later = rt.zeros::<f32>(1).unwrap_err();
    assert!(matches!(later, Error::Validation { .. }), "{later}");
    rt.zeros::<f32>(1).unwrap();
}

fn scale_pipeline(rt: &Runtime, entry_point: &str) -> tessera::Pipeline {
    rt.pipeline(&PipelineDesc::new(SCALE_AND_SHIFT, entry_point, &BINDINGS))
        .unwrap()
}

#[test]
fn queued_dispatches_run_before_what_comes_after_them() {
    let rt = runtime();
    let scale = scale_pipeline(&rt, "scale_and_shift");
    let square = scale_pipeline(&rt, "square_in_place");
    let n = 100u32;
    let p = Params {
        scale: 2.0,
        shift: 1.0,
        n,
        row: n,
    };
    let x0: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut x = rt.upload(&x0).unwrap();
    let mut y = rt.zeros::<f32>(n as usize).unwrap();
    let grid = [2, 1, 1];

    // A batch submitted after a queued dispatch sees its writes.
    rt.dispatch(
        &scale,
        &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
        grid,
    )
    .unwrap();
    let mut batch = rt.batch();
    batch
        .dispatch(
            &square,
            &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
            grid,
        )
        .unwrap();
    batch.submit().unwrap();
    let expected: Vec<f32> = x0.iter().map(|v| (2.0 * v + 1.0).powi(2)).collect();
    assert_eq!(y.read(&rt).unwrap(), expected);

    // Overwriting an input does not overtake the queued dispatch that reads it.
    rt.dispatch(
        &scale,
        &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
        grid,
    )
    .unwrap();
    x.write(&rt, &vec![-1.0; n as usize]).unwrap();
    let expected: Vec<f32> = x0.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(y.read(&rt).unwrap(), expected);

    // Work submitted through `queue()` comes after the queued dispatches.
    rt.dispatch(
        &scale,
        &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
        grid,
    )
    .unwrap();
    let copy = rt.zeros::<f32>(n as usize).unwrap();
    let mut encoder = rt.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(y.raw(), 0, copy.raw(), 0, y.size_in_bytes());
    rt.queue().submit([encoder.finish()]);
    assert_eq!(copy.read(&rt).unwrap(), vec![-1.0; n as usize]);

    // More launches than the queue holds: all run, in order.
    for _ in 0..600 {
        rt.dispatch(
            &square,
            &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
            grid,
        )
        .unwrap();
        rt.dispatch(
            &scale,
            &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
            grid,
        )
        .unwrap();
    }
    assert_eq!(y.read(&rt).unwrap(), vec![-1.0; n as usize]);
}

/// The arguments of the scale kernels: `y` from `x` (or `y` in place) with `p`.
fn scale_args<'a>(x: &'a GpuBuffer<f32>, y: &'a mut GpuBuffer<f32>, p: &'a Params) -> [Arg<'a>; 3] {
    [Arg::read(x), Arg::read_write(y), Arg::uniform(p)]
}

/// The issue that asked for it: `y = 2x` recorded with `x = 1`, then `x = 5` written before
/// the batch was submitted, gave `y = 10`.
#[test]
fn operations_on_buffers_take_effect_in_program_order() {
    let rt = runtime();
    let scale = scale_pipeline(&rt, "scale_and_shift");
    let square = scale_pipeline(&rt, "square_in_place");
    let n = 4u32;
    let double = Params {
        scale: 2.0,
        shift: 0.0,
        n,
        row: n,
    };
    let mut x = rt.upload(&[1.0f32; 4]).unwrap();
    let mut y = rt.zeros::<f32>(n as usize).unwrap();

    // A write issued after a recorded dispatch does not reach it.
    let mut batch = rt.batch();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap();
    x.write(&rt, &[5.0; 4]).unwrap();
    batch.submit().unwrap();
    assert_eq!(y.read(&rt).unwrap(), [2.0; 4]);

    // A read issued after a recorded dispatch sees it, the batch still open.
    let mut batch = rt.batch();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap();
    assert_eq!(y.read(&rt).unwrap(), [10.0; 4]);
    // The batch goes on after the read, and what it records next comes after it too.
    batch
        .dispatch(&square, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap();
    assert_eq!(batch.len(), 2);
    drop(batch);
    assert_eq!(
        y.read(&rt).unwrap(),
        [100.0; 4],
        "dropping a batch does not take it back"
    );

    // Launches and batch dispatches interleaved keep their order.
    let mut batch = rt.batch();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 10
    rt.dispatch(&square, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 100
    x.write(&rt, &[3.0; 4]).unwrap();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 6
    rt.dispatch(&square, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 36
    batch.submit().unwrap();
    assert_eq!(y.read(&rt).unwrap(), [36.0; 4]);

    // Two batches open at once: their dispatches run in the order they were recorded.
    let mut first = rt.batch();
    let mut second = rt.batch();
    second
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 6
    first
        .dispatch(&square, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 36
    second.submit().unwrap();
    first.submit().unwrap();
    assert_eq!(y.read(&rt).unwrap(), [36.0; 4]);

    // Copies, fills, clears and partial writes issued after a recorded dispatch see its
    // result, and dispatches recorded after them see theirs.
    let mut copy = rt.zeros::<f32>(4).unwrap();
    let mut batch = rt.batch();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap(); // y = 6
    copy.copy_from(&rt, &y).unwrap();
    y.clear(&rt).unwrap();
    y.fill(&rt, 1.0).unwrap();
    y.write_range(&rt, 2, &[4.0]).unwrap();
    batch
        .dispatch(&square, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap();
    batch.submit().unwrap();
    assert_eq!(copy.read(&rt).unwrap(), [6.0; 4]);
    assert_eq!(y.read(&rt).unwrap(), [1.0, 1.0, 16.0, 1.0]);

    // A batch split by a read is timed from the split on.
    let mut batch = rt.batch();
    batch
        .dispatch(&scale, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap();
    assert_eq!(y.read(&rt).unwrap(), [6.0; 4]);
    batch
        .dispatch(&square, &scale_args(&x, &mut y, &double), [1, 1, 1])
        .unwrap();
    let timing = batch.submit_timed().unwrap();
    let labels: Vec<&str> = timing.dispatches.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["square_in_place"]);
    assert_eq!(y.read(&rt).unwrap(), [36.0; 4]);
}

/// Batches and launches from several threads at once: every dispatch runs, in its thread's
/// order, on that thread's buffers.
#[test]
fn batches_and_launches_from_many_threads_all_run_in_order() {
    let rt = runtime();
    let scale = scale_pipeline(&rt, "scale_and_shift");
    let add_one = Params {
        scale: 1.0,
        shift: 1.0,
        n: 4,
        row: 4,
    };
    let results: Vec<(Vec<f32>, Vec<f32>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (rt, scale, add_one) = (&rt, &scale, &add_one);
                scope.spawn(move || {
                    let mut x = rt.upload(&[t as f32; 4]).unwrap();
                    let mut y = rt.zeros::<f32>(4).unwrap();
                    let mut batch = rt.batch();
                    for _ in 0..300 {
                        // y = x + 1, then x = y + 1: x grows by 2 a round.
                        let args = [
                            Arg::read(&x),
                            Arg::read_write(&mut y),
                            Arg::uniform(add_one),
                        ];
                        batch.dispatch(scale, &args, [1, 1, 1]).unwrap();
                        let args = [
                            Arg::read(&y),
                            Arg::read_write(&mut x),
                            Arg::uniform(add_one),
                        ];
                        rt.dispatch(scale, &args, [1, 1, 1]).unwrap();
                    }
                    batch.submit().unwrap();
                    (x.read(rt).unwrap(), y.read(rt).unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, (x, y)) in results.iter().enumerate() {
        assert_eq!(x, &[t as f32 + 600.0; 4], "thread {t}");
        assert_eq!(y, &[t as f32 + 599.0; 4], "thread {t}");
    }
}

#[test]
fn dropping_a_runtime_submits_what_it_queued() {
    let rt = runtime();
    let x = rt.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let y = rt.zeros::<f32>(4).unwrap();
    {
        let adopted = Runtime::from_wgpu(rt.device().clone(), rt.queue().clone());
        let pipeline = scale_pipeline(&adopted, "scale_and_shift");
        let p = Params {
            scale: 3.0,
            shift: 0.0,
            n: 4,
            row: 4,
        };
        // The buffers are `rt`'s: another runtime, even on the same device, binds them only
        // as raw wgpu buffers.
        adopted
            .dispatch(
                &pipeline,
                &[
                    Arg::read_raw(x.raw()),
                    Arg::read_write_raw(y.raw()),
                    Arg::uniform(&p),
                ],
                [1, 1, 1],
            )
            .unwrap();
    }
    assert_eq!(y.read(&rt).unwrap(), [3.0, 6.0, 9.0, 12.0]);
}

#[test]
fn grid_beyond_the_device_limit_is_an_error() {
    let rt = runtime();
    let pipeline = rt
        .pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "scale_and_shift",
            &BINDINGS,
        ))
        .unwrap();
    let (_, x, mut y, p) = scale_inputs(&rt);
    let limit = rt.info().limits.max_compute_workgroups_per_dimension;
    let error = rt
        .dispatch(
            &pipeline,
            &[Arg::read(&x), Arg::read_write(&mut y), Arg::uniform(&p)],
            [1, limit + 1, 1],
        )
        .unwrap_err();
    assert!(
        matches!(error, Error::GridTooLarge { limit: l, grid: [1, _, 1], .. } if l == limit),
        "{error}"
    );
}

#[test]
fn buffer_beyond_the_device_limit_is_an_error() {
    let rt = runtime();
    let limit = rt.info().limits.max_buffer_size;
    let error = rt.zeros::<u32>((limit / 4 + 1) as usize).unwrap_err();
    assert!(matches!(error, Error::BufferTooLarge { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("max_buffer_size") && message.contains("split the data"),
        "{message}"
    );
}

/// A buffer over the device's limit for one storage binding can be made and used, but not
/// bound: the dispatch is refused before anything is recorded, naming the kernel and the
/// binding (a launcher names the parameter: tests/kernels.rs).
#[test]
fn a_binding_beyond_the_device_limit_is_refused_naming_kernel_and_binding() {
    let like = runtime();
    let rt = common::limited_runtime(&like, |limits| {
        limits.max_storage_buffer_binding_size = 1 << 20;
    });
    let pipeline = scale_pipeline(&rt, "scale_and_shift");
    let x = rt.zeros::<f32>(1 << 18).unwrap();
    let mut y = rt.upload(&vec![3.0f32; (1 << 18) + 1]).unwrap();
    y.write_range(&rt, 1 << 18, &[4.0]).unwrap();
    assert_eq!(y.read_range(&rt, (1 << 18) - 1..).unwrap(), [3.0, 4.0]);
    let p = Params {
        scale: 1.0,
        shift: 1.0,
        n: 1 << 18,
        row: 1 << 12,
    };
    let error = rt
        .dispatch(&pipeline, &scale_args(&x, &mut y, &p), [64, 64, 1])
        .unwrap_err();
    match &error {
        Error::BindingTooLarge {
            kernel,
            binding,
            bytes,
            limit,
        } => assert_eq!(
            (kernel.as_str(), binding.as_str(), *bytes, *limit),
            ("scale_and_shift", "binding 1", (1 << 20) + 4, 1 << 20)
        ),
        other => panic!("expected BindingTooLarge, got {other}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("`scale_and_shift` cannot bind `binding 1`: its buffer of 1048580 bytes"),
        "{error}"
    );
    assert_eq!(y.read_range(&rt, ..2).unwrap(), [3.0; 2], "nothing ran");
}

#[test]
fn lost_device_is_an_error_for_every_later_operation() {
    let rt = runtime();
    let buffer = rt.upload(&[1.0f32, 2.0]).unwrap();
    rt.device().destroy();
    let read = buffer.read(&rt).unwrap_err();
    assert!(matches!(read, Error::DeviceLost { .. }), "{read}");
    assert!(matches!(rt.zeros::<f32>(4), Err(Error::DeviceLost { .. })));
    assert!(matches!(
        rt.pipeline(&PipelineDesc::new(
            SCALE_AND_SHIFT,
            "scale_and_shift",
            &BINDINGS
        )),
        Err(Error::DeviceLost { .. })
    ));
}

/// A kernel that spins `p.n` times: a slow and a fast candidate of one operation.
const SPIN: &str = "
struct Params { scale: f32, shift: f32, n: u32, row: u32 }
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;
@compute @workgroup_size(1) fn spin() {
    var acc = 0.0;
    for (var i = 0u; i < p.n; i++) { acc = acc * p.scale + p.shift; }
    y[0] = acc;
}";

#[test]
fn autotune_times_each_candidate_once_remembers_the_fastest_and_keeps_it_in_the_cache_file() {
    let rt = runtime();
    let dir = std::env::temp_dir().join(format!("tessera-autotune-{}", std::process::id()));
    let path = dir.join("autotune.tsv");
    let _ = std::fs::remove_dir_all(&dir);
    rt.set_autotune(Autotune::On);
    rt.set_autotune_cache(Some(path.clone()));
    let pipeline = rt
        .pipeline(&PipelineDesc::new(
            SPIN,
            "spin",
            &[BindingKind::ReadWriteStorage, BindingKind::Uniform],
        ))
        .unwrap();
    let mut y = rt.zeros::<f32>(1).unwrap();
    let spins = [2_000_000u32, 10, 1_000_000];
    let mut runs = 0;
    let mut tune = |rt: &Runtime, key: &TuneKey, fixed| {
        rt.autotune(key, spins.len(), fixed, |batch, i| {
            runs += 1;
            let p = Params {
                scale: 0.5,
                shift: 1.0,
                n: spins[i],
                row: 0,
            };
            batch.dispatch(
                &pipeline,
                &[Arg::read_write(&mut y), Arg::uniform(&p)],
                [1, 1, 1],
            )
        })
        .unwrap()
    };
    let key = TuneKey::new("spin", source_hash(SPIN), &[size_bucket(1000)]);

    // Timed: a warm-up and three timed runs of each candidate; the fast one wins over `fixed`.
    assert_eq!(tune(&rt, &key, 0), 1);
    assert_eq!(runs, 3 * 4);
    let (choices, problem) = rt.autotune_report();
    assert_eq!(problem, None);
    assert!(matches!(&choices[..], [c] if matches!(&c.how, Tuned::Measured(t) if t.len() == 3)));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\tspin\t"), "{text}");

    let mut runs = 0;
    let mut tune = |rt: &Runtime, key: &TuneKey, fixed| {
        rt.autotune(key, spins.len(), fixed, |_, _| {
            runs += 1;
            Ok(())
        })
        .unwrap()
    };
    // Remembered in memory.
    assert_eq!(tune(&rt, &key, 0), 1);
    // Read from the file by another runtime on the device.
    let other = Runtime::from_wgpu(rt.device().clone(), rt.queue().clone());
    other.set_autotune(Autotune::On);
    other.set_autotune_cache(Some(path.clone()));
    assert_eq!(tune(&other, &key, 2), 1);
    assert!(matches!(&other.autotune_report().0[..], [c] if c.how == Tuned::Cached));
    // Off: the fixed choice, nothing runs.
    other.set_autotune(Autotune::Off);
    assert_eq!(tune(&other, &key, 2), 2);
    assert_eq!(runs, 0);

    // An edited kernel is another key: timed again.
    let edited = TuneKey::new("spin", source_hash(&format!("{SPIN}\n")), &[1024]);
    let mut runs = 0;
    let choice = rt
        .autotune(&edited, 2, 0, |_, _| {
            runs += 1;
            Ok(())
        })
        .unwrap();
    assert!(choice < 2);
    assert_eq!(runs, 2 * 4);
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_remembered_choice_past_the_candidates_is_tuned_again() {
    let rt = runtime();
    rt.set_autotune(Autotune::On);
    let pipeline = rt
        .pipeline(&PipelineDesc::new(
            SPIN,
            "spin",
            &[BindingKind::ReadWriteStorage, BindingKind::Uniform],
        ))
        .unwrap();
    let mut y = rt.zeros::<f32>(1).unwrap();
    let key = TuneKey::new("spin", source_hash(SPIN), &[]);
    let mut runs = 0;
    // Each candidate spins as long as its entry says.
    let mut tune = |spins: &[u32]| {
        rt.autotune(&key, spins.len(), 0, |batch, i| {
            runs += 1;
            let p = Params {
                scale: 0.5,
                shift: 1.0,
                n: spins[i],
                row: 0,
            };
            batch.dispatch(
                &pipeline,
                &[Arg::read_write(&mut y), Arg::uniform(&p)],
                [1, 1, 1],
            )
        })
        .unwrap()
    };
    assert_eq!(tune(&[2_000_000, 1_000_000, 10]), 2);
    // Fewer candidates now: the remembered 2 is not one of them.
    assert_eq!(tune(&[2_000_000, 10]), 1);
    assert_eq!(tune(&[2_000_000, 10]), 1);
    assert_eq!(runs, 3 * 4 + 2 * 4);
}

#[test]
fn an_unwritable_autotune_cache_is_reported_not_an_error() {
    let rt = runtime();
    rt.set_autotune(Autotune::On);
    // A file where the cache's folder should be.
    let blocker = std::env::temp_dir().join(format!("tessera-blocker-{}", std::process::id()));
    std::fs::write(&blocker, "not a folder").unwrap();
    rt.set_autotune_cache(Some(blocker.join("autotune.tsv")));
    let key = TuneKey::new("nothing", 0, &[]);
    let choice = rt.autotune(&key, 2, 0, |_, _| Ok(())).unwrap();
    assert!(choice < 2);
    let (choices, problem) = rt.autotune_report();
    assert_eq!(choices.len(), 1);
    let problem = problem.unwrap();
    // Reading it fails first (the folder is a file), and writing it would too.
    assert!(problem.starts_with("reading "), "{problem}");
    assert!(problem.contains("tessera-blocker"), "{problem}");
    std::fs::remove_file(blocker).unwrap();
}
