//! The source of [`tessera::std::rows`](crate::std::rows): a row segment kept in registers.

/// A segment of a row loaded into registers, reduced there, and stored back.
///
/// Import it with `#[device] use tessera::std::rows;`.
///
/// A memory-bound row operation (softmax, RMSNorm, a layer norm) is fastest when it reads the
/// row once, keeps it in registers while it reduces, and writes it once, with the widest
/// loads the row allows. Here a workgroup of `GROUP` invocations holds a segment of up to
/// `GROUP * PER` elements of `E`, invocation `local` holding elements `local`, `local +
/// GROUP`, ... (`PER` of them, in the caller's local array `regs: [E; PER]`), so that each
/// load instruction of the workgroup reads consecutive addresses.
///
/// # What the caller provides
///
/// - `GROUP` and `PER`, constants of the calling kernel: its (one-dimensional) workgroup size
///   and the elements of `E` an invocation holds.
/// - `regs`, a local array `[E; PER]`, lent as `&mut regs` or `&regs`. The helpers index it
///   with constants only (their loops are unrolled), so it stays in registers; so should the
///   caller's loops over it (`#[unroll] for k in 0..PER`).
/// - `local`, its `local_index()`, which a helper cannot read itself.
///
/// # Widths
///
/// `E` is the element type of the buffers the call passes: `Vec4<f32>` moves four floats a
/// load, `f32` one. A row of `cols` scalars starting at a multiple of 4 reads as `cols / 4`
/// vectors when `cols` is a multiple of 4; otherwise read it as scalars. Write the kernel
/// once over `types(T = [f32, Vec4<f32>])` and let the host pick the instance by `cols % 4`
/// (a buffer of scalars binds where `Vec4<f32>` is expected through
/// [`GpuBuffer::view_as`](crate::GpuBuffer::view_as)). Elements past the segment's `count`
/// (the tail of a row that is not a multiple of `GROUP`) are filled with the caller's `fill`
/// on loading, skipped by the reductions, and not written by [`row_store`](self).
/// `f16` buffers (`features(f16)`) load the same way, and the reductions then sum in
/// `f16`; to hold, reduce and scale the row in `f32` instead, as a norm over `f16` storage
/// should (an `f16` sum of 3000 ones stops at 2048), load it with `row_load_f32` into
/// registers `[T::F32; PER]` and store it with `row_store_f32`, which convert each element:
/// one kernel over `types(T = [f32, Vec4<f32>, f16, Vec4<f16>])` then serves all four.
///
/// # Longer rows, and the grid
///
/// A row longer than `GROUP * PER` elements is loaded segment by segment (a loop over
/// `start`), or with a larger `PER`. Kernels that loop over rows with fewer workgroups than
/// rows (a grid-stride loop) write the loop themselves, since a helper cannot take a loop
/// body: `for row in (workgroup_id().x..p.rows).step_by(num_workgroups().x) { .. }` is
/// uniform, so barriers and the reductions of [`reduce`](crate::std::reduce) may sit in it.
///
/// ```
/// #[tessera::kernels]
/// mod norms {
///     #[device]
///     use tessera::std::reduce;
///     #[device]
///     use tessera::std::rows;
///
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct Shape {
///         pub rows: u32,
///         /// Elements of `T` a row, at most `GROUP * PER`.
///         pub width: u32,
///     }
///
///     /// RMSNorm of each row, a workgroup a row, the row read once into registers.
///     #[kernel(workgroup = [GROUP], constants(GROUP = [256], PER = [4]), grid = [p.rows],
///              types(T = [f32, Vec4<f32>]))]
///     pub fn rms_norm<T>(p: &Shape, x: &[T], y: &mut [T], #[workgroup] tile: &mut [f32; GROUP]) {
///         let (row, local) = (workgroup_id().x, local_index());
///         let mut regs = [0.0 as T; PER];
///         row_load(&mut regs, x, row * p.width, p.width, local, 0.0 as T);
///         let squares = workgroup_sum_tree(tile, local, row_sum_of_squares(&regs, p.width, local));
///         let scale = (squares / (p.width * T::LANES) as f32 + 1e-6).sqrt().recip();
///         #[unroll]
///         for k in 0..PER {
///             regs[k] *= scale as T;
///         }
///         row_store(&regs, y, row * p.width, p.width, local);
///     }
/// }
/// # fn main() {}
/// ```
#[crate::device]
pub mod rows {
    /// Loads the invocation's elements of the `count` elements at `x[start]` into `regs`.
    ///
    /// `regs[k]` is element `local + k * GROUP` of the segment, or `fill` where that is
    /// past `count`.
    fn row_load<E>(regs: &mut [E; PER], x: &[E], start: u32, count: u32, local: u32, fill: E) {
        #[unroll]
        for k in 0..PER {
            let i = local + k * GROUP;
            regs[k] = fill;
            if i < count {
                regs[k] = x[start + i];
            }
        }
    }

    /// Stores `regs` to the invocation's elements of the `count` elements at `y[start]`.
    ///
    /// The layout is `row_load`'s; elements past `count` are not written.
    fn row_store<E>(regs: &[E; PER], y: &mut [E], start: u32, count: u32, local: u32) {
        #[unroll]
        for k in 0..PER {
            let i = local + k * GROUP;
            if i < count {
                y[start + i] = regs[k];
            }
        }
    }

    /// [`row_load`](self) into registers of `f32` lanes (`E::F32`), converting each element:
    /// a row of `f16` (or `Vec4<f16>`) storage held, reduced and scaled in `f32`.
    fn row_load_f32<E>(
        regs: &mut [E::F32; PER],
        x: &[E],
        start: u32,
        count: u32,
        local: u32,
        fill: E::F32,
    ) {
        #[unroll]
        for k in 0..PER {
            let i = local + k * GROUP;
            regs[k] = fill;
            if i < count {
                regs[k] = x[start + i] as E::F32;
            }
        }
    }

    /// [`row_store`](self) from registers of `f32` lanes (`E::F32`), converting each element
    /// back to `E` (rounding to the nearest `f16` for `f16` storage).
    fn row_store_f32<E>(regs: &[E::F32; PER], y: &mut [E], start: u32, count: u32, local: u32) {
        #[unroll]
        for k in 0..PER {
            let i = local + k * GROUP;
            if i < count {
                y[start + i] = regs[k] as E;
            }
        }
    }

    /// The sum of the invocation's elements of the segment and their lanes.
    fn row_sum<E>(regs: &[E; PER], count: u32, local: u32) -> E::Scalar {
        let mut acc = 0.0 as E;
        #[unroll]
        for k in 0..PER {
            if local + k * GROUP < count {
                acc += regs[k];
            }
        }
        acc.element_sum()
    }

    /// The sum of the squares of the invocation's elements of the segment and their lanes.
    fn row_sum_of_squares<E>(regs: &[E; PER], count: u32, local: u32) -> E::Scalar {
        let mut acc = 0.0 as E;
        #[unroll]
        for k in 0..PER {
            if local + k * GROUP < count {
                acc += regs[k] * regs[k];
            }
        }
        acc.element_sum()
    }

    /// The moments `vec4(count, mean, m2, 0)` of the invocation's elements of the segment and
    /// their lanes (`m2`: the sum of their squared deviations from `mean`), for
    /// [`reduce`](crate::std::reduce)'s `workgroup_moments_tree`; zeros where it holds none.
    /// `E` has `f32` lanes (`f32`, `Vec4<f32>`: load `f16` rows with `row_load_f32`).
    fn row_moments<E>(regs: &[E; PER], count: u32, local: u32) -> Vec4<f32> {
        let mut held = 0u32;
        let mut sum = 0.0 as E;
        #[unroll]
        for k in 0..PER {
            if local + k * GROUP < count {
                sum += regs[k];
                held += 1;
            }
        }
        let n = (held * E::LANES) as f32;
        let mean = sum.element_sum() / n.max(1.0);
        let mut m2 = 0.0 as E;
        #[unroll]
        for k in 0..PER {
            if local + k * GROUP < count {
                let deviation = regs[k] - mean as E;
                m2 += deviation * deviation;
            }
        }
        vec4(n, mean, m2.element_sum(), 0.0)
    }

    /// The largest of the invocation's elements of the segment and their lanes.
    ///
    /// `-f32::MAX` where the invocation holds none.
    fn row_max<E>(regs: &[E; PER], count: u32, local: u32) -> E::Scalar {
        let mut acc = -f32::MAX as E;
        #[unroll]
        for k in 0..PER {
            if local + k * GROUP < count {
                acc = acc.max(regs[k]);
            }
        }
        acc.max_element()
    }
}
