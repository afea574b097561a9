//! Kernels written once over scalar and vector widths (`types(T = [f32, Vec2<f32>,
//! Vec4<f32>])`), on a real adapter against CPU references: loads and stores of `T`, a scalar
//! filling every lane (`a as T`), `T::LANES` and `T::Scalar`, the reductions across lanes
//! (`element_sum`, `element_product`, `max_element`, `min_element`, `dot`), a device-library
//! helper over `T` called from every instance, and the host types that follow the instance
//! (`GpuBuffer<f32>`, `GpuBuffer<[f32; 2]>`, `GpuBuffer<[f32; 4]>`). Generic helpers
//! (`fn largest<E>(..)`, one of them a library's) serve scalar and vector loads in one kernel.

mod common;

use common::{assert_close, rng, runtime, values};
use tessera::{half, wgpu, GpuBuffer, Runtime};

#[tessera::kernels]
pub mod widths {
    #[device]
    use tessera_test_library::elementwise;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Rows {
        /// Rows of `cols` scalars each.
        pub rows: u32,
        /// Scalars a row: a multiple of 4, so that every width reads whole rows.
        pub cols: u32,
    }

    /// `y = a * x + y`, one element of `T` an invocation.
    #[kernel(workgroup = [64], grid = [ceil_div(y.len(), 64)], types(T = [f32, Vec2<f32>, Vec4<f32>]))]
    pub fn scale_add<T>(a: &[f32], x: &[T], y: &mut [T]) {
        let i = global_id().x;
        if i < y.len() && i < x.len() {
            y[i] = axpy(a[0] as T, x[i], y[i]);
        }
    }

    /// For each row, its sum (through the library's `total`), product, largest and smallest
    /// element, and its dot product with itself: `stats[5 * row + k]`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.rows, 64)], types(T = [f32, Vec2<f32>, Vec4<f32>]))]
    pub fn row_stats<T>(p: &Rows, x: &[T], stats: &mut [T::Scalar]) {
        let row = global_id().x;
        if row < p.rows {
            let width = p.cols / T::LANES;
            let start = row * width;
            let mut product = 1.0 as T;
            let mut largest = x[start];
            let mut smallest = x[start];
            let mut square: T::Scalar = 0.0;
            for k in 0..width {
                let v = x[start + k];
                product *= v;
                largest = largest.max(v);
                smallest = smallest.min(v);
                square += v.dot(v);
            }
            stats[5 * row] = total(x, start, width);
            stats[5 * row + 1] = product.element_product();
            stats[5 * row + 2] = largest.max_element();
            stats[5 * row + 3] = smallest.min_element();
            stats[5 * row + 4] = square;
        }
    }

    /// `v` scaled by `k`, in whatever element type the call passes: one copy for `f32`, one
    /// for `Vec4<f32>`.
    fn scaled<E>(v: E, k: f32) -> E {
        v * (k as E)
    }

    /// The sum of a lent array's elements, and of their lanes.
    fn array_sum<E>(a: &[E; 2]) -> E::Scalar {
        (a[0] + a[1]).element_sum()
    }

    /// Rows of 8 scalars, read through generic helpers once as scalars and once as two
    /// vectors: `out[3 row..]` = the row's largest element (the library's `largest`) both
    /// ways, and twice its sum (through `scaled` and `array_sum`).
    #[kernel(workgroup = [64], grid = [ceil_div(p.rows, 64)])]
    pub fn generic_rows(p: &Rows, x: &[f32], x4: &[Vec4<f32>], out: &mut [f32]) {
        let row = global_id().x;
        if row < p.rows {
            out[3 * row] = largest(x, 8 * row, 8);
            out[3 * row + 1] = largest(x4, 2 * row, 2);
            let halves = [scaled(x4[2 * row], 2.0), scaled(x4[2 * row + 1], 2.0)];
            let mut sum = 0.0;
            for k in 0..8 {
                sum += scaled(x[8 * row + k], 1.0);
            }
            out[3 * row + 2] = array_sum(&halves) - sum;
        }
    }

    /// The sum and largest lane of each `u32` element, over scalar and vector widths.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)], types(T = [u32, Vec4<u32>]))]
    pub fn lanes_u32<T>(x: &[T], sums: &mut [u32], largest: &mut [u32]) {
        let i = global_id().x;
        if i < x.len() {
            sums[i] = x[i].element_sum();
            largest[i] = x[i].max_element();
        }
    }
}

/// `a * x + y` through the `T` instance of `scale_add`, the buffers of `T` made from scalars.
fn scale_add<T: widths::ScaleAddElement>(rt: &Runtime, a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    let kernel = widths::ScaleAdd::<T>::new(rt).unwrap();
    let of_t =
        |v: &[f32]| -> GpuBuffer<T> { rt.upload(bytemuck::cast_slice::<f32, T>(v)).unwrap() };
    let (a, xs) = (rt.upload(&[a]).unwrap(), of_t(x));
    let mut ys = of_t(y);
    let args = widths::ScaleAddArgs {
        a: &a,
        x: &xs,
        y: &mut ys,
    };
    kernel.launch(rt, args).unwrap();
    bytemuck::cast_slice(&ys.read(rt).unwrap()).to_vec()
}

#[test]
fn one_body_runs_at_every_width_with_the_host_types_of_its_instance() {
    let rt = runtime();
    let n = 4 * 37;
    let (x, y) = (values(&mut rng(11), n), values(&mut rng(12), n));
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 0.75 * x + y).collect();
    assert_close(&scale_add::<f32>(&rt, 0.75, &x, &y), &want, 1e-6);
    assert_close(&scale_add::<[f32; 2]>(&rt, 0.75, &x, &y), &want, 1e-6);
    assert_close(&scale_add::<[f32; 4]>(&rt, 0.75, &x, &y), &want, 1e-6);
}

/// The five statistics of each row of `x`, through the `T` instance of `row_stats`.
fn row_stats<T: widths::RowStatsElement>(
    rt: &Runtime,
    rows: u32,
    cols: u32,
    x: &[f32],
) -> Vec<f32> {
    let kernel = widths::RowStats::<T>::new(rt).unwrap();
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<f32, T>(x)).unwrap();
    let mut stats = rt.zeros::<f32>(5 * rows as usize).unwrap();
    let p = widths::Rows { rows, cols };
    let args = widths::RowStatsArgs {
        p: &p,
        x: &xs,
        stats: &mut stats,
    };
    kernel.launch(rt, args).unwrap();
    stats.read(rt).unwrap()
}

#[test]
fn reductions_across_lanes_match_the_reference_at_every_width() {
    let rt = runtime();
    let (rows, cols) = (67u32, 12u32);
    // Values near 1, so that a row's product stays well within `f32`.
    let x: Vec<f32> = values(&mut rng(13), (rows * cols) as usize)
        .iter()
        .map(|v| 1.0 + 0.25 * v)
        .collect();
    let want: Vec<f32> = x
        .chunks(cols as usize)
        .flat_map(|row| {
            [
                row.iter().sum(),
                row.iter().product(),
                row.iter().copied().fold(f32::MIN, f32::max),
                row.iter().copied().fold(f32::MAX, f32::min),
                row.iter().map(|v| v * v).sum(),
            ]
        })
        .collect();
    assert_close(&row_stats::<f32>(&rt, rows, cols, &x), &want, 1e-5);
    assert_close(&row_stats::<[f32; 2]>(&rt, rows, cols, &x), &want, 1e-5);
    assert_close(&row_stats::<[f32; 4]>(&rt, rows, cols, &x), &want, 1e-5);
}

#[test]
fn integer_lanes_reduce_to_their_scalar() {
    let rt = runtime();
    let x: Vec<u32> = (0..4 * 70u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7)
        .collect();
    let run = |vectors: bool| {
        let n = if vectors { x.len() / 4 } else { x.len() };
        let (mut sums, mut largest) = (rt.zeros::<u32>(n).unwrap(), rt.zeros::<u32>(n).unwrap());
        if vectors {
            let xs = rt
                .upload(bytemuck::cast_slice::<u32, [u32; 4]>(&x))
                .unwrap();
            let args = widths::LanesU32Args {
                x: &xs,
                sums: &mut sums,
                largest: &mut largest,
            };
            widths::LanesU32::<[u32; 4]>::new(&rt)
                .unwrap()
                .launch(&rt, args)
                .unwrap();
        } else {
            let xs = rt.upload(&x).unwrap();
            let args = widths::LanesU32Args {
                x: &xs,
                sums: &mut sums,
                largest: &mut largest,
            };
            widths::LanesU32::<u32>::new(&rt)
                .unwrap()
                .launch(&rt, args)
                .unwrap();
        }
        (sums.read(&rt).unwrap(), largest.read(&rt).unwrap())
    };
    assert_eq!(run(false), (x.clone(), x.clone()));
    let sums: Vec<u32> = x
        .chunks(4)
        .map(|c| c.iter().fold(0u32, |a, &b| a.wrapping_add(b)))
        .collect();
    let largest: Vec<u32> = x.chunks(4).map(|c| *c.iter().max().unwrap()).collect();
    assert_eq!(run(true), (sums, largest));
}

#[test]
fn generic_helpers_serve_scalar_and_vector_loads_in_one_kernel() {
    let rt = runtime();
    let rows = 75u32;
    let x = values(&mut rng(14), 8 * rows as usize);
    let xs = rt.upload(&x).unwrap();
    let x4 = rt
        .upload(bytemuck::cast_slice::<f32, [f32; 4]>(&x))
        .unwrap();
    let p = widths::Rows { rows, cols: 8 };
    let mut out = rt.zeros::<f32>(3 * rows as usize).unwrap();
    let args = widths::GenericRowsArgs {
        p: &p,
        x: &xs,
        x4: &x4,
        out: &mut out,
    };
    widths::GenericRows::new(&rt)
        .unwrap()
        .launch(&rt, args)
        .unwrap();
    let want: Vec<f32> = x
        .chunks(8)
        .flat_map(|row| {
            let top = row.iter().copied().fold(f32::MIN, f32::max);
            [top, top, row.iter().sum()]
        })
        .collect();
    assert_close(&out.read(&rt).unwrap(), &want, 1e-5);
}

/// The WGSL of the module, pinned: each width's instance shows as a readable diff.
#[test]
fn the_widths_wgsl_is_pinned() {
    insta::assert_snapshot!("widths", widths::WGSL);
}

/// `T::F32`: kernels over `f16` storage that sum and scale in `f32`.
#[tessera::kernels]
pub mod halves {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Rows {
        pub rows: u32,
        pub cols: u32,
    }

    /// `v`'s lanes as `f32`, in a helper generic over its own `E`.
    fn widened<E>(v: E) -> E::F32 {
        v as E::F32
    }

    /// Each row's sum, in `f32` whatever `T` holds, and the row halved in `f32` and stored
    /// back as `T`.
    #[kernel(
        workgroup = [64],
        grid = [ceil_div(p.rows, 64)],
        types(T = [f16, Vec4<f16>]),
        features(f16)
    )]
    pub fn sums_in_f32<T>(
        p: &Rows,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.rows * p.cols / T::LANES)] halved: &mut [T],
        #[len(p.rows)] sums: &mut [f32],
    ) {
        let row = global_id().x;
        if row < p.rows {
            let width = p.cols / T::LANES;
            let mut acc = 0.0 as T::F32;
            for k in 0..width {
                let wide = widened(x[row * width + k]);
                acc += wide;
                halved[row * width + k] = (wide * 0.5) as T;
            }
            sums[row] = acc.element_sum();
        }
    }
}

/// The `T` instance of `sums_in_f32` over `x`: each row's sum and the halved rows.
fn sums_in_f32<T: halves::SumsInF32Element + bytemuck::Pod>(
    rt: &Runtime,
    rows: u32,
    cols: u32,
    x: &[half::f16],
) -> tessera::Result<(Vec<f32>, Vec<half::f16>)> {
    let kernel = halves::SumsInF32::<T>::new(rt)?;
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<half::f16, T>(x))?;
    let mut halved = rt.zeros::<T>(xs.len())?;
    let mut sums = rt.zeros::<f32>(rows as usize)?;
    let p = halves::Rows { rows, cols };
    let args = halves::SumsInF32Args {
        p: &p,
        x: &xs,
        halved: &mut halved,
        sums: &mut sums,
    };
    kernel.launch(rt, args)?;
    let halved = bytemuck::cast_slice::<T, half::f16>(&halved.read(rt)?).to_vec();
    Ok((sums.read(rt)?, halved))
}

#[test]
fn f16_storage_sums_in_f32_through_t_f32() {
    let rt = runtime();
    // 3000 ones a row: past 2048 an f16 sum stops counting (2048 + 1 rounds to 2048); an f32
    // sum reaches 3000. Then values that halve exactly.
    let (rows, cols) = (3u32, 3000u32);
    let mut x = vec![half::f16::ONE; (rows * cols) as usize];
    for (i, v) in x[(2 * cols) as usize..].iter_mut().enumerate() {
        *v = half::f16::from_f32((i % 7) as f32 - 3.0);
    }
    let want_sums: Vec<f32> = x
        .chunks(cols as usize)
        .map(|row| row.iter().map(|v| v.to_f32()).sum())
        .collect();
    assert_eq!(want_sums[0], 3000.0);
    let want_halved: Vec<half::f16> = x
        .iter()
        .map(|v| half::f16::from_f32(v.to_f32() / 2.0))
        .collect();
    if !rt.info().features.contains(wgpu::Features::SHADER_F16) {
        let refused = sums_in_f32::<half::f16>(&rt, rows, cols, &x);
        assert!(
            matches!(refused, Err(tessera::Error::MissingFeature { .. })),
            "{refused:?}"
        );
        return;
    }
    for (sums, halved) in [
        sums_in_f32::<half::f16>(&rt, rows, cols, &x).unwrap(),
        sums_in_f32::<[half::f16; 4]>(&rt, rows, cols, &x).unwrap(),
    ] {
        assert_eq!(sums, want_sums);
        assert_eq!(halved, want_halved);
    }
}

/// A buffer of `T::F32` where the listed types differ in width: its host type follows `T`.
#[tessera::kernels]
pub mod widening {
    /// `wide[i] = 2 * x[i]` in `f32`, whatever `T` holds: the buffer is `GpuBuffer<f32>` for
    /// `f32` and `f16`, `GpuBuffer<[f32; 4]>` for their `Vec4`s.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn doubled<T>(x: &[T], wide: &mut [T::F32]) {
        let i = global_id().x;
        if i < x.len() && i < wide.len() {
            wide[i] = x[i] as T::F32 * (2.0 as T::F32);
        }
    }
}

/// `doubled`'s `T` instance over the scalars `x` (`f32` or `f16`), read back as `f32`s.
fn doubled<T, S>(rt: &Runtime, x: &[S]) -> tessera::Result<Vec<f32>>
where
    T: widening::DoubledElement,
    S: bytemuck::Pod,
{
    let kernel = widening::Doubled::<T>::new(rt)?;
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<S, T>(x))?;
    let mut wide = rt.zeros::<T::F32>(xs.len())?;
    let args = widening::DoubledArgs {
        x: &xs,
        wide: &mut wide,
    };
    kernel.launch(rt, args)?;
    Ok(bytemuck::cast_slice::<T::F32, f32>(&wide.read(rt)?).to_vec())
}

#[test]
fn a_buffer_of_t_f32_follows_t_in_width() {
    let rt = runtime();
    let wide: Vec<f32> = (0..36).map(|i| i as f32 - 17.5).collect();
    let want: Vec<f32> = wide.iter().map(|v| 2.0 * v).collect();
    assert_eq!(doubled::<f32, f32>(&rt, &wide).unwrap(), want, "f32");
    assert_eq!(
        doubled::<[f32; 4], f32>(&rt, &wide).unwrap(),
        want,
        "Vec4<f32>"
    );
    let x: Vec<half::f16> = wide.iter().map(|&v| half::f16::from_f32(v)).collect();
    if !rt.info().features.contains(wgpu::Features::SHADER_F16) {
        let refused = doubled::<half::f16, half::f16>(&rt, &x);
        assert!(
            matches!(refused, Err(tessera::Error::MissingFeature { .. })),
            "{refused:?}"
        );
        return;
    }
    assert_eq!(doubled::<half::f16, _>(&rt, &x).unwrap(), want, "f16");
    assert_eq!(
        doubled::<[half::f16; 4], _>(&rt, &x).unwrap(),
        want,
        "Vec4<f16>"
    );
}
