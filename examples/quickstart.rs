//! The smallest tessera program: open a GPU (or lavapipe), upload a vector, run a kernel on it,
//! read the result back and check it.

use tessera::{Arg, BindingKind, PipelineDesc, Runtime};

const SAXPY: &str = "
struct Params { a: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < p.n { y[id.x] = p.a * x[id.x] + y[id.x]; }
}";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: f32,
    n: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::new()?;
    println!("adapter: {}", rt.info());
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = rt.upload(&xs)?;
    let mut y = rt.upload(&vec![1.0f32; n])?;
    let bindings = [
        BindingKind::ReadOnlyStorage,
        BindingKind::ReadWriteStorage,
        BindingKind::Uniform,
    ];
    let saxpy = rt.pipeline(&PipelineDesc::new(SAXPY, "saxpy", &bindings))?;
    let params = Params {
        a: 2.0,
        n: n as u32,
    };
    let mut batch = rt.batch();
    batch.dispatch(
        &saxpy,
        &[
            Arg::read(&x),
            Arg::read_write(&mut y),
            Arg::uniform(&params),
        ],
        [(n as u32).div_ceil(256), 1, 1],
    )?;
    let timing = batch.submit_timed()?;
    let ys = y.read(&rt)?;
    let wrong = ys
        .iter()
        .zip(&xs)
        .filter(|(y, x)| **y != 2.0 * **x + 1.0)
        .count();
    println!("saxpy over {n} elements: {timing}; {wrong} wrong");
    if wrong > 0 {
        return Err("saxpy gave wrong results".into());
    }
    Ok(())
}
