#[tessera::kernels]
mod k {
    #[constants(N = [1, 2], N = [3])]
    pub struct Sizes;

    // `TILE` and `Tile` would both be the field `tile` of `TiledConstants`.
    #[kernel(workgroup = [64], grid = [1], constants(TILE = [8], Tile = [16]))]
    pub fn tiled(y: &mut [f32]) {
        y[global_id().x] = TILE as f32;
    }

    // `SELF` would be the field `self`.
    #[kernel(workgroup = [64], grid = [1], constants(SELF = [1]))]
    pub fn itself(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }
}

fn main() {}
