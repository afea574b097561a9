//! `TESSERA_SANITIZE_COVERAGE`: the file in which the sanitizer lists the kernels it checked
//! and found free of hazards. A test binary of its own, with one test, because it sets the
//! environment variable for the whole process.

mod common;

use tessera::{Arg, BindingKind, Error, PipelineDesc, SANITIZE_COVERAGE_ENV};

/// `fill` writes each element once; `collide` has every workgroup write element 0.
const KERNELS: &str = "
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn fill(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&out) { out[id.x] = id.x; }
}

@compute @workgroup_size(64)
fn collide(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) g: vec3<u32>) {
    if t == 0u { out[0] = g.x; }
}
";

#[test]
fn the_coverage_file_lists_each_kernel_that_passed_once() {
    let path = std::env::temp_dir().join(format!("tessera-coverage-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // The only test of this binary: no other thread reads the environment meanwhile.
    std::env::set_var(SANITIZE_COVERAGE_ENV, &path);
    let rt = common::runtime().with_sanitizer(true);
    let bindings = [BindingKind::ReadWriteStorage];
    let fill = rt
        .pipeline(&PipelineDesc::new(KERNELS, "fill", &bindings))
        .unwrap();
    let collide = rt
        .pipeline(&PipelineDesc::new(KERNELS, "collide", &bindings))
        .unwrap();
    let mut out = rt.zeros::<u32>(256).unwrap();
    // Built but not yet run: not listed.
    assert!(
        !path.exists(),
        "nothing ran yet, and {} exists",
        path.display()
    );
    for _ in 0..2 {
        rt.dispatch(&fill, &[Arg::read_write(&mut out)], [4, 1, 1])
            .unwrap();
        rt.flush().unwrap();
    }
    rt.dispatch(&collide, &[Arg::read_write(&mut out)], [4, 1, 1])
        .unwrap();
    assert!(matches!(rt.flush(), Err(Error::Hazard(_))));
    let listed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        listed, "fill\n",
        "one line for the kernel that passed, none for the racy one"
    );
    // A file that cannot be written is an error, not a silent gap in the list.
    let rt = common::runtime().with_sanitizer(true);
    std::env::set_var(SANITIZE_COVERAGE_ENV, std::env::temp_dir());
    let fill = rt
        .pipeline(&PipelineDesc::new(KERNELS, "fill", &bindings))
        .unwrap();
    let mut out = rt.zeros::<u32>(256).unwrap();
    rt.dispatch(&fill, &[Arg::read_write(&mut out)], [4, 1, 1])
        .unwrap();
    match rt.flush() {
        Err(Error::InvalidArgument { operation, .. }) => {
            assert!(
                operation.contains("`fill`") && operation.contains(SANITIZE_COVERAGE_ENV),
                "{operation}"
            )
        }
        other => panic!("expected an error for a directory as the coverage file, got {other:?}"),
    }
    let _ = std::fs::remove_file(&path);
}
