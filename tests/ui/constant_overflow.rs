#[tessera::kernels]
mod k {
    const BIG: u32 = 4000000000;

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [u32], z: &mut [i32], w: &mut [f32]) {
        y[0] = BIG + 1000000000;
        z[0] = i32::MIN / -1;
        w[0] = f32::MAX * 2.0;
        w[1] = 1.0 / 0.0;
        w[2] = 100.0f32.exp();
    }
}

fn main() {}
