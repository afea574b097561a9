#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn stage(y: &mut [f32], #[workgroup] tile: &mut [f32; 64]) {
        let i = local_index();
        if i < 32 {
            tile[i] = 1.0;
            workgroup_barrier();
        }
        y[i] = tile[i];
    }
}

fn main() {}
