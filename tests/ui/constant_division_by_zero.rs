#[tessera::kernels]
mod k {
    const GROUPS: u32 = 0;

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(x: &[u32], y: &mut [u32]) {
        y[0] = x[0] / 0;
        y[1] = x[1] % GROUPS;
    }
}

fn main() {}
