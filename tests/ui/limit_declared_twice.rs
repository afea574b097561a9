#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], limits(workgroup_memory = 32768), limits(workgroup_memory = 20000))]
    pub fn stage(y: &mut [f32], #[workgroup] a: &mut [f32; 4096]) {
        let i = local_index();
        a[i] = 1.0;
        y[i] = a[i];
    }
}

fn main() {}
