#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub n: u32,
    }

    #[family(fill, scale)]
    pub struct Steps {
        s: &Shape,
        #[len(s.n)]
        x: &[f32],
        #[len(s.n)]
        y: &mut [f32],
    }

    // Writes a binding the family declares read-only, and repeats a length.
    #[kernel(workgroup = [64], grid = [ceil_div(s.n, 64)])]
    pub fn fill(s: &Shape, x: &mut [f32], #[len(s.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < s.n {
            x[i] = 1.0;
            y[i] = 1.0;
        }
    }

    // Takes `y` with another element type, and leaves out the parameters its lengths need.
    #[kernel(workgroup = [64], grid = [1])]
    pub fn scale(y: &mut [u32]) {
        y[0] = 2u32;
    }
}

#[tessera::kernels(family(Old = [a]))]
mod old {}

fn main() {}
