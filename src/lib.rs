//! tessera: GPU compute kernels for Rust, declared as annotated Rust.
//!
//! A kernel is a Rust function in a `#[tessera::kernels]` module. At compile time the macro
//! turns the module into one WGSL module, validates it with naga, and generates a typed
//! launcher per kernel. At run time, [`Runtime`] builds each pipeline once and dispatches it
//! through wgpu (Vulkan, Metal, DX12, WebGPU).
//!
//! ```no_run
//! #[tessera::kernels]
//! mod kernels {
//!     #[repr(C)]
//!     #[derive(Clone, Copy, tessera::Params)]
//!     pub struct SaxpyParams {
//!         pub a: f32,
//!         pub n: u32,
//!     }
//!
//!     /// `y = a * x + y`.
//!     #[kernel(workgroup = [256], grid = [ceil_div(p.n, 256)])]
//!     pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
//!         let i = global_id().x;
//!         if i < p.n {
//!             y[i] = p.a * x[i] + y[i];
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), tessera::Error> {
//! let rt = tessera::Runtime::new()?;
//! let x = rt.upload(&[1.0f32, 2.0, 3.0])?;
//! let mut y = rt.zeros::<f32>(3)?;
//! let saxpy = kernels::Saxpy::new(&rt)?; // its pipeline is built at the first launch, once
//! saxpy.launch(&rt, kernels::SaxpyArgs { p: &kernels::SaxpyParams { a: 2.0, n: 3 }, x: &x, y: &mut y })?;
//! assert_eq!(y.read(&rt)?, vec![2.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```
//!
//! # A kernels module
//!
//! It holds `#[derive(Params)]` structs, `#[kernel]` functions, helper functions (plain `fn`s
//! the kernels call) and `use` items. It becomes one WGSL module, the constant `WGSL` of the
//! module, plus for each kernel `foo_bar` a launcher `FooBar` and its arguments `FooBarArgs`.
//! Its constants (`pub const TILE: u32 = 16;`) stay Rust constants too, so host code reads the
//! value the kernels use (`kernels::TILE`) instead of writing it again.
//!
//! Names: a kernel's name must give a Rust type name in CamelCase (`_3x3` and `self_` do not;
//! `r#match` gives `Match`), and two kernels must not give the same one (`conv2d` and
//! `conv_2d`); kernels, helpers, the parameters of each, and constants are each declared once.
//! Any Rust name may be a WGSL keyword, reserved word or builtin (`filter`, `target`,
//! `storage`, `select`): the WGSL spells it with a `_` suffix (`filter_`), and messages show
//! the Rust name.
//!
//! ## Parameters are bindings
//!
//! | parameter | WGSL | launcher argument |
//! | --- | --- | --- |
//! | `x: &[T]` | `var<storage, read>` | `&GpuBuffer<T>` |
//! | `y: &mut [T]` | `var<storage, read_write>` | `&mut GpuBuffer<T>` |
//! | `p: &P` (a `#[derive(Params)]` struct) | `var<uniform>` | `&P` |
//! | `#[workgroup] t: &mut [T; N]` | `var<workgroup>` | none |
//! | `#[workgroup] s: &mut T` (a scalar or vector) | `var<workgroup>` | none |
//!
//! `T` is `f32`, `u32`, `i32`, `f16` (with `features(f16)`; `GpuBuffer<half::f16>` on the host,
//! `tessera::half` re-exports the crate), `Vec2<S>` or `Vec4<S>` of those scalars (read and
//! written a whole vector at a time; `GpuBuffer<[S; 2]>` / `GpuBuffer<[S; 4]>` on the host, and
//! `len()` counts vectors; [`GpuBuffer::view_as`] binds a buffer of scalars there), or
//! `AtomicU32`/`AtomicI32` (a `GpuBuffer<u32>`/`<i32>` on the host). `Vec3` buffers are
//! rejected: WGSL pads each to 16 bytes. Binding numbers follow the parameter order. Because
//! read-only bindings take `&` and read-write ones `&mut`, passing one buffer as both does not
//! compile, and a buffer of the wrong element type is a type error.
//!
//! A workgroup value (`#[workgroup] total: &mut f32`, or `&mut Vec2<u32>`) is one value shared
//! by the invocations of a workgroup, as a one-element array would be: read it as `*total`
//! and write it as `*total = sum;` (`*total += x;`, `range.y = 3;` for a vector's lane), as in
//! Rust; the bare name `total` reads and writes it too, as WGSL spells it. Like workgroup
//! arrays, it starts at zero in every workgroup, and a write is seen by the other invocations
//! after a `workgroup_barrier()`; `workgroup_uniform_load(&total)` reads it as a value
//! uniform across the workgroup (see below). It cannot be lent to a helper; pass its value, or use a
//! `[T; 1]` array for a helper to write.
//!
//! `#[len(expr)]` on a storage parameter states how many elements it must hold; the launcher
//! checks every such buffer before dispatching and returns [`Error::BufferTooShort`] naming
//! the binding.
//!
//! `#[len]` is optional, because some kernels take their sizes from the buffers themselves
//! (`grid = [ceil_div(x.len(), 64)]`, `if i < x.len()`). A parameter without it is checked by
//! nothing but the body: an index past its end does not fault. Under WGSL's bounds checks a
//! read past the end returns some element of the buffer (or zero) and a write past the end
//! lands on some element or nowhere, silently. So give every storage parameter either a
//! `#[len(..)]` or a guard on `x.len()` around its accesses.
//!
//! ## `#[kernel(workgroup = [x, y, z], grid = [gx, gy, gz])]`
//!
//! `workgroup` is the workgroup size (literals; at most 256 invocations, WebGPU's default
//! limit). `grid` gives the number of workgroups per dimension as expressions of the
//! parameters' integer fields (`p.n`), buffer lengths (`x.len()`), literals, the module's
//! integer constants and the kernel's own (`constants`), `+ - * / %`, `ceil_div(a, b)`,
//! `min(a, b)` and `max(a, b)`; the launcher evaluates it (saturating, never panicking).
//! Missing dimensions are 1.
//!
//! ## `#[derive(Params)]`
//!
//! A `#[repr(C)]` struct of `f32`, `u32`, `i32` and `[T; 2..=4]` (WGSL vectors). The derive
//! checks at compile time that the Rust layout equals WGSL's uniform layout, and says which
//! field needs padding when it would not (a `[f32; 4]` after a `u32` needs 12 bytes). It
//! implements `bytemuck::Pod`; derive `Clone` and `Copy` beside it.
//!
//! ## Declared optimizations
//!
//! - **Constants and instances.** `const TILE: u32 = 16;` in the module, or
//!   `constants(TILE = [8, 16, 32])` in `#[kernel(...)]`, can be used in the workgroup size, in
//!   array lengths (`[f32; TILE * TILE]`), in the grid and in the body. Each instance is
//!   generated and validated; `Kernel::new` builds the first, `Kernel::with_constants(rt,
//!   KernelConstants { tile: 16 })` another, and `INSTANCES` lists them. A constant given a
//!   list (`REG = [8, 4]`) identifies an instance; one given an expression (`BLOCK = SPAN *
//!   REG`) is *derived*: computed per instance from the constants before it, not part of the
//!   identity, and available on the host as a `const fn` (`constants.block()`), so no value is
//!   written twice. `constants(REG = [8, 4], BLOCK = 16 * REG, PADDED = BLOCK + 1)` gives two
//!   instances, `KernelConstants { reg: 8 }` and `KernelConstants { reg: 4 }`. Several lists
//!   combine: `constants(REG = [8, 4], UNROLL = [1, 2])` gives four instances, every value of
//!   each with every value of the other, in that order (`reg: 8, unroll: 1`, then `unroll:
//!   2`, then `reg: 4`). To vary constants together, list one and derive the others, or zip
//!   their lists: `constants(zip(BLOCK = [128, 128, 64], GROUP = [512, 256, 256]))` gives three
//!   instances, the `i`-th value of each list with the `i`-th of the others (lists of one
//!   length), and combines with the other lists as one list would. A value (or a zipped
//!   combination) listed twice is an error, and so is a derived constant without a `u32` value
//!   in some instance (`B = 8 / A` where `A = 0`; a subtraction below zero; a result past
//!   `u32::MAX`): the error names the instance and the cause.
//! - **Named sets of constants.** Several kernels share one set declared once in the module,
//!   as a unit struct the macro fills in:
//!
//!   ```ignore
//!   #[constants(REG = [8, 4], BLOCK = SPAN * REG, DEPTH = 64 / REG)]
//!   pub struct Blocking;
//!
//!   #[kernel(workgroup = [256], constants = Blocking, grid = [ceil_div(p.n, BLOCK)])]
//!   pub fn gemm(/* ... */) { /* ... */ }
//!   ```
//!
//!   `Blocking { reg: 8 }` then picks an instance of every such kernel
//!   (`Gemm::with_constants(rt, Blocking { reg: 8 })`), `Blocking::ALL` lists the instances and
//!   `Blocking { reg: 8 }.block()` is 128.
//! - **Specializations.** `specialize(p.stride == 1, p.kh == 3 && p.kw == 3)` generates the body
//!   again for each condition with the values folded in (`x * 1`, `x / 1`, `x % 1`, always-true
//!   tests and dead branches simplified away), in the kernel's body and in every helper it
//!   passes its parameters to (`fn source(p: &Params, i: u32) -> u32` gets a copy with
//!   `p.stride` replaced by 1). At launch the launcher takes the first
//!   specialization whose condition holds (`Kernel::variant(&args)` says which), else the
//!   general body.
//! - **Element types.** `types(T = [f32, f16])` writes a kernel once over a scalar type:
//!
//!   ```ignore
//!   #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)], types(T = [f32, f16]))]
//!   pub fn axpy<T>(p: &Params, #[len(p.n)] x: &[T], #[len(p.n)] y: &mut [T]) {
//!       let i = global_id().x;
//!       if i < p.n {
//!           y[i] = scaled(x[i], p.a) + y[i];
//!       }
//!   }
//!
//!   fn scaled(v: T, a: f32) -> T { v * (a as T) } // the calling instance's `T`
//!   ```
//!
//!   Each listed type (`f32`, `f16`, `u32`, `i32`) makes its own instances, times those of
//!   `constants(..)`; helpers see the calling instance's `T` as they see its constants. The
//!   launcher is generic over the type: `Axpy::<half::f16>::new(rt)` (or `with_constants`)
//!   builds the `f16` instance, whose `AxpyArgs` take `GpuBuffer<half::f16>`; `Axpy::<u64>`
//!   does not compile (`AxpyElement` is implemented for exactly the listed types). An `f16`
//!   instance needs the device feature on its own: the `f32` instances of the same kernel
//!   build on a device without it. Each type is listed once; the parameter cannot take the
//!   name of a type of the language (`types(u32 = [..])`). A helper that uses `T` is called
//!   only from kernels that declare it: from any other kernel, the call is an error.
//! - **Widths.** The listed types may also be vectors of 2 or 4 lanes of those scalars, so
//!   one body serves scalar and wide loads (a `Vec4<f32>` load moves four floats in one
//!   instruction, which memory-bound kernels need):
//!
//!   ```ignore
//!   #[kernel(workgroup = [64], grid = [ceil_div(p.rows, 64)], types(T = [f32, Vec4<f32>]))]
//!   pub fn row_sums<T>(p: &Rows, x: &[T], sums: &mut [T::Scalar]) {
//!       let row = global_id().x;
//!       if row < p.rows {
//!           let width = p.cols / T::LANES; // elements of `T` in a row of `cols` scalars
//!           let mut acc = 0.0 as T;         // a scalar fills every lane
//!           for k in 0..width {
//!               acc += x[row * width + k];
//!           }
//!           sums[row] = acc.element_sum();  // across the lanes; a scalar is its own sum
//!       }
//!   }
//!   ```
//!
//!   - `T::LANES` is the number of lanes (1 for a scalar), `T::Scalar` the scalar type (`f32`
//!     for both above). A buffer of `T::Scalar` has one type for every instance, so the listed
//!     types must share their scalar.
//!   - `x as T` with a scalar `x` fills every lane, converting it first.
//!   - `element_sum()`, `element_product()`, `max_element()` and `min_element()` reduce the
//!     lanes of a number to its scalar (glam's names), and `a.dot(b)` multiplies and sums
//!     them; on a scalar each is the value itself (`a * b` for `dot`). The other operators
//!     and math methods work lane by lane.
//!   - The host types follow the instance: the `Vec4<f32>` instance is `RowSums::<[f32;
//!     4]>`, whose buffers of `T` are `GpuBuffer<[f32; 4]>` (see [`GpuBuffer::view_as`] to
//!     bind a buffer of scalars there).
//!   - A helper over `T` (from this module or a device library) follows the width of the
//!     instance that calls it.
//! - **Families.** Kernels that run one after another over shared buffers (a backward pass)
//!   declare those buffers once, as a struct naming its members in launch order:
//!
//!   ```ignore
//!   #[family(grad_pre, d_x, d_w)]
//!   pub struct Backward {
//!       s: &Shape,
//!       #[len(s.m)] x: &[f32],
//!       #[len(s.m * s.k)] grad_pre: &mut [f32],
//!       #[len(s.m)] grad_x: Option<&mut [f32]>,
//!       #[len(s.k)] grad_w: &mut [f32],
//!   }
//!
//!   #[kernel(workgroup = [64], grid = [ceil_div(s.m, 64)])]
//!   pub fn d_x(s: &Shape, grad_pre: &[f32], grad_x: &mut [f32]) { /* ... */ }
//!   ```
//!
//!   Each member takes the bindings it uses, by name and without `#[len]` (the family's
//!   lengths apply), and may read one the family declares writable; its workgroup size, grid,
//!   constants and workgroup arrays stay its own. The family's lengths hold for every member,
//!   so they may use the module's constants (`#[len(s.m * LANES)]`) but not a constant set's,
//!   whose instances differ between members. `Backward::launch`/`record` take one
//!   `BackwardArgs` of every binding, check the buffers of every member first, then record
//!   the members as ordered passes of one submission. An `Option` binding may be `None`: the
//!   members that use it are skipped. `Backward::new` builds each member's first instance;
//!   `Backward::from_members(..)` takes members built with `with_constants`, and
//!   `backward.d_x()` returns a member's launcher.
//! - **Grids past the device limit.** A kernel that uses `global_id()`, `workgroup_id()` or
//!   `num_workgroups()` may get a grid larger than the device's 65535 workgroups per
//!   dimension: the launcher folds it into the other dimensions ([`fold_grid`]) and the kernel
//!   still sees the logical ids (through one hidden uniform binding after the declared ones).
//! - **Limits and features.** A kernel whose workgroup exceeds WebGPU's defaults (256
//!   invocations, 16 KiB of workgroup memory) declares `limits(invocations = 1024,
//!   workgroup_memory = 49152)`, each instance its own when a limit uses its constants
//!   (`workgroup_memory = 8 * BLOCK * DEPTH`); `features(subgroups)` unlocks the subgroup
//!   operations and ids (see [Subgroups](#subgroups) below); `features(f16)` unlocks the `f16` type (annotations, `as f16`,
//!   `1.0f16` literals, `&[f16]`/`&mut [f16]` storage, which the host reads and writes as
//!   `GpuBuffer<half::f16>`, re-exported as [`half`]). Using either without declaring it is a compile error. The
//!   launcher's `new` returns [`Error::LimitExceeded`] or [`Error::MissingFeature`] on a device
//!   without what the kernel declares. The other kernels of the module still build there:
//!   each kernel builds from a WGSL text holding only the kernels that need no more features
//!   than it declares. `features(cooperative_matrix)` unlocks the tensor cores (below).
//! - **Variant report.** `Kernel::VARIANTS` lists every generated variant ([`VariantInfo`]:
//!   entry point, constants, specialization, workgroup size and memory, bindings); the
//!   launcher's rustdoc shows the same table.
//!
//! # The body: a subset of Rust
//!
//! - `let` and `let mut` (with shadowing), optional type annotations; integer and float
//!   literals take the type their uses need, as in Rust (`i32`/`f32` by default), and so do
//!   vectors of literals only: `step + vec3(0, 1, 0)` with `step: Vec3<u32>` adds a
//!   `Vec3<u32>`.
//! - Arithmetic, compound assignment, comparisons, `&&`/`||`, bit operations (also `^` on
//!   `bool`) and shifts; `as` between `f32`, `f16`, `u32`, `i32` (`usize` means `u32`, so
//!   `x[i as usize]` reads as Rust), and lane by lane between vectors of as many lanes
//!   (`v as Vec4<f16>`: one conversion of four lanes where four scalar casts would each be
//!   an instruction). Indices are `u32`: index with `i as u32`, not an `i32`.
//! - `if`/`else` (also as a value), `match` on integers (becomes a `switch`; needs a `_` arm),
//!   blocks as values, `for` over `a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(s)`,
//!   `while`, `loop`, `break`, `continue`, `return`.
//! - `#[unroll]` on a `for` over literal bounds writes the body out once per iteration with the
//!   loop variable as a constant, so register arrays (`let mut acc = [0.0f32; 8];`) indexed by
//!   it stay in registers. A loop writes at most 1024 iterations, and a function at most 65536
//!   statements and expressions once all its unrolled loops are written out.
//! - Nesting is bounded by what WGSL compilers accept: 100 levels per function, where a binary
//!   operator, index, cast or block adds 1; a prefix operator, call, method, `if`, `while` or
//!   `loop` 2; a `for` or `match` 3 (a sum of 110 terms is too deep once printed as WGSL: split
//!   it with `let`).
//! - Vectors: `vec2(a, b)`, `vec3(..)`, `vec4(..)`, components and swizzles (`v.x`, `v.xy`),
//!   `dot`, `cross`, `length`, `normalize`, `distance`, the reductions across lanes
//!   `element_sum`, `element_product`, `max_element`, `min_element`; types `Vec2<f32>` etc.
//!   in annotations.
//! - Math methods: `abs min max clamp exp exp2 ln log2 sqrt powf tanh sinh cosh sin cos tan
//!   asin acos atan atan2 floor ceil round trunc fract signum recip mul_add to_degrees
//!   to_radians`, integer `wrapping_add/sub/mul count_ones leading_zeros trailing_zeros
//!   reverse_bits`, with Rust's semantics (`round` halves away from zero, exactly, and keeps
//!   the sign of zero; `signum` is ±1 by the sign bit, so `-1.0` for `-0.0`, and NaN for NaN;
//!   `fract` keeps the sign).
//! - Builtins: `global_id()`, `local_id()`, `workgroup_id()`, `num_workgroups()` (`Vec3<u32>`),
//!   `local_index()` (`u32`), `workgroup_barrier()`, `storage_barrier()`, `ceil_div(a, b)`,
//!   `x.len()` for a storage parameter.
//! - `workgroup_uniform_load(&a[i])` reads one element of a workgroup array (or
//!   `workgroup_uniform_load(&s)` a workgroup value) after a barrier
//!   (WGSL's `workgroupUniformLoad`), so that every invocation gets the same value: a barrier
//!   or fragment operation may then depend on it, which a plain `a[i]` may not. It is a
//!   barrier itself, so it too must be reached by the whole workgroup, and its index must be
//!   the same in every invocation (constants, parameters, workgroup ids and what is computed
//!   from them: not `local_index()`).
//! - Bits: `bitcast::<T>(x)` reads the bits of a number or vector as another of the same size
//!   (`f32`, `u32`, `i32` and their vectors), `f32::from_bits(w)`, `x.to_bits()`.
//! - Packed data, for 8-bit images and 16-bit values in `u32` words (byte 0 is the first
//!   component): `unpack_4x8_unorm` / `unpack_4x8_snorm` (to `Vec4<f32>`), `unpack_4xu8` /
//!   `unpack_4xi8` (to `Vec4<u32>` / `Vec4<i32>`), `unpack_2x16_unorm` / `unpack_2x16_snorm` /
//!   `unpack_2x16_float` (to `Vec2<f32>`), and the `pack_..` of each (`pack_4xu8_clamp`,
//!   `pack_4xi8_clamp` saturate):
//!
//! ```
//! #[tessera::kernels]
//! mod images {
//!     /// The mean of each RGBA8 pixel's colour channels, in [0, 1].
//!     #[kernel(workgroup = [64], grid = [ceil_div(pixels.len(), 64)])]
//!     pub fn brightness(pixels: &[u32], out: &mut [f32]) {
//!         let i = global_id().x;
//!         if i < pixels.len() {
//!             out[i] = unpack_4x8_unorm(pixels[i]).xyz.dot(vec3(1.0, 1.0, 1.0)) / 3.0;
//!         }
//!     }
//! }
//! # fn main() {}
//! ```
//! - Constants follow Rust: an expression of literals and constants (an `#[unroll]`ed loop's
//!   variable counts as one; vectors, swizzles, unpacking and math of constants too) is
//!   evaluated by the macro, and integer overflow, a division by
//!   zero, a shift by 32 or more, an infinite or NaN float, a math method outside its domain
//!   (`(-1.0f32).sqrt()`), a literal its type cannot hold and a constant index past a fixed
//!   length, `normalize` of a zero vector and `ceil_div(a, b)` whose `a + b - 1` overflows
//!   (it is computed so) are compile errors at the expression; so is a divisor or shift amount that becomes
//!   such a constant in a `specialize(..)` variant. There are no infinite or NaN constants
//!   (`f32::INFINITY`, `f32::NAN`; a GPU may assume it never sees them): bound with `f32::MAX`.
//!   A branch that a constant condition never takes is not written out, so its constants are
//!   not checked either: in an unrolled loop, `if v > 0 { a[v - 1] }` is fine where `v` is 0
//!   (unless that branch holds a `break`, `continue` or `return`, which stays, and is checked).
//! - At run time, integer arithmetic is WGSL's, which defines what Rust panics on (in debug
//!   builds): overflow wraps (`i32::MAX + 1` is `i32::MIN`), `x / 0` is `x` and `x % 0` is 0
//!   (so are `i32::MIN / -1` and `i32::MIN % -1`), and a shift amount is taken modulo 32
//!   (`x << 33` is `x << 1`).
//! - Atomics: `a[i].load()`, `.store(v)`, `.swap(v)`, `.fetch_add(v)` and `fetch_sub/min/max/
//!   and/or/xor`, with or without a trailing `Ordering::Relaxed`.
//! - Helper functions beside the kernels, with parameters (also `mut`) and a return value.
//!   See below: helpers are device functions.
//!
//! ## Subgroups
//!
//! A kernel that declares `features(subgroups)` computes among the invocations of a
//! *subgroup* (a warp, a wave, a SIMD group), which the driver forms out of the workgroup; how
//! wide they are, it decides, within [`RuntimeInfo::subgroup_sizes`]. In practice drivers
//! make them of contiguous runs of `local_index()`, `subgroup_size()` each (the last one
//! shorter where the workgroup is not a multiple of it), and `tests/subgroups.rs` checks
//! that on its adapter, but WGSL does not promise it: a kernel that relies on which
//! invocations share a subgroup relies on the driver. Every operation below is taken by the
//! whole subgroup, so, like barriers, it must be reached in uniform control flow (WGSL
//! requires it). "Numbers" are `f32`, `f16`, `u32`, `i32` and their vectors; "integers"
//! `u32`, `i32` and their vectors; the result has the argument's type unless said.
//!
//! - `subgroup_size()`: the subgroup width (`u32`), the same in every invocation of a
//!   kernel, so a loop `while off < subgroup_size() { .. }` is uniform control flow.
//! - `subgroup_invocation_id()`: the invocation's lane in its subgroup, `0..subgroup_size()`.
//! - `subgroup_id()`: the invocation's subgroup in the workgroup; `num_subgroups()`: how
//!   many subgroups the workgroup has (the same in every invocation; lavapipe rounds it
//!   down when the last subgroup is short). These two and `subgroup_invocation_id()` need a
//!   one-dimensional workgroup (naga refuses them in `workgroup = [x, y]`).
//! - `subgroup_add(x)`, `subgroup_mul(x)`, `subgroup_min(x)`, `subgroup_max(x)`: the sum,
//!   product, minimum or maximum of the numbers `x` of the whole subgroup, in every
//!   invocation.
//! - `subgroup_inclusive_add(x)`, `subgroup_inclusive_mul(x)`: the sum or product of `x` over
//!   the lanes up to and including this one; `subgroup_exclusive_add(x)`,
//!   `subgroup_exclusive_mul(x)`: over the lanes before this one (0 or 1 in lane 0).
//! - `subgroup_and(x)`, `subgroup_or(x)`, `subgroup_xor(x)`: the bitwise and, or, xor of the
//!   integers `x` of the subgroup.
//! - `subgroup_all(c)`, `subgroup_any(c)`: whether the `bool` `c` holds in every lane, in
//!   some lane; `subgroup_ballot(c)`: a `Vec4<u32>` whose bit `l % 32` of component `l / 32`
//!   is set where `c` holds in lane `l`.
//! - `subgroup_broadcast_first(x)`: `x` of the subgroup's first active lane;
//!   `subgroup_broadcast(x, lane)`: `x` of lane `lane`, a constant `u32` below 128 (WGSL
//!   requires a const-expression: a literal, a constant, a constant `let`, an unrolled loop's
//!   variable).
//! - `subgroup_shuffle(x, lane)`: `x` of lane `lane` (a `u32` computed at run time);
//!   `subgroup_shuffle_up(x, delta)`, `subgroup_shuffle_down(x, delta)`: `x` of the lane
//!   `delta` below or above this one; `subgroup_shuffle_xor(x, mask)`: `x` of lane `lane ^
//!   mask`. A lane outside the subgroup gives an indeterminate value.
//!
//! WGSL requires `enable subgroups;` in a module using these, but naga 30 (which validates
//! the module at expansion and compiles it in wgpu) refuses the directive, so tessera does
//! not write it; a browser's WebGPU (Tint) would need it added.
//!
//! ## Tensor cores: matrix fragments
//!
//! A kernel that declares `features(cooperative_matrix)` (and `f16` for half-precision
//! fragments) multiplies on the tensor cores through *fragments*: square tiles of a matrix
//! held together by the invocations of a subgroup (WGSL's cooperative matrices, which wgpu
//! offers on Vulkan and Metal).
//!
//! - Types `FragA16<T>`, `FragB16<T>`, `FragC16<T>` (16 x 16) and `FragA8<T>`, `FragB8<T>`,
//!   `FragC8<T>` (8 x 8), `T` `f16` or `f32`: the left operand, right operand and accumulator
//!   of `C = A * B + C`. They live in locals, local arrays (`[FragC16<f32>; 4]`) and helpers'
//!   parameters and results; not in buffers or workgroup memory, where they have no layout.
//! - `coop_zero()` makes a fragment of zeros; `coop_load_row_major(&m[i], stride)` and
//!   `coop_load_column_major(..)` read one from a buffer or workgroup array, its first
//!   element at `m[i]`, `stride` elements from one row (column) to the next. Both make the
//!   fragment their context asks for: `let a: FragA16<f16> = coop_load_row_major(..)`, an
//!   assignment to a fragment, a helper's parameter. The memory may also hold vectors of the
//!   element type (a workgroup array of `Vec4<f16>`, so that staging writes four elements in
//!   one store): then `m[i]` is the vector holding the first element, a row (column) starts
//!   at a vector's first lane, and `stride` counts vectors.
//! - `coop_multiply_add(a, b, c)` returns `a * b + c`, of `c`'s type: an A, a B and a C
//!   fragment of one size, A and B of one element type (a mismatch is a compile error at the
//!   argument).
//! - `coop_store_row_major(c, &mut m[i], stride)` and `coop_store_column_major(..)` write a
//!   fragment's elements to a buffer or workgroup array of its element type (or of vectors
//!   of it, as for the loads).
//! - Fragments of one type add and subtract (`x + y`, `x - y`), and a scalar of the element
//!   type scales one (`acc * alpha`, `0.5 * acc`), element by element; no other operator
//!   applies (store a fragment to compute on its elements), nor compound assignment.
//! - Every invocation of the subgroup takes part in each operation, so, like barriers, they
//!   run only in uniform control flow: tessera follows values through helpers, so a helper
//!   may branch on a flag its callers pass uniformly (`if across { coop_load_column_major(..)
//!   } else { .. }` where every call passes a literal). Conditions may join uniform values
//!   with `&&` and `||` (their right side is evaluated anyway where it has no effects, which
//!   keeps the condition uniform for naga). WGSL has no other fill than zero, and no element
//!   access.
//! - A device runs some multiply-adds only: the launcher's `new` returns
//!   [`Error::MissingFeature`] unless the device has the feature and lists each multiply-add
//!   the kernel computes (size and element types; an NVIDIA H100, for one, lists 16 x 16 x 16
//!   of `f16` into `f16` or `f32`). [`RuntimeInfo::cooperative_matrices`] lists them;
//!   [`Runtime::new`] explains the experimental-feature opt-in that it takes for them.
//! - A fragment must lie inside its buffer: bounds checks guard its first element only.
//!
//! ```
//! #[tessera::kernels]
//! mod tensor {
//!     #[repr(C)]
//!     #[derive(Clone, Copy, tessera::Params)]
//!     pub struct Dims {
//!         pub m: u32,
//!         pub n: u32,
//!         pub k: u32,
//!     }
//!
//!     /// `c = a · b`, row-major, sizes multiples of 16: a 16 x 16 tile of `c` per workgroup
//!     /// of one subgroup of 32.
//!     #[kernel(workgroup = [32], grid = [p.n / 16, p.m / 16], features(f16, cooperative_matrix))]
//!     pub fn matmul(p: &Dims, a: &[f16], b: &[f16], c: &mut [f32]) {
//!         let (row, col) = (workgroup_id().y * 16, workgroup_id().x * 16);
//!         let mut acc: FragC16<f32> = coop_zero();
//!         for k in (0..p.k).step_by(16) {
//!             let fa: FragA16<f16> = coop_load_row_major(&a[row * p.k + k], p.k);
//!             let fb: FragB16<f16> = coop_load_row_major(&b[k * p.n + col], p.n);
//!             acc = coop_multiply_add(fa, fb, acc);
//!         }
//!         coop_store_row_major(acc, &mut c[row * p.n + col], p.n);
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! The `tessera-nn` crate's `Precision::TensorCoreF16` is built this way.
//!
//! ## Helpers are device functions
//!
//! A helper sees the constants of the kernel instance that calls it (`REG`, `DEPTH` and array
//! lengths built from them are the caller's), may contain barriers (the uniformity check
//! follows the call into it), and besides values it may borrow the caller's memory. What a
//! call gives back varies between invocations only as far as what reaches it does: a result
//! computed from uniform arguments is uniform whatever else the helper is passed (an
//! invocation index it uses elsewhere), and so is one read through
//! `workgroup_uniform_load`; memory lent to a helper varies inside it as the caller's does
//! (a read-write buffer even through a `&[T]` parameter), and a local array lent `&mut`
//! varies after the call as what the helper writes into it (the value, or which element)
//! does.
//!
//! | helper parameter | the caller passes |
//! | --- | --- |
//! | `tile: &[T; N]` / `&mut [T; N]` | a workgroup array (`tile`) or a local array (`&acc`, `&mut acc`) of exactly that type |
//! | `x: &[T]` / `&mut [T]` | one of its buffer parameters |
//! | `p: &P` | its `#[derive(Params)]` parameters |
//!
//! ```ignore
//! /// One step of a tiled mainloop, written once for every kernel and instance that calls it.
//! fn multiply_accumulate(a: &[f32; DEPTH * PADDED], b: &[f32; DEPTH * PADDED],
//!                        acc: &mut [f32; REG * REG], t: u32) {
//!     workgroup_barrier();
//!     for kk in 0..DEPTH {
//!         #[unroll]
//!         for e in 0..REG * REG {
//!             acc[e] += a[kk * PADDED + t / SPAN + e / REG * SPAN] * b[kk * PADDED + t % SPAN + e % REG * SPAN];
//!         }
//!     }
//!     workgroup_barrier();
//! }
//! ```
//!
//! A helper becomes one WGSL function per distinct use (WGSL functions cannot take pointers to
//! workgroup or storage memory): borrowed workgroup arrays, buffers and parameters are named
//! directly in that copy, borrowed local arrays arrive as `ptr<function, ...>`; copies that
//! come out the same are written once. A helper cannot call itself, directly or through other
//! helpers (a GPU has no call stack), and the invocation ids (`local_index()`, ...) are read in
//! the kernel and passed in. `tessera-nn` (`nn/src/kernels/`) builds its six GEMM-shaped kernels on one
//! such mainloop.
//!
//! ### Generic helpers
//!
//! A helper may be generic over element types of its own, `fn load<E>(..)`: each call passes
//! arguments whose types say what `E` is (a buffer's element, an array's element, a value's
//! type, a literal's default), as Rust infers them, and calls with another `E` use another
//! copy of the helper, as Rust monomorphizes. `E` stands for a number type or a vector of one;
//! `E::LANES`, `E::Scalar`, `x as E` and the lane reductions work as with a kernel's `T`. So
//! one body serves a kernel that reads scalars and one that reads `Vec4`s, without either
//! declaring `types(..)`:
//!
//! ```
//! #[tessera::kernels]
//! mod sums {
//!     /// The sum of `n` elements of `m` from `start`, lane by lane, and of its lanes.
//!     fn sum_lanes<E>(m: &[E], start: u32, n: u32) -> E::Scalar {
//!         let mut sum = 0.0 as E;
//!         for i in start..start + n {
//!             sum += m[i];
//!         }
//!         sum.element_sum()
//!     }
//!
//!     #[kernel(workgroup = [64], grid = [ceil_div(out.len(), 64)])]
//!     pub fn row_sums(x: &[f32], x4: &[Vec4<f32>], out: &mut [f32]) {
//!         let row = global_id().x;
//!         if row < out.len() {
//!             // Rows of 8 scalars, read once as scalars and once as two vectors.
//!             out[row] = sum_lanes(x, 8 * row, 8) - sum_lanes(x4, 2 * row, 2);
//!         }
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! Where no argument says what `E` is (`fn zero<E>() -> E`), the call names it, as in Rust:
//! `zero::<Vec4<f32>>()`. A helper's own type parameter takes no bounds (every element type
//! has what a body may use), and shadows a kernel's `T` of the same name. A generic helper
//! is checked in each copy its calls make, with the types in place (one no kernel calls is
//! not checked).
//!
//! In a body over an element type (a generic helper, or a kernel over `types(T = [..])` and
//! the helpers it calls), a value's lanes are read and written as `v[c]` whatever its width:
//! a scalar is its own lane 0, so `for c in 0..E::LANES { sum += v[c]; }` serves `f32` and
//! `Vec4<f32>` alike (a scalar's lane index is not evaluated, so it may not call anything).
//! Elsewhere indexing a scalar stays an error.
//!
//! ## Device-function libraries
//!
//! Helpers written once can be shared between kernels modules and between crates. A crate
//! *publishes* them in a module marked [`#[tessera::device]`](device): helpers and constants
//! written exactly as in a kernels module.
//!
//! ```
//! // In the library crate (`my_kernels_lib`, say):
//! #[tessera::device]
//! pub mod reductions {
//!     /// The sum of `value` over a workgroup of `GROUP` invocations (a power of two), by
//!     /// halving the caller's workgroup array `tile`; `i` is the caller's `local_index()`.
//!     fn workgroup_sum(tile: &mut [f32; GROUP], i: u32, value: f32) -> f32 {
//!         tile[i] = value;
//!         workgroup_barrier();
//!         let mut half = GROUP / 2;
//!         while half > 0 {
//!             if i < half {
//!                 tile[i] += tile[i + half];
//!             }
//!             workgroup_barrier();
//!             half /= 2;
//!         }
//!         let total = tile[0];
//!         workgroup_barrier();
//!         total
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! A kernels module *imports* a library with `#[device] use path::to::library;` (one item per
//! library) and calls its helpers by name, as its own:
//!
//! ```
//! # #[tessera::device]
//! # pub mod reductions {
//! #     fn workgroup_sum(tile: &mut [f32; GROUP], i: u32, value: f32) -> f32 {
//! #         tile[i] = value;
//! #         workgroup_barrier();
//! #         let total = tile[0];
//! #         workgroup_barrier();
//! #         total
//! #     }
//! # }
//! // In any crate that depends on `my_kernels_lib` (here, the same crate: `super::`):
//! #[tessera::kernels]
//! mod sums {
//!     #[device]
//!     use super::reductions; // `use my_kernels_lib::reductions;` from another crate
//!
//!     /// One sum per workgroup of `GROUP` elements of `x`.
//!     #[kernel(workgroup = [GROUP], constants(GROUP = [256, 64]), grid = [ceil_div(x.len(), GROUP)])]
//!     pub fn block_sums(x: &[f32], sums: &mut [f32], #[workgroup] tile: &mut [f32; GROUP]) {
//!         let i = global_id().x;
//!         let total = workgroup_sum(tile, local_index(), if i < x.len() { x[i] } else { 0.0 });
//!         if local_index() == 0 && workgroup_id().x < sums.len() {
//!             sums[workgroup_id().x] = total;
//!         }
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! - An imported helper has every power of a local one: it borrows the caller's workgroup
//!   arrays, local arrays, buffers and parameters, holds barriers, uses subgroup operations and
//!   fragments, and sees the calling instance's constants (`GROUP` above) and element type
//!   (`T`). Its own module's constants come along with it.
//! - Checks run through the call as through a local helper's. A wrong argument is reported at
//!   the caller's tokens. A mistake that only the caller's types or constants reveal is
//!   reported at the library's tokens. A feature the helper needs (`subgroups`, `f16`,
//!   `cooperative_matrix`) is reported at the kernel that does not declare it.
//! - A library's helpers that name no constant or type of their callers are checked once, when
//!   the library compiles, whether or not anything calls them. The others are checked in each
//!   kernel that calls them, with its values. Constants are told apart by Rust's convention:
//!   an UPPER_CASE name that the library does not declare is the caller's.
//! - Only the helpers a kernel calls reach its WGSL.
//! - The library's constants stay Rust constants of its module, for the host.
//!   Its helpers are WGSL only: the module's rustdoc lists them with their signatures.
//! - A library's names must not be shared: an imported helper, constant, struct or set whose
//!   name the module already has (a `use` included, for a struct or set), or another import
//!   brings, is an error at the import (the library's helpers call each other by name). The
//!   same library reached twice, directly and through a library that imports it, is one.
//!
//! A library may also declare the parameter structs its helpers take, and import other
//! libraries:
//!
//! ```
//! #[tessera::device]
//! pub mod activations {
//!     /// The slope of `leaky_relu` below zero.
//!     pub const LEAK: f32 = 0.125;
//!
//!     fn leaky_relu(x: f32) -> f32 {
//!         if x > 0.0 {
//!             x
//!         } else {
//!             LEAK * x
//!         }
//!     }
//! }
//!
//! #[tessera::device]
//! pub mod epilogues {
//!     #[device]
//!     use super::activations;
//!
//!     /// A bias-and-activation pass over `n` values: the uniform of kernels in any module that
//!     /// imports this library, one Rust type for all of them.
//!     #[repr(C)]
//!     #[derive(Clone, Copy, tessera::Params)]
//!     pub struct BiasParams {
//!         pub n: u32,
//!         pub bias: f32,
//!     }
//!
//!     /// A helper over its own library's struct, calling the imported library's helper.
//!     fn biased(p: &BiasParams, x: f32) -> f32 {
//!         leaky_relu(x + p.bias)
//!     }
//! }
//!
//! #[tessera::kernels]
//! mod layer {
//!     #[device]
//!     use super::epilogues; // `activations`' items come along
//!
//!     #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
//!     pub fn bias_activate(p: &BiasParams, #[len(p.n)] x: &mut [f32]) {
//!         let i = global_id().x;
//!         if i < p.n {
//!             x[i] = biased(p, x[i]);
//!         }
//!     }
//! }
//!
//! // The host names the struct through the library, or through the module that imports it.
//! fn params(n: u32) -> layer::BiasParams {
//!     epilogues::BiasParams { n, bias: 0.5 }
//! }
//! # fn main() { params(1); }
//! ```
//!
//! - A library's structs derive `Params` and are `pub`, with `pub` fields (or `pub(crate)`,
//!   for a library only this crate imports): the host builds them, and the launchers of every
//!   importing module read them. Each stays one Rust item of its library's module. A module
//!   that imports the library gets `use path::Name;` in its place (`path` as the import is
//!   written), so its kernels take the struct as their uniform, its `#[len(..)]` and `grid`
//!   read it, its helpers take it, and the host names it `path::Name` or `module::Name`.
//! - A library imports another with `#[device] use`, as a kernels module does. A module
//!   importing it gets all of the other library's helpers, constants and structs along with
//!   its own, not only those its helpers use (so its names can clash too: the library's
//!   rustdoc lists what it imports). The library re-exports the other's structs, and a module
//!   that imports it names them through it (`path::Name`), whichever crate declared them. Its helpers that name nothing of their callers are checked in its crate, with the
//!   other library's items in scope. A library cannot import itself, and two libraries cannot
//!   import each other (rustc then finds neither).
//! - A path that is no library (`#[device] use std::f32;`) fails with rustc's "cannot find
//!   macro `tessera_device_library`": each library defines that macro, through which its
//!   items reach the modules that import it. Libraries, and the modules that import them, are
//!   items of a module, not of a function's body, where such paths do not reach.
//!
//! A library may also publish named sets of constants, for the kernels of several modules
//! (GEMM-shaped kernels split across files that share their blocking, say):
//!
//! ```
//! #[tessera::device]
//! pub mod tiling {
//!     /// How many consecutive elements each invocation reads.
//!     pub const LANES: u32 = 4;
//!
//!     /// A workgroup of `TILE` invocations covers `SPAN` elements.
//!     #[constants(TILE = [64, 256], SPAN = TILE * LANES)]
//!     pub struct Tiling;
//!
//!     /// Where invocation `i` of workgroup `w` starts: the calling instance's `SPAN`.
//!     fn lane_start(w: u32, i: u32) -> u32 {
//!         w * SPAN + i * LANES
//!     }
//! }
//!
//! #[tessera::kernels]
//! mod forward {
//!     #[device]
//!     use super::tiling;
//!
//!     #[kernel(workgroup = [TILE], constants = Tiling, grid = [ceil_div(x.len(), SPAN)])]
//!     pub fn scale(x: &mut [f32]) {
//!         let start = lane_start(workgroup_id().x, local_index());
//!         for k in 0..LANES {
//!             if start + k < x.len() {
//!                 x[start + k] *= 2.0;
//!             }
//!         }
//!     }
//! }
//!
//! #[tessera::kernels]
//! mod backward {
//!     #[device]
//!     use super::tiling;
//!
//!     #[kernel(workgroup = [TILE], constants = Tiling, grid = [ceil_div(x.len(), SPAN)])]
//!     pub fn clear(x: &mut [f32]) {
//!         let start = lane_start(workgroup_id().x, local_index());
//!         for k in 0..LANES {
//!             if start + k < x.len() {
//!                 x[start + k] = 0.0;
//!             }
//!         }
//!     }
//! }
//!
//! // One value picks the instance of both modules' kernels.
//! fn build(rt: &tessera::Runtime, tiling: tiling::Tiling) -> tessera::Result<()> {
//!     forward::Scale::with_constants(rt, tiling)?;
//!     backward::Clear::with_constants(rt, tiling)?;
//!     Ok(())
//! }
//! # fn main() {
//! #     let _ = build;
//! #     assert_eq!(tiling::Tiling::ALL.len(), 2);
//! #     assert_eq!(tiling::Tiling { tile: 64 }.span(), 256);
//! # }
//! ```
//!
//! - A set is declared in a library as in a kernels module, `pub` (or `pub(crate)`, for a
//!   library only this crate imports): `#[constants(..)] pub struct Name;`. It means the same:
//!   any module importing the library, directly or through another library, writes
//!   `constants = Name`. Its values and derived constants are checked
//!   where the library compiles; a derived constant may use the library's constants (and its
//!   imports').
//! - The set is one Rust type, emitted in the library (`Name { .. }`, `Name::ALL`, a method per
//!   derived constant); each importing module gets `use path::Name;`, as for a struct, so the
//!   same value builds the kernels of every module that imports it.
//! - The library's helpers may use the set's constants (`SPAN` above): they take the values of
//!   the instance whose kernel calls them, and are checked there. A kernel that calls one
//!   without naming the set is an error at the kernel's name, naming the set.
//! - A set's name is a type name of the importing module: a local set, struct or `use` of that
//!   name, or another library's, is an error at the import.
//!
//! Anything else is a compile error at the offending tokens saying what to write instead, and
//! so is a type error, a write to a read-only binding, a workgroup over WebGPU's limits, or a
//! barrier or subgroup operation that not every invocation of the workgroup reaches together. The compile-time
//! limits beyond the workgroup's: at most 8 storage buffers per kernel (WebGPU's default
//! `maxStorageBuffersPerShaderStage`), at most 8192 bytes of local variables per function
//! (WGSL's limit; each kernel and helper counted on its own, an `#[unroll]`ed loop's locals once
//! per iteration, so large arrays belong in workgroup memory), and at most 65535 elements in
//! one array (WebGPU's WGSL compilers refuse more), each checked for every instance.
//!
//! # The standard library
//!
//! [`tessera::std`](crate::std) holds device-function libraries that ship with tessera, parts
//! that memory-bound kernels are built from: [`reduce`](crate::std::reduce) (sums, maxima,
//! minima and argmax across a subgroup or a workgroup, with a workgroup-memory path for
//! devices without subgroups), [`softmax`](crate::std::softmax) (the online softmax state),
//! [`rows`](crate::std::rows) (a row segment kept in registers, loaded with the widest loads
//! its alignment allows) and [`scan`](crate::std::scan) (inclusive and exclusive prefix sums
//! across a subgroup, a workgroup and a tile in registers, the parts of a whole-buffer scan).
//! A kernels module imports them as any library: `#[device] use tessera::std::reduce;`.
//!
//! # Running kernels
//!
//! Each launcher has `new(&Runtime)`, `launch(&self, &Runtime, args)` (check lengths, queue
//! the dispatch on the runtime; queued dispatches are submitted together when something needs
//! them, see [`Runtime::flush`]) and `record(&self, &mut Batch, args)` (add to a [`Batch`]
//! submitted once). Either way the dispatch is issued in program order: it sees every buffer
//! write and dispatch issued before it, and none issued after it (see [`Batch`]). Launchers
//! also have `grid(&args)` (logical workgroup counts), `variant(&args)`, `check_lengths(&args)`,
//! `workgroup_size()`, `workgroup_memory()`, `entry_point()`, `VARIANTS` and `BINDINGS`.
//!
//! `unsafe fn new_unchecked(&Runtime)` (and `with_constants_unchecked`) builds the kernel
//! without the bounds checks naga adds to every index, for a kernel whose every index is
//! guarded; its safety section says what the caller promises. [`Runtime::autotune`] picks
//! among instances (or any other candidates) by timing them once per device and shape.
#![warn(missing_docs)]

// Lets this crate's own modules use the macros, whose output names `::tessera`.
extern crate self as tessera;

/// Compiles a module of kernels.
///
/// The module becomes one WGSL module, checked by the macro (types, uniformity of barriers,
/// constants, WebGPU's limits) and validated by naga while it expands, and each `#[kernel]`
/// function `foo_bar` becomes:
///
/// - a launcher `FooBar`: `FooBar::new(&rt)` makes it (an error value on a device without a
///   declared feature or limit), and its pipeline is built, once, at its first dispatch (or
///   by `prepare(&rt)`); `launch(&rt, args)` checks the buffers' lengths and dispatches; `record(&mut batch, args)` adds the dispatch to a [`Batch`];
///   `grid(&args)`, `variant(&args)`, `check_lengths(&args)`, `workgroup_size()`,
///   `entry_point()`, `INSTANCES`, `VARIANTS` and `BINDINGS` describe it; kernels with
///   `constants(..)` also have `with_constants(&rt, FooBarConstants { .. })`;
/// - `FooBarArgs`, one field per parameter: `&GpuBuffer<T>` for `&[T]`, `&mut GpuBuffer<T>`
///   for `&mut [T]`, `&P` for a `#[derive(Params)]` struct;
/// - and the module gets `WGSL`, the generated shader text.
///
/// [`example`] shows every generated item of a small module with its documentation; the crate
/// documentation describes the kernel language.
///
/// ```no_run
/// #[tessera::kernels]
/// mod kernels {
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct ScaleParams {
///         pub by: f32,
///         pub n: u32,
///     }
///
///     #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
///     pub fn scale(p: &ScaleParams, #[len(p.n)] x: &mut [f32]) {
///         let i = global_id().x;
///         if i < p.n {
///             x[i] *= p.by;
///         }
///     }
/// }
///
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = tessera::Runtime::new()?;
/// let mut x = rt.upload(&[1.0f32, 2.0])?;
/// let scale = kernels::Scale::new(&rt)?;
/// let p = kernels::ScaleParams { by: 3.0, n: 2 };
/// scale.launch(&rt, kernels::ScaleArgs { p: &p, x: &mut x })?;
/// assert_eq!(x.read(&rt)?, [3.0, 6.0]);
/// # Ok(()) }
/// ```
#[doc(inline)]
pub use kernel_macros::kernels;

/// Makes a module of helpers, constants, `Params` structs and named sets of constants a
/// device-function library, which any [`kernels`] module or other library, in this crate or
/// another, imports with `#[device] use path::to::library;`.
///
/// See [Device-function libraries](crate#device-function-libraries) for how a crate publishes
/// one and how a kernels module imports it, with examples of both.
///
/// ```
/// #[tessera::device]
/// pub mod scaling {
///     /// The factor [`scaled`] applies: a Rust constant too, for the host.
///     pub const FACTOR: f32 = 0.5;
///
///     /// `x` times `FACTOR`, in the caller's element type `T`.
///     fn scaled(x: T) -> T {
///         x * (FACTOR as T)
///     }
/// }
///
/// #[tessera::kernels]
/// mod halve {
///     #[device]
///     use super::scaling;
///
///     #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)], types(T = [f32]))]
///     pub fn halve<T>(x: &mut [T]) {
///         let i = global_id().x;
///         if i < x.len() {
///             x[i] = scaled(x[i]);
///         }
///     }
/// }
///
/// fn main() {
///     assert_eq!(scaling::FACTOR, 0.5);
///     assert!(halve::WGSL.contains("fn scaled"));
/// }
/// ```
#[doc(inline)]
pub use kernel_macros::device;

/// Marks a kernel in a [`kernels`] module, and declares how it runs.
///
/// `#[kernel(workgroup = [x, y, z], grid = [gx, gy, gz], ...)]`: the workgroup size
/// (literals or module constants) and the number of workgroups as expressions of the
/// parameters (`ceil_div(p.n, 64)`, `x.len()`). Optional, in any order: `constants(TILE = [8,
/// 16])` (one instance per value; lists that vary together go in `zip(A = [..], B = [..])`)
/// or `constants = Set` (a named set), `specialize(p.stride ==
/// 1)` (a copy of the body with those values folded in, chosen at launch), `types(T = [f32,
/// f16])`, `limits(invocations = 1024, workgroup_memory = 49152)` and `features(subgroups,
/// f16)`. Parameters: `&[T]` and `&mut [T]` storage buffers (`#[len(expr)]` states the length
/// the launcher checks), one `&P` of a [`Params`] struct, and `#[workgroup] t: &mut [T; N]`
/// arrays (or `#[workgroup] s: &mut T` values) shared by the workgroup.
///
/// ```no_run
/// #[tessera::kernels]
/// mod kernels {
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct Sum {
///         pub n: u32,
///     }
///
///     /// Each workgroup adds up `TILE` elements of `x` into `out[workgroup]`.
///     #[kernel(workgroup = [TILE], grid = [ceil_div(p.n, TILE)], constants(TILE = [64, 256]))]
///     pub fn partial_sums(
///         p: &Sum,
///         #[len(p.n)] x: &[f32],
///         #[len(ceil_div(p.n, TILE))] out: &mut [f32],
///         #[workgroup] t: &mut [f32; TILE],
///     ) {
///         let (i, l) = (global_id().x, local_index());
///         t[l] = if i < p.n { x[i] } else { 0.0 };
///         let mut half = TILE / 2;
///         while half > 0 {
///             workgroup_barrier();
///             if l < half {
///                 t[l] += t[l + half];
///             }
///             half /= 2;
///         }
///         if l == 0 {
///             out[workgroup_id().x] = t[0];
///         }
///     }
/// }
///
/// # fn main() -> Result<(), tessera::Error> {
/// let rt = tessera::Runtime::new()?;
/// let sums = kernels::PartialSums::with_constants(&rt, kernels::PartialSumsConstants { tile: 256 })?;
/// # Ok(()) }
/// ```
#[doc(inline)]
pub use kernel_macros::kernel;

/// Makes a `#[repr(C)]` struct a kernel's uniform parameters.
///
/// Fields are `f32`, `u32`, `i32` and arrays of 2 to 4 of them (WGSL vectors). The derive
/// checks at compile time that the struct's Rust layout is WGSL's uniform layout, naming the
/// field that needs padding before it where it is not, and implements `bytemuck::Pod`
/// (derive `Clone` and `Copy` beside it).
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy, tessera::Params)]
/// pub struct Shape {
///     pub rows: u32,
///     pub cols: u32,
///     pub _pad: [u32; 2], // WGSL aligns the vector below to 16 bytes
///     pub scale: [f32; 4],
/// }
/// assert_eq!(std::mem::size_of::<Shape>(), 32);
/// ```
#[doc(inline)]
pub use kernel_macros::Params;

/// What a `#[kernels]` module generates, to click through: this module holds one, `kernels`,
/// compiled from the source below, and every item in it (the launchers, their arguments and
/// constants, `WGSL`) is what the macro wrote, with the documentation it writes.
///
/// ```ignore
/// #[tessera::kernels]
/// pub mod kernels {
///     /// The parameters of `saxpy`.
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct SaxpyParams {
///         pub a: f32,
///         pub n: u32,
///     }
///
///     /// `y = a * x + y`, `PER` elements per invocation.
///     #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64 * PER)], constants(PER = [1, 4]))]
///     pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
///         for k in 0..PER {
///             let i = global_id().x * PER + k;
///             if i < p.n {
///                 y[i] = p.a.mul_add(x[i], y[i]);
///             }
///         }
///     }
/// }
/// ```
#[cfg(any(doc, test))]
pub mod example {
    /// The module of the source above, expanded.
    #[crate::kernels]
    pub mod kernels {
        /// The parameters of `saxpy`.
        #[repr(C)]
        #[derive(Clone, Copy, tessera::Params)]
        pub struct SaxpyParams {
            /// The factor.
            pub a: f32,
            /// The number of elements.
            pub n: u32,
        }

        /// `y = a * x + y`, `PER` elements per invocation.
        #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64 * PER)], constants(PER = [1, 4]))]
        pub fn saxpy(p: &SaxpyParams, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
            for k in 0..PER {
                let i = global_id().x * PER + k;
                if i < p.n {
                    y[i] = p.a.mul_add(x[i], y[i]);
                }
            }
        }
    }
}
/// The `half` crate, whose [`half::f16`] is the host type of `f16` buffers.
#[doc(no_inline)]
pub use half;
// Named one by one: a glob would also inline all of wgpu's documentation into tessera's.
/// The wgpu tessera runs on, for interoperation (its documentation is wgpu's own, at docs.rs).
#[doc(no_inline)]
pub use kernel_runtime::wgpu;
pub use kernel_runtime::{
    fold_grid, size_bucket, source_hash, Arg, Autotune, Batch, BindingKind, BufferView,
    BufferViewMut, Error, FoldedGrid, GpuBuffer, Pipeline, PipelineDesc, Result, Runtime,
    RuntimeInfo, Timing, TimingSource, TuneChoice, TuneKey, Tuned, VariantInfo, ADAPTER_ENV,
    AUTOTUNE_CACHE_ENV, AUTOTUNE_ENV, COOPERATIVE_MATRIX_ENV,
};

pub mod std;

/// What generated code refers to; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use bytemuck;
    pub use kernel_macros::__import as import;
    pub use kernel_runtime;

    /// `a / b` rounded up; 0 when `b` is 0 (the launcher then dispatches nothing).
    pub const fn ceil_div(a: u64, b: u64) -> u64 {
        match b {
            0 => 0,
            _ => a.div_ceil(b),
        }
    }
}
