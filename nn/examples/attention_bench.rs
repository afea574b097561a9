//! Times `tessera-nn`'s `Attention`, forward and backward, in strict f32 and (where the device
//! has them) on the tensor cores over f32 and f16 storage, at the issue's shapes
//! (batch x heads, sequence, head dim) = (32, 1024, 64), (8, 4096, 64), (16, 2048, 128), causal
//! and not; `bench/attention_bench.py` times PyTorch's `scaled_dot_product_attention` on the
//! same shapes, in the same table format.
//!
//! FLOPs as FlashAttention counts them: the forward's two products `4 * BH * N^2 * D`, half
//! of that when causal; the backward 2.5 times the forward (five products to its two).
//!
//! ```text
//! cargo build --release -p tessera-nn --example attention_bench
//! target/release/examples/attention_bench              # forward and backward
//! target/release/examples/attention_bench --forward    # the forward alone
//! ```

// The root crate's examples' timing (a warmed-up GPU, the median of 5 submissions).
#[path = "../../examples/shared/timing.rs"]
#[allow(dead_code)] // `Row`, `print_table`, `time_after`: this table has its own columns
mod timing;

use tessera::half::f16;
use tessera::wgpu::CooperativeScalarType::{F16, F32};
use tessera::{Result, Runtime};
use tessera_nn::{
    Attention, AttentionBackward, AttentionElement, AttentionForward, AttentionMask,
    AttentionShape, Precision,
};

/// Calls a timing submission holds.
const REPS: u32 = 5;

/// The issue's shapes: (batch x heads, sequence, head dim).
const SHAPES: [(u32, u32, u32); 3] = [(32, 1024, 64), (8, 4096, 64), (16, 2048, 128)];

fn main() -> Result<()> {
    let forward_only = std::env::args().any(|a| a == "--forward");
    let rt = Runtime::new()?;
    println!("{} ({:?})", rt.info().name, rt.info().backend);
    println!("| shape | mask | pass | who | ms | TFLOP/s |");
    println!("| --- | --- | --- | --- | --- | --- |");
    bench(
        &rt,
        &Attention::new(&rt)?,
        "tessera f32",
        f32::from,
        forward_only,
    )?;
    if rt.info().has_cooperative_matrix(16, F16, F32) {
        let tensor = Precision::TensorCoreF16;
        let over_f32 = Attention::<f32>::with_precision(&rt, tensor)?;
        bench(
            &rt,
            &over_f32,
            "tessera tensor cores, f32 storage",
            f32::from,
            forward_only,
        )?;
        let over_f16 = Attention::<f16>::with_precision(&rt, tensor)?;
        bench(
            &rt,
            &over_f16,
            "tessera tensor cores, f16 storage",
            f16::from_f32,
            forward_only,
        )?;
    }
    Ok(())
}

/// Times `attention` (storing `E`, made from `f32` by `stored`) at every shape, both masks,
/// and prints a row for each pass as `who`.
fn bench<E: AttentionElement + bytemuck::Pod>(
    rt: &Runtime,
    attention: &Attention<E>,
    who: &str,
    stored: fn(f32) -> E,
    forward_only: bool,
) -> Result<()> {
    attention.prepare(rt)?;
    for (bh, n, d) in SHAPES {
        let shape = AttentionShape {
            batch: bh,
            heads: 1,
            kv_heads: 1,
            queries: n,
            keys: n,
            head_dim: d,
        };
        let len = (bh * n * d) as usize;
        // Values of a fixed scramble in [-1, 1).
        let values = |salt: u32| -> Vec<E> {
            (0..len as u32)
                .map(|i| {
                    let mixed = (i ^ salt).wrapping_mul(2_654_435_761).rotate_left(11);
                    stored(mixed as f32 / u32::MAX as f32 * 2.0 - 1.0)
                })
                .collect()
        };
        let (q, k, v) = (
            rt.upload(&values(1))?,
            rt.upload(&values(2))?,
            rt.upload(&values(3))?,
        );
        let grad_out = rt.upload(&values(4))?;
        let (mut out, mut lse) = (rt.zeros::<E>(len)?, rt.zeros::<f32>((bh * n) as usize)?);
        let (mut grad_q, mut grad_k, mut grad_v) = (
            rt.zeros::<E>(len)?,
            rt.zeros::<E>(len)?,
            rt.zeros::<E>(len)?,
        );
        for mask in [AttentionMask::None, AttentionMask::Causal] {
            let scale = shape.default_scale();
            let fwd = timing::time(rt, REPS, |batch| {
                let args = AttentionForward {
                    shape,
                    mask,
                    scale,
                    q: &q,
                    k: &k,
                    v: &v,
                    key_lengths: None,
                    out: &mut out,
                    lse: &mut lse,
                };
                attention.forward(batch, args)
            })?;
            let bwd = if forward_only {
                None
            } else {
                Some(timing::time(rt, REPS, |batch| {
                    let args = AttentionBackward {
                        shape,
                        mask,
                        scale,
                        q: &q,
                        k: &k,
                        v: &v,
                        key_lengths: None,
                        out: &out,
                        lse: &lse,
                        grad_out: &grad_out,
                        grad_q: &mut grad_q,
                        grad_k: &mut grad_k,
                        grad_v: &mut grad_v,
                    };
                    attention.backward(batch, args)
                })?)
            };
            let causal = mask == AttentionMask::Causal;
            let flops = 4.0 * f64::from(bh) * f64::from(n).powi(2) * f64::from(d)
                / if causal { 2.0 } else { 1.0 };
            let name = if causal { "causal" } else { "none" };
            let passes = [
                ("forward", Some(fwd), flops),
                ("backward", bwd, 2.5 * flops),
            ];
            for (pass, time, flops) in passes.into_iter().filter_map(|(p, t, f)| Some((p, t?, f))) {
                let secs = time.as_secs_f64();
                println!(
                    "| {bh}x{n}x{d} | {name} | {pass} | {who} | {:.3} | {:.2} |",
                    secs * 1e3,
                    flops / secs / 1e12
                );
            }
        }
    }
    Ok(())
}
