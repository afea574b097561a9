//! Kernels the race check must accept: a barrier between the write and the read, each
//! invocation reading only its own elements, and atomics.

#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn barrier_between(x: &[f32], sums: &mut [f32], #[workgroup] s: &mut [f32; 64]) {
        let t = local_index();
        s[t] = x[t];
        workgroup_barrier();
        let mut stride = 32u32;
        while stride > 0 {
            if t < stride {
                s[t] += s[t + stride];
            }
            workgroup_barrier();
            stride /= 2;
        }
        if t == 0 {
            sums[0] = s[0];
        }
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn own_elements(x: &[f32], y: &mut [f32], #[workgroup] s: &mut [f32; 256]) {
        let t = local_index();
        for k in 0..4u32 {
            s[t * 4 + k] = x[t * 4 + k];
        }
        s[t * 4] += s[t * 4 + 3];
        y[t] = s[t * 4];
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn atomics(x: &[u32], y: &mut [u32], #[workgroup] count: &mut [AtomicU32; 1]) {
        let t = local_index();
        count[0].fetch_add(x[t]);
        y[t] = count[0].load();
    }
}

fn main() {}
