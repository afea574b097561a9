//! Neural-network operations written in tessera: each op is a small typed host API (a struct
//! holding its launchers, shapes checked, errors returned) over kernels declared with the
//! macro. Row-major matrices; f32.
//!
//! - [`Gemm`]: `y = act(a · b + bias)` and its backward (`grad_pre`, `d_a`, `d_b`, `d_bias` as
//!   one entry-point family), with [`Activation`] none, ReLU, GELU (tanh form), SiLU, sigmoid
//!   and tanh, each written once with its derivative.

mod gemm;

pub use gemm::{Activation, Gemm, GemmGrads, GemmShape};
