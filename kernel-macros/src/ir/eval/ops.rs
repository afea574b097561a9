//! The operations on constant values, as Rust and WGSL define them: literals, arithmetic
//! checked in the operands' own type, casts and bit casts, and the builtins WGSL evaluates on
//! constants (rounded lane by lane to the lanes' type).

use proc_macro2::Ident;

use super::{Problem, Value};
use crate::ir::builtins::{Builtin, Signature};
use crate::ir::*;

/// Lane `i` of `lanes` (a single lane is a scalar, the same in every lane).
pub(super) fn lane(lanes: Option<&[Value]>, i: usize) -> Option<Value> {
    match lanes? {
        [one] => Some(*one),
        many => many.get(i).copied(),
    }
}

/// The components a swizzle (`v.x`, `v.zy`, `v.rgb`) picks from constant lanes.
pub(super) fn swizzle(lanes: &[Value], name: &Ident) -> Option<Vec<Value>> {
    name.to_string()
        .chars()
        .map(|c| {
            let i = "xyzw".find(c).or_else(|| "rgba".find(c))?;
            lanes.get(i).copied()
        })
        .collect()
}

/// `length`, `dot` and `distance` of constant vectors, each step rounded to the lanes' type
/// as WGSL evaluates them (so a square past `f32::MAX` is an overflow, as in Tint).
pub(super) fn vector_to_scalar(name: &str, args: &[Vec<Value>]) -> Option<Result<Value, Problem>> {
    let scalar = match args.first()?.first()? {
        Value::Float(_, s) => *s,
        _ => return None,
    };
    let floats = |v: &Vec<Value>| -> Option<Vec<f64>> {
        v.iter()
            .map(|lane| match lane {
                Value::Float(x, _) => Some(*x),
                _ => None,
            })
            .collect()
    };
    // Each operation's result rounded to the lanes' type (`float` gives a float), or its
    // problem.
    let step = |x: f64| match float(x, scalar)? {
        Value::Float(rounded, _) => Ok(rounded),
        _ => Ok(x),
    };
    let dot = |a: &[f64], b: &[f64]| -> Result<f64, Problem> {
        a.iter()
            .zip(b)
            .try_fold(0.0, |sum, (x, y)| step(sum + step(x * y)?))
    };
    let a = floats(&args[0])?;
    let result = match (name, args.get(1)) {
        ("length", None) => dot(&a, &a).and_then(|d| step(d.sqrt())),
        ("dot", Some(b)) => dot(&a, &floats(b)?),
        ("distance", Some(b)) => {
            let b = floats(b)?;
            let difference: Result<Vec<f64>, Problem> =
                a.iter().zip(&b).map(|(x, y)| step(x - y)).collect();
            difference
                .and_then(|d| dot(&d, &d))
                .and_then(|d| step(d.sqrt()))
        }
        _ => return None,
    };
    Some(result.map(|x| Value::Float(x, scalar)))
}

/// The lanes of an unpacking builtin of a constant word (a half that is infinite or NaN is a
/// problem: WGSL has no such constants).
pub(super) fn unpack(name: &str, word: Value) -> Option<Result<Vec<Value>, Problem>> {
    let Value::Int(word, _) = word else {
        return None;
    };
    let word = word as u32;
    let bytes = word.to_le_bytes();
    let halves = [word as u16, (word >> 16) as u16];
    let f32s = |values: Vec<f64>| {
        values
            .into_iter()
            .map(|x| Value::Float(f64::from(x as f32), Scalar::F32))
            .collect()
    };
    Some(Ok(match name {
        "unpack_2x16_float" => {
            let lanes: Option<Vec<f64>> = halves.iter().map(|&h| half(h)).collect();
            match lanes {
                Some(lanes) => f32s(lanes),
                None => return Some(Err(Problem::HalfNotFinite)),
            }
        }
        "unpack_4x8_unorm" => f32s(bytes.iter().map(|&b| f64::from(b) / 255.0).collect()),
        "unpack_4x8_snorm" => f32s(
            bytes
                .iter()
                .map(|&b| (f64::from(b as i8) / 127.0).max(-1.0))
                .collect(),
        ),
        "unpack_4xu8" => bytes
            .iter()
            .map(|&b| Value::Int(i64::from(b), Scalar::U32))
            .collect(),
        "unpack_4xi8" => bytes
            .iter()
            .map(|&b| Value::Int(i64::from(b as i8), Scalar::I32))
            .collect(),
        "unpack_2x16_unorm" => f32s(halves.iter().map(|&h| f64::from(h) / 65535.0).collect()),
        "unpack_2x16_snorm" => f32s(
            halves
                .iter()
                .map(|&h| (f64::from(h as i16) / 32767.0).max(-1.0))
                .collect(),
        ),
        _ => return None,
    }))
}

/// The value of the `f16` with bits `bits`; `None` if it is infinite or NaN.
fn half(bits: u16) -> Option<f64> {
    let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    match exponent {
        0x1f => None,
        0 => Some(sign * mantissa * 2f64.powi(-24)),
        _ => Some(sign * (1.0 + mantissa / 1024.0) * 2f64.powi(exponent - 15)),
    }
}

/// `ceil_div(a, b)` as WGSL computes it, `(a + b - 1) / b` (the zero divisor is checked
/// before).
pub(super) fn ceil_div(a: Value, b: Value) -> Option<Result<Value, Problem>> {
    let (Value::Int(a, scalar), Value::Int(b, _)) = (a, b) else {
        return None;
    };
    let sum = i128::from(a) + i128::from(b) - 1;
    Some(match int(sum, scalar) {
        Ok(_) => int(sum / i128::from(b), scalar),
        Err(_) => Err(Problem::CeilDivOverflow(scalar)),
    })
}

/// Whether `a > b`, for two numbers of one type.
pub(super) fn greater(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Int(a, _), Value::Int(b, _)) => a > b,
        (Value::Float(a, _), Value::Float(b, _)) => a > b,
        _ => false,
    }
}

/// `value` rounded to the float type `scalar`, or the problem if it is not finite there.
pub fn float(value: f64, scalar: Scalar) -> Result<Value, Problem> {
    if value.is_nan() {
        return Err(Problem::NotANumber);
    }
    let rounded = match scalar {
        // WGSL (Tint) refuses an `f16` constant past 65504, the largest finite `f16`, even
        // one that rounds down to it.
        Scalar::F16 if value.abs() > 65504.0 => f64::INFINITY,
        Scalar::F16 => value,
        _ => f64::from(value as f32),
    };
    if rounded.is_infinite() {
        return Err(Problem::Infinite);
    }
    Ok(Value::Float(rounded, scalar))
}

/// `value` as an integer of type `scalar`, or an overflow carrying the wrapped value.
pub fn int(value: i128, scalar: Scalar) -> Result<Value, Problem> {
    let (min, max) = match scalar {
        Scalar::U32 => (0, i128::from(u32::MAX)),
        _ => (i128::from(i32::MIN), i128::from(i32::MAX)),
    };
    let wrapped = match scalar {
        Scalar::U32 => i64::from(value as u32),
        _ => i64::from(value as i32),
    };
    let wrapped = Value::Int(wrapped, scalar);
    if (min..=max).contains(&value) {
        Ok(wrapped)
    } else {
        Err(Problem::Overflow { wrapped, op: None })
    }
}

/// The value of a literal of its (resolved) type; `None` for other expressions or a type not
/// yet known.
pub fn literal(e: &Expr) -> Option<Result<Value, Problem>> {
    let scalar = e.ty.scalar()?;
    Some(match e.kind {
        ExprKind::Bool(b) => Ok(Value::Bool(b)),
        ExprKind::Int(v) if scalar.is_integer() => {
            int(i128::from(v), scalar).map_err(|_| Problem::LiteralOutOfRange(scalar))
        }
        ExprKind::Int(v) if scalar.is_float() => {
            float(v as f64, scalar).map_err(|_| Problem::LiteralOutOfRange(scalar))
        }
        ExprKind::Float(v) if scalar.is_float() => {
            float(v, scalar).map_err(|_| Problem::LiteralOutOfRange(scalar))
        }
        _ => return None,
    })
}

/// `op v`; `None` where the operation does not apply (a type error reported elsewhere).
pub fn unary(op: UnOp, v: Value) -> Option<Result<Value, Problem>> {
    Some(match (op, v) {
        (UnOp::Neg, Value::Int(v, Scalar::I32)) => int(-i128::from(v), Scalar::I32),
        (UnOp::Neg, Value::Float(v, s)) => Ok(Value::Float(-v, s)),
        (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnOp::Not, Value::Int(v, s)) => int(i128::from(!v), s).or_else(wrapped),
        _ => return None,
    })
}

/// Accepts an overflow as its wrapped value (bitwise operations and casts wrap in Rust too).
fn wrapped(problem: Problem) -> Result<Value, Problem> {
    match problem {
        Problem::Overflow { wrapped, .. } => Ok(wrapped),
        other => Err(other),
    }
}

/// `a op b` with Rust's rules: integer overflow, division by zero and shifts past the width
/// are problems; so are float results that are infinite or NaN. `None` where the operation
/// does not apply to the values (a type error, reported by `check/`).
pub fn binary(op: BinOp, a: Value, b: Value) -> Option<Result<Value, Problem>> {
    use BinOp::*;
    let boolean = |v: bool| Ok(Value::Bool(v));
    Some(match (a, b) {
        (Value::Int(x, s), Value::Int(y, _)) => {
            let (x, y) = (i128::from(x), i128::from(y));
            match op {
                Add => int(x + y, s),
                Sub => int(x - y, s),
                Mul => int(x * y, s),
                Div | Rem if y == 0 => Err(Problem::DivisionByZero),
                Div => int(x / y, s),
                Rem => int(x % y, s),
                BitAnd => int(x & y, s).or_else(wrapped),
                BitOr => int(x | y, s).or_else(wrapped),
                BitXor => int(x ^ y, s).or_else(wrapped),
                Shl | Shr if !(0..32).contains(&y) => Err(Problem::ShiftTooFar(y as i64)),
                Shl => int(x << y, s).or_else(wrapped),
                Shr => int(x >> y, s),
                Eq => boolean(x == y),
                Ne => boolean(x != y),
                Lt => boolean(x < y),
                Le => boolean(x <= y),
                Gt => boolean(x > y),
                Ge => boolean(x >= y),
                And | Or => return None,
            }
        }
        (Value::Float(x, s), Value::Float(y, _)) => match op {
            Add => float(x + y, s),
            Sub => float(x - y, s),
            Mul => float(x * y, s),
            Div => float(x / y, s),
            Rem => float(x % y, s),
            Eq => boolean(x == y),
            Ne => boolean(x != y),
            Lt => boolean(x < y),
            Le => boolean(x <= y),
            Gt => boolean(x > y),
            Ge => boolean(x >= y),
            _ => return None,
        },
        (Value::Bool(x), Value::Bool(y)) => match op {
            And | BitAnd => boolean(x && y),
            Or | BitOr => boolean(x || y),
            BitXor | Ne => boolean(x != y),
            Eq => boolean(x == y),
            _ => return None,
        },
        _ => return None,
    })
}

/// `v as target` with Rust's rules: integers wrap, floats saturate toward integers.
pub fn cast(v: Value, target: Scalar) -> Option<Result<Value, Problem>> {
    Some(match (v, target) {
        (Value::Int(v, _), t) if t.is_integer() => int(i128::from(v), t).or_else(wrapped),
        (Value::Int(v, _), t) if t.is_float() => float(v as f64, t),
        (Value::Float(v, _), t) if t.is_float() => float(v, t),
        (Value::Float(v, _), Scalar::U32) => Ok(Value::Int(i64::from(v as u32), Scalar::U32)),
        (Value::Float(v, _), Scalar::I32) => Ok(Value::Int(i64::from(v as i32), Scalar::I32)),
        (Value::Bool(b), t) if t.is_integer() => Ok(Value::Int(i64::from(b), t)),
        (Value::Bool(b), t) if t.is_float() => Ok(Value::Float(f64::from(u8::from(b)), t)),
        (Value::Bool(b), Scalar::Bool) => Ok(Value::Bool(b)),
        _ => return None,
    })
}

/// `bitcast::<target>(v)` of a 32-bit scalar; bits that make an infinite or NaN `f32` are a
/// problem, as for any other float constant.
pub fn bitcast(v: Value, target: Scalar) -> Option<Result<Value, Problem>> {
    let bits = match v {
        Value::Int(v, _) => v as u32,
        Value::Float(x, Scalar::F32) => (x as f32).to_bits(),
        _ => return None,
    };
    Some(match target {
        Scalar::F32 => float(f64::from(f32::from_bits(bits)), Scalar::F32),
        Scalar::U32 => Ok(Value::Int(i64::from(bits), Scalar::U32)),
        Scalar::I32 => Ok(Value::Int(i64::from(bits as i32), Scalar::I32)),
        _ => return None,
    })
}

/// A float math method on constant arguments, computed to find results that are infinite or
/// NaN (which WGSL rejects); `None` for the methods the macro does not evaluate.
pub fn math(builtin: &'static Builtin, args: &[Value]) -> Option<Result<Value, Problem>> {
    let Signature::Math(..) = builtin.signature else {
        return None;
    };
    match args.first()? {
        Value::Int(_, scalar) => return integer_math(builtin.name, args, *scalar),
        Value::Float(x, Scalar::F32) if builtin.name == "to_bits" => {
            return Some(Ok(Value::Int(
                i64::from((*x as f32).to_bits()),
                Scalar::U32,
            )));
        }
        _ => {}
    }
    let floats: Option<Vec<f64>> = args
        .iter()
        .map(|v| match v {
            Value::Float(x, _) => Some(*x),
            _ => None,
        })
        .collect();
    let (floats, Some(Value::Float(_, scalar))) = (floats?, args.first()) else {
        return None;
    };
    let x = floats[0];
    let y = || floats.get(1).copied().unwrap_or(0.0);
    let exact = match builtin.name {
        "abs" => x.abs(),
        "min" => x.min(y()),
        "max" => x.max(y()),
        "clamp" => x.max(y()).min(floats.get(2).copied().unwrap_or(x)),
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "ln" => x.ln(),
        "log2" => x.log2(),
        "sqrt" => x.sqrt(),
        // WGSL's `pow(x, y)` is `exp2(y * log2(x))`: NaN for a negative base (where Rust's
        // `powf` has whole powers) and for 0 to the power 0 (where Rust's is 1).
        "powf" if x < 0.0 || (x == 0.0 && y() <= 0.0) => f64::NAN,
        "powf" => x.powf(y()),
        "tanh" => x.tanh(),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "atan2" => x.atan2(y()),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        "trunc" => x.trunc(),
        "fract" => x.fract(),
        "signum" => x.signum(),
        "recip" => 1.0 / x,
        "mul_add" => x.mul_add(y(), floats.get(2).copied().unwrap_or(0.0)),
        "to_degrees" => x.to_degrees(),
        "to_radians" => x.to_radians(),
        _ => return None,
    };
    // NaN, or an infinity from 0 (`0.0f32.ln()`, `0.0f32.recip()`), is outside the domain;
    // an infinity from a large argument (`100.0f32.exp()`) is an overflow.
    Some(match float(exact, *scalar) {
        Err(Problem::NotANumber) => Err(Problem::OutOfDomain(builtin.name)),
        Err(Problem::Infinite) if x == 0.0 => Err(Problem::OutOfDomain(builtin.name)),
        other => other,
    })
}

/// An integer method on constant arguments, with Rust's overflow rules (`i32::MIN.abs()`
/// overflows; the `wrapping_` methods wrap).
fn integer_math(name: &str, args: &[Value], scalar: Scalar) -> Option<Result<Value, Problem>> {
    let ints: Vec<i128> = args
        .iter()
        .map(|v| v.int().map(i128::from))
        .collect::<Option<_>>()?;
    let x = ints[0];
    let y = || ints.get(1).copied();
    // The 32 bits of `x`, for the bit counts.
    let bits = x as u32;
    let count = |n: u32| Ok(Value::Int(i64::from(n), Scalar::U32));
    Some(match name {
        "abs" => int(x.abs(), scalar),
        "signum" => int(x.signum(), scalar),
        "min" => int(x.min(y()?), scalar),
        "max" => int(x.max(y()?), scalar),
        "clamp" => int(x.max(y()?).min(*ints.get(2)?), scalar),
        "wrapping_add" => int(x + y()?, scalar).or_else(wrapped),
        "wrapping_sub" => int(x - y()?, scalar).or_else(wrapped),
        "wrapping_mul" => int(x * y()?, scalar).or_else(wrapped),
        "count_ones" => count(bits.count_ones()),
        "leading_zeros" => count(bits.leading_zeros()),
        "trailing_zeros" => count(bits.trailing_zeros()),
        "reverse_bits" => int(i128::from(bits.reverse_bits()), scalar).or_else(wrapped),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: Scalar = Scalar::U32;
    const I: Scalar = Scalar::I32;

    #[test]
    fn integer_arithmetic_is_checked_in_its_type() {
        let u = |v| Value::Int(v, U);
        let i = |v| Value::Int(v, I);
        assert_eq!(binary(BinOp::Add, u(1), u(2)), Some(Ok(u(3))));
        assert_eq!(
            binary(BinOp::Sub, u(0), u(1)),
            Some(Err(Problem::Overflow {
                wrapped: u(i64::from(u32::MAX)),
                op: None
            }))
        );
        assert_eq!(binary(BinOp::Div, i(-7), i(2)), Some(Ok(i(-3))));
        assert_eq!(
            binary(BinOp::Rem, u(7), u(0)),
            Some(Err(Problem::DivisionByZero))
        );
        // Bits shifted out are not an overflow in Rust; the amount is.
        assert_eq!(
            binary(BinOp::Shl, i(3), u(31)),
            Some(Ok(i(i64::from(i32::MIN))))
        );
        assert_eq!(
            binary(BinOp::Shr, u(8), u(32)),
            Some(Err(Problem::ShiftTooFar(32)))
        );
    }

    #[test]
    fn floats_must_stay_finite_and_casts_follow_rust() {
        let f = |v| Value::Float(v, Scalar::F32);
        assert_eq!(
            binary(BinOp::Mul, f(f64::from(f32::MAX)), f(2.0)),
            Some(Err(Problem::Infinite))
        );
        assert_eq!(
            binary(BinOp::Div, f(0.0), f(0.0)),
            Some(Err(Problem::NotANumber))
        );
        assert_eq!(
            cast(f(5e9), U),
            Some(Ok(Value::Int(i64::from(u32::MAX), U)))
        );
        assert_eq!(
            cast(Value::Int(-1, I), U),
            Some(Ok(Value::Int(i64::from(u32::MAX), U)))
        );
        assert_eq!(
            float(70000.0, Scalar::F16),
            Err(Problem::Infinite),
            "past f16's largest value"
        );
        assert_eq!(
            float(65505.0, Scalar::F16),
            Err(Problem::Infinite),
            "65505 would round to 65504, but WGSL refuses it"
        );
        assert_eq!(
            float(65504.0, Scalar::F16),
            Ok(Value::Float(65504.0, Scalar::F16))
        );
    }
}
