//! Where WGSL's arithmetic is not Rust's, on a real adapter: `round` and `signum` are lowered
//! to Rust's results (halves away from zero, exact for large values, the sign of zero kept;
//! ±1 by the sign bit, NaN for NaN), while integer overflow wraps, integer division by zero
//! gives WGSL's defined results and shift amounts are taken modulo 32, as the language docs
//! say. One small kernel, one launch.

mod common;

use common::runtime;

#[tessera::kernels]
pub mod semantics {
    /// `rounded[k] = x[k].round()`, `signs[k] = x[k].signum()`; integer cases in fixed slots.
    #[kernel(workgroup = [1], grid = [1])]
    pub fn run(
        x: &[f32],
        a: &[i32],
        b: &[u32],
        rounded: &mut [f32],
        signs: &mut [f32],
        ints: &mut [i32],
        uints: &mut [u32],
    ) {
        for k in 0..x.len() {
            rounded[k] = x[k].round();
            signs[k] = x[k].signum();
        }
        ints[0] = a[0] + a[1];
        ints[1] = a[2] / a[3];
        ints[2] = a[2] % a[3];
        ints[3] = a[4] / a[5];
        uints[0] = b[0] - b[1];
        uints[1] = b[2] / b[0];
        uints[2] = b[2] % b[0];
        uints[3] = b[1] << b[3];
    }
}

#[test]
fn round_and_signum_match_rust_and_integer_edges_match_the_docs() {
    use semantics::{Run, RunArgs};
    let rt = runtime();
    let xs = [
        0.49999997f32,
        8388609.0,
        -0.0,
        0.0,
        2.5,
        -2.5,
        -0.5,
        1.5,
        -3.0,
        f32::NAN,
    ];
    let x = rt.upload(&xs).unwrap();
    let a = rt.upload(&[i32::MAX, 1, 7, 0, i32::MIN, -1]).unwrap();
    let b = rt.upload(&[0u32, 1, 9, 33]).unwrap();
    let mut rounded = rt.zeros::<f32>(xs.len()).unwrap();
    let mut signs = rt.zeros::<f32>(xs.len()).unwrap();
    let mut ints = rt.zeros::<i32>(4).unwrap();
    let mut uints = rt.zeros::<u32>(4).unwrap();
    Run::new(&rt)
        .unwrap()
        .launch(
            &rt,
            RunArgs {
                x: &x,
                a: &a,
                b: &b,
                rounded: &mut rounded,
                signs: &mut signs,
                ints: &mut ints,
                uints: &mut uints,
            },
        )
        .unwrap();
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let (rounded, signs) = (rounded.read(&rt).unwrap(), signs.read(&rt).unwrap());
    let n = xs.len() - 1;
    let want_rounded: Vec<f32> = xs[..n].iter().map(|v| v.round()).collect();
    let want_signs: Vec<f32> = xs[..n].iter().map(|v| v.signum()).collect();
    assert_eq!(bits(&rounded[..n]), bits(&want_rounded), "{rounded:?}");
    assert_eq!(bits(&signs[..n]), bits(&want_signs), "{signs:?}");
    assert!(
        rounded[n].is_nan() && signs[n].is_nan(),
        "{rounded:?} {signs:?}"
    );
    // Overflow wraps; `x / 0` is `x`, `x % 0` is 0 and `i32::MIN / -1` is `i32::MIN`.
    assert_eq!(ints.read(&rt).unwrap(), [i32::MIN, 7, 0, i32::MIN]);
    // `1 << 33` shifts by 33 % 32.
    assert_eq!(uints.read(&rt).unwrap(), [u32::MAX, 9, 0, 2]);
}
