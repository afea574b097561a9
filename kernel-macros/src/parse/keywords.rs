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
