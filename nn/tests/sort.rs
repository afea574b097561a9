//! `RadixSort` against the standard library's stable sort: `u32` and `f32` keys, alone and with
//! values, lengths around each way's tile and one of more tiles than a scan chunk holds; each
//! on a device with subgroups (the sort takes a byte a pass, ranking keys by ballots) and on
//! one without optional features (4 bits a pass, by trees in workgroup memory).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{plain_device_runtime, rng, runtime, RngExt};
use tessera::{Error, Runtime};
use tessera_nn::{RadixSort, SortKey};

/// One key, a few, and around one tile, of either way (2048 keys by trees, 4096 through
/// subgroups), and a few tiles with a tail.
const LENGTHS: [usize; 9] = [1, 5, 2047, 2048, 2049, 4095, 4096, 4097, 3 * 4096 + 17];

/// A runtime whose sort ranks keys through subgroups (where the adapter has them), and one
/// over a device without optional features, whose sort ranks them by trees.
fn runtimes() -> [Runtime; 2] {
    let rt = runtime();
    let plain = plain_device_runtime(&rt);
    [rt, plain]
}

/// How `rt`'s sort ranks keys, for messages.
fn ranking(rt: &Runtime) -> &'static str {
    if rt
        .info()
        .features
        .contains(tessera::wgpu::Features::SUBGROUP)
    {
        "through subgroups"
    } else {
        "by trees"
    }
}

/// The order the sort promises `f32` keys: by their bits, the sign flipped, and every bit
/// for negative numbers.
fn f32_order(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `keys` and `values` sorted by `order`, stably, by the CPU.
fn reference<K: Copy>(keys: &[K], values: &[u32], order: impl Fn(K) -> u32) -> (Vec<K>, Vec<u32>) {
    let mut pairs: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|&(k, _)| order(k));
    pairs.into_iter().unzip()
}

/// `keys` sorted on the GPU with their indices as values, and alone.
fn on_gpu<K: SortKey>(rt: &Runtime, sort: &RadixSort, keys: &[K]) -> (Vec<K>, Vec<u32>, Vec<K>) {
    let (mut pairs, mut alone) = (rt.upload(keys).unwrap(), rt.upload(keys).unwrap());
    let indices: Vec<u32> = (0..keys.len() as u32).collect();
    let mut values = rt.upload(&indices).unwrap();
    let mut batch = rt.batch();
    sort.sort_pairs(&mut batch, &mut pairs, &mut values)
        .unwrap();
    sort.sort(&mut batch, &mut alone).unwrap();
    batch.submit().unwrap();
    (
        pairs.read(rt).unwrap(),
        values.read(rt).unwrap(),
        alone.read(rt).unwrap(),
    )
}

#[test]
fn u32_keys_sort_stably_with_their_values() {
    for rt in runtimes() {
        let sort = RadixSort::new(&rt).unwrap();
        let mut rng = rng(1);
        for (case, &n) in LENGTHS.iter().enumerate() {
            // Every bit of the key in play, then few distinct keys (so stability shows).
            let keys: Vec<u32> = if case % 2 == 0 {
                (0..n).map(|_| rng.random_range(0..=u32::MAX)).collect()
            } else {
                (0..n)
                    .map(|_| rng.random_range(0..7u32) << 28 | 5)
                    .collect()
            };
            let indices: Vec<u32> = (0..n as u32).collect();
            let (want_keys, want_values) = reference(&keys, &indices, |k| k);
            let (keys_sorted, values, alone) = on_gpu(&rt, &sort, &keys);
            assert_eq!(keys_sorted, want_keys, "{n} keys, {}", ranking(&rt));
            assert_eq!(values, want_values, "{n} values, {}", ranking(&rt));
            assert_eq!(alone, want_keys, "{n} keys alone, {}", ranking(&rt));
        }
    }
}

#[test]
fn f32_keys_sort_as_numbers() {
    for rt in runtimes() {
        let sort = RadixSort::new(&rt).unwrap();
        let mut rng = rng(2);
        let special = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            1.0,
            -1.0,
        ];
        for &n in &LENGTHS {
            let mut keys: Vec<f32> = (0..n)
                .map(|_| rng.random_range(-1000.0f32..1000.0).round() / 4.0)
                .collect();
            for (key, &s) in keys.iter_mut().zip(special.iter().cycle().step_by(3)) {
                if n > 20 {
                    *key = s;
                }
            }
            let indices: Vec<u32> = (0..n as u32).collect();
            let (want_keys, want_values) = reference(&keys, &indices, f32_order);
            let (keys_sorted, values, alone) = on_gpu(&rt, &sort, &keys);
            let bits = |v: &[f32]| v.iter().map(|k| k.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&keys_sorted),
                bits(&want_keys),
                "{n} keys, {}",
                ranking(&rt)
            );
            assert_eq!(values, want_values, "{n} values, {}", ranking(&rt));
            assert_eq!(
                bits(&alone),
                bits(&want_keys),
                "{n} keys alone, {}",
                ranking(&rt)
            );
            assert!(
                keys_sorted.windows(2).all(|w| w[0] <= w[1]),
                "{n} keys in order, {}",
                ranking(&rt)
            );
        }
    }
}

#[test]
fn more_tiles_than_a_scan_chunk_sort() {
    for rt in runtimes() {
        // 2048 tiles of 2048 keys and a few more: the counts' scan loops over chunks (by trees;
        // through subgroups, half as many tiles of 4096 keys, and the same scan kernel).
        let sort = RadixSort::new(&rt).unwrap();
        let mut rng = rng(3);
        let n = 2048 * 2048 + 3 * 2048 + 5;
        let keys: Vec<u32> = (0..n).map(|_| rng.random_range(0..=u32::MAX)).collect();
        let mut want = keys.clone();
        want.sort_unstable();
        let mut gpu = rt.upload(&keys).unwrap();
        let mut batch = rt.batch();
        sort.sort(&mut batch, &mut gpu).unwrap();
        batch.submit().unwrap();
        assert!(gpu.read(&rt).unwrap() == want, "{n} keys, {}", ranking(&rt));
    }
}

#[test]
fn values_fewer_than_the_keys_are_refused() {
    let rt = runtime();
    let sort = RadixSort::new(&rt).unwrap();
    sort.prepare(&rt).unwrap();
    let mut keys = rt.upload(&[3u32, 1, 2]).unwrap();
    let mut values = rt.upload(&[0i32, 1]).unwrap();
    let mut batch = rt.batch();
    let message = match sort.sort_pairs(&mut batch, &mut keys, &mut values) {
        Err(Error::InvalidArgument { problem, .. }) => problem,
        other => panic!("two values for three keys gave {other:?}"),
    };
    assert!(
        message.contains("`values` holds 2 elements for 3 keys"),
        "{message}"
    );
    // Longer values are fine: those past the keys stay.
    let mut values = rt.upload(&[10i32, 11, 12, 13]).unwrap();
    sort.sort_pairs(&mut batch, &mut keys, &mut values).unwrap();
    batch.submit().unwrap();
    assert_eq!(keys.read(&rt).unwrap(), [1, 2, 3]);
    assert_eq!(values.read(&rt).unwrap(), [11, 12, 10, 13]);
}
