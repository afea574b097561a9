#[tessera::kernels]
mod k {
    pub const BLOCK: u32 = TILE * 4;
    pub const TILE: u32 = 16;

    #[kernel(workgroup = [TILE], grid = [1])]
    pub fn fill(y: &mut [f32]) {
        y[local_index()] = BLOCK as f32;
    }
}

fn main() {}
