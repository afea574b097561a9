//! `tessera_nn::parts` from a kernels module of another crate: GEMM-shaped kernels built on
//! nn's f32 and tensor-core blockings with epilogues of their own, checked against the CPU
//! in several blockings, both operand widths, both operand layouts, sliced sums, and shapes
//! with tails. The tensor-core kernel runs where the device has tensor cores (the GPU
//! machine) and must be refused elsewhere (lavapipe).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, rng, runtime, values};
use tessera::wgpu::CooperativeScalarType::{F16, F32};
use tessera::{Error, Runtime};
use tessera_nn::Activation;

#[tessera::kernels]
mod mine {
    #[device]
    use tessera_nn::parts::activation;
    #[device]
    use tessera_nn::parts::gemm;
    #[device]
    use tessera_nn::parts::tensor_gemm;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub m: u32,
        pub n: u32,
        pub k: u32,
        pub alpha: f32,
        /// Slices the summed dimension is cut into, and each one's depth.
        pub splits: u32,
        pub split_depth: u32,
        /// `Activation::code`.
        pub kind: u32,
    }

    /// `y = alpha * a · b + y`, `a` m x k and `b` k x n, read as `T`.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        types(T = [f32, Vec4<f32>]),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK)]
    )]
    pub fn accumulate<T>(
        p: &Shape,
        #[len(p.m * p.k / T::LANES)] a: &[T],
        #[len(p.k * p.n / T::LANES)] b: &[T],
        #[len(p.m * p.n)] y: &mut [f32],
        #[workgroup] slice_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] slice_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let shapes = vec4(p.k, p.m, p.n, p.k);
        let across = vec2(true, false);
        let acc = mainloop(
            slice_a,
            slice_b,
            a,
            b,
            shapes,
            across,
            origin,
            vec2(0, p.k),
            t,
        );
        #[unroll]
        for e in 0..REG * REG {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < p.m && col < p.n {
                y[row * p.n + col] += p.alpha * acc[e];
            }
        }
    }

    /// `accumulate` on the tensor cores, `a` and `b` as `T`, an epilogue of its own over
    /// the fragments read back.
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = TensorBlocking,
        types(T = [f32, Vec4<f32>]),
        features(f16, cooperative_matrix),
        limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK)]
    )]
    pub fn accumulate_fragments<T>(
        p: &Shape,
        #[len(p.m * p.k / T::LANES)] a: &[T],
        #[len(p.k * p.n / T::LANES)] b: &[T],
        #[len(p.m * p.n)] y: &mut [f32],
        #[workgroup] slice_a: &mut [f16; BLOCK * A_STRIDE],
        #[workgroup] slice_b: &mut [f16; COLUMNS],
        #[workgroup] spill: &mut [f32; SPILL],
    ) {
        let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
        let (shapes, across) = (vec4(p.k, p.m, p.n, p.k), vec2(true, false));
        let summed = vec2(0, p.k);
        let acc = mainloop_fragments(slice_a, slice_b, a, b, shapes, across, origin, summed, t);
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<f32>(acc[f], spill, t);
            #[unroll]
            for k in 0..8 {
                let at = origin + fragment_at::<f32>(t, f, k);
                if at.y < p.m && at.x < p.n {
                    y[at.y * p.n + at.x] += p.alpha * values[k];
                }
            }
        }
    }

    /// Slice `z` of `aᵀ · bᵀ` (`a` k x m, `b` n x k) into `partial`, one m x n matrix a slice.
    #[kernel(
        workgroup = [GROUP],
        constants = Blocking,
        limits(workgroup_memory = 16896),
        grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK), p.splits]
    )]
    pub fn transposed_slices(
        p: &Shape,
        #[len(p.k * p.m)] a: &[f32],
        #[len(p.n * p.k)] b: &[f32],
        #[len(p.splits * p.m * p.n)] partial: &mut [f32],
        #[workgroup] slice_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        #[workgroup] slice_b: &mut [Vec4<f32>; BUFFERS * SLICE],
    ) {
        let (t, origin, split) = (local_index(), workgroup_id().xy * BLOCK, workgroup_id().z);
        let shapes = vec4(p.m, p.k, p.k, p.n);
        let summed = slice(split, p.split_depth, p.k);
        let acc = mainloop(
            slice_a,
            slice_b,
            a,
            b,
            shapes,
            vec2(false, true),
            origin,
            summed,
            t,
        );
        store_tile(partial, split * p.m * p.n, &acc, p.m, p.n, p.n, origin, t);
    }

    /// `y = activation(sum of the slices)`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.m * p.n, 64)])]
    pub fn activate_sum(
        p: &Shape,
        #[len(p.splits * p.m * p.n)] partial: &[f32],
        #[len(p.m * p.n)] y: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.m * p.n {
            y[i] = activate(sum_slices(partial, p.splits, p.m * p.n, i), p.kind);
        }
    }
}

/// `a · b` of row-major `a` (m x k) and `b` (k x n), in f64.
fn product(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut out = vec![0.0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|l| f64::from(a[i * k + l]) * f64::from(b[l * n + j]))
                .sum();
        }
    }
    out
}

/// The transpose of the row-major `rows x cols` matrix `m`.
fn transposed(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..cols * rows)
        .map(|i| m[(i % rows) * cols + i / rows])
        .collect()
}

fn shape(m: u32, n: u32, k: u32) -> mine::Shape {
    mine::Shape {
        m,
        n,
        k,
        alpha: 0.5,
        splits: 1,
        split_depth: k,
        kind: 0,
    }
}

/// `(a, b, y)` for an m x n x k `accumulate`, and the `y` it should leave, in f64 from the
/// operands as given (`f16` rounds them first, as the tensor cores' staging does).
fn accumulate_case((m, n, k): (u32, u32, u32), seed: u64, f16: bool) -> ([Vec<f32>; 3], Vec<f32>) {
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let mut rng = rng(seed);
    let (a, b, y0) = (
        values(&mut rng, mu * ku),
        values(&mut rng, ku * nu),
        values(&mut rng, mu * nu),
    );
    let round = |v: &[f32]| -> Vec<f32> {
        match f16 {
            true => v
                .iter()
                .map(|&x| tessera::half::f16::from_f32(x).to_f32())
                .collect(),
            false => v.to_vec(),
        }
    };
    let want = product(&round(&a), &round(&b), (mu, nu, ku))
        .iter()
        .zip(&y0)
        .map(|(ab, y)| (0.5 * ab + f64::from(*y)) as f32)
        .collect();
    ([a, b, y0], want)
}

/// Runs `accumulate` over `T` in the blocking of `reg` and checks it.
fn check_accumulate<T: mine::AccumulateElement + bytemuck::Pod>(
    rt: &Runtime,
    reg: u32,
    (m, n, k): (u32, u32, u32),
) {
    let ([a, b, y0], want) = accumulate_case((m, n, k), u64::from(m * 1000 + n * 10 + reg), false);
    let kernel = mine::Accumulate::<T>::with_constants(rt, mine::Blocking { reg }).unwrap();
    let (a, b) = (rt.upload(&a).unwrap(), rt.upload(&b).unwrap());
    let mut y = rt.upload(&y0).unwrap();
    let args = mine::AccumulateArgs {
        p: &shape(m, n, k),
        a: &*a.view_as::<T>().unwrap(),
        b: &*b.view_as::<T>().unwrap(),
        y: &mut y,
    };
    kernel.launch(rt, args).unwrap();
    let label = format!("{m} x {n} x {k}, REG {reg}, {}", std::any::type_name::<T>());
    eprintln!("accumulate {label}");
    assert_close(&y.read(rt).unwrap(), &want, 1e-4);
}

/// Runs `accumulate_fragments` over `T` in `blocking` and checks it against the operands
/// rounded to f16 (the sums stay f32).
fn check_fragments<T: mine::AccumulateFragmentsElement + bytemuck::Pod>(
    rt: &Runtime,
    blocking: mine::TensorBlocking,
    dims: (u32, u32, u32),
) {
    let ([a, b, y0], want) = accumulate_case(dims, u64::from(dims.0 + blocking.block), true);
    let kernel = mine::AccumulateFragments::<T>::with_constants(rt, blocking).unwrap();
    let (a, b) = (rt.upload(&a).unwrap(), rt.upload(&b).unwrap());
    let mut y = rt.upload(&y0).unwrap();
    let args = mine::AccumulateFragmentsArgs {
        p: &shape(dims.0, dims.1, dims.2),
        a: &*a.view_as::<T>().unwrap(),
        b: &*b.view_as::<T>().unwrap(),
        y: &mut y,
    };
    kernel.launch(rt, args).unwrap();
    eprintln!(
        "fragments {dims:?}, {blocking:?}, {}",
        std::any::type_name::<T>()
    );
    assert_close(&y.read(rt).unwrap(), &want, 1e-4);
}

#[test]
fn a_gemm_with_its_own_epilogue_matches_the_cpu_in_both_blockings_and_widths() {
    let rt = runtime();
    for reg in [8, 4] {
        // Tails in every dimension; one block; more blocks than one along each edge.
        for dims in [(70, 37, 45), (3, 5, 7), (130, 129, 20)] {
            check_accumulate::<f32>(&rt, reg, dims);
        }
        // Rows a multiple of 4 long: the operands read as vectors.
        for dims in [(33, 20, 12), (68, 132, 36)] {
            check_accumulate::<[f32; 4]>(&rt, reg, dims);
        }
    }
}

#[test]
fn transposed_operands_sliced_sums_and_an_activation_match_the_cpu() {
    let rt = runtime();
    let (m, n, k) = (45u32, 38u32, 70u32);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let mut rng = rng(5);
    let (a, b) = (values(&mut rng, mu * ku), values(&mut rng, ku * nu));
    let sum = product(&a, &b, (mu, nu, ku));
    for reg in [8, 4] {
        let slices = mine::TransposedSlices::with_constants(&rt, mine::Blocking { reg }).unwrap();
        let depth = mine::Blocking { reg }.depth();
        let sum_up = mine::ActivateSum::new(&rt).unwrap();
        // Slices of the summed dimension start at multiples of `DEPTH`; the last is cut short.
        for (splits, activation) in [(1, Activation::None), (3, Activation::Tanh)] {
            let split_depth = k.div_ceil(splits).next_multiple_of(depth);
            let splits = k.div_ceil(split_depth);
            let p = mine::Shape {
                splits,
                split_depth,
                kind: activation.code(),
                ..shape(m, n, k)
            };
            let (at, bt) = (transposed(&a, mu, ku), transposed(&b, ku, nu));
            let (at, bt) = (rt.upload(&at).unwrap(), rt.upload(&bt).unwrap());
            let mut partial = rt.zeros::<f32>(splits as usize * mu * nu).unwrap();
            let mut y = rt.zeros::<f32>(mu * nu).unwrap();
            let mut batch = rt.batch();
            let args = mine::TransposedSlicesArgs {
                p: &p,
                a: &at,
                b: &bt,
                partial: &mut partial,
            };
            slices.record(&mut batch, args).unwrap();
            let args = mine::ActivateSumArgs {
                p: &p,
                partial: &partial,
                y: &mut y,
            };
            sum_up.record(&mut batch, args).unwrap();
            batch.submit().unwrap();
            let want: Vec<f32> = match activation {
                Activation::Tanh => sum.iter().map(|v| v.tanh() as f32).collect(),
                _ => sum.iter().map(|&v| v as f32).collect(),
            };
            eprintln!("REG {reg}, {splits} slices of {split_depth}, {activation:?}");
            assert_close(&y.read(&rt).unwrap(), &want, 1e-4);
        }
    }
}

#[test]
fn a_tensor_core_gemm_with_its_own_epilogue_matches_the_cpu_or_is_refused() {
    let rt = runtime();
    let large = mine::TensorBlocking {
        depth: 32,
        block: 128,
        invocations: 256,
    };
    let small = mine::TensorBlocking { block: 64, ..large };
    if !rt.info().has_cooperative_matrix(16, F16, F32) {
        let refused = mine::AccumulateFragments::<f32>::with_constants(&rt, large);
        assert!(
            matches!(refused, Err(Error::MissingFeature { .. })),
            "expected MissingFeature, got {refused:?}"
        );
        return;
    }
    for blocking in [large, small] {
        for dims in [(70, 37, 45), (130, 129, 100)] {
            check_fragments::<f32>(&rt, blocking, dims);
        }
        check_fragments::<[f32; 4]>(&rt, blocking, (68, 132, 36));
    }
}
