//! Unit tests of the checks on matrix fragments: each misuse is an error at the user's tokens,
//! in words that say what to write instead.

use proc_macro2::TokenStream;

use crate::tests::checked;

/// A module with one kernel around `body`: buffers `a: &[f16]`, `x: &[f32]`, `c: &mut [f32]`,
/// `h: &mut [f16]`, a workgroup array `tile: [f16; 256]`, parameters `p.n`, and `helpers`.
fn module(features: &str, helpers: &str, body: &str) -> TokenStream {
    let text = format!(
        "mod m {{ #[repr(C)] #[derive(Params)] struct P {{ n: u32 }} {helpers} \
         #[kernel(workgroup = [32], grid = [1], features({features}))] \
         fn k(p: &P, a: &[f16], x: &[f32], c: &mut [f32], h: &mut [f16], \
              #[workgroup] tile: &mut [f16; 256]) {{ {body} }} }}"
    );
    syn::parse_str(&text).expect("a module")
}

/// Every error of a kernel declaring f16 and cooperative matrices.
fn errors_of(body: &str) -> Vec<String> {
    errors_with("f16, cooperative_matrix", "", body)
}

fn errors_with(features: &str, helpers: &str, body: &str) -> Vec<String> {
    checked(module(features, helpers, body))
        .err()
        .unwrap_or_default()
}

fn assert_one_error(errors: Vec<String>, fragment: &str) {
    assert!(
        errors.len() == 1 && errors[0].contains(fragment),
        "expected one error containing {fragment:?}, got {errors:#?}"
    );
}

const GEMM_STEP: &str = "
    let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
    let fb: FragB16<f16> = coop_load_column_major(&tile[0], 16);
    let mut acc: FragC16<f32> = coop_zero();
    acc = coop_multiply_add(fa, fb, acc);
    coop_store_row_major(acc, &mut c[0], p.n);
";

#[test]
fn a_kernel_that_declares_the_feature_checks() {
    assert_eq!(errors_of(GEMM_STEP), Vec::<String>::new());
}

#[test]
fn fragment_operations_need_the_feature() {
    let errors = errors_with("f16", "", GEMM_STEP);
    assert!(
        errors[0].contains(
            "`coop_load_row_major` runs on the tensor cores: declare \
             `features(cooperative_matrix)` in the kernel's `#[kernel(...)]`"
        ),
        "{errors:#?}"
    );
}

#[test]
fn helpers_may_use_fragments_when_every_caller_declares_the_feature() {
    let helper = "fn mma(a: FragA16<f16>, b: FragB16<f16>, c: FragC16<f32>) -> FragC16<f32> { \
                  coop_multiply_add(a, b, c) }";
    let body = "let fa: FragA16<f16> = coop_load_row_major(&a[0], 16); \
                let fb: FragB16<f16> = coop_load_row_major(&a[0], 16); \
                let acc: FragC16<f32> = mma(fa, fb, coop_zero()); \
                coop_store_row_major(acc, &mut c[0], 16);";
    assert_eq!(
        errors_with("f16, cooperative_matrix", helper, body),
        Vec::<String>::new()
    );
    let errors = errors_with("f16", helper, body);
    assert!(
        errors.iter().any(|e| e
            == "`k` calls `mma`, which uses `coop_multiply_add`; `coop_multiply_add` runs on the \
                tensor cores: declare `features(cooperative_matrix)` in the `#[kernel(...)]` of \
                `k`, and its launcher will check that the device has them"),
        "{errors:#?}"
    );
}

#[test]
fn f16_fragments_need_the_f16_feature() {
    let errors = errors_with(
        "cooperative_matrix",
        "",
        "let z: FragC16<f16> = coop_zero(); coop_store_row_major(z, &mut h[0], 16);",
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`f16` values need the kernel to declare `features(f16)`")),
        "{errors:#?}"
    );
}

#[test]
fn multiply_add_takes_a_b_and_c_in_order() {
    let errors = errors_of(
        "let fa: FragA16<f16> = coop_load_row_major(&a[0], 16); \
         let acc: FragC16<f32> = coop_zero(); \
         let wrong = coop_multiply_add(fa, fa, acc); \
         coop_store_row_major(wrong, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "the second operand of `coop_multiply_add(a, b, c)` is a `FragB` fragment, found `FragA16<f16>`",
    );
}

#[test]
fn multiply_add_operands_have_one_size_and_one_element_type() {
    let errors = errors_of(
        "let fa: FragA16<f16> = coop_load_row_major(&a[0], 16); \
         let fb: FragB8<f16> = coop_load_row_major(&a[0], 8); \
         let acc: FragC16<f32> = coop_zero(); \
         let r = coop_multiply_add(fa, fb, acc); \
         coop_store_row_major(r, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "`coop_multiply_add` multiplies fragments of one size: `FragA16<f16>` is 16x16 and `FragB8<f16>` is 8x8",
    );
    let errors = errors_of(
        "let fa: FragA16<f16> = coop_load_row_major(&a[0], 16); \
         let fb: FragB16<f32> = coop_load_row_major(&x[0], 16); \
         let acc: FragC16<f32> = coop_zero(); \
         let r = coop_multiply_add(fa, fb, acc); \
         coop_store_row_major(r, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "`coop_multiply_add` multiplies operands of one element type: `FragA16<f16>` and `FragB16<f32>`",
    );
}

#[test]
fn loads_and_stores_keep_the_element_type_of_memory() {
    let errors = errors_of(
        "let fa: FragA16<f16> = coop_load_row_major(&x[0], 16); \
         let acc: FragC16<f32> = coop_zero(); \
         coop_store_row_major(acc, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "`coop_load_row_major` moves `FragA16<f16>` elements, and this place holds `f32`; stage the values as `f16` first",
    );
    let errors =
        errors_of("let acc: FragC16<f32> = coop_zero(); coop_store_row_major(acc, &mut h[0], 16);");
    assert_one_error(
        errors,
        "moves `FragC16<f32>` elements, and this place holds `f16`",
    );
}

#[test]
fn a_load_needs_its_fragment_type_from_the_context() {
    let errors = errors_of("let fa = coop_load_row_major(&a[0], 16); let z = coop_zero();");
    assert!(
        errors[0].contains(
            "`coop_load_row_major` makes the fragment its context asks for, and nothing here \
             says which: write its type, `let a: FragA16<f16> = coop_load_row_major(&a[i], stride);`"
        ),
        "{errors:#?}"
    );
    assert!(
        errors[1].contains("`let a: FragA16<f16> = coop_zero();`"),
        "{errors:#?}"
    );
}

#[test]
fn fragments_live_in_buffers_and_workgroup_arrays() {
    let errors = errors_of(
        "let local = [1.0f32; 256]; let f: FragC16<f32> = coop_load_row_major(&local[0], 16); \
         coop_store_row_major(f, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "`coop_load_row_major` reads from one element of a buffer or a workgroup array, `&a[i]`",
    );
    let errors = errors_of(
        "let f: FragC16<f32> = coop_load_row_major(x[0], 16); coop_store_row_major(f, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "`coop_load_row_major` takes the place of the fragment's first element, `&a[i]`",
    );
    let errors = errors_of(
        "let f: FragC16<f32> = coop_load_row_major(&x, 16); coop_store_row_major(f, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "reads from one element of a buffer or a workgroup array",
    );
}

#[test]
fn stores_write_through_mut_to_writable_memory() {
    let errors =
        errors_of("let f: FragC16<f32> = coop_zero(); coop_store_row_major(f, &c[0], 16);");
    assert_one_error(
        errors,
        "`coop_store_row_major` writes to memory: lend the place as `&mut`",
    );
    let errors =
        errors_of("let f: FragC16<f32> = coop_zero(); coop_store_row_major(f, &mut x[0], 16);");
    assert_one_error(
        errors,
        "`x` is read-only (`&[f32]`); declare it `&mut [f32]` to write to it",
    );
    let errors = errors_of("coop_store_row_major(1.0, &mut c[0], 16);");
    assert_one_error(
        errors,
        "`coop_store_row_major` stores a fragment (`FragC16<f32>`, ...), not `f32`",
    );
}

#[test]
fn the_stride_is_a_u32() {
    let errors = errors_of(
        "let f: FragC16<f32> = coop_zero(); coop_store_row_major(f, &mut c[0], p.n as i32);",
    );
    assert_one_error(
        errors,
        "the stride counts elements from one row (or column) to the next: expected `u32`, found `i32`",
    );
}

#[test]
fn fragment_operations_run_in_uniform_control_flow() {
    let errors = errors_of(
        "let f: FragC16<f32> = coop_zero(); \
         if local_index() < 16 { coop_store_row_major(f, &mut c[0], 16); }",
    );
    assert_one_error(
        errors,
        "`coop_store_row_major()` must be reached by every invocation of the workgroup together \
         (a fragment belongs to a whole subgroup, and WGSL requires its operations in uniform \
         control flow)",
    );
}

#[test]
fn fragment_types_name_a_size_and_an_element_type() {
    for (ty, error) in [
        (
            "FragA16",
            "write the element type, `f16` or `f32`: `FragA16<f16>`",
        ),
        ("FragC8<u32>", "fragment elements are `f16` or `f32`"),
        ("FragA32<f16>", "unknown type in a kernel"),
    ] {
        let errors = errors_of(&format!("let f: {ty} = coop_zero();"));
        assert!(
            errors.iter().any(|e| e.contains(error)),
            "{ty}: {errors:#?}"
        );
    }
}

#[test]
fn arrays_of_fragments_are_locals() {
    assert_eq!(
        errors_of(
            "let mut accs: [FragC16<f32>; 2] = [coop_zero(); 2]; accs[1] = coop_zero(); \
             coop_store_row_major(accs[1], &mut c[0], 16);"
        ),
        Vec::<String>::new()
    );
}

#[test]
fn fragments_add_subtract_and_scale() {
    assert_eq!(
        errors_of(
            "let z: FragC16<f32> = coop_zero(); let y = z + z * 2.0 - 0.5 * z; \
             let fh: FragA16<f16> = coop_load_row_major(&a[0], 16); let g = fh * 3.0 + fh; \
             let s = x[0]; let w = y * s; coop_store_row_major(w - z, &mut c[0], 16); \
             coop_store_row_major(g, &mut h[0], 16);"
        ),
        Vec::<String>::new()
    );
}

#[test]
fn fragment_arithmetic_takes_one_type() {
    for (body, error) in [
        (
            "let z: FragC16<f32> = coop_zero(); let f: FragA16<f16> = coop_zero(); let y = z + f;",
            "`+` takes two fragments of one type, not `FragC16<f32>` and `FragA16<f16>`",
        ),
        (
            "let z: FragC16<f32> = coop_zero(); let y = z * z;",
            "fragments are not multiplied with `*`: `coop_multiply_add(a, b, acc)` adds the \
             product of an A and a B fragment to an accumulator",
        ),
        (
            "let z: FragC16<f32> = coop_zero(); let y = z * 2u32;",
            "a `FragC16<f32>` is scaled by a `f32`, not a `u32`",
        ),
        (
            "let z: FragC16<f32> = coop_zero(); let y = z / 2.0;",
            "a `FragC16<f32>` has no `/`: its elements are spread over a subgroup, so fragments \
             only add and subtract fragments of their type and multiply by a scalar of their \
             element type",
        ),
        (
            "let z: FragC16<f32> = coop_zero(); let q = z == z;",
            "a `FragC16<f32>` has no `==`",
        ),
        (
            "let z: FragC16<f32> = coop_zero(); let s = -z;",
            "a `FragC16<f32>` has no `-`",
        ),
        (
            "let z: FragC16<f32> = coop_zero(); let y = z + 1.0;",
            "a `FragC16<f32>` has no `+`",
        ),
        (
            "let mut z: FragC16<f32> = coop_zero(); z += z;",
            "a fragment takes no compound assignment; write `z = z + z`",
        ),
    ] {
        assert_one_error(errors_of(body), error);
    }
}

#[test]
fn fragment_arithmetic_runs_in_uniform_control_flow() {
    let errors = errors_of(
        "let mut f: FragC16<f32> = coop_zero(); \
         if local_index() < 16 { f = f * 2.0; } \
         coop_store_row_major(f, &mut c[0], 16);",
    );
    assert_one_error(
        errors,
        "`*` of fragments must be reached by every invocation of the workgroup together (a \
         fragment belongs to a whole subgroup, and WGSL requires its operations in uniform \
         control flow)",
    );
    // In a helper, the call is what must be uniform.
    let errors = errors_with(
        "f16, cooperative_matrix",
        "fn twice(f: FragC16<f32>) -> FragC16<f32> { f + f }",
        "let f: FragC16<f32> = coop_zero(); \
         if local_index() < 16 { coop_store_row_major(twice(f), &mut c[0], 16); }",
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`twice()` must be reached by every invocation")),
        "{errors:#?}"
    );
}

#[test]
fn workgroup_memory_cannot_hold_fragments() {
    let errors = checked(
        syn::parse_str(
            "mod m { #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))] \
             fn k(c: &mut [f32], #[workgroup] t: &mut [FragC16<f32>; 2]) { } }",
        )
        .unwrap(),
    )
    .err()
    .unwrap_or_default();
    assert_one_error(
        errors,
        "fragments have no layout in memory, so workgroup memory cannot hold them",
    );
}

/// A kernel staging `f16` vectors: a workgroup array `tile: [Vec4<f16>; 64]`, buffers `x:
/// &[Vec4<f32>]` and `c: &mut [Vec4<f32>]`, around `body`.
fn vector_errors(body: &str) -> Vec<String> {
    let text = format!(
        "mod m {{ #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))] \
         fn k(x: &[Vec4<f32>], c: &mut [Vec4<f32>], \
              #[workgroup] tile: &mut [Vec4<f16>; 64]) {{ {body} }} }}"
    );
    checked(syn::parse_str(&text).expect("a module"))
        .err()
        .unwrap_or_default()
}

#[test]
fn fragments_move_through_vectors_of_their_element_type() {
    assert_eq!(
        vector_errors(
            "tile[local_index()] = x[local_index()] as Vec4<f16>; workgroup_barrier(); \
             let fa: FragA16<f16> = coop_load_row_major(&tile[0], 4); \
             let fb: FragB16<f16> = coop_load_column_major(&tile[0], 4); \
             let acc: FragC16<f32> = coop_multiply_add(fa, fb, coop_zero()); \
             coop_store_row_major(acc, &mut c[0], 4);"
        ),
        Vec::<String>::new()
    );
    let errors = vector_errors("let fa: FragA16<f16> = coop_load_row_major(&x[0], 4);");
    assert_one_error(
        errors,
        "`coop_load_row_major` moves `FragA16<f16>` elements, and this place holds \
         `Vec4<f32>`; stage the values as `f16` first, or use a fragment of `f32`",
    );
}
