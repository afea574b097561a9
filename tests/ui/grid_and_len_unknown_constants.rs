#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub n: u32,
    }

    #[constants(TILE = [64, 128])]
    pub struct Tiles;

    // A family's lengths hold for every member, whichever instance of `Tiles` it runs.
    #[family(scale)]
    pub struct Steps {
        s: &Shape,
        #[len(s.n * TILE)]
        x: &mut [f32],
    }

    #[kernel(workgroup = [TILE], constants = Tiles, grid = [ceil_div(s.n, TILE)])]
    pub fn scale(s: &Shape, x: &mut [f32]) {
        let i = global_id().x;
        if i < s.n {
            x[i] = x[i] * 2.0;
        }
    }

    // A misspelt constant in a grid.
    #[kernel(workgroup = [64], grid = [ceil_div(s.n, TILES)])]
    pub fn shift(s: &Shape, #[len(s.n)] x: &mut [f32]) {
        let i = global_id().x;
        if i < s.n {
            x[i] = x[i] + 1.0;
        }
    }
}

fn main() {}
