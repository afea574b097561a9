// A helper over the element type `T` takes it from the kernel that calls it.
#[tessera::kernels]
mod k {
    fn scaled(v: T, s: T) -> T {
        v * s
    }

    fn unused(v: T) -> T {
        v
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn k(x: &mut [f32]) {
        x[0] = scaled(x[0], 2.0);
    }
}

fn main() {}
