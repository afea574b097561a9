//! The convolution filter-gradient kernels: as an implicit GEMM (f32 and tensor cores, in
//! slices, by taps, as a stream) and by Winograd's minimal filtering F(3x3, 4x4).

#[tessera::device]
pub mod conv_grad_weight {
    #[device]
    use crate::kernels::libraries::{fragments, gradients, params, staging, stream, winograd};

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
}
