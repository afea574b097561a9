//! The fuzz harness of the macro: thousands of modules through `expand::kernels` (the whole
//! macro, as rustc runs it), each on its own thread with rustc's 8 MiB stack and panics caught.
//!
//! Half the cases are modules generated from the documented language ([`generate`]), half
//! are the project's own modules ([`corpus`]: `nn/src/kernels/mod.rs` and its libraries, the tests' and examples'
//! modules) after a few token-level mutations ([`mutate`]). Every case is derived from one
//! `u64` seed, so a failure is reproduced from the seed alone:
//!
//! ```text
//! TESSERA_FUZZ_CASE=0x1234abcd5678ef00 cargo test -p kernel-macros fuzz -- --nocapture
//! ```
//!
//! prints that case's input and what the macro made of it. A run is `TESSERA_FUZZ_CASES`
//! cases (10,000 by default) from `TESSERA_FUZZ_SEED` (a fixed default, so CI is
//! reproducible); docs/guide.md's "Tests" section has the command for long runs.
//!
//! The failures: a panic, an expansion that is not Rust, a case over [`SLOW`], an error
//! message showing a name the user did not write, and a module the macro accepted (so naga
//! validated it) that Tint rejects. Messages saying "this is a bug in tessera" are counted on
//! their own and fail the run only with [`BLAME_IS_FAILURE`]. The summary (cases, accepted,
//! rejected by cause, failures with seeds) is written past the test harness's capture, so it
//! shows in every `cargo test` log.

pub(crate) mod corpus;
mod generate;
mod mutate;
mod rng;
mod run;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proc_macro2::TokenStream;

use rng::Rng;
use run::Verdict;

/// Whether cases nest and chain far past what a person writes (sums of thousands of terms,
/// parentheses and `if`s hundreds deep). A stack overflow aborts the whole test process (its
/// message names the case's thread, `fuzz case 0x..`); the macro bounds its nesting, so this
/// stays on.
const STRESS: bool = true;

/// Cases per run unless `TESSERA_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: u64 = 10_000;

/// The run's seed unless `TESSERA_FUZZ_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x7e55_e4a0_f022_0001;

/// A case slower than this, or than [`SLOW_PER_BYTE`] for each byte of its input if that is
/// longer, is a failure: the macro runs inside every `cargo build`. The bound catches runaway
/// work, not a slow machine or a large module: the whole `nn` module (about 190 KB as tokens)
/// takes 3.4-4.1 s on a 2-core machine while the harness's other cases run beside it, with
/// the macro optimized as the dev profile builds it too (so the bound of a release test run
/// is not much lower), and took 7.9 s with a build running beside the test.
const SLOW: Duration = match cfg!(debug_assertions) {
    true => Duration::from_secs(10),
    false => Duration::from_secs(5),
};

/// The time [`SLOW`] allows a case for each byte of its input, so that a module as large as
/// `nn` has over twice its time (a runaway is quadratic or worse, and takes far longer).
const SLOW_PER_BYTE: Duration = match cfg!(debug_assertions) {
    true => Duration::from_micros(80),
    false => Duration::from_micros(40),
};

/// How long a case of `size` bytes may take (see [`SLOW`]).
fn slow_bound(size: usize) -> Duration {
    let per_byte = SLOW_PER_BYTE.saturating_mul(u32::try_from(size).unwrap_or(u32::MAX));
    SLOW.max(per_byte)
}

/// A case not finished after this is given up on (its thread is left running).
const HUNG: Duration = Duration::from_secs(60);

/// Whether a "this is a bug in tessera" message (outside [`OPEN_GAPS`]) fails the run: the
/// macro must never blame itself for what a user wrote.
const BLAME_IS_FAILURE: bool = true;

/// Known gaps between what the macro accepts and what Tint (or naga's constant folding)
/// accepts, each with the words of the message that identifies it. Findings that match are
/// counted and listed as open, not failures, so that the run catches every other finding and
/// each new kind; remove an entry when its gap is closed (see notes/reliability.md).
const OPEN_GAPS: &[(&str, &str)] = &[];

/// The open gap a message belongs to, if any.
fn open_gap(message: &str) -> Option<&'static str> {
    OPEN_GAPS
        .iter()
        .find(|(words, _)| message.contains(words))
        .map(|(words, _)| *words)
}

/// What one case is.
#[derive(Clone, Copy)]
enum Case {
    /// A project module, unchanged.
    Corpus(usize),
    /// A generated or mutated module, from its seed.
    Random(u64),
}

/// Everything a run found.
#[derive(Default)]
struct Summary {
    cases: usize,
    accepted: usize,
    rejected: usize,
    /// Rejections counted by the first words of their first message.
    causes: BTreeMap<String, usize>,
    /// Cases that must not happen, each with its class, seed and detail.
    failures: Vec<Finding>,
    /// Messages blaming tessera.
    blames: Vec<Finding>,
    slowest: Duration,
    slowest_case: String,
}

/// One failing case.
struct Finding {
    class: &'static str,
    case: String,
    detail: String,
}

/// The macro's share of a run: the corpus, then `cases` random cases, over several threads.
fn run_cases(
    seed: u64,
    cases: u64,
    corpus: &Arc<corpus::Corpus>,
    tint: &Mutex<tessera_tint::Batch>,
) -> Summary {
    let mut all: Vec<Case> = (0..corpus.whole.len()).map(Case::Corpus).collect();
    all.extend((0..cases).map(|i| Case::Random(rng::case_seed(seed, i))));
    let all = Arc::new(all);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let summary = Mutex::new(Summary::default());
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (all, summary) = (Arc::clone(&all), &summary);
            scope.spawn(move || {
                for case in all.iter().skip(worker).step_by(workers) {
                    let label = label(*case, corpus);
                    let ran = run_one(*case, corpus);
                    let mut summary = summary.lock().unwrap_or_else(|p| p.into_inner());
                    record(&mut summary, &label, ran, tint);
                }
            });
        }
    });
    summary.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// How a case is named in reports and Tint's file names.
fn label(case: Case, corpus: &corpus::Corpus) -> String {
    match case {
        Case::Corpus(i) => format!("corpus-{}", corpus.whole[i].name),
        Case::Random(seed) => format!("{}-{seed:#018x}", origin(seed, corpus)),
    }
}

/// `generated`, or `mutated-MODULE` for the module a random case mutates.
fn origin(seed: u64, corpus: &corpus::Corpus) -> String {
    let mut rng = Rng::new(seed);
    match pick(&mut rng, corpus) {
        None => "generated".into(),
        Some(module) => format!("mutated-{}", module.name),
    }
}

/// The module a random case mutates, or `None` for a generated one (the rng's first draws).
fn pick<'c>(rng: &mut Rng, corpus: &'c corpus::Corpus) -> Option<&'c corpus::Module> {
    match rng.below(20) {
        0..=9 => None,
        10 => Some(&corpus.whole[rng.below(corpus.whole.len())]),
        _ => Some(&corpus.singles[rng.below(corpus.singles.len())]),
    }
}

/// The macro's arguments and input for a case.
fn tokens(case: Case, corpus: &corpus::Corpus) -> (TokenStream, TokenStream) {
    let seed = match case {
        Case::Corpus(i) => return corpus.whole[i].tokens(),
        Case::Random(seed) => seed,
    };
    let mut rng = Rng::new(seed);
    match pick(&mut rng, corpus) {
        None => {
            let text = generate::module(&mut rng);
            let input = text
                .parse()
                .unwrap_or_else(|e| panic!("generated a module that does not lex ({e}):\n{text}"));
            (TokenStream::new(), input)
        }
        Some(module) => {
            let (args, input) = module.tokens();
            let count = rng.between(1, 4);
            (args, mutate::mutate(input, &mut rng, count))
        }
    }
}

fn run_one(case: Case, corpus: &Arc<corpus::Corpus>) -> Option<run::Ran> {
    let corpus = Arc::clone(corpus);
    let name = match case {
        Case::Corpus(i) => format!("{}corpus {i}", run::THREAD_PREFIX),
        Case::Random(seed) => format!("{}{seed:#018x}", run::THREAD_PREFIX),
    };
    run::on_thread(name, HUNG, move || tokens(case, &corpus))
}

fn record(
    summary: &mut Summary,
    label: &str,
    ran: Option<run::Ran>,
    tint: &Mutex<tessera_tint::Batch>,
) {
    summary.cases += 1;
    let finding = |class, detail: String| Finding {
        class,
        case: label.to_owned(),
        detail,
    };
    let Some(ran) = ran else {
        summary
            .failures
            .push(finding("hung", format!("not finished after {HUNG:?}")));
        return;
    };
    if ran.elapsed > summary.slowest {
        summary.slowest = ran.elapsed;
        summary.slowest_case = format!("{label}, {} bytes", ran.size);
    }
    let bound = slow_bound(ran.size);
    if ran.elapsed > bound {
        let detail = format!(
            "took {:?} (bound {bound:?} for {} bytes)",
            ran.elapsed, ran.size
        );
        summary.failures.push(finding("slow", detail));
    }
    let input = ran.input.unwrap_or_default();
    match ran.verdict {
        Verdict::Accepted(wgsl) => {
            summary.accepted += 1;
            let mut batch = tint.lock().unwrap_or_else(|p| p.into_inner());
            // Tint does not know wgpu's cooperative-matrix extension.
            let tint_knows = |text: &String| !text.contains("enable wgpu_cooperative_matrix;");
            for (which, text) in wgsl.into_iter().filter(|(_, text)| tint_knows(text)) {
                batch
                    .add(&format!("{label}-{which}"), &text)
                    .expect("the Tint batch is writable");
            }
        }
        Verdict::Rejected(messages) => {
            summary.rejected += 1;
            *summary.causes.entry(cause(&messages[0])).or_default() += 1;
            for message in &messages {
                if message.contains("bug in tessera") {
                    summary
                        .blames
                        .push(finding("blames tessera", message.clone()));
                } else if let Some(name) = internal_name(message, &input) {
                    summary.failures.push(finding(
                        "internal name in message",
                        format!("`{name}` in: {message}"),
                    ));
                }
            }
        }
        Verdict::Panicked(message) => summary.failures.push(finding("panic", message)),
        Verdict::NotRust(error) => summary
            .failures
            .push(finding("expansion is not Rust", error)),
    }
}

/// The first words of a message, with what it quotes (`..`) and numbers blanked, so that
/// rejections for one reason count together.
fn cause(message: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in message.chars() {
        match c {
            '`' if !quoted => (quoted, out) = (true, out + "`_"),
            '`' => (quoted, out) = (false, out + "`"),
            _ if quoted => {}
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N');
                }
            }
            _ => out.push(c),
        }
    }
    out.split_whitespace().take(7).collect::<Vec<_>>().join(" ")
}

/// A name from the macro's insides that a message shows although the input does not hold it.
fn internal_name<'m>(message: &'m str, input: &str) -> Option<&'m str> {
    ["tsr_", "{integer}", "{float}"]
        .into_iter()
        .find(|name| message.contains(name) && !input.contains(name))
        .and_then(|name| message.find(name).map(|at| &message[at..at + name.len()]))
}

fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => text.replace('_', "").parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text} is not a number")))
}

/// The summary's lines, as the CI log shows them.
fn report(summary: &Summary, seed: u64, elapsed: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "fuzz: {} cases (seed {seed:#018x}) in {elapsed:.1?}: {} accepted, {} rejected, {} failures, {} messages blaming tessera; slowest {:.1?} ({})",
        summary.cases,
        summary.accepted,
        summary.rejected,
        summary.failures.len(),
        summary.blames.len(),
        summary.slowest,
        summary.slowest_case,
    );
    let mut causes: Vec<_> = summary.causes.iter().collect();
    causes.sort_by(|a, b| b.1.cmp(a.1));
    for (cause, count) in causes.iter().take(25) {
        let _ = writeln!(out, "fuzz:   rejected {count:>6} x {cause}");
    }
    for f in &summary.failures {
        let _ = writeln!(
            out,
            "fuzz: {}: {}: {}",
            f.class.to_uppercase(),
            f.case,
            f.detail
        );
    }
    for (cause, (count, example)) in grouped(&summary.blames, |m| {
        let inner = naga_cause(m);
        open_gap(m).map_or(inner, |gap| format!("open gap: {gap}"))
    }) {
        let _ = writeln!(
            out,
            "fuzz: BLAMES TESSERA {count:>5} x ({cause}), e.g. {}: {}",
            example.case, example.detail
        );
    }
    out
}

/// Findings counted by `cause`, each with its first example, most frequent first.
fn grouped(
    findings: &[Finding],
    cause: impl Fn(&str) -> String,
) -> Vec<(String, (usize, &Finding))> {
    let mut groups: BTreeMap<String, (usize, &Finding)> = BTreeMap::new();
    for f in findings {
        groups.entry(cause(&f.detail)).or_insert((0, f)).0 += 1;
    }
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_by_key(|(_, (count, _))| std::cmp::Reverse(*count));
    groups
}

/// naga's words inside a "tessera generated WGSL that does not parse (..); this is a bug"
/// message, numbers and quoted text blanked.
fn naga_cause(message: &str) -> String {
    let inner = message
        .split_once("does not parse (")
        .and_then(|(_, rest)| rest.rsplit_once(");"))
        .map_or(message, |(inner, _)| inner);
    cause(inner)
}

/// Tint's report, its errors grouped by message (numbers and quoted text blanked), each
/// with its first file; a reader sees every kind of error without thousands of lines.
fn tint_summary(report: &str) -> String {
    let errors: Vec<Finding> = report
        .lines()
        .filter_map(|line| line.split_once(": error: "))
        .map(|(file, message)| Finding {
            class: "tint",
            case: file.to_owned(),
            detail: message.to_owned(),
        })
        .collect();
    let mut out = String::new();
    for (cause, (count, example)) in grouped(&errors, |m| cause(&m.replace('\'', "`"))) {
        let _ = writeln!(
            out,
            "fuzz: TINT REJECTS {count:>5} x ({cause}), e.g. {}: {}",
            example.case, example.detail
        );
    }
    out
}

/// A run: every corpus module unchanged, then `TESSERA_FUZZ_CASES` random cases; every
/// accepted module then goes through Tint in one batch.
#[test]
fn fuzz_the_macro() {
    if let Some(case) = env_u64("TESSERA_FUZZ_CASE") {
        return reproduce(case);
    }
    let seed = env_u64("TESSERA_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let cases = env_u64("TESSERA_FUZZ_CASES").unwrap_or(DEFAULT_CASES);
    let corpus = Arc::new(corpus::corpus());
    let tint =
        Mutex::new(tessera_tint::Batch::in_target("fuzz").expect("a directory for the Tint batch"));
    let start = Instant::now();
    let summary = run_cases(seed, cases, &corpus, &tint);
    tessera_tint::note(&report(&summary, seed, start.elapsed()));
    let tint = tint.into_inner().unwrap_or_else(|p| p.into_inner());
    let tint_start = Instant::now();
    let verdict = tint.validate();
    let mut tint_new = 0;
    match &verdict {
        Ok(v) => tessera_tint::note(&format!(
            "fuzz: {v} ({} distinct modules, {:.1?})",
            tint.len(),
            tint_start.elapsed()
        )),
        Err(errors) => {
            tessera_tint::note(&format!(
                "fuzz: Tint rejected modules the macro accepted (the file names hold the case):\n{}",
                tint_summary(errors)
            ));
            tint_new = errors
                .lines()
                .filter_map(|line| line.split_once(": error: "))
                .filter(|(_, message)| open_gap(message).is_none())
                .count();
        }
    }
    let blames_new = summary
        .blames
        .iter()
        .filter(|b| open_gap(&b.detail).is_none())
        .count();
    let mut failed = Vec::new();
    if !summary.failures.is_empty() {
        failed.push(format!("{} failing cases", summary.failures.len()));
    }
    if BLAME_IS_FAILURE && blames_new > 0 {
        failed.push(format!(
            "{blames_new} messages blaming tessera outside the open gaps"
        ));
    }
    if tint_new > 0 || matches!(verdict, Err(ref e) if !e.contains(": error: ")) {
        failed.push(format!("{tint_new} Tint errors outside the open gaps"));
    }
    if !OPEN_GAPS.is_empty() {
        tessera_tint::note(&format!(
            "fuzz: open gaps (counted, not failures): {}",
            OPEN_GAPS
                .iter()
                .map(|(words, why)| format!("\n  - \"{words}\": {why}"))
                .collect::<String>()
        ));
    }
    assert!(
        failed.is_empty(),
        "fuzz: {} (listed above; reproduce one with TESSERA_FUZZ_CASE=<seed>)",
        failed.join(", ")
    );
}

/// Runs the case `seed` alone and prints its input and verdict.
fn reproduce(seed: u64) {
    let corpus = Arc::new(corpus::corpus());
    let case = Case::Random(seed);
    let (_, input) = tokens(case, &corpus);
    tessera_tint::note(&format!(
        "fuzz: case {seed:#018x} ({}):\n{input}",
        origin(seed, &corpus)
    ));
    let mut summary = Summary::default();
    let tint = Mutex::new(
        tessera_tint::Batch::in_target("fuzz-case").expect("a directory for the Tint batch"),
    );
    record(
        &mut summary,
        &label(case, &corpus),
        run_one(case, &corpus),
        &tint,
    );
    tessera_tint::note(&report(&summary, seed, Duration::ZERO));
    let tint = tint.into_inner().unwrap_or_else(|p| p.into_inner());
    tessera_tint::note(&format!(
        "{:?} (WGSL in {})",
        tint.validate(),
        tint.dir().display()
    ));
}
