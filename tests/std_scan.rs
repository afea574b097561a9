//! `tessera::std::scan` against CPU scans: subgroup and workgroup scans (inclusive and
//! exclusive, a carry in, the total out) over `u32`, `f32`, `Vec4<u32>`, `Vec4<f32>`, both
//! paths, workgroups of 64 and 256, the last partly past the data; `examples/std_scan.rs`'s
//! whole-buffer scans (three passes on both paths, and one pass with look-back) at both
//! widths and workgroup sizes, over one tile, several with a partial last, and more tiles
//! than one chunk of totals; the single pass with tiles scanned in the reverse of their
//! claims, so its look-back must sum the tiles below itself. Subgroup tests skip, saying so,
//! on an adapter without subgroups.
//!
//! The values are small integers, so every sum here is exact in `f32` too and the GPU's
//! results are compared exactly, whatever order it adds in.

mod common;

#[path = "../examples/std_scan.rs"]
#[allow(dead_code)]
mod std_scan;

use common::{rng, runtime, RngExt};
use tessera::{wgpu, Runtime};

use std_scan::{buffer_scan, scan_on_gpu, scan_reference, LookBack, OnePassScan, Path, TileOrder};

#[tessera::kernels]
pub mod scans {
    #[device]
    use tessera::std::scan;

    /// Per element `i` (the invocation at `subgroup * size + lane` of its workgroup), at
    /// `out[6 * i + k]`: its subgroup's inclusive and exclusive scans of `x`, its workgroup's
    /// inclusive scan from a carry of 3 and that carry after (3 plus the total), then the
    /// exclusive scan from 0 and the total; `sizes[i]` is its subgroup's size. Elements past
    /// `x` count as 0.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)],
             types(T = [u32, f32, Vec4<u32>, Vec4<f32>]), features(subgroups))]
    pub fn by_subgroups<T>(
        x: &[T],
        out: &mut [T],
        sizes: &mut [u32],
        #[workgroup] partials: &mut [T; GROUP / 4],
    ) {
        let (lane, subgroup, size) = (subgroup_invocation_id(), subgroup_id(), subgroup_size());
        let i = workgroup_id().x * GROUP + subgroup * size + lane;
        let v = if i < x.len() { x[i] } else { 0 as T };
        out[6 * i] = subgroup_inclusive_sum(v);
        out[6 * i + 1] = subgroup_exclusive_sum(v);
        let mut carry = [3 as T; 1];
        out[6 * i + 2] = workgroup_inclusive_sum(partials, &mut carry, v, lane, subgroup, size);
        out[6 * i + 3] = carry[0];
        let mut total = [0 as T; 1];
        out[6 * i + 4] = workgroup_exclusive_sum(partials, &mut total, v, lane, subgroup, size);
        out[6 * i + 5] = total[0];
        sizes[i] = size;
    }

    /// Per invocation `i`, at `out[4 * i + k]`: its workgroup's inclusive scan through the tree
    /// from a carry of 3 and the carry after, then the exclusive scan from 0 and the total.
    #[kernel(workgroup = [GROUP], constants(GROUP = [64, 256]), grid = [ceil_div(x.len(), GROUP)],
             types(T = [u32, f32, Vec4<u32>, Vec4<f32>]))]
    pub fn by_trees<T>(x: &[T], out: &mut [T], #[workgroup] tile: &mut [T; GROUP]) {
        let (i, local) = (global_id().x, local_index());
        let v = if i < x.len() { x[i] } else { 0 as T };
        let mut carry = [3 as T; 1];
        out[4 * i] = workgroup_inclusive_sum_tree(tile, &mut carry, local, v);
        out[4 * i + 1] = carry[0];
        let mut total = [0 as T; 1];
        out[4 * i + 2] = workgroup_exclusive_sum_tree(tile, &mut total, local, v);
        out[4 * i + 3] = total[0];
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

/// The scalars the helper tests scan: `u32` and `f32`, converted exactly from and to the
/// small integers the tests use.
trait Scalar: bytemuck::Pod + PartialEq + std::fmt::Debug {
    fn of(v: u32) -> Self;
}

impl Scalar for u32 {
    fn of(v: u32) -> Self {
        v
    }
}

impl Scalar for f32 {
    fn of(v: u32) -> Self {
        v as f32
    }
}

/// The CPU model: lane by lane over elements `range` of `x` (`lanes` scalars an element,
/// those past `x` 0), the inclusive scan at each element, the exclusive one, and the total.
struct Model {
    inclusive: Vec<Vec<u32>>,
    exclusive: Vec<Vec<u32>>,
    total: Vec<u32>,
}

fn model(x: &[u32], lanes: usize, range: std::ops::Range<usize>) -> Model {
    let mut acc = vec![0u32; lanes];
    let (mut inclusive, mut exclusive) = (Vec::new(), Vec::new());
    for e in range {
        exclusive.push(acc.clone());
        for (c, a) in acc.iter_mut().enumerate() {
            *a += x.get(e * lanes + c).copied().unwrap_or(0);
        }
        inclusive.push(acc.clone());
    }
    Model {
        inclusive,
        exclusive,
        total: acc,
    }
}

/// `v` plus `carry` in every lane, as scalars `S`.
fn as_scalars<S: Scalar>(v: &[u32], carry: u32) -> Vec<S> {
    v.iter().map(|&v| S::of(v + carry)).collect()
}

/// Values for `n` elements of `lanes` scalars: integers in 0..100, so sums of up to 256 are
/// exact in `f32`.
fn small_integers(seed: u64, n: usize, lanes: usize) -> Vec<u32> {
    let mut generator = rng(seed);
    (0..n * lanes)
        .map(|_| generator.random_range(0..100u32))
        .collect()
}

/// Checks `by_subgroups` at width `T` (of scalars `S`, `lanes` a value) against the model.
fn check_by_subgroups<T, S>(rt: &Runtime, lanes: usize)
where
    T: scans::BySubgroupsElement + bytemuck::Pod,
    S: Scalar,
{
    for group in [64usize, 256] {
        let n = 2 * group + 37; // the last workgroup partly past the end
        let x = small_integers(group as u64 + lanes as u64, n, lanes);
        let invocations = n.div_ceil(group) * group;
        let constants = scans::BySubgroupsConstants {
            group: group as u32,
        };
        let kernel = scans::BySubgroups::<T>::with_constants(rt, constants).unwrap();
        let xs = rt
            .upload(bytemuck::cast_slice::<S, T>(&as_scalars::<S>(&x, 0)))
            .unwrap();
        let zeros = vec![S::of(0); 6 * invocations * lanes];
        let mut out = rt.upload(bytemuck::cast_slice::<S, T>(&zeros)).unwrap();
        let mut sizes = rt.zeros::<u32>(invocations).unwrap();
        let args = scans::BySubgroupsArgs {
            x: &xs,
            out: &mut out,
            sizes: &mut sizes,
        };
        kernel.launch(rt, args).unwrap();
        let out: Vec<S> = bytemuck::cast_slice(&out.read(rt).unwrap()).to_vec();
        let sizes = sizes.read(rt).unwrap();
        let at = |i: usize, k: usize| &out[(6 * i + k) * lanes..(6 * i + k + 1) * lanes];
        for (i, &size) in sizes.iter().enumerate() {
            let size = size as usize;
            let context = format!("group {group}, lanes {lanes}, element {i}, subgroup {size}");
            let subgroup = model(&x, lanes, i - i % size..i - i % size + size);
            let workgroup = model(&x, lanes, i - i % group..i - i % group + group);
            let (s, w) = (i % size, i % group);
            let want = [
                as_scalars(&subgroup.inclusive[s], 0),
                as_scalars(&subgroup.exclusive[s], 0),
                as_scalars(&workgroup.inclusive[w], 3),
                as_scalars(&workgroup.total, 3),
                as_scalars(&workgroup.exclusive[w], 0),
                as_scalars(&workgroup.total, 0),
            ];
            for (k, want) in want.iter().enumerate() {
                assert_eq!(at(i, k), &want[..], "{context}, result {k}");
            }
        }
    }
}

#[test]
fn subgroup_and_workgroup_scans_through_subgroups_match_the_model() {
    let Some(rt) = subgroup_runtime("scans_through_subgroups") else {
        return;
    };
    check_by_subgroups::<u32, u32>(&rt, 1);
    check_by_subgroups::<f32, f32>(&rt, 1);
    check_by_subgroups::<[u32; 4], u32>(&rt, 4);
    check_by_subgroups::<[f32; 4], f32>(&rt, 4);
}

/// Checks `by_trees` as [`check_by_subgroups`] does `by_subgroups`.
fn check_by_trees<T, S>(rt: &Runtime, lanes: usize)
where
    T: scans::ByTreesElement + bytemuck::Pod,
    S: Scalar,
{
    for group in [64usize, 256] {
        let n = 2 * group + 37;
        let x = small_integers(7 + group as u64 + lanes as u64, n, lanes);
        let invocations = n.div_ceil(group) * group;
        let constants = scans::ByTreesConstants {
            group: group as u32,
        };
        let kernel = scans::ByTrees::<T>::with_constants(rt, constants).unwrap();
        let xs = rt
            .upload(bytemuck::cast_slice::<S, T>(&as_scalars::<S>(&x, 0)))
            .unwrap();
        let zeros = vec![S::of(0); 4 * invocations * lanes];
        let mut out = rt.upload(bytemuck::cast_slice::<S, T>(&zeros)).unwrap();
        let args = scans::ByTreesArgs {
            x: &xs,
            out: &mut out,
        };
        kernel.launch(rt, args).unwrap();
        let out: Vec<S> = bytemuck::cast_slice(&out.read(rt).unwrap()).to_vec();
        for i in 0..invocations {
            let workgroup = model(&x, lanes, i - i % group..i - i % group + group);
            let w = i % group;
            let want = [
                as_scalars(&workgroup.inclusive[w], 3),
                as_scalars(&workgroup.total, 3),
                as_scalars(&workgroup.exclusive[w], 0),
                as_scalars(&workgroup.total, 0),
            ];
            for (k, want) in want.iter().enumerate() {
                let got = &out[(4 * i + k) * lanes..(4 * i + k + 1) * lanes];
                assert_eq!(
                    got,
                    &want[..],
                    "group {group}, lanes {lanes}, invocation {i}, result {k}"
                );
            }
        }
    }
}

#[test]
fn workgroup_scans_through_the_tree_match_the_model() {
    let rt = runtime();
    check_by_trees::<u32, u32>(&rt, 1);
    check_by_trees::<f32, f32>(&rt, 1);
    check_by_trees::<[u32; 4], u32>(&rt, 4);
    check_by_trees::<[f32; 4], f32>(&rt, 4);
}

/// Lengths in `u32`s for `tiling` at `lanes` a value: less than one tile; several
/// tiles, the last partly past the data; and more tiles than the totals pass scans in one
/// chunk of `group * PER`, so that it loops (a multiple of `lanes`, not of the tile).
fn buffer_lengths(tiling: buffer_scan::Tiling, lanes: u32) -> [u32; 3] {
    let chunk = tiling.group * tiling.per();
    let tile = chunk * lanes;
    [
        tile / 2 + lanes,
        3 * tile + 5 * lanes,
        (chunk + 2) * tile + 7 * lanes,
    ]
}

/// Checks the whole-buffer scan at width `T` through `path`, inclusive and exclusive.
fn check_buffer_scan<T: std_scan::Element>(rt: &Runtime, path: Path) {
    let lanes = (std::mem::size_of::<T>() / 4) as u32;
    for &tiling in buffer_scan::Tiling::ALL {
        for n in buffer_lengths(tiling, lanes) {
            let x = std_scan::inputs(n as usize);
            for exclusive in [false, true] {
                let got = scan_on_gpu::<T>(rt, path, tiling, &x, exclusive).unwrap();
                let want = scan_reference(&x, exclusive);
                let first = (0..x.len()).find(|&i| got[i] != want[i]);
                assert!(
                    first.is_none(),
                    "{path:?}, group {}, lanes {lanes}, n {n}, exclusive {exclusive}: element \
                     {first:?} differs",
                    tiling.group
                );
            }
        }
    }
}

#[test]
fn whole_buffer_scans_through_subgroups_match_the_cpu_scan() {
    if let Some(rt) = subgroup_runtime("whole_buffer_scans_through_subgroups") {
        check_buffer_scan::<u32>(&rt, Path::Subgroups);
        check_buffer_scan::<[u32; 4]>(&rt, Path::Subgroups);
    }
}

#[test]
fn whole_buffer_scans_through_the_tree_match_the_cpu_scan() {
    let rt = runtime();
    check_buffer_scan::<u32>(&rt, Path::Tree);
    check_buffer_scan::<[u32; 4]>(&rt, Path::Tree);
}

/// Checks the single pass at width `T`, both tilings, the first `lengths` of
/// `buffer_lengths`, inclusive and exclusive, and that every tile's published state is its
/// inclusive total.
fn check_one_pass<T: std_scan::Element>(rt: &Runtime, look_back: LookBack, lengths: usize) {
    let lanes = (std::mem::size_of::<T>() / 4) as u32;
    for &tiling in buffer_scan::OnePassTiling::ALL {
        let tile = (tiling.group * tiling.per() * lanes) as usize;
        let scan = OnePassScan::<T>::new(rt, tiling, look_back).unwrap();
        let three_pass = buffer_scan::Tiling::ALL[0];
        for &n in &buffer_lengths(three_pass, lanes)[..lengths] {
            let x = std_scan::inputs(n as usize);
            for exclusive in [false, true] {
                let (got, states) = scan.scan(rt, &x, exclusive).unwrap();
                let what = format!(
                    "group {}, lanes {lanes}, n {n}, {look_back:?}",
                    tiling.group
                );
                let want = scan_reference(&x, exclusive);
                let first = (0..x.len()).find(|&i| got[i] != want[i]);
                assert!(
                    first.is_none(),
                    "{what}, exclusive {exclusive}: element {first:?}"
                );
                let tiles = x.len().div_ceil(tile);
                let workgroups = tiles.min(65535);
                let claims = if look_back.order == TileOrder::Launch {
                    0
                } else if tiles > 65535 {
                    tiles + workgroups
                } else {
                    tiles
                };
                assert_eq!(states[0] as usize, claims, "{what}: claims");
                let inclusive = scan_reference(&x, false);
                for t in 0..tiles {
                    let (low, high) = (states[1 + 2 * t], states[2 + 2 * t]);
                    assert_eq!((low >> 16, high >> 16), (2, 2), "{what}: tile {t}'s status");
                    let last = ((t + 1) * tile).min(x.len()) - 1;
                    let total = (low & 0xFFFF) | (high << 16);
                    assert_eq!(total, inclusive[last], "{what}: tile {t}'s inclusive total");
                }
            }
        }
    }
}

#[test]
fn whole_buffer_scans_in_a_single_pass_match_the_cpu_scan() {
    if let Some(rt) = subgroup_runtime("whole_buffer_scans_in_a_single_pass") {
        check_one_pass::<u32>(&rt, LookBack::default(), 3);
        check_one_pass::<[u32; 4]>(&rt, LookBack::default(), 3);
        // Tiles by workgroup id, with no claim, and patience 0 as well: whatever order the
        // workgroups start in, a tile below not yet started is summed from the input.
        for patience in [64, 0] {
            let look_back = LookBack {
                patience,
                order: TileOrder::Launch,
            };
            let lengths = if patience == 0 { 2 } else { 3 };
            check_one_pass::<u32>(&rt, look_back, lengths);
            check_one_pass::<[u32; 4]>(&rt, look_back, lengths);
        }
    }
}

/// The single pass with every tile scanned in the reverse of the order it was claimed in, so
/// the tile below a workgroup's has at best just started: the look-back must sum the tiles
/// below from the input (at once with patience 0, after a few steps with 3).
#[test]
fn the_single_pass_sums_tiles_that_have_not_started_itself() {
    let Some(rt) = subgroup_runtime("the_single_pass_sums_tiles_that_have_not_started") else {
        return;
    };
    for patience in [0, 3] {
        let look_back = LookBack {
            patience,
            order: TileOrder::ClaimedFromLast,
        };
        // Not the longest: its first workgroup would sum 16,000 tiles alone (20 s here).
        check_one_pass::<u32>(&rt, look_back, 2);
        check_one_pass::<[u32; 4]>(&rt, look_back, 2);
    }
}

/// The WGSL of the modules, pinned, so that a change in the library's helpers shows as a
/// readable diff, and so that `tests/tint.rs` runs it through Tint.
#[test]
fn the_scan_wgsl_is_pinned() {
    insta::assert_snapshot!("scans", scans::WGSL);
    insta::assert_snapshot!("buffer_scan", buffer_scan::WGSL);
}
