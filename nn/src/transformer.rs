//! The ops a transformer needs beside GEMMs, norms and attention: [`Residual`], the sum a
//! residual connection adds, and [`Heads`], the moves between a projection's token rows and
//! [`Attention`](crate::Attention)'s layout.

use crate::invalid;
use crate::kernels::transformer_ops as kernels;
use tessera::{Batch, GpuBuffer, Result, Runtime};

/// A residual connection's sum, `out = a + b` element by element: the forward adds a
/// block's output to its input, the backward adds the gradient through the block to the one
/// that skips it.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::Residual;
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let residual = Residual::new(&rt)?;
/// let (x, block) = (rt.upload(&[1.0f32, 2.0])?, rt.upload(&[0.5f32, -1.0])?);
/// let mut out = rt.zeros::<f32>(2)?;
/// let mut batch = rt.batch();
/// residual.add(&mut batch, &x, &block, &mut out)?;
/// batch.submit()?;
/// assert_eq!(out.read(&rt)?, [1.5, 1.0]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Residual {
    add: kernels::ResidualAdd,
}

impl Residual {
    /// Makes the op; its kernel compiles at its first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(Residual {
            add: kernels::ResidualAdd::new(rt)?,
        })
    }

    /// Compiles the op's kernel now rather than at its first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Residual { add; })
    }

    /// Records `out = a + b`; the three must have the same length.
    pub fn add(
        &self,
        batch: &mut Batch<'_>,
        a: &GpuBuffer<f32>,
        b: &GpuBuffer<f32>,
        out: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let lens = [a.len(), b.len(), out.len()];
        if lens.iter().any(|&len| len != a.len()) {
            let problem = format!("`a`, `b` and `out` hold {lens:?} elements: they must match");
            return Err(invalid("residual add", problem));
        }
        let len = u32::try_from(a.len()).map_err(|_| {
            let problem = format!("{} elements exceed the 2^32 kernels index", a.len());
            invalid("residual add", problem)
        })?;
        let p = kernels::AddParams { len };
        self.add
            .record(batch, kernels::ResidualAddArgs { p: &p, a, b, out })
    }
}

/// Where attention heads sit in rows of token values, for [`Heads`]: `batch * seq` rows of
/// `row` values each, the `heads * head_dim` columns from `first` on holding the heads one
/// after the other (head `h`'s values at columns `first + h * head_dim ..`).
///
/// A fused projection's rows hold several such groups: the rows of a `[tokens, 3 * dim]`
/// query-key-value projection hold the queries at `first = 0`, the keys at `dim`, the values
/// at `2 * dim`.
///
/// ```
/// use tessera_nn::HeadsLayout;
/// // Queries, keys and values of 4 heads of 16 in one projection's rows.
/// let queries = HeadsLayout::packed(2, 10, 4, 16).within(3 * 64, 0);
/// let keys = queries.within(3 * 64, 64);
/// assert_eq!(keys.heads_len(), 2 * 4 * 10 * 16);
/// assert_eq!(keys.rows_len(), 2 * 10 * 192);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeadsLayout {
    /// Sequences.
    pub batch: u32,
    /// Tokens of each sequence.
    pub seq: u32,
    /// Heads.
    pub heads: u32,
    /// Values of each head at each token.
    pub head_dim: u32,
    /// Values of each token's row.
    pub row: u32,
    /// The row's column where the first head starts.
    pub first: u32,
}

impl HeadsLayout {
    /// Rows that hold the heads alone: `row = heads * head_dim`, `first = 0`.
    pub const fn packed(batch: u32, seq: u32, heads: u32, head_dim: u32) -> Self {
        HeadsLayout {
            batch,
            seq,
            heads,
            head_dim,
            row: heads * head_dim,
            first: 0,
        }
    }

    /// The same heads in rows of `row` values, starting at column `first`.
    pub const fn within(self, row: u32, first: u32) -> Self {
        HeadsLayout { row, first, ..self }
    }

    /// Elements of the `[batch, heads, seq, head_dim]` tensor.
    pub fn heads_len(&self) -> usize {
        [self.batch, self.heads, self.seq, self.head_dim]
            .iter()
            .map(|&n| n as usize)
            .product()
    }

    /// Elements of the rows, `batch * seq * row`.
    pub fn rows_len(&self) -> usize {
        [self.batch, self.seq, self.row]
            .iter()
            .map(|&n| n as usize)
            .product()
    }

    /// The kernels' parameters, refused where the heads do not fit in the rows, a size is
    /// 0, or an index would not fit in `u32`.
    fn params(&self, operation: &str) -> Result<kernels::HeadsParams> {
        let HeadsLayout {
            batch,
            seq,
            heads,
            head_dim,
            row,
            first,
        } = *self;
        if [batch, seq, heads, head_dim].contains(&0) {
            let problem = format!("{self:?} has a size of 0: every size must be at least 1");
            return Err(invalid(operation, problem));
        }
        let end = u64::from(first) + u64::from(heads) * u64::from(head_dim);
        if end > u64::from(row) {
            let problem = format!(
                "{self:?}: the heads end at column {end}, past the rows' {row} values; widen \
                 `row` or move `first`"
            );
            return Err(invalid(operation, problem));
        }
        if u32::try_from(self.rows_len().max(self.heads_len())).is_err() {
            let problem = format!("{self:?}: the tensors exceed the 2^32 elements kernels index");
            return Err(invalid(operation, problem));
        }
        Ok(kernels::HeadsParams {
            batch,
            seq,
            heads,
            head_dim,
            row,
            first,
        })
    }
}

/// The moves between rows of token values (a projection's output) and attention's
/// `[batch, heads, seq, head_dim]` tensors ([`HeadsLayout`] says where the heads sit in the
/// rows): [`to_heads`](Self::to_heads) before [`Attention`](crate::Attention), and
/// [`to_rows`](Self::to_rows) after it, or for the gradients on the way back.
///
/// ```no_run
/// # use tessera::Runtime;
/// # use tessera_nn::{Heads, HeadsLayout};
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = Runtime::new()?;
/// let heads = Heads::new(&rt)?;
/// // One sequence of 2 tokens, 2 heads of 1 value: rows [t0h0, t0h1], [t1h0, t1h1].
/// let layout = HeadsLayout::packed(1, 2, 2, 1);
/// let rows = rt.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let mut by_head = rt.zeros::<f32>(4)?;
/// let mut back = rt.zeros::<f32>(4)?;
/// let mut batch = rt.batch();
/// heads.to_heads(&mut batch, layout, &rows, &mut by_head)?;
/// heads.to_rows(&mut batch, layout, &by_head, &mut back)?;
/// batch.submit()?;
/// assert_eq!(by_head.read(&rt)?, [1.0, 3.0, 2.0, 4.0]); // head 0's tokens, then head 1's
/// assert_eq!(back.read(&rt)?, [1.0, 2.0, 3.0, 4.0]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Heads {
    to_heads: kernels::RowsToHeads,
    to_rows: kernels::HeadsToRows,
}

impl Heads {
    /// Makes the op; its kernels compile at their first use, or at [`prepare`](Self::prepare).
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(Heads {
            to_heads: kernels::RowsToHeads::new(rt)?,
            to_rows: kernels::HeadsToRows::new(rt)?,
        })
    }

    /// Compiles the op's kernels now rather than at their first use.
    pub fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Heads { to_heads, to_rows; })
    }

    /// Records `heads[b, h, t, d] = rows[b * seq + t, first + h * head_dim + d]`; `rows`
    /// holds [`HeadsLayout::rows_len`] elements, `heads` [`HeadsLayout::heads_len`].
    pub fn to_heads(
        &self,
        batch: &mut Batch<'_>,
        layout: HeadsLayout,
        rows: &GpuBuffer<f32>,
        heads: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let p = layout.params("heads from rows")?;
        check_lens(&layout, "heads from rows", rows.len(), heads.len())?;
        let args = kernels::RowsToHeadsArgs { p: &p, rows, heads };
        self.to_heads.record(batch, args)
    }

    /// Records `rows[b * seq + t, first + h * head_dim + d] = heads[b, h, t, d]`, leaving the
    /// rows' other columns as they are (so that the query, key and value gradients fill one
    /// projection's rows in three calls).
    pub fn to_rows(
        &self,
        batch: &mut Batch<'_>,
        layout: HeadsLayout,
        heads: &GpuBuffer<f32>,
        rows: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let p = layout.params("rows from heads")?;
        check_lens(&layout, "rows from heads", rows.len(), heads.len())?;
        let args = kernels::HeadsToRowsArgs { p: &p, heads, rows };
        self.to_rows.record(batch, args)
    }
}

/// An error unless the buffers hold what `layout` says.
fn check_lens(layout: &HeadsLayout, operation: &str, rows: usize, heads: usize) -> Result<()> {
    if rows != layout.rows_len() || heads != layout.heads_len() {
        let problem = format!(
            "{layout:?} takes rows of {} elements and heads of {}, not {rows} and {heads}",
            layout.rows_len(),
            layout.heads_len()
        );
        return Err(invalid(operation, problem));
    }
    Ok(())
}
