//! Uniform layout: where WGSL places each field of a `Params` struct in the uniform address
//! space, against where `#[repr(C)]` Rust places it. Both `#[derive(Params)]` and the kernels
//! module use it; a difference is an error at the field, saying how much padding to add.

use crate::diag::Errors;
use crate::ir::{ParamsStruct, Ty};

/// Byte offsets of each field under Rust's `repr(C)` rules and under WGSL's.
pub struct FieldOffsets {
    pub rust: u32,
    pub wgsl: u32,
}

/// Rust `repr(C)` size and alignment of a params field type (`[T; N]` for vectors).
fn rust_size_align(ty: &Ty) -> (u32, u32) {
    match ty {
        Ty::Vector(n, _) => (4 * u32::from(*n), 4),
        _ => (4, 4),
    }
}

/// Offsets of every field, in declaration order.
pub fn offsets(params: &ParamsStruct) -> Vec<FieldOffsets> {
    let (mut rust, mut wgsl) = (0u32, 0u32);
    params
        .fields
        .iter()
        .map(|field| {
            let (rust_size, rust_align) = rust_size_align(&field.ty);
            let (wgsl_size, wgsl_align) = field.ty.size_align();
            let here = FieldOffsets {
                rust: rust.next_multiple_of(rust_align),
                wgsl: wgsl.next_multiple_of(wgsl_align),
            };
            rust = here.rust.saturating_add(rust_size);
            wgsl = here.wgsl.saturating_add(wgsl_size);
            here
        })
        .collect()
}

/// Reports every field whose Rust offset differs from its WGSL offset, and a missing `repr(C)`.
pub fn check(params: &ParamsStruct, errors: &mut Errors) {
    if !params.repr_c {
        errors.at(
            params.name.span(),
            format!(
                "`{}` needs `#[repr(C)]` so its Rust layout is fixed and can match WGSL's",
                params.name
            ),
        );
    }
    if !params.refused.is_empty() {
        // The offsets after a refused field are unknown.
        return;
    }
    for (field, at) in params.fields.iter().zip(offsets(params)) {
        if at.rust != at.wgsl {
            let pad = at.wgsl.saturating_sub(at.rust);
            let words = pad / 4;
            let fill = (0..words)
                .map(|i| format!("_pad_{}_{i}: u32", field.name))
                .collect::<Vec<_>>()
                .join(", ");
            errors.at(
                field.span,
                format!(
                    "`{}` would be at byte {} in Rust but at byte {} in WGSL, which aligns a `{}` to {} bytes; \
                     add {} byte(s) of padding before it (e.g. `{fill},`) or move it",
                    field.name,
                    at.rust,
                    at.wgsl,
                    wgsl_name(&field.ty),
                    field.ty.size_align().1,
                    pad,
                ),
            );
        }
    }
}

/// The WGSL type of a params field, for messages.
fn wgsl_name(ty: &Ty) -> String {
    match ty {
        Ty::Vector(n, s) => format!("vec{n}<{}>", s.rust_name()),
        other => other.rust_name(),
    }
}
