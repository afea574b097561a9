//! Constant folding over checked IR: literal arithmetic in the literal's type, identities
//! (`x * 1`, `x / 1`, `x % 1`, `x + 0`), boolean short-cuts, and branches whose condition is
//! known. Types are already resolved, so folding never changes one.

use crate::ir::eval::{self, Problem, Value};
use crate::ir::*;

/// Calls `f` on every expression of `block`, outer expressions first.
pub fn rewrite_block(block: &mut Block, f: &mut impl FnMut(&mut Expr)) {
    visit_block_mut(block, &mut |node| {
        if let NodeMut::Expr(e) = node {
            f(e)
        }
    });
}

/// Folds every expression and statement of `block`.
pub fn fold_block(block: &mut Block) {
    let stmts = std::mem::take(block);
    for mut stmt in stmts {
        fold_stmt_exprs(&mut stmt);
        block.extend(simplify(stmt));
    }
}

fn fold_stmt_exprs(stmt: &mut Stmt) {
    match &mut stmt.kind {
        StmtKind::Let { init, .. } => init.iter_mut().for_each(fold),
        StmtKind::Assign { target, value, .. } => {
            fold(target);
            fold(value);
        }
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => fold(e),
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            fold(cond);
            fold_block(then);
            otherwise.iter_mut().for_each(fold_block);
        }
        StmtKind::For(l) => {
            fold(&mut l.start);
            fold(&mut l.end);
            l.step.iter_mut().for_each(fold);
            fold_block(&mut l.body);
        }
        StmtKind::While { cond, body } => {
            fold(cond);
            fold_block(body);
        }
        StmtKind::Loop(body) | StmtKind::Block(body) => fold_block(body),
        StmtKind::Match { scrutinee, arms } => {
            fold(scrutinee);
            arms.iter_mut().for_each(|arm| fold_block(&mut arm.body));
        }
        StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
    }
}

/// Drops or flattens a statement whose condition is known.
fn simplify(stmt: Stmt) -> Option<Stmt> {
    let span = stmt.span;
    let block = |body: Block| {
        Some(Stmt {
            kind: StmtKind::Block(body),
            span,
        })
    };
    match stmt.kind {
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => match cond.kind {
            // A dropped branch holding a loop's exit stays: a loop whose only exit sat in it
            // would have none left, which WGSL rejects.
            ExprKind::Bool(true) if !otherwise.as_ref().is_some_and(leaves) => block(then),
            ExprKind::Bool(false) if !leaves(&then) => otherwise.and_then(block),
            _ => Some(Stmt {
                kind: StmtKind::If {
                    cond,
                    then,
                    otherwise,
                },
                span,
            }),
        },
        StmtKind::While { cond, .. } if matches!(cond.kind, ExprKind::Bool(false)) => None,
        StmtKind::Match { scrutinee, arms } => match constant(&scrutinee) {
            Some(Const::Int(value)) => {
                let arm = arms
                    .iter()
                    .position(|arm| arm.values.iter().any(|(v, _)| i128::from(*v) == value))
                    .or_else(|| arms.iter().position(|arm| arm.values.is_empty()));
                let dropped_leaves = arms
                    .iter()
                    .enumerate()
                    .any(|(i, other)| Some(i) != arm && leaves(&other.body));
                if dropped_leaves {
                    return Some(Stmt {
                        kind: StmtKind::Match { scrutinee, arms },
                        span,
                    });
                }
                arm.and_then(|i| arms.into_iter().nth(i))
                    .and_then(|arm| block(arm.body))
            }
            _ => Some(Stmt {
                kind: StmtKind::Match { scrutinee, arms },
                span,
            }),
        },
        kind => Some(Stmt { kind, span }),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Const {
    Int(i128),
    Bool(bool),
}

fn constant(e: &Expr) -> Option<Const> {
    match &e.kind {
        ExprKind::Int(v) => Some(Const::Int(i128::from(*v))),
        ExprKind::Bool(b) => Some(Const::Bool(*b)),
        ExprKind::Unary(UnOp::Neg, inner) => match inner.kind {
            ExprKind::Int(v) => Some(Const::Int(-i128::from(v))),
            _ => None,
        },
        _ => None,
    }
}

/// An integer literal of type `ty` holding `value` (wrapped into the type's range).
fn int_expr(value: i128, ty: &Ty, span: Span) -> Option<Expr> {
    let value = match ty {
        Ty::Scalar(Scalar::U32) => i128::from(value as u32),
        Ty::Scalar(Scalar::I32) => i128::from(value as i32),
        _ => return None,
    };
    let literal = Expr {
        kind: ExprKind::Int(value.unsigned_abs() as u64),
        span,
        ty: ty.clone(),
    };
    Some(if value < 0 {
        Expr {
            kind: ExprKind::Unary(UnOp::Neg, Box::new(literal)),
            span,
            ty: ty.clone(),
        }
    } else {
        literal
    })
}

/// Folds `e` bottom-up.
fn fold(e: &mut Expr) {
    children_mut(e, &mut |child| match child {
        Child::Expr(child) => fold(child),
        Child::Block(block) => {
            fold_block(&mut block.stmts);
            fold(&mut block.tail);
        }
    });
    if let Some(folded) = folded(e) {
        *e = folded;
    }
}

fn folded(e: &Expr) -> Option<Expr> {
    let span = e.span;
    match &e.kind {
        ExprKind::Binary(op, a, b) => binary(*op, a, b, &e.ty, span),
        ExprKind::Unary(UnOp::Not, a) => match constant(a)? {
            Const::Bool(v) => Some(Expr {
                kind: ExprKind::Bool(!v),
                span,
                ty: Ty::BOOL,
            }),
            Const::Int(_) => None,
        },
        ExprKind::Cast(a, target) => match (constant(a)?, target) {
            (Const::Int(v), Ty::Scalar(Scalar::U32 | Scalar::I32)) => int_expr(v, target, span),
            (Const::Int(v), Ty::Scalar(Scalar::F32)) => Some(Expr {
                kind: ExprKind::Float(v as f64),
                span,
                ty: Ty::F32,
            }),
            _ => None,
        },
        ExprKind::If(cond, then, otherwise) => match constant(cond)? {
            Const::Bool(true) if !leaves(&otherwise.stmts) => Some(Expr {
                kind: ExprKind::Block(then.clone()),
                span,
                ty: e.ty.clone(),
            }),
            Const::Bool(false) if !leaves(&then.stmts) => Some(Expr {
                kind: ExprKind::Block(otherwise.clone()),
                span,
                ty: e.ty.clone(),
            }),
            _ => None,
        },
        ExprKind::Block(block) if block.stmts.is_empty() => Some(block.tail.clone()),
        _ => None,
    }
}

/// A literal holding an integer or boolean `value`.
fn value_expr(value: Value, span: Span) -> Option<Expr> {
    match value {
        Value::Int(v, scalar) => int_expr(i128::from(v), &Ty::Scalar(scalar), span),
        Value::Bool(b) => Some(Expr {
            kind: ExprKind::Bool(b),
            span,
            ty: Ty::BOOL,
        }),
        Value::Float(..) => None,
    }
}

fn is_float_one(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Float(v) if v == 1.0)
}

fn binary(op: BinOp, a: &Expr, b: &Expr, ty: &Ty, span: Span) -> Option<Expr> {
    let is = |e: &Expr, n: i128| constant(e) == Some(Const::Int(n));
    let boolean = |v: bool| {
        Some(Expr {
            kind: ExprKind::Bool(v),
            span,
            ty: Ty::BOOL,
        })
    };
    match (constant(a), constant(b)) {
        (Some(Const::Int(_)), Some(Const::Int(_))) => {
            // Folded as the general body computes it at run time: an overflow wraps. What WGSL
            // rejects (a zero divisor, a shift past the width) stays, for `check::consts`.
            let none = eval::Locals::default();
            let (x, y) = (eval::value(a, &none)?, eval::value(b, &none)?);
            match eval::binary(op, x, y)? {
                Ok(value) | Err(Problem::Overflow { wrapped: value, .. }) => {
                    value_expr(value, span)
                }
                Err(_) => None,
            }
        }
        (Some(Const::Bool(x)), _) if matches!(op, BinOp::And | BinOp::Or) => match (op, x) {
            (BinOp::And, true) | (BinOp::Or, false) => Some(b.clone()),
            (BinOp::And, false) => boolean(false),
            _ => boolean(true),
        },
        (_, Some(Const::Bool(y))) if matches!(op, BinOp::And | BinOp::Or) => match (op, y) {
            (BinOp::And, true) | (BinOp::Or, false) => Some(a.clone()),
            _ => None,
        },
        _ => match op {
            BinOp::Mul | BinOp::Div if is_float_one(b) => Some(a.clone()),
            BinOp::Mul if is_float_one(a) => Some(b.clone()),
            BinOp::Mul if is(b, 1) => Some(a.clone()),
            BinOp::Mul if is(a, 1) => Some(b.clone()),
            BinOp::Div if is(b, 1) => Some(a.clone()),
            BinOp::Rem if is(b, 1) => int_expr(0, ty, span),
            BinOp::Add if is(b, 0) => Some(a.clone()),
            BinOp::Add if is(a, 0) => Some(b.clone()),
            BinOp::Sub | BinOp::Shl | BinOp::Shr if is(b, 0) => Some(a.clone()),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use crate::tests::wgsl;

    #[test]
    fn specialization_folds_the_value_in() {
        let text = wgsl(quote! {
            mod m {
                #[repr(C)] #[derive(Params)] struct P { stride: u32, n: u32 }
                #[kernel(workgroup = [64], grid = [1], specialize(p.stride == 1))]
                fn k(p: &P, x: &[f32], y: &mut [f32]) {
                    let i = global_id().x;
                    if i % p.stride == 0 && i < p.n {
                        y[i / p.stride] = x[i * p.stride + 0];
                    }
                }
            }
        })
        .unwrap();
        let specialized = &text[text
            .find("fn k_stride1")
            .expect("a specialized entry point")..];
        assert!(specialized.contains("if i < p.n {"), "{specialized}");
        assert!(specialized.contains("y[i] = x[i];"), "{specialized}");
    }

    #[test]
    fn a_body_over_an_element_type_comes_out_as_written_for_each_width() {
        let text = wgsl(quote! {
            mod m {
                #[repr(C)] #[derive(Params)] struct P { n: u32, across: u32 }
                fn first<E>(x: &[E], i: u32, across: bool) -> E::Scalar {
                    let mut v = x[i / E::LANES * 1];
                    if E::LANES > 1 && across {
                        v = v * (2.0 as E);
                    }
                    v[0]
                }
                #[kernel(workgroup = [64], grid = [1])]
                fn k(p: &P, x: &[f32], w: &[Vec4<f32>], y: &mut [f32]) {
                    let i = global_id().x;
                    if i < p.n {
                        y[i] = first(x, i, p.across == 1) + first(w, i, p.across == 1);
                    }
                }
            }
        })
        .unwrap();
        let scalar = &text[text.find("fn first_f32").expect("the scalar copy")..];
        let scalar = &scalar[..scalar.find("\n}").expect("its end")];
        assert!(scalar.contains("x[i]"), "{scalar}");
        assert!(!scalar.contains("1u") && !scalar.contains("if"), "{scalar}");
        let vector = &text[text.find("fn first_vec4_f32").expect("the vector copy")..];
        assert!(vector.contains("if across {"), "{vector}");
    }

    #[test]
    fn a_loop_keeps_its_only_exit_when_the_branch_holding_it_is_dead() {
        let text = wgsl(quote! {
            mod m {
                #[repr(C)] #[derive(Params)] struct P { n: u32 }
                #[kernel(workgroup = [64], grid = [1])]
                fn k(p: &P, y: &mut [u32]) {
                    let mut i = 0u32;
                    loop {
                        i += 1;
                        if i > p.n || 2 < 1 {
                            break;
                        }
                        if 2 < 1 {
                            break;
                        }
                    }
                    y[0] = i;
                }
            }
        })
        .unwrap();
        assert!(text.contains("if i > p.n {"), "{text}");
        assert!(text.contains("if false {"), "{text}");
    }

    #[test]
    fn a_specialization_that_divides_by_zero_is_reported_at_the_division() {
        let errors = wgsl(quote! {
            mod m {
                #[repr(C)] #[derive(Params)] struct P { d: u32, n: u32 }
                #[kernel(workgroup = [64], grid = [1], specialize(p.d == 0))]
                fn k(p: &P, x: &[u32], y: &mut [u32]) {
                    let i = global_id().x;
                    y[i] = x[i] / p.d + (x[i] - p.n);
                }
            }
        })
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "in the variant specialized for `d == 0`, this divides by a constant zero, which \
              WGSL cannot compile (and Rust panics on); divide by a value that is not 0; or drop \
              that specialization"
            ]
        );
    }

    #[test]
    fn folding_wraps_as_the_general_body_does_at_run_time() {
        let text = wgsl(quote! {
            mod m {
                #[repr(C)] #[derive(Params)] struct P { n: u32 }
                #[kernel(workgroup = [64], grid = [1], specialize(p.n == 0))]
                fn k(p: &P, y: &mut [u32]) {
                    y[0] = p.n - 1;
                }
            }
        })
        .unwrap();
        assert!(text.contains("y[0u] = 4294967295u;"), "{text}");
    }
}
