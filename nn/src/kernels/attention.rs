//! The kernels of [`crate::Attention`], a kernels module of their own (`attention_ops`).
//!
//! The forward is FlashAttention's: a workgroup takes [`ROWS`](attention_ops::ROWS) query
//! rows of one head, an invocation a row, and walks the keys a block at a time (`KEYS` keys of
//! `D` scalars, staged in workgroup memory with their values). Each invocation holds its
//! query row, scaled, and its output row in registers, scores the block's keys, and folds
//! them into its row's running maximum, sum and output (the online softmax), rescaling what it
//! has when the maximum grows; at the end it divides by the sum and writes the row's
//! log-sum-exp, which a backward recomputes the probabilities from. Head dimensions up to `D`
//! are padded with zeros (in registers and in the staged blocks, never in memory).
//!
//! This is the correct, simple form: one row an invocation keeps `2 * D` registers, and each
//! score is a dot product read from workgroup memory. The tiled form on the GEMM parts (and
//! on the tensor cores) is the next step; see notes/attention.md.

#[tessera::kernels]
pub mod attention_ops {
    /// Query rows a workgroup takes, one an invocation.
    pub const ROWS: u32 = 64;

    /// The instances: `D`, the head dimension a row is padded to, and `KEYS`, the keys a
    /// block stages (`2 * KEYS * D` scalars of workgroup memory, 16 KiB).
    #[constants(zip(D = [64, 128], KEYS = [32, 16]))]
    pub struct HeadDim;

    /// One call's sizes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct AttentionParams {
        /// Query heads over the batch: `batch * heads`.
        pub batch_heads: u32,
        /// Query heads sharing one key and value head: `heads / kv_heads`.
        pub group: u32,
        /// Query rows of each head.
        pub queries: u32,
        /// Key (and value) rows of each head.
        pub keys: u32,
        /// Scalars in a row of queries, keys, values and outputs.
        pub head_dim: u32,
        /// 1 where query `i` sees only keys `0..=i`, 0 where it sees every key.
        pub causal: u32,
        /// What the scores `q · k` are multiplied by before the softmax.
        pub scale: f32,
    }

    /// Whether query row `row` sees key `key` of `keys`, under the causal mask or not.
    fn sees(row: u32, key: u32, keys: u32, causal: u32) -> bool {
        key < keys && (causal == 0 || key <= row)
    }

    /// `o = softmax(scale * q kᵀ) v` for `ROWS` query rows of one head (`workgroup_id().y`
    /// is the head over the batch), with each row's log-sum-exp of the scaled scores.
    #[kernel(workgroup = [ROWS], constants = HeadDim,
             grid = [ceil_div(p.queries, ROWS), p.batch_heads])]
    pub fn attention_forward(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] q: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] k: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] v: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] o: &mut [f32],
        #[len(p.batch_heads * p.queries)] lse: &mut [f32],
        #[workgroup] staged_k: &mut [f32; KEYS * D],
        #[workgroup] staged_v: &mut [f32; KEYS * D],
    ) {
        let local = local_index();
        let head = workgroup_id().y;
        let first = workgroup_id().x * ROWS;
        let row = first + local;
        let live = row < p.queries;
        let q_at = (head * p.queries + row) * p.head_dim;
        // `head / group`: the key and value head of this query head, batch included.
        let kv_at = head / p.group * p.keys * p.head_dim;
        let mut query = [0.0f32; D];
        #[unroll]
        for c in 0..D {
            if live && c < p.head_dim {
                query[c] = q[q_at + c] * p.scale;
            }
        }
        let mut out = [0.0f32; D];
        let mut running_max = -f32::MAX;
        let mut sum = 0.0f32;
        // The keys any row of the workgroup sees: under the causal mask, none past its last.
        let mut keys = p.keys;
        if p.causal == 1 {
            keys = p.keys.min((first + ROWS).min(p.queries));
        }
        for start in (0..keys).step_by(KEYS) {
            #[unroll]
            for r in 0..KEYS * D / ROWS {
                let at = r * ROWS + local;
                let key = start + at / D;
                let c = at % D;
                let inside = key < p.keys && c < p.head_dim;
                let from = kv_at + key * p.head_dim + c;
                staged_k[at] = if inside { k[from] } else { 0.0 };
                staged_v[at] = if inside { v[from] } else { 0.0 };
            }
            workgroup_barrier();
            let mut scores = [0.0f32; KEYS];
            let mut block_max = -f32::MAX;
            for j in 0..KEYS {
                let key = start + j;
                if sees(row, key, p.keys, p.causal) {
                    let mut dot = 0.0f32;
                    #[unroll]
                    for c in 0..D {
                        dot += query[c] * staged_k[j * D + c];
                    }
                    scores[j] = dot;
                    block_max = block_max.max(dot);
                }
            }
            let new_max = running_max.max(block_max);
            let rescale = (running_max - new_max).exp();
            sum *= rescale;
            #[unroll]
            for c in 0..D {
                out[c] *= rescale;
            }
            for j in 0..KEYS {
                let key = start + j;
                if sees(row, key, p.keys, p.causal) {
                    let weight = (scores[j] - new_max).exp();
                    sum += weight;
                    #[unroll]
                    for c in 0..D {
                        out[c] += weight * staged_v[j * D + c];
                    }
                }
            }
            running_max = new_max;
            workgroup_barrier();
        }
        if live {
            #[unroll]
            for c in 0..D {
                if c < p.head_dim {
                    o[q_at + c] = out[c] / sum;
                }
            }
            lse[head * p.queries + row] = running_max + sum.ln();
        }
    }
}
