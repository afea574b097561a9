//! The instrumentation on WGSL texts, without a device: every instrumented module validates.

use super::*;

/// Instruments `entry` of `source` and validates the result as wgpu would.
fn instrumented(source: &str, entry: &str) -> Instrumented {
    let prepared = prepare(source).unwrap_or_else(|e| panic!("{e}"));
    let instrumented = prepared.instrument(entry).unwrap_or_else(|e| panic!("{e}"));
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    );
    if let Err(error) = validator.validate(&instrumented.module) {
        let f = &instrumented.module.entry_points[0].function;
        let mut text = String::new();
        for (h, e) in f.expressions.iter() {
            text += &format!("{h:?} = {e:?}\n");
        }
        text += &format!("{:?}", f.body.iter().collect::<Vec<_>>());
        panic!("{}\n{text}", error.emit_to_string(""));
    }
    instrumented
}

#[test]
fn a_compound_assignment_validates() {
    let source = "
@group(0) @binding(0) var<storage, read_write> sums: array<f32>;
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn k(@builtin(local_invocation_index) t: u32) {
    partial[t] = 1.0;
    workgroupBarrier();
    partial[t] += partial[t + 32u];
    sums[t] = partial[0];
}
";
    let i = instrumented(source, "k");
    assert_eq!(i.sites.len(), 6);
}
