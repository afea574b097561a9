//! Kernel and helper signatures -> IR: `#[kernel(workgroup = [..], grid = [..])]`, bindings
//! from typed parameters (`&[T]`, `&mut [T]`, `&Params`), `#[len(..)]` and `#[workgroup]`.
//!
//! This file reads a kernel: its attribute, the sets of constants it names, its requirements and
//! specializations, and one instance per combination of constant values. The parameters
//! become bindings in `kernel/bindings.rs`, the element-type parameter is read in
//! `kernel/type_params.rs`, and the helpers an instance calls are parsed in `kernel/helpers.rs`.

mod bindings;
mod helpers;
mod type_params;

use crate::diag::Errors;
use crate::ir::{self, Scalar, Span};
use crate::parse::attr::{self, Constants, KernelAttr};
use crate::parse::consts::{self, Consts};
use crate::parse::keywords::{KERNEL, LIMIT_INVOCATIONS};
use crate::parse::{body, host, names};

pub use bindings::binding_kind;
use bindings::{kernel_param, member_bindings, same_lengths};
pub use helpers::{called_names, generic_copy, instance_helpers};
use type_params::{generic_params, type_param};

/// The `#[kernel(...)]` attribute of `function`, if it has one.
pub fn kernel_attr(function: &syn::ItemFn) -> Option<&syn::Attribute> {
    function
        .attrs
        .iter()
        .find(|attr| attr.path().is_ident(KERNEL))
}

/// The module's constant sets while the module is parsed: each with its instances' constants.
#[derive(Default)]
pub struct Sets {
    pub sets: Vec<ir::ConstantSet>,
    envs: Vec<Vec<Consts>>,
    /// The module's imports as written (`super::tiling`), for the message of a set no one
    /// declares.
    pub imports: Vec<String>,
}

impl Sets {
    pub fn add(&mut self, set: ir::ConstantSet, envs: Vec<Consts>) -> usize {
        self.sets.push(set);
        self.envs.push(envs);
        self.sets.len() - 1
    }

    fn named(&self, name: &syn::Ident) -> Option<usize> {
        self.sets.iter().position(|s| s.named() && s.name == *name)
    }
}

/// The message for `constants = name` when neither the module nor its imports declare `name`:
/// how to declare it, or to import it, and the sets there are.
fn unknown_set(name: &syn::Ident, sets: &Sets) -> String {
    let known: Vec<String> = sets
        .sets
        .iter()
        .filter(|s| s.named())
        .map(|s| format!("`{}`", s.name))
        .collect();
    let imports: Vec<String> = sets.imports.iter().map(|i| format!("`{i}`")).collect();
    let import = match imports.as_slice() {
        [] => "import the device library that declares it, with `#[device] use \
               path::to::library;`"
            .to_owned(),
        [one] => format!(
            "import the device library that declares it (the module imports {one}, which does not)"
        ),
        _ => format!(
            "import the device library that declares it (the module imports {}, which do not)",
            imports.join(", ")
        ),
    };
    let has = match known.as_slice() {
        [] => String::new(),
        _ => format!(" (it has {})", known.join(", ")),
    };
    format!(
        "`{name}` is not a set of constants this module declares or imports{has}; declare \
         it as `#[constants(NAME = [..])] struct {name};`, or {import}"
    )
}

/// What a kernel's signature and body may name from the rest of its module.
pub struct Scope<'a> {
    pub params: &'a [ir::ParamsStruct],
    pub families: &'a [ir::Family],
    pub consts: &'a Consts,
    pub helpers: &'a [syn::ItemFn],
}

/// A `#[kernel]` function, with one instance per element type and instance of its constants
/// (one when it has neither). `None` when its attribute or its signature cannot be read.
pub fn kernel(
    function: &syn::ItemFn,
    attr: &syn::Attribute,
    scope: &Scope<'_>,
    sets: &mut Sets,
    errors: &mut Errors,
) -> Option<ir::Kernel> {
    let Scope {
        params,
        families,
        consts,
        helpers,
    } = *scope;
    let launcher = names::launcher(&function.sig.ident, errors);
    let args = attr::kernel_attr(attr, errors)?;
    let launcher = launcher?;
    // A kernel may serve several families (a reduction shared by split passes); it takes its
    // bindings' lengths from the first, which the others must declare alike.
    let families: Vec<&ir::Family> = families
        .iter()
        .filter(|f| f.members.contains(&function.sig.ident))
        .collect();
    let family = families.first().copied();
    let constant_set = match &args.constants {
        Constants::None => None,
        Constants::Named(name) => {
            let found = sets.named(name);
            if found.is_none() {
                errors.spanned(name, unknown_set(name, sets));
                return None;
            }
            found
        }
        Constants::Listed(decls) => {
            let name = syn::Ident::new(&format!("{launcher}Constants"), function.sig.ident.span());
            let docs = vec![format!(
                " The compile-time constants that identify an instance of `{}`.",
                function.sig.ident
            )];
            let (set, envs) = consts::set(name, docs, ir::SetHome::Kernel, decls, consts, errors);
            Some(sets.add(set, envs))
        }
    };
    let instances: Vec<(Consts, Vec<(syn::Ident, u32)>)> = match constant_set {
        None => vec![(consts.clone(), Vec::new())],
        Some(index) => {
            let set = &sets.sets[index];
            sets.envs[index]
                .iter()
                .zip(&set.instances)
                .map(|(env, values)| {
                    let identity = set.identity.iter().cloned().zip(values.iter().copied());
                    (env.clone(), identity.collect())
                })
                .collect()
        }
    };
    let type_param = type_param(function, &args, errors);
    let elements: Vec<Option<ir::Element>> = match &type_param {
        Some(param) => param.types.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    let generic = generic_params(function, type_param.as_ref(), errors);
    if let (Some(param), Some(family)) = (&type_param, family) {
        errors.at(
            param.span,
            format!(
                "a member of the family `{}` cannot have an element type yet; launch it on its own",
                family.name
            ),
        );
        return None;
    }
    let mut kernel_instances = Vec::new();
    let mut specializations = Vec::new();
    for element in &elements {
        for (env, constants) in &instances {
            let mut env = env.clone();
            // Limits may use the instance's constants (`workgroup_memory = 4 * BLOCK * DEPTH`).
            let mut requirements = requirements(&args, &env, errors);
            if let (Some(param), Some(element)) = (&type_param, element) {
                env = env.with(&param.name.to_string(), consts::Value::Type(*element));
                if element.scalar == Scalar::F16 && !requirements.has(ir::Feature::F16) {
                    requirements.features.push((ir::Feature::F16, param.span));
                }
            }
            let Some((mut variant, specs)) =
                instance(function, &args, &env, params, &families, errors)
            else {
                continue;
            };
            for binding in &mut variant.bindings {
                if let Some((_, host)) = generic.iter().find(|(name, _)| *name == binding.name) {
                    binding.host = *host;
                }
            }
            let roots = called_names(&variant.body);
            let caller = Some(&function.sig.ident);
            (variant.helpers, variant.generic_helpers) =
                instance_helpers(roots, caller, helpers, &env, params, errors);
            variant.requirements = requirements;
            specializations = specs;
            kernel_instances.push(ir::Instance {
                element: *element,
                constants: constants.clone(),
                variants: vec![variant],
            });
        }
    }
    if let (Some(param), Some(first)) = (&type_param, kernel_instances.first()) {
        // Only a buffer of `T` itself lets the arguments name `T` (`<T as XElement>::F32` is
        // the same type for `f16` and `f32`).
        let named = |b: &ir::Binding| b.host == ir::HostElement::Param;
        if !first.general().bindings.iter().any(named) {
            errors.at(
                param.span,
                format!(
                    "`{}` must be the element type of a buffer (`x: &[{0}]`): the launcher's \
                     arguments name the instance",
                    param.name
                ),
            );
            return None;
        }
    }
    if kernel_instances.is_empty() {
        return None;
    }
    Some(ir::Kernel {
        name: function.sig.ident.clone(),
        launcher,
        docs: doc_lines(&function.attrs),
        constant_set,
        type_param,
        specializations,
        instances: kernel_instances,
    })
}

fn requirements(args: &KernelAttr, consts: &Consts, errors: &mut Errors) -> ir::Requirements {
    let mut requirements = ir::Requirements {
        features: args.features.clone(),
        ..Default::default()
    };
    // A limit declared twice was refused when the attribute was parsed.
    for (name, value) in &args.limits {
        let Some(v) = consts::eval(value, consts).and_then(|v| u32::try_from(v).ok()) else {
            errors.spanned(value, "a limit must be a `u32` known at compile time");
            continue;
        };
        let slot = if name == LIMIT_INVOCATIONS {
            &mut requirements.invocations
        } else {
            &mut requirements.workgroup_memory
        };
        *slot = Some((v, Span::of(value)));
    }
    requirements
}

/// One instance's general variant (and the kernel's specializations): the kernel's tokens
/// with the instance's constants substituted, parsed.
fn instance(
    function: &syn::ItemFn,
    args: &KernelAttr,
    env: &Consts,
    params: &[ir::ParamsStruct],
    families: &[&ir::Family],
    errors: &mut Errors,
) -> Option<(ir::Variant, Vec<ir::Specialization>)> {
    let substituted =
        |expr: &syn::Expr, errors: &mut Errors| env.apply(expr).map_err(|e| errors.push(e)).ok();
    let function = instantiated(function, env)
        .map_err(|e| errors.push(e))
        .ok()?;
    check_plain_signature(&function.sig, errors);
    if let syn::ReturnType::Type(_, ret) = &function.sig.output {
        errors.spanned(
            ret,
            "a kernel returns nothing; write its results into a `&mut [T]` parameter",
        );
    }
    let (workgroup, workgroup_span) = args.workgroup.as_ref()?;
    let mut workgroup_size = [1u32; 3];
    for (slot, element) in workgroup_size.iter_mut().zip(workgroup) {
        match consts::eval(element, env)
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| *v > 0)
        {
            Some(v) => *slot = v,
            None => errors.spanned(
                element,
                "a workgroup size must be a positive integer known at compile time",
            ),
        }
    }
    let mut bindings = Vec::new();
    let mut shared = Vec::new();
    let mut lens = Vec::new();
    let mut rejected_params = Vec::new();
    let mut names = names::Declared::default();
    for input in &function.sig.inputs {
        match input {
            syn::FnArg::Typed(arg) => {
                if let syn::Pat::Ident(pat) = &*arg.pat {
                    if !names.declare(&pat.ident, "parameter", errors) {
                        continue;
                    }
                }
                let declared = bindings.len() + shared.len();
                let len = kernel_param(arg, params, &mut bindings, &mut shared, errors);
                if let Some(len) = len {
                    lens.push((bindings.len() - 1, len));
                }
                if bindings.len() + shared.len() == declared {
                    if let syn::Pat::Ident(pat) = &*arg.pat {
                        rejected_params.push(pat.ident.clone());
                    }
                }
            }
            syn::FnArg::Receiver(receiver) => {
                errors.spanned(receiver, "a kernel cannot take `self`")
            }
        }
    }
    let uniforms: Vec<&ir::Binding> = bindings
        .iter()
        .filter(|b| matches!(b.kind, ir::BindingKind::Uniform { .. }))
        .collect();
    if let [_, second, ..] = uniforms[..] {
        errors.at(
            second.span,
            "a kernel takes at most one `Params` struct; put all parameters in one struct",
        );
    }
    let uniform = uniforms.first().map(|b| b.name.clone());
    match families.split_first() {
        Some((family, others)) => {
            let rejected = member_bindings(
                &function.sig.ident,
                family,
                params,
                &mut bindings,
                &lens,
                errors,
            );
            rejected_params.extend(rejected);
            for other in others {
                same_lengths(
                    &function.sig.ident,
                    family,
                    other,
                    params,
                    &bindings,
                    errors,
                );
            }
        }
        None => {
            for (index, expr) in lens {
                bindings[index].len =
                    host::host_expr(&expr, uniform.as_ref(), host::Place::KernelLen, errors);
            }
        }
    }
    let mut grid = Vec::new();
    for expr in args.grid.iter().flatten() {
        if let Some(expr) = substituted(expr, errors) {
            grid.extend(host::host_expr(
                &expr,
                uniform.as_ref(),
                host::Place::Grid,
                errors,
            ));
        }
    }
    let specializations = args
        .specializations
        .iter()
        .filter_map(|condition| specialization(condition, uniform.as_ref(), errors))
        .collect();
    let variant = ir::Variant {
        name: function.sig.ident.clone(),
        specialization: None,
        entry_point: String::new(),
        requirements: ir::Requirements::default(),
        workgroup_size,
        workgroup_span: *workgroup_span,
        grid,
        bindings,
        shared,
        rejected_params,
        body: body::block(&function.block, errors),
        locals: Vec::new(),
        helpers: Vec::new(),
        generic_helpers: Vec::new(),
    };
    Some((variant, specializations))
}

/// `p.field == value` conditions joined by `&&`.
fn specialization(
    condition: &syn::Expr,
    uniform: Option<&syn::Ident>,
    errors: &mut Errors,
) -> Option<ir::Specialization> {
    let usage = |name: &str| {
        format!("a specialization is `{name}.field == value`, or several joined by `&&`, with integer values")
    };
    let Some(uniform) = uniform else {
        errors.spanned(
            condition,
            "only a kernel with a `Params` struct can be specialized: on its fields",
        );
        return None;
    };
    let mut conditions = Vec::new();
    let mut pending = vec![condition];
    while let Some(expr) = pending.pop() {
        match expr {
            syn::Expr::Paren(inner) => pending.push(&inner.expr),
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
                pending.push(&b.right);
                pending.push(&b.left);
            }
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Eq(_)) => {
                let field = match &*b.left {
                    syn::Expr::Field(syn::ExprField {
                        base,
                        member: syn::Member::Named(field),
                        ..
                    }) if matches!(&**base, syn::Expr::Path(p) if p.path.is_ident(uniform)) => {
                        field.clone()
                    }
                    other => {
                        errors.spanned(other, usage(&uniform.to_string()));
                        return None;
                    }
                };
                let Some(value) = consts::eval(&b.right, &Consts::default()) else {
                    errors.spanned(&b.right, usage(&uniform.to_string()));
                    return None;
                };
                conditions.push((field, value, Span::of(expr)));
            }
            other => {
                errors.spanned(other, usage(&uniform.to_string()));
                return None;
            }
        }
    }
    Some(ir::Specialization { conditions })
}

/// `function` with its constants and element type substituted (`env.apply`), and without the
/// `<T>` that declares the element type: `fn scale<Vec4<f32>>` would not parse.
fn instantiated(function: &syn::ItemFn, env: &Consts) -> syn::Result<syn::ItemFn> {
    let mut function = function.clone();
    let element = |param: &syn::GenericParam| {
        matches!(param, syn::GenericParam::Type(t)
            if t.bounds.is_empty()
                && matches!(env.get(&t.ident.to_string()), Some(consts::Value::Type(_))))
    };
    if function.sig.generics.params.iter().all(element) {
        function.sig.generics = syn::Generics::default();
    }
    env.apply(&function)
}

/// Rejects what kernels and helpers cannot be: generic (a kernel's element type aside, whose
/// `<T>` is gone by now; helpers' type parameters are read before), async, unsafe, const.
fn check_plain_signature(sig: &syn::Signature, errors: &mut Errors) {
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "kernels are not generic, except over their element type: declare it with \
             `types(T = [f32, f16])` in `#[kernel(..)]`",
        );
    }
    if let Some(token) = &sig.asyncness {
        errors.spanned(token, "kernels and helpers cannot be `async`");
    }
    if let Some(token) = &sig.unsafety {
        errors.spanned(token, "kernels and helpers cannot be `unsafe`");
    }
    if let Some(token) = &sig.constness {
        errors.spanned(token, "kernels and helpers cannot be `const fn`");
    }
}

/// The text of `///` comments among `attrs`.
pub fn doc_lines(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => Some(text.value()),
            _ => None,
        })
        .collect()
}
