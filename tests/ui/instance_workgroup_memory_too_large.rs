#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], constants(TILE = [16, 32, 80]))]
    pub fn stage(y: &mut [f32], #[workgroup] tile: &mut [f32; TILE * TILE]) {
        let i = local_index();
        tile[i] = 1.0;
        y[i] = tile[i];
    }
}

fn main() {}
