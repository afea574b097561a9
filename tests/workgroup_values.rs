//! Workgroup values (`#[workgroup] s: &mut f32`, `&mut Vec2<u32>`): one value shared by the
//! invocations of a workgroup, read and written as `*s` (or `s`), run on a real adapter
//! (lavapipe in CI) and compared with a CPU reference.

mod common;

use common::{assert_close, runtime};

#[tessera::kernels]
pub mod shared {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    /// Each element's share of its workgroup's sum (invocation 0 sums the group into a
    /// workgroup value), and the group's index range, through a workgroup vector.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn shares(
        p: &Len,
        #[len(p.n)] x: &[f32],
        #[len(p.n)] share: &mut [f32],
        #[len(p.n)] ends: &mut [u32],
        #[workgroup] tile: &mut [f32; 64],
        #[workgroup] total: &mut f32,
        #[workgroup] range: &mut Vec2<u32>,
    ) {
        let i = global_id().x;
        let t = local_index();
        tile[t] = if i < p.n { x[i] } else { 0.0 };
        workgroup_barrier();
        if t == 0 {
            let mut sum = 0.0;
            for k in 0..64u32 {
                sum += tile[k];
            }
            *total = sum;
            *range = vec2(workgroup_id().x * 64, 0);
            range.y = range.x + 63;
        }
        workgroup_barrier();
        // The same value, read as one uniform across the workgroup.
        let sum = workgroup_uniform_load(&total);
        if i < p.n && sum == *total {
            share[i] = x[i] / sum;
            ends[i] = (*range).y - i + range.x;
        }
    }
}

#[test]
fn workgroup_values_are_shared_by_the_group() {
    let rt = runtime();
    let kernel = shared::Shares::new(&rt).unwrap();
    for n in [1u32, 64, 100, 1000] {
        let xs: Vec<f32> = (0..n).map(|i| 1.0 + (i % 13) as f32).collect();
        let x = rt.upload(&xs).unwrap();
        let mut share = rt.zeros::<f32>(n as usize).unwrap();
        let mut ends = rt.zeros::<u32>(n as usize).unwrap();
        kernel
            .launch(
                &rt,
                shared::SharesArgs {
                    p: &shared::Len { n },
                    x: &x,
                    share: &mut share,
                    ends: &mut ends,
                },
            )
            .unwrap();
        let mut want_share = Vec::new();
        let mut want_ends = Vec::new();
        for (group, chunk) in xs.chunks(64).enumerate() {
            let total: f32 = chunk.iter().sum();
            let first = group as u32 * 64;
            for (k, v) in chunk.iter().enumerate() {
                want_share.push(v / total);
                want_ends.push(first + 63 - (first + k as u32) + first);
            }
        }
        assert_close(&share.read(&rt).unwrap(), &want_share, 1e-5);
        assert_eq!(ends.read(&rt).unwrap(), want_ends);
    }
}
