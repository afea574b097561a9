//! Kernel and helper bodies -> IR statements and expressions: the Rust subset the kernel
//! language accepts. Everything else is reported at its tokens with what to write instead.

use crate::diag::Errors;
use crate::ir::{self, BinOp, Expr, ExprKind, Span, Stmt, StmtKind, Ty, UnOp};
use crate::parse::keywords::UNROLL;
use crate::parse::nesting::Nesting;
use crate::parse::ty;

/// A block in statement position: a trailing expression is a statement too.
pub fn block(block: &syn::Block, errors: &mut Errors) -> ir::Block {
    let mut out = Vec::new();
    for stmt in &block.stmts {
        statement(stmt, &mut out, errors);
    }
    out
}

/// A function body: with a return type, its trailing expression becomes a `return`.
pub fn function_body(body: &syn::Block, returns_value: bool, errors: &mut Errors) -> ir::Block {
    let Some((syn::Stmt::Expr(tail, None), init)) =
        body.stmts.split_last().filter(|_| returns_value)
    else {
        return block(body, errors);
    };
    let mut out = Vec::new();
    for stmt in init {
        statement(stmt, &mut out, errors);
    }
    if let Some(value) = expr(tail, errors) {
        out.push(Stmt {
            span: value.span,
            kind: StmtKind::Return(Some(value)),
        });
    }
    out
}

/// A block used as a value: its last expression without `;` is the value.
fn value_block(block: &syn::Block, errors: &mut Errors) -> Option<ir::BlockExpr> {
    let (last, init) = block.stmts.split_last().or_else(|| {
        errors.spanned(
            block,
            "this block needs a value: end it with an expression without `;`",
        );
        None
    })?;
    let syn::Stmt::Expr(tail, None) = last else {
        errors.spanned(
            last,
            "this block needs a value: end it with an expression without `;`",
        );
        return None;
    };
    let mut stmts = Vec::new();
    for stmt in init {
        statement(stmt, &mut stmts, errors);
    }
    Some(ir::BlockExpr {
        stmts,
        tail: expr(tail, errors)?,
    })
}

fn statement(stmt: &syn::Stmt, out: &mut ir::Block, errors: &mut Errors) {
    match stmt {
        syn::Stmt::Local(local) => match split_tuple_let(local) {
            Some(lets) => lets.iter().for_each(|l| out.extend(let_stmt(l, errors))),
            None => out.extend(let_stmt(local, errors)),
        },
        syn::Stmt::Expr(e, _) => {
            if let Some(stmt) = expr_stmt(e, errors) {
                out.push(stmt);
            }
        }
        syn::Stmt::Item(item) => errors.spanned(
            item,
            "items cannot be declared inside a kernel body; define helpers beside the kernels",
        ),
        syn::Stmt::Macro(mac) => errors.spanned(
            &mac.mac.path,
            "macros are not supported in kernels; write the code out, or use a helper function",
        ),
    }
}

/// `let (a, b) = (x, y);` as `let a = x; let b = y;`, when no value names a bound variable
/// (then binding one by one would change what a later value sees).
fn split_tuple_let(local: &syn::Local) -> Option<Vec<syn::Local>> {
    let syn::Pat::Tuple(pattern) = &local.pat else {
        return None;
    };
    let init = local.init.as_ref().filter(|init| init.diverge.is_none())?;
    let syn::Expr::Tuple(values) = &*init.expr else {
        return None;
    };
    if pattern.elems.len() != values.elems.len() {
        return None;
    }
    let names: Vec<String> = pattern
        .elems
        .iter()
        .filter_map(|p| match p {
            syn::Pat::Ident(ident) => Some(ident.ident.to_string()),
            _ => None,
        })
        .collect();
    let mentions_bound = values
        .elems
        .iter()
        .any(|value| mentions(quote::ToTokens::to_token_stream(value), &names));
    if mentions_bound {
        return None;
    }
    let lets = pattern
        .elems
        .iter()
        .zip(&values.elems)
        .map(|(pat, value)| {
            let mut single = local.clone();
            single.pat = pat.clone();
            single.init = Some(syn::LocalInit {
                eq_token: init.eq_token,
                expr: Box::new(value.clone()),
                diverge: None,
            });
            single
        })
        .collect();
    Some(lets)
}

/// Whether `tokens` name one of `names` as a value: a field or method after `.` (`id.x`,
/// `v.max(w)`) or a segment after `::` is another name.
fn mentions(tokens: proc_macro2::TokenStream, names: &[String]) -> bool {
    let mut after_dot_or_path = false;
    for token in tokens {
        match &token {
            proc_macro2::TokenTree::Ident(ident) => {
                if !after_dot_or_path && names.contains(&ident.to_string()) {
                    return true;
                }
                after_dot_or_path = false;
            }
            proc_macro2::TokenTree::Punct(punct) => {
                after_dot_or_path = matches!(punct.as_char(), '.' | ':');
            }
            proc_macro2::TokenTree::Group(group) => {
                if mentions(group.stream(), names) {
                    return true;
                }
                after_dot_or_path = false;
            }
            proc_macro2::TokenTree::Literal(_) => after_dot_or_path = false,
        }
    }
    false
}

fn let_stmt(local: &syn::Local, errors: &mut Errors) -> Option<Stmt> {
    let span = Span::of(local);
    let (pat, declared) = match &local.pat {
        syn::Pat::Type(typed) => (
            &*typed.pat,
            Some(ty::value_ty(&typed.ty).map_err(|e| errors.push(e)).ok()?),
        ),
        other => (other, None),
    };
    let syn::Pat::Ident(ident) = pat else {
        errors.spanned(
            pat,
            "`let` binds one name in kernels (`let x = ...;`), or a tuple of names to a tuple of \
             values that do not mention them (`let (a, b) = (x, y);`)",
        );
        return None;
    };
    if let Some(by_ref) = &ident.by_ref {
        errors.spanned(
            by_ref,
            "references to locals are not supported in kernels; use the value",
        );
    }
    if let Some(init) = &local.init {
        if let Some((_, diverge)) = &init.diverge {
            errors.spanned(
                diverge,
                "`let ... else` is not supported in kernels; use `if`",
            );
        }
    }
    // A `let` whose value is not supported still declares its name (with an unknown type), so
    // later uses of it do not add errors of their own.
    let (init, declared) = match &local.init {
        Some(init) => match expr(&init.expr, errors) {
            Some(value) => (Some(value), declared),
            None => (None, Some(Ty::Unknown)),
        },
        None => (None, declared),
    };
    Some(Stmt {
        kind: StmtKind::Let {
            name: ident.ident.clone(),
            mutable: ident.mutability.is_some(),
            declared,
            init,
            local: ir::LocalId::default(),
            ty: Ty::Unknown,
        },
        span,
    })
}

/// An expression in statement position: control flow, assignments, calls.
fn expr_stmt(e: &syn::Expr, errors: &mut Errors) -> Option<Stmt> {
    let _nesting = Nesting::stmt(e, errors)?;
    let span = Span::of(e);
    let kind = match e {
        syn::Expr::If(if_expr) => if_stmt(if_expr, errors)?,
        syn::Expr::ForLoop(for_loop) => StmtKind::For(Box::new(for_stmt(for_loop, errors)?)),
        syn::Expr::While(while_loop) => {
            reject_label(while_loop.label.as_ref(), errors);
            let body = block(&while_loop.body, errors);
            StmtKind::While {
                cond: expr(&while_loop.cond, errors)?,
                body,
            }
        }
        syn::Expr::Loop(loop_expr) => {
            reject_label(loop_expr.label.as_ref(), errors);
            StmtKind::Loop(block(&loop_expr.body, errors))
        }
        syn::Expr::Block(inner) if inner.label.is_none() => {
            StmtKind::Block(block(&inner.block, errors))
        }
        syn::Expr::Match(m) => {
            let scrutinee = expr(&m.expr, errors)?;
            let arms = m
                .arms
                .iter()
                .filter_map(|arm| {
                    match_arm(arm, errors, |body, errors| Some(arm_block(body, errors)))
                })
                .collect();
            StmtKind::Match { scrutinee, arms }
        }
        syn::Expr::Assign(assign) => {
            let (target, value) = (expr(&assign.left, errors), expr(&assign.right, errors));
            StmtKind::Assign {
                target: target?,
                op: None,
                value: value?,
            }
        }
        syn::Expr::Binary(binary) if compound_op(&binary.op).is_some() => {
            let (target, value) = (expr(&binary.left, errors), expr(&binary.right, errors));
            StmtKind::Assign {
                target: target?,
                op: compound_op(&binary.op),
                value: value?,
            }
        }
        syn::Expr::Break(b) => {
            reject_label_use(b.label.as_ref(), errors);
            if let Some(value) = &b.expr {
                errors.spanned(value, "`break` with a value is not supported in kernels; assign to a `let mut` before breaking");
            }
            StmtKind::Break
        }
        syn::Expr::Continue(c) => {
            reject_label_use(c.label.as_ref(), errors);
            StmtKind::Continue
        }
        syn::Expr::Return(r) => StmtKind::Return(match &r.expr {
            Some(value) => Some(expr(value, errors)?),
            None => None,
        }),
        other => StmtKind::Expr(expr(other, errors)?),
    };
    Some(Stmt { kind, span })
}

/// A match arm body in statement position: a block or a single expression statement.
fn arm_block(body: &syn::Expr, errors: &mut Errors) -> ir::Block {
    match body {
        syn::Expr::Block(b) if b.label.is_none() => block(&b.block, errors),
        other => expr_stmt(other, errors).into_iter().collect(),
    }
}

fn if_stmt(if_expr: &syn::ExprIf, errors: &mut Errors) -> Option<StmtKind> {
    let cond = expr(&if_expr.cond, errors);
    let then = block(&if_expr.then_branch, errors);
    let otherwise = match &if_expr.else_branch {
        None => None,
        Some((_, else_expr)) => match &**else_expr {
            syn::Expr::Block(b) => Some(block(&b.block, errors)),
            syn::Expr::If(nested) => {
                let _nesting = Nesting::else_if(nested, errors)?;
                let span = Span::of(nested);
                Some(vec![Stmt {
                    kind: if_stmt(nested, errors)?,
                    span,
                }])
            }
            other => {
                errors.spanned(other, "expected a block after `else`");
                None
            }
        },
    };
    Some(StmtKind::If {
        cond: cond?,
        then,
        otherwise,
    })
}

fn for_stmt(for_loop: &syn::ExprForLoop, errors: &mut Errors) -> Option<ir::ForLoop> {
    reject_label(for_loop.label.as_ref(), errors);
    let unroll = for_loop.attrs.iter().any(|a| a.path().is_ident(UNROLL));
    for attr in for_loop.attrs.iter().filter(|a| !a.path().is_ident(UNROLL)) {
        errors.spanned(attr, "unknown loop attribute; loops accept `#[unroll]`");
    }
    let var = match &*for_loop.pat {
        syn::Pat::Ident(ident) if ident.by_ref.is_none() && ident.mutability.is_none() => {
            ident.ident.clone()
        }
        syn::Pat::Wild(wild) => syn::Ident::new("_", wild.underscore_token.span),
        other => {
            errors.spanned(other, "a `for` loop binds one name: `for i in 0..n`");
            return None;
        }
    };
    let usage = "`for` loops run over ranges: `a..b`, `a..=b`, with `.rev()`, `.step_by(s)` or \
                 both: `(a..b).rev().step_by(s)`, `(a..b).step_by(s).rev()`";
    // The adapters from the outside in; each may appear once.
    let mut iter = &*for_loop.expr;
    let mut adapters = Vec::new();
    while let syn::Expr::MethodCall(call) = iter {
        let known = matches!(
            (call.method.to_string().as_str(), call.args.len()),
            ("rev", 0) | ("step_by", 1)
        );
        if !known
            || adapters
                .iter()
                .any(|c: &&syn::ExprMethodCall| c.method == call.method)
        {
            errors.spanned(&call.method, usage);
            return None;
        }
        adapters.push(call);
        iter = &call.receiver;
    }
    let reversed = adapters.iter().any(|c| c.method == "rev");
    let step = match adapters.iter().find(|c| c.method == "step_by") {
        Some(call) => Some(expr(&call.args[0], errors)?),
        None => None,
    };
    // `.step_by(s).rev()`: `rev` is the outer adapter.
    let steps_from_start = reversed && step.is_some() && adapters[0].method == "rev";
    while let syn::Expr::Paren(inner) = iter {
        iter = &inner.expr;
    }
    let syn::Expr::Range(range) = iter else {
        errors.spanned(iter, usage);
        return None;
    };
    let (Some(start), Some(end)) = (&range.start, &range.end) else {
        errors.spanned(range, "a loop range needs both ends: `a..b`");
        return None;
    };
    let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
    if steps_from_start && inclusive {
        errors.spanned(
            &for_loop.expr,
            "Rust cannot reverse a stepped inclusive range (`(a..=b).step_by(s).rev()` does not \
             compile for `u32` or `i32`); write `(a..b + 1).step_by(s).rev()`",
        );
        return None;
    }
    let (start, end) = (expr(start, errors), expr(end, errors));
    Some(ir::ForLoop {
        var,
        local: ir::LocalId::default(),
        ty: Ty::Unknown,
        start: start?,
        end: end?,
        inclusive,
        reversed,
        steps_from_start,
        step,
        body: block(&for_loop.body, errors),
        unroll,
    })
}

fn reject_label(label: Option<&syn::Label>, errors: &mut Errors) {
    if let Some(label) = label {
        errors.spanned(
            label,
            "loop labels are not supported in kernels; use a flag and `break`",
        );
    }
}

fn reject_label_use(label: Option<&syn::Lifetime>, errors: &mut Errors) {
    if let Some(label) = label {
        errors.spanned(
            label,
            "loop labels are not supported in kernels; use a flag and `break`",
        );
    }
}

fn match_arm<T>(
    arm: &syn::Arm,
    errors: &mut Errors,
    body: impl FnOnce(&syn::Expr, &mut Errors) -> Option<T>,
) -> Option<ir::MatchArm<T>> {
    if let Some((_, guard)) = &arm.guard {
        errors.spanned(
            guard,
            "match guards are not supported in kernels; use `if` inside the arm",
        );
    }
    let mut values = Vec::new();
    pattern_values(&arm.pat, &mut values, errors);
    Some(ir::MatchArm {
        values,
        body: body(&arm.body, errors)?,
        span: Span::of(arm),
    })
}

/// Collects the integer values of a pattern; `_` adds none.
fn pattern_values(pat: &syn::Pat, values: &mut Vec<(i64, Span)>, errors: &mut Errors) {
    let usage = "match arms take integer literals (`0`, `1 | 2`, `-1`) or `_`";
    match pat {
        syn::Pat::Wild(_) => {}
        syn::Pat::Or(or) => or
            .cases
            .iter()
            .for_each(|case| pattern_values(case, values, errors)),
        syn::Pat::Lit(lit) => match int_pattern(&lit.lit) {
            Some(value) => values.push((value, Span::of(lit))),
            None => errors.spanned(lit, usage),
        },
        syn::Pat::Paren(inner) => pattern_values(&inner.pat, values, errors),
        other => errors.spanned(other, usage),
    }
}

fn int_pattern(lit: &syn::Lit) -> Option<i64> {
    let syn::Lit::Int(int) = lit else { return None };
    int.base10_parse().ok()
}

fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => BinOp::Add,
        syn::BinOp::SubAssign(_) => BinOp::Sub,
        syn::BinOp::MulAssign(_) => BinOp::Mul,
        syn::BinOp::DivAssign(_) => BinOp::Div,
        syn::BinOp::RemAssign(_) => BinOp::Rem,
        syn::BinOp::BitAndAssign(_) => BinOp::BitAnd,
        syn::BinOp::BitOrAssign(_) => BinOp::BitOr,
        syn::BinOp::BitXorAssign(_) => BinOp::BitXor,
        syn::BinOp::ShlAssign(_) => BinOp::Shl,
        syn::BinOp::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}

fn binary_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::Add(_) => BinOp::Add,
        syn::BinOp::Sub(_) => BinOp::Sub,
        syn::BinOp::Mul(_) => BinOp::Mul,
        syn::BinOp::Div(_) => BinOp::Div,
        syn::BinOp::Rem(_) => BinOp::Rem,
        syn::BinOp::And(_) => BinOp::And,
        syn::BinOp::Or(_) => BinOp::Or,
        syn::BinOp::BitAnd(_) => BinOp::BitAnd,
        syn::BinOp::BitOr(_) => BinOp::BitOr,
        syn::BinOp::BitXor(_) => BinOp::BitXor,
        syn::BinOp::Shl(_) => BinOp::Shl,
        syn::BinOp::Shr(_) => BinOp::Shr,
        syn::BinOp::Eq(_) => BinOp::Eq,
        syn::BinOp::Lt(_) => BinOp::Lt,
        syn::BinOp::Le(_) => BinOp::Le,
        syn::BinOp::Ne(_) => BinOp::Ne,
        syn::BinOp::Ge(_) => BinOp::Ge,
        syn::BinOp::Gt(_) => BinOp::Gt,
        _ => return None,
    })
}

/// An expression used as a value.
pub fn expr(e: &syn::Expr, errors: &mut Errors) -> Option<Expr> {
    let _nesting = Nesting::expr(e, errors)?;
    let span = Span::of(e);
    let kind = match e {
        syn::Expr::Lit(lit) => return literal(&lit.lit, errors),
        syn::Expr::Paren(inner) => return expr(&inner.expr, errors),
        syn::Expr::Group(inner) => return expr(&inner.expr, errors),
        syn::Expr::Path(path) => match path.path.get_ident() {
            Some(ident) if path.qself.is_none() => ExprKind::Path(ident.clone(), None),
            _ if path.qself.is_none() => return associated_const(path, errors),
            _ => {
                errors.spanned(
                    path,
                    "paths are not supported in kernels; name a local, a parameter or a helper",
                );
                return None;
            }
        },
        syn::Expr::Field(field) => {
            let base = expr(&field.base, errors)?;
            match &field.member {
                syn::Member::Named(name) => ExprKind::Field(Box::new(base), name.clone()),
                syn::Member::Unnamed(index) => {
                    errors.spanned(index, "tuple fields are not supported in kernels; use `.x`, `.y`, `.z`, `.w` on vectors");
                    return None;
                }
            }
        }
        syn::Expr::Index(index) => {
            let (base, at) = (expr(&index.expr, errors), expr(&index.index, errors));
            ExprKind::Index(Box::new(base?), Box::new(at?))
        }
        syn::Expr::Unary(unary) => {
            let op = match unary.op {
                syn::UnOp::Neg(_) => UnOp::Neg,
                syn::UnOp::Not(_) => UnOp::Not,
                // `*s` of a workgroup value (`#[workgroup] s: &mut f32`) is `s`, as WGSL
                // writes it.
                syn::UnOp::Deref(_) if deref_name(&unary.expr).is_some() => {
                    let name = deref_name(&unary.expr)?;
                    return Some(Expr::new(
                        ExprKind::Path(name.clone(), None),
                        Span::of(unary),
                    ));
                }
                _ => {
                    errors.spanned(
                        unary.op,
                        "dereferencing is not supported in kernels; values are used directly",
                    );
                    return None;
                }
            };
            ExprKind::Unary(op, Box::new(expr(&unary.expr, errors)?))
        }
        syn::Expr::Binary(binary) => {
            let Some(op) = binary_op(&binary.op) else {
                errors.spanned(
                    binary,
                    "an assignment is a statement, not a value; put it on its own line",
                );
                return None;
            };
            let (left, right) = (expr(&binary.left, errors), expr(&binary.right, errors));
            ExprKind::Binary(op, Box::new(left?), Box::new(right?))
        }
        syn::Expr::Cast(cast) => {
            let target = ty::value_ty(&cast.ty).map_err(|e| errors.push(e));
            let value = expr(&cast.expr, errors)?;
            ExprKind::Cast(Box::new(value), target.ok()?)
        }
        syn::Expr::Call(call) => {
            let syn::Expr::Path(path) = &*call.func else {
                errors.spanned(
                    &call.func,
                    "only helpers and builtins can be called in kernels, by name",
                );
                return None;
            };
            if let Some(target) = bitcast_target(&path.path) {
                let target = target.map_err(|e| errors.push(e)).ok()?;
                let Ok([value]) = <[Expr; 1]>::try_from(args(&call.args, errors)?) else {
                    errors.spanned(call, "a bit cast takes one value: `bitcast::<u32>(x)`");
                    return None;
                };
                ExprKind::Bitcast(Box::new(value), target)
            } else {
                if let Some((name, types)) = turbofish(&path.path, errors) {
                    let types = types?;
                    ExprKind::GenericCall(name, types, args(&call.args, errors)?)
                } else {
                    let Some(name) = path.path.get_ident() else {
                        errors.spanned(
                            path,
                            "call helpers and builtins by their plain name, or a generic helper \
                             with its element types (`load::<f32>(..)`); the other paths allowed \
                             are `bitcast::<T>(x)` and `f32::from_bits(x)`",
                        );
                        return None;
                    };
                    ExprKind::Call(name.clone(), args(&call.args, errors)?)
                }
            }
        }
        syn::Expr::MethodCall(call) => {
            if let Some(turbofish) = &call.turbofish {
                errors.spanned(
                    turbofish,
                    "turbofish is not supported in kernels; annotate the `let` instead",
                );
            }
            let receiver = expr(&call.receiver, errors)?;
            let mut arguments: Vec<&syn::Expr> = call.args.iter().collect();
            if ATOMIC_METHODS.contains(&call.method.to_string().as_str()) {
                drop_relaxed_ordering(&mut arguments, errors);
            }
            ExprKind::Method(
                Box::new(receiver),
                call.method.clone(),
                args(arguments, errors)?,
            )
        }
        syn::Expr::If(if_expr) => {
            let Some((_, else_branch)) = &if_expr.else_branch else {
                errors.spanned(if_expr, "an `if` used as a value needs an `else` branch");
                return None;
            };
            let cond = expr(&if_expr.cond, errors);
            let then = value_block(&if_expr.then_branch, errors);
            let otherwise = else_value(else_branch, errors);
            ExprKind::If(Box::new(cond?), Box::new(then?), Box::new(otherwise?))
        }
        syn::Expr::Match(m) => {
            let scrutinee = expr(&m.expr, errors)?;
            let arms = m
                .arms
                .iter()
                .filter_map(|arm| match_arm(arm, errors, arm_value))
                .collect();
            ExprKind::Match(Box::new(scrutinee), arms)
        }
        syn::Expr::Block(b) if b.label.is_none() => {
            ExprKind::Block(Box::new(value_block(&b.block, errors)?))
        }
        syn::Expr::Array(array) => ExprKind::Array(args(&array.elems, errors)?),
        syn::Expr::Repeat(repeat) => {
            let len = ty::array_len(&repeat.len).map_err(|e| errors.push(e));
            ExprKind::Repeat(Box::new(expr(&repeat.expr, errors)?), len.ok()?)
        }
        syn::Expr::Reference(reference) => ExprKind::Ref(
            reference.mutability.is_some(),
            Box::new(expr(&reference.expr, errors)?),
        ),
        syn::Expr::Closure(_) => {
            errors.spanned(
                e,
                "closures are not supported in kernels; define a helper function beside the kernel",
            );
            return None;
        }
        other => {
            errors.spanned(
                other,
                format!("{} not supported in kernels; {}", describe(other), SUBSET),
            );
            return None;
        }
    };
    Some(Expr::new(kind, span))
}

/// Methods of atomics, whose Rust spelling takes a trailing `Ordering`.
pub const ATOMIC_METHODS: [&str; 10] = [
    "load",
    "store",
    "fetch_add",
    "fetch_sub",
    "fetch_max",
    "fetch_min",
    "fetch_and",
    "fetch_or",
    "fetch_xor",
    "swap",
];

/// WGSL atomics are relaxed: accept `Ordering::Relaxed` as the last argument and drop it.
fn drop_relaxed_ordering(arguments: &mut Vec<&syn::Expr>, errors: &mut Errors) {
    let Some(syn::Expr::Path(path)) = arguments.last() else {
        return;
    };
    let (Some(last), Some(ordering)) = (
        path.path.segments.last(),
        path.path.segments.iter().rev().nth(1),
    ) else {
        return;
    };
    if ordering.ident != "Ordering" {
        return;
    }
    if last.ident != "Relaxed" {
        errors.spanned(
            path,
            "WGSL atomics are relaxed; write `Ordering::Relaxed` or leave the ordering out",
        );
    }
    arguments.pop();
}

const SUBSET: &str = "kernels accept literals, locals, arithmetic, comparisons, `as` casts, \
                      indexing, fields, calls of helpers and builtins, math methods, `if`, `match` \
                      and blocks as values";

fn describe(e: &syn::Expr) -> &'static str {
    match e {
        syn::Expr::Async(_) | syn::Expr::Await(_) => "async code is",
        syn::Expr::Macro(_) => "macros are",
        syn::Expr::Struct(_) => "struct literals are",
        syn::Expr::Tuple(_) => "tuples are",
        syn::Expr::Range(_) => "ranges outside `for` loops are",
        syn::Expr::Try(_) => "the `?` operator is",
        syn::Expr::Unsafe(_) => "unsafe blocks are",
        syn::Expr::Let(_) => "`let` conditions are",
        _ => "this expression is",
    }
}

fn else_value(else_branch: &syn::Expr, errors: &mut Errors) -> Option<ir::BlockExpr> {
    match else_branch {
        syn::Expr::Block(b) => value_block(&b.block, errors),
        nested @ syn::Expr::If(_) => Some(ir::BlockExpr {
            stmts: Vec::new(),
            tail: expr(nested, errors)?,
        }),
        other => {
            errors.spanned(other, "expected a block after `else`");
            None
        }
    }
}

fn arm_value(body: &syn::Expr, errors: &mut Errors) -> Option<ir::BlockExpr> {
    match body {
        syn::Expr::Block(b) if b.label.is_none() => value_block(&b.block, errors),
        other => Some(ir::BlockExpr {
            stmts: Vec::new(),
            tail: expr(other, errors)?,
        }),
    }
}

fn args<'a>(
    list: impl IntoIterator<Item = &'a syn::Expr>,
    errors: &mut Errors,
) -> Option<Vec<Expr>> {
    let converted: Vec<Option<Expr>> = list.into_iter().map(|a| expr(a, errors)).collect();
    converted.into_iter().collect()
}

/// `u32::MAX`, `i32::MIN`, `f32::EPSILON`, `f32::consts::PI` (also under `std::` or `core::`)
/// as literals.
fn associated_const(path: &syn::ExprPath, errors: &mut Errors) -> Option<Expr> {
    let span = Span::of(path);
    let names: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .skip_while(|s| s == "std" || s == "core")
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let typed = |kind: ExprKind, ty: Ty| Expr { kind, span, ty };
    let int = |value: u64, ty: Ty| typed(ExprKind::Int(value), ty);
    let float = |value: f64| typed(ExprKind::Float(value), Ty::F32);
    let negated = |e: Expr| Expr::new(ExprKind::Unary(UnOp::Neg, Box::new(e)), span);
    let value = match names[..] {
        ["u32", "MAX"] => int(u32::MAX.into(), Ty::U32),
        ["u32", "MIN"] => int(0, Ty::U32),
        ["i32", "MAX"] => int(i32::MAX as u64, Ty::I32),
        ["i32", "MIN"] => negated(int(1 << 31, Ty::I32)),
        ["f32", "MAX"] => float(f32::MAX.into()),
        ["f32", "MIN"] => negated(float(f32::MAX.into())),
        ["f32", "MIN_POSITIVE"] => float(f32::MIN_POSITIVE.into()),
        ["f32", "EPSILON"] => float(f32::EPSILON.into()),
        ["f32", "INFINITY" | "NEG_INFINITY" | "NAN"] => {
            errors.spanned(
                path,
                "WGSL has no infinite or NaN constants; use `f32::MAX` or `f32::MIN` as a bound",
            );
            return None;
        }
        ["f32", "consts", name] => match float_const(name) {
            Some(value) => float(value),
            None => {
                errors.spanned(
                    path,
                    format!("`{name}` is not a constant of `f32::consts` that kernels know"),
                );
                return None;
            }
        },
        _ => {
            errors.spanned(
                path,
                "paths are not supported in kernels; name a local, a parameter, a helper or a \
                 constant of the module, or one of `u32::MAX`, `i32::MIN`, `f32::EPSILON`, \
                 `f32::consts::PI` and the like",
            );
            return None;
        }
    };
    Some(value)
}

fn float_const(name: &str) -> Option<f64> {
    use std::f32::consts as c;
    let value = match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "SQRT_2" => c::SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        _ => return None,
    };
    Some(value.into())
}

fn literal(lit: &syn::Lit, errors: &mut Errors) -> Option<Expr> {
    let span = Span::of(lit);
    let (kind, ty) = match lit {
        syn::Lit::Int(int) => {
            let Ok(value) = int.base10_parse::<u64>() else {
                errors.spanned(
                    int,
                    "this literal does not fit in any integer type of kernels (`u32` holds up \
                     to 4294967295)",
                );
                return None;
            };
            match int.suffix() {
                "" => (ExprKind::Int(value), Ty::Unknown),
                "f32" => (ExprKind::Float(value as f64), Ty::F32),
                suffix => match ty::scalar(suffix) {
                    Some(s) if s.is_integer() => (ExprKind::Int(value), Ty::Scalar(s)),
                    _ => {
                        errors.spanned(int, format!("`{suffix}` literals are not supported in kernels; use `u32`, `i32` or `f32`"));
                        return None;
                    }
                },
            }
        }
        syn::Lit::Float(float) => {
            let value = float
                .base10_parse::<f64>()
                .map_err(|e| errors.push(e))
                .ok()?;
            match float.suffix() {
                "" => (ExprKind::Float(value), Ty::Unknown),
                "f32" => (ExprKind::Float(value), Ty::F32),
                "f16" => (ExprKind::Float(value), Ty::Scalar(crate::ir::Scalar::F16)),
                suffix => {
                    errors.spanned(
                        float,
                        format!("`{suffix}` literals are not supported in kernels; use `f32`"),
                    );
                    return None;
                }
            }
        }
        syn::Lit::Bool(b) => (ExprKind::Bool(b.value), Ty::BOOL),
        other => {
            errors.spanned(
                other,
                "only number and `bool` literals are supported in kernels",
            );
            return None;
        }
    };
    Some(Expr { kind, span, ty })
}

/// The target type of `bitcast::<T>(..)` or `f32::from_bits(..)`, if `path` is one of them.
fn bitcast_target(path: &syn::Path) -> Option<syn::Result<ir::Ty>> {
    let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
    match &segments[..] {
        [only] if only.ident == "bitcast" => Some(match &only.arguments {
            syn::PathArguments::AngleBracketed(args) => {
                match &args.args.iter().collect::<Vec<_>>()[..] {
                    [syn::GenericArgument::Type(ty)] => ty::value_ty(ty),
                    _ => Err(syn::Error::new_spanned(
                        args,
                        "name one target type: `bitcast::<u32>(x)`",
                    )),
                }
            }
            _ => Err(syn::Error::new_spanned(
                only,
                "name the target type: `bitcast::<u32>(x)`",
            )),
        }),
        [ty, function]
            if ty.ident == "f32" && function.ident == "from_bits" && ty.arguments.is_none() =>
        {
            Some(Ok(ir::Ty::F32))
        }
        _ => None,
    }
}

/// The name under `*` in `*name`.
fn deref_name(e: &syn::Expr) -> Option<&syn::Ident> {
    match e {
        syn::Expr::Path(path) if path.qself.is_none() => path.path.get_ident(),
        syn::Expr::Paren(inner) => deref_name(&inner.expr),
        _ => None,
    }
}

/// The name and element types of `name::<A, B>`, a call that names a generic helper's types:
/// `None` for any other path; the types `None` where one is no type (reported).
fn turbofish(path: &syn::Path, errors: &mut Errors) -> Option<(syn::Ident, Option<Vec<Ty>>)> {
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let syn::PathArguments::AngleBracketed(generics) = &segment.arguments else {
        return None;
    };
    if path.leading_colon.is_some() || segment.ident == "bitcast" {
        return None;
    }
    let types = generics
        .args
        .iter()
        .map(|arg| match arg {
            syn::GenericArgument::Type(ty) => ty::value_ty(ty).map_err(|e| errors.push(e)).ok(),
            other => {
                errors.spanned(
                    other,
                    "a generic helper takes element types (`load::<Vec4<f32>>(..)`)",
                );
                None
            }
        })
        .collect();
    Some((segment.ident.clone(), types))
}
