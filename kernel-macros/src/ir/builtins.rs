//! Every builtin function and method of the kernel language, in one table that every stage
//! reads: `check/` types calls with [`Builtin::signature`] and follows barriers and varying
//! values with [`Builtin::uniformity`], `lower/` writes [`Builtin::wgsl`]. Adding a builtin is
//! adding a row to [`BUILTINS`].

use super::{Feature, Scalar, Ty};

/// One builtin: how it is called, what it accepts, how it is spelled in WGSL.
#[derive(Debug)]
pub struct Builtin {
    /// The Rust spelling: `global_id`, `exp`, `fetch_add`.
    pub name: &'static str,
    pub form: Form,
    pub signature: Signature,
    pub wgsl: Spelling,
    pub uniformity: Uniformity,
    /// A device feature the calling kernel must declare.
    pub feature: Option<Feature>,
}

/// How a builtin is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `name(args)`.
    Function,
    /// `receiver.name(args)` on values (math, `to_bits`) or on a buffer (`len`).
    Method,
    /// `place.name(args)` on an atomic element of a buffer or workgroup array.
    Atomic,
}

/// What a builtin accepts and returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signature {
    /// An invocation id: no arguments, only in kernels.
    Id(IdBuiltin),
    /// No arguments, no result: a barrier.
    Barrier,
    /// `workgroup_uniform_load(&a[i])`: one element of a workgroup array, read by every
    /// invocation after a barrier, so that the value is the same in all of them.
    UniformLoad,
    /// `vecN(..)`: components (scalars or vectors) adding up to N, or one to repeat.
    Vector(u8),
    /// `ceil_div(a, b)`: two integers of one type.
    CeilDiv,
    /// A subgroup reduction, scan or broadcast of one value the receivers accept (numbers;
    /// integers for the bitwise ones), the result of its type.
    SubgroupReduce(Receivers),
    /// `subgroup_shuffle(value, lane)` and the relative shuffles (`subgroup_shuffle_down(value,
    /// delta)`): a number and a `u32`, the result of the number's type.
    SubgroupShuffle,
    /// `subgroup_broadcast(value, lane)`: a number and a constant `u32` lane below 128 (WGSL
    /// requires a const-expression), the result of the number's type.
    SubgroupBroadcast,
    /// A vote over a `bool` predicate (`subgroup_all`, `subgroup_ballot`), returning `Ty`.
    SubgroupVote(&'static Ty),
    /// Fixed argument and result types (the pack and unpack builtins).
    Fixed(&'static [Ty], &'static Ty),
    /// A math method on the receivers it names, its arguments and result typed by `Shape`.
    Math(Receivers, Shape),
    /// `buffer.len()`: the element count of a storage buffer.
    Len,
    /// An atomic method; whether it takes a value, and whether it returns one.
    Atomic { takes_value: bool, returns: bool },
    /// `coop_zero()`: a fragment of zeros, of the type the context asks for.
    FragmentZero,
    /// `coop_load_row_major(&place, stride)`: a fragment of the type the context asks for,
    /// read from memory.
    FragmentLoad(Layout),
    /// `coop_store_row_major(fragment, &mut place, stride)`.
    FragmentStore(Layout),
    /// `coop_multiply_add(a, b, c)`: `a * b + c` on fragments, of `c`'s type.
    MultiplyAdd,
}

/// How a fragment lies in memory: element (row, column) at `row * stride + column`
/// (row-major) or at `column * stride + row` (column-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    RowMajor,
    ColumnMajor,
}

/// How a math method's arguments and result relate to its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// `x.f()` returning `u32` of the receiver's width (`count_ones`, `to_bits`).
    ToU32,
}

impl Shape {
    /// The number of arguments after the receiver.
    pub fn arguments(self) -> usize {
        match self {
            Shape::Unary | Shape::ToScalar | Shape::ToU32 => 0,
            Shape::Binary | Shape::BinaryToScalar => 1,
            Shape::Ternary => 2,
        }
    }
}

/// Which receivers a math method accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receivers {
    /// Float scalars and vectors.
    Float,
    /// `f32` scalars and vectors (WGSL's bit casts between 32-bit types).
    F32,
    /// Any numeric scalar or vector.
    Numeric,
    /// `i32` and float scalars and vectors.
    Signed,
    /// `u32`/`i32` scalars and vectors.
    Integer,
    /// Float vectors.
    FloatVector,
    /// `Vec3<f32>`.
    FloatVec3,
}

impl Receivers {
    /// Whether `ty` is a receiver of this kind.
    pub fn accepts(self, ty: &Ty) -> bool {
        let scalar = ty.scalar();
        let is_vector = matches!(ty, Ty::Vector(..));
        let float = matches!(ty, Ty::FloatVar(_)) || scalar.is_some_and(Scalar::is_float);
        let int = matches!(ty, Ty::IntVar(_)) || scalar.is_some_and(Scalar::is_integer);
        match self {
            Receivers::Float => float,
            Receivers::F32 => matches!(ty, Ty::FloatVar(_)) || scalar == Some(Scalar::F32),
            Receivers::Numeric => float || int,
            Receivers::Signed => {
                float || matches!(ty, Ty::IntVar(_)) || scalar == Some(Scalar::I32)
            }
            Receivers::Integer => int,
            Receivers::FloatVector => is_vector && float,
            Receivers::FloatVec3 => *ty == Ty::Vector(3, Scalar::F32),
        }
    }
}

/// How a builtin's value relates across the invocations of a workgroup, for the barrier check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uniformity {
    /// The same in every invocation when its arguments are (math, constructors).
    Pure,
    /// The same in every invocation of a workgroup (`workgroup_id`).
    Uniform,
    /// May differ between invocations (local ids, atomics).
    Varying,
    /// A barrier: every invocation of the workgroup must reach it together.
    Barrier,
    /// An operation among the invocations of a subgroup (`subgroup_add`): WGSL requires it in
    /// uniform control flow, as a barrier, and its result may differ between invocations.
    Collective,
}

/// The WGSL text of a call. Templates name the receiver and arguments `{0}`, `{1}`, `{2}`, all
/// arguments `{args}`, the result's WGSL type `{ty}`, the literals `{zero}`, `{half}`,
/// `{one}` in the type of the first argument, the first argument's bits as `u32`s `{bits}` (an
/// `f16` through `f32`), and the `u32` masks of an `f32`'s `{sign_bit}`, `{magnitude}` and
/// `{infinity}` in the first argument's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// One template for every argument type.
    Same(&'static str),
    /// Float arguments take the first template, integers the second.
    ByScalar {
        float: &'static str,
        integer: &'static str,
    },
    /// A scalar takes the first template, a vector of `N` lanes the `N`-th (a reduction
    /// across lanes, written once for every width).
    ByLanes([&'static str; 4]),
}

impl Spelling {
    /// The template for a first argument of type `ty`.
    pub fn template(self, ty: &Ty) -> &'static str {
        match self {
            Spelling::Same(template) => template,
            Spelling::ByScalar { float, integer } => {
                if ty.scalar().is_some_and(Scalar::is_float) {
                    float
                } else {
                    integer
                }
            }
            Spelling::ByLanes(templates) => match ty {
                Ty::Vector(n, _) => templates[usize::from(*n) - 1],
                _ => templates[0],
            },
        }
    }
}

/// An invocation id a kernel reads from its entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IdBuiltin {
    GlobalId,
    LocalId,
    WorkgroupId,
    NumWorkgroups,
    LocalIndex,
    SubgroupSize,
    SubgroupInvocationId,
    SubgroupId,
    NumSubgroups,
}

impl IdBuiltin {
    /// The type the kernel sees.
    pub fn ty(self) -> Ty {
        match self {
            IdBuiltin::GlobalId
            | IdBuiltin::LocalId
            | IdBuiltin::WorkgroupId
            | IdBuiltin::NumWorkgroups => Ty::Vector(3, Scalar::U32),
            _ => Ty::U32,
        }
    }

    /// WGSL's name of the builtin value.
    pub fn wgsl_name(self) -> &'static str {
        match self {
            IdBuiltin::GlobalId => "global_invocation_id",
            IdBuiltin::LocalId => "local_invocation_id",
            IdBuiltin::WorkgroupId => "workgroup_id",
            IdBuiltin::NumWorkgroups => "num_workgroups",
            IdBuiltin::LocalIndex => "local_invocation_index",
            IdBuiltin::SubgroupSize => "subgroup_size",
            IdBuiltin::SubgroupInvocationId => "subgroup_invocation_id",
            IdBuiltin::SubgroupId => "subgroup_id",
            IdBuiltin::NumSubgroups => "num_subgroups",
        }
    }

    /// Whether the value depends on the dispatched grid (a folded grid recomputes it).
    pub fn is_grid_dependent(self) -> bool {
        matches!(
            self,
            IdBuiltin::GlobalId | IdBuiltin::WorkgroupId | IdBuiltin::NumWorkgroups
        )
    }
}

const U32: Ty = Ty::U32;
const VEC2_F32: Ty = Ty::Vector(2, Scalar::F32);
const VEC4_F32: Ty = Ty::Vector(4, Scalar::F32);
const VEC4_U32: Ty = Ty::Vector(4, Scalar::U32);
const VEC4_I32: Ty = Ty::Vector(4, Scalar::I32);
const BOOL: Ty = Ty::Scalar(Scalar::Bool);

const fn row(
    name: &'static str,
    form: Form,
    signature: Signature,
    wgsl: &'static str,
    uniformity: Uniformity,
) -> Builtin {
    Builtin {
        name,
        form,
        signature,
        wgsl: Spelling::Same(wgsl),
        uniformity,
        feature: None,
    }
}

const fn id(name: &'static str, id: IdBuiltin, uniformity: Uniformity) -> Builtin {
    row(name, Form::Function, Signature::Id(id), "", uniformity)
}

const fn subgroup(name: &'static str, signature: Signature, wgsl: &'static str) -> Builtin {
    Builtin {
        feature: Some(Feature::Subgroups),
        ..row(
            name,
            Form::Function,
            signature,
            wgsl,
            Uniformity::Collective,
        )
    }
}

/// An invocation id of the subgroups (`features(subgroups)`).
const fn subgroup_id_row(name: &'static str, which: IdBuiltin, uniformity: Uniformity) -> Builtin {
    Builtin {
        feature: Some(Feature::Subgroups),
        ..id(name, which, uniformity)
    }
}

/// A reduction or scan of numbers.
const REDUCE: Signature = Signature::SubgroupReduce(Receivers::Numeric);
/// A bitwise reduction of integers.
const BITWISE: Signature = Signature::SubgroupReduce(Receivers::Integer);

const fn cooperative(name: &'static str, signature: Signature, wgsl: &'static str) -> Builtin {
    let uniformity = match signature {
        Signature::FragmentZero => Uniformity::Pure,
        _ => Uniformity::Collective,
    };
    Builtin {
        feature: Some(Feature::CooperativeMatrix),
        ..row(name, Form::Function, signature, wgsl, uniformity)
    }
}

const fn fixed(
    name: &'static str,
    arg: &'static [Ty],
    ret: &'static Ty,
    wgsl: &'static str,
) -> Builtin {
    row(
        name,
        Form::Function,
        Signature::Fixed(arg, ret),
        wgsl,
        Uniformity::Pure,
    )
}

/// A method reducing the lanes of a numeric vector to one scalar, spelled for a scalar (itself)
/// and for 2, 3 and 4 lanes.
const fn across_lanes(name: &'static str, templates: [&'static str; 4]) -> Builtin {
    Builtin {
        wgsl: Spelling::ByLanes(templates),
        ..math(name, Receivers::Numeric, Shape::ToScalar, "")
    }
}

const fn math(
    name: &'static str,
    receivers: Receivers,
    shape: Shape,
    wgsl: &'static str,
) -> Builtin {
    row(
        name,
        Form::Method,
        Signature::Math(receivers, shape),
        wgsl,
        Uniformity::Pure,
    )
}

const fn atomic(
    name: &'static str,
    takes_value: bool,
    returns: bool,
    wgsl: &'static str,
) -> Builtin {
    let signature = Signature::Atomic {
        takes_value,
        returns,
    };
    row(name, Form::Atomic, signature, wgsl, Uniformity::Varying)
}

use Receivers::{Float, FloatVec3, FloatVector, Integer, Numeric, Signed, F32};
use Shape::{Binary, BinaryToScalar, Ternary, ToScalar, ToU32, Unary};
use Uniformity::{Pure, Uniform, Varying};

/// Every builtin of the kernel language.
pub static BUILTINS: &[Builtin] = &[
    // Invocation ids.
    id("global_id", IdBuiltin::GlobalId, Varying),
    id("local_id", IdBuiltin::LocalId, Varying),
    id("workgroup_id", IdBuiltin::WorkgroupId, Uniform),
    id("num_workgroups", IdBuiltin::NumWorkgroups, Uniform),
    id("local_index", IdBuiltin::LocalIndex, Varying),
    // Barriers and constructors.
    row(
        "workgroup_barrier",
        Form::Function,
        Signature::Barrier,
        "workgroupBarrier()",
        Uniformity::Barrier,
    ),
    row(
        "storage_barrier",
        Form::Function,
        Signature::Barrier,
        "storageBarrier()",
        Uniformity::Barrier,
    ),
    row(
        "workgroup_uniform_load",
        Form::Function,
        Signature::UniformLoad,
        "workgroupUniformLoad(&{0})",
        Uniformity::Barrier,
    ),
    row(
        "vec2",
        Form::Function,
        Signature::Vector(2),
        "{ty}({args})",
        Pure,
    ),
    row(
        "vec3",
        Form::Function,
        Signature::Vector(3),
        "{ty}({args})",
        Pure,
    ),
    row(
        "vec4",
        Form::Function,
        Signature::Vector(4),
        "{ty}({args})",
        Pure,
    ),
    row(
        "ceil_div",
        Form::Function,
        Signature::CeilDiv,
        "(({0} + {1} - {one}) / {1})",
        Pure,
    ),
    // Packed data: four 8-bit or two 16-bit values in a `u32`.
    fixed("unpack_4x8_unorm", &[U32], &VEC4_F32, "unpack4x8unorm({0})"),
    fixed("unpack_4x8_snorm", &[U32], &VEC4_F32, "unpack4x8snorm({0})"),
    fixed("unpack_4xu8", &[U32], &VEC4_U32, "unpack4xU8({0})"),
    fixed("unpack_4xi8", &[U32], &VEC4_I32, "unpack4xI8({0})"),
    fixed(
        "unpack_2x16_unorm",
        &[U32],
        &VEC2_F32,
        "unpack2x16unorm({0})",
    ),
    fixed(
        "unpack_2x16_snorm",
        &[U32],
        &VEC2_F32,
        "unpack2x16snorm({0})",
    ),
    fixed(
        "unpack_2x16_float",
        &[U32],
        &VEC2_F32,
        "unpack2x16float({0})",
    ),
    fixed("pack_4x8_unorm", &[VEC4_F32], &U32, "pack4x8unorm({0})"),
    fixed("pack_4x8_snorm", &[VEC4_F32], &U32, "pack4x8snorm({0})"),
    fixed("pack_4xu8", &[VEC4_U32], &U32, "pack4xU8({0})"),
    fixed("pack_4xi8", &[VEC4_I32], &U32, "pack4xI8({0})"),
    fixed("pack_4xu8_clamp", &[VEC4_U32], &U32, "pack4xU8Clamp({0})"),
    fixed("pack_4xi8_clamp", &[VEC4_I32], &U32, "pack4xI8Clamp({0})"),
    fixed("pack_2x16_unorm", &[VEC2_F32], &U32, "pack2x16unorm({0})"),
    fixed("pack_2x16_snorm", &[VEC2_F32], &U32, "pack2x16snorm({0})"),
    fixed("pack_2x16_float", &[VEC2_F32], &U32, "pack2x16float({0})"),
    // Subgroups. Within a compute shader the subgroup size is the same in every invocation
    // (Tint's uniformity analysis treats it so), and so is the number of subgroups.
    subgroup_id_row("subgroup_size", IdBuiltin::SubgroupSize, Uniform),
    subgroup_id_row(
        "subgroup_invocation_id",
        IdBuiltin::SubgroupInvocationId,
        Varying,
    ),
    subgroup_id_row("subgroup_id", IdBuiltin::SubgroupId, Varying),
    subgroup_id_row("num_subgroups", IdBuiltin::NumSubgroups, Uniform),
    subgroup("subgroup_add", REDUCE, "subgroupAdd({0})"),
    subgroup("subgroup_mul", REDUCE, "subgroupMul({0})"),
    subgroup("subgroup_min", REDUCE, "subgroupMin({0})"),
    subgroup("subgroup_max", REDUCE, "subgroupMax({0})"),
    subgroup(
        "subgroup_inclusive_add",
        REDUCE,
        "subgroupInclusiveAdd({0})",
    ),
    subgroup(
        "subgroup_exclusive_add",
        REDUCE,
        "subgroupExclusiveAdd({0})",
    ),
    subgroup(
        "subgroup_inclusive_mul",
        REDUCE,
        "subgroupInclusiveMul({0})",
    ),
    subgroup(
        "subgroup_exclusive_mul",
        REDUCE,
        "subgroupExclusiveMul({0})",
    ),
    subgroup("subgroup_and", BITWISE, "subgroupAnd({0})"),
    subgroup("subgroup_or", BITWISE, "subgroupOr({0})"),
    subgroup("subgroup_xor", BITWISE, "subgroupXor({0})"),
    subgroup(
        "subgroup_broadcast_first",
        REDUCE,
        "subgroupBroadcastFirst({0})",
    ),
    subgroup(
        "subgroup_broadcast",
        Signature::SubgroupBroadcast,
        "subgroupBroadcast({0}, {1})",
    ),
    subgroup(
        "subgroup_shuffle",
        Signature::SubgroupShuffle,
        "subgroupShuffle({0}, {1})",
    ),
    subgroup(
        "subgroup_shuffle_up",
        Signature::SubgroupShuffle,
        "subgroupShuffleUp({0}, {1})",
    ),
    subgroup(
        "subgroup_shuffle_down",
        Signature::SubgroupShuffle,
        "subgroupShuffleDown({0}, {1})",
    ),
    subgroup(
        "subgroup_shuffle_xor",
        Signature::SubgroupShuffle,
        "subgroupShuffleXor({0}, {1})",
    ),
    subgroup(
        "subgroup_all",
        Signature::SubgroupVote(&BOOL),
        "subgroupAll({0})",
    ),
    subgroup(
        "subgroup_any",
        Signature::SubgroupVote(&BOOL),
        "subgroupAny({0})",
    ),
    subgroup(
        "subgroup_ballot",
        Signature::SubgroupVote(&VEC4_U32),
        "subgroupBallot({0})",
    ),
    // Cooperative matrices. naga spells the row-major layout with a `T`. The place argument
    // arrives as the place itself (`&` is the template's).
    cooperative("coop_zero", Signature::FragmentZero, "{ty}()"),
    cooperative(
        "coop_load_row_major",
        Signature::FragmentLoad(Layout::RowMajor),
        "coopLoadT<{ty}>(&{0}, {1})",
    ),
    cooperative(
        "coop_load_column_major",
        Signature::FragmentLoad(Layout::ColumnMajor),
        "coopLoad<{ty}>(&{0}, {1})",
    ),
    cooperative(
        "coop_store_row_major",
        Signature::FragmentStore(Layout::RowMajor),
        "coopStoreT({0}, &{1}, {2})",
    ),
    cooperative(
        "coop_store_column_major",
        Signature::FragmentStore(Layout::ColumnMajor),
        "coopStore({0}, &{1}, {2})",
    ),
    cooperative(
        "coop_multiply_add",
        Signature::MultiplyAdd,
        "coopMultiplyAdd({0}, {1}, {2})",
    ),
    // Math methods.
    math("abs", Signed, Unary, "abs({0})"),
    math("min", Numeric, Binary, "min({0}, {1})"),
    math("max", Numeric, Binary, "max({0}, {1})"),
    math("clamp", Numeric, Ternary, "clamp({0}, {1}, {2})"),
    math("exp", Float, Unary, "exp({0})"),
    math("exp2", Float, Unary, "exp2({0})"),
    math("ln", Float, Unary, "log({0})"),
    math("log2", Float, Unary, "log2({0})"),
    math("sqrt", Float, Unary, "sqrt({0})"),
    math("powf", Float, Binary, "pow({0}, {1})"),
    math("tanh", Float, Unary, "tanh({0})"),
    math("sinh", Float, Unary, "sinh({0})"),
    math("cosh", Float, Unary, "cosh({0})"),
    math("sin", Float, Unary, "sin({0})"),
    math("cos", Float, Unary, "cos({0})"),
    math("tan", Float, Unary, "tan({0})"),
    math("asin", Float, Unary, "asin({0})"),
    math("acos", Float, Unary, "acos({0})"),
    math("atan", Float, Unary, "atan({0})"),
    math("atan2", Float, Binary, "atan2({0}, {1})"),
    math("floor", Float, Unary, "floor({0})"),
    math("ceil", Float, Unary, "ceil({0})"),
    // Rust rounds halves away from zero; WGSL's round() rounds them to even. `x - trunc(x)`
    // is exact, so this is right for halves, for values too large to have a fraction, and
    // keeps the sign of zero (`x + 0.5 * sign(x)` is not: it rounds 0.49999997 up).
    math(
        "round",
        Float,
        Unary,
        "select(trunc({0}), trunc({0}) + sign({0}), abs({0} - trunc({0})) >= {half})",
    ),
    math("trunc", Float, Unary, "trunc({0})"),
    // Rust's fract keeps the sign (x - trunc(x)); WGSL's is x - floor(x).
    math("fract", Float, Unary, "({0} - trunc({0}))"),
    // Rust's signum is +-1 by the sign bit (so -1.0 for -0.0) and NaN for NaN; WGSL's
    // sign(0.0) is 0.0. The bits are read through `{bits}`, as GPUs may assume no NaN in
    // float comparisons.
    Builtin {
        wgsl: Spelling::ByScalar {
            float: "select(select({one}, -{one}, {bits} >= {sign_bit}), {0}, ({bits} & {magnitude}) > {infinity})",
            integer: "sign({0})",
        },
        ..math("signum", Signed, Unary, "")
    },
    math("recip", Float, Unary, "({one} / {0})"),
    math("mul_add", Float, Ternary, "fma({0}, {1}, {2})"),
    math("to_degrees", Float, Unary, "degrees({0})"),
    math("to_radians", Float, Unary, "radians({0})"),
    math("wrapping_add", Integer, Binary, "({0} + {1})"),
    math("wrapping_sub", Integer, Binary, "({0} - {1})"),
    math("wrapping_mul", Integer, Binary, "({0} * {1})"),
    math("count_ones", Integer, ToU32, "{ty}(countOneBits({0}))"),
    math(
        "leading_zeros",
        Integer,
        ToU32,
        "{ty}(countLeadingZeros({0}))",
    ),
    math(
        "trailing_zeros",
        Integer,
        ToU32,
        "{ty}(countTrailingZeros({0}))",
    ),
    math("reverse_bits", Integer, Unary, "reverseBits({0})"),
    math("to_bits", F32, ToU32, "bitcast<{ty}>({0})"),
    // Across the lanes of a vector, and the value itself for a scalar, so that a body over
    // `T = [f32, Vec4<f32>]` reduces its element once (glam's names).
    across_lanes(
        "element_sum",
        ["{0}", "dot({0}, {one})", "dot({0}, {one})", "dot({0}, {one})"],
    ),
    across_lanes(
        "element_product",
        [
            "{0}",
            "({0}.x * {0}.y)",
            "({0}.x * {0}.y * {0}.z)",
            "({0}.x * {0}.y * {0}.z * {0}.w)",
        ],
    ),
    across_lanes(
        "max_element",
        [
            "{0}",
            "max({0}.x, {0}.y)",
            "max(max({0}.x, {0}.y), {0}.z)",
            "max(max({0}.x, {0}.y), max({0}.z, {0}.w))",
        ],
    ),
    across_lanes(
        "min_element",
        [
            "{0}",
            "min({0}.x, {0}.y)",
            "min(min({0}.x, {0}.y), {0}.z)",
            "min(min({0}.x, {0}.y), min({0}.z, {0}.w))",
        ],
    ),
    Builtin {
        wgsl: Spelling::ByLanes(["({0} * {1})", "dot({0}, {1})", "dot({0}, {1})", "dot({0}, {1})"]),
        ..math("dot", Numeric, BinaryToScalar, "")
    },
    math("cross", FloatVec3, Binary, "cross({0}, {1})"),
    math("length", FloatVector, ToScalar, "length({0})"),
    math("normalize", FloatVector, Unary, "normalize({0})"),
    math(
        "distance",
        FloatVector,
        BinaryToScalar,
        "distance({0}, {1})",
    ),
    row(
        "len",
        Form::Method,
        Signature::Len,
        "arrayLength(&{0})",
        Pure,
    ),
    // Atomics.
    atomic("load", false, true, "atomicLoad(&{0})"),
    atomic("store", true, false, "atomicStore(&{0}, {1})"),
    atomic("swap", true, true, "atomicExchange(&{0}, {1})"),
    atomic("fetch_add", true, true, "atomicAdd(&{0}, {1})"),
    atomic("fetch_sub", true, true, "atomicSub(&{0}, {1})"),
    atomic("fetch_max", true, true, "atomicMax(&{0}, {1})"),
    atomic("fetch_min", true, true, "atomicMin(&{0}, {1})"),
    atomic("fetch_and", true, true, "atomicAnd(&{0}, {1})"),
    atomic("fetch_or", true, true, "atomicOr(&{0}, {1})"),
    atomic("fetch_xor", true, true, "atomicXor(&{0}, {1})"),
];

/// The builtin called as `form` by `name`.
pub fn find(form: Form, name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.form == form && b.name == name)
}

/// The names of the builtins `which` selects, for the messages about unknown names.
pub fn names(which: impl Fn(&Builtin) -> bool) -> String {
    let names: Vec<&str> = BUILTINS
        .iter()
        .filter(|b| which(b))
        .map(|b| b.name)
        .collect();
    names.join(", ")
}

/// Whether `builtin` is called as `form`, for [`names`].
pub fn called_as(form: Form) -> impl Fn(&Builtin) -> bool {
    move |builtin| builtin.form == form
}

impl Builtin {
    /// How a math method is called, for a message about its free-function form: `a.min(b)`,
    /// `x.sqrt()`, `x.clamp(low, high)`.
    pub fn method_form(&self) -> Option<String> {
        let Signature::Math(_, shape) = self.signature else {
            return None;
        };
        let name = self.name;
        Some(match shape {
            Shape::Unary | Shape::ToScalar | Shape::ToU32 => format!("x.{name}()"),
            Shape::Binary | Shape::BinaryToScalar => format!("a.{name}(b)"),
            Shape::Ternary if name == "clamp" => "x.clamp(low, high)".to_owned(),
            Shape::Ternary => format!("x.{name}(a, b)"),
        })
    }

    /// Whether this is an operation on matrix fragments (`features(cooperative_matrix)`).
    pub fn is_cooperative(&self) -> bool {
        self.feature == Some(Feature::CooperativeMatrix)
    }

    /// The invocation id this builtin reads, if it is one.
    pub fn id(&self) -> Option<IdBuiltin> {
        match self.signature {
            Signature::Id(id) => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_one_builtin_per_form() {
        for (i, a) in BUILTINS.iter().enumerate() {
            for b in &BUILTINS[i + 1..] {
                assert!(a.name != b.name || a.form != b.form, "{} twice", a.name);
            }
        }
    }

    #[test]
    fn templates_name_only_arguments_the_signature_has() {
        for b in BUILTINS {
            let arguments = match b.signature {
                Signature::Math(_, shape) => 1 + shape.arguments(),
                Signature::Fixed(args, _) => args.len(),
                Signature::CeilDiv | Signature::SubgroupShuffle | Signature::SubgroupBroadcast => 2,
                Signature::SubgroupReduce(_)
                | Signature::SubgroupVote(_)
                | Signature::Len
                | Signature::UniformLoad => 1,
                Signature::Atomic { takes_value, .. } => 1 + usize::from(takes_value),
                Signature::Id(_)
                | Signature::Barrier
                | Signature::Vector(_)
                | Signature::FragmentZero => 0,
                Signature::FragmentLoad(_) => 2,
                Signature::FragmentStore(_) | Signature::MultiplyAdd => 3,
            };
            let templates = match b.wgsl {
                Spelling::Same(t) => vec![t],
                Spelling::ByScalar { float, integer } => vec![float, integer],
                Spelling::ByLanes(templates) => templates.to_vec(),
            };
            for template in templates {
                for index in arguments..4 {
                    assert!(!template.contains(&format!("{{{index}}}")), "{}", b.name);
                }
            }
        }
    }
}
