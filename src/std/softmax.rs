//! The source of [`tessera::std::softmax`](crate::std::softmax): the online softmax state.

/// The online softmax: a running maximum and sum of exponentials, folded one value (or
/// vector of values) at a time, merged across invocations, and turned into probabilities or
/// a log-normalizer. Softmax, cross-entropy and attention read their input once with it.
///
/// Import it with `#[device] use tessera::std::softmax;`.
///
/// The state is a `Vec2<f32>`: `x` the largest value folded so far, `y` the sum of
/// `exp(value - x)` over the values folded. [`softmax_start`](self) is the empty state
/// (`x = -f32::MAX`, `y = 0`). Folding a value rescales the sum when the maximum grows, so
/// no exponential overflows; two states merge the same way, so the order of folding and
/// merging does not matter (up to rounding). Padding folded as `-f32::MAX` (the fill to give
/// [`rows`](crate::std::rows)' `row_load`) counts for nothing once a real value is folded or
/// merged in: its terms are scaled by `exp(-f32::MAX - max)`, which is 0.
///
/// | helper | does | needs |
/// | --- | --- | --- |
/// | `softmax_start()` | the empty state | |
/// | `softmax_fold(state, values)` | folds a value, or each lane of a vector (`E` = `f32` or `Vec4<f32>`) | |
/// | `softmax_merge(a, b)` | the state of both states' values | |
/// | `softmax_subgroup(state)` | merges the states of a subgroup, every invocation receiving the result | `features(subgroups)` |
/// | `softmax_workgroup(partials, state, lane, subgroup, size)` | merges the workgroup's states: in each subgroup, then one per subgroup through `partials` | `features(subgroups)`, `GROUP`, `#[workgroup] partials: &mut [Vec2<f32>; GROUP / 4]` |
/// | `softmax_workgroup_tree(tile, local, state)` | the same without subgroups, halving `tile` | `GROUP`, `#[workgroup] tile: &mut [Vec2<f32>; GROUP]` |
/// | `softmax_of(state, values)` | `exp(values - max) / sum`, lane by lane: the probabilities | |
/// | `softmax_log_normalizer(state)` | `max + ln(sum)`, the log-sum-exp (cross-entropy is `log_normalizer - x[target]`) | |
///
/// The workgroup merges follow [`reduce`](crate::std::reduce)'s conventions: `GROUP` is the
/// caller's one-dimensional workgroup size, `lane`, `subgroup`, `size` and `local` are its
/// `subgroup_invocation_id()`, `subgroup_id()`, `subgroup_size()` and `local_index()`, every
/// invocation of the workgroup calls together, and the lent array may be lent again at once.
/// Values are `f32`: fold `f16` values as `v as f32` (or `v as Vec4<f32>`), which also keeps
/// the sum in `f32`.
///
/// ```
/// #[tessera::kernels]
/// mod losses {
///     #[device]
///     use tessera::std::softmax;
///
///     /// The cross-entropy of each row of `cols` logits against its `target`, a workgroup a row.
///     #[kernel(workgroup = [GROUP], constants(GROUP = [256]), grid = [target.len()])]
///     pub fn cross_entropy(
///         logits: &[f32],
///         target: &[u32],
///         loss: &mut [f32],
///         #[workgroup] tile: &mut [Vec2<f32>; GROUP],
///     ) {
///         let (row, local) = (workgroup_id().x, local_index());
///         let cols = logits.len() / target.len();
///         let mut state = softmax_start();
///         for c in (local..cols).step_by(GROUP) {
///             state = softmax_fold(state, logits[row * cols + c]);
///         }
///         state = softmax_workgroup_tree(tile, local, state);
///         if local == 0 {
///             loss[row] = softmax_log_normalizer(state) - logits[row * cols + target[row]];
///         }
///     }
/// }
/// # fn main() {}
/// ```
#[crate::device]
pub mod softmax {
    /// The empty state: no value folded.
    fn softmax_start() -> Vec2<f32> {
        vec2(-f32::MAX, 0.0)
    }

    /// `state` with `values` folded in: one value, or each lane of a vector.
    fn softmax_fold<E>(state: Vec2<f32>, values: E) -> Vec2<f32> {
        let top = state.x.max(values.max_element());
        let sum = state.y * (state.x - top).exp() + (values - top as E).exp().element_sum();
        vec2(top, sum)
    }

    /// The state of the values of both `a` and `b`.
    fn softmax_merge(a: Vec2<f32>, b: Vec2<f32>) -> Vec2<f32> {
        let top = a.x.max(b.x);
        vec2(top, a.y * (a.x - top).exp() + b.y * (b.x - top).exp())
    }

    /// The states of the subgroup merged, in every invocation.
    fn softmax_subgroup(state: Vec2<f32>) -> Vec2<f32> {
        let top = subgroup_max(state.x);
        vec2(top, subgroup_add(state.y * (state.x - top).exp()))
    }

    /// The states of the workgroup merged, in every invocation (through subgroups).
    ///
    /// In each subgroup, then one state per subgroup through `partials`, which every
    /// subgroup merges.
    fn softmax_workgroup(
        partials: &mut [Vec2<f32>; GROUP / 4],
        state: Vec2<f32>,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> Vec2<f32> {
        let own = softmax_subgroup(state);
        if lane == 0 {
            partials[subgroup] = own;
        }
        workgroup_barrier();
        let mut acc = softmax_start();
        let mut k = lane;
        while k < ceil_div(GROUP, size) {
            acc = softmax_merge(acc, partials[k]);
            k += size;
        }
        let total = softmax_subgroup(acc);
        workgroup_barrier();
        total
    }

    /// The states of the workgroup merged, in every invocation, without subgroups.
    ///
    /// `tile`, the caller's workgroup array of `GROUP`, is halved with a barrier a step.
    fn softmax_workgroup_tree(
        tile: &mut [Vec2<f32>; GROUP],
        local: u32,
        state: Vec2<f32>,
    ) -> Vec2<f32> {
        tile[local] = state;
        workgroup_barrier();
        let mut width = GROUP;
        while width > 1 {
            let half = (width + 1) / 2;
            if local + half < width {
                tile[local] = softmax_merge(tile[local], tile[local + half]);
            }
            workgroup_barrier();
            width = half;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// The softmax of `values` (each lane) among the values `state` has folded.
    fn softmax_of<E>(state: Vec2<f32>, values: E) -> E {
        (values - state.x as E).exp() * (1.0 / state.y) as E
    }

    /// `ln` of the sum of `exp` of the values folded: `max + ln(sum)`, the log-sum-exp.
    fn softmax_log_normalizer(state: Vec2<f32>) -> f32 {
        state.x + state.y.ln()
    }
}
