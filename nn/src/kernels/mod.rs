//! Every kernel of [`crate`], in one kernels module (`nn`, below), and the parts its kernels
//! share as device libraries in files of their own, imported with `#[device] use`: the shared
//! constants and `Params` structs (`params`), the activations and their derivatives
//! (`activation`), the f32 GEMM blocking with its staging and mainloop (`staging`), and the
//! tensor-core blocking with its staging, mainloop and epilogues (`fragments`).
//!
//! The GEMM-shaped kernels (GEMM forward and its two operand gradients, convolution forward and
//! its input and filter gradients) share one blocking: a workgroup of 16 x 16 invocations owns
//! a 128 x 128 block of the output, stages 8-deep slices of both operands in workgroup memory
//! (two of each, taken in turn: see `Blocking`), and each invocation accumulates an 8 x 8
//! register tile: two runs of 4 adjacent rows, 64 apart, by two runs of 4 adjacent columns, so
//! that each step reads its operands from workgroup memory as 4-wide vectors. Only what each
//! kernel stages, and where it stores, differs. The GEMMs also read their operands from memory
//! as 4-wide vectors where their rows are a multiple of 4 long (`mainloop` over vectors, bound
//! through `GpuBuffer::view_as`).
//!
//! # Bounds
//!
//! The GEMM-shaped kernels are built without naga's bounds checks
//! (`with_constants_unchecked`), which cost them about a seventh of their time. That is sound
//! because every index they make is guarded: each read or write of a buffer sits behind a
//! comparison of its coordinates with the shape in the kernel's parameters, and the launchers
//! check every buffer's length against that shape (`#[len]`, on the kernel or its family);
//! workgroup slices and register tiles are indexed by constants, local invocation ids and the
//! step's buffer (`buffer`) within their sizes. A new kernel built that way must keep to the
//! same rule. One exception: the tensor-core passes by taps test each step's tap against the
//! image, not each load's channel. The host runs `conv_forward_fragments_by_tap`,
//! `conv_grad_input_fragments_by_tap` and their split partials only when the summed channels
//! are a multiple of the blocking's `DEPTH`, so that every step's channels lie inside, and
//! `conv_grad_weight_fragments_by_tap` only when the input channels are a multiple of its
//! `BLOCK`, so that every block's columns lie inside one tap. The passes over a staged window
//! (`conv_forward_window`, `conv_grad_input_window`) likewise test each staged position, not
//! each load's channel, and read their window up to the filter's reach past their block: the
//! host runs them only for summed channels a multiple of `DEPTH`, a reach of at most
//! `WINDOW - COLS` and, staging every tap at once, a filter of at most `SLICES` taps
//! (`conv::plan::over_window`).

mod activation;
mod fragments;
mod params;
mod staging;

/// The shared constants the host code names (`kernels::GROUP`, ..).
pub(crate) use params::params::{FEW, GROUP, NARROW, SUMS};

#[tessera::kernels]
mod nn {
    #[device]
    use super::activation::activation;
    #[device]
    use super::fragments::fragments;
    #[device]
    use super::params::params;
    #[device]
    use super::staging::staging;

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

    /// Invocations of a workgroup of `WideTensorBlocking`.
    pub const WIDE_GROUP: u32 = 512;

    /// The output columns of a `WideTensorBlocking` block.
    pub const WIDE_COLS: u32 = 128;

    /// The tensor-core GEMM forward's blocking for large outputs: 256 x 128 blocks (`BLOCK`
    /// rows, `COLS` columns) of `WIDE_GROUP` invocations, sixteen subgroups in four rows of
    /// four, each with the same 4 x 2 fragments as `TensorBlocking`'s large blocks (so
    /// `multiply_fragments` serves both), staging 32-deep slices in the same layouts (`LOADS`
    /// and `B_LOADS` elements of the rows' and the columns' operand per invocation), 44.5 KiB
    /// a workgroup. A block reads 3/4 of the operand bytes per product that a 128 x 128 block
    /// does: on an H100 the forward ran 13-26% faster in them (4096^3: 168 -> 191 TFLOP/s),
    /// which suggests the 128 x 128 blocks were bound by L2 bandwidth (notes/performance.md).
    #[constants(
        DEPTH = [32],
        BLOCK = [256],
        COLS = WIDE_COLS,
        STRIDE = COLS + 8,
        A_STRIDE = DEPTH + 8,
        LOADS = DEPTH * BLOCK / WIDE_GROUP,
        B_LOADS = DEPTH * COLS / WIDE_GROUP,
        WARP_ROWS = 64,
        WARP_COLS = 32,
        FRAG_ROWS = WARP_ROWS / 16,
        FRAG_COLS = WARP_COLS / 16,
        FRAGS = FRAG_ROWS * FRAG_COLS,
        SPILL = WIDE_GROUP * 8,
        COLUMNS = DEPTH * STRIDE,
        MEMORY = 2 * (BLOCK * A_STRIDE + COLUMNS) + 4 * SPILL,
        OUTPUTS = 8 * FRAGS
    )]
    pub struct WideTensorBlocking;

    // The wide blocks' own fetch and staging: `staged_at` and `fetch` assume
    // square blocks of `GROUP` invocations. (The read-back, `unspill`, serves both.)

    /// `staged_at` of vectors for a wide block: the rows' operand `across`, the columns' along.
    fn wide_vector_at(across: bool, t: u32, v: u32) -> Vec2<u32> {
        if across {
            vec2(
                t % (DEPTH / 4) * 4,
                t / (DEPTH / 4) + v * (4 * WIDE_GROUP / DEPTH),
            )
        } else {
            vec2(
                t / (COLS / 4) + v * (4 * WIDE_GROUP / COLS),
                t % (COLS / 4) * 4,
            )
        }
    }

    /// `fetch` of vectors of the rows' operand `m` of `shape` (summed columns, rows), staged
    /// across: rows `first..`, summed columns `k0..`.
    fn wide_fetch_rows(
        m: &[Vec4<f32>],
        shape: Vec2<u32>,
        first: u32,
        k0: u32,
        t: u32,
    ) -> [Vec4<f32>; LOADS / 4] {
        let mut fetched = [vec4(0.0f32, 0.0, 0.0, 0.0); LOADS / 4];
        #[unroll]
        for v in 0..LOADS / 4 {
            let at = wide_vector_at(true, t, v);
            let (row, col) = (first + at.y, k0 + at.x);
            if row < shape.y && col < shape.x {
                fetched[v] = m[(row * shape.x + col) / 4];
            }
        }
        fetched
    }

    /// `fetch` of vectors of the columns' operand `m` of `shape` (columns, summed rows), staged
    /// along: summed rows `k0..`, columns `first..`.
    fn wide_fetch_columns(
        m: &[Vec4<f32>],
        shape: Vec2<u32>,
        first: u32,
        k0: u32,
        t: u32,
    ) -> [Vec4<f32>; B_LOADS / 4] {
        let mut fetched = [vec4(0.0f32, 0.0, 0.0, 0.0); B_LOADS / 4];
        #[unroll]
        for v in 0..B_LOADS / 4 {
            let at = wide_vector_at(false, t, v);
            let (row, col) = (k0 + at.x, first + at.y);
            if row < shape.y && col < shape.x {
                fetched[v] = m[(row * shape.x + col) / 4];
            }
        }
        fetched
    }

    /// `stage_in_halves` for a wide block's fetches.
    fn wide_stage(
        slice_a: &mut [f16; BLOCK * A_STRIDE],
        from_a: &[Vec4<f32>; LOADS / 4],
        slice_b: &mut [f16; COLUMNS],
        from_b: &[Vec4<f32>; B_LOADS / 4],
        t: u32,
    ) {
        #[unroll]
        for v in 0..LOADS / 4 {
            let at = wide_vector_at(true, t, v);
            #[unroll]
            for c in 0..4u32 {
                slice_a[at.y * A_STRIDE + at.x + c] = from_a[v][c] as f16;
            }
            if v < B_LOADS / 4 {
                let at = wide_vector_at(false, t, v);
                #[unroll]
                for c in 0..4u32 {
                    slice_b[at.x * STRIDE + at.y + c] = from_b[v][c] as f16;
                }
            }
        }
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

    /// The backward pass of `gemm_forward`: the gradient before the activation, then the
    /// gradients of `a`, `b` and `bias` from it. The host records the members one by one:
    /// `d_operands_reduce` only where an operand gradient's sum ran in slices, `d_bias` twice
    /// where the bias gradient's did (its slices' sums, then their sum).
    #[family(grad_pre, d_operands, d_operands_reduce, d_bias)]
    pub struct GemmBackward {
        p: &GemmParams,
        #[len(p.m * p.k)]
        a: &[f32],
        #[len(p.k * p.n)]
        b: &[f32],
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

    /// What workgroup `group` of `d_operands` computes: a block of one slice of `grad_a`'s
    /// sum or of `grad_b`'s (see there), from operands of scalars or of vectors of 4.
    fn operand_gradients<E>(
        p: &GemmParams,
        a: &[E],
        grad_a: &mut [f32],
        b: &[E],
        grad_b: &mut [f32],
        grad_pre: &[E],
        partial: &mut [f32],
        tile_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        tile_b: &mut [Vec4<f32>; BUFFERS * SLICE],
        group: u32,
        t: u32,
    ) {
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

    /// Both operand gradients in one dispatch, each sum cut into slices when its output alone
    /// cannot fill the GPU: the first `ceil(k / BLOCK) x ceil(m / BLOCK) x p.splits`
    /// workgroups compute `grad_a = grad_pre · bᵀ` (rows `m`, columns `k`, summed over `n` in
    /// slices of `p.split_depth`; both operands read along `n`, their contiguous dimension),
    /// the rest `grad_b = aᵀ · grad_pre` (rows `k`, columns `n`, summed over `m` in slices of
    /// `p.b_split_depth`; both read along their rows). Each gradient's first slice writes
    /// the gradient, the others go to `partial` (`grad_a`'s first), which
    /// `d_operands_reduce` adds to the gradients.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.k, BLOCK) * ceil_div(p.m, BLOCK) * p.splits
                + ceil_div(p.n, BLOCK) * ceil_div(p.k, BLOCK) * p.b_splits
        ]
    )]
    pub fn d_operands(
        p: &GemmParams,
        a: &[f32],
        grad_a: &mut [f32],
        b: &[f32],
        grad_b: &mut [f32],
        grad_pre: &[f32],
        partial: &mut [f32],
        #[workgroup] tile_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, group) = (local_index(), workgroup_id().x);
        operand_gradients(
            p, a, grad_a, b, grad_b, grad_pre, partial, tile_a, tile_b, group, t,
        );
    }

    /// `d_operands` for `k` and `n` multiples of 4, the operands bound as vectors (recorded
    /// between the members of `GemmBackward` that compute `grad_pre` and `grad_bias`).
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.k, BLOCK) * ceil_div(p.m, BLOCK) * p.splits
                + ceil_div(p.n, BLOCK) * ceil_div(p.k, BLOCK) * p.b_splits
        ]
    )]
    pub fn d_operands_vectors(
        p: &GemmParams,
        #[len(p.m * p.k / 4)] a: &[Vec4<f32>],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n / 4)] b: &[Vec4<f32>],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.m * p.n / 4)] grad_pre: &[Vec4<f32>],
        #[len((p.splits - 1) * p.m * p.k + (p.b_splits - 1) * p.k * p.n)] partial: &mut [f32],
        #[workgroup] tile_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, group) = (local_index(), workgroup_id().x);
        operand_gradients(
            p, a, grad_a, b, grad_b, grad_pre, partial, tile_a, tile_b, group, t,
        );
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
            if at.x == 0 {
                store_fragments(
                    grad_a,
                    0,
                    &acc,
                    p.m,
                    p.k,
                    matrix_layout(p.k),
                    at.yz,
                    spill,
                    t,
                );
            } else {
                let offset = (at.x - 1) * p.m * p.k;
                store_fragments(
                    partial,
                    offset,
                    &acc,
                    p.m,
                    p.k,
                    matrix_layout(p.k),
                    at.yz,
                    spill,
                    t,
                );
            }
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
            if at.x == 0 {
                store_fragments(
                    grad_b,
                    0,
                    &acc,
                    p.k,
                    p.n,
                    matrix_layout(p.n),
                    at.yz,
                    spill,
                    t,
                );
            } else {
                let offset = (p.splits - 1) * p.m * p.k + (at.x - 1) * p.k * p.n;
                store_fragments(
                    partial,
                    offset,
                    &acc,
                    p.k,
                    p.n,
                    matrix_layout(p.n),
                    at.yz,
                    spill,
                    t,
                );
            }
        }
    }

    /// Adds the slices after the first of each operand gradient cut into more than one
    /// (`d_operands`, `d_operands_vectors`, `d_operands_fragments`) to the gradient.
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

    // A convolution as an implicit GEMM: rows are output channels, columns are (image,
    // output pixel), the sum runs over (input channel, kernel tap). The gathers are helpers
    // (`conv_forward_gather`; the input and filter gradients' below) that the f32 tiles and
    // the tensor-core tiles share; `conv_forward_tile` alone writes its gather out (see
    // there).

    /// The column invocation `t` stages from `x` for the block at `origin`, the same at every
    /// step: (column, offset of its image, top and left of its window).
    fn conv_forward_column(p: &ConvParams, origin: Vec2<u32>, t: u32) -> Vec4<u32> {
        let pixels = p.out_h * p.out_w;
        let staged = origin.x + t % COLS;
        vec4(
            staged,
            (staged / pixels) * p.in_channels * p.in_h * p.in_w,
            (staged % pixels) / p.out_w * p.stride_h,
            (staged % pixels) % p.out_w * p.stride_w,
        )
    }

    /// Each load's (channel, tap row, tap column) at `start` of the summed dimension, over
    /// `taps` (rows, columns) of taps.
    fn conv_taps(taps: Vec2<u32>, start: u32, t: u32) -> [Vec3<u32>; LOADS] {
        let mut at = [vec3(0u32, 0, 0); LOADS];
        #[unroll]
        for r in 0..LOADS {
            at[r] = digits(start + along_depth(t, r), taps.x, taps.y);
        }
        at
    }

    /// What invocation `t` stages from `x` at step `k0`, its loads at taps `at`, which it
    /// advances by `by` (`digits(DEPTH, ..)`) to the next step.
    fn conv_forward_gather(
        x: &[f32],
        p: &ConvParams,
        column: Vec4<u32>,
        by: Vec3<u32>,
        at: &mut [Vec3<u32>; LOADS],
        k0: u32,
        t: u32,
    ) -> [f32; LOADS] {
        let depth = p.in_channels * p.kernel_h * p.kernel_w;
        let columns = p.batch * p.out_h * p.out_w;
        let mut from_x = [0.0f32; LOADS];
        #[unroll]
        for r in 0..LOADS {
            let k = k0 + along_depth(t, r);
            // Rows and columns above or left of the image wrap around and fail `< in_h`.
            let ih = (column.z + at[r].y * p.dilation_h).wrapping_sub(p.pad_top);
            let iw = (column.w + at[r].z * p.dilation_w).wrapping_sub(p.pad_left);
            if column.x < columns && k < depth && ih < p.in_h && iw < p.in_w {
                from_x[r] = x[column.y + (at[r].x * p.in_h + ih) * p.in_w + iw];
            }
            at[r] = advance(at[r], by, p.kernel_h, p.kernel_w);
        }
        from_x
    }

    /// The register tile of a convolution for the output block at `origin`, summed from
    /// `summed.x` to `summed.y` (all of it, or a slice that starts at a multiple of `DEPTH`
    /// and ends at one or at the sum's end).
    fn conv_forward_tile(
        tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        tile_x: &mut [Vec4<f32>; BUFFERS * SLICE],
        x: &[f32],
        w: &[f32],
        p: &ConvParams,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [f32; REG * REG] {
        // The gather of `conv_forward_gather`, written out here: through the helper, the
        // 3x3 forward of the large blocking ran 7-18% slower on an H100 (2026-11-23, two
        // processes each; see notes/performance.md), while the fragment tile is not measurably
        // affected.
        let (taps, pixels) = (p.kernel_h * p.kernel_w, p.out_h * p.out_w);
        let (depth, columns) = (p.in_channels * taps, p.batch * pixels);

        // The column this invocation stages from `x` is the same at every step.
        let staged = origin.x + t % BLOCK;
        let image = (staged / pixels) * p.in_channels * p.in_h * p.in_w;
        let top = (staged % pixels) / p.out_w * p.stride_h;
        let left = (staged % pixels) % p.out_w * p.stride_w;

        // Each load's (input channel, tap row, tap column), advanced `DEPTH` a step.
        let by = digits(DEPTH, p.kernel_h, p.kernel_w);
        let mut at = conv_taps(vec2(p.kernel_h, p.kernel_w), summed.x, t);

        let mut acc = [0.0f32; REG * REG];
        for k0 in (summed.x..summed.y).step_by(DEPTH) {
            let from_w = fetch(w, vec2(depth, p.out_channels), true, origin.y, k0, t);
            let mut from_x = [0.0f32; LOADS];
            #[unroll]
            for r in 0..LOADS {
                let k = k0 + along_depth(t, r);
                // Rows and columns above or left of the image wrap around and fail `< in_h`.
                let ih = (top + at[r].y * p.dilation_h).wrapping_sub(p.pad_top);
                let iw = (left + at[r].z * p.dilation_w).wrapping_sub(p.pad_left);
                if staged < columns && k < depth && ih < p.in_h && iw < p.in_w {
                    from_x[r] = x[image + (at[r].x * p.in_h + ih) * p.in_w + iw];
                }
                at[r] = advance(at[r], by, p.kernel_h, p.kernel_w);
            }
            step(tile_w, &from_w, tile_x, &from_x, false, &mut acc, k0, t);
        }
        acc
    }

    /// `conv_forward_tile` on the tensor cores, summed over the same `summed`.
    fn conv_forward_fragments_tile(
        half_w: &mut [f16; BLOCK * A_STRIDE],
        half_x: &mut [f16; COLUMNS],
        x: &[f32],
        w: &[f32],
        p: &ConvParams,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [FragC16<f32>; FRAGS] {
        let depth = p.in_channels * p.kernel_h * p.kernel_w;
        let column = conv_forward_column(p, origin, t);
        let by = digits(DEPTH, p.kernel_h, p.kernel_w);
        let mut at = conv_taps(vec2(p.kernel_h, p.kernel_w), summed.x, t);
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        let from_w = fetch(w, vec2(depth, p.out_channels), true, origin.y, summed.x, t);
        let from_x = conv_forward_gather(x, p, column, by, &mut at, summed.x, t);
        stage_fragments(half_w, &from_w, half_x, &from_x, false, t);
        for k0 in (summed.x + DEPTH..summed.y).step_by(DEPTH) {
            let from_w = fetch(w, vec2(depth, p.out_channels), true, origin.y, k0, t);
            let from_x = conv_forward_gather(x, p, column, by, &mut at, k0, t);
            multiply_fragments(half_w, half_x, false, &mut acc, t);
            stage_fragments(half_w, &from_w, half_x, &from_x, false, t);
        }
        multiply_fragments(half_w, half_x, false, &mut acc, t);
        acc
    }

    /// The tensor-core forward's epilogue: `pre` = the accumulators of the block at `origin`
    /// + `bias`, `y = act(pre)`, both NCHW.
    fn store_conv_forward_fragments(
        acc: &[FragC16<f32>; FRAGS],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        p: &ConvParams,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let pixels = p.out_h * p.out_w;
        let columns = p.batch * pixels;
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<f32>(acc[f], spill, t);
            #[unroll]
            for e in 0..8 {
                let at = origin + fragment_at::<f32>(t, f, e);
                if at.y < p.out_channels && at.x < columns {
                    z[8 * f + e] = values[e] + bias[at.y];
                    if p.keep_pre != 0 {
                        let i = (at.x / pixels * p.out_channels + at.y) * pixels + at.x % pixels;
                        pre[i] = z[8 * f + e];
                    }
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for f in 0..FRAGS {
            #[unroll]
            for e in 0..8 {
                let at = origin + fragment_at::<f32>(t, f, e);
                if at.y < p.out_channels && at.x < columns {
                    y[(at.x / pixels * p.out_channels + at.y) * pixels + at.x % pixels] =
                        z[8 * f + e];
                }
            }
        }
    }

    // The tensor-core forward by taps: for input channels a multiple of `DEPTH`, the sum runs
    // over (tap row, tap column, input channel), so that every step gathers from one filter
    // tap: each invocation tests its window once a step instead of once a load, and its loads
    // lie a channel plane apart. The filter is read in that order from a copy that
    // `conv_weights_by_tap` lays out first (read in place, a step's filter elements lie 9
    // floats apart, and the 3x3 forwards ran slower than gathering tap by tap). On an H100
    // the ResNet 3x3 forwards ran 6-14% faster, the copy included; the copy is a pass of its
    // own, so the tuner chooses (notes/performance.md).

    /// The filter `w` (output channel, input channel, tap row, tap column) with its taps
    /// outermost in each output channel: (output channel, tap row, tap column, input
    /// channel), in halves, as the tensor cores take it. Each invocation moves the taps of
    /// one (output, input) channel pair, so that both its reads and, tap by tap, the
    /// workgroup's writes are adjacent; it loads `COPY_TAPS` taps before it stores any (one
    /// tap at a time, each load waited for the store before it, and on an H100 the copy
    /// cost the ResNet 3x3 forwards 5-8 us; notes/performance.md). Halves rather than
    /// `f32`s: the passes that read the layout read it once per block of positions, so it is
    /// most of their memory traffic; on an H100 the ResNet 3x3 forwards and input gradients
    /// ran 2-6% faster for it, but 256 x 14 x 14's 3% slower (notes/performance.md).
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.out_channels * p.in_channels, GROUP)],
        features(f16)
    )]
    pub fn conv_weights_by_tap(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w_by_tap: &mut [f16],
    ) {
        let pair = global_id().x;
        let taps = p.kernel_h * p.kernel_w;
        if pair < p.out_channels * p.in_channels {
            let (co, ci) = (pair / p.in_channels, pair % p.in_channels);
            for first in (0..taps).step_by(COPY_TAPS) {
                let mut loaded = [0.0f32; COPY_TAPS];
                #[unroll]
                for c in 0..COPY_TAPS {
                    if first + c < taps {
                        loaded[c] = w[pair * taps + first + c];
                    }
                }
                #[unroll]
                for c in 0..COPY_TAPS {
                    if first + c < taps {
                        w_by_tap[(co * taps + first + c) * p.in_channels + ci] = loaded[c] as f16;
                    }
                }
            }
        }
    }

    /// What invocation `t` stages at a step of a convolution pass by taps whose first summed
    /// index has the digits `step` (tap row, tap column, channel): for the forward, from `x`
    /// for the output column `at` (see `conv_forward_column`); for the stride-1 input gradient
    /// (`grad`), from `grad_pre` for the input pixel `at` (see `conv_grad_input_pixel`). The
    /// whole step lies in one tap, so one test of the window covers its loads, which are a
    /// channel plane apart.
    fn conv_tap_gather(
        source: &[f32],
        p: &ConvParams,
        grad: bool,
        at: Vec4<u32>,
        step: Vec3<u32>,
        t: u32,
    ) -> [f32; COL_LOADS] {
        let reach = vec2(step.x * p.dilation_h, step.y * p.dilation_w);
        let columns = if grad {
            p.batch * p.in_h * p.in_w
        } else {
            p.batch * p.out_h * p.out_w
        };
        let image = if grad {
            vec2(p.out_h, p.out_w)
        } else {
            vec2(p.in_h, p.in_w)
        };
        let plane = image.x * image.y;
        // The forward reads the input pixel under the tap; the input gradient reads the output
        // pixel whose window puts the tap on `at`. Above or left of its image, either wraps
        // around and fails the test against `image`.
        let read = if grad {
            vec2(at.z.wrapping_sub(reach.x), at.w.wrapping_sub(reach.y))
        } else {
            vec2(
                (at.z + reach.x).wrapping_sub(p.pad_top),
                (at.w + reach.y).wrapping_sub(p.pad_left),
            )
        };
        // Where the column's image starts in `source`.
        let image_start = if grad {
            at.y * p.out_channels * plane
        } else {
            at.y
        };
        let mut staged = [0.0f32; COL_LOADS];
        if at.x < columns && read.x < image.x && read.y < image.y {
            let channel = step.z + along_depth(t, 0);
            let first = image_start + channel * plane + read.x * image.y + read.y;
            #[unroll]
            for r in 0..COL_LOADS {
                staged[r] = source[first + (along_depth(t, r) - along_depth(t, 0)) * plane];
            }
        }
        staged
    }

    /// The tensor-core tile of a convolution pass by taps, summing `summed` (which starts at a
    /// multiple of `DEPTH`) over (tap row, tap column, channel) with the channels a multiple
    /// of `DEPTH`: the forward from `x` (`source`) and the filter as `conv_weights_by_tap`
    /// lays it out, or, `grad`, the stride-1 input gradient from `grad_pre` and the filter as
    /// `conv_weights_transposed_by_tap` lays it out. Its rows being a multiple of `DEPTH`
    /// long, the filter binds as vectors of halves (`fetch`), which ran the ResNet 3x3
    /// passes 4-17% faster on an H100 than scalar loads.
    fn conv_fragments_by_tap_tile(
        half_w: &mut [f16; BLOCK * A_STRIDE],
        half_s: &mut [f16; COLUMNS],
        w_by_tap: &[Vec4<f16>],
        source: &[f32],
        p: &ConvParams,
        grad: bool,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [FragC16<f32>; FRAGS] {
        // The summed channels, and the channels of the rows.
        let channels = if grad {
            vec2(p.out_channels, p.in_channels)
        } else {
            vec2(p.in_channels, p.out_channels)
        };
        let shape_w = vec2(channels.x * p.kernel_h * p.kernel_w, channels.y);
        let at = if grad {
            conv_grad_input_pixel(p, origin, t)
        } else {
            conv_forward_column(p, origin, t)
        };
        let by = digits(DEPTH, p.kernel_w, channels.x);
        let mut step = digits(summed.x, p.kernel_w, channels.x);
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        let from_w = fetch(w_by_tap, shape_w, true, origin.y, summed.x, t);
        let from_s = conv_tap_gather(source, p, grad, at, step, t);
        stage_rows(half_w, 0, &from_w, true, t);
        stage_half(half_s, &from_s, false, t);
        for k0 in (summed.x + DEPTH..summed.y).step_by(DEPTH) {
            step = advance(step, by, p.kernel_w, channels.x);
            let from_w = fetch(w_by_tap, shape_w, true, origin.y, k0, t);
            let from_s = conv_tap_gather(source, p, grad, at, step, t);
            multiply_fragments(half_w, half_s, false, &mut acc, t);
            stage_rows(half_w, 0, &from_w, true, t);
            stage_half(half_s, &from_s, false, t);
        }
        multiply_fragments(half_w, half_s, false, &mut acc, t);
        acc
    }

    /// `conv_forward_fragments` by taps (`ConvForwardFragmentsByTapSplit` cuts its sum), from
    /// the filter as `conv_weights_by_tap` lays it out (`w_by_tap`).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [ceil_div(p.batch * p.out_h * p.out_w, BLOCK), ceil_div(p.out_channels, BLOCK)],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_fragments_by_tap(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)] w_by_tap: &[Vec4<
            f16,
        >],
        #[len(p.out_channels)] bias: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let summed = vec2(0, p.in_channels * p.kernel_h * p.kernel_w);
        let acc =
            conv_fragments_by_tap_tile(half_w, half_x, w_by_tap, x, p, false, origin, summed, t);
        store_conv_forward_fragments(&acc, bias, pre, y, p, spill, origin, t);
    }

    // The tensor-core passes over a staged window: for stride 1, the result's pixels are
    // numbered on a grid padded by the filter's reach (`window_grid`), so that every tap reads
    // the source at one offset from the result's position (`window_shift`). A workgroup then
    // stages the source once per `DEPTH` channels, for its `COLS` positions and the farthest
    // tap's reach beyond them, and multiplies every tap's filter slice against that one window
    // at the tap's offset. The padded positions (the grid's last rows and columns) are
    // computed and not stored.

    /// The blockings of the passes over a staged window (`conv_window_tile`): `BLOCK` result
    /// channels (rows) by `COLS` positions of the padded grid, `DEPTH` summed channels a
    /// step, a window of `WINDOW` staged positions (so a reach, `window_reach`, of at most
    /// `WINDOW - COLS`), each `A_STRIDE` halves apart, and `SLICES` filter slices of `BLOCK`
    /// rows, for `INVOCATIONS` invocations: subgroups in rows of four, each `WARP_ROWS` by
    /// `WARP_COLS`. Tap by tap (`ALL_TAPS` 0) a step stages one tap's filter slice into one of
    /// the `SLICES` in turn; with `ALL_TAPS` 1 it stages every tap's slice at once (a filter
    /// of at most `SLICES` taps). `LOADS` and `WINDOW_LOADS` are what an invocation loads of
    /// a filter slice a step and of the source a window; `ROWS_HALVES` and `COLUMNS` are the
    /// halves of the filter slices and of the window, named as the helpers shared with
    /// `TensorBlocking` name its slices.
    ///
    /// Tap by tap, a block runs in 512 invocations where the device has them: twice the
    /// subgroups of 256 on the same block, so that the one workgroup an SM holds (the
    /// accumulators and the 38-48 KiB of workgroup memory allow no more) keeps more of them in
    /// flight. `spill` then takes 16 KiB, and a block one filter slice (46 KiB in all for 128
    /// rows; two slices in the 64-row blocks ran no faster on an H100). With 256, a block has
    /// two: the 128-row blocking takes 48 KiB, all that the H100 offers through Vulkan
    /// (`MEMORY`: 40 KiB of slices, 8 of `spill`), the 64-row one 38 KiB.
    ///
    /// Every tap at once: 64 rows of 16 summed channels make all 9 taps' slices 27 KiB,
    /// beside a 16-channel window (12 KiB) and the 8 KiB `spill` of 256 invocations: 47 KiB.
    /// A step then takes two barriers whatever the taps (tap by tap, one or two a tap). On an
    /// H100 the tuner takes it for the ResNet layers of 64 and 256 channels (input gradient of
    /// 64 x 56 x 56: 0.100 -> 0.088 ms); the 128-row blocks tap by tap stay faster at 128
    /// channels (notes/performance.md).
    #[constants(
        zip(
            BLOCK = [128, 128, 64, 64, 64],
            INVOCATIONS = [256, 512, 256, 512, 256],
            DEPTH = [32, 32, 32, 32, 16],
            SLICES = [2, 1, 2, 1, 9],
            ALL_TAPS = [0, 0, 0, 0, 1]
        ),
        COLS = 128,
        WINDOW = 256,
        A_STRIDE = DEPTH + 8,
        ROWS_HALVES = SLICES * BLOCK * A_STRIDE,
        COLUMNS = WINDOW * A_STRIDE,
        LOADS = DEPTH * BLOCK / INVOCATIONS,
        WINDOW_LOADS = DEPTH * WINDOW / INVOCATIONS,
        WARP_ROWS = BLOCK * 128 / INVOCATIONS,
        WARP_COLS = COLS / 4,
        FRAG_ROWS = WARP_ROWS / 16,
        FRAG_COLS = WARP_COLS / 16,
        FRAGS = FRAG_ROWS * FRAG_COLS,
        SPILL = INVOCATIONS * 8,
        MEMORY = 2 * (SLICES * BLOCK + WINDOW) * A_STRIDE + 4 * SPILL,
        OUTPUTS = 8 * FRAGS
    )]
    pub struct WindowBlocking;

    /// The padded grid of a pass over a staged window, as (rows, columns) of one image's
    /// padded grid and of its result: the forward's output, or (`grad`) the input gradient.
    fn window_grid(p: &ConvParams, grad: bool) -> Vec4<u32> {
        let result = if grad {
            vec2(p.in_h, p.in_w)
        } else {
            vec2(p.out_h, p.out_w)
        };
        let reach = vec2(
            (p.kernel_h - 1) * p.dilation_h,
            (p.kernel_w - 1) * p.dilation_w,
        );
        vec4(result.x + reach.x, result.y + reach.y, result.x, result.y)
    }

    /// Position `at` of the padded grid `grid` as (image, row, column).
    fn padded_position(grid: Vec4<u32>, at: u32) -> Vec3<u32> {
        let per_image = grid.x * grid.y;
        vec3(
            at / per_image,
            at % per_image / grid.y,
            at % per_image % grid.y,
        )
    }

    /// How far past a position of `grid` its farthest tap reads.
    fn window_reach(p: &ConvParams, grid: Vec4<u32>) -> u32 {
        (p.kernel_h - 1) * p.dilation_h * grid.y + (p.kernel_w - 1) * p.dilation_w
    }

    /// How far past a position of `grid` tap `tap` reads. The input gradient reads the
    /// output pixels whose windows put the tap on the position: its taps run backwards.
    fn window_shift(p: &ConvParams, grad: bool, grid: Vec4<u32>, tap: u32) -> u32 {
        let at = vec2(tap / p.kernel_w, tap % p.kernel_w);
        let tap_at = if grad {
            vec2(p.kernel_h - 1 - at.x, p.kernel_w - 1 - at.y)
        } else {
            at
        };
        tap_at.x * p.dilation_h * grid.y + tap_at.y * p.dilation_w
    }

    /// The `j`-th staged position of the window that starts at position `first` of `grid`:
    /// (its offset in the source's first channel plane of its image, 1 if it lies inside the
    /// source and the window's reach, else 0).
    fn window_source(p: &ConvParams, grad: bool, grid: Vec4<u32>, first: u32, j: u32) -> Vec2<u32> {
        let position = padded_position(grid, first + j);
        let (image, padded) = (position.x, position.yz);
        // Above or left of the source, a row or column wraps around and fails the test.
        let read = if grad {
            vec2(
                (padded.x + p.pad_top).wrapping_sub((p.kernel_h - 1) * p.dilation_h),
                (padded.y + p.pad_left).wrapping_sub((p.kernel_w - 1) * p.dilation_w),
            )
        } else {
            vec2(
                padded.x.wrapping_sub(p.pad_top),
                padded.y.wrapping_sub(p.pad_left),
            )
        };
        let source = if grad {
            vec3(p.out_channels, p.out_h, p.out_w)
        } else {
            vec3(p.in_channels, p.in_h, p.in_w)
        };
        let inside = j < COLS + window_reach(p, grid)
            && image < p.batch
            && read.x < source.y
            && read.y < source.z;
        vec2(
            (image * source.x * source.y + read.x) * source.z + read.y,
            inside as u32,
        )
    }

    /// What invocation `t` stages of the window at channels `c0..`: its loads run over the
    /// window's positions `t / 4`, `t / 4 + INVOCATIONS / 4`, .. (`at`, from
    /// `window_source`), and 4 adjacent channels of each, so that a subgroup's stores into
    /// the window, 8 positions by 4 channels, fall in distinct banks.
    fn window_gather(
        source: &[f32],
        plane: u32,
        at: &[Vec2<u32>; WINDOW / (INVOCATIONS / 4)],
        c0: u32,
        t: u32,
    ) -> [f32; WINDOW_LOADS] {
        let mut staged = [0.0f32; WINDOW_LOADS];
        #[unroll]
        for r in 0..WINDOW_LOADS {
            let position = at[r / (DEPTH / 4)];
            if position.y != 0 {
                let channel = c0 + r % (DEPTH / 4) * 4 + t % 4;
                staged[r] = source[position.x + channel * plane];
            }
        }
        staged
    }

    /// Writes what `window_gather` fetched into the window: (position `j`, channel `d`) at
    /// `j * A_STRIDE + d`.
    fn stage_window(window: &mut [f16; COLUMNS], staged: &[f32; WINDOW_LOADS], t: u32) {
        #[unroll]
        for r in 0..WINDOW_LOADS {
            let j = r / (DEPTH / 4) * (INVOCATIONS / 4) + t / 4;
            let d = r % (DEPTH / 4) * 4 + t % 4;
            window[j * A_STRIDE + d] = staged[r] as f16;
        }
    }

    /// `acc += w · window` for one tap, `w` the filter slice at `base` of `half_w`: the
    /// columns' fragments are read from the window `shift` positions past the block's, as
    /// `multiply_fragments` reads a columns' slice staged across.
    fn multiply_window(
        half_w: &[f16; ROWS_HALVES],
        base: u32,
        window: &[f16; COLUMNS],
        shift: u32,
        acc: &mut [FragC16<f32>; FRAGS],
        t: u32,
    ) {
        let warp = t / 32;
        let (rows, cols) = (warp / 4 * WARP_ROWS, warp % 4 * WARP_COLS + shift);
        #[unroll]
        for kk in 0..DEPTH / 16 {
            let fb = column_fragments_across(window, cols, kk);
            #[unroll]
            for i in 0..FRAG_ROWS {
                let first = base + (rows + i * 16) * A_STRIDE + kk * 16;
                let fa: FragA16<f16> = coop_load_row_major(&half_w[first], A_STRIDE);
                #[unroll]
                for j in 0..FRAG_COLS {
                    let f = i * FRAG_COLS + j;
                    acc[f] = coop_multiply_add(fa, fb[j], acc[f]);
                }
            }
        }
    }

    /// The tensor-core tile of a pass over a staged window for the block at `origin`
    /// (position of the padded grid, result channel), summing the channels `summed` (a
    /// multiple of `DEPTH`): the forward from `x` (`source`) and the filter as
    /// `conv_weights_by_tap` lays it out, or (`grad`) the stride-1 input gradient from
    /// `grad_pre` and the filter as `conv_weights_transposed_by_tap` lays it out.
    ///
    /// Tap by tap, a step multiplies one tap's filter slice by the window: it stages that
    /// slice into one of the `SLICES` in turn and loads the next step's while it multiplies,
    /// so that with two slices a step takes one barrier (and a window one more before it is
    /// staged). With 256 invocations on an H100 that ran 4-7% faster than one filter slice
    /// and two barriers a step; in 512, with one slice (`WindowBlocking` says why), the same
    /// blocks ran 3-10% faster still (notes/performance.md). A window's loads are not in
    /// flight during a multiply: held there, they would take registers from the
    /// accumulators.
    ///
    /// With every tap at once (`ALL_TAPS`), a step stages the window and `taps` slices of
    /// `DEPTH` summed channels (tap `i`'s at `i * BLOCK * A_STRIDE`), then multiplies each
    /// tap's slice by the window at the tap's shift, with no barrier between the taps, while
    /// the next step's loads are in flight. The taps are unrolled: the H100's compiler then
    /// gives the kernel 165-190 registers, one workgroup an SM, yet with a loop over them
    /// (105-115 registers without the loads in flight, two workgroups an SM) it lost to the
    /// passes tap by tap on every ResNet layer.
    fn conv_window_tile(
        half_w: &mut [f16; ROWS_HALVES],
        window: &mut [f16; COLUMNS],
        w_by_tap: &[Vec4<f16>],
        source: &[f32],
        p: &ConvParams,
        grad: bool,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [FragC16<f32>; FRAGS] {
        // The summed channels, and the channels of the rows.
        let channels = if grad {
            vec2(p.out_channels, p.in_channels)
        } else {
            vec2(p.in_channels, p.out_channels)
        };
        let plane = if grad {
            p.out_h * p.out_w
        } else {
            p.in_h * p.in_w
        };
        let taps = p.kernel_h * p.kernel_w;
        let shape_w = vec2(channels.x * taps, channels.y);
        let grid = window_grid(p, grad);
        let mut at = [vec2(0u32, 0); WINDOW / (INVOCATIONS / 4)];
        #[unroll]
        for g in 0..WINDOW / (INVOCATIONS / 4) {
            at[g] = window_source(p, grad, grid, origin.x, g * (INVOCATIONS / 4) + t / 4);
        }
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        if ALL_TAPS == 1 {
            let mut from_s = window_gather(source, plane, &at, summed.x, t);
            let mut from_w = fetch_all_taps(w_by_tap, shape_w, taps, origin.y, summed.x, t);
            for c0 in (summed.x..summed.y).step_by(DEPTH) {
                // Every subgroup is done with the last step's slices.
                workgroup_barrier();
                stage_window(window, &from_s, t);
                #[unroll]
                for tap in 0..SLICES {
                    if tap < taps {
                        #[unroll]
                        for v in 0..LOADS / 4 {
                            let fetched = from_w[tap * (LOADS / 4) + v];
                            stage_row(half_w, tap * BLOCK * A_STRIDE, fetched, true, t, v);
                        }
                    }
                }
                workgroup_barrier();
                if c0 + DEPTH < summed.y {
                    from_s = window_gather(source, plane, &at, c0 + DEPTH, t);
                    from_w = fetch_all_taps(w_by_tap, shape_w, taps, origin.y, c0 + DEPTH, t);
                }
                #[unroll]
                for tap in 0..SLICES {
                    if tap < taps {
                        let shift = window_shift(p, grad, grid, tap);
                        multiply_window(half_w, tap * BLOCK * A_STRIDE, window, shift, &mut acc, t);
                    }
                }
            }
        } else {
            let mut from_w = fetch(w_by_tap, shape_w, true, origin.y, summed.x, t);
            let mut step = 0u32;
            for c0 in (summed.x..summed.y).step_by(DEPTH) {
                let from_s = window_gather(source, plane, &at, c0, t);
                // Every subgroup is done with the last window.
                workgroup_barrier();
                stage_window(window, &from_s, t);
                for tap in 0..taps {
                    // Two filter slices, taken in turn: one barrier a step. One slice: every
                    // subgroup is done with the last tap's before it is staged again.
                    if SLICES == 1 && tap > 0 {
                        workgroup_barrier();
                    }
                    let base = step % SLICES * (BLOCK * A_STRIDE);
                    stage_rows(half_w, base, &from_w, true, t);
                    let next = if tap + 1 < taps {
                        (tap + 1) * channels.x + c0
                    } else {
                        c0 + DEPTH
                    };
                    from_w = fetch(w_by_tap, shape_w, true, origin.y, next, t);
                    workgroup_barrier();
                    multiply_window(
                        half_w,
                        base,
                        window,
                        window_shift(p, grad, grid, tap),
                        &mut acc,
                        t,
                    );
                    step += 1;
                }
            }
        }
        acc
    }

    /// What invocation `t` stages of every tap's filter slice (rows `first..`, summed
    /// channels `c0..` of each of `taps` taps) from the filter `w_by_tap` of `shape` as
    /// `conv_weights_by_tap` lays it out: tap `i`'s vectors from `i * LOADS / 4` on.
    fn fetch_all_taps(
        w_by_tap: &[Vec4<f16>],
        shape: Vec2<u32>,
        taps: u32,
        first: u32,
        c0: u32,
        t: u32,
    ) -> [Vec4<f16>; SLICES * LOADS / 4] {
        let channels = shape.x / taps;
        let mut fetched = [vec4(0.0f16, 0.0, 0.0, 0.0); SLICES * LOADS / 4];
        #[unroll]
        for tap in 0..SLICES {
            if tap < taps {
                let first_channel = tap * channels + c0;
                let slice = fetch(w_by_tap, shape, true, first, first_channel, t);
                #[unroll]
                for v in 0..LOADS / 4 {
                    fetched[tap * (LOADS / 4) + v] = slice[v];
                }
            }
        }
        fetched
    }

    /// The result's pixels among invocation `t`'s outputs of the block at `origin` of a pass
    /// over a staged window: they lie in `FRAG_COLS` columns (see `fragment_at`), each
    /// at (the offset of its pixel in its image's first channel plane of the result, 1 if
    /// the column's position is a pixel, else 0).
    fn window_columns(
        p: &ConvParams,
        grad: bool,
        origin: Vec2<u32>,
        t: u32,
    ) -> [Vec2<u32>; FRAG_COLS] {
        let grid = window_grid(p, grad);
        let channels = if grad { p.in_channels } else { p.out_channels };
        let mut columns = [vec2(0u32, 0); FRAG_COLS];
        #[unroll]
        for j in 0..FRAG_COLS {
            let position = padded_position(grid, origin.x + fragment_at::<f32>(t, j, 0).x);
            let (image, padded) = (position.x, position.yz);
            let inside = image < p.batch && padded.x < grid.z && padded.y < grid.w;
            columns[j] = vec2(
                (image * channels * grid.z + padded.x) * grid.w + padded.y,
                inside as u32,
            );
        }
        columns
    }

    /// The forward's epilogue over a staged window's block at `origin`: `pre` = the
    /// accumulators + `bias`, `y = act(pre)`, both NCHW, for the positions of the padded grid
    /// that are pixels of the output.
    fn store_conv_window_forward(
        acc: &[FragC16<f32>; FRAGS],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        p: &ConvParams,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let pixels = p.out_h * p.out_w;
        let columns = window_columns(p, false, origin, t);
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<f32>(acc[f], spill, t);
            let column = columns[f % FRAG_COLS];
            #[unroll]
            for e in 0..8 {
                let row = origin.y + fragment_at::<f32>(t, f, e).y;
                if row < p.out_channels && column.y != 0 {
                    z[8 * f + e] = values[e] + bias[row];
                    if p.keep_pre != 0 {
                        pre[column.x + row * pixels] = z[8 * f + e];
                    }
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for f in 0..FRAGS {
            let column = columns[f % FRAG_COLS];
            #[unroll]
            for e in 0..8 {
                let row = origin.y + fragment_at::<f32>(t, f, e).y;
                if row < p.out_channels && column.y != 0 {
                    y[column.x + row * pixels] = z[8 * f + e];
                }
            }
        }
    }

    /// `conv_forward_fragments_by_tap` over a staged window (stride 1, input channels a
    /// multiple of `DEPTH`, a reach of at most `WINDOW - COLS`, and with `ALL_TAPS` a filter
    /// of at most `SLICES` taps), from the filter as `conv_weights_by_tap` lays it out.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = WindowBlocking,
        grid = [
            ceil_div(
                p.batch
                    * (p.out_h + (p.kernel_h - 1) * p.dilation_h)
                    * (p.out_w + (p.kernel_w - 1) * p.dilation_w),
                COLS
            ),
            ceil_div(p.out_channels, BLOCK)
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_window(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)] w_by_tap: &[Vec4<
            f16,
        >],
        #[len(p.out_channels)] bias: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] half_w: &mut [f16; ROWS_HALVES],
        #[workgroup] window: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let t = local_index();
        let origin = vec2(workgroup_id().x * COLS, workgroup_id().y * BLOCK);
        let summed = vec2(0, p.in_channels);
        let acc = conv_window_tile(half_w, window, w_by_tap, x, p, false, origin, summed, t);
        store_conv_window_forward(&acc, bias, pre, y, p, spill, origin, t);
    }

    /// Convolution: `pre = conv(x, w) + bias`, `y = act(pre)` (see `conv_forward_tile`). The
    /// 3x3 and 7x7 specializations fold the filter's size into the gather.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [ceil_div(p.batch * p.out_h * p.out_w, BLOCK), ceil_div(p.out_channels, BLOCK)],
        specialize(p.kernel_h == 3 && p.kernel_w == 3),
        specialize(p.kernel_h == 7 && p.kernel_w == 7)
    )]
    pub fn conv_forward(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.out_channels)] bias: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_x: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let pixels = p.out_h * p.out_w;
        let columns = p.batch * pixels;
        let summed = vec2(0, p.in_channels * p.kernel_h * p.kernel_w);
        let acc = conv_forward_tile(tile_w, tile_x, x, w, p, origin, summed, t);
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for e in 0..OUTPUTS {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < p.out_channels && col < columns {
                z[e] = acc[e] + bias[row];
                if p.keep_pre != 0 {
                    pre[(col / pixels * p.out_channels + row) * pixels + col % pixels] = z[e];
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for e in 0..OUTPUTS {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < p.out_channels && col < columns {
                y[(col / pixels * p.out_channels + row) * pixels + col % pixels] = z[e];
            }
        }
    }

    /// `conv_forward` on the tensor cores (`ConvForwardFragmentsSplit` cuts its sum).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [ceil_div(p.batch * p.out_h * p.out_w, BLOCK), ceil_div(p.out_channels, BLOCK)],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_fragments(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.out_channels)] bias: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let summed = vec2(0, p.in_channels * p.kernel_h * p.kernel_w);
        let acc = conv_forward_fragments_tile(half_w, half_x, x, w, p, origin, summed, t);
        store_conv_forward_fragments(&acc, bias, pre, y, p, spill, origin, t);
    }

    /// `conv_forward` for outputs too small to fill the GPU (small images, a batch of one):
    /// the sum over (input channel, tap) is cut into `p.splits` slices of `p.split_depth`,
    /// computed by separate workgroups into `partial`, and `conv_forward_reduce` adds them up
    /// with the bias and the activation.
    #[family(conv_forward_partial, conv_forward_reduce)]
    pub struct ConvForwardSplit {
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        w: &[f32],
        #[len(p.out_channels)]
        bias: &[f32],
        /// Scratch: one output-shaped partial sum per slice.
        #[len(p.splits * p.batch * p.out_channels * p.out_h * p.out_w)]
        partial: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        y: &mut [f32],
    }

    /// Slice `z` of the convolution into `partial[z]` (NCHW, like `pre`).
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.batch * p.out_h * p.out_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ],
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_partial(
        p: &ConvParams,
        x: &[f32],
        w: &[f32],
        partial: &mut [f32],
        #[workgroup] tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_x: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let pixels = p.out_h * p.out_w;
        let depth = p.in_channels * p.kernel_h * p.kernel_w;
        let summed = slice(split, p.split_depth, depth);
        let acc = conv_forward_tile(tile_w, tile_x, x, w, p, origin, summed, t);
        let (rows, columns) = (p.out_channels, p.batch * pixels);
        store_tile(
            partial,
            split * rows * columns,
            &acc,
            rows,
            columns,
            pixels,
            origin,
            t,
        );
    }

    /// Element `i` of a split convolution's output: `pre` = the sum of the slices of
    /// `partial` + `bias`, `y = act(pre)`.
    fn sum_forward_slices(
        p: &ConvParams,
        partial: &[f32],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        i: u32,
    ) {
        let pixels = p.out_h * p.out_w;
        let len = p.batch * p.out_channels * pixels;
        if i < len {
            let z = bias[i / pixels % p.out_channels] + sum_slices(partial, p.splits, len, i);
            if p.keep_pre != 0 {
                pre[i] = z;
            }
            y[i] = activate(z, p.activation);
        }
    }

    /// `pre` = the sum of the slices of `partial` + `bias`, `y = act(pre)`.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.out_channels * p.out_h * p.out_w, GROUP)]
    )]
    pub fn conv_forward_reduce(
        p: &ConvParams,
        partial: &[f32],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
    ) {
        sum_forward_slices(p, partial, bias, pre, y, global_id().x);
    }

    /// `ConvForwardSplit` on the tensor cores: the slices' products on the tensor cores, then
    /// their sum as `conv_forward_reduce`'s.
    #[family(conv_forward_fragments_partial, conv_forward_fragments_reduce)]
    pub struct ConvForwardFragmentsSplit {
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        w: &[f32],
        #[len(p.out_channels)]
        bias: &[f32],
        /// Scratch: one output-shaped partial sum per slice.
        #[len(p.splits * p.batch * p.out_channels * p.out_h * p.out_w)]
        partial: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        y: &mut [f32],
    }

    /// `conv_forward_partial` on the tensor cores.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.batch * p.out_h * p.out_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_fragments_partial(
        p: &ConvParams,
        x: &[f32],
        w: &[f32],
        partial: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let pixels = p.out_h * p.out_w;
        let summed = slice(
            split,
            p.split_depth,
            p.in_channels * p.kernel_h * p.kernel_w,
        );
        let acc = conv_forward_fragments_tile(half_w, half_x, x, w, p, origin, summed, t);
        let (rows, columns) = (p.out_channels, p.batch * pixels);
        let offset = split * rows * columns;
        store_fragments(
            partial,
            offset,
            &acc,
            rows,
            columns,
            images_layout(rows, pixels),
            origin,
            spill,
            t,
        );
    }

    /// `conv_forward_reduce` for `ConvForwardFragmentsSplit`.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.out_channels * p.out_h * p.out_w, GROUP)]
    )]
    pub fn conv_forward_fragments_reduce(
        p: &ConvParams,
        partial: &[f32],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
    ) {
        sum_forward_slices(p, partial, bias, pre, y, global_id().x);
    }

    /// `ConvForwardFragmentsSplit` by taps.
    #[family(
        conv_forward_fragments_by_tap_partial,
        conv_forward_fragments_by_tap_reduce
    )]
    pub struct ConvForwardFragmentsByTapSplit {
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        x: &[f32],
        /// The filter as `conv_weights_by_tap` lays it out.
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)]
        w_by_tap: &[Vec4<f16>],
        #[len(p.out_channels)]
        bias: &[f32],
        /// Scratch: one output-shaped partial sum per slice.
        #[len(p.splits * p.batch * p.out_channels * p.out_h * p.out_w)]
        partial: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        y: &mut [f32],
    }

    /// `conv_forward_fragments_partial` by taps.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.batch * p.out_h * p.out_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_fragments_by_tap_partial(
        p: &ConvParams,
        x: &[f32],
        w_by_tap: &[Vec4<f16>],
        partial: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let pixels = p.out_h * p.out_w;
        let summed = slice(
            split,
            p.split_depth,
            p.in_channels * p.kernel_h * p.kernel_w,
        );
        let acc =
            conv_fragments_by_tap_tile(half_w, half_x, w_by_tap, x, p, false, origin, summed, t);
        let (rows, columns) = (p.out_channels, p.batch * pixels);
        let offset = split * rows * columns;
        store_fragments(
            partial,
            offset,
            &acc,
            rows,
            columns,
            images_layout(rows, pixels),
            origin,
            spill,
            t,
        );
    }

    /// `conv_forward_reduce` for `ConvForwardFragmentsByTapSplit`.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.out_channels * p.out_h * p.out_w, GROUP)]
    )]
    pub fn conv_forward_fragments_by_tap_reduce(
        p: &ConvParams,
        partial: &[f32],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
    ) {
        sum_forward_slices(p, partial, bias, pre, y, global_id().x);
    }

    /// The blockings of the convolution passes as streams (below): `BLOCK` result channels
    /// (rows) by `COLS` positions, 32-deep steps, in 512 invocations, sixteen subgroups in
    /// four rows of four, each `FRAG_ROWS` x `FRAG_COLS` fragments; the rest is named as in
    /// `TensorBlocking`, whose helpers these blocks share, with `COL_LOADS` what an
    /// invocation stages of the columns' operand a step. 128 x 128 blocks (2 x 2 fragments a
    /// subgroup), and oblong ones of 256 x 128 and 128 x 256 (4 x 2 and 2 x 4, 46 KiB a
    /// workgroup): a step of an oblong block does twice the multiply-adds between the same
    /// two barriers, and the operands it stages are 3/4 of the bytes per product, as in the
    /// GEMM's `WideTensorBlocking`; fewer blocks, though, make more of them shared between
    /// workgroups, whose parts travel through `partial`. On an H100 the tuner took 128 x 256
    /// for the forward and input gradient of 128 x 28 x 28 (4-8% faster than 128 x 128) and
    /// 256 x 128 for the filter gradient of 512 x 7 x 7; the square blocks stayed fastest for
    /// the other ResNet layers (notes/performance.md).
    #[constants(
        zip(BLOCK = [128, 256, 128], COLS = [128, 128, 256]),
        DEPTH = 32,
        INVOCATIONS = 512,
        STRIDE = COLS + 8,
        A_STRIDE = DEPTH + 8,
        ROWS_HALVES = BLOCK * A_STRIDE,
        LOADS = DEPTH * BLOCK / INVOCATIONS,
        COL_LOADS = DEPTH * COLS / INVOCATIONS,
        WARP_ROWS = BLOCK / 4,
        WARP_COLS = COLS / 4,
        FRAG_ROWS = WARP_ROWS / 16,
        FRAG_COLS = WARP_COLS / 16,
        FRAGS = FRAG_ROWS * FRAG_COLS,
        SPILL = INVOCATIONS * 8,
        COLUMNS = COLS * A_STRIDE,
        MEMORY = 2 * (BLOCK * A_STRIDE + COLUMNS) + 4 * SPILL,
        OUTPUTS = 8 * FRAGS
    )]
    pub struct StreamBlocking;

    // A pass as a stream: an output whose blocks do not fill the GPU's waves evenly (196
    // blocks of 128 x 128 are 1.5 waves of an H100's 132 workgroups, so the second wave half
    // idles) runs as `p.workers` workgroups, as many as the GPU holds at once. Each runs
    // the whole blocks that fill whole waves, `p.workers` apart, then an even share of the
    // (block, step) iterations of the blocks left over: a contiguous range of them, whose
    // first and last block it may sum in part. A block summed whole is stored as the pass
    // stores it; a part goes to the workgroup's slot of `partial` (two a workgroup: its
    // range's first block and its last), and the last of a shared block's workgroups to
    // write its part adds up the block's parts (`stream_arrive`).

    /// The iterations `first..end` of a stream of `total` that workgroup `worker` of
    /// `workers` runs, as (first, end): `total / workers` each, the first `total % workers`
    /// one more.
    fn stream_range(total: u32, workers: u32, worker: u32) -> Vec2<u32> {
        let (each, longer) = (total / workers, total % workers);
        let first = worker * each + worker.min(longer);
        vec2(first, first + each + (worker < longer) as u32)
    }

    /// The workgroup of `stream_range` that runs iteration `i`.
    fn stream_worker(total: u32, workers: u32, i: u32) -> u32 {
        let (each, longer) = (total / workers, total % workers);
        let long = longer * (each + 1);
        if i < long {
            i / (each + 1)
        } else {
            longer + (i - long) / each
        }
    }

    /// A stream's blocks of `BLOCK` result channels by `COLS` of `columns` positions,
    /// numbered along the positions first, of `steps` steps each: (blocks along the
    /// positions, blocks run whole, blocks shared out by iterations).
    fn stream_blocks(channels: u32, columns: u32, workers: u32) -> Vec3<u32> {
        let across = ceil_div(columns, COLS);
        let blocks = across * ceil_div(channels, BLOCK);
        let whole = blocks / workers * workers;
        vec3(across, whole, blocks - whole)
    }

    /// What workgroup `worker` of a stream of `blocks` (`stream_blocks`) of `steps` steps
    /// runs: (the steps of its whole blocks, then its range of the iterations shared out,
    /// `stream_range`, as first and end), to be walked by `stream_part`. One loop over both,
    /// so that a kernel writes its tile out once.
    fn stream_share(blocks: Vec3<u32>, steps: u32, workers: u32, worker: u32) -> Vec3<u32> {
        let range = stream_range(blocks.z * steps, workers, worker);
        vec3(blocks.y / workers * steps, range.x, range.y)
    }

    /// The part of a block that workgroup `worker` of a stream runs from step `j` of its
    /// `share` on: (the block, its first step and its end, and the workgroup's slot of
    /// `partial` should the part not be the whole block: its range's first block or not).
    fn stream_part(
        blocks: Vec3<u32>,
        steps: u32,
        workers: u32,
        worker: u32,
        share: Vec3<u32>,
        j: u32,
    ) -> Vec4<u32> {
        if j < share.x {
            vec4(worker + j / steps * workers, 0, steps, 0)
        } else {
            let i = share.y + j - share.x;
            let first = i % steps;
            let end = (first + share.z - i).min(steps);
            vec4(
                blocks.y + i / steps,
                first,
                end,
                2 * worker + (i != share.y) as u32,
            )
        }
    }

    /// The workgroups of a stream of `blocks` (`stream_blocks`) of `steps` steps that sum
    /// parts of its `shared`-th shared block: (the first, the last, the first's slot of
    /// `partial`). The others' slots are those of their range's first block, `2 * worker`.
    fn stream_sharers(blocks: Vec3<u32>, steps: u32, workers: u32, shared: u32) -> Vec3<u32> {
        let total = blocks.z * steps;
        let start = shared * steps;
        let first = stream_worker(total, workers, start);
        // The block is the first workgroup's range's first unless its range starts before it.
        let later = stream_range(total, workers, first).x < start;
        vec3(
            first,
            stream_worker(total, workers, start + steps - 1),
            2 * first + later as u32,
        )
    }

    /// Counts a part of the `shared`-th shared block of a stream as written, once every
    /// invocation has stored its share of it to `partial`, and says whether this workgroup's
    /// was the last of the block's `parts`: then the block's parts are visible to every
    /// invocation, for it to add them up, and the count is 0 again for the next dispatch.
    ///
    /// WGSL's memory model promises nothing between workgroups but atomics; naga writes
    /// `storage_barrier` for Vulkan as a control barrier with acquire-release semantics on
    /// storage memory at device scope, so the first barrier makes the part available before
    /// the count, and the second makes the other workgroups' parts visible after it (the
    /// fence-to-fence synchronization of the Vulkan memory model).
    fn stream_arrive(
        arrivals: &mut [AtomicU32],
        shared: u32,
        parts: u32,
        finishing: &mut [u32; 1],
        t: u32,
    ) -> bool {
        storage_barrier();
        if t == 0 {
            let arrived = arrivals[shared].fetch_add(1) + 1;
            if arrived == parts {
                arrivals[shared].store(0);
            }
            finishing[0] = (arrived == parts) as u32;
        }
        workgroup_barrier();
        storage_barrier();
        finishing[0] != 0
    }

    /// Hands on the part `part` (`stream_part`) of a shared block that this workgroup stored
    /// to `partial`: counts it (`stream_arrive`) and says which workgroups summed the block
    /// (`stream_sharers`, in `xyz`) and whether this one is to add the parts up (`w`, 1 or 0).
    fn stream_hand_over(
        arrivals: &mut [AtomicU32],
        finishing: &mut [u32; 1],
        blocks: Vec3<u32>,
        steps: u32,
        workers: u32,
        part: Vec4<u32>,
        t: u32,
    ) -> Vec4<u32> {
        let shared = part.x - blocks.y;
        let sharers = stream_sharers(blocks, steps, workers, shared);
        let last = stream_arrive(arrivals, shared, sharers.y - sharers.x + 1, finishing, t);
        vec4(sharers.x, sharers.y, sharers.z, last as u32)
    }

    /// Invocation `t`'s elements of the sum of the parts of a block that the workgroups
    /// `sharers` (`stream_sharers`) wrote to `partial`: element `t + INVOCATIONS * run` in
    /// `run` (a block has `OUTPUTS` elements an invocation). Each part's loads are all in
    /// flight at once.
    fn stream_sums(partial: &[f32], sharers: Vec3<u32>, t: u32) -> [f32; OUTPUTS] {
        let mut z = [0.0f32; OUTPUTS];
        let mut slot = sharers.z;
        for worker in sharers.x..sharers.y + 1 {
            let first = slot * BLOCK * COLS + t;
            #[unroll]
            for run in 0..OUTPUTS {
                z[run] += partial[first + run * INVOCATIONS];
            }
            slot = 2 * (worker + 1);
        }
        z
    }

    /// Where invocation `t`'s elements of the block at `origin` lie in a result laid out as
    /// `layout` says (see `matrix_layout`): those of `stream_sums`, column `t % COLS`, rows
    /// `t / COLS` and every `INVOCATIONS / COLS` on. As (the index of the column's element in
    /// row 0, the column, the first row); row `r`'s element is `layout.z * r` further.
    fn stream_elements(layout: Vec4<u32>, origin: Vec2<u32>, t: u32) -> Vec3<u32> {
        let column = origin.x + t % COLS;
        vec3(
            column / layout.x * layout.y + column % layout.x * layout.w,
            column,
            origin.y + t / COLS,
        )
    }

    /// Adds up the parts of the block at `origin` of `conv_forward_fragments_by_tap_streamed`
    /// that the workgroups `sharers` summed, then `pre` = the sum + `bias` and `y = act(pre)`.
    fn finish_forward_block(
        partial: &[f32],
        sharers: Vec3<u32>,
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        p: &ConvParams,
        origin: Vec2<u32>,
        t: u32,
    ) {
        let pixels = p.out_h * p.out_w;
        let layout = images_layout(p.out_channels, pixels);
        let (at, columns) = (stream_elements(layout, origin, t), p.batch * pixels);
        let mut z = stream_sums(partial, sharers, t);
        #[unroll]
        for run in 0..OUTPUTS {
            let channel = at.z + run * (INVOCATIONS / COLS);
            if at.y < columns && channel < p.out_channels {
                z[run] += bias[channel];
                if p.keep_pre != 0 {
                    pre[at.x + channel * layout.z] = z[run];
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for run in 0..OUTPUTS {
            let channel = at.z + run * (INVOCATIONS / COLS);
            if at.y < columns && channel < p.out_channels {
                y[at.x + channel * layout.z] = z[run];
            }
        }
    }

    /// Adds up the parts of the block at `origin` of a stream's `rows` x `cols` result that
    /// the workgroups `sharers` summed into `out`, laid out as `layout` says (see
    /// `store_fragments`): the input gradient's and the filter gradient's.
    fn finish_block(
        partial: &[f32],
        sharers: Vec3<u32>,
        out: &mut [f32],
        rows: u32,
        cols: u32,
        layout: Vec4<u32>,
        origin: Vec2<u32>,
        t: u32,
    ) {
        let at = stream_elements(layout, origin, t);
        let z = stream_sums(partial, sharers, t);
        #[unroll]
        for run in 0..OUTPUTS {
            let row = at.z + run * (INVOCATIONS / COLS);
            if at.y < cols && row < rows {
                out[at.x + row * layout.z] = z[run];
            }
        }
    }

    /// Writes the accumulators of a block into `out` from `offset` on, row-major, `COLS`
    /// columns: one slot of a stream's `partial`.
    fn store_block_fragments(out: &mut [f32], offset: u32, acc: &[FragC16<f32>; FRAGS], t: u32) {
        let warp = t / 32;
        let (rows, cols) = (warp / 4 * WARP_ROWS, warp % 4 * WARP_COLS);
        #[unroll]
        for i in 0..FRAG_ROWS {
            #[unroll]
            for j in 0..FRAG_COLS {
                let first = offset + (rows + i * 16) * COLS + cols + j * 16;
                coop_store_row_major(acc[i * FRAG_COLS + j], &mut out[first], COLS);
            }
        }
    }

    /// `conv_forward_fragments_by_tap` as a stream (see above), `DEPTH` summed indices a
    /// step. The last of a shared block's workgroups to write its part to `partial` adds the
    /// block's parts up (`finish_forward_block`).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = StreamBlocking,
        grid = [p.workers],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY + 4, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_forward_fragments_by_tap_streamed(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        // The filter as `conv_weights_by_tap` lays it out.
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)] w_by_tap: &[Vec4<
            f16,
        >],
        #[len(p.out_channels)] bias: &[f32],
        // Scratch: two blocks per workgroup, `BLOCK * COLS` elements each.
        #[len(2 * p.workers * BLOCK * COLS)] partial: &mut [f32],
        // Scratch: a count per workgroup, zeros before the dispatch and after it.
        #[len(p.workers)] arrivals: &mut [AtomicU32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
        #[workgroup] finishing: &mut [u32; 1],
    ) {
        let (t, worker) = (local_index(), workgroup_id().x);
        let blocks = stream_blocks(p.out_channels, p.batch * p.out_h * p.out_w, p.workers);
        let steps = p.in_channels * p.kernel_h * p.kernel_w / DEPTH;
        let share = stream_share(blocks, steps, p.workers, worker);
        let mut j = 0u32;
        while j < share.x + share.z - share.y {
            let part = stream_part(blocks, steps, p.workers, worker, share, j);
            let origin = vec2(part.x % blocks.x * COLS, part.x / blocks.x * BLOCK);
            let summed = vec2(part.y, part.z) * DEPTH;
            let acc = conv_fragments_by_tap_tile(
                half_w, half_x, w_by_tap, x, p, false, origin, summed, t,
            );
            if part.y == 0 && part.z == steps {
                store_conv_forward_fragments(&acc, bias, pre, y, p, spill, origin, t);
            } else {
                store_block_fragments(partial, part.w * BLOCK * COLS, &acc, t);
                let hand = stream_hand_over(arrivals, finishing, blocks, steps, p.workers, part, t);
                if hand.w != 0 {
                    finish_forward_block(partial, hand.xyz, bias, pre, y, p, origin, t);
                }
            }
            j += part.z - part.y;
        }
    }

    /// The schedule of `conv_forward_fragments_by_tap_streamed` and its hand-over of parts,
    /// without the tensor cores, so that tests run them on any device (the streams need
    /// cooperative matrices). A part of steps `first..end` of a block adds `s + 1` for each
    /// of its steps `s` to every element, so that every element of `pre` and `y` (a
    /// convolution without activation) comes out as its channel's bias plus `steps *
    /// (steps + 1) / 2` whichever workgroups summed it, and a block left unfinished, or a
    /// part missing from its sum or added twice, shows. A block run whole goes through the
    /// workgroup's first slot (the stream stores it through `spill`).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = StreamBlocking,
        grid = [p.workers],
        limits(invocations = INVOCATIONS)
    )]
    pub fn stream_schedule_model(
        p: &ConvParams,
        #[len(p.out_channels)] bias: &[f32],
        #[len(2 * p.workers * BLOCK * COLS)] partial: &mut [f32],
        #[len(p.workers)] arrivals: &mut [AtomicU32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] finishing: &mut [u32; 1],
    ) {
        let (t, worker) = (local_index(), workgroup_id().x);
        let blocks = stream_blocks(p.out_channels, p.batch * p.out_h * p.out_w, p.workers);
        let steps = p.in_channels * p.kernel_h * p.kernel_w / DEPTH;
        let share = stream_share(blocks, steps, p.workers, worker);
        let mut j = 0u32;
        while j < share.x + share.z - share.y {
            let part = stream_part(blocks, steps, p.workers, worker, share, j);
            let origin = vec2(part.x % blocks.x * COLS, part.x / blocks.x * BLOCK);
            let value = ((part.z * (part.z + 1) - part.y * (part.y + 1)) / 2) as f32;
            let whole = part.y == 0 && part.z == steps;
            let slot = if whole { 2 * worker } else { part.w };
            // An invocation writes, and a workgroup that finishes alone reads back, elements
            // `t + INVOCATIONS * run` (`stream_sums`).
            for run in 0..OUTPUTS {
                partial[slot * BLOCK * COLS + run * INVOCATIONS + t] = value;
            }
            if whole {
                let alone = vec3(worker, worker, slot);
                finish_forward_block(partial, alone, bias, pre, y, p, origin, t);
            } else {
                let hand = stream_hand_over(arrivals, finishing, blocks, steps, p.workers, part, t);
                if hand.w != 0 {
                    finish_forward_block(partial, hand.xyz, bias, pre, y, p, origin, t);
                }
            }
            j += part.z - part.y;
        }
    }

    /// `conv_grad_input_fragments_by_tap` as a stream (see
    /// `conv_forward_fragments_by_tap_streamed`): the last of a shared block's workgroups adds
    /// its parts up (`finish_block`).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = StreamBlocking,
        grid = [p.workers],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY + 4, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_grad_input_fragments_by_tap_streamed(
        p: &ConvParams,
        // The filter as `conv_weights_transposed_by_tap` lays it out.
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)]
        w_transposed: &[Vec4<f16>],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        // Scratch: two blocks per workgroup, `BLOCK * COLS` elements each.
        #[len(2 * p.workers * BLOCK * COLS)] partial: &mut [f32],
        // Scratch: a count per workgroup, zeros before the dispatch and after it.
        #[len(p.workers)] arrivals: &mut [AtomicU32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_g: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
        #[workgroup] finishing: &mut [u32; 1],
    ) {
        let (t, worker) = (local_index(), workgroup_id().x);
        let pixels = p.in_h * p.in_w;
        let blocks = stream_blocks(p.in_channels, p.batch * pixels, p.workers);
        let steps = p.out_channels * p.kernel_h * p.kernel_w / DEPTH;
        let share = stream_share(blocks, steps, p.workers, worker);
        let mut j = 0u32;
        while j < share.x + share.z - share.y {
            let part = stream_part(blocks, steps, p.workers, worker, share, j);
            let origin = vec2(part.x % blocks.x * COLS, part.x / blocks.x * BLOCK);
            let summed = vec2(part.y, part.z) * DEPTH;
            let acc = conv_fragments_by_tap_tile(
                half_w,
                half_g,
                w_transposed,
                grad_pre,
                p,
                true,
                origin,
                summed,
                t,
            );
            if part.y == 0 && part.z == steps {
                store_fragments(
                    grad_x,
                    0,
                    &acc,
                    p.in_channels,
                    p.batch * pixels,
                    images_layout(p.in_channels, pixels),
                    origin,
                    spill,
                    t,
                );
            } else {
                store_block_fragments(partial, part.w * BLOCK * COLS, &acc, t);
                let hand = stream_hand_over(arrivals, finishing, blocks, steps, p.workers, part, t);
                if hand.w != 0 {
                    let (rows, columns) = (p.in_channels, p.batch * pixels);
                    let layout = images_layout(rows, pixels);
                    finish_block(partial, hand.xyz, grad_x, rows, columns, layout, origin, t);
                }
            }
            j += part.z - part.y;
        }
    }

    /// The backward pass of `conv_forward` but the filter's gradient: the gradient before the
    /// activation, then the gradients of the input (when asked for) and the bias from it. The
    /// filter's gradient follows from `grad_pre` (`ConvGradWeightSplit` or
    /// `ConvGradWeightWinograd`).
    #[family(conv_activation_grad, conv_grad_input, conv_grad_bias)]
    pub struct ConvBackward {
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        w: &[f32],
        /// The forward's `pre`.
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        pre: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_y: &[f32],
        /// The gradient before the activation (scratch the caller may reuse).
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_pre: &mut [f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        grad_x: Option<&mut [f32]>,
        /// With the bias gradient's sum in slices: one row of `out_channels` sums per slice.
        #[len(p.bias_splits * p.out_channels)]
        grad_bias: &mut [f32],
    }

    /// The filter's gradient as an implicit GEMM (`conv_grad_weight`), its summed dimension
    /// in `p.splits` slices that `conv_grad_weight_reduce` adds up.
    #[family(conv_grad_weight, conv_grad_weight_reduce)]
    pub struct ConvGradWeightSplit {
        /// The shape; `splits` and `split_depth` as `conv_grad_weight`'s blocking needs.
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        x: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_pre: &[f32],
        /// Scratch for the slices after the first.
        #[len((p.splits - 1) * p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        partial: &mut [f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        grad_w: &mut [f32],
    }

    /// `grad_pre = grad_y * act'(pre)` over the convolution's output.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.out_channels * p.out_h * p.out_w, GROUP)]
    )]
    pub fn conv_activation_grad(p: &ConvParams, pre: &[f32], grad_y: &[f32], grad_pre: &mut [f32]) {
        let i = global_id().x;
        if i < p.batch * p.out_channels * p.out_h * p.out_w {
            grad_pre[i] = grad_y[i] * activate_grad(pre[i], p.activation);
        }
    }

    /// The input pixel invocation `t` gathers for in the block at `origin`, the same at every
    /// step: (column, image, row and column in padded coordinates).
    fn conv_grad_input_pixel(p: &ConvParams, origin: Vec2<u32>, t: u32) -> Vec4<u32> {
        let pixels = p.in_h * p.in_w;
        let staged = origin.x + t % COLS;
        vec4(
            staged,
            staged / pixels,
            (staged % pixels) / p.in_w + p.pad_top,
            (staged % pixels) % p.in_w + p.pad_left,
        )
    }

    /// What invocation `t` stages from the filter at step `k0`, read as `[out_channels *
    /// taps][in_channels]` (row `ci`, column `k`), its column at (output channel, tap row,
    /// tap column) `wk`.
    fn conv_filter_rows(
        w: &[f32],
        p: &ConvParams,
        wk: Vec3<u32>,
        origin: Vec2<u32>,
        k0: u32,
        t: u32,
    ) -> [f32; LOADS] {
        let taps = p.kernel_h * p.kernel_w;
        let depth = p.out_channels * taps;
        let w_tap = wk.y * p.kernel_w + wk.z;
        let mut from_w = [0.0f32; LOADS];
        #[unroll]
        for r in 0..LOADS {
            let ci = origin.y + across_row(t, r);
            if ci < p.in_channels && k0 + t % DEPTH < depth {
                from_w[r] = w[(wk.x * p.in_channels + ci) * taps + w_tap];
            }
        }
        from_w
    }

    /// What invocation `t` stages from `grad_pre` at step `k0` for the input pixel `pixel`
    /// (see `conv_grad_input_pixel`), its loads at (output channel, tap row, tap column)
    /// `at`, which it advances by `by` to the next step.
    fn conv_grad_gather(
        grad_pre: &[f32],
        p: &ConvParams,
        pixel: Vec4<u32>,
        by: Vec3<u32>,
        at: &mut [Vec3<u32>; LOADS],
        k0: u32,
        t: u32,
    ) -> [f32; LOADS] {
        let depth = p.out_channels * p.kernel_h * p.kernel_w;
        let columns = p.batch * p.in_h * p.in_w;
        let (padded_h, padded_w) = (pixel.z, pixel.w);
        let mut from_g = [0.0f32; LOADS];
        #[unroll]
        for r in 0..LOADS {
            let k = k0 + along_depth(t, r);
            let co = at[r].x;
            let dh = at[r].y * p.dilation_h;
            let dw = at[r].z * p.dilation_w;
            at[r] = advance(at[r], by, p.kernel_h, p.kernel_w);
            // The output pixel whose window puts this tap on the input pixel, if any.
            let sh = padded_h.wrapping_sub(dh);
            let sw = padded_w.wrapping_sub(dw);
            let (oh, ow) = (sh / p.stride_h, sw / p.stride_w);
            let hit = pixel.x < columns
                && k < depth
                && padded_h >= dh
                && padded_w >= dw
                && sh % p.stride_h == 0
                && sw % p.stride_w == 0
                && oh < p.out_h
                && ow < p.out_w;
            if hit {
                from_g[r] =
                    grad_pre[((pixel.y * p.out_channels + co) * p.out_h + oh) * p.out_w + ow];
            }
        }
        from_g
    }

    /// The register tile of a convolution's input gradient (dgrad) for the block at `origin`,
    /// as an implicit GEMM: rows are input channels, columns are (image, input pixel), the sum
    /// runs over (output channel, kernel tap) from `summed.x` to `summed.y` (all of it, or a
    /// slice that starts at a multiple of `DEPTH`). Any kernel size works, since the taps are
    /// just part of the summed dimension.
    fn conv_grad_input_tile(
        tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        tile_g: &mut [Vec4<f32>; BUFFERS * SLICE],
        w: &[f32],
        grad_pre: &[f32],
        p: &ConvParams,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [f32; REG * REG] {
        let pixel = conv_grad_input_pixel(p, origin, t);
        // Where the loads are along the summed dimension, as (output channel, tap row, tap
        // column), advanced `DEPTH` a step: the filter's at `wk`, `grad_pre`'s at `at[r]`.
        let by = digits(DEPTH, p.kernel_h, p.kernel_w);
        let mut wk = digits(summed.x + t % DEPTH, p.kernel_h, p.kernel_w);
        let mut at = conv_taps(vec2(p.kernel_h, p.kernel_w), summed.x, t);
        let mut acc = [0.0f32; REG * REG];
        for k0 in (summed.x..summed.y).step_by(DEPTH) {
            let from_w = conv_filter_rows(w, p, wk, origin, k0, t);
            let from_g = conv_grad_gather(grad_pre, p, pixel, by, &mut at, k0, t);
            wk = advance(wk, by, p.kernel_h, p.kernel_w);
            step(tile_w, &from_w, tile_g, &from_g, false, &mut acc, k0, t);
        }
        acc
    }

    /// `conv_grad_input_tile` on the tensor cores, summed over the same `summed`.
    fn conv_grad_input_fragments_tile(
        half_w: &mut [f16; BLOCK * A_STRIDE],
        half_g: &mut [f16; COLUMNS],
        w: &[f32],
        grad_pre: &[f32],
        p: &ConvParams,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [FragC16<f32>; FRAGS] {
        let pixel = conv_grad_input_pixel(p, origin, t);
        let by = digits(DEPTH, p.kernel_h, p.kernel_w);
        let mut wk = digits(summed.x + t % DEPTH, p.kernel_h, p.kernel_w);
        let mut at = conv_taps(vec2(p.kernel_h, p.kernel_w), summed.x, t);
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        let from_w = conv_filter_rows(w, p, wk, origin, summed.x, t);
        let from_g = conv_grad_gather(grad_pre, p, pixel, by, &mut at, summed.x, t);
        wk = advance(wk, by, p.kernel_h, p.kernel_w);
        stage_fragments(half_w, &from_w, half_g, &from_g, false, t);
        for k0 in (summed.x + DEPTH..summed.y).step_by(DEPTH) {
            let from_w = conv_filter_rows(w, p, wk, origin, k0, t);
            let from_g = conv_grad_gather(grad_pre, p, pixel, by, &mut at, k0, t);
            wk = advance(wk, by, p.kernel_h, p.kernel_w);
            multiply_fragments(half_w, half_g, false, &mut acc, t);
            stage_fragments(half_w, &from_w, half_g, &from_g, false, t);
        }
        multiply_fragments(half_w, half_g, false, &mut acc, t);
        acc
    }

    /// The gradient of a convolution's input (see `conv_grad_input_tile`). With stride 1 every
    /// tap lands on an output pixel, and the specializations drop the divisibility tests and
    /// divisions (and, for 3x3 filters, fold the filter's size in).
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [ceil_div(p.batch * p.in_h * p.in_w, BLOCK), ceil_div(p.in_channels, BLOCK)],
        specialize(p.stride_h == 1 && p.stride_w == 1 && p.kernel_h == 3 && p.kernel_w == 3),
        specialize(p.stride_h == 1 && p.stride_w == 1)
    )]
    pub fn conv_grad_input(
        p: &ConvParams,
        w: &[f32],
        grad_pre: &[f32],
        grad_x: &mut [f32],
        #[workgroup] tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_g: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let pixels = p.in_h * p.in_w;
        let columns = p.batch * pixels;
        let summed = vec2(0, p.out_channels * p.kernel_h * p.kernel_w);
        let acc = conv_grad_input_tile(tile_w, tile_g, w, grad_pre, p, origin, summed, t);
        store_tile(grad_x, 0, &acc, p.in_channels, columns, pixels, origin, t);
    }

    /// `conv_grad_input` on the tensor cores (the host takes it for stride 1 and more than
    /// `FEW` input channels; `ConvGradInputFragmentsSplit` cuts its sum).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [ceil_div(p.batch * p.in_h * p.in_w, BLOCK), ceil_div(p.in_channels, BLOCK)],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.stride_h == 1 && p.stride_w == 1 && p.kernel_h == 3 && p.kernel_w == 3),
        specialize(p.stride_h == 1 && p.stride_w == 1)
    )]
    pub fn conv_grad_input_fragments(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_g: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let pixels = p.in_h * p.in_w;
        let summed = vec2(0, p.out_channels * p.kernel_h * p.kernel_w);
        let acc = conv_grad_input_fragments_tile(half_w, half_g, w, grad_pre, p, origin, summed, t);
        store_fragments(
            grad_x,
            0,
            &acc,
            p.in_channels,
            p.batch * pixels,
            images_layout(p.in_channels, pixels),
            origin,
            spill,
            t,
        );
    }

    /// `conv_grad_input` for inputs too small to fill the GPU: the sum over (output channel,
    /// tap) is cut into `p.splits` slices of `p.split_depth`, computed by separate workgroups
    /// into `partial`, and `conv_grad_input_reduce` adds them up into `grad_x`.
    #[family(conv_grad_input_partial, conv_grad_input_reduce)]
    pub struct ConvGradInputSplit {
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_pre: &[f32],
        /// Scratch: one input-shaped partial sum per slice.
        #[len(p.splits * p.batch * p.in_channels * p.in_h * p.in_w)]
        partial: &mut [f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        grad_x: &mut [f32],
    }

    /// Slice `z` of the input gradient into `partial[z]` (NCHW, like `grad_x`).
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.batch * p.in_h * p.in_w, BLOCK),
            ceil_div(p.in_channels, BLOCK),
            p.splits
        ],
        specialize(p.stride_h == 1 && p.stride_w == 1 && p.kernel_h == 3 && p.kernel_w == 3),
        specialize(p.stride_h == 1 && p.stride_w == 1)
    )]
    pub fn conv_grad_input_partial(
        p: &ConvParams,
        w: &[f32],
        grad_pre: &[f32],
        partial: &mut [f32],
        #[workgroup] tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_g: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let pixels = p.in_h * p.in_w;
        let (rows, columns) = (p.in_channels, p.batch * pixels);
        let depth = p.out_channels * p.kernel_h * p.kernel_w;
        let summed = slice(split, p.split_depth, depth);
        let acc = conv_grad_input_tile(tile_w, tile_g, w, grad_pre, p, origin, summed, t);
        store_tile(
            partial,
            split * rows * columns,
            &acc,
            rows,
            columns,
            pixels,
            origin,
            t,
        );
    }

    /// Element `i` of a split input gradient: `grad_x` = the sum of the slices of `partial`.
    fn sum_input_slices(p: &ConvParams, partial: &[f32], grad_x: &mut [f32], i: u32) {
        let len = p.batch * p.in_channels * p.in_h * p.in_w;
        if i < len {
            grad_x[i] = sum_slices(partial, p.splits, len, i);
        }
    }

    /// `grad_x` = the sum of the slices of `partial`.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.in_channels * p.in_h * p.in_w, GROUP)]
    )]
    pub fn conv_grad_input_reduce(p: &ConvParams, partial: &[f32], grad_x: &mut [f32]) {
        sum_input_slices(p, partial, grad_x, global_id().x);
    }

    /// `ConvGradInputSplit` on the tensor cores: the slices' products on the tensor cores, then
    /// their sum as `conv_grad_input_reduce`'s.
    #[family(conv_grad_input_fragments_partial, conv_grad_input_fragments_reduce)]
    pub struct ConvGradInputFragmentsSplit {
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_pre: &[f32],
        /// Scratch: one input-shaped partial sum per slice.
        #[len(p.splits * p.batch * p.in_channels * p.in_h * p.in_w)]
        partial: &mut [f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        grad_x: &mut [f32],
    }

    /// `conv_grad_input_partial` on the tensor cores.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.batch * p.in_h * p.in_w, BLOCK),
            ceil_div(p.in_channels, BLOCK),
            p.splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.stride_h == 1 && p.stride_w == 1 && p.kernel_h == 3 && p.kernel_w == 3),
        specialize(p.stride_h == 1 && p.stride_w == 1)
    )]
    pub fn conv_grad_input_fragments_partial(
        p: &ConvParams,
        w: &[f32],
        grad_pre: &[f32],
        partial: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_g: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let pixels = p.in_h * p.in_w;
        let summed = slice(
            split,
            p.split_depth,
            p.out_channels * p.kernel_h * p.kernel_w,
        );
        let acc = conv_grad_input_fragments_tile(half_w, half_g, w, grad_pre, p, origin, summed, t);
        let (rows, columns) = (p.in_channels, p.batch * pixels);
        let offset = split * rows * columns;
        store_fragments(
            partial,
            offset,
            &acc,
            rows,
            columns,
            images_layout(rows, pixels),
            origin,
            spill,
            t,
        );
    }

    /// `conv_grad_input_reduce` for `ConvGradInputFragmentsSplit`.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.in_channels * p.in_h * p.in_w, GROUP)]
    )]
    pub fn conv_grad_input_fragments_reduce(p: &ConvParams, partial: &[f32], grad_x: &mut [f32]) {
        sum_input_slices(p, partial, grad_x, global_id().x);
    }

    // The input gradient by taps, the forward's way (see `conv_forward_fragments_by_tap`): for
    // stride 1 and output channels a multiple of `DEPTH`, the sum runs over (tap row, tap
    // column, output channel), from the filter transposed to (input channel, tap row, tap
    // column, output channel) by `conv_weights_transposed_by_tap`.

    /// The filter `w` (output channel, input channel, tap row, tap column) as the input
    /// gradient by taps reads it: (input channel, tap row, tap column, output channel), in
    /// halves (see `conv_weights_by_tap`). A workgroup moves a `SPAN` x `SPAN` tile of
    /// channel pairs through `tile`, `COPY_TAPS` taps at a time, so that it reads along
    /// input channels and writes along output channels.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.in_channels, SPAN), ceil_div(p.out_channels, SPAN)],
        features(f16)
    )]
    pub fn conv_weights_transposed_by_tap(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w_transposed: &mut [f16],
        #[workgroup] tile: &mut [f32; GROUP * COPY_TAPS],
    ) {
        let t = local_index();
        let taps = p.kernel_h * p.kernel_w;
        let first = workgroup_id().xy * SPAN;
        // (input channel, output channel) that invocation `t` reads, and that it writes.
        let read = first + vec2(t % SPAN, t / SPAN);
        let written = first + vec2(t / SPAN, t % SPAN);
        let (reads, writes) = (
            read.x < p.in_channels && read.y < p.out_channels,
            written.x < p.in_channels && written.y < p.out_channels,
        );
        for first_tap in (0..taps).step_by(COPY_TAPS) {
            let mut loaded = [0.0f32; COPY_TAPS];
            #[unroll]
            for c in 0..COPY_TAPS {
                if reads && first_tap + c < taps {
                    loaded[c] = w[(read.y * p.in_channels + read.x) * taps + first_tap + c];
                }
            }
            #[unroll]
            for c in 0..COPY_TAPS {
                tile[c * GROUP + t % SPAN * SPAN + t / SPAN] = loaded[c];
            }
            workgroup_barrier();
            #[unroll]
            for c in 0..COPY_TAPS {
                let tap = first_tap + c;
                if writes && tap < taps {
                    w_transposed[(written.x * taps + tap) * p.out_channels + written.y] =
                        tile[c * GROUP + t] as f16;
                }
            }
            workgroup_barrier();
        }
    }

    /// `conv_grad_input_fragments` by taps, for stride 1 (`ConvGradInputFragmentsByTapSplit`
    /// cuts its sum), from the filter as `conv_weights_transposed_by_tap` lays it out.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [ceil_div(p.batch * p.in_h * p.in_w, BLOCK), ceil_div(p.in_channels, BLOCK)],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_grad_input_fragments_by_tap(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)]
        w_transposed: &[Vec4<f16>],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_g: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let pixels = p.in_h * p.in_w;
        let summed = vec2(0, p.out_channels * p.kernel_h * p.kernel_w);
        let acc = conv_fragments_by_tap_tile(
            half_w,
            half_g,
            w_transposed,
            grad_pre,
            p,
            true,
            origin,
            summed,
            t,
        );
        store_fragments(
            grad_x,
            0,
            &acc,
            p.in_channels,
            p.batch * pixels,
            images_layout(p.in_channels, pixels),
            origin,
            spill,
            t,
        );
    }

    /// `conv_grad_input_fragments_by_tap` over a staged window (stride 1, output channels a
    /// multiple of `DEPTH`, a reach of at most `WINDOW - COLS`, and with `ALL_TAPS` a filter
    /// of at most `SLICES` taps), from the filter as `conv_weights_transposed_by_tap` lays it
    /// out.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = WindowBlocking,
        grid = [
            ceil_div(
                p.batch
                    * (p.in_h + (p.kernel_h - 1) * p.dilation_h)
                    * (p.in_w + (p.kernel_w - 1) * p.dilation_w),
                COLS
            ),
            ceil_div(p.in_channels, BLOCK)
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_grad_input_window(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)]
        w_transposed: &[Vec4<f16>],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] half_w: &mut [f16; ROWS_HALVES],
        #[workgroup] window: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let t = local_index();
        let origin = vec2(workgroup_id().x * COLS, workgroup_id().y * BLOCK);
        let summed = vec2(0, p.out_channels);
        let acc = conv_window_tile(
            half_w,
            window,
            w_transposed,
            grad_pre,
            p,
            true,
            origin,
            summed,
            t,
        );
        store_conv_window_grad_input(&acc, grad_x, p, spill, origin, t);
    }

    /// The input gradient's epilogue over a staged window's block at `origin`: the
    /// accumulators into `grad_x` (NCHW) for the positions of the padded grid that are pixels
    /// of the input.
    fn store_conv_window_grad_input(
        acc: &[FragC16<f32>; FRAGS],
        grad_x: &mut [f32],
        p: &ConvParams,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let pixels = p.in_h * p.in_w;
        let columns = window_columns(p, true, origin, t);
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<f32>(acc[f], spill, t);
            let column = columns[f % FRAG_COLS];
            #[unroll]
            for e in 0..8 {
                let row = origin.y + fragment_at::<f32>(t, f, e).y;
                if row < p.in_channels && column.y != 0 {
                    grad_x[column.x + row * pixels] = values[e];
                }
            }
        }
    }

    /// `ConvGradInputFragmentsSplit` by taps.
    #[family(
        conv_grad_input_fragments_by_tap_partial,
        conv_grad_input_fragments_by_tap_reduce
    )]
    pub struct ConvGradInputFragmentsByTapSplit {
        p: &ConvParams,
        /// The filter as `conv_weights_transposed_by_tap` lays it out.
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w / 4)]
        w_transposed: &[Vec4<f16>],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_pre: &[f32],
        /// Scratch: one input-shaped partial sum per slice.
        #[len(p.splits * p.batch * p.in_channels * p.in_h * p.in_w)]
        partial: &mut [f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        grad_x: &mut [f32],
    }

    /// `conv_grad_input_fragments_partial` by taps.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.batch * p.in_h * p.in_w, BLOCK),
            ceil_div(p.in_channels, BLOCK),
            p.splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        specialize(p.kernel_h == 3 && p.kernel_w == 3)
    )]
    pub fn conv_grad_input_fragments_by_tap_partial(
        p: &ConvParams,
        w_transposed: &[Vec4<f16>],
        grad_pre: &[f32],
        partial: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_g: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let pixels = p.in_h * p.in_w;
        let summed = slice(
            split,
            p.split_depth,
            p.out_channels * p.kernel_h * p.kernel_w,
        );
        let acc = conv_fragments_by_tap_tile(
            half_w,
            half_g,
            w_transposed,
            grad_pre,
            p,
            true,
            origin,
            summed,
            t,
        );
        let (rows, columns) = (p.in_channels, p.batch * pixels);
        let offset = split * rows * columns;
        store_fragments(
            partial,
            offset,
            &acc,
            rows,
            columns,
            images_layout(rows, pixels),
            origin,
            spill,
            t,
        );
    }

    /// `conv_grad_input_reduce` for `ConvGradInputFragmentsByTapSplit`.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.batch * p.in_channels * p.in_h * p.in_w, GROUP)]
    )]
    pub fn conv_grad_input_fragments_by_tap_reduce(
        p: &ConvParams,
        partial: &[f32],
        grad_x: &mut [f32],
    ) {
        sum_input_slices(p, partial, grad_x, global_id().x);
    }

    /// Stride phase `z` of a strided input gradient (its grid `z`): the remainders of the
    /// padded rows and columns it covers, by the stride.
    fn stride_phase(p: &ConvParams, z: u32) -> Vec2<u32> {
        vec2(z / p.stride_w, z % p.stride_w)
    }

    /// The first input row and column of stride phase `phase`.
    fn phase_origin(p: &ConvParams, phase: Vec2<u32>) -> Vec2<u32> {
        vec2(
            (phase.x + p.stride_h - p.pad_top % p.stride_h) % p.stride_h,
            (phase.y + p.stride_w - p.pad_left % p.stride_w) % p.stride_w,
        )
    }

    /// How many of `first, first + stride, ..` are below `size`.
    fn strided_count(first: u32, size: u32, stride: u32) -> u32 {
        if first < size {
            ceil_div(size - first, stride)
        } else {
            0
        }
    }

    /// The input gradient of a convolution with at most `FEW` input channels (an image's
    /// first layer) and dilation 1, computed directly: the implicit GEMM's rows would be the
    /// input channels, and a block of 64 of them would hold three. An invocation computes
    /// every channel of a run of `RUN` input pixels along a row of one stride phase (grid
    /// `z`, as in `conv_grad_input_phased`), summing over the output channels and the
    /// phase's taps: each filter value it reads serves `RUN` pixels, and the gradients it
    /// reads for them are adjacent.
    #[kernel(
        workgroup = [GROUP],
        grid = [
            ceil_div(
                p.batch * ceil_div(p.in_h, p.stride_h) * ceil_div(ceil_div(p.in_w, p.stride_w), RUN),
                GROUP
            ),
            1,
            p.stride_h * p.stride_w
        ]
    )]
    pub fn conv_grad_input_few(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
    ) {
        let phase = stride_phase(p, workgroup_id().z);
        let (phase_h, phase_w) = (phase.x, phase.y);
        // The phase's first input row and column, and how many of each it has.
        let start = phase_origin(p, phase);
        let (row0, col0) = (start.x, start.y);
        let rows = strided_count(row0, p.in_h, p.stride_h);
        let cols = strided_count(col0, p.in_w, p.stride_w);
        // Its taps: rows `phase_h, phase_h + stride_h, ..`, columns likewise.
        let taps_h = strided_count(phase_h, p.kernel_h, p.stride_h);
        let taps_w = strided_count(phase_w, p.kernel_w, p.stride_w);
        let runs = ceil_div(cols, RUN);
        let i = global_id().x;
        if i < p.batch * rows * runs {
            let (n, at) = (i / (rows * runs), i % (rows * runs));
            let (row, first) = (at / runs, at % runs * RUN);
            let ih = row0 + row * p.stride_h;
            // The output pixel tap (`th`, `tw`) of the phase puts on the run's pixel `j` is
            // (`base.x - th`, `base.y + j - tw`); see `conv_grad_input_phased`.
            let base = vec2(
                (ih + p.pad_top - phase_h) / p.stride_h,
                (col0 + first * p.stride_w + p.pad_left - phase_w) / p.stride_w,
            );
            let mut acc = [0.0f32; FEW * RUN];
            for co in 0..p.out_channels {
                let image = (n * p.out_channels + co) * p.out_h;
                for th in 0..taps_h {
                    // Taps past the pixel wrap around and fail `< out_h`.
                    let oh = base.x.wrapping_sub(th);
                    if oh < p.out_h {
                        let fh = phase_h + th * p.stride_h;
                        for tw in 0..taps_w {
                            let mut g = [0.0f32; RUN];
                            #[unroll]
                            for j in 0..RUN {
                                let ow = (base.y + j).wrapping_sub(tw);
                                if ow < p.out_w {
                                    g[j] = grad_pre[(image + oh) * p.out_w + ow];
                                }
                            }
                            let fw = phase_w + tw * p.stride_w;
                            #[unroll]
                            for ci in 0..FEW {
                                if ci < p.in_channels {
                                    let tap = (co * p.in_channels + ci) * p.kernel_h + fh;
                                    let weight = w[tap * p.kernel_w + fw];
                                    #[unroll]
                                    for j in 0..RUN {
                                        acc[ci * RUN + j] += weight * g[j];
                                    }
                                }
                            }
                        }
                    }
                }
            }
            #[unroll]
            for j in 0..RUN {
                if first + j < cols {
                    let iw = col0 + (first + j) * p.stride_w;
                    #[unroll]
                    for ci in 0..FEW {
                        if ci < p.in_channels {
                            let index = ((n * p.in_channels + ci) * p.in_h + ih) * p.in_w + iw;
                            grad_x[index] = acc[ci * RUN + j];
                        }
                    }
                }
            }
        }
    }

    // The input gradient of a strided convolution (dilation 1), one sub-problem per stride
    // phase (grid `z`): the input pixels whose padded row and column leave the remainders
    // (`z / stride_w`, `z % stride_w`) by the stride receive only the filter taps with the
    // same remainders, so each phase sums over exactly the taps that land on output pixels
    // (`conv_grad_input` tests every tap and, at stride 2, drops three in four). Rows are
    // input channels, columns are (image, input pixel of the phase), the sum runs over
    // (output channel, tap of the phase). The helpers below describe a phase and gather its
    // operands for the f32 and the tensor-core kernels.

    /// Stride phase `phase`'s input pixels: its first row and column, and how many rows and
    /// columns it has.
    fn phase_grid(p: &ConvParams, phase: Vec2<u32>) -> Vec4<u32> {
        let start = phase_origin(p, phase);
        vec4(
            start.x,
            start.y,
            strided_count(start.x, p.in_h, p.stride_h),
            strided_count(start.y, p.in_w, p.stride_w),
        )
    }

    /// Stride phase `phase`'s filter taps, as (rows, columns): tap rows `phase.x, phase.x +
    /// stride_h, ..`, columns likewise.
    fn phase_taps(p: &ConvParams, phase: Vec2<u32>) -> Vec2<u32> {
        vec2(
            strided_count(phase.x, p.kernel_h, p.stride_h),
            strided_count(phase.y, p.kernel_w, p.stride_w),
        )
    }

    /// The input pixel of phase `phase` (laid out by `grid`) that invocation `t` gathers for
    /// in the block at `origin`: (column, image, and the output row and column that the
    /// phase's first tap puts on it; tap (`th`, `tw`) puts it on (row - `th`, column - `tw`)).
    fn phase_pixel(
        p: &ConvParams,
        phase: Vec2<u32>,
        grid: Vec4<u32>,
        origin: Vec2<u32>,
        t: u32,
    ) -> Vec4<u32> {
        let staged = origin.x + t % BLOCK;
        let (pixels, cols) = ((grid.z * grid.w).max(1), grid.w.max(1));
        let pixel = staged % pixels;
        let padded_h = grid.x + pixel / cols * p.stride_h + p.pad_top;
        let padded_w = grid.y + pixel % cols * p.stride_w + p.pad_left;
        // Exact divisions: the padded coordinates are the phase's remainders (and at least
        // them) by construction of the grid's first row and column.
        vec4(
            staged,
            staged / pixels,
            (padded_h - phase.x) / p.stride_h,
            (padded_w - phase.y) / p.stride_w,
        )
    }

    /// What invocation `t` stages from the filter at step `k0` of a phase's sum of `depth`,
    /// its column at (output channel, tap row, tap column of the phase) `wk`.
    fn phase_filter_rows(
        w: &[f32],
        p: &ConvParams,
        phase: Vec2<u32>,
        wk: Vec3<u32>,
        depth: u32,
        origin: Vec2<u32>,
        k0: u32,
        t: u32,
    ) -> [f32; LOADS] {
        let (fh, fw) = (phase.x + wk.y * p.stride_h, phase.y + wk.z * p.stride_w);
        let mut from_w = [0.0f32; LOADS];
        #[unroll]
        for r in 0..LOADS {
            let ci = origin.y + across_row(t, r);
            if ci < p.in_channels && k0 + t % DEPTH < depth {
                from_w[r] = w[((wk.x * p.in_channels + ci) * p.kernel_h + fh) * p.kernel_w + fw];
            }
        }
        from_w
    }

    /// What invocation `t` stages from `grad_pre` at step `k0` for the phase's input pixel
    /// `pixel` (see `phase_pixel`), over a sum and columns of `sizes` (depth, columns) and
    /// `taps` taps, its loads at (output channel, tap row, tap column) `at`, which it advances
    /// by `by` to the next step.
    fn phase_grad_gather(
        grad_pre: &[f32],
        p: &ConvParams,
        pixel: Vec4<u32>,
        sizes: Vec2<u32>,
        taps: Vec2<u32>,
        by: Vec3<u32>,
        at: &mut [Vec3<u32>; LOADS],
        k0: u32,
        t: u32,
    ) -> [f32; LOADS] {
        let mut from_g = [0.0f32; LOADS];
        #[unroll]
        for r in 0..LOADS {
            let k = k0 + along_depth(t, r);
            // Taps past the pixel wrap around and fail `< out_h`.
            let oh = pixel.z.wrapping_sub(at[r].y);
            let ow = pixel.w.wrapping_sub(at[r].z);
            if pixel.x < sizes.y && k < sizes.x && oh < p.out_h && ow < p.out_w {
                let co = at[r].x;
                from_g[r] =
                    grad_pre[((pixel.y * p.out_channels + co) * p.out_h + oh) * p.out_w + ow];
            }
            at[r] = advance(at[r], by, taps.x, taps.y);
        }
        from_g
    }

    /// Where input channel `ci` of column `col` of a phase laid out by `grid` lies in `grad_x`.
    fn phase_input_index(p: &ConvParams, grid: Vec4<u32>, ci: u32, col: u32) -> u32 {
        let pixels = grid.z * grid.w;
        let (image, at) = (col / pixels, col % pixels);
        let ih = grid.x + at / grid.w * p.stride_h;
        let iw = grid.y + at % grid.w * p.stride_w;
        ((image * p.in_channels + ci) * p.in_h + ih) * p.in_w + iw
    }

    /// The input gradient of a strided convolution (dilation 1), one stride phase per grid
    /// `z` (see above).
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.batch * ceil_div(p.in_h, p.stride_h) * ceil_div(p.in_w, p.stride_w), BLOCK),
            ceil_div(p.in_channels, BLOCK),
            p.stride_h * p.stride_w
        ]
    )]
    pub fn conv_grad_input_phased(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] tile_w: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_g: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let phase = stride_phase(p, workgroup_id().z);
        let (grid, taps) = (phase_grid(p, phase), phase_taps(p, phase));
        let sizes = vec2(p.out_channels * taps.x * taps.y, p.batch * grid.z * grid.w);
        let pixel = phase_pixel(p, phase, grid, origin, t);
        let by = digits(DEPTH, taps.x, taps.y);
        let mut wk = digits(t % DEPTH, taps.x, taps.y);
        let mut at = conv_taps(taps, 0, t);
        let mut acc = [0.0f32; REG * REG];
        for k0 in (0..sizes.x).step_by(DEPTH) {
            let from_w = phase_filter_rows(w, p, phase, wk, sizes.x, origin, k0, t);
            let from_g = phase_grad_gather(grad_pre, p, pixel, sizes, taps, by, &mut at, k0, t);
            wk = advance(wk, by, taps.x, taps.y);
            step(tile_w, &from_w, tile_g, &from_g, false, &mut acc, k0, t);
        }
        #[unroll]
        for e in 0..REG * REG {
            let (ci, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if ci < p.in_channels && col < sizes.y {
                grad_x[phase_input_index(p, grid, ci, col)] = acc[e];
            }
        }
    }

    /// `conv_grad_input_phased` on the tensor cores.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.batch * ceil_div(p.in_h, p.stride_h) * ceil_div(p.in_w, p.stride_w), BLOCK),
            ceil_div(p.in_channels, BLOCK),
            p.stride_h * p.stride_w
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS)
    )]
    pub fn conv_grad_input_phased_fragments(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] half_w: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_g: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let phase = stride_phase(p, workgroup_id().z);
        let (grid, taps) = (phase_grid(p, phase), phase_taps(p, phase));
        let sizes = vec2(p.out_channels * taps.x * taps.y, p.batch * grid.z * grid.w);
        let pixel = phase_pixel(p, phase, grid, origin, t);
        let by = digits(DEPTH, taps.x, taps.y);
        let mut wk = digits(t % DEPTH, taps.x, taps.y);
        let mut at = conv_taps(taps, 0, t);
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        let from_w = phase_filter_rows(w, p, phase, wk, sizes.x, origin, 0, t);
        let from_g = phase_grad_gather(grad_pre, p, pixel, sizes, taps, by, &mut at, 0, t);
        wk = advance(wk, by, taps.x, taps.y);
        stage_fragments(half_w, &from_w, half_g, &from_g, false, t);
        for k0 in (DEPTH..sizes.x).step_by(DEPTH) {
            let from_w = phase_filter_rows(w, p, phase, wk, sizes.x, origin, k0, t);
            let from_g = phase_grad_gather(grad_pre, p, pixel, sizes, taps, by, &mut at, k0, t);
            wk = advance(wk, by, taps.x, taps.y);
            multiply_fragments(half_w, half_g, false, &mut acc, t);
            stage_fragments(half_w, &from_w, half_g, &from_g, false, t);
        }
        multiply_fragments(half_w, half_g, false, &mut acc, t);
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<f32>(acc[f], spill, t);
            #[unroll]
            for e in 0..8 {
                let element = origin + fragment_at::<f32>(t, f, e);
                if element.y < p.in_channels && element.x < sizes.y {
                    grad_x[phase_input_index(p, grid, element.y, element.x)] = values[e];
                }
            }
        }
    }

    /// The (input channel, tap row, tap column) of each column invocation `t` stages from
    /// `x` for the filter gradient's block at `origin`, the same at every step. Both operands
    /// are staged across, each invocation loading from both at the same position along the
    /// summed dimension, so that a subgroup's loads from `x` are runs of 8 adjacent pixels of
    /// 4 columns.
    fn conv_weight_columns(p: &ConvParams, origin: Vec2<u32>, t: u32) -> [Vec3<u32>; COL_LOADS] {
        let taps = p.kernel_h * p.kernel_w;
        let mut columns_at = [vec3(0u32, 0, 0); COL_LOADS];
        #[unroll]
        for r in 0..COL_LOADS {
            let column = origin.x + across_row(t, r);
            columns_at[r] = vec3(
                column / taps,
                column % taps / p.kernel_w * p.dilation_h,
                column % taps % p.kernel_w * p.dilation_w,
            );
        }
        columns_at
    }

    /// What invocation `t` stages from `grad_pre` for the filter gradient at (image, output
    /// row, output column) `at` (`inside` the slice).
    fn conv_weight_rows(
        grad_pre: &[f32],
        p: &ConvParams,
        at: Vec3<u32>,
        inside: bool,
        origin: Vec2<u32>,
        t: u32,
    ) -> [f32; LOADS] {
        let pixels = p.out_h * p.out_w;
        let pixel = at.y * p.out_w + at.z;
        let mut from_g = [0.0f32; LOADS];
        #[unroll]
        for r in 0..LOADS {
            let row = origin.y + across_row(t, r);
            if row < p.out_channels && inside {
                from_g[r] = grad_pre[(at.x * p.out_channels + row) * pixels + pixel];
            }
        }
        from_g
    }

    /// What invocation `t` stages from `x` for the filter gradient at (image, output row,
    /// output column) `at`, its columns at `columns_at`.
    fn conv_weight_gather(
        x: &[f32],
        p: &ConvParams,
        columns_at: &[Vec3<u32>; COL_LOADS],
        at: Vec3<u32>,
        inside: bool,
        origin: Vec2<u32>,
        t: u32,
    ) -> [f32; COL_LOADS] {
        let columns = p.in_channels * p.kernel_h * p.kernel_w;
        let (top, left) = (at.y * p.stride_h, at.z * p.stride_w);
        let mut from_x = [0.0f32; COL_LOADS];
        #[unroll]
        for r in 0..COL_LOADS {
            let tap = columns_at[r];
            let ih = (top + tap.y).wrapping_sub(p.pad_top);
            let iw = (left + tap.z).wrapping_sub(p.pad_left);
            let column = origin.x + across_row(t, r);
            if column < columns && inside && ih < p.in_h && iw < p.in_w {
                from_x[r] = x[((at.x * p.in_channels + tap.x) * p.in_h + ih) * p.in_w + iw];
            }
        }
        from_x
    }

    /// The gradient of a convolution's filter (wgrad) as an implicit GEMM: M = output
    /// channels, N = input channels x kernel taps, K = images x output pixels. K is long and
    /// M x N often small, so K is split into `p.splits` slices (grid `z`): the first is summed
    /// into `grad_w`, each other one into its own filter of `partial`, and
    /// `conv_grad_weight_reduce` adds those to `grad_w`.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.in_channels * p.kernel_h * p.kernel_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ]
    )]
    pub fn conv_grad_weight(
        p: &ConvParams,
        x: &[f32],
        grad_pre: &[f32],
        partial: &mut [f32],
        grad_w: &mut [f32],
        #[workgroup] tile_g: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_x: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let taps = p.kernel_h * p.kernel_w;
        let (pixels, columns) = (p.out_h * p.out_w, p.in_channels * taps);
        let summed = slice(split, p.split_depth, p.batch * pixels);
        let (begin, end) = (summed.x, summed.y);

        let columns_at = conv_weight_columns(p, origin, t);
        // Where the loads are along the summed dimension, as (image, output row, output
        // column), advanced `DEPTH` a step.
        let by = digits(DEPTH, p.out_h, p.out_w);
        let mut at = digits(begin + t % DEPTH, p.out_h, p.out_w);

        let mut acc = [0.0f32; REG * REG];
        for k0 in (begin..end).step_by(DEPTH) {
            let inside = k0 + t % DEPTH < end;
            let from_g = conv_weight_rows(grad_pre, p, at, inside, origin, t);
            let from_x = conv_weight_gather(x, p, &columns_at, at, inside, origin, t);
            at = advance(at, by, p.out_h, p.out_w);
            step(tile_g, &from_g, tile_x, &from_x, true, &mut acc, k0, t);
        }
        // The first slice goes straight to `grad_w`, the others to their filter of `partial`.
        let rows = p.out_channels;
        if split == 0 {
            store_tile(grad_w, 0, &acc, rows, columns, columns, origin, t);
        } else {
            store_tile(
                partial,
                (split - 1) * rows * columns,
                &acc,
                rows,
                columns,
                columns,
                origin,
                t,
            );
        }
    }

    /// The (input channel, tap row, tap column) of the first column invocation `t` stages
    /// from `x` for the filter gradient by taps, whose columns run over (tap, input channel):
    /// with the input channels a multiple of `BLOCK`, the whole block at `origin` lies in one
    /// tap, and `t`'s other columns are `GROUP / DEPTH` channels apart.
    fn conv_weight_tap_column(p: &ConvParams, origin: Vec2<u32>, t: u32) -> Vec3<u32> {
        let tap = origin.x / p.in_channels;
        vec3(
            origin.x % p.in_channels + across_row(t, 0),
            tap / p.kernel_w * p.dilation_h,
            tap % p.kernel_w * p.dilation_w,
        )
    }

    /// What invocation `t` stages from `x` for the filter gradient at (image, output row,
    /// output column) `at` (`inside` the slice): by taps, from its first column `tap_column`
    /// (see `conv_weight_tap_column`), where one test of the window covers its loads;
    /// otherwise from its columns `columns_at` (see `conv_weight_gather`).
    fn conv_weight_source(
        x: &[f32],
        p: &ConvParams,
        by_tap: bool,
        columns_at: &[Vec3<u32>; COL_LOADS],
        tap_column: Vec3<u32>,
        at: Vec3<u32>,
        inside: bool,
        origin: Vec2<u32>,
        t: u32,
    ) -> [f32; COL_LOADS] {
        if !by_tap {
            return conv_weight_gather(x, p, columns_at, at, inside, origin, t);
        }
        let plane = p.in_h * p.in_w;
        let ih = (at.y * p.stride_h + tap_column.y).wrapping_sub(p.pad_top);
        let iw = (at.z * p.stride_w + tap_column.z).wrapping_sub(p.pad_left);
        let mut from_x = [0.0f32; COL_LOADS];
        if inside && ih < p.in_h && iw < p.in_w {
            let first = (at.x * p.in_channels + tap_column.x) * plane + ih * p.in_w + iw;
            #[unroll]
            for r in 0..COL_LOADS {
                from_x[r] = x[first + (across_row(t, r) - across_row(t, 0)) * plane];
            }
        }
        from_x
    }

    /// The filter gradient's tensor-core tile of the block at `origin`, summing `summed` of
    /// (image, output row, output column): its columns run over (input channel, tap) or,
    /// `by_tap`, over (tap, input channel) (see `conv_weight_tap_column`). Both operands are
    /// fetched across, so `x` is staged as the rows' operand is (see `multiply_fragments`).
    fn conv_grad_weight_fragments_tile(
        half_g: &mut [f16; BLOCK * A_STRIDE],
        half_x: &mut [f16; COLUMNS],
        x: &[f32],
        grad_pre: &[f32],
        p: &ConvParams,
        by_tap: bool,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [FragC16<f32>; FRAGS] {
        let columns_at = conv_weight_columns(p, origin, t);
        let tap_column = conv_weight_tap_column(p, origin, t);
        let by = digits(DEPTH, p.out_h, p.out_w);
        let mut at = digits(summed.x + t % DEPTH, p.out_h, p.out_w);
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        let inside = summed.x + t % DEPTH < summed.y;
        let from_g = conv_weight_rows(grad_pre, p, at, inside, origin, t);
        let from_x =
            conv_weight_source(x, p, by_tap, &columns_at, tap_column, at, inside, origin, t);
        at = advance(at, by, p.out_h, p.out_w);
        stage_fragments(half_g, &from_g, half_x, &from_x, true, t);
        for k0 in (summed.x + DEPTH..summed.y).step_by(DEPTH) {
            let inside = k0 + t % DEPTH < summed.y;
            let from_g = conv_weight_rows(grad_pre, p, at, inside, origin, t);
            let from_x =
                conv_weight_source(x, p, by_tap, &columns_at, tap_column, at, inside, origin, t);
            at = advance(at, by, p.out_h, p.out_w);
            multiply_fragments(half_g, half_x, true, &mut acc, t);
            stage_fragments(half_g, &from_g, half_x, &from_x, true, t);
        }
        multiply_fragments(half_g, half_x, true, &mut acc, t);
        acc
    }

    /// Stores the filter gradient's tile `acc` of slice `split` from columns over (input
    /// channel, tap) or, `by_tap`, over (tap, input channel): the first slice straight to
    /// `grad_w`, the others to their filter of `partial`, both as the filter is laid out.
    fn store_grad_weight_fragments(
        acc: &[FragC16<f32>; FRAGS],
        grad_w: &mut [f32],
        partial: &mut [f32],
        p: &ConvParams,
        by_tap: bool,
        split: u32,
        origin: Vec2<u32>,
        spill: &mut [f32; SPILL],
        t: u32,
    ) {
        let taps = p.kernel_h * p.kernel_w;
        let (rows, columns) = (p.out_channels, p.in_channels * taps);
        let layout = if by_tap {
            vec4(p.in_channels, 1, columns, taps)
        } else {
            matrix_layout(columns)
        };
        if split == 0 {
            store_fragments(grad_w, 0, acc, rows, columns, layout, origin, spill, t);
        } else {
            let offset = (split - 1) * rows * columns;
            store_fragments(
                partial, offset, acc, rows, columns, layout, origin, spill, t,
            );
        }
    }

    /// `conv_grad_weight` on the tensor cores, split the same way (`conv_grad_weight_reduce`
    /// adds the slices after the first).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.in_channels * p.kernel_h * p.kernel_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS)
    )]
    pub fn conv_grad_weight_fragments(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len((p.splits - 1) * p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        partial: &mut [f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] grad_w: &mut [f32],
        #[workgroup] half_g: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let summed = slice(split, p.split_depth, p.batch * p.out_h * p.out_w);
        let acc = conv_grad_weight_fragments_tile(
            half_g, half_x, x, grad_pre, p, false, origin, summed, t,
        );
        store_grad_weight_fragments(&acc, grad_w, partial, p, false, split, origin, spill, t);
    }

    /// `conv_grad_weight_fragments` by taps, for input channels a multiple of `BLOCK`: its
    /// blocks' columns run over (tap, input channel), so each block lies in one tap and one
    /// test of the window covers an invocation's loads at a step. It stores the filter as it
    /// is laid out.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        grid = [
            ceil_div(p.in_channels * p.kernel_h * p.kernel_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS)
    )]
    pub fn conv_grad_weight_fragments_by_tap(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len((p.splits - 1) * p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        partial: &mut [f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] grad_w: &mut [f32],
        #[workgroup] half_g: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let summed = slice(split, p.split_depth, p.batch * p.out_h * p.out_w);
        let acc = conv_grad_weight_fragments_tile(
            half_g, half_x, x, grad_pre, p, true, origin, summed, t,
        );
        store_grad_weight_fragments(&acc, grad_w, partial, p, true, split, origin, spill, t);
    }

    /// `conv_grad_weight_fragments` as a stream (see `conv_forward_fragments_by_tap_streamed`),
    /// its steps `DEPTH` of (image, output pixel) (the last may be short): a filter gradient
    /// of few blocks with a long sum (512 x 7 x 7's are 144 blocks of 128 x 128 for an H100's
    /// 132 cores) runs on every core to the end instead of in slices or waves.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = StreamBlocking,
        grid = [p.workers],
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY + 4, invocations = INVOCATIONS)
    )]
    pub fn conv_grad_weight_fragments_streamed(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        // Scratch: two blocks per workgroup, `BLOCK * COLS` elements each.
        #[len(2 * p.workers * BLOCK * COLS)] partial: &mut [f32],
        // Scratch: a count per workgroup, zeros before the dispatch and after it.
        #[len(p.workers)] arrivals: &mut [AtomicU32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] grad_w: &mut [f32],
        #[workgroup] half_g: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] half_x: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
        #[workgroup] finishing: &mut [u32; 1],
    ) {
        let (t, worker) = (local_index(), workgroup_id().x);
        let columns = p.in_channels * p.kernel_h * p.kernel_w;
        let depth = p.batch * p.out_h * p.out_w;
        let blocks = stream_blocks(p.out_channels, columns, p.workers);
        let steps = ceil_div(depth, DEPTH);
        let share = stream_share(blocks, steps, p.workers, worker);
        let mut j = 0u32;
        while j < share.x + share.z - share.y {
            let part = stream_part(blocks, steps, p.workers, worker, share, j);
            let origin = vec2(part.x % blocks.x * COLS, part.x / blocks.x * BLOCK);
            let summed = vec2(part.y * DEPTH, (part.z * DEPTH).min(depth));
            let acc = conv_grad_weight_fragments_tile(
                half_g, half_x, x, grad_pre, p, false, origin, summed, t,
            );
            if part.y == 0 && part.z == steps {
                let layout = matrix_layout(columns);
                let rows = p.out_channels;
                store_fragments(grad_w, 0, &acc, rows, columns, layout, origin, spill, t);
            } else {
                store_block_fragments(partial, part.w * BLOCK * COLS, &acc, t);
                let hand = stream_hand_over(arrivals, finishing, blocks, steps, p.workers, part, t);
                if hand.w != 0 {
                    let layout = matrix_layout(columns);
                    let rows = p.out_channels;
                    finish_block(partial, hand.xyz, grad_w, rows, columns, layout, origin, t);
                }
            }
            j += part.z - part.y;
        }
    }

    /// `grad_w += ` the filter gradient's other `p.splits - 1` partial sums; no workgroups
    /// when there is one slice.
    #[kernel(
        workgroup = [GROUP],
        grid = [
            ceil_div(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w, GROUP)
                * min(p.splits - 1, 1)
        ]
    )]
    pub fn conv_grad_weight_reduce(p: &ConvParams, partial: &[f32], grad_w: &mut [f32]) {
        let i = global_id().x;
        let len = p.out_channels * p.in_channels * p.kernel_h * p.kernel_w;
        if i < len {
            grad_w[i] = grad_w[i] + sum_slices(partial, p.splits - 1, len, i);
        }
    }

    /// The output pixels along each edge of a tile of Winograd's F(3x3, 4x4).
    pub const TILE: u32 = 4;

    /// The input pixels along each edge of the patch a tile sees, and of a transformed tile.
    pub const PATCH: u32 = TILE + 2;

    /// The points of a transformed tile.
    pub const POINTS: u32 = PATCH * PATCH;

    /// The filter gradient of a 3 x 3 convolution of stride 1 and dilation 1 by Winograd's
    /// minimal filtering F(3x3, 4x4), in 6 x 6 / (16 x 9) = a quarter of the multiplications
    /// of the implicit GEMM. The output pixels are cut into tiles of 4 x 4; each tile of
    /// `grad_pre` and the 6 x 6 patch of `x` it sees become 6 x 6 tiles in a transformed
    /// space (`winograd_gradient_tiles`, `winograd_input_tiles`), where the correlation of
    /// the two is a product point by point. Summed over every tile, that is one GEMM per
    /// point (`winograd_multiply`: output channels x input channels, summed over tiles, in
    /// `p.splits` slices), and `winograd_filter` adds the slices up and transforms the 6 x 6
    /// sums back into the 3 x 3 filter.
    ///
    /// With `d` a patch of `x`, `g` a tile of `grad_pre` and `m` the summed products, the
    /// transforms are `Bᵀ d B`, `A g Aᵀ` and `Gᵀ m G`, the matrices of F(4, 3) (interpolation
    /// at 0, ±1, ±2 and infinity) with the roles of `A` and `G` exchanged:
    ///
    /// ```text
    ///      | 4  0 -5  0  1  0 |       | 1  0  0  0 |
    ///      | 0 -4 -4  1  1  0 |       | 1  1  1  1 |        | 1/4 -1/6 -1/6 1/24  1/24 0 |
    /// Bᵀ = | 0  4 -4 -1  1  0 |   A = | 1 -1  1 -1 |   Gᵀ = |  0  -1/6  1/6 1/12 -1/12 0 |
    ///      | 0 -2 -1  2  1  0 |       | 1  2  4  8 |        |  0  -1/6 -1/6  1/6  1/6  1 |
    ///      | 0  2 -1 -2  1  0 |       | 1 -2  4 -8 |
    ///      | 0  4  0 -5  0  1 |       | 0  0  0  1 |
    /// ```
    #[family(
        winograd_input_tiles,
        winograd_gradient_tiles,
        winograd_multiply,
        winograd_filter
    )]
    pub struct ConvGradWeightWinograd {
        /// The shape (a 3 x 3 filter, stride 1, dilation 1); `splits` and `split_depth` cut
        /// the tiles as `winograd_multiply`'s blocking needs.
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)]
        x: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)]
        grad_pre: &[f32],
        /// Scratch: the transformed patches of `x`, `[POINTS][in_channels][tiles]`.
        #[len(36 * p.in_channels * p.batch * ceil_div(p.out_h, 4) * ceil_div(p.out_w, 4))]
        input_tiles: &mut [f32],
        /// Scratch: the transformed tiles of `grad_pre`, `[POINTS][out_channels][tiles]`.
        #[len(36 * p.out_channels * p.batch * ceil_div(p.out_h, 4) * ceil_div(p.out_w, 4))]
        gradient_tiles: &mut [f32],
        /// Scratch: each slice's sums, `[splits][POINTS][out_channels][in_channels]`.
        #[len(p.splits * 36 * p.out_channels * p.in_channels)]
        products: &mut [f32],
        #[len(p.out_channels * p.in_channels * 9)]
        grad_w: &mut [f32],
    }

    /// The tiles of `TILE` x `TILE` output pixels of a Winograd filter gradient, as (rows,
    /// columns).
    fn winograd_grid(p: &ConvParams) -> Vec2<u32> {
        vec2(ceil_div(p.out_h, TILE), ceil_div(p.out_w, TILE))
    }

    /// `Bᵀ v` for a column `v` of a patch of `x` (and, applied to rows, `v B`).
    fn winograd_input(v: &[f32; PATCH]) -> [f32; PATCH] {
        [
            4.0 * v[0] - 5.0 * v[2] + v[4],
            -4.0 * (v[1] + v[2]) + v[3] + v[4],
            4.0 * (v[1] - v[2]) - v[3] + v[4],
            2.0 * (v[3] - v[1]) - v[2] + v[4],
            2.0 * (v[1] - v[3]) - v[2] + v[4],
            4.0 * v[1] - 5.0 * v[3] + v[5],
        ]
    }

    /// `A v` for a column `v` of a tile of `grad_pre` (and, applied to rows, `v Aᵀ`).
    fn winograd_gradient(v: &[f32; TILE]) -> [f32; PATCH] {
        let (even, odd) = (v[0] + v[2], v[1] + v[3]);
        let (even2, odd2) = (v[0] + 4.0 * v[2], 2.0 * v[1] + 8.0 * v[3]);
        [
            v[0],
            even + odd,
            even - odd,
            even2 + odd2,
            even2 - odd2,
            v[3],
        ]
    }

    /// `Gᵀ v` for a column `v` of summed products (and, applied to rows, `v G`).
    fn winograd_filter_taps(v: &[f32; PATCH]) -> [f32; 3] {
        let (sum12, sum34) = (v[1] + v[2], v[3] + v[4]);
        [
            0.25 * v[0] - sum12 / 6.0 + sum34 / 24.0,
            (v[2] - v[1]) / 6.0 + (v[3] - v[4]) / 12.0,
            (sum34 - sum12) / 6.0 + v[5],
        ]
    }

    /// `Bᵀ d B` of the `PATCH` x `PATCH` patch `d` (row-major), by columns then rows.
    fn winograd_input_tile(d: &[f32; POINTS]) -> [f32; POINTS] {
        let mut columns = [0.0f32; POINTS];
        #[unroll]
        for c in 0..PATCH {
            let mut column = [0.0f32; PATCH];
            #[unroll]
            for r in 0..PATCH {
                column[r] = d[r * PATCH + c];
            }
            let column = winograd_input(&column);
            #[unroll]
            for r in 0..PATCH {
                columns[r * PATCH + c] = column[r];
            }
        }
        let mut tile = [0.0f32; POINTS];
        #[unroll]
        for r in 0..PATCH {
            let mut row = [0.0f32; PATCH];
            #[unroll]
            for c in 0..PATCH {
                row[c] = columns[r * PATCH + c];
            }
            let row = winograd_input(&row);
            #[unroll]
            for c in 0..PATCH {
                tile[r * PATCH + c] = row[c];
            }
        }
        tile
    }

    /// Writes the transformed tile `values` to its points of `tiles`
    /// (`[POINTS][channels][count]`), at `channel` and tile `tile`.
    fn put_tile(
        tiles: &mut [f32],
        values: &[f32; POINTS],
        channels: u32,
        count: u32,
        channel: u32,
        tile: u32,
    ) {
        #[unroll]
        for point in 0..POINTS {
            tiles[(point * channels + channel) * count + tile] = values[point];
        }
    }

    /// `input_tiles[.., c, tile]` = `Bᵀ d B` for the `PATCH` x `PATCH` patch `d` of `x`'s
    /// channel `c` (grid `y`) that tile `tile` of the output sees, zero outside the image.
    #[kernel(
        workgroup = [GROUP],
        grid = [
            ceil_div(p.batch * ceil_div(p.out_h, TILE) * ceil_div(p.out_w, TILE), GROUP),
            p.in_channels
        ]
    )]
    pub fn winograd_input_tiles(p: &ConvParams, x: &[f32], input_tiles: &mut [f32]) {
        let grid = winograd_grid(p);
        let count = p.batch * grid.x * grid.y;
        let (tile, c) = (global_id().x, workgroup_id().y);
        if tile < count {
            // (image, tile row, tile column).
            let at = digits(tile, grid.x, grid.y);
            let plane = (at.x * p.in_channels + c) * p.in_h;
            let mut d = [0.0f32; POINTS];
            #[unroll]
            for row in 0..PATCH {
                // Padding wraps around and fails `< in_h`.
                let ih = (at.y * TILE + row).wrapping_sub(p.pad_top);
                #[unroll]
                for column in 0..PATCH {
                    let iw = (at.z * TILE + column).wrapping_sub(p.pad_left);
                    if ih < p.in_h && iw < p.in_w {
                        d[row * PATCH + column] = x[(plane + ih) * p.in_w + iw];
                    }
                }
            }
            let transformed = winograd_input_tile(&d);
            put_tile(input_tiles, &transformed, p.in_channels, count, c, tile);
        }
    }

    /// `gradient_tiles[.., k, tile]` = `A g Aᵀ` for the `TILE` x `TILE` tile `g` of
    /// `grad_pre`'s channel `k` (grid `y`), zero past the output's last row or column.
    #[kernel(
        workgroup = [GROUP],
        grid = [
            ceil_div(p.batch * ceil_div(p.out_h, TILE) * ceil_div(p.out_w, TILE), GROUP),
            p.out_channels
        ]
    )]
    pub fn winograd_gradient_tiles(p: &ConvParams, grad_pre: &[f32], gradient_tiles: &mut [f32]) {
        let grid = winograd_grid(p);
        let count = p.batch * grid.x * grid.y;
        let (tile, k) = (global_id().x, workgroup_id().y);
        if tile < count {
            let at = digits(tile, grid.x, grid.y);
            let plane = (at.x * p.out_channels + k) * p.out_h;
            let mut g = [0.0f32; TILE * TILE];
            #[unroll]
            for row in 0..TILE {
                let oh = at.y * TILE + row;
                #[unroll]
                for column in 0..TILE {
                    let ow = at.z * TILE + column;
                    if oh < p.out_h && ow < p.out_w {
                        g[row * TILE + column] = grad_pre[(plane + oh) * p.out_w + ow];
                    }
                }
            }
            // `A g` by columns, then each of its rows times `Aᵀ`.
            let mut columns = [0.0f32; PATCH * TILE];
            #[unroll]
            for c in 0..TILE {
                let mut column = [0.0f32; TILE];
                #[unroll]
                for r in 0..TILE {
                    column[r] = g[r * TILE + c];
                }
                let column = winograd_gradient(&column);
                #[unroll]
                for r in 0..PATCH {
                    columns[r * TILE + c] = column[r];
                }
            }
            let mut transformed = [0.0f32; POINTS];
            #[unroll]
            for r in 0..PATCH {
                let mut row = [0.0f32; TILE];
                #[unroll]
                for c in 0..TILE {
                    row[c] = columns[r * TILE + c];
                }
                let row = winograd_gradient(&row);
                #[unroll]
                for c in 0..PATCH {
                    transformed[r * PATCH + c] = row[c];
                }
            }
            put_tile(gradient_tiles, &transformed, p.out_channels, count, k, tile);
        }
    }

    /// Slice `z / POINTS` of the GEMM of point `z % POINTS`: `products[slice][point]` = the
    /// sum over the slice's tiles of `gradient_tiles[point] · input_tiles[point]ᵀ`, both
    /// staged across. The points' matrices are read as one tall matrix per operand, the block
    /// shifted to the point's rows: a block past the point's last row reads the next point's,
    /// whose products land outside the point's output and are not stored.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [
            ceil_div(p.in_channels, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            POINTS * p.splits
        ]
    )]
    pub fn winograd_multiply(
        p: &ConvParams,
        gradient_tiles: &[f32],
        input_tiles: &[f32],
        products: &mut [f32],
        #[workgroup] tile_g: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] tile_x: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let (point, split) = (workgroup_id().z % POINTS, workgroup_id().z / POINTS);
        let grid = winograd_grid(p);
        let count = p.batch * grid.x * grid.y;
        let (rows, columns) = (p.out_channels, p.in_channels);
        let shapes = vec4(count, POINTS * rows, count, POINTS * columns);
        let shifted = origin + vec2(point * columns, point * rows);
        let summed = slice(split, p.split_depth, count);
        let acc = mainloop(
            tile_g,
            tile_x,
            gradient_tiles,
            input_tiles,
            shapes,
            vec2(true, true),
            shifted,
            summed,
            t,
        );
        let offset = (split * POINTS + point) * rows * columns;
        store_tile(products, offset, &acc, rows, columns, columns, origin, t);
    }

    /// `grad_w[k, c]` = `Gᵀ m G`, `m` the `PATCH` x `PATCH` products of output channel `k`
    /// and input channel `c` summed over the slices. A workgroup takes `GROUP / POINTS`
    /// pairs (`k`, `c`): each invocation sums one point of one pair over the slices
    /// (adjacent invocations read adjacent pairs), and one invocation per pair transforms
    /// its sums.
    #[kernel(
        workgroup = [GROUP],
        grid = [ceil_div(p.out_channels * p.in_channels, GROUP / POINTS)]
    )]
    pub fn winograd_filter(
        p: &ConvParams,
        products: &[f32],
        grad_w: &mut [f32],
        #[workgroup] sums: &mut [f32; GROUP],
    ) {
        let t = local_index();
        let per_group = GROUP / POINTS;
        let pairs = p.out_channels * p.in_channels;
        let (point, pair) = (t / per_group, workgroup_id().x * per_group + t % per_group);
        if point < POINTS && pair < pairs {
            sums[t] = sum_slices(products, p.splits, POINTS * pairs, point * pairs + pair);
        }
        workgroup_barrier();
        if t < per_group && pair < pairs {
            // `Gᵀ m` by columns, then each of its three rows times `G`.
            let mut columns = [0.0f32; 3 * PATCH];
            #[unroll]
            for c in 0..PATCH {
                let mut column = [0.0f32; PATCH];
                #[unroll]
                for r in 0..PATCH {
                    column[r] = sums[(r * PATCH + c) * per_group + t];
                }
                let taps = winograd_filter_taps(&column);
                #[unroll]
                for r in 0..3 {
                    columns[r * PATCH + c] = taps[r];
                }
            }
            #[unroll]
            for r in 0..3 {
                let mut row = [0.0f32; PATCH];
                #[unroll]
                for c in 0..PATCH {
                    row[c] = columns[r * PATCH + c];
                }
                let taps = winograd_filter_taps(&row);
                #[unroll]
                for s in 0..3 {
                    grad_w[pair * 9 + r * 3 + s] = taps[s];
                }
            }
        }
    }

    /// `grad_bias[co]` = the sum of `grad_pre[n, co, ..]` over images and pixels; a workgroup
    /// per output channel and slice of the (image, pixel) pairs (`p.bias_splits` slices of
    /// `p.bias_split_depth`, one per `y`), each invocation keeping `SUMS` independent sums
    /// (several loads in flight), reduced through workgroup memory. Slice `y`'s sums go to
    /// row `y` of `grad_bias`: with several slices that is scratch, whose rows `d_bias` adds.
    #[kernel(workgroup = [GROUP], grid = [p.out_channels, p.bias_splits])]
    pub fn conv_grad_bias(
        p: &ConvParams,
        grad_pre: &[f32],
        grad_bias: &mut [f32],
        #[workgroup] partial: &mut [f32; GROUP],
    ) {
        let (t, co) = (local_index(), workgroup_id().x);
        let pixels = p.out_h * p.out_w;
        let summed = slice(workgroup_id().y, p.bias_split_depth, p.batch * pixels);
        // `SUMS` independent sums, each at its own (image, -, pixel), advanced without
        // dividing (see `digits`).
        let by = digits(SUMS * GROUP, 1, pixels);
        let mut at = [vec3(0u32, 0, 0); SUMS];
        #[unroll]
        for u in 0..SUMS {
            at[u] = digits(summed.x + t + u * GROUP, 1, pixels);
        }
        let mut sums = [0.0f32; SUMS];
        for first in (summed.x + t..summed.y).step_by(SUMS * GROUP) {
            #[unroll]
            for u in 0..SUMS {
                if first + u * GROUP < summed.y {
                    sums[u] += grad_pre[(at[u].x * p.out_channels + co) * pixels + at[u].z];
                }
                at[u] = advance(at[u], by, 1, pixels);
            }
        }
        partial[t] = total(&sums);
        workgroup_barrier();
        let mut half = GROUP / 2;
        while half > 0 {
            if t < half {
                partial[t] += partial[t + half];
            }
            workgroup_barrier();
            half /= 2;
        }
        if t == 0 && co < p.out_channels {
            grad_bias[workgroup_id().y * p.out_channels + co] = partial[0];
        }
    }

    /// `grad_pre = grad_y * act'(pre)`, elementwise.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.len, GROUP)])]
    pub fn activation_grad(
        p: &ElementwiseParams,
        #[len(p.len)] pre: &[f32],
        #[len(p.len)] grad_y: &[f32],
        #[len(p.len)] grad_pre: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.len {
            grad_pre[i] = grad_y[i] * activate_grad(pre[i], p.activation);
        }
    }

    /// Per row of `logits`: `probs = softmax(logits)` and `loss = -ln probs[label]`, computed
    /// as `logsumexp - logits[label]`. A label outside `0..classes` gives a loss of -1.
    #[kernel(workgroup = [NARROW], grid = [ceil_div(p.rows, NARROW)])]
    pub fn softmax_cross_entropy(
        p: &LossParams,
        #[len(p.rows * p.classes)] logits: &[f32],
        #[len(p.rows)] labels: &[u32],
        #[len(p.rows * p.classes)] probs: &mut [f32],
        #[len(p.rows)] loss: &mut [f32],
    ) {
        let row = global_id().x;
        if row < p.rows {
            let base = row * p.classes;
            let mut top = logits[base];
            for c in 1..p.classes {
                top = top.max(logits[base + c]);
            }
            let mut sum = 0.0;
            for c in 0..p.classes {
                let e = (logits[base + c] - top).exp();
                probs[base + c] = e;
                sum += e;
            }
            for c in 0..p.classes {
                probs[base + c] = probs[base + c] / sum;
            }
            let label = labels[row];
            loss[row] = if label < p.classes {
                sum.ln() + top - logits[base + label]
            } else {
                -1.0
            };
        }
    }

    /// `grad_logits = scale * (probs - one_hot(label))`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.rows * p.classes, GROUP)])]
    pub fn softmax_cross_entropy_grad(
        p: &LossParams,
        #[len(p.rows * p.classes)] probs: &[f32],
        #[len(p.rows)] labels: &[u32],
        #[len(p.rows * p.classes)] grad_logits: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.rows * p.classes {
            let target = if labels[i / p.classes] == i % p.classes {
                1.0
            } else {
                0.0
            };
            grad_logits[i] = p.scale * (probs[i] - target);
        }
    }

    /// SGD with momentum and weight decay, as PyTorch's: `g = grad + decay * param`,
    /// `velocity = momentum * velocity + g`, `param -= learning_rate * velocity`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.len, GROUP)])]
    pub fn sgd_step(
        p: &SgdParams,
        #[len(p.len)] grad: &[f32],
        #[len(p.len)] velocity: &mut [f32],
        #[len(p.len)] param: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.len {
            let g = grad[i] + p.weight_decay * param[i];
            let v = p.momentum * velocity[i] + g;
            velocity[i] = v;
            param[i] = param[i] - p.learning_rate * v;
        }
    }

    /// Adam (with L2 weight decay added to the gradient), with bias-corrected moments.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.len, GROUP)])]
    pub fn adam_step(
        p: &AdamParams,
        #[len(p.len)] grad: &[f32],
        #[len(p.len)] first: &mut [f32],
        #[len(p.len)] second: &mut [f32],
        #[len(p.len)] param: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.len {
            let g = grad[i] + p.weight_decay * param[i];
            let m = p.beta1 * first[i] + (1.0 - p.beta1) * g;
            let v = p.beta2 * second[i] + (1.0 - p.beta2) * g * g;
            first[i] = m;
            second[i] = v;
            let step = m / p.correction1 / ((v / p.correction2).sqrt() + p.epsilon);
            param[i] = param[i] - p.learning_rate * step;
        }
    }
}

pub(crate) use nn::*;

/// A GEMM-shaped kernel in each of its blockings, chosen by a [`Pick`].
#[derive(Clone, Debug)]
pub(crate) struct Blocked<K> {
    /// The first instance of [`Blocking`]: 128 x 128 output blocks, or where the device lacks
    /// the workgroup memory they need, the small blocking again. On the tensor cores, 128 x
    /// 128 blocks of 32-deep slices.
    pub large: K,
    /// The second: 64 x 64 output blocks.
    pub small: K,
    /// On the tensor cores, for the GEMMs: 128 x 128 blocks of 64-deep slices, where the
    /// device has the workgroup memory they take.
    pub deep: Option<K>,
    /// On the tensor cores: 128 x 128 blocks of 32-deep slices in 512 invocations, where the
    /// device has them.
    pub many: Option<K>,
}

/// The second instance of [`Blocking`]: 64 x 64 blocks.
const SMALL: Blocking = Blocking::ALL[Blocking::ALL.len() - 1];

/// Whether the small blocks cover an output whose narrower side has `rows` (the rule for the
/// blocking when autotuning is off: the small blocks unless the large ones fill).
pub(crate) fn small_blocks_fit(rows: u32) -> bool {
    rows <= SMALL.block()
}

/// Which instance of a [`Blocked`] kernel runs (a way's tile says which:
/// `tune::Tile::pick` and its kin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// [`Blocked::large`].
    Large,
    /// [`Blocked::small`].
    Small,
    /// [`Blocked::deep`], or the large one where there is none.
    Deep,
    /// [`Blocked::many`], or the large one where there is none.
    Many,
}

/// A kernel as built, or `None` where the device lacks the workgroup memory or invocations it
/// takes (any other error stays one).
pub(crate) fn unless_too_large<K>(built: tessera::Result<K>) -> tessera::Result<Option<K>> {
    match built {
        Err(tessera::Error::LimitExceeded { .. }) => Ok(None),
        built => built.map(Some),
    }
}

impl WindowBlocking {
    /// The blocking of a pass over a staged window that stages every tap's filter slice at
    /// once: 64 rows, 16-deep steps, 256 invocations, a filter of at most 9 taps.
    pub(crate) const ALL_TAPS_AT_ONCE: WindowBlocking = WindowBlocking {
        block: 64,
        invocations: 256,
        depth: 16,
        slices: 9,
        all_taps: 1,
    };

    /// The blocking of a pass over a staged window tap by tap: `block` rows in `invocations`
    /// invocations, 32-deep steps, the filter slices taken in turn from two (256 invocations)
    /// or one (512).
    pub(crate) const fn tap_by_tap(block: u32, invocations: u32) -> Self {
        WindowBlocking {
            block,
            invocations,
            depth: 32,
            slices: 512 / invocations,
            all_taps: 0,
        }
    }
}

/// The blocks of a convolution pass as a stream ([`StreamBlocking`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamTile {
    /// 128 x 128 blocks.
    Square,
    /// 256 result channels by 128 positions (the square blocks on a device without their
    /// workgroup memory).
    Wide,
    /// 128 result channels by 256 positions (as `Wide`).
    Long,
}

/// A convolution pass as a stream in each blocking of [`StreamBlocking`], chosen by a
/// [`StreamTile`] ([`Streams::get`]).
#[derive(Clone, Debug)]
pub(crate) struct Streams<K> {
    /// 128 x 128 blocks.
    square: K,
    /// 256 result channels by 128 positions, where the device has the workgroup memory;
    /// otherwise the square blocks again.
    wide: K,
    /// 128 result channels by 256 positions (as `wide`).
    long: K,
}

impl<K: Clone> Streams<K> {
    /// The pass in each blocking, built by `build`; `None` on a device without the 512
    /// invocations they take (the passes then run by taps whole).
    pub fn new(
        build: impl Fn(StreamBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Option<Self>> {
        let blocks = |block, cols| unless_too_large(build(StreamBlocking { block, cols }));
        let Some(square) = blocks(128, 128)? else {
            return Ok(None);
        };
        let oblong = |built: Option<K>| built.unwrap_or_else(|| square.clone());
        Ok(Some(Streams {
            wide: oblong(blocks(256, 128)?),
            long: oblong(blocks(128, 256)?),
            square,
        }))
    }
}

impl<K> Streams<K> {
    /// The kernel in `tile`'s blocks.
    pub fn get(&self, tile: StreamTile) -> &K {
        match tile {
            StreamTile::Square => &self.square,
            StreamTile::Wide => &self.wide,
            StreamTile::Long => &self.long,
        }
    }

    /// What `f` makes of each blocking's kernel (e.g. its constants), in a [`Streams`].
    pub fn each<L>(&self, f: impl Fn(&K) -> L) -> Streams<L> {
        Streams {
            square: f(&self.square),
            wide: f(&self.wide),
            long: f(&self.long),
        }
    }

    /// `f` on each blocking's kernel, up to the first error.
    pub fn try_for_each(&self, f: impl FnMut(&K) -> tessera::Result<()>) -> tessera::Result<()> {
        [&self.square, &self.wide, &self.long]
            .into_iter()
            .try_for_each(f)
    }
}

impl StreamBlocking {
    /// The elements of a stream's `partial` for `workers` workgroups (two blocks each), as
    /// the kernels' bindings ask for.
    pub(crate) const fn partials(self, workers: u32) -> usize {
        2 * workers as usize * (self.block * self.cols) as usize
    }
}

impl<K> Blocked<K> {
    /// Both blockings of a kernel, built by `build` (e.g. `|b| GemmForward::with_constants(rt, b)`).
    /// On a device with less workgroup memory than the large blocking's double-buffered slices
    /// take (WebGPU's default 16 KiB, as a device made with `wgpu::Limits::default()` has), the
    /// small blocking serves as both.
    pub fn new(build: impl Fn(Blocking) -> tessera::Result<K>) -> tessera::Result<Self> {
        let small = build(SMALL)?;
        let large = match build(Blocking::ALL[0]) {
            Err(tessera::Error::LimitExceeded { .. }) => build(SMALL)?,
            built => built?,
        };
        Ok(Blocked {
            large,
            small,
            deep: None,
            many: None,
        })
    }

    /// Both blockings of a tensor-core kernel ([`TensorBlocking`]): 128 x 128 and 64 x 64
    /// blocks of 32-deep slices in 256 invocations, and the 128 x 128 blocks in 512 where the
    /// device has them.
    pub fn on_fragments(
        build: impl Fn(TensorBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Self> {
        let blocks = |block, invocations| {
            build(TensorBlocking {
                depth: 32,
                block,
                invocations,
            })
        };
        let many = unless_too_large(blocks(128, 512))?;
        Ok(Blocked {
            large: blocks(128, 256)?,
            small: blocks(64, 256)?,
            deep: None,
            many,
        })
    }

    /// [`Blocked::on_fragments`] and the deep blocking, 128 x 128 blocks of 64-deep slices,
    /// unless the device lacks the workgroup memory they take.
    pub fn on_fragments_with_deep(
        build: impl Fn(TensorBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Self> {
        let deep = unless_too_large(build(TensorBlocking {
            depth: 64,
            block: 128,
            invocations: 256,
        }))?;
        Ok(Blocked {
            deep,
            ..Blocked::on_fragments(build)?
        })
    }

    /// Both blockings of a tensor-core pass over a staged window tap by tap
    /// ([`WindowBlocking`]): 128 and 64 result channels by 128 positions, each in workgroups
    /// of 512 invocations where the device has them (on an H100 5-10% faster than 256 for
    /// every ResNet layer), otherwise 256. On a device with the workgroup memory of the small
    /// blocking only, it serves as the large; `None` on a device without that either (the
    /// passes then run by taps).
    pub fn on_windows(
        build: impl Fn(WindowBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Option<Self>>
    where
        K: Clone,
    {
        let blocks = |block| match build(WindowBlocking::tap_by_tap(block, 512)) {
            Err(tessera::Error::LimitExceeded { .. }) => {
                build(WindowBlocking::tap_by_tap(block, 256))
            }
            built => built,
        };
        let small = match blocks(64) {
            Err(tessera::Error::LimitExceeded { .. }) => return Ok(None),
            built => built?,
        };
        let large = match blocks(128) {
            Err(tessera::Error::LimitExceeded { .. }) => small.clone(),
            built => built?,
        };
        Ok(Some(Blocked {
            large,
            small,
            deep: None,
            many: None,
        }))
    }

    /// `f` on each blocking's kernel, up to the first error.
    pub fn try_for_each(&self, f: impl FnMut(&K) -> tessera::Result<()>) -> tessera::Result<()> {
        [
            Some(&self.large),
            Some(&self.small),
            self.deep.as_ref(),
            self.many.as_ref(),
        ]
        .into_iter()
        .flatten()
        .try_for_each(f)
    }

    /// Each blocking's kernel made into another by `f`.
    pub fn map<L>(self, mut f: impl FnMut(K) -> L) -> Blocked<L> {
        Blocked {
            large: f(self.large),
            small: f(self.small),
            deep: self.deep.map(&mut f),
            many: self.many.map(f),
        }
    }

    /// What `f` makes of each blocking's kernel (e.g. its constants), in a [`Blocked`].
    pub fn each<L>(&self, f: impl Fn(&K) -> L) -> Blocked<L> {
        Blocked {
            large: f(&self.large),
            small: f(&self.small),
            deep: self.deep.as_ref().map(&f),
            many: self.many.as_ref().map(&f),
        }
    }

    /// The instance `pick` names (the large one for the deep or many-invocation blocking
    /// where there is none).
    pub fn get(&self, pick: Pick) -> &K {
        match pick {
            Pick::Large => &self.large,
            Pick::Small => &self.small,
            Pick::Deep => self.deep.as_ref().unwrap_or(&self.large),
            Pick::Many => self.many.as_ref().unwrap_or(&self.large),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_blockings_the_host_names_are_declared() {
        let named = [
            WindowBlocking::tap_by_tap(128, 256),
            WindowBlocking::tap_by_tap(128, 512),
            WindowBlocking::tap_by_tap(64, 256),
            WindowBlocking::tap_by_tap(64, 512),
            WindowBlocking::ALL_TAPS_AT_ONCE,
        ];
        for blocking in named {
            assert!(WindowBlocking::ALL.contains(&blocking), "{blocking:?}");
        }
        assert_eq!(WindowBlocking::ALL.len(), named.len());
    }
}
