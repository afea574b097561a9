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
mod conv;
mod fragments;
mod gradients;
mod params;
mod rows;
mod staging;
mod stream;
mod wide;
mod window;
mod winograd;

/// The shared constants the host code names (`kernels::GROUP`, ..).
pub(crate) use params::params::{FEW, GROUP, NARROW, SUMS};
pub(crate) use rows::row_ops;
pub(crate) use winograd::winograd::{POINTS, TILE};

#[tessera::kernels]
mod nn {
    #[device]
    use super::activation::activation;
    #[device]
    use super::conv::conv;
    #[device]
    use super::fragments::fragments;
    #[device]
    use super::gradients::gradients;
    #[device]
    use super::params::params;
    #[device]
    use super::staging::staging;
    #[device]
    use super::stream::stream;
    #[device]
    use super::wide::wide;
    #[device]
    use super::window::window;
    #[device]
    use super::winograd::winograd;

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
        store_images_fragments(
            partial,
            split,
            &acc,
            p.out_channels,
            p.batch,
            pixels,
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
        store_images_fragments(
            partial,
            split,
            &acc,
            p.out_channels,
            p.batch,
            pixels,
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
                store_images_fragments(
                    grad_x,
                    0,
                    &acc,
                    p.in_channels,
                    p.batch,
                    pixels,
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
        store_images_fragments(
            grad_x,
            0,
            &acc,
            p.in_channels,
            p.batch,
            pixels,
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
        store_images_fragments(
            partial,
            split,
            &acc,
            p.in_channels,
            p.batch,
            pixels,
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
        store_images_fragments(
            grad_x,
            0,
            &acc,
            p.in_channels,
            p.batch,
            pixels,
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
        store_images_fragments(
            partial,
            split,
            &acc,
            p.in_channels,
            p.batch,
            pixels,
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
