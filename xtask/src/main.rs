//! `cargo xtask`: the project's chores, so the README's quick start is two commands that work on
//! a fresh Debian machine, with or without a GPU.
//!
//! - `cargo xtask example [ARGS]`: runs the main example (release build).
//! - `cargo xtask test [ARGS]`: runs every test of the workspace.
//! - `cargo xtask sanitize`: runs nn's tests that together dispatch each of its kernels (those
//!   without tensor cores) under the sanitizer, and checks that every one of them ran there
//!   and met no hazard.
//! - `cargo xtask bench-report DIR --commit C --date D`: `BENCHMARKS.md` and its plot from one
//!   device run's CSV files (see [`report`]).
//!
//! Both first make sure a Vulkan driver is installed: when the machine has none, they install
//! Mesa's software driver lavapipe (`mesa-vulkan-drivers`) with apt-get.

use std::path::Path;
use std::process::{Command, ExitCode};

mod report;

const USAGE: &str = "\
usage: cargo xtask <TASK> [ARGS...]

  example [ARGS]     run the main example (release build), installing a Vulkan driver if none
  test [ARGS]        run every test of the workspace, installing a Vulkan driver if none
  sanitize           run nn's tests under the sanitizer and check that each of its kernels
                     (but the tensor cores') ran there without a hazard
  setup              install a Vulkan driver (Mesa's lavapipe) if the machine has none
  bench-report DIR --commit C --date D
                     write BENCHMARKS.md and its plot from one device run's CSV files";

/// The example the README's first command runs.
const MAIN_EXAMPLE: &str = "train";

/// Where Vulkan loaders look for installable client drivers.
const ICD_DIRS: [&str; 4] = [
    "/usr/share/vulkan/icd.d",
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
    "/usr/local/etc/vulkan/icd.d",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("example") => ensure_vulkan().and_then(|()| {
            cargo(
                &[
                    "run",
                    "--release",
                    "-p",
                    "tessera-nn",
                    "--example",
                    MAIN_EXAMPLE,
                    "--",
                ],
                &args[1..],
            )
        }),
        Some("test") => ensure_vulkan().and_then(|()| cargo(&["test", "--workspace"], &args[1..])),
        Some("sanitize") => ensure_vulkan().and_then(|()| sanitize()),
        Some("setup") => ensure_vulkan(),
        Some("bench-report") => report::run(&args[1..]),
        Some(other) => Err(format!("unknown task `{other}`\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// nn's tests that `cargo xtask sanitize` runs under the sanitizer, one `cargo test -p
/// tessera-nn` each: the test files and tests that together dispatch every nn kernel but the
/// tensor cores', chosen for the shortest run on lavapipe (about 6 minutes on 2 cores; the
/// whole of nn's tests take about 17). The rest pass under it too; notes/reliability.md has
/// the figures of each.
#[rustfmt::skip]
const SANITIZED_TESTS: &[&[&str]] = &[
    &["--test", "layers", "--test", "parts", "--test", "loss_optim", "--test", "sort",
      "--test", "train", "--test", "attention", "--test", "embedding", "--test", "transformer"],
    &["--test", "rows", "--", "matches_reference", "norm_layers_match"],
    &["--test", "gemm", "--", "random_shapes", "splits", "several_threads"],
    &["--test", "conv", "--", "edge_cases", "random_shapes", "small_outputs", "small_inputs",
      "bias_gradients"],
    // The copies of filters into the layouts of the tensor-core passes (run on any adapter).
    &["--lib", "--", "by_tap_put"],
];

/// The test that reads the sanitizer's coverage file and names each nn kernel missing there.
const COVERAGE_TEST: &str = "every_portable_kernel_passed_the_sanitizer";

/// Runs [`SANITIZED_TESTS`] with `TESSERA_SANITIZE=on`, the kernels that passed listed in
/// `target/sanitizer-coverage.txt`, then [`COVERAGE_TEST`] over that list.
fn sanitize() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("the xtask crate has no parent folder")?;
    let coverage = root.join("target").join("sanitizer-coverage.txt");
    match std::fs::remove_file(&coverage) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("removing {}: {e}", coverage.display()))
        }
        _ => {}
    }
    std::fs::create_dir_all(root.join("target"))
        .map_err(|e| format!("creating {}: {e}", root.join("target").display()))?;
    let with_coverage = |command: &mut Command| {
        command.env("TESSERA_SANITIZE_COVERAGE", &coverage);
    };
    for tests in SANITIZED_TESTS {
        let mut command = cargo_command(&["test", "-p", "tessera-nn"]);
        with_coverage(command.args(*tests).env("TESSERA_SANITIZE", "on"));
        run(&mut command)?;
    }
    let mut check = cargo_command(&["test", "-p", "tessera-nn", "--test", "wgsl", COVERAGE_TEST]);
    with_coverage(check.args(["--", "--ignored", "--exact"]));
    run(&mut check)
}

fn has_vulkan_driver() -> bool {
    let env_files = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    env_files
        || ICD_DIRS.iter().any(|dir| {
            std::fs::read_dir(dir).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.path().extension().is_some_and(|ext| ext == "json"))
            })
        })
}

/// Installs lavapipe when no Vulkan driver is present (Debian and Ubuntu; apt-get as root or through sudo).
fn ensure_vulkan() -> Result<(), String> {
    if cfg!(not(target_os = "linux")) || has_vulkan_driver() {
        return Ok(());
    }
    if !Path::new("/usr/bin/apt-get").exists() {
        return Err(
            "no Vulkan driver found; install your GPU's Vulkan driver or Mesa's lavapipe".into(),
        );
    }
    eprintln!("xtask: no Vulkan driver found; installing Mesa's software driver lavapipe (mesa-vulkan-drivers)");
    let as_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0"));
    let apt = |args: &[&str]| {
        let mut command = if as_root {
            Command::new("apt-get")
        } else {
            Command::new("sudo")
        };
        if !as_root {
            command.arg("apt-get");
        }
        run(command.args(args).env("DEBIAN_FRONTEND", "noninteractive"))
    };
    apt(&["update", "-qq"])?;
    apt(&["install", "-y", "-qq", "mesa-vulkan-drivers"])
}

fn cargo(fixed: &[&str], extra: &[String]) -> Result<(), String> {
    run(cargo_command(fixed).args(extra))
}

/// `cargo` with the arguments `fixed`.
fn cargo_command(fixed: &[&str]) -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    // Mesa's Vulkan loader complains on every device creation when this is unset (headless shells).
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        command.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    command.args(fixed);
    command
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("could not start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}
