#[tessera::kernels]
mod k {
    #[kernel(workgroup = [32, 16], grid = [1])]
    pub fn big(y: &mut [f32]) {
        y[local_index()] = 0.0;
    }
}

fn main() {}
