#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn stage(y: &mut [f32], #[workgroup] a: &mut [f32; 2048], #[workgroup] b: &mut [f32; 4096]) {
        let i = local_index();
        a[i] = 1.0;
        b[i] = 2.0;
        y[i] = a[i] + b[i];
    }
}

fn main() {}
