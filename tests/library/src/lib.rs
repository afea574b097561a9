//! A device-function library, published as a crate of its own: the kernels of tessera's tests
//! (`tests/libraries.rs`, and the ui tests) import its modules with `#[device] use`.
//!
//! Each module shows one power a helper has across crates: borrowing the caller's workgroup
//! memory and holding barriers, using the caller's element type and constants, subgroup
//! operations and tensor-core fragments, its own constants and structs, other libraries.

/// Reductions over a workgroup, through a workgroup array the calling kernel lends.
#[tessera::device]
pub mod reductions {
    /// How many values the helper `sum_of_squares` folds into one: a constant of the library.
    pub const FOLD: u32 = 2;

    /// The sum of `value` over the workgroup, by halving `tile` (the caller's workgroup array
    /// of `GROUP` elements, `GROUP` a power of two) with a barrier between the steps. `i` is
    /// the caller's `local_index()`. Every invocation gets the sum.
    fn workgroup_sum(tile: &mut [f32; GROUP], i: u32, value: f32) -> f32 {
        tile[i] = value;
        workgroup_barrier();
        let mut half = GROUP / 2;
        while half > 0 {
            if i < half {
                tile[i] += tile[i + half];
            }
            workgroup_barrier();
            half /= 2;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// `FOLD` consecutive squares from `x`, starting at `start` (callers pass a bound on their
    /// own): the library's own constant, and a helper checked when this crate compiles.
    fn sum_of_squares(x: &[f32], start: u32) -> f32 {
        let mut total = 0.0;
        for k in 0..FOLD {
            let v = x[start + k];
            total += v * v;
        }
        total
    }

    /// `value` added over the invocation's subgroup (the caller declares `features(subgroups)`).
    fn subgroup_total(value: f32) -> f32 {
        subgroup_add(value)
    }
}

/// Arithmetic over the caller's element type `T`, a scalar or a vector of one.
#[tessera::device]
pub mod elementwise {
    /// `a * x + y` in the caller's `T`.
    fn axpy(a: T, x: T, y: T) -> T {
        a * x + y
    }

    /// The sum of the `count` elements of `x` from `start`, and of their lanes where `T` is a
    /// vector: one body for scalar and wide loads.
    fn total(x: &[T], start: u32, count: u32) -> T::Scalar {
        let mut acc = 0 as T;
        for k in 0..count {
            acc += x[start + k];
        }
        acc.element_sum()
    }

    /// The largest lane of the `count` elements of `m` from `start`: generic over its own
    /// element type `E`, which each call's buffer settles (a kernel without `types(..)` may
    /// call it over scalars and over vectors).
    fn largest<E>(m: &[E], start: u32, count: u32) -> E::Scalar {
        let mut top = m[start];
        for k in 1..count {
            top = top.max(m[start + k]);
        }
        top.max_element()
    }
}

/// Tensor-core parts over 16 x 16 fragments of `f16` (the caller declares
/// `features(f16, cooperative_matrix)`).
#[tessera::device]
pub mod tiles {
    /// `acc + a · b` for the 16 x 16 tiles at `a[a_at]` and `b[b_at]`, row-major with `stride`
    /// elements a row.
    fn multiply_tile(
        a: &[f16],
        b: &[f16],
        a_at: u32,
        b_at: u32,
        stride: u32,
        acc: FragC16<f32>,
    ) -> FragC16<f32> {
        let fa: FragA16<f16> = coop_load_row_major(&a[a_at], stride);
        let fb: FragB16<f16> = coop_load_row_major(&b[b_at], stride);
        coop_multiply_add(fa, fb, acc)
    }
}

/// Sliding windows over a buffer, shaped by a parameter struct the library declares: a kernel
/// of any importing module takes `&WindowParams` as its uniform, and the host builds it as
/// `tessera_test_library::windows::WindowParams { .. }`.
#[tessera::device]
pub mod windows {
    /// The shape of a one-dimensional window sum: `n` outputs, each the sum of `width`
    /// consecutive inputs, times `scale`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct WindowParams {
        pub n: u32,
        pub width: u32,
        pub scale: f32,
    }

    /// How many inputs the `p.n` outputs read: checked when this crate compiles, as it names
    /// nothing of its callers'.
    fn inputs(p: &WindowParams) -> u32 {
        p.n + p.width - 1
    }

    /// Output `i`: the sum of `x[i..i + p.width]`, times `p.scale` (callers check `i < p.n`).
    fn window_sum(p: &WindowParams, x: &[f32], i: u32) -> f32 {
        let mut total = 0.0;
        for k in 0..p.width {
            total += x[i + k];
        }
        total * p.scale
    }
}

/// A leaky rectifier, the library `epilogues` builds on.
#[tessera::device]
pub mod activations {
    /// The slope of `leaky_relu` below zero.
    pub const LEAK: f32 = 0.125;

    /// `x` above zero, `LEAK * x` below.
    fn leaky_relu(x: f32) -> f32 {
        if x > 0.0 {
            x
        } else {
            LEAK * x
        }
    }
}

/// What a kernel does with a value before storing it, built on two other libraries: a module
/// importing `epilogues` gets their helpers, constants and structs too (`WindowParams` is
/// re-exported here as `epilogues::WindowParams`).
#[tessera::device]
pub mod epilogues {
    #[device]
    use super::activations;
    #[device]
    use crate::windows;

    /// `leaky_relu(x + bias)`: a helper calling another library's.
    fn biased_activation(x: f32, bias: f32) -> f32 {
        leaky_relu(x + bias)
    }

    /// Output `i` of the window sum `p` describes, plus `bias`, through `leaky_relu`.
    fn activated_window(p: &WindowParams, x: &[f32], i: u32, bias: f32) -> f32 {
        biased_activation(window_sum(p, x, i), bias)
    }
}

/// Tiled passes over a buffer, shaped by a named set of constants the library declares:
/// kernels of any importing module write `constants = Tiling`, and the host picks an instance
/// with one Rust type, `tessera_test_library::tiling::Tiling { tile: 8 }`, for every module.
#[tessera::device]
pub mod tiling {
    /// How many consecutive elements each invocation reads.
    pub const LANES: u32 = 2;

    /// A workgroup of `TILE` invocations covers `SPAN` elements, `LANES` each (a derived
    /// constant over the library's own constant).
    #[constants(TILE = [8, 32], SPAN = TILE * LANES)]
    pub struct Tiling;

    /// The sum of the `LANES` elements invocation `i` of workgroup `w` reads from the `n` of
    /// `x` (0 past the end): the calling instance's `SPAN` says where its workgroup starts.
    fn lane_sum(x: &[f32], n: u32, w: u32, i: u32) -> f32 {
        let start = w * SPAN + i * LANES;
        let mut total = 0.0;
        for k in 0..LANES {
            if start + k < n {
                total += x[start + k];
            }
        }
        total
    }
}

/// Ready kernels: each kernels module that imports this library gets `scaled_sum` and the
/// family `Adjust` as its own (launchers, and entry points in its WGSL), compiled with that
/// module's other kernels.
#[tessera::device]
pub mod passes {
    #[device]
    use super::elementwise;
    #[device]
    use super::windows;

    /// `y[i] = a * x[i] + y[i]` in `T`, through `elementwise::axpy`.
    #[kernel(workgroup = [64], grid = [ceil_div(y.len(), 64)], types(T = [f32, u32]))]
    pub fn scaled_sum<T>(a: &[T], x: &[T], y: &mut [T]) {
        let i = global_id().x;
        if i < y.len() && i < x.len() {
            y[i] = axpy(a[0], x[i], y[i]);
        }
    }

    /// Doubles the first `p.n` elements of `x`, then adds `p.scale` to each.
    #[family(doubled, shifted)]
    pub struct Adjust {
        p: &WindowParams,
        #[len(p.n)]
        x: &mut [f32],
    }

    /// `x[i] *= 2`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn doubled(p: &WindowParams, x: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            x[i] = 2.0 * x[i];
        }
    }

    /// `x[i] += p.scale`.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn shifted(p: &WindowParams, x: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            x[i] += p.scale;
        }
    }
}
