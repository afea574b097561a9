// Each element type makes one instance; listing one twice would make it twice.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], types(T = [f32, u32, f32]))]
    pub fn copy<T>(x: &mut [T], y: &[T]) {
        x[0] = y[0];
    }
}

fn main() {
    let rt = tessera::Runtime::new().unwrap();
    let _ = k::Copy::<f32>::new(&rt);
}
