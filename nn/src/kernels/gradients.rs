//! The convolutions' input and filter gradients' gathers and tiles: the f32 and tensor-core
//! input gradients' (`conv_grad_gather`), the strided passes' phases (`stride_phase`,
//! `phase_grad_gather`), and the filter gradients' (`conv_weight_gather`, `conv_weight_source`).

#[tessera::device]
pub mod gradients {
    #[device]
    use crate::kernels::libraries::{activation, conv, fragments, params, staging};

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
        store_slice_fragments(
            grad_w, partial, 0, split, acc, rows, columns, layout, origin, spill, t,
        );
    }
}
