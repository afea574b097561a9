//! The source of [`tessera::std::reduce`](crate::std::reduce): reductions across a subgroup and
//! across a workgroup.

/// Sums, maxima, minima and argmax across a subgroup or a workgroup, every invocation receiving
/// the result.
///
/// Import it with `#[device] use tessera::std::reduce;`.
///
/// # Three paths
///
/// | helpers | how | the caller declares |
/// | --- | --- | --- |
/// | `subgroup_sum`, `subgroup_maximum`, `subgroup_minimum`, `subgroup_argmax` | subgroup operations | `features(subgroups)` |
/// | `workgroup_sum`, `workgroup_maximum`, `workgroup_minimum`, `workgroup_argmax` | within each subgroup first, then one value per subgroup through `partials`, which every subgroup then reduces | `features(subgroups)`, `GROUP`, a `#[workgroup] partials: &mut [E; GROUP / 4]` |
/// | `workgroup_sum_tree`, `workgroup_maximum_tree`, `workgroup_minimum_tree`, `workgroup_argmax_tree` | a tree in workgroup memory, halving `tile` with a barrier a step | `GROUP`, a `#[workgroup] tile: &mut [E; GROUP]` |
/// | `workgroup_moments_tree` | the same tree over moments `vec4(count, mean, m2, 0)` (`m2`: the sum of squared deviations from the mean), merged pairwise (`moments_merge`) | `GROUP`, a `#[workgroup] tile: &mut [Vec4<f32>; GROUP]` |
///
/// The subgroup paths do less work: a workgroup of 256 invocations in subgroups of 32
/// reduces with two barriers and eight slots of workgroup memory, where the tree takes ten
/// barriers and 256 slots. The tree runs everywhere, including devices without subgroups
/// (WebGPU without the `subgroups` feature). Which to use is the kernel's choice: write one
/// kernel per path (they share everything else through helpers), and build the subgroup one
/// where [`RuntimeInfo`](crate::RuntimeInfo)'s features include subgroups; its `new` returns
/// [`Error::MissingFeature`](crate::Error::MissingFeature) elsewhere.
///
/// # What the caller provides
///
/// - `GROUP`, a constant of the calling kernel: its workgroup size, one-dimensional
///   (`workgroup = [GROUP]`; `subgroup_id()` needs a one-dimensional workgroup). Any size
///   works for the tree; the subgroup path needs `GROUP` a multiple of the subgroup size,
///   which holds for powers of two.
/// - The workgroup memory, lent as an argument: `partials: &mut [E; GROUP / 4]` for the
///   subgroup path (one slot per subgroup; WebGPU's subgroups have at least 4 invocations),
///   `tile: &mut [E; GROUP]` for the tree, where `E` is the reduced type (`f32`,
///   `Vec4<f32>`, `f16`, ...). Argmax takes a second array of `u32` for the indices.
/// - The invocation's ids, which a helper cannot read itself: `lane` is
///   `subgroup_invocation_id()`, `subgroup` is `subgroup_id()`, `size` is `subgroup_size()`,
///   `local` is `local_index()`.
///
/// Every invocation of the workgroup must make the call together (it holds barriers or
/// subgroup operations), and each returns the result. Each workgroup helper ends with a
/// barrier, so the same array may be lent again right away.
///
/// The moments give a mean and a variance in one reduction, as stable as computing the mean
/// first and then the squared deviations from it (Chan, Golub and LeVeque's pairwise update):
/// each invocation's own moments (`row_moments` of [`rows`](crate::std::rows) for a row in
/// registers), merged across the workgroup; the variance is `m2 / count`. A layer norm takes
/// one reduction where the two-pass form takes two, and keeps a large mean apart from a small
/// variance, which `mean(x^2) - mean^2` in `f32` would lose.
///
/// `E` is whatever the call passes: `f32`, `Vec4<f32>` (lane by lane: reduce the lanes with
/// `element_sum()` or `max_element()` before or after), `f16` and its vectors under
/// `features(f16)`, or integers. Argmax is over `f32` values with `u32` indices; of equal
/// maxima it picks the smallest index. NaN values give an unspecified result.
///
/// ```
/// #[tessera::kernels]
/// mod sums {
///     #[device]
///     use tessera::std::reduce;
///
///     /// One sum per workgroup of `GROUP` elements of `x`.
///     #[kernel(workgroup = [GROUP], constants(GROUP = [256]), grid = [ceil_div(x.len(), GROUP)],
///              features(subgroups))]
///     pub fn block_sums(x: &[f32], sums: &mut [f32], #[workgroup] partials: &mut [f32; GROUP / 4]) {
///         let i = global_id().x;
///         let value = if i < x.len() { x[i] } else { 0.0 };
///         let total = workgroup_sum(partials, value, subgroup_invocation_id(), subgroup_id(), subgroup_size());
///         if local_index() == 0 && workgroup_id().x < sums.len() {
///             sums[workgroup_id().x] = total;
///         }
///     }
///
///     /// The same without subgroups.
///     #[kernel(workgroup = [GROUP], constants(GROUP = [256]), grid = [ceil_div(x.len(), GROUP)])]
///     pub fn block_sums_tree(x: &[f32], sums: &mut [f32], #[workgroup] tile: &mut [f32; GROUP]) {
///         let i = global_id().x;
///         let value = if i < x.len() { x[i] } else { 0.0 };
///         let total = workgroup_sum_tree(tile, local_index(), value);
///         if local_index() == 0 && workgroup_id().x < sums.len() {
///             sums[workgroup_id().x] = total;
///         }
///     }
/// }
/// # fn main() {}
/// ```
#[crate::device]
pub mod reduce {
    /// The sum of `value` over the subgroup.
    fn subgroup_sum<E>(value: E) -> E {
        subgroup_add(value)
    }

    /// The largest `value` of the subgroup (lane by lane for a vector).
    fn subgroup_maximum<E>(value: E) -> E {
        subgroup_max(value)
    }

    /// The smallest `value` of the subgroup (lane by lane for a vector).
    fn subgroup_minimum<E>(value: E) -> E {
        subgroup_min(value)
    }

    /// The sum of `value` over the workgroup (through subgroups and `partials`).
    ///
    /// Each subgroup sums its values, its lane 0 writes the sum to `partials[subgroup]`, and
    /// after a barrier every subgroup sums the partials (each lane a strided share, then one
    /// subgroup sum), so every invocation has the total without a second broadcast.
    fn workgroup_sum<E>(
        partials: &mut [E; GROUP / 4],
        value: E,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        let own = subgroup_add(value);
        if lane == 0 {
            partials[subgroup] = own;
        }
        workgroup_barrier();
        let mut acc = 0 as E;
        let mut k = lane;
        while k < ceil_div(GROUP, size) {
            acc += partials[k];
            k += size;
        }
        let total = subgroup_add(acc);
        workgroup_barrier();
        total
    }

    /// The largest `value` of the workgroup (through subgroups and `partials`).
    ///
    /// As `workgroup_sum`; lanes past the last partial read it again, which a maximum
    /// does not mind, so no identity is needed.
    fn workgroup_maximum<E>(
        partials: &mut [E; GROUP / 4],
        value: E,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        let own = subgroup_max(value);
        if lane == 0 {
            partials[subgroup] = own;
        }
        workgroup_barrier();
        let count = ceil_div(GROUP, size);
        // Lanes past the last slot read it again: a maximum does not mind repeats.
        let mut acc = partials[lane.min(count - 1)];
        let mut k = lane + size;
        while k < count {
            acc = acc.max(partials[k]);
            k += size;
        }
        let total = subgroup_max(acc);
        workgroup_barrier();
        total
    }

    /// The smallest `value` of the workgroup (through subgroups and `partials`).
    ///
    /// As `workgroup_maximum`.
    fn workgroup_minimum<E>(
        partials: &mut [E; GROUP / 4],
        value: E,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        let own = subgroup_min(value);
        if lane == 0 {
            partials[subgroup] = own;
        }
        workgroup_barrier();
        let count = ceil_div(GROUP, size);
        let mut acc = partials[lane.min(count - 1)];
        let mut k = lane + size;
        while k < count {
            acc = acc.min(partials[k]);
            k += size;
        }
        let total = subgroup_min(acc);
        workgroup_barrier();
        total
    }

    /// The largest `value` of the workgroup and its `index`, as `vec2(value bits, index)`.
    ///
    /// Of equal maxima, the smallest index wins. Read the value as `f32::from_bits(r.x)`
    /// (the language has no tuples to return). `values` and `indices` are the caller's
    /// workgroup arrays of `GROUP / 4`, one slot per subgroup.
    fn workgroup_argmax(
        values: &mut [f32; GROUP / 4],
        indices: &mut [u32; GROUP / 4],
        value: f32,
        index: u32,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> Vec2<u32> {
        let own = subgroup_argmax(value, index);
        if lane == 0 {
            values[subgroup] = f32::from_bits(own.x);
            indices[subgroup] = own.y;
        }
        workgroup_barrier();
        let count = ceil_div(GROUP, size);
        let first = lane.min(count - 1);
        let mut best = values[first];
        let mut at = indices[first];
        let mut k = lane + size;
        while k < count {
            let (v, i) = (values[k], indices[k]);
            if v > best || (v == best && i < at) {
                best = v;
                at = i;
            }
            k += size;
        }
        let total = subgroup_argmax(best, at);
        workgroup_barrier();
        total
    }

    /// The largest `value` of the subgroup and its `index`, as `workgroup_argmax` returns them.
    fn subgroup_argmax(value: f32, index: u32) -> Vec2<u32> {
        let best = subgroup_max(value);
        let at = subgroup_min(if value == best { index } else { 0xffffffffu32 });
        vec2(best.to_bits(), at)
    }

    /// The sum of `value` over the workgroup, without subgroups (a tree in `tile`).
    ///
    /// `tile` is the caller's workgroup array of `GROUP` (any size), halved with a barrier a
    /// step; `local` is `local_index()`.
    fn workgroup_sum_tree<E>(tile: &mut [E; GROUP], local: u32, value: E) -> E {
        tile[local] = value;
        workgroup_barrier();
        let mut width = GROUP;
        while width > 1 {
            let half = (width + 1) / 2;
            if local + half < width {
                tile[local] += tile[local + half];
            }
            workgroup_barrier();
            width = half;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// The moments `vec4(count, mean, m2, 0)` of the union of two disjoint sets of values from
    /// theirs (`m2`: the sum of squared deviations from the mean; a `count` of 0 is an empty
    /// set).
    fn moments_merge(a: Vec4<f32>, b: Vec4<f32>) -> Vec4<f32> {
        let count = a.x + b.x;
        let share = b.x / count.max(1.0);
        let delta = b.y - a.y;
        vec4(
            count,
            a.y + delta * share,
            a.z + b.z + delta * delta * a.x * share,
            0.0,
        )
    }

    /// The moments of the workgroup's values from each invocation's `own`, without subgroups
    /// (a tree in `tile`, merging with `moments_merge`).
    fn workgroup_moments_tree(
        tile: &mut [Vec4<f32>; GROUP],
        local: u32,
        own: Vec4<f32>,
    ) -> Vec4<f32> {
        tile[local] = own;
        workgroup_barrier();
        let mut width = GROUP;
        while width > 1 {
            let half = (width + 1) / 2;
            if local + half < width {
                tile[local] = moments_merge(tile[local], tile[local + half]);
            }
            workgroup_barrier();
            width = half;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// The largest `value` of the workgroup, without subgroups (a tree in `tile`).
    fn workgroup_maximum_tree<E>(tile: &mut [E; GROUP], local: u32, value: E) -> E {
        tile[local] = value;
        workgroup_barrier();
        let mut width = GROUP;
        while width > 1 {
            let half = (width + 1) / 2;
            if local + half < width {
                tile[local] = tile[local].max(tile[local + half]);
            }
            workgroup_barrier();
            width = half;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// The smallest `value` of the workgroup, without subgroups (a tree in `tile`).
    fn workgroup_minimum_tree<E>(tile: &mut [E; GROUP], local: u32, value: E) -> E {
        tile[local] = value;
        workgroup_barrier();
        let mut width = GROUP;
        while width > 1 {
            let half = (width + 1) / 2;
            if local + half < width {
                tile[local] = tile[local].min(tile[local + half]);
            }
            workgroup_barrier();
            width = half;
        }
        let total = tile[0];
        workgroup_barrier();
        total
    }

    /// `workgroup_argmax` without subgroups (a tree in `values` and `indices`).
    ///
    /// `values` and `indices` are the caller's workgroup arrays of `GROUP`.
    fn workgroup_argmax_tree(
        values: &mut [f32; GROUP],
        indices: &mut [u32; GROUP],
        local: u32,
        value: f32,
        index: u32,
    ) -> Vec2<u32> {
        values[local] = value;
        indices[local] = index;
        workgroup_barrier();
        let mut width = GROUP;
        while width > 1 {
            let half = (width + 1) / 2;
            if local + half < width {
                let (v, i) = (values[local + half], indices[local + half]);
                if v > values[local] || (v == values[local] && i < indices[local]) {
                    values[local] = v;
                    indices[local] = i;
                }
            }
            workgroup_barrier();
            width = half;
        }
        let total = vec2(values[0].to_bits(), indices[0]);
        workgroup_barrier();
        total
    }
}
