// A type a parameter cannot stand for is reported once; the kernel's other types are checked
// as if it were not listed, and a kernel left with none is not checked further (its helpers
// are not reported as uncalled, nor its uses of `T` as unknown).
#[tessera::kernels]
mod k {
    fn scaled(v: T, s: T) -> T {
        v * s
    }

    #[kernel(workgroup = [64], grid = [1], types(T = [f64]))]
    pub fn wide<T>(x: &mut [T], y: &[T]) {
        let i = global_id().x;
        let v: T = y[i] * (2.0 as T);
        x[i] = scaled(v, y[0]);
    }

    #[kernel(workgroup = [64], grid = [1], types(T = [f32, i64]))]
    pub fn mixed<T>(x: &mut [T], y: &[T]) {
        let i = global_id().x;
        x[i] = scaled(y[i], 2.0 as T);
    }
}

fn main() {}
