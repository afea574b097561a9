//! Unit tests of `check/`: inference, type errors, limits, layouts, uniformity.

use quote::quote;

use crate::check::layout;
use crate::ir::{ParamsField, ParamsStruct, Scalar, StmtKind, Ty};
use crate::tests::checked;

fn first_error(tokens: proc_macro2::TokenStream) -> String {
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
