#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn scale(x: &[f32]) {
        let i = global_id().x;
        x[i] = x[i] * 2.0;
    }
}

fn main() {}
