//! Test support: validates WGSL modules with Tint, the WGSL compiler of Dawn and Chrome, so that
//! what naga accepted while the macro expanded is also accepted by the other big WebGPU
//! implementation.
//!
//! Tint runs in Node through the npm package `webgpu` (pinned by this directory's
//! `package-lock.json`); [`Batch::validate`] installs it with `npm ci` into
//! `tools/tint/node_modules` when missing, then validates every module of the batch in one
//! `node validate.mjs` process.
//!
//! Without Node or npm the validation is skipped with a message on stderr, unless the
//! environment sets `TESSERA_REQUIRE_TINT=1` (CI does), which makes that an error.
//!
//! ```no_run
//! let mut batch = tessera_tint::Batch::new("target/tint/example").unwrap();
//! batch.add("saxpy", "@compute @workgroup_size(1) fn main() {}").unwrap();
//! match batch.validate() {
//!     Ok(verdict) => tessera_tint::note(&verdict.to_string()),
//!     Err(errors) => panic!("{errors}"),
//! }
//! ```

use std::collections::HashSet;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// Set to `1` to make a missing Node, npm or `webgpu` package an error instead of a skip.
pub const REQUIRE_ENV: &str = "TESSERA_REQUIRE_TINT";

/// This directory: `validate.mjs`, `package.json`, `package-lock.json`, `node_modules/`.
const TOOL_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// Serializes `npm ci` between the tests of one process.
static INSTALL: Mutex<()> = Mutex::new(());

/// A directory of `.wgsl` files validated together.
pub struct Batch {
    dir: PathBuf,
    seen: HashSet<u64>,
    modules: usize,
}

/// What a batch's validation came to when no module was rejected.
#[derive(Debug)]
pub enum Verdict {
    /// Tint validated the batch; its summary line.
    Valid(String),
    /// Tint could not run here (no Node, no npm, no network) and it is not required.
    Skipped(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Valid(summary) => write!(f, "{summary}"),
            Verdict::Skipped(reason) => write!(
                f,
                "tint: SKIPPED, the WGSL was not validated by Tint: {reason} \
                 (install Node 20 and npm; {REQUIRE_ENV}=1 makes this an error)"
            ),
        }
    }
}

impl Batch {
    /// An empty batch in `dir`, which is emptied first.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Batch> {
        let dir = dir.into();
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(Batch {
            dir,
            seen: HashSet::new(),
            modules: 0,
        })
    }

    /// An empty batch in `tint/NAME` under the directory of the running test's profile
    /// (`target/debug` or `target/release`).
    pub fn in_target(name: &str) -> std::io::Result<Batch> {
        let exe = std::env::current_exe()?;
        // target/<profile>/deps/<test binary>
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .unwrap_or_else(|| Path::new("."));
        Batch::new(profile.join("tint").join(name))
    }

    /// Adds a module as `NAME.wgsl` (`NAME` of letters, digits, `-`, `_` and `.`, so that the
    /// errors name it); false when a module with the same text is already in the batch.
    ///
    /// A module calling subgroup builtins gets `enable subgroups;` in front of its first line
    /// (line numbers stay): the WGSL specification and Tint require the directive, naga 30
    /// refuses it, and tessera writes its WGSL for naga.
    pub fn add(&mut self, name: &str, wgsl: &str) -> std::io::Result<bool> {
        let enabled;
        let wgsl = if wgsl.contains("subgroup") && !wgsl.contains("enable subgroups;") {
            enabled = format!("enable subgroups; {wgsl}");
            &enabled
        } else {
            wgsl
        };
        let mut hasher = DefaultHasher::new();
        wgsl.hash(&mut hasher);
        if !self.seen.insert(hasher.finish()) {
            return Ok(false);
        }
        std::fs::write(self.dir.join(format!("{name}.wgsl")), wgsl)?;
        self.modules += 1;
        Ok(true)
    }

    /// The number of distinct modules added.
    pub fn len(&self) -> usize {
        self.modules
    }

    /// Whether no module was added.
    pub fn is_empty(&self) -> bool {
        self.modules == 0
    }

    /// The directory holding the batch's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Validates every module of the batch in one Node process. `Err` holds Tint's report
    /// (`FILE:LINE:COLUMN: error: MESSAGE` per error), or why Tint failed to run: a missing
    /// Node, npm or package is a skip unless [`REQUIRE_ENV`] is set, a validator that started
    /// and failed is always an error.
    pub fn validate(&self) -> Result<Verdict, String> {
        if let Err(reason) = install() {
            return skip_or_fail(reason);
        }
        let output = Command::new("node")
            .arg(Path::new(TOOL_DIR).join("validate.mjs"))
            .arg(&self.dir)
            .current_dir(TOOL_DIR)
            .output();
        let output = match output {
            Ok(output) => output,
            Err(error) => return skip_or_fail(format!("could not start node: {error}")),
        };
        // stdout holds the errors and the summary; stderr Dawn's warnings, unless it failed.
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        match output.status.code() {
            Some(0) => Ok(Verdict::Valid(
                stdout.lines().last().unwrap_or("").to_owned(),
            )),
            Some(1) => Err(stdout),
            _ => Err(format!(
                "node validate.mjs could not validate ({}):\n{}",
                output.status,
                combined(&output)
            )),
        }
    }
}

/// Writes `line` to stderr past the test harness's capture, so that it shows in the output
/// of a passing `cargo test` (the harness captures `eprintln!`, not the stream itself).
pub fn note(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// Whether the environment makes Tint's absence an error.
fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

fn skip_or_fail(reason: String) -> Result<Verdict, String> {
    if required() {
        Err(format!(
            "Tint is required ({REQUIRE_ENV}=1) but could not run: {reason}"
        ))
    } else {
        Ok(Verdict::Skipped(reason))
    }
}

/// Makes sure Node runs and the `webgpu` package is installed (`npm ci` when it is not).
fn install() -> Result<(), String> {
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let node = Command::new("node").arg("--version").output();
    if !node.as_ref().is_ok_and(|o| o.status.success()) {
        return Err("`node` was not found".into());
    }
    let package = Path::new(TOOL_DIR).join("node_modules/webgpu/package.json");
    if package.exists() {
        return Ok(());
    }
    note("tint: installing the npm package `webgpu` (npm ci in tools/tint)");
    let npm = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(TOOL_DIR)
        .output();
    match npm {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!("`npm ci` failed:\n{}", combined(&output))),
        Err(error) => Err(format!("`npm` could not start: {error}")),
    }
}

fn combined(output: &Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A validator that accepted everything would make every Tint test pass: it must reject.
    #[test]
    fn rejects_what_tint_rejects_and_names_the_file() {
        let mut batch = Batch::in_target("self-test").unwrap();
        batch
            .add("valid", "@compute @workgroup_size(1) fn main() {}")
            .unwrap();
        batch
            .add("oversized", "var<workgroup> a: array<f32, 262144>;\n@compute @workgroup_size(1) fn main() { a[0] = 1.0; }")
            .unwrap();
        match batch.validate() {
            Err(report) => {
                assert!(report.contains("oversized.wgsl:1:"), "{report}");
                assert!(report.contains("must be less than 65536"), "{report}");
                assert!(!report.contains("valid.wgsl"), "{report}");
            }
            Ok(Verdict::Skipped(reason)) => note(&Verdict::Skipped(reason).to_string()),
            Ok(Verdict::Valid(summary)) => panic!("Tint accepted an invalid module: {summary}"),
        }
    }

    #[test]
    fn identical_modules_are_validated_once() {
        let mut batch = Batch::in_target("dedup").unwrap();
        let code = "@compute @workgroup_size(1) fn main() {}";
        assert!(batch.add("first", code).unwrap());
        assert!(!batch.add("second", code).unwrap());
        assert_eq!(batch.len(), 1);
    }
}
