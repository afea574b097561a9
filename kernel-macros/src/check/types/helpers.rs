//! Calls of the module's helpers: plain helpers by their signatures, generic helpers by the
//! copy their arguments' types (or a turbofish) pick, and the buffers, arrays and parameters
//! that reference arguments lend.

use proc_macro2::Ident;

use super::{default_scalar, Checker, Resolved};
use crate::ir::*;

impl<'m> Checker<'m, '_> {
    /// `load::<Vec4<f32>>(m, i)`: a call of the generic helper's copy for the types it names,
    /// which becomes a plain call of that copy (of the name as written where there is none,
    /// the mistake reported).
    pub(super) fn turbofish_call(&mut self, e: &mut Expr) -> Ty {
        let span = e.span;
        let ExprKind::GenericCall(name, types, mut args) =
            std::mem::replace(&mut e.kind, ExprKind::Bool(false))
        else {
            return Ty::Unknown;
        };
        let (ty, called) = match self.generic(&name) {
            Some(generic) => {
                let (ty, copy) = self.generic_call(&name, generic, Some(&types), &mut args, span);
                (ty, copy.unwrap_or_else(|| name.clone()))
            }
            None => {
                for arg in args.iter_mut() {
                    if self.lent_ty(arg).is_none() {
                        self.expr(arg);
                    }
                }
                let what = if self.env.helpers.contains_key(&name.to_string()) {
                    "is not generic"
                } else {
                    "is no generic helper of this module"
                };
                self.errors.at(
                    name.span(),
                    format!("`{name}` {what}; call it without `::<..>`: `{name}(..)`"),
                );
                (Ty::Unknown, name)
            }
        };
        e.kind = ExprKind::Call(called, args);
        ty
    }

    /// The generic helper `name` refers to, if it is one.
    pub(super) fn generic(&self, name: &Ident) -> Option<&'m GenericHelper> {
        self.env.generic.iter().find(|g| g.name() == name)
    }

    /// A call of a generic helper: what its type parameters stand for, read from the
    /// arguments' types as Rust infers them, then the call typed as one of the helper's copy
    /// for those types. Returns the call's type and the copy's name.
    pub(super) fn generic_call(
        &mut self,
        name: &Ident,
        generic: &'m GenericHelper,
        named: Option<&[Ty]>,
        args: &mut [Expr],
        span: Span,
    ) -> (Ty, Option<Ident>) {
        let inputs: Vec<&syn::Type> = generic
            .item
            .sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(typed) => Some(&*typed.ty),
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        if inputs.len() != args.len() {
            for arg in args.iter_mut() {
                if self.lent_ty(arg).is_none() {
                    self.expr(arg);
                }
            }
            self.errors.at(
                span,
                format!(
                    "`{name}` takes {} argument(s), but {} were given",
                    inputs.len(),
                    args.len()
                ),
            );
            return (Ty::Unknown, None);
        }
        let type_params: Vec<&Ident> = generic.type_params().collect();
        let mut bound: Vec<Option<(Ty, Span)>> = vec![None; type_params.len()];
        let mut typed: Vec<Option<Ty>> = vec![None; args.len()];
        let mut failed = false;
        if let Some(named) = named {
            if named.len() == type_params.len() {
                bound = named.iter().map(|ty| Some((ty.clone(), span))).collect();
            } else {
                self.errors.at(
                    span,
                    format!(
                        "`{name}` takes {} type parameter(s), but {} were given",
                        type_params.len(),
                        named.len()
                    ),
                );
                failed = true;
            }
        }
        let inferred = named.is_none();
        for (i, (input, arg)) in inputs.iter().zip(args.iter_mut()).enumerate() {
            if !inferred {
                break;
            }
            if !type_params.iter().any(|p| names_type(input, p)) {
                continue;
            }
            // A reference parameter is bound to the lent memory's type (a buffer's element
            // for `&[E]`); a value parameter to the argument's.
            let (pattern, found) = match input {
                syn::Type::Reference(reference) => match (&*reference.elem, self.lent_ty(arg)) {
                    (syn::Type::Slice(slice), Some(Lent::Buffer(element))) => {
                        (&*slice.elem, element)
                    }
                    (syn::Type::Slice(_), _) | (_, Some(Lent::Buffer(_)) | None) => continue,
                    (elem, Some(Lent::Array(ty))) => (elem, ty),
                },
                _ => {
                    let ty = self.expr(arg);
                    typed[i] = Some(ty.clone());
                    (*input, ty)
                }
            };
            let found = self.settled(&found);
            if let Err((param, first)) = bind(pattern, &found, &type_params, arg.span, &mut bound) {
                self.errors.at(
                    arg.span,
                    format!(
                        "`{name}` takes `{param}` as `{}` from an earlier argument, and this one \
                         makes it `{}`; pass arguments of one element type",
                        first.rust_name(),
                        found.rust_name()
                    ),
                );
                failed = true;
            }
        }
        let mut elements = Vec::new();
        for (param, bound) in type_params.iter().zip(&bound) {
            match bound.as_ref().map(|(ty, at)| (element_of(ty), ty, at)) {
                Some((Some(element), _, _)) => elements.push(element),
                Some((None, ty, at)) => {
                    self.errors.at(
                        *at,
                        format!(
                            "`{name}` takes `{param}` as `{}` here, but `{param}` stands for an \
                             element type: a number type or a vector of one",
                            ty.rust_name()
                        ),
                    );
                    failed = true;
                }
                None if !failed => {
                    let named = inputs.iter().any(|input| names_type(input, param));
                    let why = if named {
                        "no argument's type says what it is here"
                    } else {
                        "no parameter's type names it"
                    };
                    self.errors.at(
                        span,
                        format!(
                            "cannot tell what `{param}` of `{name}` stands for: {why}; name \
                             it in the call, as in `{name}::<f32>(..)`"
                        ),
                    );
                    failed = true;
                }
                None => {}
            }
        }
        if failed {
            for (arg, typed) in args.iter_mut().zip(&typed) {
                if typed.is_none() && !matches!(arg.kind, ExprKind::Ref(..)) {
                    self.expr(arg);
                }
            }
            return (Ty::Unknown, None);
        }
        let copy = generic_copy_name(name, &elements);
        let key = copy.to_string();
        let known = self.env.copies.borrow().signatures.get(&key).cloned();
        let signature = match known {
            Some(signature) => signature,
            None => {
                let function = crate::parse::kernel::generic_copy(
                    generic,
                    &elements,
                    self.env.params,
                    self.errors,
                );
                let signature = function.as_ref().map(|f| (f.params.clone(), f.ret.clone()));
                let mut copies = self.env.copies.borrow_mut();
                copies.signatures.insert(key, signature.clone());
                copies.unchecked.extend(function);
                signature
            }
        };
        let Some((params, ret)) = signature else {
            return (Ty::Unknown, None);
        };
        self.helper_call(name, &params, args, &typed, span);
        (ret.unwrap_or(Ty::Unit), Some(copy))
    }

    /// The type of the memory the argument `arg` lends (`a`, `&a`, `&mut a`), if it names any.
    fn lent_ty(&self, arg: &Expr) -> Option<Lent> {
        let place = match &arg.kind {
            ExprKind::Ref(_, inner) => &**inner,
            _ => arg,
        };
        let ExprKind::Path(name, _) = &place.kind else {
            return None;
        };
        match self.resolve_name(name) {
            Resolved::Local(local) => Some(Lent::Array(local.ty)),
            Resolved::Shared(shared) => Some(Lent::Array(shared.ty.clone())),
            Resolved::Binding(Binding {
                kind: BindingKind::Storage { element, .. },
                ..
            }) => Some(Lent::Buffer(element.clone())),
            Resolved::Binding(_) | Resolved::None => None,
        }
    }

    /// A call of a helper whose parameters are `params`; `typed` holds the types of the value
    /// arguments typed already (a generic helper's, to learn its types), by position.
    pub(super) fn helper_call(
        &mut self,
        name: &Ident,
        params: &[FnParam],
        args: &mut [Expr],
        typed: &[Option<Ty>],
        span: Span,
    ) {
        if params.len() != args.len() {
            for arg in args.iter_mut() {
                self.expr(arg);
            }
            self.errors.at(
                span,
                format!(
                    "`{name}` takes {} argument(s), but {} were given",
                    params.len(),
                    args.len()
                ),
            );
            return;
        }
        for (i, (param, arg)) in params.iter().zip(args.iter_mut()).enumerate() {
            if param.kind == ParamKind::Value {
                let arg_ty = match typed.get(i) {
                    Some(Some(ty)) => ty.clone(),
                    _ => {
                        self.expected(arg, &param.ty);
                        self.expr(arg)
                    }
                };
                self.expect(
                    &param.ty,
                    &arg_ty,
                    arg.span,
                    &format!("wrong argument for `{name}`"),
                );
            } else {
                self.reference_arg(name, param, arg);
            }
        }
    }

    /// An argument for a helper's reference parameter: a workgroup array, local array, buffer
    /// or the parameters, by name, of the type and mutability the helper asks for.
    fn reference_arg(&mut self, helper: &Ident, param: &FnParam, arg: &mut Expr) {
        let span = arg.span;
        let wanted = param_rust_ty(param, self.env.params);
        let (lent, place) = match &mut arg.kind {
            ExprKind::Ref(mutable, inner) => (Some(*mutable), &mut **inner),
            _ => (None, arg),
        };
        let ExprKind::Path(name, local) = &mut place.kind else {
            self.errors.at(
                span,
                format!(
                    "`{helper}` takes `{}: {wanted}`; pass a whole array or buffer by its name",
                    param.name
                ),
            );
            return;
        };
        let name = name.clone();
        let (found, writable) = match (param.kind, self.resolve_name(&name)) {
            (ParamKind::Array, Resolved::Shared(shared)) => (shared.ty.clone(), shared.writable),
            (ParamKind::Array, Resolved::Local(l)) if matches!(l.ty, Ty::Array(..)) => {
                *local = Some(l.id);
                if lent.is_none() {
                    let amp = if param.mutable { "&mut " } else { "&" };
                    self.errors.at(
                        span,
                        format!(
                            "`{name}` is a local array; lend it to `{helper}` as `{amp}{name}`"
                        ),
                    );
                }
                (l.ty.clone(), l.mutable)
            }
            (
                ParamKind::Storage,
                Resolved::Binding(Binding {
                    kind: BindingKind::Storage { element, writable },
                    ..
                }),
            ) => (element.clone(), *writable),
            (
                ParamKind::Uniform(wanted_struct),
                Resolved::Binding(Binding {
                    kind: BindingKind::Uniform { params },
                    ..
                }),
            ) if *params == wanted_struct => (Ty::Unknown, false),
            (_, Resolved::None) => {
                self.not_found(&name.to_string(), span);
                return;
            }
            _ => {
                self.errors.at(
                    span,
                    format!(
                        "`{helper}` takes `{}: {wanted}`, and `{name}` is not one; {}",
                        param.name,
                        reference_advice(param.kind)
                    ),
                );
                return;
            }
        };
        // Unified, not compared: a local array of float or integer literals takes its
        // element type from the parameter it is lent to.
        if self.unify(&param.ty, &found).is_none() {
            let what = match param.kind {
                ParamKind::Storage => format!("a buffer of `{}`", found.rust_name()),
                _ => format!("a `{}`", found.rust_name()),
            };
            self.errors.at(
                span,
                format!(
                    "`{helper}` takes `{}: {wanted}`, but `{name}` is {what}",
                    param.name
                ),
            );
        } else if param.mutable && !writable {
            self.errors.at(
                span,
                format!(
                    "`{helper}` writes to `{}`, but `{name}` cannot be written here; {}",
                    param.name,
                    match param.kind {
                        ParamKind::Storage => format!("declare it `&mut [{}]`", found.rust_name()),
                        _ => format!("declare it `let mut {name}`"),
                    }
                ),
            );
        } else if param.mutable && lent == Some(false) {
            self.errors.at(
                span,
                format!(
                    "`{helper}` writes to `{}`; lend it as `&mut {name}`",
                    param.name
                ),
            );
        }
    }
}

/// What an argument lends a generic helper's reference parameter.
enum Lent {
    /// A buffer, by its element type.
    Buffer(Ty),
    /// A local or workgroup array (or value), by its type.
    Array(Ty),
}

/// Whether the type `ty` names the type parameter `param`.
fn names_type(ty: &syn::Type, param: &Ident) -> bool {
    crate::parse::names_ident(quote::ToTokens::to_token_stream(ty), param)
}

/// Binds the type parameters `params` that `pattern` names to the parts of `found` in their
/// place (`[E; N]` against `[Vec4<f32>; 2]` makes `E` a `Vec4<f32>`). A parameter bound
/// before to another type is an error: the parameter and its earlier type.
fn bind(
    pattern: &syn::Type,
    found: &Ty,
    params: &[&Ident],
    at: Span,
    bound: &mut [Option<(Ty, Span)>],
) -> Result<(), (Ident, Ty)> {
    match (pattern, found) {
        (syn::Type::Paren(inner), _) => bind(&inner.elem, found, params, at, bound),
        (syn::Type::Group(inner), _) => bind(&inner.elem, found, params, at, bound),
        (syn::Type::Array(array), Ty::Array(element, _)) => {
            bind(&array.elem, element, params, at, bound)
        }
        (syn::Type::Path(path), _) if path.qself.is_none() => {
            if let Some(index) = path
                .path
                .get_ident()
                .and_then(|ident| params.iter().position(|p| *p == ident))
            {
                return match &bound[index] {
                    // A literal's type is settled by the other arguments, as in Rust.
                    Some((earlier, _)) if settles(found, earlier) => {
                        bound[index] = Some((found.clone(), at));
                        Ok(())
                    }
                    Some((earlier, _)) if earlier == found || settles(earlier, found) => Ok(()),
                    Some((earlier, _)) => Err((params[index].clone(), earlier.clone())),
                    None => {
                        bound[index] = Some((found.clone(), at));
                        Ok(())
                    }
                };
            }
            // `Vec4<E>` against a `Vec4<f32>`.
            let Some(last) = path.path.segments.last() else {
                return Ok(());
            };
            let lanes = match last.ident.to_string().as_str() {
                "Vec2" => 2,
                "Vec3" => 3,
                "Vec4" => 4,
                _ => return Ok(()),
            };
            let (syn::PathArguments::AngleBracketed(args), Ty::Vector(n, scalar)) =
                (&last.arguments, found)
            else {
                return Ok(());
            };
            match args.args.first() {
                Some(syn::GenericArgument::Type(inner)) if *n == lanes => {
                    bind(inner, &Ty::Scalar(*scalar), params, at, bound)
                }
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Whether the type `ty` is one the literal type `literal` may become (`f32` for a float
/// literal).
fn settles(ty: &Ty, literal: &Ty) -> bool {
    match (ty, literal) {
        (Ty::Scalar(scalar), Ty::IntVar(_)) => scalar.is_integer(),
        (Ty::Scalar(scalar), Ty::FloatVar(_)) => scalar.is_float(),
        (Ty::Vector(n, scalar), Ty::LiteralVector(m, element)) => {
            n == m && settles(&Ty::Scalar(*scalar), element)
        }
        _ => false,
    }
}

/// The element type `ty` is, if it is one: a number type or a vector of one (literals take
/// their default types).
fn element_of(ty: &Ty) -> Option<Element> {
    let (scalar, lanes) = match ty {
        Ty::Scalar(scalar) => (*scalar, 1),
        Ty::Vector(lanes, scalar) => (*scalar, *lanes),
        Ty::IntVar(_) => (Scalar::I32, 1),
        Ty::FloatVar(_) => (Scalar::F32, 1),
        Ty::LiteralVector(lanes, element) => (default_scalar(element)?, *lanes),
        _ => return None,
    };
    (scalar != Scalar::Bool).then_some(Element { scalar, lanes })
}

/// A reference parameter's type as the user wrote it: `&mut [f32; 64]`, `&[u32]`, `&Params`.
pub fn param_rust_ty(param: &FnParam, params: &[ParamsStruct]) -> String {
    let amp = if param.mutable { "&mut " } else { "&" };
    match param.kind {
        ParamKind::Value => param.ty.rust_name(),
        ParamKind::Array => format!("{amp}{}", param.ty.rust_name()),
        ParamKind::Storage => format!("{amp}[{}]", param.ty.rust_name()),
        ParamKind::Uniform(index) => format!("&{}", params[index].name),
    }
}

fn reference_advice(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Array => "pass a workgroup array or a local array of that type",
        ParamKind::Storage => "pass a buffer parameter of the kernel with that element type",
        ParamKind::Uniform(_) => "pass the kernel's parameters of that struct",
        ParamKind::Value => "pass a value",
    }
}
