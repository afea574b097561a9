#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn offset(x: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        y[i] = i + x[i];
    }
}

fn main() {}
