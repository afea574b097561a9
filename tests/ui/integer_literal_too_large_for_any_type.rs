#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [u32]) {
        y[0] = 100000000000000000000;
    }
}

fn main() {}
