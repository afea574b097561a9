//! Cooperative-matrix kernels: the WGSL written for fragments, and that naga both validates
//! it and writes SPIR-V from it (the SPIR-V writer has a crash validation does not catch).

use quote::quote;

use crate::tests::wgsl;

/// Validates `text` with the capabilities of a device with f16 tensor cores and writes
/// SPIR-V from it, as wgpu does on Vulkan.
fn spirv(text: &str) -> Vec<u32> {
    let module = naga::front::wgsl::parse_str(text).unwrap();
    let caps = naga::valid::Capabilities::COOPERATIVE_MATRIX
        | naga::valid::Capabilities::SHADER_FLOAT16
        | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap();
    let options = naga::back::spv::Options {
        lang_version: (1, 4),
        ..Default::default()
    };
    naga::back::spv::write_vec(&module, &info, &options, None).unwrap()
}

fn matmul() -> proc_macro2::TokenStream {
    quote! {
        mod m {
            #[repr(C)]
            #[derive(Params)]
            struct Dims { m: u32, n: u32, k: u32 }

            fn step(a: FragA16<f16>, b: FragB16<f16>, c: FragC16<f32>) -> FragC16<f32> {
                coop_multiply_add(a, b, c)
            }

            #[kernel(workgroup = [32], grid = [p.n / 16, p.m / 16], features(f16, cooperative_matrix))]
            fn matmul(
                p: &Dims,
                #[len(p.m * p.k)] a: &[f16],
                #[len(p.k * p.n)] b: &[f16],
                #[len(p.m * p.n)] c: &mut [f32],
                #[workgroup] tile: &mut [f16; 256],
            ) {
                let row = workgroup_id().y * 16;
                let col = workgroup_id().x * 16;
                let mut acc: FragC16<f32> = coop_zero();
                for k in (0..p.k).step_by(16) {
                    for e in (local_index()..256).step_by(32) {
                        tile[e] = b[(k + e / 16) * p.n + col + e % 16];
                    }
                    workgroup_barrier();
                    let fa: FragA16<f16> = coop_load_row_major(&a[row * p.k + k], p.k);
                    let fb: FragB16<f16> = coop_load_row_major(&tile[0], 16);
                    acc = step(fa, fb, acc);
                    workgroup_barrier();
                }
                coop_store_row_major(acc, &mut c[row * p.n + col], p.n);
                coop_store_column_major(acc, &mut c[(row + 1) * p.n], p.n * 2);
            }
        }
    }
}

#[test]
fn fragments_lower_to_wgpus_cooperative_matrices() {
    let text = wgsl(matmul()).unwrap();
    assert!(
        text.contains("enable f16;\nenable wgpu_cooperative_matrix;"),
        "{text}"
    );
    assert!(text.contains("coop_mat16x16<f32, C>()"), "{text}");
    assert!(
        text.contains("coopLoadT<coop_mat16x16<f16, A>>(&a["),
        "{text}"
    );
    assert!(
        text.contains("coopLoadT<coop_mat16x16<f16, B>>(&tile[0"),
        "{text}"
    );
    assert!(text.contains("-> coop_mat16x16<f32, C>"), "{text}");
    assert!(text.contains("coopMultiplyAdd("), "{text}");
    spirv(&text);
}

#[test]
fn fragment_arithmetic_lowers_to_operators_naga_writes_to_spirv() {
    let text = wgsl(quote! {
        mod m {
            #[repr(C)]
            #[derive(Params)]
            struct P { scale: f32 }

            fn blend(x: FragC16<f32>, y: FragC16<f32>, s: f32) -> FragC16<f32> {
                x * s + 0.5 * y
            }

            #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
            fn k(p: &P, a: &[f16], c: &mut [f32]) {
                let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
                let fb: FragB16<f16> = coop_load_row_major(&a[256], 16);
                let zero: FragC16<f32> = coop_zero();
                let acc = coop_multiply_add(fa, fb, zero);
                let twice = acc + acc;
                coop_store_row_major(blend(twice, acc - twice, p.scale), &mut c[0], 16);
            }
        }
    })
    .unwrap();
    assert!(text.contains("* s) + (0.5f * y)"), "{text}");
    spirv(&text);
}

#[test]
fn stores_bind_their_operands_so_the_spirv_writer_does_not_crash() {
    let text = wgsl(matmul()).unwrap();
    let stores: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("coopStore"))
        .map(str::trim)
        .collect();
    assert_eq!(stores.len(), 2, "{text}");
    for store in &stores {
        // Every operand a name or a literal: no arithmetic, no field, inside the call.
        let inside = &store[store.find('(').unwrap()..];
        assert!(!inside.contains(['+', '*', '.']), "{store}");
    }
    assert!(stores[0].starts_with("coopStoreT("), "{}", stores[0]);
    assert!(stores[1].starts_with("coopStore("), "{}", stores[1]);
    spirv(&text);
}

#[test]
fn an_inline_store_is_what_crashes_the_spirv_writer() {
    // The reason for the `let`s above, kept as a test so a naga that fixes it is noticed.
    let text = wgsl(matmul()).unwrap();
    let mut crashing = text.clone();
    crashing.push_str(
        "@compute @workgroup_size(32)\nfn probe() {\n    \
         let acc = coop_mat16x16<f32, C>();\n    \
         coopStore(acc, &c[p.n + 1u], p.n);\n}\n",
    );
    let message = std::panic::catch_unwind(|| spirv(&crashing))
        .err()
        .and_then(|panic| panic.downcast_ref::<String>().cloned());
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("is not cached")),
        "naga's SPIR-V writer no longer needs the `let`s ({message:?}):\n{crashing}"
    );
}

#[test]
fn fragments_load_from_vectors_naga_writes_to_spirv() {
    // Staging writes four `f16` in one store; the fragments read the same memory with the
    // stride in vectors.
    let text = wgsl(quote! {
        mod m {
            #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
            fn k(
                x: &[Vec4<f32>],
                c: &mut [Vec4<f32>],
                #[workgroup] tile: &mut [Vec4<f16>; 128],
            ) {
                let t = local_index();
                tile[t] = x[t] as Vec4<f16>;
                tile[t + 32] = x[t + 32] as Vec4<f16>;
                workgroup_barrier();
                let fa: FragA16<f16> = coop_load_row_major(&tile[0], 4);
                let fb: FragB16<f16> = coop_load_column_major(&tile[64], 4);
                let acc: FragC16<f32> = coop_multiply_add(fa, fb, coop_zero());
                coop_store_row_major(acc, &mut c[0], 4);
            }
        }
    })
    .unwrap();
    assert!(text.contains("vec4<f16>("), "{text}");
    assert!(text.contains("coop_mat16x16<f32, C>()"), "{text}");
    spirv(&text);
}

#[test]
fn fragments_under_uniform_conditions_joined_by_and_pass_naga() {
    // naga lowers a short-circuit `&&` through a local variable, which its uniformity
    // analysis counts as varying: the conditions are written with `&` / `|` instead.
    let text = wgsl(quote! {
        mod m {
            #[repr(C)]
            #[derive(Params)]
            struct P { m: u32, n: u32 }

            fn ready(c: &mut [f32]) -> bool {
                c[0] = 1.0;
                true
            }

            #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
            fn k(p: &P, a: &[f16], c: &mut [f32]) {
                let origin = workgroup_id().x * 16;
                let inside = origin + 16 <= p.n && origin + 16 <= p.m;
                let mut acc: FragC16<f32> = coop_zero();
                if inside || p.m == 0 {
                    let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
                    let fb: FragB16<f16> = coop_load_row_major(&a[256], 16);
                    acc = coop_multiply_add(fa, fb, acc);
                }
                if p.n > 16 && p.m > 16 {
                    coop_store_row_major(acc, &mut c[origin], p.n);
                }
                if local_index() == 0 && ready(c) {
                    c[1] = 2.0;
                }
            }
        }
    })
    .unwrap();
    assert!(text.contains("(p.m == 0u)"), "{text}");
    assert!(!text.contains("(inside || "), "{text}");
    // A right side with effects keeps its short circuit.
    assert!(text.contains(") && ready("), "{text}");
    spirv(&text);
}

#[test]
fn fragment_operations_in_branches_on_a_helpers_flag_pass_naga() {
    let text = wgsl(quote! {
        mod m {
            fn product(a: &[f16; 512], across: bool, acc: FragC16<f32>) -> FragC16<f32> {
                let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
                let mut fb: FragB16<f16> = coop_zero();
                if across {
                    fb = coop_load_column_major(&a[256], 16);
                } else {
                    fb = coop_load_row_major(&a[256 + 0], 16);
                }
                if across { coop_multiply_add(fa, fb, acc) } else { acc }
            }

            fn after_return(a: &[f16; 512], skip: bool, acc: FragC16<f32>) -> FragC16<f32> {
                if skip {
                    return acc;
                }
                let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
                let fb: FragB16<f16> = coop_load_row_major(&a[256], 16);
                coop_multiply_add(fa, fb, acc)
            }

            #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
            fn k(x: &[f16], c: &mut [f32], #[workgroup] tile: &mut [f16; 512]) {
                let t = local_index();
                for i in 0..16u32 {
                    tile[t * 16 + i] = x[t * 16 + i];
                }
                workgroup_barrier();
                let zero: FragC16<f32> = coop_zero();
                let acc = product(tile, true, zero);
                let acc = after_return(tile, false, acc);
                coop_store_row_major(acc, &mut c[0], 16);
            }
        }
    })
    .unwrap();
    // Before any branch, written in place; in a branch or after a `return` in one, a call.
    assert!(
        text.contains("coopLoadT<coop_mat16x16<f16, A>>(&tile[0u], 16u)"),
        "{text}"
    );
    for call in ["tsr_fragment0(256u, 16u)", "tsr_fragment2(fa, fb, acc)"] {
        assert!(text.contains(call), "{call}: {text}");
    }
    // One function per distinct operation: the two row-major loads of B share one.
    assert_eq!(text.matches("fn tsr_fragment").count(), 4, "{text}");
    spirv(&text);
}

#[test]
fn a_fragment_load_under_a_parameter_is_what_naga_rejects() {
    // The reason for the calls above, kept as a test so a naga that accepts it is noticed.
    let text = "enable f16;\nenable wgpu_cooperative_matrix;\n\
                var<workgroup> tile: array<f16, 512>;\n\
                fn load(across: bool) -> coop_mat16x16<f16, B> {\n    \
                    var fb = coop_mat16x16<f16, B>();\n    \
                    if across { fb = coopLoad<coop_mat16x16<f16, B>>(&tile[0], 16u); }\n    \
                    return fb;\n}\n\
                @compute @workgroup_size(32)\nfn k() {\n    _ = load(true);\n}\n";
    let module = naga::front::wgsl::parse_str(text).unwrap();
    let caps =
        naga::valid::Capabilities::COOPERATIVE_MATRIX | naga::valid::Capabilities::SHADER_FLOAT16;
    let error = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .expect_err("naga now accepts a fragment load under a parameter: drop fragment_calls.rs");
    assert!(format!("{error:?}").contains("COOP_OPS"), "{error:?}");
}
