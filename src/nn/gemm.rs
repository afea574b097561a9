//! GEMM + bias + activation, forward and backward.

use crate::{Batch, Error, GpuBuffer, Result, Runtime};

#[crate::kernels(family(GemmBackward = [grad_pre, d_a, d_b, d_bias]))]
mod kernels {
    /// Edge of the square tiles staged in workgroup memory.
    pub const TILE: u32 = 16;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct GemmParams {
        pub m: u32,
        pub n: u32,
        pub k: u32,
        pub activation: u32,
    }

    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// The activation `kind` (see `Activation`) of `x`.
    fn activate(x: f32, kind: u32) -> f32 {
        match kind {
            1 => x.max(0.0),
            2 => {
                let inner = 0.7978845608 * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + inner.tanh())
            }
            3 => x * sigmoid(x),
            4 => sigmoid(x),
            5 => x.tanh(),
            _ => x,
        }
    }

    /// The derivative of the activation `kind` at `x`.
    fn activate_grad(x: f32, kind: u32) -> f32 {
        match kind {
            1 => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            2 => {
                let inner = 0.7978845608 * (x + 0.044715 * x * x * x);
                let t = inner.tanh();
                let d_inner = 0.7978845608 * (1.0 + 3.0 * 0.044715 * x * x);
                0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner
            }
            3 => {
                let s = sigmoid(x);
                s * (1.0 + x * (1.0 - s))
            }
            4 => {
                let s = sigmoid(x);
                s * (1.0 - s)
            }
            5 => {
                let t = x.tanh();
                1.0 - t * t
            }
            _ => 1.0,
        }
    }

    /// pre = a · b + bias, y = act(pre); 16 x 16 output tiles, operands staged in workgroup memory.
    #[kernel(workgroup = [TILE, TILE], grid = [ceil_div(p.n, TILE), ceil_div(p.m, TILE)])]
    pub fn forward(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.n)] bias: &[f32],
        #[len(p.m * p.n)] pre: &mut [f32],
        #[len(p.m * p.n)] y: &mut [f32],
        #[workgroup] tile_a: &mut [f32; TILE * TILE],
        #[workgroup] tile_b: &mut [f32; TILE * TILE],
    ) {
        let local = local_id();
        let col = workgroup_id().x * TILE + local.x;
        let row = workgroup_id().y * TILE + local.y;
        let mut acc = 0.0;
        for t in 0..ceil_div(p.k, TILE) {
            let ka = t * TILE + local.x;
            tile_a[local.y * TILE + local.x] = if row < p.m && ka < p.k {
                a[row * p.k + ka]
            } else {
                0.0
            };
            let kb = t * TILE + local.y;
            tile_b[local.y * TILE + local.x] = if kb < p.k && col < p.n {
                b[kb * p.n + col]
            } else {
                0.0
            };
            workgroup_barrier();
            for i in 0..TILE {
                acc += tile_a[local.y * TILE + i] * tile_b[i * TILE + local.x];
            }
            workgroup_barrier();
        }
        if row < p.m && col < p.n {
            let z = acc + bias[col];
            pre[row * p.n + col] = z;
            y[row * p.n + col] = activate(z, p.activation);
        }
    }

    /// grad_pre = grad_y * act'(pre).
    #[kernel(workgroup = [256], grid = [ceil_div(p.m * p.n, 256)])]
    pub fn grad_pre(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.m * p.n {
            grad_pre[i] = grad_y[i] * activate_grad(pre[i], p.activation);
        }
    }

    /// grad_a = grad_pre · bᵀ.
    #[kernel(workgroup = [16, 16], grid = [ceil_div(p.k, 16), ceil_div(p.m, 16)])]
    pub fn d_a(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
    ) {
        let id = global_id();
        let (row, col) = (id.y, id.x);
        if row < p.m && col < p.k {
            let mut acc = 0.0;
            for j in 0..p.n {
                acc += grad_pre[row * p.n + j] * b[col * p.n + j];
            }
            grad_a[row * p.k + col] = acc;
        }
    }

    /// grad_b = aᵀ · grad_pre.
    #[kernel(workgroup = [16, 16], grid = [ceil_div(p.n, 16), ceil_div(p.k, 16)])]
    pub fn d_b(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
    ) {
        let id = global_id();
        let (row, col) = (id.y, id.x);
        if row < p.k && col < p.n {
            let mut acc = 0.0;
            for i in 0..p.m {
                acc += a[i * p.k + row] * grad_pre[i * p.n + col];
            }
            grad_b[row * p.n + col] = acc;
        }
    }

    /// grad_bias = column sums of grad_pre.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn d_bias(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
    ) {
        let col = global_id().x;
        if col < p.n {
            let mut acc = 0.0;
            for i in 0..p.m {
                acc += grad_pre[i * p.n + col];
            }
            grad_bias[col] = acc;
        }
    }
}

/// The activation applied after the GEMM and bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// The identity.
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU, tanh approximation.
    Gelu,
    /// `x * sigmoid(x)`.
    Silu,
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
}

impl Activation {
    /// Every activation.
    pub const ALL: [Activation; 6] = [
        Activation::None,
        Activation::Relu,
        Activation::Gelu,
        Activation::Silu,
        Activation::Sigmoid,
        Activation::Tanh,
    ];

    /// The code the kernels' `match` uses.
    fn code(self) -> u32 {
        match self {
            Activation::None => 0,
            Activation::Relu => 1,
            Activation::Gelu => 2,
            Activation::Silu => 3,
            Activation::Sigmoid => 4,
            Activation::Tanh => 5,
        }
    }
}

/// `y[m, n] = act(a[m, k] · b[k, n] + bias[n])`, row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmShape {
    /// Rows of `a` and `y`.
    pub m: u32,
    /// Columns of `b` and `y`.
    pub n: u32,
    /// Columns of `a`, rows of `b`.
    pub k: u32,
}

/// The gradients [`Gemm::backward`] writes.
pub struct GemmGrads<'a> {
    /// `[m, n]`: the gradient before the activation (scratch the caller may reuse).
    pub grad_pre: &'a mut GpuBuffer<f32>,
    /// `[m, k]`.
    pub grad_a: &'a mut GpuBuffer<f32>,
    /// `[k, n]`.
    pub grad_b: &'a mut GpuBuffer<f32>,
    /// `[n]`.
    pub grad_bias: &'a mut GpuBuffer<f32>,
}

/// GEMM + bias + activation, forward and backward, built once per runtime.
///
/// ```no_run
/// # use tessera::{nn::{Activation, Gemm, GemmShape}, Runtime};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let gemm = Gemm::new(&rt)?;
/// let shape = GemmShape { m: 2, n: 3, k: 4 };
/// let (a, b, bias) = (rt.upload(&[1.0f32; 8])?, rt.upload(&[0.5f32; 12])?, rt.zeros::<f32>(3)?);
/// let (mut pre, mut y) = (rt.zeros::<f32>(6)?, rt.zeros::<f32>(6)?);
/// let mut batch = rt.batch();
/// gemm.forward(&mut batch, shape, Activation::Relu, &a, &b, &bias, &mut pre, &mut y)?;
/// batch.submit()?;
/// assert_eq!(y.read(&rt)?, vec![2.0; 6]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Gemm {
    forward: kernels::Forward,
    backward: kernels::GemmBackward,
}

impl Gemm {
    /// Builds the forward kernel and the backward family.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(Gemm {
            forward: kernels::Forward::new(rt)?,
            backward: kernels::GemmBackward::new(rt)?,
        })
    }

    /// Records `pre = a · b + bias` and `y = act(pre)`; `pre` is kept for the backward pass.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        batch: &mut Batch<'_>,
        shape: GemmShape,
        activation: Activation,
        a: &GpuBuffer<f32>,
        b: &GpuBuffer<f32>,
        bias: &GpuBuffer<f32>,
        pre: &mut GpuBuffer<f32>,
        y: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let p = params(shape, activation)?;
        self.forward.record(
            batch,
            kernels::ForwardArgs {
                p: &p,
                a,
                b,
                bias,
                pre,
                y,
            },
        )
    }

    /// Records the backward pass: from `grad_y` and the forward's `pre`, the gradients of `a`,
    /// `b` and `bias`, as four ordered passes.
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &self,
        batch: &mut Batch<'_>,
        shape: GemmShape,
        activation: Activation,
        a: &GpuBuffer<f32>,
        b: &GpuBuffer<f32>,
        pre: &GpuBuffer<f32>,
        grad_y: &GpuBuffer<f32>,
        grads: GemmGrads<'_>,
    ) -> Result<()> {
        let p = params(shape, activation)?;
        let GemmGrads {
            grad_pre,
            grad_a,
            grad_b,
            grad_bias,
        } = grads;
        self.backward.record(
            batch,
            kernels::GemmBackwardArgs {
                p: &p,
                a,
                b,
                pre,
                grad_y,
                grad_pre,
                grad_a,
                grad_b,
                grad_bias,
            },
        )
    }
}

fn params(shape: GemmShape, activation: Activation) -> Result<kernels::GemmParams> {
    let GemmShape { m, n, k } = shape;
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::InvalidArgument {
            operation: "gemm".into(),
            problem: format!("every dimension must be at least 1, got m = {m}, n = {n}, k = {k}"),
        });
    }
    Ok(kernels::GemmParams {
        m,
        n,
        k,
        activation: activation.code(),
    })
}
