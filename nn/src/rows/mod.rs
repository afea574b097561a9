//! Operations along the last dimension of a `[rows, cols]` matrix, a GPU workgroup per row:
//! [`Softmax`], [`RmsNorm`] and [`LayerNorm`], forward and backward, and the loss
//! [`SoftmaxCrossEntropy`].
//!
//! Each row is read into registers once, reduced across its workgroup and written once, four
//! scalars a load where `cols` is a multiple of 4 (the ops pick that instance themselves).
//! Rows may be of any length: one longer than a workgroup holds ([`MAX_COLS`] scalars, a
//! quarter of that where `cols` is not a multiple of 4) is read twice, a segment at a time.

mod loss;
mod norm;
mod softmax;

pub use loss::{LossBackward, LossForward, LossShape, SoftmaxCrossEntropy};
pub use norm::{
    LayerNorm, LayerNormBackward, LayerNormForward, LayerNormResidualBackward,
    LayerNormResidualForward, RmsNorm, RmsNormBackward, RmsNormForward, RmsNormResidualBackward,
    RmsNormResidualForward,
};
pub use softmax::{Softmax, SoftmaxBackward, SoftmaxForward};

use super::invalid;
use crate::kernels::row_ops as kernels;
use tessera::{Prepare, Result, Runtime};

/// The longest row a workgroup of the row operations holds when `cols` is a multiple of 4:
/// 16384 scalars. Other rows are read a scalar at a time and a workgroup holds a quarter of
/// that, 4096. Longer rows are read twice (the norms' backward three times), a segment at a
/// time.
pub const MAX_COLS: u32 = kernels::MAX_WIDTH * 4;

/// The element types the row operations store: `f32`, and `half::f16` on devices with
/// [`SHADER_F16`](tessera::wgpu::Features::SHADER_F16) (an op over `f16` reports
/// [`Error::MissingFeature`](tessera::Error::MissingFeature) at [`Softmax::new`] and the
/// like elsewhere).
///
/// Over `f16` every matrix and parameter (`x`, `y`, `scale`, `bias` and their gradients) is
/// `f16` in memory, and each row is held, summed and scaled in `f32`, as are the per-row
/// statistics (`mean`, `rstd`, always `f32` buffers) and the parameter gradients' partial
/// sums; each result is rounded to `f16` once, when stored.
pub trait RowElement: sealed::Kernels {
    /// Four of it, the instance the ops bind where `cols` is a multiple of 4.
    #[doc(hidden)]
    type Vector: sealed::Kernels;
}

impl RowElement for f32 {
    type Vector = [f32; 4];
}

impl RowElement for tessera::half::f16 {
    type Vector = [tessera::half::f16; 4];
}

mod sealed {
    use super::kernels::*;

    /// `Kernels`: the element traits of every row kernel generic over its element type,
    /// implemented by the types the kernels are instantiated for; the list written once.
    macro_rules! every_kernel {
        ($($element:ident),+) => {
            pub trait Kernels: $($element +)+ {}

            impl<T: $($element +)+> Kernels for T {}
        };
    }

    every_kernel!(
        SoftmaxForwardElement,
        SoftmaxBackwardElement,
        RmsNormForwardElement,
        RmsNormResidualForwardElement,
        RmsNormGradXElement,
        RmsNormGradSumElement,
        RmsNormGradScaleElement,
        SumChunksElement,
        LayerNormForwardElement,
        LayerNormResidualForwardElement,
        LayerNormGradXElement,
        LayerNormGradSumElement,
        LayerNormGradParamsElement,
        SumChunkPairsElement
    );
}

/// `rows` rows of `cols` scalars each, row-major: the shape of a row operation's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowsShape {
    /// Rows, each normalized (or softmaxed) on its own.
    pub rows: u32,
    /// Scalars per row: the dimension the operation reduces over.
    pub cols: u32,
}

/// How one call runs: its parameters and the instance of each row kernel.
struct Plan {
    params: kernels::RowParams,
    /// Whether rows are read as `Vec4<f32>` (`cols` a multiple of 4).
    vector: bool,
    /// The index in [`kernels::Segment::ALL`] of the smallest segment holding a row.
    segment: usize,
}

impl RowsShape {
    /// Checks the shape and picks the kernels' instance for it: the smallest segment that
    /// holds a row, else the largest, which the kernels loop over.
    fn plan_for(self, operation: &str, eps: f32) -> Result<Plan> {
        let RowsShape { rows, cols } = self;
        if rows == 0 || cols == 0 {
            return Err(invalid(
                operation,
                format!("rows and cols must be at least 1, got a shape of {rows} x {cols}"),
            ));
        }
        if rows.checked_mul(cols).is_none() {
            return Err(invalid(
                operation,
                format!(
                    "{rows} x {cols} scalars do not fit in u32 indices; pass at most {} rows \
                     a call",
                    u32::MAX / cols
                ),
            ));
        }
        let vector = cols.is_multiple_of(4);
        let width = if vector { cols / 4 } else { cols };
        let largest = kernels::Segment::ALL.len() - 1;
        let segment = kernels::Segment::ALL
            .iter()
            .position(|s| width <= s.group * s.per)
            .unwrap_or(largest);
        let (chunk_rows, chunks) = chunks(rows, width);
        Ok(Plan {
            params: kernels::RowParams {
                rows,
                cols,
                eps,
                chunk_rows,
                chunks,
            },
            vector,
            segment,
        })
    }
}

/// How the parameter-gradient passes cut `rows` rows of `width` elements (of the instance's
/// width): `(chunk_rows, chunks)`, enough chunks that the passes have about
/// [`GRADIENT_WORKGROUPS`] workgroups, each chunk at least `ROW_LANES` rows.
fn chunks(rows: u32, width: u32) -> (u32, u32) {
    let blocks = width.div_ceil(kernels::COLUMNS);
    let wanted = GRADIENT_WORKGROUPS.div_ceil(blocks);
    let chunks = wanted.clamp(1, rows.div_ceil(kernels::ROW_LANES));
    let chunk_rows = rows.div_ceil(chunks);
    (chunk_rows, rows.div_ceil(chunk_rows))
}

/// The workgroups a parameter-gradient pass aims at: several for each of a large GPU's cores.
const GRADIENT_WORKGROUPS: u32 = 2048;

/// What a buffer of a row operation holds, and so its length.
#[derive(Clone, Copy)]
enum Span {
    /// `[rows, cols]`.
    Matrix,
    /// `[cols]`: a parameter or its gradient.
    Columns,
    /// `[rows]`: a statistic per row.
    Rows,
}

/// The arguments of one call of a row operation: its shape and its buffers.
trait RowArgs {
    /// The call's name in errors, e.g. "RMSNorm forward".
    const OPERATION: &'static str;

    fn shape(&self) -> RowsShape;

    /// Each buffer's name, length and span.
    fn buffers(&self) -> Vec<(&'static str, usize, Span)>;

    /// Checks the shape and that each buffer is long enough for it, and plans the call.
    fn plan(&self, eps: f32) -> Result<Plan> {
        let (shape, operation) = (self.shape(), Self::OPERATION);
        let plan = shape.plan_for(operation, eps)?;
        let RowsShape { rows, cols } = shape;
        for (name, len, span) in self.buffers() {
            let (want, what) = match span {
                Span::Matrix => (rows as usize * cols as usize, "[rows, cols]"),
                Span::Columns => (cols as usize, "[cols]"),
                Span::Rows => (rows as usize, "[rows]"),
            };
            if len < want {
                return Err(invalid(
                    operation,
                    format!(
                        "`{name}` holds {len} elements, but a shape of {rows} x {cols} needs \
                         {what}: pass a buffer of at least {want}"
                    ),
                ));
            }
        }
        Ok(plan)
    }
}

/// Implements [`RowArgs`] for `$args` (over every [`RowElement`]), named `$operation`, whose
/// buffers are the fields given, each with its [`Span`].
macro_rules! row_args {
    ($args:ident, $operation:literal: $($buffer:ident: $span:ident),* $(,)?) => {
        impl<E: crate::rows::RowElement> crate::rows::RowArgs for $args<'_, E> {
            const OPERATION: &'static str = $operation;

            fn shape(&self) -> crate::rows::RowsShape {
                self.shape
            }

            fn buffers(&self) -> Vec<(&'static str, usize, crate::rows::Span)> {
                vec![$((stringify!($buffer), self.$buffer.len(), crate::rows::Span::$span)),*]
            }
        }
    };
}

/// A kernel in both widths: `S` reads scalars, `V` `Vec4`s. For a row kernel each is a
/// list of its [`kernels::Segment`] instances, in that order.
#[derive(Clone, Debug)]
struct Widths<S, V> {
    scalar: S,
    vector: V,
}

impl<S: Prepare, V: Prepare> Prepare for Widths<S, V> {
    fn prepare(&self, rt: &Runtime) -> Result<()> {
        (&self.scalar, &self.vector).prepare(rt)
    }
}

/// Every [`kernels::Segment`] instance of a row kernel, in both widths.
type RowKernels<S, V> = Widths<Vec<S>, Vec<V>>;

impl<S, V> RowKernels<S, V> {
    /// Builds the instances with `scalar` and `vector` (which compile nothing yet).
    fn build(
        scalar: impl Fn(kernels::Segment) -> Result<S>,
        vector: impl Fn(kernels::Segment) -> Result<V>,
    ) -> Result<Self> {
        let all = kernels::Segment::ALL;
        Ok(Widths {
            scalar: all.iter().map(|&s| scalar(s)).collect::<Result<_>>()?,
            vector: all.iter().map(|&s| vector(s)).collect::<Result<_>>()?,
        })
    }
}

/// Builds the [`RowKernels`] of the launcher `kernels::$kernel`, in the element types the
/// field it is for names.
macro_rules! row_kernels {
    ($rt:expr, $kernel:ident) => {
        crate::rows::RowKernels::build(
            |segment| crate::kernels::row_ops::$kernel::with_constants($rt, segment),
            |segment| crate::kernels::row_ops::$kernel::with_constants($rt, segment),
        )
    };
}

/// Calls `$record(kernel, args..)`, a function generic over the element type, with the width
/// of `$kernels` that `$plan` picks (and, given `[$segment]`, that instance).
macro_rules! dispatch {
    ($plan:expr, $kernels:expr $(, [$segment:expr])?; $record:ident($($arg:expr),* $(,)?)) => {
        if $plan.vector {
            $record(&$kernels.vector$([$segment])?, $($arg),*)
        } else {
            $record(&$kernels.scalar$([$segment])?, $($arg),*)
        }
    };
}

/// Builds the [`Widths`] of the launcher `kernels::$kernel` (one instance each), in the
/// element types the field it is for names.
macro_rules! widths {
    ($rt:expr, $kernel:ident) => {
        crate::rows::Widths {
            scalar: crate::kernels::row_ops::$kernel::new($rt)?,
            vector: crate::kernels::row_ops::$kernel::new($rt)?,
        }
    };
}

// The macros by path, for `softmax` and `norm` to import.
use {dispatch, row_args, row_kernels, widths};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_row_once_and_fill_the_gpu() {
        for rows in [1, 7, 8, 9, 70, 1000, 16384, 100_003] {
            for width in [1, 3, 250, 1024, 4096] {
                let (chunk_rows, chunks) = chunks(rows, width);
                assert!(chunk_rows >= 1 && chunks >= 1, "{rows} x {width}");
                // The last chunk starts inside the rows and ends at or past their end.
                assert!((chunks - 1) * chunk_rows < rows, "{rows} x {width}");
                assert!(chunks * chunk_rows >= rows, "{rows} x {width}");
                let blocks = width.div_ceil(kernels::COLUMNS);
                let enough = blocks * chunks >= GRADIENT_WORKGROUPS / 2;
                let short = chunk_rows <= 2 * kernels::ROW_LANES;
                assert!(enough || short, "{rows} x {width}: {chunks} chunks");
            }
        }
        assert_eq!(chunks(16384, 1024), (256, 64));
    }
}
