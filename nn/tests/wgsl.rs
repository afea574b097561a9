//! The WGSL of the nn kernels, pinned so that a change in lowering or in a kernel shows up as
//! a diff a person can read, and checked by Tint (Dawn's WGSL compiler, Chrome's WebGPU).
//!
//! The whole module is about 350,000 lines (every kernel in every instance), far too much to
//! review as a diff. So two snapshots stand for it, in `tests/snapshots/`:
//!
//! - `wgsl__entry_points.snap`: one line per entry point, with the size and a digest of
//!   everything it reaches (its function, the helpers it calls, the structs, constants and
//!   workgroup variables they name; `// line N` comments left out, so that moving code in
//!   `src/kernels/` changes nothing). A change shows which instances it touched.
//! - `wgsl__samples.snap`: that closure in full, for a few instances that cover the parts
//!   (the f32 and vector GEMM mainloops, the tensor-core mainloop and epilogues, a convolution
//!   gather, an elementwise kernel), without the `// line N` comments.
//!
//! The row operations' module (`WGSL_ROWS`) has its own pair, `wgsl__rows_entry_points.snap`
//! and `wgsl__rows_samples.snap`, and so does attention's (`WGSL_ATTENTION`); the radix
//! sort's (`WGSL_SORT`), gradient clipping's (`WGSL_CLIP`), the embedding's
//! (`WGSL_EMBEDDING`) and the transformer ops' (`WGSL_TRANSFORMER`) are pinned whole,
//! `wgsl__sort.snap`, `wgsl__clip.snap`, `wgsl__embedding.snap` and `wgsl__transformer.snap`.
//!
//! Review with `cargo insta review`, or regenerate with `INSTA_UPDATE=always`.

use std::collections::{BTreeSet, HashMap};

/// One top-level item of the module: a function (with its attributes), a struct, a constant,
/// a variable or an `enable`.
struct Item<'a> {
    name: Option<&'a str>,
    text: String,
    entry_point: bool,
}

/// The identifiers of `text`, in order, comments left out.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(without_comment)
        .flat_map(|line| line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

fn without_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at]).trim_end()
}

/// The module cut into its items: each runs until its braces close on a line ending in `}`,
/// or to a `;` outside braces.
fn items(wgsl: &str) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let (mut start, mut depth, mut at) = (None, 0i32, 0);
    for line in wgsl.split_inclusive('\n') {
        let code = without_comment(line);
        if start.is_none() && !code.trim().is_empty() {
            start = Some(at);
        }
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        at += line.len();
        if let Some(first) = start {
            if depth == 0 && (code.ends_with('}') || code.ends_with(';')) {
                let text = &wgsl[first..at];
                items.push(Item {
                    name: item_name(text),
                    text: text.to_owned(),
                    entry_point: text.starts_with("@compute"),
                });
                start = None;
            }
        }
    }
    items
}

/// `name` in `fn name(`, `struct name {`, `const name`, `var<workgroup> name:`, `override name`.
fn item_name(text: &str) -> Option<&str> {
    let mut words = identifiers(text);
    while let Some(word) = words.next() {
        match word {
            "fn" | "struct" | "const" | "override" | "alias" => return words.next(),
            "var" => return words.find(|w| !matches!(*w, "workgroup" | "private" | "storage")),
            _ => {}
        }
    }
    None
}

/// The items entry point `entry` reaches, in the module's order. `helpers` are the module's
/// named items but its entry points, by name.
fn closure<'a>(
    items: &'a [Item<'a>],
    helpers: &HashMap<&str, &'a Item<'a>>,
    entry: &Item,
) -> Vec<&'a Item<'a>> {
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut pending: Vec<&str> = identifiers(&entry.text).collect();
    while let Some(name) = pending.pop() {
        if reached.contains(name) {
            continue;
        }
        if let Some(item) = helpers.get(name) {
            reached.insert(name);
            pending.extend(identifiers(&item.text));
        }
    }
    items
        .iter()
        .filter(|i| {
            i.name.is_some_and(|n| reached.contains(n)) && !i.entry_point || std::ptr::eq(*i, entry)
        })
        .collect()
}

/// The module's named items but its entry points, by name.
fn helpers<'a>(items: &'a [Item<'a>]) -> HashMap<&'a str, &'a Item<'a>> {
    items
        .iter()
        .filter(|i| !i.entry_point)
        .filter_map(|i| Some((i.name?, i)))
        .collect()
}

/// The text of `items` without `// line N` comments.
fn plain(items: &[&Item]) -> String {
    let mut out = String::new();
    for item in items {
        for line in item.text.lines() {
            let line = match line.find(" // line ") {
                Some(at) => &line[..at],
                None => line,
            };
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// One line per entry point of `wgsl`: its name, and the size and digest of its closure.
fn entry_point_table(wgsl: &str) -> String {
    let items = items(wgsl);
    let helpers = helpers(&items);
    let mut table = String::new();
    for entry in items.iter().filter(|i| i.entry_point) {
        let reached = closure(&items, &helpers, entry);
        let text = plain(&reached);
        table.push_str(&format!(
            "{:<72} {:>3} items {:>6} lines  {:016x}\n",
            entry.name.unwrap_or("?"),
            reached.len(),
            text.lines().count(),
            tessera::source_hash(&text),
        ));
    }
    table
}

/// The closures of the entry points `names` of `wgsl`, in full, one after another.
fn samples_of(wgsl: &str, names: &[&str]) -> String {
    let items = items(wgsl);
    let helpers = helpers(&items);
    let mut samples = String::new();
    for name in names {
        let entry = items
            .iter()
            .find(|i| i.entry_point && i.name == Some(name))
            .unwrap_or_else(|| panic!("no entry point `{name}` in the WGSL"));
        samples.push_str(&format!("// ===== {name}\n\n"));
        samples.push_str(&plain(&closure(&items, &helpers, entry)));
    }
    samples
}

#[test]
fn entry_points_are_pinned() {
    let table = entry_point_table(tessera_nn::WGSL);
    assert!(
        table.lines().count() > 100,
        "too few entry points found:\n{table}"
    );
    insta::assert_snapshot!("entry_points", table);
}

/// Instances whose closures together cover each kind of part once: the f32 GEMM mainloop
/// over scalar and vector loads, the tensor-core mainloop and epilogue, a tensor-core
/// convolution gather by taps, a staged window, a reduction and an elementwise kernel.
const SAMPLES: [&str; 7] = [
    "gemm_forward_f32_reg4",
    "gemm_forward_vec4_f32_reg4",
    "gemm_forward_fragments_f32_depth32_block64_invocations256",
    "conv_grad_input_fragments_by_tap_depth32_block64_invocations256",
    "conv_grad_input_window_block64_invocations512_depth32_slices1_all_taps0",
    "d_bias",
    "adam_step",
];

#[test]
fn sample_instances_are_pinned() {
    insta::assert_snapshot!("samples", samples_of(tessera_nn::WGSL, &SAMPLES));
}

/// The row operations' module ([`tessera_nn::WGSL_ROWS`]), pinned the same way: every entry
/// point, and in full the instances whose closures cover its parts (softmax, the shared
/// normalize and input-gradient helpers, a column sum), scalar and vector, `f32` and `f16`.
const ROW_SAMPLES: [&str; 5] = [
    "softmax_forward_f32_group64_per4",
    "layer_norm_forward_vec4_f32_group128_per8",
    "layer_norm_forward_vec4_f16_group128_per8",
    "layer_norm_grad_x_vec4_f32_group128_per8",
    "layer_norm_grad_params_f32",
];

#[test]
fn row_kernels_are_pinned() {
    let table = entry_point_table(tessera_nn::WGSL_ROWS);
    insta::assert_snapshot!("rows_entry_points", table);
    insta::assert_snapshot!(
        "rows_samples",
        samples_of(tessera_nn::WGSL_ROWS, &ROW_SAMPLES)
    );
}

/// The radix sort's module ([`tessera_nn::WGSL_SORT`]), pinned whole: three kernels.
#[test]
fn sort_kernels_are_pinned() {
    insta::assert_snapshot!("sort", tessera_nn::WGSL_SORT);
}

/// Gradient clipping's module ([`tessera_nn::WGSL_CLIP`]), pinned whole: three kernels.
#[test]
fn clip_kernels_are_pinned() {
    insta::assert_snapshot!("clip", tessera_nn::WGSL_CLIP);
}

/// The embedding's module ([`tessera_nn::WGSL_EMBEDDING`]), pinned whole: four kernels.
#[test]
fn embedding_kernels_are_pinned() {
    insta::assert_snapshot!("embedding", tessera_nn::WGSL_EMBEDDING);
}

/// The transformer ops' module ([`tessera_nn::WGSL_TRANSFORMER`]), pinned whole: three
/// kernels.
#[test]
fn transformer_kernels_are_pinned() {
    insta::assert_snapshot!("transformer", tessera_nn::WGSL_TRANSFORMER);
}

/// Attention's module ([`tessera_nn::WGSL_ATTENTION`]): every entry point, and in full the
/// forward's narrower instance, the row statistics and the tensor-core forward over vectors
/// of f32 (the others unroll the same loops wider, or walk the blocks the other way; all of
/// them but the tensor-core kernels pass Tint below).
#[test]
fn attention_kernels_are_pinned() {
    let table = entry_point_table(tessera_nn::WGSL_ATTENTION);
    insta::assert_snapshot!("attention_entry_points", table);
    let samples = [
        "attention_forward_d64_keys32",
        "attention_row_stats_f32",
        "attention_forward_fragments_vec4_f32_d64_block64",
    ];
    let samples = samples_of(tessera_nn::WGSL_ATTENTION, &samples);
    insta::assert_snapshot!("attention_samples", samples);
}

#[test]
fn portable_kernels_pass_tint() {
    let mut batch =
        tessera_tint::Batch::in_target("tests").expect("a directory for the Tint batch");
    // All but the tensor-core kernels (of `nn` and of attention), whose wgpu extension Tint
    // does not know.
    batch.add("nn", tessera_nn::WGSL_PORTABLE).unwrap();
    batch.add("rows", tessera_nn::WGSL_ROWS).unwrap();
    batch.add("sort", tessera_nn::WGSL_SORT).unwrap();
    batch
        .add("attention", tessera_nn::WGSL_ATTENTION_PORTABLE)
        .unwrap();
    batch.add("clip", tessera_nn::WGSL_CLIP).unwrap();
    batch.add("embedding", tessera_nn::WGSL_EMBEDDING).unwrap();
    batch
        .add("transformer", tessera_nn::WGSL_TRANSFORMER)
        .unwrap();
    match batch.validate() {
        Ok(verdict) => tessera_tint::note(&verdict.to_string()),
        Err(report) => panic!("Tint rejects WGSL that naga accepted:\n{report}"),
    }
}

/// The kernels of [`tessera_nn::WGSL_PORTABLE`] that run only after tensor-core passes, so
/// never on an adapter without tensor cores: the tensor-core GEMM's sum of its split parts.
const AFTER_TENSOR_CORES: [&str; 1] = ["gemm_forward_fragments_reduce"];

/// Every kernel that can run without tensor cores ran under the sanitizer without a hazard:
/// the entry points of [`tessera_nn::WGSL_PORTABLE`] (but [`AFTER_TENSOR_CORES`]) and of the
/// other modules, each found in the file that `TESSERA_SANITIZE_COVERAGE` names. `cargo xtask
/// sanitize` runs nn's tests under the sanitizer with that file, then this test; on its own it
/// has nothing to read. (The tensor-core kernels need a GPU with them; notes/reliability.md
/// says when they last ran there.)
#[test]
#[ignore = "run by `cargo xtask sanitize`, after nn's tests under the sanitizer"]
fn every_portable_kernel_passed_the_sanitizer() {
    let path = std::env::var(tessera::SANITIZE_COVERAGE_ENV)
        .expect("TESSERA_SANITIZE_COVERAGE names the file the sanitized tests wrote");
    let passed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading the sanitizer's coverage file {path}: {e}"));
    let passed: BTreeSet<&str> = passed.lines().collect();
    let modules = [
        ("nn", tessera_nn::WGSL_PORTABLE),
        ("rows", tessera_nn::WGSL_ROWS),
        ("sort", tessera_nn::WGSL_SORT),
        ("attention", tessera_nn::WGSL_ATTENTION_PORTABLE),
        ("clip", tessera_nn::WGSL_CLIP),
        ("embedding", tessera_nn::WGSL_EMBEDDING),
        ("transformer", tessera_nn::WGSL_TRANSFORMER),
    ];
    let mut missing = Vec::new();
    let mut total = 0;
    for (module, wgsl) in modules {
        for entry in items(wgsl).iter().filter(|i| i.entry_point) {
            let name = entry.name.unwrap_or("?");
            if AFTER_TENSOR_CORES.contains(&name) {
                continue;
            }
            total += 1;
            if !passed.contains(name) {
                missing.push(format!("{module}: {name}"));
            }
        }
    }
    assert!(total > 150, "too few entry points found: {total}");
    assert!(
        missing.is_empty(),
        "{} of {total} kernels did not run under the sanitizer (or met a hazard):\n{}",
        missing.len(),
        missing.join("\n")
    );
}
