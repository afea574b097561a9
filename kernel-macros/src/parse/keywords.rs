//! The words the kernel language gives meaning to, in one place: attribute names, builtin
//! functions and the Rust type names it accepts.

/// `#[kernel(...)]` on an entry point.
pub const KERNEL: &str = "kernel";
/// `workgroup = [x, y, z]` inside `#[kernel(...)]`.
pub const WORKGROUP_SIZE: &str = "workgroup";
/// `grid = [x, y, z]` inside `#[kernel(...)]`.
pub const GRID: &str = "grid";
/// `#[len(expr)]` on a storage parameter.
pub const LEN: &str = "len";
/// `#[workgroup]` on a workgroup-memory parameter.
pub const WORKGROUP_MEMORY: &str = "workgroup";
/// `#[unroll]` on a `for` loop.
pub const UNROLL: &str = "unroll";
/// `#[derive(Params)]` on a uniform parameter struct.
pub const PARAMS_DERIVE: &str = "Params";

/// `ceil_div(a, b)` in grid and length expressions (and in bodies).
pub const CEIL_DIV: &str = "ceil_div";

/// Atomic element types of storage and workgroup arrays.
pub const ATOMIC_U32: &str = "AtomicU32";
pub const ATOMIC_I32: &str = "AtomicI32";
/// `constants(NAME = [..])` inside `#[kernel(...)]`.
pub const CONSTANTS: &str = "constants";
/// `types(T = [f32, f16])` inside `#[kernel(...)]`.
pub const TYPES: &str = "types";
/// `specialize(condition, ...)` inside `#[kernel(...)]`.
pub const SPECIALIZE: &str = "specialize";
/// `limits(...)` inside `#[kernel(...)]`, and the limits it can raise.
pub const LIMITS: &str = "limits";
pub const LIMIT_INVOCATIONS: &str = "invocations";
pub const LIMIT_WORKGROUP_MEMORY: &str = "workgroup_memory";
/// `features(...)` inside `#[kernel(...)]`, and the features it can declare.
pub const FEATURES: &str = "features";
pub const FEATURE_F16: &str = "f16";
pub const FEATURE_SUBGROUPS: &str = "subgroups";
pub const FEATURE_COOPERATIVE_MATRIX: &str = "cooperative_matrix";
/// `#[family(first, second)]` on a struct declaring the bindings of kernels launched together.
pub const FAMILY: &str = "family";
/// `#[tessera::device]` on a module of device functions, and `#[device] use path;` importing
/// one into a kernels module.
pub const DEVICE: &str = "device";
