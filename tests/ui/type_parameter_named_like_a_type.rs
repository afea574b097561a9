// A type parameter named like a type of the language would mean two types in the kernel.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], types(u32 = [f32]))]
    pub fn copy<u32>(x: &mut [u32], y: &[u32]) {
        x[0] = y[0];
    }

    #[kernel(workgroup = [64], grid = [1], types(Vec2 = [f32, f16]))]
    pub fn scale<Vec2>(x: &mut [Vec2]) {
        x[0] = x[0];
    }
}

fn main() {}
