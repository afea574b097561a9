//! The kernels of [`crate::RadixSort`], a kernels module of their own (`sort_ops`).
//!
//! A least-significant-digit radix sort of 32-bit keys, [`BITS`](sort_ops::BITS) bits a pass:
//! keys are cut into tiles of [`TILE`](sort_ops::TILE), a workgroup each, and every pass
//!
//! 1. counts each tile's keys of each digit (`count_digits`), into `counts`, digit-major
//!    (`counts[digit * tiles + tile]`);
//! 2. scans each digit's row of counts, a workgroup a digit (`scan_counts`), so that
//!    `counts[digit * tiles + tile]` becomes the number of keys of that digit in the tiles
//!    before, and writes each digit's total;
//! 3. moves each key (and its value) to the place its digit, its tile and its rank in the tile
//!    give (`scatter`): keys of a digit keep their order, so the passes compose into a stable
//!    sort.
//!
//! Within a tile, each invocation holds the keys of one slot, slot `s` keys `s * PER ..` of
//! it, in order. Its count of each of the [`RADIX`](sort_ops::RADIX) digits is packed two to a
//! `u32` (16 bits each; a tile holds at most 2048 keys of one digit) in a pair of `Vec4<u32>`,
//! so that one workgroup sum or scan of two vectors counts every digit at once. Those sums and
//! scans run through subgroups (`count_digits`, `scatter`: an invocation holds slot `subgroup *
//! size + lane`, the order of the subgroup scans) where the device has them, and as trees in
//! workgroup memory otherwise (`count_digits_tree`, `scatter_tree`: slot `local_index()`);
//! the host picks one pair when it builds the sort. `f32` keys are sorted as their bits with the
//! sign flipped and, for negative numbers, every other bit too, which orders them as numbers
//! (`-0.0` before `0.0`, NaNs with the sign bit first and the others last).

#[tessera::kernels]
pub mod sort_ops {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::scan;

    /// Invocations in a workgroup.
    pub const GROUP: u32 = 256;

    /// Keys an invocation holds.
    pub const PER: u32 = 8;

    /// Keys a workgroup sorts into place each pass: `GROUP * PER`.
    pub const TILE: u32 = GROUP * PER;

    /// Bits of the key a pass sorts by.
    pub const BITS: u32 = 4;

    /// Digits a pass tells apart: `2^BITS`.
    pub const RADIX: u32 = 16;

    /// One pass of the sort.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, tessera::Params)]
    pub struct SortParams {
        /// Keys.
        pub n: u32,
        /// Tiles of `TILE` keys: `ceil(n / TILE)`.
        pub tiles: u32,
        /// The pass's digit: bits `shift..shift + BITS` of each key.
        pub shift: u32,
        /// 1 where the keys are the bits of `f32`s, 0 for `u32`s.
        pub float_keys: u32,
        /// 1 where a value moves with each key, 0 for keys alone.
        pub with_values: u32,
    }

    /// The digit of `key` this pass sorts by, `key` read as bits that order as the keys do.
    fn digit_of(p: &SortParams, key: u32) -> u32 {
        let mut flip = 0u32;
        if p.float_keys == 1 {
            flip = 0x80000000u32;
            if key >= 0x80000000u32 {
                flip = 0xffffffffu32;
            }
        }
        ((key ^ flip) >> p.shift) & (RADIX - 1)
    }

    /// One more key of digit `digit` in the packed counts `counts`.
    fn count_one(counts: &mut [Vec4<u32>; 2], digit: u32) {
        let lane = (digit % 8) / 2;
        counts[digit / 8][lane] += 1u32 << (16 * (digit % 2));
    }

    /// The count of digit `digit` in the packed counts `low` (digits 0 to 7) and `high`.
    fn count_of(low: Vec4<u32>, high: Vec4<u32>, digit: u32) -> u32 {
        let mut packed = low;
        if digit >= 8 {
            packed = high;
        }
        (packed[(digit % 8) / 2] >> (16 * (digit % 2))) & 0xffffu32
    }

    /// The packed counts of the digits of the keys of slot `slot` of tile `tile`, and the
    /// keys themselves in `keys_held` (past `p.n`: not counted).
    fn held_counts(
        p: &SortParams,
        keys: &[u32],
        keys_held: &mut [u32; PER],
        tile: u32,
        slot: u32,
    ) -> [Vec4<u32>; 2] {
        let mut counts = [0u32 as Vec4<u32>; 2];
        let first = tile * TILE + slot * PER;
        #[unroll]
        for k in 0..PER {
            if first + k < p.n {
                keys_held[k] = keys[first + k];
                count_one(&mut counts, digit_of(p, keys_held[k]));
            }
        }
        counts
    }

    /// Each tile's count of each digit, into `counts[digit * tiles + tile]` (the counts
    /// summed through subgroups).
    #[kernel(workgroup = [GROUP], grid = [p.tiles], features(subgroups))]
    pub fn count_digits(
        p: &SortParams,
        #[len(p.n)] keys: &[u32],
        #[len(RADIX * p.tiles)] counts: &mut [u32],
        #[workgroup] partials: &mut [Vec4<u32>; GROUP / 4],
    ) {
        let (tile, local) = (workgroup_id().x, local_index());
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let mut keys_held = [0u32; PER];
        let held = held_counts(p, keys, &mut keys_held, tile, local);
        let low = workgroup_sum(partials, held[0], lane, subgroup, size);
        let high = workgroup_sum(partials, held[1], lane, subgroup, size);
        if local < RADIX {
            counts[local * p.tiles + tile] = count_of(low, high, local);
        }
    }

    /// `count_digits` without subgroups (the counts summed by a tree in `sums`).
    #[kernel(workgroup = [GROUP], grid = [p.tiles])]
    pub fn count_digits_tree(
        p: &SortParams,
        #[len(p.n)] keys: &[u32],
        #[len(RADIX * p.tiles)] counts: &mut [u32],
        #[workgroup] sums: &mut [Vec4<u32>; GROUP],
    ) {
        let (tile, local) = (workgroup_id().x, local_index());
        let mut keys_held = [0u32; PER];
        let held = held_counts(p, keys, &mut keys_held, tile, local);
        let low = workgroup_sum_tree(sums, local, held[0]);
        let high = workgroup_sum_tree(sums, local, held[1]);
        if local < RADIX {
            counts[local * p.tiles + tile] = count_of(low, high, local);
        }
    }

    /// Each digit's row of `counts` scanned in place (exclusive: the keys of that digit in
    /// the tiles before), and its total into `totals[digit]`: a workgroup a digit.
    #[kernel(workgroup = [GROUP], grid = [RADIX])]
    pub fn scan_counts(
        p: &SortParams,
        #[len(RADIX * p.tiles)] counts: &mut [u32],
        #[len(RADIX)] totals: &mut [u32],
        #[workgroup] tile: &mut [u32; GROUP],
    ) {
        let (digit, local) = (workgroup_id().x, local_index());
        let row = digit * p.tiles;
        let mut regs = [0u32; PER];
        // The sum of the chunks before, the same in every invocation.
        let mut carry = [0u32; 1];
        for start in (0..p.tiles).step_by(TILE) {
            let count = (p.tiles - start).min(TILE);
            scan_load(&mut regs, counts, row + start, count, local);
            let own = scan_registers_exclusive(&mut regs);
            let before = workgroup_exclusive_sum_tree(tile, &mut carry, local, own);
            scan_registers_add(&mut regs, before);
            scan_store(&regs, counts, row + start, count, local);
        }
        if local == 0 {
            totals[digit] = carry[0];
        }
    }

    /// Where each digit's keys of tile `tile` start in this pass's output: the keys of smaller
    /// digits, then those of the digit in the tiles before (`counts`, scanned), into
    /// `starts[digit]`, by the first `RADIX` invocations.
    fn digit_starts(
        p: &SortParams,
        counts: &[u32],
        totals: &[u32],
        starts: &mut [u32; RADIX],
        tile: u32,
        local: u32,
    ) {
        if local < RADIX {
            let mut smaller = 0u32;
            for digit in 0..local {
                smaller += totals[digit];
            }
            starts[local] = smaller + counts[local * p.tiles + tile];
        }
    }

    /// Moves the keys `keys_held` of slot `slot` of tile `tile` (and their values, where
    /// `p.with_values` is 1) to their places: `starts[digit]` plus the keys of that digit in
    /// the slots before (`ranks`, packed as `held_counts` packs them) and before it in its own.
    fn place_keys(
        p: &SortParams,
        values: &[u32],
        keys_out: &mut [u32],
        values_out: &mut [u32],
        starts: &[u32; RADIX],
        keys_held: &[u32; PER],
        ranks: &mut [Vec4<u32>; 2],
        tile: u32,
        slot: u32,
    ) {
        let first = tile * TILE + slot * PER;
        #[unroll]
        for k in 0..PER {
            if first + k < p.n {
                let digit = digit_of(p, keys_held[k]);
                let place = starts[digit] + count_of(ranks[0], ranks[1], digit);
                count_one(ranks, digit);
                keys_out[place] = keys_held[k];
                if p.with_values == 1 {
                    values_out[place] = values[first + k];
                }
            }
        }
    }

    /// Moves each key of tile `workgroup_id().x` (and its value, where `p.with_values` is 1)
    /// to its place for this pass: the keys of smaller digits, then those of its digit in the
    /// tiles before (`counts`, scanned) and before it in its tile. The ranks within the tile
    /// come from scans through subgroups, in `(subgroup, lane)` order: an invocation holds the
    /// keys of slot `subgroup * size + lane` of the tile.
    #[kernel(workgroup = [GROUP], grid = [p.tiles], features(subgroups))]
    pub fn scatter(
        p: &SortParams,
        #[len(p.n)] keys: &[u32],
        values: &[u32],
        #[len(RADIX * p.tiles)] counts: &[u32],
        #[len(RADIX)] totals: &[u32],
        #[len(p.n)] keys_out: &mut [u32],
        values_out: &mut [u32],
        #[workgroup] partials: &mut [Vec4<u32>; GROUP / 4],
        #[workgroup] starts: &mut [u32; RADIX],
    ) {
        let (tile, local) = (workgroup_id().x, local_index());
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let slot = subgroup * size + lane;
        digit_starts(p, counts, totals, starts, tile, local);
        let mut keys_held = [0u32; PER];
        let held = held_counts(p, keys, &mut keys_held, tile, slot);
        // Each digit's keys in the slots before this one, then counted on through the slot's
        // own keys.
        let mut low_carry = [0u32 as Vec4<u32>; 1];
        let mut high_carry = [0u32 as Vec4<u32>; 1];
        let mut ranks = [
            workgroup_exclusive_sum(partials, &mut low_carry, held[0], lane, subgroup, size),
            workgroup_exclusive_sum(partials, &mut high_carry, held[1], lane, subgroup, size),
        ];
        place_keys(
            p, values, keys_out, values_out, starts, &keys_held, &mut ranks, tile, slot,
        );
    }

    /// `scatter` without subgroups (the ranks from tree scans in `sums`; an invocation holds
    /// the keys of slot `local_index()`).
    #[kernel(workgroup = [GROUP], grid = [p.tiles])]
    pub fn scatter_tree(
        p: &SortParams,
        #[len(p.n)] keys: &[u32],
        values: &[u32],
        #[len(RADIX * p.tiles)] counts: &[u32],
        #[len(RADIX)] totals: &[u32],
        #[len(p.n)] keys_out: &mut [u32],
        values_out: &mut [u32],
        #[workgroup] sums: &mut [Vec4<u32>; GROUP],
        #[workgroup] starts: &mut [u32; RADIX],
    ) {
        let (tile, local) = (workgroup_id().x, local_index());
        digit_starts(p, counts, totals, starts, tile, local);
        let mut keys_held = [0u32; PER];
        let held = held_counts(p, keys, &mut keys_held, tile, local);
        let mut low_carry = [0u32 as Vec4<u32>; 1];
        let mut high_carry = [0u32 as Vec4<u32>; 1];
        let mut ranks = [
            workgroup_exclusive_sum_tree(sums, &mut low_carry, local, held[0]),
            workgroup_exclusive_sum_tree(sums, &mut high_carry, local, held[1]),
        ];
        place_keys(
            p, values, keys_out, values_out, starts, &keys_held, &mut ranks, tile, local,
        );
    }
}
