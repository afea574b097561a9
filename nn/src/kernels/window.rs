//! `WindowBlocking` and the helpers of the tensor-core passes over a staged window of the
//! source: the padded grid, the window's gather and staging, its multiply and epilogue.

#[tessera::device]
pub mod window {
    #[device]
    use crate::kernels::libraries::{activation, conv, fragments, params, staging};

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
        // The summed channels.
        let channels = if grad { p.out_channels } else { p.in_channels };
        let taps = p.kernel_h * p.kernel_w;
        let grid = window_grid(p, grad);
        let mut at = [vec2(0u32, 0); WINDOW / (INVOCATIONS / 4)];
        #[unroll]
        for g in 0..WINDOW / (INVOCATIONS / 4) {
            at[g] = window_source(p, grad, grid, origin.x, g * (INVOCATIONS / 4) + t / 4);
        }
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        if ALL_TAPS == 1 {
            let span = vec2(origin.y, taps);
            window_all_taps(
                half_w, window, w_by_tap, source, p, grad, &at, span, summed, &mut acc, t,
            );
        } else {
            let span = vec3(origin.y, taps, channels);
            window_tap_by_tap(
                half_w, window, w_by_tap, source, p, grad, &at, span, summed, &mut acc, t,
            );
        }
        acc
    }

    /// `conv_window_tile`'s steps with every tap at once: `span` is (first row, taps).
    fn window_all_taps(
        half_w: &mut [f16; ROWS_HALVES],
        window: &mut [f16; COLUMNS],
        w_by_tap: &[Vec4<f16>],
        source: &[f32],
        p: &ConvParams,
        grad: bool,
        at: &[Vec2<u32>; WINDOW / (INVOCATIONS / 4)],
        span: Vec2<u32>,
        summed: Vec2<u32>,
        acc: &mut [FragC16<f32>; FRAGS],
        t: u32,
    ) {
        let (first, taps) = (span.x, span.y);
        let plane = window_plane(p, grad);
        let shape_w = window_filter_shape(p, grad);
        let grid = window_grid(p, grad);
        let mut from_s = window_gather(source, plane, at, summed.x, t);
        let mut from_w = fetch_all_taps(w_by_tap, shape_w, taps, first, summed.x, t);
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
                from_s = window_gather(source, plane, at, c0 + DEPTH, t);
                from_w = fetch_all_taps(w_by_tap, shape_w, taps, first, c0 + DEPTH, t);
            }
            #[unroll]
            for tap in 0..SLICES {
                if tap < taps {
                    let shift = window_shift(p, grad, grid, tap);
                    multiply_window(half_w, tap * BLOCK * A_STRIDE, window, shift, acc, t);
                }
            }
        }
    }

    /// `conv_window_tile`'s steps tap by tap: `span` is (first row, taps, summed channels).
    fn window_tap_by_tap(
        half_w: &mut [f16; ROWS_HALVES],
        window: &mut [f16; COLUMNS],
        w_by_tap: &[Vec4<f16>],
        source: &[f32],
        p: &ConvParams,
        grad: bool,
        at: &[Vec2<u32>; WINDOW / (INVOCATIONS / 4)],
        span: Vec3<u32>,
        summed: Vec2<u32>,
        acc: &mut [FragC16<f32>; FRAGS],
        t: u32,
    ) {
        let (first, taps, channels) = (span.x, span.y, span.z);
        let plane = window_plane(p, grad);
        let shape_w = window_filter_shape(p, grad);
        let grid = window_grid(p, grad);
        let mut from_w = fetch(w_by_tap, shape_w, true, first, summed.x, t);
        let mut step = 0u32;
        for c0 in (summed.x..summed.y).step_by(DEPTH) {
            let from_s = window_gather(source, plane, at, c0, t);
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
                    (tap + 1) * channels + c0
                } else {
                    c0 + DEPTH
                };
                from_w = fetch(w_by_tap, shape_w, true, first, next, t);
                workgroup_barrier();
                let shift = window_shift(p, grad, grid, tap);
                multiply_window(half_w, base, window, shift, acc, t);
                step += 1;
            }
        }
    }

    /// The pixels of a channel plane of what a window gathers from: the input's, or for the
    /// input gradient, the output gradient's.
    fn window_plane(p: &ConvParams, grad: bool) -> u32 {
        if grad {
            p.out_h * p.out_w
        } else {
            p.in_h * p.in_w
        }
    }

    /// The filter's shape as the tile reads it: (summed channels x taps, rows' channels).
    fn window_filter_shape(p: &ConvParams, grad: bool) -> Vec2<u32> {
        let taps = p.kernel_h * p.kernel_w;
        if grad {
            vec2(p.out_channels * taps, p.in_channels)
        } else {
            vec2(p.in_channels * taps, p.out_channels)
        }
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
}
