//! Rust types of the kernel language: scalars, `VecN<T>`, `[T; N]`, atomics and matrix
//! fragments (`FragA16<f16>`).

use crate::ir::{Fragment, Role, Scalar, Ty};
use crate::parse::consts::{self, Consts};
use crate::parse::keywords::{ATOMIC_I32, ATOMIC_U32};

const SUPPORTED: &str = "supported types are `f32`, `u32`, `i32`, `bool`, `f16` (in kernels that \
                         declare `features(f16)`), `usize` (as `u32`), `Vec2<T>`, `Vec3<T>`, \
                         `Vec4<T>`, arrays `[T; N]`, and the fragments `FragA16<T>`, `FragB16<T>`, `FragC16<T>` \
                         (and `..8`) in kernels that declare `features(cooperative_matrix)`";

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

/// Whether `name` is a type the kernel language knows (`u32`, `Vec2`, `AtomicU32`, `FragA16`):
/// a name a type parameter must not take.
pub fn is_known_name(name: &str) -> bool {
    scalar(name).is_some()
        || matches!(name, "Vec2" | "Vec3" | "Vec4" | ATOMIC_U32 | ATOMIC_I32)
        || fragment_name(name).is_some()
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
    if let Some((role, size)) = fragment_name(&name) {
        return fragment_ty(path, segment, &name, role, size);
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

/// The role and size a fragment type's name gives: `FragA16` is an A operand of 16 x 16.
fn fragment_name(name: &str) -> Option<(Role, u8)> {
    let rest = name.strip_prefix("Frag")?;
    let mut chars = rest.chars();
    let role = match chars.next()? {
        'A' => Role::A,
        'B' => Role::B,
        'C' => Role::C,
        _ => return None,
    };
    match chars.as_str() {
        "8" => Some((role, 8)),
        "16" => Some((role, 16)),
        _ => None,
    }
}

fn fragment_ty(
    path: &syn::Path,
    segment: &syn::PathSegment,
    name: &str,
    role: Role,
    size: u8,
) -> syn::Result<Ty> {
    let advice = format!("write the element type, `f16` or `f32`: `{name}<f16>`");
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return Err(syn::Error::new_spanned(path, advice));
    };
    let [syn::GenericArgument::Type(element)] = args.args.iter().collect::<Vec<_>>()[..] else {
        return Err(syn::Error::new_spanned(args, advice));
    };
    match value_ty(element)? {
        Ty::Scalar(scalar) if scalar.is_float() => {
            Ok(Ty::Fragment(Fragment { role, size, scalar }))
        }
        _ => Err(syn::Error::new_spanned(
            element,
            "fragment elements are `f16` or `f32`, the types tensor cores multiply",
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
