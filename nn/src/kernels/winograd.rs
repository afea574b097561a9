//! The Winograd filter gradient's constants (F(2x2, 3x3): `TILE`, `PATCH`, `POINTS`) and its
//! transforms of input, gradient and filter tiles.

#[tessera::device]
pub mod winograd {
    #[device]
    use crate::kernels::libraries::{activation, fragments, params, staging};

    /// The output pixels along each edge of a tile of Winograd's F(3x3, 4x4).
    pub const TILE: u32 = 4;

    /// The input pixels along each edge of the patch a tile sees, and of a transformed tile.
    pub const PATCH: u32 = TILE + 2;

    /// The points of a transformed tile.
    pub const POINTS: u32 = PATCH * PATCH;

    /// The tiles of `TILE` x `TILE` output pixels of a Winograd filter gradient, as (rows,
    /// columns).
    fn winograd_grid(p: &ConvParams) -> Vec2<u32> {
        vec2(ceil_div(p.out_h, TILE), ceil_div(p.out_w, TILE))
    }

    /// `Bᵀ v` for a column `v` of a patch of `x` (and, applied to rows, `v B`).
    fn winograd_input(v: &[f32; PATCH]) -> [f32; PATCH] {
        [
            4.0 * v[0] - 5.0 * v[2] + v[4],
            -4.0 * (v[1] + v[2]) + v[3] + v[4],
            4.0 * (v[1] - v[2]) - v[3] + v[4],
            2.0 * (v[3] - v[1]) - v[2] + v[4],
            2.0 * (v[1] - v[3]) - v[2] + v[4],
            4.0 * v[1] - 5.0 * v[3] + v[5],
        ]
    }

    /// `A v` for a column `v` of a tile of `grad_pre` (and, applied to rows, `v Aᵀ`).
    fn winograd_gradient(v: &[f32; TILE]) -> [f32; PATCH] {
        let (even, odd) = (v[0] + v[2], v[1] + v[3]);
        let (even2, odd2) = (v[0] + 4.0 * v[2], 2.0 * v[1] + 8.0 * v[3]);
        [
            v[0],
            even + odd,
            even - odd,
            even2 + odd2,
            even2 - odd2,
            v[3],
        ]
    }

    /// `Gᵀ v` for a column `v` of summed products (and, applied to rows, `v G`).
    fn winograd_filter_taps(v: &[f32; PATCH]) -> [f32; 3] {
        let (sum12, sum34) = (v[1] + v[2], v[3] + v[4]);
        [
            0.25 * v[0] - sum12 / 6.0 + sum34 / 24.0,
            (v[2] - v[1]) / 6.0 + (v[3] - v[4]) / 12.0,
            (sum34 - sum12) / 6.0 + v[5],
        ]
    }

    /// `Bᵀ d B` of the `PATCH` x `PATCH` patch `d` (row-major), by columns then rows.
    fn winograd_input_tile(d: &[f32; POINTS]) -> [f32; POINTS] {
        let mut columns = [0.0f32; POINTS];
        #[unroll]
        for c in 0..PATCH {
            let mut column = [0.0f32; PATCH];
            #[unroll]
            for r in 0..PATCH {
                column[r] = d[r * PATCH + c];
            }
            let column = winograd_input(&column);
            #[unroll]
            for r in 0..PATCH {
                columns[r * PATCH + c] = column[r];
            }
        }
        let mut tile = [0.0f32; POINTS];
        #[unroll]
        for r in 0..PATCH {
            let mut row = [0.0f32; PATCH];
            #[unroll]
            for c in 0..PATCH {
                row[c] = columns[r * PATCH + c];
            }
            let row = winograd_input(&row);
            #[unroll]
            for c in 0..PATCH {
                tile[r * PATCH + c] = row[c];
            }
        }
        tile
    }

    /// Writes the transformed tile `values` to its points of `tiles`
    /// (`[POINTS][channels][count]`), at `channel` and tile `tile`.
    fn put_tile(
        tiles: &mut [f32],
        values: &[f32; POINTS],
        channels: u32,
        count: u32,
        channel: u32,
        tile: u32,
    ) {
        #[unroll]
        for point in 0..POINTS {
            tiles[(point * channels + channel) * count + tile] = values[point];
        }
    }
}
