//! The kernels of the row operations ([`crate::Softmax`], [`crate::RmsNorm`],
//! [`crate::LayerNorm`]), a kernels module of their own (`row_ops`).
//!
//! Each row kernel runs a workgroup of `GROUP` invocations per row and keeps
//! the row in registers (`tessera::std::rows`): invocation `local` holds elements `local`,
//! `local + GROUP`, ... of it, `PER` of them, so a row of up to `GROUP * PER` elements of `T`
//! is read once and written once. The instances of [`Segment`](row_ops::Segment) are the
//! pairs of `GROUP` and `PER` the host picks from (the smallest that holds the row). A row
//! longer than the largest ([`row_ops::MAX_WIDTH`]) is taken a segment of the largest at a
//! time, read twice (three times by the norms' backward); a row one segment holds keeps a
//! path without those loops, which cost short rows up to 22% on an H200. The reductions
//! across the workgroup are trees in workgroup memory (`tessera::std::reduce`,
//! `tessera::std::softmax`), so the kernels need no optional device feature (but `SHADER_F16`
//! for the `f16` instances).
//!
//! Every kernel is written once over `types(T = [f32, Vec4<f32>, f16, Vec4<f16>])` (the loss
//! over the `f32` two): the host binds the `Vec4` instance (buffers of scalars viewed as
//! `[E; 4]`) when the row's length is a multiple of 4, the scalar one otherwise. Rows are held
//! and summed in `f32` (`T::F32`, loaded and stored by `row_load_f32` and `row_store_f32`),
//! whatever `T` stores; the per-row statistics and the parameter gradients' partial sums are
//! `f32` buffers.
//!
//! The parameter gradients of the norms (`grad_scale`, `grad_bias`) are sums over the rows of
//! each column: a workgroup per [`COLUMNS`](row_ops::COLUMNS) columns (elements of `T`) and
//! chunk of rows ([`RowParams::chunk_rows`](row_ops::RowParams)), its
//! [`ROW_LANES`](row_ops::ROW_LANES) invocations summing every `ROW_LANES`-th row of each and a
//! tree adding up their sums into a row of sums per chunk, then a pass adding up the chunks:
//! no atomics, the same result whatever the timing, and enough workgroups to fill the GPU
//! when the columns are few.

#[tessera::kernels]
pub mod row_ops {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::rows;
    #[device]
    use tessera::std::softmax;

    /// The columns (elements of `T`) a column kernel's workgroup sums: its first dimension.
    pub const COLUMNS: u32 = 32;

    /// The invocations summing each column of a column kernel's workgroup, every
    /// `ROW_LANES`-th row each from their own first: its second dimension.
    pub const ROW_LANES: u32 = 8;

    /// The longest row, in elements of `T`, the row kernels hold: `GROUP * PER` of the
    /// largest [`Segment`].
    pub const MAX_WIDTH: u32 = 256 * 16;

    /// How a row kernel holds a row: `GROUP` invocations in its workgroup (one workgroup per
    /// row), `PER` elements of the row in each one's registers, so rows of up to `GROUP * PER`
    /// elements of `T`. Rows take the smallest workgroup that can hold them, each invocation
    /// holding several elements: a smaller workgroup's tree reductions take fewer steps. On
    /// an H200 (`rows_bench`, 2026-11-29): rows of 1024 `Vec4<f16>` ran 9-31% faster in
    /// workgroups of 128 holding 8 than of 256 holding 4 (`Vec4<f32>` within 1%); rows of 250
    /// `Vec4<f16>` 16-24% faster in workgroups of 64 holding 4 than of 128 holding 2 (`Vec4<f32>`
    /// 2% slower at 16384 rows, up to 14% faster at 4096 x 768); and earlier, rows of 250
    /// `Vec4`s ran at 2.6 TB/s in workgroups of 256 holding one each, 3.9 in workgroups of 128
    /// holding two (the root crate's `std_rows` example).
    #[constants(zip(GROUP = [64, 128, 256], PER = [4, 8, 16]))]
    pub struct Segment;

    /// The shape of a row operation.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct RowParams {
        /// Rows: one workgroup each.
        pub rows: u32,
        /// Scalars per row.
        pub cols: u32,
        /// The norms' `eps`, added to the variance (unread by softmax).
        pub eps: f32,
        /// The rows each workgroup of a parameter-gradient pass sums (the last chunk may be
        /// short).
        pub chunk_rows: u32,
        /// The chunks of rows: `ceil(rows / chunk_rows)`.
        pub chunks: u32,
    }

    /// `y = softmax(x)` along each row, the online state merged across the workgroup, over
    /// rows of any length (see `softmax_row`).
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn softmax_forward<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.rows * p.cols / T::LANES)] y: &mut [T],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / T::LANES);
        softmax_row(x, y, tile, row * width, width, local);
    }

    /// Writes `softmax(x[first..first + width])` to `y` from `first` on, and returns the row's
    /// online state (max, sum). The row is taken a segment of `GROUP * PER` elements at a
    /// time: read once where one segment holds it (the host picks the smallest that does),
    /// twice otherwise (the largest, looped), so rows of any length run. Every invocation of
    /// the workgroup calls it together (it holds barriers); `local` is its `local_index()`.
    fn softmax_row<T>(
        x: &[T],
        y: &mut [T],
        tile: &mut [Vec2<f32>; GROUP],
        first: u32,
        width: u32,
        local: u32,
    ) -> Vec2<f32> {
        let segment = GROUP * PER;
        let mut regs = [0.0 as T::F32; PER];
        let mut state = softmax_start();
        if width <= segment {
            // One segment, without the loops: they cost rows of 1000 `f32`s 4% on an H200,
            // rows of 768 13%.
            // Padding folds as `-f32::MAX`, which weighs nothing once a real value is in.
            row_load_f32(&mut regs, x, first, width, local, -f32::MAX as T::F32);
            #[unroll]
            for k in 0..PER {
                state = softmax_fold(state, regs[k]);
            }
            state = softmax_workgroup_tree(tile, local, state);
            #[unroll]
            for k in 0..PER {
                regs[k] = softmax_of(state, regs[k]);
            }
            row_store_f32(&regs, y, first, width, local);
            return state;
        }
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(
                &mut regs,
                x,
                first + start,
                count,
                local,
                -f32::MAX as T::F32,
            );
            #[unroll]
            for k in 0..PER {
                state = softmax_fold(state, regs[k]);
            }
        }
        state = softmax_workgroup_tree(tile, local, state);
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(&mut regs, x, first + start, count, local, 0.0 as T::F32);
            #[unroll]
            for k in 0..PER {
                regs[k] = softmax_of(state, regs[k]);
            }
            row_store_f32(&regs, y, first + start, count, local);
        }
        state
    }

    /// Per row of `logits` and its label: `probs = softmax(logits)` and `loss =
    /// logsumexp(logits) - logits[label]` (-1 for a label not below `p.cols`), over rows of
    /// any length (see `softmax_row`).
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>]))]
    pub fn cross_entropy<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] logits: &[T],
        #[len(p.rows)] labels: &[u32],
        #[len(p.rows * p.cols / T::LANES)] probs: &mut [T],
        #[len(p.rows)] loss: &mut [f32],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / T::LANES);
        let state = softmax_row(logits, probs, tile, row * width, width, local);
        let label = labels[row];
        if local == 0 {
            loss[row] = if label < p.cols {
                let at = row * p.cols + label;
                softmax_log_normalizer(state) - logits[at / T::LANES][at % T::LANES] as f32
            } else {
                -1.0
            };
        }
    }

    /// `grad_x = y * (grad_y - sum_c(grad_y * y))` along each row, from the forward's `y`,
    /// over rows of any length as `softmax_row` takes them.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn softmax_backward<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] y: &[T],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(p.rows * p.cols / T::LANES)] grad_x: &mut [T],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / T::LANES);
        let (segment, first) = (GROUP * PER, row * width);
        let mut probs = [0.0 as T::F32; PER];
        let mut grads = [0.0 as T::F32; PER];
        // Padding loads as 0 in both, so it adds nothing to the dot product.
        if width <= segment {
            // One segment, without the loops (see `softmax_row`).
            load_pair(&mut probs, &mut grads, y, grad_y, first, width, local);
            let mut dot = 0.0 as T::F32;
            #[unroll]
            for k in 0..PER {
                dot += probs[k] * grads[k];
            }
            let total = workgroup_sum_tree(tile, local, dot.element_sum());
            #[unroll]
            for k in 0..PER {
                grads[k] = probs[k] * (grads[k] - total as T::F32);
            }
            row_store_f32(&grads, grad_x, first, width, local);
            return;
        }
        let mut dot = 0.0 as T::F32;
        for start in (0..width).step_by(segment) {
            let (at, count) = (first + start, (width - start).min(segment));
            load_pair(&mut probs, &mut grads, y, grad_y, at, count, local);
            #[unroll]
            for k in 0..PER {
                dot += probs[k] * grads[k];
            }
        }
        let total = workgroup_sum_tree(tile, local, dot.element_sum());
        for start in (0..width).step_by(segment) {
            let (at, count) = (first + start, (width - start).min(segment));
            load_pair(&mut probs, &mut grads, y, grad_y, at, count, local);
            #[unroll]
            for k in 0..PER {
                grads[k] = probs[k] * (grads[k] - total as T::F32);
            }
            row_store_f32(&grads, grad_x, at, count, local);
        }
    }

    /// The `count` elements from `at` of `y` and of `grad_y` into `probs` and `grads`, as
    /// `row_load_f32` lays them out; padding loads as 0 in both.
    fn load_pair<T>(
        probs: &mut [T::F32; PER],
        grads: &mut [T::F32; PER],
        y: &[T],
        grad_y: &[T],
        at: u32,
        count: u32,
        local: u32,
    ) {
        row_load_f32(probs, y, at, count, local, 0.0 as T::F32);
        row_load_f32(grads, grad_y, at, count, local, 0.0 as T::F32);
    }

    /// LayerNorm's statistics of a row from each invocation's moments of it (`row_moments`,
    /// merged by `moments_merge`): `vec2(mean, rstd)`, `rstd = 1 / sqrt(var + eps)`, the
    /// moments merged across the workgroup in one tree. Every invocation of the workgroup
    /// calls it together (it holds barriers).
    fn layer_stats(
        p: &RowParams,
        own: Vec4<f32>,
        local: u32,
        tile: &mut [Vec4<f32>; GROUP],
    ) -> Vec2<f32> {
        let total = workgroup_moments_tree(tile, local, own);
        vec2(total.y, (total.z / p.cols as f32 + p.eps).sqrt().recip())
    }

    /// `regs[k] = (regs[k] - stats.x) * stats.y`: a row normalized by its `vec2(mean, rstd)`.
    fn normalize<E>(regs: &mut [E; PER], stats: Vec2<f32>) {
        #[unroll]
        for k in 0..PER {
            regs[k] = (regs[k] - stats.x as E) * stats.y as E;
        }
    }

    /// Multiplies `regs` (the `count` elements of a row from column `start` on, as `row_load`
    /// lays them out) by `factors[column]`; padding becomes 0.
    fn scale_row<T>(regs: &mut [T::F32; PER], factors: &[T], start: u32, count: u32, local: u32) {
        let mut column = [0.0 as T::F32; PER];
        row_load_f32(&mut column, factors, start, count, local, 0.0 as T::F32);
        #[unroll]
        for k in 0..PER {
            regs[k] *= column[k];
        }
    }

    /// RMSNorm: `y = x * rstd * scale`, `rstd = 1 / sqrt(mean(x^2) + eps)` saved per row.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn rms_norm_forward<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.rows * p.cols / T::LANES)] y: &mut [T],
        #[len(p.rows)] rstd: &mut [f32],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        rms_norm_row(p, x, scale, y, rstd, tile, workgroup_id().x, local_index());
    }

    /// RMSNorm after a residual add: `sum = x + residual`, then `y` and `rstd` of `sum` as
    /// `rms_norm_forward` writes them.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn rms_norm_residual_forward<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.rows * p.cols / T::LANES)] residual: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.rows * p.cols / T::LANES)] sum: &mut [T],
        #[len(p.rows * p.cols / T::LANES)] y: &mut [T],
        #[len(p.rows)] rstd: &mut [f32],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        add_row(p, x, residual, sum, row, local);
        rms_norm_row(p, sum, scale, y, rstd, tile, row, local);
    }

    /// `sum = x + residual` along row `row`, a segment at a time, by the invocation of
    /// `local_index()` `local`. Each invocation writes the elements it will read back as the
    /// norm's input (`row_load_f32` places them alike), so no barrier is needed, and the norm
    /// reads the sum as stored (rounded, over `f16`), as its backward will.
    fn add_row<T>(p: &RowParams, x: &[T], residual: &[T], sum: &mut [T], row: u32, local: u32) {
        let width = p.cols / T::LANES;
        let (segment, first) = (GROUP * PER, row * width);
        let mut regs = [0.0 as T::F32; PER];
        let mut other = [0.0 as T::F32; PER];
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(&mut regs, x, first + start, count, local, 0.0 as T::F32);
            row_load_f32(
                &mut other,
                residual,
                first + start,
                count,
                local,
                0.0 as T::F32,
            );
            #[unroll]
            for k in 0..PER {
                regs[k] += other[k];
            }
            row_store_f32(&regs, sum, first + start, count, local);
        }
    }

    /// RMSNorm of row `row` of `x` into `y`, its `rstd` saved; `local` is the invocation's
    /// `local_index()`, and every invocation of the workgroup calls it together.
    fn rms_norm_row<T>(
        p: &RowParams,
        x: &[T],
        scale: &[T],
        y: &mut [T],
        rstd: &mut [f32],
        tile: &mut [f32; GROUP],
        row: u32,
        local: u32,
    ) {
        let width = p.cols / T::LANES;
        let (segment, first) = (GROUP * PER, row * width);
        let mut regs = [0.0 as T::F32; PER];
        if width <= segment {
            // One segment, without the loops: they cost f16 rows of 4096 up to 22% on an H200.
            row_load_f32(&mut regs, x, first, width, local, 0.0 as T::F32);
            let total = workgroup_sum_tree(tile, local, row_sum_of_squares(&regs, width, local));
            let stats = vec2(0.0, (total / p.cols as f32 + p.eps).sqrt().recip());
            normalize(&mut regs, stats);
            scale_row(&mut regs, scale, 0, width, local);
            row_store_f32(&regs, y, first, width, local);
            if local == 0 {
                rstd[row] = stats.y;
            }
            return;
        }
        let mut squares = 0.0;
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(&mut regs, x, first + start, count, local, 0.0 as T::F32);
            squares += row_sum_of_squares(&regs, count, local);
        }
        let total = workgroup_sum_tree(tile, local, squares);
        let stats = vec2(0.0, (total / p.cols as f32 + p.eps).sqrt().recip());
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(&mut regs, x, first + start, count, local, 0.0 as T::F32);
            normalize(&mut regs, stats);
            scale_row(&mut regs, scale, start, count, local);
            row_store_f32(&regs, y, first + start, count, local);
        }
        if local == 0 {
            rstd[row] = stats.y;
        }
    }

    /// LayerNorm: `y = (x - mean) * rstd * scale + bias`, `rstd = 1 / sqrt(var(x) + eps)`;
    /// `mean` and `rstd` saved per row.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn layer_norm_forward<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.cols / T::LANES)] bias: &[T],
        #[len(p.rows * p.cols / T::LANES)] y: &mut [T],
        #[len(p.rows)] mean: &mut [f32],
        #[len(p.rows)] rstd: &mut [f32],
        #[workgroup] tile: &mut [Vec4<f32>; GROUP],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        layer_norm_row(p, x, scale, bias, y, mean, rstd, tile, row, local);
    }

    /// LayerNorm after a residual add: `sum = x + residual`, then `y`, `mean` and `rstd` of
    /// `sum` as `layer_norm_forward` writes them.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn layer_norm_residual_forward<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.rows * p.cols / T::LANES)] residual: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.cols / T::LANES)] bias: &[T],
        #[len(p.rows * p.cols / T::LANES)] sum: &mut [T],
        #[len(p.rows * p.cols / T::LANES)] y: &mut [T],
        #[len(p.rows)] mean: &mut [f32],
        #[len(p.rows)] rstd: &mut [f32],
        #[workgroup] tile: &mut [Vec4<f32>; GROUP],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        add_row(p, x, residual, sum, row, local);
        layer_norm_row(p, sum, scale, bias, y, mean, rstd, tile, row, local);
    }

    /// LayerNorm of row `row` of `x` into `y`, its `mean` and `rstd` saved; `local` is the
    /// invocation's `local_index()`, and every invocation of the workgroup calls it together.
    fn layer_norm_row<T>(
        p: &RowParams,
        x: &[T],
        scale: &[T],
        bias: &[T],
        y: &mut [T],
        mean: &mut [f32],
        rstd: &mut [f32],
        tile: &mut [Vec4<f32>; GROUP],
        row: u32,
        local: u32,
    ) {
        let width = p.cols / T::LANES;
        let (segment, first) = (GROUP * PER, row * width);
        let mut regs = [0.0 as T::F32; PER];
        let mut shift = [0.0 as T::F32; PER];
        if width <= segment {
            // One segment, without the loops (see `rms_norm_forward`).
            row_load_f32(&mut regs, x, first, width, local, 0.0 as T::F32);
            let stats = layer_stats(p, row_moments(&regs, width, local), local, tile);
            normalize(&mut regs, stats);
            scale_row(&mut regs, scale, 0, width, local);
            row_load_f32(&mut shift, bias, 0, width, local, 0.0 as T::F32);
            #[unroll]
            for k in 0..PER {
                regs[k] += shift[k];
            }
            row_store_f32(&regs, y, first, width, local);
            if local == 0 {
                mean[row] = stats.x;
                rstd[row] = stats.y;
            }
            return;
        }
        let mut moments = vec4(0.0f32, 0.0, 0.0, 0.0);
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(&mut regs, x, first + start, count, local, 0.0 as T::F32);
            moments = moments_merge(moments, row_moments(&regs, count, local));
        }
        let stats = layer_stats(p, moments, local, tile);
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            row_load_f32(&mut regs, x, first + start, count, local, 0.0 as T::F32);
            normalize(&mut regs, stats);
            scale_row(&mut regs, scale, start, count, local);
            row_load_f32(&mut shift, bias, start, count, local, 0.0 as T::F32);
            #[unroll]
            for k in 0..PER {
                regs[k] += shift[k];
            }
            row_store_f32(&regs, y, first + start, count, local);
        }
        if local == 0 {
            mean[row] = stats.x;
            rstd[row] = stats.y;
        }
    }

    /// The input gradient of a norm along row `row`, from its `stats = vec2(mean, rstd)`:
    /// with `xhat = (x - mean) * rstd` and `g = grad_y * scale`,
    /// `grad_x = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat))`, the `mean_c(g)` term only
    /// when `centered` (LayerNorm; RMSNorm's mean is not subtracted, so it has none); added
    /// to what `grad_x` holds when `accumulate`, written over it otherwise.
    fn norm_grad_row<T>(
        p: &RowParams,
        x: &[T],
        scale: &[T],
        grad_y: &[T],
        grad_x: &mut [T],
        tile: &mut [Vec2<f32>; GROUP],
        row: u32,
        local: u32,
        stats: Vec2<f32>,
        centered: bool,
        accumulate: bool,
    ) {
        let width = p.cols / T::LANES;
        let (segment, first) = (GROUP * PER, row * width);
        let mut xhat = [0.0 as T::F32; PER];
        let mut grads = [0.0 as T::F32; PER];
        if width <= segment {
            // One segment, without the loops: they cost f16 rows of 4096 21% on an H200.
            let at = vec2(first, width);
            let own = grad_segment(&mut xhat, &mut grads, x, scale, grad_y, at, 0, local, stats);
            let slopes = grad_slopes(p, workgroup_sum_tree(tile, local, own), centered);
            grad_finish(&mut grads, &xhat, slopes, stats);
            store_grads(&mut grads, grad_x, vec2(first, width), local, accumulate);
            return;
        }
        let mut own = vec2(0.0f32, 0.0);
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            let at = vec2(first + start, count);
            own += grad_segment(
                &mut xhat, &mut grads, x, scale, grad_y, at, start, local, stats,
            );
        }
        let slopes = grad_slopes(p, workgroup_sum_tree(tile, local, own), centered);
        for start in (0..width).step_by(segment) {
            let count = (width - start).min(segment);
            let at = vec2(first + start, count);
            grad_segment(
                &mut xhat, &mut grads, x, scale, grad_y, at, start, local, stats,
            );
            grad_finish(&mut grads, &xhat, slopes, stats);
            let at = vec2(first + start, count);
            store_grads(&mut grads, grad_x, at, local, accumulate);
        }
    }

    /// Stores the segment `at = vec2(index, count)` of an input gradient, added to what
    /// `grad_x` holds there when `accumulate`.
    fn store_grads<T>(
        grads: &mut [T::F32; PER],
        grad_x: &mut [T],
        at: Vec2<u32>,
        local: u32,
        accumulate: bool,
    ) {
        if accumulate {
            let mut held = [0.0 as T::F32; PER];
            row_load_f32(&mut held, grad_x, at.x, at.y, local, 0.0 as T::F32);
            #[unroll]
            for k in 0..PER {
                grads[k] += held[k];
            }
        }
        row_store_f32(grads, grad_x, at.x, at.y, local);
    }

    /// `vec2(mean_c(g), mean_c(g * xhat))` from the row's sums `vec2(sum(g), sum(g * xhat))`;
    /// the first 0 unless `centered`.
    fn grad_slopes(p: &RowParams, total: Vec2<f32>, centered: bool) -> Vec2<f32> {
        let shift = if centered {
            total.x / p.cols as f32
        } else {
            0.0
        };
        vec2(shift, total.y / p.cols as f32)
    }

    /// `grads = (grads - slopes.x - xhat * slopes.y) * rstd`: the input gradient of a segment.
    fn grad_finish<E>(grads: &mut [E; PER], xhat: &[E; PER], slopes: Vec2<f32>, stats: Vec2<f32>) {
        #[unroll]
        for k in 0..PER {
            grads[k] = (grads[k] - slopes.x as E - xhat[k] * slopes.y as E) * stats.y as E;
        }
    }

    /// Loads the segment of `at = vec2(index, count)` (`count` elements of the row from
    /// `index` in the matrices, column `start` in `scale`): `xhat = (x - mean) * rstd` and
    /// `grads = grad_y * scale`, and returns the invocation's share of `vec2(sum(grads),
    /// sum(grads * xhat))`. Padding loads as 0 in `grad_y` and `scale`, so it adds nothing.
    fn grad_segment<T>(
        xhat: &mut [T::F32; PER],
        grads: &mut [T::F32; PER],
        x: &[T],
        scale: &[T],
        grad_y: &[T],
        at: Vec2<u32>,
        start: u32,
        local: u32,
        stats: Vec2<f32>,
    ) -> Vec2<f32> {
        row_load_f32(xhat, x, at.x, at.y, local, 0.0 as T::F32);
        row_load_f32(grads, grad_y, at.x, at.y, local, 0.0 as T::F32);
        scale_row(grads, scale, start, at.y, local);
        normalize(xhat, stats);
        let mut own = vec2(0.0f32, 0.0);
        #[unroll]
        for k in 0..PER {
            own += vec2(grads[k].element_sum(), (grads[k] * xhat[k]).element_sum());
        }
        own
    }

    /// RMSNorm's input gradient, from the forward's `rstd`.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn rms_norm_grad_x<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.rows)] rstd: &[f32],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(p.rows * p.cols / T::LANES)] grad_x: &mut [T],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let row = workgroup_id().x;
        let stats = vec2(0.0, rstd[row]);
        norm_grad_row(
            p,
            x,
            scale,
            grad_y,
            grad_x,
            tile,
            row,
            local_index(),
            stats,
            false,
            false,
        );
    }

    /// RMSNorm's input gradient after a residual add (`rms_norm_residual_forward`), added to
    /// `grad_sum`, which holds the gradient the sum received along the residual path.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn rms_norm_grad_sum<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] sum: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.rows)] rstd: &[f32],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(p.rows * p.cols / T::LANES)] grad_sum: &mut [T],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let row = workgroup_id().x;
        let stats = vec2(0.0, rstd[row]);
        norm_grad_row(
            p,
            sum,
            scale,
            grad_y,
            grad_sum,
            tile,
            row,
            local_index(),
            stats,
            false,
            true,
        );
    }

    /// LayerNorm's input gradient, from the forward's `mean` and `rstd`.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn layer_norm_grad_x<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.rows)] mean: &[f32],
        #[len(p.rows)] rstd: &[f32],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(p.rows * p.cols / T::LANES)] grad_x: &mut [T],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let row = workgroup_id().x;
        let stats = vec2(mean[row], rstd[row]);
        norm_grad_row(
            p,
            x,
            scale,
            grad_y,
            grad_x,
            tile,
            row,
            local_index(),
            stats,
            true,
            false,
        );
    }

    /// LayerNorm's input gradient after a residual add (`layer_norm_residual_forward`),
    /// added to `grad_sum`, which holds the gradient the sum received along the residual path.
    #[kernel(workgroup = [GROUP], constants = Segment, grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn layer_norm_grad_sum<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] sum: &[T],
        #[len(p.cols / T::LANES)] scale: &[T],
        #[len(p.rows)] mean: &[f32],
        #[len(p.rows)] rstd: &[f32],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(p.rows * p.cols / T::LANES)] grad_sum: &mut [T],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let row = workgroup_id().x;
        let stats = vec2(mean[row], rstd[row]);
        norm_grad_row(
            p,
            sum,
            scale,
            grad_y,
            grad_sum,
            tile,
            row,
            local_index(),
            stats,
            true,
            true,
        );
    }

    /// `grad_y[i] * (x[i] - mean) * rstd`: one row's term of a column of `grad_scale`.
    fn scale_term<T>(x: &[T], grad_y: &[T], i: u32, mean: f32, rstd: f32) -> T::F32 {
        grad_y[i] as T::F32 * (x[i] as T::F32 - mean as T::F32) * rstd as T::F32
    }

    /// The sum of `value` over the `ROW_LANES` invocations of column `column` of a column
    /// kernel's workgroup (`lane` is the invocation's place among them), by halving `tile`.
    /// Every invocation of the workgroup calls it together; the array may be lent again at once.
    fn column_sum<E>(tile: &mut [E; COLUMNS * ROW_LANES], value: E, column: u32, lane: u32) -> E {
        tile[lane * COLUMNS + column] = value;
        workgroup_barrier();
        let mut half = ROW_LANES / 2;
        while half > 0 {
            if lane < half {
                tile[lane * COLUMNS + column] += tile[(lane + half) * COLUMNS + column];
            }
            workgroup_barrier();
            half /= 2;
        }
        let total = tile[column];
        workgroup_barrier();
        total
    }

    /// The rows of chunk `chunk` that invocation `lane` of a column kernel sums: every
    /// `ROW_LANES`-th from its own first.
    fn chunk_rows(p: &RowParams, chunk: u32, lane: u32) -> Vec2<u32> {
        let first = chunk * p.chunk_rows;
        vec2(first + lane, (first + p.chunk_rows).min(p.rows))
    }

    /// RMSNorm's `grad_scale[c] = sum_r grad_y[r, c] * x[r, c] * rstd[r]`, the sum over
    /// chunk `workgroup_id().y` of the rows: a workgroup per `COLUMNS` columns (elements of
    /// `T`) and chunk, `ROW_LANES` invocations summing each; `partial` holds a row of sums per
    /// chunk, which `sum_chunks` adds up.
    #[kernel(workgroup = [COLUMNS, ROW_LANES],
             grid = [ceil_div(p.cols / T::LANES, COLUMNS), p.chunks],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn rms_norm_grad_scale<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.rows)] rstd: &[f32],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(p.chunks * p.cols / T::LANES)] partial: &mut [T::F32],
        #[workgroup] tile: &mut [T::F32; COLUMNS * ROW_LANES],
    ) {
        let (column, lane, width) = (local_id().x, local_id().y, p.cols / T::LANES);
        let (c, chunk) = (workgroup_id().x * COLUMNS + column, workgroup_id().y);
        let mut acc = 0.0 as T::F32;
        if c < width {
            let rows = chunk_rows(p, chunk, lane);
            for r in (rows.x..rows.y).step_by(ROW_LANES) {
                acc += scale_term(x, grad_y, r * width + c, 0.0, rstd[r]);
            }
        }
        let total = column_sum(tile, acc, column, lane);
        if lane == 0 && c < width {
            partial[chunk * width + c] = total;
        }
    }

    /// LayerNorm's `grad_scale[c] = sum_r grad_y[r, c] * (x[r, c] - mean[r]) * rstd[r]` and
    /// `grad_bias[c] = sum_r grad_y[r, c]` over a chunk of the rows, as
    /// `rms_norm_grad_scale`: `partial` holds the chunks' `grad_scale` sums, then their
    /// `grad_bias` sums.
    #[kernel(workgroup = [COLUMNS, ROW_LANES],
             grid = [ceil_div(p.cols / T::LANES, COLUMNS), p.chunks],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn layer_norm_grad_params<T>(
        p: &RowParams,
        #[len(p.rows * p.cols / T::LANES)] x: &[T],
        #[len(p.rows)] mean: &[f32],
        #[len(p.rows)] rstd: &[f32],
        #[len(p.rows * p.cols / T::LANES)] grad_y: &[T],
        #[len(2 * p.chunks * p.cols / T::LANES)] partial: &mut [T::F32],
        #[workgroup] tile: &mut [T::F32; COLUMNS * ROW_LANES],
    ) {
        let (column, lane, width) = (local_id().x, local_id().y, p.cols / T::LANES);
        let (c, chunk) = (workgroup_id().x * COLUMNS + column, workgroup_id().y);
        let (mut scales, mut biases) = (0.0 as T::F32, 0.0 as T::F32);
        if c < width {
            let rows = chunk_rows(p, chunk, lane);
            for r in (rows.x..rows.y).step_by(ROW_LANES) {
                scales += scale_term(x, grad_y, r * width + c, mean[r], rstd[r]);
                biases += grad_y[r * width + c] as T::F32;
            }
        }
        let scale_total = column_sum(tile, scales, column, lane);
        let bias_total = column_sum(tile, biases, column, lane);
        if lane == 0 && c < width {
            partial[chunk * width + c] = scale_total;
            partial[(p.chunks + chunk) * width + c] = bias_total;
        }
    }

    /// The sum over the `p.chunks` rows of sums from `partial[base]` on of column `c`, by
    /// the `ROW_LANES` invocations of its place `column` in a column kernel's workgroup
    /// (`lane` is the invocation's place among them), every invocation receiving it. Every
    /// invocation of the workgroup calls it together.
    fn chunk_sum<E>(
        p: &RowParams,
        partial: &[E],
        base: u32,
        tile: &mut [E; COLUMNS * ROW_LANES],
        c: u32,
        column: u32,
        lane: u32,
    ) -> E {
        let width = p.cols / E::LANES;
        let mut acc = 0.0 as E;
        if c < width {
            for chunk in (lane..p.chunks).step_by(ROW_LANES) {
                acc += partial[base + chunk * width + c];
            }
        }
        column_sum(tile, acc, column, lane)
    }

    /// `grad_scale[c]`: the chunks' sums `rms_norm_grad_scale` left in `partial`, added up by
    /// a workgroup per `COLUMNS` columns.
    #[kernel(workgroup = [COLUMNS, ROW_LANES], grid = [ceil_div(p.cols / T::LANES, COLUMNS)],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn sum_chunks<T>(
        p: &RowParams,
        #[len(p.chunks * p.cols / T::LANES)] partial: &[T::F32],
        #[len(p.cols / T::LANES)] grad_scale: &mut [T],
        #[workgroup] tile: &mut [T::F32; COLUMNS * ROW_LANES],
    ) {
        let (column, lane) = (local_id().x, local_id().y);
        let c = workgroup_id().x * COLUMNS + column;
        let total = chunk_sum(p, partial, 0, tile, c, column, lane);
        if lane == 0 && c < p.cols / T::LANES {
            grad_scale[c] = total as T;
        }
    }

    /// `grad_scale[c]` and `grad_bias[c]`: the chunks' sums `layer_norm_grad_params` left in
    /// `partial`, added up as `sum_chunks` does.
    #[kernel(workgroup = [COLUMNS, ROW_LANES], grid = [ceil_div(p.cols / T::LANES, COLUMNS)],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn sum_chunk_pairs<T>(
        p: &RowParams,
        #[len(2 * p.chunks * p.cols / T::LANES)] partial: &[T::F32],
        #[len(p.cols / T::LANES)] grad_scale: &mut [T],
        #[len(p.cols / T::LANES)] grad_bias: &mut [T],
        #[workgroup] tile: &mut [T::F32; COLUMNS * ROW_LANES],
    ) {
        let (column, lane, width) = (local_id().x, local_id().y, p.cols / T::LANES);
        let c = workgroup_id().x * COLUMNS + column;
        let scales = chunk_sum(p, partial, 0, tile, c, column, lane);
        let biases = chunk_sum(p, partial, p.chunks * width, tile, c, column, lane);
        if lane == 0 && c < width {
            grad_scale[c] = scales as T;
            grad_bias[c] = biases as T;
        }
    }
}
