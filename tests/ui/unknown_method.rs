#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn apply(y: &mut [f32]) {
        let i = global_id().x;
        y[i] = y[i].softplus();
    }
}

fn main() {}
