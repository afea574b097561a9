#[tessera::kernels]
mod k {
    fn total(values: &[f32; 8]) -> f32 {
        let mut sum = 0.0;
        for i in 0..8 {
            sum += values[i];
        }
        sum
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn sum(x: &[f32], y: &mut [f32]) {
        let mut regs = [0.0f32; 4];
        regs[0] = x[0];
        y[0] = total(&regs);
    }
}

fn main() {}
