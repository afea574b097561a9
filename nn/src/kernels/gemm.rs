//! The GEMM kernels: forward (f32 and tensor cores, whole or in slices) and backward (the
//! gradient before the activation, both operand gradients, the bias gradient).

#[tessera::device]
pub mod gemm {
    #[device]
    use crate::kernels::libraries::{activation, fragments, params, staging, wide};

    /// `gemm_forward` on the tensor cores, its sum over `k` cut into `p.splits` slices of
    /// `p.split_depth` (one per `z`) when the output alone cannot fill the GPU: then the
    /// first slice's products go to `pre`, the others' to `partial`, and
    /// `gemm_forward_fragments_reduce` adds them up with the bias and the activation. Where
    /// `k` and `n` are multiples of 4, the operands, the bias and the outputs may be bound as
    /// vectors of 4 (`T = Vec4<f32>`): the epilogue then stores whole vectors.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        types(T = [f32, Vec4<f32>]),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK), p.splits],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS)
    )]
    pub fn gemm_forward_fragments<T>(
        p: &GemmParams,
        #[len(p.m * p.k / T::LANES)] a: &[T],
        #[len(p.k * p.n / T::LANES)] b: &[T],
        #[len(p.n / T::LANES)] bias: &[T],
        #[len(p.m * p.n / T::LANES)] pre: &mut [T],
        #[len(p.m * p.n / T::LANES)] y: &mut [T],
        #[len((p.splits - 1) * p.m * p.n / T::LANES)] partial: &mut [T],
        #[workgroup] half_a: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_b: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let acc = mainloop_fragments(
            half_a,
            half_b,
            a,
            b,
            vec4(p.k, p.m, p.n, p.k),
            vec2(true, false),
            origin,
            slice(split, p.split_depth, p.k),
            t,
        );
        store_forward_slice(&acc, bias, pre, y, partial, p, split, spill, origin, t);
    }

    /// `gemm_forward_fragments` over vectors in the wide blocks of `WideTensorBlocking`, whole:
    /// the first step only stages, as there. The bias and the outputs are bound as vectors
    /// too, so the epilogue stores whole vectors (on an H100 the epilogue of 4096^3 took ~12%
    /// of the forward with scalar stores; vectors made the whole forward 2-7% faster).
    #[kernel(
        workgroup = [WIDE_GROUP],
        constants = WideTensorBlocking,
        grid = [ceil_div(p.n, COLS), ceil_div(p.m, BLOCK)],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = WIDE_GROUP)
    )]
    pub fn gemm_forward_fragments_wide(
        p: &GemmParams,
        #[len(p.m * p.k / 4)] a: &[Vec4<f32>],
        #[len(p.k * p.n / 4)] b: &[Vec4<f32>],
        #[len(p.n / 4)] bias: &[Vec4<f32>],
        #[len(p.m * p.n / 4)] pre: &mut [Vec4<f32>],
        #[len(p.m * p.n / 4)] y: &mut [Vec4<f32>],
        #[workgroup] half_a: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_b: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let t = local_index();
        let origin = vec2(workgroup_id().x * COLS, workgroup_id().y * BLOCK);
        let (shape_a, shape_b) = (vec2(p.k, p.m), vec2(p.n, p.k));
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        let from_a = wide_fetch_rows(a, shape_a, origin.y, 0, t);
        let from_b = wide_fetch_columns(b, shape_b, origin.x, 0, t);
        wide_stage(half_a, &from_a, half_b, &from_b, t);
        for k0 in (DEPTH..p.k).step_by(DEPTH) {
            let from_a = wide_fetch_rows(a, shape_a, origin.y, k0, t);
            let from_b = wide_fetch_columns(b, shape_b, origin.x, k0, t);
            multiply_fragments(half_a, half_b, false, &mut acc, t);
            wide_stage(half_a, &from_a, half_b, &from_b, t);
        }
        multiply_fragments(half_a, half_b, false, &mut acc, t);
        let dims = vec2(p.n, p.m);
        store_forward_fragments(&acc, bias, pre, y, p, spill, origin, t);
    }

    /// Adds the slices of a tensor-core GEMM forward in slices: `pre` (the first slice's
    /// products) + the other slices in `partial` + `bias`, `y = act(pre)`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.m * p.n, GROUP)])]
    pub fn gemm_forward_fragments_reduce(
        p: &GemmParams,
        #[len((p.splits - 1) * p.m * p.n)] partial: &[f32],
        #[len(p.n)] bias: &[f32],
        #[len(p.m * p.n)] pre: &mut [f32],
        #[len(p.m * p.n)] y: &mut [f32],
    ) {
        let i = global_id().x;
        let len = p.m * p.n;
        if i < len {
            let z = pre[i] + bias[i % p.n] + sum_slices(partial, p.splits - 1, len, i);
            if p.keep_pre != 0 {
                pre[i] = z;
            }
            y[i] = activate(z, p.activation);
        }
    }

    /// `pre = a · b + bias`, `y = act(pre)`. Where `k` and `n` are multiples of 4, the
    /// operands may be bound as vectors of 4 (`T = Vec4<f32>`; see `fetch`).
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        types(T = [f32, Vec4<f32>]),
        limits(workgroup_memory = 16896),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK)]
    )]
    pub fn gemm_forward<T>(
        p: &GemmParams,
        #[len(p.m * p.k / T::LANES)] a: &[T],
        #[len(p.k * p.n / T::LANES)] b: &[T],
        #[len(p.n)] bias: &[f32],
        #[len(p.m * p.n)] pre: &mut [f32],
        #[len(p.m * p.n)] y: &mut [f32],
        #[workgroup] tile_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let acc = mainloop(
            tile_a,
            tile_b,
            a,
            b,
            vec4(p.k, p.m, p.n, p.k),
            vec2(true, false),
            origin,
            vec2(0, p.k),
            t,
        );
        store_forward(&acc, bias, pre, y, p, origin, t);
    }

    /// `gemm_forward` for outputs too small to fill the GPU: the summed dimension is cut into
    /// `p.splits` slices of `p.split_depth`, computed by separate workgroups into `partial`,
    /// and `gemm_forward_reduce` adds them up with the bias and the activation.
    #[family(gemm_forward_partial, gemm_forward_reduce)]
    pub struct GemmForwardSplit {
        p: &GemmParams,
        #[len(p.m * p.k)]
        a: &[f32],
        #[len(p.k * p.n)]
        b: &[f32],
        #[len(p.n)]
        bias: &[f32],
        /// Scratch: one `m x n` partial product per slice.
        #[len(p.splits * p.m * p.n)]
        partial: &mut [f32],
        #[len(p.m * p.n)]
        pre: &mut [f32],
        #[len(p.m * p.n)]
        y: &mut [f32],
    }

    /// Slice `z` of `a · b` into `partial[z]`.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK), p.splits]
    )]
    pub fn gemm_forward_partial(
        p: &GemmParams,
        a: &[f32],
        b: &[f32],
        partial: &mut [f32],
        #[workgroup] tile_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let summed = slice(split, p.split_depth, p.k);
        let shapes = vec4(p.k, p.m, p.n, p.k);
        let acc = mainloop(
            tile_a,
            tile_b,
            a,
            b,
            shapes,
            vec2(true, false),
            origin,
            summed,
            t,
        );
        store_tile(partial, split * p.m * p.n, &acc, p.m, p.n, p.n, origin, t);
    }

    /// `pre` = the sum of the slices of `partial` + `bias`, `y = act(pre)`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.m * p.n, GROUP)])]
    pub fn gemm_forward_reduce(
        p: &GemmParams,
        partial: &[f32],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
    ) {
        let i = global_id().x;
        let len = p.m * p.n;
        if i < len {
            let z = bias[i % p.n] + sum_slices(partial, p.splits, len, i);
            if p.keep_pre != 0 {
                pre[i] = z;
            }
            y[i] = activate(z, p.activation);
        }
    }

    /// The backward pass of `gemm_forward` but the operand gradients' products: the gradient
    /// before the activation, the sum of the operand gradients' slices, and the gradient of
    /// `bias`. The host records the members one by one, the products (`d_operands`, or
    /// `d_operands_fragments`) after `grad_pre`: `d_operands_reduce` only where an operand
    /// gradient's sum ran in slices, `d_bias` twice where the bias gradient's did (its
    /// slices' sums, then their sum).
    #[family(grad_pre, d_operands_reduce, d_bias)]
    pub struct GemmBackward {
        p: &GemmParams,
        /// The forward's `pre`.
        #[len(p.m * p.n)]
        pre: &[f32],
        #[len(p.m * p.n)]
        grad_y: &[f32],
        /// The gradient before the activation (scratch the caller may reuse).
        #[len(p.m * p.n)]
        grad_pre: &mut [f32],
        #[len(p.m * p.k)]
        grad_a: &mut [f32],
        #[len(p.k * p.n)]
        grad_b: &mut [f32],
        /// Scratch: one gradient-shaped partial sum per slice after each operand's first.
        #[len((p.splits - 1) * p.m * p.k + (p.b_splits - 1) * p.k * p.n)]
        partial: &mut [f32],
        /// With the bias gradient's sum in slices: one row of `n` sums per slice.
        #[len(p.bias_splits * p.n)]
        grad_bias: &mut [f32],
    }

    /// `grad_pre = grad_y * act'(pre)`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.m * p.n, GROUP)])]
    pub fn grad_pre(p: &GemmParams, pre: &[f32], grad_y: &[f32], grad_pre: &mut [f32]) {
        let i = global_id().x;
        if i < p.m * p.n {
            grad_pre[i] = grad_y[i] * activate_grad(pre[i], p.activation);
        }
    }

    /// Which of an operand gradient's workgroups `x` is: the slice of its sum (`x` of its
    /// first slice's blocks are followed by the next slice's), and the origin of its block
    /// in an output `cols` wide made of `blocks` blocks.
    fn gradient_block(x: u32, blocks: u32, cols: u32) -> Vec3<u32> {
        let (split, block) = (x / blocks, x % blocks);
        let across = ceil_div(cols, BLOCK);
        vec3(split, block % across * BLOCK, block / across * BLOCK)
    }

    /// Stores an operand gradient's register tile from the slice `split` of its sum: the
    /// first slice's into the gradient `grad` (`rows x cols`), the others' into `partial`,
    /// one gradient-shaped partial sum per slice from `base` on (see `d_operands_reduce`).
    fn store_gradient_slice(
        grad: &mut [f32],
        partial: &mut [f32],
        base: u32,
        split: u32,
        acc: &[f32; REG * REG],
        rows: u32,
        cols: u32,
        origin: Vec2<u32>,
        t: u32,
    ) {
        if split == 0 {
            store_tile(grad, 0, acc, rows, cols, cols, origin, t);
        } else {
            let offset = base + (split - 1) * rows * cols;
            store_tile(partial, offset, acc, rows, cols, cols, origin, t);
        }
    }

    /// Both operand gradients in one dispatch, each sum cut into slices when its output alone
    /// cannot fill the GPU: the first `ceil(k / BLOCK) x ceil(m / BLOCK) x p.splits`
    /// workgroups compute `grad_a = grad_pre · bᵀ` (rows `m`, columns `k`, summed over `n` in
    /// slices of `p.split_depth`; both operands read along `n`, their contiguous dimension),
    /// the rest `grad_b = aᵀ · grad_pre` (rows `k`, columns `n`, summed over `m` in slices of
    /// `p.b_split_depth`; both read along their rows). Each gradient's first slice writes
    /// the gradient, the others go to `partial` (`grad_a`'s first), which
    /// `d_operands_reduce` adds to the gradients. Where `k` and `n` are multiples of 4, the
    /// operands may be bound as vectors of 4 (`T = Vec4<f32>`; see `fetch`). Recorded between
    /// the members of `GemmBackward` that compute `grad_pre` and `grad_bias`.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        types(T = [f32, Vec4<f32>]),
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.k, BLOCK) * ceil_div(p.m, BLOCK) * p.splits
                + ceil_div(p.n, BLOCK) * ceil_div(p.k, BLOCK) * p.b_splits
        ]
    )]
    pub fn d_operands<T>(
        p: &GemmParams,
        #[len(p.m * p.k / T::LANES)] a: &[T],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n / T::LANES)] b: &[T],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.m * p.n / T::LANES)] grad_pre: &[T],
        #[len((p.splits - 1) * p.m * p.k + (p.b_splits - 1) * p.k * p.n)] partial: &mut [f32],
        #[workgroup] tile_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, group) = (local_index(), workgroup_id().x);
        let blocks_a = ceil_div(p.k, BLOCK) * ceil_div(p.m, BLOCK);
        // Every condition is the same for the whole workgroup, so the branches keep barriers.
        if group < blocks_a * p.splits {
            let at = gradient_block(group, blocks_a, p.k);
            let acc = mainloop(
                tile_a,
                tile_b,
                grad_pre,
                b,
                vec4(p.n, p.m, p.n, p.k),
                vec2(true, true),
                at.yz,
                slice(at.x, p.split_depth, p.n),
                t,
            );
            store_gradient_slice(grad_a, partial, 0, at.x, &acc, p.m, p.k, at.yz, t);
        } else {
            let x = group - blocks_a * p.splits;
            let at = gradient_block(x, ceil_div(p.n, BLOCK) * ceil_div(p.k, BLOCK), p.n);
            let acc = mainloop(
                tile_a,
                tile_b,
                a,
                grad_pre,
                vec4(p.k, p.m, p.n, p.m),
                vec2(false, false),
                at.yz,
                slice(at.x, p.b_split_depth, p.m),
                t,
            );
            let base = (p.splits - 1) * p.m * p.k;
            store_gradient_slice(grad_b, partial, base, at.x, &acc, p.k, p.n, at.yz, t);
        }
    }

    /// `d_operands` on the tensor cores, each sum cut into `p.splits` or `p.b_splits` slices
    /// the same way (recorded between the members of `GemmBackward` that compute `grad_pre`
    /// and `grad_bias`).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.k, BLOCK) * ceil_div(p.m, BLOCK) * p.splits
                + ceil_div(p.n, BLOCK) * ceil_div(p.k, BLOCK) * p.b_splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS)
    )]
    pub fn d_operands_fragments(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.m * p.n)] grad_pre: &[f32],
        #[len((p.splits - 1) * p.m * p.k + (p.b_splits - 1) * p.k * p.n)] partial: &mut [f32],
        #[workgroup] half_a: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_b: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let t = local_index();
        let blocks_a = ceil_div(p.k, BLOCK) * ceil_div(p.m, BLOCK);
        // Every condition is the same for the whole workgroup, so the branches keep barriers.
        if workgroup_id().x < blocks_a * p.splits {
            let at = gradient_block(workgroup_id().x, blocks_a, p.k);
            let acc = mainloop_fragments(
                half_a,
                half_b,
                grad_pre,
                b,
                vec4(p.n, p.m, p.n, p.k),
                vec2(true, true),
                at.yz,
                slice(at.x, p.split_depth, p.n),
                t,
            );
            let (rows, cols, layout) = (p.m, p.k, matrix_layout(p.k));
            store_slice_fragments(
                grad_a, partial, 0, at.x, &acc, rows, cols, layout, at.yz, spill, t,
            );
        } else {
            let x = workgroup_id().x - blocks_a * p.splits;
            let at = gradient_block(x, ceil_div(p.n, BLOCK) * ceil_div(p.k, BLOCK), p.n);
            let acc = mainloop_fragments(
                half_a,
                half_b,
                a,
                grad_pre,
                vec4(p.k, p.m, p.n, p.m),
                vec2(false, false),
                at.yz,
                slice(at.x, p.b_split_depth, p.m),
                t,
            );
            let base = (p.splits - 1) * p.m * p.k;
            let (rows, cols, layout) = (p.k, p.n, matrix_layout(p.n));
            store_slice_fragments(
                grad_b, partial, base, at.x, &acc, rows, cols, layout, at.yz, spill, t,
            );
        }
    }

    /// Adds the slices after the first of each operand gradient cut into more than one
    /// (`d_operands`, `d_operands_fragments`) to the gradient.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.m * p.k + p.k * p.n, GROUP)]
    )]
    pub fn d_operands_reduce(
        p: &GemmParams,
        partial: &[f32],
        grad_a: &mut [f32],
        grad_b: &mut [f32],
    ) {
        let i = global_id().x;
        let (len_a, len_b) = (p.m * p.k, p.k * p.n);
        if i < len_a {
            if p.splits > 1 {
                grad_a[i] = grad_a[i] + sum_slices(partial, p.splits - 1, len_a, i);
            }
        } else if i < len_a + len_b && p.b_splits > 1 {
            let j = i - len_a;
            let base = (p.splits - 1) * len_a;
            grad_b[j] = grad_b[j] + sum_slices_from(partial, base, p.b_splits - 1, len_b, j);
        }
    }

    /// `grad_bias` = the column sums of `grad_pre`: a workgroup per `NARROW` columns and
    /// slice of the rows (`p.bias_splits` slices of `p.bias_split_rows`, one per `y`), whose
    /// `GROUP / NARROW` lanes each sum every lane-th row, `SUMS` rows at a time into as many
    /// independent sums (so that each invocation has several loads in flight instead of
    /// waiting for every one), then add up through workgroup memory. Slice `y`'s sums go to
    /// row `y` of `grad_bias`: with several slices that is scratch, which a second `d_bias`
    /// over its `bias_splits` rows adds up.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.n, NARROW), p.bias_splits])]
    pub fn d_bias(
        p: &GemmParams,
        grad_pre: &[f32],
        grad_bias: &mut [f32],
        #[workgroup] lane_sums: &mut [f32; GROUP],
    ) {
        let t = local_index();
        let (col, lane, lanes) = (
            workgroup_id().x * NARROW + t % NARROW,
            t / NARROW,
            GROUP / NARROW,
        );
        let rows = slice(workgroup_id().y, p.bias_split_rows, p.m);
        let mut sums = [0.0f32; SUMS];
        if col < p.n {
            for first in (rows.x + lane..rows.y).step_by(SUMS * lanes) {
                #[unroll]
                for u in 0..SUMS {
                    let row = first + u * lanes;
                    if row < rows.y {
                        sums[u] += grad_pre[row * p.n + col];
                    }
                }
            }
        }
        lane_sums[t] = total(&sums);
        workgroup_barrier();
        if t < NARROW && col < p.n {
            let mut sum = 0.0;
            for l in 0..lanes {
                sum += lane_sums[l * NARROW + t];
            }
            grad_bias[workgroup_id().y * p.n + col] = sum;
        }
    }

    /// The GEMM forward's output from the register tile of the block at `origin`: `y =
    /// act(pre)` for `pre = acc + bias`, and `pre` itself where `p.keep_pre`.
    fn store_forward(
        acc: &[f32; REG * REG],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        p: &GemmParams,
        origin: Vec2<u32>,
        t: u32,
    ) {
        let dims = vec2(p.n, p.m);
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for e in 0..OUTPUTS {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < dims.y && col < dims.x {
                z[e] = acc[e] + bias[col];
                if p.keep_pre != 0 {
                    pre[row * dims.x + col] = z[e];
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for e in 0..OUTPUTS {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < dims.y && col < dims.x {
                y[row * dims.x + col] = z[e];
            }
        }
    }

    /// `store_forward` from accumulator fragments, through `spill`. The bias and the outputs
    /// may be bound as vectors of 4 where the outputs' rows are a multiple of 4 long (a
    /// vector then lies wholly inside the output or wholly outside).
    fn store_forward_fragments<E>(
        acc: &[FragC16<f32>; FRAGS],
        bias: &[E],
        pre: &mut [E],
        y: &mut [E],
        p: &GemmParams,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let dims = vec2(p.n, p.m);
        // Run `k` of fragment `f` (see `fragment_at`) is `z[8 f + E::LANES k..][..E::LANES]`.
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<E>(acc[f], spill, t);
            #[unroll]
            for k in 0..8 / E::LANES {
                let at = origin + fragment_at::<E>(t, f, k);
                if at.y < dims.y && at.x < dims.x {
                    let sum = values[k] + bias[at.x / E::LANES];
                    if p.keep_pre != 0 {
                        pre[(at.y * dims.x + at.x) / E::LANES] = sum;
                    }
                    #[unroll]
                    for c in 0..E::LANES {
                        z[8 * f + E::LANES * k + c] = sum[c];
                    }
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for f in 0..FRAGS {
            #[unroll]
            for k in 0..8 / E::LANES {
                let at = origin + fragment_at::<E>(t, f, k);
                if at.y < dims.y && at.x < dims.x {
                    let mut out = 0.0 as E;
                    #[unroll]
                    for c in 0..E::LANES {
                        out[c] = z[8 * f + E::LANES * k + c];
                    }
                    y[(at.y * dims.x + at.x) / E::LANES] = out;
                }
            }
        }
    }

    /// The epilogue of slice `split` of a tensor-core GEMM forward whose sum runs in
    /// `p.splits` slices: whole, as `store_forward_fragments`; in slices, the first slice's
    /// products into `pre` (scratch, then, where `p.keep_pre` is 0) and the others' into
    /// `partial`, one output-shaped partial sum each, for `gemm_forward_fragments_reduce`.
    fn store_forward_slice<E>(
        acc: &[FragC16<f32>; FRAGS],
        bias: &[E],
        pre: &mut [E],
        y: &mut [E],
        partial: &mut [E],
        p: &GemmParams,
        split: u32,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let dims = vec2(p.n, p.m);
        if p.splits == 1 {
            store_forward_fragments(acc, bias, pre, y, p, spill, origin, t);
        } else {
            let (rows, cols) = (dims.y, dims.x);
            let layout = matrix_layout(cols);
            store_slice_fragments(
                pre, partial, 0, split, acc, rows, cols, layout, origin, spill, t,
            );
        }
    }
}
