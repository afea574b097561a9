//! Every example runs as a test, so none of them rots.

#[path = "../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;

#[path = "../examples/std_rows.rs"]
#[allow(dead_code)]
mod std_rows;

#[test]
fn quickstart_runs_and_checks_its_result() {
    quickstart::run().expect("the quickstart example must succeed");
}

#[test]
fn std_rows_kernels_match_their_references() {
    let rt = tessera::Runtime::new().expect("a GPU adapter");
    if !rt
        .info()
        .features
        .contains(tessera::wgpu::Features::SUBGROUP)
    {
        eprintln!("skipped: the adapter `{}` has no subgroups", rt.info().name);
        return;
    }
    // `run` checks every kernel against its CPU reference; rows of 1000 and 4000 scalars
    // leave the last `Vec4`s of a workgroup's registers empty.
    let report = std_rows::run(&rt, 6, 1000, 4000, 1).expect("the std_rows example must succeed");
    assert_eq!(report.len(), 10);
}
