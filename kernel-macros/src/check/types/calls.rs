//! Calls of builtins, functions and methods: which builtin a name calls, its arguments against
//! its signature, vector constructors, atomics, subgroup operations, `workgroup_uniform_load`,
//! and the features a builtin needs. Calls of helpers are in `helpers.rs`, of fragment
//! operations in `fragments.rs`.

use proc_macro2::Ident;

use super::{is_literal, place_root, Checker, Deferred, Resolved};
use crate::ir::builtins::{self, Builtin, Form, Receivers, Shape, Signature};
use crate::ir::*;

impl Checker<'_, '_> {
    /// Types a call or a method; a builtin's becomes an [`ExprKind::Builtin`], so later stages
    /// read the builtin from the table instead of matching its name.
    pub(super) fn call_or_method(&mut self, e: &mut Expr) -> Ty {
        let span = e.span;
        let expected = e.ty.clone();
        if let ExprKind::GenericCall(..) = &e.kind {
            return self.turbofish_call(e);
        }
        let (ty, builtin) = match &mut e.kind {
            ExprKind::Call(name, args) => match self.generic(name) {
                Some(generic) => {
                    let (ty, copy) = self.generic_call(name, generic, None, args, span);
                    if let Some(copy) = copy {
                        *name = copy;
                    }
                    (ty, None)
                }
                None => self.call(name, args, &expected, span),
            },
            ExprKind::Method(receiver, method, args) => self.method(receiver, method, args, span),
            _ => return Ty::Unknown,
        };
        if let Some(builtin) = builtin {
            let args = match std::mem::replace(&mut e.kind, ExprKind::Bool(false)) {
                ExprKind::Call(_, args) => args,
                ExprKind::Method(receiver, _, args) => {
                    std::iter::once(*receiver).chain(args).collect()
                }
                other => {
                    e.kind = other;
                    return ty;
                }
            };
            e.kind = ExprKind::Builtin(builtin, args);
        }
        ty
    }

    fn call(
        &mut self,
        name: &Ident,
        args: &mut [Expr],
        expected: &Ty,
        span: Span,
    ) -> (Ty, Option<&'static Builtin>) {
        let key = name.to_string();
        if let Some((params, ret)) = self.env.helpers.get(&key) {
            self.helper_call(name, params, args, &[], span);
            return (ret.clone().unwrap_or(Ty::Unit), None);
        }
        if let Some(builtin) = builtins::find(Form::Function, &key).filter(|b| b.is_cooperative()) {
            if !matches!(self.resolve_name(name), Resolved::Local(_)) {
                self.feature_allowed(builtin, name, span);
                let ty = self.cooperative(builtin, name, args, expected, span);
                return (ty, Some(builtin));
            }
        }
        if let Some(builtin) =
            builtins::find(Form::Function, &key).filter(|b| b.signature == Signature::UniformLoad)
        {
            if !matches!(self.resolve_name(name), Resolved::Local(_)) {
                return (self.uniform_load(name, args, span), Some(builtin));
            }
        }
        let arg_tys: Vec<Ty> = args.iter_mut().map(|a| self.expr(a)).collect();
        if let Resolved::Local(local) = self.resolve_name(name) {
            if local.ty != Ty::Unknown {
                self.errors.at(span, format!("`{name}` is a local value, not a function; define a helper function instead"));
            }
            return (Ty::Unknown, None);
        }
        let Some(builtin) = builtins::find(Form::Function, &key) else {
            let message = match builtins::find(Form::Method, &key).and_then(Builtin::method_form) {
                Some(form) => format!(
                    "`{name}` is a method in kernels, as in Rust: write `{form}` (for the \
                     free function, define a helper)"
                ),
                None => format!(
                    "cannot find function `{name}`; call a helper defined in this module or \
                     a builtin: {}",
                    builtins::names(builtins::called_as(Form::Function))
                ),
            };
            self.errors.at(name.span(), message);
            return (Ty::Unknown, None);
        };
        if builtin.feature.is_some() {
            self.feature_allowed(builtin, name, span);
        }
        // The subgroup ids need a feature too, and are only in kernels all the same.
        if builtin.id().is_some() && !self.env.in_kernel {
            self.errors.at(
                span,
                format!(
                    "`{name}()` is only available in kernels; pass it to the helper as an argument"
                ),
            );
        }
        let ty = match builtin.signature {
            Signature::Id(id) => {
                self.arity(name, args, 0, span);
                id.ty()
            }
            Signature::Barrier => {
                self.arity(name, args, 0, span);
                Ty::Unit
            }
            Signature::Vector(width) => self.vector_constructor(name, width, args, &arg_tys, span),
            Signature::CeilDiv => {
                if !self.arity(name, args, 2, span) {
                    return (Ty::Unknown, None);
                }
                let ty = self.expect(
                    &arg_tys[0],
                    &arg_tys[1],
                    args[1].span,
                    "`ceil_div` takes two integers of one type",
                );
                if !self.is_integer(&ty) {
                    self.errors.at(span, "`ceil_div` takes integers");
                }
                ty
            }
            Signature::SubgroupReduce(_)
            | Signature::SubgroupShuffle
            | Signature::SubgroupBroadcast
            | Signature::SubgroupVote(_) => {
                self.subgroup(name, builtin.signature, args, &arg_tys, span)
            }
            Signature::Fixed(params, ret) => {
                if !self.arity(name, args, params.len(), span) {
                    return (Ty::Unknown, None);
                }
                for ((param, arg_ty), arg) in params.iter().zip(&arg_tys).zip(args.iter()) {
                    self.expect(
                        param,
                        arg_ty,
                        arg.span,
                        &format!("wrong argument for `{name}`"),
                    );
                }
                ret.clone()
            }
            // Fragment operations and uniform loads were typed above; methods are not called
            // as functions.
            Signature::UniformLoad
            | Signature::Math(..)
            | Signature::Len
            | Signature::Atomic { .. }
            | Signature::FragmentZero
            | Signature::FragmentLoad(_)
            | Signature::FragmentStore(_)
            | Signature::MultiplyAdd => Ty::Unknown,
        };
        (ty, Some(builtin))
    }

    /// `workgroup_uniform_load(&a[i])`: the element's type, for one element of a workgroup
    /// array (WGSL's `workgroupUniformLoad` reads workgroup memory only).
    fn uniform_load(&mut self, name: &Ident, args: &mut [Expr], span: Span) -> Ty {
        if !self.arity(name, args, 1, span) {
            for arg in args.iter_mut() {
                if !matches!(arg.kind, ExprKind::Ref(..)) {
                    self.expr(arg);
                }
            }
            return Ty::Unknown;
        }
        let arg = &mut args[0];
        let place = match &mut arg.kind {
            ExprKind::Ref(false, place) => place,
            ExprKind::Ref(true, place) => {
                self.errors.at(
                    arg.span,
                    format!("`{name}` only reads: lend the element as `&a[i]`, not `&mut`"),
                );
                place
            }
            _ => {
                self.expr(arg);
                self.errors.at(
                    arg.span,
                    format!(
                        "`{name}` takes the place of one element of a workgroup array, `&a[i]`"
                    ),
                );
                return Ty::Unknown;
            }
        };
        let root = place_root(place).cloned();
        let memory = root.as_ref().map(|root| self.resolve_name(root));
        match (&place.kind, memory) {
            (ExprKind::Index(..), Some(Resolved::Shared(_))) => self.expr(place),
            // A workgroup value, `&s` (`#[workgroup] s: &mut f32`).
            (ExprKind::Path(..), Some(Resolved::Shared(shared)))
                if !matches!(shared.ty, Ty::Array(..)) =>
            {
                self.expr(place)
            }
            (_, Some(Resolved::None)) => {
                self.expr(place);
                Ty::Unknown
            }
            _ => {
                if !matches!(place.kind, ExprKind::Path(..)) {
                    self.expr(place);
                }
                self.errors.at(
                    place.span,
                    format!(
                        "`{name}` reads one element of a workgroup array, `&a[i]`: it makes a \
                         value of workgroup memory the same in every invocation; other values \
                         can be shared through a workgroup array first"
                    ),
                );
                Ty::Unknown
            }
        }
    }

    /// A builtin that needs a feature is called where the kernel declares it, directly or
    /// through the helpers it calls. A helper's use is reported at the kernel, whose attribute
    /// lacks the feature: the helper may be another crate's.
    fn feature_allowed(&mut self, builtin: &Builtin, name: &Ident, span: Span) {
        let Some(feature) = builtin.feature else {
            return;
        };
        let declared = self
            .env
            .features
            .as_ref()
            .is_none_or(|features| features.contains(&feature));
        if declared {
            return;
        }
        let (what, checks) = match feature {
            Feature::CooperativeMatrix => ("runs on the tensor cores", "the device has them"),
            Feature::Subgroups => ("is a subgroup operation", "the device has subgroups"),
            Feature::F16 => ("needs `f16`", "the device supports SHADER_F16"),
        };
        let declare = feature.name();
        match (self.env.caller, self.env.helper.map(written_name)) {
            (Some(kernel), Some(helper)) => self.errors.at(
                kernel.span(),
                format!(
                    "`{kernel}` calls `{helper}`, which uses `{name}`; `{name}` {what}: declare \
                     `features({declare})` in the `#[kernel(...)]` of `{kernel}`, and its \
                     launcher will check that {checks}"
                ),
            ),
            _ => self.errors.at(
                span,
                format!(
                    "`{name}` {what}: declare `features({declare})` in the kernel's \
                     `#[kernel(...)]`, and its launcher will check that {checks}"
                ),
            ),
        }
    }

    /// A subgroup operation: its value argument, and the lane, distance or mask after it.
    fn subgroup(
        &mut self,
        name: &Ident,
        signature: Signature,
        args: &[Expr],
        arg_tys: &[Ty],
        span: Span,
    ) -> Ty {
        let arguments = match signature {
            Signature::SubgroupShuffle | Signature::SubgroupBroadcast => 2,
            _ => 1,
        };
        if !self.arity(name, args, arguments, span) {
            return Ty::Unknown;
        }
        let (value, value_ty) = (&args[0], &arg_tys[0]);
        if let Signature::SubgroupVote(result) = signature {
            if self.unify(&Ty::BOOL, value_ty).is_none() {
                self.errors.at(
                    value.span,
                    format!(
                        "`{name}` takes a `bool` condition, not `{}`; compare the value, as in \
                         `{name}(x != 0)` or `{name}(x > 0.0)`",
                        self.shallow(value_ty).rust_name()
                    ),
                );
            }
            return result.clone();
        }
        let integers = signature == Signature::SubgroupReduce(Receivers::Integer);
        let accepted = if integers {
            self.is_integer(value_ty)
        } else {
            self.is_numeric(value_ty)
        };
        if !accepted {
            let found = self.shallow(value_ty).rust_name();
            let message = if integers {
                format!(
                    "`{name}` takes integers (`u32`, `i32` or their vectors), not `{found}`; \
                     on floats, combine their bits: `{name}(x.to_bits())`"
                )
            } else {
                format!(
                    "`{name}` takes numbers (`f32`, `f16`, `u32`, `i32` or their vectors), not \
                     `{found}`; for a `bool`, use `subgroup_all`, `subgroup_any` or \
                     `subgroup_ballot`"
                )
            };
            self.errors.at(value.span, message);
        }
        if arguments == 2 {
            let what = match name.to_string().as_str() {
                "subgroup_shuffle_up" | "subgroup_shuffle_down" => {
                    "the distance, in lanes, to read from is a `u32`"
                }
                "subgroup_shuffle_xor" => "the mask to xor the lane with is a `u32`",
                _ => "the invocation to read from is a `u32`",
            };
            self.expect(&Ty::U32, &arg_tys[1], args[1].span, what);
        }
        value_ty.clone()
    }

    pub(super) fn arity(&mut self, name: &Ident, args: &[Expr], n: usize, span: Span) -> bool {
        if args.len() != n {
            self.errors.at(
                span,
                format!(
                    "`{name}` takes {n} argument(s), but {} were given",
                    args.len()
                ),
            );
            return false;
        }
        true
    }

    fn vector_constructor(
        &mut self,
        name: &Ident,
        width: u8,
        args: &[Expr],
        arg_tys: &[Ty],
        span: Span,
    ) -> Ty {
        let mut element = Ty::Unknown;
        let mut components = 0u8;
        for (ty, arg) in arg_tys.iter().zip(args) {
            let (scalar_ty, count) = match self.shallow(ty) {
                Ty::Vector(n, s) => (Ty::Scalar(s), n),
                Ty::LiteralVector(n, lanes) => (*lanes, n),
                other => (other, 1),
            };
            element = self.expect(
                &element,
                &scalar_ty,
                arg.span,
                "vector components must have one type",
            );
            components += count;
        }
        if !(components == width || (args.len() == 1 && components == 1)) {
            self.errors.at(span, format!("`{name}` needs {width} components (or one to repeat), but {components} were given"));
            return Ty::Unknown;
        }
        // Of literals only, the lanes' type is decided where the vector is used.
        match self.shallow(&element) {
            Ty::Scalar(s) => Ty::Vector(width, s),
            lanes @ (Ty::IntVar(_) | Ty::FloatVar(_)) => Ty::LiteralVector(width, Box::new(lanes)),
            _ => Ty::Unknown,
        }
    }

    fn method(
        &mut self,
        receiver: &mut Expr,
        method: &Ident,
        args: &mut [Expr],
        span: Span,
    ) -> (Ty, Option<&'static Builtin>) {
        let key = method.to_string();
        if key == "len" && args.is_empty() {
            if let ExprKind::Path(name, _) = &receiver.kind {
                if let Resolved::Binding(Binding {
                    kind: BindingKind::Storage { .. },
                    ..
                }) = self.resolve_name(name)
                {
                    return (Ty::U32, builtins::find(Form::Method, "len"));
                }
            }
        }
        let receiver_ty = self.expr_or_atomic(receiver);
        let arg_tys: Vec<Ty> = args.iter_mut().map(|a| self.expr(a)).collect();
        if let Ty::Atomic(scalar) = receiver_ty {
            return self.atomic_method(method, scalar, args, &arg_tys, span);
        }
        let math = builtins::find(Form::Method, &key).and_then(|b| match b.signature {
            Signature::Math(receivers, shape) => Some((b, receivers, shape)),
            _ => None,
        });
        let Some((builtin, receivers, shape)) = math else {
            self.errors.at(
                method.span(),
                format!(
                    "unknown method `{key}`; kernels support {}; `len()` on buffers; {} on atomics",
                    builtins::names(|b| matches!(b.signature, Signature::Math(..))),
                    builtins::names(builtins::called_as(Form::Atomic)),
                ),
            );
            return (Ty::Unknown, None);
        };
        // A vector of literals takes its lanes from a vector argument (`vec3(1, 2, 3).max(v)`),
        // as the method's arguments are of the receiver's type; otherwise the default.
        if let Ty::LiteralVector(..) = self.shallow(&receiver_ty) {
            for arg_ty in &arg_tys {
                if let Ty::Vector(..) = self.shallow(arg_ty) {
                    self.unify(&receiver_ty, arg_ty);
                }
            }
        }
        let receiver_ty = self.settled(&receiver_ty);
        if receiver_ty != Ty::Unknown && !receivers.accepts(&receiver_ty) {
            self.errors.at(
                method.span(),
                format!("`{key}` does not apply to `{}`", receiver_ty.rust_name()),
            );
            return (Ty::Unknown, None);
        }
        if is_literal(&receiver_ty) {
            self.deferred.push(Deferred::Receiver {
                ty: receiver_ty.clone(),
                receivers,
                method: method.clone(),
            });
        }
        if !self.arity(method, args, shape.arguments(), span) {
            return (Ty::Unknown, None);
        }
        let mut ty = receiver_ty;
        for (arg_ty, arg) in arg_tys.iter().zip(args.iter()) {
            ty = self.expect(
                &ty,
                arg_ty,
                arg.span,
                &format!("`{key}` takes arguments of the receiver's type"),
            );
        }
        let ty = match shape {
            Shape::ToScalar | Shape::BinaryToScalar => match self.shallow(&ty) {
                // A literal's type is decided by its uses, as a scalar's would be.
                var @ (Ty::IntVar(_) | Ty::FloatVar(_)) => var,
                other => other.scalar().map(Ty::Scalar).unwrap_or(Ty::Unknown),
            },
            Shape::ToU32 => match self.shallow(&ty) {
                Ty::Vector(n, _) => Ty::Vector(n, Scalar::U32),
                Ty::FloatVar(_) => {
                    self.unify(&ty, &Ty::F32);
                    Ty::U32
                }
                _ => Ty::U32,
            },
            _ => ty,
        };
        (ty, Some(builtin))
    }

    fn atomic_method(
        &mut self,
        method: &Ident,
        scalar: Scalar,
        args: &[Expr],
        arg_tys: &[Ty],
        span: Span,
    ) -> (Ty, Option<&'static Builtin>) {
        let key = method.to_string();
        let atomic = builtins::find(Form::Atomic, &key).and_then(|b| match b.signature {
            Signature::Atomic {
                takes_value,
                returns,
            } => Some((b, takes_value, returns)),
            _ => None,
        });
        let Some((builtin, takes_value, returns)) = atomic else {
            self.errors.at(
                method.span(),
                format!(
                    "atomics support {}",
                    builtins::names(builtins::called_as(Form::Atomic))
                ),
            );
            return (Ty::Unknown, None);
        };
        if !self.arity(method, args, usize::from(takes_value), span) {
            return (Ty::Unknown, None);
        }
        if let (Some(arg_ty), Some(arg)) = (arg_tys.first(), args.first()) {
            self.expect(
                &Ty::Scalar(scalar),
                arg_ty,
                arg.span,
                "wrong value for the atomic",
            );
        }
        let ty = if returns {
            Ty::Scalar(scalar)
        } else {
            Ty::Unit
        };
        (ty, Some(builtin))
    }
}
