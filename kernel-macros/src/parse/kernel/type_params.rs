//! A kernel's element-type parameter: `types(T = [..])` checked against the function's `<T>`,
//! the element types it may stand for, and the parameters declared over it.

use crate::diag::Errors;
use crate::ir::{self, Scalar, Span, Ty};
use crate::parse::attr::KernelAttr;
use crate::parse::keywords::WORKGROUP_MEMORY;
use crate::parse::{consts, ty};

/// The scalar types a type parameter may stand for.
const ELEMENT_TYPES: [Scalar; 4] = [Scalar::F32, Scalar::F16, Scalar::U32, Scalar::I32];

/// `types(T = [f32, f16])`, checked: one parameter, of distinct scalar types; the function may
/// declare it as `fn name<T>(..)`.
pub(super) fn type_param(
    function: &syn::ItemFn,
    args: &KernelAttr,
    errors: &mut Errors,
) -> Option<ir::TypeParam> {
    if let [_, second, ..] = &args.types[..] {
        errors.spanned(
            &second.0,
            "a kernel takes one element-type parameter; write the others as separate kernels",
        );
    }
    let declared = args.types.first();
    for param in &function.sig.generics.params {
        let ok = matches!(param, syn::GenericParam::Type(t)
            if declared.is_some_and(|(name, _)| t.ident == *name) && t.bounds.is_empty());
        if !ok {
            errors.spanned(
                param,
                "a kernel's only generic parameter is its element type, declared with \
                 `types(T = [f32, f16])` in `#[kernel(..)]` and written `fn name<T>(..)`",
            );
        }
    }
    let (name, listed) = declared?;
    if ty::is_known_name(&name.to_string()) {
        errors.spanned(
            name,
            format!(
                "`{name}` is a type of the kernel language, so it cannot name a type parameter \
                 (inside the kernel, `{name}` would mean both); name the parameter `T`: \
                 `types(T = [..])` and `fn {}<T>(..)`",
                function.sig.ident
            ),
        );
        // No instance is checked: its body would read `u32` as the parameter.
        return Some(ir::TypeParam {
            name: name.clone(),
            types: Vec::new(),
            span: Span::of(name),
        });
    }
    let mut types = Vec::new();
    for listed_ty in listed {
        match element_type(listed_ty) {
            Some(element) if types.contains(&element) => errors.spanned(
                listed_ty,
                format!(
                    "`{name}` lists `{}` twice, which would make the same instance twice; list \
                     each type once",
                    element.rust_name()
                ),
            ),
            Some(element) => types.push(element),
            None => errors.spanned(
                listed_ty,
                format!(
                    "`{name}` can stand for `f32`, `f16`, `u32` or `i32`, or a `Vec2` or `Vec4` \
                     of one (`Vec4<f32>`), not `{}`",
                    quote::ToTokens::to_token_stream(listed_ty)
                        .to_string()
                        .replace(' ', "")
                ),
            ),
        }
    }
    let span = Span {
        first: Span::of(listed.first()?).first,
        last: Span::of(listed.last()?).last,
    };
    // A list with no usable type (`types(T = [f64])`, reported above) still declares `T`:
    // the kernel then has no instance to check, rather than a body where `T` is unknown.
    Some(ir::TypeParam {
        name: name.clone(),
        types,
        span,
    })
}

/// The element type `ty` names, if a type parameter may stand for it.
fn element_type(ty: &syn::Type) -> Option<ir::Element> {
    let (scalar, lanes) = match ty::value_ty(ty).ok()? {
        Ty::Scalar(scalar) => (scalar, 1),
        Ty::Vector(lanes @ (2 | 4), scalar) => (scalar, lanes),
        _ => return None,
    };
    ELEMENT_TYPES
        .contains(&scalar)
        .then_some(ir::Element { scalar, lanes })
}

/// The parameters of `function` whose type names the type parameter, with how their buffers'
/// host types follow it: `x: &[T]` is `GpuBuffer<T>`; `sums: &mut [T::F32]` is one type for
/// every listed type where they agree (`GpuBuffer<f32>` over `f32` and `f16`), else
/// `GpuBuffer<<T as XElement>::F32>`. A buffer of a compound of an associated type
/// (`&[Vec4<T::Scalar>]`) must resolve to one type for every listed type: otherwise an error
/// at the parameter.
pub(super) fn generic_params(
    function: &syn::ItemFn,
    param: Option<&ir::TypeParam>,
    errors: &mut Errors,
) -> Vec<(syn::Ident, ir::HostElement)> {
    let Some(param) = param else {
        return Vec::new();
    };
    let mut generic = Vec::new();
    for input in &function.sig.inputs {
        let syn::FnArg::Typed(arg) = input else {
            continue;
        };
        let syn::Pat::Ident(pat) = &*arg.pat else {
            continue;
        };
        // Workgroup memory has no host type: `#[workgroup] tile: &mut [T::F32; N]` may differ.
        if arg
            .attrs
            .iter()
            .any(|a| a.path().is_ident(WORKGROUP_MEMORY))
        {
            continue;
        }
        let (whole, associated) = mentions(quote::ToTokens::to_token_stream(&arg.ty), &param.name);
        if whole {
            generic.push((pat.ident.clone(), ir::HostElement::Param));
        } else if associated {
            let tokens = quote::ToTokens::to_token_stream(&arg.ty);
            let name = param.name.to_string();
            let resolved = |element| consts::resolve_associated(tokens.clone(), &name, element);
            let Some(&first) = param.types.first() else {
                continue;
            };
            let other = param
                .types
                .iter()
                .find(|&&t| resolved(t) != resolved(first));
            let Some(&other) = other else {
                continue;
            };
            if let Some(ty) = buffer_of_associated(&arg.ty, &param.name) {
                generic.push((pat.ident.clone(), ir::HostElement::Associated(ty)));
                continue;
            }
            let (written, a, b) = (shown(&tokens.to_string()), resolved(first), resolved(other));
            errors.spanned(
                &arg.ty,
                format!(
                    "`{written}` is `{}` where `{name}` is `{}` but `{}` where it is `{}`: a \
                     buffer of a type built from `{name}::..` has one type for every type \
                     `{name}` stands for; declare the buffer over `{name}` or `{name}::..` \
                     itself (`&[{name}::Scalar]`), or write a kernel for each",
                    shown(&a),
                    first.rust_name(),
                    shown(&b),
                    other.rust_name(),
                ),
            );
        }
    }
    generic
}

/// The associated type `ty` is a buffer of, if it is one of exactly `name::..`
/// (`&mut [T::F32]`).
fn buffer_of_associated(ty: &syn::Type, name: &syn::Ident) -> Option<ir::Associated> {
    let syn::Type::Reference(reference) = ty else {
        return None;
    };
    let syn::Type::Slice(slice) = &*reference.elem else {
        return None;
    };
    let syn::Type::Path(path) = &*slice.elem else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let segments: Vec<&syn::PathSegment> = path.path.segments.iter().collect();
    let [first, second] = segments[..] else {
        return None;
    };
    let bare = |s: &syn::PathSegment| matches!(s.arguments, syn::PathArguments::None);
    if first.ident != *name || !bare(first) || !bare(second) {
        return None;
    }
    ir::Associated::named(&second.ident.to_string())
}

/// Whether `tokens` name `name` itself, and whether they name an item of it (`T::Scalar`).
fn mentions(tokens: proc_macro2::TokenStream, name: &syn::Ident) -> (bool, bool) {
    let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    let (mut whole, mut associated) = (false, false);
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            proc_macro2::TokenTree::Ident(ident) if ident == name => {
                let path = matches!(trees.get(i + 1),
                    Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':');
                if path {
                    associated = true;
                } else {
                    whole = true;
                }
            }
            proc_macro2::TokenTree::Group(group) => {
                let (w, a) = mentions(group.stream(), name);
                whole |= w;
                associated |= a;
            }
            _ => {}
        }
    }
    (whole, associated)
}

/// A type's tokens as a person writes them: `&mut [Vec4<f32>]`, not `& mut [Vec4 < f32 >]`.
fn shown(tokens: &str) -> String {
    tokens.replace(' ', "").replace("&mut", "&mut ")
}
