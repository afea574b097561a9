//! Kernel and helper signatures -> IR: `#[kernel(workgroup = [..], grid = [..])]`, bindings
//! from typed parameters (`&[T]`, `&mut [T]`, `&Params`), `#[len(..)]` and `#[workgroup]`.

use crate::diag::Errors;
use crate::ir::{self, Scalar, Span, Ty};
use crate::parse::attr::{self, Constants, KernelAttr};
use crate::parse::consts::{self, Consts};
use crate::parse::keywords::{
    ATOMIC_I32, ATOMIC_U32, KERNEL, LEN, LIMIT_INVOCATIONS, WORKGROUP_MEMORY,
};
use crate::parse::{body, host, names, ty};

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
    let family = families
        .iter()
        .find(|f| f.members.contains(&function.sig.ident));
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
                instance(function, &args, &env, params, family, errors)
            else {
                continue;
            };
            for binding in &mut variant.bindings {
                binding.generic = generic.contains(&binding.name);
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
        if !first.general().bindings.iter().any(|b| b.generic) {
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

/// The scalar types a type parameter may stand for.
const ELEMENT_TYPES: [Scalar; 4] = [Scalar::F32, Scalar::F16, Scalar::U32, Scalar::I32];

/// `types(T = [f32, f16])`, checked: one parameter, of distinct scalar types; the function may
/// declare it as `fn name<T>(..)`.
fn type_param(
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

/// The parameters of `function` whose type names the type parameter (`x: &[T]`).
/// The parameters of `function` whose type names the type parameter (`x: &[T]`). A buffer of
/// `T::Scalar` is one of a fixed type, so all the listed types must share their scalar:
/// otherwise an error at the parameter.
fn generic_params(
    function: &syn::ItemFn,
    param: Option<&ir::TypeParam>,
    errors: &mut Errors,
) -> Vec<syn::Ident> {
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
        let (whole, associated) = mentions(quote::ToTokens::to_token_stream(&arg.ty), &param.name);
        if whole {
            generic.push(pat.ident.clone());
        } else if associated
            && param
                .types
                .iter()
                .any(|t| t.scalar != param.types[0].scalar)
        {
            errors.spanned(
                &arg.ty,
                format!(
                    "a buffer of `{0}::Scalar` needs one scalar type for every type `{0}` \
                     stands for; list types of one scalar (`f32`, `Vec4<f32>`), or write a \
                     kernel for each",
                    param.name
                ),
            );
        }
    }
    generic
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
    family: Option<&ir::Family>,
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
    match family {
        Some(family) => {
            let rejected = member_bindings(
                &function.sig.ident,
                family,
                params,
                &mut bindings,
                &lens,
                errors,
            );
            rejected_params.extend(rejected);
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

/// A family member's bindings: each one the family declares, with the family's length; the
/// member may read a binding the family declares writable. Bindings the family does not
/// declare are reported and left out.
fn member_bindings(
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

/// The helpers named in `roots` and those they call, each parsed with the calling instance's
/// constants `env`; the generic ones (`fn load<E>(..)`) are kept unparsed, their constants in
/// place, for `check/` to copy per element type. Errors are reported only for the helpers
/// that are called.
pub fn instance_helpers(
    roots: Vec<syn::Ident>,
    caller: Option<&syn::Ident>,
    helpers: &[syn::ItemFn],
    env: &Consts,
    params: &[ir::ParamsStruct],
    errors: &mut Errors,
) -> (Vec<ir::Function>, Vec<ir::GenericHelper>) {
    let mut parsed: Vec<Option<(Option<ir::Function>, Errors)>> =
        helpers.iter().map(|_| None).collect();
    let mut generic = Vec::new();
    let mut pending = roots;
    let mut order = Vec::new();
    while let Some(name) = pending.pop() {
        let Some(index) = helpers.iter().position(|h| h.sig.ident == name) else {
            continue;
        };
        if parsed[index].is_some() {
            continue;
        }
        if !helpers[index].sig.generics.params.is_empty() {
            let mut own = Errors::default();
            if let Some(item) = generic_helper(&helpers[index], env, &mut own) {
                pending.extend(called_idents(&item.block));
                generic.push((index, ir::GenericHelper { item }));
            }
            parsed[index] = Some((None, own));
            order.push(index);
            continue;
        }
        let mut own = Errors::default();
        let function = instantiated(&helpers[index], env)
            .map_err(|e| own.push(e))
            .ok()
            .and_then(|f| helper(&f, params, &mut own));
        // A helper over the element type, where there is none: one error, at the call (or at
        // the helper, when no kernel calls it), instead of one at each use of the type. The
        // helper is kept, its types unknown, so that its calls are not reported too.
        let element = (!env.has_element_type())
            .then(|| element_type_name(&helpers[index], params))
            .flatten();
        if let Some(element) = element {
            own = Errors::default();
            let helper_name = &helpers[index].sig.ident;
            match caller {
                Some(kernel) => own.spanned(
                    &name,
                    format!(
                        "`{helper_name}` uses the element type `{element}`, which `{kernel}` does \
                         not declare: add `types({element} = [f32])` to its `#[kernel(..)]` and \
                         write `fn {kernel}<{element}>(..)`, or make the helper generic over it: \
                         `fn {helper_name}<{element}>(..)`"
                    ),
                ),
                None => own.spanned(
                    helper_name,
                    format!(
                        "no kernel calls `{helper_name}`, and it uses the element type \
                         `{element}`, which a helper takes from the kernels that call it; call it \
                         from a kernel that declares `types({element} = [..])`, or make the \
                         helper generic over it: `fn {helper_name}<{element}>(..)`"
                    ),
                ),
            }
        }
        if let Some(function) = &function {
            pending.extend(called_names(&function.body));
        }
        parsed[index] = Some((function, own));
        order.push(index);
    }
    order.sort_unstable();
    generic.sort_unstable_by_key(|(index, _)| *index);
    let functions = order
        .into_iter()
        .filter_map(|index| {
            let (function, own) = parsed[index].take()?;
            errors.append(own);
            function
        })
        .collect();
    (functions, generic.into_iter().map(|(_, g)| g).collect())
}

/// A generic helper with the instance's constants `env` in place, except the names its type
/// parameters shadow. Its type parameters must be plain (`<E>`): each stands for the element
/// type (a scalar or a vector) a call passes. `None`, reported, for any other generics.
fn generic_helper(
    function: &syn::ItemFn,
    env: &Consts,
    errors: &mut Errors,
) -> Option<syn::ItemFn> {
    let generics = &function.sig.generics;
    let mut plain = true;
    for param in &generics.params {
        let message = match param {
            syn::GenericParam::Type(t) if t.bounds.is_empty() && t.default.is_none() => continue,
            syn::GenericParam::Type(t) => format!(
                "a helper's type parameter stands for the element type its calls pass (a \
                 scalar or a vector of one) and takes no bounds or default: write `<{}>`",
                t.ident
            ),
            syn::GenericParam::Lifetime(_) => {
                "helpers take no lifetimes: a reference parameter lends the caller's memory \
                 for the call"
                    .to_owned()
            }
            syn::GenericParam::Const(c) => format!(
                "helpers take no const parameters; `{}` can be a module constant or a \
                 `constants(..)` set of the kernels that call the helper",
                c.ident
            ),
        };
        errors.spanned(param, message);
        plain = false;
    }
    if let Some(clause) = &generics.where_clause {
        errors.spanned(
            clause,
            "a helper's type parameters take no bounds: each stands for the element type (a \
             scalar or a vector of one) its calls pass",
        );
        plain = false;
    }
    if !plain {
        return None;
    }
    let own: Vec<String> = generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    env.without(&own)
        .apply(function)
        .map_err(|e| errors.push(e))
        .ok()
}

/// The copy of the generic helper `generic` for the element types `elements` (one per type
/// parameter, in order), named [`ir::generic_copy_name`]; `None` where it does not parse
/// (reported).
pub fn generic_copy(
    generic: &ir::GenericHelper,
    elements: &[ir::Element],
    params: &[ir::ParamsStruct],
    errors: &mut Errors,
) -> Option<ir::Function> {
    let env = generic
        .type_params()
        .zip(elements)
        .fold(Consts::default(), |env, (name, element)| {
            env.with(&name.to_string(), consts::Value::Type(*element))
        });
    let mut function = instantiated(&generic.item, &env)
        .map_err(|e| errors.push(e))
        .ok()?;
    function.sig.ident = ir::generic_copy_name(&generic.item.sig.ident, elements);
    helper(&function, params, errors)
}

/// The names of the functions `block` calls, read from its tokens (an identifier, maybe with
/// `::<..>`, before a parenthesized group), for a helper that is not parsed yet.
fn called_idents(block: &syn::Block) -> Vec<syn::Ident> {
    fn walk(tokens: proc_macro2::TokenStream, found: &mut Vec<syn::Ident>) {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        let punct = |i: usize, c: char| matches!(trees.get(i), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == c);
        for (i, tree) in trees.iter().enumerate() {
            match tree {
                proc_macro2::TokenTree::Group(group) => walk(group.stream(), found),
                proc_macro2::TokenTree::Ident(ident) => {
                    let mut next = i + 1;
                    // `name::<A, B>`: past the matching `>`.
                    if punct(next, ':') && punct(next + 1, ':') && punct(next + 2, '<') {
                        let mut depth = 0;
                        next += 2;
                        while next < trees.len() {
                            depth += i32::from(punct(next, '<')) - i32::from(punct(next, '>'));
                            next += 1;
                            if depth == 0 {
                                break;
                            }
                        }
                    }
                    if matches!(trees.get(next), Some(proc_macro2::TokenTree::Group(g))
                        if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
                    {
                        found.push(ident.clone());
                    }
                }
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    walk(quote::ToTokens::to_token_stream(block), &mut found);
    found
}

/// The name of an element type `helper` uses where none is in scope: a type named by one
/// capitalized identifier that is neither a type of the language nor a `Params` struct.
fn element_type_name(helper: &syn::ItemFn, params: &[ir::ParamsStruct]) -> Option<syn::Ident> {
    struct Find<'a> {
        params: &'a [ir::ParamsStruct],
        found: Option<syn::Ident>,
    }
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_type_path(&mut self, path: &'ast syn::TypePath) {
            if let (None, Some(ident)) = (&path.qself, path.path.get_ident()) {
                let name = ident.to_string();
                let unknown = name.starts_with(|c: char| c.is_ascii_uppercase())
                    && !ty::is_known_name(&name)
                    && !self.params.iter().any(|p| p.name == *ident);
                if unknown && self.found.is_none() {
                    self.found = Some(ident.clone());
                }
            }
            syn::visit::visit_type_path(self, path);
        }
    }
    let mut find = Find {
        params,
        found: None,
    };
    syn::visit::Visit::visit_item_fn(&mut find, helper);
    find.found
}

/// The names of the functions `body` calls.
pub fn called_names(body: &ir::Block) -> Vec<syn::Ident> {
    let mut names = Vec::new();
    ir::visit_exprs(body, &mut |e| {
        if let ir::ExprKind::Call(name, _) | ir::ExprKind::GenericCall(name, _, _) = &e.kind {
            names.push(name.clone());
        }
    });
    names
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

/// Adds the binding or workgroup array `arg` declares; returns its `#[len(..)]` expression.
fn kernel_param(
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
        generic: false,
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
fn storage_element(ty: &syn::Type) -> syn::Result<Ty> {
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

/// A helper function (a device function): value parameters, references to the caller's
/// arrays (`&[T; N]`, `&mut [T; N]`), buffers (`&[T]`, `&mut [T]`) and parameters (`&P`), and
/// an optional return type. `function` arrives with the calling instance's constants in place.
pub fn helper(
    function: &syn::ItemFn,
    params: &[ir::ParamsStruct],
    errors: &mut Errors,
) -> Option<ir::Function> {
    check_plain_signature(&function.sig, errors);
    let mut parsed = Vec::new();
    let mut names = names::Declared::default();
    for input in &function.sig.inputs {
        let syn::FnArg::Typed(arg) = input else {
            errors.spanned(input, "a helper cannot take `self`");
            continue;
        };
        let syn::Pat::Ident(pat) = &*arg.pat else {
            errors.spanned(&arg.pat, "a helper parameter must be a plain name");
            continue;
        };
        // A repeated name is reported and kept, so the helper's calls keep their arity.
        names.declare(&pat.ident, "parameter", errors);
        match helper_param_ty(&arg.ty, params) {
            Ok((ty, kind, by_mut_ref)) => parsed.push(ir::FnParam {
                name: pat.ident.clone(),
                ty,
                kind,
                mutable: pat.mutability.is_some() || by_mut_ref,
                span: Span::of(arg),
                local: ir::LocalId::default(),
            }),
            // Kept, its type unknown, so that calls keep their arity and its uses in the
            // body are not reported again.
            Err(error) => {
                errors.push(error);
                parsed.push(ir::FnParam {
                    name: pat.ident.clone(),
                    ty: Ty::Unknown,
                    kind: ir::ParamKind::Value,
                    mutable: pat.mutability.is_some(),
                    span: Span::of(arg),
                    local: ir::LocalId::default(),
                });
            }
        }
    }
    let ret = match &function.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ret) => match ty::value_ty(ret) {
            Ok(ty) => Some(ty),
            Err(error) => {
                errors.push(error);
                Some(Ty::Unknown)
            }
        },
    };
    let body = body::function_body(&function.block, ret.is_some(), errors);
    Some(ir::Function {
        name: function.sig.ident.clone(),
        params: parsed,
        ret,
        body,
        locals: Vec::new(),
        fingerprint: quote::ToTokens::to_token_stream(function).to_string(),
    })
}

const HELPER_PARAMS: &str = "a helper takes values, or references to the caller's memory: \
    `&[T; N]` or `&mut [T; N]` (a workgroup or local array), `&[T]` or `&mut [T]` (a buffer), \
    `&P` (a `#[derive(Params)]` struct of this module)";

/// A helper parameter's type, how it is passed, and whether it is a `&mut` reference.
fn helper_param_ty(
    ty: &syn::Type,
    params: &[ir::ParamsStruct],
) -> syn::Result<(Ty, ir::ParamKind, bool)> {
    let syn::Type::Reference(reference) = ty else {
        return Ok((ty::value_ty(ty)?, ir::ParamKind::Value, false));
    };
    let mutable = reference.mutability.is_some();
    match &*reference.elem {
        syn::Type::Array(_) => Ok((
            ty::value_ty(&reference.elem)?,
            ir::ParamKind::Array,
            mutable,
        )),
        syn::Type::Slice(slice) => Ok((
            storage_element(&slice.elem)?,
            ir::ParamKind::Storage,
            mutable,
        )),
        syn::Type::Path(path) => match params.iter().position(|p| path.path.is_ident(&p.name)) {
            Some(_) if mutable => Err(syn::Error::new_spanned(
                ty,
                "kernels cannot write their parameters; take `&P`",
            )),
            Some(index) => Ok((Ty::Unknown, ir::ParamKind::Uniform(index), false)),
            None => Err(syn::Error::new_spanned(ty, HELPER_PARAMS)),
        },
        _ => Err(syn::Error::new_spanned(ty, HELPER_PARAMS)),
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
