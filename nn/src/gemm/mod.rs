//! GEMM + bias + activation, forward and backward: the op ([`Gemm`]) and its calls'
//! arguments here, the forward and the backward in files of their own, what each runs
//! planned in `plan`.

use super::kernels;
use super::precision::Passes;
use super::spare::Spare;
use super::tune::{self, GemmWay};
use super::{invalid, Activation, Precision};
use backward::BackwardBuffers;
use forward::ForwardBuffers;
use fragments::Fragments;
use tessera::{Batch, BufferView, GpuBuffer, Result, Runtime};

mod backward;
mod forward;
mod fragments;
mod plan;
#[cfg(test)]
mod tests;

pub(crate) use backward::{add_up_rows, forward_pre};

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

/// One [`Gemm::forward`]: `y = act(a · b + bias)`.
#[derive(Debug)]
pub struct GemmForward<'a> {
    /// The sizes of `a`, `b` and `y`.
    pub shape: GemmShape,
    /// The activation applied to `a · b + bias`.
    pub activation: Activation,
    /// `[m, k]`.
    pub a: &'a GpuBuffer<f32>,
    /// `[k, n]`.
    pub b: &'a GpuBuffer<f32>,
    /// `[n]`.
    pub bias: &'a GpuBuffer<f32>,
    /// `[m, n]`: `a · b + bias` before the activation, which the backward pass reads. `None`
    /// when no backward pass follows, or with [`Activation::None`] (then `y` holds it); the
    /// forward then writes `y` alone, one output-sized store fewer.
    pub pre: Option<&'a mut GpuBuffer<f32>>,
    /// `[m, n]`: the output.
    pub y: &'a mut GpuBuffer<f32>,
}

/// One [`Gemm::backward`]: from the output's gradient, the gradients of both operands and
/// the bias. Each gradient is overwritten (see [`crate`]'s "Gradients").
#[derive(Debug)]
pub struct GemmBackward<'a> {
    /// The forward's shape.
    pub shape: GemmShape,
    /// The forward's activation.
    pub activation: Activation,
    /// The forward's `a`, `[m, k]`.
    pub a: &'a GpuBuffer<f32>,
    /// The forward's `b`, `[k, n]`.
    pub b: &'a GpuBuffer<f32>,
    /// The forward's `pre`, `[m, n]`; may be `None` only with [`Activation::None`].
    pub pre: Option<&'a GpuBuffer<f32>>,
    /// `[m, n]`: the gradient of the output `y`.
    pub grad_y: &'a GpuBuffer<f32>,
    /// `[m, k]`: the gradient of `a`; `None` when nothing needs it (`a` is the network's
    /// input), though it is computed anyway (in the same pass as `b`'s).
    pub grad_a: Option<&'a mut GpuBuffer<f32>>,
    /// `[k, n]`: the gradient of `b`.
    pub grad_b: &'a mut GpuBuffer<f32>,
    /// `[n]`: the gradient of `bias`.
    pub grad_bias: &'a mut GpuBuffer<f32>,
}

/// GEMM + bias + activation, forward and backward, built once per runtime.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Activation, Gemm, GemmForward, GemmShape};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let gemm = Gemm::new(&rt)?;
/// let (a, b, bias) = (rt.upload(&[1.0f32; 8])?, rt.upload(&[0.5f32; 12])?, rt.zeros::<f32>(3)?);
/// let mut y = rt.zeros::<f32>(6)?;
/// let mut batch = rt.batch();
/// gemm.forward(
///     &mut batch,
///     GemmForward {
///         shape: GemmShape { m: 2, n: 3, k: 4 },
///         activation: Activation::Relu,
///         a: &a,
///         b: &b,
///         bias: &bias,
///         pre: None, // no backward pass follows
///         y: &mut y,
///     },
/// )?;
/// batch.submit()?;
/// assert_eq!(y.read(&rt)?, vec![2.0; 6]);
/// # Ok(()) }
/// ```
///
/// An output too small to fill the GPU (few rows or columns over a long `k`, such as a
/// classifier's last layer) is computed split: slices of `k` by separate workgroups into
/// scratch memory the `Gemm` keeps, then added up with the bias and the activation.
///
/// Where `k` and `n` are multiples of 4 (and each buffer holds a whole number of 4-element
/// vectors), the forward reads `a` and `b` four elements at a time, and so does the f32
/// backward with `grad_pre`: on an H100 that made large forwards 9-10% faster in f32 and up to
/// 28% on the tensor cores, so pad those dimensions where you can.
///
/// The backward pass does the same for each operand gradient too small to fill the GPU
/// (`b`'s, for a small layer over a large batch), and sums the bias gradient's rows in slices
/// when they are many.
///
/// With [`Precision::TensorCoreF16`] ([`Gemm::with_precision`]), the products of the
/// forward and both operand gradients run on the tensor cores, split as in f32; the bias, the
/// activation and its derivative stay in f32. A large forward over vectors may run in 256 x
/// 128 blocks of 512 invocations (tuned; on a device that allows 512 invocations and 44.5 KiB
/// of workgroup memory), which read a quarter fewer operand bytes per product: 13-26% faster
/// than 128 x 128 blocks on an H100.
///
/// A clone shares the pipelines and grows its own scratch memory.
#[derive(Clone, Debug)]
pub struct Gemm {
    /// The passes it multiplies with: f32 alone, or the tensor-core kernels too.
    passes: Passes<Fragments>,
    forward: kernels::Blocked<kernels::GemmForward<f32>>,
    /// The forward over operands bound as vectors of 4 (see [`vectors`]).
    forward_vectors: kernels::Blocked<kernels::GemmForward<[f32; 4]>>,
    split: kernels::Blocked<kernels::GemmForwardSplit>,
    /// The backward's members, recorded one by one (see [`Gemm::record_backward`]).
    backward: kernels::GemmBackward,
    /// The backward's operand gradients.
    operands: kernels::Blocked<kernels::DOperands<f32>>,
    /// The backward's operand gradients over operands bound as vectors (see [`vectors`]).
    operands_vectors: kernels::Blocked<kernels::DOperands<[f32; 4]>>,
    /// The split forward's partial products, and the split operand gradients'.
    partials: Spare,
    /// The sums of the bias gradient's slices of rows.
    bias_sums: Spare,
    /// `pre` when the caller keeps none.
    pre: Spare,
    /// The backward's gradient before the activation.
    grad_pre: Spare,
    /// `grad_a` when the caller needs none.
    grad_a: Spare,
}

impl Gemm {
    /// Builds the forward kernels (whole and split) and the backward family, in strict f32
    /// ([`Precision::F32`]).
    ///
    /// Each kernel's pipeline is compiled when a call first runs it, so the first call of a
    /// shape pays for compiling the kernels it runs (with autotuning, those of every
    /// candidate it times), and kernels no call runs are never compiled;
    /// [`Gemm::prepare`] compiles them all up front.
    ///
    /// The 128 x 128 blocks stage 16.5 KiB of workgroup memory: on a device with only
    /// WebGPU's default 16 KiB (one made with `wgpu::Limits::default()` and adopted by
    /// [`Runtime::from_wgpu`](tessera::Runtime::from_wgpu)) the op runs every shape in 64 x 64
    /// blocks instead, with the same results, slower on large outputs.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Self::with_precision(rt, Precision::F32)
    }

    /// Builds the op multiplying in `precision`.
    ///
    /// # Errors
    ///
    /// [`Error::MissingFeature`](tessera::Error::MissingFeature) for
    /// [`Precision::TensorCoreF16`] on a device without tensor cores for 16 x 16 x 16 `f16`
    /// fragments accumulated in `f32`, or whose subgroups cannot be 32 invocations wide.
    pub fn with_precision(rt: &Runtime, precision: Precision) -> Result<Self> {
        let passes = Passes::new(rt, precision, "nn::Gemm", Fragments::new)?;
        let reduce = kernels::GemmForwardReduce::new(rt)?;
        Ok(Gemm {
            passes,
            forward: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::GemmForward::<f32>::with_constants_unchecked(rt, b) }
            })?,
            forward_vectors: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::GemmForward::<[f32; 4]>::with_constants_unchecked(rt, b) }
            })?,
            split: kernels::Blocked::new(|b| {
                Ok(kernels::GemmForwardSplit::from_members(
                    // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                    unsafe { kernels::GemmForwardPartial::with_constants_unchecked(rt, b) }?,
                    reduce.clone(),
                ))
            })?,
            backward: kernels::GemmBackward::new(rt)?,
            operands: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::DOperands::<f32>::with_constants_unchecked(rt, b) }
            })?,
            operands_vectors: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::DOperands::<[f32; 4]>::with_constants_unchecked(rt, b) }
            })?,
            partials: Spare::default(),
            bias_sums: Spare::default(),
            pre: Spare::default(),
            grad_pre: Spare::default(),
            grad_a: Spare::default(),
        })
    }

    /// Builds every pipeline the op may run now, instead of each at the first call that
    /// runs it: for a program that would rather pay the driver's compilation (seconds on
    /// the tensor cores) before its first step, or time its first steps at full speed.
    ///
    /// ```no_run
    /// # fn main() -> tessera::Result<()> {
    /// let rt = tessera::Runtime::new()?;
    /// let gemm = tessera_nn::Gemm::new(&rt)?;
    /// gemm.prepare(&rt)?; // every shape's first call now compiles nothing
    /// # Ok(())
    /// # }
    /// ```
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Gemm {
            passes, forward, forward_vectors, split, backward, operands, operands_vectors;
            partials, bias_sums, pre, grad_pre, grad_a
        })
    }

    /// How the op multiplies.
    pub fn precision(&self) -> Precision {
        self.passes.precision()
    }

    /// The tensor-core kernels, which every plan on the tensor cores was made from.
    fn tensor_cores(&self) -> &Fragments {
        self.passes.planned()
    }
}

/// Buffers of a problem's sizes for timing candidates, the inputs filled with noise (`y`
/// doubles as the output's gradient).
struct Scratch {
    a: GpuBuffer<f32>,
    b: GpuBuffer<f32>,
    bias: GpuBuffer<f32>,
    pre: GpuBuffer<f32>,
    y: GpuBuffer<f32>,
    grad_pre: GpuBuffer<f32>,
    grad_a: GpuBuffer<f32>,
    grad_b: GpuBuffer<f32>,
    grad_bias: GpuBuffer<f32>,
}

impl Scratch {
    fn new(rt: &Runtime, shape: GemmShape) -> Result<Self> {
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        Ok(Scratch {
            a: tune::noise(rt, m * k)?,
            b: tune::noise(rt, k * n)?,
            bias: tune::noise(rt, n)?,
            pre: tune::noise(rt, m * n)?,
            y: tune::noise(rt, m * n)?,
            grad_pre: rt.zeros(m * n)?,
            grad_a: rt.zeros(m * k)?,
            grad_b: rt.zeros(k * n)?,
            grad_bias: rt.zeros(n)?,
        })
    }

    /// A forward's buffers: `a`, `b` and `bias` into `pre` and `y`.
    fn forward(&mut self) -> ForwardBuffers<'_> {
        ForwardBuffers {
            a: &self.a,
            b: &self.b,
            bias: &self.bias,
            pre: &mut self.pre,
            y: &mut self.y,
        }
    }

    /// A backward's buffers, `y` as the output's gradient.
    fn backward(&mut self) -> BackwardBuffers<'_> {
        BackwardBuffers {
            a: &self.a,
            b: &self.b,
            pre: &self.pre,
            grad_y: &self.y,
            grad_pre: &mut self.grad_pre,
            grad_a: &mut self.grad_a,
            grad_b: &mut self.grad_b,
            grad_bias: &mut self.grad_bias,
        }
    }
}

/// How `operation` runs for `shape`, among `ways` (see [`tune::way`]); with autotuning off,
/// the fixed one beside them.
fn tuned(
    rt: &Runtime,
    operation: &str,
    shape: GemmShape,
    (ways, fixed): (&[GemmWay], GemmWay),
    record: impl FnMut(&mut Batch<'_>, GemmWay, &mut Scratch) -> Result<()>,
) -> Result<GemmWay> {
    let GemmShape { m, n, k } = shape;
    let problem = tune::Problem {
        operation,
        sizes: &[m, n, k],
        exact: &[],
    };
    let scratch = |rt: &Runtime| Scratch::new(rt, shape);
    tune::way(rt, problem, ways, fixed, scratch, record)
}

fn params(shape: GemmShape, activation: Activation) -> Result<kernels::GemmParams> {
    let GemmShape { m, n, k } = shape;
    if m == 0 || n == 0 || k == 0 {
        return Err(invalid(
            "gemm",
            format!("every dimension must be at least 1, got m = {m}, n = {n}, k = {k}"),
        ));
    }
    Ok(kernels::GemmParams {
        m,
        n,
        k,
        activation: activation.code(),
        keep_pre: 1,
        // Every sum whole: a slice's end is clamped to the dimension it cuts.
        splits: 1,
        split_depth: u32::MAX,
        b_splits: 1,
        b_split_depth: u32::MAX,
        bias_splits: 1,
        bias_split_rows: u32::MAX,
    })
}

/// A buffer of `f32`s bound as vectors of 4.
type Vectors<'b> = BufferView<'b, [f32; 4]>;

/// The operands `a` and `b` bound as vectors of 4 (for the kernels named `..._vectors`),
/// where their rows, `k` and `n` long, are a multiple of 4 and each buffer holds whole
/// vectors; `None` otherwise (the scalar kernels then run).
fn vectors<'b>(
    p: kernels::GemmParams,
    a: &'b GpuBuffer<f32>,
    b: &'b GpuBuffer<f32>,
) -> Option<(Vectors<'b>, Vectors<'b>)> {
    if !(p.k.is_multiple_of(4) && p.n.is_multiple_of(4)) {
        return None;
    }
    Some((a.view_as().ok()?, b.view_as().ok()?))
}
