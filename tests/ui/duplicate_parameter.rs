#[tessera::kernels]
mod k {
    fn add(a: f32, a: f32) -> f32 {
        a + a
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn copy(y: &mut [f32], y: &[f32]) {
        y[global_id().x] = add(1.0, 2.0);
    }
}

fn main() {}
