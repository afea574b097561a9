//! Constant evaluation: the one place where the macro computes the value of an expression made
//! of literals (the instance's constants are literals by then, and an unrolled loop's variable
//! is one, iteration by iteration): scalars, vectors lane by lane, and the builtins WGSL
//! evaluates on constants. Arithmetic follows Rust: checked, in the expression's own
//! type. Every result a WGSL compiler would refuse to evaluate (a division by zero, a shift
//! past the width, an infinite or NaN float, an index past a fixed length) is a [`Problem`]
//! instead of a value.
//!
//! `check/consts.rs` walks bodies with [`Eval`] and reports the problems at the user's tokens;
//! `specialize/` folds with [`binary`] (wrapping, as the general body does at run time);
//! `lower/` writes constant shifts as their value ([`value`]), because WGSL's constant
//! evaluation of `<<` rejects results that Rust accepts.
//!
//! This file walks expressions ([`Eval`]); the operations on values are in `eval/ops.rs`.

mod ops;

use std::collections::HashMap;

use proc_macro2::Ident;

use super::builtins::{Builtin, Signature};
use super::*;

pub use ops::{binary, bitcast, cast, float, int, literal, math, unary};
use ops::{ceil_div, greater, lane, swizzle, unpack, vector_to_scalar};

/// The value of a constant scalar expression. Integers are in their type's range; floats are
/// finite and rounded to their type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64, Scalar),
    Float(f64, Scalar),
    Bool(bool),
}

impl Value {
    /// The integer value, if this is an integer.
    pub fn int(self) -> Option<i64> {
        match self {
            Value::Int(v, _) => Some(v),
            _ => None,
        }
    }
}

/// Why an expression has no value WGSL accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Problem {
    /// An integer `/` or `%` by a constant 0.
    DivisionByZero,
    /// `<<` or `>>` by a constant amount outside `0..32`.
    ShiftTooFar(i64),
    /// Integer arithmetic out of the type's range; `wrapped` is what WGSL computes at run time,
    /// `op` the operator, when it was one.
    Overflow { wrapped: Value, op: Option<BinOp> },
    /// A float operation whose exact result is past the type's largest value.
    Infinite,
    /// A float operation with no numeric result (`0.0 / 0.0`).
    NotANumber,
    /// A math method outside its domain (`(-1.0f32).sqrt()`, `0.0f32.ln()`).
    OutOfDomain(&'static str),
    /// A literal its type cannot hold.
    LiteralOutOfRange(Scalar),
    /// A constant index past the end (or before the start) of an array or vector.
    IndexOutOfBounds { index: i64, len: u32 },
    /// `x.clamp(low, high)` with constant bounds and `low > high`.
    ClampBoundsReversed,
    /// `ceil_div(a, b)` of constants where `a + b - 1`, as WGSL computes it, overflows.
    CeilDivOverflow(Scalar),
    /// `v.normalize()` of a constant zero vector.
    ZeroVectorNormalized,
    /// `unpack_2x16_float(word)` of a constant word with a half that is infinite or NaN.
    HalfNotFinite,
    /// `pack_2x16_float(v)` of a constant lane past `f16`'s range (65504 in magnitude).
    PackedOutOfHalf,
    /// `subgroup_broadcast(x, lane)` with a lane that is not a constant (WGSL requires a
    /// const-expression).
    LaneNotConstant,
    /// `subgroup_broadcast(x, lane)` with a constant lane of 128 or more (WGSL's bound).
    LaneOutOfRange(i64),
}

/// What a walk of a body knows of its locals where it is: each enclosing unrolled loop's
/// variable in the iteration being walked, and the immutable integer `let`s whose value is
/// constant where they were last bound. [`Eval`] and `lower/` keep one each, so that what the
/// lowering writes as a constant is what the evaluator has checked.
#[derive(Clone, Default)]
pub struct Locals {
    loops: Vec<(LocalId, Value)>,
    lets: HashMap<LocalId, Value>,
}

impl Locals {
    /// The value of `local`, if known here.
    pub fn value(&self, local: LocalId) -> Option<Value> {
        self.loops
            .iter()
            .rev()
            .find(|(l, _)| *l == local)
            .map(|(_, v)| *v)
            .or_else(|| self.lets.get(&local).copied())
    }

    /// Enters an iteration of an unrolled loop whose variable `local` is `value`.
    pub fn enter_iteration(&mut self, local: LocalId, value: Value) {
        self.loops.push((local, value));
    }

    /// Leaves the innermost iteration.
    pub fn leave_iteration(&mut self) {
        self.loops.pop();
    }

    /// Records the `let` of `local`: known from here on when it is immutable and `value` is a
    /// constant integer. Floats stay run-time values (an infinity is no error there), and a
    /// `let` walked again (the next unrolled iteration) forgets a value it no longer has.
    pub fn bind(&mut self, local: LocalId, mutable: bool, value: Option<Value>) {
        match value.filter(|v| !mutable && matches!(v, Value::Int(..))) {
            Some(value) => self.lets.insert(local, value),
            None => self.lets.remove(&local),
        };
    }
}

/// The value of `e` if it is a constant WGSL evaluates without a problem.
pub fn value(e: &Expr, locals: &Locals) -> Option<Value> {
    let mut eval = Eval::new(locals.clone());
    let value = eval.expr(e);
    eval.problems.is_empty().then_some(value).flatten()
}

/// Evaluates expressions bottom-up, recording every problem with the span of the expression
/// that has it. [`Eval::block`] walks statements too, unrolled loops once per iteration.
pub struct Eval {
    /// What is known of the locals. Constant `let`s count: `lower/` writes expressions of them
    /// as values, so WGSL sees what they compute as constants too (and Rust, as rustc's lints
    /// do, refuses the same overflows, divisions by zero and indices out of bounds).
    locals: Locals,
    /// Problems found, each with its expression's span and the unrolled loop variables'
    /// values at the time (for "when `i` is 4").
    pub problems: Vec<Found>,
    /// The unrolled loops being walked: variable name and current value.
    iterations: Vec<(Ident, u64)>,
}

/// A problem at a span, in the iteration of the unrolled loops it was found in.
pub struct Found {
    pub span: Span,
    pub problem: Problem,
    pub iterations: Vec<(Ident, u64)>,
}

impl Eval {
    pub fn new(locals: Locals) -> Self {
        Eval {
            locals,
            problems: Vec::new(),
            iterations: Vec::new(),
        }
    }

    fn report(&mut self, span: Span, problem: Problem) {
        self.problems.push(Found {
            span,
            problem,
            iterations: self.iterations.clone(),
        });
    }

    /// `result` as a value, recording its problem at `span`.
    fn checked(&mut self, span: Span, result: Result<Value, Problem>) -> Option<Value> {
        result.map_err(|p| self.report(span, p)).ok()
    }

    /// Walks every statement of `block`.
    pub fn block(&mut self, block: &Block) {
        for stmt in block {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Let {
                init,
                local,
                mutable,
                ..
            } => {
                let value = init.as_ref().and_then(|e| self.expr(e));
                self.locals.bind(*local, *mutable, value);
            }
            StmtKind::Assign { target, op, value } => {
                self.expr(target);
                let right = self.expr(value);
                if let Some(op) = op {
                    self.operands(*op, None, right, stmt.span);
                }
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
                self.expr(e);
            }
            // A branch a constant condition never takes is not written out (`lower/` decides
            // with the same locals known), so its constants are never WGSL's problem.
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => match self.expr(cond) {
                Some(Value::Bool(true)) if !otherwise.as_ref().is_some_and(leaves) => {
                    self.block(then)
                }
                Some(Value::Bool(false)) if !leaves(then) => {
                    otherwise.iter().for_each(|b| self.block(b))
                }
                _ => {
                    self.block(then);
                    otherwise.iter().for_each(|b| self.block(b));
                }
            },
            StmtKind::For(f) => self.for_loop(f),
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::Loop(body) | StmtKind::Block(body) => self.block(body),
            StmtKind::Match { scrutinee, arms } => {
                self.expr(scrutinee);
                arms.iter().for_each(|arm| self.block(&arm.body));
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }

    /// An `#[unroll]`ed loop's body is walked once per iteration with its variable known, as
    /// `lower/` writes it out; the walk stops at the first iteration with a problem.
    fn for_loop(&mut self, f: &ForLoop) {
        [&f.start, &f.end].into_iter().chain(&f.step).for_each(|e| {
            self.expr(e);
        });
        let values = f.unroll.then(|| f.unroll_values()).flatten();
        let (Some(values), Some(scalar)) = (values, f.ty.scalar()) else {
            return self.block(&f.body);
        };
        if values.len() as u64 > MAX_UNROLL || !mentions(&f.body, f.local) {
            return self.block(&f.body);
        }
        let before = self.problems.len();
        for v in values {
            let Ok(value) = int(i128::from(v), scalar) else {
                break;
            };
            self.locals.enter_iteration(f.local, value);
            self.iterations.push((f.var.clone(), v));
            self.block(&f.body);
            self.iterations.pop();
            self.locals.leave_iteration();
            if self.problems.len() > before {
                break;
            }
        }
    }

    /// The value of `e` if it is a constant scalar; problems of `e` and its parts (vectors
    /// included) are recorded.
    pub fn expr(&mut self, e: &Expr) -> Option<Value> {
        if let ExprKind::Builtin(builtin, args) = &e.kind {
            if builtin.signature == Signature::SubgroupBroadcast {
                self.broadcast_lane(args);
                return None;
            }
        }
        if let Ty::Vector(..) = e.ty {
            self.vector(e);
            return None;
        }
        self.scalar(e)
    }

    /// `subgroup_broadcast(value, lane)`: the lane must be a constant below 128, which
    /// `lower/` writes as its value.
    fn broadcast_lane(&mut self, args: &[Expr]) {
        let [value, lane] = args else {
            return;
        };
        self.expr(value);
        let before = self.problems.len();
        match self.expr(lane) {
            Some(Value::Int(v, _)) if !(0..128).contains(&v) => {
                self.report(lane.span, Problem::LaneOutOfRange(v))
            }
            Some(_) => {}
            None if self.problems.len() == before => {
                self.report(lane.span, Problem::LaneNotConstant)
            }
            None => {}
        }
    }

    fn scalar(&mut self, e: &Expr) -> Option<Value> {
        let span = e.span;
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {
                let result = literal(e)?;
                self.checked(span, result)
            }
            ExprKind::Path(_, Some(local)) => self.locals.value(*local),
            ExprKind::Unary(UnOp::Neg, operand) if is_i32_min_magnitude(operand) => {
                Some(Value::Int(i64::from(i32::MIN), Scalar::I32))
            }
            ExprKind::Unary(op, operand) => {
                let v = self.expr(operand)?;
                let result = unary(*op, v)?;
                self.checked(span, result)
            }
            ExprKind::Binary(op, left, right) => {
                let (l, r) = (self.expr(left), self.expr(right));
                self.operands(*op, l, r, span)
            }
            ExprKind::Cast(value, target) if !target.is_vector() => {
                let v = self.expr(value)?;
                let result = cast(v, target.scalar()?)?;
                self.checked(span, result)
            }
            // A scalar filling a vector's lanes: `vector` evaluates it.
            ExprKind::Cast(value, _) => {
                self.expr(value);
                None
            }
            ExprKind::Index(base, index) => {
                self.expr(base);
                let i = self.expr(index).and_then(Value::int);
                let len = match &base.ty {
                    Ty::Array(_, len) => Some(*len),
                    Ty::Vector(len, _) => Some(u32::from(*len)),
                    _ => None,
                };
                if let (Some(index), Some(len)) = (i, len) {
                    if index < 0 || index >= i64::from(len) {
                        self.report(span, Problem::IndexOutOfBounds { index, len });
                    }
                }
                None
            }
            ExprKind::Builtin(builtin, args) if builtin.name == "pack_2x16_float" => {
                let lanes = args.first().and_then(|a| self.lanes(a))?;
                let outside = lanes.iter().any(
                    |lane| matches!(lane, Value::Float(x, _) if float(*x, Scalar::F16).is_err()),
                );
                if outside {
                    self.report(span, Problem::PackedOutOfHalf);
                }
                None
            }
            ExprKind::Builtin(builtin, args) if args.iter().any(|a| a.ty.is_vector()) => {
                let lanes: Vec<Option<Vec<Value>>> = args.iter().map(|a| self.lanes(a)).collect();
                let lanes: Vec<Vec<Value>> = lanes.into_iter().collect::<Option<_>>()?;
                let result = vector_to_scalar(builtin.name, &lanes)?;
                self.checked(span, result)
            }
            ExprKind::Builtin(builtin, args) => {
                let values: Vec<Option<Value>> = args.iter().map(|a| self.expr(a)).collect();
                self.builtin(builtin, &values, span)
            }
            ExprKind::Field(base, name) if base.ty.is_vector() => {
                let lanes = self.lanes(base)?;
                match swizzle(&lanes, name)?.as_slice() {
                    [one] => Some(*one),
                    _ => None,
                }
            }
            ExprKind::If(cond, then, otherwise) => {
                match self.expr(cond) {
                    Some(Value::Bool(true)) if !leaves(&otherwise.stmts) => self.block_expr(then),
                    Some(Value::Bool(false)) if !leaves(&then.stmts) => self.block_expr(otherwise),
                    _ => {
                        self.block_expr(then);
                        self.block_expr(otherwise);
                    }
                }
                None
            }
            ExprKind::Match(scrutinee, arms) => {
                self.expr(scrutinee);
                arms.iter().for_each(|arm| self.block_expr(&arm.body));
                None
            }
            ExprKind::Block(block) => {
                self.block_expr(block);
                None
            }
            ExprKind::Bitcast(value, target) => {
                let v = self.expr(value)?;
                let result = bitcast(v, target.scalar()?)?;
                self.checked(span, result)
            }
            ExprKind::Field(a, _) | ExprKind::Ref(_, a) | ExprKind::Repeat(a, _) => {
                self.expr(a);
                None
            }
            ExprKind::Call(_, args) | ExprKind::GenericCall(_, _, args) | ExprKind::Array(args) => {
                args.iter().for_each(|a| {
                    self.expr(a);
                });
                None
            }
            ExprKind::Method(receiver, _, args) => {
                self.expr(receiver);
                args.iter().for_each(|a| {
                    self.expr(a);
                });
                None
            }
            ExprKind::Path(_, None) => None,
        }
    }

    /// The lanes of `e`: a vector's components, or a scalar as one lane (broadcast where it
    /// meets a vector); `None` unless every lane is constant.
    fn lanes(&mut self, e: &Expr) -> Option<Vec<Value>> {
        if e.ty.is_vector() {
            self.vector(e)
        } else {
            self.expr(e).map(|v| vec![v])
        }
    }

    /// A vector expression, lane by lane: constructors, unpacking, swizzles, operators and
    /// math of constant lanes. The first problem of a lane is recorded once, at `e`.
    fn vector(&mut self, e: &Expr) -> Option<Vec<Value>> {
        let Ty::Vector(len, _) = e.ty else {
            return self.lanes(e);
        };
        let len = usize::from(len);
        let span = e.span;
        let lanes = match &e.kind {
            ExprKind::Builtin(builtin, args) => {
                let parts: Vec<Option<Vec<Value>>> = args.iter().map(|a| self.lanes(a)).collect();
                match builtin.signature {
                    Signature::Vector(_) => {
                        let lanes = parts.into_iter().collect::<Option<Vec<_>>>()?.concat();
                        match lanes.as_slice() {
                            [one] => vec![*one; len],
                            _ => lanes,
                        }
                    }
                    Signature::Fixed(..) => match parts.as_slice() {
                        [Some(word)] => match unpack(builtin.name, *word.first()?)? {
                            Ok(lanes) => lanes,
                            Err(problem) => {
                                self.report(span, problem);
                                return None;
                            }
                        },
                        _ => return None,
                    },
                    Signature::Math(..) if builtin.name == "normalize" => {
                        let [Some(v)] = parts.as_slice() else {
                            return None;
                        };
                        if v.iter()
                            .all(|lane| matches!(lane, Value::Float(x, _) if *x == 0.0))
                        {
                            self.report(span, Problem::ZeroVectorNormalized);
                            return None;
                        }
                        let length = vector_to_scalar("length", std::slice::from_ref(v))?;
                        let length = self.checked(span, length)?;
                        self.each_lane(len, span, |i| binary(BinOp::Div, v[i], length))?
                    }
                    Signature::Math(..) => self.lanewise(len, |eval, i| {
                        let args: Vec<Option<Value>> =
                            parts.iter().map(|p| lane(p.as_deref(), i)).collect();
                        eval.builtin(builtin, &args, span)
                    })?,
                    _ => return None,
                }
            }
            ExprKind::Binary(op, left, right) => {
                let (l, r) = (self.lanes(left), self.lanes(right));
                self.lanewise(len, |eval, i| {
                    let (a, b) = (lane(l.as_deref(), i), lane(r.as_deref(), i));
                    eval.operands(*op, a, b, span)
                })?
            }
            ExprKind::Unary(op, operand) => {
                let v = self.vector(operand)?;
                self.each_lane(len, span, |i| unary(*op, v[i]))?
            }
            ExprKind::Cast(value, target) => {
                let to = target.scalar()?;
                if !value.ty.is_vector() {
                    // A scalar fills every lane.
                    let v = self.expr(value)?;
                    let lane = self.checked(span, cast(v, to)?)?;
                    return Some(vec![lane; len]);
                }
                let v = self.vector(value)?;
                if v.len() != len {
                    return None;
                }
                self.each_lane(len, span, |i| cast(v[i], to))?
            }
            ExprKind::Field(base, name) => {
                let lanes = self.lanes(base)?;
                swizzle(&lanes, name)?
            }
            _ => {
                self.scalar(e);
                return None;
            }
        };
        (lanes.len() == len).then_some(lanes)
    }

    /// `len` lanes, lane `i` from `lane(self, i)`; every lane is evaluated (an unknown lane
    /// does not hide a later lane's problem) until the first problem, which is the only one
    /// recorded.
    fn lanewise(
        &mut self,
        len: usize,
        mut lane: impl FnMut(&mut Self, usize) -> Option<Value>,
    ) -> Option<Vec<Value>> {
        let before = self.problems.len();
        let mut lanes = Vec::with_capacity(len);
        for i in 0..len {
            lanes.push(lane(self, i));
            if self.problems.len() > before {
                return None;
            }
        }
        lanes.into_iter().collect()
    }

    /// `len` lanes from `lane`, a problem recorded at `span`.
    fn each_lane(
        &mut self,
        len: usize,
        span: Span,
        lane: impl Fn(usize) -> Option<Result<Value, Problem>>,
    ) -> Option<Vec<Value>> {
        self.lanewise(len, |eval, i| {
            let result = lane(i)?;
            eval.checked(span, result)
        })
    }

    fn block_expr(&mut self, block: &BlockExpr) {
        self.block(&block.stmts);
        self.expr(&block.tail);
    }

    /// `left op right` (or `place op= right`, with `left` unknown): the checks that hold
    /// whatever the left operand is (a constant zero divisor, a constant shift amount past the
    /// width), then the value when both are known.
    fn operands(
        &mut self,
        op: BinOp,
        left: Option<Value>,
        right: Option<Value>,
        span: Span,
    ) -> Option<Value> {
        match (op, right) {
            (BinOp::Div | BinOp::Rem, Some(Value::Int(0, _))) => {
                self.report(span, Problem::DivisionByZero);
                return None;
            }
            (BinOp::Shl | BinOp::Shr, Some(Value::Int(amount, _)))
                if !(0..32).contains(&amount) =>
            {
                self.report(span, Problem::ShiftTooFar(amount));
                return None;
            }
            _ => {}
        }
        let result = binary(op, left?, right?)?.map_err(|problem| match problem {
            Problem::Overflow { wrapped, .. } => Problem::Overflow {
                wrapped,
                op: Some(op),
            },
            other => other,
        });
        self.checked(span, result)
    }

    fn builtin(
        &mut self,
        builtin: &'static Builtin,
        args: &[Option<Value>],
        span: Span,
    ) -> Option<Value> {
        if builtin.signature == Signature::CeilDiv {
            return match args {
                [_, Some(Value::Int(0, _))] => {
                    self.report(span, Problem::DivisionByZero);
                    None
                }
                [Some(a), Some(b)] => {
                    let result = ceil_div(*a, *b)?;
                    self.checked(span, result)
                }
                _ => None,
            };
        }
        if builtin.name == "clamp" {
            if let [_, Some(low), Some(high)] = args {
                if greater(*low, *high) {
                    self.report(span, Problem::ClampBoundsReversed);
                    return None;
                }
            }
        }
        let args: Option<Vec<Value>> = args.iter().copied().collect();
        let result = math(builtin, &args?)?;
        self.checked(span, result)
    }
}

/// Whether `e` is the literal `2147483648` of type `i32`: only valid under `-`, as `i32::MIN`.
pub fn is_i32_min_magnitude(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Int(v) if v == 1 << 31) && e.ty == Ty::I32
}

/// Whether the body names the local `local`.
fn mentions(body: &Block, local: LocalId) -> bool {
    let mut found = false;
    visit_exprs(body, &mut |e| {
        found |= matches!(e.kind, ExprKind::Path(_, Some(l)) if l == local);
    });
    found
}
