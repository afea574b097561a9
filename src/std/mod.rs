//! tessera's standard library of device functions: fast parts for kernels, published as
//! [device-function libraries](crate#device-function-libraries) that a kernels module
//! imports like any other (`#[device] use tessera::std::reduce;`).
//!
//! - [`reduce`]: sums, maxima, minima and argmax across a subgroup or a workgroup.

#[path = "reduce.rs"]
mod reduce_source;

#[doc(inline)]
pub use reduce_source::reduce;
