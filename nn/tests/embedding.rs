//! `Embedding` against an f64 reference: lookups and the table's gradient with repeated ids,
//! ids no token has, rows narrower and wider than a workgroup (and not a multiple of it), more
//! tokens than a sort tile; on a device with subgroups and on one without optional features
//! (the backward's sort takes a byte a pass on the first, 4 bits on the second); and the
//! shapes it refuses.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{plain_device_runtime, rng, runtime, RngExt};
use tessera::{Error, Runtime};
use tessera_nn::{Embedding, EmbeddingBackward, EmbeddingForward, EmbeddingShape};

/// The lookup and the gradient on the GPU.
fn on_gpu(
    rt: &Runtime,
    embedding: &Embedding,
    shape: EmbeddingShape,
    ids: &[u32],
    table: &[f32],
    grad_out: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (ids, table, grad_out) = (
        rt.upload(ids).unwrap(),
        rt.upload(table).unwrap(),
        rt.upload(grad_out).unwrap(),
    );
    let mut out = rt
        .zeros::<f32>((shape.tokens * shape.dim) as usize)
        .unwrap();
    // Not zero, so that a row the backward leaves alone shows.
    let mut grad_table = rt
        .upload(&vec![7.0f32; (shape.vocab * shape.dim) as usize])
        .unwrap();
    let mut batch = rt.batch();
    let args = EmbeddingForward {
        shape,
        ids: &ids,
        table: &table,
        out: &mut out,
    };
    embedding.forward(&mut batch, args).unwrap();
    let args = EmbeddingBackward {
        shape,
        ids: &ids,
        grad_out: &grad_out,
        grad_table: &mut grad_table,
    };
    embedding.backward(&mut batch, args).unwrap();
    batch.submit().unwrap();
    (out.read(rt).unwrap(), grad_table.read(rt).unwrap())
}

#[test]
fn lookups_and_table_gradients_match_the_reference() {
    for rt in [runtime(), plain_device_runtime(&runtime())] {
        let embedding = Embedding::new(&rt).unwrap();
        let mut rng = rng(7);
        // (tokens, vocab, dim): one token; few ids repeated often; a row wider than a
        // workgroup and not a multiple of it; more tokens than a sort tile, ids spread wide;
        // ids of 9 bits and of 17 (the sort runs only the passes over the ids' bits: one byte
        // pass rounded to two, three rounded to four).
        let shapes = [
            (1, 1, 1),
            (50, 3, 5),
            (17, 40, 300),
            (5000, 1000, 3),
            (600, 257, 2),
            (300, 70_000, 2),
        ];
        for (tokens, vocab, dim) in shapes {
            let shape = EmbeddingShape { tokens, vocab, dim };
            let ids: Vec<u32> = (0..tokens).map(|_| rng.random_range(0..vocab)).collect();
            let table: Vec<f32> = (0..vocab * dim)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let grad_out: Vec<f32> = (0..tokens * dim)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let (out, grad_table) = on_gpu(&rt, &embedding, shape, &ids, &table, &grad_out);
            let d = dim as usize;
            let mut want_out = Vec::new();
            let mut want_grad = vec![0f64; (vocab * dim) as usize];
            for (t, &id) in ids.iter().enumerate() {
                let id = id as usize;
                want_out.extend_from_slice(&table[id * d..(id + 1) * d]);
                for c in 0..d {
                    want_grad[id * d + c] += f64::from(grad_out[t * d + c]);
                }
            }
            assert_eq!(out, want_out, "{shape:?}: the lookup");
            for (i, (&got, &want)) in grad_table.iter().zip(&want_grad).enumerate() {
                assert!(
                    (f64::from(got) - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "{shape:?}: grad_table[{i}] is {got}, want {want}"
                );
            }
        }
    }
}

#[test]
fn the_table_gradient_is_the_same_on_every_run() {
    let rt = runtime();
    let embedding = Embedding::new(&rt).unwrap();
    let shape = EmbeddingShape {
        tokens: 3000,
        vocab: 5,
        dim: 4,
    };
    let ids: Vec<u32> = (0..3000).map(|t| (t * 7 % 5) as u32).collect();
    let mut rng = rng(8);
    let grad_out: Vec<f32> = (0..12_000).map(|_| rng.random_range(-1.0..1.0)).collect();
    let table = vec![0.0f32; 20];
    let (_, first) = on_gpu(&rt, &embedding, shape, &ids, &table, &grad_out);
    for _ in 0..3 {
        let (_, again) = on_gpu(&rt, &embedding, shape, &ids, &table, &grad_out);
        assert_eq!(
            again.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            first.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn empty_and_oversized_shapes_and_short_buffers_are_refused() {
    let rt = runtime();
    let embedding = Embedding::new(&rt).unwrap();
    let ids = rt.upload(&[0u32, 1]).unwrap();
    let table = rt.upload(&[0.0f32; 4]).unwrap();
    let mut out = rt.zeros::<f32>(4).unwrap();
    let problem = |shape: EmbeddingShape, out: &mut tessera::GpuBuffer<f32>| {
        let mut batch = rt.batch();
        let args = EmbeddingForward {
            shape,
            ids: &ids,
            table: &table,
            out,
        };
        match embedding.forward(&mut batch, args) {
            Err(Error::InvalidArgument { problem, .. }) => problem,
            Err(other) => other.to_string(),
            Ok(()) => panic!("{shape:?} was accepted"),
        }
    };
    let empty = EmbeddingShape {
        tokens: 0,
        vocab: 2,
        dim: 2,
    };
    assert!(problem(empty, &mut out).contains("at least 1"));
    let huge = EmbeddingShape {
        tokens: 2,
        vocab: 1 << 20,
        dim: 1 << 13,
    };
    assert!(problem(huge, &mut out).contains("does not fit"));
    // Three tokens, for two ids: the launcher names the buffer.
    let short = EmbeddingShape {
        tokens: 3,
        vocab: 2,
        dim: 2,
    };
    let mut longer = rt.zeros::<f32>(6).unwrap();
    let message = problem(short, &mut longer);
    assert!(message.contains("ids"), "{message}");
}
