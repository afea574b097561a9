//! The pointwise and reduction kernels of training: the convolution's bias gradient,
//! the softmax cross-entropy's gradient, and the SGD and Adam steps.

#[tessera::device]
pub mod training {
    #[device]
    use crate::kernels::libraries::{activation, params, staging};

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

    /// Adam with bias-corrected moments, L2 weight decay added to the gradient (`l2`) and
    /// decoupled decay shrinking the weights first (`shrink`; AdamW).
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
            let g = grad[i] + p.l2 * param[i];
            let m = p.beta1 * first[i] + (1.0 - p.beta1) * g;
            let v = p.beta2 * second[i] + (1.0 - p.beta2) * g * g;
            first[i] = m;
            second[i] = v;
            let step = m / p.correction1 / ((v / p.correction2).sqrt() + p.epsilon);
            param[i] = param[i] * p.shrink - p.learning_rate * step;
        }
    }
}
