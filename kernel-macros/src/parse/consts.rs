//! Compile-time constants: `const NAME: u32 = ...;` items of the module and the
//! `constants(NAME = [..])` instantiations of a kernel. An instance is parsed from the kernel's
//! tokens with every use of a constant replaced by its value as a typed literal, so every later
//! stage sees plain numbers: in the workgroup size, in array lengths, in the grid and in the body.

use proc_macro2::{Group, Literal, TokenStream, TokenTree};

use crate::diag::Errors;
use crate::ir;
use crate::parse::attr::ConstDecl;

/// A constant's value and Rust type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    U32(u32),
    I32(i32),
    F32(f32),
    /// An element type of `types(T = [..])`: its uses become the type's name, and
    /// `T::LANES` its number of lanes (1 for a scalar).
    Type(ir::Element),
}

impl Value {
    /// The tokens a use of the constant becomes, at the use's span: a typed literal, or a
    /// type's name (`f32`, `Vec4<f32>`).
    fn tokens(self, span: proc_macro2::Span) -> TokenStream {
        let mut literal = match self {
            Value::U32(v) => Literal::u32_suffixed(v),
            Value::I32(v) => Literal::i32_suffixed(v),
            Value::F32(v) => Literal::f32_suffixed(v),
            Value::Type(element) => {
                let scalar = proc_macro2::Ident::new(element.scalar.rust_name(), span);
                if element.lanes == 1 {
                    return TokenTree::Ident(scalar).into();
                }
                let vector = proc_macro2::Ident::new(&format!("Vec{}", element.lanes), span);
                return quote::quote_spanned!(span=> #vector<#scalar>);
            }
        };
        literal.set_span(span);
        TokenTree::Literal(literal).into()
    }

    /// The value as a count (array lengths, workgroup sizes), if it is a non-negative integer.
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::U32(v) => Some(u64::from(v)),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::F32(_) | Value::Type(_) => None,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::U32(v) => write!(f, "{v}"),
            Value::I32(v) => write!(f, "{v}"),
            Value::F32(v) => write!(f, "{v:?}"),
            Value::Type(element) => f.write_str(&element.rust_name()),
        }
    }
}

/// Constants in scope, by name.
#[derive(Clone, Default)]
pub struct Consts(Vec<(String, Value)>);

impl Consts {
    pub fn get(&self, name: &str) -> Option<Value> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    pub fn with(&self, name: &str, value: Value) -> Consts {
        let mut more = self.clone();
        more.0.push((name.to_owned(), value));
        more
    }

    /// The constants without those named in `names` (which a generic helper's own type
    /// parameters shadow).
    pub fn without(&self, names: &[String]) -> Consts {
        Consts(
            self.0
                .iter()
                .filter(|(name, _)| !names.contains(name))
                .cloned()
                .collect(),
        )
    }

    /// Whether an element type (`types(T = [..])`) is in scope.
    pub fn has_element_type(&self) -> bool {
        self.0.iter().any(|(_, v)| matches!(v, Value::Type(_)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names in scope, in the order they were declared.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(name, _)| name.as_str())
    }

    /// `tokens` with every use of a constant replaced by its literal (keeping the use's span).
    /// A name right after `.` is a field or method, not a constant, and stays.
    pub fn substitute(&self, tokens: TokenStream) -> TokenStream {
        if self.is_empty() {
            return tokens;
        }
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = TokenStream::new();
        // `x.NAME` is a field or method; `a..NAME` is a range ending in a constant.
        let (mut dots, mut after_dot) = (0, false);
        let mut i = 0;
        while i < tokens.len() {
            let tree = &tokens[i];
            match tree {
                TokenTree::Ident(ident) if !after_dot => match self.get(&ident.to_string()) {
                    // `T::LANES` (its number of lanes), `T::Scalar` (its scalar type), `T::F32`..
                    Some(Value::Type(element)) if associated(&tokens[i + 1..]).is_some() => {
                        if let Some(item) = associated(&tokens[i + 1..]) {
                            out.extend(item.tokens(element, ident.span()));
                        }
                        i += 3;
                    }
                    Some(value) => out.extend(value.tokens(ident.span())),
                    None => out.extend([tree.clone()]),
                },
                TokenTree::Group(group) => {
                    let mut inner = Group::new(group.delimiter(), self.substitute(group.stream()));
                    inner.set_span(group.span());
                    out.extend([TokenTree::Group(inner)]);
                }
                _ => out.extend([tree.clone()]),
            }
            let dot = matches!(tree, TokenTree::Punct(p) if p.as_char() == '.');
            dots = if dot { dots + 1 } else { 0 };
            after_dot = dots == 1;
            i += 1;
        }
        out
    }

    /// Substitutes and re-parses a syn node.
    pub fn apply<T: syn::parse::Parse + quote::ToTokens>(&self, node: &T) -> syn::Result<T> {
        syn::parse2(self.substitute(node.to_token_stream()))
    }
}

/// What an element type's name followed by `::` names.
enum Associated {
    /// `T::LANES`: 1 for a scalar, else the vector's lanes.
    Lanes,
    /// `T::Scalar` (the type itself, or the vector's scalar), `T::F32`, `T::F16`, `T::U32`,
    /// `T::I32` (the type of `T`'s lanes with that scalar: `Vec4<f32>` for a `Vec4<f16>`, to
    /// sum or convert in another precision).
    Type(ir::Associated),
}

impl Associated {
    /// The tokens `T::..` becomes for the element type `element`, at `span`.
    fn tokens(&self, element: ir::Element, span: proc_macro2::Span) -> TokenStream {
        match *self {
            Associated::Lanes => {
                let mut literal = Literal::u32_suffixed(u32::from(element.lanes));
                literal.set_span(span);
                TokenTree::Literal(literal).into()
            }
            Associated::Type(ty) => Value::Type(ty.of(element)).tokens(span),
        }
    }
}

/// The associated item `rest` names after an element type's name, if it starts with
/// `::LANES`, `::Scalar` or `::` and a scalar type's name in capitals (`::F32`).
fn associated(rest: &[TokenTree]) -> Option<Associated> {
    let [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(name), ..] = rest else {
        return None;
    };
    if a.as_char() != ':' || b.as_char() != ':' {
        return None;
    }
    match name.to_string().as_str() {
        "LANES" => Some(Associated::Lanes),
        other => ir::Associated::named(other).map(Associated::Type),
    }
}

/// `tokens` with `T::..` of the element type `name` resolved as for `element`: the type a
/// buffer declared with them has in that instance.
pub fn resolve_associated(tokens: TokenStream, name: &str, element: ir::Element) -> String {
    Consts::default()
        .with(name, Value::Type(element))
        .substitute(tokens)
        .to_string()
}

/// A set of constants expanded into its instances: the IR set, and each instance's constants
/// (the module's, then the set's, identity and derived) for parsing that instance.
pub fn set(
    name: syn::Ident,
    docs: Vec<String>,
    home: ir::SetHome,
    decls: &[ConstDecl],
    module: &Consts,
    errors: &mut Errors,
) -> (ir::ConstantSet, Vec<Consts>) {
    let decls = super::names::distinct_constants(decls, errors);
    let mut envs = vec![(module.clone(), Vec::new())];
    let mut derived = Vec::new();
    for (index, decl) in decls.iter().enumerate() {
        match decl {
            ConstDecl::Listed(name, values) => {
                let mut next = Vec::new();
                // Each repeated value is reported once, however many instances it repeats.
                let mut repeated = vec![false; values.len()];
                for (env, identity) in &envs {
                    let mut seen: Vec<u32> = Vec::new();
                    for (i, value) in values.iter().enumerate() {
                        let Some(v) = eval_u32(name, value, env, errors) else {
                            continue;
                        };
                        if seen.contains(&v) {
                            if !std::mem::replace(&mut repeated[i], true) {
                                errors.spanned(value, repeated_value(name, v));
                            }
                            continue;
                        }
                        seen.push(v);
                        let mut identity: Vec<u32> = identity.clone();
                        identity.push(v);
                        next.push((env.with(&name.to_string(), Value::U32(v)), identity));
                    }
                }
                envs = next;
            }
            ConstDecl::Zipped(lists) => envs = zipped(&envs, lists, errors),
            ConstDecl::Derived(name, expr) => {
                let names: Vec<&syn::Ident> = decls.iter().flat_map(|d| d.names()).collect();
                if let Some(host) = derived_expr(expr, &names, module, errors) {
                    derived.push((name.clone(), host));
                }
                // An instance where the expression has no `u32` value is reported (the first
                // one, naming it and the cause) and left out.
                let listed: Vec<&syn::Ident> = decls
                    .iter()
                    .take(index)
                    .filter(|d| !matches!(d, ConstDecl::Derived(..)))
                    .flat_map(|d| d.names())
                    .collect();
                let mut reported = false;
                envs.retain_mut(|(env, identity)| {
                    match eval(expr, env).and_then(|v| u32::try_from(v).ok()) {
                        Some(v) => {
                            *env = env.with(&name.to_string(), Value::U32(v));
                            return true;
                        }
                        // Not about one instance: reported once, and a stand-in keeps the
                        // instances checked.
                        None if undeclared(expr, env).is_some() || identity.is_empty() => {
                            if !std::mem::replace(&mut reported, true) {
                                report_bad_constant(name, expr, env, errors);
                            }
                            *env = env.with(&name.to_string(), Value::U32(1));
                            return true;
                        }
                        None if !std::mem::replace(&mut reported, true) => {
                            let instance: Vec<String> = listed
                                .iter()
                                .zip(identity.iter())
                                .map(|(n, v)| format!("{n} = {v}"))
                                .collect();
                            errors.spanned(
                                expr,
                                format!(
                                    "`{name}` has no `u32` value in the instance `{}`: there, \
                                     {}; list only values for which every derived constant is \
                                     a `u32`, or change `{name}`'s expression",
                                    instance.join(", "),
                                    failure(expr, env),
                                ),
                            );
                        }
                        None => {}
                    }
                    false
                });
            }
        }
    }
    let identity = decls
        .iter()
        .filter(|d| !matches!(d, ConstDecl::Derived(..)))
        .flat_map(|d| d.names())
        .cloned()
        .collect();
    let (envs, instances): (Vec<Consts>, Vec<Vec<u32>>) = envs.into_iter().unzip();
    let set = ir::ConstantSet {
        name,
        docs,
        home,
        identity,
        derived,
        instances,
    };
    (set, envs)
}

/// The instances so far (`envs`: each one's constants and identity) each with every row of
/// the zipped `lists` (their `i`-th values). A row whose value fails to evaluate is left out
/// (reported), and so is a row listed twice (reported once).
fn zipped(
    envs: &[(Consts, Vec<u32>)],
    lists: &[(syn::Ident, Vec<syn::Expr>)],
    errors: &mut Errors,
) -> Vec<(Consts, Vec<u32>)> {
    let rows = lists.first().map_or(0, |(_, values)| values.len());
    let mut repeated = vec![false; rows];
    let mut next = Vec::new();
    for (env, identity) in envs {
        let mut seen: Vec<Vec<u32>> = Vec::new();
        for (row, repeated) in repeated.iter_mut().enumerate() {
            let (mut env, mut values) = (env.clone(), Vec::new());
            for (name, list) in lists {
                let Some(v) = eval_u32(name, &list[row], &env, errors) else {
                    break;
                };
                env = env.with(&name.to_string(), Value::U32(v));
                values.push(v);
            }
            if values.len() < lists.len() {
                continue;
            }
            if seen.contains(&values) {
                if !std::mem::replace(repeated, true) {
                    errors.spanned(&lists[0].1[row], repeated_row(lists, &values));
                }
                continue;
            }
            seen.push(values.clone());
            next.push((env, [identity.clone(), values].concat()));
        }
    }
    next
}

/// The error for a row of `zip(..)` listed twice.
fn repeated_row(lists: &[(syn::Ident, Vec<syn::Expr>)], values: &[u32]) -> String {
    let row: Vec<String> = lists
        .iter()
        .zip(values)
        .map(|((name, _), v)| format!("{name} = {v}"))
        .collect();
    format!(
        "`zip(..)` lists `{}` twice, which would make the same instances twice; list each \
         combination once",
        row.join(", ")
    )
}

/// The error for a value listed twice for the constant `name`.
fn repeated_value(name: &syn::Ident, value: u32) -> String {
    format!(
        "`{name}` lists {value} twice, which would make the same instances twice; list each \
         value once. The lists of `constants(..)` combine: every value of each with every \
         value of the others. To vary constants together, list them in `zip(..)` \
         (`zip(BLOCK = [128, 64], GROUP = [512, 256])`), or list one of them and derive the \
         others from it (`BLOCK = SPAN * REG`)"
    )
}

fn eval_u32(
    name: &syn::Ident,
    value: &syn::Expr,
    env: &Consts,
    errors: &mut Errors,
) -> Option<u32> {
    let v = eval(value, env).and_then(|v| u32::try_from(v).ok());
    if v.is_none() {
        report_bad_constant(name, value, env, errors);
    }
    v
}

fn report_bad_constant(name: &syn::Ident, value: &syn::Expr, env: &Consts, errors: &mut Errors) {
    match undeclared(value, env) {
        Some(unknown) => errors.spanned(
            unknown,
            format!(
                "`{unknown}` is used before it is declared; declare `const {unknown}: u32 = ...;` \
                 in the module, or list it earlier in `constants(...)`"
            ),
        ),
        None => errors.spanned(
            value,
            format!("`{name}` needs a `u32` value known at compile time"),
        ),
    }
}

/// Why `expr`, which [`eval`] cannot compute as a `u32` with `consts`, has no value: the first
/// division by zero, or the value out of `u32`'s range, as a clause of a sentence.
fn failure(expr: &syn::Expr, consts: &Consts) -> String {
    fn zero_divisor(expr: &syn::Expr, consts: &Consts) -> Option<String> {
        match expr {
            syn::Expr::Paren(inner) => zero_divisor(&inner.expr, consts),
            syn::Expr::Unary(unary) => zero_divisor(&unary.expr, consts),
            syn::Expr::Binary(binary) => zero_divisor(&binary.left, consts)
                .or_else(|| zero_divisor(&binary.right, consts))
                .or_else(|| {
                    let by_zero = matches!(binary.op, syn::BinOp::Div(_) | syn::BinOp::Rem(_))
                        && eval(&binary.right, consts) == Some(0);
                    by_zero.then(|| {
                        format!(
                            "`{}` divides by zero",
                            quote::ToTokens::to_token_stream(expr)
                        )
                    })
                }),
            _ => None,
        }
    }
    if let Some(division) = zero_divisor(expr, consts) {
        return division;
    }
    match eval(expr, consts) {
        Some(v) if v < 0 => format!("it is {v}, below zero (the subtraction underflows `u32`)"),
        Some(v) => format!("it is {v}, past `u32::MAX` (the arithmetic overflows `u32`)"),
        None => "it cannot be computed".to_owned(),
    }
}

/// A derived constant's expression for the host: the set's constants by name, the module's as
/// their values. `None` (reported) for what host code could not compute.
fn derived_expr(
    expr: &syn::Expr,
    set: &[&syn::Ident],
    module: &Consts,
    errors: &mut Errors,
) -> Option<ir::HostExpr> {
    use ir::HostExpr;
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse().ok().map(HostExpr::Lit),
        syn::Expr::Paren(inner) => derived_expr(&inner.expr, set, module, errors),
        syn::Expr::Path(path) => {
            let ident = path.path.get_ident()?;
            if set.contains(&ident) {
                return Some(HostExpr::Const(ident.clone()));
            }
            // An unknown name was reported when the instances were evaluated.
            module.get(&ident.to_string())?.as_u64().map(HostExpr::Lit)
        }
        syn::Expr::Binary(binary) => {
            let Some(op) = crate::parse::host::host_op(&binary.op) else {
                errors.spanned(binary.op, DERIVED_USAGE);
                return None;
            };
            let left = derived_expr(&binary.left, set, module, errors);
            let right = derived_expr(&binary.right, set, module, errors);
            Some(HostExpr::Binary(op, Box::new(left?), Box::new(right?)))
        }
        other => {
            errors.spanned(other, DERIVED_USAGE);
            None
        }
    }
}

const DERIVED_USAGE: &str = "a derived constant is integer arithmetic (`+ - * / %`) on literals \
                             and constants, e.g. `BLOCK = SPAN * REG`";

/// Evaluates a constant expression: literals, constants, `+ - * / %`, parentheses, `-x`.
pub fn eval(expr: &syn::Expr, consts: &Consts) -> Option<i64> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse().ok(),
        syn::Expr::Path(path) => consts
            .get(&path.path.get_ident()?.to_string())?
            .as_u64()
            .map(|v| v as i64),
        syn::Expr::Paren(inner) => eval(&inner.expr, consts),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => eval(expr, consts)?.checked_neg(),
        syn::Expr::Binary(binary) => {
            let (a, b) = (eval(&binary.left, consts)?, eval(&binary.right, consts)?);
            match binary.op {
                syn::BinOp::Add(_) => a.checked_add(b),
                syn::BinOp::Sub(_) => a.checked_sub(b),
                syn::BinOp::Mul(_) => a.checked_mul(b),
                syn::BinOp::Div(_) => a.checked_div(b),
                syn::BinOp::Rem(_) => a.checked_rem(b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A `const NAME: T = value;` item of the module (`T` is `u32`, `i32`, `usize` or `f32`).
pub fn module_const(item: &syn::ItemConst, consts: &Consts, errors: &mut Errors) -> Option<Value> {
    let ty = quote::ToTokens::to_token_stream(&item.ty).to_string();
    let value = match ty.as_str() {
        "u32" | "usize" => eval(&item.expr, consts)
            .and_then(|v| u32::try_from(v).ok())
            .map(Value::U32),
        "i32" => eval(&item.expr, consts)
            .and_then(|v| i32::try_from(v).ok())
            .map(Value::I32),
        "f32" => match float(&item.expr) {
            // A literal token cannot hold an infinity (and WGSL has no infinite constants).
            Some(v) if !v.is_finite() => {
                errors.spanned(
                    &item.expr,
                    "this constant does not fit in `f32`, whose values are finite and at most \
                     3.4028235e38 (`f32::MAX`) in magnitude",
                );
                return None;
            }
            v => v.map(Value::F32),
        },
        _ => {
            errors.spanned(
                &item.ty,
                "constants of a kernels module are `u32`, `i32`, `usize` or `f32`",
            );
            return None;
        }
    };
    if value.is_none() {
        match undeclared(&item.expr, consts) {
            Some(name) => errors.spanned(
                name,
                format!("`{name}` is used before it is declared; declare a constant above the constants that use it"),
            ),
            None => errors.spanned(
                &item.expr,
                format!("tessera could not evaluate this `{ty}` constant; use literals, other constants and `+ - * / %`"),
            ),
        }
    }
    value
}

/// A value of the declared type for a constant that could not be evaluated (already
/// reported), so its uses add no type errors of their own.
pub fn stand_in(ty: &syn::Type) -> Value {
    match quote::ToTokens::to_token_stream(ty).to_string().as_str() {
        "f32" => Value::F32(1.0),
        "i32" => Value::I32(1),
        _ => Value::U32(1),
    }
}

/// The first name in `expr` that is not a constant in scope.
pub fn undeclared<'e>(expr: &'e syn::Expr, consts: &Consts) -> Option<&'e syn::Ident> {
    match expr {
        syn::Expr::Path(path) => path
            .path
            .get_ident()
            .filter(|name| consts.get(&name.to_string()).is_none()),
        syn::Expr::Paren(inner) => undeclared(&inner.expr, consts),
        syn::Expr::Unary(unary) => undeclared(&unary.expr, consts),
        syn::Expr::Binary(binary) => {
            undeclared(&binary.left, consts).or_else(|| undeclared(&binary.right, consts))
        }
        _ => None,
    }
}

fn float(expr: &syn::Expr) -> Option<f32> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => f.base10_parse().ok(),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => float(expr).map(|v| -v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn constants_become_typed_literals_except_after_a_dot() {
        let consts = Consts::default().with("TILE", Value::U32(16));
        let out = consts.substitute(quote! { [f32; TILE * 2] p.TILE x.TILE() { 0..TILE } });
        assert_eq!(
            out.to_string(),
            "[f32 ; 16u32 * 2] p . TILE x . TILE () { 0 .. 16u32 }"
        );
    }

    #[test]
    fn constant_expressions_evaluate() {
        let consts = Consts::default().with("TILE", Value::U32(16));
        let expr: syn::Expr = syn::parse_quote!((TILE + 2) * 3 - 1);
        assert_eq!(eval(&expr, &consts), Some(53));
    }
}
