//! The smallest tessera program: a kernel written as Rust, launched on the best adapter this
//! machine has (Mesa's lavapipe when there is no GPU), checked against the CPU.
//!
//! Run it with `cargo xtask example`.

use std::process::ExitCode;

use tessera::Runtime;

#[tessera::kernels]
mod kernels {
    /// The kernels' parameters, laid out as WGSL expects (checked at compile time).
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct SaxpyParams {
        pub a: f32,
        pub n: u32,
    }

    /// `y = a * x + y`, one element per invocation.
    #[kernel(workgroup = [256], grid = [ceil_div(p.n, 256)])]
    pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = p.a.mul_add(x[i], y[i]);
        }
    }
}

/// Runs the example; an error is printed as the sentence its type writes.
pub fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Launches saxpy over a million elements and checks every result on the CPU.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::new()?;
    println!("adapter: {}", rt.info());

    let n: u32 = 1 << 20;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = rt.upload(&xs)?;
    let mut y = rt.upload(&vec![1.0f32; n as usize])?;
    let params = kernels::SaxpyParams { a: 2.0, n };

    let saxpy = kernels::Saxpy::new(&rt)?;
    let mut batch = rt.batch();
    saxpy.record(
        &mut batch,
        kernels::SaxpyArgs {
            p: &params,
            x: &x,
            y: &mut y,
        },
    )?;
    let timing = batch.submit_timed()?;

    let ys = y.read(&rt)?;
    let wrong = ys
        .iter()
        .zip(&xs)
        .filter(|&(y, x)| *y != 2.0 * x + 1.0)
        .count();
    println!("saxpy over {n} elements: {timing}; {wrong} wrong");
    println!("generated WGSL:\n{}", kernels::WGSL);
    if wrong > 0 {
        return Err("saxpy gave wrong results".into());
    }
    Ok(())
}
