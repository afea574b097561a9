#[tessera::kernels]
mod k {
    #[constants(TILE = [8, 16], HALF = TILE / 2)]
    pub struct Tiles;

    fn lane(t: u32) -> u32 {
        t % TILE
    }

    // Called by no kernel: `HALF` has no value here.
    fn first_half(x: &mut [f32; HALF], t: u32) {
        x[0] = lane(t) as f32;
    }

    #[kernel(workgroup = [TILE], grid = [1], constants = Tiles)]
    pub fn run(y: &mut [u32]) {
        y[0] = lane(local_index());
    }
}

fn main() {}
