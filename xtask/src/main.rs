//! `cargo xtask`: the project's chores, so the README's quick start is two commands that work on
//! a fresh Debian machine, with or without a GPU.
//!
//! - `cargo xtask example [ARGS]`: runs the main example (release build).
//! - `cargo xtask test [ARGS]`: runs every test of the workspace.
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
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    // Mesa's Vulkan loader complains on every device creation when this is unset (headless shells).
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        command.env("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    run(command.args(fixed).args(extra))
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
