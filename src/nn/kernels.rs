//! Every kernel of [`crate::nn`], in one kernels module so the activations and their
//! derivatives are written once and shared by the GEMM and convolution epilogues.
//!
//! The GEMM-shaped kernels (GEMM forward and its two operand gradients, convolution forward and
//! its input and filter gradients) share one blocking: a workgroup of 16 x 16 invocations owns
//! a 128 x 128 block of the output, stages 8-deep slices of both operands in workgroup memory,
//! and each invocation accumulates an 8 x 8 register tile (rows and columns strided by 16, so
//! neighbouring invocations touch neighbouring words). Only what each kernel stages, and where
//! it stores, differs.

#[crate::kernels(family(GemmBackward = [grad_pre, d_a, d_b, d_bias]))]
mod nn {
    /// Invocations along each edge of the workgroup.
    pub const SPAN: u32 = 16;

    // Each GEMM-shaped kernel comes in two instances: `REG` is the edge of an invocation's
    // register tile, `BLOCK` the edge of the workgroup's output block, `PADDED` the row length
    // of a staged slice written across its rows (`kk` fastest among invocations; one more than
    // `BLOCK` so that those writes fall in distinct memory banks), `DEPTH` the depth of the
    // slices staged per step (both slices fit WebGPU's default 16 KiB of workgroup memory),
    // `LOADS` the operand elements each invocation stages per step.
    // The host takes the 128 x 128 blocks when the output has more than 64 rows, the 64 x 64
    // ones otherwise (half-empty large blocks ran several times slower on an H100).

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct GemmParams {
        pub m: u32,
        pub n: u32,
        pub k: u32,
        pub activation: u32,
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
        /// Filter gradient: the slices the summed dimension is split into (one per `z`).
        pub splits: u32,
        /// Filter gradient: images x output pixels per slice, a multiple of `DEPTH`.
        pub split_depth: u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct ElementwiseParams {
        pub len: u32,
        pub activation: u32,
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
        pub weight_decay: f32,
        /// `1 - beta1^t` for step `t`.
        pub correction1: f32,
        /// `1 - beta2^t` for step `t`.
        pub correction2: f32,
    }

    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// The activation `kind` (see `Activation`) of `x`.
    fn activate(x: f32, kind: u32) -> f32 {
        match kind {
            1 => x.max(0.0),
            2 => {
                let inner = 0.7978845608 * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + inner.tanh())
            }
            3 => x * sigmoid(x),
            4 => sigmoid(x),
            5 => x.tanh(),
            _ => x,
        }
    }

    /// The derivative of the activation `kind` at `x`.
    fn activate_grad(x: f32, kind: u32) -> f32 {
        match kind {
            1 => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            2 => {
                let inner = 0.7978845608 * (x + 0.044715 * x * x * x);
                let t = inner.tanh();
                let d_inner = 0.7978845608 * (1.0 + 3.0 * 0.044715 * x * x);
                0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner
            }
            3 => {
                let s = sigmoid(x);
                s * (1.0 + x * (1.0 - s))
            }
            4 => {
                let s = sigmoid(x);
                s * (1.0 - s)
            }
            5 => {
                let t = x.tanh();
                1.0 - t * t
            }
            _ => 1.0,
        }
    }

    /// `pre = a · b + bias`, `y = act(pre)`.
    #[kernel(
        workgroup = [256],
        constants(
            REG = [8, 4],
            BLOCK = [SPAN * REG],
            PADDED = [BLOCK + 1],
            DEPTH = [64 / REG],
            LOADS = [DEPTH * BLOCK / 256]
        ),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK)]
    )]
    pub fn gemm_forward(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.n)] bias: &[f32],
        #[len(p.m * p.n)] pre: &mut [f32],
        #[len(p.m * p.n)] y: &mut [f32],
        #[workgroup] tile_a: &mut [f32; DEPTH * PADDED],
        #[workgroup] tile_b: &mut [f32; DEPTH * BLOCK],
    ) {
        let t = local_index();
        let (tx, ty) = (t % SPAN, t / SPAN);
        let row0 = workgroup_id().y * BLOCK;
        let col0 = workgroup_id().x * BLOCK;
        let mut acc = [0.0f32; REG * REG];
        for k0 in (0..p.k).step_by(DEPTH) {
            #[unroll]
            for r in 0..LOADS {
                let (kk, mm) = (t % DEPTH, t / DEPTH + r * (256 / DEPTH));
                let (row, k) = (row0 + mm, k0 + kk);
                tile_a[kk * PADDED + mm] = if row < p.m && k < p.k {
                    a[row * p.k + k]
                } else {
                    0.0
                };
            }
            #[unroll]
            for r in 0..LOADS {
                let (kk, cc) = (t / BLOCK + r * (DEPTH / LOADS), t % BLOCK);
                let (k, col) = (k0 + kk, col0 + cc);
                tile_b[kk * BLOCK + cc] = if k < p.k && col < p.n {
                    b[k * p.n + col]
                } else {
                    0.0
                };
            }
            workgroup_barrier();
            for kk in 0..DEPTH {
                let mut fa = [0.0f32; REG];
                let mut fb = [0.0f32; REG];
                #[unroll]
                for i in 0..REG {
                    fa[i] = tile_a[kk * PADDED + ty + i * SPAN];
                    fb[i] = tile_b[kk * BLOCK + tx + i * SPAN];
                }
                #[unroll]
                for i in 0..REG {
                    #[unroll]
                    for j in 0..REG {
                        acc[i * REG + j] += fa[i] * fb[j];
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for i in 0..REG {
            #[unroll]
            for j in 0..REG {
                let (row, col) = (row0 + ty + i * SPAN, col0 + tx + j * SPAN);
                if row < p.m && col < p.n {
                    let z = acc[i * REG + j] + bias[col];
                    pre[row * p.n + col] = z;
                    y[row * p.n + col] = activate(z, p.activation);
                }
            }
        }
    }

    /// `grad_pre = grad_y * act'(pre)`.
    #[kernel(workgroup = [256], grid = [ceil_div(p.m * p.n, 256)])]
    pub fn grad_pre(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.m * p.n {
            grad_pre[i] = grad_y[i] * activate_grad(pre[i], p.activation);
        }
    }

    /// `grad_a = grad_pre · bᵀ`: rows `m`, columns `k`, summed over `n`.
    #[kernel(
        workgroup = [256],
        constants(
            REG = [8, 4],
            BLOCK = [SPAN * REG],
            PADDED = [BLOCK + 1],
            DEPTH = [64 / REG],
            LOADS = [DEPTH * BLOCK / 256]
        ),
        grid = [ceil_div(p.k, BLOCK), ceil_div(p.m, BLOCK)]
    )]
    pub fn d_a(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
        #[workgroup] tile_g: &mut [f32; DEPTH * PADDED],
        #[workgroup] tile_b: &mut [f32; DEPTH * PADDED],
    ) {
        let t = local_index();
        let (tx, ty) = (t % SPAN, t / SPAN);
        let row0 = workgroup_id().y * BLOCK;
        let col0 = workgroup_id().x * BLOCK;
        let mut acc = [0.0f32; REG * REG];
        for j0 in (0..p.n).step_by(DEPTH) {
            // Both operands are read along `n`, their contiguous dimension.
            #[unroll]
            for r in 0..LOADS {
                let (jj, mm) = (t % DEPTH, t / DEPTH + r * (256 / DEPTH));
                let (row, j) = (row0 + mm, j0 + jj);
                tile_g[jj * PADDED + mm] = if row < p.m && j < p.n {
                    grad_pre[row * p.n + j]
                } else {
                    0.0
                };
                let col = col0 + mm;
                tile_b[jj * PADDED + mm] = if col < p.k && j < p.n {
                    b[col * p.n + j]
                } else {
                    0.0
                };
            }
            workgroup_barrier();
            for jj in 0..DEPTH {
                let mut fa = [0.0f32; REG];
                let mut fb = [0.0f32; REG];
                #[unroll]
                for i in 0..REG {
                    fa[i] = tile_g[jj * PADDED + ty + i * SPAN];
                    fb[i] = tile_b[jj * PADDED + tx + i * SPAN];
                }
                #[unroll]
                for i in 0..REG {
                    #[unroll]
                    for j in 0..REG {
                        acc[i * REG + j] += fa[i] * fb[j];
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for i in 0..REG {
            #[unroll]
            for j in 0..REG {
                let (row, col) = (row0 + ty + i * SPAN, col0 + tx + j * SPAN);
                if row < p.m && col < p.k {
                    grad_a[row * p.k + col] = acc[i * REG + j];
                }
            }
        }
    }

    /// `grad_b = aᵀ · grad_pre`: rows `k`, columns `n`, summed over `m`.
    #[kernel(
        workgroup = [256],
        constants(
            REG = [8, 4],
            BLOCK = [SPAN * REG],
            PADDED = [BLOCK + 1],
            DEPTH = [64 / REG],
            LOADS = [DEPTH * BLOCK / 256]
        ),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.k, BLOCK)]
    )]
    pub fn d_b(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
        #[workgroup] tile_a: &mut [f32; DEPTH * BLOCK],
        #[workgroup] tile_g: &mut [f32; DEPTH * BLOCK],
    ) {
        let t = local_index();
        let (tx, ty) = (t % SPAN, t / SPAN);
        let row0 = workgroup_id().y * BLOCK;
        let col0 = workgroup_id().x * BLOCK;
        let mut acc = [0.0f32; REG * REG];
        for i0 in (0..p.m).step_by(DEPTH) {
            // Both operands are read along their rows, i.e. along `k` and `n`.
            #[unroll]
            for r in 0..LOADS {
                let (ii, cc) = (t / BLOCK + r * (DEPTH / LOADS), t % BLOCK);
                let i = i0 + ii;
                tile_a[ii * BLOCK + cc] = if i < p.m && row0 + cc < p.k {
                    a[i * p.k + row0 + cc]
                } else {
                    0.0
                };
                tile_g[ii * BLOCK + cc] = if i < p.m && col0 + cc < p.n {
                    grad_pre[i * p.n + col0 + cc]
                } else {
                    0.0
                };
            }
            workgroup_barrier();
            for ii in 0..DEPTH {
                let mut fa = [0.0f32; REG];
                let mut fb = [0.0f32; REG];
                #[unroll]
                for i in 0..REG {
                    fa[i] = tile_a[ii * BLOCK + ty + i * SPAN];
                    fb[i] = tile_g[ii * BLOCK + tx + i * SPAN];
                }
                #[unroll]
                for i in 0..REG {
                    #[unroll]
                    for j in 0..REG {
                        acc[i * REG + j] += fa[i] * fb[j];
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for i in 0..REG {
            #[unroll]
            for j in 0..REG {
                let (row, col) = (row0 + ty + i * SPAN, col0 + tx + j * SPAN);
                if row < p.k && col < p.n {
                    grad_b[row * p.n + col] = acc[i * REG + j];
                }
            }
        }
    }

    /// `grad_bias` = the column sums of `grad_pre`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn d_bias(
        p: &GemmParams,
        #[len(p.m * p.k)] a: &[f32],
        #[len(p.k * p.n)] b: &[f32],
        #[len(p.m * p.n)] pre: &[f32],
        #[len(p.m * p.n)] grad_y: &[f32],
        #[len(p.m * p.n)] grad_pre: &mut [f32],
        #[len(p.m * p.k)] grad_a: &mut [f32],
        #[len(p.k * p.n)] grad_b: &mut [f32],
        #[len(p.n)] grad_bias: &mut [f32],
    ) {
        let col = global_id().x;
        if col < p.n {
            let mut acc = 0.0;
            for i in 0..p.m {
                acc += grad_pre[i * p.n + col];
            }
            grad_bias[col] = acc;
        }
    }

    /// Convolution as an implicit GEMM: rows are output channels, columns are (image, output
    /// pixel), the sum runs over (input channel, kernel tap). `pre = conv(x, w) + bias`,
    /// `y = act(pre)`.
    #[kernel(
        workgroup = [256],
        constants(
            REG = [8, 4],
            BLOCK = [SPAN * REG],
            PADDED = [BLOCK + 1],
            DEPTH = [64 / REG],
            LOADS = [DEPTH * BLOCK / 256]
        ),
        grid = [ceil_div(p.batch * p.out_h * p.out_w, BLOCK), ceil_div(p.out_channels, BLOCK)]
    )]
    pub fn conv_forward(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.out_channels)] bias: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] tile_w: &mut [f32; DEPTH * PADDED],
        #[workgroup] tile_x: &mut [f32; DEPTH * BLOCK],
    ) {
        let t = local_index();
        let (tx, ty) = (t % SPAN, t / SPAN);
        let row0 = workgroup_id().y * BLOCK;
        let col0 = workgroup_id().x * BLOCK;
        let taps = p.kernel_h * p.kernel_w;
        let depth = p.in_channels * taps;
        let pixels = p.out_h * p.out_w;
        let columns = p.batch * pixels;

        // The column this invocation stages from `x` is the same at every step.
        let staged = col0 + t % BLOCK;
        let image = (staged / pixels) * p.in_channels * p.in_h * p.in_w;
        let top = (staged % pixels) / p.out_w * p.stride_h;
        let left = (staged % pixels) % p.out_w * p.stride_w;

        let mut acc = [0.0f32; REG * REG];
        for k0 in (0..depth).step_by(DEPTH) {
            #[unroll]
            for r in 0..LOADS {
                let (kk, mm) = (t % DEPTH, t / DEPTH + r * (256 / DEPTH));
                let (row, k) = (row0 + mm, k0 + kk);
                tile_w[kk * PADDED + mm] = if row < p.out_channels && k < depth {
                    w[row * depth + k]
                } else {
                    0.0
                };
            }
            #[unroll]
            for r in 0..LOADS {
                let kk = t / BLOCK + r * (DEPTH / LOADS);
                let k = k0 + kk;
                let (ci, tap) = (k / taps, k % taps);
                // Rows and columns above or left of the image wrap around and fail `< in_h`.
                let ih = (top + tap / p.kernel_w * p.dilation_h).wrapping_sub(p.pad_top);
                let iw = (left + tap % p.kernel_w * p.dilation_w).wrapping_sub(p.pad_left);
                tile_x[kk * BLOCK + t % BLOCK] =
                    if staged < columns && k < depth && ih < p.in_h && iw < p.in_w {
                        x[image + (ci * p.in_h + ih) * p.in_w + iw]
                    } else {
                        0.0
                    };
            }
            workgroup_barrier();
            for kk in 0..DEPTH {
                let mut fa = [0.0f32; REG];
                let mut fb = [0.0f32; REG];
                #[unroll]
                for i in 0..REG {
                    fa[i] = tile_w[kk * PADDED + ty + i * SPAN];
                    fb[i] = tile_x[kk * BLOCK + tx + i * SPAN];
                }
                #[unroll]
                for i in 0..REG {
                    #[unroll]
                    for j in 0..REG {
                        acc[i * REG + j] += fa[i] * fb[j];
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for i in 0..REG {
            #[unroll]
            for j in 0..REG {
                let (row, col) = (row0 + ty + i * SPAN, col0 + tx + j * SPAN);
                if row < p.out_channels && col < columns {
                    let out = (col / pixels * p.out_channels + row) * pixels + col % pixels;
                    let z = acc[i * REG + j] + bias[row];
                    pre[out] = z;
                    y[out] = activate(z, p.activation);
                }
            }
        }
    }

    /// The gradient of a convolution's input (dgrad) as an implicit GEMM: rows are input
    /// channels, columns are (image, input pixel), the sum runs over (output channel, kernel
    /// tap). The filter slices are staged in workgroup memory; any kernel size works, since
    /// the taps are just part of the summed dimension. With stride 1 every tap lands on an
    /// output pixel, and the specialization drops the divisibility tests and divisions.
    #[kernel(
        workgroup = [256],
        constants(
            REG = [8, 4],
            BLOCK = [SPAN * REG],
            PADDED = [BLOCK + 1],
            DEPTH = [64 / REG],
            LOADS = [DEPTH * BLOCK / 256]
        ),
        grid = [ceil_div(p.batch * p.in_h * p.in_w, BLOCK), ceil_div(p.in_channels, BLOCK)],
        specialize(p.stride_h == 1 && p.stride_w == 1)
    )]
    pub fn conv_grad_input(
        p: &ConvParams,
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] w: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] grad_x: &mut [f32],
        #[workgroup] tile_w: &mut [f32; DEPTH * PADDED],
        #[workgroup] tile_g: &mut [f32; DEPTH * BLOCK],
    ) {
        let t = local_index();
        let (tx, ty) = (t % SPAN, t / SPAN);
        let row0 = workgroup_id().y * BLOCK;
        let col0 = workgroup_id().x * BLOCK;
        let taps = p.kernel_h * p.kernel_w;
        let depth = p.out_channels * taps;
        let pixels = p.in_h * p.in_w;
        let columns = p.batch * pixels;

        // The input pixel this invocation gathers for, in padded coordinates.
        let staged = col0 + t % BLOCK;
        let n = staged / pixels;
        let padded_h = (staged % pixels) / p.in_w + p.pad_top;
        let padded_w = (staged % pixels) % p.in_w + p.pad_left;

        let mut acc = [0.0f32; REG * REG];
        for k0 in (0..depth).step_by(DEPTH) {
            #[unroll]
            for r in 0..LOADS {
                let (kk, mm) = (t % DEPTH, t / DEPTH + r * (256 / DEPTH));
                let (ci, k) = (row0 + mm, k0 + kk);
                tile_w[kk * PADDED + mm] = if ci < p.in_channels && k < depth {
                    w[(k / taps * p.in_channels + ci) * taps + k % taps]
                } else {
                    0.0
                };
            }
            #[unroll]
            for r in 0..LOADS {
                let kk = t / BLOCK + r * (DEPTH / LOADS);
                let k = k0 + kk;
                let (co, tap) = (k / taps, k % taps);
                let dh = tap / p.kernel_w * p.dilation_h;
                let dw = tap % p.kernel_w * p.dilation_w;
                // The output pixel whose window puts this tap on the input pixel, if any.
                let sh = padded_h.wrapping_sub(dh);
                let sw = padded_w.wrapping_sub(dw);
                let (oh, ow) = (sh / p.stride_h, sw / p.stride_w);
                let hit = staged < columns
                    && k < depth
                    && padded_h >= dh
                    && padded_w >= dw
                    && sh % p.stride_h == 0
                    && sw % p.stride_w == 0
                    && oh < p.out_h
                    && ow < p.out_w;
                tile_g[kk * BLOCK + t % BLOCK] = if hit {
                    grad_pre[((n * p.out_channels + co) * p.out_h + oh) * p.out_w + ow]
                } else {
                    0.0
                };
            }
            workgroup_barrier();
            for kk in 0..DEPTH {
                let mut fa = [0.0f32; REG];
                let mut fb = [0.0f32; REG];
                #[unroll]
                for i in 0..REG {
                    fa[i] = tile_w[kk * PADDED + ty + i * SPAN];
                    fb[i] = tile_g[kk * BLOCK + tx + i * SPAN];
                }
                #[unroll]
                for i in 0..REG {
                    #[unroll]
                    for j in 0..REG {
                        acc[i * REG + j] += fa[i] * fb[j];
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for i in 0..REG {
            #[unroll]
            for j in 0..REG {
                let (ci, col) = (row0 + ty + i * SPAN, col0 + tx + j * SPAN);
                if ci < p.in_channels && col < columns {
                    grad_x[(col / pixels * p.in_channels + ci) * pixels + col % pixels] =
                        acc[i * REG + j];
                }
            }
        }
    }

    /// The gradient of a convolution's filter (wgrad) as an implicit GEMM: M = output
    /// channels, N = input channels x kernel taps, K = images x output pixels. K is long and
    /// M x N often small, so K is split into `p.splits` slices (grid `z`), each summed into its
    /// own `partial` filter; `conv_grad_weight_reduce` adds them up. With one slice, `partial`
    /// is the filter gradient itself.
    #[kernel(
        workgroup = [256],
        constants(
            REG = [8, 4],
            BLOCK = [SPAN * REG],
            PADDED = [BLOCK + 1],
            DEPTH = [64 / REG],
            LOADS = [DEPTH * BLOCK / 256]
        ),
        grid = [
            ceil_div(p.in_channels * p.kernel_h * p.kernel_w, BLOCK),
            ceil_div(p.out_channels, BLOCK),
            p.splits
        ]
    )]
    pub fn conv_grad_weight(
        p: &ConvParams,
        #[len(p.batch * p.in_channels * p.in_h * p.in_w)] x: &[f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.splits * p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        partial: &mut [f32],
        #[workgroup] tile_g: &mut [f32; DEPTH * PADDED],
        #[workgroup] tile_x: &mut [f32; DEPTH * BLOCK],
    ) {
        let t = local_index();
        let (tx, ty) = (t % SPAN, t / SPAN);
        let row0 = workgroup_id().y * BLOCK;
        let col0 = workgroup_id().x * BLOCK;
        let taps = p.kernel_h * p.kernel_w;
        let columns = p.in_channels * taps;
        let pixels = p.out_h * p.out_w;
        let split = workgroup_id().z;
        let begin = split * p.split_depth;
        let end = (begin + p.split_depth).min(p.batch * pixels);

        // The (input channel, tap) this invocation stages from `x` is the same at every step.
        let staged = col0 + t % BLOCK;
        let ci = staged / taps;
        let dh = staged % taps / p.kernel_w * p.dilation_h;
        let dw = staged % taps % p.kernel_w * p.dilation_w;

        let mut acc = [0.0f32; REG * REG];
        for k0 in (begin..end).step_by(DEPTH) {
            #[unroll]
            for r in 0..LOADS {
                let (kk, mm) = (t % DEPTH, t / DEPTH + r * (256 / DEPTH));
                let (co, k) = (row0 + mm, k0 + kk);
                tile_g[kk * PADDED + mm] = if co < p.out_channels && k < end {
                    grad_pre[(k / pixels * p.out_channels + co) * pixels + k % pixels]
                } else {
                    0.0
                };
            }
            #[unroll]
            for r in 0..LOADS {
                let kk = t / BLOCK + r * (DEPTH / LOADS);
                let k = k0 + kk;
                let (n, pixel) = (k / pixels, k % pixels);
                let ih = (pixel / p.out_w * p.stride_h + dh).wrapping_sub(p.pad_top);
                let iw = (pixel % p.out_w * p.stride_w + dw).wrapping_sub(p.pad_left);
                tile_x[kk * BLOCK + t % BLOCK] =
                    if staged < columns && k < end && ih < p.in_h && iw < p.in_w {
                        x[((n * p.in_channels + ci) * p.in_h + ih) * p.in_w + iw]
                    } else {
                        0.0
                    };
            }
            workgroup_barrier();
            for kk in 0..DEPTH {
                let mut fa = [0.0f32; REG];
                let mut fb = [0.0f32; REG];
                #[unroll]
                for i in 0..REG {
                    fa[i] = tile_g[kk * PADDED + ty + i * SPAN];
                    fb[i] = tile_x[kk * BLOCK + tx + i * SPAN];
                }
                #[unroll]
                for i in 0..REG {
                    #[unroll]
                    for j in 0..REG {
                        acc[i * REG + j] += fa[i] * fb[j];
                    }
                }
            }
            workgroup_barrier();
        }
        #[unroll]
        for i in 0..REG {
            #[unroll]
            for j in 0..REG {
                let (co, col) = (row0 + ty + i * SPAN, col0 + tx + j * SPAN);
                if co < p.out_channels && col < columns {
                    partial[(split * p.out_channels + co) * columns + col] = acc[i * REG + j];
                }
            }
        }
    }

    /// `grad_w` = the sum of the filter gradient's `p.splits` partial sums.
    #[kernel(
        workgroup = [256],
        grid = [ceil_div(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w, 256)]
    )]
    pub fn conv_grad_weight_reduce(
        p: &ConvParams,
        #[len(p.splits * p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)]
        partial: &[f32],
        #[len(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w)] grad_w: &mut [f32],
    ) {
        let i = global_id().x;
        let len = p.out_channels * p.in_channels * p.kernel_h * p.kernel_w;
        if i < len {
            let mut sum = 0.0;
            for split in 0..p.splits {
                sum += partial[split * len + i];
            }
            grad_w[i] = sum;
        }
    }

    /// `grad_bias[co]` = the sum of `grad_pre[n, co, ..]` over images and pixels; a workgroup
    /// per output channel, reduced through workgroup memory.
    #[kernel(workgroup = [256], grid = [p.out_channels])]
    pub fn conv_grad_bias(
        p: &ConvParams,
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] grad_pre: &[f32],
        #[len(p.out_channels)] grad_bias: &mut [f32],
        #[workgroup] partial: &mut [f32; 256],
    ) {
        let t = local_index();
        let co = workgroup_id().x;
        let pixels = p.out_h * p.out_w;
        let mut sum = 0.0;
        for i in (t..p.batch * pixels).step_by(256) {
            sum += grad_pre[(i / pixels * p.out_channels + co) * pixels + i % pixels];
        }
        partial[t] = sum;
        workgroup_barrier();
        #[unroll]
        for level in 1..9 {
            let half = 256 >> level;
            if t < half {
                partial[t] += partial[t + half];
            }
            workgroup_barrier();
        }
        if t == 0 && co < p.out_channels {
            grad_bias[co] = partial[0];
        }
    }

    /// `grad_pre = grad_y * act'(pre)`, elementwise.
    #[kernel(workgroup = [256], grid = [ceil_div(p.len, 256)])]
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
    #[kernel(workgroup = [64], grid = [ceil_div(p.rows, 64)])]
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
    #[kernel(workgroup = [256], grid = [ceil_div(p.rows * p.classes, 256)])]
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
    #[kernel(workgroup = [256], grid = [ceil_div(p.len, 256)])]
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
    #[kernel(workgroup = [256], grid = [ceil_div(p.len, 256)])]
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

/// A GEMM-shaped kernel in both of its blockings.
#[derive(Clone, Debug)]
pub(crate) struct Blocked<K> {
    /// 128 x 128 output blocks of 8 x 8 register tiles, 8-deep slices.
    pub large: K,
    /// 64 x 64 output blocks of 4 x 4 register tiles, 16-deep slices.
    pub small: K,
}

/// Rows of output above which the large blocks pay off.
pub(crate) const SMALL_BLOCK_ROWS: u32 = 64;

impl<K> Blocked<K> {
    /// The blocking for an output of `rows` rows.
    pub fn pick(&self, rows: u32) -> &K {
        if rows > SMALL_BLOCK_ROWS {
            &self.large
        } else {
            &self.small
        }
    }
}

/// Builds both blockings of the kernel `$kernel` (constants struct `$constants`).
macro_rules! blocked {
    ($rt:expr, $kernel:ident, $constants:ident) => {
        $crate::nn::kernels::Blocked {
            large: $crate::nn::kernels::$kernel::with_constants(
                $rt,
                $crate::nn::kernels::$constants {
                    reg: 8,
                    block: 128,
                    padded: 129,
                    depth: 8,
                    loads: 4,
                },
            )?,
            small: $crate::nn::kernels::$kernel::with_constants(
                $rt,
                $crate::nn::kernels::$constants {
                    reg: 4,
                    block: 64,
                    padded: 65,
                    depth: 16,
                    loads: 4,
                },
            )?,
        }
    };
}
pub(crate) use blocked;
