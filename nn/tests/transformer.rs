//! `Residual` and `Heads` against the CPU: sums of lengths around a workgroup's, moves of
//! packed heads and of heads inside a fused projection's rows (head dimensions and rows
//! wider than a workgroup and not a multiple of it), the round trip, and the sizes each
//! refuses.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{rng, runtime, values};
use tessera::{Error, Runtime};
use tessera_nn::{Heads, HeadsLayout, Residual};

#[test]
fn residual_sums_match_the_cpu() {
    let rt = runtime();
    let residual = Residual::new(&rt).unwrap();
    let mut rng = rng(3);
    for len in [1, 255, 256, 257, 1000] {
        let (a, b) = (values(&mut rng, len), values(&mut rng, len));
        let (ga, gb) = (rt.upload(&a).unwrap(), rt.upload(&b).unwrap());
        let mut out = rt.zeros::<f32>(len).unwrap();
        let mut batch = rt.batch();
        residual.add(&mut batch, &ga, &gb, &mut out).unwrap();
        batch.submit().unwrap();
        let want: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a + b).collect();
        assert_eq!(out.read(&rt).unwrap(), want, "len {len}");
    }
}

/// The index of `rows[token, first + h * head_dim + d]` and of `heads[b, h, t, d]`.
fn indices(layout: &HeadsLayout, b: u32, h: u32, t: u32, d: u32) -> (usize, usize) {
    let token = b * layout.seq + t;
    let row = token * layout.row + layout.first + h * layout.head_dim + d;
    let head = ((b * layout.heads + h) * layout.seq + t) * layout.head_dim + d;
    (row as usize, head as usize)
}

/// Every `(row index, head index)` pair of `layout`.
fn pairs(layout: &HeadsLayout) -> Vec<(usize, usize)> {
    let mut all = Vec::new();
    for b in 0..layout.batch {
        for h in 0..layout.heads {
            for t in 0..layout.seq {
                for d in 0..layout.head_dim {
                    all.push(indices(layout, b, h, t, d));
                }
            }
        }
    }
    all
}

/// `to_heads` of `rows`, and `to_rows` of the result into rows that start as `fill`.
fn on_gpu(rt: &Runtime, layout: HeadsLayout, rows: &[f32], fill: f32) -> (Vec<f32>, Vec<f32>) {
    let heads = Heads::new(rt).unwrap();
    let rows = rt.upload(rows).unwrap();
    let mut by_head = rt.zeros::<f32>(layout.heads_len()).unwrap();
    let mut back = rt.upload(&vec![fill; layout.rows_len()]).unwrap();
    let mut batch = rt.batch();
    heads
        .to_heads(&mut batch, layout, &rows, &mut by_head)
        .unwrap();
    heads
        .to_rows(&mut batch, layout, &by_head, &mut back)
        .unwrap();
    batch.submit().unwrap();
    (by_head.read(rt).unwrap(), back.read(rt).unwrap())
}

#[test]
fn heads_move_to_and_from_rows_as_the_cpu_does() {
    let rt = runtime();
    let mut rng = rng(5);
    // Packed heads; one head wider than a workgroup and not a multiple of it; the keys and
    // the values of a fused projection (rows of three groups); a group at a row's end.
    let layouts = [
        HeadsLayout::packed(2, 5, 3, 4),
        HeadsLayout::packed(1, 3, 1, 300),
        HeadsLayout::packed(2, 7, 4, 16).within(192, 64),
        HeadsLayout::packed(3, 2, 2, 8).within(3 * 16, 32),
        HeadsLayout::packed(1, 1, 1, 1),
    ];
    for layout in layouts {
        let rows = values(&mut rng, layout.rows_len());
        let (by_head, back) = on_gpu(&rt, layout, &rows, 9.0);
        let mut want_heads = vec![0.0f32; layout.heads_len()];
        let mut want_rows = vec![9.0f32; layout.rows_len()];
        for (row, head) in pairs(&layout) {
            want_heads[head] = rows[row];
            want_rows[row] = rows[row];
        }
        assert_eq!(by_head, want_heads, "{layout:?}");
        // The heads' columns come back; the rest of each row is left as it was.
        assert_eq!(back, want_rows, "{layout:?}");
    }
}

#[test]
fn refuses_what_it_cannot_move() {
    let rt = runtime();
    let (heads, residual) = (Heads::new(&rt).unwrap(), Residual::new(&rt).unwrap());
    let invalid = |result: tessera::Result<()>, says: &str| match result {
        Err(Error::InvalidArgument { problem, .. }) => {
            assert!(problem.contains(says), "{problem}")
        }
        other => panic!("expected an invalid argument, got {other:?}"),
    };
    let a = rt.zeros::<f32>(4).unwrap();
    let mut b = rt.zeros::<f32>(8).unwrap();
    let mut batch = rt.batch();
    invalid(residual.add(&mut batch, &a, &a, &mut b), "must match");
    // Heads that end past the row, a size of 0, buffers of the wrong length.
    let past = HeadsLayout::packed(1, 2, 2, 2).within(4, 1);
    let mut c = rt.zeros::<f32>(8).unwrap();
    invalid(
        heads.to_heads(&mut batch, past, &b, &mut c),
        "past the rows",
    );
    let empty = HeadsLayout::packed(1, 0, 2, 2);
    invalid(heads.to_rows(&mut batch, empty, &a, &mut b), "size of 0");
    let layout = HeadsLayout::packed(1, 2, 2, 2);
    invalid(
        heads.to_heads(&mut batch, layout, &a, &mut b),
        "not 4 and 8",
    );
}
