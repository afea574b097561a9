#[tessera::kernels]
mod k {
    /// Doubles `x`, for `f32` and `f16` buffers.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)], types(T = [f32, f16]))]
    pub fn double<T>(x: &mut [T]) {
        let i = global_id().x;
        if i < x.len() {
            x[i] = x[i] * (2.0 as T);
        }
    }

    // A type a parameter cannot stand for.
    #[kernel(workgroup = [64], grid = [1], types(T = [f32, f64]))]
    pub fn wide<T>(x: &mut [T]) {
        x[0] = x[0];
    }
}

fn main() {
    let rt = tessera::Runtime::new().unwrap();
    // `double` has no `u32` instance.
    let _ = k::Double::<u32>::new(&rt);
}
