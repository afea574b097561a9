//! The f32 GEMM blocking (`Blocking`) with its staging, mainloop and register-tile store, and
//! the split sums every GEMM-shaped kernel of nn shares; published as
//! [`tessera_nn::parts::gemm`](crate::parts::gemm).

/// The f32 GEMM blocking that nn's GEMMs and convolutions run on, for GEMM-shaped kernels of
/// your own: a workgroup of `GROUP` (16 x 16) invocations computes a `BLOCK` x `BLOCK` block
/// of the output, staging `DEPTH`-deep slices of both operands in workgroup memory, each
/// invocation summing a `REG` x `REG` tile in registers. What the kernel does before the
/// sum (which block, which slice of the summed dimension) and after it (the epilogue) is its
/// own.
///
/// Import it with `#[device] use tessera_nn::parts::gemm;`.
///
/// # What a kernel declares
///
/// - `constants = Blocking` and `workgroup = [GROUP]`: the two instances, `REG = 8` (128 x
///   128 blocks, two staged slices of each operand, 16.5 KiB of workgroup memory) and
///   `REG = 4` (64 x 64 blocks, for outputs with at most 64 rows or columns), built as
///   `with_constants(rt, Blocking { reg })`.
/// - Two workgroup arrays `&mut [Vec4<f32>; BUFFERS * SLICE]`, one an operand, lent to
///   [`mainloop`](self), and `limits(workgroup_memory = 16896)`: the large instance's two
///   arrays, above WebGPU's default 16 KiB. The launcher checks the device for them: on a
///   device without, `with_constants` of `REG = 8` fails with `Error::LimitExceeded`, and
///   `REG = 4` (8.5 KiB) builds.
/// - A grid of a workgroup a block: `grid = [ceil_div(n, BLOCK), ceil_div(m, BLOCK)]`.
///
/// # The helpers
///
/// - `mainloop(slice_a, slice_b, a, b, shapes, across, origin, summed, t) -> [f32; REG * REG]`:
///   the register tile of `a · b` for the block whose top-left output element is `origin`
///   (column, row). `a` holds the output's rows, `b` its columns, both row-major, of
///   `shapes.xy` and `shapes.zw` (columns, rows); `across.x` says `a` is read along its rows
///   (an `m x k` matrix; `false` for `k x m`, its transpose), `across.y` the same of `b`
///   (`true` for `n x k`, `false` for `k x n`). It sums `summed.x..summed.y` of the summed
///   dimension (all of it, or a slice that starts at a multiple of `DEPTH`). `a` and `b` may
///   be bound as `Vec4<f32>` where every row is a multiple of 4 long (a quarter of the loads).
///   `t` is the caller's `local_index()`.
/// - `tile_row(t, e)`, `tile_col(t, e)`: where register `e` of the tile sits in the block,
///   for an epilogue that writes the tile itself; `store_tile(out, offset, acc, rows, cols,
///   pixels, origin, t)` writes it to a row-major `rows x cols` matrix (`pixels = cols`), or
///   to images of `rows` channels by `pixels`, skipping what lies outside.
/// - `slice(split, split_depth, depth)`: the part of the summed dimension that slice `split`
///   of a kernel split along it sums; `sum_slices(partial, slices, len, i)` adds up element
///   `i` of `slices` partial results stored one after another.
/// - `fetch`, `stage`, `multiply_accumulate`, `buffer` and `release_slices`, the steps
///   `mainloop` is made of, for a kernel whose operands are not plain matrices (nn's
///   convolutions gather theirs): see each one's source documentation.
///
/// Every read of `a` and `b` is guarded by `shapes`, and `store_tile` by `rows` and `cols`,
/// so a kernel that guards the rest of its indices the same way may be built without naga's
/// bounds checks (`with_constants_unchecked`), as nn's are.
///
/// ```
/// #[tessera::kernels]
/// mod scaled {
///     #[device]
///     use tessera_nn::parts::gemm;
///
///     #[repr(C)]
///     #[derive(Clone, Copy, tessera::Params)]
///     pub struct Scaled {
///         pub m: u32,
///         pub n: u32,
///         pub k: u32,
///         pub alpha: f32,
///     }
///
///     /// `y = alpha * a · b + y`, `a` m x k, `b` k x n: a GEMM with an epilogue of its own.
///     #[kernel(workgroup = [GROUP], constants = Blocking, limits(workgroup_memory = 16896),
///              grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK)])]
///     pub fn gemm_accumulate(
///         p: &Scaled,
///         #[len(p.m * p.k)] a: &[f32],
///         #[len(p.k * p.n)] b: &[f32],
///         #[len(p.m * p.n)] y: &mut [f32],
///         #[workgroup] slice_a: &mut [Vec4<f32>; BUFFERS * SLICE],
///         #[workgroup] slice_b: &mut [Vec4<f32>; BUFFERS * SLICE],
///     ) {
///         let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
///         let shapes = vec4(p.k, p.m, p.n, p.k);
///         let across = vec2(true, false);
///         let acc = mainloop(slice_a, slice_b, a, b, shapes, across, origin, vec2(0, p.k), t);
///         #[unroll]
///         for e in 0..REG * REG {
///             let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
///             if row < p.m && col < p.n {
///                 y[row * p.n + col] += p.alpha * acc[e];
///             }
///         }
///     }
/// }
/// # fn main() {}
/// ```
#[tessera::device]
pub mod staging {
    /// Invocations along each edge of a GEMM-shaped kernel's square workgroup.
    pub const SPAN: u32 = 16;

    /// Invocations per workgroup of a GEMM-shaped kernel (and of every kernel of nn but the
    /// narrow ones).
    pub const GROUP: u32 = SPAN * SPAN;

    /// The blocking every GEMM-shaped kernel is instantiated with: `REG` is the edge of an
    /// invocation's register tile (a multiple of 4), `BLOCK` the edge of the workgroup's output
    /// block, `DEPTH` the depth of the slices staged per step (1024 elements a slice before
    /// padding), `ROW` the vectors of 4 in a staged slice's row (one more than `BLOCK` needs,
    /// so that writes across its rows fall in distinct memory banks), `SLICE` the vectors of a
    /// staged slice, `LOADS` the elements of each operand an invocation stages per step.
    /// `REG = 8` makes 128 x 128 blocks of 8-deep slices; `REG = 4` 64 x 64 blocks of 16-deep
    /// slices, which the host takes when the output has at most 64 rows or columns (half-empty
    /// large blocks ran several times slower on an H100).
    ///
    /// `BUFFERS` is how many slices of each operand are staged: with 2, a step stages into one
    /// while the workgroup may still read the other, so it needs one barrier instead of two.
    /// The large blocking has 2 (its GEMMs ran 2-8% faster on an H100, its 3 x 3 input
    /// gradients up to 25%), at 16.5 KiB of workgroup memory, above WebGPU's default 16 KiB: a
    /// device without more runs the small blocking in its place (see `Blocked::new`). The small
    /// blocking keeps 1: double-buffered, its convolutions ran up to 20% slower.
    ///
    /// `OUTPUTS` is how many outputs an invocation writes (its register tile), as in every
    /// blocking, for `activate_outputs`; `INVOCATIONS` is `GROUP`, the workgroup's size, and
    /// `COLS` and `COL_LOADS` are `BLOCK` and `LOADS` again (a block's columns and what an
    /// invocation stages of the columns' operand), as the helpers it shares with the
    /// tensor-core blockings call them.
    #[constants(
        REG = [8, 4],
        BUFFERS = REG / 4,
        BLOCK = SPAN * REG,
        ROW = BLOCK / 4 + 1,
        DEPTH = 1024 / BLOCK,
        SLICE = DEPTH * ROW,
        INVOCATIONS = GROUP,
        LOADS = DEPTH * BLOCK / INVOCATIONS,
        COLS = BLOCK,
        COL_LOADS = LOADS,
        OUTPUTS = REG * REG
    )]
    pub struct Blocking;

    // The mainloop of every GEMM-shaped kernel, written once. Each step, every invocation
    // fetches `LOADS` elements of each operand into registers (`fetch` for a plain row-major
    // matrix, the kernel's own index math for a convolution's gathers), `stage` writes them
    // into a slice of workgroup memory, and `multiply_accumulate` adds the slices' product into
    // the invocation's register tile; `store_tile` writes the tile out. A slice is `DEPTH`
    // rows (the summed dimension) of `ROW` vectors. An operand is staged `across` when it is read
    // along the summed dimension (its rows are the output's rows or columns), otherwise along
    // it (its rows are summed). A workgroup's output block starts at `origin` (column, row).

    /// The output row (`across_row`) or summed index (`along_depth`) of the element an
    /// invocation stages in its `r`-th load.
    fn across_row(t: u32, r: u32) -> u32 {
        t / DEPTH + r * (INVOCATIONS / DEPTH)
    }

    fn along_depth(t: u32, r: u32) -> u32 {
        t / COLS + r * (DEPTH / COL_LOADS)
    }

    /// The part of a summed dimension of `depth` that slice `split` of a split kernel sums:
    /// `split_depth` from `split * split_depth` on, the last slice cut at `depth`.
    fn slice(split: u32, split_depth: u32, depth: u32) -> Vec2<u32> {
        let begin = split * split_depth;
        vec2(begin, (begin + split_depth).min(depth))
    }

    /// Element `i` of the sum of `slices` partial results of `len` elements each, stored one
    /// after the other in `partial`.
    fn sum_slices(partial: &[f32], slices: u32, len: u32, i: u32) -> f32 {
        sum_slices_from(partial, 0, slices, len, i)
    }

    /// `sum_slices` of the partial results stored from `base` on. Four running sums keep four
    /// loads in flight: a reduce has one invocation per element, too few to hide a load's
    /// latency when the elements are few and the slices many (on an H100 the reduce of the
    /// 64@56 ResNet filter gradient on the tensor cores fell from 0.024 to 0.012 ms).
    fn sum_slices_from(partial: &[f32], base: u32, slices: u32, len: u32, i: u32) -> f32 {
        let mut sums = [0.0f32; 4];
        let whole = slices / 4 * 4;
        for slice in (0..whole).step_by(4) {
            #[unroll]
            for u in 0..4u32 {
                sums[u] += partial[base + (slice + u) * len + i];
            }
        }
        for slice in whole..slices {
            sums[0] += partial[base + slice * len + i];
        }
        (sums[0] + sums[1]) + (sums[2] + sums[3])
    }

    /// Where the first of the `E::LANES` adjacent elements that invocation `t` fetches in its
    /// `v`-th load goes in a staged slice, as (depth, position along the row), the others
    /// following along the depth when `across`, along the row otherwise. Loads of one
    /// element fall as `across_row` and `along_depth` place them; wider loads take `E::LANES`
    /// times fewer turns.
    fn staged_at<E>(across: bool, t: u32, v: u32) -> Vec2<u32> {
        if across {
            vec2(
                t % (DEPTH / E::LANES) * E::LANES,
                t / (DEPTH / E::LANES) + v * (E::LANES * INVOCATIONS / DEPTH),
            )
        } else {
            vec2(
                t / (BLOCK / E::LANES) + v * (E::LANES * INVOCATIONS / BLOCK),
                t % (BLOCK / E::LANES) * E::LANES,
            )
        }
    }

    /// What an invocation stages at step `k0` of the row-major matrix `m` of `shape`
    /// (columns, rows): `across`, from output rows `first..` and summed columns `k0..`;
    /// otherwise from summed rows `k0..` and output columns `first..`. Elements outside the
    /// matrix are zeros. `m` may be bound as vectors of 4 (`GpuBuffer::view_as`) where its
    /// rows, `first` and `k0` are multiples of 4: a vector then lies wholly inside the matrix
    /// or wholly outside, and each invocation loads a quarter as many times, with a quarter
    /// of the bounds tests. On an H100 the f32 GEMM forward ran 3-10% faster that way and its
    /// operand gradients 3-5%, the tensor-core forward 13-28% (its operand gradients ran
    /// 15-30% slower, so they keep scalar loads; notes/performance.md).
    fn fetch<E>(
        m: &[E],
        shape: Vec2<u32>,
        across: bool,
        first: u32,
        k0: u32,
        t: u32,
    ) -> [E; LOADS / E::LANES] {
        let mut fetched = [0.0 as E; LOADS / E::LANES];
        #[unroll]
        for v in 0..LOADS / E::LANES {
            let at = staged_at::<E>(across, t, v);
            // (row, column) of the load's first element in the matrix.
            let first_element = if across {
                vec2(first + at.y, k0 + at.x)
            } else {
                vec2(k0 + at.x, first + at.y)
            };
            let inside = first_element.x < shape.y && first_element.y < shape.x;
            fetched[v] = if inside {
                m[(first_element.x * shape.x + first_element.y) / E::LANES]
            } else {
                0.0 as E
            };
        }
        fetched
    }

    /// Writes what an invocation fetched (`fetch`) into the staged slice that starts at vector
    /// `base`.
    fn stage<E>(
        slice: &mut [Vec4<f32>; BUFFERS * SLICE],
        base: u32,
        fetched: &[E; LOADS / E::LANES],
        across: bool,
        t: u32,
    ) {
        #[unroll]
        for v in 0..LOADS / E::LANES {
            let at = staged_at::<E>(across, t, v);
            if E::LANES == 1 {
                // One lane lies at `at` whichever way the operand runs: no branch.
                slice[base + at.x * ROW + at.y / 4][at.y % 4] = fetched[v][0];
            } else if across {
                #[unroll]
                for c in 0..E::LANES {
                    slice[base + (at.x + c) * ROW + at.y / 4][at.y % 4] = fetched[v][c];
                }
            } else if E::LANES == 4 {
                // Four adjacent positions of one row: one vector of the slice.
                slice[base + at.x * ROW + at.y / 4] = fetched[v] as Vec4<f32>;
            } else {
                #[unroll]
                for c in 0..E::LANES {
                    slice[base + at.x * ROW + (at.y + c) / 4][(at.y + c) % 4] = fetched[v][c];
                }
            }
        }
    }

    /// `acc += a · b` over the pair of staged slices that start at vector `base` (after a
    /// barrier has made them visible to the workgroup).
    fn multiply_accumulate(
        a: &[Vec4<f32>; BUFFERS * SLICE],
        b: &[Vec4<f32>; BUFFERS * SLICE],
        base: u32,
        acc: &mut [f32; REG * REG],
        t: u32,
    ) {
        let at = place(t);
        // Unrolled, so that every read of the slices is at a constant offset from `at`.
        #[unroll]
        for kk in 0..DEPTH {
            // The invocation's rows and columns, `REG / 4` runs of 4 each (see `tile_row`).
            let mut fa = [vec4(0.0f32, 0.0, 0.0, 0.0); REG / 4];
            let mut fb = [vec4(0.0f32, 0.0, 0.0, 0.0); REG / 4];
            #[unroll]
            for run in 0..REG / 4 {
                fa[run] = a[base + kk * ROW + run * SPAN + at.y];
                fb[run] = b[base + kk * ROW + run * SPAN + at.x];
            }
            #[unroll]
            for e in 0..REG * REG {
                let (i, j) = (e / REG, e % REG);
                acc[e] += fa[i / 4][i % 4] * fb[j / 4][j % 4];
            }
        }
    }

    /// The first vector of the staged slice that the step at `k0` along the summed dimension
    /// uses: the buffers take turns.
    fn buffer(k0: u32) -> u32 {
        k0 / DEPTH % BUFFERS * SLICE
    }

    /// After a step's multiply: with one buffer, the workgroup waits until every invocation
    /// has read the slices before the next step overwrites them; with two, the next step
    /// writes the other buffer, which the barrier before this step's multiply freed.
    fn release_slices() {
        if BUFFERS == 1 {
            workgroup_barrier();
        }
    }

    /// One step of a convolution: stages the rows' operand across, the columns' across or
    /// along (`b_across`), and multiplies the slices into `acc`. (Unlike `mainloop`, the f32
    /// convolutions do not overlap a step's loads with the previous step's multiply: with
    /// their gathers' index math live too, that ran slower on an H100. The tensor-core ones
    /// do, see `stage_fragments`: 4-16% faster there; notes/performance.md.)
    fn step(
        slice_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        from_a: &[f32; LOADS],
        slice_b: &mut [Vec4<f32>; BUFFERS * SLICE],
        from_b: &[f32; LOADS],
        b_across: bool,
        acc: &mut [f32; REG * REG],
        k0: u32,
        t: u32,
    ) {
        let base = buffer(k0);
        stage(slice_a, base, from_a, true, t);
        stage(slice_b, base, from_b, b_across, t);
        workgroup_barrier();
        multiply_accumulate(slice_a, slice_b, base, acc, t);
        release_slices();
    }

    /// The register tile of `a · b` for the output block at `origin` of a GEMM of plain
    /// row-major operands `a` (the output's rows) and `b` (its columns) of `shapes.xy` and
    /// `shapes.zw` (columns, rows), each staged across or along, summed over `summed.x ..
    /// summed.y` (the whole summed dimension, or a slice of it that starts at a multiple of
    /// `DEPTH` and ends at one or at the dimension's end).
    fn mainloop<E>(
        slice_a: &mut [Vec4<f32>; BUFFERS * SLICE],
        slice_b: &mut [Vec4<f32>; BUFFERS * SLICE],
        a: &[E],
        b: &[E],
        shapes: Vec4<u32>,
        across: Vec2<bool>,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [f32; REG * REG] {
        let mut acc = [0.0f32; REG * REG];
        if BUFFERS == 2 {
            let mut from_a = fetch(a, shapes.xy, across.x, origin.y, summed.x, t);
            let mut from_b = fetch(b, shapes.zw, across.y, origin.x, summed.x, t);
            for k0 in (summed.x..summed.y).step_by(DEPTH) {
                // The buffer staged here was last read two steps ago, before the previous
                // step's barrier.
                let base = buffer(k0);
                stage(slice_a, base, &from_a, across.x, t);
                stage(slice_b, base, &from_b, across.y, t);
                workgroup_barrier();
                // The next step's loads are in flight while this step's slices are multiplied
                // (past the end of the sum they read zeros or elements no one uses).
                from_a = fetch(a, shapes.xy, across.x, origin.y, k0 + DEPTH, t);
                from_b = fetch(b, shapes.zw, across.y, origin.x, k0 + DEPTH, t);
                multiply_accumulate(slice_a, slice_b, base, &mut acc, t);
            }
        } else {
            // One buffer: the loads are issued before the barriers, and the slices staged
            // after the second (in the order above, the backward of M, N, K = 35, 8457, 2048
            // ran a third slower on an H100; notes/performance.md).
            for k0 in (summed.x..summed.y).step_by(DEPTH) {
                let from_a = fetch(a, shapes.xy, across.x, origin.y, k0, t);
                let from_b = fetch(b, shapes.zw, across.y, origin.x, k0, t);
                if k0 > summed.x {
                    workgroup_barrier();
                    multiply_accumulate(slice_a, slice_b, 0, &mut acc, t);
                    workgroup_barrier();
                }
                stage(slice_a, 0, &from_a, across.x, t);
                stage(slice_b, 0, &from_b, across.y, t);
            }
            workgroup_barrier();
            multiply_accumulate(slice_a, slice_b, 0, &mut acc, t);
        }
        acc
    }

    /// Where invocation `t`'s register tile sits in its workgroup's `SPAN` x `SPAN` square of
    /// tiles, as (column, row). Each subgroup of 32 takes 8 columns by 4 rows of the square,
    /// so that a step reads 8 distinct vectors of one slice and 4 of the other per subgroup,
    /// not 16 and 2 as when it took 16 columns by 2 rows (a third slower on an H100).
    fn place(t: u32) -> Vec2<u32> {
        let (subgroup, lane) = (t / 32, t % 32);
        vec2(
            subgroup % (SPAN / 8) * 8 + lane % 8,
            subgroup / (SPAN / 8) * 4 + lane / 8,
        )
    }

    /// The output row and column, within the block, of register `e` of an invocation's tile:
    /// its `i`-th row is row `i % 4` of run `i / 4`, the runs `4 * SPAN` apart.
    fn tile_row(t: u32, e: u32) -> u32 {
        let i = e / REG;
        i / 4 * (4 * SPAN) + place(t).y * 4 + i % 4
    }

    fn tile_col(t: u32, e: u32) -> u32 {
        let j = e % REG;
        j / 4 * (4 * SPAN) + place(t).x * 4 + j % 4
    }

    /// Writes the register tile of the block at `origin` to `out` from `offset` on, as images
    /// of `rows` channels x `pixels` (`rows` x `cols` row-major when `pixels` is `cols`).
    fn store_tile(
        out: &mut [f32],
        offset: u32,
        acc: &[f32; REG * REG],
        rows: u32,
        cols: u32,
        pixels: u32,
        origin: Vec2<u32>,
        t: u32,
    ) {
        #[unroll]
        for e in 0..REG * REG {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < rows && col < cols {
                out[offset + (col / pixels * rows + row) * pixels + col % pixels] = acc[e];
            }
        }
    }
}
