//! Row softmax, RMSNorm and argmax built from `tessera::std`, checked against CPU references
//! and timed beside a baseline written without it and a plain copy (the bandwidth ceiling).
//!
//! The std kernels keep a row in registers (`rows`), loaded as `Vec4<f32>`, and reduce it
//! within subgroups first (`reduce`, `softmax`). The baseline is the kernel a new user writes
//! from the language alone: scalar loads, a workgroup a row, a pass over the row per
//! reduction, a tree in workgroup memory.
//!
//! ```text
//! cargo run --release --example std_rows                 # 16384 x 1000 softmax, 16384 x 4096 RMSNorm and argmax
//! cargo run --release --example std_rows -- ROWS SOFTMAX_COLS RMS_COLS
//! ```
//!
//! `tests/examples.rs` runs it at a small size on whatever adapter the tests have.

use std::time::Duration;

use tessera::{Batch, GpuBuffer, Result, Runtime};

#[path = "shared/timing.rs"]
mod timing;
use timing::{print_table, time, Row};

#[tessera::kernels]
pub mod row_kernels {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::rows;
    #[device]
    use tessera::std::softmax;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub rows: u32,
        /// Scalars a row.
        pub cols: u32,
    }

    /// Softmax of each row (at most 1024 scalars, a multiple of 4): a workgroup a row, held
    /// in registers as `Vec4`s, the online state merged through subgroups.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 128, 256], PER = 256 / GROUP),
             grid = [p.rows], features(subgroups))]
    pub fn softmax_std(
        p: &Shape,
        x: &[Vec4<f32>],
        y: &mut [Vec4<f32>],
        #[workgroup] partials: &mut [Vec2<f32>; GROUP / 4],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / 4);
        let mut regs = [vec4(0.0f32, 0.0, 0.0, 0.0); PER];
        row_load(
            &mut regs,
            x,
            row * width,
            width,
            local,
            vec4(-f32::MAX, -f32::MAX, -f32::MAX, -f32::MAX),
        );
        let mut state = softmax_start();
        #[unroll]
        for k in 0..PER {
            state = softmax_fold(state, regs[k]);
        }
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        state = softmax_workgroup(partials, state, lane, subgroup, size);
        #[unroll]
        for k in 0..PER {
            regs[k] = softmax_of(state, regs[k]);
        }
        row_store(&regs, y, row * width, width, local);
    }

    /// RMSNorm of each row (at most 4096 scalars, a multiple of 4): a workgroup a row, held
    /// in registers as `Vec4`s, the sum of squares reduced through subgroups.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 128, 256], PER = 1024 / GROUP),
             grid = [p.rows], features(subgroups))]
    pub fn rms_norm_std(
        p: &Shape,
        x: &[Vec4<f32>],
        y: &mut [Vec4<f32>],
        #[workgroup] partials: &mut [f32; GROUP / 4],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / 4);
        let mut regs = [vec4(0.0f32, 0.0, 0.0, 0.0); PER];
        row_load(
            &mut regs,
            x,
            row * width,
            width,
            local,
            vec4(0.0f32, 0.0, 0.0, 0.0),
        );
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let own = row_sum_of_squares(&regs, width, local);
        let squares = workgroup_sum(partials, own, lane, subgroup, size);
        let scale = (squares / p.cols as f32 + 1e-6).sqrt().recip();
        #[unroll]
        for k in 0..PER {
            regs[k] *= vec4(scale, scale, scale, scale);
        }
        row_store(&regs, y, row * width, width, local);
    }

    /// The index of each row's largest element (rows of at most 4096 scalars, a multiple of
    /// 4; of equal maxima the first): a workgroup a row, each invocation keeping the best of
    /// the `Vec4`s it loads, then `workgroup_argmax` through subgroups.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 128, 256]), grid = [p.rows],
             features(subgroups))]
    pub fn argmax_std(
        p: &Shape,
        x: &[Vec4<f32>],
        out: &mut [u32],
        #[workgroup] values: &mut [f32; GROUP / 4],
        #[workgroup] indices: &mut [u32; GROUP / 4],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / 4);
        let mut best = -f32::MAX;
        let mut at = 0u32;
        for c in (local..width).step_by(GROUP) {
            let v = x[row * width + c];
            #[unroll]
            for lane in 0..4 {
                if v[lane] > best {
                    best = v[lane];
                    at = c * 4 + lane;
                }
            }
        }
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let found = workgroup_argmax(values, indices, best, at, lane, subgroup, size);
        if local == 0 {
            out[row] = found.y;
        }
    }

    /// The sum of `value` over the workgroup of 256, by halving `tile`.
    fn tree_sum(tile: &mut [f32; 256], local: u32, value: f32) -> f32 {
        tile[local] = value;
        workgroup_barrier();
        let mut half = 128u32;
        while half > 0 {
            if local < half {
                tile[local] += tile[local + half];
            }
            workgroup_barrier();
            half /= 2;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// The largest `value` of the workgroup of 256, by halving `tile`.
    fn tree_max(tile: &mut [f32; 256], local: u32, value: f32) -> f32 {
        tile[local] = value;
        workgroup_barrier();
        let mut half = 128u32;
        while half > 0 {
            if local < half {
                tile[local] = tile[local].max(tile[local + half]);
            }
            workgroup_barrier();
            half /= 2;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// The baseline softmax: scalar loads, three passes over the row, trees.
    #[kernel(workgroup = [256], grid = [p.rows])]
    pub fn softmax_baseline(
        p: &Shape,
        x: &[f32],
        y: &mut [f32],
        #[workgroup] tile: &mut [f32; 256],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        let start = row * p.cols;
        let mut top = -f32::MAX;
        for c in (local..p.cols).step_by(256) {
            top = top.max(x[start + c]);
        }
        top = tree_max(tile, local, top);
        let mut sum = 0.0;
        for c in (local..p.cols).step_by(256) {
            sum += (x[start + c] - top).exp();
        }
        sum = tree_sum(tile, local, sum);
        for c in (local..p.cols).step_by(256) {
            y[start + c] = (x[start + c] - top).exp() / sum;
        }
    }

    /// The baseline RMSNorm: scalar loads, two passes over the row, a tree.
    #[kernel(workgroup = [256], grid = [p.rows])]
    pub fn rms_norm_baseline(
        p: &Shape,
        x: &[f32],
        y: &mut [f32],
        #[workgroup] tile: &mut [f32; 256],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        let start = row * p.cols;
        let mut squares = 0.0;
        for c in (local..p.cols).step_by(256) {
            squares += x[start + c] * x[start + c];
        }
        squares = tree_sum(tile, local, squares);
        let scale = (squares / p.cols as f32 + 1e-6).sqrt().recip();
        for c in (local..p.cols).step_by(256) {
            y[start + c] = x[start + c] * scale;
        }
    }

    /// `y = x`, a `Vec4` an invocation: the bandwidth a row kernel can reach.
    #[kernel(workgroup = [256], grid = [ceil_div(x.len(), 256)])]
    pub fn copy(x: &[Vec4<f32>], y: &mut [Vec4<f32>]) {
        let i = global_id().x;
        if i < x.len() && i < y.len() {
            y[i] = x[i];
        }
    }
}

use row_kernels as k;

/// Values in [-4, 4), from a fixed sequence.
fn inputs(n: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_u32;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 24) as f32 * 8.0 - 4.0
        })
        .collect()
}

fn softmax_reference(x: &[f32], cols: usize) -> Vec<f32> {
    x.chunks(cols)
        .flat_map(|row| {
            let top = row.iter().copied().fold(f32::MIN, f32::max);
            let sum: f32 = row.iter().map(|v| (v - top).exp()).sum();
            row.iter()
                .map(move |v| (v - top).exp() / sum)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn rms_reference(x: &[f32], cols: usize) -> Vec<f32> {
    x.chunks(cols)
        .flat_map(|row| {
            let squares: f32 = row.iter().map(|v| v * v).sum();
            let scale = 1.0 / (squares / cols as f32 + 1e-6).sqrt();
            row.iter().map(move |v| v * scale).collect::<Vec<_>>()
        })
        .collect()
}

/// Panics unless `got` is `want` to within `1e-4`, relative to the larger magnitude or 1.
fn check(what: &str, got: &[f32], want: &[f32]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let margin = 1e-4 * g.abs().max(w.abs()).max(1.0);
        assert!(
            (g - w).abs() <= margin,
            "{what}: element {i} is {g}, want {w}"
        );
    }
}

/// Runs every kernel on `rows` rows (softmax rows of `softmax_cols`, RMSNorm rows of
/// `rms_cols`), checks each against its reference, and times each `reps` launches.
pub fn run(
    rt: &Runtime,
    rows: u32,
    softmax_cols: u32,
    rms_cols: u32,
    reps: u32,
) -> Result<Vec<Row>> {
    assert!(
        softmax_cols.is_multiple_of(4) && softmax_cols <= 1024,
        "softmax rows: a multiple of 4, at most 1024"
    );
    assert!(
        rms_cols.is_multiple_of(4) && rms_cols <= 4096,
        "RMSNorm rows: a multiple of 4, at most 4096"
    );
    let mut report = Vec::new();
    for (work, cols) in [("softmax", softmax_cols), ("rms_norm", rms_cols)] {
        let n = (rows * cols) as usize;
        let host = inputs(n);
        let want = if work == "softmax" {
            softmax_reference(&host, cols as usize)
        } else {
            rms_reference(&host, cols as usize)
        };
        let p = k::Shape { rows, cols };
        let x: GpuBuffer<f32> = rt.upload(&host)?;
        let x4: GpuBuffer<[f32; 4]> = rt.upload(bytemuck::cast_slice::<f32, [f32; 4]>(&host))?;
        let mut y = rt.zeros::<f32>(n)?;
        let mut y4 = rt.zeros::<[f32; 4]>(n / 4)?;
        let bytes = 2.0 * n as f64 * 4.0;
        let mut row = |how: String, time: Duration| {
            report.push(Row {
                work: format!("{work} {rows}x{cols}"),
                how,
                time,
                bytes,
            })
        };

        if work == "softmax" {
            let baseline = k::SoftmaxBaseline::new(rt)?;
            let mut record = |b: &mut Batch<'_>| {
                baseline.record(
                    b,
                    k::SoftmaxBaselineArgs {
                        p: &p,
                        x: &x,
                        y: &mut y,
                    },
                )
            };
            let t = time(rt, reps, &mut record)?;
            row("baseline: scalar, 3 passes, tree".into(), t);
            check("softmax baseline", &y.read(rt)?, &want);
            for group in [64, 128, 256] {
                let kernel = k::SoftmaxStd::with_constants(rt, k::SoftmaxStdConstants { group })?;
                let mut record = |b: &mut Batch<'_>| {
                    kernel.record(
                        b,
                        k::SoftmaxStdArgs {
                            p: &p,
                            x: &x4,
                            y: &mut y4,
                        },
                    )
                };
                let t = time(rt, reps, &mut record)?;
                row(
                    format!("std: Vec4 rows in registers, subgroups, GROUP {group}"),
                    t,
                );
                check("softmax std", bytemuck::cast_slice(&y4.read(rt)?), &want);
            }
        } else {
            let baseline = k::RmsNormBaseline::new(rt)?;
            let mut record = |b: &mut Batch<'_>| {
                baseline.record(
                    b,
                    k::RmsNormBaselineArgs {
                        p: &p,
                        x: &x,
                        y: &mut y,
                    },
                )
            };
            let t = time(rt, reps, &mut record)?;
            row("baseline: scalar, 2 passes, tree".into(), t);
            check("rms_norm baseline", &y.read(rt)?, &want);
            for group in [64, 128, 256] {
                let kernel = k::RmsNormStd::with_constants(rt, k::RmsNormStdConstants { group })?;
                let mut record = |b: &mut Batch<'_>| {
                    kernel.record(
                        b,
                        k::RmsNormStdArgs {
                            p: &p,
                            x: &x4,
                            y: &mut y4,
                        },
                    )
                };
                let t = time(rt, reps, &mut record)?;
                row(
                    format!("std: Vec4 rows in registers, subgroups, GROUP {group}"),
                    t,
                );
                check("rms_norm std", bytemuck::cast_slice(&y4.read(rt)?), &want);
            }
        }
        let copy = k::Copy::new(rt)?;
        let mut record = |b: &mut Batch<'_>| copy.record(b, k::CopyArgs { x: &x4, y: &mut y4 });
        let t = time(rt, reps, &mut record)?;
        row("copy, Vec4 (the ceiling)".into(), t);
    }
    report.extend(argmax(rt, rows, rms_cols, reps)?);
    Ok(report)
}

/// The index of each row's first largest element.
fn argmax_reference(x: &[f32], cols: usize) -> Vec<u32> {
    x.chunks(cols)
        .map(|row| {
            let top = row.iter().copied().fold(f32::MIN, f32::max);
            row.iter().position(|&v| v == top).unwrap_or(0) as u32
        })
        .collect()
}

/// Argmax of `rows` rows of `cols`, checked exactly against the reference (most rows hold
/// their maximum twice, so the first must win), and timed; bytes: the input once.
fn argmax(rt: &Runtime, rows: u32, cols: u32, reps: u32) -> Result<Vec<Row>> {
    let n = (rows * cols) as usize;
    let mut host = inputs(n);
    for (r, row) in host.chunks_mut(cols as usize).enumerate() {
        // The row's maximum again, later in the row: the first must still win.
        let top = row.iter().copied().fold(f32::MIN, f32::max);
        let at = row.iter().position(|&v| v == top).unwrap_or(0);
        let again = (at + 1 + r % (cols as usize - 1)) % cols as usize;
        if again > at {
            row[again] = top;
        }
    }
    let want = argmax_reference(&host, cols as usize);
    let p = k::Shape { rows, cols };
    let x4: GpuBuffer<[f32; 4]> = rt.upload(bytemuck::cast_slice::<f32, [f32; 4]>(&host))?;
    let mut out = rt.zeros::<u32>(rows as usize)?;
    let mut report = Vec::new();
    for group in [64, 128, 256] {
        let kernel = k::ArgmaxStd::with_constants(rt, k::ArgmaxStdConstants { group })?;
        let mut record = |b: &mut Batch<'_>| {
            let args = k::ArgmaxStdArgs {
                p: &p,
                x: &x4,
                out: &mut out,
            };
            kernel.record(b, args)
        };
        let t = time(rt, reps, &mut record)?;
        assert_eq!(out.read(rt)?, want, "argmax std, GROUP {group}");
        report.push(Row {
            work: format!("argmax {rows}x{cols}"),
            how: format!("std: Vec4 loads, workgroup_argmax, GROUP {group}"),
            time: t,
            bytes: n as f64 * 4.0,
        });
    }
    Ok(report)
}

fn main() -> Result<()> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let (rows, softmax_cols, rms_cols) = match args[..] {
        [r, s, m] => (r, s, m),
        _ => (16384, 1000, 4096),
    };
    let rt = Runtime::new()?;
    print_table(&rt, &run(&rt, rows, softmax_cols, rms_cols, 20)?);
    Ok(())
}
