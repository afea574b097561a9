//! The sanitizer: kernels built with checks of every access to workgroup memory and storage
//! buffers, and their reports read back after each submission as [`Error::Hazard`].
//!
//! Turned on with `TESSERA_SANITIZE=on` or [`Runtime::with_sanitizer`]; meant for tests, on
//! any adapter (lavapipe included). What it catches and what it cannot is documented on
//! [`Runtime::with_sanitizer`]; how the checks work, in `instrument.rs`.

mod instrument;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use instrument::{kind, Instrumented, Site, StorageArray, WorkgroupArray};
pub(crate) use instrument::{prepare, Prepared, HEADER_WORDS};
use instrument::{REGIONS_LIMIT, STORAGE_SHADOW_LIMIT};

use crate::error::Error;
#[cfg(doc)]
use crate::runtime::Runtime;

/// The environment variable that turns the sanitizer on (`on`) or off (`off`, the default)
/// for every [`Runtime`] created while it is set.
pub const SANITIZE_ENV: &str = "TESSERA_SANITIZE";

/// The environment variable naming a file to which the sanitizer appends, one line each, the
/// entry point of every pipeline whose dispatches it has checked and found free of hazards
/// (once per pipeline a [`Runtime`] built). Unset, nothing is written.
///
/// It tells a test suite which of its kernels ran under the sanitizer: run the tests with
/// `TESSERA_SANITIZE=on TESSERA_SANITIZE_COVERAGE=target/sanitized.txt`, then compare the
/// file's kernels with the entry points of the modules (`tessera-nn` checks its own that way:
/// `cargo xtask sanitize`). Test processes running at once may share the file: each line is
/// one append.
pub const SANITIZE_COVERAGE_ENV: &str = "TESSERA_SANITIZE_COVERAGE";

/// Whether `value` of [`SANITIZE_ENV`] turns the sanitizer on.
pub(crate) fn wanted(value: &str) -> Result<bool, Error> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "off" | "0" => Ok(false),
        "on" | "1" => Ok(true),
        _ => Err(Error::InvalidArgument {
            operation: format!("reading {SANITIZE_ENV}"),
            problem: format!("expected `on` or `off`, found `{value}`"),
        }),
    }
}

/// A hazard the sanitizer found in a dispatch: the first one it met there, with how many it
/// met in all. [`Error::Hazard`] carries it; its `Display` is the whole message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hazard {
    /// The kernel: the pipeline's entry point.
    pub kernel: String,
    /// What went wrong.
    pub kind: HazardKind,
    /// The workgroup array or storage buffer, by its name in the kernel's source (for a
    /// module tessera generated, the Rust name; otherwise the WGSL name).
    pub array: String,
    /// The index into it (for an array of arrays, the index into its elements laid end to end).
    pub element: u64,
    /// The access that met the hazard.
    pub access: Access,
    /// A race's other access: its line where the sanitizer knows it, and who made it.
    pub other: Option<Access>,
    /// How many hazards the dispatch met (this one included).
    pub count: u32,
}

/// What a [`Hazard`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HazardKind {
    /// Two invocations of one workgroup touched one element of workgroup memory, at least
    /// one of them writing, with no workgroup barrier between: what the reader gets (or which
    /// write stays) is undefined.
    WorkgroupRace,
    /// Two workgroups of one dispatch touched one element of a storage buffer, at least one
    /// writing, without atomics: nothing orders the workgroups of a dispatch.
    StorageRace,
    /// An index at or past the end of an array of `len` elements. wgpu's bounds checks kept
    /// the access inside the memory (it read or wrote another element, or nothing), but not
    /// where the kernel meant.
    OutOfBounds {
        /// The array's length.
        len: u64,
    },
}

/// One access of a [`Hazard`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Access {
    /// Read, write or atomic.
    pub kind: AccessKind,
    /// Where in the source.
    pub line: Line,
    /// The invocation's index in its workgroup (`local_index()`), where known.
    pub invocation: Option<u32>,
    /// The workgroup's index in the grid (x fastest, then y, then z), where known.
    pub workgroup: Option<u32>,
}

/// How an [`Access`] touched the element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// A read.
    Read,
    /// A write (an assignment, or the store of `+=`).
    Write,
    /// An atomic operation.
    Atomic,
}

/// Where an access is in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// The line of the Rust file that declared the kernel (or the helper it called).
    Rust(u32),
    /// A line of the WGSL, for modules tessera did not generate.
    Wgsl(u32),
    /// Not known: the other access of a storage race was overwritten meanwhile.
    Unknown,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Rust(n) => write!(f, "line {n}"),
            Line::Wgsl(n) => write!(f, "WGSL line {n}"),
            Line::Unknown => f.write_str("an unknown line"),
        }
    }
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Hazard {
            kernel,
            kind,
            array,
            element,
            access,
            other,
            count,
        } = self;
        let who = |a: &Access| match (a.invocation, a.workgroup) {
            (Some(i), Some(g)) => format!("invocation {i} of workgroup {g}"),
            (None, Some(g)) => format!("workgroup {g}"),
            (Some(i), None) => format!("invocation {i}"),
            (None, None) => "an invocation".to_owned(),
        };
        let verb = |a: &Access, present: bool| match (a.kind, present) {
            (AccessKind::Read, true) => "reads",
            (AccessKind::Read, false) => "read",
            (AccessKind::Write, true) => "writes",
            (AccessKind::Write, false) => "wrote",
            (AccessKind::Atomic, true) => "updates",
            (AccessKind::Atomic, false) => "updated",
        };
        let accessed = format!(
            "{} {} `{array}[{element}]` at {}",
            who(access),
            verb(access, true),
            access.line
        );
        match kind {
            HazardKind::WorkgroupRace => {
                write!(
                    f,
                    "the sanitizer found a data race in `{kernel}`: {accessed}"
                )?;
                if let Some(o) = other {
                    write!(
                        f,
                        ", which invocation {} {} at {}",
                        o.invocation.map_or("?".into(), |i| i.to_string()),
                        verb(o, false),
                        o.line
                    )?;
                }
                write!(
                    f,
                    ", with no workgroup barrier between; put a `workgroup_barrier()` between \
                     the two, in code every invocation of the workgroup runs"
                )?;
            }
            HazardKind::StorageRace => {
                write!(
                    f,
                    "the sanitizer found a data race in `{kernel}`: {accessed}"
                )?;
                if let Some(o) = other {
                    write!(f, ", which {} wrote at {}", who(o), o.line)?;
                }
                write!(
                    f,
                    " in the same dispatch; nothing orders the workgroups of a dispatch: let one \
                     workgroup write each element, use atomics, or split the work over two \
                     dispatches"
                )?;
            }
            HazardKind::OutOfBounds { len } => {
                write!(
                    f,
                    "the sanitizer found an index out of bounds in `{kernel}`: {accessed}, past \
                     the end of its {len} elements; wgpu's bounds checks kept the access inside \
                     the memory, but not where the kernel meant: compare the index with the \
                     length first"
                )?;
            }
        }
        match count {
            0 | 1 => {}
            2 => write!(f, " (1 more hazard in the same dispatch)")?,
            n => write!(f, " ({} more hazards in the same dispatch)", n - 1)?,
        }
        Ok(())
    }
}

/// What a pipeline built with the sanitizer needs to size its part of the sanitizer buffer
/// and to read its report.
#[derive(Debug)]
pub(crate) struct Checked {
    kernel: String,
    sites: Vec<Site>,
    workgroup: Vec<WorkgroupArray>,
    storage: Vec<StorageArray>,
    /// (binding, stride) of the shadowed buffers, in binding order.
    shadowed: Vec<(u32, u32)>,
    /// Words of each workgroup's region.
    region: u32,
    /// Whether a dispatch of the pipeline has been checked without a hazard (and recorded in
    /// [`SANITIZE_COVERAGE_ENV`]'s file, where set).
    passed: AtomicBool,
}

impl Checked {
    pub(crate) fn new(kernel: &str, instrumented: &Instrumented) -> Arc<Self> {
        Arc::new(Checked {
            kernel: kernel.to_owned(),
            sites: instrumented.sites.clone(),
            workgroup: instrumented.workgroup.clone(),
            storage: instrumented.storage.clone(),
            shadowed: instrumented.shadowed.clone(),
            region: instrumented.region,
            passed: AtomicBool::new(false),
        })
    }

    /// Notes that a dispatch was checked without a hazard; the first time, appends the kernel
    /// to [`SANITIZE_COVERAGE_ENV`]'s file where that is set.
    pub(crate) fn passed(&self) -> Result<(), Error> {
        if self.passed.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        let Some(path) = std::env::var_os(SANITIZE_COVERAGE_ENV).filter(|p| !p.is_empty()) else {
            return Ok(());
        };
        let line = format!("{}\n", self.kernel);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(line.as_bytes()))
            .map_err(|e| Error::InvalidArgument {
                operation: format!(
                    "recording `{}` in {SANITIZE_COVERAGE_ENV} ({})",
                    self.kernel,
                    std::path::Path::new(&path).display()
                ),
                problem: format!("the file could not be appended to: {e}"),
            })
    }

    /// Words of a dispatch's part of the sanitizer buffer, over `grid` workgroups, with
    /// `size(binding)` the bytes of the buffer bound there.
    pub(crate) fn words(&self, size: impl Fn(u32) -> u64, grid: [u32; 3]) -> u64 {
        let groups: u64 = grid.iter().map(|&n| u64::from(n)).product();
        let storage: u64 = self
            .shadowed
            .iter()
            .map(|&(binding, stride)| 2 * (size(binding) / u64::from(stride.max(1))))
            .filter(|&words| words <= STORAGE_SHADOW_LIMIT)
            .sum();
        let region = u64::from(self.region);
        let tracked = groups.min((REGIONS_LIMIT / region).max(1));
        HEADER_WORDS + storage + tracked * region
    }

    /// The kernel the checks are of.
    pub(crate) fn kernel(&self) -> &str {
        &self.kernel
    }

    /// The hazard a dispatch's report describes, if any.
    pub(crate) fn hazard(&self, header: &[u32]) -> Option<Hazard> {
        let word = |i: usize| header.get(i).copied().unwrap_or(0);
        let count = word(0);
        if count == 0 {
            return None;
        }
        let site = |id: u32| self.sites.get(id as usize);
        let line = |site: Option<&Site>| match site {
            Some(Site {
                rust_line: Some(n), ..
            }) => Line::Rust(*n),
            Some(Site { wgsl_line, .. }) if *wgsl_line > 0 => Line::Wgsl(*wgsl_line),
            _ => Line::Unknown,
        };
        let touch = |site: Option<&Site>| site.map_or(AccessKind::Read, |s| s.touch);
        let this = site(word(2));
        let access = Access {
            kind: touch(this),
            line: line(this),
            invocation: Some(word(5)),
            workgroup: Some(word(6)),
        };
        let other_site = word(3).checked_sub(1).and_then(site);
        let subject = word(9) as usize;
        let workgroup_name = || {
            self.workgroup
                .get(subject)
                .map_or_else(|| "?".to_owned(), |a| a.name.clone())
        };
        let storage_name = || {
            self.storage
                .get(subject)
                .map_or_else(|| "?".to_owned(), |a| a.name.clone())
        };
        let (kind, array, other) = match word(1) {
            kind::WORKGROUP_RACE => (
                HazardKind::WorkgroupRace,
                workgroup_name(),
                Some(Access {
                    kind: touch(other_site),
                    line: line(other_site),
                    invocation: Some(word(7)),
                    workgroup: Some(word(6)),
                }),
            ),
            kind::STORAGE_RACE => (
                HazardKind::StorageRace,
                storage_name(),
                Some(Access {
                    kind: AccessKind::Write,
                    line: line(other_site),
                    invocation: None,
                    workgroup: Some(word(7)),
                }),
            ),
            kind::WORKGROUP_BOUNDS => (
                HazardKind::OutOfBounds {
                    len: u64::from(word(8)),
                },
                workgroup_name(),
                None,
            ),
            _ => (
                HazardKind::OutOfBounds {
                    len: u64::from(word(8)),
                },
                storage_name(),
                None,
            ),
        };
        Some(Hazard {
            kernel: self.kernel.clone(),
            kind,
            array,
            element: u64::from(word(4)),
            access,
            other,
            count,
        })
    }
}
