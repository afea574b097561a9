#[tessera::kernels]
mod k {
    #[constants(TILE = [8, 16], SPAN = TILE * 2)]
    pub struct Tiling;

    #[kernel(workgroup = [64], grid = [1], constants = Tilling)]
    pub fn run(y: &mut [f32]) {
        y[0] = 1.0;
    }
}

fn main() {}
