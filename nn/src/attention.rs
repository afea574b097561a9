//! Scaled dot-product attention: [`Attention`].

use crate::invalid;
use crate::kernels::attention_ops as kernels;
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

/// One [`Attention::forward`].
#[derive(Debug)]
pub struct AttentionForward<'a> {
    /// The call's sizes.
    pub shape: AttentionShape,
    /// Which keys each query sees.
    pub mask: AttentionMask,
    /// What the scores `q · k` are multiplied by before the softmax; usually
    /// [`AttentionShape::default_scale`].
    pub scale: f32,
    /// `[batch, heads, queries, head_dim]`.
    pub q: &'a GpuBuffer<f32>,
    /// `[batch, kv_heads, keys, head_dim]`.
    pub k: &'a GpuBuffer<f32>,
    /// `[batch, kv_heads, keys, head_dim]`.
    pub v: &'a GpuBuffer<f32>,
    /// `[batch, heads, queries, head_dim]`: `softmax(scale * q kᵀ) v` (overwritten).
    pub out: &'a mut GpuBuffer<f32>,
    /// `[batch, heads, queries]`: each query row's log-sum-exp of its scaled scores
    /// (overwritten), which a backward recomputes the probabilities from.
    pub lse: &'a mut GpuBuffer<f32>,
}

/// Scaled dot-product attention, `out = softmax(scale * q kᵀ + mask) v` for every head, in
/// strict `f32`, as FlashAttention computes it: the scores are never stored, each query row
/// keeping a running maximum, sum and output while it walks the keys a block at a time.
///
/// Causal or not ([`AttentionMask`]), any numbers of queries and keys, head dimensions up to
/// [`MAX_HEAD_DIM`], grouped queries (fewer key and value heads than query heads). The
/// forward only, for now: no backward, no `f16` storage, no tensor cores, no additive mask
/// or key-padding lengths yet, and the kernel is the simple one (a query row an invocation);
/// see notes/attention.md.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Attention, AttentionForward, AttentionMask, AttentionShape};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let attention = Attention::new(&rt)?;
/// let shape = AttentionShape { batch: 1, heads: 1, kv_heads: 1, queries: 2, keys: 2, head_dim: 1 };
/// let (q, k) = (rt.upload(&[1.0f32, 1.0])?, rt.upload(&[0.0f32, 0.0])?);
/// let v = rt.upload(&[2.0f32, 4.0])?;
/// let (mut out, mut lse) = (rt.zeros::<f32>(2)?, rt.zeros::<f32>(2)?);
/// let mut batch = rt.batch();
/// let scale = shape.default_scale();
/// let (q, k, v, out, lse) = (&q, &k, &v, &mut out, &mut lse);
/// let args = AttentionForward { shape, mask: AttentionMask::Causal, scale, q, k, v, out, lse };
/// attention.forward(&mut batch, args)?;
/// batch.submit()?;
/// // Query 0 sees key 0 alone; query 1 both keys, equally.
/// assert_eq!(out.read(&rt)?, [2.0, 3.0]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Attention {
    /// The forward for each [`kernels::HeadDim`] instance, in its order.
    forward: Vec<kernels::AttentionForward>,
}

impl Attention {
    /// Makes the op; its kernels compile at their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        let forward = kernels::HeadDim::ALL
            .iter()
            .map(|&instance| kernels::AttentionForward::with_constants(rt, instance))
            .collect::<Result<_>>()?;
        Ok(Attention { forward })
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        let kernels: Vec<&dyn tessera::Prepare> = self
            .forward
            .iter()
            .map(|k| k as &dyn tessera::Prepare)
            .collect();
        tessera::Prepare::prepare(&kernels[..], rt)
    }

    /// Records `out = softmax(scale * q kᵀ + mask) v` and each query row's log-sum-exp.
    pub fn forward(&self, batch: &mut Batch<'_>, args: AttentionForward<'_>) -> Result<()> {
        let plan = Plan::new(&args)?;
        self.forward[plan.instance].record(
            batch,
            kernels::AttentionForwardArgs {
                p: &plan.params,
                q: args.q,
                k: args.k,
                v: args.v,
                o: args.out,
                lse: args.lse,
            },
        )
    }
}

/// How one call runs: its parameters and the kernel instance its head dimension takes.
struct Plan {
    params: kernels::AttentionParams,
    /// The index in [`kernels::HeadDim::ALL`] of the narrowest instance holding a row.
    instance: usize,
}

impl Plan {
    /// Checks the call's shape, scale and buffers, and plans it.
    fn new(args: &AttentionForward<'_>) -> Result<Self> {
        const OPERATION: &str = "attention forward";
        let fail = |problem: String| Err(invalid(OPERATION, problem));
        let s = args.shape;
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
        if !args.scale.is_finite() {
            return fail(format!("the scale is {}: pass a finite number", args.scale));
        }
        let lengths = [
            ("q", args.q.len(), [s.batch, s.heads, s.queries, s.head_dim]),
            ("k", args.k.len(), [s.batch, s.kv_heads, s.keys, s.head_dim]),
            ("v", args.v.len(), [s.batch, s.kv_heads, s.keys, s.head_dim]),
            (
                "out",
                args.out.len(),
                [s.batch, s.heads, s.queries, s.head_dim],
            ),
            ("lse", args.lse.len(), [s.batch, s.heads, s.queries, 1]),
        ];
        for (name, len, dims) in lengths {
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
                group: s.heads / s.kv_heads,
                queries: s.queries,
                keys: s.keys,
                head_dim: s.head_dim,
                causal: u32::from(args.mask == AttentionMask::Causal),
                scale: args.scale,
            },
            instance,
        })
    }
}
