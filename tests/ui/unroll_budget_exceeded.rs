#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn fill(y: &mut [f32]) {
        #[unroll]
        for i in 0..256u32 {
            // 64 iterations inside each of 256: 16384 copies of the body.
            #[unroll]
            for j in 0..64u32 {
                y[i * 64 + j] = 1.0;
            }
        }
    }
}

fn main() {}
