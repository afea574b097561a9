//! Times `tessera-nn`'s `RadixSort` on `f32` keys (alone, and with a `u32` value each), in the
//! table format of `rows_bench`; `bench/sort_bench.py` times `torch.sort` on the same keys.
//! Bytes: each key read once and written once (8 a key), whatever the sort moves, so the
//! figures compare times. Each size twice: on the runtime's device, whose sort ranks keys
//! through subgroups where it has them, and on a device of the same adapter without
//! subgroups, whose sort ranks them by trees in workgroup memory. After the table, one sort of
//! keys alone of each size and way profiled: each kernel's time summed over the passes.
//!
//! ```text
//! cargo build --release -p tessera-nn --example sort_bench
//! target/release/examples/sort_bench [LOG2_KEYS..], default 20 26
//! ```

// The root crate's examples' timing (a warmed-up GPU, the median of 5 submissions).
#[path = "../../examples/shared/timing.rs"]
#[allow(dead_code)] // `Row`, `print_table`, `time_after`: this table has its own columns
mod timing;

use std::time::Duration;

use tessera::{wgpu, Result, Runtime};
use tessera_nn::RadixSort;

/// Sorts a timing submission holds.
const REPS: u32 = 10;

/// A runtime on `like`'s adapter over a device with `like`'s features but subgroups, and its
/// limits.
fn without_subgroups(like: &Runtime) -> Result<Runtime> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let adapter = adapters
        .into_iter()
        .find(|a| a.get_info().name == like.info().name)
        .ok_or_else(|| tessera::Error::NoAdapter {
            requested: Some(like.info().name.clone()),
            available: Vec::new(),
        })?;
    let required_features = like.device().features()
        - wgpu::Features::SUBGROUP
        - wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
    let descriptor = wgpu::DeviceDescriptor {
        required_features,
        required_limits: like.device().limits(),
        ..Default::default()
    };
    let (device, queue) =
        pollster::block_on(adapter.request_device(&descriptor)).map_err(|source| {
            tessera::Error::RequestDevice {
                adapter: like.info().name.clone(),
                source,
            }
        })?;
    Ok(Runtime::from_wgpu(device, queue))
}

fn print_row(log2: u32, how: &str, time: Duration) {
    let bytes = 8.0 * f64::from(1u32 << log2);
    let secs = time.as_secs_f64();
    println!(
        "| sort f32 2^{log2} | {how} | {:.4} | {:.3} |",
        secs * 1e3,
        bytes / secs / 1e12
    );
}

fn main() -> Result<()> {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("LOG2_KEYS"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![20, 26]
    } else {
        sizes
    };
    let rt = Runtime::new()?;
    let trees = without_subgroups(&rt)?;
    println!("{} ({:?})", rt.info().name, rt.info().backend);
    println!("| work | how | ms | TB/s |");
    println!("| --- | --- | --- | --- |");
    let mut profiles = Vec::new();
    for log2 in sizes {
        let n = 1usize << log2;
        // Keys spread over every exponent and sign bit a normal f32 sorts by (a fixed
        // scramble, so runs compare).
        let keys: Vec<f32> = (0..n as u32)
            .map(|i| {
                let mixed = i.wrapping_mul(2_654_435_761).rotate_left(13) ^ 0x5bd1_e995;
                (mixed as f32 / u32::MAX as f32 - 0.5) * 1e6
            })
            .collect();
        for (rt, way) in [(&rt, ""), (&trees, ", trees")] {
            let sort = RadixSort::new(rt)?;
            sort.prepare(rt)?;
            let mut gpu = rt.upload(&keys)?;
            let t = timing::time(rt, REPS, |batch| sort.sort(batch, &mut gpu))?;
            print_row(log2, &format!("keys{way}"), t);
            let mut values = rt.upload(&(0..n as u32).collect::<Vec<u32>>())?;
            let mut gpu = rt.upload(&keys)?;
            let t = timing::time(rt, REPS, |batch| {
                sort.sort_pairs(batch, &mut gpu, &mut values)
            })?;
            print_row(log2, &format!("pairs (u32 values){way}"), t);
            profiles.push((log2, way, profile(rt, &sort, &keys)?));
        }
    }
    for (log2, way, kernels) in profiles {
        let parts: Vec<String> = kernels
            .iter()
            .map(|(label, ms)| format!("{label} {ms:.4} ms"))
            .collect();
        println!("profile of 2^{log2} keys{way}: {}", parts.join(", "));
    }
    Ok(())
}

/// One sort of `keys` alone, profiled: each kernel's time summed over the passes, in order of
/// first appearance.
fn profile(rt: &Runtime, sort: &RadixSort, keys: &[f32]) -> Result<Vec<(String, f64)>> {
    let mut gpu = rt.upload(keys)?;
    let mut batch = rt.batch();
    sort.sort(&mut batch, &mut gpu)?;
    let timing = batch.submit_profiled()?;
    let mut kernels: Vec<(String, f64)> = Vec::new();
    for (label, time) in timing.dispatches {
        let ms = time.map_or(0.0, |t| t.as_secs_f64() * 1e3);
        match kernels.iter_mut().find(|(l, _)| *l == label) {
            Some((_, total)) => *total += ms,
            None => kernels.push((label, ms)),
        }
    }
    Ok(kernels)
}
