//! The kernels of [`crate::Attention`], a kernels module of their own (`attention_ops`).
//!
//! The forward is FlashAttention's, in two forms. Where the device has subgroups of at least
//! 8 lanes, on register tiles (`attention_forward_tiled`): `LANES` lanes of a subgroup share
//! [`ROWS_EACH`](attention_ops::ROWS_EACH) query rows, each lane holding a slice of their
//! columns (query and output), so that each key and value read from workgroup memory serves
//! several rows; a score's partial dot products are summed across the lanes by shuffles, and
//! keys are folded into each row's running maximum, sum and output
//! [`CHUNK`](attention_ops::CHUNK) at a time (the online softmax). Elsewhere, a row an
//! invocation (`attention_forward`): a workgroup takes [`ROWS`](attention_ops::ROWS) query
//! rows of one head and walks the keys a block at a time (`KEYS` keys of `D` scalars, staged
//! in workgroup memory with their values), each invocation holding its query row, scaled,
//! and its output row in registers. Both end dividing by the sum and writing the row's
//! log-sum-exp, which a backward recomputes the probabilities from. Head dimensions up to `D`
//! are padded with zeros (in registers and in the staged blocks, never in memory).
//!
//! The backward recomputes each probability from the forward's log-sum-exp, as FlashAttention
//! does, in three kernels: each query row's `dO · O`, beside its log-sum-exp
//! (`attention_row_stats`); the query gradient, a query row an invocation walking the key
//! blocks as the forward does (`attention_grad_q`); the key and value gradients, a key row an
//! invocation walking the query blocks of every query head that shares it
//! (`attention_grad_kv`). No atomics: each gradient row has one invocation that sums it.
//! Sequences shorter than `keys` (`key_lengths`) mask their keys past the end, in every pass.
//!
//! Where the forward runs on register tiles, so do the gradients: the query gradient
//! (`attention_grad_q_tiled`: lanes share [`GRAD_ROWS_EACH`](attention_ops::GRAD_ROWS_EACH)
//! query rows and walk the key blocks as the forward does) and the key and value gradients
//! (`attention_grad_kv_tiled`: lanes share [`GRAD_ROWS_EACH`](attention_ops::GRAD_ROWS_EACH)
//! key rows and walk the query rows). Under the causal mask the last query blocks read the
//! most keys, and a call lasts as long as its longest workgroup: the tiled forward and query
//! gradient give each of the last half of their blocks two workgroups, a half of the keys
//! each, whose results `attention_merge_halves` (the forward: outputs weighted by their
//! halves' log-sum-exps) and `attention_add_halves` (the query gradient: a sum) combine.
//!
//! On the tensor cores (`Precision::TensorCoreF16`), the same three passes in 16 x 16 f16
//! fragments summed in f32 (`attention_forward_fragments`, `attention_grad_q_fragments`,
//! `attention_grad_kv_fragments`), over f32 or f16 storage, read as scalars or as vectors of 4:
//! a workgroup of four subgroups takes 64 rows, 16 a subgroup, and stages each block of keys
//! (or of queries) in f16, the next block's loads in flight while it multiplies this one.
//! Naga's fragments give no access to their elements, so what the softmax needs of each
//! product goes through a tile of workgroup memory each subgroup has to itself, two lanes a
//! row; the output rows are summed in registers there, a fragment being unable to be scaled a
//! row at a time. notes/attention.md has the H200 figures.

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
        /// Query heads of each sequence.
        pub heads: u32,
        /// 1 where `key_lengths` holds each sequence's number of keys, 0 where every
        /// sequence has `keys` (and `key_lengths` is not read).
        pub padded: u32,
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
        /// Query blocks of the tiled forward whose keys two workgroups share, a half each:
        /// the last ones (under the causal mask, the longest); 0 for none, and in every
        /// other kernel.
        pub split: u32,
        /// Query rows of those blocks (`queries` less the rows before them): the rows
        /// `attention_merge_halves` finishes.
        pub split_rows: u32,
    }

    /// Whether query row `row` sees key `key` of `keys`, under the causal mask or not.
    fn sees(row: u32, key: u32, keys: u32, causal: u32) -> bool {
        key < keys && (causal == 0 || key <= row)
    }

    /// The keys of query head `head`'s sequence: `keys`, or its entry of `key_lengths` (at
    /// most `keys`) where the call is `padded`.
    fn sequence_keys(key_lengths: &[u32], head: u32, heads: u32, keys: u32, padded: u32) -> u32 {
        let mut n = keys;
        if padded == 1 {
            n = key_lengths[head / heads].min(keys);
        }
        n
    }

    /// The keys a workgroup of query rows from `first` reads: all `keys`, or under the causal
    /// mask none past its last row's.
    fn keys_read(keys: u32, first: u32, queries: u32, causal: u32) -> u32 {
        let mut n = keys;
        if causal == 1 {
            n = keys.min((first + ROWS).min(queries));
        }
        n
    }

    /// `row` = the `width` scalars at `x[at]` times `factor`, zeros past them (and all zeros
    /// where not `live`).
    fn load_row(row: &mut [f32; D], x: &[f32], at: u32, live: bool, width: u32, factor: f32) {
        #[unroll]
        for c in 0..D {
            row[c] = 0.0;
            if live && c < width {
                row[c] = x[at + c] * factor;
            }
        }
    }

    /// Stores the first `width` scalars of `row` times `factor` to `y[at]`, where `live`.
    fn store_row(row: &[f32; D], y: &mut [f32], at: u32, live: bool, width: u32, factor: f32) {
        #[unroll]
        for c in 0..D {
            if live && c < width {
                y[at + c] = row[c] * factor;
            }
        }
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
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
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
        let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
        let mut query = [0.0f32; D];
        load_row(&mut query, q, q_at, live, p.head_dim, p.scale);
        let mut out = [0.0f32; D];
        let mut running_max = -f32::MAX;
        let mut sum = 0.0f32;
        for start in (0..keys_read(p.keys, first, p.queries, p.causal)).step_by(KEYS) {
            stage_rows(
                staged_k, staged_v, k, v, kv_at, start, p.keys, p.head_dim, local,
            );
            workgroup_barrier();
            let mut scores = [0.0f32; KEYS];
            let mut block_max = -f32::MAX;
            for j in 0..KEYS {
                let key = start + j;
                if sees(row, key, seq_keys, p.causal) {
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
                if sees(row, key, seq_keys, p.causal) {
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
            // A row that sees no key (its sequence has none) gets zeros.
            let inverse = if sum > 0.0 { 1.0 / sum } else { 0.0 };
            store_row(&out, o, q_at, live, p.head_dim, inverse);
            lse[head * p.queries + row] = if sum > 0.0 {
                running_max + sum.ln()
            } else {
                -f32::MAX
            };
        }
    }

    /// Invocations in a workgroup of the tiled forward.
    pub const TILED_INVOCATIONS: u32 = 128;

    /// Query rows each invocation of the tiled forward works on.
    pub const ROWS_EACH: u32 = 4;

    /// Keys the tiled forward scores at once, between two updates of the running maxima.
    pub const CHUNK: u32 = 8;

    /// The tiled forward's instances: `D`, the head dimension a row is padded to; `LANES`,
    /// the lanes of a subgroup that share a set of query rows, each holding `D / LANES` of
    /// their columns (`LOG_LANES` its base-2 logarithm); `TILE_KEYS`, the keys a block
    /// stages (`2 * TILE_KEYS * D` scalars of workgroup memory, 16 KiB: on an H200, 25%
    /// faster than 32 KiB at `D = 64`, 18% at 128).
    #[constants(zip(D = [64, 128], LANES = [4, 8], LOG_LANES = [2, 3], TILE_KEYS = [32, 16]))]
    pub struct TiledHeadDim;

    /// The forward on register tiles, where the device has subgroups of at least 8 lanes
    /// (the host's choice): each `LANES` lanes of a subgroup take `ROWS_EACH` query rows, each
    /// lane a `D / LANES` columns of them, so that every key and value read from workgroup
    /// memory serves `ROWS_EACH` rows, and a score's partial dot products are summed across
    /// the lanes by shuffles. Keys are scored `CHUNK` at a time, each chunk folded into the
    /// rows' running maxima, sums and outputs (the online softmax). Same results as
    /// [`attention_forward`] up to the order of the sums.
    ///
    /// The last `p.split` blocks of rows are each taken by two workgroups, one a half of their
    /// keys, which write their rows' outputs and log-sum-exps to `partial_o` and
    /// `partial_lse` (the first halves, then the second) for `attention_merge_halves` to
    /// combine: under the causal mask the last rows read the most keys, and a call lasts as
    /// long as its longest workgroup.
    #[kernel(workgroup = [TILED_INVOCATIONS], constants = TiledHeadDim, features(subgroups),
             grid = [ceil_div(p.queries, TILED_INVOCATIONS / LANES * ROWS_EACH) + p.split,
                     p.batch_heads])]
    pub fn attention_forward_tiled(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] q: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] k: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] v: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] o: &mut [f32],
        #[len(p.batch_heads * p.queries)] lse: &mut [f32],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[len(2 * p.batch_heads * p.split_rows * p.head_dim)] partial_o: &mut [f32],
        #[len(2 * p.batch_heads * p.split_rows)] partial_lse: &mut [f32],
        #[workgroup] staged_k: &mut [Vec4<f32>; TILE_KEYS * D / 4],
        #[workgroup] staged_v: &mut [Vec4<f32>; TILE_KEYS * D / 4],
    ) {
        let head = workgroup_id().y;
        // The lanes sharing rows are `LANES` consecutive lanes of one subgroup.
        let lane = subgroup_invocation_id() % LANES;
        let set = (subgroup_id() * subgroup_size() + subgroup_invocation_id()) / LANES;
        let rows_per_group = TILED_INVOCATIONS / LANES * ROWS_EACH;
        let block_half = block_and_half(p, rows_per_group, workgroup_id().x);
        let (first, half) = (block_half.x * rows_per_group, block_half.y);
        let row0 = first + set * ROWS_EACH;
        let kv_at = head / p.group * p.keys * p.head_dim;
        let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
        // This lane's columns of each row: `D / LANES` from `lane * D / LANES`, as vectors.
        let column0 = lane * (D / LANES);
        let mut query = [vec4(0.0f32, 0.0, 0.0, 0.0); ROWS_EACH * D / LANES / 4];
        let mut out = [vec4(0.0f32, 0.0, 0.0, 0.0); ROWS_EACH * D / LANES / 4];
        #[unroll]
        for r in 0..ROWS_EACH {
            let row = row0 + r;
            let at = (head * p.queries + row) * p.head_dim;
            #[unroll]
            for s in 0..D / LANES / 4 {
                query[r * (D / LANES / 4) + s] =
                    load_vec4(q, at, column0 + 4 * s, row < p.queries, p.head_dim) * p.scale;
            }
        }
        let mut maxima = [-f32::MAX; ROWS_EACH];
        let mut sums = [0.0f32; ROWS_EACH];
        let keys_end = keys_read_by(p.keys, first, rows_per_group, p.queries, p.causal);
        let halves = half_keys(keys_end, half);
        for start in (halves.x..halves.y).step_by(TILE_KEYS) {
            let (local, width) = (local_index(), p.head_dim);
            stage_vec4_rows(staged_k, staged_v, k, v, kv_at, start, p.keys, width, local);
            workgroup_barrier();
            for chunk in (0..TILE_KEYS).step_by(CHUNK) {
                // This lane's part of each score, then the whole score in every lane.
                let mut scores = [0.0f32; ROWS_EACH * CHUNK];
                #[unroll]
                for j in 0..CHUNK {
                    #[unroll]
                    for s in 0..D / LANES / 4 {
                        let key = staged_k[(chunk + j) * (D / 4) + column0 / 4 + s];
                        #[unroll]
                        for r in 0..ROWS_EACH {
                            scores[r * CHUNK + j] += query[r * (D / LANES / 4) + s].dot(key);
                        }
                    }
                }
                #[unroll]
                for i in 0..ROWS_EACH * CHUNK {
                    #[unroll]
                    for b in 0..LOG_LANES {
                        scores[i] += subgroup_shuffle_xor(scores[i], 1u32 << b);
                    }
                }
                // The online softmax: each row's maximum over what it has seen, the chunk's
                // weights against it, and what came before rescaled to it.
                #[unroll]
                for r in 0..ROWS_EACH {
                    let row = row0 + r;
                    let mut chunk_max = maxima[r];
                    #[unroll]
                    for j in 0..CHUNK {
                        if sees(row, start + chunk + j, seq_keys, p.causal) {
                            chunk_max = chunk_max.max(scores[r * CHUNK + j]);
                        }
                    }
                    let rescale = (maxima[r] - chunk_max).exp();
                    sums[r] *= rescale;
                    #[unroll]
                    for s in 0..D / LANES / 4 {
                        out[r * (D / LANES / 4) + s] *= rescale;
                    }
                    #[unroll]
                    for j in 0..CHUNK {
                        let mut weight = 0.0f32;
                        if sees(row, start + chunk + j, seq_keys, p.causal) {
                            weight = (scores[r * CHUNK + j] - chunk_max).exp();
                        }
                        scores[r * CHUNK + j] = weight;
                        sums[r] += weight;
                    }
                    maxima[r] = chunk_max;
                }
                #[unroll]
                for j in 0..CHUNK {
                    #[unroll]
                    for s in 0..D / LANES / 4 {
                        let value = staged_v[(chunk + j) * (D / 4) + column0 / 4 + s];
                        #[unroll]
                        for r in 0..ROWS_EACH {
                            out[r * (D / LANES / 4) + s] += scores[r * CHUNK + j] * value;
                        }
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for r in 0..ROWS_EACH {
            let row = row0 + r;
            if row < p.queries {
                // A row that sees no key (its sequence has none, or its half none) gets
                // zeros.
                let sum = sums[r];
                let inverse = if sum > 0.0 { 1.0 / sum } else { 0.0 };
                let row_lse = if sum > 0.0 {
                    maxima[r] + sum.ln()
                } else {
                    -f32::MAX
                };
                // Where the row's output and log-sum-exp go: `o` and `lse`, or its half's
                // place in `partial_o` and `partial_lse`.
                let mut at_row = head * p.queries + row;
                if half > 0 {
                    let split_row = row - (p.queries - p.split_rows);
                    at_row = ((half - 1) * p.batch_heads + head) * p.split_rows + split_row;
                }
                #[unroll]
                for s in 0..D / LANES / 4 {
                    let value = out[r * (D / LANES / 4) + s] * inverse;
                    if half == 0 {
                        store_vec4(o, at_row * p.head_dim, column0 + 4 * s, p.head_dim, value);
                    } else {
                        let at = at_row * p.head_dim;
                        store_vec4(partial_o, at, column0 + 4 * s, p.head_dim, value);
                    }
                }
                if lane == 0 {
                    if half == 0 {
                        lse[at_row] = row_lse;
                    } else {
                        partial_lse[at_row] = row_lse;
                    }
                }
            }
        }
    }

    /// Finishes the rows whose keys two workgroups of the tiled forward shared: each row's
    /// output and log-sum-exp from its halves' (`o = (o1 e^(lse1 - m) + o2 e^(lse2 - m)) /
    /// (e^(lse1 - m) + e^(lse2 - m))`, `m` the larger log-sum-exp), zeros where neither
    /// half saw a key.
    #[kernel(workgroup = [ROWS], grid = [ceil_div(p.split_rows, ROWS), p.batch_heads])]
    pub fn attention_merge_halves(
        p: &AttentionParams,
        #[len(2 * p.batch_heads * p.split_rows * p.head_dim)] partial_o: &[f32],
        #[len(2 * p.batch_heads * p.split_rows)] partial_lse: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] o: &mut [f32],
        #[len(p.batch_heads * p.queries)] lse: &mut [f32],
    ) {
        let (i, head) = (global_id().x, workgroup_id().y);
        if i < p.split_rows {
            let row = p.queries - p.split_rows + i;
            let (a, b) = (
                head * p.split_rows + i,
                (p.batch_heads + head) * p.split_rows + i,
            );
            let (lse_a, lse_b) = (partial_lse[a], partial_lse[b]);
            let top = lse_a.max(lse_b);
            let (mut weight_a, mut weight_b, mut row_lse) = (0.0f32, 0.0f32, -f32::MAX);
            if top > -f32::MAX {
                weight_a = (lse_a - top).exp();
                weight_b = (lse_b - top).exp();
                row_lse = top + (weight_a + weight_b).ln();
                let inverse = 1.0 / (weight_a + weight_b);
                weight_a *= inverse;
                weight_b *= inverse;
            }
            let at = (head * p.queries + row) * p.head_dim;
            for c in 0..p.head_dim {
                o[at + c] = weight_a * partial_o[a * p.head_dim + c]
                    + weight_b * partial_o[b * p.head_dim + c];
            }
            lse[head * p.queries + row] = row_lse;
        }
    }

    /// The keys a workgroup of `rows` query rows from `first` reads: all `keys`, or under the
    /// causal mask none past its last row's.
    fn keys_read_by(keys: u32, first: u32, rows: u32, queries: u32, causal: u32) -> u32 {
        let mut n = keys;
        if causal == 1 {
            n = keys.min((first + rows).min(queries));
        }
        n
    }

    /// The 4 scalars of `x` from `at + column`, zeros at and past `width` (all zeros where
    /// not `live`).
    fn load_vec4(x: &[f32], at: u32, column: u32, live: bool, width: u32) -> Vec4<f32> {
        let mut lanes = [0.0f32; 4];
        #[unroll]
        for i in 0..4 {
            if live && column + i < width {
                lanes[i] = x[at + column + i];
            }
        }
        vec4(lanes[0], lanes[1], lanes[2], lanes[3])
    }

    /// Stores the lanes of `value` below `width` to `y[at + column ..]`.
    fn store_vec4(y: &mut [f32], at: u32, column: u32, width: u32, value: Vec4<f32>) {
        let lanes = [value.x, value.y, value.z, value.w];
        #[unroll]
        for i in 0..4 {
            if column + i < width {
                y[at + column + i] = lanes[i];
            }
        }
    }

    /// Stages the `TILE_KEYS` rows from `start` of `x` and `y` (rows of `width` scalars from
    /// `at`), as vectors padded to `D` with zeros, and zero rows past `rows`.
    fn stage_vec4_rows(
        a: &mut [Vec4<f32>; TILE_KEYS * D / 4],
        b: &mut [Vec4<f32>; TILE_KEYS * D / 4],
        x: &[f32],
        y: &[f32],
        at: u32,
        start: u32,
        rows: u32,
        width: u32,
        local: u32,
    ) {
        #[unroll]
        for r in 0..TILE_KEYS * D / 4 / TILED_INVOCATIONS {
            let slot = r * TILED_INVOCATIONS + local;
            let row = start + slot / (D / 4);
            let column = slot % (D / 4) * 4;
            let from = at + row * width;
            a[slot] = load_vec4(x, from, column, row < rows, width);
            b[slot] = load_vec4(y, from, column, row < rows, width);
        }
    }

    /// `stats[r] = (lse[r], grad_o[r] · o[r])` for every query row `r` of every head: its
    /// log-sum-exp beside the term each probability's gradient subtracts (`sum_j p_j dp_j`),
    /// one buffer for the gradient kernels to read (which bind eight buffers already).
    /// Over `f32` storage or `f16` (the tensor-core backward's), summed in `f32`.
    #[kernel(workgroup = [ROWS], grid = [ceil_div(p.batch_heads * p.queries, ROWS)],
             types(E = [f32, f16]))]
    pub fn attention_row_stats<E>(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] o: &[E],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_o: &[E],
        #[len(p.batch_heads * p.queries)] lse: &[f32],
        #[len(p.batch_heads * p.queries)] stats: &mut [Vec2<f32>],
    ) {
        let row = global_id().x;
        if row < p.batch_heads * p.queries {
            let mut dot = 0.0f32;
            for c in 0..p.head_dim {
                let at = row * p.head_dim + c;
                dot += o[at] as f32 * grad_o[at] as f32;
            }
            stats[row] = vec2(lse[row], dot);
        }
    }

    /// `grad_q = scale * sum_j ds_j k_j` for `ROWS` query rows of one head, where `ds_j =
    /// p_j (grad_o · v_j - dots)` and `p_j = exp(scale * q · k_j - lse)`: the forward's walk
    /// over the key blocks, each probability recomputed from the row's log-sum-exp.
    #[kernel(workgroup = [ROWS], constants = HeadDim,
             grid = [ceil_div(p.queries, ROWS), p.batch_heads])]
    pub fn attention_grad_q(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] q: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] k: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] v: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_o: &[f32],
        #[len(p.batch_heads * p.queries)] stats: &[Vec2<f32>],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_q: &mut [f32],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[workgroup] staged_k: &mut [f32; KEYS * D],
        #[workgroup] staged_v: &mut [f32; KEYS * D],
    ) {
        let local = local_index();
        let head = workgroup_id().y;
        let first = workgroup_id().x * ROWS;
        let row = first + local;
        let live = row < p.queries;
        let q_at = (head * p.queries + row) * p.head_dim;
        let kv_at = head / p.group * p.keys * p.head_dim;
        let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
        let mut query = [0.0f32; D];
        let mut grad_row = [0.0f32; D];
        let mut grad = [0.0f32; D];
        let mut row_lse = 0.0f32;
        let mut row_dot = 0.0f32;
        if live {
            let row_stats = stats[head * p.queries + row];
            row_lse = row_stats.x;
            row_dot = row_stats.y;
        }
        load_row(&mut query, q, q_at, live, p.head_dim, p.scale);
        load_row(&mut grad_row, grad_o, q_at, live, p.head_dim, 1.0);
        for start in (0..keys_read(p.keys, first, p.queries, p.causal)).step_by(KEYS) {
            stage_rows(
                staged_k, staged_v, k, v, kv_at, start, p.keys, p.head_dim, local,
            );
            workgroup_barrier();
            for j in 0..KEYS {
                if live && sees(row, start + j, seq_keys, p.causal) {
                    let mut score = 0.0f32;
                    let mut grad_p = 0.0f32;
                    #[unroll]
                    for c in 0..D {
                        score += query[c] * staged_k[j * D + c];
                        grad_p += grad_row[c] * staged_v[j * D + c];
                    }
                    let grad_score = (score - row_lse).exp() * (grad_p - row_dot);
                    #[unroll]
                    for c in 0..D {
                        grad[c] += grad_score * staged_k[j * D + c];
                    }
                }
            }
            workgroup_barrier();
        }
        store_row(&grad, grad_q, q_at, live, p.head_dim, p.scale);
    }

    /// `grad_v = sum_i p_i grad_o_i` and `grad_k = scale * sum_i ds_i q_i` for `ROWS` key rows
    /// of one key head (`workgroup_id().y`, batch included), over every query row of the query
    /// heads that share it, `KEYS / 2` query rows a block, staged scaled (so `ds_i` times the
    /// staged row is already `scale * ds_i q_i`).
    #[kernel(workgroup = [ROWS], constants = HeadDim,
             grid = [ceil_div(p.keys, ROWS), p.batch_heads / p.group])]
    pub fn attention_grad_kv(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] q: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] k: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] v: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_o: &[f32],
        #[len(p.batch_heads * p.queries)] stats: &[Vec2<f32>],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] grad_k: &mut [f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] grad_v: &mut [f32],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[workgroup] staged_q: &mut [f32; KEYS / 2 * D],
        #[workgroup] staged_grad_o: &mut [f32; KEYS / 2 * D],
        #[workgroup] staged_lse: &mut [f32; KEYS / 2],
        #[workgroup] staged_dots: &mut [f32; KEYS / 2],
    ) {
        let local = local_index();
        let kv_head = workgroup_id().y;
        let first = workgroup_id().x * ROWS;
        let key = first + local;
        let live = key < p.keys;
        let kv_at = (kv_head * p.keys + key) * p.head_dim;
        let mut key_row = [0.0f32; D];
        let mut value_row = [0.0f32; D];
        load_row(&mut key_row, k, kv_at, live, p.head_dim, 1.0);
        load_row(&mut value_row, v, kv_at, live, p.head_dim, 1.0);
        let mut grad_key = [0.0f32; D];
        let mut grad_value = [0.0f32; D];
        // Under the causal mask, no query before this workgroup's first key sees its keys.
        let mut from = 0u32;
        if p.causal == 1 {
            from = first / (KEYS / 2) * (KEYS / 2);
        }
        // Every query head of the group is of the same sequence.
        let seq_keys = sequence_keys(key_lengths, kv_head * p.group, p.heads, p.keys, p.padded);
        for g in 0..p.group {
            let head = kv_head * p.group + g;
            for start in (from..p.queries).step_by(KEYS / 2) {
                let q_at = head * p.queries * p.head_dim;
                #[unroll]
                for r in 0..KEYS / 2 * D / ROWS {
                    let slot = r * ROWS + local;
                    let query = start + slot / D;
                    let c = slot % D;
                    let inside = query < p.queries && c < p.head_dim;
                    let from = q_at + query * p.head_dim + c;
                    staged_q[slot] = if inside { q[from] * p.scale } else { 0.0 };
                    staged_grad_o[slot] = if inside { grad_o[from] } else { 0.0 };
                }
                if local < KEYS / 2 {
                    let query = start + local;
                    staged_lse[local] = 0.0;
                    staged_dots[local] = 0.0;
                    if query < p.queries {
                        let row_stats = stats[head * p.queries + query];
                        staged_lse[local] = row_stats.x;
                        staged_dots[local] = row_stats.y;
                    }
                }
                workgroup_barrier();
                for i in 0..KEYS / 2 {
                    let query = start + i;
                    if live && query < p.queries && sees(query, key, seq_keys, p.causal) {
                        let mut score = 0.0f32;
                        let mut grad_p = 0.0f32;
                        #[unroll]
                        for c in 0..D {
                            score += staged_q[i * D + c] * key_row[c];
                            grad_p += staged_grad_o[i * D + c] * value_row[c];
                        }
                        let prob = (score - staged_lse[i]).exp();
                        let grad_score = prob * (grad_p - staged_dots[i]);
                        #[unroll]
                        for c in 0..D {
                            grad_value[c] += prob * staged_grad_o[i * D + c];
                            grad_key[c] += grad_score * staged_q[i * D + c];
                        }
                    }
                }
                workgroup_barrier();
            }
        }
        store_row(&grad_key, grad_k, kv_at, live, p.head_dim, 1.0);
        store_row(&grad_value, grad_v, kv_at, live, p.head_dim, 1.0);
    }

    /// Rows each invocation of the tiled gradients works on: query rows in the query
    /// gradient (it holds three slices of each: the query, its output's gradient and its own
    /// gradient), key rows in the key and value gradients (four: the key, the value and
    /// their gradients).
    pub const GRAD_ROWS_EACH: u32 = 2;

    /// A chunk's dot products in the tiled gradients: for each of the `GRAD_ROWS_EACH` rows
    /// held (`held_a`, `held_b`: this lane's slices) and each of the `CHUNK` staged rows from
    /// `chunk` (`staged_a`, `staged_b`), `held_a · staged_a` into `dots_a` and `held_b ·
    /// staged_b` into `dots_b` (row-major: `dots[r * CHUNK + j]`), each summed across the
    /// `LANES` lanes that share the rows.
    fn chunk_dots(
        held_a: &[Vec4<f32>; GRAD_ROWS_EACH * D / LANES / 4],
        held_b: &[Vec4<f32>; GRAD_ROWS_EACH * D / LANES / 4],
        staged_a: &[Vec4<f32>; TILE_KEYS * D / 4],
        staged_b: &[Vec4<f32>; TILE_KEYS * D / 4],
        chunk: u32,
        column0: u32,
        dots_a: &mut [f32; GRAD_ROWS_EACH * CHUNK],
        dots_b: &mut [f32; GRAD_ROWS_EACH * CHUNK],
    ) {
        #[unroll]
        for j in 0..CHUNK {
            #[unroll]
            for s in 0..D / LANES / 4 {
                let at = (chunk + j) * (D / 4) + column0 / 4 + s;
                let (a, b) = (staged_a[at], staged_b[at]);
                #[unroll]
                for r in 0..GRAD_ROWS_EACH {
                    let i = r * (D / LANES / 4) + s;
                    dots_a[r * CHUNK + j] += held_a[i].dot(a);
                    dots_b[r * CHUNK + j] += held_b[i].dot(b);
                }
            }
        }
        #[unroll]
        for i in 0..GRAD_ROWS_EACH * CHUNK {
            #[unroll]
            for b in 0..LOG_LANES {
                dots_a[i] += subgroup_shuffle_xor(dots_a[i], 1u32 << b);
                dots_b[i] += subgroup_shuffle_xor(dots_b[i], 1u32 << b);
            }
        }
    }

    /// The query gradient on register tiles, where the device has subgroups of at least 8
    /// lanes (the forward's choice): each `LANES` lanes of a subgroup take `GRAD_ROWS_EACH`
    /// query rows, each lane a `D / LANES` columns of their queries (scaled), output
    /// gradients and query gradients, and walk the key blocks as the tiled forward does; each
    /// score and `grad_o · v` is summed across the lanes by shuffles, `CHUNK` keys at a time,
    /// and the probability recomputed from the row's log-sum-exp. Same results as
    /// [`attention_grad_q`] up to the order of the sums.
    ///
    /// As in the forward, the last `p.split` blocks of rows are each taken by two workgroups,
    /// a half of the keys each: the first half's writes `grad_q`, the second's
    /// `partial_grad_q`, which `attention_add_halves` adds in.
    #[kernel(workgroup = [TILED_INVOCATIONS], constants = TiledHeadDim, features(subgroups),
             grid = [ceil_div(p.queries, TILED_INVOCATIONS / LANES * GRAD_ROWS_EACH) + p.split,
                     p.batch_heads])]
    pub fn attention_grad_q_tiled(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] q: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] k: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] v: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_o: &[f32],
        #[len(p.batch_heads * p.queries)] stats: &[Vec2<f32>],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_q: &mut [f32],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[len(p.batch_heads * p.split_rows * p.head_dim)] partial_grad_q: &mut [f32],
        #[workgroup] staged_k: &mut [Vec4<f32>; TILE_KEYS * D / 4],
        #[workgroup] staged_v: &mut [Vec4<f32>; TILE_KEYS * D / 4],
    ) {
        let head = workgroup_id().y;
        let lane = subgroup_invocation_id() % LANES;
        let set = (subgroup_id() * subgroup_size() + subgroup_invocation_id()) / LANES;
        let rows_per_group = TILED_INVOCATIONS / LANES * GRAD_ROWS_EACH;
        let block_half = block_and_half(p, rows_per_group, workgroup_id().x);
        let (first, half) = (block_half.x * rows_per_group, block_half.y);
        let row0 = first + set * GRAD_ROWS_EACH;
        let kv_at = head / p.group * p.keys * p.head_dim;
        let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
        let column0 = lane * (D / LANES);
        let mut query = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        let mut grad_row = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        let mut grad = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        let mut row_stats = [vec2(0.0f32, 0.0); GRAD_ROWS_EACH];
        #[unroll]
        for r in 0..GRAD_ROWS_EACH {
            let row = row0 + r;
            let live = row < p.queries;
            let at = (head * p.queries + row) * p.head_dim;
            #[unroll]
            for s in 0..D / LANES / 4 {
                let i = r * (D / LANES / 4) + s;
                query[i] = load_vec4(q, at, column0 + 4 * s, live, p.head_dim) * p.scale;
                grad_row[i] = load_vec4(grad_o, at, column0 + 4 * s, live, p.head_dim);
            }
            if live {
                row_stats[r] = stats[head * p.queries + row];
            }
        }
        let keys_end = keys_read_by(p.keys, first, rows_per_group, p.queries, p.causal);
        let halves = half_keys(keys_end, half);
        for start in (halves.x..halves.y).step_by(TILE_KEYS) {
            let (local, width) = (local_index(), p.head_dim);
            stage_vec4_rows(staged_k, staged_v, k, v, kv_at, start, p.keys, width, local);
            workgroup_barrier();
            for chunk in (0..TILE_KEYS).step_by(CHUNK) {
                let mut scores = [0.0f32; GRAD_ROWS_EACH * CHUNK];
                let mut grad_p = [0.0f32; GRAD_ROWS_EACH * CHUNK];
                chunk_dots(
                    &query,
                    &grad_row,
                    staged_k,
                    staged_v,
                    chunk,
                    column0,
                    &mut scores,
                    &mut grad_p,
                );
                // Each score's gradient (0 where the row does not see the key).
                #[unroll]
                for r in 0..GRAD_ROWS_EACH {
                    #[unroll]
                    for j in 0..CHUNK {
                        let i = r * CHUNK + j;
                        let mut grad_score = 0.0f32;
                        if sees(row0 + r, start + chunk + j, seq_keys, p.causal) {
                            let prob = (scores[i] - row_stats[r].x).exp();
                            grad_score = prob * (grad_p[i] - row_stats[r].y);
                        }
                        scores[i] = grad_score;
                    }
                }
                #[unroll]
                for j in 0..CHUNK {
                    #[unroll]
                    for s in 0..D / LANES / 4 {
                        let key = staged_k[(chunk + j) * (D / 4) + column0 / 4 + s];
                        #[unroll]
                        for r in 0..GRAD_ROWS_EACH {
                            grad[r * (D / LANES / 4) + s] += scores[r * CHUNK + j] * key;
                        }
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for r in 0..GRAD_ROWS_EACH {
            let row = row0 + r;
            if row < p.queries {
                let at = (head * p.queries + row) * p.head_dim;
                #[unroll]
                for s in 0..D / LANES / 4 {
                    let value = grad[r * (D / LANES / 4) + s] * p.scale;
                    if half < 2 {
                        store_vec4(grad_q, at, column0 + 4 * s, p.head_dim, value);
                    } else {
                        let split_row = row - (p.queries - p.split_rows);
                        let at = (head * p.split_rows + split_row) * p.head_dim;
                        store_vec4(partial_grad_q, at, column0 + 4 * s, p.head_dim, value);
                    }
                }
            }
        }
    }

    /// Adds the second halves' query gradients (`attention_grad_q_tiled`'s split blocks) to
    /// the first halves'.
    #[kernel(workgroup = [ROWS], grid = [ceil_div(p.split_rows, ROWS), p.batch_heads])]
    pub fn attention_add_halves(
        p: &AttentionParams,
        #[len(p.batch_heads * p.split_rows * p.head_dim)] partial_grad_q: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_q: &mut [f32],
    ) {
        let (i, head) = (global_id().x, workgroup_id().y);
        if i < p.split_rows {
            let row = p.queries - p.split_rows + i;
            let (at, from) = (
                (head * p.queries + row) * p.head_dim,
                (head * p.split_rows + i) * p.head_dim,
            );
            for c in 0..p.head_dim {
                grad_q[at + c] += partial_grad_q[from + c];
            }
        }
    }

    /// Workgroup `x`'s query block and half, as `vec2(block, half)`, in a tiled kernel taking
    /// `rows` query rows a block: the longest work first (a long workgroup started last would
    /// run on alone), so the halves of the `p.split` last blocks, then the other blocks, the
    /// last rows first (under the causal mask they read the most keys). The half is 0 for a
    /// whole block, else 1 or 2 (see `half_keys`).
    fn block_and_half(p: &AttentionParams, rows: u32, x: u32) -> Vec2<u32> {
        let (blocks, split) = ((p.queries + rows - 1) / rows, p.split);
        let mut block_half = vec2(0u32, 0u32);
        if x < 2 * split {
            block_half = vec2(blocks - 1 - x / 2, 1 + x % 2);
        } else {
            block_half.x = blocks - 1 - split - (x - 2 * split);
        }
        block_half
    }

    /// The keys `(from, to)` of half `half` of `0..keys_end` (1 or 2; 0 for all of them):
    /// whole key blocks up to the middle, and the rest.
    fn half_keys(keys_end: u32, half: u32) -> Vec2<u32> {
        let middle = (keys_end / 2 + TILE_KEYS - 1) / TILE_KEYS * TILE_KEYS;
        let mut keys = vec2(0u32, keys_end);
        if half == 1 {
            keys.y = middle.min(keys_end);
        }
        if half == 2 {
            keys.x = middle;
        }
        keys
    }

    /// The key and value gradients on register tiles, where the device has subgroups of at
    /// least 8 lanes (the forward's choice): each `LANES` lanes of a subgroup take
    /// `GRAD_ROWS_EACH` key rows of one key head, each lane a `D / LANES` columns of their keys,
    /// values and gradients, and walk the query rows of every query head sharing it
    /// (`TILE_KEYS` a block, staged scaled with their gradients and statistics); the scores
    /// and `grad_o · v` are summed across the lanes by shuffles, `CHUNK` queries at a time.
    /// Same results as [`attention_grad_kv`] up to the order of the sums.
    #[kernel(workgroup = [TILED_INVOCATIONS], constants = TiledHeadDim, features(subgroups),
             limits(workgroup_memory = 16640),
             grid = [ceil_div(p.keys, TILED_INVOCATIONS / LANES * GRAD_ROWS_EACH),
                     p.batch_heads / p.group])]
    pub fn attention_grad_kv_tiled(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim)] q: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] k: &[f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] v: &[f32],
        #[len(p.batch_heads * p.queries * p.head_dim)] grad_o: &[f32],
        #[len(p.batch_heads * p.queries)] stats: &[Vec2<f32>],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] grad_k: &mut [f32],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim)] grad_v: &mut [f32],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[workgroup] staged_q: &mut [Vec4<f32>; TILE_KEYS * D / 4],
        #[workgroup] staged_grad_o: &mut [Vec4<f32>; TILE_KEYS * D / 4],
        #[workgroup] staged_stats: &mut [Vec2<f32>; TILE_KEYS],
    ) {
        let kv_head = workgroup_id().y;
        let lane = subgroup_invocation_id() % LANES;
        let set = (subgroup_id() * subgroup_size() + subgroup_invocation_id()) / LANES;
        let keys_per_group = TILED_INVOCATIONS / LANES * GRAD_ROWS_EACH;
        let first = workgroup_id().x * keys_per_group;
        let key0 = first + set * GRAD_ROWS_EACH;
        let column0 = lane * (D / LANES);
        let mut key_rows = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        let mut value_rows = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        let mut grad_key = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        let mut grad_value = [vec4(0.0f32, 0.0, 0.0, 0.0); GRAD_ROWS_EACH * D / LANES / 4];
        #[unroll]
        for r in 0..GRAD_ROWS_EACH {
            let key = key0 + r;
            let at = (kv_head * p.keys + key) * p.head_dim;
            #[unroll]
            for s in 0..D / LANES / 4 {
                let i = r * (D / LANES / 4) + s;
                key_rows[i] = load_vec4(k, at, column0 + 4 * s, key < p.keys, p.head_dim);
                value_rows[i] = load_vec4(v, at, column0 + 4 * s, key < p.keys, p.head_dim);
            }
        }
        // Under the causal mask, no query before this workgroup's first key sees its keys.
        let mut from = 0u32;
        if p.causal == 1 {
            from = first.min(p.queries);
        }
        // Every query head of the group is of the same sequence.
        let seq_keys = sequence_keys(key_lengths, kv_head * p.group, p.heads, p.keys, p.padded);
        for g in 0..p.group {
            let head = kv_head * p.group + g;
            let q_at = head * p.queries * p.head_dim;
            for start in (from..p.queries).step_by(TILE_KEYS) {
                let local = local_index();
                #[unroll]
                for r in 0..TILE_KEYS * D / 4 / TILED_INVOCATIONS {
                    let slot = r * TILED_INVOCATIONS + local;
                    let query = start + slot / (D / 4);
                    let column = slot % (D / 4) * 4;
                    let from_row = q_at + query * p.head_dim;
                    let inside = query < p.queries;
                    staged_q[slot] = load_vec4(q, from_row, column, inside, p.head_dim) * p.scale;
                    staged_grad_o[slot] = load_vec4(grad_o, from_row, column, inside, p.head_dim);
                }
                if local < TILE_KEYS {
                    let query = start + local;
                    staged_stats[local] = vec2(0.0f32, 0.0);
                    if query < p.queries {
                        staged_stats[local] = stats[head * p.queries + query];
                    }
                }
                workgroup_barrier();
                for chunk in (0..TILE_KEYS).step_by(CHUNK) {
                    let mut scores = [0.0f32; GRAD_ROWS_EACH * CHUNK];
                    let mut grad_p = [0.0f32; GRAD_ROWS_EACH * CHUNK];
                    chunk_dots(
                        &key_rows,
                        &value_rows,
                        staged_q,
                        staged_grad_o,
                        chunk,
                        column0,
                        &mut scores,
                        &mut grad_p,
                    );
                    // Each probability and its score's gradient (0 where the query does
                    // not see the key).
                    #[unroll]
                    for r in 0..GRAD_ROWS_EACH {
                        #[unroll]
                        for j in 0..CHUNK {
                            let query = start + chunk + j;
                            let row_stats = staged_stats[chunk + j];
                            let i = r * CHUNK + j;
                            let mut prob = 0.0f32;
                            let mut grad_score = 0.0f32;
                            if query < p.queries && sees(query, key0 + r, seq_keys, p.causal) {
                                prob = (scores[i] - row_stats.x).exp();
                                grad_score = prob * (grad_p[i] - row_stats.y);
                            }
                            scores[i] = prob;
                            grad_p[i] = grad_score;
                        }
                    }
                    #[unroll]
                    for j in 0..CHUNK {
                        #[unroll]
                        for s in 0..D / LANES / 4 {
                            let at = (chunk + j) * (D / 4) + column0 / 4 + s;
                            let (query, grad_row) = (staged_q[at], staged_grad_o[at]);
                            #[unroll]
                            for r in 0..GRAD_ROWS_EACH {
                                let i = r * (D / LANES / 4) + s;
                                grad_value[i] += scores[r * CHUNK + j] * grad_row;
                                grad_key[i] += grad_p[r * CHUNK + j] * query;
                            }
                        }
                    }
                }
                workgroup_barrier();
            }
        }
        #[unroll]
        for r in 0..GRAD_ROWS_EACH {
            let key = key0 + r;
            if key < p.keys {
                let at = (kv_head * p.keys + key) * p.head_dim;
                #[unroll]
                for s in 0..D / LANES / 4 {
                    let i = r * (D / LANES / 4) + s;
                    store_vec4(grad_k, at, column0 + 4 * s, p.head_dim, grad_key[i]);
                    store_vec4(grad_v, at, column0 + 4 * s, p.head_dim, grad_value[i]);
                }
            }
        }
    }

    /// Stages rows `start..start + KEYS` of two matrices of `rows` rows of `width` scalars
    /// (from `at`) into `a` and `b`, `D` scalars a row: zeros past `rows` and past `width`.
    /// Each invocation of the `ROWS` stages its share.
    fn stage_rows(
        a: &mut [f32; KEYS * D],
        b: &mut [f32; KEYS * D],
        x: &[f32],
        y: &[f32],
        at: u32,
        start: u32,
        rows: u32,
        width: u32,
        local: u32,
    ) {
        #[unroll]
        for r in 0..KEYS * D / ROWS {
            let slot = r * ROWS + local;
            let row = start + slot / D;
            let c = slot % D;
            let inside = row < rows && c < width;
            let from = at + row * width + c;
            a[slot] = if inside { x[from] } else { 0.0 };
            b[slot] = if inside { y[from] } else { 0.0 };
        }
    }

    // The tensor-core kernels (`Precision::TensorCoreF16`): a workgroup of four subgroups of
    // 32 takes `FRAG_ROWS` rows (queries, or keys for the key and value gradients), 16 a
    // subgroup; the products run on 16 x 16 f16 fragments summed in f32, and what a product's
    // elements need one at a time (the softmax, the masks, the rescaling) goes through a tile
    // of workgroup memory each subgroup has to itself (`tiles`, 16 rows of `TILE_STRIDE`
    // floats), where two lanes take each row (the row `lane / 2`, every other run of 4 of its
    // columns). Naga's fragments give no access to their elements, so that is the only way.

    /// Invocations of a tensor-core attention kernel: four subgroups of 32.
    pub const FRAG_INVOCATIONS: u32 = 128;

    /// Rows a tensor-core workgroup takes: 16 a subgroup.
    pub const FRAG_ROWS: u32 = 64;

    /// Floats between the rows of a subgroup's tile: 64 columns and 8 more, which spreads
    /// the two lanes of each row and the rows over the memory banks (and keeps each row's
    /// start 16-byte aligned, as fragment stores want).
    pub const TILE_STRIDE: u32 = 72;

    /// Floats of a subgroup's tile.
    pub const TILE: u32 = 16 * TILE_STRIDE;

    /// The tensor-core kernels' instances: `D`, the head dimension a row is padded to, and
    /// `BLOCK`, the rows (keys, or queries in the key and value gradients) a step stages,
    /// in f16 with `STRIDE` halves between rows (8 past `D`: 16 bytes, for the fragments'
    /// alignment and the banks); `P_STRIDE` likewise for a subgroup's `16 x BLOCK` weights.
    /// `MEMORY`, the workgroup memory the forward takes (under the 48 KiB NVIDIA's Vulkan
    /// drivers give a workgroup).
    #[constants(
        zip(D = [64, 128], BLOCK = [64, 32]),
        STRIDE = D + 8,
        P_STRIDE = BLOCK + 8,
        MEMORY = 4 * BLOCK * STRIDE + 16 * TILE + 128 * P_STRIDE
    )]
    pub struct FragmentHeadDim;

    /// An invocation's share of `BLOCK` rows from `start` of a matrix of `rows` rows of
    /// `width` scalars (from scalar `at`), `D` a row, times `factor` and rounded to f16: zeros
    /// past `rows` and past `width`. Bound as vectors of 4 (`E::LANES`), the matrix's rows
    /// are a multiple of 4 long. Loaded for `store_block` to stage, so that an invocation
    /// issues every load of a step before its first store (a loop of a load and a store at a
    /// time waited out each load: the forward ran 4 times slower on an H200), and the next
    /// step's loads are in flight while the workgroup multiplies this one's.
    fn load_block<E>(
        x: &[E],
        at: u32,
        start: u32,
        rows: u32,
        width: u32,
        factor: f32,
        t: u32,
    ) -> [f16; BLOCK * D / FRAG_INVOCATIONS] {
        let mut held = [0.0 as E::F32; BLOCK * D / FRAG_INVOCATIONS / E::LANES];
        #[unroll]
        for r in 0..BLOCK * D / FRAG_INVOCATIONS / E::LANES {
            let slot = (r * FRAG_INVOCATIONS + t) * E::LANES;
            let (row, c) = (start + slot / D, slot % D);
            if row < rows && c < width {
                held[r] = x[(at + row * width + c) / E::LANES] as E::F32;
            }
        }
        let mut halves = [0.0f16; BLOCK * D / FRAG_INVOCATIONS];
        #[unroll]
        for r in 0..BLOCK * D / FRAG_INVOCATIONS / E::LANES {
            #[unroll]
            for lane in 0..E::LANES {
                halves[r * E::LANES + lane] = (held[r][lane] * factor) as f16;
            }
        }
        halves
    }

    /// Stages what `load_block::<E>` loaded into `staged` from its row `base` on, `STRIDE`
    /// halves between rows.
    fn store_block<E>(
        staged: &mut [f16; 2 * BLOCK * STRIDE],
        base: u32,
        held: &[f16; BLOCK * D / FRAG_INVOCATIONS],
        t: u32,
    ) {
        #[unroll]
        for r in 0..BLOCK * D / FRAG_INVOCATIONS / E::LANES {
            #[unroll]
            for lane in 0..E::LANES {
                let slot = (r * FRAG_INVOCATIONS + t) * E::LANES + lane;
                staged[(base + slot / D) * STRIDE + slot % D] = held[r * E::LANES + lane];
            }
        }
    }

    /// The subgroup's 16 of the `FRAG_ROWS` rows from `first` of a matrix of `rows` rows of
    /// `width` scalars (from `at`), times `factor`, as f16 fragments: the workgroup's rows
    /// staged through `staged` (as `load_block` and `store_block`, a block at a time), each
    /// subgroup loading its own. Every invocation calls it (it holds barriers).
    fn row_fragments<E>(
        staged: &mut [f16; 2 * BLOCK * STRIDE],
        x: &[E],
        at: u32,
        first: u32,
        rows: u32,
        width: u32,
        factor: f32,
        t: u32,
    ) -> [FragA16<f16>; D / 16] {
        #[unroll]
        for part in 0..FRAG_ROWS / BLOCK {
            let base = part * BLOCK;
            let held = load_block(x, at, first + base, rows, width, factor, t);
            store_block::<E>(staged, base, &held, t);
        }
        workgroup_barrier();
        let mut fragments: [FragA16<f16>; D / 16] = [coop_zero(); D / 16];
        #[unroll]
        for kk in 0..D / 16 {
            fragments[kk] = coop_load_row_major(&staged[t / 32 * 16 * STRIDE + kk * 16], STRIDE);
        }
        workgroup_barrier();
        fragments
    }

    /// Where the `i`-th of the columns a lane takes of its row of a tile (half the row) lies:
    /// runs of 4, the two lanes of a row taking every other one (`half`).
    fn tile_column(i: u32, half: u32) -> u32 {
        i / 4 * 8 + half * 4 + i % 4
    }

    /// `o = softmax(scale * q kᵀ) v` on the tensor cores, for `FRAG_ROWS` query rows of one
    /// head, with each row's log-sum-exp: the forward of `attention_forward`, its products in
    /// f16 fragments summed in f32 (queries, scaled, and keys and values rounded to f16 as
    /// they are staged, or read as they are over f16 storage). Per block of `BLOCK` keys each
    /// subgroup scores its 16 rows as fragments into its tile; two lanes a row fold them into
    /// the row's running maximum and sum and write the weights back as f16; the weights times
    /// the values go through the tile again, 64 columns at a time, into the output each lane
    /// holds of its row in registers, rescaled there (a fragment cannot be scaled a row at a
    /// time).
    #[kernel(workgroup = [FRAG_INVOCATIONS], constants = FragmentHeadDim,
             features(f16, cooperative_matrix, subgroups),
             limits(workgroup_memory = MEMORY),
             grid = [ceil_div(p.queries, FRAG_ROWS), p.batch_heads],
             types(E = [f32, f16, Vec4<f32>, Vec4<f16>]))]
    pub fn attention_forward_fragments<E>(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] q: &[E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] k: &[E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] v: &[E],
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] o: &mut [E],
        #[len(p.batch_heads * p.queries)] lse: &mut [f32],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[workgroup] staged: &mut [f16; 2 * BLOCK * STRIDE],
        #[workgroup] tiles: &mut [f32; 4 * TILE],
        #[workgroup] weights: &mut [f16; 64 * P_STRIDE],
    ) {
        let (t, head, first) = (
            local_index(),
            workgroup_id().y,
            workgroup_id().x * FRAG_ROWS,
        );
        let (sub, lane) = (t / 32, t % 32);
        let (row, half) = (first + sub * 16 + lane / 2, lane % 2);
        let (tile, own) = (sub * TILE, sub * TILE + lane / 2 * TILE_STRIDE);
        let kv_at = head / p.group * p.keys * p.head_dim;
        let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
        // The subgroup's 16 query rows, scaled, as fragments, staged through `staged` (which
        // holds all 64 rows: its keys and values' halves together).
        let q_at = head * p.queries * p.head_dim;
        let query = row_fragments(staged, q, q_at, first, p.queries, p.head_dim, p.scale, t);
        let mut maximum = -f32::MAX;
        let mut sum = 0.0f32;
        let mut out = [0.0f32; D / 2];
        let keys_end = keys_read_by(p.keys, first, FRAG_ROWS, p.queries, p.causal);
        let width = p.head_dim;
        let mut from_k = load_block(k, kv_at, 0, p.keys, width, 1.0, t);
        let mut from_v = load_block(v, kv_at, 0, p.keys, width, 1.0, t);
        for start in (0..keys_end).step_by(BLOCK) {
            store_block::<E>(staged, 0, &from_k, t);
            store_block::<E>(staged, BLOCK, &from_v, t);
            workgroup_barrier();
            // The next block's loads, in flight while this one is multiplied.
            if start + BLOCK < keys_end {
                from_k = load_block(k, kv_at, start + BLOCK, p.keys, width, 1.0, t);
                from_v = load_block(v, kv_at, start + BLOCK, p.keys, width, 1.0, t);
            }
            // The scores, 16 keys a fragment, into the subgroup's tile.
            products_into_tile(&query, staged, 0, tiles, tile);
            workgroup_barrier();
            // The online softmax over the lane's half of its row: the block's maximum, what
            // came before rescaled to it, the weights written back as f16.
            let mut block_max = maximum;
            #[unroll]
            for i in 0..BLOCK / 2 {
                let column = tile_column(i, half);
                if sees(row, start + column, seq_keys, p.causal) {
                    block_max = block_max.max(tiles[own + column]);
                }
            }
            block_max = block_max.max(subgroup_shuffle_xor(block_max, 1u32));
            let rescale = (maximum - block_max).exp();
            #[unroll]
            for c in 0..D / 2 {
                out[c] *= rescale;
            }
            let mut block_sum = 0.0f32;
            #[unroll]
            for i in 0..BLOCK / 2 {
                let column = tile_column(i, half);
                let mut weight = 0.0f32;
                if sees(row, start + column, seq_keys, p.causal) {
                    weight = (tiles[own + column] - block_max).exp();
                }
                block_sum += weight;
                weights[(sub * 16 + lane / 2) * P_STRIDE + column] = weight as f16;
            }
            sum = sum * rescale + block_sum + subgroup_shuffle_xor(block_sum, 1u32);
            maximum = block_max;
            workgroup_barrier();
            // The weights times the values, 64 columns of the output at a time through the
            // tile, added to the lane's part of its row.
            let mut weight_frags: [FragA16<f16>; BLOCK / 16] = [coop_zero(); BLOCK / 16];
            #[unroll]
            for kk in 0..BLOCK / 16 {
                let at = sub * 16 * P_STRIDE + kk * 16;
                weight_frags[kk] = coop_load_row_major(&weights[at], P_STRIDE);
            }
            #[unroll]
            for chunk in 0..D / 64 {
                #[unroll]
                for n in 0..4 {
                    let mut acc: FragC16<f32> = coop_zero();
                    #[unroll]
                    for kk in 0..BLOCK / 16 {
                        let at = (BLOCK + kk * 16) * STRIDE + chunk * 64 + n * 16;
                        let values: FragB16<f16> = coop_load_row_major(&staged[at], STRIDE);
                        acc = coop_multiply_add(weight_frags[kk], values, acc);
                    }
                    coop_store_row_major(acc, &mut tiles[tile + n * 16], TILE_STRIDE);
                }
                workgroup_barrier();
                #[unroll]
                for i in 0..32 {
                    out[chunk * 32 + i] += tiles[own + tile_column(i, half)];
                }
                workgroup_barrier();
            }
        }
        if row < p.queries {
            let inverse = if sum > 0.0 { 1.0 / sum } else { 0.0 };
            let at = (head * p.queries + row) * p.head_dim;
            #[unroll]
            for chunk in 0..D / 64 {
                #[unroll]
                for i in 0..32 / E::LANES {
                    let column = chunk * 64 + tile_column(i * E::LANES, half);
                    let mut value = 0.0 as E::F32;
                    #[unroll]
                    for l in 0..E::LANES {
                        value[l] = out[chunk * 32 + i * E::LANES + l] * inverse;
                    }
                    if column < p.head_dim {
                        o[(at + column) / E::LANES] = value as E;
                    }
                }
            }
            if half == 0 {
                lse[head * p.queries + row] = if sum > 0.0 {
                    maximum + sum.ln()
                } else {
                    -f32::MAX
                };
            }
        }
    }

    /// `rows · bᵀ` for a subgroup's 16 rows (`D / 16` fragments of 16 columns) and the
    /// `BLOCK` rows `b` staged from row `from` of `staged`: the subgroup's tile's first
    /// `BLOCK` columns, 16 at a time (the staged rows read as column-major fragments).
    fn products_into_tile(
        rows: &[FragA16<f16>; D / 16],
        staged: &[f16; 2 * BLOCK * STRIDE],
        from: u32,
        tiles: &mut [f32; 4 * TILE],
        tile: u32,
    ) {
        #[unroll]
        for j in 0..BLOCK / 16 {
            let mut products: FragC16<f32> = coop_zero();
            #[unroll]
            for kk in 0..D / 16 {
                let at = (from + j * 16) * STRIDE + kk * 16;
                let columns: FragB16<f16> = coop_load_column_major(&staged[at], STRIDE);
                products = coop_multiply_add(rows[kk], columns, products);
            }
            coop_store_row_major(products, &mut tiles[tile + j * 16], TILE_STRIDE);
        }
    }

    /// Writes a subgroup's 16 rows of `D / 16` accumulator fragments, times `factor`, to the
    /// rows from `first` of a matrix of `rows` rows of `width` scalars (from `at`), through
    /// its tile 64 columns at a time: nothing past `rows` or `width`. Every invocation calls
    /// it (it holds barriers).
    fn store_row_fragments<E>(
        acc: &[FragC16<f32>; D / 16],
        tiles: &mut [f32; 4 * TILE],
        x: &mut [E],
        at: u32,
        first: u32,
        rows: u32,
        width: u32,
        factor: f32,
        t: u32,
    ) {
        let (sub, lane) = (t / 32, t % 32);
        let (row, half) = (first + sub * 16 + lane / 2, lane % 2);
        let own = sub * TILE + lane / 2 * TILE_STRIDE;
        #[unroll]
        for chunk in 0..D / 64 {
            #[unroll]
            for n in 0..4 {
                let tile = sub * TILE + n * 16;
                coop_store_row_major(acc[chunk * 4 + n], &mut tiles[tile], TILE_STRIDE);
            }
            workgroup_barrier();
            #[unroll]
            for i in 0..32 / E::LANES {
                let column = tile_column(i * E::LANES, half);
                let mut value = 0.0 as E::F32;
                #[unroll]
                for l in 0..E::LANES {
                    value[l] = tiles[own + column + l] * factor;
                }
                if row < rows && chunk * 64 + column < width {
                    x[(at + row * width + chunk * 64 + column) / E::LANES] = value as E;
                }
            }
            workgroup_barrier();
        }
    }

    /// The query gradient on the tensor cores, for `FRAG_ROWS` query rows of one head: the
    /// walk of `attention_forward_fragments` over the key blocks, each block's scores and
    /// `grad_o vᵀ` as fragments through the subgroup's tile, where two lanes a row turn them
    /// into `ds = p (grad_o · v - dot)` (`p` recomputed from the row's log-sum-exp), written
    /// back as f16 and multiplied by the keys into the gradient's fragments.
    #[kernel(workgroup = [FRAG_INVOCATIONS], constants = FragmentHeadDim,
             features(f16, cooperative_matrix, subgroups),
             limits(workgroup_memory = MEMORY),
             grid = [ceil_div(p.queries, FRAG_ROWS), p.batch_heads],
             types(E = [f32, f16, Vec4<f32>, Vec4<f16>]))]
    pub fn attention_grad_q_fragments<E>(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] q: &[E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] k: &[E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] v: &[E],
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] grad_o: &[E],
        #[len(p.batch_heads * p.queries)] stats: &[Vec2<f32>],
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] grad_q: &mut [E],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[workgroup] staged: &mut [f16; 2 * BLOCK * STRIDE],
        #[workgroup] tiles: &mut [f32; 4 * TILE],
        #[workgroup] weights: &mut [f16; 64 * P_STRIDE],
    ) {
        let (t, head, first) = (
            local_index(),
            workgroup_id().y,
            workgroup_id().x * FRAG_ROWS,
        );
        let (sub, lane) = (t / 32, t % 32);
        let (row, half) = (first + sub * 16 + lane / 2, lane % 2);
        let (tile, own) = (sub * TILE, sub * TILE + lane / 2 * TILE_STRIDE);
        let kv_at = head / p.group * p.keys * p.head_dim;
        let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
        // The subgroup's query rows (scaled) and output-gradient rows, as fragments.
        let q_at = head * p.queries * p.head_dim;
        let query = row_fragments(staged, q, q_at, first, p.queries, p.head_dim, p.scale, t);
        let grad_out = row_fragments(staged, grad_o, q_at, first, p.queries, p.head_dim, 1.0, t);
        let mut row_stats = vec2(0.0f32, 0.0);
        if row < p.queries {
            row_stats = stats[head * p.queries + row];
        }
        let mut acc: [FragC16<f32>; D / 16] = [coop_zero(); D / 16];
        let keys_end = keys_read_by(p.keys, first, FRAG_ROWS, p.queries, p.causal);
        let width = p.head_dim;
        let mut from_k = load_block(k, kv_at, 0, p.keys, width, 1.0, t);
        let mut from_v = load_block(v, kv_at, 0, p.keys, width, 1.0, t);
        for start in (0..keys_end).step_by(BLOCK) {
            store_block::<E>(staged, 0, &from_k, t);
            store_block::<E>(staged, BLOCK, &from_v, t);
            workgroup_barrier();
            // The next block's loads, in flight while this one is multiplied.
            if start + BLOCK < keys_end {
                from_k = load_block(k, kv_at, start + BLOCK, p.keys, width, 1.0, t);
                from_v = load_block(v, kv_at, start + BLOCK, p.keys, width, 1.0, t);
            }
            products_into_tile(&query, staged, 0, tiles, tile);
            workgroup_barrier();
            let mut probs = [0.0f32; BLOCK / 2];
            #[unroll]
            for i in 0..BLOCK / 2 {
                let column = tile_column(i, half);
                if sees(row, start + column, seq_keys, p.causal) {
                    probs[i] = (tiles[own + column] - row_stats.x).exp();
                }
            }
            workgroup_barrier();
            products_into_tile(&grad_out, staged, BLOCK, tiles, tile);
            workgroup_barrier();
            #[unroll]
            for i in 0..BLOCK / 2 {
                let column = tile_column(i, half);
                let ds = probs[i] * (tiles[own + column] - row_stats.y);
                weights[(sub * 16 + lane / 2) * P_STRIDE + column] = ds as f16;
            }
            workgroup_barrier();
            #[unroll]
            for kk in 0..BLOCK / 16 {
                let ds: FragA16<f16> =
                    coop_load_row_major(&weights[sub * 16 * P_STRIDE + kk * 16], P_STRIDE);
                #[unroll]
                for n in 0..D / 16 {
                    let keys: FragB16<f16> =
                        coop_load_row_major(&staged[kk * 16 * STRIDE + n * 16], STRIDE);
                    acc[n] = coop_multiply_add(ds, keys, acc[n]);
                }
            }
            workgroup_barrier();
        }
        store_row_fragments(
            &acc, tiles, grad_q, q_at, first, p.queries, p.head_dim, p.scale, t,
        );
    }

    /// The key and value gradients on the tensor cores, for `FRAG_ROWS` key rows of one key
    /// and value head: every query head sharing it, a block of `BLOCK` query rows at a time
    /// (causal: from the block of the first key on), each block's scores and `v grad_oᵀ`
    /// transposed (keys as rows) as fragments through the subgroup's tile, where two lanes a
    /// key turn them into the probabilities `pᵀ` and `dsᵀ = pᵀ (grad_o · v - dot)`, written
    /// back as f16 and multiplied by the output gradients (`grad_v += pᵀ grad_o`) and the
    /// scaled queries (`grad_k += dsᵀ q`). A block's log-sum-exps and dots sit in
    /// `block_stats`.
    #[kernel(workgroup = [FRAG_INVOCATIONS], constants = FragmentHeadDim,
             features(f16, cooperative_matrix, subgroups),
             limits(workgroup_memory = MEMORY + 8 * BLOCK),
             grid = [ceil_div(p.keys, FRAG_ROWS), p.batch_heads / p.group],
             types(E = [f32, f16, Vec4<f32>, Vec4<f16>]))]
    pub fn attention_grad_kv_fragments<E>(
        p: &AttentionParams,
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] q: &[E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] k: &[E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] v: &[E],
        #[len(p.batch_heads * p.queries * p.head_dim / E::LANES)] grad_o: &[E],
        #[len(p.batch_heads * p.queries)] stats: &[Vec2<f32>],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] grad_k: &mut [E],
        #[len(p.batch_heads / p.group * p.keys * p.head_dim / E::LANES)] grad_v: &mut [E],
        #[len(p.padded * (p.batch_heads / p.heads))] key_lengths: &[u32],
        #[workgroup] staged: &mut [f16; 2 * BLOCK * STRIDE],
        #[workgroup] tiles: &mut [f32; 4 * TILE],
        #[workgroup] weights: &mut [f16; 64 * P_STRIDE],
        #[workgroup] block_stats: &mut [Vec2<f32>; BLOCK],
    ) {
        let (t, kv_head, first) = (
            local_index(),
            workgroup_id().y,
            workgroup_id().x * FRAG_ROWS,
        );
        let (sub, lane) = (t / 32, t % 32);
        let (key, half) = (first + sub * 16 + lane / 2, lane % 2);
        let (tile, own) = (sub * TILE, sub * TILE + lane / 2 * TILE_STRIDE);
        let kv_at = kv_head * p.keys * p.head_dim;
        // The subgroup's key and value rows, as fragments.
        let keys = row_fragments(staged, k, kv_at, first, p.keys, p.head_dim, 1.0, t);
        let values = row_fragments(staged, v, kv_at, first, p.keys, p.head_dim, 1.0, t);
        let mut acc_k: [FragC16<f32>; D / 16] = [coop_zero(); D / 16];
        let mut acc_v: [FragC16<f32>; D / 16] = [coop_zero(); D / 16];
        // Every query head sharing the key head, a block of queries at a time (causal: from
        // the block of the first key on), as one walk of `steps` steps, so that each step's
        // loads are in flight while the last one is multiplied.
        let mut queries_from = 0u32;
        if p.causal == 1 {
            queries_from = (first / BLOCK * BLOCK).min(p.queries);
        }
        let blocks = (p.queries - queries_from + BLOCK - 1) / BLOCK;
        let steps = p.group * blocks;
        let width = p.head_dim;
        let mut from_q = load_block(
            q,
            kv_head * p.group * p.queries * width,
            queries_from,
            p.queries,
            width,
            p.scale,
            t,
        );
        let mut from_grad = load_block(
            grad_o,
            kv_head * p.group * p.queries * width,
            queries_from,
            p.queries,
            width,
            1.0,
            t,
        );
        let mut from_stats = vec2(0.0f32, 0.0);
        if t < BLOCK && queries_from + t < p.queries {
            from_stats = stats[kv_head * p.group * p.queries + queries_from + t];
        }
        for step in 0..steps {
            let head = kv_head * p.group + step / blocks;
            let start = queries_from + step % blocks * BLOCK;
            let seq_keys = sequence_keys(key_lengths, head, p.heads, p.keys, p.padded);
            store_block::<E>(staged, 0, &from_q, t);
            store_block::<E>(staged, BLOCK, &from_grad, t);
            if t < BLOCK {
                block_stats[t] = from_stats;
            }
            workgroup_barrier();
            if step + 1 < steps {
                let next_head = kv_head * p.group + (step + 1) / blocks;
                let next = queries_from + (step + 1) % blocks * BLOCK;
                let q_at = next_head * p.queries * width;
                from_q = load_block(q, q_at, next, p.queries, width, p.scale, t);
                from_grad = load_block(grad_o, q_at, next, p.queries, width, 1.0, t);
                from_stats = vec2(0.0f32, 0.0);
                if t < BLOCK && next + t < p.queries {
                    from_stats = stats[next_head * p.queries + next + t];
                }
            }
            // The scores transposed: keys as rows, the block's queries as columns.
            products_into_tile(&keys, staged, 0, tiles, tile);
            workgroup_barrier();
            let mut probs = [0.0f32; BLOCK / 2];
            #[unroll]
            for i in 0..BLOCK / 2 {
                let column = tile_column(i, half);
                if sees(start + column, key, seq_keys, p.causal) && start + column < p.queries {
                    probs[i] = (tiles[own + column] - block_stats[column].x).exp();
                }
                weights[(sub * 16 + lane / 2) * P_STRIDE + column] = probs[i] as f16;
            }
            workgroup_barrier();
            // `grad_v += pᵀ grad_o`, and `v grad_oᵀ` into the tile.
            #[unroll]
            for kk in 0..BLOCK / 16 {
                let weight: FragA16<f16> =
                    coop_load_row_major(&weights[sub * 16 * P_STRIDE + kk * 16], P_STRIDE);
                #[unroll]
                for n in 0..D / 16 {
                    let at = (BLOCK + kk * 16) * STRIDE + n * 16;
                    let rows: FragB16<f16> = coop_load_row_major(&staged[at], STRIDE);
                    acc_v[n] = coop_multiply_add(weight, rows, acc_v[n]);
                }
            }
            products_into_tile(&values, staged, BLOCK, tiles, tile);
            workgroup_barrier();
            #[unroll]
            for i in 0..BLOCK / 2 {
                let column = tile_column(i, half);
                let ds = probs[i] * (tiles[own + column] - block_stats[column].y);
                weights[(sub * 16 + lane / 2) * P_STRIDE + column] = ds as f16;
            }
            workgroup_barrier();
            // `grad_k += dsᵀ q`, the queries staged scaled.
            #[unroll]
            for kk in 0..BLOCK / 16 {
                let ds: FragA16<f16> =
                    coop_load_row_major(&weights[sub * 16 * P_STRIDE + kk * 16], P_STRIDE);
                #[unroll]
                for n in 0..D / 16 {
                    let at = kk * 16 * STRIDE + n * 16;
                    let rows: FragB16<f16> = coop_load_row_major(&staged[at], STRIDE);
                    acc_k[n] = coop_multiply_add(ds, rows, acc_k[n]);
                }
            }
            workgroup_barrier();
        }
        store_row_fragments(
            &acc_k, tiles, grad_k, kv_at, first, p.keys, p.head_dim, 1.0, t,
        );
        store_row_fragments(
            &acc_v, tiles, grad_v, kv_at, first, p.keys, p.head_dim, 1.0, t,
        );
    }
}
