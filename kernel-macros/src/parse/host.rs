//! Host expressions -> IR: the grid and `#[len(..)]` expressions the launcher evaluates
//! (integer literals, fields of the uniform parameters, `buffer.len()`, `+ - * / %`,
//! `ceil_div`, `min`, `max`; constants arrive here as the literals they stand for).

use crate::diag::Errors;
use crate::ir::{HostExpr, HostFn, HostOp, Span};
use crate::parse::keywords::CEIL_DIV;

/// What a host expression may use, for messages: `x.len()` in grids only.
fn supported(allow_len: bool) -> String {
    let len = if allow_len { "`x.len()`, " } else { "" };
    format!(
        "grid and length expressions may use integer literals, constants, fields of the \
         parameters (`p.n`), {len}`+ - * / %`, `ceil_div(a, b)`, `min(a, b)` and `max(a, b)`"
    )
}

/// Where a host expression stands, which decides what it may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A kernel's grid: also `buffer.len()`.
    Grid,
    /// A kernel's `#[len(..)]`.
    KernelLen,
    /// A family's `#[len(..)]`: the module's constants, not a set's.
    FamilyLen,
}

/// Converts `expr` (its constants already replaced by their values); `uniform` is the name of
/// the kernel's `Params` parameter, if any.
pub fn host_expr(
    expr: &syn::Expr,
    uniform: Option<&syn::Ident>,
    place: Place,
    errors: &mut Errors,
) -> Option<HostExpr> {
    let allow_len = place == Place::Grid;
    let convert = |e: &syn::Expr, errors: &mut Errors| host_expr(e, uniform, place, errors);
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => match int.base10_parse::<u64>() {
            Ok(value) => Some(HostExpr::Lit(value)),
            Err(error) => {
                errors.push(error);
                None
            }
        },
        syn::Expr::Paren(inner) => convert(&inner.expr, errors),
        syn::Expr::Field(field) => field_expr(field, uniform, errors),
        syn::Expr::Binary(binary) => {
            let Some(op) = host_op(&binary.op) else {
                errors.spanned(
                    binary.op,
                    format!("unsupported operator; {}", supported(allow_len)),
                );
                return None;
            };
            let (left, right) = (
                convert(&binary.left, errors),
                convert(&binary.right, errors),
            );
            Some(HostExpr::Binary(op, Box::new(left?), Box::new(right?)))
        }
        syn::Expr::Call(call) => {
            let function = match &*call.func {
                syn::Expr::Path(path) if path.path.is_ident(CEIL_DIV) => HostFn::CeilDiv,
                syn::Expr::Path(path) if path.path.is_ident("min") => HostFn::Min,
                syn::Expr::Path(path) if path.path.is_ident("max") => HostFn::Max,
                other => {
                    errors.spanned(other, format!("unknown function; {}", supported(allow_len)));
                    return None;
                }
            };
            let [a, b] = call.args.iter().collect::<Vec<_>>()[..] else {
                errors.spanned(&call.args, "this function takes two arguments");
                return None;
            };
            let (a, b) = (convert(a, errors), convert(b, errors));
            Some(HostExpr::Call(function, Box::new(a?), Box::new(b?)))
        }
        syn::Expr::MethodCall(call)
            if allow_len && call.method == "len" && call.args.is_empty() =>
        {
            match &*call.receiver {
                syn::Expr::Path(path) if path.path.get_ident().is_some() => {
                    let binding = path.path.get_ident()?.clone();
                    Some(HostExpr::Len {
                        binding,
                        span: Span::of(call),
                    })
                }
                other => {
                    errors.spanned(
                        other,
                        "`.len()` applies to a storage parameter by name: `x.len()`",
                    );
                    None
                }
            }
        }
        syn::Expr::Path(path) if path.path.get_ident().is_some() => {
            let name = path.path.get_ident()?;
            let message = match place {
                Place::FamilyLen => format!(
                    "`{name}` is not a constant of this module; a family's lengths hold for every \
                     member kernel, so they may use the module's constants but not a constant \
                     set's: write the value, or declare it as a constant of the module"
                ),
                Place::Grid | Place::KernelLen => format!(
                    "`{name}` is not a constant of this module or of the kernel's constant set; \
                     {}",
                    supported(allow_len)
                ),
            };
            errors.spanned(path, message);
            None
        }
        other => {
            let message = format!("unsupported expression; {}", supported(allow_len));
            errors.spanned(other, message);
            None
        }
    }
}

fn field_expr(
    field: &syn::ExprField,
    uniform: Option<&syn::Ident>,
    errors: &mut Errors,
) -> Option<HostExpr> {
    let syn::Member::Named(name) = &field.member else {
        errors.spanned(&field.member, "name a field of the parameters: `p.n`");
        return None;
    };
    let base_ok = matches!(&*field.base, syn::Expr::Path(path) if uniform.is_some_and(|u| path.path.is_ident(u)));
    if !base_ok {
        let message = match uniform {
            Some(u) => {
                format!("only fields of the parameters `{u}` can be used here: `{u}.{name}`")
            }
            None => "this kernel takes no `Params` struct, so there are no fields to use here"
                .to_owned(),
        };
        errors.spanned(&field.base, message);
        return None;
    }
    Some(HostExpr::Field {
        field: name.clone(),
        span: Span::of(field),
    })
}

/// The host arithmetic `op` stands for: `+ - * / %`.
pub fn host_op(op: &syn::BinOp) -> Option<HostOp> {
    Some(match op {
        syn::BinOp::Add(_) => HostOp::Add,
        syn::BinOp::Sub(_) => HostOp::Sub,
        syn::BinOp::Mul(_) => HostOp::Mul,
        syn::BinOp::Div(_) => HostOp::Div,
        syn::BinOp::Rem(_) => HostOp::Rem,
        _ => return None,
    })
}
