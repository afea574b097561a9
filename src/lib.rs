//! tessera: GPU compute kernels for Rust, declared as annotated Rust.
//!
//! This facade re-exports the runtime ([`Runtime`], [`GpuBuffer`], [`Batch`], ...) and the
//! kernel macros, and is the one path generated code uses to reach them.
#![warn(missing_docs)]

pub use kernel_runtime::*;

/// What generated code refers to; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use bytemuck;
    pub use kernel_runtime;
}
