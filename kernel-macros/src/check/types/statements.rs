//! The statements: `let`s, assignments and compound assignments through the places they write,
//! `if`, `while`, `loop` and `for` (with `#[unroll]`), `match`, `return`, `break` and
//! `continue`.

use super::{place_root, Checker, Deferred, Resolved, NEVER_NEGATIVE};
use crate::ir::*;

impl Checker<'_, '_> {
    pub fn block(&mut self, block: &mut Block) {
        self.scoped(|this| block.iter_mut().for_each(|stmt| this.stmt(stmt)));
    }

    pub(super) fn stmt(&mut self, stmt: &mut Stmt) {
        let span = stmt.span;
        match &mut stmt.kind {
            StmtKind::Let {
                name,
                mutable,
                declared,
                init,
                local,
                ty,
            } => {
                if let (Some(declared), Some(init)) = (declared.as_ref(), init.as_mut()) {
                    self.expected(init, declared);
                }
                let init_ty = init.as_mut().map(|e| self.expr(e));
                *ty = match (declared.as_ref(), init_ty) {
                    (Some(d), Some(i)) => self.expect(
                        d,
                        &i,
                        span,
                        &format!("`{name}` is declared `{}`", d.rust_name()),
                    ),
                    (Some(d), None) => d.clone(),
                    (None, Some(i)) => i,
                    (None, None) => {
                        self.errors.at(
                            name.span(),
                            format!("give `{name}` a type or a value: `let {name}: f32 = 0.0;`"),
                        );
                        Ty::Unknown
                    }
                };
                if matches!(ty, Ty::Unit) {
                    self.errors.at(
                        span,
                        format!("`{name}` would hold no value: the expression returns nothing"),
                    );
                }
                *local = self.declare(name, ty.clone(), *mutable);
            }
            StmtKind::Assign { target, op, value } => self.assign(target, *op, value, span),
            StmtKind::Expr(e) => {
                self.expr_or_atomic(e);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.condition(cond);
                self.block(then);
                if let Some(otherwise) = otherwise {
                    self.block(otherwise);
                }
            }
            StmtKind::For(for_loop) => self.for_loop(for_loop),
            StmtKind::While { cond, body } => {
                self.condition(cond);
                self.loop_body(body);
            }
            StmtKind::Loop(body) => self.loop_body(body),
            StmtKind::Block(body) => self.block(body),
            StmtKind::Break | StmtKind::Continue if self.loop_depth == 0 => {
                self.errors
                    .at(span, "`break` and `continue` belong inside a loop");
            }
            StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Return(value) => self.return_stmt(value.as_mut(), span),
            StmtKind::Match { scrutinee, arms } => {
                self.match_scrutinee(scrutinee, arms, span);
                for arm in arms {
                    self.block(&mut arm.body);
                }
            }
        }
    }

    fn return_stmt(&mut self, value: Option<&mut Expr>, span: Span) {
        match (self.ret.clone(), value) {
            (None, None) => {}
            (None, Some(value)) => {
                self.expr(value);
                self.errors.at(
                    value.span,
                    "this function returns nothing; declare its return type: `-> f32`",
                );
            }
            (Some(ret), Some(value)) => {
                self.expected(value, &ret);
                let found = self.expr(value);
                self.expect(&ret, &found, value.span, "wrong return type");
            }
            (Some(ret), None) => self
                .errors
                .at(span, format!("return a `{}` value", ret.rust_name())),
        }
    }

    fn loop_body(&mut self, body: &mut Block) {
        self.loop_depth += 1;
        self.block(body);
        self.loop_depth -= 1;
    }

    pub(super) fn condition(&mut self, cond: &mut Expr) {
        let ty = self.expr(cond);
        self.expect(&Ty::BOOL, &ty, cond.span, "a condition must be a `bool`");
    }

    fn for_loop(&mut self, f: &mut ForLoop) {
        let start = self.expr(&mut f.start);
        let end = self.expr(&mut f.end);
        let mut ty = self.expect(
            &start,
            &end,
            f.end.span,
            "the range's ends must have one type",
        );
        if let Some(step) = &mut f.step {
            let step_ty = self.expr(step);
            ty = self.expect(
                &ty,
                &step_ty,
                step.span,
                "the step must have the range's type",
            );
        }
        if !self.is_integer(&ty) {
            self.errors.at(
                f.start.span,
                format!(
                    "loop ranges are over integers, not `{}`",
                    self.shallow(&ty).rust_name()
                ),
            );
        }
        f.ty = ty.clone();
        if f.unroll {
            self.check_unroll(f);
        }
        self.loop_depth += 1;
        self.scoped(|this| {
            f.local = this.declare(&f.var, ty, false);
            f.body.iter_mut().for_each(|stmt| this.stmt(stmt));
        });
        self.loop_depth -= 1;
    }

    /// `#[unroll]` needs bounds known at compile time and no `break`/`continue` of its own.
    fn check_unroll(&mut self, f: &ForLoop) {
        match f.unroll_values().map(|v| v.len() as u64) {
            None => self.errors.at(
                Span { first: f.start.span.first, last: f.end.span.last },
                "`#[unroll]` needs bounds known at compile time (literals, constants and arithmetic on them), \
                 such as `for i in 0..TILE`; remove `#[unroll]` \
                 for a loop whose bounds are only known at run time",
            ),
            Some(n) if n > MAX_UNROLL => self.errors.at(
                f.end.span,
                format!("`#[unroll]` would write the body {n} times; unroll at most {MAX_UNROLL} iterations"),
            ),
            Some(_) => {}
        }
        if let Some(span) = own_break_or_continue(&f.body) {
            self.errors.at(
                span,
                "an `#[unroll]`ed loop cannot `break` or `continue`; use an `if` around the body",
            );
        }
    }

    /// Checks a match's scrutinee and arm values; returns the scrutinee's type.
    pub(super) fn match_scrutinee<T>(
        &mut self,
        scrutinee: &mut Expr,
        arms: &[MatchArm<T>],
        span: Span,
    ) -> Ty {
        let ty = self.expr(scrutinee);
        if !self.is_integer(&ty) {
            self.errors.at(
                scrutinee.span,
                "`match` in kernels is on integers (`u32` or `i32`)",
            );
        }
        let mut seen = Vec::new();
        for (value, value_span) in arms.iter().flat_map(|arm| arm.values.iter()) {
            if *value < 0 {
                match self.shallow(&ty) {
                    Ty::U32 => self.errors.at(*value_span, NEVER_NEGATIVE),
                    ty @ Ty::IntVar(_) => self.deferred.push(Deferred::NegativeValue {
                        ty,
                        span: *value_span,
                    }),
                    _ => {}
                }
            }
            if seen.contains(value) {
                self.errors.at(
                    *value_span,
                    format!("`{value}` is matched by an earlier arm already"),
                );
            }
            seen.push(*value);
        }
        if !arms.iter().any(|arm| arm.values.is_empty()) {
            self.errors.at(
                span,
                "add a `_ => ...` arm: a `match` on integers must cover every value",
            );
        }
        ty
    }

    fn assign(&mut self, target: &mut Expr, op: Option<BinOp>, value: &mut Expr, span: Span) {
        let target_ty = self.place(target);
        if op.is_none() {
            self.expected(value, &target_ty);
        }
        let value_ty = self.expr(value);
        match op {
            Some(op) if self.shallow(&target_ty).holds_fragment() => {
                let (target, value) = (target.rust_text(), value.rust_text());
                self.errors.at(
                    span,
                    format!(
                        "a fragment takes no compound assignment; write `{target} = {target} {} {value}`",
                        op.symbol()
                    ),
                );
            }
            Some(op) => {
                let result = self.binary_ty(op, &target_ty, &value_ty, span, target, value);
                self.expect(
                    &target_ty,
                    &result,
                    span,
                    "the result must keep the target's type",
                );
            }
            None => {
                self.expect(
                    &target_ty,
                    &value_ty,
                    value.span,
                    "mismatched types in assignment",
                );
            }
        }
    }

    /// Types an assignment target and checks it may be written.
    pub(super) fn place(&mut self, target: &mut Expr) -> Ty {
        let root = place_root(target).cloned();
        match root.as_ref().map(|name| (name, self.resolve_name(name))) {
            Some((name, Resolved::Local(local))) if !local.mutable => {
                self.errors.at(
                    target.span,
                    format!("`{name}` is not mutable; declare it with `let mut {name}`"),
                );
            }
            Some((name, Resolved::Binding(binding))) => match &binding.kind {
                BindingKind::Storage {
                    writable: false,
                    element,
                } => self.errors.at(
                    target.span,
                    format!(
                        "`{name}` is read-only (`&[{0}]`); declare it `&mut [{0}]` to write to it",
                        element.rust_name()
                    ),
                ),
                BindingKind::Uniform { .. } => self.errors.at(
                    target.span,
                    format!("`{name}` holds the kernel's parameters, which are read-only"),
                ),
                _ => {}
            },
            Some((name, Resolved::Shared(shared))) if !shared.writable => self.errors.at(
                target.span,
                format!(
                    "`{name}` is lent read-only (`&{0}`); take it as `&mut {0}` to write to it",
                    shared.ty.rust_name()
                ),
            ),
            Some((name, Resolved::None)) => {
                self.not_found(&name.to_string(), name.span());
                return Ty::Unknown;
            }
            None => self.errors.at(
                target.span,
                "only locals, indexed buffers and vector components can be assigned",
            ),
            _ => {}
        }
        let ty = self.expr_or_atomic(target);
        if matches!(ty, Ty::Atomic(_)) {
            self.errors.at(
                target.span,
                "atomics are written with `.store(v)` or `.fetch_add(v)`, not `=`",
            );
        }
        ty
    }
}

/// The span of a `break` or `continue` that would leave or restart this loop (not a nested one).
fn own_break_or_continue(block: &Block) -> Option<Span> {
    block.iter().find_map(|stmt| match &stmt.kind {
        StmtKind::Break | StmtKind::Continue => Some(stmt.span),
        StmtKind::If {
            then, otherwise, ..
        } => own_break_or_continue(then)
            .or_else(|| otherwise.as_ref().and_then(own_break_or_continue)),
        StmtKind::Block(body) => own_break_or_continue(body),
        StmtKind::Match { arms, .. } => {
            arms.iter().find_map(|arm| own_break_or_continue(&arm.body))
        }
        _ => None,
    })
}
