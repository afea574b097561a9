//! The kernels of a transformer beside its GEMMs, rows and attention, a kernels module of
//! their own (`transformer_ops`): the sum of two tensors that a residual connection adds
//! (`residual_add`), and the moves between a projection's token rows and attention's
//! `[batch, heads, seq, head_dim]` layout (`rows_to_heads`, `heads_to_rows`).

#[tessera::kernels]
pub mod transformer_ops {
    /// Invocations in a workgroup.
    pub const GROUP: u32 = 256;

    /// The length of a residual sum.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct AddParams {
        /// Elements of each tensor.
        pub len: u32,
    }

    /// The shape of a move between token rows and heads: `tokens = batch * seq` rows of
    /// `row` values, of which columns `first..first + heads * head_dim` are the heads, one
    /// after the other.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct HeadsParams {
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

    /// `out = a + b`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.len, GROUP)])]
    pub fn residual_add(
        p: &AddParams,
        #[len(p.len)] a: &[f32],
        #[len(p.len)] b: &[f32],
        #[len(p.len)] out: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.len {
            out[i] = a[i] + b[i];
        }
    }

    /// `heads[b, h, t, d] = rows[b * seq + t, first + h * head_dim + d]`: one workgroup a
    /// token and a run of `GROUP` of its head values.
    #[kernel(
        workgroup = [GROUP],
        grid = [p.batch * p.seq, ceil_div(p.heads * p.head_dim, GROUP)]
    )]
    pub fn rows_to_heads(
        p: &HeadsParams,
        #[len(p.batch * p.seq * p.row)] rows: &[f32],
        #[len(p.batch * p.seq * p.heads * p.head_dim)] heads: &mut [f32],
    ) {
        let token = workgroup_id().x;
        let c = workgroup_id().y * GROUP + local_index();
        if c < p.heads * p.head_dim {
            let b = token / p.seq;
            let t = token % p.seq;
            let h = c / p.head_dim;
            let d = c % p.head_dim;
            heads[((b * p.heads + h) * p.seq + t) * p.head_dim + d] =
                rows[token * p.row + p.first + c];
        }
    }

    /// `rows[b * seq + t, first + h * head_dim + d] = heads[b, h, t, d]`; the row's other
    /// columns are left as they are.
    #[kernel(
        workgroup = [GROUP],
        grid = [p.batch * p.seq, ceil_div(p.heads * p.head_dim, GROUP)]
    )]
    pub fn heads_to_rows(
        p: &HeadsParams,
        #[len(p.batch * p.seq * p.heads * p.head_dim)] heads: &[f32],
        #[len(p.batch * p.seq * p.row)] rows: &mut [f32],
    ) {
        let token = workgroup_id().x;
        let c = workgroup_id().y * GROUP + local_index();
        if c < p.heads * p.head_dim {
            let b = token / p.seq;
            let t = token % p.seq;
            let h = c / p.head_dim;
            let d = c % p.head_dim;
            rows[token * p.row + p.first + c] =
                heads[((b * p.heads + h) * p.seq + t) * p.head_dim + d];
        }
    }
}
