//! The activations and their derivatives, and the epilogues' `activate_outputs`; published as
//! [`tessera_nn::parts::activation`](crate::parts::activation).

/// The activations of [`Activation`](crate::Activation) and their derivatives, for epilogues
/// of your own.
///
/// Import it with `#[device] use tessera_nn::parts::activation;`.
///
/// - `activate(x, kind) -> f32` and `activate_grad(x, kind) -> f32`: the activation `kind`
///   ([`Activation::code`](crate::Activation::code)) of `x`, and its derivative at `x`.
/// - `activate_outputs(v, kind)`: `activate` on each of the `OUTPUTS` values of
///   `v: &mut [f32; OUTPUTS]`, `OUTPUTS` a constant of the calling kernel (`REG * REG` in
///   [`gemm`](crate::parts::gemm)'s `Blocking`), the activation chosen once for all of
///   them.
/// - `sigmoid(x)` and `gelu_gate(x)`, the logistic function and GELU's gate (`gelu(x) = x *
///   gelu_gate(x)`, in its tanh approximation).
///
/// ```
/// #[tessera::kernels]
/// mod pointwise {
///     #[device]
///     use tessera_nn::parts::activation;
///
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct Pointwise {
///         pub n: u32,
///         /// `Activation::code`.
///         pub kind: u32,
///     }
///
///     /// `y = activation(x)` and `grad = activation'(x)`.
///     #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
///     pub fn activate_all(
///         p: &Pointwise,
///         #[len(p.n)] x: &[f32],
///         #[len(p.n)] y: &mut [f32],
///         #[len(p.n)] grad: &mut [f32],
///     ) {
///         let i = global_id().x;
///         if i < p.n {
///             y[i] = activate(x[i], p.kind);
///             grad[i] = activate_grad(x[i], p.kind);
///         }
///     }
/// }
/// # fn main() {}
/// ```
#[tessera::device]
pub mod activation {
    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// GELU's tanh approximation `0.5 x (1 + tanh(u))`, `u = sqrt(2 / pi) (x + 0.044715 x^3)`,
    /// is `x * sigmoid(2u)`, since `0.5 (1 + tanh(u)) = sigmoid(2u)`; this is that
    /// `sigmoid(2u)`: one exponential and one division instead of `tanh` (on an H100 the
    /// tensor-core forward of 8192 x 4096 x 1024 with a GELU ran 6% faster through it).
    fn gelu_gate(x: f32) -> f32 {
        sigmoid(1.5957691216 * (x + 0.044715 * x * x * x))
    }

    /// The activation `kind` (see `Activation`) of `x`.
    fn activate(x: f32, kind: u32) -> f32 {
        match kind {
            1 => x.max(0.0),
            2 => x * gelu_gate(x),
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
                // d/dx x s(v) = s + x s (1 - s) dv/dx, for the `v` of `gelu_gate`.
                let s = gelu_gate(x);
                s + x * s * (1.0 - s) * (1.5957691216 * (1.0 + 3.0 * 0.044715 * x * x))
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

    /// `activate` on each of the `OUTPUTS` values an invocation writes (every blocking says
    /// how many), the activation chosen once for all of them: each arm passes its `kind` as a
    /// constant, which lets the compiler drop `activate`'s own `match`. Epilogues keep their
    /// sums with the bias, write `pre`, call this, then write `y`. (On an H100, choosing the
    /// activation for each element took 4% of a 4096^3 tensor-core GEMM forward;
    /// notes/performance.md.)
    fn activate_outputs(v: &mut [f32; OUTPUTS], kind: u32) {
        match kind {
            1 => activate_outputs_as(v, 1),
            2 => activate_outputs_as(v, 2),
            3 => activate_outputs_as(v, 3),
            4 => activate_outputs_as(v, 4),
            5 => activate_outputs_as(v, 5),
            _ => {}
        }
    }

    /// `activate_outputs` for one `kind`.
    fn activate_outputs_as(v: &mut [f32; OUTPUTS], kind: u32) {
        #[unroll]
        for i in 0..OUTPUTS {
            v[i] = activate(v[i], kind);
        }
    }
}
