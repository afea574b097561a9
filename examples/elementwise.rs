//! Memory-bound elementwise kernels at the bandwidth limit: a copy and `y = a * x + y`, each
//! written once over `f32` and `Vec4<f32>` elements, one element of `T` an invocation, and
//! the same with each invocation looping over the buffer (a grid of one wave of workgroups).
//! Checks each against the CPU and prints their bandwidth; `bench/elementwise_bench.py` gives
//! PyTorch's figures for the same work on the same GPU.
//!
//! ```text
//! cargo run --release --example elementwise [MiB per buffer, default 256]
//! ```

#[path = "shared/timing.rs"]
mod timing;

use tessera::{GpuBuffer, Result, Runtime};
use timing::{print_table, time, Row};

#[tessera::kernels]
mod elementwise {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Scale {
        pub a: f32,
    }

    /// `y = x`, one element of `T` an invocation.
    #[kernel(workgroup = [256], grid = [ceil_div(x.len(), 256)], types(T = [f32, Vec4<f32>]))]
    pub fn copy<T>(x: &[T], y: &mut [T]) {
        let i = global_id().x;
        if i < x.len() {
            y[i] = x[i];
        }
    }

    /// `y = a * x + y`, one element of `T` an invocation.
    #[kernel(workgroup = [256], grid = [ceil_div(x.len(), 256)], types(T = [f32, Vec4<f32>]))]
    pub fn axpy<T>(p: &Scale, x: &[T], y: &mut [T]) {
        let i = global_id().x;
        if i < x.len() {
            y[i] = (p.a as T) * x[i] + y[i];
        }
    }

    /// `y = a * x + y`, each invocation striding over the buffer from its global index by the
    /// whole grid's size: `WAVES` workgroups of 256 whatever the length.
    #[kernel(
        workgroup = [256],
        constants(WAVES = [1056]),
        grid = [WAVES],
        types(T = [f32, Vec4<f32>])
    )]
    pub fn axpy_strided<T>(p: &Scale, x: &[T], y: &mut [T]) {
        let stride = num_workgroups().x * 256;
        for i in (global_id().x..x.len()).step_by(stride) {
            y[i] = (p.a as T) * x[i] + y[i];
        }
    }
}

use elementwise as k;

/// Times every kernel over buffers of `len` floats (a multiple of 4) and checks each result.
pub fn run(rt: &Runtime, len: usize) -> Result<Vec<Row>> {
    assert!(len.is_multiple_of(4), "a multiple of 4 floats");
    let host: Vec<f32> = (0..len).map(|i| (i % 1000) as f32).collect();
    let x: GpuBuffer<f32> = rt.upload(&host)?;
    let mut y = rt.zeros::<f32>(len)?;
    let p = k::Scale { a: 2.0 };
    let mib = len * 4 / (1 << 20);
    let mut rows = Vec::new();
    let mut row = |work: &str, how: &str, time, reads: f64| {
        rows.push(Row {
            work: format!("{work} {mib} MiB"),
            how: how.to_owned(),
            time,
            bytes: (reads + 1.0) * len as f64 * 4.0,
        })
    };
    let copy = k::Copy::<f32>::new(rt)?;
    let t = time(rt, 20, |b| copy.record(b, k::CopyArgs { x: &x, y: &mut y }))?;
    check("copy, f32", &y.read(rt)?, &host);
    row("copy", "f32 an invocation", t, 1.0);
    let copy4 = k::Copy::<[f32; 4]>::new(rt)?;
    let t = time(rt, 20, |b| {
        let (x, mut y) = (x.view_as::<[f32; 4]>()?, y.view_as_mut::<[f32; 4]>()?);
        copy4.record(b, k::CopyArgs { x: &x, y: &mut y })
    })?;
    check("copy, Vec4", &y.read(rt)?, &host);
    row("copy", "Vec4<f32> an invocation", t, 1.0);
    // Each axpy timing runs it many times over: `y` is reset and checked after one launch.
    let axpy = k::Axpy::<f32>::new(rt)?;
    let axpy4 = k::Axpy::<[f32; 4]>::new(rt)?;
    let strided = k::AxpyStrided::<[f32; 4]>::new(rt)?;
    let want: Vec<f32> = host.iter().map(|v| 2.0 * v + v).collect();
    for (how, kernel) in [
        ("f32 an invocation", Axpy::Scalar(&axpy)),
        ("Vec4<f32> an invocation", Axpy::Vector(&axpy4)),
        ("Vec4<f32>, one wave striding", Axpy::Strided(&strided)),
    ] {
        y.write(rt, &host)?;
        kernel.record_once(rt, &p, &x, &mut y)?;
        check(how, &y.read(rt)?, &want);
        let t = time(rt, 20, |b| kernel.record(b, &p, &x, &mut y))?;
        row("axpy", how, t, 2.0);
    }
    Ok(rows)
}

/// The three axpy kernels, recorded alike.
enum Axpy<'k> {
    Scalar(&'k k::Axpy<f32>),
    Vector(&'k k::Axpy<[f32; 4]>),
    Strided(&'k k::AxpyStrided<[f32; 4]>),
}

impl Axpy<'_> {
    fn record(
        &self,
        b: &mut tessera::Batch<'_>,
        p: &k::Scale,
        x: &GpuBuffer<f32>,
        y: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        match self {
            Axpy::Scalar(kernel) => kernel.record(b, k::AxpyArgs { p, x, y }),
            Axpy::Vector(kernel) => {
                let (x, mut y) = (x.view_as::<[f32; 4]>()?, y.view_as_mut::<[f32; 4]>()?);
                kernel.record(
                    b,
                    k::AxpyArgs {
                        p,
                        x: &x,
                        y: &mut y,
                    },
                )
            }
            Axpy::Strided(kernel) => {
                let (x, mut y) = (x.view_as::<[f32; 4]>()?, y.view_as_mut::<[f32; 4]>()?);
                kernel.record(
                    b,
                    k::AxpyStridedArgs {
                        p,
                        x: &x,
                        y: &mut y,
                    },
                )
            }
        }
    }

    /// One launch, submitted.
    fn record_once(
        &self,
        rt: &Runtime,
        p: &k::Scale,
        x: &GpuBuffer<f32>,
        y: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let mut batch = rt.batch();
        self.record(&mut batch, p, x, y)?;
        batch.submit()
    }
}

fn check(what: &str, got: &[f32], want: &[f32]) {
    let wrong = got.iter().zip(want).position(|(g, w)| g != w);
    assert!(
        wrong.is_none() && got.len() == want.len(),
        "{what}: element {wrong:?} differs"
    );
}

fn main() -> Result<()> {
    let mib: usize = std::env::args()
        .nth(1)
        .map_or(256, |a| a.parse().expect("MiB per buffer"));
    let rt = Runtime::new()?;
    print_table(&rt, &run(&rt, mib * (1 << 20) / 4)?);
    Ok(())
}
