//! The tensor-core blocking (`TensorBlocking`): half-precision staging, the fragment
//! mainloop and the fragment stores; published as
//! [`tessera_nn::parts::tensor_gemm`](crate::parts::tensor_gemm).

/// The tensor-core GEMM blocking that nn's `Precision::TensorCoreF16` passes run on (f16
/// products, f32 sums), for GEMM-shaped kernels of your own: the operands are read as f32
/// (or `Vec4<f32>`), rounded to f16 as they are staged in workgroup memory, multiplied in
/// 16 x 16 fragments on the tensor cores, and summed in f32 fragments that the kernel writes
/// out as it likes.
///
/// Import it with `#[device] use tessera_nn::parts::tensor_gemm;` (it brings
/// [`gemm`](crate::parts::gemm) along: the operands are fetched as there).
///
/// # What a kernel declares
///
/// - `constants = TensorBlocking`, `workgroup = [INVOCATIONS]`, `features(f16,
///   cooperative_matrix)` and `limits(workgroup_memory = MEMORY, invocations =
///   INVOCATIONS)`. The instances, `TensorBlocking { depth, block, invocations }`: 128 x 128
///   output blocks of 32-deep steps in 256 invocations, 64 x 64 blocks (for outputs with at
///   most 64 rows or columns), 128 x 128 of 64-deep steps, and 128 x 128 in 512 invocations.
/// - Subgroups of 32 invocations: the helpers give each subgroup of `t / 32` its fragments.
///   Build the kernel only where `RuntimeInfo::subgroup_sizes` holds 32 (NVIDIA's GPUs do);
///   a device without tensor cores refuses it with `Error::MissingFeature`.
/// - Three workgroup arrays: `slice_a: &mut [f16; BLOCK * A_STRIDE]`, `slice_b: &mut [f16;
///   COLUMNS]` and `spill: &mut [f32; SPILL]`.
///
/// # The helpers
///
/// - `mainloop_fragments(slice_a, slice_b, a, b, shapes, across, origin, summed, t) ->
///   [FragC16<f32>; FRAGS]`: the subgroup's accumulator fragments of `a · b` for the block
///   at `origin`, the arguments as [`gemm`](crate::parts::gemm)'s `mainloop` takes them.
/// - `store_fragments(out, offset, acc, rows, cols, matrix_layout(cols), origin, spill, t)`
///   writes them to a row-major `rows x cols` matrix from `offset` on, skipping what lies
///   outside (`images_layout(channels, pixels)` for NCHW images).
/// - For an epilogue of the kernel's own: `unspill::<E>(acc[f], spill, t)` reads fragment
///   `f` back as `8 / E::LANES` runs of `E` (every invocation calls it: it holds barriers),
///   and `fragment_at::<E>(t, f, k)` says where run `k` lies in the block (column, row).
/// - `store_slice_fragments` writes a slice of a sum cut along the summed dimension: the
///   first slice into the output, the others into a partial buffer, which
///   [`gemm`](crate::parts::gemm)'s `sum_slices` adds up.
/// - `stage_rows`, `stage_half`, `stage_in_halves`, `multiply_fragments` and
///   `column_fragments`, the steps of the mainloop, for operands that are not plain
///   matrices.
///
/// ```
/// #[tessera::kernels]
/// mod scaled {
///     #[device]
///     use tessera_nn::parts::tensor_gemm;
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
///     /// `y = alpha * a · b + y` on the tensor cores, `a` m x k, `b` k x n.
///     #[kernel(
///         workgroup = [INVOCATIONS],
///         constants = TensorBlocking,
///         features(f16, cooperative_matrix),
///         limits(workgroup_memory = MEMORY, invocations = INVOCATIONS),
///         grid = [ceil_div(p.n, BLOCK), ceil_div(p.m, BLOCK)]
///     )]
///     pub fn gemm_accumulate(
///         p: &Scaled,
///         #[len(p.m * p.k)] a: &[f32],
///         #[len(p.k * p.n)] b: &[f32],
///         #[len(p.m * p.n)] y: &mut [f32],
///         #[workgroup] slice_a: &mut [f16; BLOCK * A_STRIDE],
///         #[workgroup] slice_b: &mut [f16; COLUMNS],
///         #[workgroup] spill: &mut [f32; SPILL],
///     ) {
///         let (t, origin) = (local_index(), workgroup_id().xy * BLOCK);
///         let (shapes, across) = (vec4(p.k, p.m, p.n, p.k), vec2(true, false));
///         let summed = vec2(0, p.k);
///         let acc = mainloop_fragments(slice_a, slice_b, a, b, shapes, across, origin, summed, t);
///         #[unroll]
///         for f in 0..FRAGS {
///             let values = unspill::<f32>(acc[f], spill, t);
///             #[unroll]
///             for k in 0..8 {
///                 let at = origin + fragment_at::<f32>(t, f, k);
///                 if at.y < p.m && at.x < p.n {
///                     y[at.y * p.n + at.x] += p.alpha * values[k];
///                 }
///             }
///         }
///     }
/// }
/// # fn main() {}
/// ```
#[tessera::device]
pub mod fragments {
    #[device]
    use crate::kernels::libraries::staging;

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
}
