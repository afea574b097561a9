#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [u32], z: &mut [i32]) {
        y[0] = 5000000000;
        z[0] = 2147483648;
        z[1] = -2147483648;
    }
}

fn main() {}
