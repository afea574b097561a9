#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(x: &[u32], y: &mut [u32]) {
        y[0] = x[0] << 32;
        let mut bits = x[1];
        bits >>= 40;
        y[1] = bits;
        let mut sum = 0u32;
        #[unroll]
        for i in 28..36u32 {
            sum += x[2] << i;
        }
        y[2] = sum;
    }
}

fn main() {}
