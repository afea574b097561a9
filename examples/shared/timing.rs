//! What the timing examples share (`std_rows`, `std_scan`, `elementwise`, `large_buffers`,
//! and `tessera-nn`'s `rows_bench`): a timed kernel's report row, the timing of a recorded
//! launch, and the table they print. Not an example of its own (cargo looks for examples in
//! `examples/*.rs` and `examples/*/main.rs` only); each example includes it with `#[path]`.
//! `bench/cuda_timing.py` times the PyTorch side the same way.

use std::time::{Duration, Instant};

use tessera::{Batch, Result, Runtime};

/// One timed kernel: what it computes, how, and its median time per launch.
pub struct Row {
    pub work: String,
    pub how: String,
    pub time: Duration,
    /// Bytes read and written per launch, each element read once and written once.
    pub bytes: f64,
}

/// How long [`time`] keeps the GPU busy before it measures: an H200 that sat idle for a
/// second (while the host made a large input, say) ran memory-bound kernels at 40% of its
/// bandwidth until it had been busy for a while, so a few warm-up launches were not enough,
/// and 200 ms were not always (a row 2.5 times slow in one process, normal in the next).
pub const WARM_UP: Duration = Duration::from_millis(1000);

/// Timed submissions the median is taken over.
const TIMED: usize = 5;

/// The median over 5 submissions of `reps` launches of what `record` adds to a batch, after
/// submissions of as many that keep the GPU busy for at least [`WARM_UP`].
pub fn time(
    rt: &Runtime,
    reps: u32,
    record: impl FnMut(&mut Batch<'_>) -> Result<()>,
) -> Result<Duration> {
    time_after(rt, reps, WARM_UP, record)
}

/// [`time`] with a warm-up of at least `warm_up` (at least one submission).
pub fn time_after(
    rt: &Runtime,
    reps: u32,
    warm_up: Duration,
    mut record: impl FnMut(&mut Batch<'_>) -> Result<()>,
) -> Result<Duration> {
    let start = Instant::now();
    loop {
        let mut warm = rt.batch();
        for _ in 0..reps {
            record(&mut warm)?;
        }
        warm.submit()?;
        rt.wait()?;
        if start.elapsed() >= warm_up {
            break;
        }
    }
    let mut times = Vec::new();
    for _ in 0..TIMED {
        let mut batch = rt.batch();
        for _ in 0..reps {
            record(&mut batch)?;
        }
        times.push(batch.submit_timed()?.total / reps);
    }
    times.sort();
    Ok(times[TIMED / 2])
}

/// Prints the adapter and `rows` as a Markdown table: work, kernel, milliseconds, TB/s.
pub fn print_table(rt: &Runtime, rows: &[Row]) {
    println!("{} ({:?})", rt.info().name, rt.info().backend);
    println!("| work | kernel | ms | TB/s |");
    println!("| --- | --- | --- | --- |");
    for row in rows {
        let secs = row.time.as_secs_f64();
        println!(
            "| {} | {} | {:.4} | {:.2} |",
            row.work,
            row.how,
            secs * 1e3,
            row.bytes / secs / 1e12
        );
    }
}
