#[tessera::kernels]
mod k {
    fn twice(x: f32) -> f32 {
        x * 2.0
    }

    fn twice(x: f32) -> f32 {
        x + x
    }

    fn scale(x: f32) -> f32 {
        x
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn scale(y: &mut [f32]) {
        y[global_id().x] = twice(1.0);
    }
}

fn main() {}
