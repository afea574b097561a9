//! GEMM + bias + activation, forward and backward.

use super::kernels;
use super::precision;
use super::spare::Spare;
use super::split::{ColumnSums, Split};
use super::tune::{self, GemmTile, GemmWay, Tile};
use plan::{BackwardPlan, ForwardPlan, Operands};

mod plan;
use super::{invalid, Activation, Precision};
use tessera::{Batch, BufferView, GpuBuffer, Result, Runtime};

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
    /// The tensor-core kernels, built only for [`Precision::TensorCoreF16`].
    fragments: Option<Fragments>,
    forward: kernels::Blocked<kernels::GemmForward<f32>>,
    /// The forward over operands bound as vectors of 4 (see [`vectors`]).
    forward_vectors: kernels::Blocked<kernels::GemmForward<[f32; 4]>>,
    split: kernels::Blocked<kernels::GemmForwardSplit>,
    /// The backward's members, recorded one by one (see [`Gemm::record_backward`]).
    backward: kernels::Blocked<kernels::GemmBackward>,
    /// The backward's operand gradients over operands bound as vectors (see [`vectors`]),
    /// recorded in place of `backward`'s `d_operands`.
    operands_vectors: kernels::Blocked<kernels::DOperandsVectors>,
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

/// The kernels of [`Precision::TensorCoreF16`], in both blockings of
/// [`kernels::TensorBlocking`].
#[derive(Clone, Debug)]
struct Fragments {
    forward: kernels::Blocked<kernels::GemmForwardFragments<f32>>,
    forward_vectors: kernels::Blocked<kernels::GemmForwardFragments<[f32; 4]>>,
    /// Adds up the slices of a forward in slices.
    forward_reduce: kernels::GemmForwardFragmentsReduce,
    /// Recorded in place of the backward's `d_operands`.
    operands: kernels::Blocked<kernels::DOperandsFragments>,
    /// The forward over vectors in the wide blocking ([`kernels::WideTensorBlocking`]),
    /// unless the device lacks the invocations or workgroup memory it takes.
    wide: Option<kernels::GemmForwardFragmentsWide>,
}

impl Fragments {
    /// Builds every pipeline (see [`Gemm::prepare`]).
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        // Every field named: a kernel added to the struct must be added here.
        let Fragments {
            forward,
            forward_vectors,
            forward_reduce,
            operands,
            wide,
        } = self;
        forward.try_for_each(|k| k.prepare(rt))?;
        forward_vectors.try_for_each(|k| k.prepare(rt))?;
        forward_reduce.prepare(rt)?;
        operands.try_for_each(|k| k.prepare(rt))?;
        wide.as_ref().map_or(Ok(()), |k| k.prepare(rt))
    }

    fn new(rt: &Runtime) -> Result<Self> {
        let fragments = Fragments {
            // SAFETY (all three): every index is guarded (see "Bounds" in `kernels`).
            forward: kernels::Blocked::on_fragments_with_deep(|b| unsafe {
                kernels::GemmForwardFragments::<f32>::with_constants_unchecked(rt, b)
            })?,
            forward_vectors: kernels::Blocked::on_fragments_with_deep(|b| unsafe {
                kernels::GemmForwardFragments::<[f32; 4]>::with_constants_unchecked(rt, b)
            })?,
            operands: kernels::Blocked::on_fragments_with_deep(|b| unsafe {
                kernels::DOperandsFragments::with_constants_unchecked(rt, b)
            })?,
            forward_reduce: kernels::GemmForwardFragmentsReduce::new(rt)?,
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            wide: kernels::unless_too_large(unsafe {
                kernels::GemmForwardFragmentsWide::with_constants_unchecked(
                    rt,
                    kernels::WideTensorBlocking {
                        depth: 32,
                        block: 256,
                    },
                )
            })?,
        };
        // After the kernels, which refuse a device without tensor cores first.
        precision::check_tensor_core_subgroups(rt, "nn::Gemm")?;
        Ok(fragments)
    }
}

/// The edge of a tensor-core fragment: the narrowest output the forward puts on the tensor
/// cores with autotuning off.
const FRAGMENT_EDGE: u32 = 16;

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
        let fragments = match precision {
            Precision::F32 => None,
            Precision::TensorCoreF16 => Some(Fragments::new(rt)?),
        };
        let reduce = kernels::GemmForwardReduce::new(rt)?;
        Ok(Gemm {
            fragments,
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
            backward: backward_family(rt)?,
            operands_vectors: kernels::Blocked::new(|b| {
                // SAFETY: every index is guarded (see "Bounds" in `kernels`).
                unsafe { kernels::DOperandsVectors::with_constants_unchecked(rt, b) }
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
        // Every field named: a kernel added to the struct must be added here.
        let Gemm {
            fragments,
            forward,
            forward_vectors,
            split,
            backward,
            operands_vectors,
            partials: _,
            bias_sums: _,
            pre: _,
            grad_pre: _,
            grad_a: _,
        } = self;
        if let Some(fragments) = fragments {
            fragments.prepare(rt)?;
        }
        forward.try_for_each(|k| k.prepare(rt))?;
        forward_vectors.try_for_each(|k| k.prepare(rt))?;
        split.try_for_each(|k| k.prepare(rt))?;
        backward.try_for_each(|k| k.prepare(rt))?;
        operands_vectors.try_for_each(|k| k.prepare(rt))
    }

    /// How the op multiplies.
    pub fn precision(&self) -> Precision {
        match self.fragments {
            Some(_) => Precision::TensorCoreF16,
            None => Precision::F32,
        }
    }

    /// The ways the forward may run, and the one with autotuning off.
    ///
    /// On the tensor cores, the forward is tuned among the fragment kernels and the f32 ways,
    /// each whole and split (a long sum over an output too small to fill the GPU). With
    /// autotuning off, an output narrower than a fragment (16) runs as in f32: on M, N, K =
    /// 256, 4, 16384 the whole fragment kernels ran several times slower than the split f32
    /// ones (H100, 2026-11-23, commits 71b552d and 8ebd0f5: 0.27-0.66 ms against 0.06;
    /// notes/performance.md), while from 35 rows on they ran faster. (Split, the fragment
    /// kernels ran that shape faster than f32 did, 0.037 against 0.059 ms at commit 505aff1;
    /// the tuner finds that, and one shape is too few to move the rule.)
    fn forward_ways(&self, shape: GemmShape) -> (&'static [GemmWay], GemmWay) {
        let rows = shape.m.min(shape.n);
        let ways = &GemmWay::FORWARD_ON_TENSOR_CORES;
        match self.fragments {
            Some(_) if rows >= FRAGMENT_EDGE => (ways, GemmWay::fixed_on_tensor_cores(rows)),
            Some(_) => (ways, GemmWay::fixed(rows)),
            None => (&GemmWay::IN_F32, GemmWay::fixed(rows)),
        }
    }

    /// Records `y = act(a · b + bias)`, keeping `a · b + bias` in `pre` when given.
    ///
    /// The blocking is autotuned (see [`Runtime::autotune`]); with autotuning off it is the
    /// small one when either side of the output is at most 64, the large one otherwise.
    pub fn forward(&self, batch: &mut Batch<'_>, args: GemmForward<'_>) -> Result<()> {
        let GemmForward {
            shape,
            activation,
            a,
            b,
            bias,
            pre,
            y,
        } = args;
        let p = kernels::GemmParams {
            keep_pre: u32::from(pre.is_some()),
            ..params(shape, activation)?
        };
        let GemmShape { m, n, k } = shape;
        let (ways, fixed) = self.forward_ways(shape);
        let problem = tune::Problem {
            operation: "nn::Gemm::forward",
            sizes: &[m, n, k],
            exact: &[],
        };
        let scratch = |rt: &Runtime| Scratch::new(rt, shape);
        let way = tune::way(
            batch.runtime(),
            problem,
            ways,
            fixed,
            scratch,
            |tune, way, s| {
                let io = ForwardBuffers {
                    a: &s.a,
                    b: &s.b,
                    bias: &s.bias,
                    pre: &mut s.pre,
                    y: &mut s.y,
                };
                self.forward_way(tune, way, p, io)
            },
        )?;
        let mut spare = self.pre.lock();
        let pre = match pre {
            Some(pre) => pre,
            None => spare.at_least(batch.runtime(), m as usize * n as usize)?,
        };
        self.forward_way(batch, way, p, ForwardBuffers { a, b, bias, pre, y })
    }

    /// The blockings the forward's kernels were built in, for its plans.
    fn forward_caps(&self) -> plan::Caps {
        plan::Caps {
            f32: self.split.each(|k| k.gemm_forward_partial().constants()),
            tensor: (self.fragments.as_ref()).map(|f| f.forward.each(|k| k.constants())),
            wide: (self.fragments.as_ref()).is_some_and(|f| f.wide.is_some()),
        }
    }

    /// The forward run `way`, as [`plan::forward`] plans it.
    fn forward_way(
        &self,
        batch: &mut Batch<'_>,
        way: GemmWay,
        p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let binding = plan::Binding {
            operands: vectors(p, io.a, io.b).is_some(),
            // (The scratch `partial` of a pass on the tensor cores holds whole vectors too:
            // `Spare` rounds its lengths up to them.)
            others: [io.bias.len(), io.pre.len(), io.y.len()]
                .iter()
                .all(|len| len.is_multiple_of(4)),
        };
        let plan = plan::forward(&p, way, &self.forward_caps(), binding);
        self.record_forward(batch, plan, p, io)
    }

    /// Records the forward as `plan` says.
    fn record_forward(
        &self,
        batch: &mut Batch<'_>,
        plan: ForwardPlan,
        p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let ForwardBuffers { a, b, bias, pre, y } = io;
        match plan {
            ForwardPlan::F32 {
                tile,
                vectors: true,
            } => {
                let (a, b) = &vectors(p, a, b).expect("planned over the vectors they bind as");
                let args = kernels::GemmForwardArgs {
                    p: &p,
                    a,
                    b,
                    bias,
                    pre,
                    y,
                };
                self.forward_vectors.get(tile.pick()).record(batch, args)
            }
            ForwardPlan::F32 {
                tile,
                vectors: false,
            } => {
                let args = kernels::GemmForwardArgs {
                    p: &p,
                    a,
                    b,
                    bias,
                    pre,
                    y,
                };
                self.forward.get(tile.pick()).record(batch, args)
            }
            ForwardPlan::F32Sliced { tile, cut } => {
                let io = ForwardBuffers { a, b, bias, pre, y };
                self.forward_f32_sliced(batch, tile, cut, p, io)
            }
            ForwardPlan::TensorCores { tile, cut, vectors } => {
                let io = ForwardBuffers { a, b, bias, pre, y };
                self.forward_on_tensor_cores(batch, (tile, vectors), cut, p, io)
            }
            ForwardPlan::Wide { cut } => {
                let io = ForwardBuffers { a, b, bias, pre, y };
                self.forward_wide(batch, cut, p, io)
            }
        }
    }

    /// The tensor-core kernels, which every plan on the tensor cores was made from.
    fn tensor_cores(&self) -> &Fragments {
        (self.fragments.as_ref()).expect("plans on the tensor cores come from their kernels")
    }

    /// The f32 forward in `tile`, its sum cut as `cut` says.
    fn forward_f32_sliced(
        &self,
        batch: &mut Batch<'_>,
        tile: Tile,
        cut: Split,
        mut p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        // `Split::of` keeps `splits * m * n` within `u32`.
        let needed = cut.splits as usize * p.m as usize * p.n as usize;
        let mut partials = self.partials.lock();
        let args = kernels::GemmForwardSplitArgs {
            p: &p,
            a: io.a,
            b: io.b,
            bias: io.bias,
            partial: partials.at_least(batch.runtime(), needed)?,
            pre: io.pre,
            y: io.y,
        };
        self.split.get(tile.pick()).record(batch, args)
    }

    /// The forward in the wide blocking, whole over vectors.
    fn forward_wide(
        &self,
        batch: &mut Batch<'_>,
        cut: Split,
        mut p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let wide = (self.tensor_cores().wide.as_ref()).expect("planned where the device has it");
        let (a, b) = &vectors(p, io.a, io.b).expect("planned over the vectors they bind as");
        let args = kernels::GemmForwardFragmentsWideArgs {
            p: &p,
            a,
            b,
            bias: &*io.bias.view_as()?,
            pre: &mut *io.pre.view_as_mut()?,
            y: &mut *io.y.view_as_mut()?,
        };
        wide.record(batch, args)
    }

    /// The forward on the tensor cores in `tile`, over vectors or not, its sum in slices as
    /// `cut` says (the first slice into `pre`, the others into scratch, then added up with
    /// the bias and the activation).
    fn forward_on_tensor_cores(
        &self,
        batch: &mut Batch<'_>,
        (tile, vectors): (GemmTile, bool),
        cut: Split,
        mut p: kernels::GemmParams,
        io: ForwardBuffers<'_>,
    ) -> Result<()> {
        let fragments = self.tensor_cores();
        let ForwardBuffers { a, b, bias, pre, y } = io;
        (p.splits, p.split_depth) = (cut.splits, cut.depth);
        let mut partials = self.partials.lock();
        let outputs = p.m as usize * p.n as usize;
        let partial = partials.at_least(batch.runtime(), cut.partials(p.m, p.n) - outputs)?;
        // The reduce binds nothing the forward has not checked.
        match vectors {
            true => {
                let (a, b) =
                    &self::vectors(p, a, b).expect("planned over the vectors they bind as");
                let args = kernels::GemmForwardFragmentsArgs {
                    p: &p,
                    a,
                    b,
                    bias: &*bias.view_as()?,
                    pre: &mut *pre.view_as_mut()?,
                    y: &mut *y.view_as_mut()?,
                    partial: &mut *partial.view_as_mut()?,
                };
                fragments
                    .forward_vectors
                    .get(tile.pick())
                    .record(batch, args)?;
            }
            false => {
                let args = kernels::GemmForwardFragmentsArgs {
                    p: &p,
                    a,
                    b,
                    bias,
                    pre: &mut *pre,
                    y: &mut *y,
                    partial: &mut *partial,
                };
                fragments.forward.get(tile.pick()).record(batch, args)?;
            }
        }
        if cut.splits == 1 {
            return Ok(());
        }
        let args = kernels::GemmForwardFragmentsReduceArgs {
            p: &p,
            partial,
            bias,
            pre,
            y,
        };
        fragments.forward_reduce.record(batch, args)
    }

    /// Records the backward pass: from `grad_y` and the forward's `pre`, the gradients of `a`,
    /// `b` and `bias` (overwritten), as four ordered passes.
    ///
    /// The operand gradients' blocking is autotuned, and whether they sum in slices; with
    /// autotuning off it is the small one when `m` or `k` (their output rows) is at most 64,
    /// and a gradient too small to fill the GPU sums in slices.
    pub fn backward(&self, batch: &mut Batch<'_>, args: GemmBackward<'_>) -> Result<()> {
        let GemmBackward {
            shape,
            activation,
            a,
            b,
            pre,
            grad_y,
            grad_a,
            grad_b,
            grad_bias,
        } = args;
        let p = params(shape, activation)?;
        let pre = forward_pre(pre, grad_y, activation, "gemm backward")?;
        let GemmShape { m, n, k } = shape;
        let (ways, fixed) = match self.fragments {
            Some(_) => (
                &GemmWay::ON_TENSOR_CORES[..],
                GemmWay::fixed_on_tensor_cores(m.min(k)),
            ),
            None => (&GemmWay::IN_F32[..], GemmWay::fixed(m.min(k))),
        };
        let problem = tune::Problem {
            operation: "nn::Gemm::backward",
            sizes: &[m, n, k],
            exact: &[],
        };
        let scratch = |rt: &Runtime| Scratch::new(rt, shape);
        let way = tune::way(
            batch.runtime(),
            problem,
            ways,
            fixed,
            scratch,
            |tune, way, s| {
                let io = BackwardBuffers {
                    a: &s.a,
                    b: &s.b,
                    pre: &s.pre,
                    grad_y: &s.y,
                    grad_pre: &mut s.grad_pre,
                    grad_a: &mut s.grad_a,
                    grad_b: &mut s.grad_b,
                    grad_bias: &mut s.grad_bias,
                };
                self.backward_way(tune, way, p, io)
            },
        )?;
        let rt = batch.runtime();
        let (mut spare_pre, mut spare_a) = (self.grad_pre.lock(), self.grad_a.lock());
        let io = BackwardBuffers {
            a,
            b,
            pre,
            grad_y,
            grad_pre: spare_pre.at_least(rt, m as usize * n as usize)?,
            grad_a: match grad_a {
                Some(grad_a) => grad_a,
                None => spare_a.at_least(rt, m as usize * k as usize)?,
            },
            grad_b,
            grad_bias,
        };
        self.backward_way(batch, way, p, io)
    }

    /// The blockings the backward's kernels were built in, for its plans.
    fn backward_caps(&self) -> plan::Caps {
        plan::Caps {
            f32: self.backward.each(|k| k.d_operands().constants()),
            tensor: (self.fragments.as_ref()).map(|f| f.operands.each(|k| k.constants())),
            wide: false,
        }
    }

    /// The backward run `way`, as [`plan::backward`] plans it.
    fn backward_way(
        &self,
        batch: &mut Batch<'_>,
        way: GemmWay,
        p: kernels::GemmParams,
        io: BackwardBuffers<'_>,
    ) -> Result<()> {
        let binding = plan::Binding {
            operands: vectors(p, io.a, io.b).is_some(),
            others: io.grad_pre.view_as::<[f32; 4]>().is_ok(),
        };
        let plan = plan::backward(&p, way, &self.backward_caps(), binding);
        self.record_backward(batch, plan, p, io)
    }

    /// Records the backward as `plan` says, in order: `grad_pre`, both operand gradients
    /// (each summed in slices as its cut says, the slices then added up), and the bias
    /// gradient (in slices of rows when there are many, then their sum).
    fn record_backward(
        &self,
        batch: &mut Batch<'_>,
        plan: BackwardPlan,
        p: kernels::GemmParams,
        mut io: BackwardBuffers<'_>,
    ) -> Result<()> {
        let p = plan.params(p);
        let (cut_a, cut_b) = (plan.cut_a, plan.cut_b);
        // `grad_pre`, `d_operands_reduce` and `d_bias` are the same in every blocking.
        let family = self.backward.get(plan.family().pick());
        // Each operand's first slice goes to its gradient, the others to `partial`.
        let needed = cut_a.partials(p.m, p.k) + cut_b.partials(p.k, p.n)
            - p.m as usize * p.k as usize
            - p.k as usize * p.n as usize;
        let mut partials = self.partials.lock();
        let partial = partials.at_least(batch.runtime(), needed)?;
        // Every buffer is checked before anything is recorded (the bias gradient whole: its
        // slices' sums go to scratch of the right length).
        family.check_lengths(&mut io.args(&p, partial))?;
        let args = kernels::GradPreArgs {
            p: &p,
            pre: io.pre,
            grad_y: io.grad_y,
            grad_pre: &mut *io.grad_pre,
        };
        family.grad_pre().record(batch, args)?;
        self.record_operands(batch, plan.operands, family, &p, &mut io, partial)?;
        if cut_a.splits > 1 || cut_b.splits > 1 {
            let args = kernels::DOperandsReduceArgs {
                p: &p,
                partial,
                grad_a: io.grad_a,
                grad_b: io.grad_b,
            };
            family.d_operands_reduce().record(batch, args)?;
        }
        self.record_bias_gradient(batch, family.d_bias(), p, io.grad_pre, io.grad_bias)
    }

    /// Records both operand gradients as `operands` says (`family`'s own in f32 over
    /// scalars).
    fn record_operands(
        &self,
        batch: &mut Batch<'_>,
        operands: Operands,
        family: &kernels::GemmBackward,
        p: &kernels::GemmParams,
        io: &mut BackwardBuffers<'_>,
        partial: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let (a, b, grad_pre) = (io.a, io.b, &*io.grad_pre);
        let (grad_a, grad_b) = (&mut *io.grad_a, &mut *io.grad_b);
        match operands {
            Operands::TensorCores { tile } => {
                let args = kernels::DOperandsFragmentsArgs {
                    p,
                    a,
                    grad_a,
                    b,
                    grad_b,
                    grad_pre,
                    partial,
                };
                (self.tensor_cores().operands.get(tile.pick())).record(batch, args)
            }
            Operands::F32 {
                tile,
                vectors: true,
            } => {
                let args = kernels::DOperandsVectorsArgs {
                    p,
                    a: &*a.view_as::<[f32; 4]>()?,
                    grad_a,
                    b: &*b.view_as::<[f32; 4]>()?,
                    grad_b,
                    grad_pre: &*grad_pre.view_as::<[f32; 4]>()?,
                    partial,
                };
                self.operands_vectors.get(tile.pick()).record(batch, args)
            }
            Operands::F32 { vectors: false, .. } => {
                let args = kernels::DOperandsArgs {
                    p,
                    a,
                    grad_a,
                    b,
                    grad_b,
                    grad_pre,
                    partial,
                };
                family.d_operands().record(batch, args)
            }
        }
    }

    /// `grad_bias` = the column sums of `grad_pre` (`m x n`): in one pass, or where the rows
    /// alone would keep few workgroups busy for long, in slices of rows whose sums a second
    /// pass adds up. (On an H100 one workgroup summing 65536 rows of 64 columns took most of
    /// a millisecond; notes/performance.md.)
    fn record_bias_gradient(
        &self,
        batch: &mut Batch<'_>,
        d_bias: &kernels::DBias,
        mut p: kernels::GemmParams,
        grad_pre: &GpuBuffer<f32>,
        grad_bias: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let sums = ColumnSums {
            columns: kernels::NARROW,
            rows: kernels::SUMS * kernels::GROUP / kernels::NARROW,
        };
        let cut = Split::of(sums, 1, p.n, p.m);
        if cut.splits == 1 {
            return d_bias.record(
                batch,
                kernels::DBiasArgs {
                    p: &p,
                    grad_pre,
                    grad_bias,
                },
            );
        }
        (p.bias_splits, p.bias_split_rows) = (cut.splits, cut.depth);
        let mut spare = self.bias_sums.lock();
        let sums = spare.at_least(batch.runtime(), cut.partials(1, p.n))?;
        d_bias.record(
            batch,
            kernels::DBiasArgs {
                p: &p,
                grad_pre,
                grad_bias: sums,
            },
        )?;
        add_up_rows(batch, d_bias, sums, cut.splits, p.n, grad_bias)
    }
}

/// The forward's `pre` a backward of `activation` reads (for `op`'s errors): as given, or
/// without activation `grad_y`, read only through the activation's derivative, which is 1
/// everywhere.
pub(super) fn forward_pre<'b>(
    pre: Option<&'b GpuBuffer<f32>>,
    grad_y: &'b GpuBuffer<f32>,
    activation: Activation,
    op: &str,
) -> Result<&'b GpuBuffer<f32>> {
    match pre {
        Some(pre) => Ok(pre),
        None if activation == Activation::None => Ok(grad_y),
        None => Err(invalid(
            op,
            format!(
                "the backward pass of {activation:?} needs the forward's `pre`; pass the \
                 buffer the forward wrote it to"
            ),
        )),
    }
}

/// Records `out[j]` = the sum of the `rows` rows of `columns` in `sums` (a bias gradient's
/// slices' sums), by `d_bias`.
pub(super) fn add_up_rows(
    batch: &mut Batch<'_>,
    d_bias: &kernels::DBias,
    sums: &GpuBuffer<f32>,
    rows: u32,
    columns: u32,
    out: &mut GpuBuffer<f32>,
) -> Result<()> {
    let shape = GemmShape {
        m: rows,
        n: columns,
        k: 1,
    };
    d_bias.record(
        batch,
        kernels::DBiasArgs {
            p: &params(shape, Activation::None)?,
            grad_pre: sums,
            grad_bias: out,
        },
    )
}

/// A forward's buffers.
struct ForwardBuffers<'b> {
    a: &'b GpuBuffer<f32>,
    b: &'b GpuBuffer<f32>,
    bias: &'b GpuBuffer<f32>,
    pre: &'b mut GpuBuffer<f32>,
    y: &'b mut GpuBuffer<f32>,
}

/// What a backward reads and writes.
struct BackwardBuffers<'b> {
    a: &'b GpuBuffer<f32>,
    b: &'b GpuBuffer<f32>,
    pre: &'b GpuBuffer<f32>,
    grad_y: &'b GpuBuffer<f32>,
    grad_pre: &'b mut GpuBuffer<f32>,
    grad_a: &'b mut GpuBuffer<f32>,
    grad_b: &'b mut GpuBuffer<f32>,
    grad_bias: &'b mut GpuBuffer<f32>,
}

impl BackwardBuffers<'_> {
    /// The backward family's arguments, with `p` and the operand gradients' `partial`.
    fn args<'a>(
        &'a mut self,
        p: &'a kernels::GemmParams,
        partial: &'a mut GpuBuffer<f32>,
    ) -> kernels::GemmBackwardArgs<'a> {
        kernels::GemmBackwardArgs {
            p,
            a: self.a,
            b: self.b,
            pre: self.pre,
            grad_y: self.grad_y,
            grad_pre: &mut *self.grad_pre,
            grad_a: &mut *self.grad_a,
            grad_b: &mut *self.grad_b,
            partial,
            grad_bias: &mut *self.grad_bias,
        }
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
}

/// The backward family twice: with the large blocking of the operand gradients, and the
/// small.
fn backward_family(rt: &Runtime) -> Result<kernels::Blocked<kernels::GemmBackward>> {
    let grad_pre = kernels::GradPre::new(rt)?;
    let reduce = kernels::DOperandsReduce::new(rt)?;
    let d_bias = kernels::DBias::new(rt)?;
    let operands = kernels::Blocked::new(|b| {
        // SAFETY: every index is guarded (see "Bounds" in `kernels`).
        unsafe { kernels::DOperands::with_constants_unchecked(rt, b) }
    })?;
    Ok(operands.map(|operands| {
        kernels::GemmBackward::from_members(
            grad_pre.clone(),
            operands,
            reduce.clone(),
            d_bias.clone(),
        )
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `a · b` (`m x k` by `k x n`, row-major) in f64 from the f16 roundings of both.
    fn product_of_halves(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
        let half = |x: f32| f64::from(half::f16::from_f32(x).to_f32());
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for l in 0..k {
                let x = half(a[i * k + l]);
                for j in 0..n {
                    out[i * n + j] += x * half(b[l * n + j]);
                }
            }
        }
        out
    }

    fn assert_close(name: &str, got: &[f32], want: &[f64]) {
        let scale = want.iter().fold(1e-30f64, |s, w| s.max(w.abs()));
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            // The products are exact in f32 and the sums f32: far below f16's rounding.
            assert!(
                (f64::from(g) - w).abs() <= 1e-5 * scale,
                "{name}[{i}]: {g} against {w}"
            );
        }
    }

    fn transposed(v: &[f32], rows: usize, cols: usize) -> Vec<f32> {
        (0..rows * cols)
            .map(|i| v[i % rows * cols + i / rows])
            .collect()
    }

    /// The deep, wide and 512-invocation tensor-core blockings run only where the tuner picks
    /// them, so no test through the public API reaches them with autotuning off: run them
    /// directly, forward
    /// through an activation (over operands bound as vectors where `k` and `n` are multiples
    /// of 4, as scalars otherwise; whole, and over a sum long enough to run in two slices)
    /// and backward, on shapes ragged in every dimension and with tail steps, against f64
    /// products of the operands rounded to f16; then the forward through every activation
    /// (each epilogue chooses it once for all its outputs). Skipped on a device without
    /// tensor cores (lavapipe).
    #[test]
    fn tuned_tensor_core_blockings_match_the_reference() {
        let rt = Runtime::new().unwrap();
        let gemm = match Gemm::with_precision(&rt, Precision::TensorCoreF16) {
            Err(tessera::Error::MissingFeature { .. }) => return,
            built => built.unwrap(),
        };
        let fragments = gemm.fragments.as_ref().unwrap();
        assert!(fragments.forward.deep.is_some() && fragments.operands.deep.is_some());
        assert!(fragments.wide.is_some());
        assert!(fragments.forward.many.is_some() && fragments.operands.many.is_some());
        let on = |tile, split| GemmWay::TensorCores { tile, split };
        let (deep, wide, many) = (
            on(tune::GemmTile::Deep, false),
            on(tune::GemmTile::Wide, false),
            on(tune::GemmTile::MANY, false),
        );
        let vectors = "gemm_forward_fragments_vec4_f32_depth64_block128_invocations256";
        let scalars = "gemm_forward_fragments_f32_depth64_block128_invocations256";
        let backward = "d_operands_fragments_depth64_block128_invocations256";
        let reduce = "gemm_forward_fragments_reduce";
        // The wide blocking: its own forward over vectors, the large blocking's otherwise
        // and for the backward.
        let wide_vectors = "gemm_forward_fragments_wide_depth32_block256";
        let large_scalars = "gemm_forward_fragments_f32_depth32_block128_invocations256";
        let large_backward = "d_operands_fragments_depth32_block128_invocations256";
        // The large blocks in 512 invocations.
        let many_vectors = "gemm_forward_fragments_vec4_f32_depth32_block128_invocations512";
        let many_scalars = "gemm_forward_fragments_f32_depth32_block128_invocations512";
        let many_backward = "d_operands_fragments_depth32_block128_invocations512";
        let cases: [(usize, GemmWay, &[&str]); 9] = [
            (300, deep, &[vectors, backward]),
            (301, deep, &[scalars, backward]),
            (
                1300,
                on(tune::GemmTile::Deep, true),
                &[vectors, reduce, backward],
            ),
            (
                1301,
                on(tune::GemmTile::Deep, true),
                &[scalars, reduce, backward],
            ),
            (300, wide, &[wide_vectors, large_backward]),
            (301, wide, &[large_scalars, large_backward]),
            (300, many, &[many_vectors, many_backward]),
            (301, many, &[many_scalars, many_backward]),
            (
                1300,
                on(tune::GemmTile::MANY, true),
                &[many_vectors, reduce, many_backward],
            ),
        ];
        for (k, way, entry_points) in cases {
            check_deep(&rt, &gemm, k, way, entry_points);
        }
    }

    /// The deep blocking's forward and backward on M, N = 200, 136 summed over `k`, run
    /// `way`, through the kernels `entry_points` (the deep instances of those that have
    /// them).
    fn check_deep(rt: &Runtime, gemm: &Gemm, k: usize, way: GemmWay, entry_points: &[&str]) {
        let (m, n) = (200usize, 136usize);
        let wave = |len: usize, f: f32| -> Vec<f32> {
            (0..len).map(|i| (i as f32 * f).sin() * 0.5).collect()
        };
        let (av, bv, biasv, gv) = (
            wave(m * k, 0.37),
            wave(k * n, 0.11),
            wave(n, 0.7),
            wave(m * n, 0.23),
        );
        let up = |v: &[f32]| rt.upload(v).unwrap();
        let (a, b, bias, grad_y) = (up(&av), up(&bv), up(&biasv), up(&gv));
        let zeros = |len: usize| rt.zeros::<f32>(len).unwrap();
        let (mut pre, mut y, mut grad_pre) = (zeros(m * n), zeros(m * n), zeros(m * n));
        let (mut grad_a, mut grad_b, mut grad_bias) = (zeros(m * k), zeros(k * n), zeros(n));
        let shape = GemmShape {
            m: m as u32,
            n: n as u32,
            k: k as u32,
        };
        // The forward through an activation (each kernel's epilogue applies it), the
        // backward without one (so its reference needs no derivative).
        let forward = params(shape, Activation::Relu).unwrap();
        let p = params(shape, Activation::None).unwrap();
        let mut batch = rt.batch();
        let io = ForwardBuffers {
            a: &a,
            b: &b,
            bias: &bias,
            pre: &mut pre,
            y: &mut y,
        };
        gemm.forward_way(&mut batch, way, forward, io).unwrap();
        let grads = BackwardBuffers {
            a: &a,
            b: &b,
            pre: &pre,
            grad_y: &grad_y,
            grad_pre: &mut grad_pre,
            grad_a: &mut grad_a,
            grad_b: &mut grad_b,
            grad_bias: &mut grad_bias,
        };
        gemm.backward_way(&mut batch, way, p, grads).unwrap();
        let ran: Vec<String> = batch
            .submit_timed()
            .unwrap()
            .dispatches
            .into_iter()
            .map(|(label, _)| label)
            .collect();
        for entry in entry_points {
            assert!(ran.iter().any(|r| r == entry), "{ran:?}");
        }
        let mut want_pre = product_of_halves(&av, &bv, m, n, k);
        for (i, w) in want_pre.iter_mut().enumerate() {
            *w += f64::from(biasv[i % n]);
        }
        assert_close("pre", &pre.read(rt).unwrap(), &want_pre);
        let want_y: Vec<f64> = want_pre.iter().map(|w| w.max(0.0)).collect();
        assert_close("y", &y.read(rt).unwrap(), &want_y);
        let bt = transposed(&bv, k, n);
        let want_a = product_of_halves(&gv, &bt, m, k, n);
        assert_close("grad_a", &grad_a.read(rt).unwrap(), &want_a);
        let at = transposed(&av, m, k);
        let want_b = product_of_halves(&at, &gv, k, n, m);
        assert_close("grad_b", &grad_b.read(rt).unwrap(), &want_b);

        let mut io = ForwardBuffers {
            a: &a,
            b: &b,
            bias: &bias,
            pre: &mut pre,
            y: &mut y,
        };
        check_activations(rt, gemm, way, shape, &mut io, &want_pre);
    }

    /// The forward of `shape` run `way` through every activation: `pre` as `want_pre`, `y`
    /// the activation of the `pre` the kernel wrote (in f64 from GELU's tanh form, which
    /// the kernels compute as `x * sigmoid(2u)`).
    fn check_activations(
        rt: &Runtime,
        gemm: &Gemm,
        way: GemmWay,
        shape: GemmShape,
        io: &mut ForwardBuffers<'_>,
        want_pre: &[f64],
    ) {
        for activation in Activation::ALL {
            let forward = params(shape, activation).unwrap();
            let mut batch = rt.batch();
            let buffers = ForwardBuffers {
                pre: &mut *io.pre,
                y: &mut *io.y,
                ..*io
            };
            gemm.forward_way(&mut batch, way, forward, buffers).unwrap();
            batch.submit().unwrap();
            let got_pre = io.pre.read(rt).unwrap();
            assert_close(&format!("pre ({activation:?})"), &got_pre, want_pre);
            let want_y: Vec<f64> = got_pre
                .iter()
                .map(|&x| activated(activation, f64::from(x)))
                .collect();
            let got_y = io.y.read(rt).unwrap();
            for (i, (&g, &w)) in got_y.iter().zip(&want_y).enumerate() {
                assert!(
                    (f64::from(g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "y ({activation:?}) [{i}]: {g} against {w}"
                );
            }
        }
    }

    /// `activation` of `x`, as `Activation` documents it.
    fn activated(activation: Activation, x: f64) -> f64 {
        let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
        match activation {
            Activation::None => x,
            Activation::Relu => x.max(0.0),
            Activation::Gelu => {
                let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + u.tanh())
            }
            Activation::Silu => x * sigmoid(x),
            Activation::Sigmoid => sigmoid(x),
            Activation::Tanh => x.tanh(),
        }
    }
}
