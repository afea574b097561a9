//! Unit tests of `check/`: inference, type errors, limits, layouts, constants, generic helpers.
//! Those of barriers and subgroup operations are in `uniformity_tests.rs`, those of matrix
//! fragments in `fragment_tests.rs`.

use quote::quote;

use crate::check::layout;
use crate::ir::{Associated, HostElement, ParamsField, ParamsStruct, Scalar, StmtKind, Ty};
use crate::tests::checked;

pub(super) fn first_error(tokens: proc_macro2::TokenStream) -> String {
    checked(tokens)
        .err()
        .and_then(|e| e.into_iter().next())
        .unwrap_or_default()
}

#[test]
fn literals_take_the_type_their_uses_need() {
    let module = checked(quote! {
        mod m {
            #[repr(C)] #[derive(Params)] struct P { n: u32 }
            #[kernel(workgroup = [1], grid = [1])]
            fn k(p: &P, y: &mut [f32]) {
                let mut i = 0;
                let x = 1.5;
                let z = -3;
                while i < p.n { y[i] = x; i += 1; }
            }
        }
    })
    .unwrap();
    let types: Vec<Ty> = module.kernels[0].instances[0]
        .general()
        .body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Let { ty, .. } => Some(ty.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(types, [Ty::U32, Ty::F32, Ty::I32]);
}

#[test]
fn mixed_arithmetic_suggests_a_cast() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) { let i = global_id().x; y[i] = x[i] * i; }
        }
    });
    assert_eq!(
        error,
        "`f32` and `u32` cannot be multiplied; write `x[i] as u32 * i` or `x[i] * i as f32`"
    );
}

#[test]
fn immutable_locals_and_loops_are_enforced() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) { let a = 1.0; a = 2.0; y[0] = a; }
        }
    });
    assert_eq!(error, "`a` is not mutable; declare it with `let mut a`");
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) { break; }
        }
    });
    assert_eq!(error, "`break` and `continue` belong inside a loop");
}

#[test]
fn invocation_ids_are_only_in_kernels() {
    let error = first_error(quote! {
        mod m {
            fn helper() -> u32 { global_id().x }
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32]) { y[0] = helper(); }
        }
    });
    assert!(
        error.starts_with("`global_id()` is only available in kernels"),
        "{error}"
    );
}

#[test]
fn match_needs_a_wildcard_and_distinct_values() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32]) { match y[0] { 0 => {}, 0 => {} } }
        }
    });
    assert_eq!(error, "`0` is matched by an earlier arm already");
}

fn params(fields: &[(&str, Ty)]) -> ParamsStruct {
    let span = proc_macro2::Span::call_site();
    ParamsStruct {
        refused: Vec::new(),
        name: syn::Ident::new("P", span),
        fields: fields
            .iter()
            .map(|(name, ty)| ParamsField {
                name: syn::Ident::new(name, span),
                ty: ty.clone(),
                span: span.into(),
            })
            .collect(),
        repr_c: true,
    }
}

#[test]
fn uniform_layout_matches_wgsl_rules() {
    let vec2 = Ty::Vector(2, Scalar::F32);
    let vec3 = Ty::Vector(3, Scalar::F32);
    let padded = params(&[
        ("a", Ty::F32),
        ("b", Ty::U32),
        ("v", vec2.clone()),
        ("w", vec3.clone()),
        ("c", Ty::F32),
    ]);
    let wgsl: Vec<u32> = layout::offsets(&padded).iter().map(|o| o.wgsl).collect();
    assert_eq!(wgsl, [0, 4, 8, 16, 28]);
    assert!(layout::offsets(&padded).iter().all(|o| o.rust == o.wgsl));
    let unpadded = params(&[("a", Ty::F32), ("v", vec2)]);
    let offsets = layout::offsets(&unpadded);
    assert_eq!((offsets[1].rust, offsets[1].wgsl), (4, 8));
}

/// The errors of `body` in a kernel (with `helpers` beside it), or none.
pub(super) fn body_errors(helpers: &str, body: &str) -> Vec<String> {
    checked(crate::tests::kernel_module(helpers, body))
        .err()
        .unwrap_or_default()
}
#[test]
fn unrolled_loops_share_one_size_budget() {
    let nest = |outer: u32, inner: u32| {
        format!(
            "#[unroll] for i in 0..{outer}u32 {{ #[unroll] for j in 0..{inner}u32 {{ \
             y[i * {inner}u32 + j] = 1.0; }} }}"
        )
    };
    assert_eq!(body_errors("", &nest(256, 16)), Vec::<String>::new());
    let errors = body_errors("", &nest(256, 64));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0],
        "`#[unroll]` writes out 64 iterations here inside 256 copies written out by enclosing \
         `#[unroll]`ed loops, which takes this function past 65536 statements and expressions \
         once its unrolled loops are written out; unroll fewer iterations, or remove \
         `#[unroll]` from this loop or an enclosing one"
    );
    // Sequential loops add up.
    let sequential = "#[unroll] for i in 0..1024u32 { y[i] = 1.0; }".repeat(20);
    let errors = body_errors("", &sequential);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("`#[unroll]` writes out 1024 iterations here, which"));
}

#[test]
fn workgroup_arrays_past_u32_bytes_are_an_error() {
    let module =
        "mod m { #[kernel(workgroup = [64], grid = [1], limits(workgroup_memory = 4294967295))] \
                  fn k(y: &mut [f32], #[workgroup] a: &mut [f32; 536870912], \
                  #[workgroup] b: &mut [f32; 536870912]) { y[0] = a[0] + b[0]; } }";
    let errors = checked(module.parse().unwrap()).err().unwrap_or_default();
    // Each array is also past Tint's element count, reported at its own declaration.
    let total: Vec<&String> = errors
        .iter()
        .filter(|e| e.starts_with("workgroup memory reaches"))
        .collect();
    assert_eq!(total.len(), 1, "{errors:?}");
    assert!(
        total[0].starts_with("workgroup memory reaches 4294967296 bytes with `b`"),
        "{errors:?}"
    );
    assert!(total[0].ends_with("use smaller arrays (no device has 4 GiB of workgroup memory)"));
}

/// Mixed operands get a conversion of the literal (or, for a float literal, of the integer),
/// never a suggestion naming an undecided literal type (`{integer}`).
#[test]
fn mismatch_suggestions_convert_the_literal() {
    let messages = |body: proc_macro2::TokenStream| {
        crate::tests::checked(quote::quote! {
            mod m {
                #[kernel(workgroup = [1], grid = [1])]
                fn k(x: &[f32], n: &[u32], y: &mut [f32]) { #body }
            }
        })
        .err()
        .unwrap_or_default()
    };
    let float_and_int = messages(quote::quote!(y[0] = x[0] + 2;));
    assert_eq!(
        float_and_int,
        ["`f32` and an integer literal cannot be added; write `x[0] + 2.0`"]
    );
    let int_and_float = messages(quote::quote!(y[0] = n[0] * 1.5;));
    assert_eq!(
        int_and_float,
        ["`u32` and a float literal cannot be multiplied; write `n[0] as f32 * 1.5`"]
    );
    assert!(messages(quote::quote!(y[0] = 1.0 + 1;))
        .iter()
        .all(|m| !m.contains('{')));
}

/// A vector of literals only takes its lanes' type from its use, as the literals would in
/// Rust: beside a `Vec3<u32>`, through a `let`, from an annotation; left to itself it is a
/// `Vec3<i32>`, and a vector with a lane of another type is that type.
#[test]
fn a_vector_of_literals_takes_its_type_from_its_use() {
    let messages = |body: proc_macro2::TokenStream| {
        crate::tests::checked(quote::quote! {
            mod m {
                #[kernel(workgroup = [1], grid = [1])]
                fn k(n: &[u32], y: &mut [u32]) { let v = vec3(n[0], n[1], n[2]); #body }
            }
        })
        .err()
        .unwrap_or_default()
    };
    let inferred = [
        quote::quote!(y[0] = (v + vec3(0, 1, 0)).x;),
        quote::quote!(y[0] = (vec3(2, 2, 2) * v).y;),
        quote::quote!(let d: Vec3<u32> = vec3(0, 1, 0); y[0] = d.z;),
        quote::quote!(let w = vec3(1, 2, 3); let s = w.xy; y[0] = (v + w).x + s.y;),
        quote::quote!(let w = vec2(4, 5) * 2; y[0] = (v.xy + w).x;),
        quote::quote!(let w = vec4(vec2(1, 2), 3, 4); y[0] = (vec4(v, 0u32) - w).w;),
        quote::quote!(let z = vec3(1, 2, 3); y[0] = (z.x + z[1]) as u32;),
        quote::quote!(let f = vec2(1.0, 2.0); y[0] = (f.x + 0.5f32) as u32;),
        quote::quote!(y[0] = vec3(1, 2, 3).max(v).x + v.min(vec3(4, 5, 6)).y;),
    ];
    for body in inferred {
        assert_eq!(messages(body.clone()), Vec::<String>::new(), "{body}");
    }
    // WGSL spells the lanes in the type they took.
    let wgsl = crate::tests::wgsl(quote::quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(n: &[u32], y: &mut [u32]) { y[0] = (vec2(n[0], n[1]) + vec2(7, 9)).y; }
        }
    })
    .unwrap();
    assert!(wgsl.contains("vec2<u32>(7u, 9u)"), "{wgsl}");
    // A helper's parameter and result decide it too.
    let through_helper = crate::tests::checked(quote::quote! {
        mod m {
            fn lanes(v: Vec2<u32>) -> Vec2<u32> { v + vec2(1, 1) }
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32]) { y[0] = lanes(vec2(2, 3)).y; }
        }
    });
    assert_eq!(through_helper.err(), None);
    // A lane of another type decides the vector's.
    let mixed = messages(quote::quote!(let k = n[0] as i32; y[0] = (v + vec3(k, 1, 0)).x;));
    assert_eq!(mixed, ["`Vec3<u32>` and `Vec3<i32>` cannot be added"]);
    // So does a first use.
    let used = messages(quote::quote!(
        let w = vec3(1, 2, 3);
        let i = w + vec3(n[0] as i32, 0, 0);
        y[0] = (v + w).x + i.x as u32;
    ));
    assert_eq!(used, ["`Vec3<u32>` and `Vec3<i32>` cannot be added"]);
}

/// `n[0] == 3 & ok` is `n[0] == (3 & ok)` in Rust: the error names the precedence, not a
/// conversion to `bool` (which Rust has no cast for).
#[test]
fn a_bool_beside_a_bitwise_operator_suggests_parentheses() {
    let messages = |body: proc_macro2::TokenStream| {
        crate::tests::checked(quote::quote! {
            mod m {
                #[kernel(workgroup = [1], grid = [1])]
                fn k(n: &[u32], y: &mut [f32]) { let ok = n[1] > 0; #body }
            }
        })
        .err()
        .unwrap_or_default()
    };
    let precedence = messages(quote::quote!(if n[0] == 3 & ok {
        y[0] = 1.0;
    }));
    assert_eq!(
        precedence,
        [
            "an integer literal and `bool` cannot be combined; `&` binds tighter than `==`, `<` \
          and the other comparisons, so a comparison written next to `3 & ok` takes only its \
          side of it: to join two conditions, put each comparison in parentheses"
        ]
    );
    let sum = messages(quote::quote!(y[0] = (n[0] + ok) as f32;));
    assert_eq!(sum, ["`u32` and `bool` cannot be added"]);
    assert!(messages(quote::quote!(if (n[0] == 3) & ok {
        y[0] = 1.0;
    }))
    .is_empty());
}

/// A loop WGSL refuses because it cannot end: no `break`, or only one under a condition that
/// is always false; a loop with a reachable `break` or `return` is fine.
#[test]
fn loops_that_cannot_end_are_refused() {
    let errors = |body: &str| {
        let module = format!(
            "mod m {{ #[kernel(workgroup = [1], grid = [1])] fn k(y: &mut [f32]) {{ {body} }} }}"
        );
        checked(module.parse().unwrap()).err().unwrap_or_default()
    };
    for body in [
        "loop { y[0] += 1.0; }",
        "loop { if (0 > 0) { break; } { } }",
        "while true { if false { break; } }",
        "loop { for i in 0..4u32 { if y[i] > 0.0 { break; } } }",
    ] {
        let found = errors(body);
        assert_eq!(found.len(), 1, "{body}: {found:?}");
        assert!(
            found[0].starts_with("this loop has no `break` or `return`"),
            "{found:?}"
        );
    }
    for body in [
        "loop { if y[0] > 1.0 { break; } y[0] += 1.0; }",
        "loop { if y[0] > 1.0 { return; } y[0] += 1.0; }",
        "while y[0] < 1.0 { y[0] += 1.0; }",
    ] {
        assert!(errors(body).is_empty(), "{body}: {:?}", errors(body));
    }
}

#[test]
fn constant_vectors_and_builtins_that_wgsl_accepts_are_accepted() {
    let wgsl = crate::tests::wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[u32], y: &mut [u32], z: &mut [f32]) {
                let i = local_index();
                y[i] = x[i] / ceil_div(7u32, 2) + (100.0f32.to_bits() << 3) + 5u32.min(9).count_ones();
                z[i] = vec2(3.0f32, 4.0).normalize().y + unpack_4x8_snorm(0x80ff0100).x
                    + vec3(1.0f32, 2.0, 2.0).length() + (vec2(1.0f32, 2.0) * 0.5).yx.x;
                y[i] += (vec2(6u32, 9) / vec2(3u32, 1)).y;
            }
        }
    })
    .unwrap();
    // WGSL's constant evaluation refuses a `<<` that shifts out set bits, which Rust allows:
    // a constant shift is written as its value.
    let shifted = 100.0f32.to_bits() << 3;
    assert!(wgsl.contains(&format!("{shifted}u")), "{wgsl}");
}

#[test]
fn uses_of_a_literal_are_checked_again_once_its_type_is_decided() {
    // `v` is only known to be an integer at `signum()` and at the `-1` arm; `bitcast::<u32>`
    // decides it later.
    let errors = checked(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32]) {
                let v = 0;
                let s = v.signum();
                match v { -1 => { y[0] = s; } _ => {} }
                y[1] = bitcast::<u32>(v);
            }
        }
    })
    .err()
    .unwrap_or_default();
    assert_eq!(
        errors,
        [
            "`signum` does not apply to `u32` (the type this value gets from its other uses)",
            "a `u32` is never negative (the scrutinee is a `u32` from its other uses)",
        ]
    );
}

#[test]
fn constant_lets_are_followed_as_rustc_follows_them() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) { let t = [1.0f32; 4]; let i = 5u32; y[0] = t[i - 2] + t[i]; }
        }
    });
    assert_eq!(
        error,
        "index 5 is out of bounds for a length of 4 (indices 0 to 3)"
    );
    // A float `let` is computed at run time (an infinity is no error there); a `let mut`
    // may change.
    checked(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) {
                let big = 3.0e38f32;
                let mut i = 5u32;
                i -= 2;
                let t = [big * big; 4];
                y[0] = t[i];
            }
        }
    })
    .unwrap();
}

/// An array of unsuffixed literals lent to a helper takes its element type from the
/// parameter (it was compared before inference had settled it, and refused with a message
/// that contradicted itself), and an unknown function in such an array is the only error.
#[test]
fn literal_arrays_lent_to_helpers_take_the_parameters_element_type() {
    let module = |element: proc_macro2::TokenStream| {
        quote! {
            mod m {
                const LOADS: u32 = 4;
                fn take(v: &[f32; LOADS]) -> f32 { v[0] }
                #[kernel(workgroup = [1], grid = [1])]
                fn k(y: &mut [f32]) {
                    let k0 = global_id().x;
                    let from = [#element; LOADS];
                    y[0] = take(&from) + f32::from_bits(k0);
                }
            }
        }
    };
    checked(module(quote!(0.5))).unwrap();
    let errors = checked(module(quote!(f32(k0) * 0.5)))
        .err()
        .unwrap_or_default();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("cannot find function `f32`"),
        "{errors:#?}"
    );
}

#[test]
fn vectors_cast_lane_by_lane() {
    let wgsl = crate::tests::wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], features(f16))]
            fn k(x: &[Vec4<f32>], y: &mut [Vec4<f16>], z: &mut [Vec2<u32>]) {
                let i = local_index();
                y[i] = x[i] as Vec4<f16>;
                z[i] = (x[i].zw as Vec2<i32>) as Vec2<u32> + (vec2(true, false) as Vec2<u32>);
                z[i] += i as Vec2<u32> + x[i].x as Vec2<u32>;
            }
        }
    })
    .unwrap();
    assert!(wgsl.contains("vec4<f16>(x[i])"), "{wgsl}");
    assert!(wgsl.contains("vec2<u32>(vec2<i32>(x[i].zw))"), "{wgsl}");
    // A scalar fills every lane, converted first where its type differs.
    assert!(wgsl.contains("vec2<u32>(i)"), "{wgsl}");
    assert!(wgsl.contains("vec2<u32>(u32(x[i].x))"), "{wgsl}");
    for (body, error) in [
        (
            "let v = vec4(1.0f32, 2.0, 3.0, 4.0) as Vec2<u32>; y[0] = v.x as f32;",
            "`as` converts a vector lane by lane, to a vector of as many lanes: `Vec4<f32>` has \
             4 and `Vec2<u32>` 2; take lanes with a swizzle first (`v.xy`)",
        ),
        (
            "let v = vec2(1.0f32, 2.0) as f32; y[0] = v;",
            "`as` converts between `f32`, `f16`, `u32`, `i32` and `bool`, between vectors of \
             them with as many lanes, and from a scalar to a vector (every lane), not \
             `Vec2<f32>` to `f32`",
        ),
        (
            "let v = vec2(1.0f32, 0.0) as Vec2<bool>; if v.x { y[0] = 1.0; }",
            "numbers cannot be cast to `bool`; compare instead: `x != 0`",
        ),
    ] {
        let errors = body_errors("", body);
        assert!(
            errors.iter().any(|e| e.contains(error)),
            "{body}: {errors:#?}"
        );
    }
}

#[test]
fn constant_vector_casts_are_evaluated() {
    // A constant lane past f16's range is an overflow at the cast, as for a scalar.
    let errors = checked(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], features(f16))]
            fn k(y: &mut [Vec2<f16>]) {
                y[local_index()] = vec2(1.0f32, 70000.0) as Vec2<f16>;
            }
        }
    })
    .err()
    .unwrap_or_default();
    assert!(
        errors.len() == 1 && errors[0].contains("this constant is infinite"),
        "{errors:#?}"
    );
}

#[test]
fn branches_a_constant_condition_never_takes_are_not_written() {
    // In the iteration where `v` is 0, `v - 1` would overflow, as it never does in Rust: that
    // branch is not written out, in statements and in `if` values alike.
    let wgsl = crate::tests::wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) {
                let mut v4 = [0.0f32; 4];
                #[unroll]
                for v in 0..4u32 {
                    if v % 2 == 1 {
                        v4[v] = v4[v - 1];
                    } else {
                        v4[v] = x[local_index() * 4 + v];
                    }
                    let before = if v > 0 { v4[v - 1] } else { 0.0 };
                    y[local_index() * 4 + v] = v4[v] + before;
                }
            }
        }
    })
    .unwrap();
    assert!(!wgsl.contains("4294967295"), "{wgsl}");
    assert!(!wgsl.contains("if "), "{wgsl}");
    // A dropped branch must not take a loop's only way out with it: WGSL refuses a loop that
    // cannot end, where Rust would run the iteration where `v` is 1 forever.
    let wgsl = crate::tests::wgsl(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(y: &mut [f32]) {
                #[unroll]
                for v in 0..2u32 {
                    loop {
                        if v == 0 {
                            break;
                        }
                    }
                }
                y[0] = 1.0;
            }
        }
    })
    .unwrap();
    assert_eq!(wgsl.matches("break;").count(), 2, "{wgsl}");
    // A taken branch is checked as before.
    let errors = body_errors(
        "",
        "let mut a = [0.0f32; 2]; #[unroll] for v in 0..2u32 { if v == 0 { a[v] = a[v - 1]; } } \
         y[0] = a[1];",
    );
    assert!(
        errors.iter().any(|e| e.contains("overflows `u32`")),
        "{errors:#?}"
    );
}

#[test]
fn constants_wgsl_cannot_represent_are_errors_where_rust_would_compute_them() {
    // Rust's `powf` gives 4 and 1; WGSL's `pow` is `exp2(y * log2(x))`, NaN for both.
    for (base, exponent) in [(-2.0f32, 2.0f32), (0.0, 0.0)] {
        let error = first_error(quote! {
            mod m {
                #[kernel(workgroup = [64], grid = [1])]
                fn k(y: &mut [f32]) {
                    y[0] = (#base).powf(#exponent);
                }
            }
        });
        assert!(
            error.starts_with(
                "`powf` of this constant has no finite value (it takes a positive base"
            ),
            "{base} ^ {exponent}: {error}"
        );
    }
    // 65505 rounds to 65504 in Rust's `as f16`; WGSL refuses anything past 65504.
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], features(f16))]
            fn k(y: &mut [f16]) {
                y[0] = (65504.0f16 as f32 + 1.0) as f16;
            }
        }
    });
    assert!(error.starts_with("this constant is infinite"), "{error}");
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], features(f16))]
            fn k(y: &mut [f16]) {
                y[0] = 65510.0f16;
            }
        }
    });
    assert!(
        error.starts_with("this literal does not fit in `f16`"),
        "Tint refuses 65510.0h too: {error}"
    );
    // An integer `signum` is a constant too: these bits are a NaN.
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(y: &mut [f32]) {
                y[0] = f32::from_bits((-(1i32.signum())) as u32);
            }
        }
    });
    assert!(error.starts_with("this constant is NaN"), "{error}");
}

#[test]
fn element_types_may_be_vectors_of_two_or_four_lanes() {
    let module = |types: proc_macro2::TokenStream, body: proc_macro2::TokenStream| {
        quote! {
            mod m {
                #[kernel(workgroup = [64], grid = [1], types(T = #types))]
                fn k<T>(x: &[T], y: &mut [f32]) { let i = local_index(); #body }
            }
        }
    };
    let sum = quote! { y[i] = (x[i] * (2 as T)).element_sum() + (T::LANES as f32); };
    let module_ir = checked(module(quote!([f32, Vec2<f32>, Vec4<f32>]), sum.clone())).unwrap();
    let lanes: Vec<String> = module_ir.kernels[0]
        .instances
        .iter()
        .filter_map(|i| i.element.map(|e| e.rust_name()))
        .collect();
    assert_eq!(lanes, ["f32", "Vec2<f32>", "Vec4<f32>"]);
    let error = first_error(module(quote!([f32, Vec3<f32>]), sum.clone()));
    assert_eq!(
        error,
        "`T` can stand for `f32`, `f16`, `u32` or `i32`, or a `Vec2` or `Vec4` of one \
         (`Vec4<f32>`), not `Vec3<f32>`"
    );
    // A buffer of `T::Scalar` is one type where the listed types share their scalar, and
    // follows `T` through the launcher's element trait where they do not.
    let host = |module: proc_macro2::TokenStream| {
        let module_ir = checked(module).unwrap();
        let general = module_ir.kernels[0].instances[0].general();
        general.bindings.iter().map(|b| b.host).collect::<Vec<_>>()
    };
    let scalar_sums = |types: proc_macro2::TokenStream| {
        quote! {
            mod m {
                #[kernel(workgroup = [64], grid = [1], types(T = #types))]
                fn k<T>(x: &[T], y: &mut [T::Scalar]) { y[0] = x[0].element_sum(); }
            }
        }
    };
    let (param, fixed) = (HostElement::Param, HostElement::Fixed);
    assert!(host(scalar_sums(quote!([f32, Vec4<f32>]))) == [param, fixed]);
    let follows = HostElement::Associated(Associated::Scalar);
    assert!(host(scalar_sums(quote!([f32, Vec4<u32>]))) == [param, follows]);
    // A type built from one must be one type for every instance.
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], types(T = [f32, Vec4<u32>]))]
            fn k<T>(x: &[T], y: &mut [Vec2<T::Scalar>]) { y[0] = vec2(x[0].element_sum(), 0); }
        }
    });
    assert!(
        error.starts_with(
            "`&mut [Vec2<T::Scalar>]` is `&mut [Vec2<f32>]` where `T` is `f32` but \
             `&mut [Vec2<u32>]`"
        ),
        "{error}"
    );
    // `T::F32`: the lanes of `T` as `f32`, in the body and as a buffer, of one width or of
    // each type's.
    let widened = |types: proc_macro2::TokenStream| {
        quote! {
            mod m {
                #[kernel(workgroup = [64], grid = [1], types(T = #types), features(f16))]
                fn k<T>(x: &[T], y: &mut [T::F32]) {
                    let v: T::F32 = x[0] as T::F32;
                    y[0] = v + 1.0;
                }
            }
        }
    };
    assert!(host(widened(quote!([f32, f16]))) == [param, fixed]);
    let follows = HostElement::Associated(Associated::WithScalar(Scalar::F32));
    assert!(host(widened(quote!([f16, Vec4<f16>]))) == [param, follows]);
    // A buffer of an associated type alone does not name the instance.
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1], types(T = [f16, Vec4<f16>]), features(f16))]
            fn k<T>(y: &mut [T::F32]) { y[0] = 1.0 as T::F32; }
        }
    });
    assert!(
        error.starts_with("`T` must be the element type of a buffer"),
        "{error}"
    );
}

#[test]
fn a_generic_helper_learns_its_types_from_the_arguments() {
    let module = |helper: proc_macro2::TokenStream, body: proc_macro2::TokenStream| {
        quote! {
            mod m {
                #helper
                #[kernel(workgroup = [64], grid = [1])]
                fn k(x: &[f32], x4: &[Vec4<f32>], y: &mut [f32]) { let i = local_index(); #body }
            }
        }
    };
    let load = quote! { fn load<E>(m: &[E], i: u32) -> E { m[i] } };
    assert!(checked(module(
        load.clone(),
        quote! { y[i] = load(x, i) + load(x4, i).w; }
    ))
    .is_ok());
    assert_eq!(
        first_error(module(load.clone(), quote! { y[i] = load(x4, i); })),
        "mismatched types in assignment: expected `f32`, found `Vec4<f32>`; convert it with `as f32`"
    );
    // The copy's body is checked with the types in place.
    let shifted = quote! { fn shifted<E>(m: &[E], i: u32) -> E { m[i] << 1u32 } };
    assert_eq!(
        first_error(module(shifted, quote! { y[i] = shifted(x, i); })),
        "shifts take integers on both sides"
    );
    assert_eq!(
        first_error(module(load.clone(), quote! { y[i] = load(x, i, 2); })),
        "`load` takes 2 argument(s), but 3 were given"
    );
    // A type parameter no argument settles.
    let zero = quote! { fn zero<E>() -> E { 0 as E } };
    assert_eq!(
        first_error(module(zero, quote! { y[i] = zero(); })),
        "cannot tell what `E` of `zero` stands for: no parameter's type names it; name it in \
         the call, as in `zero::<f32>(..)`"
    );
    // Two arguments that disagree on `E`.
    let add = quote! { fn add<E>(a: E, b: E) -> E { a + b } };
    assert_eq!(
        first_error(module(add.clone(), quote! { y[i] = add(x[i], x4[i]).x; })),
        "`add` takes `E` as `f32` from an earlier argument, and this one makes it `Vec4<f32>`; \
         pass arguments of one element type"
    );
    assert!(checked(module(add, quote! { y[i] = add(x[i], 1.0); })).is_ok());
    // Not an element type.
    let id = quote! { fn id<E>(a: E) -> E { a } };
    assert_eq!(
        first_error(module(id, quote! { if id(i < 3) { y[i] = 1.0; } })),
        "`id` takes `E` as `bool` here, but `E` stands for an element type: a number type or a \
         vector of one"
    );
    // Bounds, lifetimes and const parameters are refused at the helper.
    let bounded = quote! { fn load<E: Copy>(m: &[E], i: u32) -> E { m[i] } };
    assert!(first_error(module(bounded, quote! { y[i] = load(x, i); }))
        .starts_with("a helper's type parameter stands for the element type its calls pass"));
    let constant = quote! { fn load<const N: u32>(m: &[f32], i: u32) -> f32 { m[i] } };
    assert!(first_error(module(constant, quote! { y[i] = load(x, i); }))
        .starts_with("helpers take no const parameters; `N` can be a module constant"));
    // A copy that calls itself.
    let again = quote! { fn again<E>(a: E) -> E { again(a) } };
    assert_eq!(
        first_error(module(again, quote! { y[i] = again(x[i]); })),
        "`again` calls itself; kernels cannot recurse (a GPU has no call stack): write it as a loop"
    );
}

#[test]
fn a_generic_helper_shadows_the_callers_element_type() {
    let module = quote! {
        mod m {
            fn widen<T>(v: T) -> Vec4<T> { vec4(v, v, v, v) }
            #[kernel(workgroup = [64], grid = [1], types(T = [f32, f16]), features(f16))]
            fn k<T>(x: &[T], y: &mut [Vec4<u32>]) {
                let i = local_index();
                y[i] = widen(i);
                let w: Vec4<T> = widen(x[i]);
            }
        }
    };
    let module = checked(module).unwrap();
    let names: Vec<String> = module.kernels[0].instances[0]
        .general()
        .helpers
        .iter()
        .map(|h| crate::ir::wgsl_base_name(&h.name))
        .collect();
    assert_eq!(names, ["widen_u32", "widen_f32"]);
}

#[test]
fn a_scalar_has_lanes_only_in_a_body_over_an_element_type() {
    let error = first_error(quote! {
        mod m {
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) { let v = x[0]; y[0] = v[0]; }
        }
    });
    assert_eq!(
        error,
        "a `f32` cannot be indexed (a scalar is read as its own lane 0, `v[0]`, only in a body \
         over an element type: a kernel's `T` or a generic helper's)"
    );
    let error = first_error(quote! {
        mod m {
            fn f() -> u32 { 0 }
            fn lane<E>(v: E) -> E { v[f()] }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(x: &[f32], y: &mut [f32]) { y[0] = lane(x[0]); }
        }
    });
    assert_eq!(
        error,
        "the lane of a scalar is the scalar, and its index is not evaluated; call this before, \
         into a `let`"
    );
}

#[test]
fn a_generic_helper_may_be_called_with_its_types_named() {
    let module = |body: proc_macro2::TokenStream| {
        quote! {
            mod m {
                fn zero<E>() -> E { 0.0 as E }
                fn one() -> f32 { 1.0 }
                #[kernel(workgroup = [64], grid = [1])]
                fn k(y: &mut [f32]) { let i = local_index(); #body }
            }
        }
    };
    assert!(checked(module(
        quote! { y[i] = zero::<f32>() + zero::<Vec4<f32>>().w; }
    ))
    .is_ok());
    assert_eq!(
        first_error(module(quote! { y[i] = one::<f32>(); })),
        "`one` is not generic; call it without `::<..>`: `one(..)`"
    );
    assert_eq!(
        first_error(module(quote! { y[i] = zero::<f32, f32>(); })),
        "`zero` takes 1 type parameter(s), but 2 were given"
    );
    assert_eq!(
        first_error(module(quote! { y[i] = zero::<Vec4<f32>>(); })),
        "mismatched types in assignment: expected `f32`, found `Vec4<f32>`; convert it with `as f32`"
    );
}
