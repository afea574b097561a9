//! A whole-buffer prefix sum of `u32`s built from `tessera::std::scan`, checked against a CPU
//! scan and timed beside a plain copy (the bandwidth ceiling). **One pass** ([`OnePassScan`]):
//! each workgroup claims a tile, scans it in registers and adds the sum of the tiles below it,
//! learnt by decoupled look-back (why that is correct on WebGPU: `tessera::std::scan`'s docs);
//! it reads the input once and needs subgroups. **Reduce, then scan** ([`BufferScan`]), three
//! passes of one submission: (1) each workgroup sums its tile into `totals`; (2) one workgroup
//! scans `totals` in place by chunks; (3) each workgroup scans its tile from its offset; it
//! reads the input twice, through subgroups or workgroup memory only. Each invocation holds
//! `PER` elements: `Vec4<u32>`s where the length is a multiple of 4, scalars otherwise.
//! [`buffer_scan`] is the kernels module to copy (or to import from this file, as
//! `tests/std_scan.rs` does).
//!
//! ```text
//! cargo run --release --example std_scan          # 2^26 u32
//! cargo run --release --example std_scan -- N     # N u32
//! ```
//!
//! `tests/examples.rs` runs it at a small size on whatever adapter the tests have. Bytes in
//! the table: each element read once and written once (the three passes read it twice).

use std::time::Duration;

use tessera::{Batch, GpuBuffer, Result, Runtime};

#[path = "shared/timing.rs"]
mod timing;
use timing::{print_table, time, Row};

#[tessera::kernels]
pub mod buffer_scan {
    #[device]
    use tessera::std::reduce;
    #[device]
    use tessera::std::scan;

    /// The tiling of the three passes: a workgroup of `GROUP` invocations, each holding `PER`
    /// elements, so a tile of `GROUP * PER` (of `T`: scalars or `Vec4`s).
    #[constants(GROUP = [256, 64], PER = 4)]
    pub struct Tiling;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Shape {
        /// Elements of `T` to scan.
        pub n: u32,
        /// Tiles, `ceil_div(n, GROUP * PER)`: the length of `totals`.
        pub tiles: u32,
        /// 1 for an exclusive scan, 0 for an inclusive one.
        pub exclusive: u32,
    }

    /// Pass 1: the sum of each tile of `x` into `totals[tile]`.
    #[kernel(workgroup = [GROUP], constants = Tiling, grid = [p.tiles],
             types(T = [u32, Vec4<u32>]), features(subgroups))]
    pub fn tile_totals<T>(
        p: &Shape,
        #[len(p.n)] x: &[T],
        #[len(p.tiles)] totals: &mut [u32],
        #[workgroup] partials: &mut [u32; GROUP / 4],
    ) {
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let start = workgroup_id().x * GROUP * PER;
        let mut regs = [0 as T; PER];
        scan_load(&mut regs, x, start, p.n - start, subgroup * size + lane);
        let total = workgroup_sum(partials, scan_registers_sum(&regs), lane, subgroup, size);
        if local_index() == 0 {
            totals[workgroup_id().x] = total;
        }
    }

    /// Pass 2: `totals` scanned in place, exclusive, by one workgroup, a chunk of `GROUP *
    /// PER` at a time.
    #[kernel(workgroup = [GROUP], constants = Tiling, grid = [1], features(subgroups))]
    pub fn scan_totals(
        p: &Shape,
        #[len(p.tiles)] totals: &mut [u32],
        #[workgroup] partials: &mut [u32; GROUP / 4],
    ) {
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let position = subgroup * size + lane;
        let mut carry = [0u32; 1];
        for start in (0..p.tiles).step_by(GROUP * PER) {
            let mut regs = [0u32; PER];
            scan_load(&mut regs, totals, start, p.tiles - start, position);
            let own = scan_registers_exclusive(&mut regs);
            let offset = workgroup_exclusive_sum(partials, &mut carry, own, lane, subgroup, size);
            scan_registers_add(&mut regs, offset);
            scan_store(&regs, totals, start, p.tiles - start, position);
        }
    }

    /// Pass 3: each tile of `x` scanned into `y` from its offset `offsets[tile]`.
    #[kernel(workgroup = [GROUP], constants = Tiling, grid = [p.tiles],
             types(T = [u32, Vec4<u32>]), features(subgroups))]
    pub fn scan_tiles<T>(
        p: &Shape,
        #[len(p.n)] x: &[T],
        #[len(p.tiles)] offsets: &[u32],
        #[len(p.n)] y: &mut [T],
        #[workgroup] partials: &mut [u32; GROUP / 4],
    ) {
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let position = subgroup * size + lane;
        let start = workgroup_id().x * GROUP * PER;
        let mut regs = [0 as T; PER];
        scan_load(&mut regs, x, start, p.n - start, position);
        let own = if p.exclusive == 1 {
            scan_registers_exclusive(&mut regs)
        } else {
            scan_registers_inclusive(&mut regs)
        };
        let mut carry = [offsets[workgroup_id().x]; 1];
        let offset = workgroup_exclusive_sum(partials, &mut carry, own, lane, subgroup, size);
        scan_registers_add(&mut regs, offset);
        scan_store(&regs, y, start, p.n - start, position);
    }

    /// [`tile_totals`] without subgroups.
    #[kernel(workgroup = [GROUP], constants = Tiling, grid = [p.tiles],
             types(T = [u32, Vec4<u32>]))]
    pub fn tile_totals_tree<T>(
        p: &Shape,
        #[len(p.n)] x: &[T],
        #[len(p.tiles)] totals: &mut [u32],
        #[workgroup] tile: &mut [u32; GROUP],
    ) {
        let local = local_index();
        let start = workgroup_id().x * GROUP * PER;
        let mut regs = [0 as T; PER];
        scan_load(&mut regs, x, start, p.n - start, local);
        let total = workgroup_sum_tree(tile, local, scan_registers_sum(&regs));
        if local == 0 {
            totals[workgroup_id().x] = total;
        }
    }

    /// [`scan_totals`] without subgroups.
    #[kernel(workgroup = [GROUP], constants = Tiling, grid = [1])]
    pub fn scan_totals_tree(
        p: &Shape,
        #[len(p.tiles)] totals: &mut [u32],
        #[workgroup] tile: &mut [u32; GROUP],
    ) {
        let local = local_index();
        let mut carry = [0u32; 1];
        for start in (0..p.tiles).step_by(GROUP * PER) {
            let mut regs = [0u32; PER];
            scan_load(&mut regs, totals, start, p.tiles - start, local);
            let own = scan_registers_exclusive(&mut regs);
            let offset = workgroup_exclusive_sum_tree(tile, &mut carry, local, own);
            scan_registers_add(&mut regs, offset);
            scan_store(&regs, totals, start, p.tiles - start, local);
        }
    }

    /// [`scan_tiles`] without subgroups.
    #[kernel(workgroup = [GROUP], constants = Tiling, grid = [p.tiles],
             types(T = [u32, Vec4<u32>]))]
    pub fn scan_tiles_tree<T>(
        p: &Shape,
        #[len(p.n)] x: &[T],
        #[len(p.tiles)] offsets: &[u32],
        #[len(p.n)] y: &mut [T],
        #[workgroup] tile: &mut [u32; GROUP],
    ) {
        let local = local_index();
        let start = workgroup_id().x * GROUP * PER;
        let mut regs = [0 as T; PER];
        scan_load(&mut regs, x, start, p.n - start, local);
        let own = if p.exclusive == 1 {
            scan_registers_exclusive(&mut regs)
        } else {
            scan_registers_inclusive(&mut regs)
        };
        let mut carry = [offsets[workgroup_id().x]; 1];
        let offset = workgroup_exclusive_sum_tree(tile, &mut carry, local, own);
        scan_registers_add(&mut regs, offset);
        scan_store(&regs, y, start, p.n - start, local);
    }

    /// `y = x`, a `Vec4` an invocation: the bandwidth a scan can reach.
    #[kernel(workgroup = [256], grid = [ceil_div(x.len(), 256)])]
    pub fn copy(x: &[Vec4<u32>], y: &mut [Vec4<u32>]) {
        let i = global_id().x;
        if i < x.len() && i < y.len() {
            y[i] = x[i];
        }
    }

    /// The single pass's tiling: workgroups of `GROUP` holding `PER` elements each, a
    /// subgroup's run after another's (`scan_load_striped`), so that each load and store
    /// instruction moves consecutive elements. (512 x 4 `Vec4<u32>`s measured fastest on the
    /// H200: fewer, larger tiles spend less time looking back; 64 is for the tests.)
    #[constants(GROUP = [512, 64], PER = 4)]
    pub struct OnePassTiling;

    /// The single pass's shape and knobs.
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct OnePass {
        /// Elements of `T` to scan.
        pub n: u32,
        /// Tiles, `ceil_div(n, GROUP * PER)`.
        pub tiles: u32,
        /// 1 for an exclusive scan, 0 for an inclusive one.
        pub exclusive: u32,
        /// Look-back steps waiting on the tile just below before summing it from `x` instead
        /// (`lookback_prefix`'s `patience`).
        pub patience: u32,
        /// Which tile a workgroup scans ([`TileOrder`](super::TileOrder)): 0 the next one
        /// claimed from `states[0]`, 1 the claimed one counted from the last, 2 its
        /// `workgroup_id().x` (the next turn's adds the grid's width).
        pub order: u32,
    }

    /// The single pass: each workgroup claims a tile, scans it in registers, and adds the sum
    /// of the tiles before it, found by decoupled look-back. A grid holds at most 65,535
    /// workgroups: past that many tiles, each claims another until none are left. `states`
    /// must be zero at the start ([`clear_states`]).
    #[kernel(workgroup = [GROUP], constants = OnePassTiling, grid = [min(p.tiles, 65535)],
             types(T = [u32, Vec4<u32>]), features(subgroups), limits(invocations = GROUP))]
    pub fn scan_single_pass<T>(
        p: &OnePass,
        #[len(p.n)] x: &[T],
        #[len(2 * p.tiles + 1)] states: &mut [AtomicU32],
        #[len(p.n)] y: &mut [T],
        #[workgroup] partials: &mut [u32; GROUP / 4],
        #[workgroup] look: &mut [Vec2<u32>; 3],
    ) {
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let mut turn = 0u32;
        loop {
            let mut claimed = workgroup_id().x + turn * num_workgroups().x;
            if p.order != 2 {
                claimed = lookback_claim_tile(states, look, local_index());
            }
            if claimed >= p.tiles {
                break;
            }
            let tile = if p.order == 1 {
                p.tiles - 1 - claimed
            } else {
                claimed
            };
            turn += 1;
            let start = tile * GROUP * PER;
            let count = p.n - start;
            let mut regs = [0 as T; PER];
            scan_load_striped(&mut regs, x, start, count, lane, subgroup, size);
            let own = if p.exclusive == 1 {
                scan_striped_exclusive(&mut regs)
            } else {
                scan_striped_inclusive(&mut regs)
            };
            let mut total = [0u32; 1];
            let offset = subgroup_totals_before(partials, &mut total, own, lane, subgroup, size);
            let (n, patience) = (p.n, p.patience);
            let before = lookback_prefix(
                x, n, states, tile, total[0], patience, look, partials, lane, subgroup, size,
            );
            scan_registers_add(&mut regs, before + offset);
            scan_store_striped(&regs, y, start, count, lane, subgroup, size);
            if p.tiles <= 65535 {
                break; // a tile each: no second claim to find none left
            }
        }
    }

    /// Zeroes the single pass's `states` before a scan.
    #[kernel(workgroup = [256], grid = [ceil_div(states.len(), 256)])]
    pub fn clear_states(states: &mut [u32]) {
        let i = global_id().x;
        if i < states.len() {
            states[i] = 0;
        }
    }
}

use buffer_scan as k;

/// Which workgroup scan the three passes use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Subgroup operations (`features(subgroups)`).
    Subgroups,
    /// Workgroup memory only: runs everywhere.
    Tree,
}

/// The element types the passes take: `u32`, or `[u32; 4]` (`Vec4<u32>`) for a length that
/// is a multiple of 4.
pub trait Element:
    k::TileTotalsElement
    + k::ScanTilesElement
    + k::TileTotalsTreeElement
    + k::ScanTilesTreeElement
    + k::ScanSinglePassElement
    + bytemuck::Pod
{
}

impl Element for u32 {}
impl Element for [u32; 4] {}

/// The passes' launchers, for one path, tiling and element type.
pub enum BufferScan<T: Element> {
    Subgroups(k::TileTotals<T>, k::ScanTotals, k::ScanTiles<T>),
    Tree(k::TileTotalsTree<T>, k::ScanTotalsTree, k::ScanTilesTree<T>),
}

impl<T: Element> BufferScan<T> {
    /// The launchers of `path` with `tiling` (`Tiling { group: 256 }`).
    pub fn new(rt: &Runtime, path: Path, tiling: k::Tiling) -> Result<Self> {
        Ok(match path {
            Path::Subgroups => Self::Subgroups(
                k::TileTotals::with_constants(rt, tiling)?,
                k::ScanTotals::with_constants(rt, tiling)?,
                k::ScanTiles::with_constants(rt, tiling)?,
            ),
            Path::Tree => Self::Tree(
                k::TileTotalsTree::with_constants(rt, tiling)?,
                k::ScanTotalsTree::with_constants(rt, tiling)?,
                k::ScanTilesTree::with_constants(rt, tiling)?,
            ),
        })
    }

    /// The shape of a scan of `n` elements of `T` with `tiling`.
    pub fn shape(tiling: k::Tiling, n: u32, exclusive: bool) -> k::Shape {
        k::Shape {
            n,
            tiles: n.div_ceil(tiling.group * tiling.per()),
            exclusive: exclusive as u32,
        }
    }

    /// Records the scan of `x` into `y`: the three passes, in order. `totals` holds
    /// `p.tiles` values, the tiles' offsets afterwards.
    pub fn record(
        &self,
        batch: &mut Batch<'_>,
        p: &k::Shape,
        x: &GpuBuffer<T>,
        totals: &mut GpuBuffer<u32>,
        y: &mut GpuBuffer<T>,
    ) -> Result<()> {
        match self {
            Self::Subgroups(reduce, scan_totals, scan) => {
                reduce.record(batch, k::TileTotalsArgs { p, x, totals })?;
                scan_totals.record(batch, k::ScanTotalsArgs { p, totals })?;
                scan.record(
                    batch,
                    k::ScanTilesArgs {
                        p,
                        x,
                        offsets: totals,
                        y,
                    },
                )
            }
            Self::Tree(reduce, scan_totals, scan) => {
                reduce.record(batch, k::TileTotalsTreeArgs { p, x, totals })?;
                scan_totals.record(batch, k::ScanTotalsTreeArgs { p, totals })?;
                scan.record(
                    batch,
                    k::ScanTilesTreeArgs {
                        p,
                        x,
                        offsets: totals,
                        y,
                    },
                )
            }
        }
    }
}

/// Which tile each workgroup of the single pass scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileOrder {
    /// The next one claimed from a counter, in the order the workgroups start: a workgroup
    /// that looks back finds the tiles below it started.
    Claimed,
    /// The claimed one counted from the last, so that each look-back finds the tile below
    /// not started: the tests' way to run the fallback.
    ClaimedFromLast,
    /// The workgroup's `workgroup_id().x`, with no claim (an atomic and a barrier less before
    /// the tile's loads); a tile below not yet started is summed from the input after the
    /// patience runs out, so nothing waits on the order the GPU starts workgroups in. On an
    /// H200, 2^26 `u32`s in 0.1662 ms against 0.1737 claimed (2026-11-29, commit `08cf403`).
    Launch,
}

/// The single pass's knobs (`OnePass`'s last two fields).
#[derive(Clone, Copy, Debug)]
pub struct LookBack {
    /// Look-back steps waiting on the tile below before summing it from the input.
    pub patience: u32,
    /// Which tile each workgroup scans.
    pub order: TileOrder,
}

impl Default for LookBack {
    fn default() -> Self {
        Self {
            patience: 64,
            order: TileOrder::Claimed,
        }
    }
}

/// The single pass's launchers: the states' clearing and the scan.
pub struct OnePassScan<T: Element> {
    clear: k::ClearStates,
    scan: k::ScanSinglePass<T>,
    tiling: k::OnePassTiling,
    look_back: LookBack,
}

impl<T: Element> OnePassScan<T> {
    /// The launchers with `tiling` and `look_back`.
    pub fn new(rt: &Runtime, tiling: k::OnePassTiling, look_back: LookBack) -> Result<Self> {
        Ok(Self {
            clear: k::ClearStates::new(rt)?,
            scan: k::ScanSinglePass::with_constants(rt, tiling)?,
            tiling,
            look_back,
        })
    }

    /// The shape of a scan of `n` elements of `T`.
    pub fn shape(&self, n: u32, exclusive: bool) -> k::OnePass {
        k::OnePass {
            n,
            tiles: n.div_ceil(self.tiling.group * self.tiling.per()),
            exclusive: exclusive as u32,
            patience: self.look_back.patience,
            order: match self.look_back.order {
                TileOrder::Claimed => 0,
                TileOrder::ClaimedFromLast => 1,
                TileOrder::Launch => 2,
            },
        }
    }

    /// Records the scan of `x` into `y`; `states` holds `2 * p.tiles + 1` `u32`s, each
    /// tile's inclusive total afterwards (two 16-bit halves, status 2 above each).
    pub fn record(
        &self,
        batch: &mut Batch<'_>,
        p: &k::OnePass,
        x: &GpuBuffer<T>,
        states: &mut GpuBuffer<u32>,
        y: &mut GpuBuffer<T>,
    ) -> Result<()> {
        self.clear.record(batch, k::ClearStatesArgs { states })?;
        self.scan
            .record(batch, k::ScanSinglePassArgs { p, x, states, y })
    }

    /// Scans the `u32`s `x` (as `T`): the result and the states, read back.
    pub fn scan(&self, rt: &Runtime, x: &[u32], exclusive: bool) -> Result<(Vec<u32>, Vec<u32>)> {
        let lanes = std::mem::size_of::<T>() / 4;
        let p = self.shape((x.len() / lanes) as u32, exclusive);
        let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(x))?;
        let mut states = rt.zeros::<u32>(2 * p.tiles as usize + 1)?;
        let mut y: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(&vec![0; x.len()]))?;
        let mut batch = rt.batch();
        self.record(&mut batch, &p, &xs, &mut states, &mut y)?;
        batch.submit()?;
        Ok((
            bytemuck::cast_slice(&y.read(rt)?).to_vec(),
            states.read(rt)?,
        ))
    }
}

/// Scans the `u32`s `x` on the GPU (as `T`, `u32` or `[u32; 4]`): the whole result, read back.
pub fn scan_on_gpu<T: Element>(
    rt: &Runtime,
    path: Path,
    tiling: k::Tiling,
    x: &[u32],
    exclusive: bool,
) -> Result<Vec<u32>> {
    let lanes = std::mem::size_of::<T>() / 4;
    assert!(x.len().is_multiple_of(lanes), "whole elements of T");
    let scan = BufferScan::<T>::new(rt, path, tiling)?;
    let p = BufferScan::<T>::shape(tiling, (x.len() / lanes) as u32, exclusive);
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(x))?;
    let mut totals = rt.zeros::<u32>(p.tiles.max(1) as usize)?;
    let mut y: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(&vec![0; x.len()]))?;
    let mut batch = rt.batch();
    scan.record(&mut batch, &p, &xs, &mut totals, &mut y)?;
    batch.submit()?;
    Ok(bytemuck::cast_slice(&y.read(rt)?).to_vec())
}

/// The scan on the CPU, wrapping as the GPU's does.
pub fn scan_reference(x: &[u32], exclusive: bool) -> Vec<u32> {
    let mut acc = 0u32;
    x.iter()
        .map(|&v| {
            let before = acc;
            acc = acc.wrapping_add(v);
            if exclusive {
                before
            } else {
                acc
            }
        })
        .collect()
}

/// Values in 0..1024, from a fixed sequence.
pub fn inputs(n: usize) -> Vec<u32> {
    let mut state = 0x2545_f491_u32;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state >> 22
        })
        .collect()
}

/// Panics unless `got` is `want`, naming the first difference.
fn check(what: &str, got: &[u32], want: &[u32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: element {i} is {}, want {}", got[i], want[i]);
    }
}

/// Times and checks the scan of `x` as `T` through `path` with `tiling`, inclusive, and
/// checks the exclusive scan too.
fn time_scan<T: Element>(
    rt: &Runtime,
    path: Path,
    tiling: k::Tiling,
    x: &[u32],
    want: &[u32],
    reps: u32,
) -> Result<Duration> {
    let lanes = std::mem::size_of::<T>() / 4;
    let scan = BufferScan::<T>::new(rt, path, tiling)?;
    let p = BufferScan::<T>::shape(tiling, (x.len() / lanes) as u32, false);
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(x))?;
    let mut totals = rt.zeros::<u32>(p.tiles.max(1) as usize)?;
    let mut y: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(&vec![0; x.len()]))?;
    let t = time(rt, reps, |b| scan.record(b, &p, &xs, &mut totals, &mut y))?;
    let what = format!("{path:?}, GROUP {}, {lanes} lanes", tiling.group);
    check(&what, bytemuck::cast_slice(&y.read(rt)?), want);
    let exclusive = scan_on_gpu::<T>(rt, path, tiling, x, true)?;
    check(
        &format!("{what}, exclusive"),
        &exclusive,
        &scan_reference(x, true),
    );
    Ok(t)
}

/// Times and checks the single pass over `x` as `T` with `tiling`, inclusive, and checks
/// the exclusive scan too.
fn time_one_pass<T: Element>(
    rt: &Runtime,
    tiling: k::OnePassTiling,
    order: TileOrder,
    x: &[u32],
    want: &[u32],
    reps: u32,
) -> Result<Duration> {
    let lanes = std::mem::size_of::<T>() / 4;
    let look_back = LookBack {
        order,
        ..LookBack::default()
    };
    let scan = OnePassScan::<T>::new(rt, tiling, look_back)?;
    let p = scan.shape((x.len() / lanes) as u32, false);
    let xs: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(x))?;
    let mut states = rt.zeros::<u32>(2 * p.tiles as usize + 1)?;
    let mut y: GpuBuffer<T> = rt.upload(bytemuck::cast_slice::<u32, T>(&vec![0; x.len()]))?;
    let t = time(rt, reps, |b| scan.record(b, &p, &xs, &mut states, &mut y))?;
    let what = format!("one pass, GROUP {}, {lanes} lanes", tiling.group);
    check(&what, bytemuck::cast_slice(&y.read(rt)?), want);
    let (exclusive, _) = scan.scan(rt, x, true)?;
    check(
        &format!("{what}, exclusive"),
        &exclusive,
        &scan_reference(x, true),
    );
    Ok(t)
}

/// Scans `n` `u32`s every way (each path where the device has it, `Vec4` where `n` is a
/// multiple of 4, workgroups of 256 and 64), checks each against the CPU scan, and times
/// each `reps` launches beside a copy.
pub fn run(rt: &Runtime, n: u32, reps: u32) -> Result<Vec<Row>> {
    let x = inputs(n as usize);
    let want = scan_reference(&x, false);
    let bytes = 2.0 * n as f64 * 4.0;
    let work = format!("scan {n} u32");
    let mut report = Vec::new();
    let subgroups = rt
        .info()
        .features
        .contains(tessera::wgpu::Features::SUBGROUP);
    if subgroups {
        for &tiling in k::OnePassTiling::ALL {
            let group = tiling.group;
            if n.is_multiple_of(4) {
                for (order, tiles) in [
                    (TileOrder::Claimed, ""),
                    (TileOrder::Launch, ", launch order"),
                ] {
                    let t = time_one_pass::<[u32; 4]>(rt, tiling, order, &x, &want, reps)?;
                    let per = tiling.per();
                    let how = format!("one pass, Vec4 x {per} a thread, GROUP {group}{tiles}");
                    report.push(Row {
                        work: work.clone(),
                        how,
                        time: t,
                        bytes,
                    });
                }
            }
            let t = time_one_pass::<u32>(rt, tiling, TileOrder::Claimed, &x, &want, reps)?;
            let how = format!("one pass, u32 x {} a thread, GROUP {group}", tiling.per());
            report.push(Row {
                work: work.clone(),
                how,
                time: t,
                bytes,
            });
        }
    }
    let paths: &[Path] = if subgroups {
        &[Path::Subgroups, Path::Tree]
    } else {
        &[Path::Tree]
    };
    for &path in paths {
        for &tiling in k::Tiling::ALL {
            let group = tiling.group;
            if n.is_multiple_of(4) {
                let t = time_scan::<[u32; 4]>(rt, path, tiling, &x, &want, reps)?;
                let how = format!("{path:?}, Vec4 x {} a thread, GROUP {group}", tiling.per());
                report.push(Row {
                    work: work.clone(),
                    how,
                    time: t,
                    bytes,
                });
            }
            let t = time_scan::<u32>(rt, path, tiling, &x, &want, reps)?;
            let how = format!("{path:?}, u32 x {} a thread, GROUP {group}", tiling.per());
            report.push(Row {
                work: work.clone(),
                how,
                time: t,
                bytes,
            });
        }
    }
    if n.is_multiple_of(4) {
        let xs: GpuBuffer<[u32; 4]> = rt.upload(bytemuck::cast_slice::<u32, [u32; 4]>(&x))?;
        let mut ys = rt.zeros::<[u32; 4]>(n as usize / 4)?;
        let copy = k::Copy::new(rt)?;
        let t = time(rt, reps, |b| {
            copy.record(b, k::CopyArgs { x: &xs, y: &mut ys })
        })?;
        report.push(Row {
            work,
            how: "copy, Vec4 (the ceiling)".into(),
            time: t,
            bytes,
        });
    }
    Ok(report)
}

fn main() -> Result<()> {
    let n = match std::env::args().nth(1) {
        Some(a) => a.parse().expect("a number of u32s"),
        None => 1 << 26,
    };
    let rt = Runtime::new()?;
    print_table(&rt, &run(&rt, n, 20)?);
    Ok(())
}
