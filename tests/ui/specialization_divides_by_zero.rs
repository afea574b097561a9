#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct P {
        pub stride: u32,
        pub n: u32,
    }

    #[kernel(workgroup = [64], grid = [1], specialize(p.stride == 0))]
    pub fn strided(p: &P, x: &[u32], y: &mut [u32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = x[i] / p.stride;
        }
    }
}

fn main() {}
