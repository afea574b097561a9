//! Split-K: when a GEMM-shaped kernel's output gives too few workgroups to keep a large GPU
//! busy, its summed dimension is cut into slices that separate workgroups sum (grid `z`), and a
//! second pass adds the slices' partial products up.

use super::kernels::{Blocking, TensorBlocking};

/// A blocking whose steps a cut respects: its output block's edge and its step's depth.
pub(crate) trait Steps: Copy {
    fn block(self) -> u32;
    fn depth(self) -> u32;
    /// The workgroups a cut aims for: enough for every core of a large GPU.
    fn workgroups(self) -> u64 {
        WORKGROUPS
    }
}

impl Steps for Blocking {
    fn block(self) -> u32 {
        Blocking::block(&self)
    }
    fn depth(self) -> u32 {
        Blocking::depth(&self)
    }
}

impl Steps for TensorBlocking {
    fn block(self) -> u32 {
        self.block
    }
    fn depth(self) -> u32 {
        self.depth
    }
    /// About one wave of an H100's 132 cores, which run one workgroup of 128 x 128 blocks at
    /// a time (their registers) or two of 64 x 64: more slices than that only add partial
    /// sums to write and add up. Cut for 128 workgroups instead of 512, the 128-row blocks
    /// ran the forward and input gradient of the ResNet 512@7 convolution 25% faster and the
    /// filter gradients of 128@28 and 256@14 20-25%; the 64-row blocks, cut for 128, ran the
    /// filter gradient of 64@56 40% slower than for 256 (notes/performance.md).
    fn workgroups(self) -> u64 {
        if self.block >= 128 {
            WORKGROUPS / 4
        } else {
            WORKGROUPS / 2
        }
    }
}

/// A kernel summing the rows of each column of a matrix (a bias gradient), as a cut sees it:
/// `columns` columns per workgroup for a block, and the rows its invocations read together
/// in one turn of its loop for a step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ColumnSums {
    pub columns: u32,
    pub rows: u32,
}

impl Steps for ColumnSums {
    fn block(self) -> u32 {
        self.columns
    }
    fn depth(self) -> u32 {
        self.rows
    }
}

/// Workgroups a split kernel aims for, unless its blocking says otherwise.
const WORKGROUPS: u64 = 512;

/// The shortest slice of the summed dimension worth a workgroup of its own.
pub(crate) const MIN_SLICE: u64 = 512;

/// How a summed dimension is cut: `splits` slices, each `depth` long but the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    pub splits: u32,
    pub depth: u32,
}

impl Split {
    /// One slice: the whole sum.
    pub const WHOLE: Split = Split {
        splits: 1,
        depth: u32::MAX,
    };

    /// The cut of a summed dimension of `depth` for a kernel of `blocking` whose output is
    /// `rows x columns`: as many slices as it takes to reach the blocking's workgroups, none
    /// shorter than [`MIN_SLICE`], each a whole number of the blocking's steps, and few enough
    /// that every slice's partial product can be indexed with `u32`. One slice when the output
    /// fills the GPU by itself.
    pub fn of(blocking: impl Steps, rows: u32, columns: u32, depth: u32) -> Split {
        Split::batched(blocking, 1, rows, columns, depth)
    }

    /// [`Split::of`] for `batches` GEMMs of the same shape computed together (one output
    /// each, every one cut the same way).
    pub fn batched(
        blocking: impl Steps,
        batches: u32,
        rows: u32,
        columns: u32,
        depth: u32,
    ) -> Split {
        let block = u64::from(blocking.block());
        let (rows, columns, depth) = (u64::from(rows), u64::from(columns), u64::from(depth));
        let batches = u64::from(batches);
        let blocks = batches * rows.div_ceil(block) * columns.div_ceil(block);
        let output = (batches * rows * columns).max(1);
        let splits = (blocking.workgroups() / blocks.max(1))
            .min(depth / MIN_SLICE)
            .min(u64::from(u32::MAX) / output)
            .max(1);
        let slice = depth
            .div_ceil(splits)
            .next_multiple_of(u64::from(blocking.depth()))
            .max(1);
        // Both fit: `slice` is at most `depth` rounded up to a step, and `depth` is a `u32`.
        Split {
            splits: depth.div_ceil(slice).max(1) as u32,
            depth: slice.min(u64::from(u32::MAX)) as u32,
        }
    }

    /// The partial sums a cut of a `rows x columns` output writes: one output per slice
    /// (within `u32`, as [`Split::of`] keeps it).
    pub fn partials(self, rows: u32, columns: u32) -> usize {
        self.splits as usize * rows as usize * columns as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn large() -> Blocking {
        Blocking::ALL[0]
    }

    #[test]
    fn an_output_that_fills_the_gpu_is_not_split() {
        assert_eq!(Split::of(large(), 4096, 4096, 4096).splits, 1);
    }

    #[test]
    fn a_skinny_output_over_a_long_sum_is_split_into_whole_steps() {
        let small = Blocking::ALL[Blocking::ALL.len() - 1];
        let split = Split::of(small, 256, 4, 16384);
        assert!(split.splits > 1);
        assert_eq!(split.depth % small.depth(), 0);
        assert!(u64::from(split.depth) >= MIN_SLICE);
        // The slices cover the dimension, and the last one is not empty.
        assert!(split.splits * split.depth >= 16384);
        assert!((split.splits - 1) * split.depth < 16384);
    }

    #[test]
    fn tensor_core_blockings_aim_for_a_wave_of_an_h100() {
        let tensor = |block| {
            TensorBlocking::ALL
                .iter()
                .copied()
                .find(|b| b.block == block && b.depth == 32)
                .unwrap()
        };
        // The filter gradient of a 256-channel 3 x 3 convolution over 32 images of 14 x 14:
        // 2 x 18 blocks of 128 over a sum of 6272, about 128 workgroups on the tensor cores
        // and 512 in f32.
        let workgroups = |blocks: u64, split: Split| blocks * u64::from(split.splits);
        let (cores, f32s) = (
            Split::of(tensor(128), 256, 2304, 6272),
            Split::of(large(), 256, 2304, 6272),
        );
        assert_eq!(large().block(), 128);
        assert!((73..=128).contains(&workgroups(36, cores)), "{cores:?}");
        assert!((257..=512).contains(&workgroups(36, f32s)), "{f32s:?}");
        // That of 64 channels over 56 x 56 in 64-row blocks: 1 x 9 blocks, about 256.
        let small = Split::of(tensor(64), 64, 576, 100352);
        assert!((129..=256).contains(&workgroups(9, small)), "{small:?}");
    }

    #[test]
    fn a_short_sum_is_not_cut_below_the_minimum_slice() {
        assert_eq!(Split::of(large(), 4, 4, 300).splits, 1);
        assert_eq!(Split::of(large(), 4, 4, 0).splits, 1);
    }
}
