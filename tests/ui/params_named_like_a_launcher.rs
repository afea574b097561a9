#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Scale {
        pub a: f32,
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn scale(p: &Scale, y: &mut [f32]) {
        y[global_id().x] *= p.a;
    }
}

fn main() {}
