//! Unit tests of the static race check: the racy patterns it reports, at the read, and the
//! correct ones it must leave alone.

use crate::tests::checked;

/// The errors of a module whose kernel `k` has a workgroup array `s` of 64 `f32`s and the
/// invocation's index as `t`, with `helpers` beside it.
fn errors(helpers: &str, body: &str) -> Vec<String> {
    let text = format!(
        "mod m {{ #[repr(C)] #[derive(Params)] struct P {{ n: u32 }} {helpers} \
         #[kernel(workgroup = [64], grid = [1])] \
         fn k(p: &P, x: &[f32], y: &mut [f32], #[workgroup] s: &mut [f32; 64], \
              #[workgroup] c: &mut [AtomicU32; 1]) {{ let t = local_index(); {body} }} }}"
    );
    checked(text.parse().unwrap()).err().unwrap_or_default()
}

/// The first error, which must be a race.
fn race(helpers: &str, body: &str) -> String {
    let error = errors(helpers, body).into_iter().next().unwrap_or_default();
    assert!(error.contains("(a data race)"), "{error}");
    error
}

fn no_race(helpers: &str, body: &str) {
    let errors = errors(helpers, body);
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn a_reduction_finished_without_barriers_is_reported() {
    // A warp-synchronous finish: correct only if 32 invocations ran in lockstep.
    let error = race(
        "",
        "s[t] = x[t]; workgroup_barrier();
         if t < 32 { s[t] += s[t + 32]; s[t] += s[t + 16]; s[t] += s[t + 8]; }
         if t == 0 { y[0] = s[0]; }",
    );
    assert!(
        error.starts_with(
            "`s[t + 16]` reads another invocation's element of `s`, which that invocation writes \
             through `s[t]` (line 2) before it, with no `workgroup_barrier()` between them"
        ),
        "{error}"
    );
}

#[test]
fn a_tree_reduction_missing_its_barrier_is_reported_across_turns() {
    let error = race(
        "",
        "s[t] = x[t]; workgroup_barrier();
         let mut stride = 32u32;
         while stride > 0 { if t < stride { s[t] += s[t + stride]; } stride /= 2; }",
    );
    assert!(
        error.starts_with(
            "`s[t + stride]` reads another invocation's element of `s`, which that invocation \
             writes through `s[t]` (line 3) in the loop's previous turn"
        ),
        "{error}"
    );
    no_race(
        "",
        "s[t] = x[t]; workgroup_barrier();
         let mut stride = 32u32;
         while stride > 0 { if t < stride { s[t] += s[t + stride]; } workgroup_barrier(); stride /= 2; }
         y[t] = s[0];",
    );
    no_race(
        "",
        "s[t] = x[t];
         for step in 0..6u32 { workgroup_barrier(); let d = 32u32 >> step; if t < d { s[t] += s[t + d]; } }",
    );
}

#[test]
fn every_invocation_reading_one_element_is_reported() {
    let error = race("", "s[t] = x[t]; y[t] = s[0];");
    assert!(
        error.starts_with(
            "every invocation reads `s[0]`, which one invocation writes through `s[t]` (line 1) \
             before it"
        ),
        "{error}"
    );
    // Read by the invocation that wrote it.
    no_race("", "s[t] = x[t]; if t == 0 { y[0] = s[0]; }");
    // Written by one invocation, then read by all: an element, and a workgroup value.
    let error = race("", "if t == 0 { s[0] = x[0]; } y[t] = s[0];");
    assert!(
        error.starts_with(
            "every invocation reads `s[0]`, which one invocation writes through `s[0]`"
        ),
        "{error}"
    );
    let text = "mod m { #[kernel(workgroup = [64], grid = [1])] \
                fn k(x: &[f32], y: &mut [f32], #[workgroup] total: &mut f32) { \
                let t = local_index(); if t == 0 { *total = x[0]; } y[t] = *total; } }";
    let errors = checked(text.parse().unwrap()).err().unwrap_or_default();
    assert!(
        errors.first().is_some_and(|e| e.starts_with(
            "every invocation reads `total`, which one invocation writes through `total` (line 1)"
        )),
        "{errors:#?}"
    );
    no_race(
        "",
        "if t == 0 { s[0] = x[0]; y[0] = s[0]; } workgroup_barrier(); y[t] = s[0];",
    );
}

#[test]
fn a_neighbour_read_through_a_let_or_in_a_helper_is_reported() {
    let error = race("", "let i = t + 1; s[t] = x[t]; y[t] = s[i];");
    assert!(
        error.starts_with("`s[i]` reads another invocation's element"),
        "{error}"
    );
    let error = race(
        "fn swap(s: &mut [f32; 64], t: u32) -> f32 { s[t] = 1.0; s[t ^ 1] }",
        "y[t] = swap(s, t);",
    );
    assert!(
        error.starts_with("`s[t ^ 1]` reads another invocation's element"),
        "{error}"
    );
}

#[test]
fn correct_patterns_are_left_alone() {
    // A barrier between; an invocation's own elements; atomics.
    no_race(
        "",
        "s[t] = x[t]; workgroup_barrier(); y[t] = s[t ^ 1] + s[0];",
    );
    no_race("", "s[t] = x[t]; s[t] *= 2.0; y[t] = s[t];");
    no_race(
        "",
        "for k in 0..4u32 { s[(t * 4 + k) % 64] = x[k]; } y[t] = s[(t * 4 + 2) % 64];",
    );
    no_race("", "c[0].fetch_add(1); y[t] = c[0].load() as f32;");
    // A helper that holds the barrier.
    no_race(
        "fn sync() { workgroup_barrier(); }",
        "s[t] = x[t]; sync(); y[t] = s[t + 1];",
    );
    // `workgroup_uniform_load` waits for every invocation's writes.
    no_race("", "s[t] = x[t]; y[t] = workgroup_uniform_load(&s[0]);");
    // Elements no other invocation of the 64 writes: the invocation's own second element, and
    // one a whole workgroup past its first (`s` is short, but the check reasons on indices).
    no_race("", "s[t] = x[t]; s[t + 64] = x[t]; y[t] = s[t + 64];");
    no_race("", "s[t] = x[t]; y[t] = s[t + 64] + s[t * 2 + 1];");
    no_race("", "s[t * 2] = x[t]; y[t] = s[t * 2 + 1];");
    // A helper's parameter that not every call passes the invocation's index.
    no_race(
        "fn pair(s: &mut [f32; 64], i: u32) -> f32 { s[i] = 1.0; s[i + 1] }",
        "y[t] = pair(s, t) + pair(s, 2 * t);",
    );
    // The index's variable changed since the write: another element, whatever its name.
    no_race(
        "",
        "let mut i = t; s[i] = x[t]; i = 63 - t; y[t] = s[i + 1];",
    );
}
