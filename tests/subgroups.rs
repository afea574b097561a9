//! Subgroup operations on a real adapter (lavapipe in CI, whose subgroups are real), against a
//! CPU model of the subgroups: each kernel writes, per invocation, every operation's result
//! and its `subgroup_invocation_id()` and `subgroup_size()`, and the test computes what each
//! operation should give from those. The model is the mapping drivers use in practice (WGSL
//! does not promise it): the invocations of a workgroup form subgroups in `local_index()`
//! order, contiguous runs of `subgroup_size()` each, the last one short when the workgroup is
//! not a multiple. Lanes a shuffle or broadcast reads from outside the subgroup, where WGSL's
//! result is indeterminate, are not compared.
//!
//! Every kernel writes, per invocation, its lane, the subgroup size, its subgroup and the
//! number of subgroups at `ids[k * count + i]` for k = 0..4.
//!
//! Without `wgpu::Features::SUBGROUP` on the adapter each test prints why it skipped.

mod common;

use std::ops::Range;

use common::runtime;
use tessera::{wgpu, Runtime};

#[tessera::kernels]
pub mod subgroup_ops {
    /// Invocations of the full kernels.
    pub const N: u32 = 64;
    /// Invocations of the kernel whose last subgroup may be short.
    pub const TAIL: u32 = 60;

    /// The operations on `f32` (and one on `Vec2<f32>`), operation `k` at `out[k * N + i]`.
    #[kernel(workgroup = [N], grid = [1], features(subgroups))]
    pub fn floats(x: &[f32], out: &mut [f32], ids: &mut [u32]) {
        let i = local_index();
        let v = x[i];
        out[i] = subgroup_mul(v);
        out[N + i] = subgroup_inclusive_add(v);
        out[2 * N + i] = subgroup_exclusive_add(v);
        out[3 * N + i] = subgroup_inclusive_mul(v);
        out[4 * N + i] = subgroup_exclusive_mul(v);
        out[5 * N + i] = subgroup_shuffle_up(v, 1);
        out[6 * N + i] = subgroup_shuffle_down(v, 3);
        out[7 * N + i] = subgroup_shuffle_xor(v, 3);
        out[8 * N + i] = subgroup_broadcast(v, 1);
        out[9 * N + i] = subgroup_exclusive_add(vec2(v, 2.0 * v)).y;
        ids[i] = subgroup_invocation_id();
        ids[N + i] = subgroup_size();
        ids[2 * N + i] = subgroup_id();
        ids[3 * N + i] = num_subgroups();
    }

    /// The operations on `u32`, the votes and the ballot, operation `k` at `out[k * N + i]`.
    #[kernel(workgroup = [N], grid = [1], features(subgroups))]
    pub fn unsigned(x: &[u32], out: &mut [u32], ids: &mut [u32]) {
        let i = local_index();
        let v = x[i];
        out[i] = subgroup_mul(v);
        out[N + i] = subgroup_inclusive_add(v);
        out[2 * N + i] = subgroup_exclusive_add(v);
        out[3 * N + i] = subgroup_inclusive_mul(v);
        out[4 * N + i] = subgroup_exclusive_mul(v);
        out[5 * N + i] = subgroup_and(v);
        out[6 * N + i] = subgroup_or(v);
        out[7 * N + i] = subgroup_xor(v);
        out[8 * N + i] = subgroup_shuffle_up(v, 2);
        out[9 * N + i] = subgroup_shuffle_down(v, 1);
        out[10 * N + i] = subgroup_shuffle_xor(v, 1);
        out[11 * N + i] = subgroup_broadcast(v, 2);
        out[12 * N + i] = subgroup_all(i < 40) as u32;
        out[13 * N + i] = subgroup_any(i == 13) as u32;
        let ballot = subgroup_ballot(v % 3 == 0);
        out[14 * N + i] = ballot.x;
        out[15 * N + i] = ballot.y;
        out[16 * N + i] = ballot.z;
        out[17 * N + i] = ballot.w;
        out[18 * N + i] = subgroup_or(vec2(v, 1u32 << (i % 32))).y;
        ids[i] = subgroup_invocation_id();
        ids[N + i] = subgroup_size();
        ids[2 * N + i] = subgroup_id();
        ids[3 * N + i] = num_subgroups();
    }

    /// The bitwise operations on `i32`, operation `k` at `out[k * N + i]`.
    #[kernel(workgroup = [N], grid = [1], features(subgroups))]
    pub fn signed(x: &[i32], out: &mut [i32], ids: &mut [u32]) {
        let i = local_index();
        let v = x[i];
        out[i] = subgroup_and(v);
        out[N + i] = subgroup_or(v);
        out[2 * N + i] = subgroup_xor(v);
        out[3 * N + i] = subgroup_inclusive_add(v);
        ids[i] = subgroup_invocation_id();
        ids[N + i] = subgroup_size();
        ids[2 * N + i] = subgroup_id();
        ids[3 * N + i] = num_subgroups();
    }

    /// A tree sum by `subgroup_shuffle_down` in a loop bounded by `subgroup_size()`, which is
    /// uniform: lane 0 of each subgroup ends with the subgroup's sum.
    #[kernel(workgroup = [N], grid = [1], features(subgroups))]
    pub fn tree_sum(x: &[u32], out: &mut [u32], ids: &mut [u32]) {
        let i = local_index();
        let mut total = x[i];
        let mut off = 1u32;
        while off < subgroup_size() {
            total = total + subgroup_shuffle_down(total, off);
            off = off * 2;
        }
        out[i] = total;
        ids[i] = subgroup_invocation_id();
        ids[N + i] = subgroup_size();
        ids[2 * N + i] = subgroup_id();
        ids[3 * N + i] = num_subgroups();
    }

    /// A workgroup of 60 invocations, whose last subgroup is short where subgroups are 8, 16,
    /// 32 or 64 wide.
    #[kernel(workgroup = [TAIL], grid = [1], features(subgroups))]
    pub fn tail(x: &[u32], out: &mut [u32], ids: &mut [u32]) {
        let i = local_index();
        let v = x[i];
        out[i] = subgroup_add(v);
        out[TAIL + i] = subgroup_exclusive_add(v);
        out[2 * TAIL + i] = subgroup_ballot(true).x;
        out[3 * TAIL + i] = subgroup_shuffle_down(v, 1);
        ids[i] = subgroup_invocation_id();
        ids[TAIL + i] = subgroup_size();
        ids[2 * TAIL + i] = subgroup_id();
        ids[3 * TAIL + i] = num_subgroups();
    }
}

const N: usize = subgroup_ops::N as usize;
const TAIL: usize = subgroup_ops::TAIL as usize;

/// The runtime, if its adapter has subgroups.
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

/// Where each of `n` invocations is among the subgroups, from what the kernel wrote.
struct Subgroups {
    n: usize,
    size: usize,
}

impl Subgroups {
    /// Reads the lanes and sizes the kernel wrote, and checks them (and `subgroup_id()`,
    /// `num_subgroups()`) against the model.
    fn read(ids: &[u32], n: usize) -> Subgroups {
        Self::read_counted(ids, n, true)
    }

    /// [`Subgroups::read`], checking `num_subgroups()` only when `count`.
    fn read_counted(ids: &[u32], n: usize, count: bool) -> Subgroups {
        let size = ids[n] as usize;
        assert!(size >= 1, "subgroup size {size}");
        let groups = n.div_ceil(size);
        for i in 0..n {
            assert_eq!(
                ids[n + i] as usize,
                size,
                "subgroup_size() of invocation {i}"
            );
            assert_eq!(ids[i] as usize, i % size, "subgroup_invocation_id() of {i}");
            assert_eq!(ids[2 * n + i] as usize, i / size, "subgroup_id() of {i}");
            if count {
                assert_eq!(ids[3 * n + i] as usize, groups, "num_subgroups() of {i}");
            }
        }
        Subgroups { n, size }
    }

    /// The invocations of `i`'s subgroup.
    fn group(&self, i: usize) -> Range<usize> {
        let start = i - i % self.size;
        start..(start + self.size).min(self.n)
    }

    /// The invocation at `lane` of `i`'s subgroup, if the subgroup has it.
    fn at(&self, i: usize, lane: i64) -> Option<usize> {
        let group = self.group(i);
        let j = group.start as i64 + lane;
        (lane >= 0 && j < group.end as i64).then_some(j as usize)
    }

    /// Operation `op` of every invocation: `f(i)`, or `None` where the result is not compared.
    fn expect<T: Copy>(&self, f: impl Fn(usize) -> Option<T>) -> Vec<Option<T>> {
        (0..self.n).map(f).collect()
    }
}

/// Compares operation `k` of `out` (`n` per operation) with `want` where it is `Some`.
fn compare<T: PartialEq + std::fmt::Debug + Copy>(
    name: &str,
    out: &[T],
    k: usize,
    n: usize,
    want: &[Option<T>],
) {
    let got = &out[k * n..(k + 1) * n];
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        if let Some(want) = want {
            assert_eq!(got, want, "{name} of invocation {i}");
        }
    }
}

/// Folds `values` of `range` with `op` from `identity`.
fn fold<T: Copy>(values: &[T], range: Range<usize>, identity: T, op: impl Fn(T, T) -> T) -> T {
    values[range].iter().fold(identity, |a, &b| op(a, b))
}

#[test]
fn float_subgroup_operations_match_the_model() {
    let Some(rt) = subgroup_runtime("float_subgroup_operations_match_the_model") else {
        return;
    };
    // Powers of two and small integers: every sum and product is exact in any order.
    let pattern = [1.0f32, 2.0, 0.5, -1.0, 1.0, -2.0, 0.5, 1.0, 3.0];
    let xs: Vec<f32> = (0..N).map(|i| pattern[i % pattern.len()]).collect();
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<f32>(10 * N).unwrap();
    let mut ids = rt.zeros::<u32>(4 * N).unwrap();
    subgroup_ops::Floats::new(&rt)
        .unwrap()
        .launch(
            &rt,
            subgroup_ops::FloatsArgs {
                x: &x,
                out: &mut out,
                ids: &mut ids,
            },
        )
        .unwrap();
    let out = out.read(&rt).unwrap();
    let sg = Subgroups::read(&ids.read(&rt).unwrap(), N);
    let add = |a: f32, b: f32| a + b;
    let mul = |a: f32, b: f32| a * b;
    let group = |i| sg.group(i);
    let before = |i: usize| group(i).start..i;
    let upto = |i: usize| group(i).start..i + 1;
    let read = |i: usize, lane: i64| sg.at(i, lane).map(|j| xs[j]);
    let lane = |i: usize| (i % sg.size) as i64;
    let cases: [(&str, Vec<Option<f32>>); 10] = [
        (
            "subgroup_mul",
            sg.expect(|i| Some(fold(&xs, group(i), 1.0, mul))),
        ),
        (
            "subgroup_inclusive_add",
            sg.expect(|i| Some(fold(&xs, upto(i), 0.0, add))),
        ),
        (
            "subgroup_exclusive_add",
            sg.expect(|i| Some(fold(&xs, before(i), 0.0, add))),
        ),
        (
            "subgroup_inclusive_mul",
            sg.expect(|i| Some(fold(&xs, upto(i), 1.0, mul))),
        ),
        (
            "subgroup_exclusive_mul",
            sg.expect(|i| Some(fold(&xs, before(i), 1.0, mul))),
        ),
        ("subgroup_shuffle_up", sg.expect(|i| read(i, lane(i) - 1))),
        ("subgroup_shuffle_down", sg.expect(|i| read(i, lane(i) + 3))),
        ("subgroup_shuffle_xor", sg.expect(|i| read(i, lane(i) ^ 3))),
        ("subgroup_broadcast", sg.expect(|i| read(i, 1))),
        (
            "subgroup_exclusive_add of a Vec2",
            sg.expect(|i| Some(2.0 * fold(&xs, before(i), 0.0, add))),
        ),
    ];
    for (k, (name, want)) in cases.iter().enumerate() {
        compare(name, &out, k, N, want);
    }
}

#[test]
fn unsigned_subgroup_operations_votes_and_ballots_match_the_model() {
    let Some(rt) =
        subgroup_runtime("unsigned_subgroup_operations_votes_and_ballots_match_the_model")
    else {
        return;
    };
    // Products wrap (as `wrapping_mul` does); the bit patterns differ between invocations.
    let xs: Vec<u32> = (0..N as u32)
        .map(|i| (i % 7 + 1) | ((i % 5) << (8 + i % 13)))
        .collect();
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<u32>(19 * N).unwrap();
    let mut ids = rt.zeros::<u32>(4 * N).unwrap();
    subgroup_ops::Unsigned::new(&rt)
        .unwrap()
        .launch(
            &rt,
            subgroup_ops::UnsignedArgs {
                x: &x,
                out: &mut out,
                ids: &mut ids,
            },
        )
        .unwrap();
    let out = out.read(&rt).unwrap();
    let sg = Subgroups::read(&ids.read(&rt).unwrap(), N);
    let add = u32::wrapping_add;
    let mul = u32::wrapping_mul;
    let group = |i| sg.group(i);
    let before = |i: usize| group(i).start..i;
    let upto = |i: usize| group(i).start..i + 1;
    let read = |i: usize, lane: i64| sg.at(i, lane).map(|j| xs[j]);
    let lane = |i: usize| (i % sg.size) as i64;
    let ballot = |i: usize, word: usize| {
        let mut bits = 0u32;
        for j in group(i) {
            let lane = j - group(i).start;
            if xs[j].is_multiple_of(3) && lane / 32 == word {
                bits |= 1 << (lane % 32);
            }
        }
        Some(bits)
    };
    let cases: [(&str, Vec<Option<u32>>); 19] = [
        (
            "subgroup_mul",
            sg.expect(|i| Some(fold(&xs, group(i), 1, mul))),
        ),
        (
            "subgroup_inclusive_add",
            sg.expect(|i| Some(fold(&xs, upto(i), 0, add))),
        ),
        (
            "subgroup_exclusive_add",
            sg.expect(|i| Some(fold(&xs, before(i), 0, add))),
        ),
        (
            "subgroup_inclusive_mul",
            sg.expect(|i| Some(fold(&xs, upto(i), 1, mul))),
        ),
        (
            "subgroup_exclusive_mul",
            sg.expect(|i| Some(fold(&xs, before(i), 1, mul))),
        ),
        (
            "subgroup_and",
            sg.expect(|i| Some(fold(&xs, group(i), !0, |a, b| a & b))),
        ),
        (
            "subgroup_or",
            sg.expect(|i| Some(fold(&xs, group(i), 0, |a, b| a | b))),
        ),
        (
            "subgroup_xor",
            sg.expect(|i| Some(fold(&xs, group(i), 0, |a, b| a ^ b))),
        ),
        ("subgroup_shuffle_up", sg.expect(|i| read(i, lane(i) - 2))),
        ("subgroup_shuffle_down", sg.expect(|i| read(i, lane(i) + 1))),
        ("subgroup_shuffle_xor", sg.expect(|i| read(i, lane(i) ^ 1))),
        ("subgroup_broadcast", sg.expect(|i| read(i, 2))),
        (
            "subgroup_all",
            sg.expect(|i| Some(group(i).all(|j| j < 40) as u32)),
        ),
        (
            "subgroup_any",
            sg.expect(|i| Some(group(i).any(|j| j == 13) as u32)),
        ),
        ("subgroup_ballot .x", sg.expect(|i| ballot(i, 0))),
        ("subgroup_ballot .y", sg.expect(|i| ballot(i, 1))),
        ("subgroup_ballot .z", sg.expect(|i| ballot(i, 2))),
        ("subgroup_ballot .w", sg.expect(|i| ballot(i, 3))),
        (
            "subgroup_or of a Vec2",
            sg.expect(|i| Some(group(i).fold(0, |a, j| a | 1 << (j % 32)))),
        ),
    ];
    for (k, (name, want)) in cases.iter().enumerate() {
        compare(name, &out, k, N, want);
    }
}

#[test]
fn signed_bitwise_subgroup_operations_match_the_model() {
    let Some(rt) = subgroup_runtime("signed_bitwise_subgroup_operations_match_the_model") else {
        return;
    };
    let xs: Vec<i32> = (0..N as i32)
        .map(|i| {
            if i % 3 == 0 {
                -1 - (i << 4)
            } else {
                (i * 37) ^ (1 << (i % 31))
            }
        })
        .collect();
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<i32>(4 * N).unwrap();
    let mut ids = rt.zeros::<u32>(4 * N).unwrap();
    subgroup_ops::Signed::new(&rt)
        .unwrap()
        .launch(
            &rt,
            subgroup_ops::SignedArgs {
                x: &x,
                out: &mut out,
                ids: &mut ids,
            },
        )
        .unwrap();
    let out = out.read(&rt).unwrap();
    let sg = Subgroups::read(&ids.read(&rt).unwrap(), N);
    let group = |i| sg.group(i);
    let cases: [(&str, Vec<Option<i32>>); 4] = [
        (
            "subgroup_and",
            sg.expect(|i| Some(fold(&xs, group(i), -1, |a, b| a & b))),
        ),
        (
            "subgroup_or",
            sg.expect(|i| Some(fold(&xs, group(i), 0, |a, b| a | b))),
        ),
        (
            "subgroup_xor",
            sg.expect(|i| Some(fold(&xs, group(i), 0, |a, b| a ^ b))),
        ),
        (
            "subgroup_inclusive_add",
            sg.expect(|i| Some(fold(&xs, group(i).start..i + 1, 0, i32::wrapping_add))),
        ),
    ];
    for (k, (name, want)) in cases.iter().enumerate() {
        compare(name, &out, k, N, want);
    }
}

#[test]
fn a_shuffle_loop_bounded_by_the_subgroup_size_sums_each_subgroup() {
    let Some(rt) =
        subgroup_runtime("a_shuffle_loop_bounded_by_the_subgroup_size_sums_each_subgroup")
    else {
        return;
    };
    let xs: Vec<u32> = (0..N as u32).map(|i| i * i + 1).collect();
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<u32>(N).unwrap();
    let mut ids = rt.zeros::<u32>(4 * N).unwrap();
    subgroup_ops::TreeSum::new(&rt)
        .unwrap()
        .launch(
            &rt,
            subgroup_ops::TreeSumArgs {
                x: &x,
                out: &mut out,
                ids: &mut ids,
            },
        )
        .unwrap();
    let out = out.read(&rt).unwrap();
    let sg = Subgroups::read(&ids.read(&rt).unwrap(), N);
    // Only lane 0 reads in range at every step.
    let want =
        sg.expect(|i| (i % sg.size == 0).then(|| fold(&xs, sg.group(i), 0, u32::wrapping_add)));
    compare("the tree sum", &out, 0, N, &want);
}

#[test]
fn a_short_last_subgroup_matches_the_model() {
    let Some(rt) = subgroup_runtime("a_short_last_subgroup_matches_the_model") else {
        return;
    };
    let xs: Vec<u32> = (0..TAIL as u32).map(|i| 3 * i + 1).collect();
    let x = rt.upload(&xs).unwrap();
    let mut out = rt.zeros::<u32>(4 * TAIL).unwrap();
    let mut ids = rt.zeros::<u32>(4 * TAIL).unwrap();
    subgroup_ops::Tail::new(&rt)
        .unwrap()
        .launch(
            &rt,
            subgroup_ops::TailArgs {
                x: &x,
                out: &mut out,
                ids: &mut ids,
            },
        )
        .unwrap();
    let out = out.read(&rt).unwrap();
    let ids = ids.read(&rt).unwrap();
    // lavapipe's `num_subgroups()` rounds down: 7 for 60 invocations in subgroups of 8, where
    // there are 8 (the last of 4). It is compared only when there is no short subgroup.
    let sg = Subgroups::read_counted(&ids, TAIL, false);
    if TAIL.is_multiple_of(sg.size) {
        eprintln!(
            "a_short_last_subgroup_matches_the_model: subgroups of {} leave no short one",
            sg.size
        );
        Subgroups::read(&ids, TAIL);
    } else {
        eprintln!(
            "a_short_last_subgroup_matches_the_model: num_subgroups() is {} for {} subgroups",
            ids[3 * TAIL],
            TAIL.div_ceil(sg.size)
        );
    }
    let add = u32::wrapping_add;
    let group = |i| sg.group(i);
    let lane = |i: usize| (i % sg.size) as i64;
    let cases: [(&str, Vec<Option<u32>>); 4] = [
        (
            "subgroup_add",
            sg.expect(|i| Some(fold(&xs, group(i), 0, add))),
        ),
        (
            "subgroup_exclusive_add",
            sg.expect(|i| Some(fold(&xs, group(i).start..i, 0, add))),
        ),
        (
            "subgroup_ballot(true).x",
            sg.expect(|i| {
                let lanes = group(i).len().min(32);
                Some(if lanes == 32 { !0 } else { (1 << lanes) - 1 })
            }),
        ),
        (
            "subgroup_shuffle_down",
            sg.expect(|i| sg.at(i, lane(i) + 1).map(|j| xs[j])),
        ),
    ];
    for (k, (name, want)) in cases.iter().enumerate() {
        compare(name, &out, k, TAIL, want);
    }
}

/// The WGSL of the module above, pinned (see `tests/snapshots/`; `tests/tint.rs` checks it
/// with Tint).
#[test]
fn generated_wgsl_is_pinned() {
    insta::assert_snapshot!("ops", subgroup_ops::WGSL);
}
