//! The convolution backward's input-gradient kernels (f32 and tensor cores, whole, in slices,
//! by taps, over a window, phased, for few channels, as a stream) and its family `ConvBackward`.

#[tessera::device]
pub mod conv_grad_input {
    #[device]
    use crate::kernels::libraries::{
        activation, conv, fragments, gradients, params, staging, stream, window,
    };

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
    #[family(conv_grad_input_fragments_partial, conv_grad_input_reduce)]
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
    #[family(conv_grad_input_fragments_by_tap_partial, conv_grad_input_reduce)]
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
}
