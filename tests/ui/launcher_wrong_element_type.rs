#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn fill(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }
}

fn main() {
    let rt = tessera::Runtime::new().unwrap();
    let mut y = rt.zeros::<u32>(64).unwrap();
    let _ = k::Fill::new(&rt).unwrap().launch(&rt, k::FillArgs { y: &mut y });
}
