//! Times `tessera-nn`'s row ops (`Softmax`, `RmsNorm`, `LayerNorm`), forward and backward,
//! and the loss `SoftmaxCrossEntropy`'s forward, in the table format of the root crate's
//! `std_rows` example; `bench/nn_rows_bench.py` times PyTorch on the same work. Bytes per
//! pass: each `[rows, cols]` matrix read or written once (the per-row and per-column vectors
//! are left out). Rows longer than `MAX_COLS` time the loss alone (the other ops refuse them).
//!
//! ```text
//! cargo build --release -p tessera-nn --example rows_bench
//! target/release/examples/rows_bench [ROWS COLS], default 16384 4096
//! ```

// The root crate's examples' timing (a warmed-up GPU, the median of 3 submissions).
#[path = "../../examples/shared/timing.rs"]
#[allow(dead_code)] // `Row`, `print_table`, `time_after`: this table has its own columns
mod timing;

use std::time::Duration;

use tessera::{GpuBuffer, Result, Runtime};
use tessera_nn::{
    LayerNorm, LayerNormBackward, LayerNormForward, LossForward, LossShape, RmsNorm,
    RmsNormBackward, RmsNormForward, RowsShape, Softmax, SoftmaxBackward, SoftmaxCrossEntropy,
    SoftmaxForward, MAX_COLS,
};

/// Launches a timing submission holds.
const REPS: u32 = 20;

/// The buffers every op reads or writes, each `[rows, cols]` or `[cols]` or `[rows]`.
struct Buffers {
    x: GpuBuffer<f32>,
    y: GpuBuffer<f32>,
    grad_y: GpuBuffer<f32>,
    grad_x: GpuBuffer<f32>,
    scale: GpuBuffer<f32>,
    bias: GpuBuffer<f32>,
    grad_scale: GpuBuffer<f32>,
    grad_bias: GpuBuffer<f32>,
    mean: GpuBuffer<f32>,
    rstd: GpuBuffer<f32>,
}

impl Buffers {
    fn new(rt: &Runtime, shape: RowsShape) -> Result<Self> {
        let (rows, cols) = (shape.rows as usize, shape.cols as usize);
        let values = |n: usize, seed: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 7 + seed) % 17) as f32 / 8.0 - 1.0)
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

/// One table row: the work, the pass, its time and the matrices it moves.
fn print_row(shape: RowsShape, work: &str, pass: &str, time: Duration, matrices: f64) {
    let bytes = matrices * f64::from(shape.rows) * f64::from(shape.cols) * 4.0;
    let secs = time.as_secs_f64();
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
fn cross_entropy(rt: &Runtime, shape: RowsShape, b: &mut Buffers) -> Result<()> {
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
    print_row(shape, "cross_entropy", "forward", t, 2.0);
    Ok(())
}

fn softmax(rt: &Runtime, shape: RowsShape, b: &mut Buffers) -> Result<()> {
    let op = Softmax::new(rt)?;
    op.prepare(rt)?;
    let t = timing::time(rt, REPS, |batch| {
        let (x, y) = (&b.x, &mut b.y);
        op.forward(batch, SoftmaxForward { shape, x, y })
    })?;
    print_row(shape, "softmax", "forward", t, 2.0);
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
    print_row(shape, "softmax", "backward", t, 3.0);
    Ok(())
}

fn rms_norm(rt: &Runtime, shape: RowsShape, b: &mut Buffers) -> Result<()> {
    let op = RmsNorm::new(rt)?;
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
    print_row(shape, "rms_norm", "forward", t, 2.0);
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
    print_row(shape, "rms_norm", "backward (x, scale)", t, 3.0);
    Ok(())
}

fn layer_norm(rt: &Runtime, shape: RowsShape, b: &mut Buffers) -> Result<()> {
    let op = LayerNorm::new(rt)?;
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
    print_row(shape, "layer_norm", "forward", t, 2.0);
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
    print_row(shape, "layer_norm", "backward (x, scale, bias)", t, 3.0);
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("ROWS COLS"))
        .collect();
    let (rows, cols) = match args[..] {
        [rows, cols] => (rows, cols),
        _ => (16384, 4096),
    };
    let rt = Runtime::new()?;
    let shape = RowsShape { rows, cols };
    let mut buffers = Buffers::new(&rt, shape)?;
    println!("{} ({:?})", rt.info().name, rt.info().backend);
    println!("| work | pass | ms | TB/s |");
    println!("| --- | --- | --- | --- |");
    cross_entropy(&rt, shape, &mut buffers)?;
    if cols <= MAX_COLS {
        softmax(&rt, shape, &mut buffers)?;
        rms_norm(&rt, shape, &mut buffers)?;
        layer_norm(&rt, shape, &mut buffers)?;
    }
    Ok(())
}
