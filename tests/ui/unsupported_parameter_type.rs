#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn fill(y: &mut [f32], value: f32) {
        y[global_id().x] = value;
    }
}

fn main() {}
