//! Embedding tables: [`Embedding`], rows of a table looked up by id, and the table's gradient.

use crate::invalid;
use crate::kernels::embedding_ops as kernels;
use crate::sort::RadixSort;
use crate::spare::Spare;
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// The sizes of an embedding lookup: `tokens` ids into a table of `vocab` rows of `dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EmbeddingShape {
    /// Ids looked up (rows of the output).
    pub tokens: u32,
    /// Rows of the table.
    pub vocab: u32,
    /// Elements of each row.
    pub dim: u32,
}

/// One [`Embedding::forward`].
#[derive(Debug)]
pub struct EmbeddingForward<'a> {
    /// The sizes of the buffers.
    pub shape: EmbeddingShape,
    /// `[tokens]`: each below `vocab`.
    pub ids: &'a GpuBuffer<u32>,
    /// `[vocab, dim]`: the table.
    pub table: &'a GpuBuffer<f32>,
    /// `[tokens, dim]`: row `t` becomes the table's row `ids[t]`.
    pub out: &'a mut GpuBuffer<f32>,
}

/// One [`Embedding::backward`].
#[derive(Debug)]
pub struct EmbeddingBackward<'a> {
    /// The forward's shape.
    pub shape: EmbeddingShape,
    /// The forward's `ids`.
    pub ids: &'a GpuBuffer<u32>,
    /// `[tokens, dim]`: the gradient with respect to the forward's `out`.
    pub grad_out: &'a GpuBuffer<f32>,
    /// `[vocab, dim]`: overwritten with the gradient with respect to the table: row `v` the
    /// sum of the rows of `grad_out` whose id is `v` (zero for an id no token has).
    pub grad_table: &'a mut GpuBuffer<f32>,
}

/// An embedding table's lookup and gradient: the forward gathers a row of the table for each
/// id; the backward sums the output gradient's rows of each id into that id's row of the
/// table's gradient, deterministically and without atomics (the ids sorted with their
/// tokens by a [`RadixSort`], stably, over the bits an id below `vocab` can have, then each
/// id's rows summed in token order by one workgroup), so the same inputs give the same bits
/// on every run.
///
/// Each id must be below `vocab`. One that is not reads and writes wherever wgpu's bounds
/// checks clamp it to, without an error; the sanitizer (`TESSERA_SANITIZE=on`) reports it as
/// an index out of bounds.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Embedding, EmbeddingBackward, EmbeddingForward, EmbeddingShape};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let embedding = Embedding::new(&rt)?;
/// let shape = EmbeddingShape { tokens: 3, vocab: 2, dim: 2 };
/// let ids = rt.upload(&[1u32, 0, 1])?;
/// let table = rt.upload(&[0.5f32, 1.0, 2.0, 3.0])?;
/// let mut out = rt.zeros::<f32>(6)?;
/// let mut batch = rt.batch();
/// embedding.forward(&mut batch, EmbeddingForward { shape, ids: &ids, table: &table, out: &mut out })?;
/// let grad_out = rt.upload(&[1.0f32, 1.0, 2.0, 2.0, 3.0, 3.0])?;
/// let mut grad_table = rt.zeros::<f32>(4)?;
/// embedding.backward(
///     &mut batch,
///     EmbeddingBackward { shape, ids: &ids, grad_out: &grad_out, grad_table: &mut grad_table },
/// )?;
/// batch.submit()?;
/// assert_eq!(out.read(&rt)?, [2.0, 3.0, 0.5, 1.0, 2.0, 3.0]);
/// assert_eq!(grad_table.read(&rt)?, [2.0, 2.0, 4.0, 4.0]); // id 1: tokens 0 and 2
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Embedding {
    gather: kernels::EmbeddingGather,
    pairs: kernels::EmbeddingPairs,
    zero: kernels::EmbeddingZero,
    sum_runs: kernels::EmbeddingSumRuns,
    sort: RadixSort,
    /// The ids, sorted by the backward.
    sorted: Spare<u32>,
    /// The token of each sorted id.
    order: Spare<u32>,
}

impl Embedding {
    /// Makes the op; its kernels compile at their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(Embedding {
            gather: kernels::EmbeddingGather::new(rt)?,
            pairs: kernels::EmbeddingPairs::new(rt)?,
            zero: kernels::EmbeddingZero::new(rt)?,
            sum_runs: kernels::EmbeddingSumRuns::new(rt)?,
            sort: RadixSort::new(rt)?,
            sorted: Spare::default(),
            order: Spare::default(),
        })
    }

    /// Compiles every kernel of the op now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        self.sort.prepare(rt)?;
        prepare_fields!(rt, self => Embedding { gather, pairs, zero, sum_runs; sort, sorted, order })
    }

    /// Records `out[t] = table[ids[t]]` for every token `t`.
    pub fn forward(&self, batch: &mut Batch<'_>, args: EmbeddingForward<'_>) -> Result<()> {
        let EmbeddingForward {
            shape,
            ids,
            table,
            out,
        } = args;
        let p = params(shape, "embedding forward")?;
        let args = kernels::EmbeddingGatherArgs {
            p: &p,
            ids,
            table,
            out,
        };
        self.gather.record(batch, args)
    }

    /// Records the gradient with respect to the table: `grad_table[v]` the sum, in token
    /// order, of `grad_out[t]` over the tokens `t` whose id is `v`.
    pub fn backward(&self, batch: &mut Batch<'_>, args: EmbeddingBackward<'_>) -> Result<()> {
        let EmbeddingBackward {
            shape,
            ids,
            grad_out,
            grad_table,
        } = args;
        let p = params(shape, "embedding backward")?;
        let tokens = shape.tokens as usize;
        let (mut sorted, mut order) = (self.sorted.lock(), self.order.lock());
        let sorted = sorted.at_least(batch.runtime(), tokens)?;
        let order = order.at_least(batch.runtime(), tokens)?;
        let args = kernels::EmbeddingPairsArgs {
            p: &p,
            ids,
            sorted: &mut *sorted,
            order: &mut *order,
        };
        self.pairs.record(batch, args)?;
        // The ids are below `vocab`: only the passes over their significant bits run.
        let id_bits = u32::BITS - (shape.vocab - 1).leading_zeros();
        self.sort
            .sort_pairs_prefix(batch, sorted, order, tokens, id_bits)?;
        let args = kernels::EmbeddingZeroArgs {
            p: &p,
            grad_table: &mut *grad_table,
        };
        self.zero.record(batch, args)?;
        let args = kernels::EmbeddingSumRunsArgs {
            p: &p,
            sorted: &*sorted,
            order: &*order,
            grad_out,
            grad_table,
        };
        self.sum_runs.record(batch, args)
    }
}

/// The kernels' parameters for `shape`, refused where a size is 0 or an index would not fit
/// in `u32`.
fn params(shape: EmbeddingShape, operation: &str) -> Result<kernels::EmbeddingParams> {
    let EmbeddingShape { tokens, vocab, dim } = shape;
    if tokens == 0 || vocab == 0 || dim == 0 {
        let problem = format!("{shape:?} has a size of 0: every size must be at least 1");
        return Err(invalid(operation, problem));
    }
    if tokens.checked_mul(dim).is_none() || vocab.checked_mul(dim).is_none() {
        let problem =
            format!("{shape:?}: `tokens * dim` or `vocab * dim` does not fit in u32 indices");
        return Err(invalid(operation, problem));
    }
    Ok(kernels::EmbeddingParams { tokens, vocab, dim })
}
