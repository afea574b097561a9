//! Every example runs as a test, so none of them rots.

#[path = "../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;

#[path = "../examples/std_rows.rs"]
#[allow(dead_code)]
mod std_rows;

// The std examples and `large_buffers` include `examples/shared/timing.rs`: here that makes
// a copy of it in each example's module, as each example binary has its own.
#[path = "../examples/std_scan.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod std_scan;

#[path = "../examples/elementwise.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod elementwise;

#[path = "../examples/large_buffers.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod large_buffers;

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
    // `run` checks every kernel against its CPU reference (argmax exactly, with ties in
    // most rows); rows of 1000 and 4000 scalars leave the last `Vec4`s of a workgroup's registers
    // empty.
    let report = std_rows::run(&rt, 6, 1000, 4000, 1).expect("the std_rows example must succeed");
    assert_eq!(report.len(), 13);
}

#[test]
fn std_scan_matches_the_cpu_scan() {
    let rt = tessera::Runtime::new().expect("a GPU adapter");
    // `run` checks every scan (inclusive and exclusive) against the CPU's, through subgroups
    // where the adapter has them and the tree always; 2^18 + 4 `u32`s need several tiles, the
    // last partial, at both widths.
    let report = std_scan::run(&rt, (1 << 18) + 4, 1).expect("the std_scan example must succeed");
    assert!(report.len() >= 5, "{} rows", report.len());
}

#[test]
fn large_buffers_probe_copies_right() {
    let rt = tessera::Runtime::new().expect("a GPU adapter");
    // `run` checks one copy's result; 4096 vectors a buffer keep it short on lavapipe.
    let idle = std::time::Duration::ZERO;
    let report =
        large_buffers::run(&rt, 4096, idle).expect("the large_buffers example must succeed");
    assert_eq!(report.len(), 14);
}

#[test]
fn elementwise_kernels_match_the_cpu() {
    let rt = tessera::Runtime::new().expect("a GPU adapter");
    // `run` checks each kernel; 2^16 + 4 floats leave the last workgroup partly empty and the
    // strided kernel's grid covering the buffer more than once.
    let report =
        elementwise::run(&rt, (1 << 16) + 4).expect("the elementwise example must succeed");
    assert_eq!(report.len(), 5);
}
