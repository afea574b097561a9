//! Tint parity: the WGSL the macro generated for the project's kernels, which naga validated
//! while the macro expanded, must also pass Tint (Dawn's WGSL compiler, Chrome's WebGPU).
//!
//! Checked here: the WGSL of every module pinned by an insta snapshot (every
//! `tests/snapshots/*.snap`: the modules of `tests/kernels.rs`, `tests/variants.rs`,
//! `tests/subgroups.rs`, `tests/std_lib.rs` and others, which those tests keep equal to what
//! the macro generates; test crates cannot reach each other's modules). The nn kernels are
//! checked by `nn/tests/wgsl.rs`. The macro's fuzz harness (`kernel-macros/src/fuzz`) runs
//! every `#[kernels]` module of the repository, and the modules it generates, through Tint
//! as well.
//!
//! Needs Node and npm (see `tools/tint`); without them the test prints why it skipped, and
//! fails when `TESSERA_REQUIRE_TINT=1` (CI).

use std::path::Path;

use tessera_tint::{Batch, Verdict};

/// The text of an insta snapshot, after its `---` header.
fn snapshot_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(&rest[end + "\n---\n".len()..])
}

#[test]
fn generated_wgsl_passes_tint() {
    let mut batch = Batch::in_target("tests").expect("a directory for the Tint batch");
    let snapshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let mut entries: Vec<_> = std::fs::read_dir(&snapshots)
        .expect("tests/snapshots")
        .map(|e| e.expect("a snapshot entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .collect();
    entries.sort();
    for path in entries {
        let text = std::fs::read_to_string(&path).expect("a readable snapshot");
        let body = snapshot_body(&text)
            .unwrap_or_else(|| panic!("{} has no insta header", path.display()));
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 name");
        // Tint does not know wgpu's own extension (naga validates these, and the macro's
        // tests write SPIR-V from them).
        if body.contains("enable wgpu_cooperative_matrix;") {
            continue;
        }
        batch.add(name, body).unwrap();
    }
    assert!(batch.len() > 10, "the snapshots were not found");
    match batch.validate() {
        Ok(verdict @ Verdict::Valid(_)) | Ok(verdict @ Verdict::Skipped(_)) => {
            tessera_tint::note(&format!("{verdict} ({} modules)", batch.len()))
        }
        Err(report) => panic!("Tint rejects WGSL that naga accepted:\n{report}"),
    }
}
