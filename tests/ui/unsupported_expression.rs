#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn apply(y: &mut [f32]) {
        let double = |v: f32| v * 2.0;
        y[global_id().x] = double(1.0);
    }
}

fn main() {}
