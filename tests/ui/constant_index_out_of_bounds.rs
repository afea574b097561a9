#[tessera::kernels]
mod k {
    const REG: u32 = 4;

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [f32], #[workgroup] tile: &mut [f32; 64]) {
        let mut acc = [0.0f32; REG];
        acc[REG] = 1.0;
        tile[64] = acc[0];
        #[unroll]
        for i in 0..REG {
            y[i] = acc[i + 1];
        }
        y[4] = vec2(1.0f32, 2.0)[2];
    }
}

fn main() {}
