//! Expressions -> WGSL: operators, casts, indexing, the temporaries that hoisted `if`/`match`/
//! block values are written into, calls of helpers and builtins (from the builtins' table's
//! templates), and the matrix-fragment operations naga needs written in a particular way.

use proc_macro2::Ident;

use super::text::{
    argument, fill, float_bits, float_literal, int_literal, shaped_u32, shift_amount, splat, uses,
    value_literal,
};
use super::{id_variable, FnLowerer, Var};
use crate::ir::builtins::{Builtin, Signature};
use crate::ir::eval::{self, Value};
use crate::ir::*;
use crate::lower::wgsl_ty;
use crate::lower::writer::Writer;

impl FnLowerer<'_> {
    /// Like [`FnLowerer::expr`], for an expression that stands alone (a condition, the value
    /// of a `let`, an assignment or a `return`), where its outer parentheses are noise.
    pub(super) fn top_expr(&mut self, w: &mut Writer, e: &Expr) -> String {
        let text = self.expr(w, e);
        strip_parens(&text).to_owned()
    }

    /// The value of an integer expression of literals, unrolled loop variables and constant
    /// `let`s, computed with Rust's (checked) arithmetic; `None` for anything else, overflow
    /// included. Unrolled loops make many such expressions (`kk * ROW + run * SPAN`): written
    /// as their values, they keep the module small for naga, whose checking time grows faster
    /// than linearly with a function's expressions.
    fn constant(&self, e: &Expr) -> Option<Value> {
        if e.ty.is_vector() || !e.ty.scalar().is_some_and(Scalar::is_integer) {
            return None;
        }
        match &e.kind {
            ExprKind::Int(_) => eval::literal(e)?.ok(),
            ExprKind::Path(_, Some(local)) => self.locals_known.value(*local),
            ExprKind::Unary(op, operand) => eval::unary(*op, self.constant(operand)?)?.ok(),
            ExprKind::Binary(op, left, right) => {
                eval::binary(*op, self.constant(left)?, self.constant(right)?)?.ok()
            }
            _ => None,
        }
    }

    /// The WGSL text of `e`; statements it needs first are written to `w`.
    pub fn expr(&mut self, w: &mut Writer, e: &Expr) -> String {
        if matches!(e.kind, ExprKind::Unary(..) | ExprKind::Binary(..)) {
            if let Some(value) = self.constant(e) {
                return value_literal(value);
            }
        }
        match &e.kind {
            ExprKind::Int(v) => int_literal(*v, &e.ty),
            ExprKind::Float(v) => float_literal(*v, &e.ty),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Path(_, Some(local)) => self.local(*local).to_owned(),
            ExprKind::Path(name, None) => self.global(name),
            ExprKind::Field(base, field) if matches!(base.ty, Ty::Vector(..)) => {
                let base = self.expr(w, base);
                format!("{base}.{field}")
            }
            ExprKind::Field(base, field) => {
                let base = self.expr(w, base);
                let field = field.to_string();
                let field = self.globals.fields.get(&field).unwrap_or(&field);
                format!("{base}.{field}")
            }
            ExprKind::Index(base, index) => {
                let (base, index) = (self.expr(w, base), self.top_expr(w, index));
                format!("{base}[{index}]")
            }
            // WGSL literals are unsigned: `2147483648i` does not exist to be negated.
            ExprKind::Unary(UnOp::Neg, operand)
                if matches!(operand.kind, ExprKind::Int(v) if v == 1 << 31)
                    && operand.ty == Ty::I32 =>
            {
                "(-2147483647i - 1i)".to_owned()
            }
            ExprKind::Unary(op, operand) => {
                let text = self.expr(w, operand);
                match op {
                    UnOp::Neg => format!("-({text})"),
                    UnOp::Not if operand.ty == Ty::BOOL => format!("!({text})"),
                    UnOp::Not => format!("~({text})"),
                }
            }
            // WGSL's constant evaluation rejects `<<` results Rust accepts (`1i32 << 31`, bits
            // shifted out): a constant shift is written as its value.
            ExprKind::Binary(BinOp::Shl | BinOp::Shr, ..)
                if eval::value(e, &self.locals_known).is_some() =>
            {
                eval::value(e, &self.locals_known).map_or_else(String::new, value_literal)
            }
            ExprKind::Binary(op, left, right) => {
                let l = self.expr(w, left);
                let r = self.expr(w, right);
                let r = match op {
                    BinOp::Shl | BinOp::Shr => shift_amount(right, r),
                    _ => r,
                };
                // WGSL has no `^` on `bool`; on booleans it is `!=`. naga lowers a short
                // circuit (`&&`, `||`) through a local variable, which its uniformity analysis
                // counts as varying, so a fragment operation under `a && b` would be rejected
                // with `a` and `b` uniform: where the right side has no effects, evaluating it
                // always changes nothing (WGSL's indexing and division cannot trap), so the
                // operator is written without the short circuit.
                let symbol = match op {
                    BinOp::BitXor if left.ty == Ty::BOOL => "!=",
                    BinOp::And if !may_have_effects(right) => "&",
                    BinOp::Or if !may_have_effects(right) => "|",
                    _ => op.symbol(),
                };
                format!("({l} {symbol} {r})")
            }
            ExprKind::Bitcast(value, target) => {
                let text = self.top_expr(w, value);
                format!("bitcast<{}>({text})", wgsl_ty(target))
            }
            ExprKind::Cast(value, target) => {
                let text = self.top_expr(w, value);
                match (&value.ty, target) {
                    // WGSL fills a vector only from a scalar of its own type.
                    (Ty::Scalar(from), Ty::Vector(_, to)) if from != to => {
                        format!("{}({}({text}))", wgsl_ty(target), wgsl_ty(&Ty::Scalar(*to)))
                    }
                    _ => format!("{}({text})", wgsl_ty(target)),
                }
            }
            // `check/` made every generic call a call of its copy.
            ExprKind::Call(name, args) | ExprKind::GenericCall(name, _, args) => {
                self.call(w, name, args)
            }
            ExprKind::Builtin(builtin, args) => self.builtin(w, builtin, args, &e.ty),
            // `check/` resolved every method to a builtin.
            ExprKind::Method(..) => String::new(),
            ExprKind::If(cond, then, otherwise)
                if self.taken(cond).is_some_and(|taken| {
                    !leaves(if taken { &otherwise.stmts } else { &then.stmts })
                }) =>
            {
                let temp = self.temp(w, &e.ty, e.span);
                let branch = if self.taken(cond) == Some(true) {
                    then
                } else {
                    otherwise
                };
                w.open_plain("");
                self.assign_block(w, &temp, branch);
                w.close("");
                temp
            }
            ExprKind::If(cond, then, otherwise) => {
                let temp = self.temp(w, &e.ty, e.span);
                let cond = self.top_expr(w, cond);
                w.open(format!("if {cond}"), e.span);
                self.branches += 1;
                self.assign_block(w, &temp, then);
                w.close(" else {");
                self.assign_block(w, &temp, otherwise);
                self.branches -= 1;
                w.close("");
                temp
            }
            ExprKind::Match(scrutinee, arms) => {
                let temp = self.temp(w, &e.ty, e.span);
                let scrutinee_text = self.expr(w, scrutinee);
                let breaks = arms.iter().any(|arm| breaks_out(&arm.body.stmts));
                self.switch(
                    w,
                    (&scrutinee_text, &scrutinee.ty),
                    arms,
                    e.span,
                    breaks,
                    |this, w, body| this.assign_block(w, &temp, body),
                );
                temp
            }
            ExprKind::Block(block) => {
                let temp = self.temp(w, &e.ty, e.span);
                w.open_plain("");
                self.assign_block(w, &temp, block);
                w.close("");
                temp
            }
            ExprKind::Array(elements) => {
                let texts: Vec<String> = elements.iter().map(|el| self.expr(w, el)).collect();
                format!("{}({})", wgsl_ty(&e.ty), texts.join(", "))
            }
            ExprKind::Repeat(value, n) => self.repeat(w, value, *n, &e.ty, e.span),
            // Only a helper's argument, which `helper_call` lowers.
            ExprKind::Ref(_, place) => self.expr(w, place),
        }
    }

    /// Declares a temporary of type `ty` for a hoisted value.
    fn temp(&mut self, w: &mut Writer, ty: &Ty, span: Span) -> String {
        let name = self.names.generated("t");
        w.mapped_line(format!("var {name}: {};", wgsl_ty(ty)), span);
        name
    }

    fn assign_block(&mut self, w: &mut Writer, target: &str, block: &BlockExpr) {
        self.block(w, &block.stmts);
        let value = self.top_expr(w, &block.tail);
        w.mapped_line(format!("{target} = {value};"), block.tail.span);
    }

    fn repeat(&mut self, w: &mut Writer, value: &Expr, n: u32, ty: &Ty, span: Span) -> String {
        if value.is_zero() {
            return format!("{}()", wgsl_ty(ty));
        }
        let text = self.expr(w, value);
        if !repeats_through_a_loop(value, n) {
            return format!("{}({})", wgsl_ty(ty), vec![text; n as usize].join(", "));
        }
        let temp = self.temp(w, ty, span);
        let index = self.names.generated("k");
        w.mapped_line(
            format!("for (var {index}: u32 = 0u; {index} < {n}u; {index} += 1u) {{ {temp}[{index}] = {text}; }}"),
            span,
        );
        temp
    }

    fn call(&mut self, w: &mut Writer, name: &Ident, args: &[Expr]) -> String {
        let helpers = self.helpers;
        match helpers.iter().find(|h| h.name == *name) {
            Some(helper) => self.helper_call(w, helper, args),
            // `check/` resolved every other call to a builtin.
            None => format!("{name}()"),
        }
    }

    /// A builtin call, spelled by its template (see [`crate::ir::builtins::Spelling`]).
    fn builtin(&mut self, w: &mut Writer, builtin: &Builtin, args: &[Expr], ty: &Ty) -> String {
        if let Signature::Id(id) = builtin.signature {
            return id_variable(id).to_owned();
        }
        if let Signature::FragmentStore(_) = builtin.signature {
            return self.fragment_store(w, builtin, args);
        }
        let operation = matches!(
            builtin.signature,
            Signature::FragmentLoad(_) | Signature::MultiplyAdd
        );
        if operation && (self.branches > 0 || self.returned_in_branch) {
            if let Some(call) = self.fragment_call(w, builtin, args, ty) {
                return call;
            }
        }
        let template = builtin.wgsl.template(args.first().map_or(ty, |a| &a.ty));
        let texts: Vec<String> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                // WGSL requires a const-expression for the lane of `subgroupBroadcast`, which a
                // `let` is not: `check/` made sure it has a value.
                if i == 1 && builtin.signature == Signature::SubgroupBroadcast {
                    if let Some(value) = eval::value(a, &self.locals_known) {
                        return value_literal(value);
                    }
                }
                let text = self.expr(w, a);
                // A template that spells an argument more than once (Rust's `round`,
                // `signum`, `fract`) must not run a helper call or an atomic in it twice.
                if uses(template, i) > 1 && may_have_effects(a) {
                    let name = self.names.generated("t");
                    w.mapped_line(format!("let {name} = {};", strip_parens(&text)), a.span);
                    name
                } else {
                    text
                }
            })
            .collect();
        let first_ty = args.first().map_or(ty, |a| &a.ty);
        let literal = |v: f64| match first_ty.scalar() {
            Some(s) if s.is_float() => splat(first_ty, &float_literal(v, first_ty)),
            _ => splat(first_ty, &int_literal(v as u64, first_ty)),
        };
        fill(template, &texts, |name| match name {
            "ty" => Some(wgsl_ty(ty)),
            "args" => Some(
                texts
                    .iter()
                    .map(|t| argument(t))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            "zero" => Some(literal(0.0)),
            "half" => Some(literal(0.5)),
            "one" => Some(literal(1.0)),
            "bits" => texts.first().map(|arg| float_bits(first_ty, arg)),
            "sign_bit" => Some(shaped_u32(first_ty, "0x80000000u")),
            "magnitude" => Some(shaped_u32(first_ty, "0x7fffffffu")),
            "infinity" => Some(shaped_u32(first_ty, "0x7f800000u")),
            _ => None,
        })
    }
}

impl FnLowerer<'_> {
    /// `coopStore(fragment, &place, stride)` with every operand that is not a name or a
    /// literal bound to a `let` on the lines before. naga 30's SPIR-V writer panics on a store
    /// whose index or stride is computed in the call ("Expression is not cached"): the store
    /// statement is recorded before the expressions evaluated after the place's variable.
    fn fragment_store(&mut self, w: &mut Writer, builtin: &Builtin, args: &[Expr]) -> String {
        let [fragment, place, stride] = args else {
            return String::new();
        };
        let fragment = self.bound(w, fragment);
        let place = match &place.kind {
            ExprKind::Ref(_, inner) => self.bound_place(w, inner),
            _ => self.bound_place(w, place),
        };
        let stride = self.bound(w, stride);
        fill(
            builtin.wgsl.template(&Ty::Unit),
            &[fragment, place, stride],
            |_| None,
        )
    }

    /// A fragment load or multiply-add as a call to a function that does only it (see
    /// `fragment_calls.rs`): its operands, the load's indices and stride, are the arguments.
    /// `None` for a load from a place that is not a module-scope array (a lent local array,
    /// which `check/` refuses anyway).
    fn fragment_call(
        &mut self,
        w: &mut Writer,
        builtin: &Builtin,
        args: &[Expr],
        ty: &Ty,
    ) -> Option<String> {
        let template = builtin.wgsl.template(args.first().map_or(ty, |a| &a.ty));
        let (params, texts, body) = match builtin.signature {
            Signature::FragmentLoad(_) => {
                let [place, stride] = args else {
                    return None;
                };
                let mut place = match &place.kind {
                    ExprKind::Ref(_, inner) => &**inner,
                    _ => place,
                };
                let mut indices = Vec::new();
                while let ExprKind::Index(base, index) = &place.kind {
                    indices.push(&**index);
                    place = base;
                }
                let ExprKind::Path(name, None) = &place.kind else {
                    return None;
                };
                let Some(Var::Global(global)) = self.vars.get(&name.to_string()) else {
                    return None;
                };
                let mut inside = global.clone();
                let mut params = Vec::new();
                let mut texts = Vec::new();
                for (i, index) in indices.iter().rev().enumerate() {
                    inside.push_str(&format!("[tsr_i{i}]"));
                    params.push(format!("tsr_i{i}: {}", wgsl_ty(&index.ty)));
                    texts.push(self.top_expr(w, index));
                }
                params.push(format!("tsr_stride: {}", wgsl_ty(&stride.ty)));
                texts.push(self.top_expr(w, stride));
                let body = fill(template, &[inside, "tsr_stride".to_owned()], |name| {
                    (name == "ty").then(|| wgsl_ty(ty))
                });
                (params, texts, body)
            }
            _ => {
                let names = ["tsr_a", "tsr_b", "tsr_c"].map(str::to_owned);
                let params = names
                    .iter()
                    .zip(args)
                    .map(|(name, arg)| format!("{name}: {}", wgsl_ty(&arg.ty)))
                    .collect();
                let texts = args.iter().map(|a| self.top_expr(w, a)).collect();
                (params, texts, fill(template, &names, |_| None))
            }
        };
        let name = self
            .globals
            .fragment_calls
            .borrow_mut()
            .function(&params, &wgsl_ty(ty), &body);
        Some(format!("{name}({})", texts.join(", ")))
    }

    /// `e` as a name or literal, through a fresh `let` when it is anything else.
    fn bound(&mut self, w: &mut Writer, e: &Expr) -> String {
        let text = self.top_expr(w, e);
        let simple = |t: &str| t.chars().all(|c| c.is_alphanumeric() || c == '_');
        if simple(&text) {
            return text;
        }
        let name = self.names.generated("t");
        w.mapped_line(format!("let {name} = {text};"), e.span);
        name
    }

    /// A place (`a[i]`, `tile[r][c]`) whose indices are names or literals.
    fn bound_place(&mut self, w: &mut Writer, place: &Expr) -> String {
        match &place.kind {
            ExprKind::Index(base, index) => {
                let base = self.bound_place(w, base);
                let index = self.bound(w, index);
                format!("{base}[{index}]")
            }
            _ => self.expr(w, place),
        }
    }
}

/// Whether evaluating `e` may do more than compute a value: call a helper (which may write
/// through its references) or an atomic method.
fn may_have_effects(e: &Expr) -> bool {
    let mut effects = false;
    visit_expr(e, &mut |e| {
        effects |= matches!(e.kind, ExprKind::Call(..) | ExprKind::Method(..))
    });
    effects
}
