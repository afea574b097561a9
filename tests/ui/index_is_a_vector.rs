// An index is one integer: a vector of them indexes nothing.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn gather(x: &mut [f32], y: &[f32]) {
        let v = vec2(1u32, 2u32);
        x[v] = 1.0;
        let mut local = [0.0f32; 4];
        local[vec2(0u32, 1u32) * 2u32] = y[v.x];
        x[0] = local[0];
    }
}

fn main() {}
