//! Unit tests of barriers and subgroup operations: the uniformity check (the control flow
//! and values that are the same in every invocation, followed through loops, helpers and the
//! memory lent to them) and the rules of the subgroup builtins.

use quote::quote;

use super::tests::{body_errors, first_error};
use crate::tests::checked;

#[test]
fn barrier_after_a_varying_early_return_is_rejected() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(y: &mut [f32]) {
                if local_index() > 3 { return; }
                workgroup_barrier();
                y[0] = 1.0;
            }
        }
    });
    assert!(
        error.starts_with("`workgroup_barrier()` must be reached by every invocation"),
        "{error}"
    );
}

#[test]
fn barrier_under_uniform_conditions_is_accepted() {
    checked(quote! {
        mod m {
            #[repr(C)] #[derive(Params)] struct P { n: u32 }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(p: &P, x: &[f32], y: &mut [f32], #[workgroup] t: &mut [f32; 64]) {
                for c in 0..p.n {
                    if x[c] > 0.0 { workgroup_barrier(); }
                    if workgroup_id().x == 0 { storage_barrier(); }
                }
                y[0] = t[0];
            }
        }
    })
    .unwrap();
}

#[test]
fn subgroup_operations_need_uniform_control_flow() {
    let rejected = |body: proc_macro2::TokenStream| {
        first_error(quote! {
            mod m {
                #[kernel(workgroup = [64], grid = [1], features(subgroups))]
                fn k(x: &[f32], y: &mut [f32]) { let i = local_index(); #body }
            }
        })
    };
    let error = rejected(quote! { if i < 32 { y[i] = subgroup_add(x[i]); } });
    assert!(
        error.starts_with(
            "`subgroup_add()` must be reached by every invocation of the workgroup together \
             (WGSL requires subgroup operations in uniform control flow)"
        ),
        "{error}"
    );
    // In a loop that invocations leave at different times, and under a condition computed from
    // a subgroup result.
    let error = rejected(quote! { while x[i] > 0.0 { y[i] = subgroup_min(x[i]); } });
    assert!(
        error.starts_with("`subgroup_min()` must be reached"),
        "{error}"
    );
    let error = rejected(quote! {
        if subgroup_max(x[i]) > 0.0 { workgroup_barrier(); }
        y[i] = 0.0;
    });
    assert!(
        error.starts_with("`workgroup_barrier()` must be reached"),
        "{error}"
    );
    // Varying arguments are fine; so is control flow that every invocation takes together.
    checked(quote! {
        mod m {
            #[repr(C)] #[derive(Params)] struct P { n: u32 }
            #[kernel(workgroup = [64], grid = [1], features(subgroups))]
            fn k(p: &P, x: &[f32], y: &mut [f32]) {
                let i = local_index();
                for c in 0..p.n {
                    y[i] = subgroup_add(x[i + c]) + subgroup_shuffle(x[i], i ^ 1);
                }
            }
        }
    })
    .unwrap();
}

#[test]
fn helpers_use_subgroups_in_uniform_flow_where_their_kernels_declare_them() {
    let module = |features: proc_macro2::TokenStream, body: proc_macro2::TokenStream| {
        quote! {
            mod m {
                fn total(v: f32) -> f32 { subgroup_add(v) }
                #[kernel(workgroup = [64], grid = [1], #features)]
                fn k(x: &[f32], y: &mut [f32]) { let i = local_index(); #body }
            }
        }
    };
    checked(module(
        quote!(features(subgroups)),
        quote! { y[i] = total(x[i]); },
    ))
    .unwrap();
    // The uniformity check follows the call into the helper.
    let error = first_error(module(
        quote!(features(subgroups)),
        quote! { if i < 32 { y[i] = total(x[i]); } },
    ));
    assert!(error.starts_with("`total()` must be reached"), "{error}");
    // A kernel without the feature is told so, at its name.
    let error = first_error(module(quote!(), quote! { y[i] = total(x[i]); }));
    assert_eq!(
        error,
        "`k` calls `total`, which uses `subgroup_add`; `subgroup_add` is a subgroup operation: \
         declare `features(subgroups)` in the `#[kernel(...)]` of `k`, and its launcher will \
         check that the device has subgroups"
    );
}

/// A module whose kernel (64 invocations, `features(subgroups)` unless `features` is empty)
/// runs `body` with `i = local_index()`, `x: &[f32]`, `u: &[u32]`, `y: &mut [f32]`.
fn subgroup_kernel(
    features: proc_macro2::TokenStream,
    body: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[repr(C)] #[derive(Params)] struct P { n: u32 }
            #[kernel(workgroup = [64], grid = [1] #features)]
            fn k(p: &P, x: &[f32], u: &[u32], y: &mut [f32]) { let i = local_index(); #body }
        }
    }
}

#[test]
fn subgroup_size_is_uniform_so_a_loop_to_it_may_shuffle() {
    let features = quote!(, features(subgroups));
    checked(subgroup_kernel(
        features.clone(),
        quote! {
            let mut total = x[i];
            let mut off = 1u32;
            while off < subgroup_size() {
                total = total + subgroup_shuffle_down(total, off);
                off = off * 2;
            }
            for s in 0..num_subgroups() {
                total = total + subgroup_broadcast_first(total) * (s as f32);
            }
            y[i] = total;
        },
    ))
    .unwrap();
    // `subgroup_id()` differs between subgroups: a loop to it is not uniform.
    let error = first_error(subgroup_kernel(
        features,
        quote! {
            for s in 0..subgroup_id() { y[i] = subgroup_add(x[i] + (s as f32)); }
        },
    ));
    assert!(
        error.starts_with("`subgroup_add()` must be reached"),
        "{error}"
    );
}

#[test]
fn subgroup_operations_check_their_arguments() {
    let error = |body| first_error(subgroup_kernel(quote!(, features(subgroups)), body));
    assert_eq!(
        error(quote! { y[i] = f32::from_bits(subgroup_and(x[i]).to_bits()); }),
        "`subgroup_and` takes integers (`u32`, `i32` or their vectors), not `f32`; on floats, \
         combine their bits: `subgroup_and(x.to_bits())`"
    );
    assert_eq!(
        error(quote! { let b = subgroup_mul(x[i] > 0.0); y[i] = 0.0; }),
        "`subgroup_mul` takes numbers (`f32`, `f16`, `u32`, `i32` or their vectors), not `bool`; \
         for a `bool`, use `subgroup_all`, `subgroup_any` or `subgroup_ballot`"
    );
    assert_eq!(
        error(quote! { if subgroup_all(u[i]) { y[i] = 1.0; } }),
        "`subgroup_all` takes a `bool` condition, not `u32`; compare the value, as in \
         `subgroup_all(x != 0)` or `subgroup_all(x > 0.0)`"
    );
    let shuffle = error(quote! { y[i] = subgroup_shuffle_down(x[i], 1.0); });
    assert!(
        shuffle.starts_with("the distance, in lanes, to read from is a `u32`: expected"),
        "{shuffle}"
    );
    assert!(error(quote! { y[i] = subgroup_shuffle_xor(x[i], 1i32); })
        .starts_with("the mask to xor the lane with is a `u32`: expected"),);
    assert_eq!(
        error(quote! { y[i] = subgroup_inclusive_add(x[i], 1); }),
        "`subgroup_inclusive_add` takes 1 argument(s), but 2 were given"
    );
    assert_eq!(
        error(quote! { y[i] = subgroup_broadcast(x[i]); }),
        "`subgroup_broadcast` takes 2 argument(s), but 1 were given"
    );
    let ballot = error(quote! { let b: u32 = subgroup_ballot(x[i] > 0.0); y[i] = 0.0; });
    assert!(ballot.contains("Vec4<u32>"), "{ballot}");
    // Each needs the feature.
    let error = first_error(subgroup_kernel(
        quote!(),
        quote! { y[i] = subgroup_exclusive_mul(x[i]); },
    ));
    assert!(
        error.starts_with(
            "`subgroup_exclusive_mul` is a subgroup operation: declare `features(subgroups)`"
        ),
        "{error}"
    );
    let error = first_error(subgroup_kernel(
        quote!(),
        quote! { y[i] = num_subgroups() as f32; },
    ));
    assert!(
        error.starts_with("`num_subgroups` is a subgroup operation"),
        "{error}"
    );
}

#[test]
fn the_lane_of_a_broadcast_is_a_constant_below_128() {
    let features = quote!(, features(subgroups));
    checked(subgroup_kernel(
        features.clone(),
        quote! {
            let lane = 3u32;
            y[i] = subgroup_broadcast(x[i], 2) + subgroup_broadcast(x[i], lane * 2 + 1);
        },
    ))
    .unwrap();
    let error = first_error(subgroup_kernel(
        features.clone(),
        quote! { y[i] = subgroup_broadcast(x[i], p.n); },
    ));
    assert!(
        error.starts_with("the lane of `subgroup_broadcast` must be a constant"),
        "{error}"
    );
    assert!(
        error.ends_with("use `subgroup_shuffle(x, lane)`"),
        "{error}"
    );
    let error = first_error(subgroup_kernel(
        features,
        quote! { y[i] = subgroup_broadcast(x[i], 128); },
    ));
    assert!(
        error.starts_with(
            "the lane of `subgroup_broadcast` is 128, but WGSL requires a lane below 128"
        ),
        "{error}"
    );
}

#[test]
fn subgroup_ids_need_a_one_dimensional_workgroup() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [8, 8], grid = [1], features(subgroups))]
            fn k(y: &mut [u32]) { y[local_index()] = subgroup_id() + subgroup_size(); }
        }
    });
    assert_eq!(
        error,
        "`subgroup_id()` needs a one-dimensional workgroup, but this one is [8, 8, 1] (naga \
         refuses the subgroup ids in more than one dimension); declare `workgroup = [64]` and \
         compute the 2-D position from `local_index()`"
    );
}

fn is_barrier_error(errors: &[String]) -> bool {
    errors.len() == 1 && errors[0].starts_with("`workgroup_barrier()` must be reached")
}

/// `let mut v0..vN`; each iteration of a loop moves every value one place on and sets `v0`
/// from `source`: `vN` holds `source` only after N iterations.
fn carried_chain(length: usize, source: &str) -> (String, String) {
    let lets: String = (0..=length)
        .map(|i| format!("let mut v{i} = 0u32;"))
        .collect();
    let shifts: String = (1..=length)
        .rev()
        .map(|i| format!("v{i} = v{};", i - 1))
        .collect();
    (lets, format!("{shifts} v0 = {source};"))
}

#[test]
fn loop_carried_chains_of_any_length_reach_the_barrier() {
    for length in [1, 2, 7, 40] {
        let (lets, shifts) = carried_chain(length, "local_index()");
        let body = format!(
            "{lets} for it in 0..p.n {{ if v{length} > 3 {{ workgroup_barrier(); }} {shifts} }}"
        );
        assert!(
            is_barrier_error(&body_errors("", &body)),
            "chain of {length}"
        );
        let uniform = format!(
            "{} for it in 0..p.n {{ if v{length} > 3 {{ workgroup_barrier(); }} {} }}",
            lets,
            shifts.replace("local_index()", "workgroup_id().x")
        );
        assert_eq!(body_errors("", &uniform), Vec::<String>::new());
    }
}

#[test]
fn chains_through_nested_loops_and_breaks_are_followed() {
    let (lets, shifts) = carried_chain(7, "local_index()");
    let nested = format!(
        "{lets} for a in 0..p.n {{ for b in 0..p.n {{ {shifts} }} \
         for c in 0..p.n {{ if v7 == 1 {{ workgroup_barrier(); }} }} }}"
    );
    assert!(is_barrier_error(&body_errors("", &nested)));
    // A `break` on a varying value makes every later iteration non-uniform, even above it.
    let broken = format!("{lets} loop {{ workgroup_barrier(); if v7 > 3 {{ break; }} {shifts} }}");
    assert!(is_barrier_error(&body_errors("", &broken)));
    // So does a `return`: the invocations that left miss the next iteration's barrier.
    let returned = "for i in 0..p.n { workgroup_barrier(); if local_index() == i { return; } }";
    assert!(is_barrier_error(&body_errors("", returned)));
}

#[test]
fn chains_through_helpers_are_followed() {
    let helpers = "fn pass(x: u32) -> u32 { x } \
                   fn sync_if(x: u32) { if x > 3 { workgroup_barrier(); } } \
                   fn sync_via(x: u32) { sync_if(x + 1); }";
    let (lets, shifts) = carried_chain(7, "pass(local_index())");
    let through_result =
        format!("{lets} for it in 0..p.n {{ {shifts} if v7 > 1 {{ workgroup_barrier(); }} }}");
    assert!(is_barrier_error(&body_errors(helpers, &through_result)));
    let (lets, shifts) = carried_chain(7, "local_index()");
    let into_helper = format!("{lets} for it in 0..p.n {{ {shifts} sync_via(v7); }}");
    let errors = body_errors(helpers, &into_helper);
    assert!(is_barrier_error(&errors), "{errors:?}");
    assert_eq!(
        body_errors(helpers, "sync_via(p.n); sync_via(workgroup_id().x);"),
        Vec::<String>::new()
    );
}

#[test]
fn deep_loop_nests_and_helper_chains_are_checked_in_linear_time() {
    // Walking each loop body twice per level took 3.6 s at 20 levels, doubling per level.
    let nest = format!(
        "{} workgroup_barrier(); {}",
        "for i in 0..p.n {".repeat(30),
        "}".repeat(30)
    );
    assert_eq!(body_errors("", &nest), Vec::<String>::new());
    let varying = nest.replacen("0..p.n", "0..local_index()", 1);
    assert!(is_barrier_error(&body_errors("", &varying)));
    // Each helper calls the next twice: checking callees once per call would take 2^30.
    let helpers: String = (0..30)
        .map(|i| format!("fn h{i}(x: u32) {{ h{}(x); h{0}(x + 1); }}", i + 1))
        .chain(["fn h30(x: u32) { if x > 0 { workgroup_barrier(); } }".to_owned()])
        .collect();
    assert_eq!(body_errors(&helpers, "h0(p.n);"), Vec::<String>::new());
    assert!(is_barrier_error(&body_errors(
        &helpers,
        "h0(local_index());"
    )));
}

#[test]
fn a_uniform_load_reads_one_element_of_a_workgroup_array() {
    let errors = |body: &str| {
        let text = format!(
            "mod m {{ #[kernel(workgroup = [64], grid = [1])] \
             fn k(x: &[f32], y: &mut [f32], #[workgroup] t: &mut [f32; 64]) {{ {body} }} }}"
        );
        checked(text.parse().unwrap()).err().unwrap_or_default()
    };
    let error = |body: &str| {
        let errors = errors(body);
        assert_eq!(errors.len(), 1, "{body}: {errors:?}");
        errors[0].clone()
    };
    // A load from workgroup memory may differ between invocations; the uniform load may not.
    let varying = errors("let v = t[0]; if v > 0.0 { workgroup_barrier(); } y[0] = v;");
    assert!(is_barrier_error(&varying), "{varying:?}");
    let uniform = "let v = workgroup_uniform_load(&t[1]); if v > 0.0 { workgroup_barrier(); } \
                   y[0] = v;";
    assert_eq!(errors(uniform), Vec::<String>::new());
    // Its type is the element's.
    let typed = error("let v: u32 = workgroup_uniform_load(&t[0]); y[0] = 0.0;");
    assert!(
        typed.contains("`u32`") && typed.contains("`f32`"),
        "{typed}"
    );
    // Reached in varying flow, it is a barrier like the others.
    let flow = error("if local_index() == 0 { y[0] = workgroup_uniform_load(&t[0]); }");
    assert!(
        flow.starts_with("`workgroup_uniform_load()` must be reached"),
        "{flow}"
    );
    for (body, wanted) in [
        (
            "y[0] = workgroup_uniform_load(&x[0]);",
            "reads one element of a workgroup array",
        ),
        (
            "y[0] = workgroup_uniform_load(&t);",
            "reads one element of a workgroup array",
        ),
        (
            "y[0] = workgroup_uniform_load(t[0]);",
            "takes the place of one element",
        ),
        (
            "y[0] = workgroup_uniform_load(&mut t[0]);",
            "lend the element as `&a[i]`",
        ),
        ("y[0] = workgroup_uniform_load();", "takes 1 argument"),
        // Its pointer must be uniform: an index that varies is refused (Tint does).
        (
            "let i = local_index() / 2; y[0] = workgroup_uniform_load(&t[i + 1]);",
            "requires its pointer to be the same in every invocation",
        ),
    ] {
        let message = error(body);
        assert!(message.contains(wanted), "{body}: {message}");
    }
    // A uniform index is fine, however computed.
    let computed = "let i = workgroup_id().x % 32; y[0] = workgroup_uniform_load(&t[i * 2]);";
    assert_eq!(errors(computed), Vec::<String>::new());
}

/// A workgroup value (`#[workgroup] s: &mut f32`) is read and written as `*s` or `s`, and
/// varies as workgroup memory does.
#[test]
fn workgroup_values_read_and_write_as_values() {
    let errors = |body: &str| {
        let text = format!(
            "mod m {{ #[kernel(workgroup = [64], grid = [1])] \
             fn k(y: &mut [f32], #[workgroup] s: &mut f32, #[workgroup] v: &mut Vec2<u32>) \
             {{ {body} }} }}"
        );
        checked(text.parse().unwrap()).err().unwrap_or_default()
    };
    let fine = "if local_index() == 0 { *s = 2.0; *v = vec2(1u32, 2); v.y = 3; } \
                workgroup_barrier(); y[local_index()] = *s + s + (*v).x as f32;";
    assert_eq!(errors(fine), Vec::<String>::new());
    let varying = errors("if *s > 0.0 { workgroup_barrier(); }");
    assert!(
        varying.len() == 1 && is_barrier_error(&varying),
        "{varying:?}"
    );
    // Read with `workgroup_uniform_load(&s)`, it is uniform.
    let uniform = "if workgroup_uniform_load(&s) > 0.0 { workgroup_barrier(); }";
    assert_eq!(errors(uniform), Vec::<String>::new());
    let indexed = errors("s[0] = 1.0;");
    assert!(
        indexed.len() == 1 && indexed[0].contains("not an array"),
        "{indexed:?}"
    );
}

/// Whether `body`, beside `helpers`, passes the uniformity check, in a kernel with a
/// read-only buffer `x`, a read-write one `y` and workgroup memory `t` (all of `u32`); an
/// error other than one barrier's fails the test.
fn barrier_passes(helpers: &str, body: &str) -> bool {
    let text = format!(
        "mod m {{ {helpers} #[kernel(workgroup = [64], grid = [1])] \
         fn k(x: &[u32], y: &mut [u32], #[workgroup] t: &mut [u32; 64]) {{ {body} y[0] = 1; }} }}"
    );
    let errors = checked(text.parse().unwrap()).err().unwrap_or_default();
    assert!(errors.is_empty() || is_barrier_error(&errors), "{errors:?}");
    errors.is_empty()
}

/// Whether a barrier under `v != 0` passes, `v` from `body` with `helpers` beside.
fn barrier_under_v_passes(helpers: &str, body: &str) -> bool {
    barrier_passes(
        helpers,
        &format!("{body} if v != 0 {{ workgroup_barrier(); }}"),
    )
}

#[test]
fn what_a_helper_gives_back_varies_as_what_reaches_it() {
    let passes = barrier_under_v_passes;
    // A value parameter that does not reach the result does not make it vary.
    let picks = "fn pick(a: u32, b: u32) -> u32 { let unused = b * 2; a + 1 }";
    assert!(passes(picks, "let v = pick(3, local_index());"));
    assert!(!passes(picks, "let v = pick(local_index(), 3);"));
    // Workgroup memory read through `workgroup_uniform_load` in a helper stays uniform; read
    // plainly, or with the result chosen under a varying condition, it varies.
    let uniform = "fn decided(t: &mut [u32; 64], i: u32) -> u32 { \
                   if i == 0 { t[0] = 1; } workgroup_uniform_load(&t[0]) }";
    assert!(passes(uniform, "let v = decided(t, local_index());"));
    let plain = "fn first(t: &mut [u32; 64]) -> u32 { t[0] }";
    assert!(!passes(plain, "let v = first(t);"));
    let chosen = "fn chosen(i: u32) -> u32 { if i == 0 { return 1; } 2 }";
    assert!(!passes(chosen, "let v = chosen(local_index());"));
}

#[test]
fn a_local_array_varies_as_what_a_helper_writes_into_it() {
    // Whether a barrier under `a[1] != 0` passes after `body` with `helpers` beside.
    let passes = |helpers: &str, body: &str| {
        let body = format!("let mut a = [0u32; 2]; {body} if a[1] != 0 {{ workgroup_barrier(); }}");
        barrier_passes(helpers, &body)
    };
    let set = "fn set(a: &mut [u32; 2], i: u32, v: u32) { a[i] = v; }";
    assert!(passes(set, "set(&mut a, 1, 7);"));
    // The value written varies, or which element is written.
    assert!(!passes(set, "set(&mut a, 1, local_index());"));
    assert!(!passes(set, "set(&mut a, local_index() % 2, 7);"));
    // Written under a varying condition, or by a helper the array is passed on to.
    let under = "fn under(a: &mut [u32; 2], i: u32) { if i == 0 { a[1] = 1; } }";
    assert!(!passes(under, "under(&mut a, local_index());"));
    let nested = format!("{set} fn outer(a: &mut [u32; 2], v: u32) {{ set(a, 1, v); }}");
    assert!(passes(&nested, "outer(&mut a, 7);"));
    assert!(!passes(&nested, "outer(&mut a, local_index());"));
}

#[test]
fn memory_lent_to_a_helper_varies_as_the_callers_does() {
    let passes = barrier_under_v_passes;
    // The helper's parameter is read-only, but the buffer lent is written by other
    // invocations; a read-only buffer and a uniform local array are the same everywhere.
    let first = "fn first(b: &[u32]) -> u32 { b[0] }";
    assert!(!passes(first, "let v = first(y);"));
    assert!(passes(first, "let v = first(x);"));
    let head = "fn head(a: &[u32; 2]) -> u32 { a[0] }";
    assert!(passes(head, "let a = [1u32, 2]; let v = head(&a);"));
    assert!(!passes(
        head,
        "let a = [local_index(), 2]; let v = head(&a);"
    ));
    let top = "fn top(a: &[u32; 64]) -> u32 { a[0] }";
    assert!(!passes(top, "let v = top(t);"));
    // Inside a helper with a barrier, lent memory varies as some caller's does.
    let gate = "fn gate(b: &[u32]) { if b[0] != 0 { workgroup_barrier(); } }";
    assert!(passes(gate, "gate(x); let v = 0u32;"));
    assert!(!passes(gate, "gate(y); let v = 0u32;"));
}

#[test]
fn what_a_helper_writes_into_lent_memory_it_reads_back() {
    let passes = |helpers: &str, body: &str| {
        barrier_passes(helpers, &format!("let mut a = [0u32; 2]; {body}"))
    };
    // Read back inside the helper, and returned...
    let echo = "fn echo(a: &mut [u32; 2], v: u32) -> u32 { a[0] = v; a[0] }";
    let returned = "let v = echo(&mut a, {}); if v != 0 { workgroup_barrier(); }";
    assert!(passes(echo, &returned.replace("{}", "7")));
    assert!(!passes(echo, &returned.replace("{}", "local_index()")));
    // ...or gating a barrier there.
    let gate = "fn gate(a: &mut [u32; 2], v: u32) { a[0] = v; \
                if a[0] != 0 { workgroup_barrier(); } }";
    assert!(passes(gate, "gate(&mut a, 7);"));
    assert!(!passes(gate, "gate(&mut a, local_index());"));
}
