//! Scaled dot-product attention: [`Attention`].

use crate::invalid;
use crate::kernels::attention_ops as kernels;
use crate::precision::check_tensor_core_subgroups;
use crate::spare::Spare;
use crate::Precision;
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// The sizes of one attention call. Every tensor is row-major and contiguous: queries and
/// outputs `[batch, heads, queries, head_dim]`, keys and values `[batch, kv_heads, keys,
/// head_dim]`, the log-sum-exp `[batch, heads, queries]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttentionShape {
    /// Independent sequences.
    pub batch: u32,
    /// Query heads.
    pub heads: u32,
    /// Key and value heads: `heads` for multi-head attention, fewer for grouped queries
    /// (each shared by `heads / kv_heads` query heads in turn: query head `h` reads key head
    /// `h / (heads / kv_heads)`), 1 for multi-query attention. Must divide `heads`.
    pub kv_heads: u32,
    /// Query rows of each head.
    pub queries: u32,
    /// Key (and value) rows of each head.
    pub keys: u32,
    /// Scalars in each row of every tensor: 1 to [`MAX_HEAD_DIM`].
    pub head_dim: u32,
}

/// The largest head dimension [`Attention`] takes.
pub const MAX_HEAD_DIM: u32 = 128;

/// Which keys a query sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AttentionMask {
    /// Every key.
    #[default]
    None,
    /// Query `i` sees keys `0..=i` (aligned at the first row, as PyTorch's `is_causal`).
    Causal,
}

impl AttentionShape {
    /// The usual scale, `1 / sqrt(head_dim)`.
    pub fn default_scale(&self) -> f32 {
        1.0 / (self.head_dim as f32).sqrt()
    }
}

/// One [`Attention::forward`], over buffers of `E` (see [`AttentionElement`]).
#[derive(Debug)]
pub struct AttentionForward<'a, E: AttentionElement = f32> {
    /// The call's sizes.
    pub shape: AttentionShape,
    /// Which keys each query sees.
    pub mask: AttentionMask,
    /// What the scores `q · k` are multiplied by before the softmax; usually
    /// [`AttentionShape::default_scale`].
    pub scale: f32,
    /// `[batch, heads, queries, head_dim]`.
    pub q: &'a GpuBuffer<E>,
    /// `[batch, kv_heads, keys, head_dim]`.
    pub k: &'a GpuBuffer<E>,
    /// `[batch, kv_heads, keys, head_dim]`.
    pub v: &'a GpuBuffer<E>,
    /// `[batch]`: how many keys each sequence has, where they differ (padded batches):
    /// queries of sequence `b` see its first `key_lengths[b]` keys alone (at most `keys`; a
    /// sequence of 0 keys gets zero outputs). `None`: every sequence has `keys`.
    pub key_lengths: Option<&'a GpuBuffer<u32>>,
    /// `[batch, heads, queries, head_dim]`: `softmax(scale * q kᵀ) v` (overwritten).
    pub out: &'a mut GpuBuffer<E>,
    /// `[batch, heads, queries]`: each query row's log-sum-exp of its scaled scores
    /// (overwritten), which a backward recomputes the probabilities from.
    pub lse: &'a mut GpuBuffer<f32>,
}

/// One [`Attention::backward`]: the forward's arguments, its results, and the gradients.
#[derive(Debug)]
pub struct AttentionBackward<'a, E: AttentionElement = f32> {
    /// The forward's sizes.
    pub shape: AttentionShape,
    /// The forward's mask.
    pub mask: AttentionMask,
    /// The forward's scale.
    pub scale: f32,
    /// The forward's `q`.
    pub q: &'a GpuBuffer<E>,
    /// The forward's `k`.
    pub k: &'a GpuBuffer<E>,
    /// The forward's `v`.
    pub v: &'a GpuBuffer<E>,
    /// The forward's `key_lengths`.
    pub key_lengths: Option<&'a GpuBuffer<u32>>,
    /// The forward's `out`.
    pub out: &'a GpuBuffer<E>,
    /// The forward's `lse`.
    pub lse: &'a GpuBuffer<f32>,
    /// `[batch, heads, queries, head_dim]`: the gradient of the loss with respect to `out`.
    pub grad_out: &'a GpuBuffer<E>,
    /// `[batch, heads, queries, head_dim]`: the gradient with respect to `q` (overwritten).
    pub grad_q: &'a mut GpuBuffer<E>,
    /// `[batch, kv_heads, keys, head_dim]`: the gradient with respect to `k` (overwritten),
    /// summed over the query heads that share each key head.
    pub grad_k: &'a mut GpuBuffer<E>,
    /// `[batch, kv_heads, keys, head_dim]`: the gradient with respect to `v` (overwritten),
    /// likewise.
    pub grad_v: &'a mut GpuBuffer<E>,
}

/// The element types [`Attention`] stores queries, keys, values, outputs and their gradients
/// in: `f32`, in either [`Precision`]; and `half::f16` on the tensor cores
/// ([`Precision::TensorCoreF16`]), as mixed-precision training keeps activations. The
/// log-sum-exp and every sum stay `f32` whatever the storage.
pub trait AttentionElement: sealed::Kernels {
    /// Four of it, the instance the tensor-core kernels bind where `head_dim` is a multiple
    /// of 4.
    #[doc(hidden)]
    type Vector: sealed::Fragments;
    /// Whether the strict-`f32` kernels read it.
    #[doc(hidden)]
    const STRICT: bool;
}

impl AttentionElement for f32 {
    type Vector = [f32; 4];
    const STRICT: bool = true;
}

impl AttentionElement for tessera::half::f16 {
    type Vector = [tessera::half::f16; 4];
    const STRICT: bool = false;
}

mod sealed {
    use super::kernels::*;

    /// The element traits of the tensor-core kernels, instantiated for scalars and vectors
    /// of 4.
    pub trait Fragments:
        AttentionForwardFragmentsElement
        + AttentionGradQFragmentsElement
        + AttentionGradKvFragmentsElement
    {
    }

    impl<T> Fragments for T where
        T: AttentionForwardFragmentsElement
            + AttentionGradQFragmentsElement
            + AttentionGradKvFragmentsElement
    {
    }

    /// Those and the row statistics', for the element types themselves.
    pub trait Kernels: Fragments + AttentionRowStatsElement {}

    impl<T: Fragments + AttentionRowStatsElement> Kernels for T {}
}

/// Scaled dot-product attention, `out = softmax(scale * q kᵀ + mask) v` for every head, as
/// FlashAttention computes it: the scores are never stored, each query row keeping a running
/// maximum, sum and output while it walks the keys a block at a time. In strict `f32`
/// ([`Attention::new`]), or with its products on the tensor cores
/// ([`Attention::with_precision`] and [`Precision::TensorCoreF16`]: f16 operands, f32 sums
/// and softmax), over `f32` or `f16` storage ([`AttentionElement`]).
///
/// Causal or not ([`AttentionMask`]), sequences of different lengths in one batch
/// (`key_lengths`), any numbers of queries and keys, head dimensions up to
/// [`MAX_HEAD_DIM`], grouped queries (fewer key and value heads than query heads). The
/// backward recomputes the probabilities from the forward's log-sum-exp (nothing of the size
/// of the scores is ever stored) through scratch memory the op keeps (a float per query row).
/// In `f32`, where the device has subgroups of 8 lanes or more, the forward and the gradients
/// run on register tiles (several rows shared by a few lanes, scores summed by shuffles);
/// elsewhere a row an invocation. On the tensor cores, each subgroup multiplies 16 rows in
/// 16 x 16 fragments (the backward's three products as well); the probabilities and their
/// gradients are rounded to f16 before they are multiplied, about `1e-3` of each product.
/// Not yet: an additive mask; notes/attention.md has the H200 figures.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Attention, AttentionForward, AttentionMask, AttentionShape};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let attention = Attention::new(&rt)?;
/// let (batch, heads, kv_heads) = (1, 1, 1);
/// let shape = AttentionShape { batch, heads, kv_heads, queries: 2, keys: 2, head_dim: 1 };
/// let (q, k) = (rt.upload(&[1.0f32, 1.0])?, rt.upload(&[0.0f32, 0.0])?);
/// let v = rt.upload(&[2.0f32, 4.0])?;
/// let (mut out, mut lse) = (rt.zeros::<f32>(2)?, rt.zeros::<f32>(2)?);
/// let mut batch = rt.batch();
/// let scale = shape.default_scale();
/// let (q, k, v, out, lse) = (&q, &k, &v, &mut out, &mut lse);
/// let mask = AttentionMask::Causal;
/// let key_lengths = None; // every sequence has `keys`
/// let args = AttentionForward { shape, mask, scale, q, k, v, key_lengths, out, lse };
/// attention.forward(&mut batch, args)?;
/// batch.submit()?;
/// // Query 0 sees key 0 alone; query 1 both keys, equally.
/// assert_eq!(out.read(&rt)?, [2.0, 3.0]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Attention<E: AttentionElement = f32> {
    /// The forward and the gradients, in the op's precision as this device runs them.
    passes: Passes<E>,
    /// Each query row's log-sum-exp and `grad_out · out`.
    row_stats: kernels::AttentionRowStats<E>,
    /// The halves of the tiled forward's split blocks: outputs and log-sum-exps (empty
    /// where the device runs the row-an-invocation kernels, which split nothing).
    partial_o: Spare<f32>,
    partial_lse: Spare<f32>,
    /// The second halves' query gradients of the tiled backward's split blocks.
    partial_grad_q: Spare<f32>,
    /// The backward's row statistics.
    stats: Spare<[f32; 2]>,
    /// What the kernels bind for `key_lengths` where a call has none (never read).
    no_lengths: Spare<u32>,
}

/// How the op multiplies, chosen once when it is built.
#[derive(Clone, Debug)]
enum Passes<E: AttentionElement> {
    /// [`Precision::F32`], over `f32` storage (`E::STRICT`).
    F32(Tiling),
    /// [`Precision::TensorCoreF16`]: the kernels reading scalars, and those reading vectors
    /// of 4 (for a `head_dim` that is a multiple of 4).
    TensorCores {
        scalar: Fragments<E>,
        vector: Fragments<E::Vector>,
    },
}

/// The tensor-core kernels over elements `U`: a kernel of each pass for each head-dimension
/// instance of `FragmentHeadDim`, `D = 64` then `D = 128`.
#[derive(Clone, Debug)]
struct Fragments<U: sealed::Fragments> {
    forward: Vec<kernels::AttentionForwardFragments<U>>,
    grad_q: Vec<kernels::AttentionGradQFragments<U>>,
    grad_kv: Vec<kernels::AttentionGradKvFragments<U>>,
}

impl<U: sealed::Fragments> Fragments<U> {
    fn new(rt: &Runtime) -> Result<Self> {
        let instances = kernels::FragmentHeadDim::ALL;
        // SAFETY: every index the tensor-core kernels make into a buffer is guarded by a
        // comparison with the call's sizes (rows against `queries` or `keys`, columns against
        // `head_dim`, statistics against `queries`, `key_lengths` read only where `padded`),
        // and `Plan::new` and the launchers check each buffer's length against those sizes;
        // their workgroup arrays are indexed by constants and local ids within their sizes.
        // So they are built without naga's bounds checks, as the GEMMs are (kernels/mod.rs,
        // "Bounds").
        Ok(Fragments {
            forward: instances
                .iter()
                .map(|&d| unsafe {
                    kernels::AttentionForwardFragments::with_constants_unchecked(rt, d)
                })
                .collect::<Result<_>>()?,
            grad_q: instances
                .iter()
                .map(|&d| unsafe {
                    kernels::AttentionGradQFragments::with_constants_unchecked(rt, d)
                })
                .collect::<Result<_>>()?,
            grad_kv: instances
                .iter()
                .map(|&d| unsafe {
                    kernels::AttentionGradKvFragments::with_constants_unchecked(rt, d)
                })
                .collect::<Result<_>>()?,
        })
    }

    fn kernels(&self) -> impl Iterator<Item = &dyn tessera::Prepare> {
        let forward = self.forward.iter().map(|k| k as &dyn tessera::Prepare);
        let grad_q = self.grad_q.iter().map(|k| k as &dyn tessera::Prepare);
        let grad_kv = self.grad_kv.iter().map(|k| k as &dyn tessera::Prepare);
        forward.chain(grad_q).chain(grad_kv)
    }

    /// Records the forward, `args`' buffers viewed as `U`s.
    fn forward<E: AttentionElement>(
        &self,
        batch: &mut Batch<'_>,
        plan: &Plan,
        args: AttentionForward<'_, E>,
        key_lengths: &GpuBuffer<u32>,
    ) -> Result<()> {
        let bound = kernels::AttentionForwardFragmentsArgs {
            p: &plan.params,
            q: &*args.q.view_as()?,
            k: &*args.k.view_as()?,
            v: &*args.v.view_as()?,
            o: &mut *args.out.view_as_mut()?,
            lse: args.lse,
            key_lengths,
        };
        self.forward[plan.instance].record(batch, bound)
    }

    /// Records the gradients from the row statistics `stats`, `args`' buffers viewed as
    /// `U`s.
    fn backward<E: AttentionElement>(
        &self,
        batch: &mut Batch<'_>,
        plan: &Plan,
        args: AttentionBackward<'_, E>,
        stats: &GpuBuffer<[f32; 2]>,
        key_lengths: &GpuBuffer<u32>,
    ) -> Result<()> {
        let p = &plan.params;
        let (q, k, v) = (
            &*args.q.view_as()?,
            &*args.k.view_as()?,
            &*args.v.view_as()?,
        );
        let grad_o = &*args.grad_out.view_as()?;
        let bound = kernels::AttentionGradQFragmentsArgs {
            p,
            q,
            k,
            v,
            grad_o,
            stats,
            grad_q: &mut *args.grad_q.view_as_mut()?,
            key_lengths,
        };
        self.grad_q[plan.instance].record(batch, bound)?;
        let bound = kernels::AttentionGradKvFragmentsArgs {
            p,
            q,
            k,
            v,
            grad_o,
            stats,
            grad_k: &mut *args.grad_k.view_as_mut()?,
            grad_v: &mut *args.grad_v.view_as_mut()?,
            key_lengths,
        };
        self.grad_kv[plan.instance].record(batch, bound)
    }
}

impl<E: AttentionElement> Passes<E> {
    fn new(rt: &Runtime, precision: Precision) -> Result<Self> {
        match precision {
            Precision::F32 if E::STRICT => Ok(Passes::F32(Tiling::new(rt)?)),
            Precision::F32 => Err(invalid(
                "nn::Attention",
                "f16 storage runs on the tensor cores only: build the op with \
                 Precision::TensorCoreF16, or store in f32"
                    .into(),
            )),
            Precision::TensorCoreF16 => {
                // Before the kernels, whose workgroups a device without tensor cores may also
                // be too small for: the refusal names what is missing first.
                let f16 = tessera::wgpu::CooperativeScalarType::F16;
                let f32 = tessera::wgpu::CooperativeScalarType::F32;
                if !rt.info().has_cooperative_matrix(16, f16, f32) {
                    return Err(tessera::Error::MissingFeature {
                        kernel: "nn::Attention".into(),
                        feature: "cooperative matrices of 16 x 16 f16 summed in f32 (tensor \
                                  cores) for Precision::TensorCoreF16"
                            .into(),
                    });
                }
                let passes = Passes::TensorCores {
                    scalar: Fragments::new(rt)?,
                    vector: Fragments::new(rt)?,
                };
                // After the kernels, which refuse a device without tensor cores first.
                check_tensor_core_subgroups(rt, "nn::Attention")?;
                Ok(passes)
            }
        }
    }

    /// The kernels, as what [`Attention::prepare`] compiles.
    fn kernels(&self) -> Vec<&dyn tessera::Prepare> {
        match self {
            Passes::F32(tiling) => tiling.kernels(),
            Passes::TensorCores { scalar, vector } => {
                scalar.kernels().chain(vector.kernels()).collect()
            }
        }
    }
}

/// How the strict-`f32` forward and gradients run on a device, chosen once: each a kernel
/// for each head-dimension instance, `D = 64` then `D = 128` in both.
#[derive(Clone, Debug)]
enum Tiling {
    /// On register tiles, a set of rows shared by lanes of a subgroup
    /// (`attention_forward_tiled`, `attention_grad_q_tiled`, `attention_grad_kv_tiled`):
    /// where the device has subgroups of at least 8 lanes and the workgroup memory they take.
    Tiled {
        forward: Vec<kernels::AttentionForwardTiled>,
        /// Finishes the rows of the forward's split blocks.
        merge: kernels::AttentionMergeHalves,
        grad_q: Vec<kernels::AttentionGradQTiled>,
        /// Finishes the query gradients of the split blocks.
        add_halves: kernels::AttentionAddHalves,
        grad_kv: Vec<kernels::AttentionGradKvTiled>,
    },
    /// A row an invocation (`attention_forward`, `attention_grad_q`, `attention_grad_kv`):
    /// anywhere.
    Rows {
        forward: Vec<kernels::AttentionForward>,
        grad_q: Vec<kernels::AttentionGradQ>,
        grad_kv: Vec<kernels::AttentionGradKv>,
    },
}

// Every way indexes its kernels by the instance `Plan` picks from `HeadDim`: the same head
// dimensions in the same order.
const _: () = {
    let rows = kernels::HeadDim::ALL;
    let (tiled, fragments) = (kernels::TiledHeadDim::ALL, kernels::FragmentHeadDim::ALL);
    assert!(tiled.len() == rows.len() && fragments.len() == rows.len());
    let mut i = 0;
    while i < rows.len() {
        assert!(tiled[i].d == rows[i].d && fragments[i].d == rows[i].d);
        i += 1;
    }
};

impl Tiling {
    fn new(rt: &Runtime) -> Result<Self> {
        let info = rt.info();
        let memory = kernels::AttentionForwardTiled::VARIANTS
            .iter()
            .chain(kernels::AttentionGradQTiled::VARIANTS)
            .chain(kernels::AttentionGradKvTiled::VARIANTS)
            .map(|variant| variant.workgroup_memory)
            .max()
            .unwrap_or(0);
        Ok(
            if info.features.contains(tessera::wgpu::Features::SUBGROUP)
                && info.subgroup_sizes[0] >= 8
                && info.limits.max_compute_workgroup_storage_size >= memory
            {
                let tiled = kernels::TiledHeadDim::ALL;
                Tiling::Tiled {
                    forward: tiled
                        .iter()
                        .map(|&d| kernels::AttentionForwardTiled::with_constants(rt, d))
                        .collect::<Result<_>>()?,
                    merge: kernels::AttentionMergeHalves::new(rt)?,
                    add_halves: kernels::AttentionAddHalves::new(rt)?,
                    grad_q: tiled
                        .iter()
                        .map(|&d| kernels::AttentionGradQTiled::with_constants(rt, d))
                        .collect::<Result<_>>()?,
                    grad_kv: tiled
                        .iter()
                        .map(|&d| kernels::AttentionGradKvTiled::with_constants(rt, d))
                        .collect::<Result<_>>()?,
                }
            } else {
                let rows = kernels::HeadDim::ALL;
                Tiling::Rows {
                    forward: rows
                        .iter()
                        .map(|&d| kernels::AttentionForward::with_constants(rt, d))
                        .collect::<Result<_>>()?,
                    grad_q: rows
                        .iter()
                        .map(|&d| kernels::AttentionGradQ::with_constants(rt, d))
                        .collect::<Result<_>>()?,
                    grad_kv: rows
                        .iter()
                        .map(|&d| kernels::AttentionGradKv::with_constants(rt, d))
                        .collect::<Result<_>>()?,
                }
            },
        )
    }

    /// The kernels, as what [`Attention::prepare`] compiles.
    fn kernels(&self) -> Vec<&dyn tessera::Prepare> {
        fn all<'a>(
            forward: &'a [impl tessera::Prepare],
            grad_q: &'a [impl tessera::Prepare],
            grad_kv: &'a [impl tessera::Prepare],
        ) -> Vec<&'a dyn tessera::Prepare> {
            let forward = forward.iter().map(|k| k as &dyn tessera::Prepare);
            let grad_q = grad_q.iter().map(|k| k as &dyn tessera::Prepare);
            let grad_kv = grad_kv.iter().map(|k| k as &dyn tessera::Prepare);
            forward.chain(grad_q).chain(grad_kv).collect()
        }
        match self {
            Tiling::Tiled {
                forward,
                merge,
                grad_q,
                add_halves,
                grad_kv,
            } => {
                let mut kernels = all(forward, grad_q, grad_kv);
                kernels.extend([merge as &dyn tessera::Prepare, add_halves]);
                kernels
            }
            Tiling::Rows {
                forward,
                grad_q,
                grad_kv,
            } => all(forward, grad_q, grad_kv),
        }
    }
}

impl Attention {
    /// Makes the op in strict `f32`; its kernels compile at their first use, or at
    /// [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        Self::with_precision(rt, Precision::F32)
    }
}

impl<E: AttentionElement> Attention<E> {
    /// Makes the op multiplying in `precision`: [`Precision::TensorCoreF16`] needs a device
    /// with tensor cores ([`Error::MissingFeature`](tessera::Error::MissingFeature)
    /// elsewhere), and `f16` storage needs it (an `InvalidArgument` for [`Precision::F32`]).
    ///
    /// ```no_run
    /// # use tessera::{half::f16, Runtime};
    /// # use tessera_nn::{Attention, Precision};
    /// # fn main() -> Result<(), tessera::Error> {
    /// let rt = Runtime::new()?;
    /// // Queries, keys, values and outputs in f16 buffers, products on the tensor cores.
    /// let attention = Attention::<f16>::with_precision(&rt, Precision::TensorCoreF16)?;
    /// assert_eq!(attention.precision(), Precision::TensorCoreF16);
    /// # Ok(()) }
    /// ```
    pub fn with_precision(rt: &Runtime, precision: Precision) -> Result<Self> {
        Ok(Attention {
            passes: Passes::new(rt, precision)?,
            row_stats: kernels::AttentionRowStats::new(rt)?,
            partial_o: Spare::default(),
            partial_lse: Spare::default(),
            partial_grad_q: Spare::default(),
            stats: Spare::default(),
            no_lengths: Spare::default(),
        })
    }

    /// The precision the op multiplies in.
    pub fn precision(&self) -> Precision {
        match self.passes {
            Passes::F32(_) => Precision::F32,
            Passes::TensorCores { .. } => Precision::TensorCoreF16,
        }
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        let mut kernels: Vec<&dyn tessera::Prepare> = vec![&self.row_stats];
        kernels.extend(self.passes.kernels());
        tessera::Prepare::prepare(&kernels[..], rt)
    }

    /// Records `out = softmax(scale * q kᵀ + mask) v` and each query row's log-sum-exp.
    pub fn forward(&self, batch: &mut Batch<'_>, args: AttentionForward<'_, E>) -> Result<()> {
        let call = Call {
            operation: "attention forward",
            shape: args.shape,
            mask: args.mask,
            scale: args.scale,
            inputs: [args.q.len(), args.k.len(), args.v.len()],
            key_lengths: args.key_lengths,
        };
        let outputs = [
            ("out", args.out.len(), Rows::Queries),
            ("lse", args.lse.len(), Rows::QueryLse),
        ];
        let plan = Plan::new(&call, &outputs)?;
        let mut no_lengths = self.no_lengths.lock();
        let key_lengths = match args.key_lengths {
            Some(lengths) => lengths,
            None => no_lengths.at_least(batch.runtime(), 1)?,
        };
        let lse = args.lse;
        let tiling = match &self.passes {
            Passes::F32(tiling) => tiling,
            Passes::TensorCores { scalar, vector } => {
                let args = AttentionForward { lse, ..args };
                return if plan.params.head_dim.is_multiple_of(4) {
                    vector.forward(batch, &plan, args, key_lengths)
                } else {
                    scalar.forward(batch, &plan, args, key_lengths)
                };
            }
        };
        // Strict f32: `E` is `f32` (`Passes::new`), and the views are the buffers themselves.
        let (q, k, v) = (
            &*args.q.view_as()?,
            &*args.k.view_as()?,
            &*args.v.view_as()?,
        );
        let o = &mut *args.out.view_as_mut()?;
        match tiling {
            Tiling::Tiled { forward, merge, .. } => {
                let lanes = kernels::TiledHeadDim::ALL[plan.instance].lanes;
                let rows = kernels::TILED_INVOCATIONS / lanes * kernels::ROWS_EACH;
                let p = &split_blocks(plan.params, rows);
                let halves = (2 * p.batch_heads * p.split_rows) as usize;
                let (mut partial_o, mut partial_lse) =
                    (self.partial_o.lock(), self.partial_lse.lock());
                let runtime = batch.runtime();
                let partial_o = partial_o.at_least(runtime, halves * p.head_dim as usize)?;
                let partial_lse = partial_lse.at_least(runtime, halves)?;
                let args = kernels::AttentionForwardTiledArgs {
                    p,
                    q,
                    k,
                    v,
                    o,
                    lse,
                    key_lengths,
                    partial_o,
                    partial_lse,
                };
                forward[plan.instance].record(batch, args)?;
                if p.split == 0 {
                    return Ok(());
                }
                let (partial_o, partial_lse) = (&*partial_o, &*partial_lse);
                let args = kernels::AttentionMergeHalvesArgs {
                    p,
                    partial_o,
                    partial_lse,
                    o,
                    lse,
                };
                merge.record(batch, args)
            }
            Tiling::Rows { forward, .. } => forward[plan.instance].record(
                batch,
                kernels::AttentionForwardArgs {
                    p: &plan.params,
                    q,
                    k,
                    v,
                    o,
                    lse,
                    key_lengths,
                },
            ),
        }
    }

    /// Records the gradients of the loss with respect to `q`, `k` and `v`, from the
    /// forward's arguments and results and the gradient with respect to `out`.
    pub fn backward(&self, batch: &mut Batch<'_>, args: AttentionBackward<'_, E>) -> Result<()> {
        let call = Call {
            operation: "attention backward",
            shape: args.shape,
            mask: args.mask,
            scale: args.scale,
            inputs: [args.q.len(), args.k.len(), args.v.len()],
            key_lengths: args.key_lengths,
        };
        let others = [
            ("out", args.out.len(), Rows::Queries),
            ("lse", args.lse.len(), Rows::QueryLse),
            ("grad_out", args.grad_out.len(), Rows::Queries),
            ("grad_q", args.grad_q.len(), Rows::Queries),
            ("grad_k", args.grad_k.len(), Rows::Keys),
            ("grad_v", args.grad_v.len(), Rows::Keys),
        ];
        let plan = Plan::new(&call, &others)?;
        let p = &plan.params;
        let (mut stats, mut no_lengths) = (self.stats.lock(), self.no_lengths.lock());
        let stats = stats.at_least(batch.runtime(), (p.batch_heads * p.queries) as usize)?;
        let key_lengths = match args.key_lengths {
            Some(lengths) => lengths,
            None => no_lengths.at_least(batch.runtime(), 1)?,
        };
        let row_stats = kernels::AttentionRowStatsArgs {
            p,
            o: args.out,
            grad_o: args.grad_out,
            lse: args.lse,
            stats,
        };
        self.row_stats.record(batch, row_stats)?;
        let tiling = match &self.passes {
            Passes::F32(tiling) => tiling,
            Passes::TensorCores { scalar, vector } => {
                return if plan.params.head_dim.is_multiple_of(4) {
                    vector.backward(batch, &plan, args, stats, key_lengths)
                } else {
                    scalar.backward(batch, &plan, args, stats, key_lengths)
                };
            }
        };
        // Strict f32: `E` is `f32` (`Passes::new`), and the views are the buffers themselves.
        let (q, k, v) = (
            &*args.q.view_as()?,
            &*args.k.view_as()?,
            &*args.v.view_as()?,
        );
        let grad_o = &*args.grad_out.view_as()?;
        let grad_q = &mut *args.grad_q.view_as_mut()?;
        let grad_k = &mut *args.grad_k.view_as_mut()?;
        let grad_v = &mut *args.grad_v.view_as_mut()?;
        match tiling {
            Tiling::Tiled {
                grad_q: grad_q_kernels,
                add_halves,
                grad_kv,
                ..
            } => {
                let lanes = kernels::TiledHeadDim::ALL[plan.instance].lanes;
                let rows = kernels::TILED_INVOCATIONS / lanes * kernels::GRAD_ROWS_EACH;
                let split = &split_blocks(plan.params, rows);
                let mut partial = self.partial_grad_q.lock();
                let len = split.batch_heads * split.split_rows * split.head_dim;
                let partial_grad_q = partial.at_least(batch.runtime(), len as usize)?;
                grad_q_kernels[plan.instance].record(
                    batch,
                    kernels::AttentionGradQTiledArgs {
                        p: split,
                        q,
                        k,
                        v,
                        grad_o,
                        stats,
                        grad_q: &mut *grad_q,
                        key_lengths,
                        partial_grad_q: &mut *partial_grad_q,
                    },
                )?;
                if split.split > 0 {
                    let args = kernels::AttentionAddHalvesArgs {
                        p: split,
                        partial_grad_q,
                        grad_q: &mut *grad_q,
                    };
                    add_halves.record(batch, args)?;
                }
                grad_kv[plan.instance].record(
                    batch,
                    kernels::AttentionGradKvTiledArgs {
                        p,
                        q,
                        k,
                        v,
                        grad_o,
                        stats,
                        grad_k,
                        grad_v,
                        key_lengths,
                    },
                )
            }
            Tiling::Rows {
                grad_q: grad_q_kernels,
                grad_kv,
                ..
            } => {
                grad_q_kernels[plan.instance].record(
                    batch,
                    kernels::AttentionGradQArgs {
                        p,
                        q,
                        k,
                        v,
                        grad_o,
                        stats,
                        grad_q,
                        key_lengths,
                    },
                )?;
                grad_kv[plan.instance].record(
                    batch,
                    kernels::AttentionGradKvArgs {
                        p,
                        q,
                        k,
                        v,
                        grad_o,
                        stats,
                        grad_k,
                        grad_v,
                        key_lengths,
                    },
                )
            }
        }
    }
}

/// `params` with the split blocks of a tiled kernel that takes the query rows `rows` at a
/// time (the forward, the query gradient): under the causal mask, the last half of the
/// blocks (the longest: a call lasts as long as its longest workgroup), each taken by two
/// workgroups, a half of its keys each; none without the mask.
fn split_blocks(params: kernels::AttentionParams, rows: u32) -> kernels::AttentionParams {
    let blocks = params.queries.div_ceil(rows);
    let split = if params.causal == 1 { blocks / 2 } else { 0 };
    // The rows before the split blocks are fewer than `queries` where any block is split.
    let split_rows = match split {
        0 => 0,
        _ => params.queries - (blocks - split) * rows,
    };
    kernels::AttentionParams {
        split,
        split_rows,
        ..params
    }
}

/// What a buffer of a call holds, and so its length.
#[derive(Clone, Copy)]
enum Rows {
    /// `[batch, heads, queries, head_dim]`.
    Queries,
    /// `[batch, kv_heads, keys, head_dim]`.
    Keys,
    /// `[batch, heads, queries]`.
    QueryLse,
    /// `[batch]`.
    Sequences,
}

/// What every call checks: its shape, mask, scale and inputs.
struct Call<'a> {
    /// The call's name in errors.
    operation: &'static str,
    shape: AttentionShape,
    mask: AttentionMask,
    scale: f32,
    /// The lengths of `q`, `k` and `v`.
    inputs: [usize; 3],
    key_lengths: Option<&'a GpuBuffer<u32>>,
}

/// How one call runs: its parameters and the kernel instance its head dimension takes.
struct Plan {
    params: kernels::AttentionParams,
    /// The index in [`kernels::HeadDim::ALL`] of the narrowest instance holding a row.
    instance: usize,
}

impl Plan {
    /// Checks the call's shape, scale and buffers (its inputs and `buffers`, each a name, a
    /// length and what it holds), and plans it.
    fn new(call: &Call<'_>, buffers: &[(&str, usize, Rows)]) -> Result<Self> {
        let fail = |problem: String| Err(invalid(call.operation, problem));
        let s = call.shape;
        let sizes = [
            ("batch", s.batch),
            ("heads", s.heads),
            ("kv_heads", s.kv_heads),
            ("queries", s.queries),
            ("keys", s.keys),
            ("head_dim", s.head_dim),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, size)| *size == 0) {
            return fail(format!(
                "`{name}` is 0 in {s:?}: every size must be at least 1"
            ));
        }
        if !s.heads.is_multiple_of(s.kv_heads) {
            return fail(format!(
                "{} query heads cannot share {} key and value heads evenly: pass a `kv_heads` \
                 that divides `heads`",
                s.heads, s.kv_heads
            ));
        }
        if s.head_dim > MAX_HEAD_DIM {
            return fail(format!(
                "a head dimension of {} is past the largest the kernels hold, {MAX_HEAD_DIM}",
                s.head_dim
            ));
        }
        if !call.scale.is_finite() {
            return fail(format!("the scale is {}: pass a finite number", call.scale));
        }
        let [q, k, v] = call.inputs;
        let mut inputs = vec![
            ("q", q, Rows::Queries),
            ("k", k, Rows::Keys),
            ("v", v, Rows::Keys),
        ];
        if let Some(lengths) = call.key_lengths {
            inputs.push(("key_lengths", lengths.len(), Rows::Sequences));
        }
        for &(name, len, rows) in inputs.iter().chain(buffers) {
            let dims = match rows {
                Rows::Queries => [s.batch, s.heads, s.queries, s.head_dim],
                Rows::Keys => [s.batch, s.kv_heads, s.keys, s.head_dim],
                Rows::QueryLse => [s.batch, s.heads, s.queries, 1],
                Rows::Sequences => [s.batch, 1, 1, 1],
            };
            let Some(want) = dims.iter().try_fold(1u32, |n, &d| n.checked_mul(d)) else {
                return fail(format!(
                    "`{name}` of {dims:?} has more elements than u32 indices reach: split the \
                     batch"
                ));
            };
            if len < want as usize {
                return fail(format!(
                    "`{name}` holds {len} elements, but {s:?} needs {want}: pass a buffer of \
                     at least {want}"
                ));
            }
        }
        let instance = kernels::HeadDim::ALL
            .iter()
            .position(|instance| s.head_dim <= instance.d)
            .unwrap_or(kernels::HeadDim::ALL.len() - 1);
        Ok(Plan {
            params: kernels::AttentionParams {
                batch_heads: s.batch * s.heads,
                heads: s.heads,
                padded: u32::from(call.key_lengths.is_some()),
                group: s.heads / s.kv_heads,
                queries: s.queries,
                keys: s.keys,
                head_dim: s.head_dim,
                causal: u32::from(call.mask == AttentionMask::Causal),
                scale: call.scale,
                split: 0,
                split_rows: 0,
            },
            instance,
        })
    }
}
