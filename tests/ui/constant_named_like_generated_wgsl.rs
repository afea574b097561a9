#[tessera::kernels]
mod k {
    pub const WGSL: &str = "";

    #[kernel(workgroup = [64], grid = [1])]
    pub fn fill(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }
}

fn main() {}
