//! tessera's standard library (`tessera::std`) on a real adapter, against CPU references:
//! kernels importing each module, at every width (`f32` and `Vec4<f32>`), workgroups of 64
//! and 256, lengths that are and are not multiples of 4 and of the workgroup, and both the
//! subgroup and the workgroup-memory paths. The subgroup tests skip, saying so, on an adapter
//! without subgroups; the tree tests run everywhere.

mod common;

use common::{assert_close, rng, runtime, values, RngExt};
use tessera::{wgpu, GpuBuffer, Runtime};

#[tessera::kernels]
pub mod reductions {
    #[device]
    use tessera::std::reduce;

    /// Per invocation `i` of the grid: its subgroup's sum, maximum and minimum of `x`, then its
    /// workgroup's, at `out[6 * i + k]`; `sizes[i]` is its subgroup's size. Invocations past
    /// `x` pass each reduction's identity.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)],
             types(T = [f32, Vec4<f32>]), features(subgroups))]
    pub fn by_subgroups<T>(
        x: &[T],
        out: &mut [T],
        sizes: &mut [u32],
        #[workgroup] partials: &mut [T; GROUP / 4],
    ) {
        let i = global_id().x;
        let inside = i < x.len();
        let v = if inside { x[i] } else { 0.0 as T };
        let high = if inside { v } else { -f32::MAX as T };
        let low = if inside { v } else { f32::MAX as T };
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        out[6 * i] = subgroup_sum(v);
        out[6 * i + 1] = subgroup_maximum(high);
        out[6 * i + 2] = subgroup_minimum(low);
        out[6 * i + 3] = workgroup_sum(partials, v, lane, subgroup, size);
        out[6 * i + 4] = workgroup_maximum(partials, high, lane, subgroup, size);
        out[6 * i + 5] = workgroup_minimum(partials, low, lane, subgroup, size);
        sizes[i] = size;
    }

    /// Per invocation: its workgroup's sum, maximum and minimum of `x` through the trees, at
    /// `out[3 * i + k]`.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)],
             types(T = [f32, Vec4<f32>]))]
    pub fn by_trees<T>(x: &[T], out: &mut [T], #[workgroup] tile: &mut [T; GROUP]) {
        let i = global_id().x;
        let local = local_index();
        let inside = i < x.len();
        let v = if inside { x[i] } else { 0.0 as T };
        let high = if inside { v } else { -f32::MAX as T };
        let low = if inside { v } else { f32::MAX as T };
        out[3 * i] = workgroup_sum_tree(tile, local, v);
        out[3 * i + 1] = workgroup_maximum_tree(tile, local, high);
        out[3 * i + 2] = workgroup_minimum_tree(tile, local, low);
    }

    /// Per invocation, over `f16` values (or `Vec4<f16>`): its workgroup's sum and maximum
    /// through subgroups, then its sum and minimum through the trees, at `out[4 * i + k]`.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)],
             types(T = [f16, Vec4<f16>]), features(subgroups, f16))]
    pub fn halves<T>(
        x: &[T],
        out: &mut [T],
        #[workgroup] partials: &mut [T; GROUP / 4],
        #[workgroup] tile: &mut [T; GROUP],
    ) {
        let i = global_id().x;
        let inside = i < x.len();
        let v = if inside { x[i] } else { 0.0 as T };
        let high = if inside { v } else { -60000.0 as T };
        let low = if inside { v } else { 60000.0 as T };
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        out[4 * i] = workgroup_sum(partials, v, lane, subgroup, size);
        out[4 * i + 1] = workgroup_maximum(partials, high, lane, subgroup, size);
        out[4 * i + 2] = workgroup_sum_tree(tile, local_index(), v);
        out[4 * i + 3] = workgroup_minimum_tree(tile, local_index(), low);
    }

    /// Per invocation: its workgroup's largest `x` and that element's index, at
    /// `out[2 * i..]`, through subgroups.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)],
             features(subgroups))]
    pub fn argmax(
        x: &[f32],
        out: &mut [u32],
        #[workgroup] values: &mut [f32; GROUP / 4],
        #[workgroup] indices: &mut [u32; GROUP / 4],
    ) {
        let i = global_id().x;
        let v = if i < x.len() { x[i] } else { -f32::MAX };
        let at = if i < x.len() { i } else { 0xffffffffu32 };
        let best = workgroup_argmax(
            values,
            indices,
            v,
            at,
            subgroup_invocation_id(),
            subgroup_id(),
            subgroup_size(),
        );
        out[2 * i] = best.x;
        out[2 * i + 1] = best.y;
    }

    /// [`argmax`] through the tree.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)])]
    pub fn argmax_tree(
        x: &[f32],
        out: &mut [u32],
        #[workgroup] values: &mut [f32; GROUP],
        #[workgroup] indices: &mut [u32; GROUP],
    ) {
        let i = global_id().x;
        let v = if i < x.len() { x[i] } else { -f32::MAX };
        let at = if i < x.len() { i } else { 0xffffffffu32 };
        let best = workgroup_argmax_tree(values, indices, local_index(), v, at);
        out[2 * i] = best.x;
        out[2 * i + 1] = best.y;
    }
}

/// The runtime, if its adapter has subgroups; otherwise says that `test` skipped.
fn subgroup_runtime(test: &str) -> Option<Runtime> {
    let rt = runtime();
    if rt.info().features.contains(wgpu::Features::SUBGROUP) {
        Some(rt)
    } else {
        eprintln!(
            "{test}: skipped, the adapter `{}` has no subgroups",
            rt.info().name
        );
        None
    }
}

/// `v`'s scalars as a buffer of `T` (`f32`, or `[f32; 4]` for `Vec4<f32>`).
fn upload_as<T: bytemuck::Pod>(rt: &Runtime, v: &[f32]) -> GpuBuffer<T> {
    rt.upload(bytemuck::cast_slice::<f32, T>(v)).unwrap()
}

/// A buffer of `T` as its scalars.
fn read_scalars<T: bytemuck::Pod>(rt: &Runtime, b: &GpuBuffer<T>) -> Vec<f32> {
    bytemuck::cast_slice(&b.read(rt).unwrap()).to_vec()
}

/// The reductions the tests compare, over scalars `x` taken as elements of `lanes` scalars:
/// each the operation, its identity, and a CPU reference of it.
#[derive(Clone, Copy)]
enum Op {
    Sum,
    Max,
    Min,
}

impl Op {
    const ALL: [Op; 3] = [Op::Sum, Op::Max, Op::Min];

    fn identity(self) -> f32 {
        match self {
            Op::Sum => 0.0,
            Op::Max => -f32::MAX,
            Op::Min => f32::MAX,
        }
    }

    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Op::Sum => a + b,
            Op::Max => a.max(b),
            Op::Min => a.min(b),
        }
    }

    /// Lane by lane over elements `range` of `x` (`lanes` scalars an element), elements past
    /// the end of `x` counting as the identity, as the kernels pass it.
    fn over(self, x: &[f32], lanes: usize, range: std::ops::Range<usize>) -> Vec<f32> {
        (0..lanes)
            .map(|c| {
                range
                    .clone()
                    .map(|e| x.get(e * lanes + c).copied().unwrap_or(self.identity()))
                    .fold(self.identity(), |a, b| self.apply(a, b))
            })
            .collect()
    }
}

/// `by_subgroups` over `x` in workgroups of `group`: what it wrote and the subgroup sizes.
fn by_subgroups<T: reductions::BySubgroupsElement>(
    rt: &Runtime,
    group: u32,
    x: &[f32],
    lanes: usize,
) -> (Vec<f32>, Vec<u32>) {
    let constants = reductions::BySubgroupsConstants { group };
    let kernel = reductions::BySubgroups::<T>::with_constants(rt, constants).unwrap();
    let invocations = (x.len() / lanes).div_ceil(group as usize) * group as usize;
    let xs = upload_as::<T>(rt, x);
    let mut out = upload_as::<T>(rt, &vec![0.0; 6 * invocations * lanes]);
    let mut sizes = rt.zeros::<u32>(invocations).unwrap();
    let args = reductions::BySubgroupsArgs {
        x: &xs,
        out: &mut out,
        sizes: &mut sizes,
    };
    kernel.launch(rt, args).unwrap();
    (read_scalars(rt, &out), sizes.read(rt).unwrap())
}

/// Checks `by_subgroups` against the references at one width, for workgroups of 64 and 256,
/// over lengths that are not multiples of the workgroup.
fn check_by_subgroups<T: reductions::BySubgroupsElement>(rt: &Runtime, lanes: usize) {
    for group in [64usize, 256] {
        let n = 2 * group + 37; // elements of `T`; the last workgroup is partly past the end
        let x = values(&mut rng(group as u64 + lanes as u64), n * lanes);
        let (out, sizes) = by_subgroups::<T>(rt, group as u32, &x, lanes);
        for (i, &size) in sizes.iter().enumerate() {
            let size = size as usize;
            let subgroup = i - i % size..i - i % size + size;
            let workgroup = i - i % group..i - i % group + group;
            for (k, op) in Op::ALL.into_iter().enumerate() {
                let at = |k: usize| &out[(6 * i + k) * lanes..(6 * i + k + 1) * lanes];
                let context = format!("group {group}, lanes {lanes}, invocation {i}, result {k}");
                let want = op.over(&x, lanes, subgroup.clone());
                assert_close_in(at(k), &want, &context);
                let want = op.over(&x, lanes, workgroup.clone());
                assert_close_in(at(k + 3), &want, &context);
            }
        }
    }
}

/// [`assert_close`] for sums of up to 256 values in [-1, 1], naming the case on failure.
fn assert_close_in(got: &[f32], want: &[f32], context: &str) {
    let close = got
        .iter()
        .zip(want)
        .all(|(g, w)| approx::relative_eq!(g, w, epsilon = 1e-4, max_relative = 1e-4));
    assert!(close, "{context}: got {got:?}, want {want:?}");
}

#[test]
fn sums_maxima_and_minima_through_subgroups_match_the_reference() {
    let Some(rt) = subgroup_runtime("sums_maxima_and_minima_through_subgroups") else {
        return;
    };
    check_by_subgroups::<f32>(&rt, 1);
    check_by_subgroups::<[f32; 4]>(&rt, 4);
}

/// Checks `by_trees` as [`check_by_subgroups`] does `by_subgroups`.
fn check_by_trees<T: reductions::ByTreesElement>(rt: &Runtime, lanes: usize) {
    for group in [64usize, 256] {
        let n = 2 * group + 37;
        let x = values(&mut rng(group as u64 + lanes as u64), n * lanes);
        let constants = reductions::ByTreesConstants {
            group: group as u32,
        };
        let kernel = reductions::ByTrees::<T>::with_constants(rt, constants).unwrap();
        let invocations = n.div_ceil(group) * group;
        let xs = upload_as::<T>(rt, &x);
        let mut out = upload_as::<T>(rt, &vec![0.0; 3 * invocations * lanes]);
        let args = reductions::ByTreesArgs {
            x: &xs,
            out: &mut out,
        };
        kernel.launch(rt, args).unwrap();
        let out = read_scalars(rt, &out);
        for i in 0..invocations {
            let workgroup = i - i % group..i - i % group + group;
            for (k, op) in Op::ALL.into_iter().enumerate() {
                let got = &out[(3 * i + k) * lanes..(3 * i + k + 1) * lanes];
                let context = format!("group {group}, lanes {lanes}, invocation {i}, result {k}");
                assert_close_in(got, &op.over(&x, lanes, workgroup.clone()), &context);
            }
        }
    }
}

#[test]
fn sums_maxima_and_minima_through_trees_match_the_reference() {
    let rt = runtime();
    check_by_trees::<f32>(&rt, 1);
    check_by_trees::<[f32; 4]>(&rt, 4);
}

/// What `argmax` (or `argmax_tree`) wrote, per invocation: the value and the index.
fn argmax_results(rt: &Runtime, group: u32, x: &[f32], tree: bool) -> Vec<(f32, u32)> {
    let invocations = x.len().div_ceil(group as usize) * group as usize;
    let xs = rt.upload(x).unwrap();
    let mut out = rt.zeros::<u32>(2 * invocations).unwrap();
    if tree {
        let constants = reductions::ArgmaxTreeConstants { group };
        let kernel = reductions::ArgmaxTree::with_constants(rt, constants).unwrap();
        let args = reductions::ArgmaxTreeArgs {
            x: &xs,
            out: &mut out,
        };
        kernel.launch(rt, args).unwrap();
    } else {
        let constants = reductions::ArgmaxConstants { group };
        let kernel = reductions::Argmax::with_constants(rt, constants).unwrap();
        let args = reductions::ArgmaxArgs {
            x: &xs,
            out: &mut out,
        };
        kernel.launch(rt, args).unwrap();
    }
    let out = out.read(rt).unwrap();
    out.chunks(2)
        .map(|p| (f32::from_bits(p[0]), p[1]))
        .collect()
}

/// Checks argmax through subgroups or the tree: values with many ties (small integers), so
/// that the smallest index of equal maxima is what is compared.
fn check_argmax(rt: &Runtime, tree: bool) {
    for group in [64usize, 256] {
        let mut generator = rng(7 + group as u64);
        let n = 2 * group + 37;
        let x: Vec<f32> = (0..n)
            .map(|_| generator.random_range(0..12) as f32 - 6.0)
            .collect();
        let got = argmax_results(rt, group as u32, &x, tree);
        for (i, &(value, index)) in got.iter().enumerate() {
            let start = i - i % group;
            let end = (start + group).min(n);
            let mut best = start;
            for e in start..end {
                if x[e] > x[best] {
                    best = e;
                }
            }
            assert_eq!(
                (value, index),
                (x[best], best as u32),
                "group {group}, tree {tree}, invocation {i}"
            );
        }
    }
}

#[test]
fn argmax_through_subgroups_picks_the_first_largest() {
    if let Some(rt) = subgroup_runtime("argmax_through_subgroups") {
        check_argmax(&rt, false);
    }
}

#[test]
fn argmax_through_the_tree_picks_the_first_largest() {
    check_argmax(&runtime(), true);
}

#[tessera::kernels]
pub mod row_ops {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::rows;
    #[device]
    use tessera::std::softmax;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub rows: u32,
        /// Scalars a row: a multiple of `T::LANES`, at most `GROUP * PER * T::LANES`.
        pub cols: u32,
    }

    /// The softmax of each row of `x` into `y`, and its log-sum-exp into `lse`: a workgroup a
    /// row (looping over rows, the grid smaller than their number), the row in registers,
    /// the states merged through subgroups.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256], PER = 4), grid = [min(p.rows, 3)],
             types(T = [f32, Vec4<f32>]), features(subgroups))]
    pub fn softmax_rows<T>(
        p: &Shape,
        x: &[T],
        y: &mut [T],
        lse: &mut [f32],
        #[workgroup] partials: &mut [Vec2<f32>; GROUP / 4],
    ) {
        let width = p.cols / T::LANES;
        let local = local_index();
        for row in (workgroup_id().x..p.rows).step_by(num_workgroups().x) {
            let mut regs = [0.0 as T; PER];
            row_load(&mut regs, x, row * width, width, local, -f32::MAX as T);
            let mut state = softmax_start();
            #[unroll]
            for k in 0..PER {
                state = softmax_fold(state, regs[k]);
            }
            let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
            state = softmax_workgroup(partials, state, lane, subgroup, size);
            #[unroll]
            for k in 0..PER {
                regs[k] = softmax_of(state, regs[k]);
            }
            row_store(&regs, y, row * width, width, local);
            if local == 0 {
                lse[row] = softmax_log_normalizer(state);
            }
        }
    }

    /// [`softmax_rows`] without subgroups, each invocation's elements folded into two states
    /// and merged.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256], PER = 4), grid = [min(p.rows, 3)],
             types(T = [f32, Vec4<f32>]))]
    pub fn softmax_rows_tree<T>(
        p: &Shape,
        x: &[T],
        y: &mut [T],
        lse: &mut [f32],
        #[workgroup] tile: &mut [Vec2<f32>; GROUP],
    ) {
        let width = p.cols / T::LANES;
        let local = local_index();
        for row in (workgroup_id().x..p.rows).step_by(num_workgroups().x) {
            let mut regs = [0.0 as T; PER];
            row_load(&mut regs, x, row * width, width, local, -f32::MAX as T);
            let mut even = softmax_start();
            let mut odd = softmax_start();
            #[unroll]
            for k in 0..PER {
                if k % 2 == 0 {
                    even = softmax_fold(even, regs[k]);
                } else {
                    odd = softmax_fold(odd, regs[k]);
                }
            }
            let state = softmax_workgroup_tree(tile, local, softmax_merge(even, odd));
            #[unroll]
            for k in 0..PER {
                regs[k] = softmax_of(state, regs[k]);
            }
            row_store(&regs, y, row * width, width, local);
            if local == 0 {
                lse[row] = softmax_log_normalizer(state);
            }
        }
    }

    /// Each row of `x` scaled by the inverse of its root mean square into `y`, and its sum,
    /// largest element and sum of squares into `stats[3 * row..]`: a workgroup a row.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256], PER = 4), grid = [p.rows],
             types(T = [f32, Vec4<f32>]))]
    pub fn rms_rows<T>(
        p: &Shape,
        x: &[T],
        y: &mut [T],
        stats: &mut [f32],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        let width = p.cols / T::LANES;
        let mut regs = [0.0 as T; PER];
        // A fill the reductions must skip.
        row_load(&mut regs, x, row * width, width, local, 1000.0 as T);
        let sum = workgroup_sum_tree(tile, local, row_sum(&regs, width, local));
        let top = workgroup_maximum_tree(tile, local, row_max(&regs, width, local));
        let squares = workgroup_sum_tree(tile, local, row_sum_of_squares(&regs, width, local));
        let scale = (squares / p.cols as f32).sqrt().recip();
        #[unroll]
        for k in 0..PER {
            regs[k] *= scale as T;
        }
        row_store(&regs, y, row * width, width, local);
        if local == 0 {
            stats[3 * row] = sum;
            stats[3 * row + 1] = top;
            stats[3 * row + 2] = squares;
        }
    }
}

/// Row lengths in scalars for each width: not multiples of 4 for scalars, multiples of 4 (as
/// `Vec4` loads need) for vectors; none a multiple of the workgroup, one nearly filling the
/// registers of a workgroup of 64 (`64 * PER * lanes`).
fn row_lengths(lanes: usize) -> [u32; 2] {
    if lanes == 1 {
        [37, 255]
    } else {
        [12, 1000]
    }
}

/// Rows the row tests use: more than the softmax kernels' grid of 3, so they loop.
const ROWS: u32 = 5;

/// A sentinel `y` starts as, one element of `T` longer than the rows: nothing past a row may
/// be written.
const UNTOUCHED: f32 = 7.0;

/// The softmax and log-sum-exp of each row of `cols` scalars.
fn softmax_reference(x: &[f32], cols: usize) -> (Vec<f32>, Vec<f32>) {
    let (mut y, mut lse) = (Vec::new(), Vec::new());
    for row in x.chunks(cols) {
        let top = row.iter().copied().fold(f32::MIN, f32::max);
        let sum: f32 = row.iter().map(|v| (v - top).exp()).sum();
        y.extend(row.iter().map(|v| (v - top).exp() / sum));
        lse.push(top + sum.ln());
    }
    (y, lse)
}

/// `softmax_rows` (or `_tree`) at width `T`: the rows of `y` and the log-sum-exps.
fn softmax_rows<T>(
    rt: &Runtime,
    group: u32,
    cols: u32,
    x: &[f32],
    tree: bool,
) -> (Vec<f32>, Vec<f32>)
where
    T: row_ops::SoftmaxRowsElement + row_ops::SoftmaxRowsTreeElement,
{
    let lanes = std::mem::size_of::<T>() / 4;
    let p = row_ops::Shape { rows: ROWS, cols };
    let xs = upload_as::<T>(rt, x);
    let mut y = upload_as::<T>(rt, &vec![UNTOUCHED; x.len() + lanes]);
    let mut lse = rt.zeros::<f32>(ROWS as usize).unwrap();
    if tree {
        let constants = row_ops::SoftmaxRowsTreeConstants { group };
        let kernel = row_ops::SoftmaxRowsTree::<T>::with_constants(rt, constants).unwrap();
        let args = row_ops::SoftmaxRowsTreeArgs {
            p: &p,
            x: &xs,
            y: &mut y,
            lse: &mut lse,
        };
        kernel.launch(rt, args).unwrap();
    } else {
        let constants = row_ops::SoftmaxRowsConstants { group };
        let kernel = row_ops::SoftmaxRows::<T>::with_constants(rt, constants).unwrap();
        let args = row_ops::SoftmaxRowsArgs {
            p: &p,
            x: &xs,
            y: &mut y,
            lse: &mut lse,
        };
        kernel.launch(rt, args).unwrap();
    }
    let mut y = read_scalars(rt, &y);
    let tail = y.split_off(x.len());
    assert_eq!(tail, vec![UNTOUCHED; lanes], "written past the last row");
    (y, lse.read(rt).unwrap())
}

/// Checks the softmax kernels at width `T` against the reference, for both workgroup sizes
/// and each row length.
fn check_softmax<T>(rt: &Runtime, tree: bool)
where
    T: row_ops::SoftmaxRowsElement + row_ops::SoftmaxRowsTreeElement,
{
    let lanes = std::mem::size_of::<T>() / 4;
    for group in [64, 256] {
        for cols in row_lengths(lanes) {
            let x: Vec<f32> = values(&mut rng(cols as u64), (ROWS * cols) as usize)
                .iter()
                .map(|v| 6.0 * v)
                .collect();
            let (want_y, want_lse) = softmax_reference(&x, cols as usize);
            let (y, lse) = softmax_rows::<T>(rt, group, cols, &x, tree);
            eprintln!("softmax: group {group}, cols {cols}, lanes {lanes}, tree {tree}");
            assert_close(&y, &want_y, 1e-5);
            assert_close(&lse, &want_lse, 1e-5);
        }
    }
}

#[test]
fn online_softmax_through_subgroups_matches_the_reference() {
    if let Some(rt) = subgroup_runtime("online_softmax_through_subgroups") {
        check_softmax::<f32>(&rt, false);
        check_softmax::<[f32; 4]>(&rt, false);
    }
}

#[test]
fn online_softmax_through_the_tree_matches_the_reference() {
    let rt = runtime();
    check_softmax::<f32>(&rt, true);
    check_softmax::<[f32; 4]>(&rt, true);
}

/// Checks `rms_rows` at width `T`: the scaled rows, and the sums, maxima and sums of squares
/// of the rows kept in registers.
fn check_rms_rows<T: row_ops::RmsRowsElement>(rt: &Runtime) {
    let lanes = std::mem::size_of::<T>() / 4;
    for group in [64, 256] {
        for cols in row_lengths(lanes) {
            let x = values(&mut rng(100 + cols as u64), (ROWS * cols) as usize);
            let p = row_ops::Shape { rows: ROWS, cols };
            let xs = upload_as::<T>(rt, &x);
            let mut y = upload_as::<T>(rt, &vec![UNTOUCHED; x.len() + lanes]);
            let mut stats = rt.zeros::<f32>(3 * ROWS as usize).unwrap();
            let constants = row_ops::RmsRowsConstants { group };
            let kernel = row_ops::RmsRows::<T>::with_constants(rt, constants).unwrap();
            let args = row_ops::RmsRowsArgs {
                p: &p,
                x: &xs,
                y: &mut y,
                stats: &mut stats,
            };
            kernel.launch(rt, args).unwrap();
            let (mut want_y, mut want_stats) = (Vec::new(), Vec::new());
            for row in x.chunks(cols as usize) {
                let squares: f32 = row.iter().map(|v| v * v).sum();
                let scale = 1.0 / (squares / cols as f32).sqrt();
                want_y.extend(row.iter().map(|v| v * scale));
                let top = row.iter().copied().fold(f32::MIN, f32::max);
                want_stats.extend([row.iter().sum(), top, squares]);
            }
            want_y.extend(vec![UNTOUCHED; lanes]);
            eprintln!("rms: group {group}, cols {cols}, lanes {lanes}");
            assert_close(&read_scalars(rt, &y), &want_y, 1e-5);
            assert_close(&stats.read(rt).unwrap(), &want_stats, 1e-4);
        }
    }
}

#[test]
fn rows_load_reduce_and_store_at_every_width() {
    let rt = runtime();
    check_rms_rows::<f32>(&rt);
    check_rms_rows::<[f32; 4]>(&rt);
}

/// Checks `halves` at width `T` (`f16` or `[f16; 4]`): values that are multiples of 1/4 below
/// 2 in magnitude, whose sums over 256 are exact in `f16`.
fn check_halves<T: reductions::HalvesElement>(rt: &Runtime, lanes: usize) {
    use tessera::half::f16;
    for group in [64usize, 256] {
        let n = group + 37;
        let mut generator = rng(31 + group as u64);
        let x: Vec<f32> = (0..n * lanes)
            .map(|_| generator.random_range(-7..8) as f32 / 4.0)
            .collect();
        let halves: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
        let constants = reductions::HalvesConstants {
            group: group as u32,
        };
        let kernel = reductions::Halves::<T>::with_constants(rt, constants).unwrap();
        let invocations = n.div_ceil(group) * group;
        let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<f16, T>(&halves)).unwrap();
        let zeros = vec![f16::ZERO; 4 * invocations * lanes];
        let mut out: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<f16, T>(&zeros)).unwrap();
        let args = reductions::HalvesArgs {
            x: &xs,
            out: &mut out,
        };
        kernel.launch(rt, args).unwrap();
        let got: Vec<f32> = bytemuck::cast_slice::<T, f16>(&out.read(rt).unwrap())
            .iter()
            .map(|v| v.to_f32())
            .collect();
        for i in 0..invocations {
            let workgroup = i - i % group..i - i % group + group;
            for (k, op) in [Op::Sum, Op::Max, Op::Sum, Op::Min].into_iter().enumerate() {
                let at = &got[(4 * i + k) * lanes..(4 * i + k + 1) * lanes];
                let want = op.over(&x, lanes, workgroup.clone());
                assert_eq!(
                    at, want,
                    "group {group}, lanes {lanes}, invocation {i}, result {k}"
                );
            }
        }
    }
}

#[test]
fn f16_sums_maxima_and_minima_match_the_reference() {
    let Some(rt) = subgroup_runtime("f16_sums_maxima_and_minima") else {
        return;
    };
    if !rt.info().features.contains(wgpu::Features::SHADER_F16) {
        eprintln!("f16_sums_maxima_and_minima: skipped, the adapter has no f16");
        return;
    }
    check_halves::<tessera::half::f16>(&rt, 1);
    check_halves::<[tessera::half::f16; 4]>(&rt, 4);
}

/// The WGSL of the modules, pinned, so that a change in a library's helpers shows as a
/// readable diff, and so that `tests/tint.rs` runs it through Tint.
#[test]
fn the_std_lib_wgsl_is_pinned() {
    insta::assert_snapshot!("reductions", reductions::WGSL);
    insta::assert_snapshot!("row_ops", row_ops::WGSL);
}

/// `row_load_f32` and `row_store_f32`: rows of `f16` (or `f32`) storage held in `f32`.
#[tessera::kernels]
pub mod wide_rows {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::rows;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub rows: u32,
        /// Scalars a row: a multiple of `T::LANES`, at most `GROUP * PER * T::LANES`.
        pub cols: u32,
    }

    /// Each row of `x` halved into `y`, and its sum into `sums`, both in `f32` whatever `T`
    /// stores: a workgroup a row.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64], PER = 16), grid = [p.rows],
             types(T = [f32, Vec4<f32>, f16, Vec4<f16>]))]
    pub fn halved_rows<T>(
        p: &Shape,
        x: &[T],
        y: &mut [T],
        sums: &mut [f32],
        #[workgroup] tile: &mut [f32; GROUP],
    ) {
        let (row, local) = (workgroup_id().x, local_index());
        let width = p.cols / T::LANES;
        let mut regs = [0.0 as T::F32; PER];
        // A fill the sum must skip.
        row_load_f32(&mut regs, x, row * width, width, local, 1000.0 as T::F32);
        let sum = workgroup_sum_tree(tile, local, row_sum(&regs, width, local));
        #[unroll]
        for k in 0..PER {
            regs[k] *= 0.5 as T::F32;
        }
        row_store_f32(&regs, y, row * width, width, local);
        if local == 0 {
            sums[row] = sum;
        }
    }
}

/// `halved_rows` at `T` over the scalars `x` (of `S`, `T`'s scalar): the halved rows and the
/// sums, with a sentinel element past the rows that must stay.
fn halved_rows<T, S>(rt: &Runtime, rows: u32, cols: u32, x: &[S], sentinel: S) -> (Vec<S>, Vec<f32>)
where
    T: wide_rows::HalvedRowsElement,
    S: bytemuck::Pod + PartialEq + std::fmt::Debug,
{
    let lanes = std::mem::size_of::<T>() / std::mem::size_of::<S>();
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<S, T>(x)).unwrap();
    let padded = vec![sentinel; x.len() + lanes];
    let mut y: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<S, T>(&padded)).unwrap();
    let mut sums = rt.zeros::<f32>(rows as usize).unwrap();
    let kernel = wide_rows::HalvedRows::<T>::new(rt).unwrap();
    let p = wide_rows::Shape { rows, cols };
    let args = wide_rows::HalvedRowsArgs {
        p: &p,
        x: &xs,
        y: &mut y,
        sums: &mut sums,
    };
    kernel.launch(rt, args).unwrap();
    let mut y = bytemuck::cast_slice::<T, S>(&y.read(rt).unwrap()).to_vec();
    assert_eq!(
        y.split_off(x.len()),
        vec![sentinel; lanes],
        "written past the rows"
    );
    (y, sums.read(rt).unwrap())
}

/// Rows of `cols` scalars: a row of ones, whose `f16` sum would stop at 2048, then rows of
/// small integers and halves (exact in `f16`, and so are their halves).
fn ones_then_halves(rows: u32, cols: u32) -> Vec<f32> {
    let mut x = vec![1.0f32; cols as usize];
    x.extend((0..(rows - 1) * cols).map(|i| (i % 13) as f32 / 2.0 - 3.0));
    x
}

#[test]
fn rows_of_f16_storage_load_and_store_through_f32() {
    use tessera::half::f16;
    let rt = runtime();
    let f16s = rt.info().features.contains(wgpu::Features::SHADER_F16);
    // Vectors: rows of 3000 scalars, 750 `Vec4`s of the 1024 a workgroup holds. Scalars: rows
    // of 1000 of the 1024. Each with a tail past the last full turn of the workgroup.
    for (rows, cols, lanes) in [(2u32, 3000u32, 4usize), (3, 1000, 1)] {
        let x = ones_then_halves(rows, cols);
        let want_sums: Vec<f32> = x.chunks(cols as usize).map(|r| r.iter().sum()).collect();
        let want_y: Vec<f32> = x.iter().map(|v| v / 2.0).collect();
        let got = if lanes == 4 {
            halved_rows::<[f32; 4], f32>(&rt, rows, cols, &x, 7.0)
        } else {
            halved_rows::<f32, f32>(&rt, rows, cols, &x, 7.0)
        };
        assert_eq!(
            got,
            (want_y.clone(), want_sums.clone()),
            "f32, {lanes} lanes"
        );
        if !f16s {
            continue;
        }
        let halves: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
        let want_halves: Vec<f16> = want_y.iter().map(|&v| f16::from_f32(v)).collect();
        let sentinel = f16::from_f32(7.0);
        let got = if lanes == 4 {
            halved_rows::<[f16; 4], f16>(&rt, rows, cols, &halves, sentinel)
        } else {
            halved_rows::<f16, f16>(&rt, rows, cols, &halves, sentinel)
        };
        assert_eq!(got, (want_halves, want_sums), "f16, {lanes} lanes");
    }
}

/// `row_moments`, `moments_merge` and `workgroup_moments_tree`: a row's mean and variance in
/// one reduction.
#[tessera::kernels]
pub mod moments {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::rows;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        pub rows: u32,
        /// Scalars a row: a multiple of `T::LANES`; a segment of `GROUP * PER` elements of `T`
        /// at a time.
        pub cols: u32,
    }

    /// Each row's `vec2(mean, variance)`: its segments' moments merged in each invocation,
    /// then across the workgroup.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256], PER = 2), grid = [p.rows],
             types(T = [f32, Vec4<f32>]))]
    pub fn row_stats<T>(
        p: &Shape,
        x: &[T],
        stats: &mut [Vec2<f32>],
        #[workgroup] tile: &mut [Vec4<f32>; GROUP],
    ) {
        let (row, local, width) = (workgroup_id().x, local_index(), p.cols / T::LANES);
        let mut regs = [0.0 as T; PER];
        let mut own = vec4(0.0f32, 0.0, 0.0, 0.0);
        for start in (0..width).step_by(GROUP * PER) {
            let count = (width - start).min(GROUP * PER);
            // A fill the moments must skip.
            row_load(&mut regs, x, row * width + start, count, local, 1000.0 as T);
            own = moments_merge(own, row_moments(&regs, count, local));
        }
        let total = workgroup_moments_tree(tile, local, own);
        if local == 0 {
            stats[row] = vec2(total.y, total.z / total.x);
        }
    }
}

#[test]
fn moments_give_a_mean_and_variance_in_one_reduction() {
    let rt = runtime();
    let mut rng = rng(9);
    // Rows near 1000 spread by about 1 (a variance as `mean(x^2) - mean^2` in f32 would lose
    // it), of one segment with a tail and of several; both widths, both workgroup sizes.
    for (rows, cols) in [(3u32, 100u32), (2, 2052)] {
        let x: Vec<f32> = values(&mut rng, (rows * cols) as usize)
            .iter()
            .map(|v| 1000.0 + 2.0 * v)
            .collect();
        let mut want = Vec::new();
        for row in x.chunks(cols as usize) {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / f64::from(cols);
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / f64::from(cols);
            want.extend([mean as f32, var as f32]);
        }
        for group in [64, 256] {
            for lanes in [1usize, 4] {
                let p = moments::Shape { rows, cols };
                let mut stats = rt.zeros::<[f32; 2]>(rows as usize).unwrap();
                let constants = moments::RowStatsConstants { group };
                if lanes == 1 {
                    let xs = upload_as::<f32>(&rt, &x);
                    let kernel = moments::RowStats::<f32>::with_constants(&rt, constants).unwrap();
                    let args = moments::RowStatsArgs {
                        p: &p,
                        x: &xs,
                        stats: &mut stats,
                    };
                    kernel.launch(&rt, args).unwrap();
                } else {
                    let xs = upload_as::<[f32; 4]>(&rt, &x);
                    let kernel =
                        moments::RowStats::<[f32; 4]>::with_constants(&rt, constants).unwrap();
                    let args = moments::RowStatsArgs {
                        p: &p,
                        x: &xs,
                        stats: &mut stats,
                    };
                    kernel.launch(&rt, args).unwrap();
                }
                let got = read_scalars(&rt, &stats);
                assert_close(&got, &want, 1e-4);
            }
        }
    }
}
