#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub width: u32,
        pub height: u32,
    }

    #[kernel(workgroup = [16, 16], grid = [ceil_div(s.width, 16), ceil_div(s.heigth, 16)])]
    pub fn clear(s: &Shape, y: &mut [f32]) {
        let id = global_id();
        y[id.y * s.width + id.x] = 0.0;
    }
}

fn main() {}
