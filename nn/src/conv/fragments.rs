//! The kernels of [`Precision::TensorCoreF16`](crate::Precision::TensorCoreF16): what a
//! convolution builds to run its passes on the tensor cores.

use super::super::kernels;
use tessera::{Prepare, Result, Runtime};

/// `$kernel` in each blocking of `kernels::Streams` (`streams`) or of the `kernels::Blocked`
/// constructor `$blockings`, built on `$rt` without bounds checks (the caller's SAFETY comment
/// says why that is sound).
macro_rules! unchecked {
    ($rt:ident, streams, $kernel:ident) => {
        kernels::Streams::new(|b| unsafe { kernels::$kernel::with_constants_unchecked($rt, b) })?
    };
    ($rt:ident, $blockings:ident, $kernel:ident) => {
        kernels::Blocked::$blockings(|b| unsafe {
            kernels::$kernel::with_constants_unchecked($rt, b)
        })?
    };
}

/// The split tensor-core pass `$split` in each blocking: its `$partial` built on `$rt`
/// without bounds checks (as [`unchecked`]), and `$reduce`.
macro_rules! split {
    ($rt:ident, $split:ident, $partial:ident, $reduce:ident) => {
        kernels::Blocked::on_fragments(|b| {
            let partial = unsafe { kernels::$partial::with_constants_unchecked($rt, b) }?;
            Ok(kernels::$split::from_members(partial, $reduce.clone()))
        })?
    };
}

/// The kernels of [`Precision::TensorCoreF16`], in both blockings of
/// [`kernels::TensorBlocking`].
#[derive(Clone, Debug)]
pub(super) struct Fragments {
    /// Lays the filter out for the forward's sum, taps outermost.
    pub(super) weights_by_tap: kernels::ConvWeightsByTap,
    pub(super) forward: kernels::Blocked<kernels::ConvForwardFragments>,
    /// The forward by taps, for input channels a multiple of the blocking's depth.
    pub(super) forward_by_tap: kernels::Blocked<kernels::ConvForwardFragmentsByTap>,
    /// The forward over a staged window, for stride 1 and input channels a multiple of the
    /// window blocking's step, where the device has the workgroup memory.
    pub(super) forward_window: Option<kernels::Blocked<kernels::ConvForwardWindow>>,
    /// The forward over a staged window with every tap's filter slice staged at once, for
    /// filters of at most its taps, where the device has the workgroup memory.
    pub(super) forward_all_taps: Option<kernels::ConvForwardWindow>,
    /// The forward in slices of the summed dimension.
    pub(super) forward_split: kernels::Blocked<kernels::ConvForwardFragmentsSplit>,
    pub(super) forward_by_tap_split: kernels::Blocked<kernels::ConvForwardFragmentsByTapSplit>,
    /// The forward by taps as a stream of workgroups sharing the blocks' steps evenly, where
    /// the device has the invocations.
    pub(super) forward_by_tap_stream:
        Option<kernels::Streams<kernels::ConvForwardFragmentsByTapStreamed>>,
    pub(super) grad_input: kernels::Blocked<kernels::ConvGradInputFragments>,
    /// The input gradient in slices of the summed dimension.
    pub(super) grad_input_split: kernels::Blocked<kernels::ConvGradInputFragmentsSplit>,
    /// Lays the filter out for the input gradient by taps.
    pub(super) weights_transposed_by_tap: kernels::ConvWeightsTransposedByTap,
    /// The input gradient by taps, for stride 1 and output channels a multiple of the
    /// blocking's depth, whole and in slices.
    pub(super) grad_input_by_tap: kernels::Blocked<kernels::ConvGradInputFragmentsByTap>,
    pub(super) grad_input_by_tap_split: kernels::Blocked<kernels::ConvGradInputFragmentsByTapSplit>,
    /// The input gradient by taps as a stream (see `forward_by_tap_stream`).
    pub(super) grad_input_by_tap_stream:
        Option<kernels::Streams<kernels::ConvGradInputFragmentsByTapStreamed>>,
    /// The stride-1 input gradient over a staged window, for output channels a multiple of
    /// the window blocking's step, where the device has the workgroup memory.
    pub(super) grad_input_window: Option<kernels::Blocked<kernels::ConvGradInputWindow>>,
    /// `forward_all_taps` for the stride-1 input gradient.
    pub(super) grad_input_all_taps: Option<kernels::ConvGradInputWindow>,
    /// The input gradient of strided convolutions, one stride phase at a time.
    pub(super) grad_input_phased: kernels::Blocked<kernels::ConvGradInputPhasedFragments>,
    pub(super) grad_weight: kernels::Blocked<kernels::ConvGradWeightFragments>,
    /// The filter gradient by taps, for input channels a multiple of the blocking's block.
    pub(super) grad_weight_by_tap: kernels::Blocked<kernels::ConvGradWeightFragmentsByTap>,
    /// The filter gradient as a stream (see `forward_by_tap_stream`).
    pub(super) grad_weight_stream:
        Option<kernels::Streams<kernels::ConvGradWeightFragmentsStreamed>>,
    pub(super) reduce: kernels::ConvGradWeightReduce,
}

/// Builds every pipeline (see [`Convolution::prepare`]).
impl Prepare for Fragments {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        prepare_fields!(rt, self => Fragments {
            weights_by_tap, forward, forward_by_tap, forward_window, forward_all_taps,
            forward_split, forward_by_tap_split, forward_by_tap_stream, grad_input,
            grad_input_split, weights_transposed_by_tap, grad_input_by_tap,
            grad_input_by_tap_split, grad_input_by_tap_stream, grad_input_window,
            grad_input_all_taps, grad_input_phased, grad_weight, grad_weight_by_tap,
            grad_weight_stream, reduce;
        })
    }
}

impl Fragments {
    pub(super) fn new(rt: &Runtime) -> Result<Self> {
        // The f32 splits' reductions, which the tensor-core splits share.
        let forward_reduce = kernels::ConvForwardReduce::new(rt)?;
        let input_reduce = kernels::ConvGradInputReduce::new(rt)?;
        // SAFETY (every unchecked constructor below): every index is guarded (see "Bounds" in
        // `kernels`; the kernels by taps run only for channels a multiple of their blocking's
        // step or, the filter gradient's, of its block, and the windows only where
        // `plan::over_window` holds: see `plan`; a stream's slots of `partial`, two a
        // workgroup, are what its binding's length asks for).
        let all_taps = kernels::WindowBlocking::ALL_TAPS_AT_ONCE;
        Ok(Fragments {
            weights_by_tap: kernels::ConvWeightsByTap::new(rt)?,
            forward: unchecked!(rt, on_fragments, ConvForwardFragments),
            forward_split: split!(
                rt,
                ConvForwardFragmentsSplit,
                ConvForwardFragmentsPartial,
                forward_reduce
            ),
            forward_by_tap: unchecked!(rt, on_fragments, ConvForwardFragmentsByTap),
            forward_window: unchecked!(rt, on_windows, ConvForwardWindow),
            forward_all_taps: kernels::unless_too_large(unsafe {
                kernels::ConvForwardWindow::with_constants_unchecked(rt, all_taps)
            })?,
            forward_by_tap_split: split!(
                rt,
                ConvForwardFragmentsByTapSplit,
                ConvForwardFragmentsByTapPartial,
                forward_reduce
            ),
            forward_by_tap_stream: unchecked!(rt, streams, ConvForwardFragmentsByTapStreamed),
            grad_input: unchecked!(rt, on_fragments, ConvGradInputFragments),
            grad_input_split: split!(
                rt,
                ConvGradInputFragmentsSplit,
                ConvGradInputFragmentsPartial,
                input_reduce
            ),
            weights_transposed_by_tap: kernels::ConvWeightsTransposedByTap::new(rt)?,
            grad_input_by_tap: unchecked!(rt, on_fragments, ConvGradInputFragmentsByTap),
            grad_input_by_tap_split: split!(
                rt,
                ConvGradInputFragmentsByTapSplit,
                ConvGradInputFragmentsByTapPartial,
                input_reduce
            ),
            grad_input_by_tap_stream: unchecked!(rt, streams, ConvGradInputFragmentsByTapStreamed),
            grad_input_window: unchecked!(rt, on_windows, ConvGradInputWindow),
            grad_input_all_taps: kernels::unless_too_large(unsafe {
                kernels::ConvGradInputWindow::with_constants_unchecked(rt, all_taps)
            })?,
            grad_input_phased: unchecked!(rt, on_fragments, ConvGradInputPhasedFragments),
            grad_weight: unchecked!(rt, on_fragments, ConvGradWeightFragments),
            grad_weight_by_tap: unchecked!(rt, on_fragments, ConvGradWeightFragmentsByTap),
            grad_weight_stream: unchecked!(rt, streams, ConvGradWeightFragmentsStreamed),
            reduce: kernels::ConvGradWeightReduce::new(rt)?,
        })
    }
}
