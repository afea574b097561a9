//! What a GEMM's forward or backward runs for one shape, way, device and binding: a plain
//! value ([`ForwardPlan`], [`BackwardPlan`]) made by a pure function of the parameters, the
//! [`GemmWay`], the blockings the device built ([`Caps`]) and whether the buffers bind as
//! vectors of 4 ([`Binding`]), which `Gemm` then records with one `match`. Recording and
//! scratch memory are not this module's.

use super::kernels::{self, Blocked, GemmParams};
use crate::split::{Split, Steps};
use crate::tune::{GemmTile, GemmWay, Tile};

/// The blockings a device built a GEMM pass in.
#[derive(Clone, Debug)]
pub(crate) struct Caps {
    /// The f32 pass's (the forward's split pass, the backward's operand gradients).
    pub f32: Blocked<kernels::Blocking>,
    /// On the tensor cores, where built.
    pub tensor: Option<Blocked<kernels::TensorBlocking>>,
    /// Whether the device built the forward's wide blocking.
    pub wide: bool,
}

/// Which of a pass's buffers bind as vectors of 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The operands `a` and `b`: their rows, `k` and `n` long, are a multiple of 4 and each
    /// buffer holds whole vectors.
    pub operands: bool,
    /// Every other buffer the pass binds (the forward's `bias`, `pre` and `y`; the backward's
    /// `grad_pre`) holds whole vectors.
    pub others: bool,
}

/// A GEMM forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ForwardPlan {
    /// In f32, whole, over vectors where the operands bind as them (`gemm_forward`).
    F32 { tile: Tile, vectors: bool },
    /// In f32, its sum in slices (`gemm_forward_partial` and its reduce).
    F32Sliced { tile: Tile, cut: Split },
    /// On the tensor cores, its sum cut as `cut` says (then its slices added up), over
    /// vectors where every buffer binds as them.
    TensorCores {
        tile: GemmTile,
        cut: Split,
        vectors: bool,
    },
    /// In the wide blocking (`gemm_forward_fragments_wide`), whole over vectors (`cut` has
    /// one slice).
    Wide { cut: Split },
}

/// How a GEMM backward's operand gradients run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operands {
    /// In f32, over vectors where the operands and `grad_pre` bind as them.
    F32 { tile: Tile, vectors: bool },
    /// On the tensor cores (over scalars: over vectors they ran 1-30% slower on an H100,
    /// notes/performance.md).
    TensorCores { tile: GemmTile },
}

/// A GEMM backward: `grad_pre`, the operand gradients, each summed as its cut says (their
/// slices then added up), and the bias gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BackwardPlan {
    pub operands: Operands,
    /// `grad_a`'s sum, over `n`.
    pub cut_a: Split,
    /// `grad_b`'s sum, over `m`.
    pub cut_b: Split,
}

impl BackwardPlan {
    /// The kernels' parameters: `p` with both operand gradients' cuts.
    pub fn params(self, mut p: GemmParams) -> GemmParams {
        (p.splits, p.split_depth) = (self.cut_a.splits, self.cut_a.depth);
        (p.b_splits, p.b_split_depth) = (self.cut_b.splits, self.cut_b.depth);
        p
    }
}

/// The way as an f32 tile and split (a way on the tensor cores where the device has none:
/// its tile's stand-in, as it split).
fn in_f32(way: GemmWay) -> (Tile, bool) {
    match way {
        GemmWay::F32 { tile, split } => (tile, split),
        GemmWay::TensorCores {
            tile: GemmTile::Fragments(tile),
            split,
        } => (tile.in_f32(), split),
        GemmWay::TensorCores { split, .. } => (Tile::Large, split),
    }
}

/// The forward of `p` run `way` on a device with `caps`, its buffers bound as `binding`
/// says.
pub(crate) fn forward(p: &GemmParams, way: GemmWay, caps: &Caps, binding: Binding) -> ForwardPlan {
    match (way, &caps.tensor) {
        (GemmWay::TensorCores { tile, split }, Some(blockings)) => {
            let cut = match split {
                true => Split::of(*blockings.get(tile.pick()), p.m, p.n, p.k),
                false => Split::WHOLE,
            };
            let vectors = binding.operands && binding.others;
            match (tile, vectors, cut.splits) {
                (GemmTile::Wide, true, 1) if caps.wide => ForwardPlan::Wide { cut },
                _ => ForwardPlan::TensorCores { tile, cut, vectors },
            }
        }
        (way, _) => {
            let (tile, split) = in_f32(way);
            let cut = Split::of(*caps.f32.get(tile.pick()), p.m, p.n, p.k);
            match split && cut.splits > 1 {
                true => ForwardPlan::F32Sliced { tile, cut },
                false => ForwardPlan::F32 {
                    tile,
                    vectors: binding.operands,
                },
            }
        }
    }
}

/// The backward of `p` run `way` on a device with `caps`, its buffers bound as `binding`
/// says.
pub(crate) fn backward(
    p: &GemmParams,
    way: GemmWay,
    caps: &Caps,
    binding: Binding,
) -> BackwardPlan {
    let (operands, split) = match (way, &caps.tensor) {
        (GemmWay::TensorCores { tile, split }, Some(blockings)) => {
            let cuts = operand_cuts(*blockings.get(tile.pick()), p, split);
            (Operands::TensorCores { tile }, cuts)
        }
        (way, _) => {
            let (tile, split) = in_f32(way);
            let vectors = binding.operands && binding.others;
            let cuts = operand_cuts(*caps.f32.get(tile.pick()), p, split);
            (Operands::F32 { tile, vectors }, cuts)
        }
    };
    let (cut_a, cut_b) = split;
    BackwardPlan {
        operands,
        cut_a,
        cut_b,
    }
}

/// How the operand gradients of a backward with `p`'s shape sum, for kernels of `blocking`:
/// `grad_a` (`m x k`) over `n`, `grad_b` (`k x n`) over `m`, each in slices (when `split`)
/// where its output alone cannot fill the GPU, whole otherwise.
fn operand_cuts(blocking: impl Steps, p: &GemmParams, split: bool) -> (Split, Split) {
    if !split {
        return (Split::WHOLE, Split::WHOLE);
    }
    (
        Split::of(blocking, p.m, p.k, p.n),
        Split::of(blocking, p.k, p.n, p.m),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::FragmentTile;

    /// The blockings of a device that builds every kernel.
    fn caps() -> Caps {
        Caps {
            f32: Blocked::new(Ok).unwrap(),
            tensor: Some(Blocked::on_fragments_with_deep(Ok).unwrap()),
            wide: true,
        }
    }

    fn shape(m: u32, n: u32, k: u32) -> GemmParams {
        let shape = crate::GemmShape { m, n, k };
        super::super::params(shape, crate::Activation::None).unwrap()
    }

    const VECTORS: Binding = Binding {
        operands: true,
        others: true,
    };

    #[test]
    fn a_small_output_with_a_long_sum_runs_in_slices_where_the_way_allows() {
        let p = shape(64, 64, 1 << 16);
        let split = GemmWay::F32 {
            tile: Tile::Small,
            split: true,
        };
        let plan = forward(&p, split, &caps(), VECTORS);
        assert!(
            matches!(plan, ForwardPlan::F32Sliced { tile: Tile::Small, cut } if cut.splits > 1),
            "{plan:?}"
        );
        let whole = GemmWay::F32 {
            tile: Tile::Small,
            split: false,
        };
        let want = ForwardPlan::F32 {
            tile: Tile::Small,
            vectors: true,
        };
        assert_eq!(forward(&p, whole, &caps(), VECTORS), want);
        // A large output runs whole however the way splits.
        let p = shape(4096, 4096, 4096);
        assert!(matches!(
            forward(&p, split, &caps(), VECTORS),
            ForwardPlan::F32 { .. }
        ));
    }

    #[test]
    fn the_wide_blocking_runs_whole_over_vectors_or_as_the_large_one() {
        let p = shape(4096, 4096, 4096);
        let wide = GemmWay::TensorCores {
            tile: GemmTile::Wide,
            split: false,
        };
        let whole = ForwardPlan::Wide { cut: Split::WHOLE };
        assert_eq!(forward(&p, wide, &caps(), VECTORS), whole);
        let scalars = Binding {
            others: false,
            ..VECTORS
        };
        let large = ForwardPlan::TensorCores {
            tile: GemmTile::Wide,
            cut: Split::WHOLE,
            vectors: false,
        };
        assert_eq!(forward(&p, wide, &caps(), scalars), large);
        let without = Caps {
            wide: false,
            ..caps()
        };
        let plan = forward(&p, wide, &without, VECTORS);
        assert!(matches!(
            plan,
            ForwardPlan::TensorCores { vectors: true, .. }
        ));
    }

    #[test]
    fn the_backward_splits_each_operand_gradient_as_its_output_needs() {
        // `grad_a` (64 x 64) cannot fill the GPU; `grad_b` (64 x 8192) can.
        let p = shape(64, 8192, 64);
        let way = GemmWay::TensorCores {
            tile: GemmTile::Deep,
            split: true,
        };
        let plan = backward(&p, way, &caps(), VECTORS);
        assert_eq!(
            plan.operands,
            Operands::TensorCores {
                tile: GemmTile::Deep
            }
        );
        assert!(plan.cut_a.splits > 1 && plan.cut_b.splits == 1, "{plan:?}");
        let params = plan.params(p);
        assert_eq!((params.splits, params.b_splits), (plan.cut_a.splits, 1));
        let whole = GemmWay::TensorCores {
            tile: GemmTile::Deep,
            split: false,
        };
        let plan = backward(&p, whole, &caps(), VECTORS);
        assert_eq!((plan.cut_a, plan.cut_b), (Split::WHOLE, Split::WHOLE));
    }

    #[test]
    fn ways_on_the_tensor_cores_run_in_f32_on_a_device_without_them() {
        let p = shape(256, 256, 256);
        let f32 = Caps {
            tensor: None,
            ..caps()
        };
        let small = GemmWay::TensorCores {
            tile: GemmTile::Fragments(FragmentTile::Small),
            split: false,
        };
        let want = ForwardPlan::F32 {
            tile: Tile::Small,
            vectors: true,
        };
        assert_eq!(forward(&p, small, &f32, VECTORS), want);
        let deep = GemmWay::TensorCores {
            tile: GemmTile::Deep,
            split: false,
        };
        let operands_only = Binding {
            others: false,
            ..VECTORS
        };
        let plan = backward(&p, deep, &f32, operands_only);
        let want = Operands::F32 {
            tile: Tile::Large,
            vectors: false,
        };
        assert_eq!(plan.operands, want);
    }
}
