#[tessera::kernels]
mod k {
    const BIG: f32 = 1e39;

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [f32]) {
        y[0] = BIG;
    }
}

fn main() {}
