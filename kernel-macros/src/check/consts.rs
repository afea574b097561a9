//! Constants in bodies: what [`crate::ir::eval`] finds while it evaluates every constant
//! expression (a division by a constant zero, a shift by 32 or more, integer overflow, a float
//! constant that is infinite or NaN, a math method outside its domain, a literal its type
//! cannot hold, a constant index past a fixed length), reported at the user's tokens with what
//! to write instead. WGSL compilers reject all of these; the user should hear it from tessera,
//! in Rust's words. Runs on typed bodies, after the type check found nothing wrong.

use crate::diag::Errors;
use crate::ir::eval::{Eval, Found, Locals, Problem, Value};
use crate::ir::{
    visit_exprs, BinOp, Block, Expr, ExprKind, Module, Scalar, Specialization, StmtKind, Ty, UnOp,
    Variant,
};

/// Checks every body of the module: each variant's, its helpers', and the helpers no kernel
/// calls.
pub fn check(module: &Module, errors: &mut Errors) {
    for helper in &module.helpers {
        body(&helper.body, None, errors);
    }
    for kernel in &module.kernels {
        for variant in kernel.variants() {
            self::variant(variant, None, errors);
        }
    }
}

/// Checks one variant's body and helpers; `specialization` is the one folded into it, named
/// in the messages (its values are what made the expression constant).
pub fn variant(variant: &Variant, specialization: Option<&Specialization>, errors: &mut Errors) {
    body(&variant.body, specialization, errors);
    for helper in &variant.helpers {
        body(&helper.body, specialization, errors);
    }
}

fn body(block: &Block, specialization: Option<&Specialization>, errors: &mut Errors) {
    negated_unsigned(block, errors);
    loops_that_cannot_end(block, errors);
    let mut eval = Eval::new(Locals::default());
    eval.block(block);
    for found in eval.problems {
        // A specialization's values wrap at run time in the general body too: not an error.
        if specialization.is_some() && matches!(found.problem, Problem::Overflow { .. }) {
            continue;
        }
        errors.at(found.span, message(&found, specialization));
    }
}

/// Every loop of `block` that cannot end: one without a `break` or `return` that can run,
/// with constant conditions taken as they fold (Tint refuses such a loop, naga does not).
fn loops_that_cannot_end(block: &Block, errors: &mut Errors) {
    for stmt in block {
        match &stmt.kind {
            StmtKind::Loop(body) => {
                if !can_leave(body, true) {
                    errors.at(stmt.span, CANNOT_END);
                }
                loops_that_cannot_end(body, errors);
            }
            StmtKind::While { cond, body } => {
                if is_constant(cond, true) && !can_leave(body, true) {
                    errors.at(stmt.span, CANNOT_END);
                }
                loops_that_cannot_end(body, errors);
            }
            StmtKind::For(f) => loops_that_cannot_end(&f.body, errors),
            StmtKind::If {
                then, otherwise, ..
            } => {
                loops_that_cannot_end(then, errors);
                otherwise
                    .iter()
                    .for_each(|o| loops_that_cannot_end(o, errors));
            }
            StmtKind::Block(body) => loops_that_cannot_end(body, errors),
            StmtKind::Match { arms, .. } => arms
                .iter()
                .for_each(|arm| loops_that_cannot_end(&arm.body, errors)),
            _ => {}
        }
    }
}

/// The error at a loop that cannot end: WGSL (Tint) refuses it, after folding constant
/// conditions.
const CANNOT_END: &str = "this loop has no `break` or `return` that can run (a `break` under a \
                          condition that is always false does not count), and WGSL refuses a \
                          loop that cannot end; add a `break` under the condition that ends it";

/// Whether `cond` is the constant `value`.
fn is_constant(cond: &Expr, value: bool) -> bool {
    matches!(crate::ir::eval::value(cond, &Locals::default()), Some(Value::Bool(b)) if b == value)
}

/// Whether `block` holds a `return`, or, when `own` (the body of the loop in question, or
/// code of it outside nested loops), a `break` of that loop; in its statements or in the
/// value blocks of their expressions (`let step = match c { 0 => { if d { break; } 1 } .. }`).
fn can_leave(block: &Block, own: bool) -> bool {
    block.iter().any(|stmt| match &stmt.kind {
        StmtKind::Break => own,
        StmtKind::Return(_) => true,
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            value_can_leave(cond, own)
                || (!is_constant(cond, false) && can_leave(then, own))
                || (!is_constant(cond, true)
                    && otherwise.as_ref().is_some_and(|o| can_leave(o, own)))
        }
        StmtKind::Block(body) => can_leave(body, own),
        StmtKind::Match { scrutinee, arms } => {
            value_can_leave(scrutinee, own) || arms.iter().any(|arm| can_leave(&arm.body, own))
        }
        StmtKind::Loop(body) => can_leave(body, false),
        StmtKind::While { cond, body } => value_can_leave(cond, own) || can_leave(body, false),
        StmtKind::For(f) => {
            [&f.start, &f.end]
                .into_iter()
                .chain(&f.step)
                .any(|e| value_can_leave(e, own))
                || can_leave(&f.body, false)
        }
        StmtKind::Let { init, .. } => init.as_ref().is_some_and(|e| value_can_leave(e, own)),
        StmtKind::Assign { target, value, .. } => {
            value_can_leave(target, own) || value_can_leave(value, own)
        }
        StmtKind::Expr(e) => value_can_leave(e, own),
        StmtKind::Continue => false,
    })
}

/// Whether a value block inside `e` can leave, as [`can_leave`] says.
fn value_can_leave(e: &Expr, own: bool) -> bool {
    let block =
        |b: &crate::ir::BlockExpr| can_leave(&b.stmts, own) || value_can_leave(&b.tail, own);
    let any = |es: &[Expr]| es.iter().any(|e| value_can_leave(e, own));
    match &e.kind {
        ExprKind::Block(b) => block(b),
        ExprKind::If(cond, then, otherwise) => {
            value_can_leave(cond, own)
                || (!is_constant(cond, false) && block(then))
                || (!is_constant(cond, true) && block(otherwise))
        }
        ExprKind::Match(scrutinee, arms) => {
            value_can_leave(scrutinee, own) || arms.iter().any(|arm| block(&arm.body))
        }
        ExprKind::Field(a, _)
        | ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Bitcast(a, _)
        | ExprKind::Ref(_, a)
        | ExprKind::Repeat(a, _) => value_can_leave(a, own),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            value_can_leave(a, own) || value_can_leave(b, own)
        }
        ExprKind::Call(_, args)
        | ExprKind::GenericCall(_, _, args)
        | ExprKind::Builtin(_, args)
        | ExprKind::Array(args) => any(args),
        ExprKind::Method(receiver, _, args) => value_can_leave(receiver, own) || any(args),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => false,
    }
}

/// `-x` where `x` is a `u32` (an unsuffixed literal becomes one where its use needs a `u32`).
fn negated_unsigned(block: &Block, errors: &mut Errors) {
    visit_exprs(block, &mut |e| {
        if let ExprKind::Unary(UnOp::Neg, operand) = &e.kind {
            if operand.ty == Ty::U32 {
                errors.at(
                    e.span,
                    "this negates a `u32` (the type its use needs), which has no negative values; \
                     compute in `i32` (`x as i32`) or use `wrapping_sub`",
                );
            }
        }
    });
}

fn message(found: &Found, specialization: Option<&Specialization>) -> String {
    let mut text = describe(found.problem);
    let iterations: Vec<String> = found
        .iterations
        .iter()
        .map(|(name, value)| format!("`{name}` is {value}"))
        .collect();
    if !iterations.is_empty() {
        text = format!(
            "in the unrolled iteration where {}, {text}",
            iterations.join(" and ")
        );
    }
    if let Some(specialization) = specialization {
        text = format!(
            "in the variant specialized for `{}`, {text}; or drop that specialization",
            specialization.describe()
        );
    }
    text
}

fn describe(problem: Problem) -> String {
    match problem {
        Problem::DivisionByZero => "this divides by a constant zero, which WGSL cannot compile \
                                   (and Rust panics on); divide by a value that is not 0"
            .to_owned(),
        Problem::ShiftTooFar(amount) => format!(
            "this shifts a 32-bit value by {amount}, but shift amounts are 0 to 31 (WGSL cannot \
             compile it, and Rust panics on it as an overflow); shift by less than 32"
        ),
        Problem::Overflow { wrapped, op } => {
            let ty = scalar_of(wrapped).rust_name();
            match op.and_then(wrapping_method) {
                Some(method) => format!(
                    "this constant arithmetic overflows `{ty}`, which Rust rejects; keep it in \
                     range, or write `a.{method}(b)` if the wrapped value ({}) is meant",
                    shown(wrapped)
                ),
                None => format!(
                    "this constant arithmetic overflows `{ty}`, which Rust rejects; keep it in range"
                ),
            }
        }
        Problem::Infinite => "this constant is infinite, and WGSL has no infinite constants (a \
                              GPU may even assume there are no infinities); keep it finite, e.g. \
                              use `f32::MAX` as a bound"
            .to_owned(),
        Problem::NotANumber => "this constant is NaN (such as `0.0 / 0.0`) and WGSL has no NaN \
                                constants; compute a number"
            .to_owned(),
        Problem::OutOfDomain(name) => format!(
            "`{name}` of this constant has no finite value ({}), and WGSL rejects constants that \
             are infinite or NaN; pass an argument in its domain",
            domain(name)
        ),
        Problem::LiteralOutOfRange(scalar) => format!(
            "this literal does not fit in `{}`, whose values are {}",
            scalar.rust_name(),
            range(scalar)
        ),
        Problem::IndexOutOfBounds { index, len } => format!(
            "index {index} is out of bounds for a length of {len} (indices 0 to {})",
            len.saturating_sub(1)
        ),
        Problem::ClampBoundsReversed => "the lower bound of this `clamp` is above its upper \
                                         bound (Rust panics on that); swap them"
            .to_owned(),
        Problem::CeilDivOverflow(scalar) => format!(
            "`ceil_div(a, b)` computes `(a + b - 1) / b`, and with these constants `a + b - 1` \
             overflows `{ty}`; keep `a + b` within `{ty}`",
            ty = scalar.rust_name()
        ),
        Problem::LaneNotConstant => "the lane of `subgroup_broadcast` must be a constant (WGSL \
                                     requires a const-expression: a literal, a constant, an \
                                     unrolled loop's variable, or arithmetic of them); to read \
                                     from a lane computed at run time, use \
                                     `subgroup_shuffle(x, lane)`"
            .to_owned(),
        Problem::LaneOutOfRange(lane) => format!(
            "the lane of `subgroup_broadcast` is {lane}, but WGSL requires a lane below 128 \
             (the largest subgroup); broadcast from a lane in 0..128"
        ),
        Problem::HalfNotFinite => "`unpack_2x16_float` of this constant gives a half that is \
                                   infinite or NaN (exponent bits all set, as in `0x7c00`), and \
                                   WGSL has no infinite or NaN constants; unpack a word of finite \
                                   halves"
            .to_owned(),
        Problem::PackedOutOfHalf => "`pack_2x16_float` of this constant has a lane past the range \
                                     of `f16` (at most 65504 in magnitude), which WGSL cannot \
                                     compile; keep each lane within -65504..=65504"
            .to_owned(),
        Problem::ZeroVectorNormalized => "this normalizes a constant zero vector, which has no \
                                          direction (WGSL cannot compile it); normalize a vector \
                                          that is not zero"
            .to_owned(),
    }
}

/// The method that wraps where `op` overflows.
fn wrapping_method(op: BinOp) -> Option<&'static str> {
    match op {
        BinOp::Add => Some("wrapping_add"),
        BinOp::Sub => Some("wrapping_sub"),
        BinOp::Mul => Some("wrapping_mul"),
        _ => None,
    }
}

fn domain(name: &str) -> &'static str {
    match name {
        "sqrt" => "it takes numbers from 0 up",
        "ln" | "log2" => "it takes numbers above 0",
        "asin" | "acos" => "it takes numbers from -1 to 1",
        "powf" => {
            "it takes a positive base, or 0 with a positive exponent: WGSL computes \
             `exp2(y * log2(x))`"
        }
        "recip" => "0 has no reciprocal",
        _ => "the result would be infinite or NaN",
    }
}

fn range(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::U32 => "0 to 4294967295 (`u32::MAX`)",
        Scalar::I32 => "-2147483648 to 2147483647 (`i32::MIN` to `i32::MAX`)",
        Scalar::F16 => "finite and at most 65504 in magnitude",
        _ => "finite and at most 3.4028235e38 (`f32::MAX`) in magnitude",
    }
}

fn scalar_of(value: Value) -> Scalar {
    match value {
        Value::Int(_, s) | Value::Float(_, s) => s,
        Value::Bool(_) => Scalar::Bool,
    }
}

fn shown(value: Value) -> String {
    match value {
        Value::Int(v, _) => v.to_string(),
        Value::Float(v, _) => format!("{v:?}"),
        Value::Bool(b) => b.to_string(),
    }
}
