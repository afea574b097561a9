//! Device-function libraries on a real adapter, against CPU references: kernels that import
//! helpers from another crate (`tessera-test-library`, in `tests/library`) and from a library
//! module of this crate. Covered: a helper holding barriers over the caller's workgroup array,
//! called from two instances of different sizes; a helper over the caller's element type,
//! called from an `f32` and a `u32` instance; a library constant; a helper using subgroups;
//! and tensor-core fragments (naga validates those while the macro expands; a device without
//! cooperative matrices does not run them). Then library structs, imports and sets (below).

mod common;

use common::{assert_close, rng, runtime, values};
use tessera::{wgpu, Error};

/// A library of this crate, imported below as `super::local`.
#[tessera::device]
mod local {
    /// The library's own constant, used by its helper.
    const SCALE: f32 = 0.5;

    /// `x` scaled by the library's `SCALE`.
    fn halved(x: f32) -> f32 {
        x * SCALE
    }
}

#[tessera::kernels]
pub mod imported {
    #[device]
    use super::local;
    // Two libraries in one item, as Rust groups a `use`.
    #[device]
    use tessera_test_library::{elementwise, reductions};

    /// Each workgroup of `GROUP` invocations sums its `GROUP` elements of `x` into one element
    /// of `sums`, through the library's `workgroup_sum` over this kernel's `tile`.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 16]), grid = [ceil_div(x.len(), GROUP)])]
    pub fn block_sums(x: &[f32], sums: &mut [f32], #[workgroup] tile: &mut [f32; GROUP]) {
        let i = global_id().x;
        let value = if i < x.len() { x[i] } else { 0.0 };
        let total = workgroup_sum(tile, local_index(), value);
        if local_index() == 0 && workgroup_id().x < sums.len() {
            sums[workgroup_id().x] = total;
        }
    }

    /// `y[i] = a * x[i] + y[i]` in `T`, through the library's `axpy`.
    #[kernel(workgroup = [64], grid = [ceil_div(y.len(), 64)], types(T = [f32, u32]))]
    pub fn scaled_add<T>(a: &[T], x: &[T], y: &mut [T]) {
        let i = global_id().x;
        if i < y.len() && i < x.len() {
            y[i] = axpy(a[0], x[i], y[i]);
        }
    }

    /// `y[i]` = the sum of `FOLD` squares of `x` from `i * FOLD`, halved by this crate's library.
    #[kernel(workgroup = [64], grid = [ceil_div(y.len(), 64)])]
    pub fn folded_squares(x: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        if i < y.len() && (i + 1) * FOLD <= x.len() {
            y[i] = halved(sum_of_squares(x, i * FOLD));
        }
    }

    /// Every invocation gets its subgroup's sum of `x`.
    #[kernel(workgroup = [64], grid = [1], features(subgroups))]
    pub fn subgroup_sums(x: &[f32], out: &mut [f32], sizes: &mut [u32]) {
        let i = local_index();
        out[i] = subgroup_total(x[i]);
        sizes[i] = subgroup_size();
    }
}

#[tessera::kernels]
pub mod imported_tiles {
    #[device]
    use tessera_test_library::tiles;

    /// `c = a · b` for `n x n` matrices, `n` a multiple of 16, one 16 x 16 tile of `c` per
    /// workgroup of one subgroup of 32, through the library's `multiply_tile`.
    #[kernel(workgroup = [32], grid = [c.len() / 256], features(f16, cooperative_matrix))]
    pub fn square_matmul(n: &[u32], a: &[f16], b: &[f16], c: &mut [f32]) {
        let size = workgroup_uniform_load_n(n);
        let tiles = size / 16;
        let (row, col) = (workgroup_id().x / tiles * 16, workgroup_id().x % tiles * 16);
        let mut acc: FragC16<f32> = coop_zero();
        for k in (0..size).step_by(16) {
            acc = multiply_tile(a, b, row * size + k, k * size + col, size, acc);
        }
        coop_store_row_major(acc, &mut c[row * size + col], size);
    }

    fn workgroup_uniform_load_n(n: &[u32]) -> u32 {
        n[0]
    }
}

#[tessera::kernels]
pub mod windowed {
    #[device]
    use tessera_test_library::windows;

    /// `y[i]` = the window sum at `i`: the library's struct as this kernel's uniform, in its
    /// lengths and grid.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn window_sums(
        p: &WindowParams,
        #[len(p.n + p.width - 1)] x: &[f32],
        #[len(p.n)] y: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.n && inputs(p) <= x.len() {
            y[i] = doubled_window(p, x, i);
        }
    }

    /// A helper of this module over the library's struct.
    fn doubled_window(p: &WindowParams, x: &[f32], i: u32) -> f32 {
        2.0 * window_sum(p, x, i)
    }
}

/// A library of this crate importing one of another crate.
#[tessera::device]
mod local_epilogue {
    #[device]
    use tessera_test_library::epilogues;

    /// `activated_window` halved.
    fn halved_activated_window(p: &WindowParams, x: &[f32], i: u32, bias: f32) -> f32 {
        0.5 * activated_window(p, x, i, bias)
    }
}

#[tessera::kernels]
pub mod chained {
    // `epilogues` brings `activations` and `windows` too; importing them directly as well
    // brings nothing twice.
    #[device]
    use super::local_epilogue;
    #[device]
    use tessera_test_library::activations;
    #[device]
    use tessera_test_library::epilogues;

    /// `y[i]` = `activated_window` (through this crate's library) and `biased_activation` of
    /// the raw input, which `epilogues` makes from `activations`' `leaky_relu`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn activated(
        p: &WindowParams,
        x: &[f32],
        bias: &[f32],
        #[len(p.n)] y: &mut [f32],
        #[len(p.n)] raw: &mut [f32],
    ) {
        let i = global_id().x;
        if i < p.n && p.n + p.width - 1 <= x.len() {
            y[i] = halved_activated_window(p, x, i, bias[0]);
            raw[i] = biased_activation(x[i], bias[0]) + leaky_relu(-LEAK);
        }
    }
}

/// The window sums of `x`, as `windows::window_sum` computes them.
fn window_sums(p: &tessera_test_library::windows::WindowParams, x: &[f32]) -> Vec<f32> {
    (0..p.n as usize)
        .map(|i| x[i..i + p.width as usize].iter().sum::<f32>() * p.scale)
        .collect()
}

#[test]
fn a_librarys_params_struct_is_a_kernels_uniform() {
    let rt = runtime();
    // The host names the struct through the library, or through the importing module.
    let p = tessera_test_library::windows::WindowParams {
        n: 150,
        width: 5,
        scale: 0.5,
    };
    let same: windowed::WindowParams = p;
    let x = values(&mut rng(8), (p.n + p.width - 1) as usize);
    let kernel = windowed::WindowSums::new(&rt).unwrap();
    let xs = rt.upload(&x).unwrap();
    let mut y = rt.zeros::<f32>(p.n as usize).unwrap();
    let args = windowed::WindowSumsArgs {
        p: &same,
        x: &xs,
        y: &mut y,
    };
    assert_eq!(kernel.grid(&args), [3, 1, 1]);
    kernel.launch(&rt, args).unwrap();
    let want: Vec<f32> = window_sums(&p, &x).iter().map(|v| 2.0 * v).collect();
    assert_close(&y.read(&rt).unwrap(), &want, 1e-5);
    // `#[len(p.n + p.width - 1)]`: the launcher reads the library's struct.
    let short = rt.upload(&x[1..]).unwrap();
    let args = windowed::WindowSumsArgs {
        p: &p,
        x: &short,
        y: &mut y,
    };
    assert!(kernel.launch(&rt, args).is_err());
}

#[test]
fn a_library_importing_libraries_hands_their_helpers_on() {
    let rt = runtime();
    // `epilogues` re-exports the struct of the library it imports.
    let p = tessera_test_library::epilogues::WindowParams {
        n: 70,
        width: 3,
        scale: 1.0,
    };
    let x = values(&mut rng(9), (p.n + p.width - 1) as usize);
    let bias = -0.25f32;
    let kernel = chained::Activated::new(&rt).unwrap();
    let (xs, bs) = (rt.upload(&x).unwrap(), rt.upload(&[bias]).unwrap());
    let mut y = rt.zeros::<f32>(p.n as usize).unwrap();
    let mut raw = rt.zeros::<f32>(p.n as usize).unwrap();
    kernel
        .launch(
            &rt,
            chained::ActivatedArgs {
                p: &p,
                x: &xs,
                bias: &bs,
                y: &mut y,
                raw: &mut raw,
            },
        )
        .unwrap();
    let leak = tessera_test_library::activations::LEAK;
    let leaky = |v: f32| if v > 0.0 { v } else { leak * v };
    let want: Vec<f32> = window_sums(&p, &x)
        .iter()
        .map(|v| 0.5 * leaky(v + bias))
        .collect();
    assert_close(&y.read(&rt).unwrap(), &want, 1e-5);
    let want_raw: Vec<f32> = x[..p.n as usize]
        .iter()
        .map(|v| leaky(v + bias) + leaky(-leak))
        .collect();
    assert_close(&raw.read(&rt).unwrap(), &want_raw, 1e-6);
}

/// The WGSL of the importing modules, pinned so that a change in what an import brings shows
/// as a diff (and so that `tests/tint.rs` runs it through Tint).
#[test]
fn the_importing_modules_wgsl_is_pinned() {
    insta::assert_snapshot!("imported", imported::WGSL);
    // Through two levels of imports, only the helpers `activated` calls, each once.
    insta::assert_snapshot!("chained", chained::WGSL);
}

#[test]
fn a_library_helper_with_barriers_sums_over_the_callers_workgroup_array() {
    let rt = runtime();
    for (group, constants) in [
        (64, imported::BlockSumsConstants { group: 64 }),
        (16, imported::BlockSumsConstants { group: 16 }),
    ] {
        let n = 3 * group + 5;
        let x = values(&mut rng(group as u64), n);
        let want: Vec<f32> = x.chunks(group).map(|c| c.iter().sum()).collect();
        let kernel = imported::BlockSums::with_constants(&rt, constants).unwrap();
        let xs = rt.upload(&x).unwrap();
        let mut sums = rt.zeros::<f32>(want.len()).unwrap();
        kernel
            .launch(
                &rt,
                imported::BlockSumsArgs {
                    x: &xs,
                    sums: &mut sums,
                },
            )
            .unwrap();
        assert_close(&sums.read(&rt).unwrap(), &want, 1e-5);
    }
}

/// `a * x + y` through the `T` instance of `scaled_add`.
fn scaled_add<T: imported::ScaledAddElement + bytemuck::Pod>(a: T, x: &[T], y: &[T]) -> Vec<T> {
    let rt = runtime();
    let kernel = imported::ScaledAdd::<T>::new(&rt).unwrap();
    let (a, xs) = (rt.upload(&[a]).unwrap(), rt.upload(x).unwrap());
    let mut ys = rt.upload(y).unwrap();
    let args = imported::ScaledAddArgs {
        a: &a,
        x: &xs,
        y: &mut ys,
    };
    kernel.launch(&rt, args).unwrap();
    ys.read(&rt).unwrap()
}

#[test]
fn a_library_helper_follows_the_callers_element_type() {
    let n = 70;
    let x: Vec<f32> = values(&mut rng(3), n);
    let y: Vec<f32> = values(&mut rng(4), n);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 1.5 * x + y).collect();
    assert_close(&scaled_add(1.5f32, &x, &y), &want, 1e-6);

    let x: Vec<u32> = (0..n as u32).collect();
    let y: Vec<u32> = (0..n as u32).map(|i| 1000 + 7 * i).collect();
    let want: Vec<u32> = x.iter().zip(&y).map(|(x, y)| 3 * x + y).collect();
    assert_eq!(scaled_add(3u32, &x, &y), want);
}

#[test]
fn library_constants_reach_their_helpers_in_the_callers_module() {
    let rt = runtime();
    let fold = tessera_test_library::reductions::FOLD as usize;
    let x = values(&mut rng(5), 2 * 67);
    let kernel = imported::FoldedSquares::new(&rt).unwrap();
    let xs = rt.upload(&x).unwrap();
    let mut y = rt.zeros::<f32>(67).unwrap();
    kernel
        .launch(&rt, imported::FoldedSquaresArgs { x: &xs, y: &mut y })
        .unwrap();
    let want: Vec<f32> = x
        .chunks(fold)
        .map(|c| 0.5 * c.iter().map(|v| v * v).sum::<f32>())
        .collect();
    assert_close(&y.read(&rt).unwrap(), &want, 1e-5);
}

#[test]
fn a_library_helper_uses_subgroups_where_the_kernel_declares_them() {
    let rt = runtime();
    if !rt.info().features.contains(wgpu::Features::SUBGROUP) {
        eprintln!("skipped: this adapter has no subgroups");
        return;
    }
    let x: Vec<f32> = (0..64).map(|i| (i % 7) as f32).collect();
    let kernel = imported::SubgroupSums::new(&rt).unwrap();
    let xs = rt.upload(&x).unwrap();
    let mut out = rt.zeros::<f32>(64).unwrap();
    let mut sizes = rt.zeros::<u32>(64).unwrap();
    kernel
        .launch(
            &rt,
            imported::SubgroupSumsArgs {
                x: &xs,
                out: &mut out,
                sizes: &mut sizes,
            },
        )
        .unwrap();
    // Invocations map to subgroups in order of `local_index()`, `size` to a subgroup.
    let size = sizes.read(&rt).unwrap()[0] as usize;
    assert!(size >= 1 && 64 % size == 0, "subgroup size {size}");
    let want: Vec<f32> = x
        .chunks(size)
        .flat_map(|c| std::iter::repeat_n(c.iter().sum::<f32>(), size))
        .collect();
    assert_eq!(out.read(&rt).unwrap(), want);
}

#[test]
fn a_library_helper_multiplies_fragments_where_the_device_has_them() {
    // The module's WGSL holds the library's helper, validated by naga while the macro expanded.
    assert!(imported_tiles::WGSL.contains("fn multiply_tile"));
    let rt = runtime();
    let n = 32usize;
    let a: Vec<f32> = values(&mut rng(6), n * n);
    let b: Vec<f32> = values(&mut rng(7), n * n);
    let kernel = match imported_tiles::SquareMatmul::new(&rt) {
        Ok(kernel) => kernel,
        Err(Error::MissingFeature { .. }) => {
            eprintln!("skipped: this device has no 16 x 16 x 16 f16 tensor cores");
            return;
        }
        Err(other) => panic!("{other}"),
    };
    let half = |v: &[f32]| {
        v.iter()
            .map(|&x| tessera::half::f16::from_f32(x))
            .collect::<Vec<_>>()
    };
    let (ah, bh) = (half(&a), half(&b));
    let (nn, ag, bg) = (
        rt.upload(&[n as u32]).unwrap(),
        rt.upload(&ah).unwrap(),
        rt.upload(&bh).unwrap(),
    );
    let mut c = rt.zeros::<f32>(n * n).unwrap();
    kernel
        .launch(
            &rt,
            imported_tiles::SquareMatmulArgs {
                n: &nn,
                a: &ag,
                b: &bg,
                c: &mut c,
            },
        )
        .unwrap();
    let want: Vec<f32> = (0..n * n)
        .map(|e| {
            (0..n)
                .map(|k| ah[e / n * n + k].to_f32() * bh[k * n + e % n].to_f32())
                .sum()
        })
        .collect();
    assert_close(&c.read(&rt).unwrap(), &want, 1e-2);
}

/// A library of this crate over `tiling`'s set: its helper uses the calling instance's `TILE`
/// through `tiling`'s helper, and a module importing it gets `Tiling` too.
#[tessera::device]
mod spans {
    #[device]
    use tessera_test_library::tiling;

    /// The sum of the `SPAN` elements of workgroup `w`, of the `n` of `x`.
    fn span_sum(x: &[f32], n: u32, w: u32) -> f32 {
        let mut total = 0.0;
        for i in 0..TILE {
            total += lane_sum(x, n, w, i);
        }
        total
    }
}

/// One of two modules over the library's `Tiling`, imported directly.
#[tessera::kernels]
pub mod tiled_lanes {
    #[device]
    pub use tessera_test_library::tiling;

    /// `out[j]`: the sum of the `LANES` elements from `j * LANES`, plus the index of the
    /// workgroup (of `SPAN` elements) that read them.
    #[kernel(workgroup = [TILE], constants = Tiling, grid = [ceil_div(x.len(), SPAN)])]
    pub fn lane_sums(x: &[f32], out: &mut [f32]) {
        let (w, i) = (workgroup_id().x, local_index());
        let j = w * TILE + i;
        if j < out.len() {
            out[j] = lane_sum(x, x.len(), w, i) + w as f32;
        }
    }
}

/// The other module over `Tiling`, imported through the library `spans`.
#[tessera::kernels]
pub mod tiled_spans {
    #[device]
    use super::spans;

    /// `sums[w]`: the sum of the `SPAN` elements of workgroup `w`.
    #[kernel(workgroup = [TILE], constants = Tiling, grid = [ceil_div(x.len(), SPAN)])]
    pub fn span_sums(x: &[f32], sums: &mut [f32]) {
        let w = workgroup_id().x;
        if local_index() == 0 && w < sums.len() {
            sums[w] = span_sum(x, x.len(), w);
        }
    }
}

#[test]
fn a_librarys_set_of_constants_is_one_type_for_every_importing_module() {
    use tessera_test_library::tiling::{Tiling, LANES};
    // The modules name the library's type (`tiled_lanes` through its `pub` import).
    let same: tiled_lanes::Tiling = Tiling { tile: 8 };
    assert_eq!(same, Tiling::ALL[0]);
    assert_eq!(Tiling::ALL, [Tiling { tile: 8 }, Tiling { tile: 32 }]);
    assert_eq!(Tiling { tile: 32 }.span(), 32 * LANES);
    assert_eq!(tiled_lanes::LaneSums::INSTANCES, Tiling::ALL);
    assert_eq!(tiled_spans::SpanSums::INSTANCES, Tiling::ALL);
    let rt = runtime();
    for &tiling in Tiling::ALL {
        assert_eq!(
            tiled_lanes::LaneSums::with_constants(&rt, tiling)
                .unwrap()
                .constants(),
            tiling
        );
        assert_eq!(
            tiled_spans::SpanSums::with_constants(&rt, tiling)
                .unwrap()
                .constants(),
            tiling
        );
    }
}

#[test]
fn kernels_of_two_modules_run_each_instance_of_a_librarys_set() {
    use tessera_test_library::tiling::{Tiling, LANES};
    let rt = runtime();
    let n = 203;
    let x = values(&mut rng(9), n);
    let xs = rt.upload(&x).unwrap();
    for &tiling in Tiling::ALL {
        let span = tiling.span() as usize;
        let lanes = LANES as usize;
        let want: Vec<f32> = x
            .chunks(lanes)
            .enumerate()
            .map(|(j, c)| c.iter().sum::<f32>() + (j * lanes / span) as f32)
            .collect();
        let mut out = rt.zeros::<f32>(want.len()).unwrap();
        tiled_lanes::LaneSums::with_constants(&rt, tiling)
            .unwrap()
            .launch(
                &rt,
                tiled_lanes::LaneSumsArgs {
                    x: &xs,
                    out: &mut out,
                },
            )
            .unwrap();
        assert_close(&out.read(&rt).unwrap(), &want, 1e-5);

        let want: Vec<f32> = x.chunks(span).map(|c| c.iter().sum()).collect();
        let mut sums = rt.zeros::<f32>(want.len()).unwrap();
        tiled_spans::SpanSums::with_constants(&rt, tiling)
            .unwrap()
            .launch(
                &rt,
                tiled_spans::SpanSumsArgs {
                    x: &xs,
                    sums: &mut sums,
                },
            )
            .unwrap();
        assert_close(&sums.read(&rt).unwrap(), &want, 1e-4);
    }
}

/// A module of kernels from a library: `passes`' kernels and family become this module's own,
/// beside a kernel written here.
#[tessera::kernels]
pub mod ready {
    #[device]
    use tessera_test_library::passes;

    /// `x[i] = -x[i]`.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn negated(x: &mut [f32]) {
        let i = global_id().x;
        if i < x.len() {
            x[i] = -x[i];
        }
    }
}

/// A library importing `passes` gets its helpers and structs, not its kernels.
#[tessera::device]
mod local_passes {
    #[device]
    use tessera_test_library::passes;

    /// `x` plus `p.scale` times `p.width`, through `windows::inputs`, which `passes` imports.
    fn shifted_by(p: &WindowParams, x: f32) -> f32 {
        x + p.scale * (inputs(p) - p.n + 1) as f32
    }
}

#[tessera::kernels]
pub mod helpers_only {
    #[device]
    use super::local_passes;

    /// `x[i] += p.scale` for `i < p.n`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn shift_all(p: &WindowParams, #[len(p.n)] x: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            x[i] = shifted_by(p, x[i]);
        }
    }
}

#[test]
fn a_librarys_kernels_run_as_the_importing_modules_own() {
    let rt = runtime();
    let n = 150;
    let x: Vec<f32> = values(&mut rng(21), n);
    let y: Vec<f32> = values(&mut rng(22), n);
    let (a, xs) = (rt.upload(&[0.5f32]).unwrap(), rt.upload(&x).unwrap());
    let mut ys = rt.upload(&y).unwrap();
    let scaled = ready::ScaledSum::<f32>::new(&rt).unwrap();
    let args = ready::ScaledSumArgs {
        a: &a,
        x: &xs,
        y: &mut ys,
    };
    scaled.launch(&rt, args).unwrap();
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 0.5 * x + y).collect();
    assert_close(&ys.read(&rt).unwrap(), &want, 1e-6);

    let (a, xs) = (
        rt.upload(&[3u32]).unwrap(),
        rt.upload(&[1u32, 2, 3]).unwrap(),
    );
    let mut ys = rt.upload(&[10u32, 20, 30]).unwrap();
    let args = ready::ScaledSumArgs {
        a: &a,
        x: &xs,
        y: &mut ys,
    };
    ready::ScaledSum::<u32>::new(&rt)
        .unwrap()
        .launch(&rt, args)
        .unwrap();
    assert_eq!(ys.read(&rt).unwrap(), [13, 26, 39]);

    // The library's family, then the module's own kernel, on the first 100 of 150 elements.
    let p = ready::WindowParams {
        n: 100,
        width: 1,
        scale: 0.25,
    };
    let mut xs = rt.upload(&x).unwrap();
    let adjust = ready::Adjust::new(&rt).unwrap();
    adjust
        .launch(&rt, ready::AdjustArgs { p: &p, x: &mut xs })
        .unwrap();
    ready::Negated::new(&rt)
        .unwrap()
        .launch(&rt, ready::NegatedArgs { x: &mut xs })
        .unwrap();
    let want: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| if i < 100 { -(2.0 * v + 0.25) } else { -v })
        .collect();
    assert_close(&xs.read(&rt).unwrap(), &want, 1e-6);
}

#[test]
fn a_library_importing_a_library_of_kernels_gets_its_helpers_only() {
    for entry in ["fn scaled_sum", "fn doubled", "fn shifted("] {
        assert!(ready::WGSL.contains(entry), "{entry}");
        assert!(!helpers_only::WGSL.contains(entry), "{entry}");
    }
    let rt = runtime();
    let p = helpers_only::WindowParams {
        n: 3,
        width: 1,
        scale: 1.5,
    };
    let mut xs = rt.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    helpers_only::ShiftAll::new(&rt)
        .unwrap()
        .launch(&rt, helpers_only::ShiftAllArgs { p: &p, x: &mut xs })
        .unwrap();
    assert_eq!(xs.read(&rt).unwrap(), [2.5, 3.5, 4.5, 4.0]);
}
