//! Helpers shared by the integration tests.
#![allow(dead_code)]

use tessera::Runtime;

/// A runtime on whatever adapter this machine has (lavapipe in CI).
pub fn runtime() -> Runtime {
    match Runtime::new() {
        Ok(rt) => rt,
        Err(error) => panic!("these tests need a GPU adapter: {error}"),
    }
}

/// Asserts that two float slices agree to `tolerance`, relative to the larger magnitude (or 1).
pub fn assert_close(got: &[f32], want: &[f32], tolerance: f32) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let scale = g.abs().max(w.abs()).max(1.0);
        assert!(
            (g - w).abs() <= tolerance * scale,
            "element {i}: got {g}, want {w}"
        );
    }
}
