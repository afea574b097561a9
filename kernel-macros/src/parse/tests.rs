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
