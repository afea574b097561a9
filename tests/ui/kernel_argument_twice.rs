#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], grid = [2])]
    pub fn fill(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }
}

fn main() {}
