//! tessera's standard library of device functions: fast parts for kernels, published as
//! [device-function libraries](crate#device-function-libraries) that a kernels module
//! imports like any other (`#[device] use tessera::std::reduce;`).
//!
//! - [`reduce`]: sums, maxima, minima and argmax across a subgroup or a workgroup.
//! - [`softmax`]: the online softmax state (a running maximum and sum), for softmax,
//!   cross-entropy and attention.
//! - [`rows`]: a row segment in registers, loaded with the widest loads, reduced and stored.
//! - [`scan`]: prefix sums (inclusive and exclusive) across a subgroup, a workgroup and a tile
//!   in registers, and a whole buffer in one pass (decoupled look-back).
//!
//! Each library's rustdoc lists its device functions; their full documentation is in the
//! source. The conventions they share:
//!
//! - A helper cannot read the invocation's ids (`local_index()`, `subgroup_id()`, ...), so
//!   the caller passes them: `local`, `lane`, `subgroup` and `size` name `local_index()`,
//!   `subgroup_invocation_id()`, `subgroup_id()` and `subgroup_size()`.
//! - The workgroup memory a helper needs is the caller's, lent as an argument and sized by
//!   the caller's constants: `GROUP` is the calling kernel's workgroup size.
//! - Helpers that use subgroups need `features(subgroups)` on the calling kernel; each has a
//!   `_tree` twin through workgroup memory for devices without them (but the single-pass
//!   scan's look-back: the three-pass scan runs there). A kernel is built for
//!   one path: write a kernel per path, sharing the rest through helpers.
//! - Helpers over an element type `E` take it from their arguments: `f32`, `Vec4<f32>` and,
//!   where the docs say so, `f16`, integers and their vectors.
//! - The libraries' helper names are distinct, so a kernels module may import all of them.

#[path = "reduce.rs"]
mod reduce_source;
#[path = "rows.rs"]
mod rows_source;
#[path = "scan.rs"]
mod scan_source;
#[path = "softmax.rs"]
mod softmax_source;

#[doc(inline)]
pub use reduce_source::reduce;
#[doc(inline)]
pub use rows_source::rows;
#[doc(inline)]
pub use scan_source::scan;
#[doc(inline)]
pub use softmax_source::softmax;
