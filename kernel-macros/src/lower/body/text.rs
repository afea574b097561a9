//! The pieces of WGSL text the lowering assembles: builtin templates filled with their
//! arguments, parentheses dropped where they are noise, splats and vector shapes, shift
//! amounts, and literals of each type.

use crate::ir::eval::Value;
use crate::ir::*;
use crate::lower::wgsl_ty;

/// How many times `template` spells argument `index` (`{bits}` spells the first).
pub(super) fn uses(template: &str, index: usize) -> usize {
    let bits = if index == 0 {
        template.matches("{bits}").count()
    } else {
        0
    };
    template.matches(&format!("{{{index}}}")).count() + bits
}

/// `template` with `{0}`, `{1}`, .. replaced by `args` and other `{name}`s by `named`. An
/// argument that stands alone between a call's parentheses or commas loses its outer
/// parentheses: `exp(a + b)`, not `exp((a + b))`.
pub(super) fn fill(
    template: &str,
    args: &[String],
    named: impl Fn(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        let after = &rest[close + 1..];
        let alone = (out.ends_with('(') || out.ends_with(", "))
            && (after.starts_with(')') || after.starts_with(','));
        match name.parse::<usize>() {
            Ok(index) => {
                let text = args.get(index).map_or("", String::as_str);
                out.push_str(if alone { argument(text) } else { text });
            }
            Err(_) => out.push_str(&named(name).unwrap_or_default()),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `text` without parentheses around all of it.
/// A call's argument: [`strip_parens`], but a comparison keeps its parentheses, since WGSL
/// would read `h(i < 4u, j > 2u)` as the template list `h<..>`.
pub(super) fn argument(text: &str) -> &str {
    let inner = strip_parens(text);
    match [" < ", " > ", " <= ", " >= "]
        .iter()
        .any(|c| inner.contains(c))
    {
        true => text,
        false => inner,
    }
}

/// `value` for a scalar type, or `vecN<f32>(value)` for a vector.
pub(super) fn splat(ty: &Ty, value: &str) -> String {
    match ty {
        Ty::Vector(..) => format!("{}({value})", wgsl_ty(ty)),
        _ => value.to_owned(),
    }
}

/// `scalar` in the shape of `ty`: itself, or a vector of as many components.
fn shaped(ty: &Ty, scalar: &str) -> String {
    match ty {
        Ty::Vector(n, _) => format!("vec{n}<{scalar}>"),
        _ => scalar.to_owned(),
    }
}

/// The `u32` literal `value` in the shape of `ty` (splatted for a vector).
pub(super) fn shaped_u32(ty: &Ty, value: &str) -> String {
    match ty {
        Ty::Vector(..) => format!("{}({value})", shaped(ty, "u32")),
        _ => value.to_owned(),
    }
}

/// The bits of the float `text` (of type `ty`) as `u32`s; an `f16` is widened to `f32` first,
/// which keeps its sign and NaN-ness.
pub(super) fn float_bits(ty: &Ty, text: &str) -> String {
    let text = strip_parens(text);
    let wide = match ty.scalar() {
        Some(Scalar::F16) => format!("{}({text})", shaped(ty, "f32")),
        _ => text.to_owned(),
    };
    format!("bitcast<{}>({wide})", shaped(ty, "u32"))
}

/// WGSL shifts take a `u32` amount.
pub(super) fn shift_amount(amount: &Expr, text: String) -> String {
    match amount.ty.scalar() {
        Some(Scalar::U32) => text,
        _ => format!("u32({text})"),
    }
}

pub fn int_literal(value: u64, ty: &Ty) -> String {
    match ty.scalar() {
        Some(Scalar::U32) => format!("{value}u"),
        Some(Scalar::F32) => format!("{value}.0f"),
        Some(Scalar::F16) => format!("{value}.0h"),
        _ => format!("{value}i"),
    }
}

/// The WGSL literal of a constant integer or boolean (a negative one parenthesized; `i32::MIN`,
/// which has no literal, as `-2147483647i - 1i`).
pub(super) fn value_literal(value: Value) -> String {
    match value {
        Value::Int(v, Scalar::I32) if v == i64::from(i32::MIN) => "(-2147483647i - 1i)".to_owned(),
        Value::Int(v, scalar) if v < 0 => format!("({})", signed_literal(v, &Ty::Scalar(scalar))),
        Value::Int(v, scalar) => signed_literal(v, &Ty::Scalar(scalar)),
        Value::Float(v, scalar) => float_literal(v, &Ty::Scalar(scalar)),
        Value::Bool(b) => b.to_string(),
    }
}

pub(super) fn signed_literal(value: i64, ty: &Ty) -> String {
    match ty.scalar() {
        Some(Scalar::U32) => format!("{value}u"),
        _ => format!("{value}i"),
    }
}

/// A float literal of the type `ty` (`f32`, or `f16` written with WGSL's `h` suffix).
pub(super) fn float_literal(value: f64, ty: &Ty) -> String {
    let suffix = if ty.scalar() == Some(Scalar::F16) {
        'h'
    } else {
        'f'
    };
    let text = format!("{:?}", value as f32);
    // The shortest text of `f32::MAX`, `3.4028235e38`, is past it as a decimal; Tint reads a
    // literal exactly and rejects it ("value cannot be represented as 'f32'"). The shortest
    // text of the same value as an `f64` is exact.
    let text = match text.parse::<f64>() {
        Ok(read) if read.abs() > f64::from(f32::MAX) => format!("{:?}", f64::from(value as f32)),
        _ => text,
    };
    if text.contains(['.', 'e', 'E']) {
        format!("{text}{suffix}")
    } else {
        format!("{text}.0{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_carry_their_type() {
        assert_eq!(int_literal(3, &Ty::U32), "3u");
        assert_eq!(int_literal(3, &Ty::I32), "3i");
        assert_eq!(float_literal(1.0, &Ty::F32), "1.0f");
        assert_eq!(float_literal(1.5, &Ty::Scalar(Scalar::F16)), "1.5h");
        assert_eq!(float_literal(1e-5, &Ty::F32), "1e-5f");
        assert_eq!(float_literal(0.5, &Ty::F32), "0.5f");
        // Not `3.4028235e38f`, which Tint rejects as past `f32::MAX`.
        assert_eq!(
            float_literal(f64::from(f32::MAX), &Ty::F32),
            "3.4028234663852886e38f"
        );
        assert_eq!(
            float_literal(-f64::from(f32::MAX), &Ty::F32),
            "-3.4028234663852886e38f"
        );
        assert_eq!(signed_literal(-2, &Ty::I32), "-2i");
    }
}
