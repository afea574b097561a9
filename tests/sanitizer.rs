//! The sanitizer (`Runtime::with_sanitizer`, `TESSERA_SANITIZE=on`) on a real adapter
//! (lavapipe in CI): each hazard it reports, at the kernel's own Rust lines, and the same
//! kernels made correct, which it leaves alone.
//!
//! The racy kernels take their neighbour's index from a helper (`partner`), where the macro's
//! static race check does not look: it would refuse `partial[t + 16]` at compile time.

mod common;

use std::collections::BTreeSet;

use common::runtime;
use tessera::sanitizer::{AccessKind, Hazard, HazardKind, Line};
use tessera::{Arg, BindingKind, Error, PipelineDesc, Runtime};

#[tessera::kernels]
pub mod hazards {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    /// Another invocation's element: `t + d`.
    fn partner(t: u32, d: u32) -> u32 {
        t + d
    }

    /// 64 ones summed per workgroup, the last steps "warp-synchronously": no barrier after
    /// the step at 32.
    #[kernel(workgroup = [64], grid = [p.n])]
    pub fn warp_sum(p: &Len, #[len(p.n)] sums: &mut [f32], #[workgroup] partial: &mut [f32; 64]) {
        let t = local_index();
        partial[t] = 1.0;
        workgroup_barrier();
        if t < 32 {
            partial[t] += partial[partner(t, 32)]; // warp: step 32
            partial[t] += partial[partner(t, 16)]; // warp: step 16
        }
        workgroup_barrier();
        if t == 0 {
            sums[workgroup_id().x] = partial[0] + partial[1];
        }
    }

    /// The same sum by a tree reduction missing the barrier between its steps.
    #[kernel(workgroup = [64], grid = [p.n])]
    pub fn tree_sum(p: &Len, #[len(p.n)] sums: &mut [f32], #[workgroup] partial: &mut [f32; 64]) {
        let t = local_index();
        partial[t] = 1.0;
        workgroup_barrier();
        let mut stride = 32u32;
        while stride > 0 {
            if t < stride {
                partial[t] += partial[partner(t, stride)]; // tree: step
            }
            stride /= 2;
        }
        workgroup_barrier();
        if t == 0 {
            sums[workgroup_id().x] = partial[0];
        }
    }

    /// The tree reduction with its barrier: correct.
    #[kernel(workgroup = [64], grid = [p.n])]
    pub fn tree_sum_fixed(
        p: &Len,
        #[len(p.n)] sums: &mut [f32],
        #[workgroup] partial: &mut [f32; 64],
    ) {
        let t = local_index();
        partial[t] = 1.0;
        workgroup_barrier();
        let mut stride = 32u32;
        while stride > 0 {
            if t < stride {
                partial[t] += partial[partner(t, stride)];
            }
            workgroup_barrier();
            stride /= 2;
        }
        if t == 0 {
            sums[workgroup_id().x] = partial[0];
        }
    }

    /// Differences of neighbours, one past the end: `x[i + 1]` for the last `i`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn differences(p: &Len, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = x[i + 1] - x[i]; // bounds: next
        }
    }

    /// The differences with the last one left out: correct.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn differences_fixed(p: &Len, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i + 1 < p.n {
            y[i] = x[i + 1] - x[i];
        }
    }

    /// A tile shifted by one, its last invocation writing past the array.
    #[kernel(workgroup = [64], grid = [1])]
    pub fn shift(#[len(64)] y: &mut [f32], #[workgroup] tile: &mut [f32; 64]) {
        let t = local_index();
        tile[t + 1] = t as f32; // bounds: tile
        workgroup_barrier();
        y[t] = tile[t];
    }

    /// Every workgroup writes its first element into `total[0]`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn first_of_all(p: &Len, #[len(p.n)] x: &[f32], #[len(1)] total: &mut [f32]) {
        let i = global_id().x;
        if local_index() == 0 && i < p.n {
            total[0] = x[i]; // storage: total
        }
    }

    /// Each workgroup writes its own element: correct.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn first_of_each(
        p: &Len,
        #[len(p.n)] x: &[f32],
        #[len(ceil_div(p.n, 64))] firsts: &mut [f32],
    ) {
        let i = global_id().x;
        if local_index() == 0 && i < p.n {
            firsts[workgroup_id().x] = x[i];
        }
    }
}

use hazards::*;

fn sanitized() -> Runtime {
    runtime().with_sanitizer(true)
}

/// The Rust line of this file that ends with the comment `// {marker}`.
fn line(marker: &str) -> Line {
    let source = include_str!("sanitizer.rs");
    let wanted = format!("// {marker}");
    let found = source
        .lines()
        .position(|l| l.trim_end().ends_with(&wanted))
        .unwrap_or_else(|| panic!("no line marked `{wanted}`"));
    Line::Rust(found as u32 + 1)
}

/// The hazard `result` reports, printed.
fn hazard(result: Result<(), Error>) -> Hazard {
    match result {
        Err(Error::Hazard(hazard)) => {
            println!("{hazard}");
            *hazard
        }
        other => panic!("expected a hazard, got {other:?}"),
    }
}

/// The lines of a race's two accesses.
fn lines(hazard: &Hazard) -> BTreeSet<String> {
    let other = hazard.other.expect("a race names its other access");
    [hazard.access.line, other.line]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

fn set(lines: &[Line]) -> BTreeSet<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

#[test]
fn a_warp_synchronous_reduction_is_a_race() {
    let rt = sanitized();
    let kernel = WarpSum::new(&rt).unwrap();
    let mut sums = rt.zeros::<f32>(2).unwrap();
    let args = WarpSumArgs {
        p: &Len { n: 2 },
        sums: &mut sums,
    };
    let found = hazard(kernel.launch(&rt, args).and_then(|()| rt.flush()));
    assert_eq!(found.kernel, "warp_sum");
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "partial");
    // Invocation `e - 16` reads element `e` at step 16, which invocation `e` writes at either
    // step: the pair of lines is one of these, and the element one invocations 16-31 own.
    let (step32, step16) = (line("warp: step 32"), line("warp: step 16"));
    let pair = lines(&found);
    assert!(
        pair == set(&[step32, step16]) || pair == set(&[step16]),
        "{pair:?}"
    );
    assert!((16..32).contains(&found.element), "{found:?}");
    let other = found.other.unwrap();
    let invocations: BTreeSet<u32> = [found.access.invocation, other.invocation]
        .into_iter()
        .flatten()
        .collect();
    let e = found.element as u32;
    assert_eq!(invocations, BTreeSet::from([e - 16, e]), "{found:?}");
    assert_eq!(found.access.workgroup, other.workgroup);
    assert!(found.count > 1, "every workgroup meets several");
}

#[test]
fn a_tree_reduction_without_a_barrier_between_steps_is_a_race() {
    let rt = sanitized();
    let kernel = TreeSum::new(&rt).unwrap();
    let mut sums = rt.zeros::<f32>(1).unwrap();
    let args = TreeSumArgs {
        p: &Len { n: 1 },
        sums: &mut sums,
    };
    let found = hazard(kernel.launch(&rt, args).and_then(|()| rt.flush()));
    assert_eq!(found.kernel, "tree_sum");
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "partial");
    assert_eq!(lines(&found), set(&[line("tree: step")]));
    assert!(found.element < 32, "{found:?}");
}

#[test]
fn reading_one_past_the_end_of_a_buffer_is_out_of_bounds() {
    let rt = sanitized();
    let kernel = Differences::new(&rt).unwrap();
    let n = 100u32;
    let x = rt.upload(&vec![1.0f32; n as usize]).unwrap();
    let mut y = rt.zeros::<f32>(n as usize).unwrap();
    let args = DifferencesArgs {
        p: &Len { n },
        x: &x,
        y: &mut y,
    };
    let found = hazard(kernel.launch(&rt, args).and_then(|()| rt.flush()));
    assert_eq!(found.kernel, "differences");
    assert_eq!(found.kind, HazardKind::OutOfBounds { len: 100 });
    assert_eq!(found.array, "x");
    assert_eq!(found.element, 100);
    assert_eq!(found.access.kind, AccessKind::Read);
    assert_eq!(found.access.line, line("bounds: next"));
    // Element 99's invocation: the 36th of the second workgroup.
    assert_eq!(found.access.invocation, Some(35));
    assert_eq!(found.access.workgroup, Some(1));
    assert_eq!(found.count, 1);
}

#[test]
fn writing_past_a_workgroup_array_is_out_of_bounds() {
    let rt = sanitized();
    let kernel = Shift::new(&rt).unwrap();
    let mut y = rt.zeros::<f32>(64).unwrap();
    let found = hazard(
        kernel
            .launch(&rt, ShiftArgs { y: &mut y })
            .and_then(|()| rt.flush()),
    );
    assert_eq!(found.kernel, "shift");
    assert_eq!(found.kind, HazardKind::OutOfBounds { len: 64 });
    assert_eq!(found.array, "tile");
    assert_eq!(found.element, 64);
    assert_eq!(found.access.kind, AccessKind::Write);
    assert_eq!(found.access.line, line("bounds: tile"));
    assert_eq!(found.access.invocation, Some(63));
}

#[test]
fn two_workgroups_writing_one_element_race() {
    let rt = sanitized();
    let kernel = FirstOfAll::new(&rt).unwrap();
    let x = rt.upload(&vec![1.0f32; 192]).unwrap();
    let mut total = rt.zeros::<f32>(1).unwrap();
    let args = FirstOfAllArgs {
        p: &Len { n: 192 },
        x: &x,
        total: &mut total,
    };
    let found = hazard(kernel.launch(&rt, args).and_then(|()| rt.flush()));
    assert_eq!(found.kernel, "first_of_all");
    assert_eq!(found.kind, HazardKind::StorageRace);
    assert_eq!(found.array, "total");
    assert_eq!(found.element, 0);
    assert_eq!(found.access.kind, AccessKind::Write);
    assert_eq!(found.access.line, line("storage: total"));
    let other = found.other.unwrap();
    assert_eq!(other.line, line("storage: total"));
    assert_ne!(other.workgroup, found.access.workgroup);
    assert_eq!(found.count, 2, "three workgroups, two after the first");
}

#[test]
fn correct_kernels_report_nothing_and_compute_what_they_did() {
    let rt = sanitized();
    let n = 3u32;
    let mut sums = rt.zeros::<f32>(n as usize).unwrap();
    let kernel = TreeSumFixed::new(&rt).unwrap();
    let args = TreeSumFixedArgs {
        p: &Len { n },
        sums: &mut sums,
    };
    kernel.launch(&rt, args).unwrap();
    assert_eq!(sums.read(&rt).unwrap(), vec![64.0; n as usize]);

    let values: Vec<f32> = (0..130).map(|i| (i * i) as f32).collect();
    let x = rt.upload(&values).unwrap();
    let mut y = rt.zeros::<f32>(values.len()).unwrap();
    let kernel = DifferencesFixed::new(&rt).unwrap();
    let args = DifferencesFixedArgs {
        p: &Len { n: 130 },
        x: &x,
        y: &mut y,
    };
    kernel.launch(&rt, args).unwrap();
    let mut want: Vec<f32> = values.windows(2).map(|w| w[1] - w[0]).collect();
    want.push(0.0);
    assert_eq!(y.read(&rt).unwrap(), want);

    let mut firsts = rt.zeros::<f32>(3).unwrap();
    let kernel = FirstOfEach::new(&rt).unwrap();
    let args = FirstOfEachArgs {
        p: &Len { n: 130 },
        x: &x,
        firsts: &mut firsts,
    };
    kernel.launch(&rt, args).unwrap();
    assert_eq!(firsts.read(&rt).unwrap(), vec![0.0, 4096.0, 16384.0]);
}

#[test]
fn the_sanitizer_is_off_unless_asked_for() {
    let rt = runtime();
    let on = std::env::var(tessera::SANITIZE_ENV).is_ok_and(|v| v == "on");
    assert_eq!(rt.sanitizes(), on);
    let rt = rt.with_sanitizer(false);
    let kernel = TreeSum::new(&rt).unwrap();
    let mut sums = rt.zeros::<f32>(1).unwrap();
    let args = TreeSumArgs {
        p: &Len { n: 1 },
        sums: &mut sums,
    };
    // The race is there; without the sanitizer, nothing says so.
    kernel.launch(&rt, args).unwrap();
    assert_eq!(sums.read(&rt).unwrap().len(), 1);
}

/// The same warp-synchronous sum written in WGSL by hand: reported at WGSL lines.
const WARP_SUM_WGSL: &str = "
@group(0) @binding(0) var<storage, read_write> sums: array<f32>;
var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn warp_sum(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) g: vec3<u32>) {
    partial[t] = 1.0;
    workgroupBarrier();
    if t < 32u {
        partial[t] += partial[t + 32u];
        partial[t] += partial[t + 16u];
    }
    workgroupBarrier();
    if t == 0u { sums[g.x] = partial[0] + partial[1]; }
}
";

#[test]
fn hand_written_wgsl_is_reported_at_its_own_lines() {
    let rt = sanitized();
    let desc = PipelineDesc::new(WARP_SUM_WGSL, "warp_sum", &[BindingKind::ReadWriteStorage]);
    let pipeline = rt.pipeline(&desc).unwrap();
    assert!(pipeline.sanitized());
    let mut sums = rt.zeros::<f32>(1).unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut sums)], [1, 1, 1])
        .unwrap();
    let found = hazard(rt.flush());
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "partial");
    let pair = lines(&found);
    let (step32, step16) = (Line::Wgsl(10), Line::Wgsl(11));
    assert!(
        pair == set(&[step32, step16]) || pair == set(&[step16]),
        "{pair:?}"
    );
    // The runtime goes on: a later submission without hazards succeeds.
    let kernel = TreeSumFixed::new(&rt).unwrap();
    let args = TreeSumFixedArgs {
        p: &Len { n: 1 },
        sums: &mut sums,
    };
    kernel.launch(&rt, args).unwrap();
    assert_eq!(sums.read(&rt).unwrap(), vec![64.0]);
}

/// Invocation 0 writes a flag every turn, after a `storageBarrier()` that orders it after the
/// others' reads of the turn before (a write after a read needs only the barrier's execution
/// order); the others read it after a `workgroupBarrier()`.
const FLAG_TURNS: &str = "
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> flag: u32;

@compute @workgroup_size(64)
fn turns(@builtin(local_invocation_index) t: u32) {
    var seen = 0u;
    for (var turn = 0u; turn < 4u; turn++) {
        storageBarrier();
        if t == 0u { flag = turn; }
        workgroupBarrier();
        seen += flag;
    }
    out[t] = seen;
}

@compute @workgroup_size(64)
fn too_early(@builtin(local_invocation_index) t: u32) {
    if t == 0u { flag = 7u; }
    storageBarrier();
    out[t] = flag;
}
";

#[test]
fn a_storage_barrier_orders_a_write_after_reads_but_not_a_read_after_a_write() {
    let rt = sanitized();
    let mut out = rt.zeros::<u32>(64).unwrap();
    let desc = PipelineDesc::new(FLAG_TURNS, "turns", &[BindingKind::ReadWriteStorage]);
    let pipeline = rt.pipeline(&desc).unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    assert_eq!(out.read(&rt).unwrap(), vec![6; 64]);
    let desc = PipelineDesc::new(FLAG_TURNS, "too_early", &[BindingKind::ReadWriteStorage]);
    let pipeline = rt.pipeline(&desc).unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    let found = hazard(rt.flush());
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "flag");
    assert_eq!(lines(&found), set(&[Line::Wgsl(19), Line::Wgsl(21)]));
}

/// Four invocations write the four components of one vector: no race (each component is its
/// own memory); `collide` has two write the same one.
const COMPONENTS: &str = "
@group(0) @binding(0) var<storage, read_write> out: array<vec4<f32>>;
var<workgroup> quads: array<vec4<f32>, 16>;

@compute @workgroup_size(64)
fn components(@builtin(local_invocation_index) t: u32) {
    quads[t / 4u][t % 4u] = f32(t);
    workgroupBarrier();
    if t < 16u { out[t] = quads[t]; }
}

@compute @workgroup_size(64)
fn collide(@builtin(local_invocation_index) t: u32) {
    quads[t / 4u][t % 2u] = f32(t);
    workgroupBarrier();
    if t < 16u { out[t] = quads[t]; }
}
";

#[test]
fn invocations_may_own_different_components_of_one_vector() {
    let rt = sanitized();
    let mut out = rt.zeros::<[f32; 4]>(16).unwrap();
    let bindings = [BindingKind::ReadWriteStorage];
    let pipeline = rt
        .pipeline(&PipelineDesc::new(COMPONENTS, "components", &bindings))
        .unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    let want: Vec<[f32; 4]> = (0..16)
        .map(|i| [0, 1, 2, 3].map(|c| (4 * i + c) as f32))
        .collect();
    assert_eq!(out.read(&rt).unwrap(), want);
    let pipeline = rt
        .pipeline(&PipelineDesc::new(COMPONENTS, "collide", &bindings))
        .unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    let found = hazard(rt.flush());
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "quads");
    assert_eq!(lines(&found), set(&[Line::Wgsl(14)]));
    assert!(found.element < 16);
}

#[test]
fn a_kernel_without_a_storage_binding_to_spare_is_refused_saying_why() {
    let rt = common::limited_runtime(&runtime(), |limits| {
        limits.max_storage_buffers_per_shader_stage = 1;
    })
    .with_sanitizer(true);
    let desc = PipelineDesc::new(WARP_SUM_WGSL, "warp_sum", &[BindingKind::ReadWriteStorage]);
    let error = rt.pipeline(&desc).unwrap_err();
    assert!(
        matches!(
            &error,
            Error::LimitExceeded {
                needed: 2,
                available: 1,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("sanitizer"), "{error}");
}

/// Every invocation reads 32 elements of `cells` one after another (a run the sanitizer
/// logs and checks at the next barrier, as it does tessera's unrolled loops), then
/// overwrites its own element after a barrier: in a loop (`in_a_loop`), in a helper
/// (`in_a_helper`), or with the barrier missing (`too_soon`, a race).
fn logged_reads() -> String {
    let reads: String = (0..32)
        .map(|i| format!("    sum += cells[(t + {i}u) % 64u];\n"))
        .collect();
    format!(
        "
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
var<workgroup> cells: array<f32, 64>;

fn overwrite(t: u32, value: f32) {{
    workgroupBarrier();
    cells[t] = value;
}}

@compute @workgroup_size(64)
fn in_a_loop(@builtin(local_invocation_index) t: u32) {{
    cells[t] = 1.0;
    workgroupBarrier();
    var sum = 0.0;
{reads}    for (var turn = 0u; turn < 2u; turn++) {{
        workgroupBarrier();
        cells[t] = sum;
    }}
    out[t] = sum;
}}

@compute @workgroup_size(64)
fn in_a_helper(@builtin(local_invocation_index) t: u32) {{
    cells[t] = 1.0;
    workgroupBarrier();
    var sum = 0.0;
{reads}    overwrite(t, sum);
    out[t] = sum;
}}

@compute @workgroup_size(64)
fn too_soon(@builtin(local_invocation_index) t: u32) {{
    cells[t] = 1.0;
    workgroupBarrier();
    var sum = 0.0;
{reads}    cells[t] = sum;
    out[t] = sum;
}}
"
    )
}

#[test]
fn logged_reads_are_checked_before_the_barriers_of_loops_and_helpers() {
    let rt = sanitized();
    let source = logged_reads();
    let mut out = rt.zeros::<f32>(64).unwrap();
    for entry in ["in_a_loop", "in_a_helper"] {
        let desc = PipelineDesc::new(&source, entry, &[BindingKind::ReadWriteStorage]);
        let pipeline = rt.pipeline(&desc).unwrap();
        rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
            .unwrap();
        assert_eq!(out.read(&rt).unwrap(), vec![32.0; 64], "{entry}");
    }
    let desc = PipelineDesc::new(&source, "too_soon", &[BindingKind::ReadWriteStorage]);
    let pipeline = rt.pipeline(&desc).unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    let found = hazard(rt.flush());
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "cells");
    // One of the 32 reads against the write after them.
    let lines_of: Vec<&str> = source.lines().collect();
    let at = lines_of.iter().rposition(|l| l.trim() == "cells[t] = sum;");
    let write = Line::Wgsl(at.unwrap() as u32 + 1);
    let pair = lines(&found);
    assert!(pair.contains(&write.to_string()), "{pair:?}");
}

/// Invocations write single components of `quads`' vectors, then each reads 30 whole vectors
/// one after another (logged a component an entry): after a barrier (`after`), or without
/// one (`before`, a race).
fn whole_vectors() -> String {
    let reads: String = (0..30)
        .map(|i| {
            format!("    let q{i} = quads[(t + {i}u) % 16u];\n    sum += dot(q{i}, vec4(1.0));\n")
        })
        .collect();
    let kernel = |name: &str, barrier: &str| {
        format!(
            "
@compute @workgroup_size(64)
fn {name}(@builtin(local_invocation_index) t: u32) {{
    quads[t / 4u][t % 4u] = 1.0;
    {barrier}
    var sum = 0.0;
{reads}    out[t] = sum;
}}
"
        )
    };
    format!(
        "
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
var<workgroup> quads: array<vec4<f32>, 16>;
{}{}",
        kernel("after", "workgroupBarrier();"),
        kernel("before", "")
    )
}

#[test]
fn logged_reads_of_whole_vectors_check_each_component() {
    let rt = sanitized();
    let source = whole_vectors();
    let mut out = rt.zeros::<f32>(64).unwrap();
    let desc = PipelineDesc::new(&source, "after", &[BindingKind::ReadWriteStorage]);
    let pipeline = rt.pipeline(&desc).unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    assert_eq!(out.read(&rt).unwrap(), vec![120.0; 64]);
    let desc = PipelineDesc::new(&source, "before", &[BindingKind::ReadWriteStorage]);
    let pipeline = rt.pipeline(&desc).unwrap();
    rt.dispatch(&pipeline, &[Arg::read_write(&mut out)], [1, 1, 1])
        .unwrap();
    let found = hazard(rt.flush());
    assert_eq!(found.kind, HazardKind::WorkgroupRace);
    assert_eq!(found.array, "quads");
    assert!(found.element < 16, "{found}");
}
