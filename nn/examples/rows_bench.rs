//! Times `tessera-nn`'s row ops (`Softmax`, `RmsNorm`, `LayerNorm`), forward and backward,
//! and the loss `SoftmaxCrossEntropy`'s forward, in the table format of the root crate's
//! `std_rows` example; `bench/nn_rows_bench.py` times PyTorch on the same work. Bytes per
//! pass: each `[rows, cols]` matrix read or written once (the per-row and per-column vectors
//! are left out). Rows longer than `MAX_COLS` time the loss alone (the other ops take them a
//! segment at a time, untimed here).
//! With `f16`, the ops run over `f16` storage (the loss, `f32` only, is left out) and the bytes
//! are counted at 2 a scalar.
//!
//! ```text
//! cargo build --release -p tessera-nn --example rows_bench
//! target/release/examples/rows_bench [ROWS COLS] [f16], default 16384 4096 in f32
//! ```

// The root crate's examples' timing (a warmed-up GPU, the median of 5 submissions).
#[path = "../../examples/shared/timing.rs"]
#[allow(dead_code)] // `Row`, `print_table`, `time_after`: this table has its own columns
mod timing;

use std::time::Duration;

use tessera::{half::f16, GpuBuffer, Result, Runtime};
use tessera_nn::{
    LayerNorm, LayerNormBackward, LayerNormForward, LossForward, LossShape, RmsNorm,
    RmsNormBackward, RmsNormForward, RowElement, RowsShape, Softmax, SoftmaxBackward,
    SoftmaxCrossEntropy, SoftmaxForward, MAX_COLS,
};

/// Launches a timing submission holds.
const REPS: u32 = 20;

/// A storage type the ops are timed over, made from `f32` values.
trait Storage: RowElement {
    fn of(v: f32) -> Self;
}

impl Storage for f32 {
    fn of(v: f32) -> Self {
        v
    }
}

impl Storage for f16 {
    fn of(v: f32) -> Self {
        f16::from_f32(v)
    }
}

/// The buffers every op reads or writes, each `[rows, cols]` or `[cols]` or `[rows]`: the
/// matrices and parameters in `E`, the per-row statistics in `f32`.
struct Buffers<E: RowElement> {
    x: GpuBuffer<E>,
    y: GpuBuffer<E>,
    grad_y: GpuBuffer<E>,
    grad_x: GpuBuffer<E>,
    scale: GpuBuffer<E>,
    bias: GpuBuffer<E>,
    grad_scale: GpuBuffer<E>,
    grad_bias: GpuBuffer<E>,
    mean: GpuBuffer<f32>,
    rstd: GpuBuffer<f32>,
}

impl<E: Storage> Buffers<E> {
    fn new(rt: &Runtime, shape: RowsShape) -> Result<Self> {
        let (rows, cols) = (shape.rows as usize, shape.cols as usize);
        let values = |n: usize, seed: usize| -> Vec<E> {
            (0..n)
                .map(|i| E::of(((i * 7 + seed) % 17) as f32 / 8.0 - 1.0))
                .collect()
        };
        Ok(Buffers {
            x: rt.upload(&values(rows * cols, 1))?,
            y: rt.zeros(rows * cols)?,
            grad_y: rt.upload(&values(rows * cols, 2))?,
            grad_x: rt.zeros(rows * cols)?,
            scale: rt.upload(&values(cols, 3))?,
            bias: rt.upload(&values(cols, 4))?,
            grad_scale: rt.zeros(cols)?,
            grad_bias: rt.zeros(cols)?,
            mean: rt.zeros(rows)?,
            rstd: rt.zeros(rows)?,
        })
    }
}

/// One table row: the work (over `E`), the pass, its time and the matrices it moves.
fn print_row<E>(shape: RowsShape, work: &str, pass: &str, time: Duration, matrices: f64) {
    let scalar = std::mem::size_of::<E>();
    let bytes = matrices * f64::from(shape.rows) * f64::from(shape.cols) * scalar as f64;
    let secs = time.as_secs_f64();
    let work = if scalar == 2 {
        format!("{work} f16")
    } else {
        work.to_owned()
    };
    println!(
        "| {work} {}x{} | {pass} | {:.4} | {:.2} |",
        shape.rows,
        shape.cols,
        secs * 1e3,
        bytes / secs / 1e12
    );
}

/// The loss's forward: `probs` (in `y`) and each row's loss (in `rstd`), every row's label
/// its row index modulo `cols`.
fn cross_entropy(rt: &Runtime, shape: RowsShape, b: &mut Buffers<f32>) -> Result<()> {
    let op = SoftmaxCrossEntropy::new(rt)?;
    let labels: Vec<u32> = (0..shape.rows).map(|r| r % shape.cols).collect();
    let labels = rt.upload(&labels)?;
    let loss_shape = LossShape {
        rows: shape.rows,
        classes: shape.cols,
    };
    let t = timing::time(rt, REPS, |batch| {
        let args = LossForward {
            shape: loss_shape,
            logits: &b.x,
            labels: &labels,
            probs: &mut b.y,
            losses: &mut b.rstd,
        };
        op.forward(batch, args)
    })?;
    print_row::<f32>(shape, "cross_entropy", "forward", t, 2.0);
    Ok(())
}

fn softmax<E: Storage>(rt: &Runtime, shape: RowsShape, b: &mut Buffers<E>) -> Result<()> {
    let op = Softmax::<E>::new(rt)?;
    op.prepare(rt)?;
    let t = timing::time(rt, REPS, |batch| {
        let (x, y) = (&b.x, &mut b.y);
        op.forward(batch, SoftmaxForward { shape, x, y })
    })?;
    print_row::<E>(shape, "softmax", "forward", t, 2.0);
    let t = timing::time(rt, REPS, |batch| {
        let (y, grad_y, grad_x) = (&b.y, &b.grad_y, &mut b.grad_x);
        op.backward(
            batch,
            SoftmaxBackward {
                shape,
                y,
                grad_y,
                grad_x,
            },
        )
    })?;
    print_row::<E>(shape, "softmax", "backward", t, 3.0);
    Ok(())
}

fn rms_norm<E: Storage>(rt: &Runtime, shape: RowsShape, b: &mut Buffers<E>) -> Result<()> {
    let op = RmsNorm::<E>::new(rt)?;
    op.prepare(rt)?;
    let t = timing::time(rt, REPS, |batch| {
        let (x, scale, y, rstd) = (&b.x, &b.scale, &mut b.y, &mut b.rstd);
        op.forward(
            batch,
            RmsNormForward {
                shape,
                x,
                scale,
                y,
                rstd,
            },
        )
    })?;
    print_row::<E>(shape, "rms_norm", "forward", t, 2.0);
    let t = timing::time(rt, REPS, |batch| {
        let args = RmsNormBackward {
            shape,
            x: &b.x,
            scale: &b.scale,
            rstd: &b.rstd,
            grad_y: &b.grad_y,
            grad_x: &mut b.grad_x,
            grad_scale: &mut b.grad_scale,
        };
        op.backward(batch, args)
    })?;
    print_row::<E>(shape, "rms_norm", "backward (x, scale)", t, 3.0);
    Ok(())
}

fn layer_norm<E: Storage>(rt: &Runtime, shape: RowsShape, b: &mut Buffers<E>) -> Result<()> {
    let op = LayerNorm::<E>::new(rt)?;
    op.prepare(rt)?;
    let t = timing::time(rt, REPS, |batch| {
        let args = LayerNormForward {
            shape,
            x: &b.x,
            scale: &b.scale,
            bias: &b.bias,
            y: &mut b.y,
            mean: &mut b.mean,
            rstd: &mut b.rstd,
        };
        op.forward(batch, args)
    })?;
    print_row::<E>(shape, "layer_norm", "forward", t, 2.0);
    let t = timing::time(rt, REPS, |batch| {
        let args = LayerNormBackward {
            shape,
            x: &b.x,
            scale: &b.scale,
            mean: &b.mean,
            rstd: &b.rstd,
            grad_y: &b.grad_y,
            grad_x: &mut b.grad_x,
            grad_scale: &mut b.grad_scale,
            grad_bias: &mut b.grad_bias,
        };
        op.backward(batch, args)
    })?;
    print_row::<E>(shape, "layer_norm", "backward (x, scale, bias)", t, 3.0);
    Ok(())
}

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let halves = args.last().is_some_and(|a| a == "f16");
    if halves {
        args.pop();
    }
    let sizes: Vec<u32> = args.iter().map(|a| a.parse().expect("ROWS COLS")).collect();
    let (rows, cols) = match sizes[..] {
        [rows, cols] => (rows, cols),
        _ => (16384, 4096),
    };
    let rt = Runtime::new()?;
    let shape = RowsShape { rows, cols };
    println!("{} ({:?})", rt.info().name, rt.info().backend);
    println!("| work | pass | ms | TB/s |");
    println!("| --- | --- | --- | --- |");
    if halves {
        return time_ops(&rt, shape, &mut Buffers::<f16>::new(&rt, shape)?);
    }
    let mut buffers = Buffers::<f32>::new(&rt, shape)?;
    cross_entropy(&rt, shape, &mut buffers)?;
    time_ops(&rt, shape, &mut buffers)
}

/// Times softmax and the norms over `E`, for rows a workgroup holds.
fn time_ops<E: Storage>(rt: &Runtime, shape: RowsShape, buffers: &mut Buffers<E>) -> Result<()> {
    if shape.cols <= MAX_COLS {
        softmax(rt, shape, buffers)?;
        rms_norm(rt, shape, buffers)?;
        layer_norm(rt, shape, buffers)?;
    }
    Ok(())
}
