#[tessera::kernels]
mod k {
    // Each array holds 2 GiB; together they pass what a `u32` counts.
    #[kernel(workgroup = [64], grid = [1], limits(workgroup_memory = 4294967295))]
    pub fn stage(
        y: &mut [f32],
        #[workgroup] a: &mut [f32; 536870912],
        #[workgroup] b: &mut [f32; 536870912],
    ) {
        let i = local_index();
        y[i] = a[i] + b[i];
    }
}

fn main() {}
