//! `WideTensorBlocking` (256 x 128 blocks of `WIDE_GROUP` invocations) and its own fetch and
//! staging, for `gemm_forward_fragments_wide`.

#[tessera::device]
pub mod wide {
    #[device]
    use crate::kernels::libraries::{activation, fragments, params, staging};

    /// Invocations of a workgroup of `WideTensorBlocking`.
    pub const WIDE_GROUP: u32 = 512;

    /// The output columns of a `WideTensorBlocking` block.
    pub const WIDE_COLS: u32 = 128;

    /// The tensor-core GEMM forward's blocking for large outputs: 256 x 128 blocks (`BLOCK`
    /// rows, `COLS` columns) of `WIDE_GROUP` invocations, sixteen subgroups in four rows of
    /// four, each with the same 4 x 2 fragments as `TensorBlocking`'s large blocks (so
    /// `multiply_fragments` serves both), staging 32-deep slices in the same layouts (`LOADS`
    /// and `B_LOADS` elements of the rows' and the columns' operand per invocation), 44.5 KiB
    /// a workgroup. A block reads 3/4 of the operand bytes per product that a 128 x 128 block
    /// does: on an H100 the forward ran 13-26% faster in them (4096^3: 168 -> 191 TFLOP/s),
    /// which suggests the 128 x 128 blocks were bound by L2 bandwidth (notes/performance.md).
    #[constants(
        DEPTH = [32],
        BLOCK = [256],
        COLS = WIDE_COLS,
        STRIDE = COLS + 8,
        A_STRIDE = DEPTH + 8,
        LOADS = DEPTH * BLOCK / WIDE_GROUP,
        B_LOADS = DEPTH * COLS / WIDE_GROUP,
        WARP_ROWS = 64,
        WARP_COLS = 32,
        FRAG_ROWS = WARP_ROWS / 16,
        FRAG_COLS = WARP_COLS / 16,
        FRAGS = FRAG_ROWS * FRAG_COLS,
        SPILL = WIDE_GROUP * 8,
        COLUMNS = DEPTH * STRIDE,
        MEMORY = 2 * (BLOCK * A_STRIDE + COLUMNS) + 4 * SPILL,
        OUTPUTS = 8 * FRAGS
    )]
    pub struct WideTensorBlocking;

    // The wide blocks' own fetch and staging: `staged_at` and `fetch` assume
    // square blocks of `GROUP` invocations. (The read-back, `unspill`, serves both.)

    /// `staged_at` of vectors for a wide block: the rows' operand `across`, the columns' along.
    fn wide_vector_at(across: bool, t: u32, v: u32) -> Vec2<u32> {
        if across {
            vec2(
                t % (DEPTH / 4) * 4,
                t / (DEPTH / 4) + v * (4 * WIDE_GROUP / DEPTH),
            )
        } else {
            vec2(
                t / (COLS / 4) + v * (4 * WIDE_GROUP / COLS),
                t % (COLS / 4) * 4,
            )
        }
    }

    /// `fetch` of vectors of the rows' operand `m` of `shape` (summed columns, rows), staged
    /// across: rows `first..`, summed columns `k0..`.
    fn wide_fetch_rows(
        m: &[Vec4<f32>],
        shape: Vec2<u32>,
        first: u32,
        k0: u32,
        t: u32,
    ) -> [Vec4<f32>; LOADS / 4] {
        let mut fetched = [vec4(0.0f32, 0.0, 0.0, 0.0); LOADS / 4];
        #[unroll]
        for v in 0..LOADS / 4 {
            let at = wide_vector_at(true, t, v);
            let (row, col) = (first + at.y, k0 + at.x);
            if row < shape.y && col < shape.x {
                fetched[v] = m[(row * shape.x + col) / 4];
            }
        }
        fetched
    }

    /// `fetch` of vectors of the columns' operand `m` of `shape` (columns, summed rows), staged
    /// along: summed rows `k0..`, columns `first..`.
    fn wide_fetch_columns(
        m: &[Vec4<f32>],
        shape: Vec2<u32>,
        first: u32,
        k0: u32,
        t: u32,
    ) -> [Vec4<f32>; B_LOADS / 4] {
        let mut fetched = [vec4(0.0f32, 0.0, 0.0, 0.0); B_LOADS / 4];
        #[unroll]
        for v in 0..B_LOADS / 4 {
            let at = wide_vector_at(false, t, v);
            let (row, col) = (k0 + at.x, first + at.y);
            if row < shape.y && col < shape.x {
                fetched[v] = m[(row * shape.x + col) / 4];
            }
        }
        fetched
    }

    /// `stage_in_halves` for a wide block's fetches.
    fn wide_stage(
        slice_a: &mut [f16; BLOCK * A_STRIDE],
        from_a: &[Vec4<f32>; LOADS / 4],
        slice_b: &mut [f16; COLUMNS],
        from_b: &[Vec4<f32>; B_LOADS / 4],
        t: u32,
    ) {
        #[unroll]
        for v in 0..LOADS / 4 {
            let at = wide_vector_at(true, t, v);
            #[unroll]
            for c in 0..4u32 {
                slice_a[at.y * A_STRIDE + at.x + c] = from_a[v][c] as f16;
            }
            if v < B_LOADS / 4 {
                let at = wide_vector_at(false, t, v);
                #[unroll]
                for c in 0..4u32 {
                    slice_b[at.x * STRIDE + at.y + c] = from_b[v][c] as f16;
                }
            }
        }
    }
}
