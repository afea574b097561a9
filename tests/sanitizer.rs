//! The sanitizer on a real adapter: hand-written WGSL with each hazard it reports, and the
//! same kernels made correct, which it must leave alone.

mod common;

use common::runtime;
use tessera::sanitizer::{AccessKind, HazardKind, Line};
use tessera::{Arg, BindingKind, Error, PipelineDesc, Runtime};

fn sanitized() -> Runtime {
    runtime().with_sanitizer(true)
}

/// A sum of 64 ones per workgroup, finished warp-synchronously as the web-rwkv softmax was: no
/// barrier after the stride-32 step.
const WARP_SYNCHRONOUS: &str = "
@group(0) @binding(0) var<storage, read_write> sums: array<f32>;
var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn warp_sum(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) g: vec3<u32>) {
    partial[t] = 1.0;
    workgroupBarrier();
    if t < 32u {
        partial[t] += partial[t + 32u];
        partial[t] += partial[t + 16u];
        partial[t] += partial[t + 8u];
    }
    if t == 0u { sums[g.x] = partial[0]; }
}
";

fn dispatch(
    rt: &Runtime,
    source: &str,
    entry: &str,
    bindings: &[BindingKind],
    args: &[Arg<'_>],
    groups: u32,
) -> Result<(), Error> {
    let pipeline = rt.pipeline(&PipelineDesc::new(source, entry, bindings))?;
    rt.dispatch(&pipeline, args, [groups, 1, 1])?;
    rt.flush()
}

#[test]
fn a_warp_synchronous_reduction_is_a_race() {
    let rt = sanitized();
    let mut sums = rt.zeros::<f32>(2).unwrap();
    let result = dispatch(
        &rt,
        WARP_SYNCHRONOUS,
        "warp_sum",
        &[BindingKind::ReadWriteStorage],
        &[Arg::read_write(&mut sums)],
        2,
    );
    let Err(Error::Hazard(hazard)) = result else {
        panic!("expected a hazard, got {result:?}");
    };
    println!("{hazard}");
    assert_eq!(hazard.kernel, "warp_sum");
    assert_eq!(hazard.kind, HazardKind::WorkgroupRace);
    assert_eq!(hazard.array, "partial");
    assert!(matches!(hazard.access.line, Line::Wgsl(_)));
    assert!(hazard.other.is_some());
    let _ = AccessKind::Read;
}
