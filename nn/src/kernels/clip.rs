//! The kernels of [`crate::GradClip`], a kernels module of their own (`clip_ops`): the
//! squares of every gradient summed a workgroup at a time into `partials`
//! (`sum_squares`, once per gradient buffer, each at its own offset), those partial sums
//! summed into the global norm and the factor that clips it (`clip_factor`, one workgroup),
//! and every gradient multiplied by that factor (`scale_by_factor`), which never leaves the
//! GPU.

#[tessera::kernels]
pub mod clip_ops {
    #[device]
    use tessera::std::reduce;

    /// Invocations in a workgroup.
    pub const GROUP: u32 = 256;

    /// One call of a clipping kernel.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct ClipParams {
        /// Elements of the buffer the kernel reads (a gradient, or the partial sums).
        pub len: u32,
        /// Where this gradient's partial sums start in `partials`.
        pub offset: u32,
        /// The largest global norm left as it is.
        pub max_norm: f32,
        /// What every gradient is divided by before its norm is taken and it is clipped:
        /// the loss scale they carry (1 for none).
        pub loss_scale: f32,
    }

    /// `partials[offset + w]` = the sum of the squares of workgroup `w`'s `GROUP` elements.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.len, GROUP)])]
    pub fn sum_squares(
        p: &ClipParams,
        #[len(p.len)] grad: &[f32],
        #[len(p.offset + ceil_div(p.len, GROUP))] partials: &mut [f32],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        let i = global_id().x;
        let x = if i < p.len { grad[i] } else { 0.0 };
        let total = workgroup_sum_tree(tile, local_index(), x * x);
        if local_index() == 0 {
            partials[p.offset + workgroup_id().x] = total;
        }
    }

    /// `norm = [n, min(1, max_norm / (n + 1e-6)) / loss_scale]` with `n = sqrt(sum(partials))
    /// / loss_scale`: the global norm of the unscaled gradients and the factor that unscales
    /// and clips them (PyTorch's `clip_grad_norm_`).
    #[kernel(workgroup = [GROUP], grid = [1])]
    pub fn clip_factor(
        p: &ClipParams,
        #[len(p.len)] partials: &[f32],
        #[len(2)] norm: &mut [f32],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        let local = local_index();
        let mut sum = 0.0f32;
        for i in (local..p.len).step_by(GROUP) {
            sum += partials[i];
        }
        let total = workgroup_sum_tree(tile, local, sum);
        if local == 0 {
            let global = total.sqrt() / p.loss_scale;
            norm[0] = global;
            norm[1] = (p.max_norm / (global + 1e-6)).min(1.0) / p.loss_scale;
        }
    }

    /// `grad *= norm[1]`.
    #[kernel(workgroup = [GROUP], grid = [ceil_div(p.len, GROUP)])]
    pub fn scale_by_factor(p: &ClipParams, #[len(2)] norm: &[f32], #[len(p.len)] grad: &mut [f32]) {
        let i = global_id().x;
        if i < p.len {
            grad[i] *= norm[1];
        }
    }
}
