//! Autotuning: an operation with several ways to run (instances of a kernel's constants,
//! blockings, split factors) times each the first time it meets a device and a shape bucket,
//! and remembers the fastest, in memory and in a cache file that outlives the process.
//!
//! The file is plain text, one choice per line, keyed by the adapter, its driver, the
//! version of tessera, the operation, a hash of the WGSL its candidates run (so an edited
//! kernel is tuned again) and the shape bucket. Where it lives: `TESSERA_AUTOTUNE_CACHE` when
//! set (empty: no file), otherwise `$XDG_CACHE_HOME/tessera/autotune.tsv`, otherwise
//! `$HOME/.cache/tessera/autotune.tsv`.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::dispatch::Batch;
use crate::error::{Error, Result};
use crate::runtime::Runtime;

/// The environment variable that turns autotuning `on` or `off` (see [`Autotune`]).
pub const AUTOTUNE_ENV: &str = "TESSERA_AUTOTUNE";

/// The environment variable naming the autotuning cache file; empty keeps choices in memory.
pub const AUTOTUNE_CACHE_ENV: &str = "TESSERA_AUTOTUNE_CACHE";

/// Whether operations time their candidates ([`Runtime::autotune`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Autotune {
    /// Time each candidate once per device and shape bucket and run the fastest.
    On,
    /// Run each operation's fixed, documented choice: the same on every device and every run,
    /// as tests want.
    Off,
}

impl Autotune {
    /// The mode `TESSERA_AUTOTUNE` asks for (`on` or `off`, any case), or, when it is unset,
    /// on for hardware adapters and off for software ones (timing them says little about a
    /// GPU, and takes long).
    pub(crate) fn from_env(device_type: wgpu::DeviceType) -> Result<Autotune> {
        Self::parse(
            &std::env::var(AUTOTUNE_ENV).unwrap_or_default(),
            device_type,
        )
    }

    fn parse(value: &str, device_type: wgpu::DeviceType) -> Result<Autotune> {
        match value.to_ascii_lowercase().as_str() {
            "" if device_type == wgpu::DeviceType::Cpu => Ok(Autotune::Off),
            "" | "on" | "1" => Ok(Autotune::On),
            "off" | "0" => Ok(Autotune::Off),
            _ => Err(Error::InvalidArgument {
                operation: format!("reading {AUTOTUNE_ENV}"),
                problem: format!("expected `on` or `off`, found `{value}`"),
            }),
        }
    }
}

/// The smallest power of two at least `size`: shapes whose sizes round to the same powers
/// share a tuned choice.
///
/// ```
/// assert_eq!(kernel_runtime::size_bucket(1000), 1024);
/// assert_eq!(kernel_runtime::size_bucket(1024), 1024);
/// assert_eq!(kernel_runtime::size_bucket(0), 1);
/// ```
pub fn size_bucket(size: u32) -> u32 {
    size.checked_next_power_of_two().unwrap_or(1 << 31).max(1)
}

/// A stable 64-bit hash of a kernel's WGSL (FNV-1a over the text without its comments), the
/// same in every process and build, for [`TuneKey`]s.
///
/// Comments do not change what runs, and tessera writes one after every line naming the
/// kernel's source line: without them in the hash, editing a file above a kernel keeps the
/// kernel's tuned choices. Any other change, whitespace included, is another kernel.
///
/// ```
/// use kernel_runtime::source_hash;
/// let a = "let x = 1u; // line 10\n/* a /* nested */ note */ let y = x;";
/// let b = "let x = 1u; // line 12\n let y = x;";
/// assert_eq!(source_hash(a), source_hash(b));
/// assert_ne!(source_hash(a), source_hash("let x = 2u;\n let y = x;"));
/// ```
pub fn source_hash(source: &str) -> u64 {
    without_comments(source)
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// `source` without its WGSL comments: `//` to the end of the line (the line break stays),
/// and `/* */` blocks, which nest.
fn without_comments(source: &str) -> String {
    let mut code = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find('/') {
        code.push_str(&rest[..start]);
        let after = &rest[start..];
        if after.starts_with("//") {
            rest = after.find('\n').map_or("", |end| &after[end..]);
        } else if after.starts_with("/*") {
            let mut depth = 0usize;
            let mut at = 0;
            while at < after.len() {
                if after[at..].starts_with("/*") {
                    (depth, at) = (depth + 1, at + 2);
                } else if after[at..].starts_with("*/") {
                    (depth, at) = (depth - 1, at + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    at += after[at..].chars().next().map_or(1, char::len_utf8);
                }
            }
            rest = &after[at.min(after.len())..];
        } else {
            code.push('/');
            rest = &after[1..];
        }
    }
    code.push_str(rest);
    code
}

/// What a tuned choice is remembered under: the operation, the hash of the WGSL its candidates
/// run ([`source_hash`]) and the shape bucket.
///
/// ```
/// use kernel_runtime::{size_bucket, source_hash, TuneKey};
/// let (m, n, k) = (1000, 64, 4096);
/// let key = TuneKey::new("my_gemm", source_hash("/* the WGSL */"), &[m, n, k].map(size_bucket));
/// assert_eq!(key.to_string(), "my_gemm [1024, 64, 4096]");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TuneKey {
    operation: String,
    source: u64,
    bucket: Vec<u32>,
}

impl TuneKey {
    /// The key of `operation` (a name without tabs or line breaks; they become spaces) over
    /// the WGSL of hash `source`, for the shape bucket `bucket`: the values its choice depends
    /// on, sizes rounded (for example with [`size_bucket`]) so nearby shapes share it.
    pub fn new(operation: &str, source: u64, bucket: &[u32]) -> Self {
        TuneKey {
            operation: field(operation),
            source,
            bucket: bucket.to_vec(),
        }
    }
}

impl fmt::Display for TuneKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.operation, self.bucket)
    }
}

/// How a choice was made.
#[derive(Clone, Debug, PartialEq)]
pub enum Tuned {
    /// Timed in this process: the best GPU time of each candidate, in candidate order.
    Measured(Vec<Duration>),
    /// Read from the cache file.
    Cached,
}

/// One choice the runtime has made, for [`Runtime::autotune_report`].
#[derive(Clone, Debug)]
pub struct TuneChoice {
    /// What it is remembered under.
    pub key: TuneKey,
    /// The index of the candidate chosen.
    pub choice: usize,
    /// How.
    pub how: Tuned,
}

impl fmt::Display for TuneChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: candidate {}", self.key, self.choice)?;
        match &self.how {
            Tuned::Cached => write!(f, " (cached)"),
            Tuned::Measured(times) => {
                let times: Vec<String> = times
                    .iter()
                    .map(|t| format!("{:.3}", t.as_secs_f64() * 1e3))
                    .collect();
                write!(f, " (timed: {} ms)", times.join(" / "))
            }
        }
    }
}

/// How many rounds time every candidate after a warm-up run of each; the best time counts.
const REPEATS: usize = 3;

/// The tuner's state, kept by the [`Runtime`].
pub(crate) struct Tuner {
    state: Mutex<State>,
}

struct State {
    mode: Autotune,
    /// The cache file, when there is one.
    path: Option<PathBuf>,
    /// Whether `path` has been read into `chosen`.
    loaded: bool,
    chosen: HashMap<TuneKey, TuneChoice>,
    /// The first problem with the settings or the cache file.
    problem: Option<String>,
}

impl Tuner {
    /// A tuner in `mode`, with `problem` to report (a setting it could not read).
    pub(crate) fn new(mode: Autotune, problem: Option<String>) -> Self {
        Tuner {
            state: Mutex::new(State {
                mode,
                path: default_path(),
                loaded: false,
                chosen: HashMap::new(),
                problem,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `TESSERA_AUTOTUNE_CACHE`, `$XDG_CACHE_HOME/tessera/autotune.tsv` or
/// `$HOME/.cache/tessera/autotune.tsv`.
fn default_path() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = std::env::var_os(AUTOTUNE_CACHE_ENV) {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("tessera").join("autotune.tsv"))
}

/// What identifies the device a line of the cache file was tuned on.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Device {
    adapter: String,
    driver: String,
    version: String,
}

impl Device {
    fn of(rt: &Runtime) -> Self {
        Device {
            adapter: field(&rt.info().name),
            driver: field(&rt.info().driver),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// `text` without the tabs and line breaks that separate the file's fields and lines.
fn field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

/// One line of the cache file: device, key, choice.
fn format_line(device: &Device, key: &TuneKey, choice: usize) -> String {
    let bucket: Vec<String> = key.bucket.iter().map(u32::to_string).collect();
    format!(
        "{}\t{}\t{}\t{}\t{:016x}\t{}\t{choice}",
        device.adapter,
        device.driver,
        device.version,
        key.operation,
        key.source,
        bucket.join(",")
    )
}

/// The device, key and choice of a line, or `None` for a line that is not one (a comment, a
/// line of another format): such lines are kept but never used.
fn parse_line(line: &str) -> Option<(Device, TuneKey, usize)> {
    let fields: Vec<&str> = line.split('\t').collect();
    let [adapter, driver, version, operation, source, bucket, choice] = fields[..] else {
        return None;
    };
    let bucket = if bucket.is_empty() {
        Vec::new()
    } else {
        bucket
            .split(',')
            .map(|v| v.parse().ok())
            .collect::<Option<Vec<u32>>>()?
    };
    Some((
        Device {
            adapter: adapter.to_owned(),
            driver: driver.to_owned(),
            version: version.to_owned(),
        },
        TuneKey {
            operation: operation.to_owned(),
            source: u64::from_str_radix(source, 16).ok()?,
            bucket,
        },
        choice.parse().ok()?,
    ))
}

/// The choices in `text` made on `device`.
fn choices_for(text: &str, device: &Device) -> impl Iterator<Item = (TuneKey, usize)> {
    text.lines()
        .filter_map(parse_line)
        .filter(|(on, _, _)| on == device)
        .map(|(_, key, choice)| (key, choice))
        .collect::<Vec<_>>()
        .into_iter()
}

/// Writes `choice` for `key` on `device` into the file at `path`, replacing the line it
/// had and keeping every other.
fn store(path: &Path, device: &Device, key: &TuneKey, choice: usize) -> std::io::Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error),
    };
    let mut lines: Vec<String> = old
        .lines()
        .filter(|line| !matches!(parse_line(line), Some((on, k, _)) if on == *device && k == *key))
        .map(str::to_owned)
        .collect();
    if lines.is_empty() {
        lines.push(
            "# tessera autotuning: adapter, driver, version, operation, WGSL hash, shape \
             bucket, choice"
                .to_owned(),
        );
    }
    lines.push(format_line(device, key, choice));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // Written whole beside the file, then renamed over it, so a reader never sees half.
    let partial = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&partial, lines.join("\n") + "\n")?;
    std::fs::rename(&partial, path)
}

impl Runtime {
    /// The index of the fastest of `candidates` ways to run an operation, for `key`.
    ///
    /// With autotuning on ([`Autotune`]), the first call for a key on this device looks in
    /// the cache file and, when the key is not there, times every candidate: `record(batch, i)`
    /// records candidate `i` into a fresh batch, which is run once to warm up and then timed
    /// in three rounds over all candidates (GPU timestamps where the device has them); each
    /// candidate's best time counts. The
    /// fastest is remembered in memory and in the cache file. Later calls with the key return
    /// the choice at once. With autotuning off, `fixed` is returned and nothing runs.
    ///
    /// `record` runs before the caller's own work is submitted, so it must not touch the
    /// caller's buffers: give it scratch buffers of the operation's sizes.
    ///
    /// ```no_run
    /// # use kernel_runtime::{Runtime, TuneKey, size_bucket, source_hash};
    /// # fn f(rt: &Runtime, kernels: &[kernel_runtime::Pipeline], n: u32, x: &mut kernel_runtime::GpuBuffer<f32>) -> kernel_runtime::Result<()> {
    /// let key = TuneKey::new("scale", source_hash("/* WGSL */"), &[size_bucket(n)]);
    /// let mut scratch = rt.zeros::<f32>(n as usize)?;
    /// let best = rt.autotune(&key, kernels.len(), 0, |batch, i| {
    ///     batch.dispatch(&kernels[i], &[kernel_runtime::Arg::read_write(&mut scratch)], [n / 64, 1, 1])
    /// })?;
    /// rt.dispatch(&kernels[best], &[kernel_runtime::Arg::read_write(x)], [n / 64, 1, 1])?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What `record` returns, and what running the candidates returns. A cache file that
    /// cannot be read or written is no error: choices then live in memory, and
    /// [`Runtime::autotune_report`] says what went wrong.
    ///
    /// A remembered choice at or past `candidates` (the operation had more candidates when it
    /// was tuned) is tuned again. `fixed` is returned as it is, in range or not, when
    /// autotuning is off.
    pub fn autotune(
        &self,
        key: &TuneKey,
        candidates: usize,
        fixed: usize,
        mut record: impl FnMut(&mut Batch<'_>, usize) -> Result<()>,
    ) -> Result<usize> {
        let device = {
            let mut state = self.tuner.state();
            if state.mode == Autotune::Off || candidates <= 1 {
                return Ok(fixed);
            }
            // A choice past the candidates (remembered when there were more) is tuned again.
            if let Some(known) = state.chosen.get(key).filter(|k| k.choice < candidates) {
                return Ok(known.choice);
            }
            let device = Device::of(self);
            if !state.loaded {
                state.loaded = true;
                if let Some(path) = state.path.clone() {
                    match std::fs::read_to_string(&path) {
                        Ok(text) => {
                            for (key, choice) in choices_for(&text, &device) {
                                let how = Tuned::Cached;
                                state
                                    .chosen
                                    .insert(key.clone(), TuneChoice { key, choice, how });
                            }
                        }
                        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                        Err(error) => {
                            let problem = format!("reading {}: {error}", path.display());
                            state.problem.get_or_insert(problem);
                        }
                    }
                }
                if let Some(known) = state.chosen.get(key).filter(|k| k.choice < candidates) {
                    return Ok(known.choice);
                }
            }
            device
        };
        // Timed without the lock: candidates may tune operations of their own. Round by round,
        // every candidate once a round, so that a passing dip in the GPU's clocks slows every
        // candidate alike instead of the ones that happen to run during it.
        for candidate in 0..candidates {
            let mut warm_up = self.batch();
            record(&mut warm_up, candidate)?;
            warm_up.submit()?;
        }
        let mut times = vec![Duration::MAX; candidates];
        for _ in 0..REPEATS {
            for (candidate, best) in times.iter_mut().enumerate() {
                let mut batch = self.batch();
                record(&mut batch, candidate)?;
                *best = (*best).min(batch.submit_timed()?.total);
            }
        }
        let choice = (0..candidates).min_by_key(|&i| times[i]).unwrap_or(0);
        let mut state = self.tuner.state();
        if let Some(path) = state.path.clone() {
            if let Err(error) = store(&path, &device, key, choice) {
                let problem = format!("writing {}: {error}", path.display());
                state.problem.get_or_insert(problem);
            }
        }
        let how = Tuned::Measured(times);
        let key = key.clone();
        state
            .chosen
            .insert(key.clone(), TuneChoice { key, choice, how });
        Ok(choice)
    }

    /// Whether operations tune themselves. The runtime starts with what
    /// `TESSERA_AUTOTUNE` says (see [`Autotune`]).
    pub fn autotune_mode(&self) -> Autotune {
        self.tuner.state().mode
    }

    /// Turns autotuning on or off for this runtime; choices made so far are kept.
    pub fn set_autotune(&self, mode: Autotune) {
        self.tuner.state().mode = mode;
    }

    /// The cache file choices are read from and written to, if any.
    pub fn autotune_cache(&self) -> Option<PathBuf> {
        self.tuner.state().path.clone()
    }

    /// Uses the cache file at `path` (`None`: none) from now on, instead of the one
    /// `TESSERA_AUTOTUNE_CACHE` or the default named. Choices made so far are kept.
    pub fn set_autotune_cache(&self, path: Option<PathBuf>) {
        let mut state = self.tuner.state();
        state.path = path;
        state.loaded = false;
    }

    /// Every choice made so far, and the first problem with the settings or the cache file, if
    /// any.
    pub fn autotune_report(&self) -> (Vec<TuneChoice>, Option<String>) {
        let state = self.tuner.state();
        let mut choices: Vec<TuneChoice> = state.chosen.values().cloned().collect();
        choices.sort_by_key(|c| c.key.to_string());
        (choices, state.problem.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> Device {
        Device {
            adapter: "NVIDIA H100".into(),
            driver: "NVIDIA 580".into(),
            version: "0.1.0".into(),
        }
    }

    #[test]
    fn lines_round_trip_and_foreign_lines_are_ignored() {
        let key = TuneKey::new("gemm\tforward", 0xfeed, &[1024, 64, 4096]);
        let line = format_line(&device(), &key, 1);
        assert_eq!(line.matches('\t').count(), 6, "{line}");
        assert_eq!(parse_line(&line), Some((device(), key.clone(), 1)));
        let empty = TuneKey::new("scalar", 7, &[]);
        assert_eq!(
            parse_line(&format_line(&device(), &empty, 0)),
            Some((device(), empty, 0))
        );
        for foreign in [
            "# comment",
            "",
            "a\tb",
            "a\tb\tc\td\tnothex\t1\t0",
            "a\tb\tc\td\t1\tx\t0",
        ] {
            assert_eq!(parse_line(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn the_cache_file_keeps_other_devices_and_replaces_the_key() {
        let dir = std::env::temp_dir().join(format!("tessera-tune-{}", std::process::id()));
        let path = dir.join("nested").join("autotune.tsv");
        let other = Device {
            adapter: "llvmpipe".into(),
            ..device()
        };
        let key = TuneKey::new("conv", 1, &[32, 64]);
        store(&path, &other, &key, 0).unwrap();
        store(&path, &device(), &key, 1).unwrap();
        store(&path, &device(), &key, 2).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(
            choices_for(&text, &device()).collect::<Vec<_>>(),
            [(key.clone(), 2)]
        );
        assert_eq!(choices_for(&text, &other).collect::<Vec<_>>(), [(key, 0)]);
        let newer = Device {
            version: "0.2.0".into(),
            ..device()
        };
        assert_eq!(choices_for(&text, &newer).count(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_setting_is_on_or_off_and_anything_else_is_an_error() {
        use wgpu::DeviceType::{Cpu, DiscreteGpu};
        assert_eq!(Autotune::parse("", DiscreteGpu).unwrap(), Autotune::On);
        assert_eq!(Autotune::parse("", Cpu).unwrap(), Autotune::Off);
        assert_eq!(Autotune::parse("ON", Cpu).unwrap(), Autotune::On);
        assert_eq!(Autotune::parse("off", DiscreteGpu).unwrap(), Autotune::Off);
        let error = Autotune::parse("fast", DiscreteGpu)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "reading TESSERA_AUTOTUNE: expected `on` or `off`, found `fast`"
        );
    }

    #[test]
    fn hashes_and_buckets_are_stable() {
        assert_eq!(source_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(source_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(source_hash("fn f() {}"), source_hash("fn g() {}"));
        // Comments do not count; division, and an unclosed block, are handled.
        assert_eq!(without_comments("a / b // c\nd"), "a / b \nd");
        assert_eq!(without_comments("x /* 1 /* 2 */ 3 */ y"), "x  y");
        assert_eq!(without_comments("x /* open"), "x ");
        assert_eq!(without_comments("é // ü"), "é ");
        assert_eq!(source_hash("a // line 1"), source_hash("a // line 2"));
        assert_eq!(
            [0, 1, 3, 64, 65, u32::MAX].map(size_bucket),
            [1, 1, 4, 64, 128, 1 << 31]
        );
    }
}
