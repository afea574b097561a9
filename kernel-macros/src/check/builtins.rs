//! The builtin functions and methods of the kernel language and their types. `lower/` spells
//! them in WGSL; this file only knows what they accept and return.

use crate::ir::{Scalar, Ty};

/// Builtin free functions callable in bodies.
pub const FUNCTIONS: [&str; 11] = [
    "global_id",
    "local_id",
    "workgroup_id",
    "num_workgroups",
    "local_index",
    "workgroup_barrier",
    "storage_barrier",
    "vec2",
    "vec3",
    "vec4",
    "ceil_div",
];

/// Subgroup builtins: usable in kernels that declare `features(subgroups)`.
pub const SUBGROUP_FUNCTIONS: [&str; 7] = [
    "subgroup_size",
    "subgroup_invocation_id",
    "subgroup_add",
    "subgroup_min",
    "subgroup_max",
    "subgroup_broadcast_first",
    "subgroup_shuffle",
];

/// The invocation-id builtins and their types.
pub fn id_builtin(name: &str) -> Option<Ty> {
    match name {
        "global_id" | "local_id" | "workgroup_id" | "num_workgroups" => {
            Some(Ty::Vector(3, Scalar::U32))
        }
        "local_index" => Some(Ty::U32),
        _ => None,
    }
}

/// How a method's arguments relate to its receiver.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `x.f()`, result of the receiver's type.
    Unary,
    /// `x.f(y)` with `y` of the receiver's type, result of the receiver's type.
    Binary,
    /// `x.f(a, b)` with both of the receiver's type, result of the receiver's type.
    Ternary,
    /// `x.f()` returning the vector's scalar (`length`).
    ToScalar,
    /// `x.f(y)` returning the vector's scalar (`dot`, `distance`).
    BinaryToScalar,
    /// `x.f()` returning `u32` (`count_ones`, ...).
    ToU32,
}

/// Which receivers a method accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Receivers {
    /// `f32` scalars and vectors.
    Float,
    /// Any numeric scalar or vector.
    Numeric,
    /// `i32` and `f32` scalars and vectors.
    Signed,
    /// `u32`/`i32` scalars and vectors.
    Integer,
    /// `f32` vectors.
    FloatVector,
    /// `Vec3<f32>`.
    FloatVec3,
}

/// The math method `name`: what it accepts and how its result is typed.
pub fn method(name: &str) -> Option<(Receivers, Shape)> {
    use Receivers::*;
    use Shape::*;
    Some(match name {
        "exp" | "exp2" | "ln" | "log2" | "sqrt" | "tanh" | "sinh" | "cosh" | "sin" | "cos"
        | "tan" | "asin" | "acos" | "atan" | "floor" | "ceil" | "round" | "trunc" | "fract"
        | "recip" | "to_degrees" | "to_radians" => (Float, Unary),
        "signum" => (Signed, Unary),
        "abs" => (Signed, Unary),
        "powf" | "atan2" => (Float, Binary),
        "mul_add" => (Float, Ternary),
        "min" | "max" => (Numeric, Binary),
        "clamp" => (Numeric, Ternary),
        "wrapping_add" | "wrapping_sub" | "wrapping_mul" => (Integer, Binary),
        "count_ones" | "leading_zeros" | "trailing_zeros" => (Integer, ToU32),
        "reverse_bits" => (Integer, Unary),
        "length" => (FloatVector, ToScalar),
        "normalize" => (FloatVector, Unary),
        "dot" => (FloatVector, BinaryToScalar),
        "distance" => (FloatVector, BinaryToScalar),
        "cross" => (FloatVec3, Binary),
        _ => return None,
    })
}

/// How the math method `name` is called, for a message about its free-function form:
/// `a.min(b)`, `x.sqrt()`.
pub fn method_form(name: &str) -> Option<String> {
    let (_, shape) = method(name)?;
    Some(match shape {
        Shape::Unary | Shape::ToScalar | Shape::ToU32 => format!("x.{name}()"),
        Shape::Binary | Shape::BinaryToScalar => format!("a.{name}(b)"),
        Shape::Ternary if name == "clamp" => "x.clamp(low, high)".to_owned(),
        Shape::Ternary => format!("x.{name}(a, b)"),
    })
}

/// Whether `ty` is a receiver `receivers` accepts.
pub fn accepts(receivers: Receivers, ty: &Ty) -> bool {
    let scalar = ty.scalar();
    let is_vector = matches!(ty, Ty::Vector(..));
    let float = matches!(ty, Ty::FloatVar(_)) || scalar.is_some_and(Scalar::is_float);
    let int = matches!(ty, Ty::IntVar(_)) || scalar.is_some_and(Scalar::is_integer);
    match receivers {
        Receivers::Float => float,
        Receivers::Numeric => float || int,
        Receivers::Signed => float || matches!(ty, Ty::IntVar(_)) || scalar == Some(Scalar::I32),
        Receivers::Integer => int,
        Receivers::FloatVector => is_vector && float,
        Receivers::FloatVec3 => *ty == Ty::Vector(3, Scalar::F32),
    }
}

/// Methods of atomic elements, with whether they take a value argument.
pub fn atomic_method(name: &str) -> Option<bool> {
    match name {
        "load" => Some(false),
        "store" | "fetch_add" | "fetch_sub" | "fetch_max" | "fetch_min" | "fetch_and"
        | "fetch_or" | "fetch_xor" | "swap" => Some(true),
        _ => None,
    }
}

/// The list shown when a method is unknown.
pub const METHOD_LIST: &str = "abs, min, max, clamp, exp, exp2, ln, log2, sqrt, powf, tanh, sinh, cosh, \
    sin, cos, tan, asin, acos, atan, atan2, floor, ceil, round, trunc, fract, signum, recip, mul_add, \
    to_degrees, to_radians, wrapping_add, wrapping_sub, wrapping_mul, count_ones, leading_zeros, \
    trailing_zeros, reverse_bits, dot, cross, length, normalize, distance; `len()` on storage \
    parameters; load, store, swap and fetch_add/sub/min/max/and/or/xor on atomics";
