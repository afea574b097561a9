//! The size of a function once its `#[unroll]`ed loops are written out. Each loop is capped at
//! [`MAX_UNROLL`](crate::ir::MAX_UNROLL) iterations, but nested and sequential loops multiply
//! and add up: a 256 x 64 nest writes its body 16384 times, and lowering, naga and the
//! driver's compiler all take time in the size of what comes out. This pass counts the
//! statements and expressions the written-out body holds and reports the loop that takes the
//! function past [`MAX_UNROLLED_SIZE`].

use crate::diag::Errors;
use crate::ir::{Block, BlockExpr, Expr, ExprKind, ForLoop, Span, StmtKind, MAX_UNROLL};

/// The most statements and expressions one function may hold once its `#[unroll]`ed loops are
/// written out.
///
/// The largest kernel of the nn module comes to about 16,600; 65,536 leaves room for register
/// tiles four times that size and keeps the macro, with naga's validation, to about a second.
pub const MAX_UNROLLED_SIZE: u64 = 1 << 16;

/// Reports the first `#[unroll]`ed loop of `body` that takes its written-out size past
/// [`MAX_UNROLLED_SIZE`].
pub fn check(body: &Block, errors: &mut Errors) {
    if let Some((span, message)) = size(body).over {
        errors.at(span, message);
    }
}

/// The statements and expressions of `body` once written out, counted until the budget is
/// passed.
fn size(body: &Block) -> Size {
    let mut size = Size::default();
    size.block(body, 1);
    size
}

#[derive(Default)]
struct Size {
    total: u64,
    /// The unrolled loops around the node being counted, innermost last: the span of each
    /// loop's header and its iterations.
    loops: Vec<(Span, u64)>,
    over: Option<(Span, String)>,
}

impl Size {
    /// Counts `copies` copies of one statement or expression.
    fn add(&mut self, copies: u64) {
        self.total = self.total.saturating_add(copies);
        if self.total <= MAX_UNROLLED_SIZE || self.over.is_some() {
            return;
        }
        let Some(&(span, iterations)) = self.loops.last() else {
            return;
        };
        let outer = copies / iterations.max(1);
        let around = if outer > 1 {
            format!(" inside {outer} copies written out by enclosing `#[unroll]`ed loops")
        } else {
            String::new()
        };
        self.over = Some((
            span,
            format!(
                "`#[unroll]` writes out {iterations} iterations here{around}, which takes this \
                 function past {MAX_UNROLLED_SIZE} statements and expressions once its unrolled \
                 loops are written out; unroll fewer iterations, or remove `#[unroll]` from this \
                 loop or an enclosing one"
            ),
        ));
    }

    fn block(&mut self, block: &Block, copies: u64) {
        for stmt in block {
            if self.over.is_some() {
                return;
            }
            self.add(copies);
            match &stmt.kind {
                StmtKind::Let { init, .. } => init.iter().for_each(|e| self.expr(e, copies)),
                StmtKind::Assign { target, value, .. } => {
                    self.expr(target, copies);
                    self.expr(value, copies);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e, copies),
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    self.expr(cond, copies);
                    self.block(then, copies);
                    otherwise.iter().for_each(|b| self.block(b, copies));
                }
                StmtKind::For(f) => self.for_loop(f, copies),
                StmtKind::While { cond, body } => {
                    self.expr(cond, copies);
                    self.block(body, copies);
                }
                StmtKind::Loop(body) | StmtKind::Block(body) => self.block(body, copies),
                StmtKind::Match { scrutinee, arms } => {
                    self.expr(scrutinee, copies);
                    arms.iter().for_each(|arm| self.block(&arm.body, copies));
                }
                StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
            }
        }
    }

    fn for_loop(&mut self, f: &ForLoop, copies: u64) {
        self.expr(&f.start, copies);
        self.expr(&f.end, copies);
        f.step.iter().for_each(|e| self.expr(e, copies));
        // A loop past `MAX_UNROLL` is reported on its own, and not written out.
        let iterations = f.unroll.then(|| f.unroll_values()).flatten();
        let Some(iterations) = iterations
            .map(|values| values.len() as u64)
            .filter(|&n| n <= MAX_UNROLL)
        else {
            return self.block(&f.body, copies);
        };
        let header = Span {
            first: f.start.span.first,
            last: f.end.span.last,
        };
        self.loops.push((header, iterations));
        self.block(&f.body, copies.saturating_mul(iterations));
        self.loops.pop();
    }

    fn expr(&mut self, e: &Expr, copies: u64) {
        self.add(copies);
        match &e.kind {
            ExprKind::Field(a, _)
            | ExprKind::Unary(_, a)
            | ExprKind::Cast(a, _)
            | ExprKind::Bitcast(a, _)
            | ExprKind::Ref(_, a)
            | ExprKind::Repeat(a, _) => self.expr(a, copies),
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                self.expr(a, copies);
                self.expr(b, copies);
            }
            ExprKind::Call(_, args)
            | ExprKind::GenericCall(_, _, args)
            | ExprKind::Builtin(_, args)
            | ExprKind::Array(args) => args.iter().for_each(|a| self.expr(a, copies)),
            ExprKind::Method(receiver, _, args) => {
                self.expr(receiver, copies);
                args.iter().for_each(|a| self.expr(a, copies));
            }
            ExprKind::If(cond, a, b) => {
                self.expr(cond, copies);
                self.block_expr(a, copies);
                self.block_expr(b, copies);
            }
            ExprKind::Match(scrutinee, arms) => {
                self.expr(scrutinee, copies);
                arms.iter()
                    .for_each(|arm| self.block_expr(&arm.body, copies));
            }
            ExprKind::Block(block) => self.block_expr(block, copies),
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => {}
        }
    }

    fn block_expr(&mut self, block: &BlockExpr, copies: u64) {
        self.block(&block.stmts, copies);
        self.expr(&block.tail, copies);
    }
}
