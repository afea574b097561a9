//! Device functions and constant sets on a real adapter, against CPU references: a helper
//! over a workgroup array called from two instances with different constants, a helper with
//! barriers, a helper lent a local array, a helper lent a buffer and the parameters, and a
//! named set of constants with lists zipped together and derived ones.

mod common;

use common::{assert_close, rng, runtime, values};

#[tessera::kernels]
pub mod composed {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    /// `TILE` invocations sum `TILE * WIDTH` elements; `SPAN` is derived, not part of an
    /// instance's identity. `TILE` and `WIDTH` vary together: three instances, not six.
    #[constants(zip(TILE = [4, 8, 8], WIDTH = [2, 2, 1]), SPAN = TILE * WIDTH)]
    pub struct Tiling;

    /// A zip beside another list: each of its rows with each `ROUNDS`, as one list would.
    #[constants(ROUNDS = [1, 2], zip(TILE = [4, 8], WIDTH = [2, 1]), SPAN = TILE * WIDTH)]
    pub struct Rounds;

    /// Every element of the block this invocation is responsible for, staged in `tile`, then a
    /// barrier so the whole workgroup sees it.
    fn stage(tile: &mut [f32; SPAN], x: &[f32], p: &Len, t: u32, base: u32) {
        #[unroll]
        for k in 0..WIDTH {
            let i = base + t * WIDTH + k;
            tile[t * WIDTH + k] = if i < p.n { x[i] } else { 0.0 };
        }
        workgroup_barrier();
    }

    /// Halves of the staged block, summed into the caller's registers.
    fn halves(tile: &[f32; SPAN], sums: &mut [f32; 2]) {
        for i in 0..SPAN {
            sums[i * 2 / SPAN] += tile[i];
        }
    }

    /// `out[block] = (sum of its first half) - (sum of its second half)`, one block of `SPAN`
    /// elements per workgroup.
    #[kernel(workgroup = [TILE], constants = Tiling, grid = [ceil_div(p.n, SPAN)])]
    pub fn half_difference(
        p: &Len,
        #[len(p.n)] x: &[f32],
        #[len(ceil_div(p.n, SPAN))] out: &mut [f32],
        #[workgroup] tile: &mut [f32; SPAN],
    ) {
        let t = local_index();
        stage(tile, x, p, t, workgroup_id().x * SPAN);
        let mut sums = [0.0f32; 2];
        halves(tile, &mut sums);
        if t == 0 {
            out[workgroup_id().x] = sums[0] - sums[1];
        }
    }
}

fn half_difference_reference(x: &[f32], span: usize) -> Vec<f32> {
    x.chunks(span)
        .map(|block| {
            let (mut first, mut second) = (0.0, 0.0);
            for (i, v) in block.iter().enumerate() {
                if i * 2 < span {
                    first += v;
                } else {
                    second += v;
                }
            }
            first - second
        })
        .collect()
}

#[test]
fn helper_over_workgroup_memory_follows_each_instances_constants() {
    use composed::{HalfDifference, HalfDifferenceArgs, Len, Tiling};
    let rt = runtime();
    assert_eq!(
        Tiling::ALL,
        &[
            Tiling { tile: 4, width: 2 },
            Tiling { tile: 8, width: 2 },
            Tiling { tile: 8, width: 1 }
        ]
    );
    for constants in Tiling::ALL {
        let kernel = HalfDifference::with_constants(&rt, *constants).unwrap();
        assert_eq!(kernel.constants(), *constants);
        let span = constants.span() as usize;
        assert_eq!(span, (constants.tile * constants.width) as usize);
        // A whole number of blocks, then a ragged tail.
        for n in [span * 3, span * 3 + 3] {
            let xs = values(&mut rng(n as u64), n);
            let x = rt.upload(&xs).unwrap();
            let mut out = rt.zeros::<f32>(n.div_ceil(span)).unwrap();
            let p = Len { n: n as u32 };
            kernel
                .launch(
                    &rt,
                    HalfDifferenceArgs {
                        p: &p,
                        x: &x,
                        out: &mut out,
                    },
                )
                .unwrap();
            let want = half_difference_reference(&xs, span);
            assert_close(&out.read(&rt).unwrap(), &want, 1e-5);
        }
    }
}

#[test]
fn zipped_lists_combine_with_the_others_as_one_list() {
    use composed::Rounds;
    let instance = |rounds, tile, width| Rounds {
        rounds,
        tile,
        width,
    };
    assert_eq!(
        Rounds::ALL,
        &[
            instance(1, 4, 2),
            instance(1, 8, 1),
            instance(2, 4, 2),
            instance(2, 8, 1)
        ]
    );
    assert!(Rounds::ALL.iter().all(|r| r.span() == 8));
}

#[test]
fn derived_constants_are_computed_on_the_host_too() {
    use composed::Tiling;
    // Also for values outside the declared instances.
    assert_eq!(Tiling { tile: 16, width: 3 }.span(), 48);
    let entry = composed::HalfDifference::VARIANTS[1].entry_point;
    assert_eq!(
        entry, "half_difference_tile8_width2",
        "derived constants stay out of names"
    );
}
