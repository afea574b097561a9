//! Kernels only nn's tests run: models of the real kernels' schedules that run on any device.

#[tessera::kernels]
pub mod test_models {
    #[device]
    use crate::kernels::libraries::{params, stream};

    /// The schedule of `conv_forward_fragments_by_tap_streamed` and its hand-over of parts,
    /// without the tensor cores, so that tests run them on any device (the streams need
    /// cooperative matrices). A part of steps `first..end` of a block adds `s + 1` for each
    /// of its steps `s` to every element, so that every element of `pre` and `y` (a
    /// convolution without activation) comes out as its channel's bias plus `steps *
    /// (steps + 1) / 2` whichever workgroups summed it, and a block left unfinished, or a
    /// part missing from its sum or added twice, shows. A block run whole goes through the
    /// workgroup's first slot (the stream stores it through `spill`).
    #[kernel(
        workgroup = [INVOCATIONS],
        constants = StreamBlocking,
        grid = [p.workers],
        limits(invocations = INVOCATIONS)
    )]
    pub fn stream_schedule_model(
        p: &ConvParams,
        #[len(p.out_channels)] bias: &[f32],
        #[len(2 * p.workers * BLOCK * COLS)] partial: &mut [f32],
        #[len(p.workers)] arrivals: &mut [AtomicU32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] pre: &mut [f32],
        #[len(p.batch * p.out_channels * p.out_h * p.out_w)] y: &mut [f32],
        #[workgroup] finishing: &mut [u32; 1],
    ) {
        let (t, worker) = (local_index(), workgroup_id().x);
        let blocks = stream_blocks(p.out_channels, p.batch * p.out_h * p.out_w, p.workers);
        let steps = p.in_channels * p.kernel_h * p.kernel_w / DEPTH;
        let share = stream_share(blocks, steps, p.workers, worker);
        let mut j = 0u32;
        while j < share.x + share.z - share.y {
            let part = stream_part(blocks, steps, p.workers, worker, share, j);
            let origin = vec2(part.x % blocks.x * COLS, part.x / blocks.x * BLOCK);
            let value = ((part.z * (part.z + 1) - part.y * (part.y + 1)) / 2) as f32;
            let whole = part.y == 0 && part.z == steps;
            let slot = if whole { 2 * worker } else { part.w };
            // An invocation writes, and a workgroup that finishes alone reads back, elements
            // `t + INVOCATIONS * run` (`stream_sums`).
            for run in 0..OUTPUTS {
                partial[slot * BLOCK * COLS + run * INVOCATIONS + t] = value;
            }
            if whole {
                let alone = vec3(worker, worker, slot);
                finish_forward_block(partial, alone, bias, pre, y, p, origin, t);
            } else {
                let hand = stream_hand_over(arrivals, finishing, blocks, steps, p.workers, part, t);
                if hand.w != 0 {
                    finish_forward_block(partial, hand.xyz, bias, pre, y, p, origin, t);
                }
            }
            j += part.z - part.y;
        }
    }
}
