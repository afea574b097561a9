#[tessera::kernels]
mod k {
    fn clear(values: &mut [f32; 4]) {
        for i in 0..4 {
            values[i] = 0.0;
        }
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [f32]) {
        let mut regs = [1.0f32; 4];
        clear(&regs);
        y[0] = regs[0];
    }
}

fn main() {}
