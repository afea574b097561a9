#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub n: u32,
    }

    #[family(scale, shift)]
    pub struct Steps {
        s: &Shape,
        #[len(s.n)]
        x: &mut [f32],
    }

    #[kernel(workgroup = [64], grid = [ceil_div(s.n, 64)])]
    pub fn scale(s: &Shape, x: &mut [f32]) {
        let i = global_id().x;
        if i < s.n {
            x[i] = x[i] * 2.0;
        }
    }

    #[kernel(workgroup = [64], grid = [ceil_div(s.n, 64)])]
    pub fn shift(s: &Shape, x: &mut [f32], offsets: &[f32]) {
        let i = global_id().x;
        if i < s.n {
            x[i] = x[i] + offsets[i];
        }
    }
}

fn main() {}
