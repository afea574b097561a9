//! The activations fused into the GEMM and convolution epilogues.

/// The activation a GEMM or convolution applies to its output (`y = act(pre)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// The identity.
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU, tanh approximation: `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`, computed
    /// as the equal `x * sigmoid(2 sqrt(2 / pi) (x + 0.044715 x^3))`.
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

    /// The activation's number on the device: the `kind` that nn's kernels and the helpers of
    /// [`parts::activation`](crate::parts::activation) take.
    ///
    /// ```
    /// assert_eq!(tessera_nn::Activation::None.code(), 0);
    /// ```
    pub const fn code(self) -> u32 {
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
