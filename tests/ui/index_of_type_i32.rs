#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(offsets: &[i32], x: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        let j = offsets[i];
        y[i] = x[j - 1];
    }
}

fn main() {}
