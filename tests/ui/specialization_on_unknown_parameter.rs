#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct ConvParams {
        pub n: u32,
        pub stride: u32,
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)], specialize(p.strides == 1))]
    pub fn conv(p: &ConvParams, y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = (i * p.stride) as f32;
        }
    }
}

fn main() {}
