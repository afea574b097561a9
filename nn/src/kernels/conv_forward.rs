//! The convolution forward kernels: f32 and tensor cores, whole, in slices, by taps, over a
//! staged window and as a stream.

#[tessera::device]
pub mod conv_forward {
    #[device]
    use crate::kernels::libraries::{activation, conv, fragments, params, staging, stream, window};

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
    #[family(conv_forward_fragments_partial, conv_forward_reduce)]
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

    /// `ConvForwardFragmentsSplit` by taps.
    #[family(conv_forward_fragments_by_tap_partial, conv_forward_reduce)]
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
}
