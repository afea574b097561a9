//! Helpers shared by the integration tests.
#![allow(dead_code)]

use tessera::{Autotune, Batch, Runtime};

/// A runtime on whatever adapter this machine has (lavapipe in CI), with autotuning off, so
/// every op runs its fixed, documented choice whatever the machine.
pub fn runtime() -> Runtime {
    match Runtime::new() {
        Ok(rt) => {
            rt.set_autotune(Autotune::Off);
            rt.set_autotune_cache(None);
            rt
        }
        Err(error) => panic!("these tests need a GPU adapter: {error}"),
    }
}

/// A runtime like `runtime()`'s, on the same adapter, over a device made with the default
/// descriptor: no optional features, and WebGPU's default limits (16 KiB of workgroup
/// memory, where lavapipe offers more; the `nn` ops run their small blocking there).
pub fn plain_device_runtime(like: &Runtime) -> Runtime {
    let instance = tessera::wgpu::Instance::new(
        tessera::wgpu::InstanceDescriptor::new_without_display_handle_from_env(),
    );
    let adapters = pollster::block_on(instance.enumerate_adapters(tessera::wgpu::Backends::all()));
    let adapter = adapters
        .into_iter()
        .find(|a| a.get_info().name == like.info().name)
        .expect("the runtime's adapter is enumerable");
    let descriptor = tessera::wgpu::DeviceDescriptor::default();
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor))
        .expect("a device with WebGPU's default limits");
    let rt = Runtime::from_wgpu(device, queue);
    rt.set_autotune(Autotune::Off);
    rt.set_autotune_cache(None);
    rt
}

/// A runtime like `runtime()`'s, on the same adapter, over a device with the features `like`'s
/// device has (cooperative matrices included) and `like`'s limits as `limit` changes them.
pub fn limited_runtime(like: &Runtime, limit: impl FnOnce(&mut tessera::wgpu::Limits)) -> Runtime {
    runtime_with(like, tessera::wgpu::Features::empty(), limit)
}

/// A runtime like `runtime()`'s, on the same adapter, over a device with `like`'s limits and
/// `like`'s features but `without` (the way an op takes where a feature is missing, tested
/// with the limits that the sanitizer's extra binding needs).
pub fn runtime_without(like: &Runtime, without: tessera::wgpu::Features) -> Runtime {
    runtime_with(like, without, |_| {})
}

fn runtime_with(
    like: &Runtime,
    without: tessera::wgpu::Features,
    limit: impl FnOnce(&mut tessera::wgpu::Limits),
) -> Runtime {
    use tessera::wgpu;
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let adapter = adapters
        .into_iter()
        .find(|a| a.get_info().name == like.info().name)
        .expect("the runtime's adapter is enumerable");
    let required_features = like.device().features() - without;
    let mut required_limits = like.device().limits();
    limit(&mut required_limits);
    let experimental_features =
        if required_features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
            // SAFETY: as in `Runtime::new`, which took the same opt-in for `like`'s device:
            // only the pipelines of kernels that declare `features(cooperative_matrix)` use
            // the experimental feature.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
    let descriptor = wgpu::DeviceDescriptor {
        required_features,
        required_limits,
        experimental_features,
        ..Default::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor))
        .expect("a device with fewer of the runtime's features or lower limits");
    let rt = Runtime::from_wgpu(device, queue);
    rt.set_autotune(Autotune::Off);
    rt.set_autotune_cache(None);
    rt
}

/// A runtime that tunes (whatever `TESSERA_AUTOTUNE` says) and keeps its choices in memory.
pub fn tuning_runtime() -> Runtime {
    let rt = runtime();
    rt.set_autotune(Autotune::On);
    rt
}

/// Asserts that two float slices agree to `tolerance`, relative to the larger magnitude (or 1):
/// `approx`'s `relative_eq!` with `epsilon` and `max_relative` both `tolerance`, element by
/// element, so that a failure names the first element that differs (its `assert_relative_eq!`
/// on whole slices prints only the two slices).
pub fn assert_close(got: &[f32], want: &[f32], tolerance: f32) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            approx::relative_eq!(g, w, epsilon = tolerance, max_relative = tolerance),
            "element {i}: got {g}, want {w}"
        );
    }
}

pub use rand::rngs::ChaCha8Rng;
pub use rand::RngExt;
use rand::SeedableRng;

/// The tests' generator: the library's `ChaCha8Rng`, whose stream for a seed is the same on
/// every platform, so a seed printed by a failing property test reproduces it anywhere.
/// Integers come from `rng.random_range(lo..=hi)` ([`RngExt`]).
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `n` values uniform in [-1, 1).
pub fn values(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

/// Submits `batch`, waits for it and returns the entry points it dispatched, in order.
pub fn kernels_run(batch: Batch<'_>) -> Vec<String> {
    batch
        .submit_timed()
        .unwrap()
        .dispatches
        .into_iter()
        .map(|(label, _)| label)
        .collect()
}

/// How many random cases a property test runs: `TESSERA_PROPERTY_CASES` when set (for long
/// runs, e.g. `TESSERA_PROPERTY_CASES=500 cargo test --release -p tessera-nn --test gemm --test conv`),
/// otherwise `default`, the bounded number CI runs.
pub fn property_cases(default: usize) -> usize {
    std::env::var("TESSERA_PROPERTY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The seed of a property test's generator: `TESSERA_PROPERTY_SEED` when set, else `default`.
/// A failing case prints its shape; rerun with the same seed to reproduce it.
pub fn property_seed(default: u64) -> u64 {
    std::env::var("TESSERA_PROPERTY_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The entry points of a WGSL module whose names start with one of `prefixes`.
pub fn entry_points(wgsl: &str, prefixes: &[&str]) -> std::collections::BTreeSet<String> {
    let mut lines = wgsl.lines();
    let mut found = std::collections::BTreeSet::new();
    while let Some(line) = lines.next() {
        if !line.starts_with("@compute") {
            continue;
        }
        let Some(name) = lines
            .next()
            .and_then(|f| f.strip_prefix("fn "))
            .and_then(|f| f.split('(').next())
        else {
            continue;
        };
        if prefixes.iter().any(|p| name.starts_with(p)) {
            found.insert(name.to_owned());
        }
    }
    found
}
