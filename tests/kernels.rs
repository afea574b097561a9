//! Kernels written with `#[tessera::kernels]`, run on a real adapter (lavapipe in CI) and
//! compared with CPU references: elementwise, 2D-indexed, a workgroup reduction, helpers with
//! `match`, atomics, loops of every form, register arrays, and the launcher's checks.

mod common;

use common::{assert_close, runtime};
use tessera::{Error, Runtime};

#[tessera::kernels]
pub mod elementwise {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Scale {
        pub a: f32,
        pub b: f32,
        pub n: u32,
    }

    /// y = a * x + y.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn saxpy(p: &Scale, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = p.a * x[i] + y[i];
        }
    }

    /// A tour of expressions: casts, math methods, `if` as a value, shadowing, bit operations.
    #[kernel(workgroup = [32], grid = [ceil_div(x.len(), 32)])]
    pub fn mix(p: &Scale, x: &[f32], bits: &[u32], out: &mut [f32], out_bits: &mut [u32]) {
        let i = global_id().x;
        if i >= p.n {
            return;
        }
        let v = x[i];
        let v = v.abs().sqrt() + v.exp().min(10.0) * p.a - (v * 0.5).tanh().max(-0.25);
        let sign = if x[i] < 0.0 { -1.0 } else { 1.0 };
        let mut acc = v.mul_add(p.b, sign).clamp(-100.0, 100.0);
        acc += (i as f32).powf(0.5) + x[i].floor() + x[i].round() - x[i].fract();
        out[i] = acc;
        let b = bits[i];
        out_bits[i] = ((b << 3) ^ (b >> 2)) & 0xffff
            | (b % 7) * (!b & 1) + b.count_ones() + (i as i32 - 5).abs() as u32;
    }
}

fn saxpy_ref(a: f32, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    xs.iter().zip(ys).map(|(x, y)| a * x + y).collect()
}

// The precedence is the point: the kernel writes the same expression without parentheses.
#[allow(clippy::precedence)]
fn mix_ref(a: f32, b: f32, x: f32, i: usize, bits: u32) -> (f32, u32) {
    let v = x.abs().sqrt() + x.exp().min(10.0) * a - (x * 0.5).tanh().max(-0.25);
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    let mut acc = v.mul_add(b, sign).clamp(-100.0, 100.0);
    acc += (i as f32).powf(0.5) + x.floor() + x.round() - x.fract();
    let word = ((bits << 3) ^ (bits >> 2)) & 0xffff
        | (bits % 7) * (!bits & 1) + bits.count_ones() + (i as i32 - 5).unsigned_abs();
    (acc, word)
}

#[test]
fn elementwise_saxpy_matches_reference_including_the_tail() {
    let rt = runtime();
    let saxpy = elementwise::Saxpy::new(&rt).unwrap();
    for n in [1u32, 63, 64, 65, 1000] {
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
        let ys: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
        let x = rt.upload(&xs).unwrap();
        let mut y = rt.upload(&ys).unwrap();
        let p = elementwise::Scale { a: -1.5, b: 0.0, n };
        saxpy
            .launch(
                &rt,
                elementwise::SaxpyArgs {
                    p: &p,
                    x: &x,
                    y: &mut y,
                },
            )
            .unwrap();
        assert_eq!(y.read(&rt).unwrap(), saxpy_ref(-1.5, &xs, &ys), "n = {n}");
    }
}

#[test]
fn expressions_match_rust_semantics() {
    let rt = runtime();
    let n = 200u32;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 - 100.0) * 0.037 + 0.5).collect();
    let bits_in: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761)).collect();
    let x = rt.upload(&xs).unwrap();
    let bits = rt.upload(&bits_in).unwrap();
    let mut out = rt.zeros::<f32>(n as usize).unwrap();
    let mut out_bits = rt.zeros::<u32>(n as usize).unwrap();
    let p = elementwise::Scale {
        a: 0.75,
        b: 1.25,
        n,
    };
    let mix = elementwise::Mix::new(&rt).unwrap();
    mix.launch(
        &rt,
        elementwise::MixArgs {
            p: &p,
            x: &x,
            bits: &bits,
            out: &mut out,
            out_bits: &mut out_bits,
        },
    )
    .unwrap();
    let (want, want_bits): (Vec<f32>, Vec<u32>) = (0..n as usize)
        .map(|i| mix_ref(0.75, 1.25, xs[i], i, bits_in[i]))
        .unzip();
    assert_close(&out.read(&rt).unwrap(), &want, 1e-4);
    assert_eq!(out_bits.read(&rt).unwrap(), want_bits);
}

#[tessera::kernels]
pub mod images {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Size {
        pub width: u32,
        pub height: u32,
    }

    /// out[y][x] = in[x][y] + the 3x3 box sum around (x, y) in `input` (zero outside).
    #[kernel(workgroup = [8, 8], grid = [ceil_div(s.height, 8), ceil_div(s.width, 8)])]
    pub fn transpose_blur(
        s: &Size,
        #[len(s.width * s.height)] input: &[f32],
        #[len(s.width * s.height)] output: &mut [f32],
    ) {
        let id = global_id();
        let row = id.y;
        let col = id.x;
        if row >= s.width || col >= s.height {
            return;
        }
        let mut sum = 0.0;
        for dy in 0..3 {
            for dx in 0..3 {
                let y = col as i32 + dy - 1;
                let x = row as i32 + dx - 1;
                if y >= 0 && y < s.height as i32 && x >= 0 && x < s.width as i32 {
                    sum += input[y as u32 * s.width + x as u32];
                }
            }
        }
        output[row * s.height + col] = sum + input[col * s.width + row];
    }
}

fn transpose_blur_ref(width: usize, height: usize, input: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; width * height];
    for row in 0..width {
        for col in 0..height {
            let mut sum = 0.0;
            for dy in 0..3i32 {
                for dx in 0..3i32 {
                    let (y, x) = (col as i32 + dy - 1, row as i32 + dx - 1);
                    if y >= 0 && y < height as i32 && x >= 0 && x < width as i32 {
                        sum += input[y as usize * width + x as usize];
                    }
                }
            }
            out[row * height + col] = sum + input[col * width + row];
        }
    }
    out
}

#[test]
fn two_dimensional_kernel_matches_reference_on_ragged_sizes() {
    let rt = runtime();
    let kernel = images::TransposeBlur::new(&rt).unwrap();
    for (width, height) in [(1u32, 1u32), (8, 8), (13, 5), (17, 30)] {
        let input: Vec<f32> = (0..width * height)
            .map(|i| ((i * 7) % 11) as f32 - 3.0)
            .collect();
        let x = rt.upload(&input).unwrap();
        let mut y = rt.zeros::<f32>(input.len()).unwrap();
        let s = images::Size { width, height };
        kernel
            .launch(
                &rt,
                images::TransposeBlurArgs {
                    s: &s,
                    input: &x,
                    output: &mut y,
                },
            )
            .unwrap();
        let want = transpose_blur_ref(width as usize, height as usize, &input);
        assert_eq!(y.read(&rt).unwrap(), want, "{width} x {height}");
    }
}

#[tessera::kernels]
pub mod reduce {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    /// One partial sum per workgroup of 128, by a tree reduction in workgroup memory.
    #[kernel(workgroup = [128], grid = [ceil_div(p.n, 128)])]
    pub fn partial_sums(
        p: &Len,
        #[len(p.n)] x: &[f32],
        #[len(ceil_div(p.n, 128))] sums: &mut [f32],
        #[workgroup] scratch: &mut [f32; 128],
    ) {
        let i = global_id().x;
        let t = local_index();
        scratch[t] = if i < p.n { x[i] } else { 0.0 };
        workgroup_barrier();
        let mut stride = 64u32;
        while stride > 0 {
            if t < stride {
                scratch[t] += scratch[t + stride];
            }
            workgroup_barrier();
            stride /= 2;
        }
        if t == 0 {
            sums[workgroup_id().x] = scratch[0];
        }
    }

    /// Counts values into 4 buckets with atomics in workgroup memory, then in storage.
    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn histogram(
        p: &Len,
        #[len(p.n)] values: &[u32],
        #[len(4)] counts: &mut [AtomicU32],
        #[workgroup] local: &mut [AtomicU32; 4],
    ) {
        let i = global_id().x;
        if i < p.n {
            local[values[i] % 4].fetch_add(1, Ordering::Relaxed);
        }
        workgroup_barrier();
        let t = local_index();
        if t < 4 {
            counts[t].fetch_add(local[t].load());
        }
    }
}

#[test]
fn workgroup_reduction_matches_reference() {
    let rt = runtime();
    let kernel = reduce::PartialSums::new(&rt).unwrap();
    for n in [1u32, 127, 128, 129, 1000] {
        let xs: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 0.5 - 2.0).collect();
        let x = rt.upload(&xs).unwrap();
        let mut sums = rt.zeros::<f32>(n.div_ceil(128) as usize).unwrap();
        kernel
            .launch(
                &rt,
                reduce::PartialSumsArgs {
                    p: &reduce::Len { n },
                    x: &x,
                    sums: &mut sums,
                },
            )
            .unwrap();
        let want: Vec<f32> = xs.chunks(128).map(|c| c.iter().sum()).collect();
        assert_close(&sums.read(&rt).unwrap(), &want, 1e-5);
    }
}

#[test]
fn atomic_histogram_counts_every_value() {
    let rt = runtime();
    let n = 1001u32;
    let values_in: Vec<u32> = (0..n).map(|i| i * i + 3).collect();
    let values = rt.upload(&values_in).unwrap();
    let mut counts = rt.zeros::<u32>(4).unwrap();
    let kernel = reduce::Histogram::new(&rt).unwrap();
    kernel
        .launch(
            &rt,
            reduce::HistogramArgs {
                p: &reduce::Len { n },
                values: &values,
                counts: &mut counts,
            },
        )
        .unwrap();
    let mut want = vec![0u32; 4];
    values_in.iter().for_each(|v| want[(v % 4) as usize] += 1);
    assert_eq!(counts.read(&rt).unwrap(), want);
}

#[tessera::kernels]
pub mod activations {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Act {
        pub n: u32,
        pub kind: u32,
    }

    /// The activation `kind` (0 none, 1 ReLU, 2 GELU tanh form, 3 sigmoid, else tanh).
    fn activate(x: f32, kind: u32) -> f32 {
        match kind {
            0 => x,
            1 => x.max(0.0),
            2 => {
                let inner = 0.7978846 * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + inner.tanh())
            }
            3 => sigmoid(x),
            _ => x.tanh(),
        }
    }

    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// Helper with `mut` parameter, early return and every loop form.
    fn digit_sum(mut v: u32) -> u32 {
        let mut total = 0;
        loop {
            if v == 0 {
                break;
            }
            total += v % 10;
            v /= 10;
        }
        for k in (0..3).rev() {
            total += k;
        }
        for k in (1..=9).step_by(4) {
            total += k;
        }
        for k in 2..=3 {
            total *= k;
        }
        total
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn apply(
        p: &Act,
        #[len(p.n)] x: &[f32],
        #[len(p.n)] y: &mut [f32],
        #[len(p.n)] digits: &mut [u32],
    ) {
        let i = global_id().x;
        if i < p.n {
            y[i] = activate(x[i], p.kind);
            digits[i] = digit_sum(i * 37);
        }
    }
}

fn activate_ref(x: f32, kind: u32) -> f32 {
    match kind {
        0 => x,
        1 => x.max(0.0),
        2 => 0.5 * x * (1.0 + (0.7978846 * (x + 0.044715 * x * x * x)).tanh()),
        3 => 1.0 / (1.0 + (-x).exp()),
        _ => x.tanh(),
    }
}

fn digit_sum_ref(mut v: u32) -> u32 {
    let mut total = 0;
    while v != 0 {
        total += v % 10;
        v /= 10;
    }
    total += 2 + 1;
    total += 1 + 5 + 9;
    total * 6
}

#[test]
fn helper_with_match_matches_reference_for_every_arm() {
    let rt = runtime();
    let n = 300u32;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 - 150.0) / 30.0).collect();
    let x = rt.upload(&xs).unwrap();
    let kernel = activations::Apply::new(&rt).unwrap();
    for kind in 0..5 {
        let mut y = rt.zeros::<f32>(n as usize).unwrap();
        let mut digits = rt.zeros::<u32>(n as usize).unwrap();
        let p = activations::Act { n, kind };
        kernel
            .launch(
                &rt,
                activations::ApplyArgs {
                    p: &p,
                    x: &x,
                    y: &mut y,
                    digits: &mut digits,
                },
            )
            .unwrap();
        let want: Vec<f32> = xs.iter().map(|&v| activate_ref(v, kind)).collect();
        assert_close(&y.read(&rt).unwrap(), &want, 1e-5);
        let want_digits: Vec<u32> = (0..n).map(|i| digit_sum_ref(i * 37)).collect();
        assert_eq!(digits.read(&rt).unwrap(), want_digits);
    }
}

#[tessera::kernels]
pub mod tiles {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Rows {
        pub rows: u32,
    }

    /// Each invocation sums a row of 8 through a register array filled by unrolled loops.
    #[kernel(workgroup = [16], grid = [ceil_div(p.rows, 16)])]
    pub fn row_sums(p: &Rows, #[len(p.rows * 8)] m: &[f32], #[len(p.rows)] out: &mut [f32]) {
        let r = global_id().x;
        if r >= p.rows {
            return;
        }
        let mut regs = [0.0f32; 8];
        #[unroll]
        for k in 0..8 {
            regs[k] = m[r * 8 + k];
        }
        let mut total = 0.0;
        #[unroll]
        for k in (0..8).rev() {
            total += regs[k] * (k + 1) as f32;
        }
        out[r] = total;
    }
}

#[test]
fn unrolled_register_tile_matches_reference() {
    let rt = runtime();
    let rows = 37u32;
    let data: Vec<f32> = (0..rows * 8).map(|i| (i % 5) as f32 - 1.0).collect();
    let m = rt.upload(&data).unwrap();
    let mut out = rt.zeros::<f32>(rows as usize).unwrap();
    tiles::RowSums::new(&rt)
        .unwrap()
        .launch(
            &rt,
            tiles::RowSumsArgs {
                p: &tiles::Rows { rows },
                m: &m,
                out: &mut out,
            },
        )
        .unwrap();
    let want: Vec<f32> = data
        .chunks(8)
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(k, v)| v * (k + 1) as f32)
                .sum()
        })
        .collect();
    assert_eq!(out.read(&rt).unwrap(), want);
}

#[test]
fn short_buffer_is_an_error_naming_the_binding_and_nothing_runs() {
    let rt = runtime();
    let x = rt.upload(&[1.0f32; 10]).unwrap();
    let mut y = rt.upload(&[5.0f32; 9]).unwrap();
    let p = elementwise::Scale {
        a: 2.0,
        b: 0.0,
        n: 10,
    };
    let saxpy = elementwise::Saxpy::new(&rt).unwrap();
    let error = saxpy
        .launch(
            &rt,
            elementwise::SaxpyArgs {
                p: &p,
                x: &x,
                y: &mut y,
            },
        )
        .unwrap_err();
    match &error {
        Error::BufferTooShort {
            kernel,
            binding,
            needed,
            given,
        } => {
            assert_eq!(
                (kernel.as_str(), binding.as_str(), *needed, *given),
                ("saxpy", "y", 10, 9)
            );
        }
        other => panic!("expected BufferTooShort, got {other}"),
    }
    assert_eq!(
        error.to_string(),
        "binding `y` of `saxpy` needs at least 10 elements, but the buffer has 9"
    );
    assert_eq!(
        y.read(&rt).unwrap(),
        vec![5.0; 9],
        "nothing may run after a failed check"
    );
}

#[test]
fn launchers_record_into_one_batch() {
    let rt: Runtime = runtime();
    let n = 100u32;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = rt.upload(&xs).unwrap();
    let mut y = rt.zeros::<f32>(n as usize).unwrap();
    let saxpy = elementwise::Saxpy::new(&rt).unwrap();
    let p = elementwise::Scale { a: 1.0, b: 0.0, n };
    let mut batch = rt.batch();
    for _ in 0..3 {
        saxpy
            .record(
                &mut batch,
                elementwise::SaxpyArgs {
                    p: &p,
                    x: &x,
                    y: &mut y,
                },
            )
            .unwrap();
    }
    let timing = batch.submit_timed().unwrap();
    assert_eq!(timing.dispatches.len(), 3);
    let want: Vec<f32> = xs.iter().map(|v| 3.0 * v).collect();
    assert_eq!(y.read(&rt).unwrap(), want);
    assert_eq!(
        saxpy.grid(&elementwise::SaxpyArgs {
            p: &p,
            x: &x,
            y: &mut y
        }),
        [2, 1, 1]
    );
}

#[tessera::kernels]
pub mod loops {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Walk {
        pub start: u32,
        pub end: u32,
        pub step: u32,
    }

    /// Folds `v` into an order-sensitive digest.
    fn mix(h: u32, v: u32) -> u32 {
        h.wrapping_mul(31).wrapping_add(v)
    }

    /// For each way of walking a range down by a step: how many values, and a digest of
    /// them in order.
    #[kernel(workgroup = [1], grid = [1])]
    pub fn walks(w: &Walk, out: &mut [u32]) {
        let (mut n, mut h) = (0u32, 0u32);
        for v in (w.start..w.end).rev().step_by(w.step) {
            n += 1;
            h = mix(h, v);
        }
        out[0] = n;
        out[1] = h;
        let (mut n, mut h) = (0u32, 0u32);
        for v in (w.start..w.end).step_by(w.step).rev() {
            n += 1;
            h = mix(h, v);
        }
        out[2] = n;
        out[3] = h;
        let (mut n, mut h) = (0u32, 0u32);
        for v in (w.start..=w.end).rev().step_by(w.step) {
            n += 1;
            h = mix(h, v);
        }
        out[4] = n;
        out[5] = h;
        let mut h = 0u32;
        #[unroll]
        for v in (2..11).rev().step_by(3) {
            h = mix(h, v);
        }
        out[6] = h;
        let mut h = 0u32;
        #[unroll]
        for v in (2..11).step_by(3).rev() {
            h = mix(h, v);
        }
        out[7] = h;
    }

    /// The numeric constants kernels may name by path.
    #[kernel(workgroup = [1], grid = [1])]
    pub fn limits(unsigned: &mut [u32], signed: &mut [i32], float: &mut [f32]) {
        unsigned[0] = u32::MAX;
        unsigned[1] = u32::MIN;
        signed[0] = i32::MIN;
        signed[1] = i32::MAX;
        signed[2] = i32::MIN + 1;
        float[0] = f32::MAX;
        float[1] = f32::MIN;
        float[2] = f32::EPSILON;
        float[3] = f32::MIN_POSITIVE;
        float[4] = std::f32::consts::PI;
        float[5] = core::f32::consts::FRAC_1_SQRT_2;
        float[6] = f32::consts::TAU;
    }

    /// Where a walk over `codes` stops: at the first 0 or 7 (a `break` in a `match` arm,
    /// which leaves the loop as in Rust), skipping the code after each 1, or at the end.
    #[kernel(workgroup = [1], grid = [1])]
    pub fn first_stop(codes: &[u32], out: &mut [u32]) {
        let mut i = 0u32;
        loop {
            if i >= codes.len() {
                break;
            }
            match codes[i] {
                0 | 7 => break,
                1 => {
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
        out[0] = i;
    }
}

#[test]
fn a_break_in_a_match_arm_leaves_the_loop() {
    let rt = runtime();
    let kernel = loops::FirstStop::new(&rt).unwrap();
    let first_stop = |codes: &[u32]| {
        let mut i = 0;
        while i < codes.len() {
            match codes[i] {
                0 | 7 => break,
                1 => i += 2,
                _ => i += 1,
            }
        }
        i as u32
    };
    for codes in [
        &[3, 1, 0, 5, 7, 2][..],
        &[0, 1],
        &[1, 7, 1, 0, 2, 7],
        &[4, 5, 6],
    ] {
        let gpu_codes = rt.upload(codes).unwrap();
        let mut out = rt.zeros::<u32>(1).unwrap();
        let args = loops::FirstStopArgs {
            codes: &gpu_codes,
            out: &mut out,
        };
        kernel.launch(&rt, args).unwrap();
        assert_eq!(out.read(&rt).unwrap(), [first_stop(codes)], "{codes:?}");
    }
}

fn digest(values: impl Iterator<Item = u32>) -> (u32, u32) {
    values.fold((0, 0), |(n, h), v| {
        (n + 1, h.wrapping_mul(31).wrapping_add(v))
    })
}

#[test]
fn reversed_and_stepped_loops_visit_what_rust_visits() {
    let rt = runtime();
    let walks = loops::Walks::new(&rt).unwrap();
    let cases = [
        (0, 0, 1),
        (0, 10, 3),
        (3, 11, 3),
        (5, 5, 2),
        (7, 3, 2),
        (0, 1, 5),
        (1, 20, 4),
        (2, 9, 1),
        (u32::MAX - 7, u32::MAX, 3),
    ];
    for (start, end, step) in cases {
        let mut out = rt.zeros::<u32>(8).unwrap();
        let w = loops::Walk { start, end, step };
        walks
            .launch(
                &rt,
                loops::WalksArgs {
                    w: &w,
                    out: &mut out,
                },
            )
            .unwrap();
        let s = step as usize;
        let forms = [
            digest((start..end).rev().step_by(s)),
            digest((start..end).step_by(s).rev()),
            digest((start..=end).rev().step_by(s)),
        ];
        let mut want: Vec<u32> = forms.iter().flat_map(|&(n, h)| [n, h]).collect();
        want.push(digest((2..11).rev().step_by(3)).1);
        want.push(digest((2..11).step_by(3).rev()).1);
        assert_eq!(out.read(&rt).unwrap(), want, "{start}..{end} by {step}");
    }
}

#[test]
fn numeric_constants_by_path_have_rusts_values() {
    let rt = runtime();
    let (mut unsigned, mut signed, mut float) = (
        rt.zeros::<u32>(2).unwrap(),
        rt.zeros::<i32>(3).unwrap(),
        rt.zeros::<f32>(7).unwrap(),
    );
    loops::Limits::new(&rt)
        .unwrap()
        .launch(
            &rt,
            loops::LimitsArgs {
                unsigned: &mut unsigned,
                signed: &mut signed,
                float: &mut float,
            },
        )
        .unwrap();
    use std::f32::consts;
    assert_eq!(unsigned.read(&rt).unwrap(), [u32::MAX, 0]);
    assert_eq!(
        signed.read(&rt).unwrap(),
        [i32::MIN, i32::MAX, i32::MIN + 1]
    );
    let want = [
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        f32::MIN_POSITIVE,
        consts::PI,
        consts::FRAC_1_SQRT_2,
        consts::TAU,
    ];
    assert_eq!(float.read(&rt).unwrap(), want);
}

/// The WGSL of every kernel module above, pinned: a change in lowering shows up as a diff of
/// `tests/snapshots/`. Review with `cargo insta review` or regenerate with `INSTA_UPDATE=always`.
#[test]
fn generated_wgsl_is_pinned() {
    insta::assert_snapshot!("elementwise", elementwise::WGSL);
    insta::assert_snapshot!("images", images::WGSL);
    insta::assert_snapshot!("reduce", reduce::WGSL);
    insta::assert_snapshot!("activations", activations::WGSL);
    insta::assert_snapshot!("tiles", tiles::WGSL);
    insta::assert_snapshot!("loops", loops::WGSL);
}

/// The issue that asked for it: a launcher given a buffer of another runtime returned `Ok`,
/// and the next flush panicked inside wgpu (or, buffers made in the same order on both
/// runtimes, the dispatch wrote the launcher's runtime's own buffer).
#[test]
fn a_launcher_refuses_another_runtimes_buffers_and_runtime() {
    let (a, b) = (runtime(), runtime());
    let p = elementwise::Scale {
        a: 1.0,
        b: 0.0,
        n: 4,
    };
    let x_a = a.upload_labeled("x of a", &[10.0f32; 4]).unwrap();
    let mut y_a = a.upload_labeled("y of a", &[100.0f32; 4]).unwrap();
    let x_b = b.upload_labeled("x of b", &[10.0f32; 4]).unwrap();
    let mut y_b = b.upload_labeled("y of b", &[100.0f32; 4]).unwrap();
    let saxpy = elementwise::Saxpy::new(&a).unwrap();
    saxpy.prepare(&a).unwrap();

    let error = saxpy
        .launch(
            &a,
            elementwise::SaxpyArgs {
                p: &p,
                x: &x_a,
                y: &mut y_b,
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ForeignBuffer { operation, buffer }
                if operation == "binding `y` of `saxpy`" && buffer == "y of b"
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("`saxpy`") && message.contains("the buffer `y of b`"),
        "{message}"
    );
    // Its pipeline is `a`'s: `b`'s own buffers do not make it `b`'s.
    let error = saxpy
        .launch(
            &b,
            elementwise::SaxpyArgs {
                p: &p,
                x: &x_b,
                y: &mut y_b,
            },
        )
        .unwrap_err();
    assert!(
        matches!(&error, Error::ForeignPipeline { kernel } if kernel == "saxpy"),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("`saxpy`: "), "{error}");
    // A launcher belongs to the runtime it was made for even before it builds a pipeline.
    let unbuilt = elementwise::Saxpy::new(&a).unwrap();
    let args = elementwise::SaxpyArgs {
        p: &p,
        x: &x_b,
        y: &mut y_b,
    };
    let error = unbuilt.launch(&b, args).unwrap_err();
    assert!(
        matches!(&error, Error::ForeignPipeline { kernel } if kernel == "saxpy"),
        "{error:?}"
    );

    a.wait().unwrap();
    b.wait().unwrap();
    assert_eq!(y_a.read(&a).unwrap(), [100.0; 4]);
    assert_eq!(y_b.read(&b).unwrap(), [100.0; 4]);
    saxpy
        .launch(
            &a,
            elementwise::SaxpyArgs {
                p: &p,
                x: &x_a,
                y: &mut y_a,
            },
        )
        .unwrap();
    assert_eq!(y_a.read(&a).unwrap(), [110.0; 4]);
}

/// The issue: a buffer over the device's limit for one binding was refused with an error
/// naming neither the kernel nor the binding. The launcher names both as the source does, and
/// says what to do; nothing runs.
#[test]
fn a_buffer_over_the_binding_limit_is_an_error_naming_kernel_and_binding() {
    let like = runtime();
    let rt = common::limited_runtime(&like, |limits| {
        limits.max_storage_buffer_binding_size = 1 << 20;
    });
    let n = (1u32 << 18) + 1;
    let x = rt.upload(&vec![1.0f32; n as usize]).unwrap();
    let mut y = rt.upload(&vec![5.0f32; n as usize]).unwrap();
    let p = elementwise::Scale { a: 2.0, b: 0.0, n };
    let saxpy = elementwise::Saxpy::new(&rt).unwrap();
    let error = saxpy
        .launch(
            &rt,
            elementwise::SaxpyArgs {
                p: &p,
                x: &x,
                y: &mut y,
            },
        )
        .unwrap_err();
    match &error {
        Error::BindingTooLarge {
            kernel,
            binding,
            bytes,
            limit,
        } => assert_eq!(
            (kernel.as_str(), binding.as_str(), *bytes, *limit),
            ("saxpy", "x", 4 * u64::from(n), 1 << 20)
        ),
        other => panic!("expected BindingTooLarge, got {other}"),
    }
    assert_eq!(
        error.to_string(),
        "`saxpy` cannot bind `x`: its buffer of 1048580 bytes exceeds this device's limit of \
         1048576 bytes for one storage binding (max_storage_buffer_binding_size); split the \
         data over buffers within the limit and run `saxpy` once for each part"
    );
    assert_eq!(
        y.read_range(&rt, ..4).unwrap(),
        vec![5.0; 4],
        "nothing may run after a failed check"
    );
    // Within the limit, the same launcher runs.
    let p = elementwise::Scale {
        a: 2.0,
        b: 0.0,
        n: n - 1,
    };
    let (x, mut y) = (
        rt.upload(&vec![1.0f32; n as usize - 1]).unwrap(),
        rt.upload(&vec![5.0f32; n as usize - 1]).unwrap(),
    );
    saxpy
        .launch(
            &rt,
            elementwise::SaxpyArgs {
                p: &p,
                x: &x,
                y: &mut y,
            },
        )
        .unwrap();
    assert_eq!(y.read_range(&rt, ..4).unwrap(), vec![7.0; 4]);
}
