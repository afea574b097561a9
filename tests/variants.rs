//! Declared optimizations on a real adapter, against CPU references: tile-size instances,
//! specializations and the launcher's choice between them, a family of entry points over one
//! declaration of their bindings, launched as ordered passes, a grid folded past 65535 workgroups, and declared limits and features.

mod common;

use common::{assert_close, plain_device_runtime, runtime};
use tessera::{wgpu, Error};

#[tessera::kernels]
pub mod tiled {
    /// Elements each invocation sums in the tiled kernel.
    pub const PER_INVOCATION: u32 = 4;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    /// Sums of blocks of `TILE * PER_INVOCATION` elements, staged through workgroup memory.
    #[kernel(
        workgroup = [TILE],
        grid = [ceil_div(p.n, TILE * PER_INVOCATION)],
        constants(TILE = [8, 16, 32])
    )]
    pub fn block_sums(
        p: &Len,
        #[len(p.n)] x: &[f32],
        #[len(ceil_div(p.n, TILE * PER_INVOCATION))] sums: &mut [f32],
        #[workgroup] partial: &mut [f32; TILE],
    ) {
        let t = local_index();
        let base = workgroup_id().x * TILE * PER_INVOCATION + t * PER_INVOCATION;
        let mut regs = [0.0f32; PER_INVOCATION];
        #[unroll]
        for k in 0..PER_INVOCATION {
            if base + k < p.n {
                regs[k] = x[base + k];
            }
        }
        partial[t] = regs[0] + regs[1] + regs[2] + regs[3];
        workgroup_barrier();
        if t == 0 {
            let mut total = 0.0;
            for j in 0..TILE {
                total += partial[j];
            }
            sums[workgroup_id().x] = total;
        }
    }
}

#[test]
fn every_tile_instance_gives_the_same_sums() {
    let rt = runtime();
    let n = 1001u32;
    let xs: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 2.5).collect();
    let x = rt.upload(&xs).unwrap();
    assert_eq!(tiled::BlockSums::INSTANCES.len(), 3);
    assert_eq!(tiled::BlockSums::VARIANTS.len(), 3);
    for constants in tiled::BlockSums::INSTANCES {
        let kernel = tiled::BlockSums::with_constants(&rt, *constants).unwrap();
        assert_eq!(kernel.constants(), *constants);
        assert_eq!(kernel.workgroup_size(), [constants.tile, 1, 1]);
        assert_eq!(kernel.workgroup_memory(), constants.tile * 4);
        let block = (constants.tile * tiled::PER_INVOCATION) as usize;
        let mut sums = rt.zeros::<f32>(xs.len().div_ceil(block)).unwrap();
        kernel
            .launch(
                &rt,
                tiled::BlockSumsArgs {
                    p: &tiled::Len { n },
                    x: &x,
                    sums: &mut sums,
                },
            )
            .unwrap();
        let want: Vec<f32> = xs.chunks(block).map(|c| c.iter().sum()).collect();
        assert_close(&sums.read(&rt).unwrap(), &want, 1e-5);
    }
}

#[test]
fn an_undeclared_instance_is_an_error_listing_the_declared_ones() {
    let rt = runtime();
    let error =
        tiled::BlockSums::with_constants(&rt, tiled::BlockSumsConstants { tile: 12 }).unwrap_err();
    assert!(
        matches!(&error, Error::UnknownInstance { available, .. } if available.len() == 3),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("BlockSumsConstants { tile: 16 }"),
        "{error}"
    );
}

#[tessera::kernels]
pub mod strided {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct GatherParams {
        pub n: u32,
        pub stride: u32,
        pub offset: u32,
    }

    /// out[i] = sum of x[(i * stride + offset + k) % len] * (k % stride + 1) for k in 0..3.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)], specialize(p.stride == 1, p.stride == 2 && p.offset == 0))]
    pub fn gather(p: &GatherParams, x: &[f32], #[len(p.n)] out: &mut [f32]) {
        let i = global_id().x;
        if i >= p.n {
            return;
        }
        let mut total = 0.0;
        for k in 0..3u32 {
            let at = (i * p.stride + p.offset + k) % x.len();
            total += x[at] * (k % p.stride + 1) as f32;
        }
        out[i] = total;
    }

    /// `x`'s index for output `i` and tap `k`, as `gather` computes it inline.
    fn source(p: &GatherParams, i: u32, k: u32, len: u32) -> u32 {
        (i * p.stride + p.offset + k) % len
    }

    /// `gather` with its index math in a helper: the specialization reaches into it.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)], specialize(p.stride == 1))]
    pub fn gather_through_helper(p: &GatherParams, x: &[f32], #[len(p.n)] out: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            let mut total = 0.0;
            for k in 0..3u32 {
                total += x[source(p, i, k, x.len())] * (k % p.stride + 1) as f32;
            }
            out[i] = total;
        }
    }
}

fn gather_ref(n: u32, stride: u32, offset: u32, xs: &[f32]) -> Vec<f32> {
    (0..n)
        .map(|i| {
            (0..3u32)
                .map(|k| {
                    xs[((i * stride + offset + k) as usize) % xs.len()] * (k % stride + 1) as f32
                })
                .sum()
        })
        .collect()
}

#[test]
fn specialized_and_general_variants_agree_and_the_launcher_picks_the_specialized_one() {
    let rt = runtime();
    let kernel = strided::Gather::new(&rt).unwrap();
    let specializations: Vec<&str> = strided::Gather::VARIANTS
        .iter()
        .map(|v| v.specialization)
        .collect();
    assert_eq!(
        specializations,
        ["", "stride == 1", "stride == 2 && offset == 0"]
    );
    let xs: Vec<f32> = (0..300).map(|i| (i % 11) as f32).collect();
    let x = rt.upload(&xs).unwrap();
    let n = 130u32;
    for (stride, offset, expected_variant) in
        [(1, 0, 1), (1, 5, 1), (2, 0, 2), (2, 3, 0), (3, 0, 0)]
    {
        let p = strided::GatherParams { n, stride, offset };
        let mut out = rt.zeros::<f32>(n as usize).unwrap();
        assert_eq!(
            kernel.variant(&strided::GatherArgs {
                p: &p,
                x: &x,
                out: &mut out
            }),
            expected_variant
        );
        kernel
            .launch(
                &rt,
                strided::GatherArgs {
                    p: &p,
                    x: &x,
                    out: &mut out,
                },
            )
            .unwrap();
        assert_eq!(
            out.read(&rt).unwrap(),
            gather_ref(n, stride, offset, &xs),
            "stride {stride} offset {offset}"
        );
    }
    assert_folded(strided::WGSL, "gather_stride1", "p.stride");
}

#[test]
fn each_variant_is_built_at_its_first_dispatch_or_by_prepare() {
    let rt = runtime();
    let kernel = strided::Gather::new(&rt).unwrap();
    let clone = kernel.clone();
    assert_eq!(rt.cached_pipelines(), 0, "`new` builds nothing");
    let xs: Vec<f32> = (0..40).map(|i| i as f32).collect();
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<f32>(8).unwrap();
    let mut launch = |kernel: &strided::Gather, stride| {
        let p = strided::GatherParams {
            n: 8,
            stride,
            offset: 1,
        };
        let args = strided::GatherArgs {
            p: &p,
            x: &x,
            out: &mut out,
        };
        kernel.launch(&rt, args).unwrap();
        assert_eq!(out.read(&rt).unwrap(), gather_ref(8, stride, 1, &xs));
    };
    // Stride 1 runs the first specialization, stride 3 the general body; a clone shares the
    // launcher's pipelines.
    launch(&kernel, 1);
    assert_eq!(rt.cached_pipelines(), 1);
    launch(&clone, 1);
    launch(&kernel, 3);
    assert_eq!(rt.cached_pipelines(), 2);
    clone.prepare(&rt).unwrap();
    assert_eq!(rt.cached_pipelines(), strided::Gather::VARIANTS.len());
}

/// The WGSL function `name`, up to its closing brace.
fn wgsl_fn<'a>(wgsl: &'a str, name: &str) -> &'a str {
    let start = wgsl.find(&format!("fn {name}(")).unwrap();
    let text = &wgsl[start..];
    &text[..text.find("\n}\n").unwrap()]
}

fn assert_folded(wgsl: &str, function: &str, field: &str) {
    let text = wgsl_fn(wgsl, function);
    assert!(!text.contains(field), "{field} is folded in:\n{text}");
}

#[test]
fn a_specialization_is_folded_into_the_helpers_its_kernel_calls() {
    let rt = runtime();
    let kernel = strided::GatherThroughHelper::new(&rt).unwrap();
    let xs: Vec<f32> = (0..300).map(|i| (i % 13) as f32).collect();
    let x = rt.upload(&xs).unwrap();
    let n = 70u32;
    for (stride, offset, expected_variant) in [(1, 0, 1), (1, 4, 1), (2, 3, 0), (3, 0, 0)] {
        let p = strided::GatherParams { n, stride, offset };
        let mut out = rt.zeros::<f32>(n as usize).unwrap();
        let args = strided::GatherThroughHelperArgs {
            p: &p,
            x: &x,
            out: &mut out,
        };
        assert_eq!(kernel.variant(&args), expected_variant);
        kernel.launch(&rt, args).unwrap();
        assert_eq!(
            out.read(&rt).unwrap(),
            gather_ref(n, stride, offset, &xs),
            "stride {stride} offset {offset}"
        );
    }
    // The specialized entry point calls its own copy of `source`, with the stride folded in;
    // the general one keeps reading it.
    let entry = wgsl_fn(strided::WGSL, "gather_through_helper_stride1");
    let copy = entry
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|word| word.starts_with("source"))
        .unwrap();
    assert_folded(strided::WGSL, copy, ".stride");
    let general = wgsl_fn(strided::WGSL, "gather_through_helper");
    assert!(!general.contains(&format!("{copy}(")), "{general}");
}

#[tessera::kernels]
pub mod linear_backward {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub m: u32,
        pub k: u32,
    }

    // y = relu(x * w + b) for x: [m], w, b scalars per row of k outputs. Backward in four passes
    // over one declaration of the bindings, each member taking the ones it uses and reading
    // what the previous pass wrote.

    /// The backward pass of `y = relu(x * w + b)`.
    #[family(grad_pre, d_x, d_w, d_b)]
    pub struct LinearBackward {
        s: &Shape,
        #[len(s.m)]
        x: &[f32],
        /// `w` then `b`.
        #[len(2 * s.k)]
        w: &[f32],
        #[len(s.m * s.k)]
        grad_y: &[f32],
        #[len(s.m * s.k)]
        grad_pre: &mut [f32],
        #[len(s.m)]
        grad_x: Option<&mut [f32]>,
        /// The gradients of `w` then `b`.
        #[len(2 * s.k)]
        grad_w: &mut [f32],
    }

    /// grad_pre = grad_y * relu'(x * w + b)
    #[kernel(workgroup = [64], grid = [ceil_div(s.m * s.k, 64)])]
    pub fn grad_pre(s: &Shape, x: &[f32], w: &[f32], grad_y: &[f32], grad_pre: &mut [f32]) {
        let i = global_id().x;
        if i < s.m * s.k {
            let pre = x[i / s.k] * w[i % s.k] + w[s.k + i % s.k];
            grad_pre[i] = if pre > 0.0 { grad_y[i] } else { 0.0 };
        }
    }

    /// grad_x[r] = sum over c of grad_pre[r][c] * w[c]
    #[kernel(workgroup = [64], grid = [ceil_div(s.m, 64)])]
    pub fn d_x(s: &Shape, w: &[f32], grad_pre: &[f32], grad_x: &mut [f32]) {
        let r = global_id().x;
        if r < s.m {
            let mut total = 0.0;
            for c in 0..s.k {
                total += grad_pre[r * s.k + c] * w[c];
            }
            grad_x[r] = total;
        }
    }

    /// grad_w[c] = sum over r of grad_pre[r][c] * x[r]
    #[kernel(workgroup = [64], grid = [ceil_div(s.k, 64)])]
    pub fn d_w(s: &Shape, x: &[f32], grad_pre: &[f32], grad_w: &mut [f32]) {
        let c = global_id().x;
        if c < s.k {
            let mut total = 0.0;
            for r in 0..s.m {
                total += grad_pre[r * s.k + c] * x[r];
            }
            grad_w[c] = total;
        }
    }

    /// grad_w[k + c] = sum over r of grad_pre[r][c]
    #[kernel(workgroup = [64], grid = [ceil_div(s.k, 64)])]
    pub fn d_b(s: &Shape, grad_pre: &[f32], grad_w: &mut [f32]) {
        let c = global_id().x;
        if c < s.k {
            let mut total = 0.0;
            for r in 0..s.m {
                total += grad_pre[r * s.k + c];
            }
            grad_w[s.k + c] = total;
        }
    }
}

/// The linear layer's backward on the CPU: `grad_pre`, then `[grad_x..]`, `[grad_w.., grad_b..]`.
fn linear_backward_reference(
    xs: &[f32],
    ws: &[f32],
    gy: &[f32],
    k: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let m = xs.len();
    let pre: Vec<f32> = (0..m * k)
        .map(|i| {
            if xs[i / k] * ws[i % k] + ws[k + i % k] > 0.0 {
                gy[i]
            } else {
                0.0
            }
        })
        .collect();
    let (mut grad_x, mut grad_w) = (vec![0.0f32; m], vec![0.0f32; 2 * k]);
    for r in 0..m {
        for c in 0..k {
            grad_x[r] += pre[r * k + c] * ws[c];
            grad_w[c] += pre[r * k + c] * xs[r];
            grad_w[k + c] += pre[r * k + c];
        }
    }
    (pre, grad_x, grad_w)
}

#[test]
fn family_members_take_subsets_of_its_bindings_and_skip_absent_ones() {
    use linear_backward::{LinearBackward, LinearBackwardArgs, Shape};
    let rt = runtime();
    let (m, k) = (37usize, 5usize);
    let xs: Vec<f32> = (0..m).map(|i| (i as f32 - 18.0) / 7.0).collect();
    let ws: Vec<f32> = (0..2 * k).map(|i| (i as f32 - 4.0) / 3.0).collect();
    let gy: Vec<f32> = (0..m * k).map(|i| ((i * 13) % 7) as f32 - 3.0).collect();
    let (want_pre, want_x, want_w) = linear_backward_reference(&xs, &ws, &gy, k);
    let (x, w, grad_y) = (
        rt.upload(&xs).unwrap(),
        rt.upload(&ws).unwrap(),
        rt.upload(&gy).unwrap(),
    );
    let shape = Shape {
        m: m as u32,
        k: k as u32,
    };
    let family = LinearBackward::new(&rt).unwrap();

    // With every binding: all four members run.
    let mut grad_pre = rt.zeros::<f32>(m * k).unwrap();
    let mut grad_x = rt.upload(&vec![7.0f32; m]).unwrap();
    let mut grad_w = rt.zeros::<f32>(2 * k).unwrap();
    let args = LinearBackwardArgs {
        s: &shape,
        x: &x,
        w: &w,
        grad_y: &grad_y,
        grad_pre: &mut grad_pre,
        grad_x: Some(&mut grad_x),
        grad_w: &mut grad_w,
    };
    family.launch(&rt, args).unwrap();
    assert_eq!(grad_pre.read(&rt).unwrap(), want_pre);
    assert_close(&grad_x.read(&rt).unwrap(), &want_x, 1e-5);
    assert_close(&grad_w.read(&rt).unwrap(), &want_w, 1e-5);

    // Without `grad_x`: `d_x` is skipped, the others still run.
    let mut grad_pre = rt.zeros::<f32>(m * k).unwrap();
    let mut grad_w = rt.zeros::<f32>(2 * k).unwrap();
    let mut batch = rt.batch();
    let args = LinearBackwardArgs {
        s: &shape,
        x: &x,
        w: &w,
        grad_y: &grad_y,
        grad_pre: &mut grad_pre,
        grad_x: None,
        grad_w: &mut grad_w,
    };
    family.record(&mut batch, args).unwrap();
    assert_eq!(batch.len(), 3);
    batch.submit().unwrap();
    assert_eq!(grad_pre.read(&rt).unwrap(), want_pre);
    assert_close(&grad_w.read(&rt).unwrap(), &want_w, 1e-5);
    assert_eq!(
        grad_x.read(&rt).unwrap(),
        want_x,
        "untouched by the second launch"
    );
}

#[test]
fn a_family_builds_its_members_pipelines_at_first_dispatch_or_by_prepare() {
    use linear_backward::{GradPre, LinearBackward, DB, DW, DX};
    let rt = runtime();
    let family = LinearBackward::new(&rt).unwrap();
    assert_eq!(rt.cached_pipelines(), 0, "`new` builds nothing");
    family.prepare(&rt).unwrap();
    let members = [GradPre::VARIANTS, DX::VARIANTS, DW::VARIANTS, DB::VARIANTS];
    let variants: usize = members.iter().map(|v| v.len()).sum();
    assert_eq!(rt.cached_pipelines(), variants);
    family.clone().prepare(&rt).unwrap();
    assert_eq!(rt.cached_pipelines(), variants, "built once");
}

#[test]
fn family_checks_every_member_before_recording_any() {
    use linear_backward::{LinearBackward, LinearBackwardArgs, Shape};
    let rt = runtime();
    let (m, k) = (6usize, 3usize);
    let shape = Shape {
        m: m as u32,
        k: k as u32,
    };
    let (x, w, grad_y) = (
        rt.zeros::<f32>(m).unwrap(),
        rt.zeros::<f32>(2 * k).unwrap(),
        rt.zeros::<f32>(m * k).unwrap(),
    );
    let mut grad_pre = rt.zeros::<f32>(m * k).unwrap();
    // Too short for the last member, `d_b`, which writes `grad_w[k..2k]`.
    let mut grad_w = rt.zeros::<f32>(2 * k - 1).unwrap();
    let mut batch = rt.batch();
    let args = LinearBackwardArgs {
        s: &shape,
        x: &x,
        w: &w,
        grad_y: &grad_y,
        grad_pre: &mut grad_pre,
        grad_x: None,
        grad_w: &mut grad_w,
    };
    let error = LinearBackward::new(&rt)
        .unwrap()
        .record(&mut batch, args)
        .unwrap_err();
    assert!(
        matches!(&error, Error::BufferTooShort { binding, needed: 6, given: 5, .. } if binding == "grad_w"),
        "{error:?}"
    );
    assert!(batch.is_empty(), "nothing is recorded when a check fails");
}

#[tessera::kernels]
pub mod big_grid {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Planes {
        pub width: u32,
        pub planes: u32,
    }

    /// One workgroup of 4 per (x block, plane): `planes` goes in z, past the 65535 limit.
    #[kernel(workgroup = [4], grid = [ceil_div(s.width, 4), 1, s.planes])]
    pub fn stamp(s: &Planes, #[len(s.width * s.planes)] out: &mut [u32]) {
        let id = global_id();
        if id.x < s.width {
            out[id.z * s.width + id.x] = id.z * 10 + id.x + num_workgroups().z - s.planes;
        }
    }
}

#[test]
fn grid_folds_past_65535_workgroups() {
    let rt = runtime();
    let limit = rt.info().limits.max_compute_workgroups_per_dimension;
    let planes = limit + 1000;
    let width = 6u32;
    let mut out = rt.zeros::<u32>((width * planes) as usize).unwrap();
    let kernel = big_grid::Stamp::new(&rt).unwrap();
    let s = big_grid::Planes { width, planes };
    assert_eq!(
        kernel.grid(&big_grid::StampArgs {
            s: &s,
            out: &mut out
        }),
        [2, 1, u64::from(planes)]
    );
    kernel
        .launch(
            &rt,
            big_grid::StampArgs {
                s: &s,
                out: &mut out,
            },
        )
        .unwrap();
    let want: Vec<u32> = (0..planes)
        .flat_map(|z| (0..width).map(move |x| z * 10 + x))
        .collect();
    assert_eq!(out.read(&rt).unwrap(), want);
}

#[tessera::kernels]
pub mod demanding {
    /// A workgroup of 512 invocations: above WebGPU's default, so it says so.
    #[kernel(workgroup = [512], grid = [1], limits(invocations = 512))]
    pub fn wide(out: &mut [u32]) {
        out[local_index()] = local_index() * 2;
    }

    /// More workgroup memory than most devices have: 1 MiB, in two arrays (WGSL compilers
    /// take at most 65535 elements in one).
    #[kernel(workgroup = [64], grid = [1], limits(workgroup_memory = 1048576))]
    pub fn hungry(
        out: &mut [f32],
        #[workgroup] big: &mut [Vec4<f32>; 32768],
        #[workgroup] more: &mut [Vec4<f32>; 32768],
    ) {
        big[local_index()] = vec4(1.0, 1.0, 1.0, 1.0);
        more[local_index()] = big[local_index()];
        workgroup_barrier();
        out[local_index()] = more[63 - local_index()].x;
    }

    /// Sums 1.0 over each subgroup: every invocation gets the subgroup size.
    #[kernel(workgroup = [64], grid = [1], features(subgroups))]
    pub fn subgroup_sizes(out: &mut [f32], sizes: &mut [u32]) {
        let i = local_index();
        out[i] = subgroup_add(1.0);
        sizes[i] = subgroup_size();
    }

    /// Workgroup memory of `KIB` KiB in two arrays, declared per instance: 4 KiB fits every
    /// device, 1 MiB none.
    #[kernel(
        workgroup = [64],
        grid = [1],
        constants(KIB = [4, 1024]),
        limits(workgroup_memory = KIB * 1024)
    )]
    pub fn sized(
        out: &mut [f32],
        #[workgroup] half: &mut [Vec4<f32>; KIB * 32],
        #[workgroup] other: &mut [Vec4<f32>; KIB * 32],
    ) {
        half[local_index()] = vec4(2.0, 2.0, 2.0, 2.0);
        other[local_index()] = half[local_index()];
        workgroup_barrier();
        out[local_index()] = other[63 - local_index()].y;
    }
}

#[test]
fn declared_limits_are_checked_against_the_device() {
    let rt = runtime();
    let wide = demanding::Wide::new(&rt);
    if rt.info().limits.max_compute_invocations_per_workgroup >= 512 {
        let mut out = rt.zeros::<u32>(512).unwrap();
        wide.unwrap()
            .launch(&rt, demanding::WideArgs { out: &mut out })
            .unwrap();
        assert_eq!(
            out.read(&rt).unwrap(),
            (0..512).map(|i| i * 2).collect::<Vec<u32>>()
        );
    } else {
        assert!(matches!(wide, Err(Error::LimitExceeded { .. })));
    }
    let error = demanding::Hungry::new(&rt).unwrap_err();
    match &error {
        Error::LimitExceeded {
            kernel,
            limit,
            needed,
            ..
        } => {
            assert_eq!(
                (kernel.as_str(), *limit, *needed),
                ("hungry", "max_compute_workgroup_storage_size", 1 << 20)
            );
        }
        other => panic!("expected LimitExceeded, got {other}"),
    }
}

#[test]
fn a_limit_written_with_constants_is_each_instances_own() {
    let rt = runtime();
    let small =
        demanding::Sized::with_constants(&rt, demanding::SizedConstants { kib: 4 }).unwrap();
    let mut out = rt.zeros::<f32>(64).unwrap();
    small
        .launch(&rt, demanding::SizedArgs { out: &mut out })
        .unwrap();
    assert_eq!(out.read(&rt).unwrap(), vec![2.0; 64]);
    let large = demanding::Sized::with_constants(&rt, demanding::SizedConstants { kib: 1024 });
    match large {
        Err(Error::LimitExceeded { limit, needed, .. }) => {
            assert_eq!(
                (limit, needed),
                ("max_compute_workgroup_storage_size", 1 << 20)
            );
        }
        Err(other) => panic!("expected LimitExceeded, got {other}"),
        Ok(_) => panic!("built a kernel needing 1 MiB of workgroup memory"),
    }
}

#[test]
fn subgroup_kernel_runs_where_declared_and_is_refused_without_the_feature() {
    let rt = runtime();
    if rt.info().features.contains(wgpu::Features::SUBGROUP) {
        let kernel = demanding::SubgroupSizes::new(&rt).unwrap();
        let mut out = rt.zeros::<f32>(64).unwrap();
        let mut sizes = rt.zeros::<u32>(64).unwrap();
        kernel
            .launch(
                &rt,
                demanding::SubgroupSizesArgs {
                    out: &mut out,
                    sizes: &mut sizes,
                },
            )
            .unwrap();
        let sizes = sizes.read(&rt).unwrap();
        let want: Vec<f32> = sizes.iter().map(|&s| s as f32).collect();
        assert!(sizes[0] >= 1);
        assert_eq!(out.read(&rt).unwrap(), want);
    }
    let plain = plain_device_runtime(&rt);
    let error = demanding::SubgroupSizes::new(&plain).unwrap_err();
    assert!(
        matches!(&error, Error::MissingFeature { feature, .. } if feature == "SUBGROUP"),
        "{error}"
    );
}

#[tessera::kernels]
pub mod mixed {
    /// Needs nothing beyond WebGPU's defaults.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn doubled(x: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        if i < x.len() {
            y[i] = 2.0 * x[i];
        }
    }

    /// Needs subgroups.
    #[kernel(workgroup = [64], grid = [1], features(subgroups))]
    pub fn subgroup_total(x: &[f32], y: &mut [f32]) {
        let i = local_index();
        let total = subgroup_add(x[i]);
        y[i] = total;
    }

    /// Needs half precision.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)], features(f16))]
    pub fn halved(x: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        if i < x.len() {
            let h = x[i] as f16;
            y[i] = (h * 0.5) as f32;
        }
    }
}

/// In a module whose other kernels need optional features, a kernel that needs none runs on a
/// device without them (its pipeline is built from WGSL without the others), and each of the
/// others is refused there with the feature it lacks.
#[test]
fn kernels_that_need_no_feature_run_where_their_neighbours_cannot() {
    let rt = runtime();
    let plain = plain_device_runtime(&rt);
    let x = plain.upload(&[1.0f32, -2.5, 4.0]).unwrap();
    let mut y = plain.zeros::<f32>(3).unwrap();
    let doubled = mixed::Doubled::new(&plain).unwrap();
    doubled
        .launch(&plain, mixed::DoubledArgs { x: &x, y: &mut y })
        .unwrap();
    assert_eq!(y.read(&plain).unwrap(), vec![2.0, -5.0, 8.0]);
    let error = mixed::SubgroupTotal::new(&plain).unwrap_err();
    assert!(
        matches!(&error, Error::MissingFeature { feature, .. } if feature == "SUBGROUP"),
        "{error}"
    );
    let error = mixed::Halved::new(&plain).unwrap_err();
    assert!(
        matches!(&error, Error::MissingFeature { feature, .. } if feature == "SHADER_F16"),
        "{error}"
    );
    // On the full device each builds.
    mixed::Doubled::new(&rt).unwrap();
    if rt.info().features.contains(wgpu::Features::SUBGROUP) {
        mixed::SubgroupTotal::new(&rt).unwrap();
    }
    if rt.info().features.contains(wgpu::Features::SHADER_F16) {
        mixed::Halved::new(&rt).unwrap();
    }
}

/// The WGSL of the modules above, pinned (see `tests/snapshots/`).
#[test]
fn generated_wgsl_is_pinned() {
    insta::assert_snapshot!("tiled", tiled::WGSL);
    insta::assert_snapshot!("strided", strided::WGSL);
    insta::assert_snapshot!("linear_backward", linear_backward::WGSL);
    insta::assert_snapshot!("big_grid", big_grid::WGSL);
    insta::assert_snapshot!("demanding", demanding::WGSL);
    insta::assert_snapshot!("half", half::WGSL);
    insta::assert_snapshot!("elements", elements::WGSL);
}

#[tessera::kernels]
pub mod half {
    /// Rounds through half precision: `out[i] = (x[i] as f16 * 2.0 + 0.25) as f32`, and stores
    /// the half-precision value itself in `bits` (`half::f16` on the host).
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)], features(f16))]
    pub fn through_half(x: &[f32], out: &mut [f32], bits: &mut [f16]) {
        let i = global_id().x;
        if i < x.len() {
            let h: f16 = x[i] as f16 * 2.0 + 0.25;
            out[i] = h.max(-4.0) as f32;
            bits[i] = h;
        }
    }
}

#[test]
fn f16_kernel_runs_where_declared() {
    let rt = runtime();
    if !rt.info().features.contains(wgpu::Features::SHADER_F16) {
        assert!(matches!(
            half::ThroughHalf::new(&rt),
            Err(Error::MissingFeature { .. })
        ));
        return;
    }
    let xs = [0.5f32, -1.0, 3.0, 0.125, -8.0];
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<f32>(xs.len()).unwrap();
    let mut bits = rt.zeros::<tessera::half::f16>(xs.len()).unwrap();
    half::ThroughHalf::new(&rt)
        .unwrap()
        .launch(
            &rt,
            half::ThroughHalfArgs {
                x: &x,
                out: &mut out,
                bits: &mut bits,
            },
        )
        .unwrap();
    assert_eq!(out.read(&rt).unwrap(), vec![1.25, -1.75, 6.25, 0.5, -4.0]);
    let halves: Vec<f32> = bits.read(&rt).unwrap().iter().map(|h| h.to_f32()).collect();
    assert_eq!(halves, vec![1.25, -1.75, 6.25, 0.5, -15.75]);
    let plain = plain_device_runtime(&rt);
    assert!(
        matches!(half::ThroughHalf::new(&plain), Err(Error::MissingFeature { feature, .. }) if feature == "SHADER_F16")
    );
}

#[tessera::kernels]
pub mod elements {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct AxpyParams {
        pub n: u32,
        pub a: f32,
    }

    /// `v * a` in the caller's element type.
    fn scaled(v: T, a: f32) -> T {
        v * (a as T)
    }

    /// `y = a * x + y`, each invocation taking `STRIDE` neighbouring elements, written once
    /// for `f32` and `f16` buffers.
    #[kernel(
        workgroup = [64],
        grid = [ceil_div(p.n, 64 * STRIDE)],
        types(T = [f32, f16]),
        constants(STRIDE = [1, 2])
    )]
    pub fn axpy<T>(p: &AxpyParams, #[len(p.n)] x: &[T], #[len(p.n)] y: &mut [T]) {
        #[unroll]
        for k in 0..STRIDE {
            let i = global_id().x * STRIDE + k;
            if i < p.n {
                y[i] = scaled(x[i], p.a) + y[i];
            }
        }
    }
}

#[test]
fn a_kernel_written_once_runs_for_each_element_type_and_constant() {
    use elements::{Axpy, AxpyArgs, AxpyConstants};
    use tessera::half::f16;
    let rt = runtime();
    let n = 133usize;
    let xs: Vec<f32> = (0..n).map(|i| (i % 9) as f32 * 0.5 - 2.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 1.0).collect();
    let p = elements::AxpyParams {
        n: n as u32,
        a: 1.5,
    };
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 1.5 * x + y).collect();
    assert_eq!(Axpy::<f32>::INSTANCES.len(), 2);
    for constants in Axpy::<f32>::INSTANCES {
        let kernel = Axpy::<f32>::with_constants(&rt, *constants).unwrap();
        assert_eq!(kernel.constants(), *constants);
        assert!(kernel.entry_point().starts_with("axpy_f32_"));
        let x = rt.upload(&xs).unwrap();
        let mut y = rt.upload(&ys).unwrap();
        let args = AxpyArgs {
            p: &p,
            x: &x,
            y: &mut y,
        };
        kernel.launch(&rt, args).unwrap();
        assert_eq!(y.read(&rt).unwrap(), want, "{constants:?}");
    }
    if !rt.info().features.contains(wgpu::Features::SHADER_F16) {
        let missing = Axpy::<f16>::new(&rt);
        assert!(matches!(missing, Err(Error::MissingFeature { .. })));
        return;
    }
    // Every value here is exact in half precision.
    let halves = |v: &[f32]| v.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>();
    for constants in [AxpyConstants { stride: 1 }, AxpyConstants { stride: 2 }] {
        let kernel = Axpy::<f16>::with_constants(&rt, constants).unwrap();
        assert_eq!(kernel.constants(), constants);
        assert!(kernel.entry_point().starts_with("axpy_f16_"));
        let x = rt.upload(&halves(&xs)).unwrap();
        let mut y = rt.upload(&halves(&ys)).unwrap();
        kernel
            .launch(
                &rt,
                AxpyArgs {
                    p: &p,
                    x: &x,
                    y: &mut y,
                },
            )
            .unwrap();
        assert_eq!(y.read(&rt).unwrap(), halves(&want), "{constants:?}");
    }
    // The f32 instances do not need the feature.
    let plain = plain_device_runtime(&rt);
    let built = Axpy::<f32>::new(&plain);
    assert!(built.is_ok(), "{:?}", built.err());
    assert!(matches!(
        Axpy::<f16>::new(&plain),
        Err(Error::MissingFeature { feature, .. }) if feature == "SHADER_F16"
    ));
}

#[test]
fn instances_built_without_bounds_checks_are_separate_pipelines_with_the_same_sums() {
    let rt = runtime();
    let n = 777u32;
    let xs: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
    let x = rt.upload(&xs).unwrap();
    let sums_of = |kernel: &tiled::BlockSums| {
        let block = (kernel.constants().tile * tiled::PER_INVOCATION) as usize;
        let mut sums = rt.zeros::<f32>(xs.len().div_ceil(block)).unwrap();
        let args = tiled::BlockSumsArgs {
            p: &tiled::Len { n },
            x: &x,
            sums: &mut sums,
        };
        kernel.launch(&rt, args).unwrap();
        let want: Vec<f32> = xs.chunks(block).map(|c| c.iter().sum()).collect();
        assert_close(&sums.read(&rt).unwrap(), &want, 1e-5);
    };
    // SAFETY: `block_sums` compares every index into `x` with `p.n`, writes `sums` only at its
    // workgroup's index (the grid and `#[len]` agree), and `partial` at local ids below `TILE`.
    let first = unsafe { tiled::BlockSums::new_unchecked(&rt) }.unwrap();
    assert_eq!(first.constants(), tiled::BlockSums::INSTANCES[0]);
    sums_of(&first);
    let before = rt.cached_pipelines();
    for constants in tiled::BlockSums::INSTANCES {
        // SAFETY: as above.
        let unchecked = unsafe { tiled::BlockSums::with_constants_unchecked(&rt, *constants) };
        sums_of(&unchecked.unwrap());
        sums_of(&tiled::BlockSums::with_constants(&rt, *constants).unwrap());
    }
    // The checked pipelines are new; the unchecked first instance was already built.
    assert_eq!(rt.cached_pipelines(), before + 2 * 3 - 1);
    // SAFETY: nothing is launched.
    let unknown = unsafe {
        tiled::BlockSums::with_constants_unchecked(&rt, tiled::BlockSumsConstants { tile: 12 })
    };
    assert!(matches!(unknown, Err(Error::UnknownInstance { .. })));
}

/// A kernel with a single instance: its launcher's `constants()` takes the one there is (the
/// launcher once indexed `% 1`, which clippy's deny-by-default `modulo_one` rejects in the
/// user's crate; CI lints this file).
mod single {
    #[tessera::kernels]
    pub mod doubling {
        #[repr(C)]
        #[derive(Clone, Copy, tessera::Params)]
        pub struct Len {
            pub n: u32,
        }

        #[kernel(workgroup = [TILE], grid = [ceil_div(p.n, TILE)], constants(TILE = [8]))]
        pub fn double(p: &Len, #[len(p.n)] x: &mut [f32]) {
            let i = global_id().x;
            if i < p.n {
                x[i] = x[i] * 2.0;
            }
        }
    }
}

#[test]
fn a_kernel_with_one_instance_runs_it() {
    use single::doubling::{Double, DoubleArgs, DoubleConstants, Len};
    let rt = runtime();
    let kernel = Double::new(&rt).unwrap();
    assert_eq!(kernel.constants(), DoubleConstants { tile: 8 });
    let mut x = rt.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let args = DoubleArgs {
        p: &Len { n: 3 },
        x: &mut x,
    };
    kernel.launch(&rt, args).unwrap();
    assert_eq!(x.read(&rt).unwrap(), vec![2.0, 4.0, 6.0]);
}

/// A family whose lengths use a constant of the module (a family's lengths hold for every
/// member, so the module's constants, not a set's).
mod lanes {
    #[tessera::kernels]
    pub mod doubling {
        /// Values per element.
        pub const LANES: u32 = 4;

        #[repr(C)]
        #[derive(Clone, Copy, tessera::Params)]
        pub struct Len {
            pub n: u32,
        }

        #[kernel(workgroup = [64], grid = [ceil_div(p.n * LANES, 64)])]
        pub fn double(p: &Len, x: &mut [f32]) {
            let i = global_id().x;
            if i < p.n * LANES {
                x[i] = x[i] * 2.0;
            }
        }

        #[family(double)]
        pub struct Doubling {
            p: &Len,
            #[len(p.n * LANES)]
            x: &mut [f32],
        }
    }
}

#[test]
fn a_familys_lengths_may_use_the_modules_constants() {
    use lanes::doubling::{Doubling, DoublingArgs, Len};
    let rt = runtime();
    let family = Doubling::new(&rt).unwrap();
    let p = Len { n: 3 };
    // 3 elements of 4 values: 11 values are too few.
    let mut short = rt.upload(&[1.0f32; 11]).unwrap();
    let refused = family.launch(
        &rt,
        DoublingArgs {
            p: &p,
            x: &mut short,
        },
    );
    assert!(
        matches!(refused, Err(Error::BufferTooShort { .. })),
        "{refused:?}"
    );
    let mut x = rt.upload(&[1.0f32; 12]).unwrap();
    family
        .launch(&rt, DoublingArgs { p: &p, x: &mut x })
        .unwrap();
    assert_eq!(x.read(&rt).unwrap(), vec![2.0; 12]);
}

/// A kernel serving two families: the second pass of two computations.
#[tessera::kernels]
mod shared_member {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    /// `y = 2 x + 1`: `x` doubled into `t`, then one added.
    #[family(doubled, add_one)]
    pub struct ViaDouble {
        p: &Len,
        #[len(p.n)]
        x: &[f32],
        #[len(p.n)]
        t: &mut [f32],
        #[len(p.n)]
        y: &mut [f32],
    }

    /// `y = x^2 + 1`: `x` squared into `t`, then one added.
    #[family(squared, add_one)]
    pub struct ViaSquare {
        p: &Len,
        #[len(p.n)]
        x: &[f32],
        #[len(p.n)]
        t: &mut [f32],
        #[len(p.n)]
        y: &mut [f32],
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn doubled(p: &Len, x: &[f32], t: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            t[i] = 2.0 * x[i];
        }
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn squared(p: &Len, x: &[f32], t: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            t[i] = x[i] * x[i];
        }
    }

    /// The second pass of both families.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn add_one(p: &Len, t: &[f32], y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = t[i] + 1.0;
        }
    }
}

#[test]
fn a_kernel_may_serve_several_families() {
    use shared_member::ViaSquareArgs;
    use shared_member::{AddOne, Doubled, Len, Squared, ViaDouble, ViaDoubleArgs, ViaSquare};
    let rt = runtime();
    // One launcher of the shared member, in both families.
    let add_one = AddOne::new(&rt).unwrap();
    let via_double = ViaDouble::from_members(Doubled::new(&rt).unwrap(), add_one.clone());
    let via_square = ViaSquare::from_members(Squared::new(&rt).unwrap(), add_one);
    let xs: Vec<f32> = (0..70).map(|i| i as f32 * 0.5).collect();
    let p = Len { n: 70 };
    let x = rt.upload(&xs).unwrap();
    let (mut t, mut y) = (rt.zeros::<f32>(70).unwrap(), rt.zeros::<f32>(70).unwrap());
    let args = ViaDoubleArgs {
        p: &p,
        x: &x,
        t: &mut t,
        y: &mut y,
    };
    via_double.launch(&rt, args).unwrap();
    let want: Vec<f32> = xs.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(y.read(&rt).unwrap(), want);
    let args = ViaSquareArgs {
        p: &p,
        x: &x,
        t: &mut t,
        y: &mut y,
    };
    via_square.launch(&rt, args).unwrap();
    let want: Vec<f32> = xs.iter().map(|v| v * v + 1.0).collect();
    assert_eq!(y.read(&rt).unwrap(), want);
}

#[test]
fn launchers_and_families_prepare_through_the_trait_in_any_collection() {
    use linear_backward::{GradPre, LinearBackward, DB, DW, DX};
    /// Code that knows nothing of the kernels' types.
    fn prepare_all(rt: &tessera::Runtime, kernels: &impl tessera::Prepare) {
        kernels.prepare(rt).unwrap();
    }
    let rt = runtime();
    let gather = strided::Gather::new(&rt).unwrap();
    let family = LinearBackward::new(&rt).unwrap();
    prepare_all(
        &rt,
        &(None::<strided::Gather>, Vec::<LinearBackward>::new()),
    );
    assert_eq!(rt.cached_pipelines(), 0, "empty collections build nothing");
    let members = [GradPre::VARIANTS, DX::VARIANTS, DW::VARIANTS, DB::VARIANTS];
    let family_variants: usize = members.iter().map(|v| v.len()).sum();
    prepare_all(&rt, &[&family as &dyn tessera::Prepare]);
    assert_eq!(rt.cached_pipelines(), family_variants);
    prepare_all(&rt, &(Some(&gather), vec![family.clone()], [&family]));
    let all = family_variants + strided::Gather::VARIANTS.len();
    assert_eq!(rt.cached_pipelines(), all, "each pipeline built once");
}
