//! `StreamBlocking` and the helpers of the passes that run as a stream of (block, step)
//! iterations over `p.workers` workgroups: their schedule, hand-over and epilogues.

#[tessera::device]
pub mod stream {
    #[device]
    use crate::kernels::libraries::{activation, conv, fragments, params, staging, window};

    /// The blockings of the convolution passes as streams (below): `BLOCK` result channels
    /// (rows) by `COLS` positions, 32-deep steps, in 512 invocations, sixteen subgroups in
    /// four rows of four, each `FRAG_ROWS` x `FRAG_COLS` fragments; the rest is named as in
    /// `TensorBlocking`, whose helpers these blocks share, with `COL_LOADS` what an
    /// invocation stages of the columns' operand a step. 128 x 128 blocks (2 x 2 fragments a
    /// subgroup), and oblong ones of 256 x 128 and 128 x 256 (4 x 2 and 2 x 4, 46 KiB a
    /// workgroup): a step of an oblong block does twice the multiply-adds between the same
    /// two barriers, and the operands it stages are 3/4 of the bytes per product, as in the
    /// GEMM's `WideTensorBlocking`; fewer blocks, though, make more of them shared between
    /// workgroups, whose parts travel through `partial`. On an H100 the tuner took 128 x 256
    /// for the forward and input gradient of 128 x 28 x 28 (4-8% faster than 128 x 128) and
    /// 256 x 128 for the filter gradient of 512 x 7 x 7; the square blocks stayed fastest for
    /// the other ResNet layers (notes/performance.md).
    #[constants(
        zip(BLOCK = [128, 256, 128], COLS = [128, 128, 256]),
        DEPTH = 32,
        INVOCATIONS = 512,
        STRIDE = COLS + 8,
        A_STRIDE = DEPTH + 8,
        ROWS_HALVES = BLOCK * A_STRIDE,
        LOADS = DEPTH * BLOCK / INVOCATIONS,
        COL_LOADS = DEPTH * COLS / INVOCATIONS,
        WARP_ROWS = BLOCK / 4,
        WARP_COLS = COLS / 4,
        FRAG_ROWS = WARP_ROWS / 16,
        FRAG_COLS = WARP_COLS / 16,
        FRAGS = FRAG_ROWS * FRAG_COLS,
        SPILL = INVOCATIONS * 8,
        COLUMNS = COLS * A_STRIDE,
        MEMORY = 2 * (BLOCK * A_STRIDE + COLUMNS) + 4 * SPILL,
        OUTPUTS = 8 * FRAGS
    )]
    pub struct StreamBlocking;

    // A pass as a stream: an output whose blocks do not fill the GPU's waves evenly (196
    // blocks of 128 x 128 are 1.5 waves of an H100's 132 workgroups, so the second wave half
    // idles) runs as `p.workers` workgroups, as many as the GPU holds at once. Each runs
    // the whole blocks that fill whole waves, `p.workers` apart, then an even share of the
    // (block, step) iterations of the blocks left over: a contiguous range of them, whose
    // first and last block it may sum in part. A block summed whole is stored as the pass
    // stores it; a part goes to the workgroup's slot of `partial` (two a workgroup: its
    // range's first block and its last), and the last of a shared block's workgroups to
    // write its part adds up the block's parts (`stream_arrive`).

    /// The iterations `first..end` of a stream of `total` that workgroup `worker` of
    /// `workers` runs, as (first, end): `total / workers` each, the first `total % workers`
    /// one more.
    fn stream_range(total: u32, workers: u32, worker: u32) -> Vec2<u32> {
        let (each, longer) = (total / workers, total % workers);
        let first = worker * each + worker.min(longer);
        vec2(first, first + each + (worker < longer) as u32)
    }

    /// The workgroup of `stream_range` that runs iteration `i`.
    fn stream_worker(total: u32, workers: u32, i: u32) -> u32 {
        let (each, longer) = (total / workers, total % workers);
        let long = longer * (each + 1);
        if i < long {
            i / (each + 1)
        } else {
            longer + (i - long) / each
        }
    }

    /// A stream's blocks of `BLOCK` result channels by `COLS` of `columns` positions,
    /// numbered along the positions first, of `steps` steps each: (blocks along the
    /// positions, blocks run whole, blocks shared out by iterations).
    fn stream_blocks(channels: u32, columns: u32, workers: u32) -> Vec3<u32> {
        let across = ceil_div(columns, COLS);
        let blocks = across * ceil_div(channels, BLOCK);
        let whole = blocks / workers * workers;
        vec3(across, whole, blocks - whole)
    }

    /// What workgroup `worker` of a stream of `blocks` (`stream_blocks`) of `steps` steps
    /// runs: (the steps of its whole blocks, then its range of the iterations shared out,
    /// `stream_range`, as first and end), to be walked by `stream_part`. One loop over both,
    /// so that a kernel writes its tile out once.
    fn stream_share(blocks: Vec3<u32>, steps: u32, workers: u32, worker: u32) -> Vec3<u32> {
        let range = stream_range(blocks.z * steps, workers, worker);
        vec3(blocks.y / workers * steps, range.x, range.y)
    }

    /// The part of a block that workgroup `worker` of a stream runs from step `j` of its
    /// `share` on: (the block, its first step and its end, and the workgroup's slot of
    /// `partial` should the part not be the whole block: its range's first block or not).
    fn stream_part(
        blocks: Vec3<u32>,
        steps: u32,
        workers: u32,
        worker: u32,
        share: Vec3<u32>,
        j: u32,
    ) -> Vec4<u32> {
        if j < share.x {
            vec4(worker + j / steps * workers, 0, steps, 0)
        } else {
            let i = share.y + j - share.x;
            let first = i % steps;
            let end = (first + share.z - i).min(steps);
            vec4(
                blocks.y + i / steps,
                first,
                end,
                2 * worker + (i != share.y) as u32,
            )
        }
    }

    /// The workgroups of a stream of `blocks` (`stream_blocks`) of `steps` steps that sum
    /// parts of its `shared`-th shared block: (the first, the last, the first's slot of
    /// `partial`). The others' slots are those of their range's first block, `2 * worker`.
    fn stream_sharers(blocks: Vec3<u32>, steps: u32, workers: u32, shared: u32) -> Vec3<u32> {
        let total = blocks.z * steps;
        let start = shared * steps;
        let first = stream_worker(total, workers, start);
        // The block is the first workgroup's range's first unless its range starts before it.
        let later = stream_range(total, workers, first).x < start;
        vec3(
            first,
            stream_worker(total, workers, start + steps - 1),
            2 * first + later as u32,
        )
    }

    /// Counts a part of the `shared`-th shared block of a stream as written, once every
    /// invocation has stored its share of it to `partial`, and says whether this workgroup's
    /// was the last of the block's `parts`: then the block's parts are visible to every
    /// invocation, for it to add them up, and the count is 0 again for the next dispatch.
    ///
    /// WGSL's memory model promises nothing between workgroups but atomics; naga writes
    /// `storage_barrier` for Vulkan as a control barrier with acquire-release semantics on
    /// storage memory at device scope, so the first barrier makes the part available before
    /// the count, and the second makes the other workgroups' parts visible after it (the
    /// fence-to-fence synchronization of the Vulkan memory model).
    fn stream_arrive(
        arrivals: &mut [AtomicU32],
        shared: u32,
        parts: u32,
        finishing: &mut [u32; 1],
        t: u32,
    ) -> bool {
        storage_barrier();
        if t == 0 {
            let arrived = arrivals[shared].fetch_add(1) + 1;
            if arrived == parts {
                arrivals[shared].store(0);
            }
            finishing[0] = (arrived == parts) as u32;
        }
        workgroup_barrier();
        storage_barrier();
        finishing[0] != 0
    }

    /// Hands on the part `part` (`stream_part`) of a shared block that this workgroup stored
    /// to `partial`: counts it (`stream_arrive`) and says which workgroups summed the block
    /// (`stream_sharers`, in `xyz`) and whether this one is to add the parts up (`w`, 1 or 0).
    fn stream_hand_over(
        arrivals: &mut [AtomicU32],
        finishing: &mut [u32; 1],
        blocks: Vec3<u32>,
        steps: u32,
        workers: u32,
        part: Vec4<u32>,
        t: u32,
    ) -> Vec4<u32> {
        let shared = part.x - blocks.y;
        let sharers = stream_sharers(blocks, steps, workers, shared);
        let last = stream_arrive(arrivals, shared, sharers.y - sharers.x + 1, finishing, t);
        vec4(sharers.x, sharers.y, sharers.z, last as u32)
    }

    /// Invocation `t`'s elements of the sum of the parts of a block that the workgroups
    /// `sharers` (`stream_sharers`) wrote to `partial`: element `t + INVOCATIONS * run` in
    /// `run` (a block has `OUTPUTS` elements an invocation). Each part's loads are all in
    /// flight at once.
    fn stream_sums(partial: &[f32], sharers: Vec3<u32>, t: u32) -> [f32; OUTPUTS] {
        let mut z = [0.0f32; OUTPUTS];
        let mut slot = sharers.z;
        for worker in sharers.x..sharers.y + 1 {
            let first = slot * BLOCK * COLS + t;
            #[unroll]
            for run in 0..OUTPUTS {
                z[run] += partial[first + run * INVOCATIONS];
            }
            slot = 2 * (worker + 1);
        }
        z
    }

    /// Where invocation `t`'s elements of the block at `origin` lie in a result laid out as
    /// `layout` says (see `matrix_layout`): those of `stream_sums`, column `t % COLS`, rows
    /// `t / COLS` and every `INVOCATIONS / COLS` on. As (the index of the column's element in
    /// row 0, the column, the first row); row `r`'s element is `layout.z * r` further.
    fn stream_elements(layout: Vec4<u32>, origin: Vec2<u32>, t: u32) -> Vec3<u32> {
        let column = origin.x + t % COLS;
        vec3(
            column / layout.x * layout.y + column % layout.x * layout.w,
            column,
            origin.y + t / COLS,
        )
    }

    /// Adds up the parts of the block at `origin` of `conv_forward_fragments_by_tap_streamed`
    /// that the workgroups `sharers` summed, then `pre` = the sum + `bias` and `y = act(pre)`.
    fn finish_forward_block(
        partial: &[f32],
        sharers: Vec3<u32>,
        bias: &[f32],
        pre: &mut [f32],
        y: &mut [f32],
        p: &ConvParams,
        origin: Vec2<u32>,
        t: u32,
    ) {
        let pixels = p.out_h * p.out_w;
        let layout = images_layout(p.out_channels, pixels);
        let (at, columns) = (stream_elements(layout, origin, t), p.batch * pixels);
        let mut z = stream_sums(partial, sharers, t);
        #[unroll]
        for run in 0..OUTPUTS {
            let channel = at.z + run * (INVOCATIONS / COLS);
            if at.y < columns && channel < p.out_channels {
                z[run] += bias[channel];
                if p.keep_pre != 0 {
                    pre[at.x + channel * layout.z] = z[run];
                }
            }
        }
        activate_outputs(&mut z, p.activation);
        #[unroll]
        for run in 0..OUTPUTS {
            let channel = at.z + run * (INVOCATIONS / COLS);
            if at.y < columns && channel < p.out_channels {
                y[at.x + channel * layout.z] = z[run];
            }
        }
    }

    /// Adds up the parts of the block at `origin` of a stream's `rows` x `cols` result that
    /// the workgroups `sharers` summed into `out`, laid out as `layout` says (see
    /// `store_fragments`): the input gradient's and the filter gradient's.
    fn finish_block(
        partial: &[f32],
        sharers: Vec3<u32>,
        out: &mut [f32],
        rows: u32,
        cols: u32,
        layout: Vec4<u32>,
        origin: Vec2<u32>,
        t: u32,
    ) {
        let at = stream_elements(layout, origin, t);
        let z = stream_sums(partial, sharers, t);
        #[unroll]
        for run in 0..OUTPUTS {
            let row = at.z + run * (INVOCATIONS / COLS);
            if at.y < cols && row < rows {
                out[at.x + row * layout.z] = z[run];
            }
        }
    }

    /// Writes the accumulators of a block into `out` from `offset` on, row-major, `COLS`
    /// columns: one slot of a stream's `partial`.
    fn store_block_fragments(out: &mut [f32], offset: u32, acc: &[FragC16<f32>; FRAGS], t: u32) {
        let warp = t / 32;
        let (rows, cols) = (warp / 4 * WARP_ROWS, warp % 4 * WARP_COLS);
        #[unroll]
        for i in 0..FRAG_ROWS {
            #[unroll]
            for j in 0..FRAG_COLS {
                let first = offset + (rows + i * 16) * COLS + cols + j * 16;
                coop_store_row_major(acc[i * FRAG_COLS + j], &mut out[first], COLS);
            }
        }
    }
}
