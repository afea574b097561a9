//! Statements -> WGSL: `let`s and assignments, `if` (a branch with a constant condition
//! dropped), loops (`while`, `for` over ascending or descending ranges, `#[unroll]`ed ones
//! written out iteration by iteration), and `match` as a `switch` or a chain of `if`s.

use super::text::{int_literal, shift_amount, signed_literal};
use super::FnLowerer;
use crate::ir::eval::{self, Value};
use crate::ir::*;
use crate::lower::wgsl_ty;
use crate::lower::writer::Writer;

impl FnLowerer<'_> {
    pub fn block(&mut self, w: &mut Writer, block: &Block) {
        for stmt in block {
            self.stmt(w, stmt);
        }
    }

    fn stmt(&mut self, w: &mut Writer, stmt: &Stmt) {
        let start = w.position();
        let span = stmt.span;
        match &stmt.kind {
            StmtKind::Let {
                mutable,
                init,
                local,
                ty,
                ..
            } => {
                let name = self.local(*local).to_owned();
                let keyword = if *mutable || matches!(ty, Ty::Array(..)) {
                    "var"
                } else {
                    "let"
                };
                // Known exactly when `check/`'s evaluation knows it (see `taken`).
                let constant = init
                    .as_ref()
                    .and_then(|e| eval::value(e, &self.locals_known));
                self.locals_known.bind(*local, *mutable, constant);
                match init {
                    Some(init) => {
                        let value = self.top_expr(w, init);
                        w.mapped_line(
                            format!("{keyword} {name}: {} = {value};", wgsl_ty(ty)),
                            span,
                        );
                    }
                    None => w.mapped_line(format!("var {name}: {};", wgsl_ty(ty)), span),
                }
            }
            StmtKind::Assign { target, op, value } => {
                let value_text = self.top_expr(w, value);
                let value_text = match op {
                    Some(BinOp::Shl | BinOp::Shr) => shift_amount(value, value_text),
                    _ => value_text,
                };
                let target_text = self.expr(w, target);
                let line = match op {
                    // WGSL has no `^=` on `bool`: `a ^= b` is `a = a != b`.
                    Some(BinOp::BitXor) if target.ty == Ty::BOOL => {
                        format!("{target_text} = {target_text} != ({value_text});")
                    }
                    Some(op) => format!("{target_text} {}= {value_text};", op.symbol()),
                    None => format!("{target_text} = {value_text};"),
                };
                w.mapped_line(line, span);
            }
            StmtKind::Expr(e) => {
                let text = self.expr(w, e);
                let line = if e.ty == Ty::Unit {
                    format!("{text};")
                } else {
                    format!("_ = {text};")
                };
                w.mapped_line(line, span);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(w, cond, then, otherwise.as_ref(), span),
            StmtKind::For(for_loop) => self.for_loop(w, for_loop, span),
            StmtKind::While { cond, body } => self.while_loop(w, cond, body, span),
            StmtKind::Block(body) => {
                w.open_plain("");
                self.block(w, body);
                w.close("");
            }
            StmtKind::Loop(body) => {
                w.open("loop", span);
                self.block(w, body);
                w.close("");
            }
            StmtKind::Break => w.mapped_line("break;", span),
            StmtKind::Continue => w.mapped_line("continue;", span),
            StmtKind::Return(None) => {
                self.returned_in_branch |= self.branches > 0;
                w.mapped_line("return;", span);
            }
            StmtKind::Return(Some(value)) => {
                let value = self.top_expr(w, value);
                self.returned_in_branch |= self.branches > 0;
                w.mapped_line(format!("return {value};"), span);
            }
            StmtKind::Match { scrutinee, arms } => {
                let scrutinee_text = self.expr(w, scrutinee);
                let breaks = arms.iter().any(|arm| breaks_out(&arm.body));
                self.switch(
                    w,
                    (&scrutinee_text, &scrutinee.ty),
                    arms,
                    span,
                    breaks,
                    |this, w, body| this.block(w, body),
                );
            }
        }
        w.map_since(start, span);
    }

    fn if_stmt(
        &mut self,
        w: &mut Writer,
        cond: &Expr,
        then: &Block,
        otherwise: Option<&Block>,
        span: Span,
    ) {
        let dropped = |taken: bool| match taken {
            true => otherwise.is_some_and(leaves),
            false => leaves(then),
        };
        match self.taken(cond).filter(|&taken| !dropped(taken)) {
            Some(true) => self.scoped_block(w, then),
            Some(false) => otherwise.into_iter().for_each(|b| self.scoped_block(w, b)),
            None => {
                let cond = self.top_expr(w, cond);
                w.open(format!("if {cond}"), span);
                self.branches += 1;
                self.block(w, then);
                if let Some(otherwise) = otherwise {
                    w.close(" else {");
                    self.block(w, otherwise);
                }
                self.branches -= 1;
                w.close("");
            }
        }
    }

    /// Which branch a condition of constants takes (in an unrolled iteration, `v > 0` with
    /// `v` known): only that branch is written, as Rust would never run the other, whose
    /// constants may be ones WGSL rejects (`a[v - 1]` where `v` is 0), unless the other
    /// holds a way out (see [`leaves`]). `check/`'s evaluation skips the same branches,
    /// knowing the same locals.
    pub(super) fn taken(&self, cond: &Expr) -> Option<bool> {
        match eval::value(cond, &self.locals_known)? {
            Value::Bool(taken) => Some(taken),
            _ => None,
        }
    }

    fn scoped_block(&mut self, w: &mut Writer, block: &Block) {
        w.open_plain("");
        self.block(w, block);
        w.close("");
    }

    fn while_loop(&mut self, w: &mut Writer, cond: &Expr, body: &Block, span: Span) {
        if needs_hoisting(cond) {
            // The condition needs statements of its own, evaluated before every iteration.
            w.open("loop", span);
            let cond = self.top_expr(w, cond);
            w.mapped_line(format!("if !({cond}) {{ break; }}"), span);
        } else {
            let cond = self.top_expr(w, cond);
            w.open(format!("while {cond}"), span);
        }
        self.block(w, body);
        w.close("");
    }

    fn for_loop(&mut self, w: &mut Writer, f: &ForLoop, span: Span) {
        if let Some(values) = f.unroll.then(|| f.unroll_values()).flatten() {
            return self.unrolled(w, f, &values, span);
        }
        let ty = wgsl_ty(&f.ty);
        let var = self.local(f.local).to_owned();
        let one = int_literal(1, &f.ty);
        w.open_plain("");
        let start = self.expr(w, &f.start);
        let end = self.expr(w, &f.end);
        let end_name = self.names.generated("end");
        w.mapped_line(format!("let {end_name}: {ty} = {end};"), f.end.span);
        match (f.reversed, f.inclusive, &f.step) {
            (true, _, Some(step)) => {
                let step = self.expr(w, step);
                self.stepped_down(w, f, &start, &end_name, &step, span)
            }
            (false, false, step) | (false, true, step @ Some(_)) => {
                let step = match step {
                    Some(step) => self.expr(w, step),
                    None => one,
                };
                let cmp = if f.inclusive { "<=" } else { "<" };
                w.open(
                    format!(
                        "for (var {var}: {ty} = {start}; {var} {cmp} {end_name}; {var} += {step})"
                    ),
                    span,
                );
                self.block(w, &f.body);
                w.close("");
            }
            (false, true, None) => self.stepped_loop(w, f, &start, &end_name, span),
            (true, true, _) => {
                let start_name = self.names.generated("start");
                w.mapped_line(format!("let {start_name}: {ty} = {start};"), f.start.span);
                self.stepped_loop(w, f, &end_name, &start_name, span)
            }
            (true, false, _) => {
                // Counts down from the end; the loop variable is a copy so `continue` is safe.
                let counter = self.names.generated("i");
                let start_name = self.names.generated("start");
                w.mapped_line(format!("let {start_name}: {ty} = {start};"), f.start.span);
                w.mapped_line(format!("var {counter}: {ty} = {end_name};"), span);
                w.open("loop", span);
                w.line(format!("if {counter} <= {start_name} {{ break; }}"));
                w.line(format!("{counter} -= {one};"));
                w.line(format!("let {var}: {ty} = {counter};"));
                self.block(w, &f.body);
                w.close("");
            }
        }
        w.close("");
    }

    /// A loop from `from` to `to` inclusive, one step at a time (up for `a..=b`, down for
    /// `(a..=b).rev()`), that never steps past `to`, so it cannot overflow at the type's
    /// limits. The step happens before the body, so `continue` is safe.
    fn stepped_loop(&mut self, w: &mut Writer, f: &ForLoop, from: &str, to: &str, span: Span) {
        let (ty, var, one) = (
            wgsl_ty(&f.ty),
            self.local(f.local).to_owned(),
            int_literal(1, &f.ty),
        );
        let (counter, more) = (self.names.generated("i"), self.names.generated("more"));
        let (not_past, before, step) = if f.reversed {
            (">=", ">", "-=")
        } else {
            ("<=", "<", "+=")
        };
        w.mapped_line(format!("var {counter}: {ty} = {from};"), span);
        w.mapped_line(
            format!("var {more}: bool = {counter} {not_past} {to};"),
            span,
        );
        w.open("loop", span);
        w.line(format!("if !{more} {{ break; }}"));
        w.line(format!("let {var}: {ty} = {counter};"));
        w.line(format!("{more} = {counter} {before} {to};"));
        w.line(format!("if {more} {{ {counter} {step} {one}; }}"));
        self.block(w, &f.body);
        w.close("");
    }

    /// `(a..b).rev().step_by(s)` (from the range's last value) or `(a..b).step_by(s).rev()`
    /// (from the last value the steps up from `a` reach), down by `s` while at or above `a`.
    /// Like `stepped_loop`, it never steps past `a`, and steps before the body.
    fn stepped_down(
        &mut self,
        w: &mut Writer,
        f: &ForLoop,
        start: &str,
        end: &str,
        step: &str,
        span: Span,
    ) {
        let (ty, var, one) = (
            wgsl_ty(&f.ty),
            self.local(f.local).to_owned(),
            int_literal(1, &f.ty),
        );
        let (low, stride) = (self.names.generated("start"), self.names.generated("step"));
        let (counter, more) = (self.names.generated("i"), self.names.generated("more"));
        w.mapped_line(format!("let {low}: {ty} = {start};"), f.start.span);
        w.mapped_line(format!("let {stride}: {ty} = {step};"), span);
        let (cmp, last) = if f.inclusive {
            ("<=", end.to_owned())
        } else {
            ("<", format!("{end} - {one}"))
        };
        w.mapped_line(format!("var {more}: bool = {low} {cmp} {end};"), span);
        w.mapped_line(format!("var {counter}: {ty} = {last};"), span);
        if f.steps_from_start {
            w.line(format!(
                "{counter} = {low} + ({counter} - {low}) / {stride} * {stride};"
            ));
        }
        w.open("loop", span);
        w.line(format!("if !{more} {{ break; }}"));
        w.line(format!("let {var}: {ty} = {counter};"));
        w.line(format!("{more} = {counter} - {low} >= {stride};"));
        w.line(format!("if {more} {{ {counter} -= {stride}; }}"));
        self.block(w, &f.body);
        w.close("");
    }

    /// Writes the body once per iteration, each copy in its own block with the loop variable
    /// bound to a constant, so register arrays indexed by it keep constant indices.
    fn unrolled(&mut self, w: &mut Writer, f: &ForLoop, values: &[u64], span: Span) {
        let var = self.local(f.local).to_owned();
        for value in values {
            let literal = int_literal(*value, &f.ty);
            w.open_plain("");
            w.mapped_line(format!("// {var} = {literal}"), span);
            self.locals[f.local.0 as usize] = literal;
            let known =
                f.ty.scalar()
                    .and_then(|s| eval::int(i128::from(*value), s).ok());
            if let Some(value) = known {
                self.locals_known.enter_iteration(f.local, value);
            }
            self.block(w, &f.body);
            if known.is_some() {
                self.locals_known.leave_iteration();
            }
            w.close("");
        }
        self.locals[f.local.0 as usize] = var;
    }

    /// A `match`: a WGSL `switch`, or, where an arm holds a `break` of the loop around the
    /// `match` (`breaks`), an `if` chain over the value ([`FnLowerer::if_chain`]), since a
    /// `break` inside a `switch` leaves only the `switch`. `arm` lowers each arm's body.
    pub(super) fn switch<T>(
        &mut self,
        w: &mut Writer,
        (scrutinee, ty): (&str, &Ty),
        arms: &[MatchArm<T>],
        span: Span,
        breaks: bool,
        mut arm: impl FnMut(&mut Self, &mut Writer, &T),
    ) {
        if breaks {
            return self.if_chain(w, (scrutinee, ty), arms, span, arm);
        }
        self.branches += 1;
        w.open(format!("switch {scrutinee}"), span);
        for match_arm in arms {
            let mut selectors: Vec<String> = match_arm
                .values
                .iter()
                .map(|(v, _)| signed_literal(*v, ty))
                .collect();
            if match_arm.values.is_empty() {
                selectors.push("default".to_owned());
            }
            let label = match selectors.as_slice() {
                [only] if only == "default" => "default:".to_owned(),
                _ => format!("case {}:", selectors.join(", ")),
            };
            w.open(label, match_arm.span);
            arm(self, w, &match_arm.body);
            w.close("");
        }
        self.branches -= 1;
        w.close("");
    }

    /// A `match` as `if` tests of its value, arm by arm, `_` last (as a `switch` takes
    /// `default`).
    fn if_chain<T>(
        &mut self,
        w: &mut Writer,
        (scrutinee, ty): (&str, &Ty),
        arms: &[MatchArm<T>],
        span: Span,
        mut arm: impl FnMut(&mut Self, &mut Writer, &T),
    ) {
        self.branches += 1;
        let value = self.names.generated("s");
        w.mapped_line(format!("let {value}: {} = {scrutinee};", wgsl_ty(ty)), span);
        let mut first = true;
        for match_arm in arms.iter().filter(|a| !a.values.is_empty()) {
            let tests: Vec<String> = (match_arm.values.iter())
                .map(|(v, _)| format!("({value} == {})", signed_literal(*v, ty)))
                .collect();
            let test = tests.join(" || ");
            if first {
                w.open(format!("if {test}"), match_arm.span);
                first = false;
            } else {
                w.close(&format!(" else if {test} {{"));
            }
            arm(self, w, &match_arm.body);
        }
        if let Some(default) = arms.iter().find(|a| a.values.is_empty()) {
            if first {
                w.open_plain("");
                first = false;
            } else {
                w.close(" else {");
            }
            arm(self, w, &default.body);
        }
        if !first {
            w.close("");
        }
        self.branches -= 1;
    }
}

/// Whether lowering `e` writes statements before it (so it cannot be re-evaluated in place).
fn needs_hoisting(e: &Expr) -> bool {
    let mut found = false;
    visit_expr(e, &mut |inner| {
        if matches!(
            inner.kind,
            ExprKind::If(..) | ExprKind::Match(..) | ExprKind::Block(_)
        ) || matches!(&inner.kind, ExprKind::Repeat(_, n) if *n > 16)
        {
            found = true;
        }
    });
    found
}
