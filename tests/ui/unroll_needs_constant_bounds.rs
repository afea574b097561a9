#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn sum(p: &Len, x: &[f32], y: &mut [f32]) {
        let mut total = 0.0;
        #[unroll]
        for k in 0..p.n {
            total += x[k];
        }
        y[0] = total;
    }
}

fn main() {}
