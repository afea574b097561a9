//! Kernels on the tensor cores (`features(cooperative_matrix)`), against exact CPU references
//! where the device runs them, and refused with `MissingFeature` where it does not (lavapipe,
//! in CI: no software Vulkan driver offers wgpu cooperative matrices yet). The WGSL is pinned
//! by a snapshot either way; `kernel-macros/src/lower/cooperative_tests.rs` writes SPIR-V.
//!
//! Inputs are small integers, which `f16` holds exactly and whose products and sums `f32`
//! accumulates exactly at these sizes: results must equal the reference bit for bit.

mod common;

use common::runtime;
use tessera::half::f16;
use tessera::wgpu::CooperativeScalarType::{F16, F32};
use tessera::{Error, Runtime};

#[tessera::kernels]
pub mod tensor_cores {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Dims {
        pub m: u32,
        pub n: u32,
        pub k: u32,
    }

    /// One step of the reduction: `c + a * b`.
    fn step(a: FragA16<f16>, b: FragB16<f16>, c: FragC16<f32>) -> FragC16<f32> {
        coop_multiply_add(a, b, c)
    }

    /// `c = a * b` for row-major `a` (m x k), `b` (k x n) and `c` (m x n), every size a
    /// multiple of 16: one 16 x 16 tile of `c` per workgroup of one subgroup. `a` is read
    /// from the buffer, `b` staged through workgroup memory.
    #[kernel(
        workgroup = [32],
        grid = [p.n / 16, p.m / 16],
        features(f16, cooperative_matrix)
    )]
    pub fn matmul(
        p: &Dims,
        #[len(p.m * p.k)] a: &[f16],
        #[len(p.k * p.n)] b: &[f16],
        #[len(p.m * p.n)] c: &mut [f32],
        #[workgroup] tile: &mut [f16; 256],
    ) {
        let row = workgroup_id().y * 16;
        let col = workgroup_id().x * 16;
        let mut acc: FragC16<f32> = coop_zero();
        for k in (0..p.k).step_by(16) {
            for e in (local_index()..256).step_by(32) {
                tile[e] = b[(k + e / 16) * p.n + col + e % 16];
            }
            workgroup_barrier();
            let fa: FragA16<f16> = coop_load_row_major(&a[row * p.k + k], p.k);
            let fb: FragB16<f16> = coop_load_row_major(&tile[0], 16);
            acc = step(fa, fb, acc);
            workgroup_barrier();
        }
        coop_store_row_major(acc, &mut c[row * p.n + col], p.n);
    }

    /// The same product with the other layout everywhere: `at` holds `a` column-major (k x m
    /// row-major), `bt` holds `b` column-major, and `ct` receives `c` column-major. Two
    /// accumulators of 16 columns each: a tile of 16 x 32 per workgroup.
    #[kernel(
        workgroup = [32],
        grid = [p.n / 32, p.m / 16],
        features(f16, cooperative_matrix)
    )]
    pub fn matmul_column_major(
        p: &Dims,
        #[len(p.m * p.k)] at: &[f16],
        #[len(p.k * p.n)] bt: &[f16],
        #[len(p.m * p.n)] ct: &mut [f32],
    ) {
        let row = workgroup_id().y * 16;
        let col = workgroup_id().x * 32;
        let mut acc: [FragC16<f32>; 2] = [coop_zero(); 2];
        for k in (0..p.k).step_by(16) {
            let fa: FragA16<f16> = coop_load_column_major(&at[k * p.m + row], p.m);
            #[unroll]
            for j in 0..2 {
                let fb: FragB16<f16> = coop_load_column_major(&bt[(col + j * 16) * p.k + k], p.k);
                acc[j] = coop_multiply_add(fa, fb, acc[j]);
            }
        }
        #[unroll]
        for j in 0..2 {
            coop_store_column_major(acc[j], &mut ct[(col + j * 16) * p.m + row], p.m);
        }
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Scale {
        pub s: f32,
    }

    /// Fragment arithmetic on one 16 x 16 tile: `c = s * p + p - 0.5 * p` for the product
    /// `p = (a + a) · b` (`a`, `b` and `c` row-major).
    #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
    pub fn blend(
        q: &Scale,
        #[len(256)] a: &[f16],
        #[len(256)] b: &[f16],
        #[len(256)] c: &mut [f32],
    ) {
        let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
        let fb: FragB16<f16> = coop_load_row_major(&b[0], 16);
        let zero: FragC16<f32> = coop_zero();
        let p = coop_multiply_add(fa + fa, fb, zero);
        coop_store_row_major(q.s * p + p - 0.5 * p, &mut c[0], 16);
    }

    /// The 16 x 16 fragment of `b` (16 x 16, its rows `stride` apart) from element `first`
    /// on, `b` stored row-major or, `column_major`, column-major: a branch on a flag each
    /// call passes as a literal, uniform though naga would not see it so.
    fn b_fragment(b: &[f16], column_major: bool, first: u32, stride: u32) -> FragB16<f16> {
        if column_major {
            coop_load_column_major(&b[first], stride)
        } else {
            coop_load_row_major(&b[first], stride)
        }
    }

    /// `c = a · b + a · b` for 16 x 16 tiles, the first product reading `b` row-major, the
    /// second `bt` (`b` column-major), both through `b_fragment`.
    #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
    pub fn twice_either_layout(
        #[len(256)] a: &[f16],
        #[len(256)] b: &[f16],
        #[len(256)] bt: &[f16],
        #[len(256)] c: &mut [f32],
    ) {
        let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
        let zero: FragC16<f32> = coop_zero();
        let once = coop_multiply_add(fa, b_fragment(b, false, 0, 16), zero);
        let twice = coop_multiply_add(fa, b_fragment(bt, true, 0, 16), once);
        coop_store_row_major(twice, &mut c[0], 16);
    }

    /// 8 x 8 fragments of `f32` (Apple GPUs run them; NVIDIA's tensor cores do not).
    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn small_f32(#[len(64)] a: &[f32], #[len(64)] b: &[f32], #[len(64)] c: &mut [f32]) {
        let fa: FragA8<f32> = coop_load_row_major(&a[0], 8);
        let fb: FragB8<f32> = coop_load_row_major(&b[0], 8);
        let zero: FragC8<f32> = coop_zero();
        coop_store_row_major(coop_multiply_add(fa, fb, zero), &mut c[0], 8);
    }

    /// A kernel of the same module that needs nothing: it builds on every device.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn double(x: &mut [f32]) {
        let i = global_id().x;
        if i < x.len() {
            x[i] *= 2.0;
        }
    }
}

/// Small integers in -4..=4, the same sequence for a seed.
fn integers(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed) >> 7) % 9) as f32 - 4.0)
        .collect()
}

/// `a * b` for row-major `a` (m x k) and `b` (k x n), in f64.
fn reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let sum: f64 = (0..k)
                .map(|l| f64::from(a[i * k + l]) * f64::from(b[l * n + j]))
                .sum();
            c[i * n + j] = sum as f32;
        }
    }
    c
}

/// The transpose of row-major `x` (rows x cols).
fn transposed(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; x.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = x[r * cols + c];
        }
    }
    t
}

fn halves(x: &[f32]) -> Vec<f16> {
    x.iter().map(|&v| f16::from_f32(v)).collect()
}

fn assert_missing(result: Result<impl Sized, Error>, wanted: &str) {
    match result {
        Err(Error::MissingFeature { feature, .. }) => {
            assert_eq!(feature, wanted);
        }
        Err(other) => panic!("expected MissingFeature({wanted}), got {other}"),
        Ok(_) => panic!("expected MissingFeature({wanted}), got a kernel"),
    }
}

/// What a launcher reports missing: the feature, or on a device with it, the multiply-add.
fn missing<'a>(rt: &Runtime, multiply_add: &'a str) -> &'a str {
    let features = rt.info().features;
    if features.contains(tessera::wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
        multiply_add
    } else {
        "EXPERIMENTAL_COOPERATIVE_MATRIX"
    }
}

fn tensor_cores(rt: &Runtime) -> bool {
    rt.info().has_cooperative_matrix(16, F16, F32)
}

#[test]
fn f16_products_on_the_tensor_cores_are_exact_or_the_device_says_it_has_none() {
    let rt = runtime();
    eprintln!("{}", rt.info());
    if !tensor_cores(&rt) {
        eprintln!("no tensor cores: checking that the launchers refuse");
        let feature = missing(&rt, "cooperative matrices of 16x16x16 f16 -> f32");
        assert_missing(tensor_cores::Matmul::new(&rt), feature);
        assert_missing(tensor_cores::MatmulColumnMajor::new(&rt), feature);
        return;
    }
    eprintln!("running on the tensor cores");
    let matmul = tensor_cores::Matmul::new(&rt).unwrap();
    let column_major = tensor_cores::MatmulColumnMajor::new(&rt).unwrap();
    for (m, n, k) in [(16, 32, 16), (32, 64, 48), (64, 32, 160)] {
        let a = integers(m * k, 1);
        let b = integers(k * n, 2);
        let want = reference(&a, &b, m, n, k);
        let p = tensor_cores::Dims {
            m: m as u32,
            n: n as u32,
            k: k as u32,
        };
        let (ga, gb) = (
            rt.upload(&halves(&a)).unwrap(),
            rt.upload(&halves(&b)).unwrap(),
        );
        let mut c = rt.zeros::<f32>(m * n).unwrap();
        matmul
            .launch(
                &rt,
                tensor_cores::MatmulArgs {
                    p: &p,
                    a: &ga,
                    b: &gb,
                    c: &mut c,
                },
            )
            .unwrap();
        assert_eq!(c.read(&rt).unwrap(), want, "row-major {m}x{n}x{k}");

        let at = rt.upload(&halves(&transposed(&a, m, k))).unwrap();
        let bt = rt.upload(&halves(&transposed(&b, k, n))).unwrap();
        let mut ct = rt.zeros::<f32>(m * n).unwrap();
        column_major
            .launch(
                &rt,
                tensor_cores::MatmulColumnMajorArgs {
                    p: &p,
                    at: &at,
                    bt: &bt,
                    ct: &mut ct,
                },
            )
            .unwrap();
        let got = transposed(&ct.read(&rt).unwrap(), n, m);
        assert_eq!(got, want, "column-major {m}x{n}x{k}");
    }
}

#[test]
fn fragments_add_subtract_and_scale_on_the_tensor_cores() {
    let rt = runtime();
    if !tensor_cores(&rt) {
        let feature = missing(&rt, "cooperative matrices of 16x16x16 f16 -> f32");
        assert_missing(tensor_cores::Blend::new(&rt), feature);
        return;
    }
    let (a, b) = (integers(256, 3), integers(256, 4));
    // (2 + 0.5) * 2 * (a · b): small integers times 5, exact in f32.
    let want: Vec<f32> = reference(&a, &b, 16, 16, 16)
        .into_iter()
        .map(|x| x * 5.0)
        .collect();
    let (ga, gb) = (
        rt.upload(&halves(&a)).unwrap(),
        rt.upload(&halves(&b)).unwrap(),
    );
    let mut c = rt.zeros::<f32>(256).unwrap();
    tensor_cores::Blend::new(&rt)
        .unwrap()
        .launch(
            &rt,
            tensor_cores::BlendArgs {
                q: &tensor_cores::Scale { s: 2.0 },
                a: &ga,
                b: &gb,
                c: &mut c,
            },
        )
        .unwrap();
    assert_eq!(c.read(&rt).unwrap(), want);
}

#[test]
fn a_helper_may_load_fragments_in_a_branch_on_its_flag() {
    let rt = runtime();
    if !tensor_cores(&rt) {
        let feature = missing(&rt, "cooperative matrices of 16x16x16 f16 -> f32");
        assert_missing(tensor_cores::TwiceEitherLayout::new(&rt), feature);
        return;
    }
    let (a, b) = (integers(256, 5), integers(256, 6));
    let want: Vec<f32> = reference(&a, &b, 16, 16, 16)
        .into_iter()
        .map(|x| x * 2.0)
        .collect();
    let (ga, gb) = (
        rt.upload(&halves(&a)).unwrap(),
        rt.upload(&halves(&b)).unwrap(),
    );
    let gbt = rt.upload(&halves(&transposed(&b, 16, 16))).unwrap();
    let mut c = rt.zeros::<f32>(256).unwrap();
    tensor_cores::TwiceEitherLayout::new(&rt)
        .unwrap()
        .launch(
            &rt,
            tensor_cores::TwiceEitherLayoutArgs {
                a: &ga,
                b: &gb,
                bt: &gbt,
                c: &mut c,
            },
        )
        .unwrap();
    assert_eq!(c.read(&rt).unwrap(), want);
}

#[test]
fn a_multiply_add_the_device_does_not_list_is_refused() {
    let rt = runtime();
    if !rt.info().has_cooperative_matrix(8, F32, F32) {
        let feature = missing(&rt, "cooperative matrices of 8x8x8 f32 -> f32");
        assert_missing(tensor_cores::SmallF32::new(&rt), feature);
        return;
    }
    let a = integers(64, 3);
    let b = integers(64, 4);
    let (ga, gb) = (rt.upload(&a).unwrap(), rt.upload(&b).unwrap());
    let mut c = rt.zeros::<f32>(64).unwrap();
    tensor_cores::SmallF32::new(&rt)
        .unwrap()
        .launch(
            &rt,
            tensor_cores::SmallF32Args {
                a: &ga,
                b: &gb,
                c: &mut c,
            },
        )
        .unwrap();
    assert_eq!(c.read(&rt).unwrap(), reference(&a, &b, 8, 8, 8));
}

#[test]
fn kernels_beside_cooperative_ones_build_on_any_device() {
    let rt = runtime();
    let mut x = rt.upload(&[1.0f32, -2.0, 3.5]).unwrap();
    tensor_cores::Double::new(&rt)
        .unwrap()
        .launch(&rt, tensor_cores::DoubleArgs { x: &mut x })
        .unwrap();
    assert_eq!(x.read(&rt).unwrap(), vec![2.0, -4.0, 7.0]);
}

#[test]
fn wgsl_snapshot() {
    insta::assert_snapshot!("tensor_cores", tensor_cores::WGSL);
}
