//! The kernels of [`crate::Embedding`], a kernels module of their own (`embedding_ops`): the
//! rows of a table gathered for a list of ids (`embedding_gather`), and the backward pass,
//! which sums the output gradient's rows of each id into that id's row of the table's
//! gradient without atomics: the ids paired with their token indices (`embedding_pairs`) and
//! sorted ([`crate::RadixSort`], stable), the gradient zeroed (`embedding_zero`), then each run of one id in the sorted list
//! summed, in token order, by the workgroup at the run's first position (`embedding_sum_runs`).

#[tessera::kernels]
pub mod embedding_ops {
    /// Invocations in a workgroup.
    pub const GROUP: u32 = 256;

    /// The shape of an embedding lookup.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct EmbeddingParams {
        /// Ids looked up: rows of the output.
        pub tokens: u32,
        /// Rows of the table.
        pub vocab: u32,
        /// Elements of each row.
        pub dim: u32,
    }

    /// `out[t, c] = table[ids[t], c]`.
    #[kernel(workgroup = [GROUP], grid = [p.tokens, ceil_div(p.dim, GROUP)])]
    pub fn embedding_gather(
        p: &EmbeddingParams,
        #[len(p.tokens)] ids: &[u32],
        #[len(p.vocab * p.dim)] table: &[f32],
        #[len(p.tokens * p.dim)] out: &mut [f32],
    ) {
        let t = workgroup_id().x;
        let c = workgroup_id().y * GROUP + local_index();
        if c < p.dim {
            out[t * p.dim + c] = table[ids[t] * p.dim + c];
        }
    }

    /// `sorted[t] = ids[t]` and `order[t] = t`: the pairs the backward sorts.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.tokens, GROUP)])]
    pub fn embedding_pairs(
        p: &EmbeddingParams,
        #[len(p.tokens)] ids: &[u32],
        #[len(p.tokens)] sorted: &mut [u32],
        #[len(p.tokens)] order: &mut [u32],
    ) {
        let t = global_id().x;
        if t < p.tokens {
            sorted[t] = ids[t];
            order[t] = t;
        }
    }

    /// `grad_table = 0`.
    #[kernel(workgroup = [GROUP], grid = [p.vocab, ceil_div(p.dim, GROUP)])]
    pub fn embedding_zero(p: &EmbeddingParams, #[len(p.vocab * p.dim)] grad_table: &mut [f32]) {
        let c = workgroup_id().y * GROUP + local_index();
        if c < p.dim {
            grad_table[workgroup_id().x * p.dim + c] = 0.0;
        }
    }

    /// For each run of one id in `sorted` (the ids in order, `order[k]` the token of
    /// `sorted[k]`), the sum of those tokens' rows of `grad_out`, in token order, into the
    /// id's row of `grad_table`: the workgroup at the run's first position sums it; the others
    /// do nothing.
    #[kernel(workgroup = [GROUP], grid = [p.tokens, ceil_div(p.dim, GROUP)])]
    pub fn embedding_sum_runs(
        p: &EmbeddingParams,
        #[len(p.tokens)] sorted: &[u32],
        #[len(p.tokens)] order: &[u32],
        #[len(p.tokens * p.dim)] grad_out: &[f32],
        #[len(p.vocab * p.dim)] grad_table: &mut [f32],
    ) {
        let k = workgroup_id().x;
        let c = workgroup_id().y * GROUP + local_index();
        let id = sorted[k];
        let mut first = true;
        if k > 0 {
            first = sorted[k - 1] != id;
        }
        if first && c < p.dim {
            let mut sum = 0.0f32;
            // Not `j < p.tokens && sorted[j] == id`: a kernel's `&&` evaluates a right side
            // without effects whatever the left (see the guide), and reads past the end.
            let mut j = k;
            loop {
                if j >= p.tokens {
                    break;
                }
                if sorted[j] != id {
                    break;
                }
                sum += grad_out[order[j] * p.dim + c];
                j += 1;
            }
            grad_table[id * p.dim + c] = sum;
        }
    }
}
