//! The filter gradient by Winograd's F(3x3, 4x4), for 3 x 3 filters of stride 1.

use super::filter_gradient::{WeightBuffers, WeightPass};
use super::{exact, kernels, plan, Convolution};
use crate::split::MIN_SLICE;
use crate::tune::Tile;
use tessera::{Batch, Result, Runtime};

impl Convolution {
    /// The filter gradient by Winograd's F(3x3, 4x4), its products in `tile`, sliced as `p`
    /// says.
    pub(super) fn weight_winograd(
        &self,
        batch: &mut Batch<'_>,
        pass: WeightPass,
        tile: Tile,
        p: kernels::ConvParams,
        io: WeightBuffers<'_>,
    ) -> Result<()> {
        let family = self.grad_weight_winograd.get(tile.pick());
        let tiles = plan::winograd_tiles(&p);
        let points = kernels::POINTS as usize;
        let pairs = p.out_channels as usize * p.in_channels as usize;
        let rt = batch.runtime();
        let [input_tiles, gradient_tiles, products] = &self.winograd;
        let (mut input_tiles, mut gradient_tiles) = (input_tiles.lock(), gradient_tiles.lock());
        let mut products = products.lock();
        let mut args = kernels::ConvGradWeightWinogradArgs {
            p: &p,
            x: io.x,
            grad_pre: io.grad_pre,
            input_tiles: input_tiles.at_least(rt, points * p.in_channels as usize * tiles)?,
            gradient_tiles: gradient_tiles
                .at_least(rt, points * p.out_channels as usize * tiles)?,
            products: products.at_least(rt, p.splits as usize * points * pairs)?,
            grad_w: io.grad_w,
        };
        match pass {
            WeightPass::Check => family.check_lengths(&mut args),
            WeightPass::Record => family.record(batch, args),
        }
    }
}

/// Winograd's filter gradient in both blockings of its products.
pub(super) fn winograd_family(
    rt: &Runtime,
) -> Result<kernels::Blocked<kernels::ConvGradWeightWinograd>> {
    // SAFETY (each): every index is guarded (see "Bounds" in `kernels`).
    let input_tiles = unsafe { kernels::WinogradInputTiles::new_unchecked(rt) }?;
    let gradient_tiles = unsafe { kernels::WinogradGradientTiles::new_unchecked(rt) }?;
    let filter = unsafe { kernels::WinogradFilter::new_unchecked(rt) }?;
    kernels::Blocked::new(|b| {
        Ok(kernels::ConvGradWeightWinograd::from_members(
            input_tiles.clone(),
            gradient_tiles.clone(),
            // SAFETY: every index is guarded (see "Bounds" in `kernels`).
            unsafe { kernels::WinogradMultiply::with_constants_unchecked(rt, b) }?,
            filter.clone(),
        ))
    })
}

/// Whether the filter gradient of `p` may run by Winograd's F(3x3, 4x4): a 3 x 3 filter of
/// stride 1 and dilation 1, whose transformed tiles and products fit `u32` indices and one
/// binding of `rt`'s device.
pub(super) fn by_winograd(p: &kernels::ConvParams, rt: &Runtime) -> bool {
    // The window, stride and dilation.
    if exact(p) != [3, 3, 1, 1, 1, 1] {
        return false;
    }
    let tiles = plan::winograd_tiles(p) as u64;
    let points = u64::from(kernels::POINTS);
    let channels = u64::from(p.out_channels.max(p.in_channels));
    let pairs = u64::from(p.out_channels) * u64::from(p.in_channels);
    // `Split` cuts no slice shorter than `MIN_SLICE` tiles.
    let most_slices = tiles.div_ceil(MIN_SLICE).max(1);
    let largest = (points * channels * tiles).max(points * pairs * most_slices);
    let limits = &rt.info().limits;
    let binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    largest <= u64::from(u32::MAX) && largest * 4 <= binding
}
