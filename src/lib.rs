//! tessera: GPU compute kernels for Rust, declared as annotated Rust.
//!
//! A kernel is a Rust function in a `#[tessera::kernels]` module. At compile time the macro
//! turns the module into one WGSL module, validates it with naga, and generates a typed
//! launcher per kernel. At run time, [`Runtime`] builds each pipeline once and dispatches it
//! through wgpu (Vulkan, Metal, DX12, WebGPU).
//!
//! ```no_run
//! #[tessera::kernels]
//! mod kernels {
//!     #[repr(C)]
//!     #[derive(Clone, Copy, tessera::Params)]
//!     pub struct SaxpyParams {
//!         pub a: f32,
//!         pub n: u32,
//!     }
//!
//!     /// `y = a * x + y`.
//!     #[kernel(workgroup = [256], grid = [ceil_div(p.n, 256)])]
//!     pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
//!         let i = global_id().x;
//!         if i < p.n {
//!             y[i] = p.a * x[i] + y[i];
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), tessera::Error> {
//! let rt = tessera::Runtime::new()?;
//! let x = rt.upload(&[1.0f32, 2.0, 3.0])?;
//! let mut y = rt.zeros::<f32>(3)?;
//! let saxpy = kernels::Saxpy::new(&rt)?; // its pipeline is built at the first launch, once
//! saxpy.launch(&rt, kernels::SaxpyArgs { p: &kernels::SaxpyParams { a: 2.0, n: 3 }, x: &x, y: &mut y })?;
//! assert_eq!(y.read(&rt)?, vec![2.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```
//!
// The language reference, one file per part, in `docs/language/`; rendered here, on the
// crate's page, where its sections are linked to (`crate#device-function-libraries`).
#![doc = include_str!("../docs/language/module.md")]
#![doc = include_str!("../docs/language/body.md")]
#![doc = include_str!("../docs/language/helpers.md")]
#![doc = include_str!("../docs/language/libraries.md")]
//!
//! # The standard library
//!
//! [`tessera::std`](crate::std) holds device-function libraries that ship with tessera, parts
//! that memory-bound kernels are built from: [`reduce`](crate::std::reduce) (sums, maxima,
//! minima and argmax across a subgroup or a workgroup, with a workgroup-memory path for
//! devices without subgroups), [`softmax`](crate::std::softmax) (the online softmax state),
//! [`rows`](crate::std::rows) (a row segment kept in registers, loaded with the widest loads
//! its alignment allows) and [`scan`](crate::std::scan) (inclusive and exclusive prefix sums
//! across a subgroup, a workgroup and a tile in registers, the parts of a whole-buffer scan).
//! A kernels module imports them as any library: `#[device] use tessera::std::reduce;`.
//!
//! # Running kernels
//!
//! Each launcher has `new(&Runtime)`, `launch(&self, &Runtime, args)` (check lengths, queue
//! the dispatch on the runtime; queued dispatches are submitted together when something needs
//! them, see [`Runtime::flush`]) and `record(&self, &mut Batch, args)` (add to a [`Batch`]
//! submitted once). Either way the dispatch is issued in program order: it sees every buffer
//! write and dispatch issued before it, and none issued after it (see [`Batch`]). Launchers
//! also have `grid(&args)` (logical workgroup counts), `variant(&args)`, `check_lengths(&args)`,
//! `workgroup_size()`, `workgroup_memory()`, `entry_point()`, `VARIANTS` and `BINDINGS`, and
//! `prepare(&Runtime)`, which builds the pipelines before the first dispatch; launchers and
//! families implement [`Prepare`] with it, so generic code can prepare any collection of them.
//!
//! `unsafe fn new_unchecked(&Runtime)` (and `with_constants_unchecked`) builds the kernel
//! without the bounds checks naga adds to every index, for a kernel whose every index is
//! guarded; its safety section says what the caller promises. [`Runtime::autotune`] picks
//! among instances (or any other candidates) by timing them once per device and shape.
#![warn(missing_docs)]

// Lets this crate's own modules use the macros, whose output names `::tessera`.
extern crate self as tessera;

/// Compiles a module of kernels.
///
/// The module becomes one WGSL module, checked by the macro (types, uniformity of barriers,
/// constants, WebGPU's limits) and validated by naga while it expands, and each `#[kernel]`
/// function `foo_bar` becomes:
///
/// - a launcher `FooBar`: `FooBar::new(&rt)` makes it (an error value on a device without a
///   declared feature or limit), and its pipeline is built, once, at its first dispatch (or
///   by `prepare(&rt)`); `launch(&rt, args)` checks the buffers' lengths and dispatches; `record(&mut batch, args)` adds the dispatch to a [`Batch`];
///   `grid(&args)`, `variant(&args)`, `check_lengths(&args)`, `workgroup_size()`,
///   `entry_point()`, `INSTANCES`, `VARIANTS` and `BINDINGS` describe it; kernels with
///   `constants(..)` also have `with_constants(&rt, FooBarConstants { .. })`;
/// - `FooBarArgs`, one field per parameter: `&GpuBuffer<T>` for `&[T]`, `&mut GpuBuffer<T>`
///   for `&mut [T]`, `&P` for a `#[derive(Params)]` struct;
/// - and the module gets `WGSL`, the generated shader text.
///
/// [`example`] shows every generated item of a small module with its documentation; the crate
/// documentation describes the kernel language.
///
/// ```no_run
/// #[tessera::kernels]
/// mod kernels {
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct ScaleParams {
///         pub by: f32,
///         pub n: u32,
///     }
///
///     #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
///     pub fn scale(p: &ScaleParams, #[len(p.n)] x: &mut [f32]) {
///         let i = global_id().x;
///         if i < p.n {
///             x[i] *= p.by;
///         }
///     }
/// }
///
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = tessera::Runtime::new()?;
/// let mut x = rt.upload(&[1.0f32, 2.0])?;
/// let scale = kernels::Scale::new(&rt)?;
/// let p = kernels::ScaleParams { by: 3.0, n: 2 };
/// scale.launch(&rt, kernels::ScaleArgs { p: &p, x: &mut x })?;
/// assert_eq!(x.read(&rt)?, [3.0, 6.0]);
/// # Ok(()) }
/// ```
#[doc(inline)]
pub use kernel_macros::kernels;

/// Makes a module of helpers, constants, `Params` structs and named sets of constants a
/// device-function library, which any [`kernels`] module or other library, in this crate or
/// another, imports with `#[device] use path::to::library;`.
///
/// See [Device-function libraries](crate#device-function-libraries) for how a crate publishes
/// one and how a kernels module imports it, with examples of both.
///
/// ```
/// #[tessera::device]
/// pub mod scaling {
///     /// The factor [`scaled`] applies: a Rust constant too, for the host.
///     pub const FACTOR: f32 = 0.5;
///
///     /// `x` times `FACTOR`, in the caller's element type `T`.
///     fn scaled(x: T) -> T {
///         x * (FACTOR as T)
///     }
/// }
///
/// #[tessera::kernels]
/// mod halve {
///     #[device]
///     use super::scaling;
///
///     #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)], types(T = [f32]))]
///     pub fn halve<T>(x: &mut [T]) {
///         let i = global_id().x;
///         if i < x.len() {
///             x[i] = scaled(x[i]);
///         }
///     }
/// }
///
/// fn main() {
///     assert_eq!(scaling::FACTOR, 0.5);
///     assert!(halve::WGSL.contains("fn scaled"));
/// }
/// ```
#[doc(inline)]
pub use kernel_macros::device;

/// Marks a kernel in a [`kernels`] module, and declares how it runs.
///
/// `#[kernel(workgroup = [x, y, z], grid = [gx, gy, gz], ...)]`: the workgroup size
/// (literals or module constants) and the number of workgroups as expressions of the
/// parameters (`ceil_div(p.n, 64)`, `x.len()`). Optional, in any order: `constants(TILE = [8,
/// 16])` (one instance per value; lists that vary together go in `zip(A = [..], B = [..])`)
/// or `constants = Set` (a named set), `specialize(p.stride ==
/// 1)` (a copy of the body with those values folded in, chosen at launch), `types(T = [f32,
/// f16])`, `limits(invocations = 1024, workgroup_memory = 49152)` and `features(subgroups,
/// f16)`. Parameters: `&[T]` and `&mut [T]` storage buffers (`#[len(expr)]` states the length
/// the launcher checks), one `&P` of a [`Params`] struct, and `#[workgroup] t: &mut [T; N]`
/// arrays (or `#[workgroup] s: &mut T` values) shared by the workgroup.
///
/// ```no_run
/// #[tessera::kernels]
/// mod kernels {
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct Sum {
///         pub n: u32,
///     }
///
///     /// Each workgroup adds up `TILE` elements of `x` into `out[workgroup]`.
///     #[kernel(workgroup = [TILE], grid = [ceil_div(p.n, TILE)], constants(TILE = [64, 256]))]
///     pub fn partial_sums(
///         p: &Sum,
///         #[len(p.n)] x: &[f32],
///         #[len(ceil_div(p.n, TILE))] out: &mut [f32],
///         #[workgroup] t: &mut [f32; TILE],
///     ) {
///         let (i, l) = (global_id().x, local_index());
///         t[l] = if i < p.n { x[i] } else { 0.0 };
///         let mut half = TILE / 2;
///         while half > 0 {
///             workgroup_barrier();
///             if l < half {
///                 t[l] += t[l + half];
///             }
///             half /= 2;
///         }
///         if l == 0 {
///             out[workgroup_id().x] = t[0];
///         }
///     }
/// }
///
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = tessera::Runtime::new()?;
/// let sums = kernels::PartialSums::with_constants(&rt, kernels::PartialSumsConstants { tile: 256 })?;
/// # Ok(()) }
/// ```
#[doc(inline)]
pub use kernel_macros::kernel;

/// Makes a `#[repr(C)]` struct a kernel's uniform parameters.
///
/// Fields are `f32`, `u32`, `i32` and arrays of 2 to 4 of them (WGSL vectors). The derive
/// checks at compile time that the struct's Rust layout is WGSL's uniform layout, naming the
/// field that needs padding before it where it is not, and implements `bytemuck::Pod`
/// (derive `Clone` and `Copy` beside it).
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy, tessera::Params)]
/// pub struct Shape {
///     pub rows: u32,
///     pub cols: u32,
///     pub _pad: [u32; 2], // WGSL aligns the vector below to 16 bytes
///     pub scale: [f32; 4],
/// }
/// assert_eq!(std::mem::size_of::<Shape>(), 32);
/// ```
#[doc(inline)]
pub use kernel_macros::Params;

/// What a `#[kernels]` module generates, to click through: this module holds one, `kernels`,
/// compiled from the source below, and every item in it (the launchers, their arguments and
/// constants, `WGSL`) is what the macro wrote, with the documentation it writes.
///
/// ```ignore
/// #[tessera::kernels]
/// pub mod kernels {
///     /// The parameters of `saxpy`.
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct SaxpyParams {
///         pub a: f32,
///         pub n: u32,
///     }
///
///     /// `y = a * x + y`, `PER` elements per invocation.
///     #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64 * PER)], constants(PER = [1, 4]))]
///     pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
///         for k in 0..PER {
///             let i = global_id().x * PER + k;
///             if i < p.n {
///                 y[i] = p.a.mul_add(x[i], y[i]);
///             }
///         }
///     }
/// }
/// ```
#[cfg(any(doc, test))]
pub mod example {
    /// The module of the source above, expanded.
    #[crate::kernels]
    pub mod kernels {
        /// The parameters of `saxpy`.
        #[repr(C)]
        #[derive(Clone, Copy, tessera::Params)]
        pub struct SaxpyParams {
            /// The factor.
            pub a: f32,
            /// The number of elements.
            pub n: u32,
        }

        /// `y = a * x + y`, `PER` elements per invocation.
        #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64 * PER)], constants(PER = [1, 4]))]
        pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
            for k in 0..PER {
                let i = global_id().x * PER + k;
                if i < p.n {
                    y[i] = p.a.mul_add(x[i], y[i]);
                }
            }
        }
    }
}
/// The `half` crate, whose [`half::f16`] is the host type of `f16` buffers.
#[doc(no_inline)]
pub use half;
// Named one by one: a glob would also inline all of wgpu's documentation into tessera's.
/// The wgpu tessera runs on, for interoperation (its documentation is wgpu's own, at docs.rs).
#[doc(no_inline)]
pub use kernel_runtime::wgpu;
pub use kernel_runtime::{
    fold_grid, size_bucket, source_hash, Arg, Autotune, Batch, BindingKind, BufferView,
    BufferViewMut, Error, FoldedGrid, GpuBuffer, Pipeline, PipelineDesc, Prepare, Result, Runtime,
    RuntimeInfo, Timing, TimingSource, TuneChoice, TuneKey, Tuned, VariantInfo, ADAPTER_ENV,
    AUTOTUNE_CACHE_ENV, AUTOTUNE_ENV, COOPERATIVE_MATRIX_ENV, SANITIZE_COVERAGE_ENV, SANITIZE_ENV,
};

/// The sanitizer's reports: what [`Error::Hazard`] carries (see [`Runtime::with_sanitizer`]).
pub use kernel_runtime::sanitizer;

pub mod std;

/// What generated code refers to; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use bytemuck;
    pub use kernel_macros::__import as import;
    pub use kernel_runtime;

    /// `a / b` rounded up; 0 when `b` is 0 (the launcher then dispatches nothing).
    pub const fn ceil_div(a: u64, b: u64) -> u64 {
        match b {
            0 => 0,
            _ => a.div_ceil(b),
        }
    }
}
