// `workgroup_uniform_load` gives every invocation the same element: WGSL requires its pointer
// to be uniform, so the index cannot depend on the invocation.
#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct P {
        pub pick: u32,
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn spread(p: &P, x: &mut [f32], #[workgroup] s: &mut [f32; 64]) {
        let i = local_index();
        s[i] = x[i];
        let here = workgroup_uniform_load(&s[i]);
        let shifted = i / 2 + 1;
        let there = workgroup_uniform_load(&s[shifted]);
        // Uniform: a parameter, a workgroup id, a constant.
        let picked = workgroup_uniform_load(&s[p.pick % 64]);
        let first = workgroup_uniform_load(&s[workgroup_id().x % 64 + 0]);
        x[i] = here + there + picked + first;
    }
}

fn main() {}
