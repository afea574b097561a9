//! Walks over bodies: read-only visits of every expression, mutable visits of every statement
//! and expression for the passes that rewrite the IR, and the questions asked of a block's
//! exits (`break`, `continue`, `return`).

use super::{Block, BlockExpr, Expr, ExprKind, Stmt, StmtKind};

/// Whether `block` holds a `break`, `continue` or `return` anywhere. Only a branch without one
/// may be dropped for a constant condition: a loop whose only exit sat in a dropped branch
/// would have none left, which WGSL rejects (Rust accepts `loop { if false { break; } }`).
pub fn leaves(block: &Block) -> bool {
    let exit = |kind: &StmtKind| {
        matches!(
            kind,
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)
        )
    };
    holds(block, &exit, true)
}

/// Whether `block` holds a `break` of the loop around it (one not inside a loop of its own).
/// Lowered inside a WGSL `switch`, such a `break` would leave only the `switch`. (Those in
/// value blocks inside a nested loop count as well, which only costs a `switch` where one
/// would do.)
pub fn breaks_out(block: &Block) -> bool {
    holds(block, &|kind| matches!(kind, StmtKind::Break), false)
}

/// Whether `block` holds a statement `wanted` picks, in its statements (in nested loops only
/// `into_loops`) or in the value blocks of any of its expressions.
fn holds(block: &Block, wanted: &impl Fn(&StmtKind) -> bool, into_loops: bool) -> bool {
    let inner = |body: &Block| holds(body, wanted, into_loops);
    let own = block.iter().any(|stmt| match &stmt.kind {
        kind if wanted(kind) => true,
        StmtKind::If {
            then, otherwise, ..
        } => inner(then) || otherwise.as_ref().is_some_and(inner),
        StmtKind::Block(body) => inner(body),
        StmtKind::Match { arms, .. } => arms.iter().any(|arm| inner(&arm.body)),
        StmtKind::For(l) => into_loops && inner(&l.body),
        StmtKind::While { body, .. } | StmtKind::Loop(body) => into_loops && inner(body),
        _ => false,
    });
    let mut in_values = false;
    visit_exprs(block, &mut |e| match &e.kind {
        ExprKind::Block(b) => in_values |= inner(&b.stmts),
        ExprKind::If(_, a, b) => in_values |= inner(&a.stmts) || inner(&b.stmts),
        ExprKind::Match(_, arms) => in_values |= arms.iter().any(|arm| inner(&arm.body.stmts)),
        _ => {}
    });
    own || in_values
}

/// Calls `f` on every expression of `block`, outer before inner (used by analyses that only
/// look, such as finding the builtins a kernel uses).
pub fn visit_exprs(block: &Block, f: &mut impl FnMut(&Expr)) {
    for stmt in block {
        match &stmt.kind {
            StmtKind::Let { init, .. } => init.iter().for_each(|e| visit_expr(e, f)),
            StmtKind::Assign { target, value, .. } => {
                visit_expr(target, f);
                visit_expr(value, f);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => visit_expr(e, f),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                visit_expr(cond, f);
                visit_exprs(then, f);
                otherwise.iter().for_each(|b| visit_exprs(b, f));
            }
            StmtKind::For(l) => {
                visit_expr(&l.start, f);
                visit_expr(&l.end, f);
                l.step.iter().for_each(|e| visit_expr(e, f));
                visit_exprs(&l.body, f);
            }
            StmtKind::While { cond, body } => {
                visit_expr(cond, f);
                visit_exprs(body, f);
            }
            StmtKind::Loop(body) | StmtKind::Block(body) => visit_exprs(body, f),
            StmtKind::Match { scrutinee, arms } => {
                visit_expr(scrutinee, f);
                arms.iter().for_each(|arm| visit_exprs(&arm.body, f));
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }
}

fn visit_block_expr(block: &BlockExpr, f: &mut impl FnMut(&Expr)) {
    visit_exprs(&block.stmts, f);
    visit_expr(&block.tail, f);
}

pub fn visit_expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Field(a, _)
        | ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Bitcast(a, _)
        | ExprKind::Ref(_, a)
        | ExprKind::Repeat(a, _) => visit_expr(a, f),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            visit_expr(a, f);
            visit_expr(b, f);
        }
        ExprKind::Call(_, args)
        | ExprKind::GenericCall(_, _, args)
        | ExprKind::Builtin(_, args)
        | ExprKind::Array(args) => args.iter().for_each(|a| visit_expr(a, f)),
        ExprKind::Method(receiver, _, args) => {
            visit_expr(receiver, f);
            args.iter().for_each(|a| visit_expr(a, f));
        }
        ExprKind::If(cond, a, b) => {
            visit_expr(cond, f);
            visit_block_expr(a, f);
            visit_block_expr(b, f);
        }
        ExprKind::Match(scrutinee, arms) => {
            visit_expr(scrutinee, f);
            arms.iter().for_each(|arm| visit_block_expr(&arm.body, f));
        }
        ExprKind::Block(block) => visit_block_expr(block, f),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => {}
    }
}

/// A node of a mutable walk (see [`visit_block_mut`]).
pub enum NodeMut<'a> {
    Stmt(&'a mut Stmt),
    Expr(&'a mut Expr),
}

/// Calls `f` on every statement and expression of `block`, each before its parts (used by
/// passes that rewrite the IR: type finishing, specialization).
pub fn visit_block_mut(block: &mut Block, f: &mut impl FnMut(NodeMut<'_>)) {
    for stmt in block {
        f(NodeMut::Stmt(stmt));
        match &mut stmt.kind {
            StmtKind::Let { init, .. } => init.iter_mut().for_each(|e| visit_expr_mut(e, f)),
            StmtKind::Assign { target, value, .. } => {
                visit_expr_mut(target, f);
                visit_expr_mut(value, f);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => visit_expr_mut(e, f),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                visit_expr_mut(cond, f);
                visit_block_mut(then, f);
                otherwise.iter_mut().for_each(|b| visit_block_mut(b, f));
            }
            StmtKind::For(l) => {
                visit_expr_mut(&mut l.start, f);
                visit_expr_mut(&mut l.end, f);
                l.step.iter_mut().for_each(|e| visit_expr_mut(e, f));
                visit_block_mut(&mut l.body, f);
            }
            StmtKind::While { cond, body } => {
                visit_expr_mut(cond, f);
                visit_block_mut(body, f);
            }
            StmtKind::Loop(body) | StmtKind::Block(body) => visit_block_mut(body, f),
            StmtKind::Match { scrutinee, arms } => {
                visit_expr_mut(scrutinee, f);
                arms.iter_mut()
                    .for_each(|arm| visit_block_mut(&mut arm.body, f));
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }
}

fn visit_expr_mut(e: &mut Expr, f: &mut dyn FnMut(NodeMut<'_>)) {
    f(NodeMut::Expr(e));
    children_mut(e, &mut |child| match child {
        Child::Expr(child) => visit_expr_mut(child, f),
        Child::Block(block) => {
            visit_block_mut(&mut block.stmts, &mut |node| f(node));
            visit_expr_mut(&mut block.tail, f);
        }
    });
}

/// A direct sub-expression or value block of an expression.
pub enum Child<'a> {
    Expr(&'a mut Expr),
    Block(&'a mut BlockExpr),
}

/// Calls `visit` on each direct sub-expression and value block of `e`.
pub fn children_mut(e: &mut Expr, visit: &mut impl FnMut(Child<'_>)) {
    let mut expr = |e: &mut Expr| visit(Child::Expr(e));
    match &mut e.kind {
        ExprKind::Field(a, _)
        | ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Bitcast(a, _)
        | ExprKind::Ref(_, a)
        | ExprKind::Repeat(a, _) => expr(a),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            expr(a);
            expr(b);
        }
        ExprKind::Call(_, args)
        | ExprKind::GenericCall(_, _, args)
        | ExprKind::Builtin(_, args)
        | ExprKind::Array(args) => args.iter_mut().for_each(expr),
        ExprKind::Method(receiver, _, args) => {
            expr(receiver);
            args.iter_mut().for_each(expr);
        }
        ExprKind::If(cond, a, b) => {
            expr(cond);
            visit(Child::Block(a));
            visit(Child::Block(b));
        }
        ExprKind::Match(scrutinee, arms) => {
            expr(scrutinee);
            arms.iter_mut()
                .for_each(|arm| visit(Child::Block(&mut arm.body)));
        }
        ExprKind::Block(b) => visit(Child::Block(b)),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => {}
    }
}
