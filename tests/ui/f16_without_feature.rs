#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn halve(x: &[f32], y: &mut [f32]) {
        let i = local_index();
        let h = x[i] as f16;
        y[i] = (h * 0.5) as f32;
    }
}

fn main() {}
