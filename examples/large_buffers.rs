//! A probe of copy bandwidth against the history of a process's buffers: whether a `Vec4`
//! copy over buffers of 256 MiB slows down because of when its buffers were made, because of
//! what ran before it, or because of a read back (issue 50's large-buffer effect: on an H200
//! the first such kernel of a process ran at 4 TB/s and later ones at 1.2-1.7).
//!
//! Each line times the same copy kernel over one pair of buffers (`a`, `b`, ... in the order
//! they were made) at one point of the sequence the table lists; the last four after the GPU
//! sat idle for two seconds, each after a longer warm-up.
//!
//! ```text
//! cargo run --release --example large_buffers [MiB per buffer, default 256]
//! ```

#[path = "shared/timing.rs"]
#[allow(dead_code)] // `time`: every timing here names its warm-up
mod timing;

use std::time::Duration;

use tessera::{GpuBuffer, Result, Runtime};
use timing::{print_table, time_after, Row, WARM_UP};

#[tessera::kernels]
mod probe {
    /// `y = x`, a `Vec4` an invocation.
    #[kernel(workgroup = [256], grid = [ceil_div(x.len(), 256)])]
    pub fn copy(x: &[Vec4<f32>], y: &mut [Vec4<f32>]) {
        let i = global_id().x;
        if i < x.len() && i < y.len() {
            y[i] = x[i];
        }
    }
}

/// The buffers of one copy.
struct Pair {
    name: &'static str,
    x: GpuBuffer<[f32; 4]>,
    y: GpuBuffer<[f32; 4]>,
}

impl Pair {
    /// Two buffers of `len` vectors: `x` uploaded from the host, `y` zeroed.
    fn new(rt: &Runtime, name: &'static str, len: usize) -> Result<Self> {
        let host: Vec<[f32; 4]> = (0..len).map(|i| [i as f32; 4]).collect();
        Ok(Pair {
            name,
            x: rt.upload(&host)?,
            y: rt.zeros(len)?,
        })
    }
}

/// Times the copy over `pair` after [`WARM_UP`], as the report's row for `when`.
fn copy(rt: &Runtime, kernel: &probe::Copy, pair: &mut Pair, when: &str) -> Result<Row> {
    copy_after(rt, kernel, pair, when, WARM_UP)
}

/// Times the copy over `pair` after a warm-up of `warm_up` (one submission at the least).
fn copy_after(
    rt: &Runtime,
    kernel: &probe::Copy,
    pair: &mut Pair,
    when: &str,
    warm_up: Duration,
) -> Result<Row> {
    let bytes = 2.0 * pair.x.len() as f64 * 16.0;
    let (x, y) = (&pair.x, &mut pair.y);
    let t = time_after(rt, 20, warm_up, |b| {
        kernel.record(b, probe::CopyArgs { x, y: &mut *y })
    })?;
    Ok(Row {
        work: format!(
            "copy {} MiB, pair {}",
            bytes / 2.0 / (1 << 20) as f64,
            pair.name
        ),
        how: when.to_owned(),
        time: t,
        bytes,
    })
}

/// Makes pairs of buffers of `len` vectors each and times the copy over them at each point
/// of the sequence, the last four after the GPU sat `idle`; checks the copy once.
pub fn run(rt: &Runtime, len: usize, idle: Duration) -> Result<Vec<Row>> {
    let kernel = probe::Copy::new(rt)?;
    let mut rows = Vec::new();
    let mut a = Pair::new(rt, "a", len)?;
    rows.push(copy(rt, &kernel, &mut a, "first kernel of the process")?);
    rows.push(copy(rt, &kernel, &mut a, "again")?);
    let mut b = Pair::new(rt, "b", len)?;
    rows.push(copy(rt, &kernel, &mut b, "made second")?);
    rows.push(copy(rt, &kernel, &mut a, "after b was made and copied")?);
    let read = a.y.read(rt)?;
    assert_eq!(
        read[len - 1],
        [(len - 1) as f32; 4],
        "the copy answered wrong"
    );
    rows.push(copy(rt, &kernel, &mut a, "after its y was read back")?);
    rows.push(copy(rt, &kernel, &mut b, "after a's y was read back")?);
    let mut c = Pair::new(rt, "c", len)?;
    rows.push(copy(rt, &kernel, &mut c, "made after a read back")?);
    drop(b);
    let mut d = Pair::new(rt, "d", len)?;
    rows.push(copy(rt, &kernel, &mut d, "made after b was dropped")?);
    let mut e = Pair::new(rt, "e", len / 4)?;
    rows.push(copy(
        rt,
        &kernel,
        &mut e,
        "a quarter of the size, made last",
    )?);
    rows.push(copy(rt, &kernel, &mut a, "last")?);
    // The GPU left idle, then timed after warm-ups of one submission up to 3 s.
    for warm_up in [0, 200, 1000, 3000].map(Duration::from_millis) {
        std::thread::sleep(idle);
        let when = format!("idle {idle:?}, then a warm-up of {warm_up:?}");
        rows.push(copy_after(rt, &kernel, &mut a, &when, warm_up)?);
    }
    Ok(rows)
}

fn main() -> Result<()> {
    let mib: usize = std::env::args()
        .nth(1)
        .map_or(256, |a| a.parse().expect("MiB per buffer"));
    let rt = Runtime::new()?;
    let idle = Duration::from_secs(2);
    print_table(&rt, &run(&rt, mib * (1 << 20) / 16, idle)?);
    Ok(())
}
