#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [f32]) {
        y[0] = 1e39;
        y[1] = -3.5e38f32;
        y[2] = f32::from_bits(0x7f800000);
    }
}

fn main() {}
