#[tessera::kernel(workgroup = [64], grid = [1])]
pub fn fill(y: &mut [f32]) {
    y[0] = 1.0;
}

fn main() {}
