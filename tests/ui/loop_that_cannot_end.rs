#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn spin(y: &mut [f32]) {
        let i = local_index();
        loop {
            y[i] += 1.0;
            for j in 0..4u32 {
                if y[j] > 2.0 {
                    break;
                }
            }
        }
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn never(y: &mut [f32]) {
        let i = local_index();
        while true {
            if 0 > 1 {
                break;
            }
            y[i] += 1.0;
        }
    }
}

fn main() {}
