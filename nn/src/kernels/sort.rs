//! The kernels of [`crate::RadixSort`], a kernels module of their own (`sort_ops`).
//!
//! A least-significant-digit radix sort of 32-bit keys: keys are cut into tiles, a workgroup
//! each, and every pass
//!
//! 1. counts each tile's keys of each digit (`count_bytes`, `count_digits_tree`), into
//!    `counts`, digit-major (`counts[digit * tiles + tile]`);
//! 2. scans each digit's row of counts, a workgroup a digit (`scan_counts`), so that
//!    `counts[digit * tiles + tile]` becomes the number of keys of that digit in the tiles
//!    before, and writes each digit's total;
//! 3. moves each key (and its value) to the place its digit, its tile and its rank in the tile
//!    give (`scatter_bytes`, `scatter_tree`): keys of a digit keep their order, so the passes
//!    compose into a stable sort.
//!
//! Two ways, which the host picks once when it builds the sort:
//!
//! - **A byte a pass, through subgroups** (4 passes; devices with subgroups of at least 8
//!   invocations and 17 KiB of workgroup memory): tiles of [`BYTE_TILE`](sort_ops::BYTE_TILE)
//!   keys; `count_bytes` counts with atomics in workgroup memory; `scatter_bytes` ranks each
//!   round of a subgroup's keys by ballots (the lanes holding the same byte), keeps each
//!   subgroup's count of each byte in workgroup memory, then sorts the tile by the byte in
//!   workgroup memory and writes it out, so that consecutive invocations write consecutive
//!   places of a byte's run.
//! - **4 bits a pass, by trees** (8 passes; any device): tiles of [`TILE`](sort_ops::TILE)
//!   keys; invocation `local` holds keys `local * PER ..` of its tile, and its count of each of
//!   the [`RADIX`](sort_ops::RADIX) digits is packed two to a `u32` (16 bits each; a tile holds
//!   at most 2048 keys of one digit) in a pair of `Vec4<u32>`, so that one workgroup sum or
//!   scan of two vectors (trees in workgroup memory) counts or ranks every digit at once.
//!
//! `f32` keys are sorted as their bits with the sign flipped and, for negative numbers, every
//! other bit too, which orders them as numbers (`-0.0` before `0.0`, NaNs with the sign bit
//! first and the others last).

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
        /// Digits the pass tells apart: `RADIX` (4 bits), or `BYTE_RADIX` (a byte).
        pub radix: u32,
    }

    /// `key` read as bits that order as the keys do, shifted down to this pass's digit.
    fn ordered_from_shift(p: &SortParams, key: u32) -> u32 {
        let mut flip = 0u32;
        if p.float_keys == 1 {
            flip = 0x80000000u32;
            if key >= 0x80000000u32 {
                flip = 0xffffffffu32;
            }
        }
        (key ^ flip) >> p.shift
    }

    /// The digit (4 bits) of `key` this pass sorts by.
    fn digit_of(p: &SortParams, key: u32) -> u32 {
        ordered_from_shift(p, key) & (RADIX - 1)
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

    /// Each tile's count of each digit (4 bits), into `counts[digit * tiles + tile]`, summed by
    /// trees in `sums`.
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
    #[kernel(workgroup = [GROUP], grid = [p.radix])]
    pub fn scan_counts(
        p: &SortParams,
        #[len(p.radix * p.tiles)] counts: &mut [u32],
        #[len(p.radix)] totals: &mut [u32],
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
    /// to its place for this 4-bit pass: the keys of smaller digits, then those of its digit in
    /// the tiles before (`counts`, scanned) and before it in its tile (tree scans in `sums`; an
    /// invocation holds the keys of slot `local_index()`).
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

    /// Invocations in a workgroup of the byte passes (`count_bytes`, `scatter_bytes`).
    pub const BYTE_GROUP: u32 = 128;

    /// Keys an invocation of a byte pass holds.
    pub const BYTE_PER: u32 = 32;

    /// Keys a workgroup of a byte pass sorts into place: `BYTE_GROUP * BYTE_PER`.
    pub const BYTE_TILE: u32 = BYTE_GROUP * BYTE_PER;

    /// Digits a byte pass tells apart.
    pub const BYTE_RADIX: u32 = 256;

    /// The most subgroups a workgroup of `scatter_bytes` may have: its subgroups hold at least
    /// 8 invocations (the host runs the byte passes only then).
    pub const BYTE_SUBGROUPS: u32 = BYTE_GROUP / 8;

    /// The byte of `key` this pass sorts by.
    fn byte_of(p: &SortParams, key: u32) -> u32 {
        ordered_from_shift(p, key) & (BYTE_RADIX - 1)
    }

    /// Each tile's count of each byte, into `counts[byte * tiles + tile]`, by atomics in
    /// workgroup memory.
    #[kernel(workgroup = [BYTE_GROUP], grid = [p.tiles])]
    pub fn count_bytes(
        p: &SortParams,
        #[len(p.n)] keys: &[u32],
        #[len(BYTE_RADIX * p.tiles)] counts: &mut [u32],
        #[workgroup] histogram: &mut [AtomicU32; BYTE_RADIX],
    ) {
        let (tile, local) = (workgroup_id().x, local_index());
        #[unroll]
        for k in 0..BYTE_RADIX / BYTE_GROUP {
            histogram[k * BYTE_GROUP + local].store(0u32);
        }
        // Every key loaded before the first count, so that the loads are in flight together.
        let mut held = [0u32; BYTE_PER];
        #[unroll]
        for k in 0..BYTE_PER {
            let i = tile * BYTE_TILE + k * BYTE_GROUP + local;
            if i < p.n {
                held[k] = keys[i];
            }
        }
        workgroup_barrier();
        #[unroll]
        for k in 0..BYTE_PER {
            if tile * BYTE_TILE + k * BYTE_GROUP + local < p.n {
                histogram[byte_of(p, held[k])].fetch_add(1u32);
            }
        }
        workgroup_barrier();
        #[unroll]
        for k in 0..BYTE_RADIX / BYTE_GROUP {
            let byte = k * BYTE_GROUP + local;
            counts[byte * p.tiles + tile] = histogram[byte].load();
        }
    }

    /// The lanes of a subgroup below `lane`, as `subgroup_ballot` marks them.
    fn lanes_below(lane: u32) -> Vec4<u32> {
        let mut below = 0u32 as Vec4<u32>;
        #[unroll]
        for c in 0..4u32 {
            if lane >= 32 * (c + 1) {
                below[c] = 0xffffffffu32;
            } else if lane > 32 * c {
                below[c] = (1u32 << (lane - 32 * c)) - 1u32;
            }
        }
        below
    }

    /// The lowest lane `lanes` marks (0 for none).
    fn lowest_lane(lanes: Vec4<u32>) -> u32 {
        let mut lowest = 0u32;
        #[unroll]
        for c in 0..4u32 {
            let k = 3 - c;
            if lanes[k] != 0u32 {
                lowest = 32 * k + lanes[k].trailing_zeros();
            }
        }
        lowest
    }

    /// How many lanes `lanes` marks.
    fn lane_count(lanes: Vec4<u32>) -> u32 {
        let n = lanes.count_ones();
        n.x + n.y + n.z + n.w
    }

    /// Moves each key of tile `workgroup_id().x` (and its value, where `p.with_values` is 1)
    /// to its place for this byte pass. Subgroup `s` (of `size` lanes) takes the tile's keys
    /// from `s * size * BYTE_PER` on, `size` consecutive keys a round; each round, each lane
    /// finds the lanes holding its byte (eight ballots), and the lowest of them adds their
    /// number to the subgroup's count of that byte in `ranked` and hands the count before to
    /// the others. Each byte's counts are then scanned over the subgroups from where the byte
    /// starts in the tile sorted by it, which gives each key its place in that sorted tile;
    /// the keys (then the values) go there in `ranked`, and from there to the output, each
    /// moved by how far its byte's run starts from its place in the tile (`moves`).
    #[kernel(workgroup = [BYTE_GROUP], grid = [p.tiles], features(subgroups),
             limits(workgroup_memory = 17472))]
    pub fn scatter_bytes(
        p: &SortParams,
        #[len(p.n)] keys: &[u32],
        values: &[u32],
        #[len(BYTE_RADIX * p.tiles)] counts: &[u32],
        #[len(BYTE_RADIX)] totals: &[u32],
        #[len(p.n)] keys_out: &mut [u32],
        values_out: &mut [u32],
        #[workgroup] ranked: &mut [u32; BYTE_SUBGROUPS * BYTE_RADIX],
        #[workgroup] subgroup_totals: &mut [u32; BYTE_SUBGROUPS],
        #[workgroup] moves: &mut [u32; BYTE_RADIX],
    ) {
        let (tile, local) = (workgroup_id().x, local_index());
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        // Where the keys of bytes `pair` and `pair + 1` start: the keys of smaller bytes (a
        // scan of the totals, in `(subgroup, lane)` order), then those of the byte in the
        // tiles before.
        let pair = 2 * (subgroup * size + lane);
        let (first, second) = (totals[pair], totals[pair + 1]);
        let inner = subgroup_exclusive_add(first + second);
        if lane == size - 1 {
            subgroup_totals[subgroup] = inner + first + second;
        }
        #[unroll]
        for k in 0..BYTE_SUBGROUPS * BYTE_RADIX / BYTE_GROUP {
            ranked[k * BYTE_GROUP + local] = 0u32;
        }
        workgroup_barrier();
        let mut smaller = inner;
        for s in 0..subgroup {
            smaller += subgroup_totals[s];
        }
        let starts = [
            smaller + counts[pair * p.tiles + tile],
            smaller + first + counts[(pair + 1) * p.tiles + tile],
        ];
        let below = lanes_below(lane);
        let first_key = tile * BYTE_TILE + subgroup * size * BYTE_PER + lane;
        // Every key loaded before the first round, so that the loads are in flight together
        // rather than one a round between barriers.
        let mut held = [0u32; BYTE_PER];
        #[unroll]
        for r in 0..BYTE_PER {
            let i = first_key + r * size;
            if i < p.n {
                held[r] = keys[i];
            }
        }
        let mut ranks = [0u32; BYTE_PER];
        #[unroll]
        for r in 0..BYTE_PER {
            let inside = first_key + r * size < p.n;
            let mut byte = 0u32;
            if inside {
                byte = byte_of(p, held[r]);
            }
            let mut peers = subgroup_ballot(inside);
            #[unroll]
            for b in 0..8u32 {
                let set = subgroup_ballot(((byte >> b) & 1u32) == 1u32);
                if ((byte >> b) & 1u32) == 1u32 {
                    peers = peers & set;
                } else {
                    peers = peers & !set;
                }
            }
            let leader = lowest_lane(peers);
            let mut before = 0u32;
            if inside && leader == lane {
                before = ranked[subgroup * BYTE_RADIX + byte];
                ranked[subgroup * BYTE_RADIX + byte] = before + lane_count(peers);
            }
            ranks[r] = subgroup_shuffle(before, leader) + lane_count(peers & below);
            workgroup_barrier();
        }
        // The tile's count of bytes `pair` and `pair + 1`, and where its keys of them start
        // in the tile sorted by this byte (a scan of the counts, as of the totals above).
        let subgroups = BYTE_GROUP / size;
        let mut tile_counts = [0u32; 2];
        #[unroll]
        for k in 0..2u32 {
            for s in 0..subgroups {
                tile_counts[k] += ranked[s * BYTE_RADIX + pair + k];
            }
        }
        let inner = subgroup_exclusive_add(tile_counts[0] + tile_counts[1]);
        if lane == size - 1 {
            subgroup_totals[subgroup] = inner + tile_counts[0] + tile_counts[1];
        }
        workgroup_barrier();
        let mut before = inner;
        for s in 0..subgroup {
            before += subgroup_totals[s];
        }
        let sorted_starts = [before, before + tile_counts[0]];
        // Each byte's counts over the subgroups, scanned from where the byte starts in the
        // sorted tile; and how far the byte's keys move from there to the output.
        #[unroll]
        for k in 0..2u32 {
            let mut at = sorted_starts[k];
            for s in 0..subgroups {
                let count = ranked[s * BYTE_RADIX + pair + k];
                ranked[s * BYTE_RADIX + pair + k] = at;
                at += count;
            }
            moves[pair + k] = starts[k] - sorted_starts[k];
        }
        workgroup_barrier();
        #[unroll]
        for r in 0..BYTE_PER {
            ranks[r] += ranked[subgroup * BYTE_RADIX + byte_of(p, held[r])];
        }
        workgroup_barrier();
        // The tile sorted by this byte, in `ranked` (keys, then values), so that consecutive
        // invocations write consecutive places of each byte's run.
        #[unroll]
        for r in 0..BYTE_PER {
            if first_key + r * size < p.n {
                ranked[ranks[r]] = held[r];
            }
        }
        workgroup_barrier();
        let in_tile = (p.n - tile * BYTE_TILE).min(BYTE_TILE);
        #[unroll]
        for k in 0..BYTE_PER {
            let j = k * BYTE_GROUP + local;
            if j < in_tile {
                let key = ranked[j];
                // Where the value goes, for the second round.
                held[k] = j + moves[byte_of(p, key)];
                keys_out[held[k]] = key;
            }
        }
        if p.with_values == 1 {
            workgroup_barrier();
            #[unroll]
            for r in 0..BYTE_PER {
                let i = first_key + r * size;
                if i < p.n {
                    ranked[ranks[r]] = values[i];
                }
            }
            workgroup_barrier();
            #[unroll]
            for k in 0..BYTE_PER {
                let j = k * BYTE_GROUP + local;
                if j < in_tile {
                    values_out[held[k]] = ranked[j];
                }
            }
        }
    }
}
