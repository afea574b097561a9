#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn double(x: &[Vec4<f32>], y: &mut [Vec4<f32>]) {
        let i = global_id().x;
        if i < x.len() {
            y[i] = x[i] * 2.0;
        }
    }
}

fn main() {
    let rt = tessera::Runtime::new().unwrap();
    // A `Vec4<f32>` buffer holds `[f32; 4]` on the host, not four times as many `f32`.
    let x = rt.zeros::<f32>(256).unwrap();
    let mut y = rt.zeros::<[f32; 4]>(64).unwrap();
    let _ = k::Double::new(&rt)
        .unwrap()
        .launch(&rt, k::DoubleArgs { x: &x, y: &mut y });
}
