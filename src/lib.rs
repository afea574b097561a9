//! tessera: GPU compute kernels for Rust, declared as annotated Rust.
//!
//! This facade re-exports the runtime ([`Runtime`], [`GpuBuffer`], [`Batch`], ...) and the
//! kernel macros ([`kernels`], [`kernel`], [`Params`]), and is the one path generated code
//! uses to reach them.
#![warn(missing_docs)]

// Lets this crate's own modules use the macros, whose output names `::tessera`.
extern crate self as tessera;

pub use kernel_macros::{kernel, kernels, Params};
pub use kernel_runtime::*;

/// What generated code refers to; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use bytemuck;
    pub use kernel_runtime;

    /// `a / b` rounded up; 0 when `b` is 0 (the launcher then dispatches nothing).
    pub const fn ceil_div(a: u64, b: u64) -> u64 {
        match b {
            0 => 0,
            _ => a.div_ceil(b),
        }
    }
}
