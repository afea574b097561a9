//! Unit tests of `parse/`: what the IR holds for a module, and what is rejected.

use quote::quote;

use crate::ir::{BindingKind, Scalar, StmtKind, Ty};
use crate::tests::checked;

#[test]
fn signature_becomes_bindings_in_order() {
    let module = checked(quote! {
        mod m {
            #[repr(C)]
            #[derive(Params)]
            struct P { n: u32 }
            #[kernel(workgroup = [8, 8], grid = [ceil_div(p.n, 8), 2])]
            fn k(p: &P, #[len(p.n)] x: &[f32], y: &mut [i32], c: &mut [AtomicU32], #[workgroup] t: &mut [f32; 64]) {}
        }
    })
    .unwrap();
    let kernel = module.kernels[0].instances[0].general();
    assert_eq!(kernel.workgroup_size, [8, 8, 1]);
    assert_eq!(kernel.grid.len(), 2);
    let kinds: Vec<String> = kernel
        .bindings
        .iter()
        .map(|b| match &b.kind {
            BindingKind::Uniform { params } => format!("uniform {params}"),
            BindingKind::Storage { element, writable } => {
                format!("{} {writable}", element.rust_name())
            }
        })
        .collect();
    assert_eq!(
        kinds,
        ["uniform 0", "f32 false", "i32 true", "AtomicU32 true"]
    );
    assert!(kernel.bindings[1].len.is_some());
    assert_eq!(
        kernel.shared[0].ty,
        Ty::Array(Box::new(Ty::Scalar(Scalar::F32)), 64)
    );
}

#[test]
fn for_loops_keep_their_form() {
    let module = checked(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [u32]) {
                for i in (0..10).rev() { y[i] = 1; }
                #[unroll]
                for j in (0..8).step_by(2) { y[j] = 2; }
            }
        }
    })
    .unwrap();
    let body = &module.kernels[0].instances[0].general().body;
    let StmtKind::For(first) = &body[0].kind else {
        panic!("not a for loop")
    };
    assert!(first.reversed && !first.unroll && first.step.is_none());
    let StmtKind::For(second) = &body[1].kind else {
        panic!("not a for loop")
    };
    assert!(!second.reversed && second.unroll && second.step.is_some());
}

#[test]
fn unsupported_rust_is_rejected_with_what_to_write_instead() {
    let errors = checked(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(y: &mut [f32]) {
                let v = vec![1.0];
                let t = (1.0, 2.0);
                'outer: loop { break 'outer; }
                y[0] = async { 1.0 }.await;
            }
        }
    })
    .err()
    .expect("the module must be rejected");
    assert!(
        errors[0].starts_with("macros are not supported in kernels"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("tuples are not supported in kernels"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("loop labels are not supported")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("async code is not supported")),
        "{errors:?}"
    );
}

#[test]
fn kernel_attribute_needs_workgroup_and_grid() {
    let errors = checked(quote! {
        mod m {
            #[kernel(workgroup = [64])]
            fn k(y: &mut [f32]) {}
        }
    })
    .err()
    .expect("the module must be rejected");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("the kernel needs a dispatch grid"),
        "{errors:?}"
    );
}

/// The errors of `body` in a kernel, compiled on rustc's stack.
fn nesting_errors(body: String) -> Vec<String> {
    crate::tests::on_rustc_stack(move || {
        crate::tests::wgsl(crate::tests::kernel_module("", &body))
            .err()
            .unwrap_or_default()
    })
}

#[test]
fn sums_past_the_nesting_limit_are_one_error() {
    let sum = |terms: usize| format!("let a = y[0]; y[1] = a{};", " + a".repeat(terms - 1));
    assert_eq!(nesting_errors(sum(99)), Vec::<String>::new());
    let errors = nesting_errors(sum(120));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("this nests deeper than WGSL allows: tessera accepts 100 levels"),
        "{errors:?}"
    );
}

#[test]
fn fuzzed_nests_are_errors_not_stack_overflows() {
    let bodies = [
        format!("let a = y[0]; y[1] = a{};", " + a".repeat(767)),
        format!(
            "let a = y[0]; y[1] = {}a{};",
            "(".repeat(640),
            ")".repeat(640)
        ),
        format!(
            "let a = y[0]; {} y[1] = a; {}",
            "if a > 0.0 {".repeat(320),
            "}".repeat(320)
        ),
        format!("let a = y[0]; y[1] = {}a;", "-".repeat(10_000)),
        format!("let a = y[0]; y[1] = a{};", ".abs()".repeat(5_000)),
        format!(
            "let a = y[0]; if a > 0.0 {{ y[1] = a; }} {}",
            "else if a > 1.0 { y[1] = a; }".repeat(70)
        ),
    ];
    for body in bodies {
        let errors = nesting_errors(body);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("split it into `let` bindings")
                || errors[0].contains("split the expression with `let` bindings")
                || errors[0].contains("move inner parts into `let` bindings"),
            "{errors:?}"
        );
    }
}

#[test]
fn nesting_at_the_limit_lowers_within_wgsl_limits() {
    // 33 `for` loops weigh 99; the innermost statement adds no nesting of its own.
    let loops = format!(
        "{} y[0] = 1.0; {}",
        "for i in 0..p.n {".repeat(33),
        "}".repeat(33)
    );
    let ifs = format!(
        "let a = y[0]; {} y[1] = a; {}",
        "if a > 0.0 {".repeat(49),
        "}".repeat(49)
    );
    for body in [loops, ifs] {
        let wgsl = crate::tests::on_rustc_stack(move || {
            crate::tests::wgsl(crate::tests::kernel_module("", &body)).unwrap()
        });
        // Tint's parser allows about 126 braces and parentheses together; naga 127 braces.
        let mut depth = 0i32;
        let mut deepest = 0;
        for c in wgsl.chars() {
            depth += match c {
                '{' | '(' | '[' => 1,
                '}' | ')' | ']' => -1,
                _ => 0,
            };
            deepest = deepest.max(depth);
        }
        assert!(deepest <= 120, "{deepest}");
    }
}

#[test]
fn token_nesting_is_checked_without_recursion() {
    use crate::parse::nesting::{tokens, MAX_TOKEN_CHAIN, MAX_TOKEN_DEPTH};
    let deep = format!("{}x{}", "(".repeat(100_000), ")".repeat(100_000));
    let error = tokens(deep.parse().unwrap()).unwrap_err().to_string();
    assert!(
        error.contains(&format!("more than {MAX_TOKEN_DEPTH} brackets")),
        "{error}"
    );
    let long = format!("x{}", " + x".repeat(MAX_TOKEN_CHAIN));
    let error = tokens(long.parse().unwrap()).unwrap_err().to_string();
    assert!(
        error.contains(&format!("more than {MAX_TOKEN_CHAIN} tokens")),
        "{error}"
    );
    // Statements, and blocks that end one, start a new chain.
    let statements = "let a = b + c;".repeat(MAX_TOKEN_CHAIN);
    let blocks = "if a { b(); }".repeat(MAX_TOKEN_CHAIN);
    for ok in [statements, blocks] {
        assert!(tokens(format!("fn f() {{ {ok} }}").parse().unwrap()).is_ok());
    }
}

#[test]
fn a_refused_params_field_is_named_as_written() {
    let errors = checked(quote! {
        mod m {
            #[repr(C)] #[derive(Params)] struct P { v: Vec4<f32>, a: [u64; 2] }
            #[kernel(workgroup = [1], grid = [1])]
            fn k(p: &P, y: &mut [f32]) { y[0] = 1.0; }
        }
    })
    .err()
    .unwrap_or_default();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("a `Params` field cannot be `Vec4<f32>`:")),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("a `Params` field cannot be `[u64; 2]`:")),
        "{errors:#?}"
    );
}

#[test]
fn a_params_field_declared_twice_is_an_error_at_the_second() {
    let errors = checked(quote! {
        mod m {
            #[repr(C)] #[derive(Params)] struct P { a: f32, a: f32, n: u32 }
            #[kernel(workgroup = [64], grid = [1])]
            fn k(p: &P, y: &mut [f32]) { y[0] = p.a; }
        }
    })
    .err()
    .unwrap_or_default();
    assert_eq!(
        errors,
        ["`a` is already a field of this struct; give this one another name"]
    );
}

/// A helper no kernel calls is checked alone, with the module's constants: one that needs a
/// set's constants, itself or through a helper it calls, gets one error at its name instead
/// of an error at each use (which blamed the helpers the kernels do call).
#[test]
fn a_helper_no_kernel_calls_that_needs_a_sets_constants_gets_one_error_at_its_name() {
    let Err(errors) = crate::tests::checked(quote! {
        mod m {
            #[constants(TILE = [8, 16], HALF = TILE / 2)]
            struct Tiles;
            const LANES: u32 = 32;
            fn lane(t: u32) -> u32 { t % TILE }
            fn unused(x: &mut [f32; HALF], t: u32) { x[0] = lane(t) as f32; }
            fn also_unused(t: u32) -> u32 { lane(t) + 1 }
            fn checked_alone(t: u32) -> u32 { t % LANES }
            #[kernel(workgroup = [TILE], grid = [1], constants = Tiles)]
            fn k(y: &mut [u32]) { y[0] = lane(local_index()); }
        }
    }) else {
        panic!("accepted");
    };
    assert_eq!(errors.len(), 2, "{errors:?}");
    let wanted = [
        "no kernel calls `unused`, and it uses `HALF`, a constant of `Tiles`",
        "no kernel calls `also_unused`, and it uses `TILE` (through `lane`), a constant of `Tiles`",
    ];
    for want in wanted {
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "{want}: {errors:?}"
        );
    }
    assert!(errors
        .iter()
        .all(|e| e.contains("Call it from a kernel with `constants = Tiles`")));
}

#[test]
fn a_tuple_let_may_name_fields_and_methods_like_its_bindings() {
    // `.x` and `.y` are fields, not the `x` and `y` being bound.
    checked(quote! {
        mod m {
            #[kernel(workgroup = [8, 8], grid = [1, 1])]
            fn k(out: &mut [u32]) {
                let (x, y) = (global_id().x, global_id().y);
                let (max, v) = (x.max(y), vec2(x, y).y);
                out[y * 8 + x] = max + v;
            }
        }
    })
    .unwrap();
    // A value that names a bound variable itself is still refused.
    let Err(errors) = checked(quote! {
        mod m {
            #[kernel(workgroup = [1], grid = [1])]
            fn k(out: &mut [u32]) {
                let x = 1u32;
                let (x, y) = (2u32, x);
                out[0] = x + y;
            }
        }
    }) else {
        panic!("a tuple let whose value names a bound variable was accepted");
    };
    assert!(errors[0].starts_with("`let` binds one name"), "{errors:#?}");
}

/// A kernels module with a resolved import of `super::tiling`, which declares `LANES`, the set
/// `Tiling` (two instances, `SPAN` derived from `LANES`) and a helper over `TILE`, and `rest`.
fn importing_tiling(rest: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[device(from = super::tiling)]
            mod tiling {
                #[device(origin = "tiling-1")]
                mod tiling {
                    const LANES: u32 = 2;
                    #[constants(TILE = [4, 8], SPAN = TILE * LANES)]
                    pub struct Tiling;
                    fn lane(t: u32) -> u32 { t % TILE }
                }
            }
            #rest
        }
    }
}

#[test]
fn an_imported_set_makes_instances_whose_constants_its_librarys_helpers_see() {
    let module = checked(importing_tiling(quote! {
        #[kernel(workgroup = [TILE], constants = Tiling, grid = [1])]
        fn k(y: &mut [u32]) { y[local_index()] = lane(local_index()) + SPAN; }
    }))
    .unwrap();
    let set = &module.constant_sets[0];
    assert!(set.home == crate::ir::SetHome::Library);
    assert_eq!(set.instances, [vec![4], vec![8]]);
    assert_eq!(set.derived[0].0, "SPAN");
    assert_eq!(module.kernels[0].constant_set, Some(0));
    assert_eq!(module.kernels[0].instances.len(), 2);
    let wgsl = crate::tests::wgsl(importing_tiling(quote! {
        #[kernel(workgroup = [TILE], constants = Tiling, grid = [1])]
        fn k(y: &mut [u32]) { y[local_index()] = lane(local_index()) + SPAN; }
    }))
    .unwrap();
    // Each instance's helper copy divides by its own `TILE`, and adds its own `SPAN`.
    for (tile, span) in [(4, 8), (8, 16)] {
        assert!(wgsl.contains(&format!("% {tile}u")), "{wgsl}");
        assert!(wgsl.contains(&format!("+ {span}u")), "{wgsl}");
    }
}

#[test]
fn a_set_no_one_declares_is_named_with_the_modules_imports() {
    let Err(errors) = checked(importing_tiling(quote! {
        #[kernel(workgroup = [64], constants = Blocking, grid = [1])]
        fn k(y: &mut [u32]) { y[0] = 1u32; }
    })) else {
        panic!("accepted");
    };
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with(
            "`Blocking` is not a set of constants this module declares or imports (it has \
             `Tiling`); declare it as `#[constants(NAME = [..])] struct Blocking;`, or import \
             the device library that declares it (the module imports `super::tiling`, which \
             does not)"
        ),
        "{errors:?}"
    );
}

#[test]
fn an_imported_set_clashes_with_a_local_one_at_the_import() {
    let Err(errors) = checked(importing_tiling(quote! {
        #[constants(TILE = [16])]
        struct Tiling;
        #[kernel(workgroup = [TILE], constants = Tiling, grid = [1])]
        fn k(y: &mut [u32]) { y[0] = 1u32; }
    })) else {
        panic!("accepted");
    };
    assert!(
        errors.iter().any(|e| e.starts_with(
            "`Tiling` is a set of constants of this library and a name of the kernels module; \
             the import brings the library's set in, as `super::tiling::Tiling`"
        )),
        "{errors:?}"
    );
}

/// At the kernel's name: the helper may be another crate's, and the kernel's attribute is what
/// the user changes.
#[test]
fn an_imported_helper_over_a_sets_constants_called_without_the_set_names_the_set() {
    let Err(errors) = checked(importing_tiling(quote! {
        #[kernel(workgroup = [64], grid = [1])]
        fn k(y: &mut [u32]) { y[local_index()] = lane(local_index()); }
    })) else {
        panic!("accepted");
    };
    assert_eq!(
        errors,
        [
            "`k` calls `lane`, which uses `TILE`, a constant of `Tiling`: a helper takes such \
          constants from the kernel that calls it. Give `k` `constants = Tiling`, or call \
          `lane` from a kernel that has it"
        ]
    );
    let Err(errors) = checked(importing_tiling(quote! {
        #[kernel(workgroup = [64], grid = [1])]
        fn k(y: &mut [u32]) { y[local_index()] = SPAN; }
    })) else {
        panic!("accepted");
    };
    assert_eq!(
        errors,
        [
            "`SPAN` is a constant of `Tiling`, which this kernel does not name: add \
          `constants = Tiling` to its `#[kernel(..)]`"
        ]
    );
}
