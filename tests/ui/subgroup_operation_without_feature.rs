#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn total(x: &[f32], y: &mut [f32]) {
        let i = local_index();
        y[i] = subgroup_add(x[i]);
    }
}

fn main() {}
