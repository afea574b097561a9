//! The instrumentation: a WGSL module in, the same module out with every access to workgroup
//! memory and to storage buffers checked, for one entry point.
//!
//! Done on naga's IR, so it works on any WGSL, tessera's or hand-written. The checks are WGSL
//! functions of a prelude inserted before the module's own declarations ([`prelude`]), which
//! the pass calls at each access. Every shadow lives in the sanitizer's own buffer (group 1),
//! none in workgroup memory:
//!
//! - an element of a workgroup array has six words in its workgroup's region: the last writer
//!   and its site, the highest and the lowest reader (by local index) and their sites. A read
//!   of an element another invocation wrote, a write of one another invocation wrote or read,
//!   is a race; an index past the array is out of bounds. Each word carries the number of
//!   barriers its invocation had passed (every invocation passes the same ones), counted
//!   after every `workgroupBarrier()` and before every `workgroupUniformLoad`: a word of an
//!   earlier count is as good as empty, so nothing needs clearing (clearing would take two
//!   more barriers each time, which lavapipe compiles at a cost that grows with their
//!   square). Readers count `storageBarrier()` too: it orders a later write after a read (an
//!   execution dependency), though not a read after a write of workgroup memory.
//! - a storage buffer gets a bounds check against `arrayLength`; one the module writes (not
//!   through atomics) also gets two words per element: the workgroup that last wrote it in
//!   this dispatch and where. A write of an element another workgroup wrote is a race; so is
//!   a read, unless the reading workgroup has updated a storage buffer atomically before (the
//!   hand-over of split reductions: write a part, count arrivals atomically, the last to
//!   arrive reads every part), whose ordering the sanitizer does not judge.
//!
//! Each invocation keeps its first hazard, and how many it met, in private memory, and the
//! first invocation to return with one writes it to the head of its dispatch's part
//! ([`HEADER_WORDS`]); the runtime reads it back after the submission.
//!
//! Compiling the checks is the cost (lavapipe turns each atomic into code per lane, and
//! compiles a kernel with barriers as a coroutine whose cost grows with its code), so an
//! access is checked one of two ways ([`Plan`]):
//!
//! - where it is made, with the array's constants (`_here_w0`, then `_here_31`), in code
//!   with few accesses between barriers;
//! - logged in private memory (an array store per access) where many accesses share a
//!   region between barriers, loop turns and calls (the unrolled loops of tessera's
//!   kernels), and the log applied to the shadows, in a loop, before the next barrier, at
//!   each loop turn and before the entry point returns: the accesses between two barriers
//!   are unordered anyway, and one copy of the checks serves them all. An application
//!   checks only the kinds of access its log may hold (`_apply_N`, [`kinds`]).
//!
//! nn's attention forward compiled in 67 s under the first version (a check with branches
//! at every access), 31 s under the second (branch-free checks at every access), 7 s under
//! this one (1.6 s without the sanitizer).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::AccessKind;
use naga::{
    AddressSpace, ArraySize, Barrier, BinaryOperator, Binding, Block, BuiltIn, Expression,
    Function, FunctionArgument, Handle, Literal, Module, ScalarKind, Span, Statement,
    StorageAccess, Type, TypeInner,
};

/// Words at the head of each dispatch's part of the sanitizer buffer: the report.
pub(crate) const HEADER_WORDS: u64 = 16;

/// Bits of a workgroup shadow word that hold the invocation's local index plus one; the
/// barrier count (the epoch) is above.
const INVOCATION_BITS: u32 = 11;
const INVOCATION_MASK: u32 = (1 << INVOCATION_BITS) - 1;
const EPOCH_MASK: u32 = u32::MAX >> INVOCATION_BITS;

/// The prefix of every name the prelude declares.
const PREFIX: &str = "tessera_sanitizer";

/// What a report's `kind` word says.
pub(crate) mod kind {
    pub const WORKGROUP_RACE: u32 = 1;
    pub const WORKGROUP_BOUNDS: u32 = 2;
    pub const STORAGE_RACE: u32 = 3;
    pub const STORAGE_BOUNDS: u32 = 4;
}

/// One checked access: where it is and what it does.
#[derive(Clone, Debug)]
pub(crate) struct Site {
    pub touch: AccessKind,
    /// The line in the WGSL text (1-based).
    pub wgsl_line: u32,
    /// The Rust line tessera's generated WGSL names in a `// line N` comment on that line.
    pub rust_line: Option<u32>,
}

/// A workgroup array (or value) the checks track.
#[derive(Clone, Debug)]
pub(crate) struct WorkgroupArray {
    pub name: String,
    /// Elements (array levels flattened; a vector or struct is one element).
    pub len: u32,
    /// Where the module writes or reads single components of its vector elements (different
    /// invocations may own different components of one vector): the vector's size, and each
    /// component has its shadow. Otherwise 1.
    pub lanes: u32,
}

/// A storage buffer the checks track: a runtime-sized array at group 0.
#[derive(Clone, Debug)]
pub(crate) struct StorageArray {
    pub name: String,
    pub binding: u32,
    /// Bytes from one element to the next.
    pub stride: u32,
    /// Whether writes of its elements are tracked (the module writes it, not atomically).
    pub shadowed: bool,
}

/// A source parsed with the prelude, once for all its entry points.
pub(crate) struct Prepared {
    module: Module,
    /// The source with the prelude inserted after its directives (spans point into it).
    text: String,
    /// The prelude's lines: a site's line in the source is its line in `text` less these.
    prelude_lines: u32,
    /// Per WGSL line (0-based), the Rust line of its `// line N` comment.
    rust_lines: Vec<Option<u32>>,
    workgroup: Vec<(String, WorkgroupArray)>,
    storage: Vec<(String, StorageArray)>,
}

/// One entry point's instrumented module and what its reports refer to.
pub(crate) struct Instrumented {
    pub module: Module,
    pub sites: Vec<Site>,
    pub workgroup: Vec<WorkgroupArray>,
    pub storage: Vec<StorageArray>,
    /// The shadowed storage bindings the entry point uses, in binding order: the host sizes
    /// each dispatch's part of the sanitizer buffer from their lengths, in this order.
    pub shadowed: Vec<(u32, u32)>,
    /// Words of each workgroup's region, after the storage shadows.
    pub region: u32,
}

/// Parses `source`, finds its workgroup arrays and storage buffers, and parses it again with
/// the prelude of checks for them.
pub(crate) fn prepare(source: &str) -> Result<Prepared, String> {
    if source.contains(PREFIX) {
        return Err(format!(
            "the module declares a name starting with `{PREFIX}`, which the sanitizer's checks use"
        ));
    }
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let rust_lines = rust_lines(source);
    let mut workgroup = Vec::new();
    let mut storage = Vec::new();
    let written = written_globals(&module);
    let by_component = by_component(&module);
    for (handle, global) in module.global_variables.iter() {
        let Some(wgsl_name) = global.name.clone() else {
            continue;
        };
        let span = module.global_variables.get_span(handle);
        let name = rust_name(source, span).unwrap_or_else(|| wgsl_name.clone());
        match global.space {
            AddressSpace::WorkGroup => {
                let (len, element) = flat_len(&module, global.ty);
                if !is_atomic(&module, element) {
                    let lanes = by_component.get(&handle).copied().unwrap_or(1);
                    workgroup.push((wgsl_name, WorkgroupArray { name, len, lanes }));
                }
            }
            AddressSpace::Storage { access } => {
                let (
                    Some(binding),
                    TypeInner::Array {
                        base,
                        size: ArraySize::Dynamic,
                        stride,
                    },
                ) = (&global.binding, &module.types[global.ty].inner)
                else {
                    continue;
                };
                if binding.group != 0 {
                    continue;
                }
                let atomic = is_atomic(&module, *base);
                let shadowed =
                    access.contains(StorageAccess::STORE) && !atomic && written.contains(&handle);
                storage.push((
                    wgsl_name,
                    StorageArray {
                        name,
                        binding: binding.binding,
                        stride: *stride,
                        shadowed,
                    },
                ));
            }
            _ => {}
        }
    }
    if workgroup.len().max(storage.len()) >= 1 << ARRAY_BITS {
        return Err(format!(
            "the module declares {} workgroup arrays and {} storage buffers, more than the \
             sanitizer can number ({} of each)",
            workgroup.len(),
            storage.len(),
            (1 << ARRAY_BITS) - 1
        ));
    }
    // Before the module's own declarations (after its directives): naga's validator wants
    // a function's callees before it in the module, and the frontend keeps source order.
    let at = after_directives(source);
    let prelude = prelude(&workgroup, &storage);
    let text = format!("{}{prelude}{}", &source[..at], &source[at..]);
    let module = naga::front::wgsl::parse_str(&text).map_err(|e| {
        format!(
            "the sanitizer's checks do not compile (a bug of tessera): {}",
            e.emit_to_string(&text)
        )
    })?;
    Ok(Prepared {
        module,
        text,
        prelude_lines: prelude.matches('\n').count() as u32,
        rust_lines,
        workgroup,
        storage,
    })
}

/// Where a module's declarations start: after its directives (`enable f16;`, ...), comments
/// and blank lines.
fn after_directives(source: &str) -> usize {
    let mut at = 0;
    for line in source.split_inclusive('\n') {
        let code = line.trim();
        let directive = ["enable ", "requires ", "diagnostic"]
            .iter()
            .any(|d| code.starts_with(d));
        if !(code.is_empty() || code.starts_with("//") || directive) {
            break;
        }
        at += line.len();
    }
    at
}

/// The Rust name tessera's WGSL gives a global it renamed, in a comment on its declaration's
/// line: "var<workgroup> kernel_tile_2: array<f32, 64>; // `tile` // line 12".
fn rust_name(source: &str, span: Span) -> Option<String> {
    if !span.is_defined() {
        return None;
    }
    let start = span.to_range()?.start;
    let line = source.get(start..)?.lines().next()?;
    let (_, comment) = line.split_once("// `")?;
    let (name, _) = comment.split_once('`')?;
    Some(name.to_owned())
}

/// Per WGSL line, the number of its trailing `// line N` comment.
fn rust_lines(source: &str) -> Vec<Option<u32>> {
    source
        .lines()
        .map(|line| {
            let (_, comment) = line.rsplit_once("// line ")?;
            comment.trim().parse().ok()
        })
        .collect()
}

/// The globals some function or entry point stores to, not through atomics.
fn written_globals(module: &Module) -> BTreeSet<Handle<naga::GlobalVariable>> {
    let mut written = BTreeSet::new();
    let functions = module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|e| &e.function));
    for function in functions {
        visit(&function.body, &mut |statement| {
            if let Statement::Store { pointer, .. } = statement {
                if let Some((global, _)) = chain(function, *pointer) {
                    written.insert(global);
                }
            }
        });
    }
    written
}

/// The workgroup arrays of vectors some function reaches a single component of, with the
/// vectors' sizes.
fn by_component(module: &Module) -> HashMap<Handle<naga::GlobalVariable>, u32> {
    let mut found = HashMap::new();
    let functions = module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|e| &e.function));
    for function in functions {
        for (handle, expression) in function.expressions.iter() {
            if !matches!(
                expression,
                Expression::Access { .. } | Expression::AccessIndex { .. }
            ) {
                continue;
            }
            let Some((global, steps)) = chain(function, handle) else {
                continue;
            };
            let variable = &module.global_variables[global];
            if variable.space != AddressSpace::WorkGroup {
                continue;
            }
            let (dims, element) = levels(module, variable.ty);
            if let TypeInner::Vector { size, .. } = module.types[element].inner {
                if steps.len() > dims.len() {
                    found.insert(global, size as u32);
                }
            }
        }
    }
    found
}

/// Calls `f` on every statement of `block`, nested ones included.
fn visit(block: &Block, f: &mut impl FnMut(&Statement)) {
    for statement in block.iter() {
        f(statement);
        match statement {
            Statement::Block(inner) => visit(inner, f),
            Statement::If { accept, reject, .. } => {
                visit(accept, f);
                visit(reject, f);
            }
            Statement::Switch { cases, .. } => cases.iter().for_each(|c| visit(&c.body, f)),
            Statement::Loop {
                body, continuing, ..
            } => {
                visit(body, f);
                visit(continuing, f);
            }
            _ => {}
        }
    }
}

/// One step of an access chain from a global.
#[derive(Clone, Copy)]
enum Step {
    Dynamic(Handle<Expression>),
    Constant(u32),
}

/// The global a pointer expression starts from and the steps from it, outermost first.
fn chain(
    function: &Function,
    mut pointer: Handle<Expression>,
) -> Option<(Handle<naga::GlobalVariable>, Vec<Step>)> {
    let mut steps = Vec::new();
    loop {
        match function.expressions[pointer] {
            Expression::GlobalVariable(global) => {
                steps.reverse();
                return Some((global, steps));
            }
            Expression::Access { base, index } => {
                steps.push(Step::Dynamic(index));
                pointer = base;
            }
            Expression::AccessIndex { base, index } => {
                steps.push(Step::Constant(index));
                pointer = base;
            }
            _ => return None,
        }
    }
}

/// Elements of a type with its array levels flattened, and the element type.
fn flat_len(module: &Module, ty: Handle<Type>) -> (u32, Handle<Type>) {
    let (dims, element) = levels(module, ty);
    let len = dims.iter().fold(1u32, |len, &n| len.saturating_mul(n));
    (len, element)
}

fn is_atomic(module: &Module, ty: Handle<Type>) -> bool {
    matches!(module.types[ty].inner, TypeInner::Atomic(_))
}

/// The most words one storage buffer's shadow may take (two per element): a larger buffer is
/// checked for bounds only.
pub(crate) const STORAGE_SHADOW_LIMIT: u64 = 1 << 21;

/// The most words the workgroups' regions of one dispatch may take together: the workgroups
/// past that many regions are checked for bounds only.
pub(crate) const REGIONS_LIMIT: u64 = 1 << 23;

/// A base that says "not tracked".
const UNTRACKED: u32 = u32::MAX;

/// Bits of a reader's site word that hold the site; the reader is above.
const SITE_BITS: u32 = 32 - INVOCATION_BITS;

/// Words of a workgroup array element's shadow: the last writer and its site, the highest
/// reader and (by the same maximum, among all barriers' readers) its site, the lowest reader
/// and its site.
const SHADOW_WORDS: u32 = 6;

/// Entries of an invocation's log of accesses: the pass applies the log before it could
/// hold more (see [`Pass`]).
const LOG_LEN: u32 = 64;

/// How a log entry's code word is made: the array's number in its kind (workgroup arrays and
/// storage buffers counted apart) in the low bits, then what the access does, then the lanes
/// of the array's shadows less one, then the site.
const ARRAY_BITS: u32 = 12;
const WHAT_BITS: u32 = 3;
const LANE_BITS: u32 = 2;
const SITE_SHIFT: u32 = ARRAY_BITS + WHAT_BITS + LANE_BITS;

/// What a logged access does.
mod what {
    /// Workgroup memory: of one element (or component), or of every component of a vector.
    pub const READ: u32 = 0;
    pub const WRITE: u32 = 1;
    pub const READ_ALL: u32 = 2;
    pub const WRITE_ALL: u32 = 3;
    /// A storage buffer: a load, a store, an atomic.
    pub const LOAD: u32 = 4;
    pub const STORE: u32 = 5;
    pub const ATOMIC: u32 = 6;
}

/// A log entry's code word.
fn code(array: u32, what: u32, lanes: u32, site: u32) -> u32 {
    (site << SITE_SHIFT) | ((lanes - 1) << (ARRAY_BITS + WHAT_BITS)) | (what << ARRAY_BITS) | array
}

/// The checks' WGSL: the sanitizer's binding, the invocation's identity, its log of accesses,
/// the checks, and per tracked array the functions placing its shadows and checking an
/// access's bounds where it is made (named by position: `_place_w3` and `_here_w3` for the
/// fourth workgroup array).
///
/// All shadows live in the sanitizer's buffer, none in workgroup memory (which kernels fill:
/// lavapipe offers 32 KiB). A dispatch's part of it is: the report ([`HEADER_WORDS`]), two
/// words per element of each shadowed storage buffer, then a region per workgroup of the
/// grid: a word set once the workgroup has updated a storage buffer atomically, then
/// [`SHADOW_WORDS`] per element of each workgroup array.
///
/// An access is checked where it is made or logged, as [`Plan`] decides; [`apply`] writes the
/// checks' entry points for each set of kinds.
fn prelude(workgroup: &[(String, WorkgroupArray)], storage: &[(String, StorageArray)]) -> String {
    let p = PREFIX;
    let (bits, mask, epochs) = (INVOCATION_BITS, INVOCATION_MASK, EPOCH_MASK);
    let w = SHADOW_WORDS;
    let (none, regions, storage_limit) = (UNTRACKED, REGIONS_LIMIT, STORAGE_SHADOW_LIMIT);
    let (site_bits, site_mask) = (SITE_BITS, (1u32 << SITE_BITS) - 1);
    let log_len = LOG_LEN;
    let (nw, ns) = (workgroup.len().max(1), storage.len().max(1));
    let table = |values: Vec<u32>| {
        let values: Vec<String> = values.iter().map(|v| format!("{v}u")).collect();
        let values = if values.is_empty() {
            "0u".to_owned()
        } else {
            values.join(", ")
        };
        format!("array<u32, {}>({values})", values.split(", ").count())
    };
    let w_len = table(workgroup.iter().map(|(_, a)| a.len).collect());
    let s_base = table(vec![none; storage.len()]);
    let (race, outside) = (kind::WORKGROUP_RACE, kind::WORKGROUP_BOUNDS);
    let (storage_race, storage_outside) = (kind::STORAGE_RACE, kind::STORAGE_BOUNDS);
    // The report's spare words: the shadow of accesses not tracked.
    let dummy = HEADER_WORDS - u64::from(SHADOW_WORDS);
    let mut s = format!(
        "
// The sanitizer's checks (added by tessera's runtime).
@group(1) @binding(0) var<storage, read_write> {p}: array<atomic<u32>>;
var<private> {p}_local: u32;
var<private> {p}_group: u32;
// Where the workgroup's region starts.
var<private> {p}_region: u32;
// How many workgroup barriers the invocation has passed: every invocation of a workgroup
// passes the same ones, so a write tagged with an older count was ordered by a barrier.
var<private> {p}_epoch: u32;
// How many control barriers (`storageBarrier()` too) it has passed: a read tagged with an
// older count is done before a later write of another invocation (a write after a read
// needs the barrier's execution order only, not its memory order).
var<private> {p}_steps: u32;

fn {p}_enter(local: u32, group: vec3<u32>, groups: vec3<u32>) {{
    {p}_local = local;
    {p}_group = group.x + groups.x * (group.y + groups.y * group.z);
}}

fn {p}_regions(start: u32, size: u32) -> u32 {{
    if {p}_group >= max({regions}u / size, 1u) {{
        {p}_region = {none}u;
        return {none}u;
    }}
    {p}_region = start + {p}_group * size;
    return {p}_region + 1u;
}}

fn {p}_barrier() {{
    {p}_epoch += 1u;
    {p}_steps += 1u;
}}

fn {p}_storage_barrier() {{
    {p}_steps += 1u;
}}

// Whether a writer's shadow word was written since the last workgroup barrier.
fn {p}_current(tag: u32) -> bool {{
    return tag != 0u && (tag >> {bits}u) == ({p}_epoch & {epochs}u);
}}

// Whether a reader's shadow word was written since the last control barrier.
fn {p}_current_read(tag: u32) -> bool {{
    return tag != 0u && (tag >> {bits}u) == ({p}_steps & {epochs}u);
}}

// The invocation's first hazard and how many it met, kept in private memory until the
// entry point returns.
var<private> {p}_found: u32;
var<private> {p}_first: vec4<u32>;
var<private> {p}_first_more: vec2<u32>;

fn {p}_report(hazard: bool, kind: u32, site: u32, other_site: u32, element: u32, other: u32, len: u32, subject: u32) {{
    let first = hazard && {p}_found == 0u;
    {p}_first = select({p}_first, vec4(kind | (subject << 8u), site, other_site, element), first);
    {p}_first_more = select({p}_first_more, vec2(other, len), first);
    {p}_found += u32(hazard);
}}

// The accesses since the log was last applied: a code (array, what, lanes, site) and the
// element.
var<private> {p}_log_code: array<u32, {log_len}>;
var<private> {p}_log_element: array<u32, {log_len}>;
var<private> {p}_logged: u32;

fn {p}_log(code: u32, element: u32) {{
    {p}_log_code[{p}_logged] = code;
    {p}_log_element[{p}_logged] = element;
    {p}_logged += 1u;
}}

// Per array, for the log's checks: where its shadows start (as `_w_base0`, ...), its length
// (in vectors, for a workgroup array).
var<private> {p}_w_base: array<u32, {nw}>;
var<private> {p}_w_len: array<u32, {nw}> = {w_len};
var<private> {p}_s_base: array<u32, {ns}> = {s_base};
var<private> {p}_s_len: array<u32, {ns}>;

// A read of the element `vector` of the workgroup array `a`, whose shadow is at `at` (the
// dummy shadow in the report's spare words where it is not tracked, which reports no race).
fn {p}_workgroup_read(a: u32, vector: u32, site: u32, at: u32) {{
    let tracked = at != {dummy}u;
    let me = {p}_local + 1u;
    let writer = atomicLoad(&{p}[at]);
    let racy = tracked && {p}_current(writer) && (writer & {mask}u) != me;
    let writer_site = atomicLoad(&{p}[at + 1u]);
    {p}_report(racy, {race}u, site, writer_site + 1u, vector, (writer & {mask}u) - 1u, 0u, a);
    let epoch = {p}_steps << {bits}u;
    atomicMax(&{p}[at + 2u], epoch | me);
    atomicMax(&{p}[at + 3u], (me << {site_bits}u) | site);
    atomicMax(&{p}[at + 4u], epoch | ({mask}u - {p}_local));
    atomicMax(&{p}[at + 5u], (({mask}u - {p}_local) << {site_bits}u) | site);
}}

fn {p}_workgroup_write(a: u32, vector: u32, site: u32, at: u32) {{
    let tracked = at != {dummy}u;
    let me = {p}_local + 1u;
    let writer = atomicExchange(&{p}[at], ({p}_epoch << {bits}u) | me);
    let writer_site = atomicExchange(&{p}[at + 1u], site);
    let overwrites = tracked && {p}_current(writer) && (writer & {mask}u) != me;
    {p}_report(overwrites, {race}u, site, writer_site + 1u, vector, (writer & {mask}u) - 1u, 0u, a);
    // A reader's site is known where its site word is the same reader's.
    let high = atomicLoad(&{p}[at + 2u]);
    let high_site = atomicLoad(&{p}[at + 3u]);
    let high_reader = high & {mask}u;
    let after_high = tracked && !overwrites && {p}_current_read(high) && high_reader != me;
    let high_line = select(0u, (high_site & {site_mask}u) + 1u, high_site >> {site_bits}u == high_reader);
    {p}_report(after_high, {race}u, site, high_line, vector, high_reader - 1u, 0u, a);
    let low = atomicLoad(&{p}[at + 4u]);
    let low_site = atomicLoad(&{p}[at + 5u]);
    let low_reader = low & {mask}u;
    let after_low = tracked && !overwrites && !after_high && {p}_current_read(low)
        && {mask}u - low_reader != {p}_local;
    let low_line = select(0u, (low_site & {site_mask}u) + 1u, low_site >> {site_bits}u == low_reader);
    {p}_report(after_low, {race}u, site, low_line, vector, {mask}u - low_reader, 0u, a);
}}

// The word of the workgroup's region that says it has updated a storage buffer atomically.
fn {p}_synchronized() -> u32 {{
    return select({dummy}u, {p}_region, {p}_region != {none}u);
}}

// A load of `index` of the storage buffer `b`, whose shadow is at `at`.
fn {p}_storage_load(b: u32, index: u32, site: u32, at: u32) {{
    // A workgroup past the tracked ones may have synchronized: left alone.
    let tracked = at != {dummy}u && {p}_region != {none}u;
    let writer = atomicLoad(&{p}[at]);
    let other_site = atomicLoad(&{p}[at + 1u]);
    let unsynchronized = atomicLoad(&{p}[{p}_synchronized()]) == 0u;
    let racy = tracked && writer != 0u && writer != {p}_group + 1u && unsynchronized;
    {p}_report(racy, {storage_race}u, site, other_site, index, writer - 1u, 0u, b);
}}

fn {p}_storage_store(b: u32, index: u32, site: u32, at: u32) {{
    let tracked = at != {dummy}u;
    let writer = atomicExchange(&{p}[at], {p}_group + 1u);
    let other_site = atomicExchange(&{p}[at + 1u], site + 1u);
    let racy = tracked && writer != 0u && writer != {p}_group + 1u;
    {p}_report(racy, {storage_race}u, site, other_site, index, writer - 1u, 0u, b);
}}

fn {p}_storage_atomic() {{
    atomicStore(&{p}[{p}_synchronized()], 1u);
}}

// Before the entry point returns (after the log is applied): the first invocation to
// report writes its hazard.
fn {p}_flush() {{
    if {p}_found == 0u {{
        return;
    }}
    if atomicAdd(&{p}[0], {p}_found) == 0u {{
        atomicStore(&{p}[1], {p}_first.x & 255u);
        atomicStore(&{p}[2], {p}_first.y);
        atomicStore(&{p}[3], {p}_first.z);
        atomicStore(&{p}[4], {p}_first.w);
        atomicStore(&{p}[5], {p}_local);
        atomicStore(&{p}[6], {p}_group);
        atomicStore(&{p}[7], {p}_first_more.x);
        atomicStore(&{p}[8], {p}_first_more.y);
        atomicStore(&{p}[9], {p}_first.x >> 8u);
    }}
}}
"
    );
    for kinds in 1..=kinds::ALL {
        s += &apply(kinds);
    }
    for (k, (_, array)) in workgroup.iter().enumerate() {
        let (n, lanes) = (array.len, array.lanes);
        let words = u64::from(w) * u64::from(n) * u64::from(lanes);
        let _ = write!(
            s,
            "
var<private> {p}_w_base{k}: u32;

fn {p}_place_w{k}(base: u32) -> u32 {{
    {p}_w_base{k} = base;
    {p}_w_base[{k}] = base;
    if base == {none}u {{
        return base;
    }}
    return base + {words}u;
}}

// Where the shadow of `element` is (of its first component, for a whole vector: a component
// where the array has shadows per component and `whole` is false), for an access checked
// where it is made; reports it there if it is out of bounds.
fn {p}_here_w{k}(element: u32, site: u32, whole: bool) -> u32 {{
    let outside = element >= select({n}u * {lanes}u, {n}u, whole);
    let vector = select(element / {lanes}u, element, whole);
    {p}_report(outside, {outside}u, site, 0u, vector, 0u, {n}u, {k}u);
    let first = select(element, element * {lanes}u, whole);
    let tracked = !outside && {p}_w_base{k} != {none}u;
    return select({dummy}u, {p}_w_base{k} + {w}u * first, tracked);
}}
"
        );
    }
    for (g, (name, array)) in storage.iter().enumerate() {
        // Every buffer the entry point uses is measured; a shadowed one also gets words.
        let shadow = if array.shadowed {
            format!(
                "if {p}_s_len{g} > {storage_limit}u / 2u {{
        return base;
    }}
    {p}_s_base{g} = base;
    {p}_s_base[{g}] = base;
    return base + 2u * {p}_s_len{g};"
            )
        } else {
            "return base;".to_owned()
        };
        let _ = write!(
            s,
            "
var<private> {p}_s_base{g}: u32 = {none}u;
var<private> {p}_s_len{g}: u32;

fn {p}_place_s{g}(base: u32) -> u32 {{
    {p}_s_len{g} = arrayLength(&{name});
    {p}_s_len[{g}] = {p}_s_len{g};
    {shadow}
}}

// Where the shadow of `index` is (the dummy one where its writes are not tracked), for an
// access checked where it is made; reports it there if it is out of bounds.
fn {p}_here_s{g}(index: u32, site: u32) -> u32 {{
    let outside = index >= {p}_s_len{g};
    {p}_report(outside, {storage_outside}u, site, 0u, index, 0u, {p}_s_len{g}, {g}u);
    return select({dummy}u, {p}_s_base{g} + 2u * index, !outside && {p}_s_base{g} != {none}u);
}}
"
        );
    }
    s
}

/// The kinds of access a log may hold, as bits of a set: an application of the log checks only
/// the kinds its entries may be (`_apply_N` for the set `N`), since each check is code per
/// lane of lavapipe's.
mod kinds {
    pub const WORKGROUP_READ: u32 = 1;
    pub const WORKGROUP_WRITE: u32 = 2;
    pub const LOAD: u32 = 4;
    pub const STORE: u32 = 8;
    pub const ATOMIC: u32 = 16;
    pub const ALL: u32 = 31;
}

/// The kind of a logged access.
fn kind_of(what: u32) -> u32 {
    match what {
        what::READ | what::READ_ALL => kinds::WORKGROUP_READ,
        what::WRITE | what::WRITE_ALL => kinds::WORKGROUP_WRITE,
        what::LOAD => kinds::LOAD,
        what::STORE => kinds::STORE,
        _ => kinds::ATOMIC,
    }
}

/// The functions checking one access of the kinds of the set `kinds`, where it is made
/// (`_here_31`, of every kind, after the array's `_here` function checked its bounds) or from
/// the log (`_check_N`), and applying a log whose entries are of those kinds (`_apply_N`).
fn apply(kinds: u32) -> String {
    let p = PREFIX;
    let (array_mask, what_mask, lane_mask) = (
        (1u32 << ARRAY_BITS) - 1,
        (1u32 << WHAT_BITS) - 1,
        (1u32 << LANE_BITS) - 1,
    );
    let (what_shift, lane_shift, site_shift) = (ARRAY_BITS, ARRAY_BITS + WHAT_BITS, SITE_SHIFT);
    let (read_all, load, w) = (what::READ_ALL, what::LOAD, SHADOW_WORDS);
    let (none, dummy) = (UNTRACKED, HEADER_WORDS - u64::from(SHADOW_WORDS));
    let (workgroup_outside, storage_outside) = (kind::WORKGROUP_BOUNDS, kind::STORAGE_BOUNDS);
    let has = |kind: u32| kinds & kind != 0;
    let workgroup = match (has(kinds::WORKGROUP_READ), has(kinds::WORKGROUP_WRITE)) {
        (true, true) => Some(format!(
            "if (what & 1u) == 1u {{
                    {p}_workgroup_write(a, vector, site, at);
                }} else {{
                    {p}_workgroup_read(a, vector, site, at);
                }}"
        )),
        (true, false) => Some(format!("{p}_workgroup_read(a, vector, site, at);")),
        (false, true) => Some(format!("{p}_workgroup_write(a, vector, site, at);")),
        (false, false) => None,
    }
    .map(|check| {
        let one = format!(
            "let vector = element / lanes;
                let at = first;
                {check}"
        );
        // A whole vector's components' shadows follow each other (untracked: the dummy
        // one). Only where checked in place, where `lanes` is a literal the compiler folds:
        // lavapipe miscompiled this loop inside the log's loop (nn's attention backward
        // answered wrong), so the log holds each component as an entry of its own.
        let whole = format!(
            "if what >= {read_all}u {{
                let vector = element;
                let step = select(0u, {w}u, first != {dummy}u);
                for (var c = 0u; c < lanes; c++) {{
                    let at = first + step * c;
                    {check}
                }}
            }} else {{
                {one}
            }}"
        );
        (whole, one)
    });
    let storage: Vec<(u32, &str)> = [
        (what::LOAD, "load(a, element, site, first)"),
        (what::STORE, "store(a, element, site, first)"),
        (what::ATOMIC, "atomic()"),
    ]
    .into_iter()
    .filter(|&(what, _)| has(kind_of(what)))
    .collect();
    let storage = storage.split_last().map(|((_, last), others)| {
        let mut chain = String::new();
        for (what, call) in others {
            chain += &format!(
                "if what == {what}u {{
                {p}_storage_{call};
            }} else "
            );
        }
        chain
            + &format!(
                "{{
                {p}_storage_{last};
            }}"
            )
    });
    // Where the shadow is, from the tables `_place` fills; an access out of bounds reported,
    // and the rest checked on the dummy shadow.
    let workgroup_locate = format!(
        "let n = {p}_w_len[a];
        let outside = element >= n * lanes;
        {p}_report(outside, {workgroup_outside}u, site, 0u, element / lanes, 0u, n, a);
        let at = {p}_w_base[a] + {w}u * element;
        first = select({dummy}u, at, !outside && {p}_w_base[a] != {none}u);"
    );
    let storage_locate = format!(
        "let len = {p}_s_len[a];
        let outside = element >= len;
        {p}_report(outside, {storage_outside}u, site, 0u, element, 0u, len, a);
        let at = {p}_s_base[a] + 2u * element;
        first = select({dummy}u, at, !outside && {p}_s_base[a] != {none}u);"
    );
    let locate = match (workgroup.is_some(), storage.is_some()) {
        (true, true) => format!(
            "if what < {load}u {{
        {workgroup_locate}
    }} else {{
        {storage_locate}
    }}"
        ),
        (true, false) => format!("{{\n        {workgroup_locate}\n    }}"),
        _ => format!("{{\n        {storage_locate}\n    }}"),
    };
    let check = |workgroup: Option<&String>| match (workgroup, &storage) {
        (Some(workgroup), Some(storage)) => {
            format!("if what < {load}u {{\n            {workgroup}\n        }} else {storage}")
        }
        (Some(one), None) | (None, Some(one)) => one.clone(),
        (None, None) => String::new(),
    };
    let (here, logged) = (
        check(workgroup.as_ref().map(|(whole, _)| whole)),
        check(workgroup.as_ref().map(|(_, one)| one)),
    );
    let decode = format!(
        "let a = code & {array_mask}u;
    let what = (code >> {what_shift}u) & {what_mask}u;
    let lanes = ((code >> {lane_shift}u) & {lane_mask}u) + 1u;
    let site = code >> {site_shift}u;"
    );
    // Checks in place take any kind (the compiler folds the code, a literal): one function.
    let here = if kinds == kinds::ALL {
        format!(
            "
// An access whose bounds are checked and whose shadow is at `first` (of its first
// component, for a whole vector).
fn {p}_here_{kinds}(code: u32, element: u32, first: u32) {{
    {decode}
    {here}
}}
"
        )
    } else {
        String::new()
    };
    format!(
        "{here}
// An entry of a log of such accesses (a component where the array has shadows per
// component): its bounds checked, its shadow found, and checked.
fn {p}_check_{kinds}(code: u32, element: u32) {{
    {decode}
    var first: u32;
    {locate}
    {logged}
}}

fn {p}_apply_{kinds}() {{
    for (var i = 0u; i < {p}_logged; i++) {{
        {p}_check_{kinds}({p}_log_code[i], {p}_log_element[i]);
    }}
    {p}_logged = 0u;
}}
"
    )
}

impl Prepared {
    /// The module with `entry_point`'s accesses checked, and it its only entry point.
    pub(crate) fn instrument(&self, entry_point: &str) -> Result<Instrumented, String> {
        let mut module = self.module.clone();
        let Some(index) = module
            .entry_points
            .iter()
            .position(|e| e.name == entry_point)
        else {
            return Err(format!("the module has no entry point `{entry_point}`"));
        };
        let mut entry = module.entry_points.swap_remove(index);
        module.entry_points.clear();
        let reachable = reachable(&module, &entry.function);
        let globals = used_globals(&module, &entry.function, &reachable);
        let by_name = |name: &Option<String>| name.clone().unwrap_or_default();
        let workgroup_used: Vec<usize> = self
            .workgroup
            .iter()
            .enumerate()
            .filter(|(_, (name, _))| {
                globals
                    .iter()
                    .any(|&g| by_name(&module.global_variables[g].name) == *name)
            })
            .map(|(k, _)| k)
            .collect();
        let mut storage_used: Vec<usize> = self
            .storage
            .iter()
            .enumerate()
            .filter(|(_, (name, _))| {
                globals
                    .iter()
                    .any(|&g| by_name(&module.global_variables[g].name) == *name)
            })
            .map(|(g, _)| g)
            .collect();
        storage_used.sort_by_key(|&g| self.storage[g].1.binding);
        let mut pass = Pass {
            text: &self.text,
            prelude_lines: self.prelude_lines,
            rust_lines: &self.rust_lines,
            sites: Vec::new(),
            workgroup: HashMap::new(),
            storage: HashMap::new(),
            barrier: find(&module, format!("{PREFIX}_barrier"))?,
            storage_barrier: find(&module, format!("{PREFIX}_storage_barrier"))?,
            log: find(&module, format!("{PREFIX}_log"))?,
            check: find(&module, format!("{PREFIX}_here_{}", kinds::ALL))?,
            plan: Plan::default(),
            surveyed: 0,
            applies: (0..=kinds::ALL)
                .map(|kinds| find(&module, format!("{PREFIX}_apply_{}", kinds.max(1))))
                .collect::<Result<_, _>>()?,
            flush: find(&module, format!("{PREFIX}_flush"))?,
            entry: false,
            logged: Logged::default(),
            callees: HashMap::new(),
        };
        let mut region = 1u64;
        let mut workgroup_places = Vec::new();
        for &k in &workgroup_used {
            let array = &self.workgroup[k].1;
            region += u64::from(SHADOW_WORDS) * u64::from(array.len) * u64::from(array.lanes);
            workgroup_places.push(find(&module, format!("{PREFIX}_place_w{k}"))?);
            let name = &self.workgroup[k].0;
            let global = module
                .global_variables
                .fetch_if(|g| g.name.as_deref() == Some(name.as_str()))
                .ok_or_else(|| format!("`{name}` went missing"))?;
            let (dims, _) = levels(&module, module.global_variables[global].ty);
            pass.workgroup.insert(
                global,
                WorkgroupChecks {
                    number: k as u32,
                    dims,
                    len: self.workgroup[k].1.len,
                    lanes: self.workgroup[k].1.lanes,
                    here: find(&module, format!("{PREFIX}_here_w{k}"))?,
                },
            );
        }
        let region = u32::try_from(region).map_err(|_| {
            "the workgroup arrays are too large for the sanitizer's shadows".to_owned()
        })?;
        let mut places = Vec::new();
        for &g in &storage_used {
            let (name, array) = &self.storage[g];
            let global = module
                .global_variables
                .fetch_if(|v| v.name.as_deref() == Some(name.as_str()))
                .ok_or_else(|| format!("`{name}` went missing"))?;
            pass.storage.insert(
                global,
                StorageChecks {
                    number: g as u32,
                    shadowed: array.shadowed,
                    here: find(&module, format!("{PREFIX}_here_s{g}"))?,
                },
            );
            places.push(find(&module, format!("{PREFIX}_place_s{g}"))?);
        }
        // Callees first (naga keeps them before their callers), so that a call knows how
        // much its callee may log.
        let mut reachable = reachable;
        reachable.sort_by_key(|f| f.index());
        for &function in &reachable {
            let mut f = std::mem::take(&mut module.functions[function]);
            pass.function(&mut f);
            pass.callees.insert(function, pass.logged.callee());
            module.functions[function] = f;
        }
        pass.entry = true;
        pass.function(&mut entry.function);
        let mut body = std::mem::take(&mut entry.function.body);
        if !matches!(body.last(), Some(Statement::Return { .. })) {
            pass.before_return(&mut body, Span::UNDEFINED);
        }
        if pass.sites.len() >= 1 << (32 - SITE_SHIFT) {
            return Err(format!(
                "`{entry_point}` has {} accesses to check, more than the sanitizer can number",
                pass.sites.len()
            ));
        }
        let enter = find(&module, format!("{PREFIX}_enter"))?;
        let regions = find(&module, format!("{PREFIX}_regions"))?;
        let layout = Layout {
            storage: &places,
            regions,
            region,
            workgroup: &workgroup_places,
        };
        let prologue = prologue(&mut module, &mut entry, enter, &layout)?;
        let mut whole = prologue;
        whole.append(&mut body);
        entry.function.body = whole;
        module.entry_points.push(entry);
        // Without the functions the entry point does not call (every other entry point's,
        // and the checks it does not use), which the device's compiler would translate; a
        // module with overrides is left whole, since the pipeline may set any of them.
        // naga's compaction expects a valid module, which this is; should it panic anyway,
        // the error says so rather than taking the caller down.
        let compacted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            if module.overrides.is_empty() {
                naga::compact::compact(&mut module, naga::compact::KeepUnused::No);
            }
            module
        }));
        let module = compacted.map_err(|_| {
            format!(
                "naga could not compact `{entry_point}` after instrumenting it (a bug of tessera)"
            )
        })?;
        Ok(Instrumented {
            module,
            sites: pass.sites,
            workgroup: self.workgroup.iter().map(|(_, a)| a.clone()).collect(),
            storage: self.storage.iter().map(|(_, a)| a.clone()).collect(),
            region,
            shadowed: storage_used
                .iter()
                .filter(|&&g| self.storage[g].1.shadowed)
                .map(|&g| (self.storage[g].1.binding, self.storage[g].1.stride))
                .collect(),
        })
    }
}

/// A call of `function`, which takes no arguments and returns nothing.
fn call(function: Handle<Function>) -> Statement {
    Statement::Call {
        function,
        arguments: Vec::new(),
        result: None,
    }
}

/// The prelude's function `name`.
fn find(module: &Module, name: String) -> Result<Handle<Function>, String> {
    module
        .functions
        .fetch_if(|f| f.name.as_deref() == Some(name.as_str()))
        .ok_or_else(|| format!("the sanitizer's prelude lacks `{name}` (a bug of tessera)"))
}

/// The functions `entry` calls, directly or not.
fn reachable(module: &Module, entry: &Function) -> Vec<Handle<Function>> {
    let calls = |function: &Function| {
        let mut callees = Vec::new();
        visit(&function.body, &mut |statement| {
            if let Statement::Call { function, .. } = statement {
                callees.push(*function);
            }
        });
        callees
    };
    let mut found: Vec<Handle<Function>> = Vec::new();
    let mut work = calls(entry);
    while let Some(function) = work.pop() {
        if !found.contains(&function) {
            found.push(function);
            work.extend(calls(&module.functions[function]));
        }
    }
    found
}

/// The globals `entry` and the functions it reaches name.
fn used_globals(
    module: &Module,
    entry: &Function,
    reachable: &[Handle<Function>],
) -> BTreeSet<Handle<naga::GlobalVariable>> {
    let functions = std::iter::once(entry).chain(reachable.iter().map(|&h| &module.functions[h]));
    let mut globals = BTreeSet::new();
    for function in functions {
        for (_, expression) in function.expressions.iter() {
            if let Expression::GlobalVariable(global) = expression {
                globals.insert(*global);
            }
        }
    }
    globals
}

/// The lengths of a type's array levels, outermost first, and the type of their elements.
fn levels(module: &Module, mut ty: Handle<Type>) -> (Vec<u32>, Handle<Type>) {
    let mut dims = Vec::new();
    while let TypeInner::Array {
        base,
        size: ArraySize::Constant(n),
        ..
    } = module.types[ty].inner
    {
        dims.push(n.get());
        ty = base;
    }
    (dims, ty)
}

/// How an entry point's part of the sanitizer buffer is laid out: the prelude's functions
/// that place each shadowed buffer's words, then the workgroups' regions, then each
/// workgroup array's shadows in the workgroup's region.
struct Layout<'a> {
    storage: &'a [Handle<Function>],
    regions: Handle<Function>,
    region: u32,
    workgroup: &'a [Handle<Function>],
}

/// The calls that record the invocation's identity and place each shadow, for the start of
/// the entry point; adds the builtins they need as arguments where the entry point does not
/// take them already.
fn prologue(
    module: &mut Module,
    entry: &mut naga::EntryPoint,
    enter: Handle<Function>,
    layout: &Layout<'_>,
) -> Result<Block, String> {
    let u32_ty = module.types.insert(
        Type {
            name: None,
            inner: TypeInner::Scalar(naga::Scalar::U32),
        },
        Span::UNDEFINED,
    );
    let vec3_ty = module.types.insert(
        Type {
            name: None,
            inner: TypeInner::Vector {
                size: naga::VectorSize::Tri,
                scalar: naga::Scalar::U32,
            },
        },
        Span::UNDEFINED,
    );
    let f = &mut entry.function;
    let in_structs = f.arguments.iter().any(|a| {
        matches!(&module.types[a.ty].inner, TypeInner::Struct { members, .. }
            if members.iter().any(|m| m.binding.is_some()))
    });
    if in_structs {
        return Err(
            "the sanitizer needs the entry point's builtins as plain arguments, not struct members"
                .into(),
        );
    }
    let mut argument = |builtin: BuiltIn, ty: Handle<Type>, name: &str| {
        let binding = Some(Binding::BuiltIn(builtin));
        let index = match f.arguments.iter().position(|a| a.binding == binding) {
            Some(index) => index,
            None => {
                f.arguments.push(FunctionArgument {
                    name: Some(format!("{PREFIX}_{name}")),
                    ty,
                    binding,
                });
                f.arguments.len() - 1
            }
        };
        f.expressions
            .append(Expression::FunctionArgument(index as u32), Span::UNDEFINED)
    };
    let local = argument(BuiltIn::LocalInvocationIndex, u32_ty, "local_index");
    let group = argument(BuiltIn::WorkGroupId, vec3_ty, "workgroup_id");
    let groups = argument(BuiltIn::NumWorkGroups, vec3_ty, "num_workgroups");
    let literal = |f: &mut Function, value: u32| {
        f.expressions
            .append(Expression::Literal(Literal::U32(value)), Span::UNDEFINED)
    };
    let mut block = Block::new();
    block.push(
        Statement::Call {
            function: enter,
            arguments: vec![local, group, groups],
            result: None,
        },
        Span::UNDEFINED,
    );
    let mut call_returning = |f: &mut Function, function: Handle<Function>, arguments: Vec<_>| {
        let result = f
            .expressions
            .append(Expression::CallResult(function), Span::UNDEFINED);
        block.push(
            Statement::Call {
                function,
                arguments,
                result: Some(result),
            },
            Span::UNDEFINED,
        );
        result
    };
    let mut base = literal(f, HEADER_WORDS as u32);
    for &place in layout.storage {
        base = call_returning(f, place, vec![base]);
    }
    let region = literal(f, layout.region);
    base = call_returning(f, layout.regions, vec![base, region]);
    for &place in layout.workgroup {
        base = call_returning(f, place, vec![base]);
    }
    Ok(block)
}

/// What the pass knows of one tracked workgroup array.
struct WorkgroupChecks {
    /// Its number among the source's workgroup arrays.
    number: u32,
    dims: Vec<u32>,
    /// As [`WorkgroupArray::len`] and [`WorkgroupArray::lanes`].
    len: u32,
    lanes: u32,
    /// What checks an access's bounds and finds its shadow, where it is checked where made.
    here: Handle<Function>,
}

/// What the pass knows of one tracked storage buffer.
struct StorageChecks {
    /// Its number among the source's storage buffers.
    number: u32,
    /// As [`StorageArray::shadowed`].
    shadowed: bool,
    /// What checks an access's bounds and finds its shadow, where it is checked where made.
    here: Handle<Function>,
}

/// What an invocation's log may hold at a point of a function, counted from the function's
/// start or the log's last application, on every path.
#[derive(Clone, Copy, Default)]
struct Logged {
    /// How many entries, at most.
    now: u32,
    /// The most at any point so far.
    most: u32,
    /// Of which kinds (a set of [`kinds`]).
    kinds: u32,
    /// Whether the code so far has a barrier (where the log is applied), through calls too.
    synchronizes: bool,
}

impl Logged {
    /// What a call of the function may add to its caller's log.
    fn callee(self) -> Logged {
        Logged {
            now: self.most,
            ..self
        }
    }
}

/// Which accesses of a function are logged and which checked where they are made.
///
/// Each application of the log is a copy of the checks (lavapipe inlines every call), about as
/// costly to compile as checking a dozen accesses where they are made (nn's softmax kernels
/// compiled in 32 s with their runs of 8 and 16 accesses logged, 15 s checked in place). So
/// an access is logged only where the code it shares a region with (between two barriers,
/// loop turns or calls) has at least [`LOGGED_REGION`] accesses: the unrolled loops of
/// tessera's kernels do.
#[derive(Default)]
struct Plan {
    /// Accesses per region.
    sizes: Vec<u32>,
    /// The region of each access, in the pass's order.
    regions: Vec<usize>,
}

/// The fewest accesses a region has where they are logged.
const LOGGED_REGION: u32 = 24;

impl Plan {
    /// Counts the accesses of each region of `block`, in the order the pass meets them.
    fn survey(&mut self, pass: &Pass<'_>, f: &Function, block: &Block) {
        if self.sizes.is_empty() {
            self.sizes.push(0);
        }
        let access = |plan: &mut Plan, pointer, touch| {
            if pass.tracked(f, pointer, touch) {
                let region = plan.sizes.len() - 1;
                plan.sizes[region] += 1;
                plan.regions.push(region);
            }
        };
        for statement in block.iter() {
            match *statement {
                Statement::Emit(ref range) => {
                    for handle in range.clone() {
                        if let Expression::Load { pointer } = f.expressions[handle] {
                            access(self, pointer, AccessKind::Read);
                        }
                    }
                }
                Statement::Store { pointer, .. } => access(self, pointer, AccessKind::Write),
                Statement::Atomic { pointer, .. } => access(self, pointer, AccessKind::Atomic),
                Statement::ControlBarrier(_)
                | Statement::WorkGroupUniformLoad { .. }
                | Statement::Call { .. }
                | Statement::Return { .. } => self.sizes.push(0),
                Statement::Block(ref inner) => self.survey(pass, f, inner),
                Statement::If {
                    ref accept,
                    ref reject,
                    ..
                } => {
                    self.survey(pass, f, accept);
                    self.survey(pass, f, reject);
                }
                Statement::Switch { ref cases, .. } => {
                    for case in cases {
                        self.survey(pass, f, &case.body);
                    }
                }
                Statement::Loop {
                    ref body,
                    ref continuing,
                    ..
                } => {
                    self.sizes.push(0);
                    self.survey(pass, f, body);
                    self.survey(pass, f, continuing);
                    self.sizes.push(0);
                }
                _ => {}
            }
        }
    }

    /// Whether the `n`th access is logged.
    fn logs(&self, n: usize) -> bool {
        self.regions
            .get(n)
            .is_some_and(|&region| self.sizes[region] >= LOGGED_REGION)
    }
}

/// The pass over one entry point's functions: logs each access, numbers the sites, applies
/// the log where it must.
///
/// The log is applied before every barrier (its entries are tagged with the barrier count
/// then current), at the start of every loop turn, and before the entry point returns; and
/// before an access or a call that could fill it past [`LOG_LEN`] entries, counted on every
/// path (a call counts the most its callee may log, which its own applications bound).
struct Pass<'a> {
    text: &'a str,
    prelude_lines: u32,
    rust_lines: &'a [Option<u32>],
    sites: Vec<Site>,
    workgroup: HashMap<Handle<naga::GlobalVariable>, WorkgroupChecks>,
    storage: HashMap<Handle<naga::GlobalVariable>, StorageChecks>,
    /// What counts a workgroup barrier passed, and a storage barrier.
    barrier: Handle<Function>,
    storage_barrier: Handle<Function>,
    /// What logs an access; what applies a log of the kinds `k`, at `k`; what writes a
    /// hazard out.
    log: Handle<Function>,
    applies: Vec<Handle<Function>>,
    /// What checks an access where it is made.
    check: Handle<Function>,
    /// Which accesses of the function being instrumented are logged, and how many of its
    /// accesses the pass has met.
    plan: Plan,
    surveyed: usize,
    flush: Handle<Function>,
    /// Whether the function being instrumented is the entry point.
    entry: bool,
    /// In the function being instrumented.
    logged: Logged,
    /// What each instrumented function may log.
    callees: HashMap<Handle<Function>, Logged>,
}

impl Pass<'_> {
    fn block(&mut self, f: &mut Function, block: Block) -> Block {
        let mut out = Block::with_capacity(block.len());
        for (statement, span) in block.span_into_iter() {
            match statement {
                Statement::Emit(range) => self.emit(f, range, &mut out),
                Statement::Store { pointer, .. } => {
                    self.check(f, pointer, AccessKind::Write, span, &mut out);
                    out.push(statement, span);
                }
                Statement::Atomic { pointer, .. } => {
                    self.check(f, pointer, AccessKind::Atomic, span, &mut out);
                    out.push(statement, span);
                }
                // `workgroupUniformLoad` is a workgroup barrier too.
                Statement::ControlBarrier(barrier) => {
                    self.apply(&mut out, span);
                    self.logged.synchronizes = true;
                    out.push(statement, span);
                    let workgroup = barrier.contains(Barrier::WORK_GROUP);
                    self.count_barrier(&mut out, span, workgroup);
                }
                Statement::WorkGroupUniformLoad { .. } => {
                    self.apply(&mut out, span);
                    self.logged.synchronizes = true;
                    self.count_barrier(&mut out, span, true);
                    out.push(statement, span);
                }
                // A callee with a barrier applies only its own log there: the caller's entries
                // are applied before the call.
                Statement::Call { function, .. } => {
                    let callee = self.callees.get(&function).copied().unwrap_or_default();
                    if callee.synchronizes {
                        self.apply(&mut out, span);
                    }
                    self.make_room(callee.most, &mut out, span);
                    self.logged.most = self.logged.most.max(self.logged.now + callee.most);
                    self.logged.now += callee.now;
                    self.logged.kinds |= callee.kinds;
                    self.logged.synchronizes |= callee.synchronizes;
                    out.push(statement, span);
                }
                Statement::Return { .. } if self.entry => {
                    self.before_return(&mut out, span);
                    out.push(statement, span);
                }
                Statement::Block(inner) => {
                    let inner = self.block(f, inner);
                    out.push(Statement::Block(inner), span);
                }
                Statement::If {
                    condition,
                    accept,
                    reject,
                } => {
                    let before = self.logged;
                    let accept = self.block(f, accept);
                    let after_accept = std::mem::replace(&mut self.logged, before);
                    let reject = self.block(f, reject);
                    self.logged = Logged {
                        now: self.logged.now.max(after_accept.now),
                        most: self.logged.most.max(after_accept.most),
                        kinds: self.logged.kinds | after_accept.kinds,
                        synchronizes: self.logged.synchronizes | after_accept.synchronizes,
                    };
                    out.push(
                        Statement::If {
                            condition,
                            accept,
                            reject,
                        },
                        span,
                    );
                }
                // Counted as if every case ran, one after the other (cases may fall through).
                Statement::Switch { selector, cases } => {
                    let cases = cases
                        .into_iter()
                        .map(|case| naga::SwitchCase {
                            body: self.block(f, case.body),
                            ..case
                        })
                        .collect();
                    out.push(Statement::Switch { selector, cases }, span);
                }
                // Each turn of a loop that logs starts with the log applied (with the kinds
                // the loop and the code before it log); the loop may be left at any point of
                // a turn. Its barriers apply only what the loop logs: a loop that logs nothing
                // but has barriers has the log applied before it.
                Statement::Loop {
                    body,
                    continuing,
                    break_if,
                } => {
                    let outside = std::mem::take(&mut self.logged);
                    let mut body = self.block(f, body);
                    let continuing = self.block(f, continuing);
                    let inside = std::mem::replace(&mut self.logged, outside);
                    if inside.most == 0 {
                        if inside.synchronizes {
                            self.apply(&mut out, span);
                            self.logged.synchronizes = true;
                        }
                    } else {
                        let kinds = outside.kinds | inside.kinds;
                        let mut turn = Block::new();
                        turn.push(call(self.applies[kinds as usize]), span);
                        turn.append(&mut body);
                        body = turn;
                        self.logged = Logged {
                            now: inside.most,
                            most: outside.most.max(inside.most),
                            kinds,
                            synchronizes: outside.synchronizes | inside.synchronizes,
                        };
                    }
                    out.push(
                        Statement::Loop {
                            body,
                            continuing,
                            break_if,
                        },
                        span,
                    );
                }
                other => out.push(other, span),
            }
        }
        out
    }

    /// Applies the log here, if it may hold anything.
    fn apply(&mut self, out: &mut Block, span: Span) {
        if self.logged.now > 0 {
            out.push(call(self.applies[self.logged.kinds as usize]), span);
        }
        self.logged.now = 0;
        self.logged.kinds = 0;
    }

    /// Before the entry point returns: the log applied, the hazard written out.
    fn before_return(&mut self, out: &mut Block, span: Span) {
        self.apply(out, span);
        out.push(call(self.flush), span);
    }

    /// Applies the log here if `entries` more could overfill it.
    fn make_room(&mut self, entries: u32, out: &mut Block, span: Span) {
        if self.logged.now + entries > LOG_LEN {
            self.apply(out, span);
        }
    }

    fn count_barrier(&self, out: &mut Block, span: Span, workgroup: bool) {
        let counter = if workgroup {
            self.barrier
        } else {
            self.storage_barrier
        };
        out.push(call(counter), span);
    }

    /// An `Emit`, split before each checked load so that the check runs first.
    fn emit(&mut self, f: &mut Function, range: naga::Range<Expression>, out: &mut Block) {
        let mut run: Option<(Handle<Expression>, Handle<Expression>)> = None;
        for handle in range.clone() {
            if let Expression::Load { pointer } = f.expressions[handle] {
                let span = f.expressions.get_span(handle);
                let mut checks = Block::new();
                self.check(f, pointer, AccessKind::Read, span, &mut checks);
                if !checks.is_empty() {
                    if let Some((first, last)) = run.take() {
                        out.push(
                            Statement::Emit(naga::Range::new_from_bounds(first, last)),
                            Span::UNDEFINED,
                        );
                    }
                    out.append(&mut checks);
                }
            }
            run = Some(match run {
                Some((first, _)) => (first, handle),
                None => (handle, handle),
            });
        }
        if let Some((first, last)) = run {
            out.push(
                Statement::Emit(naga::Range::new_from_bounds(first, last)),
                Span::UNDEFINED,
            );
        }
    }

    /// Pushes the check of an access through `pointer` onto `out`, when it reaches a tracked
    /// array's element.
    fn check(
        &mut self,
        f: &mut Function,
        pointer: Handle<Expression>,
        touch: AccessKind,
        span: Span,
        out: &mut Block,
    ) {
        if !self.tracked(f, pointer, touch) {
            return;
        }
        let Some((global, steps)) = chain(f, pointer) else {
            return;
        };
        let logs = self.plan.logs(self.surveyed);
        self.surveyed += 1;
        let before = f.expressions.len();
        // Where logged, one entry per component of a whole vector (see `apply`).
        let mut entries = Vec::new();
        let (array, what, element, lanes, here, whole) =
            if let Some(array) = self.workgroup.get(&global) {
                if touch == AccessKind::Atomic || steps.len() < array.dims.len() {
                    return;
                }
                let levels = array.dims.len();
                let whole = array.lanes > 1 && steps.len() == levels;
                let (one, all) = match touch {
                    AccessKind::Read => (what::READ, what::READ_ALL),
                    _ => (what::WRITE, what::WRITE_ALL),
                };
                let mut dims = array.dims.clone();
                if array.lanes > 1 && !whole {
                    dims.push(array.lanes);
                }
                let element = flat_index(f, &steps, &dims);
                if whole && logs {
                    for c in 0..array.lanes {
                        let component = component(f, element, array.len, array.lanes, c);
                        entries.push((one, component));
                    }
                } else {
                    entries.push((if whole { all } else { one }, element));
                }
                let what = if whole { all } else { one };
                let whole = f
                    .expressions
                    .append(Expression::Literal(Literal::Bool(whole)), Span::UNDEFINED);
                (
                    array.number,
                    what,
                    element,
                    array.lanes,
                    array.here,
                    Some(whole),
                )
            } else if let Some(buffer) = self.storage.get(&global) {
                let Some(&first) = steps.first() else {
                    return;
                };
                // A store to a buffer whose writes are not tracked is an atomic store.
                let what = match touch {
                    AccessKind::Read => what::LOAD,
                    AccessKind::Write if buffer.shadowed => what::STORE,
                    AccessKind::Write | AccessKind::Atomic => what::ATOMIC,
                };
                let index = index(f, first);
                entries.push((what, index));
                (buffer.number, what, index, 1, buffer.here, None)
            } else {
                return;
            };
        let site = self.site(touch, span);
        let entries: Vec<_> = entries
            .into_iter()
            .map(|(what, element)| (literal(f, code(array, what, lanes, site)), element))
            .collect();
        let site = literal(f, site);
        emit_new(f, before, out, span);
        if logs {
            let n = entries.len() as u32;
            self.make_room(n, out, span);
            self.logged.now += n;
            self.logged.most = self.logged.most.max(self.logged.now);
            self.logged.kinds |= kind_of(what);
            for (code, element) in entries {
                out.push(
                    Statement::Call {
                        function: self.log,
                        arguments: vec![code, element],
                        result: None,
                    },
                    span,
                );
            }
            return;
        }
        // Its bounds checked and its shadow found here, with the array's constants.
        let shadow = f
            .expressions
            .append(Expression::CallResult(here), Span::UNDEFINED);
        out.push(
            Statement::Call {
                function: here,
                arguments: std::iter::once(element)
                    .chain([site])
                    .chain(whole)
                    .collect(),
                result: Some(shadow),
            },
            span,
        );
        let code = entries[0].0;
        out.push(
            Statement::Call {
                function: self.check,
                arguments: vec![code, element, shadow],
                result: None,
            },
            span,
        );
    }

    /// Whether an access through `pointer` is checked.
    fn tracked(&self, f: &Function, pointer: Handle<Expression>, touch: AccessKind) -> bool {
        let Some((global, steps)) = chain(f, pointer) else {
            return false;
        };
        if let Some(array) = self.workgroup.get(&global) {
            touch != AccessKind::Atomic && steps.len() >= array.dims.len()
        } else {
            self.storage.contains_key(&global) && !steps.is_empty()
        }
    }

    /// Instruments `f`: its checks logged or not as [`Plan`] decides.
    fn function(&mut self, f: &mut Function) {
        let mut plan = Plan::default();
        plan.survey(self, f, &f.body);
        self.plan = plan;
        self.surveyed = 0;
        self.logged = Logged::default();
        let body = std::mem::take(&mut f.body);
        f.body = self.block(f, body);
    }

    /// Numbers a new site.
    fn site(&mut self, touch: AccessKind, span: Span) -> u32 {
        let wgsl_line = if span.is_defined() {
            let line = span.location(self.text).line_number;
            line.saturating_sub(self.prelude_lines)
        } else {
            0
        };
        let rust_line = (wgsl_line as usize)
            .checked_sub(1)
            .and_then(|line| self.rust_lines.get(line).copied().flatten());
        self.sites.push(Site {
            touch,
            wgsl_line,
            rust_line,
        });
        (self.sites.len() - 1) as u32
    }
}

/// Emits the expressions appended to `f` since it had `before`, but for those in scope from
/// the start (literals), which the validator refuses to see emitted.
fn emit_new(f: &Function, before: usize, out: &mut Block, span: Span) {
    let mut run: Option<(Handle<Expression>, Handle<Expression>)> = None;
    let flush = |run: &mut Option<(Handle<Expression>, Handle<Expression>)>, out: &mut Block| {
        if let Some((first, last)) = run.take() {
            out.push(
                Statement::Emit(naga::Range::new_from_bounds(first, last)),
                span,
            );
        }
    };
    for handle in f.expressions.range_from(before) {
        if f.expressions[handle].needs_pre_emit() {
            flush(&mut run, out);
        } else {
            run = Some(run.map_or((handle, handle), |(first, _)| (first, handle)));
        }
    }
    flush(&mut run, out);
}

/// Component `c` of the vector `element` of an array of `len` vectors of `lanes` components,
/// counted over all components; past the end (`u32::MAX`) where `element` is.
fn component(
    f: &mut Function,
    element: Handle<Expression>,
    len: u32,
    lanes: u32,
    c: u32,
) -> Handle<Expression> {
    let (len, lanes, c, past_end) = (
        literal(f, len),
        literal(f, lanes),
        literal(f, c),
        literal(f, u32::MAX),
    );
    let binary = |f: &mut Function, op, left, right| {
        f.expressions
            .append(Expression::Binary { op, left, right }, Span::UNDEFINED)
    };
    let first = binary(f, BinaryOperator::Multiply, element, lanes);
    let at = binary(f, BinaryOperator::Add, first, c);
    let outside = binary(f, BinaryOperator::GreaterEqual, element, len);
    f.expressions.append(
        Expression::Select {
            condition: outside,
            accept: past_end,
            reject: at,
        },
        Span::UNDEFINED,
    )
}

/// A `u32` literal.
fn literal(f: &mut Function, value: u32) -> Handle<Expression> {
    f.expressions
        .append(Expression::Literal(Literal::U32(value)), Span::UNDEFINED)
}

/// A step's index as a `u32` expression.
fn index(f: &mut Function, step: Step) -> Handle<Expression> {
    let expression = match step {
        Step::Dynamic(index) => Expression::As {
            expr: index,
            kind: ScalarKind::Uint,
            convert: Some(4),
        },
        Step::Constant(index) => Expression::Literal(Literal::U32(index)),
    };
    f.expressions.append(expression, Span::UNDEFINED)
}

/// The element `steps` reach in an array of `dims`, flattened; past the end (`u32::MAX`) when
/// an inner index is past its level.
fn flat_index(f: &mut Function, steps: &[Step], dims: &[u32]) -> Handle<Expression> {
    let append = |f: &mut Function, e: Expression| f.expressions.append(e, Span::UNDEFINED);
    if dims.is_empty() {
        return append(f, Expression::Literal(Literal::U32(0)));
    }
    let mut flat = index(f, steps[0]);
    let mut outside = None;
    for (&step, &n) in steps.iter().zip(dims).skip(1) {
        let i = index(f, step);
        let len = append(f, Expression::Literal(Literal::U32(n)));
        let past = append(
            f,
            Expression::Binary {
                op: BinaryOperator::GreaterEqual,
                left: i,
                right: len,
            },
        );
        outside = Some(match outside {
            None => past,
            Some(before) => append(
                f,
                Expression::Binary {
                    op: BinaryOperator::LogicalOr,
                    left: before,
                    right: past,
                },
            ),
        });
        let scaled = append(
            f,
            Expression::Binary {
                op: BinaryOperator::Multiply,
                left: flat,
                right: len,
            },
        );
        flat = append(
            f,
            Expression::Binary {
                op: BinaryOperator::Add,
                left: scaled,
                right: i,
            },
        );
    }
    match outside {
        None => flat,
        Some(outside) => {
            let past_end = append(f, Expression::Literal(Literal::U32(u32::MAX)));
            append(
                f,
                Expression::Select {
                    condition: outside,
                    accept: past_end,
                    reject: flat,
                },
            )
        }
    }
}
