//! Rust types of the kernel language: scalars, `VecN<T>`, `[T; N]` and atomics.

use crate::ir::{Scalar, Ty};
use crate::parse::consts::{self, Consts};
use crate::parse::keywords::{ATOMIC_I32, ATOMIC_U32};

const SUPPORTED: &str = "supported types are `f32`, `u32`, `i32`, `bool`, `f16` (in kernels that \
                         declare `features(f16)`), `usize` (as `u32`), `Vec2<T>`, `Vec3<T>`, \
                         `Vec4<T>` and arrays `[T; N]`";

/// A scalar named by `ident`; `usize` stands for `u32` so indexing code reads like Rust.
pub fn scalar(ident: &str) -> Option<Scalar> {
    match ident {
        "f32" => Some(Scalar::F32),
        "f16" => Some(Scalar::F16),
        "u32" | "usize" => Some(Scalar::U32),
        "i32" => Some(Scalar::I32),
        "bool" => Some(Scalar::Bool),
        _ => None,
    }
}

/// A value type: what `let x: T`, `as T`, helper parameters and workgroup arrays may name.
pub fn value_ty(ty: &syn::Type) -> syn::Result<Ty> {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => path_ty(&path.path),
        syn::Type::Array(array) => {
            let element = value_ty(&array.elem)?;
            let len = array_len(&array.len)?;
            Ok(Ty::Array(Box::new(element), len))
        }
        syn::Type::Paren(inner) => value_ty(&inner.elem),
        _ => Err(syn::Error::new_spanned(
            ty,
            format!("this type is not supported in kernels; {SUPPORTED}"),
        )),
    }
}

fn path_ty(path: &syn::Path) -> syn::Result<Ty> {
    let unsupported =
        || syn::Error::new_spanned(path, format!("unknown type in a kernel; {SUPPORTED}"));
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return Err(unsupported());
    };
    let name = segment.ident.to_string();
    if let Some(s) = scalar(&name) {
        return Ok(Ty::Scalar(s));
    }
    match name.as_str() {
        ATOMIC_U32 => return Ok(Ty::Atomic(Scalar::U32)),
        ATOMIC_I32 => return Ok(Ty::Atomic(Scalar::I32)),
        _ => {}
    }
    let width = match name.as_str() {
        "Vec2" => 2,
        "Vec3" => 3,
        "Vec4" => 4,
        _ => return Err(unsupported()),
    };
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return Err(syn::Error::new_spanned(
            path,
            format!("write the element type: `{name}<f32>`"),
        ));
    };
    match args.args.iter().collect::<Vec<_>>()[..] {
        [syn::GenericArgument::Type(element)] => match value_ty(element)? {
            Ty::Scalar(s) => Ok(Ty::Vector(width, s)),
            _ => Err(syn::Error::new_spanned(
                element,
                "vector elements must be `f32`, `u32`, `i32`, `bool` or `f16`",
            )),
        },
        _ => Err(syn::Error::new_spanned(
            args,
            format!("write one element type: `{name}<f32>`"),
        )),
    }
}

/// The length of an array type: an integer known at compile time (constants have been
/// replaced by literals already, so `TILE * TILE` arrives as `16u32 * 16u32`).
pub fn array_len(len: &syn::Expr) -> syn::Result<u32> {
    match consts::eval(len, &Consts::default()).map(u32::try_from) {
        Some(Ok(0)) => Err(syn::Error::new_spanned(len, "arrays must have at least one element")),
        Some(Ok(n)) => Ok(n),
        _ => Err(syn::Error::new_spanned(
            len,
            "an array length must be known at compile time: an integer, a constant of the module, or arithmetic on them",
        )),
    }
}
