//! The constants every kernel shares (workgroup sizes and the like) and the kernels'
//! `Params` structs.

#[tessera::device]
pub mod params {
    /// Invocations per workgroup of the kernels that give each invocation a whole row, so
    /// that a few hundred of them still spread over several workgroups; and the columns each
    /// workgroup of `d_bias` sums.
    pub const NARROW: u32 = 64;

    /// Independent running sums per invocation in the bias gradients' long reductions.
    pub const SUMS: u32 = 4;

    /// The most input channels `conv_grad_input_few` computes at once.
    pub const FEW: u32 = 4;

    /// The input pixels along a row each invocation of `conv_grad_input_few` computes.
    pub const RUN: u32 = 4;

    /// The filter taps that the filter's copies (`conv_weights_by_tap`,
    /// `conv_weights_transposed_by_tap`) load at once before storing them: all of a 3 x 3
    /// filter's.
    pub const COPY_TAPS: u32 = 9;

    /// The digits of `k` in the mixed radix (any, `mids`, `inners`): `k` as (outer, mid,
    /// inner) with `k = (outer * mids + mid) * inners + inner`. A gather keeps where its
    /// loads are along a summed dimension this way, and `advance`s it each step, so that its
    /// inner loop divides by no runtime size.
    fn digits(k: u32, mids: u32, inners: u32) -> Vec3<u32> {
        let inner_size = inners.max(1);
        let outer_size = (mids * inners).max(1);
        vec3(k / outer_size, k % outer_size / inner_size, k % inner_size)
    }

    /// `at` plus `by`, both in the radix of [`digits`] with `by.y < mids` and `by.z < inners`
    /// (so at most one carry reaches each coarser digit).
    fn advance(at: Vec3<u32>, by: Vec3<u32>, mids: u32, inners: u32) -> Vec3<u32> {
        let mut next = at + by;
        if next.z >= inners {
            next.z -= inners;
            next.y += 1;
        }
        if next.y >= mids {
            next.y -= mids;
            next.x += 1;
        }
        next
    }

    /// The sum of an invocation's `SUMS` running sums.
    fn total(sums: &[f32; SUMS]) -> f32 {
        let mut sum = 0.0;
        #[unroll]
        for u in 0..SUMS {
            sum += sums[u];
        }
        sum
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct GemmParams {
        pub m: u32,
        pub n: u32,
        pub k: u32,
        pub activation: u32,
        /// Forward: 1 to store `pre` beside `y`; 0 where the caller keeps no `pre`, which is
        /// then scratch (the split forward's first slice) or unwritten.
        pub keep_pre: u32,
        /// Split forward: the slices the summed dimension `k` is cut into (one per `z`).
        /// Backward: those of `grad_a`'s sum, over `n`.
        pub splits: u32,
        /// The length of each of those slices but the last, a multiple of `DEPTH`.
        pub split_depth: u32,
        /// Backward: the slices of `grad_b`'s sum, over `m`.
        pub b_splits: u32,
        /// The length of each of those slices but the last, a multiple of `DEPTH`.
        pub b_split_depth: u32,
        /// `d_bias`: the slices of the rows `m` it sums, one per `y`.
        pub bias_splits: u32,
        /// The rows of each of those slices but the last.
        pub bias_split_rows: u32,
    }

    /// A convolution's shape; the host checks it and derives `out_h` and `out_w`.
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct ConvParams {
        pub batch: u32,
        pub in_channels: u32,
        pub in_h: u32,
        pub in_w: u32,
        pub out_channels: u32,
        pub out_h: u32,
        pub out_w: u32,
        pub kernel_h: u32,
        pub kernel_w: u32,
        pub stride_h: u32,
        pub stride_w: u32,
        pub pad_top: u32,
        pub pad_left: u32,
        pub dilation_h: u32,
        pub dilation_w: u32,
        pub activation: u32,
        /// Forward: 1 to store `pre` beside `y`; 0 where the caller keeps no `pre`, which is
        /// then scratch (the split forward's first slice) or unwritten.
        pub keep_pre: u32,
        /// Filter gradient: the slices the summed dimension is split into (one per `z`).
        pub splits: u32,
        /// Filter gradient: images x output pixels per slice, a multiple of `DEPTH`.
        pub split_depth: u32,
        /// `conv_grad_bias`: the slices of its sum over (image, output pixel), one per `y`.
        pub bias_splits: u32,
        /// The length of each of those slices but the last.
        pub bias_split_depth: u32,
        /// A pass as a stream (`conv_forward_fragments_by_tap_streamed`): its workgroups, at
        /// most its (block, step) iterations.
        pub workers: u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct LossParams {
        pub rows: u32,
        pub classes: u32,
        /// Multiplies the gradient: `1 / rows` for the mean loss.
        pub scale: f32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct SgdParams {
        pub len: u32,
        pub learning_rate: f32,
        pub momentum: f32,
        pub weight_decay: f32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct AdamParams {
        pub len: u32,
        pub learning_rate: f32,
        pub beta1: f32,
        pub beta2: f32,
        pub epsilon: f32,
        /// The L2 penalty's factor (0 without).
        pub l2: f32,
        /// What the weights are multiplied by before the step: `1 - lr * decay` for
        /// decoupled decay, 1 without.
        pub shrink: f32,
        /// `1 - beta1^t` for step `t`.
        pub correction1: f32,
        /// `1 - beta2^t` for step `t`.
        pub correction2: f32,
    }
}
