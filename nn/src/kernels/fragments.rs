//! The tensor-core blocking (`TensorBlocking`): half-precision staging, the fragment
//! mainloop and the fragment epilogues.

#[tessera::device]
pub mod fragments {
    #[device]
    use crate::kernels::libraries::{activation, params, staging};

    /// The blocking of the tensor-core kernels (`Precision::TensorCoreF16`): a workgroup of
    /// `INVOCATIONS` invocations, subgroups of 32 in rows of four, owns a `BLOCK` x `BLOCK`
    /// block of the output, each subgroup `FRAG_ROWS` x `FRAG_COLS` fragments of 16 x 16
    /// (`WARP_ROWS` x `WARP_COLS` elements; the rows' slice's size is `ROWS_HALVES`, as the
    /// helpers shared with `WindowBlocking` call it). Each step stages
    /// `DEPTH`-deep slices of both operands in half precision: the rows' operand row-major,
    /// `BLOCK` rows of `A_STRIDE`, the columns' `DEPTH` rows of `STRIDE` (8 more than needed:
    /// 16 bytes, which keeps every fragment's rows aligned and spreads them over the memory
    /// banks), or, fetched across, as the rows' operand; the columns' slice has room
    /// (`COLUMNS` halves) for either. The same `fetch` as the f32 kernels reads them (`LOADS`
    /// elements per invocation and operand; `COLS` and `COL_LOADS` are `BLOCK` and `LOADS`
    /// again, as the helpers shared with `StreamBlocking`'s oblong blocks name the columns'
    /// side). `BLOCK = 64` serves outputs with at most 64 rows
    /// or columns. `MEMORY` is the workgroup memory a kernel of the blocking takes (both
    /// slices and `spill`, whose `SPILL` floats are a 16 x 16 tile per subgroup). An
    /// invocation writes `OUTPUTS` outputs, 8 of each fragment.
    ///
    /// The instances: 128 x 128 blocks of 32-deep slices in 256 invocations (8 subgroups of
    /// 4 x 2 fragments), 64 x 64 ones (8 of 2 x 1), and, for the tuner:
    /// - 128 x 128 blocks of 64-deep slices (`on_fragments_with_deep`): half the steps, so half
    ///   the barriers, at 44 KiB a workgroup. On an H100 they ran the large GEMM forwards
    ///   7-13% faster and their operand gradients 3-5%, some other shapes much slower. The
    ///   convolutions do not build them (offered, they gained nothing measurable on an H100).
    /// - 128 x 128 blocks of 32-deep slices in 512 invocations (16 subgroups of 2 x 2
    ///   fragments; the compiler holds them to 128 registers), where the device has them: on
    ///   an H100 the convolutions' filter gradients of 128 and 256 channels ran 4-12% faster
    ///   in them, 512 x 7 x 7's forward 5% slower (notes/performance.md).
    #[constants(
        zip(
            DEPTH = [32, 32, 64, 32],
            BLOCK = [128, 64, 128, 128],
            INVOCATIONS = [256, 256, 256, 512]
        ),
        COLS = BLOCK,
        STRIDE = COLS + 8,
        A_STRIDE = DEPTH + 8,
        ROWS_HALVES = BLOCK * A_STRIDE,
        LOADS = DEPTH * BLOCK / INVOCATIONS,
        COL_LOADS = LOADS,
        WARP_ROWS = BLOCK * 128 / INVOCATIONS,
        WARP_COLS = BLOCK / 4,
        FRAG_ROWS = WARP_ROWS / 16,
        FRAG_COLS = WARP_COLS / 16,
        FRAGS = FRAG_ROWS * FRAG_COLS,
        SPILL = INVOCATIONS * 8,
        COLUMNS = BLOCK * A_STRIDE,
        MEMORY = 2 * (BLOCK * A_STRIDE + COLUMNS) + 4 * SPILL,
        OUTPUTS = 8 * FRAGS
    )]
    pub struct TensorBlocking;

    // The mainloop of the tensor-core kernels, written once over fragments: the same `fetch`
    // as the f32 mainloop, `stage_rows` and `stage_half` round what it fetched to f16 into
    // the slices, and `multiply_fragments` adds the slices' product into the subgroup's
    // accumulator fragments. The rows' slice holds element (output row `i`, summed index
    // `d`) at `i * A_STRIDE + d`, the columns' slice element (`d`, output column `i`) at
    // `d * STRIDE + i`: both are row-major fragments (A row-major ran 16% faster at 4096^3
    // than A column-major from the columns' layout, on an H100; see notes/performance.md).
    // A columns' operand fetched across (a subgroup's 32 invocations load 32 adjacent
    // summed indices of one column) would write 32 rows of one column of that layout, four
    // to a bank; it is staged as the rows' operand instead, (output column `i`, summed index
    // `d`) at `i * A_STRIDE + d`, and read as column-major fragments. On an H100 that ran
    // the convolutions' filter gradients 6-13% faster, and the GEMM backwards (`grad_a`) 3-5%,
    // 4096^3 from 2.5-3.2 ms to 2.35.
    // Fragments leave through `spill`, a 16 x 16 tile of workgroup memory per subgroup.

    /// Writes the columns' operand that an invocation fetched into its slice of halves, across
    /// or along. (Its loads fall as `fetch`'s, over `COLS` columns, which the streamed passes
    /// make wider than `BLOCK`.)
    fn stage_half(slice: &mut [f16; COLUMNS], fetched: &[f32; COL_LOADS], across: bool, t: u32) {
        #[unroll]
        for r in 0..COL_LOADS {
            let at = if across {
                vec2(t % DEPTH, across_row(t, r))
            } else {
                vec2(along_depth(t, r), t % COLS)
            };
            if across {
                slice[at.y * A_STRIDE + at.x] = fetched[r] as f16;
            } else {
                slice[at.x * STRIDE + at.y] = fetched[r] as f16;
            }
        }
    }

    /// Writes the rows' operand that an invocation fetched (`fetch`, scalars or vectors of
    /// 4) into the slice of halves at `base` of `slices` (`ROWS_HALVES` halves: one slice, or
    /// the window passes' filter slices), row-major: element (output row `i`, summed index
    /// `d`) at `i * A_STRIDE + d`.
    fn stage_rows<E>(
        slices: &mut [f16; ROWS_HALVES],
        base: u32,
        fetched: &[E; LOADS / E::LANES],
        across: bool,
        t: u32,
    ) {
        #[unroll]
        for v in 0..LOADS / E::LANES {
            stage_row(slices, base, fetched[v], across, t, v);
        }
    }

    /// `stage_rows` for the `v`-th load alone, `fetched`.
    fn stage_row<E>(
        slices: &mut [f16; ROWS_HALVES],
        base: u32,
        fetched: E,
        across: bool,
        t: u32,
        v: u32,
    ) {
        let at = staged_at::<E>(across, t, v);
        if E::LANES == 1 {
            // One lane lies at `at` whichever way the operand runs: no branch.
            slices[base + at.y * A_STRIDE + at.x] = fetched[0] as f16;
        } else if across {
            #[unroll]
            for c in 0..E::LANES {
                slices[base + at.y * A_STRIDE + at.x + c] = fetched[c] as f16;
            }
        } else {
            #[unroll]
            for c in 0..E::LANES {
                slices[base + (at.y + c) * A_STRIDE + at.x] = fetched[c] as f16;
            }
        }
    }

    /// `acc += a · b` on the tensor cores over one pair of staged slices, between the
    /// barriers that make the slices visible to the workgroup and free them for the next step.
    /// The columns' slice `b` is laid out as `stage_half` staged it, `across` or along: read as
    /// column-major fragments in the first case, row-major in the second.
    fn multiply_fragments(
        a: &[f16; BLOCK * A_STRIDE],
        b: &[f16; COLUMNS],
        across: bool,
        acc: &mut [FragC16<f32>; FRAGS],
        t: u32,
    ) {
        let warp = t / 32;
        let (rows, cols) = (warp / 4 * WARP_ROWS, warp % 4 * WARP_COLS);
        workgroup_barrier();
        #[unroll]
        for kk in 0..DEPTH / 16 {
            let fb = if across {
                column_fragments_across(b, cols, kk)
            } else {
                column_fragments(b, cols, kk)
            };
            #[unroll]
            for i in 0..FRAG_ROWS {
                let fa: FragA16<f16> =
                    coop_load_row_major(&a[(rows + i * 16) * A_STRIDE + kk * 16], A_STRIDE);
                #[unroll]
                for j in 0..FRAG_COLS {
                    let f = i * FRAG_COLS + j;
                    acc[f] = coop_multiply_add(fa, fb[j], acc[f]);
                }
            }
        }
        workgroup_barrier();
    }

    /// The subgroup's column fragments of the columns' slice `b` staged along, from column
    /// `cols` on, at summed indices `kk * 16..`.
    fn column_fragments(b: &[f16; COLUMNS], cols: u32, kk: u32) -> [FragB16<f16>; FRAG_COLS] {
        let mut fb: [FragB16<f16>; FRAG_COLS] = [coop_zero(); FRAG_COLS];
        #[unroll]
        for j in 0..FRAG_COLS {
            fb[j] = coop_load_row_major(&b[kk * 16 * STRIDE + cols + j * 16], STRIDE);
        }
        fb
    }

    /// `column_fragments` of a columns' slice staged across.
    fn column_fragments_across(
        b: &[f16; COLUMNS],
        cols: u32,
        kk: u32,
    ) -> [FragB16<f16>; FRAG_COLS] {
        let mut fb: [FragB16<f16>; FRAG_COLS] = [coop_zero(); FRAG_COLS];
        #[unroll]
        for j in 0..FRAG_COLS {
            let first = (cols + j * 16) * A_STRIDE + kk * 16;
            fb[j] = coop_load_column_major(&b[first], A_STRIDE);
        }
        fb
    }

    /// Stages a convolution's step on the tensor cores: the rows' operand across, the
    /// columns' across or along (`b_across`). The convolutions stage their first step, then
    /// load each next step while `multiply_fragments` multiplies the staged one.
    fn stage_fragments(
        slice_a: &mut [f16; BLOCK * A_STRIDE],
        from_a: &[f32; LOADS],
        slice_b: &mut [f16; COLUMNS],
        from_b: &[f32; COL_LOADS],
        b_across: bool,
        t: u32,
    ) {
        stage_rows(slice_a, 0, from_a, true, t);
        stage_half(slice_b, from_b, b_across, t);
    }

    /// `mainloop` on the tensor cores: the accumulator fragments of `a · b` for the output
    /// block at `origin`, with the same operands, shapes and staging directions, `a` and `b`
    /// bound as scalars or as vectors of 4 (see `fetch`).
    fn mainloop_fragments<E>(
        slice_a: &mut [f16; BLOCK * A_STRIDE],
        slice_b: &mut [f16; COLUMNS],
        a: &[E],
        b: &[E],
        shapes: Vec4<u32>,
        across: Vec2<bool>,
        origin: Vec2<u32>,
        summed: Vec2<u32>,
        t: u32,
    ) -> [FragC16<f32>; FRAGS] {
        let mut acc: [FragC16<f32>; FRAGS] = [coop_zero(); FRAGS];
        // Over vectors the first step only stages. Skipping the multiply inside the loop's
        // first turn instead made the H100's compiler move the accumulators between two sets
        // of registers every step (~130 moves in a step of ~510 instructions); peeled, the
        // forward ran 2-4% faster there. Over scalars the loop is not peeled: peeled, it ran
        // 2% faster on large shapes and 5-7% slower on M = 35 (notes/performance.md).
        let peeled = E::LANES > 1;
        if peeled {
            let from_a = fetch(a, shapes.xy, across.x, origin.y, summed.x, t);
            let from_b = fetch(b, shapes.zw, across.y, origin.x, summed.x, t);
            stage_in_halves(slice_a, &from_a, slice_b, &from_b, across, t);
        }
        let first = if peeled { summed.x + DEPTH } else { summed.x };
        for k0 in (first..summed.y).step_by(DEPTH) {
            let from_a = fetch(a, shapes.xy, across.x, origin.y, k0, t);
            let from_b = fetch(b, shapes.zw, across.y, origin.x, k0, t);
            // The previous step's slices are multiplied while this step's loads are in flight.
            if peeled || k0 > summed.x {
                multiply_fragments(slice_a, slice_b, across.y, &mut acc, t);
            }
            stage_in_halves(slice_a, &from_a, slice_b, &from_b, across, t);
        }
        multiply_fragments(slice_a, slice_b, across.y, &mut acc, t);
        acc
    }

    /// Writes what `fetch` fetched of both operands into their slices of halves, a load of
    /// each in turn (over vectors, 3-4% faster on an H100 than one operand after the other):
    /// the rows' operand as `stage_row` lays it out, the columns' as `stage_half` does.
    fn stage_in_halves<E>(
        slice_a: &mut [f16; BLOCK * A_STRIDE],
        from_a: &[E; LOADS / E::LANES],
        slice_b: &mut [f16; COLUMNS],
        from_b: &[E; LOADS / E::LANES],
        across: Vec2<bool>,
        t: u32,
    ) {
        #[unroll]
        for v in 0..LOADS / E::LANES {
            stage_row(slice_a, 0, from_a[v], across.x, t, v);
            let at = staged_at::<E>(across.y, t, v);
            #[unroll]
            for c in 0..E::LANES {
                if across.y {
                    slice_b[at.y * A_STRIDE + at.x + c] = from_b[v][c] as f16;
                } else {
                    slice_b[at.x * STRIDE + at.y + c] = from_b[v][c] as f16;
                }
            }
        }
    }

    /// Where, in the block, the `k`-th run of `E::LANES` adjacent elements of a row that
    /// invocation `t` reads back from its subgroup's fragment `f` (see `unspill`) starts, as
    /// (column, row): the subgroup's 32 invocations read 32 adjacent runs of its 16 x 16 tile
    /// at a time.
    fn fragment_at<E>(t: u32, f: u32, k: u32) -> Vec2<u32> {
        let (warp, at) = (t / 32, (k * 32 + t % 32) * E::LANES);
        vec2(
            warp % 4 * WARP_COLS + f % FRAG_COLS * 16 + at % 16,
            warp / 4 * WARP_ROWS + f / FRAG_COLS * 16 + at / 16,
        )
    }

    /// The 8 elements of the accumulator fragment `frag` that invocation `t` writes out, as
    /// `8 / E::LANES` runs of `E` (run `k` lies at `fragment_at::<E>(t, f, k)` for the
    /// fragment's index `f`), read back through its subgroup's 16 x 16 tile of `spill`. Runs
    /// of 4 let an epilogue over outputs bound as vectors store a quarter as many times.
    fn unspill<E>(frag: FragC16<f32>, spill: &mut [f32; SPILL], t: u32) -> [E; 8 / E::LANES] {
        let tile = t / 32 * 256;
        coop_store_row_major(frag, &mut spill[tile], 16);
        workgroup_barrier();
        let mut values = [0.0 as E; 8 / E::LANES];
        #[unroll]
        for k in 0..8 / E::LANES {
            let at = tile + (k * 32 + t % 32) * E::LANES;
            #[unroll]
            for c in 0..E::LANES {
                values[k][c] = spill[at + c];
            }
        }
        workgroup_barrier();
        values
    }

    /// Where a `rows` x `cols` output lies in memory, for `store_fragments`: column `col`
    /// splits into `col / layout.x` and `col % layout.x`, and output (`row`, `col`) lies at
    /// `col / layout.x * layout.y + row * layout.z + col % layout.x * layout.w`. A row-major
    /// matrix of `cols` columns:
    fn matrix_layout(cols: u32) -> Vec4<u32> {
        vec4(cols, 0, cols, 1)
    }

    /// The layout of images of `channels` (the output's rows) x `pixels`, the output's columns
    /// running over (image, pixel): see `matrix_layout`.
    fn images_layout(channels: u32, pixels: u32) -> Vec4<u32> {
        vec4(pixels, channels * pixels, pixels, 1)
    }

    /// Stores the tile `acc` of slice `split` of a sum cut into slices: the first slice's
    /// into `out` itself, the others' into `partial`, one `rows x cols` partial sum per slice
    /// from `base` on, which a reduction adds to `out`.
    fn store_slice_fragments<E>(
        out: &mut [E],
        partial: &mut [E],
        base: u32,
        split: u32,
        acc: &[FragC16<f32>; FRAGS],
        rows: u32,
        cols: u32,
        layout: Vec4<u32>,
        origin: Vec2<u32>,
        spill: &mut [f32; SPILL],
        t: u32,
    ) {
        if split == 0 {
            store_fragments(out, 0, acc, rows, cols, layout, origin, spill, t);
        } else {
            let offset = base + (split - 1) * rows * cols;
            store_fragments(partial, offset, acc, rows, cols, layout, origin, spill, t);
        }
    }

    /// Stores the tile `acc` of images of `rows` channels (`images` x `pixels` columns) as
    /// the output `index` of `out`, which holds `index + 1` such outputs or more (one per
    /// slice of a split sum).
    fn store_images_fragments(
        out: &mut [f32],
        index: u32,
        acc: &[FragC16<f32>; FRAGS],
        rows: u32,
        images: u32,
        pixels: u32,
        origin: Vec2<u32>,
        spill: &mut [f32; SPILL],
        t: u32,
    ) {
        let columns = images * pixels;
        let layout = images_layout(rows, pixels);
        store_fragments(
            out,
            index * rows * columns,
            acc,
            rows,
            columns,
            layout,
            origin,
            spill,
            t,
        );
    }

    /// `store_tile` for fragments: writes the accumulators of the block at `origin` of a `rows`
    /// x `cols` output to `out` from `offset` on, laid out as `layout` says (see
    /// `matrix_layout`), one fragment at a time through `spill`.
    fn store_fragments<E>(
        out: &mut [E],
        offset: u32,
        acc: &[FragC16<f32>; FRAGS],
        rows: u32,
        cols: u32,
        layout: Vec4<u32>,
        origin: Vec2<u32>,
        spill: &mut [f32; SPILL],
        t: u32,
    ) {
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<E>(acc[f], spill, t);
            #[unroll]
            for k in 0..8 / E::LANES {
                let at = origin + fragment_at::<E>(t, f, k);
                if at.y < rows && at.x < cols {
                    let (row, col) = (at.y, at.x);
                    let outer = col / layout.x * layout.y;
                    let element = offset + outer + row * layout.z + col % layout.x * layout.w;
                    out[element / E::LANES] = values[k];
                }
            }
        }
    }

    /// The GEMM forward's output from the register tile of the block at `origin`: `y =
    /// act(pre)` for `pre = acc + bias`, and `pre` itself where `p.keep_pre`.
    fn store_forward(
        acc: &[f32; REG * REG],
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        p: &GemmParams,
        origin: Vec2<u32>,
        t: u32,
    ) {
        let dims = vec2(p.n, p.m);
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for e in 0..OUTPUTS {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < dims.y && col < dims.x {
                z[e] = acc[e] + bias[col];
                if p.keep_pre != 0 {
                    pre[row * dims.x + col] = z[e];
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for e in 0..OUTPUTS {
            let (row, col) = (origin.y + tile_row(t, e), origin.x + tile_col(t, e));
            if row < dims.y && col < dims.x {
                y[row * dims.x + col] = z[e];
            }
        }
    }

    /// `store_forward` from accumulator fragments, through `spill`. The bias and the outputs
    /// may be bound as vectors of 4 where the outputs' rows are a multiple of 4 long (a
    /// vector then lies wholly inside the output or wholly outside).
    fn store_forward_fragments<E>(
        acc: &[FragC16<f32>; FRAGS],
        bias: &[E],
        pre: &mut [E],
        y: &mut [E],
        p: &GemmParams,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let dims = vec2(p.n, p.m);
        // Run `k` of fragment `f` (see `fragment_at`) is `z[8 f + E::LANES k..][..E::LANES]`.
        let mut z = [0.0f32; OUTPUTS];
        #[unroll]
        for f in 0..FRAGS {
            let values = unspill::<E>(acc[f], spill, t);
            #[unroll]
            for k in 0..8 / E::LANES {
                let at = origin + fragment_at::<E>(t, f, k);
                if at.y < dims.y && at.x < dims.x {
                    let sum = values[k] + bias[at.x / E::LANES];
                    if p.keep_pre != 0 {
                        pre[(at.y * dims.x + at.x) / E::LANES] = sum;
                    }
                    #[unroll]
                    for c in 0..E::LANES {
                        z[8 * f + E::LANES * k + c] = sum[c];
                    }
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for f in 0..FRAGS {
            #[unroll]
            for k in 0..8 / E::LANES {
                let at = origin + fragment_at::<E>(t, f, k);
                if at.y < dims.y && at.x < dims.x {
                    let mut out = 0.0 as E;
                    #[unroll]
                    for c in 0..E::LANES {
                        out[c] = z[8 * f + E::LANES * k + c];
                    }
                    y[(at.y * dims.x + at.x) / E::LANES] = out;
                }
            }
        }
    }

    /// The epilogue of slice `split` of a tensor-core GEMM forward whose sum runs in
    /// `p.splits` slices: whole, as `store_forward_fragments`; in slices, the first slice's
    /// products into `pre` (scratch, then, where `p.keep_pre` is 0) and the others' into
    /// `partial`, one output-shaped partial sum each, for `gemm_forward_fragments_reduce`.
    fn store_forward_slice<E>(
        acc: &[FragC16<f32>; FRAGS],
        bias: &[E],
        pre: &mut [E],
        y: &mut [E],
        partial: &mut [E],
        p: &GemmParams,
        split: u32,
        spill: &mut [f32; SPILL],
        origin: Vec2<u32>,
        t: u32,
    ) {
        let dims = vec2(p.n, p.m);
        if p.splits == 1 {
            store_forward_fragments(acc, bias, pre, y, p, spill, origin, t);
        } else {
            let (rows, cols) = (dims.y, dims.x);
            let layout = matrix_layout(cols);
            store_slice_fragments(
                pre, partial, 0, split, acc, rows, cols, layout, origin, spill, t,
            );
        }
    }
}
