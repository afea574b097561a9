mod common;
use common::runtime;

#[tessera::kernels]
mod ops {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct SaxpyParams {
        pub a: f32,
        pub n: u32,
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = p.a * x[i] + y[i];
        }
    }
}

#[test]
fn saxpy_matches_reference() {
    let rt = runtime();
    let n = 1000u32;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = rt.upload(&xs).unwrap();
    let mut y = rt.upload(&vec![1.0f32; n as usize]).unwrap();
    println!("{}", ops::WGSL);
    let k = ops::Saxpy::new(&rt).unwrap();
    k.launch(
        &rt,
        ops::SaxpyArgs {
            p: &ops::SaxpyParams { a: 2.0, n },
            x: &x,
            y: &mut y,
        },
    )
    .unwrap();
    let ys = y.read(&rt).unwrap();
    for i in 0..n as usize {
        assert_eq!(ys[i], 2.0 * xs[i] + 1.0);
    }
}
