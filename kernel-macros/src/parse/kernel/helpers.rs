//! Helpers (device functions) -> IR: those an instance calls, parsed with its constants; the
//! generic ones kept unparsed for `check/` to copy per element type, and those copies; a
//! helper's signature and parameters.

use super::bindings::storage_element;
use super::{check_plain_signature, instantiated};
use crate::diag::Errors;
use crate::ir::{self, Span, Ty};
use crate::parse::consts::{self, Consts};
use crate::parse::{body, names, ty};

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
