#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Rows {
        pub cols: u32,
    }

    /// Row sums finished "warp-synchronously": the last 32 invocations add without barriers,
    /// trusting that they run in lockstep.
    #[kernel(workgroup = [64], grid = [1])]
    pub fn warp_synchronous(p: &Rows, x: &[f32], sums: &mut [f32], #[workgroup] s: &mut [f32; 64]) {
        let t = local_index();
        s[t] = x[t] + x[t + 64];
        workgroup_barrier();
        if t < 32 {
            s[t] += s[t + 32];
            s[t] += s[t + 16];
        }
        if t == 0 {
            sums[0] = s[0];
        }
    }

    /// A tree reduction missing the barrier between its steps.
    #[kernel(workgroup = [64], grid = [1])]
    pub fn tree_without_barriers(x: &[f32], sums: &mut [f32], #[workgroup] s: &mut [f32; 64]) {
        let t = local_index();
        s[t] = x[t];
        workgroup_barrier();
        let mut stride = 32u32;
        while stride > 0 {
            if t < stride {
                s[t] += s[t + stride];
            }
            stride /= 2;
        }
        if t == 0 {
            sums[0] = s[0];
        }
    }

    /// Every invocation reads the first element as soon as it wrote its own.
    #[kernel(workgroup = [64], grid = [1])]
    pub fn broadcast_too_early(x: &[f32], y: &mut [f32], #[workgroup] s: &mut [f32; 64]) {
        let t = local_index();
        s[t] = x[t];
        y[t] = x[t] - s[0];
    }
}

fn main() {}
