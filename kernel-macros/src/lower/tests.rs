//! Unit tests of `lower/` and `validate`: the WGSL written for small kernels, and that naga
//! accepts it.

use quote::quote;

use crate::tests::wgsl;

#[test]
fn if_expression_is_hoisted_into_a_temporary() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) {
                y[0] = if x[0] > 0.0 { x[0] } else { -x[0] } * 2.0;
            }
        }
    })
    .unwrap();
    assert!(text.contains("var tsr_t0: f32;"), "{text}");
    assert!(
        text.contains("y[0i] = tsr_t0 * 2.0f;") || text.contains("y[0u] = tsr_t0 * 2.0f;"),
        "{text}"
    );
}

#[test]
fn shadowed_and_reserved_names_get_distinct_wgsl_names() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) {
                let filter = 1.0;
                let filter = filter + 1.0;
                let y_copy = filter;
                y[0] = y_copy;
            }
        }
    })
    .unwrap();
    assert!(text.contains("let filter_: f32 = 1.0f;"), "{text}");
    assert!(
        text.contains("let filter__1: f32 = filter_ + 1.0f;"),
        "{text}"
    );
}

#[test]
fn kernels_with_the_same_binding_share_one_declaration() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn a(y: &mut [f32]) { y[0] = 1.0; }
            #[kernel(workgroup = [1], grid = [1])]
            fn b(y: &mut [f32]) { y[0] = 2.0; }
        }
    })
    .unwrap();
    assert_eq!(
        text.matches("var<storage, read_write> y: array<f32>;")
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn kernels_declaring_one_name_differently_get_prefixed_names() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn a(y: &mut [f32]) { y[0] = 1.0; }
            #[kernel(workgroup = [1], grid = [1])]
            fn c(y: &mut [u32]) { y[0] = 3; }
        }
    })
    .unwrap();
    assert!(
        text.contains("var<storage, read_write> a_y: array<f32>;"),
        "{text}"
    );
    assert!(
        text.contains("var<storage, read_write> c_y: array<u32>;"),
        "{text}"
    );
}

#[test]
fn loops_of_every_form_validate() {
    wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32]) {
                let mut t = 0u32;
                for i in 0..4 { t += i; }
                for i in 0..=4 { t += i; }
                for i in (0..4).rev() { if i == 2 { continue; } t += i; }
                for i in (0..=4).rev() { t += i; }
                for i in (1..9).step_by(3) { t += i; }
                #[unroll] for i in (0..4).rev() { t += i; }
                while t > 100 { t -= 1; }
                loop { break; }
                y[0] = t;
            }
        }
    })
    .unwrap();
}

#[test]
fn helpers_see_the_calling_instances_constants_and_lent_memory() {
    let text = wgsl(quote! {
        mod m {
            fn stage(tile: &mut [f32; TILE], x: &[f32], t: u32) {
                tile[t] = x[t];
                workgroup_barrier();
            }
            fn total(tile: &[f32; TILE], acc: &mut [f32; 2]) {
                for i in 0..TILE {
                    acc[i % 2] += tile[i];
                }
            }
            #[kernel(workgroup = [TILE], constants(TILE = [4, 8]), grid = [1])]
            fn k(x: &[f32], y: &mut [f32], #[workgroup] tile: &mut [f32; TILE]) {
                stage(tile, x, local_index());
                let mut acc = [0.0f32; 2];
                total(tile, &mut acc);
                y[local_index()] = acc[0] + acc[1];
            }
        }
    })
    .unwrap();
    assert!(text.contains("fn stage(t: u32)"), "{text}");
    assert!(text.contains("fn stage_1(t: u32)"), "{text}");
    assert!(
        text.contains("fn total(acc: ptr<function, array<f32, 2>>)"),
        "{text}"
    );
    assert!(text.contains("(*acc)["), "{text}");
}

#[test]
fn bool_xor_is_written_as_not_equal() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(x: &[f32], y: &mut [u32]) {
                let a = x[0] > 0.0;
                let mut b = x[1] > 0.0;
                b ^= x[2] > 0.0;
                y[0] = (a ^ b) as u32;
            }
        }
    })
    .unwrap();
    assert!(text.contains("b = b != (x[2u] > 0.0f);"), "{text}");
    assert!(text.contains("u32(a != b)"), "{text}");
}

#[test]
fn i32_min_is_written_as_a_difference() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [i32]) {
                y[0] = -2147483648;
                y[1] = i32::MIN;
                y[2] = 1i32 << 31;
            }
        }
    })
    .unwrap();
    assert_eq!(text.matches("= -2147483647i - 1i;").count(), 3, "{text}");
}

#[test]
fn constant_shifts_are_written_as_their_value() {
    // WGSL's constant evaluation rejects shifting set bits out; Rust does not.
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32], z: &mut [i32]) {
                y[0] = 0xffffffffu32 << 4;
                z[0] = -8i32 >> 1;
            }
        }
    })
    .unwrap();
    assert!(text.contains("y[0u] = 4294967280u;"), "{text}");
    assert!(text.contains("z[0u] = -4i;"), "{text}");
}

#[test]
fn round_and_signum_follow_rust() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1], features(f16))]
            fn k(x: &[f32], y: &mut [f32], h: &mut [f16]) {
                y[0] = x[0].round();
                y[1] = x[1].signum();
                let v = vec2(x[2], x[3]).signum();
                y[2] = v.x;
                h[0] = h[1].signum();
            }
        }
    })
    .unwrap();
    assert!(
        text.contains(
            "select(trunc(x[0u]), trunc(x[0u]) + sign(x[0u]), abs(x[0u] - trunc(x[0u])) >= 0.5f)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "select(select(1.0f, -1.0f, bitcast<u32>(x[1u]) >= 0x80000000u), x[1u], \
             (bitcast<u32>(x[1u]) & 0x7fffffffu) > 0x7f800000u)"
        ),
        "{text}"
    );
    assert!(
        text.contains("bitcast<vec2<u32>>(vec2<f32>(x[2u], x[3u])) >= vec2<u32>(0x80000000u)"),
        "{text}"
    );
    assert!(text.contains("bitcast<u32>(f32(h[1u]))"), "{text}");
}

/// A module whose every user name is a WGSL keyword, reserved word or predeclared name, or
/// spelled so WGSL would refuse it: each position's name is mapped to one WGSL accepts.
fn reserved_names_module() -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[repr(C)]
            #[derive(Clone, Copy, Params)]
            pub struct target {
                pub filter: u32,
                pub filter_: u32,
                pub storage: f32,
                pub r#let: f32,
                pub __x: u32,
                pub tsr_grid: u32,
            }

            fn sampler(mut texture: f32, read_write: &mut [f32; 2], uniform: &target) -> f32 {
                texture += 1.0;
                let var = texture + uniform.storage + uniform.r#let;
                let max = var.max(1.0);
                read_write[0] = max;
                let __ = read_write[1];
                __ + f32::from_bits(uniform.__x)
            }

            fn workgroupBarrier(mut r#in: f32) -> f32 {
                r#in *= 2.0;
                r#in
            }

            #[kernel(workgroup = [64], grid = [1])]
            pub fn r#match(filter: &target, storage: &mut [f32], #[workgroup] private: &mut [f32; 64], read: &[u32]) {
                let r#type = global_id().x;
                let mut function = [0.0f32, 1.0];
                private[local_index()] = sampler(filter.storage, &mut function, filter);
                workgroup_barrier();
                let vec4f = private[0] + function[1] + (filter.filter + filter.filter_ + read[0] + filter.tsr_grid) as f32;
                storage[r#type] = workgroupBarrier(vec4f);
            }

            #[kernel(workgroup = [64], grid = [1])]
            pub fn select(storage: &mut [f32]) {
                let arrayLength = storage.len();
                storage[global_id().x] = arrayLength as f32;
            }
        }
    }
}

#[test]
fn reserved_user_names_are_mapped_to_names_wgsl_accepts() {
    let text = wgsl(reserved_names_module()).unwrap();
    for mapped in [
        "struct target_",
        "filter_: u32",
        "filter__1: u32",
        "storage_: f32",
        "let_: f32",
        "x_: u32",
        "fn sampler_(",
        "fn workgroupBarrier_(",
        "fn match_(",
        "fn select_(",
        "var<workgroup> private_",
        ".storage_",
    ] {
        assert!(text.contains(mapped), "`{mapped}` missing from:\n{text}");
    }
    // For checking the same text with Tint (Dawn's WGSL compiler) by hand.
    if let Some(path) = std::env::var_os("TESSERA_WGSL_OUT") {
        std::fs::write(path, &text).unwrap();
    }
}

/// A template that spells its argument several times (`round`, `signum`, `fract`) gets a
/// helper call in that argument through a `let`, so the helper runs once.
#[test]
fn repeated_builtin_arguments_run_a_helper_once() {
    let text = wgsl(quote! {
        mod m {
            fn bump(count: &mut [u32; 1]) -> f32 {
                count[0] += 1;
                count[0] as f32 * 0.5
            }

            #[kernel(workgroup = [1], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) {
                let mut count = [0u32; 1];
                y[0] = bump(&mut count).round();
                y[1] = count[0] as f32 + x[0].round();
            }
        }
    })
    .unwrap();
    assert_eq!(
        text.matches("bump(").count(),
        2,
        "declared and called once: {text}"
    );
    // A plain argument is still spelled in place.
    assert!(text.contains("trunc(x[0u])"), "{text}");
}

/// Comparisons as a call's arguments keep their parentheses: WGSL would read
/// `h(i < 4u, j > 2u)` as a template list.
#[test]
fn comparisons_as_arguments_keep_their_parentheses() {
    let text = wgsl(quote! {
        mod m {
            fn h(a: bool, b: bool) -> f32 {
                if a && b { 1.0 } else { 0.0 }
            }

            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) {
                let (i, j) = (global_id().x, global_id().y);
                y[0] = h(i < 4, j > 2) + h(i <= 1, j >= 3).max(0.0);
            }
        }
    })
    .unwrap();
    assert!(text.contains("(i < 4u), (j > 2u)"), "{text}");
}

#[test]
fn a_match_whose_arm_breaks_out_of_a_loop_becomes_an_if_chain() {
    // In a WGSL `switch`, `break` leaves the `switch`: the loop would never end.
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(u: &[u32], y: &mut [u32]) {
                let mut i = 0u32;
                loop {
                    match u[i] {
                        0 | 7 => break,
                        1 => { i += 2; }
                        _ => {}
                    }
                    i += 1;
                }
                y[0] = i;
                match u[1] {
                    3 => { y[1] = 3; }
                    _ => { y[1] = 0; }
                }
            }
        }
    })
    .unwrap();
    let body = &text[text.find("fn k(").expect("the entry point")..];
    let chain = body.find("if (tsr_s0 == 0u) || (tsr_s0 == 7u) {");
    let other = body.find("} else if (tsr_s0 == 1u) {");
    assert!(chain.is_some() && other > chain, "{body}");
    // A `match` whose arms stay in the loop, or that is in none, is still a `switch`.
    assert_eq!(body.matches("switch ").count(), 1, "{body}");
}

#[test]
fn a_loop_left_from_a_value_match_is_accepted_and_left() {
    // The only `break` sits in a value block: the loop can end (the check once said it could
    // not), and the `match` becomes an `if` chain so that the `break` leaves the loop.
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(u: &[u32], y: &mut [u32]) {
                let mut i = 0u32;
                let mut total = 0u32;
                loop {
                    let step = match u[i] {
                        0 => {
                            if i > 2 {
                                break;
                            }
                            4
                        }
                        3 => 2,
                        _ => 1,
                    };
                    total += step;
                    i += 1;
                }
                y[0] = total;
            }
        }
    })
    .unwrap();
    let body = &text[text.find("fn k(").expect("the entry point")..];
    assert!(!body.contains("switch "), "{body}");
    assert!(body.contains("if (tsr_s0 == 0u) {"), "{body}");
}

#[test]
fn a_uniform_load_gates_a_barrier_in_a_helper() {
    // The value every invocation reads back is the same, so a barrier may depend on it, in
    // the kernel and in a helper lent the array; naga validates the WGSL.
    let text = wgsl(quote! {
        mod m {
            fn decided(flag: &mut [u32; 2], y: &mut [f32]) {
                if workgroup_uniform_load(&flag[1]) != 0 {
                    workgroup_barrier();
                    y[1] = 1.0;
                }
            }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], y: &mut [f32], #[workgroup] flag: &mut [u32; 2]) {
                if local_index() == 0 {
                    flag[0] = (x[0] > 0.0) as u32;
                    flag[1] = 1;
                }
                let go = workgroup_uniform_load(&flag[0]);
                if go != 0 {
                    workgroup_barrier();
                    y[0] = 1.0;
                }
                decided(flag, y);
            }
        }
    })
    .unwrap();
    assert!(text.contains("workgroupUniformLoad(&flag[0"), "{text}");
    assert!(text.contains("workgroupUniformLoad(&flag[1"), "{text}");
}

#[test]
fn every_subgroup_operation_validates_and_a_broadcast_lane_is_a_literal() {
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], features(subgroups))]
            fn k(x: &[f32], u: &[u32], v: &[i32], y: &mut [f32], w: &mut [u32]) {
                let i = local_index();
                let lane = 5u32;
                let f = subgroup_mul(x[i]) + subgroup_inclusive_add(x[i])
                    + subgroup_exclusive_add(x[i]) + subgroup_inclusive_mul(x[i])
                    + subgroup_exclusive_mul(x[i]) + subgroup_shuffle_up(x[i], 1)
                    + subgroup_shuffle_down(x[i], 2) + subgroup_shuffle_xor(x[i], 3)
                    + subgroup_broadcast(x[i], lane) + subgroup_broadcast(vec2(x[i], 1.0), 4).y;
                y[i] = f;
                let b = subgroup_ballot(x[i] > 0.0);
                let votes = subgroup_all(x[i] > 0.0) as u32 + subgroup_any(x[i] < 0.0) as u32;
                let bits = subgroup_and(u[i]) ^ subgroup_or(vec2(u[i], 1u32)).x
                    ^ subgroup_xor(v[i]) as u32;
                w[i] = b.x + votes + bits + subgroup_id() + num_subgroups() + subgroup_size();
            }
        }
    })
    .unwrap();
    assert!(text.contains("subgroupBroadcast(x[i], 5u)"), "{text}");
    assert!(
        text.contains("@builtin(subgroup_id) tsr_subgroup_id: u32"),
        "{text}"
    );
    assert!(
        text.contains("@builtin(num_subgroups) tsr_num_subgroups: u32"),
        "{text}"
    );
    assert!(!text.contains("enable subgroups;"), "{text}");
}

#[test]
fn a_generic_helper_gets_one_function_per_element_type_its_calls_pass() {
    let text = wgsl(quote! {
        mod m {
            const N: u32 = 4;
            /// The `i`-th element of `m`, doubled, and its lanes' sum.
            fn load<E>(m: &[E], i: u32) -> E {
                m[i] * (2.0 as E)
            }
            fn lanes<E>(v: E) -> E::Scalar {
                v.element_sum()
            }
            fn first<E>(a: &[E; N]) -> E {
                a[0]
            }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], x4: &[Vec4<f32>], y: &mut [f32]) {
                let i = local_index();
                let v = load(x4, i);
                let w = [v; N];
                y[i] = load(x, i) + lanes(v) + lanes(load(x, i)) + first(&w).x;
            }
        }
    })
    .unwrap();
    for function in [
        "fn load_f32(",
        "fn load_vec4_f32(",
        "fn lanes_vec4_f32(",
        "fn lanes_f32(",
        "fn first_vec4_f32(",
    ] {
        assert!(text.contains(function), "{function} in\n{text}");
    }
    assert!(!text.contains('\u{b7}'), "{text}");
}

#[test]
fn a_scalar_is_its_own_lane_in_a_body_over_an_element_type() {
    let text = wgsl(quote! {
        mod m {
            fn lane_sum<E>(v: E) -> E::Scalar {
                let mut sum = 0.0;
                #[unroll]
                for c in 0..E::LANES {
                    sum += v[c];
                }
                sum
            }
            fn first_set<E>(v: E, x: E::Scalar) -> E {
                let mut w = v;
                w[0] = x;
                w
            }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], x4: &[Vec4<f32>], y: &mut [f32]) {
                let i = local_index();
                y[i] = lane_sum(x[i]) + lane_sum(x4[i]) + first_set(x[i], 2.0) + first_set(x4[i], 1.0).y;
            }
        }
    })
    .unwrap();
    let copy = |name: &str| {
        let start = text.find(&format!("fn {name}(")).expect(name);
        text[start..start + text[start..].find("\n}").unwrap()].to_owned()
    };
    assert!(copy("lane_sum_f32").contains("sum += v;"), "{text}");
    assert!(
        copy("lane_sum_vec4_f32").contains("sum += v[3u];"),
        "{text}"
    );
    assert!(copy("first_set_f32").contains("w = x;"), "{text}");
    assert!(copy("first_set_vec4_f32").contains("w[0u] = x;"), "{text}");
}

#[test]
fn a_long_array_of_zeros_is_written_as_the_zero_constructor() {
    // `[0.0 as E; 32]` in a generic helper, and a vector of zeros: no loop fills them (a loop
    // indexes the array at run time, which keeps it out of registers).
    let text = wgsl(quote! {
        mod m {
            fn zeros<E>(v: E) -> E {
                let mut a = [0.0 as E; 32];
                let mut b = [vec3(0u32, 0, 0); 32];
                a[3] = v;
                b[1].x = 2;
                a[3] + (b[1].x as f32 as E)
            }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) { let i = local_index(); y[i] = zeros(x[i]); }
        }
    })
    .unwrap();
    assert!(!text.contains("for (var"), "{text}");
    assert!(text.contains("array<f32, 32>()"), "{text}");
    assert!(text.contains("array<vec3<u32>, 32>()"), "{text}");
}
