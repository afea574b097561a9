//! Every kernel of [`crate`] but the row operations', in one kernels module (`nn`, below),
//! written in files by concern as device libraries whose kernels `nn` takes as its own
//! (`#[device] use`): the GEMMs (`gemm`), the convolution's forward (`conv_forward`), input
//! gradient (`conv_grad_input`) and filter gradient (`conv_grad_weight`, Winograd's
//! included), and the pointwise and reduction kernels of training (`training`). They stay one
//! module, one WGSL text, because splitting them into several kernels modules made one
//! tensor-core pass answer wrong on an H200 (notes/kernel-libraries.md). The parts those
//! kernels share are libraries of helpers beside them: the shared constants and `Params`
//! structs (`params`), the activations and their derivatives (`activation`), the f32 GEMM
//! blocking with its staging and mainloop (`staging`), the tensor-core blocking with its
//! staging, mainloop and epilogues (`fragments`), and the convolutions' gathers and tiles
//! (`conv`, `gradients`, `window`, `stream`, `wide`, `winograd`). The row operations are a
//! kernels module of their own (`rows`).
//!
//! The GEMM-shaped kernels (GEMM forward and its two operand gradients, convolution forward and
//! its input and filter gradients) share one blocking: a workgroup of 16 x 16 invocations owns
//! a 128 x 128 block of the output, stages 8-deep slices of both operands in workgroup memory
//! (two of each, taken in turn: see `Blocking`), and each invocation accumulates an 8 x 8
//! register tile: two runs of 4 adjacent rows, 64 apart, by two runs of 4 adjacent columns, so
//! that each step reads its operands from workgroup memory as 4-wide vectors. Only what each
//! kernel stages, and where it stores, differs. The GEMMs also read their operands from memory
//! as 4-wide vectors where their rows are a multiple of 4 long (`mainloop` over vectors, bound
//! through `GpuBuffer::view_as`).
//!
//! # Bounds
//!
//! The GEMM-shaped kernels are built without naga's bounds checks
//! (`with_constants_unchecked`), which cost them about a seventh of their time. That is sound
//! because every index they make is guarded: each read or write of a buffer sits behind a
//! comparison of its coordinates with the shape in the kernel's parameters, and the launchers
//! check every buffer's length against that shape (`#[len]`, on the kernel or its family);
//! workgroup slices and register tiles are indexed by constants, local invocation ids and the
//! step's buffer (`buffer`) within their sizes. A new kernel built that way must keep to the
//! same rule. One exception: the tensor-core passes by taps test each step's tap against the
//! image, not each load's channel. The host runs `conv_forward_fragments_by_tap`,
//! `conv_grad_input_fragments_by_tap` and their split partials only when the summed channels
//! are a multiple of the blocking's `DEPTH`, so that every step's channels lie inside, and
//! `conv_grad_weight_fragments_by_tap` only when the input channels are a multiple of its
//! `BLOCK`, so that every block's columns lie inside one tap. The passes over a staged window
//! (`conv_forward_window`, `conv_grad_input_window`) likewise test each staged position, not
//! each load's channel, and read their window up to the filter's reach past their block: the
//! host runs them only for summed channels a multiple of `DEPTH`, a reach of at most
//! `WINDOW - COLS` and, staging every tap at once, a filter of at most `SLICES` taps
//! (`conv::plan::over_window`).

pub(crate) mod activation;
mod attention;
mod clip;
mod conv;
mod conv_forward;
mod conv_grad_input;
mod conv_grad_weight;
mod embedding;
pub(crate) mod fragments;
mod gemm;
mod gradients;
#[cfg(test)]
mod models;
mod params;
mod rows;
mod sort;
pub(crate) mod staging;
mod stream;
mod training;
mod transformer;
mod wide;
mod window;
mod winograd;

#[cfg(test)]
pub(crate) use models::test_models;

/// The libraries of helpers the kernels share, by their names, for the parts' imports:
/// `#[device] use crate::kernels::libraries::{params, staging};`.
mod libraries {
    pub(crate) use super::activation::activation;
    pub(crate) use super::conv::conv;
    pub(crate) use super::fragments::fragments;
    pub(crate) use super::gradients::gradients;
    pub(crate) use super::params::params;
    pub(crate) use super::staging::staging;
    pub(crate) use super::stream::stream;
    pub(crate) use super::wide::wide;
    pub(crate) use super::window::window;
    pub(crate) use super::winograd::winograd;
}

pub(crate) use attention::attention_ops;
pub(crate) use clip::clip_ops;
pub(crate) use embedding::embedding_ops;
/// The shared constants the host code names (`kernels::GROUP`, ..).
pub(crate) use params::params::{FEW, NARROW, SUMS};
pub(crate) use rows::row_ops;
pub(crate) use sort::sort_ops;
pub(crate) use staging::staging::GROUP;
pub(crate) use transformer::transformer_ops;
pub(crate) use winograd::winograd::{POINTS, TILE};

// Imported in this order, a blank line apart so that rustfmt keeps it: the kernels' order in
// the WGSL, and so its helpers' names, follow the imports'.
#[tessera::kernels]
mod nn {
    #[device]
    use super::gemm::gemm;

    #[device]
    use super::conv_forward::conv_forward;

    #[device]
    use super::conv_grad_input::conv_grad_input;

    #[device]
    use super::conv_grad_weight::conv_grad_weight;

    #[device]
    use super::training::training;
}

pub(crate) use nn::*;

/// A GEMM-shaped kernel in each of its blockings, chosen by a [`Pick`].
#[derive(Clone, Debug)]
pub(crate) struct Blocked<K> {
    /// The first instance of [`Blocking`]: 128 x 128 output blocks, or where the device lacks
    /// the workgroup memory they need, the small blocking again. On the tensor cores, 128 x
    /// 128 blocks of 32-deep slices.
    pub large: K,
    /// The second: 64 x 64 output blocks.
    pub small: K,
    /// On the tensor cores, for the GEMMs: 128 x 128 blocks of 64-deep slices, where the
    /// device has the workgroup memory they take.
    pub deep: Option<K>,
    /// On the tensor cores: 128 x 128 blocks of 32-deep slices in 512 invocations, where the
    /// device has them.
    pub many: Option<K>,
}

/// The second instance of [`Blocking`]: 64 x 64 blocks.
const SMALL: Blocking = Blocking::ALL[Blocking::ALL.len() - 1];

/// Whether the small blocks cover an output whose narrower side has `rows` (the rule for the
/// blocking when autotuning is off: the small blocks unless the large ones fill).
pub(crate) fn small_blocks_fit(rows: u32) -> bool {
    rows <= SMALL.block()
}

/// Which instance of a [`Blocked`] kernel runs (a way's tile says which:
/// `tune::Tile::pick` and its kin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// [`Blocked::large`].
    Large,
    /// [`Blocked::small`].
    Small,
    /// [`Blocked::deep`], or the large one where there is none.
    Deep,
    /// [`Blocked::many`], or the large one where there is none.
    Many,
}

/// A kernel as built, or `None` where the device lacks the workgroup memory or invocations it
/// takes (any other error stays one).
pub(crate) fn unless_too_large<K>(built: tessera::Result<K>) -> tessera::Result<Option<K>> {
    match built {
        Err(tessera::Error::LimitExceeded { .. }) => Ok(None),
        built => built.map(Some),
    }
}

impl WindowBlocking {
    /// The blocking of a pass over a staged window that stages every tap's filter slice at
    /// once: 64 rows, 16-deep steps, 256 invocations, a filter of at most 9 taps.
    pub(crate) const ALL_TAPS_AT_ONCE: WindowBlocking = WindowBlocking {
        block: 64,
        invocations: 256,
        depth: 16,
        slices: 9,
        all_taps: 1,
    };

    /// The blocking of a pass over a staged window tap by tap: `block` rows in `invocations`
    /// invocations, 32-deep steps, the filter slices taken in turn from two (256 invocations)
    /// or one (512).
    pub(crate) const fn tap_by_tap(block: u32, invocations: u32) -> Self {
        WindowBlocking {
            block,
            invocations,
            depth: 32,
            slices: 512 / invocations,
            all_taps: 0,
        }
    }
}

/// The blocks of a convolution pass as a stream ([`StreamBlocking`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamTile {
    /// 128 x 128 blocks.
    Square,
    /// 256 result channels by 128 positions (the square blocks on a device without their
    /// workgroup memory).
    Wide,
    /// 128 result channels by 256 positions (as `Wide`).
    Long,
}

/// A convolution pass as a stream in each blocking of [`StreamBlocking`], chosen by a
/// [`StreamTile`] ([`Streams::get`]).
#[derive(Clone, Debug)]
pub(crate) struct Streams<K> {
    /// 128 x 128 blocks.
    square: K,
    /// 256 result channels by 128 positions, where the device has the workgroup memory;
    /// otherwise the square blocks again.
    wide: K,
    /// 128 result channels by 256 positions (as `wide`).
    long: K,
}

impl<K: Clone> Streams<K> {
    /// The pass in each blocking, built by `build`; `None` on a device without the 512
    /// invocations they take (the passes then run by taps whole).
    pub fn new(
        build: impl Fn(StreamBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Option<Self>> {
        let blocks = |block, cols| unless_too_large(build(StreamBlocking { block, cols }));
        let Some(square) = blocks(128, 128)? else {
            return Ok(None);
        };
        let oblong = |built: Option<K>| built.unwrap_or_else(|| square.clone());
        Ok(Some(Streams {
            wide: oblong(blocks(256, 128)?),
            long: oblong(blocks(128, 256)?),
            square,
        }))
    }
}

impl<K> Streams<K> {
    /// The kernel in `tile`'s blocks.
    pub fn get(&self, tile: StreamTile) -> &K {
        match tile {
            StreamTile::Square => &self.square,
            StreamTile::Wide => &self.wide,
            StreamTile::Long => &self.long,
        }
    }

    /// What `f` makes of each blocking's kernel (e.g. its constants), in a [`Streams`].
    pub fn each<L>(&self, f: impl Fn(&K) -> L) -> Streams<L> {
        Streams {
            square: f(&self.square),
            wide: f(&self.wide),
            long: f(&self.long),
        }
    }
}

impl<K: tessera::Prepare> tessera::Prepare for Streams<K> {
    fn prepare(&self, rt: &tessera::Runtime) -> tessera::Result<()> {
        [&self.square, &self.wide, &self.long].prepare(rt)
    }
}

impl StreamBlocking {
    /// The elements of a stream's `partial` for `workers` workgroups (two blocks each), as
    /// the kernels' bindings ask for.
    pub(crate) const fn partials(self, workers: u32) -> usize {
        2 * workers as usize * (self.block * self.cols) as usize
    }
}

impl<K> Blocked<K> {
    /// Both blockings of a kernel, built by `build` (e.g. `|b| GemmForward::with_constants(rt, b)`).
    /// On a device with less workgroup memory than the large blocking's double-buffered slices
    /// take (WebGPU's default 16 KiB, as a device made with `wgpu::Limits::default()` has), the
    /// small blocking serves as both.
    pub fn new(build: impl Fn(Blocking) -> tessera::Result<K>) -> tessera::Result<Self> {
        let small = build(SMALL)?;
        let large = match build(Blocking::ALL[0]) {
            Err(tessera::Error::LimitExceeded { .. }) => build(SMALL)?,
            built => built?,
        };
        Ok(Blocked {
            large,
            small,
            deep: None,
            many: None,
        })
    }

    /// Both blockings of a tensor-core kernel ([`TensorBlocking`]): 128 x 128 and 64 x 64
    /// blocks of 32-deep slices in 256 invocations, and the 128 x 128 blocks in 512 where the
    /// device has them.
    pub fn on_fragments(
        build: impl Fn(TensorBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Self> {
        let blocks = |block, invocations| {
            build(TensorBlocking {
                depth: 32,
                block,
                invocations,
            })
        };
        let many = unless_too_large(blocks(128, 512))?;
        Ok(Blocked {
            large: blocks(128, 256)?,
            small: blocks(64, 256)?,
            deep: None,
            many,
        })
    }

    /// [`Blocked::on_fragments`] and the deep blocking, 128 x 128 blocks of 64-deep slices,
    /// unless the device lacks the workgroup memory they take.
    pub fn on_fragments_with_deep(
        build: impl Fn(TensorBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Self> {
        let deep = unless_too_large(build(TensorBlocking {
            depth: 64,
            block: 128,
            invocations: 256,
        }))?;
        Ok(Blocked {
            deep,
            ..Blocked::on_fragments(build)?
        })
    }

    /// Both blockings of a tensor-core pass over a staged window tap by tap
    /// ([`WindowBlocking`]): 128 and 64 result channels by 128 positions, each in workgroups
    /// of 512 invocations where the device has them (on an H100 5-10% faster than 256 for
    /// every ResNet layer), otherwise 256. On a device with the workgroup memory of the small
    /// blocking only, it serves as the large; `None` on a device without that either (the
    /// passes then run by taps).
    pub fn on_windows(
        build: impl Fn(WindowBlocking) -> tessera::Result<K>,
    ) -> tessera::Result<Option<Self>>
    where
        K: Clone,
    {
        let blocks = |block| match build(WindowBlocking::tap_by_tap(block, 512)) {
            Err(tessera::Error::LimitExceeded { .. }) => {
                build(WindowBlocking::tap_by_tap(block, 256))
            }
            built => built,
        };
        let small = match blocks(64) {
            Err(tessera::Error::LimitExceeded { .. }) => return Ok(None),
            built => built?,
        };
        let large = match blocks(128) {
            Err(tessera::Error::LimitExceeded { .. }) => small.clone(),
            built => built?,
        };
        Ok(Some(Blocked {
            large,
            small,
            deep: None,
            many: None,
        }))
    }

    /// What `f` makes of each blocking's kernel (e.g. its constants), in a [`Blocked`].
    pub fn each<L>(&self, f: impl Fn(&K) -> L) -> Blocked<L> {
        Blocked {
            large: f(&self.large),
            small: f(&self.small),
            deep: self.deep.as_ref().map(&f),
            many: self.many.as_ref().map(&f),
        }
    }

    /// The instance `pick` names (the large one for the deep or many-invocation blocking
    /// where there is none).
    pub fn get(&self, pick: Pick) -> &K {
        match pick {
            Pick::Large => &self.large,
            Pick::Small => &self.small,
            Pick::Deep => self.deep.as_ref().unwrap_or(&self.large),
            Pick::Many => self.many.as_ref().unwrap_or(&self.large),
        }
    }
}

impl<K: tessera::Prepare> tessera::Prepare for Blocked<K> {
    fn prepare(&self, rt: &tessera::Runtime) -> tessera::Result<()> {
        (&self.large, &self.small, &self.deep, &self.many).prepare(rt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_blockings_the_host_names_are_declared() {
        let named = [
            WindowBlocking::tap_by_tap(128, 256),
            WindowBlocking::tap_by_tap(128, 512),
            WindowBlocking::tap_by_tap(64, 256),
            WindowBlocking::tap_by_tap(64, 512),
            WindowBlocking::ALL_TAPS_AT_ONCE,
        ];
        for blocking in named {
            assert!(WindowBlocking::ALL.contains(&blocking), "{blocking:?}");
        }
        assert_eq!(WindowBlocking::ALL.len(), named.len());
    }
}
