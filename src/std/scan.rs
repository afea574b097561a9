//! The source of [`tessera::std::scan`](crate::std::scan): prefix sums across a subgroup, a
//! workgroup, a tile held in registers and a whole buffer in one pass.

/// Prefix sums (scans), inclusive and exclusive: across a subgroup, across a workgroup, over
/// a tile of `GROUP * PER` elements held in registers, and the decoupled look-back that
/// scans a whole buffer in one pass.
///
/// Import it with `#[device] use tessera::std::scan;`.
///
/// An *inclusive* scan gives each element the sum of the elements up to and including it
/// (`[1, 2, 3]` gives `[1, 3, 6]`), an *exclusive* one the sum of those before it (`[0, 1,
/// 3]`).
///
/// # Three paths
///
/// | helpers | how | the caller declares |
/// | --- | --- | --- |
/// | `subgroup_inclusive_sum`, `subgroup_exclusive_sum` | one subgroup operation | `features(subgroups)` |
/// | `workgroup_inclusive_sum`, `workgroup_exclusive_sum` | a scan within each subgroup; each subgroup's total to `partials`; after a barrier each subgroup sums the totals before its own (each lane a strided share, then one subgroup sum), and adds them | `features(subgroups)`, `GROUP`, a `#[workgroup] partials: &mut [E; GROUP / 4]` |
/// | `workgroup_inclusive_sum_tree`, `workgroup_exclusive_sum_tree` | Hillis-Steele in workgroup memory: `log2(GROUP)` steps of two barriers | `GROUP`, a `#[workgroup] tile: &mut [E; GROUP]` |
///
/// The subgroup path takes two barriers where the tree takes `2 log2(GROUP) + 2` (18 for a
/// workgroup of 256); the tree runs everywhere, including devices without subgroups. As for
/// [`reduce`](crate::std::reduce), write one kernel per path and build the subgroup one where
/// [`RuntimeInfo`](crate::RuntimeInfo)'s features include subgroups.
///
/// # The running total: `carry`
///
/// Each workgroup scan takes `carry: &mut [E; 1]`, a local array of the caller
/// (`let mut carry = [0u32; 1];`, lent as `&mut carry`): the scan's results start from
/// `carry[0]`, and the helper adds the workgroup's total to it. So `carry[0]` is the total
/// after one call from zero, and a loop over chunks of `GROUP` values (a single workgroup
/// scanning a long array) scans them all by passing the same `carry` each time.
///
/// # Order: which invocation is which element
///
/// The tree scans in `local` order. The subgroup path scans in the order of `(subgroup,
/// lane)`: the invocation at `subgroup * size + lane` holds the element there. That is
/// `local_index()` on every driver that forms subgroups of consecutive invocations (all that
/// tessera's tests have met), but WGSL does not promise it, so a kernel on that path should
/// place its elements by `subgroup * size + lane` and depend on nothing.
///
/// # What the caller provides
///
/// - `GROUP`, its one-dimensional workgroup size (`workgroup = [GROUP]`). Any size works for
///   the tree; the subgroup path needs `GROUP` a multiple of the subgroup size (a power of
///   two is): each subgroup's total is read from its last lane.
/// - The workgroup memory, lent: `partials: &mut [E; GROUP / 4]` for the subgroup path, `tile:
///   &mut [E; GROUP]` for the tree. Each workgroup scan ends with a barrier, so the same array
///   may be lent again at once.
/// - `lane`, `subgroup`, `size`, `local`: its `subgroup_invocation_id()`, `subgroup_id()`,
///   `subgroup_size()`, `local_index()`.
///
/// Every invocation of the workgroup (of the subgroup, for the subgroup scans) must call
/// together, in uniform control flow. `E` is what the call passes: a number or a vector of
/// them, a vector scanned lane by lane (a `Vec4<u32>` is four scans side by side). The tests
/// run `u32`, `f32`, `Vec4<u32>` and `Vec4<f32>`; `i32` and `f16` (under `features(f16)`) go
/// through the same operations. Integer sums wrap; float sums round in an order that is not
/// the sequential one (the tree and the subgroup path differ in the last bits).
///
/// # A tile in registers
///
/// A whole-buffer scan is bandwidth-bound: each invocation holds `PER` consecutive elements of
/// `E` (the caller's constant and local array `regs: [E; PER]`), `PER * E::LANES` consecutive
/// scalars, so `E = Vec4<u32>` loads four at a time. A workgroup's tile is `GROUP * PER`
/// elements, invocation `local` holding elements `local * PER..local * PER + PER`. (Unlike
/// [`rows`](crate::std::rows)' strided layout, which keeps each load instruction on
/// consecutive addresses: a scan needs an invocation's elements consecutive. Each load
/// instruction of a subgroup then reads every `PER`-th element, and the `PER` loads together
/// read whole cache lines; keep `PER * E::LANES` small, 16 `u32`s or so.)
///
/// | helper | does |
/// | --- | --- |
/// | `scan_load(&mut regs, x, start, count, local)` | loads the invocation's elements of the `count` at `x[start]`, 0 past `count` |
/// | `scan_store(&regs, y, start, count, local)` | stores them, none past `count` |
/// | `scan_registers_sum(&regs) -> E::Scalar` | their sum, over every lane |
/// | `scan_registers_inclusive(&mut regs) -> E::Scalar` | scans them in place (lane by lane, in memory order), inclusive; returns their sum |
/// | `scan_registers_exclusive(&mut regs) -> E::Scalar` | the same, exclusive |
/// | `scan_registers_add(&mut regs, offset)` | adds the scalar `offset` to every lane |
///
/// A tile is then scanned as: load, scan the registers (their sum is the invocation's
/// value), an *exclusive* workgroup scan of those sums with the tile's offset as `carry`, add
/// its result to the registers, store. For the subgroup path pass `subgroup * size + lane` as
/// `local` (see "Order" above).
///
/// # A whole buffer: reduce, then scan
///
/// `examples/std_scan.rs` scans a buffer in three passes, each kernel a few lines over these
/// helpers: (1) every workgroup sums its tile into `totals[tile]`; (2) one workgroup scans
/// `totals` in place (exclusive), looping over chunks of `GROUP * PER` with `carry`; (3) every
/// workgroup scans its tile from its offset `totals[tile]`. It reads the input twice and
/// writes it once.
///
/// # A whole buffer in one pass: decoupled look-back
///
/// A single pass reads the input once: each workgroup scans its tile, then adds the sum of
/// every tile before it, which it learns from the tiles' published *states* in a storage
/// buffer of `AtomicU32`s (`2 * tiles + 1` words, zeroed before each scan):
///
/// | helper | does |
/// | --- | --- |
/// | `lookback_claim_tile(states, look, local) -> u32` | the workgroup's tile, claimed from the counter `states[0]`: tiles are taken in the order workgroups start, so the tiles below one are already taken |
/// | `scan_load_striped(&mut regs, x, start, count, lane, subgroup, size)`, `scan_store_striped(..)` | a tile in registers, each subgroup a run of `size * PER` consecutive elements, each load or store instruction moving `size` consecutive ones (the layout the single pass is fastest with) |
/// | `scan_striped_inclusive(&mut regs) -> E::Scalar`, `scan_striped_exclusive(..)` | scans a subgroup's run in place; returns its total |
/// | `subgroup_totals_before(partials, carry, total, lane, subgroup, size) -> E` | `carry[0]` plus the runs before this subgroup's; adds all of them to `carry[0]` |
/// | `lookback_prefix(x, count, states, tile, total, patience, look, partials, lane, subgroup, size) -> u32` | publishes the tile's `total`, sums the tiles below it from their states, publishes its inclusive total, and returns the sum below |
///
/// `look` is a `#[workgroup] look: &mut [Vec2<u32>; 3]`; the totals are `u32` (the scan
/// of `u32`s or `Vec4<u32>`s, sums wrapping). The look-back reads the states of `size` tiles
/// at a time (one subgroup, lane by lane) and adds their totals down to the nearest tile
/// that has published its inclusive total.
///
/// What makes it correct on WebGPU, which promises neither ordering between a storage write
/// and an atomic nor that a workgroup waiting for another ever lets it run:
///
/// - **Memory model.** A state lives in the atomics themselves, never in a plain buffer an
///   atomic flag announces: each of its two words holds one 16-bit half of the total with the
///   status (1: the tile's own total, 2: the inclusive one) above it, raised with
///   `fetch_max`. A reader takes a total only where both words carry the same status, and a
///   status only rises, so it never assembles a total from two states, whatever order the
///   words become visible in. Relaxed atomics on one location are all this needs.
/// - **Forward progress.** Where the tile just below has published nothing for `patience`
///   look-back steps running, the workgroup sums that tile of `x` itself (`count` elements
///   of `E` from `x[0]`, tiles of `GROUP * PER`) and publishes it, so no workgroup waits on
///   another being scheduled: the scan finishes even on a device that runs one workgroup at
///   a time. (The fallback reads a tile again; where the device does run the workgroups
///   together, it hardly ever happens: `patience` 0, 4 and 64 ran within 4% of each other on an H200.)
/// - **Uniformity.** The look-back loop holds subgroup operations and the fallback's
///   barriers, so every step's outcome reaches the workgroup through `look` and
///   `workgroup_uniform_load`: each step is a barrier, which Tint's uniformity analysis then
///   accepts.
///
/// It needs `features(subgroups)`; there is no `_tree` twin (the three passes above run
/// everywhere). `examples/std_scan.rs` has the kernel (`scan_single_pass`), about 30 lines.
///
/// Where the length is not a multiple of 4, the example scans scalars (a buffer cannot be
/// bound as `u32`s and as `Vec4<u32>`s at once); padding the buffer with zeros to a multiple
/// of 4 lets it take the `Vec4` path, the padding's results being ignored.
///
/// ```
/// #[tessera::kernels]
/// mod offsets {
///     #[device]
///     use tessera::std::scan;
///
///     /// Where each workgroup's items go: `starts[i]` is the sum of `counts` before `i`
///     /// within its workgroup of `GROUP`, and `sizes[w]` the workgroup's total.
///     #[kernel(workgroup = [GROUP], constants(GROUP = [256]), grid = [ceil_div(counts.len(), GROUP)],
///              features(subgroups))]
///     pub fn starts(
///         counts: &[u32],
///         starts: &mut [u32],
///         sizes: &mut [u32],
///         #[workgroup] partials: &mut [u32; GROUP / 4],
///     ) {
///         let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
///         let i = workgroup_id().x * GROUP + subgroup * size + lane;
///         let count = if i < counts.len() { counts[i] } else { 0 };
///         let mut carry = [0u32; 1];
///         let start = workgroup_exclusive_sum(partials, &mut carry, count, lane, subgroup, size);
///         if i < starts.len() {
///             starts[i] = start;
///         }
///         if local_index() == 0 && workgroup_id().x < sizes.len() {
///             sizes[workgroup_id().x] = carry[0];
///         }
///     }
///
///     /// The same without subgroups, over `Vec4<f32>` lane by lane.
///     #[kernel(workgroup = [GROUP], constants(GROUP = [256]), grid = [ceil_div(x.len(), GROUP)])]
///     pub fn running_sums(
///         x: &[Vec4<f32>],
///         y: &mut [Vec4<f32>],
///         #[workgroup] tile: &mut [Vec4<f32>; GROUP],
///     ) {
///         let i = global_id().x;
///         let v = if i < x.len() { x[i] } else { vec4(0.0f32, 0.0, 0.0, 0.0) };
///         let mut carry = [vec4(0.0f32, 0.0, 0.0, 0.0); 1];
///         let sum = workgroup_inclusive_sum_tree(tile, &mut carry, local_index(), v);
///         if i < y.len() {
///             y[i] = sum;
///         }
///     }
/// }
/// # fn main() {}
/// ```
#[crate::device]
pub mod scan {
    /// The sum of `value` over the lanes of the subgroup up to and including this one.
    fn subgroup_inclusive_sum<E>(value: E) -> E {
        subgroup_inclusive_add(value)
    }

    /// The sum of `value` over the lanes of the subgroup before this one (0 in lane 0).
    fn subgroup_exclusive_sum<E>(value: E) -> E {
        subgroup_exclusive_add(value)
    }

    /// `carry[0]` plus the sum of `value` over the workgroup up to and including this
    /// invocation, in `(subgroup, lane)` order; adds the workgroup's total to `carry[0]`.
    ///
    /// Each subgroup scans its values and its last lane writes the subgroup's total to
    /// `partials[subgroup]`; after a barrier, each subgroup sums the totals of the subgroups
    /// before it and of all (each lane a strided share, then a subgroup sum of each), so every
    /// invocation has its offset and the total without a second barrier.
    fn workgroup_inclusive_sum<E>(
        partials: &mut [E; GROUP / 4],
        carry: &mut [E; 1],
        value: E,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        let inner = subgroup_inclusive_add(value);
        if lane == size - 1 {
            partials[subgroup] = inner;
        }
        let start = subgroups_before(partials, carry, lane, subgroup, size);
        start + inner
    }

    /// `carry[0]` plus the sum of `value` over the workgroup before this invocation, in
    /// `(subgroup, lane)` order; adds the workgroup's total to `carry[0]`.
    ///
    /// As `workgroup_inclusive_sum`, from each subgroup's exclusive scan.
    fn workgroup_exclusive_sum<E>(
        partials: &mut [E; GROUP / 4],
        carry: &mut [E; 1],
        value: E,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        let inner = subgroup_exclusive_add(value);
        if lane == size - 1 {
            partials[subgroup] = inner + value;
        }
        let start = subgroups_before(partials, carry, lane, subgroup, size);
        start + inner
    }

    /// The workgroup scans' second half, once each subgroup's last lane has written its
    /// subgroup's total to `partials[subgroup]`: `carry[0]` plus the totals of the subgroups
    /// before this one; adds every subgroup's total to `carry[0]`. Two barriers: after the
    /// totals are written, and after they are read (so that `partials` may be written again).
    fn subgroups_before<E>(
        partials: &mut [E; GROUP / 4],
        carry: &mut [E; 1],
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        workgroup_barrier();
        let mut before = 0 as E;
        let mut all = 0 as E;
        let mut k = lane;
        while k < ceil_div(GROUP, size) {
            let t = partials[k];
            if k < subgroup {
                before += t;
            }
            all += t;
            k += size;
        }
        let start = carry[0] + subgroup_add(before);
        carry[0] += subgroup_add(all);
        workgroup_barrier();
        start
    }

    /// The tree scans' first half: Hillis-Steele in `tile`, the caller's workgroup array of
    /// `GROUP` (any size), leaving in slot `i` the sum of the values of invocations `0..=i`.
    /// At step `d`, each slot adds the one `2^d` before it, reading before a barrier and
    /// writing after; the last barrier lets every invocation read any slot.
    fn scan_tile<E>(tile: &mut [E; GROUP], local: u32, value: E) {
        tile[local] = value;
        workgroup_barrier();
        let mut offset = 1u32;
        while offset < GROUP {
            let mut add = 0 as E;
            if local >= offset {
                add = tile[local - offset];
            }
            workgroup_barrier();
            tile[local] += add;
            workgroup_barrier();
            offset *= 2;
        }
    }

    /// `carry[0]` plus the sum of `value` over the workgroup up to and including invocation
    /// `local`, without subgroups; adds the workgroup's total to `carry[0]`.
    ///
    /// Hillis-Steele in `tile`, the caller's workgroup array of `GROUP` (any size; see
    /// `scan_tile`).
    fn workgroup_inclusive_sum_tree<E>(
        tile: &mut [E; GROUP],
        carry: &mut [E; 1],
        local: u32,
        value: E,
    ) -> E {
        scan_tile(tile, local, value);
        let start = carry[0] + tile[local];
        carry[0] += tile[GROUP - 1];
        workgroup_barrier();
        start
    }

    /// `carry[0]` plus the sum of `value` over the workgroup before invocation `local`,
    /// without subgroups; adds the workgroup's total to `carry[0]`.
    ///
    /// As `workgroup_inclusive_sum_tree`, reading the slot before its own at the end.
    fn workgroup_exclusive_sum_tree<E>(
        tile: &mut [E; GROUP],
        carry: &mut [E; 1],
        local: u32,
        value: E,
    ) -> E {
        scan_tile(tile, local, value);
        let mut before = 0 as E;
        if local > 0 {
            before = tile[local - 1];
        }
        let start = carry[0] + before;
        carry[0] += tile[GROUP - 1];
        workgroup_barrier();
        start
    }

    /// Loads the invocation's `PER` consecutive elements of the `count` elements at
    /// `x[start]` into `regs`: element `local * PER + k` into `regs[k]`, 0 past `count`.
    fn scan_load<E>(regs: &mut [E; PER], x: &[E], start: u32, count: u32, local: u32) {
        #[unroll]
        for k in 0..PER {
            let i = local * PER + k;
            regs[k] = 0 as E;
            if i < count {
                regs[k] = x[start + i];
            }
        }
    }

    /// Stores `regs` to the invocation's elements of the `count` elements at `y[start]`, in
    /// `scan_load`'s layout; nothing past `count`.
    fn scan_store<E>(regs: &[E; PER], y: &mut [E], start: u32, count: u32, local: u32) {
        #[unroll]
        for k in 0..PER {
            let i = local * PER + k;
            if i < count {
                y[start + i] = regs[k];
            }
        }
    }

    /// The sum of `regs`, over every lane.
    fn scan_registers_sum<E>(regs: &[E; PER]) -> E::Scalar {
        let mut acc = 0 as E;
        #[unroll]
        for k in 0..PER {
            acc += regs[k];
        }
        acc.element_sum()
    }

    /// Scans `regs` in place, inclusive, lane by lane in memory order (`regs[0]`'s lanes,
    /// then `regs[1]`'s, ...); returns their sum.
    fn scan_registers_inclusive<E>(regs: &mut [E; PER]) -> E::Scalar {
        let mut acc = 0 as E::Scalar;
        #[unroll]
        for k in 0..PER {
            let mut v = regs[k];
            #[unroll]
            for c in 0..E::LANES {
                acc += v[c];
                v[c] = acc;
            }
            regs[k] = v;
        }
        acc
    }

    /// Scans `regs` in place, exclusive, in `scan_registers_inclusive`'s order; returns their
    /// sum.
    fn scan_registers_exclusive<E>(regs: &mut [E; PER]) -> E::Scalar {
        let mut acc = 0 as E::Scalar;
        #[unroll]
        for k in 0..PER {
            let mut v = regs[k];
            #[unroll]
            for c in 0..E::LANES {
                let t = v[c];
                v[c] = acc;
                acc += t;
            }
            regs[k] = v;
        }
        acc
    }

    /// Adds `offset` to every lane of `regs`.
    fn scan_registers_add<E>(regs: &mut [E; PER], offset: E::Scalar) {
        #[unroll]
        for k in 0..PER {
            regs[k] += offset as E;
        }
    }

    /// Loads the subgroup's `size * PER` consecutive elements of the `count` elements at
    /// `x[start]` into `regs`, a subgroup's run after another's (subgroup `subgroup` from
    /// `subgroup * size * PER`), each load instruction reading `size` consecutive elements:
    /// element `subgroup * size * PER + k * size + lane` into `regs[k]`, 0 past `count`.
    fn scan_load_striped<E>(
        regs: &mut [E; PER],
        x: &[E],
        start: u32,
        count: u32,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) {
        #[unroll]
        for k in 0..PER {
            let i = (subgroup * PER + k) * size + lane;
            regs[k] = 0 as E;
            if i < count {
                regs[k] = x[start + i];
            }
        }
    }

    /// Stores `regs` in `scan_load_striped`'s layout; nothing past `count`.
    fn scan_store_striped<E>(
        regs: &[E; PER],
        y: &mut [E],
        start: u32,
        count: u32,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) {
        #[unroll]
        for k in 0..PER {
            let i = (subgroup * PER + k) * size + lane;
            if i < count {
                y[start + i] = regs[k];
            }
        }
    }

    /// Scans the subgroup's elements in `scan_load_striped`'s layout in place, inclusive (in
    /// memory order: `regs[0]` of every lane, then `regs[1]`, ...); returns their total, the
    /// same in every lane. A subgroup scan for each `k`.
    fn scan_striped_inclusive<E>(regs: &mut [E; PER]) -> E::Scalar {
        let mut carry = 0 as E::Scalar;
        #[unroll]
        for k in 0..PER {
            let mut v = regs[k];
            let mut acc = 0 as E::Scalar;
            #[unroll]
            for c in 0..E::LANES {
                acc += v[c];
                v[c] = acc;
            }
            regs[k] = v + (carry + subgroup_exclusive_add(acc)) as E;
            carry += subgroup_add(acc);
        }
        carry
    }

    /// As `scan_striped_inclusive`, exclusive.
    fn scan_striped_exclusive<E>(regs: &mut [E; PER]) -> E::Scalar {
        let mut carry = 0 as E::Scalar;
        #[unroll]
        for k in 0..PER {
            let mut v = regs[k];
            let mut acc = 0 as E::Scalar;
            #[unroll]
            for c in 0..E::LANES {
                let t = v[c];
                v[c] = acc;
                acc += t;
            }
            regs[k] = v + (carry + subgroup_exclusive_add(acc)) as E;
            carry += subgroup_add(acc);
        }
        carry
    }

    /// `carry[0]` plus the totals of the subgroups before this one, given each subgroup's
    /// `total` (the same in all its lanes, as `scan_striped_inclusive` returns it); adds every
    /// subgroup's total to `carry[0]`. Two barriers.
    fn subgroup_totals_before<E>(
        partials: &mut [E; GROUP / 4],
        carry: &mut [E; 1],
        total: E,
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> E {
        if lane == 0 {
            partials[subgroup] = total;
        }
        subgroups_before(partials, carry, lane, subgroup, size)
    }

    /// The tile this workgroup scans in a single-pass scan: the next one claimed from the
    /// counter `states[0]`, in the order the workgroups start (not their `workgroup_id()`),
    /// the same in every invocation.
    ///
    /// `look` is the caller's workgroup array of 3 that `lookback_prefix` takes too.
    fn lookback_claim_tile(states: &mut [AtomicU32], look: &mut [Vec2<u32>; 3], local: u32) -> u32 {
        if local == 0 {
            look[0] = vec2(states[0].fetch_add(1u32), 0u32);
        }
        workgroup_uniform_load(&look[0]).x
    }

    /// Publishes `value` as tile `tile`'s state `status` (1: the tile's own total, 2: the
    /// total of every element up to the tile's last): a word for each 16-bit half, the status
    /// above it, raised with `fetch_max` so that a state only ever moves forward.
    fn lookback_publish(states: &mut [AtomicU32], tile: u32, status: u32, value: u32) {
        states[1 + 2 * tile].fetch_max((status << 16) | (value & 0xFFFF));
        states[2 + 2 * tile].fetch_max((status << 16) | (value >> 16));
    }

    /// Tile `tile`'s state as `vec2(status, value)`: status 0 (not ready) until both its
    /// words carry the same status, so a value is never assembled from two states.
    fn lookback_read(states: &mut [AtomicU32], tile: u32) -> Vec2<u32> {
        let low = states[1 + 2 * tile].load();
        let high = states[2 + 2 * tile].load();
        let mut state = vec2(0u32, 0u32);
        if (low >> 16) == (high >> 16) {
            state = vec2(low >> 16, (low & 0xFFFF) | (high << 16));
        }
        state
    }

    /// The sum of every element before tile `tile` of a single-pass scan, through decoupled
    /// look-back; publishes the tile's own `total` first and its inclusive total last.
    ///
    /// Each step, subgroup 0 reads the states of the `size` tiles below the first one not
    /// yet summed: it adds the totals up to the nearest tile that is not ready or has
    /// published its inclusive total (added too, ending the look-back). Where the tile just
    /// below is not ready for `patience` steps running, the workgroup sums that tile of `x`
    /// itself (its `count` elements of `E` laid out as `scan_load` reads them), so no
    /// workgroup ever waits on another being scheduled. Each step's outcome reaches the
    /// workgroup through `look` and `workgroup_uniform_load`, so the loop is uniform.
    fn lookback_prefix<E>(
        x: &[E],
        count: u32,
        states: &mut [AtomicU32],
        tile: u32,
        total: u32,
        patience: u32,
        look: &mut [Vec2<u32>; 3],
        partials: &mut [u32; GROUP / 4],
        lane: u32,
        subgroup: u32,
        size: u32,
    ) -> u32 {
        let first = subgroup == 0 && lane == 0;
        if first {
            lookback_publish(states, tile, if tile == 0 { 2u32 } else { 1u32 }, total);
        }
        let mut prefix = 0u32;
        let mut next = tile;
        let mut waits = 0u32;
        let mut slot = 1u32;
        while next > 0 {
            // Lanes past tile 0 read as an inclusive 0, which ends the look-back there.
            let mut state = vec2(2u32, 0u32);
            if subgroup == 0 && lane < next {
                state = lookback_read(states, next - 1 - lane);
            }
            let stop = subgroup_min(if state.x != 1 { lane } else { size });
            let found = state.x == 2 && lane == stop;
            let sum = subgroup_add(if lane < stop || found { state.y } else { 0u32 });
            let done = subgroup_any(found);
            if first {
                look[slot] = vec2(if done { next } else { stop }, sum);
            }
            // Two slots in turn: a slot is written again only after the next step's barrier.
            let step = workgroup_uniform_load(&look[slot]);
            slot = 3 - slot;
            prefix += step.y;
            next -= step.x;
            waits = if step.x == 0 { waits + 1 } else { 0 };
            if waits > patience {
                let start = (next - 1) * GROUP * PER;
                let mut regs = [0 as E; PER];
                scan_load(&mut regs, x, start, count - start, subgroup * size + lane);
                let mut below = [0u32; 1];
                let own = scan_registers_sum(&regs);
                workgroup_inclusive_sum(partials, &mut below, own, lane, subgroup, size);
                if first {
                    lookback_publish(
                        states,
                        next - 1,
                        if next == 1 { 2u32 } else { 1u32 },
                        below[0],
                    );
                }
                prefix += below[0];
                next -= 1;
                waits = 0;
            }
        }
        if first {
            lookback_publish(states, tile, 2u32, prefix + total);
        }
        prefix
    }
}
