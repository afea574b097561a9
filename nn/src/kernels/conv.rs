//! The convolution forward's gathers and tiles, f32 and tensor-core (`conv_forward_gather`,
//! `conv_forward_tile`, ..), and the passes by taps' (`conv_tap_gather`).

#[tessera::device]
pub mod conv {
    #[device]
    use crate::kernels::libraries::{activation, fragments, params, staging};

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
}
