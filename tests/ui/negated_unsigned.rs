#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(x: &[f32], y: &mut [f32]) {
        y[0] = x[-1];
    }
}

fn main() {}
