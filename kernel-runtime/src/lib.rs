//! tessera's runtime: the layer every generated launcher stands on.
//!
//! - [`Runtime`] chooses an adapter (a hardware GPU first; `TESSERA_ADAPTER` picks one by name;
//!   a software adapter such as Mesa's lavapipe last), creates the device with the adapter's own
//!   limits and optional features, and reports what it got. [`Runtime::from_wgpu`] adopts an
//!   application's own device.
//! - [`GpuBuffer`] is a typed storage buffer: upload, zeroed, overwrite, read back.
//! - [`Runtime::pipeline`] builds each compute pipeline once and caches it; [`Prepare`] builds
//!   a launcher's (or a whole collection's) ahead of its first dispatch.
//! - [`Runtime::dispatch`] queues one dispatch; queued dispatches are submitted together when
//!   something needs them ([`Runtime::flush`]). A [`Batch`] records several into one command
//!   buffer and submits them once, optionally timed ([`Timing`]).
//! - [`Runtime::autotune`] times the candidate ways to run an operation once per device and
//!   shape bucket and remembers the fastest, in memory and in a cache file ([`Autotune`]).
//! - Every failure is an [`Error`] value: wgpu's validation and out-of-memory errors are captured
//!   in error scopes, never left to wgpu's panicking default handler.
//! - Buffers, pipelines and batches belong to the [`Runtime`] that made them: one used with
//!   another runtime is refused with [`Error::ForeignBuffer`] or [`Error::ForeignPipeline`]
//!   before anything is recorded, not left to panic inside wgpu or to bind another buffer
//!   (a generated launcher names the kernel and the parameter).
//! - A buffer larger than the device binds to one storage binding can be made and used, but
//!   binding it is refused with [`Error::BindingTooLarge`], which names the kernel and the
//!   binding (a generated launcher's parameter) and says what to do instead.
//! - [`Runtime::with_sanitizer`] (or `TESSERA_SANITIZE=on`) builds every pipeline with checks
//!   of each access to workgroup memory and storage buffers, and reports the first data race
//!   or index out of bounds of a dispatch as [`Error::Hazard`], naming the kernel, the array
//!   and element, the source lines and the invocations ([`sanitizer::Hazard`]).
//! - Nothing needs an executor to block: submission, timing and readback have `async` forms
//!   ([`Runtime::flush_async`], [`Batch::submit_async`], [`Batch::submit_timed_async`],
//!   [`Batch::submit_profiled_async`], [`Runtime::wait_async`], [`GpuBuffer::read_async`],
//!   [`GpuBuffer::read_range_async`]), which is also what a browser
//!   build needs. The blocking forms are the same futures, waited for on the calling thread.
//!   On native backends an `async` form polls the device, without waiting, each time it is
//!   polled, and leaves the waiting for the GPU to a short-lived thread that wakes the task.
//!
//! ```no_run
//! use kernel_runtime::{Arg, BindingKind, PipelineDesc, Runtime};
//!
//! const ADD_ONE: &str = "
//!     @group(0) @binding(0) var<storage, read_write> x: array<f32>;
//!     @compute @workgroup_size(64)
//!     fn add_one(@builtin(global_invocation_id) id: vec3<u32>) {
//!         if id.x < arrayLength(&x) { x[id.x] += 1.0; }
//!     }";
//!
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let rt = Runtime::new()?;
//! let mut x = rt.upload(&[1.0f32; 100])?;
//! let pipeline = rt.pipeline(&PipelineDesc::new(ADD_ONE, "add_one", &[BindingKind::ReadWriteStorage]))?;
//! rt.dispatch(&pipeline, &[Arg::read_write(&mut x)], [2, 1, 1])?;
//! assert_eq!(x.read(&rt)?, vec![2.0; 100]);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod adapter;
mod autotune;
mod buffer;
mod dispatch;
mod error;
mod grid;
mod pipeline;
mod prepare;
mod runtime;
pub mod sanitizer;
mod timing;
mod variant;
mod wait;

pub use adapter::ADAPTER_ENV;
pub use autotune::{
    size_bucket, source_hash, Autotune, TuneChoice, TuneKey, Tuned, AUTOTUNE_CACHE_ENV,
    AUTOTUNE_ENV,
};
pub use buffer::{BufferView, BufferViewMut, GpuBuffer};
pub use dispatch::{check_binding_size, check_buffer_owner, Arg, Batch};
pub use error::{Error, Result};
pub use grid::{fold_grid, FoldedGrid};
pub use pipeline::{BindingKind, Pipeline, PipelineDesc};
pub use prepare::Prepare;
pub use runtime::{Runtime, RuntimeId, RuntimeInfo, COOPERATIVE_MATRIX_ENV};
pub use sanitizer::{SANITIZE_COVERAGE_ENV, SANITIZE_ENV};
pub use timing::{Timing, TimingSource};
pub use variant::VariantInfo;

/// The wgpu this runtime is built on, for interoperation (its documentation is wgpu's own, at
/// docs.rs, not a copy here).
#[doc(no_inline)]
pub use wgpu;
