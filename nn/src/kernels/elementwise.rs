//! The elementwise and per-row kernels: the activation's gradient, the softmax cross-entropy
//! loss and its gradient, and the optimizer steps (SGD, Adam).

#[tessera::kernels]
pub(crate) mod elementwise {
    #[device]
    use crate::kernels::parts::parts;

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
