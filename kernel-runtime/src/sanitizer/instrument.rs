//! The instrumentation: a WGSL module in, the same module out with every access to workgroup
//! memory and to storage buffers checked, for one entry point.
//!
//! Done on naga's IR, so it works on any WGSL, tessera's or hand-written. The checks are WGSL
//! functions of a prelude inserted before the module's own declarations ([`prelude`]), one
//! set per workgroup array and per storage buffer, which the pass calls before each access.
//! Every shadow lives in the sanitizer's own buffer (group 1), none in workgroup memory:
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
//! ([`HEADER_WORDS`]); the runtime reads it back after the submission. The checks have no
//! branches, and as few atomics as they can: lavapipe turns each atomic into code per lane,
//! and nn's attention forward compiled in 67 s under the first version, 31 s under this one
//! (1.6 s without the sanitizer).

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

/// The checks' WGSL: the sanitizer's binding, the invocation's identity, and per tracked array
/// its check functions (named by position: `_w3` for the fourth workgroup array).
///
/// All shadows live in the sanitizer's buffer, none in workgroup memory (which kernels fill:
/// lavapipe offers 32 KiB). A dispatch's part of it is: the report ([`HEADER_WORDS`]), two
/// words per element of each shadowed storage buffer, then a region per workgroup of the
/// grid: a word set once the workgroup has updated a storage buffer atomically, then
/// [`SHADOW_WORDS`] per element of each workgroup array.
fn prelude(workgroup: &[(String, WorkgroupArray)], storage: &[(String, StorageArray)]) -> String {
    let p = PREFIX;
    let (bits, mask, epochs) = (INVOCATION_BITS, INVOCATION_MASK, EPOCH_MASK);
    let w = SHADOW_WORDS;
    let (none, regions, storage_limit) = (UNTRACKED, REGIONS_LIMIT, STORAGE_SHADOW_LIMIT);
    let (site_bits, site_mask) = (SITE_BITS, (1u32 << SITE_BITS) - 1);
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
// entry point returns. Every check is written without branches (selects, and a dummy shadow
// for an access it does not track): lavapipe compiles a kernel's barriers as coroutine
// suspension points, at a cost that grows with the branches between them.
var<private> {p}_found: u32;
var<private> {p}_first: vec4<u32>;
var<private> {p}_first_more: vec2<u32>;

fn {p}_report(hazard: bool, kind: u32, site: u32, other_site: u32, element: u32, other: u32, len: u32, subject: u32) {{
    let first = hazard && {p}_found == 0u;
    {p}_first = select({p}_first, vec4(kind | (subject << 8u), site, other_site, element), first);
    {p}_first_more = select({p}_first_more, vec2(other, len), first);
    {p}_found += u32(hazard);
}}

// Before the entry point returns: the first invocation to report writes its hazard.
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
    for (k, (_, array)) in workgroup.iter().enumerate() {
        let (n, lanes) = (array.len, array.lanes);
        // `element` counts components where the array has a shadow per component; reports
        // name the vector.
        let scalars = u64::from(n) * u64::from(lanes);
        let (race, outside) = (kind::WORKGROUP_RACE, kind::WORKGROUP_BOUNDS);
        // Where the access is not tracked (out of bounds, a workgroup past the tracked
        // ones), its shadow is the dummy one in the report's spare words, and it reports no
        // race.
        let track = format!(
            "let outside = element >= {scalars}u;
    {p}_report(outside, {outside}u, site, 0u, element / {lanes}u, 0u, {n}u, {k}u);
    let tracked = !outside && {p}_shadow{k} != {none}u;
    let at = select({dummy}u, {p}_shadow{k} + {w}u * element, tracked);"
        );
        let _ = write!(
            s,
            "
var<private> {p}_shadow{k}: u32;

fn {p}_place_w{k}(base: u32) -> u32 {{
    {p}_shadow{k} = base;
    if base == {none}u {{
        return base;
    }}
    return base + {}u;
}}

fn {p}_read_all_w{k}(element: u32, site: u32) {{
    for (var c = 0u; c < {lanes}u; c++) {{
        {p}_read_w{k}(element * {lanes}u + c, site);
    }}
}}

fn {p}_write_all_w{k}(element: u32, site: u32) {{
    for (var c = 0u; c < {lanes}u; c++) {{
        {p}_write_w{k}(element * {lanes}u + c, site);
    }}
}}

fn {p}_read_w{k}(element: u32, site: u32) {{
    {track}
    let me = {p}_local + 1u;
    let writer = atomicLoad(&{p}[at]);
    let racy = tracked && {p}_current(writer) && (writer & {mask}u) != me;
    let writer_site = atomicLoad(&{p}[at + 1u]);
    {p}_report(racy, {race}u, site, writer_site + 1u, element / {lanes}u, (writer & {mask}u) - 1u, 0u, {k}u);
    let epoch = {p}_steps << {bits}u;
    atomicMax(&{p}[at + 2u], epoch | me);
    atomicMax(&{p}[at + 3u], (me << {site_bits}u) | site);
    atomicMax(&{p}[at + 4u], epoch | ({mask}u - {p}_local));
    atomicMax(&{p}[at + 5u], (({mask}u - {p}_local) << {site_bits}u) | site);
}}

fn {p}_write_w{k}(element: u32, site: u32) {{
    {track}
    let me = {p}_local + 1u;
    let writer = atomicExchange(&{p}[at], ({p}_epoch << {bits}u) | me);
    let writer_site = atomicExchange(&{p}[at + 1u], site);
    let overwrites = tracked && {p}_current(writer) && (writer & {mask}u) != me;
    {p}_report(overwrites, {race}u, site, writer_site + 1u, element / {lanes}u, (writer & {mask}u) - 1u, 0u, {k}u);
    // A reader's site is known where its site word is the same reader's.
    let high = atomicLoad(&{p}[at + 2u]);
    let high_site = atomicLoad(&{p}[at + 3u]);
    let high_reader = high & {mask}u;
    let after_high = tracked && !overwrites && {p}_current_read(high) && high_reader != me;
    let high_line = select(0u, (high_site & {site_mask}u) + 1u, high_site >> {site_bits}u == high_reader);
    {p}_report(after_high, {race}u, site, high_line, element / {lanes}u, high_reader - 1u, 0u, {k}u);
    let low = atomicLoad(&{p}[at + 4u]);
    let low_site = atomicLoad(&{p}[at + 5u]);
    let low_reader = low & {mask}u;
    let after_low = tracked && !overwrites && !after_high && {p}_current_read(low)
        && {mask}u - low_reader != {p}_local;
    let low_line = select(0u, (low_site & {site_mask}u) + 1u, low_site >> {site_bits}u == low_reader);
    {p}_report(after_low, {race}u, site, low_line, element / {lanes}u, {mask}u - low_reader, 0u, {k}u);
}}
",
            u64::from(w) * scalars
        );
    }
    for (g, (name, array)) in storage.iter().enumerate() {
        let bounds = format!(
            "let len = arrayLength(&{name});
    let outside = index >= len;
    {p}_report(outside, {}u, site, 0u, index, 0u, len, {g}u);",
            kind::STORAGE_BOUNDS
        );
        let race = kind::STORAGE_RACE;
        let region = format!("select({dummy}u, {p}_region, {p}_region != {none}u)");
        let _ = write!(
            s,
            "
fn {p}_touch_s{g}(index: u32, site: u32) {{
    {bounds}
    atomicStore(&{p}[{region}], 1u);
}}
"
        );
        if !array.shadowed {
            let _ = write!(
                s,
                "
fn {p}_load_s{g}(index: u32, site: u32) {{
    {bounds}
}}
"
            );
            continue;
        }
        let _ = write!(
            s,
            "
var<private> {p}_base{g}: u32;

fn {p}_place_s{g}(base: u32) -> u32 {{
    if arrayLength(&{name}) > {storage_limit}u / 2u {{
        {p}_base{g} = {none}u;
        return base;
    }}
    {p}_base{g} = base;
    return base + 2u * arrayLength(&{name});
}}

fn {p}_load_s{g}(index: u32, site: u32) {{
    {bounds}
    // A workgroup past the tracked ones may have synchronized: left alone.
    let tracked = !outside && {p}_base{g} != {none}u && {p}_region != {none}u;
    let at = select({dummy}u, {p}_base{g} + 2u * index, tracked);
    let writer = atomicLoad(&{p}[at]);
    let other_site = atomicLoad(&{p}[at + 1u]);
    let unsynchronized = atomicLoad(&{p}[{region}]) == 0u;
    let racy = tracked && writer != 0u && writer != {p}_group + 1u && unsynchronized;
    {p}_report(racy, {race}u, site, other_site, index, writer - 1u, 0u, {g}u);
}}

fn {p}_store_s{g}(index: u32, site: u32) {{
    {bounds}
    let tracked = !outside && {p}_base{g} != {none}u;
    let at = select({dummy}u, {p}_base{g} + 2u * index, tracked);
    let writer = atomicExchange(&{p}[at], {p}_group + 1u);
    let other_site = atomicExchange(&{p}[at + 1u], site + 1u);
    let racy = tracked && writer != 0u && writer != {p}_group + 1u;
    {p}_report(racy, {race}u, site, other_site, index, writer - 1u, 0u, {g}u);
}}
"
        );
    }
    s
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
                    dims,
                    lanes: self.workgroup[k].1.lanes,
                    read: find(&module, format!("{PREFIX}_read_w{k}"))?,
                    write: find(&module, format!("{PREFIX}_write_w{k}"))?,
                    read_all: find(&module, format!("{PREFIX}_read_all_w{k}"))?,
                    write_all: find(&module, format!("{PREFIX}_write_all_w{k}"))?,
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
            let shadowed = array.shadowed;
            pass.storage.insert(
                global,
                StorageChecks {
                    load: find(&module, format!("{PREFIX}_load_s{g}"))?,
                    store: shadowed
                        .then(|| find(&module, format!("{PREFIX}_store_s{g}")))
                        .transpose()?,
                    touch: find(&module, format!("{PREFIX}_touch_s{g}"))?,
                },
            );
            if shadowed {
                places.push(find(&module, format!("{PREFIX}_place_s{g}"))?);
            }
        }
        for &function in &reachable {
            let mut f = std::mem::take(&mut module.functions[function]);
            let body = std::mem::take(&mut f.body);
            f.body = pass.block(&mut f, body);
            module.functions[function] = f;
        }
        let body = std::mem::take(&mut entry.function.body);
        let mut body = pass.block(&mut entry.function, body);
        let flush = find(&module, format!("{PREFIX}_flush"))?;
        flush_before_returns(&mut body, flush);
        if !matches!(body.last(), Some(Statement::Return { .. })) {
            body.push(call(flush), Span::UNDEFINED);
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

/// Calls `flush` before every `return` of an entry point's body.
fn flush_before_returns(block: &mut Block, flush: Handle<Function>) {
    let mut out = Block::with_capacity(block.len());
    for (mut statement, span) in std::mem::take(block).span_into_iter() {
        match &mut statement {
            Statement::Return { .. } => out.push(call(flush), span),
            Statement::Block(inner) => flush_before_returns(inner, flush),
            Statement::If { accept, reject, .. } => {
                flush_before_returns(accept, flush);
                flush_before_returns(reject, flush);
            }
            Statement::Switch { cases, .. } => {
                for case in cases {
                    flush_before_returns(&mut case.body, flush);
                }
            }
            Statement::Loop { body, .. } => flush_before_returns(body, flush),
            _ => {}
        }
        out.push(statement, span);
    }
    *block = out;
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

/// The checks of one tracked workgroup array.
struct WorkgroupChecks {
    dims: Vec<u32>,
    /// As [`WorkgroupArray::lanes`].
    lanes: u32,
    /// Of one element, or one component where `lanes` > 1.
    read: Handle<Function>,
    write: Handle<Function>,
    /// Of every component of one element.
    read_all: Handle<Function>,
    write_all: Handle<Function>,
}

/// The checks of one tracked storage buffer; `store` only where writes are shadowed.
struct StorageChecks {
    load: Handle<Function>,
    store: Option<Handle<Function>>,
    touch: Handle<Function>,
}

/// The pass over one entry point's functions: inserts the calls, numbers the sites.
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
                    out.push(statement, span);
                    let workgroup = barrier.contains(Barrier::WORK_GROUP);
                    self.count_barrier(&mut out, span, workgroup);
                }
                Statement::WorkGroupUniformLoad { .. } => {
                    self.count_barrier(&mut out, span, true);
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
                    let accept = self.block(f, accept);
                    let reject = self.block(f, reject);
                    out.push(
                        Statement::If {
                            condition,
                            accept,
                            reject,
                        },
                        span,
                    );
                }
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
                Statement::Loop {
                    body,
                    continuing,
                    break_if,
                } => {
                    let body = self.block(f, body);
                    let continuing = self.block(f, continuing);
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
        let Some((global, steps)) = chain(f, pointer) else {
            return;
        };
        let before = f.expressions.len();
        let (function, element) = if let Some(array) = self.workgroup.get(&global) {
            if touch == AccessKind::Atomic || steps.len() < array.dims.len() {
                return;
            }
            let levels = array.dims.len();
            let whole = array.lanes > 1 && steps.len() == levels;
            let function = match (touch, whole) {
                (AccessKind::Read, false) => array.read,
                (AccessKind::Read, true) => array.read_all,
                (_, false) => array.write,
                (_, true) => array.write_all,
            };
            let mut dims = array.dims.clone();
            if array.lanes > 1 && !whole {
                dims.push(array.lanes);
            }
            (function, flat_index(f, &steps, &dims))
        } else if let Some(buffer) = self.storage.get(&global) {
            let Some(&first) = steps.first() else {
                return;
            };
            let function = match touch {
                AccessKind::Read => buffer.load,
                AccessKind::Write => buffer.store.unwrap_or(buffer.touch),
                AccessKind::Atomic => buffer.touch,
            };
            (function, index(f, first))
        } else {
            return;
        };
        let site = self.site(touch, span);
        let site = f
            .expressions
            .append(Expression::Literal(Literal::U32(site)), Span::UNDEFINED);
        emit_new(f, before, out, span);
        out.push(
            Statement::Call {
                function,
                arguments: vec![element, site],
                result: None,
            },
            span,
        );
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
