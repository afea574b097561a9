//! The f32 GEMM blocking (`Blocking`), the index helpers every GEMM-shaped kernel shares, and
//! the f32 staging, mainloop and register-tile store.

#[tessera::device]
pub mod staging {
    #[device]
    use crate::kernels::libraries::params;

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

    /// The digits of `k` in the mixed radix (any, `mids`, `inners`): `k` as (outer, mid,
    /// inner) with `k = (outer * mids + mid) * inners + inner`. A gather keeps where its
    /// loads are along a summed dimension this way, and `advance`s it each step, so that its
    /// inner loop divides by no runtime size.
    fn digits(k: u32, mids: u32, inners: u32) -> Vec3<u32> {
        let inner_size = inners.max(1);
        let outer_size = (mids * inners).max(1);
        vec3(k / outer_size, k % outer_size / inner_size, k % inner_size)
    }

    /// `at` plus `by`, both in the radix of [`digits`] with `by.y < mids` and `by.z < inners`
    /// (so at most one carry reaches each coarser digit).
    fn advance(at: Vec3<u32>, by: Vec3<u32>, mids: u32, inners: u32) -> Vec3<u32> {
        let mut next = at + by;
        if next.z >= inners {
            next.z -= inners;
            next.y += 1;
        }
        if next.y >= mids {
            next.y -= mids;
            next.x += 1;
        }
        next
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

    /// The sum of an invocation's `SUMS` running sums.
    fn total(sums: &[f32; SUMS]) -> f32 {
        let mut sum = 0.0;
        #[unroll]
        for u in 0..SUMS {
            sum += sums[u];
        }
        sum
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
