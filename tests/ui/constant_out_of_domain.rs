#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [f32]) {
        y[0] = 2.0f32.acos();
        y[1] = (-1.0f32).sqrt();
        y[2] = 0.0f32.ln();
        y[3] = 0.5f32.clamp(1.0, 0.0);
    }
}

fn main() {}
