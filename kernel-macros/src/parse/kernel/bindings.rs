//! A kernel's parameters -> bindings: buffers (`&[T]`, `&mut [T]`) and their element types,
//! uniform parameters (`&Params`), workgroup memory (`#[workgroup]`), `#[len(..)]`, and the
//! bindings a family member takes from its family.

use crate::diag::Errors;
use crate::ir::{self, Scalar, Span, Ty};
use crate::parse::keywords::{ATOMIC_I32, ATOMIC_U32, LEN, WORKGROUP_MEMORY};
use crate::parse::ty;

/// A family member's bindings: each one the family declares, with the family's length; the
/// member may read a binding the family declares writable. Bindings the family does not
/// declare are reported and left out.
pub(super) fn member_bindings(
    kernel: &syn::Ident,
    family: &ir::Family,
    params: &[ir::ParamsStruct],
    bindings: &mut Vec<ir::Binding>,
    lens: &[(usize, syn::Expr)],
    errors: &mut Errors,
) -> Vec<syn::Ident> {
    let name = &family.name;
    let mut rejected = Vec::new();
    for (_, expr) in lens {
        errors.spanned(
            expr,
            format!(
                "the family `{name}` declares the lengths of its bindings; remove this `#[len]` \
                 (or change it in `struct {name}`)"
            ),
        );
    }
    bindings.retain_mut(|binding| {
        let Some(declared) = family.binding(&binding.name) else {
            errors.at(
                binding.span,
                format!(
                    "`{}` is not a binding of the family `{name}`, which declares {}; add it to \
                     `struct {name}` or take one of those",
                    binding.name,
                    family.binding_list()
                ),
            );
            rejected.push(binding.name.clone());
            return false;
        };
        let same = match (&binding.kind, &declared.binding.kind) {
            (ir::BindingKind::Uniform { params: a }, ir::BindingKind::Uniform { params: b }) => {
                a == b
            }
            (
                ir::BindingKind::Storage {
                    element: a,
                    writable,
                },
                ir::BindingKind::Storage {
                    element: b,
                    writable: declared_writable,
                },
            ) => {
                if *writable && !declared_writable {
                    errors.at(
                        binding.span,
                        format!(
                            "`{}` is read-only in the family `{name}`; take it as `&[T]`, or \
                             declare it `&mut [T]` in `struct {name}`",
                            binding.name
                        ),
                    );
                    rejected.push(binding.name.clone());
                    return false;
                }
                a == b
            }
            _ => false,
        };
        if !same {
            errors.at(
                binding.span,
                format!(
                    "the family `{name}` declares `{}` as `{}`; take it as {}",
                    binding.name,
                    declared_ty(&declared.binding, family, params),
                    accepted_ty(&declared.binding, params)
                ),
            );
            rejected.push(binding.name.clone());
            return false;
        }
        binding.len = declared.binding.len.clone();
        true
    });
    let has_params = bindings
        .iter()
        .any(|b| matches!(b.kind, ir::BindingKind::Uniform { .. }));
    let needs_params = bindings
        .iter()
        .find(|b| b.len.as_ref().is_some_and(ir::HostExpr::reads_params));
    if let (false, Some(needing)) = (has_params, needs_params) {
        let params = family
            .bindings
            .iter()
            .find(|b| matches!(b.binding.kind, ir::BindingKind::Uniform { .. }));
        let take = params.map_or(String::new(), |p| format!("`{}`", p.binding.name));
        errors.spanned(
            kernel,
            format!(
                "the family `{name}` computes the length of `{}` from its parameters; take \
                 {take} too",
                needing.name
            ),
        );
    }
    rejected
}

/// Checks that `other`, a second family of the member `kernel`, declares each of its
/// `bindings` (as `first` gave them their lengths) as a binding of its own, of the same length:
/// the member's launcher checks one length per binding, whichever family records it.
pub(super) fn same_lengths(
    kernel: &syn::Ident,
    first: &ir::Family,
    other: &ir::Family,
    params: &[ir::ParamsStruct],
    bindings: &[ir::Binding],
    errors: &mut Errors,
) {
    let mut theirs = bindings.to_vec();
    member_bindings(kernel, other, params, &mut theirs, &[], errors);
    for mine in bindings {
        let Some(their) = theirs.iter().find(|b| b.name == mine.name) else {
            continue;
        };
        let same = match (&mine.len, &their.len) {
            (Some(a), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            errors.spanned(
                kernel,
                format!(
                    "`{kernel}` is a member of `{}` and of `{}`, which give `{}` different \
                     lengths; declare it alike in both (its launcher checks one length)",
                    first.name, other.name, mine.name
                ),
            );
        }
    }
}

/// How the family declares `binding`, as Rust: `&mut [f32]`, `Option<&[u32]>`, `&Shape`.
fn declared_ty(binding: &ir::Binding, family: &ir::Family, params: &[ir::ParamsStruct]) -> String {
    let ty = member_ty(binding, params);
    if family.binding(&binding.name).is_some_and(|b| b.optional) {
        format!("Option<{ty}>")
    } else {
        ty
    }
}

/// What a member may take for the family's `binding`: "`&mut [f32]`, or `&[f32]` to only
/// read it".
fn accepted_ty(binding: &ir::Binding, params: &[ir::ParamsStruct]) -> String {
    match &binding.kind {
        ir::BindingKind::Storage {
            element,
            writable: true,
        } => format!(
            "`&mut [{0}]`, or `&[{0}]` to only read it",
            element.rust_name()
        ),
        _ => format!("`{}`", member_ty(binding, params)),
    }
}

fn member_ty(binding: &ir::Binding, params: &[ir::ParamsStruct]) -> String {
    match &binding.kind {
        ir::BindingKind::Storage { element, writable } => {
            let mutability = if *writable { "mut " } else { "" };
            format!("&{mutability}[{}]", element.rust_name())
        }
        ir::BindingKind::Uniform { params: index } => format!("&{}", params[*index].name),
    }
}

/// Adds the binding or workgroup array `arg` declares; returns its `#[len(..)]` expression.
pub(super) fn kernel_param(
    arg: &syn::PatType,
    params: &[ir::ParamsStruct],
    bindings: &mut Vec<ir::Binding>,
    shared: &mut Vec<ir::SharedVar>,
    errors: &mut Errors,
) -> Option<syn::Expr> {
    let syn::Pat::Ident(pat) = &*arg.pat else {
        errors.spanned(&arg.pat, "a kernel parameter must be a plain name");
        return None;
    };
    let name = pat.ident.clone();
    let span = Span::of(arg);
    let mut is_shared = false;
    let mut len = None;
    for attr in &arg.attrs {
        if attr.path().is_ident(WORKGROUP_MEMORY) {
            is_shared = true;
        } else if attr.path().is_ident(LEN) {
            len = Some(attr);
        } else {
            errors.spanned(
                attr,
                "unknown parameter attribute; kernels accept `#[len(expr)]` and `#[workgroup]`",
            );
        }
    }
    if is_shared {
        match shared_ty(&arg.ty) {
            Ok(ty) => shared.push(ir::SharedVar {
                name,
                ty,
                span,
                writable: true,
            }),
            Err(error) => errors.push(error),
        }
        return None;
    }
    let kind = match binding_kind(&arg.ty, params) {
        Ok(kind) => kind,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let len = len.and_then(|attr| {
        if matches!(kind, ir::BindingKind::Uniform { .. }) {
            errors.spanned(
                attr,
                "`#[len]` belongs on storage parameters (`&[T]`, `&mut [T]`)",
            );
            return None;
        }
        attr.parse_args::<syn::Expr>()
            .map_err(|error| errors.push(error))
            .ok()
    });
    bindings.push(ir::Binding {
        name,
        kind,
        len: None,
        span,
        host: ir::HostElement::Fixed,
    });
    len
}

pub fn binding_kind(ty: &syn::Type, params: &[ir::ParamsStruct]) -> syn::Result<ir::BindingKind> {
    let unsupported = || {
        syn::Error::new_spanned(
            ty,
            "unsupported kernel parameter type; a kernel takes `&[T]` (read-only storage), `&mut [T]` \
             (read-write storage) with T one of `f32`, `u32`, `i32`, `f16`, `AtomicU32`, `AtomicI32`, \
             `&P` for a `#[derive(Params)]` struct `P` of this module, or `#[workgroup] name: &mut [T; N]`",
        )
    };
    let syn::Type::Reference(reference) = ty else {
        return Err(unsupported());
    };
    let writable = reference.mutability.is_some();
    match &*reference.elem {
        syn::Type::Slice(slice) => {
            let element = storage_element(&slice.elem)?;
            Ok(ir::BindingKind::Storage { element, writable })
        }
        syn::Type::Path(path) => {
            let index = params
                .iter()
                .position(|p| path.path.is_ident(&p.name))
                .ok_or_else(unsupported)?;
            if writable {
                return Err(syn::Error::new_spanned(
                    ty,
                    "kernels cannot write their parameters; take `&P`",
                ));
            }
            Ok(ir::BindingKind::Uniform { params: index })
        }
        _ => Err(unsupported()),
    }
}

/// The element type of a buffer: a scalar, an atomic, or a `Vec2`/`Vec4` of a scalar (read and
/// written a whole vector at a time; the host holds `[T; 2]`/`[T; 4]`).
pub(super) fn storage_element(ty: &syn::Type) -> syn::Result<Ty> {
    let unsupported = || {
        syn::Error::new_spanned(
            ty,
            "a buffer's elements are `f32`, `f16`, `u32`, `i32`, `Vec2<T>` or `Vec4<T>` of those, \
             `AtomicU32` or `AtomicI32`",
        )
    };
    let syn::Type::Path(path) = ty else {
        return Err(unsupported());
    };
    match path.path.get_ident().map(ToString::to_string).as_deref() {
        Some(ATOMIC_U32) => return Ok(Ty::Atomic(Scalar::U32)),
        Some(ATOMIC_I32) => return Ok(Ty::Atomic(Scalar::I32)),
        _ => {}
    }
    match ty::value_ty(ty).map_err(|_| unsupported())? {
        element @ Ty::Scalar(Scalar::F32 | Scalar::F16 | Scalar::U32 | Scalar::I32) => Ok(element),
        Ty::Vector(3, scalar) => Err(syn::Error::new_spanned(
            ty,
            format!(
                "a buffer of `Vec3<{0}>` would hold 16 bytes per element (WGSL pads `vec3` in \
                 storage), which the host's `[{0}; 3]` does not; use `Vec4<{0}>`, or three \
                 `{0}` per element of a `&[{0}]`",
                scalar.rust_name()
            ),
        )),
        element @ Ty::Vector(_, Scalar::F32 | Scalar::F16 | Scalar::U32 | Scalar::I32) => {
            Ok(element)
        }
        _ => Err(unsupported()),
    }
}

fn shared_ty(ty: &syn::Type) -> syn::Result<Ty> {
    let usage = "workgroup memory is declared as `#[workgroup] name: &mut [T; N]` (an array) \
                 or `#[workgroup] name: &mut T` (one value of a scalar or vector type)";
    let syn::Type::Reference(reference) = ty else {
        return Err(syn::Error::new_spanned(ty, usage));
    };
    if reference.mutability.is_none() {
        return Err(syn::Error::new_spanned(ty, usage));
    }
    match ty::value_ty(&reference.elem)? {
        array if array.holds_fragment() => Err(syn::Error::new_spanned(
            &reference.elem,
            "fragments have no layout in memory, so workgroup memory cannot hold them; store \
             a fragment's elements to a workgroup array with `coop_store_row_major` and load \
             them back with `coop_load_row_major`",
        )),
        array @ Ty::Array(..) => Ok(array),
        // One value, read and written as `*name` (or `name`).
        value @ (Ty::Scalar(_) | Ty::Vector(..)) => Ok(value),
        _ => Err(syn::Error::new_spanned(ty, usage)),
    }
}
