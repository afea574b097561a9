#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn copy(x: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        y[i] = x[i];
    }
}

fn main() {
    let rt = tessera::Runtime::new().unwrap();
    let mut buffer = rt.zeros::<f32>(64).unwrap();
    let _ = k::Copy::new(&rt).unwrap().launch(&rt, k::CopyArgs { x: &buffer, y: &mut buffer });
}
