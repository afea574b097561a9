#[tessera::kernels]
mod k {
    // Lists combine, so `REG` listed as 8, 4, 8 beside `ROWS` would build each (8, rows)
    // instance twice.
    #[constants(REG = [8, 4, 8], ROWS = [1, 2], BLOCK = 16 * REG)]
    pub struct Blocking;

    // A value that only evaluates to a repeat is one too.
    #[kernel(workgroup = [64], grid = [1], constants(TILE = [16, 4 * 4]))]
    pub fn tiled(y: &mut [f32]) {
        y[global_id().x] = TILE as f32;
    }
}

fn main() {}
