//! A GEMM test case shared by the `gemm` and `tensor_cores` tests: random operands of a
//! shape, on the host (for the f64 references) and on the device, and a zeroed buffer for
//! every output of the forward and backward passes.

use tessera::{GpuBuffer, Runtime};
use tessera_nn::{Activation, GemmBackward, GemmForward, GemmShape};

use crate::common::{values, ChaCha8Rng};

/// The operands of a GEMM on the host: `a` (`m x k`), `b` (`k x n`), `bias` (`n`) and
/// `grad_y` (`m x n`).
pub struct Operands {
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub bias: Vec<f32>,
    pub grad_y: Vec<f32>,
}

/// A shape's operands, uploaded, and the buffers its passes write.
pub struct GemmCase {
    pub shape: GemmShape,
    /// The operands as drawn, for the references.
    pub host: Operands,
    a: GpuBuffer<f32>,
    b: GpuBuffer<f32>,
    bias: GpuBuffer<f32>,
    grad_y: GpuBuffer<f32>,
    pub pre: GpuBuffer<f32>,
    pub y: GpuBuffer<f32>,
    pub grad_a: GpuBuffer<f32>,
    pub grad_b: GpuBuffer<f32>,
    pub grad_bias: GpuBuffer<f32>,
}

impl GemmCase {
    /// Draws the operands of `shape` from `rng` (`a`, `b`, `bias`, then `grad_y`), uploads
    /// them and zeroes the outputs.
    pub fn new(rt: &Runtime, shape: GemmShape, rng: &mut ChaCha8Rng) -> Self {
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let host = Operands {
            a: values(rng, m * k),
            b: values(rng, k * n),
            bias: values(rng, n),
            grad_y: values(rng, m * n),
        };
        let up = |v: &[f32]| rt.upload(v).unwrap();
        let zeros = |len: usize| rt.zeros::<f32>(len).unwrap();
        GemmCase {
            shape,
            a: up(&host.a),
            b: up(&host.b),
            bias: up(&host.bias),
            grad_y: up(&host.grad_y),
            host,
            pre: zeros(m * n),
            y: zeros(m * n),
            grad_a: zeros(m * k),
            grad_b: zeros(k * n),
            grad_bias: zeros(n),
        }
    }

    /// The forward's arguments: `y` through `activation`, and `pre` too where `keep_pre`.
    pub fn forward(&mut self, activation: Activation, keep_pre: bool) -> GemmForward<'_> {
        GemmForward {
            shape: self.shape,
            activation,
            a: &self.a,
            b: &self.b,
            bias: &self.bias,
            pre: keep_pre.then_some(&mut self.pre),
            y: &mut self.y,
        }
    }

    /// The backward's arguments: every gradient through `activation`, reading the forward's
    /// `pre` where `read_pre`.
    pub fn backward(&mut self, activation: Activation, read_pre: bool) -> GemmBackward<'_> {
        GemmBackward {
            shape: self.shape,
            activation,
            a: &self.a,
            b: &self.b,
            pre: read_pre.then_some(&self.pre),
            grad_y: &self.grad_y,
            grad_a: Some(&mut self.grad_a),
            grad_b: &mut self.grad_b,
            grad_bias: &mut self.grad_bias,
        }
    }
}
