//! Vector storage and bit-level data, run on a real adapter (lavapipe in CI) against CPU
//! references: `Vec4` and `Vec2` buffers (host `[T; 4]`, `[T; 2]`) with a ragged tail, buffers
//! of scalars viewed as vectors, an element-type-generic vector kernel, 8-bit pixels packed in `u32`, and bit casts.

mod common;

use common::runtime;
use tessera::half::f16;
use tessera::wgpu;

#[tessera::kernels]
pub mod vectors {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Axpy {
        /// Scalars in `x` and `y`; the buffers hold `ceil(n / 4)` vectors.
        pub n: u32,
        pub a: f32,
    }

    /// `y = a * x + y` a `Vec4` at a time; the last vector of a length that is not a multiple
    /// of 4 writes only the scalars below `n`.
    #[kernel(workgroup = [64], grid = [ceil_div(ceil_div(p.n, 4), 64)])]
    pub fn axpy4(
        p: &Axpy,
        #[len(ceil_div(p.n, 4))] x: &[Vec4<f32>],
        #[len(ceil_div(p.n, 4))] y: &mut [Vec4<f32>],
    ) {
        let i = global_id().x;
        if 4 * i + 4 <= p.n {
            y[i] = x[i] * p.a + y[i];
        } else if 4 * i < p.n {
            let (v, mut out) = (x[i] * p.a + y[i], y[i]);
            out.x = v.x;
            if 4 * i + 1 < p.n {
                out.y = v.y;
            }
            if 4 * i + 2 < p.n {
                out.z = v.z;
            }
            y[i] = out;
        }
    }

    /// Swaps the components of each pair, for `f32` and `f16` pairs alike.
    #[kernel(workgroup = [64], grid = [ceil_div(pairs.len(), 64)], types(T = [f32, f16]))]
    pub fn swap_pairs<T>(pairs: &mut [Vec2<T>]) {
        let i = global_id().x;
        if i < pairs.len() {
            pairs[i] = pairs[i].yx;
        }
    }

    /// RGBA pixels, one byte per channel packed in a `u32` (red in the low byte): the
    /// luminance of each, its channel sum as integers, and the pixel with red and blue swapped
    /// and every channel inverted, packed again.
    #[kernel(workgroup = [64], grid = [ceil_div(pixels.len(), 64)])]
    pub fn pixels(pixels: &[u32], luma: &mut [f32], sums: &mut [u32], repacked: &mut [u32]) {
        let i = global_id().x;
        if i < pixels.len() {
            let rgba = unpack_4x8_unorm(pixels[i]);
            luma[i] = rgba.xyz.dot(vec3(0.25, 0.5, 0.25));
            let bytes = unpack_4xu8(pixels[i]);
            sums[i] = bytes.x + bytes.y + bytes.z + bytes.w;
            repacked[i] = pack_4x8_unorm(vec4(1.0, 1.0, 1.0, 1.0) - rgba.zyxw);
        }
    }

    /// Bit casts: `f32::from_bits`, `to_bits`, `bitcast::<T>` between `f32`, `u32` and `i32`,
    /// two halves of a word swapped through `f32`, and `ceil_div` of a sum.
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn bits(
        x: &[f32],
        words: &[u32],
        from_words: &mut [f32],
        negated: &mut [u32],
        sign: &mut [i32],
        halves: &mut [u32],
        chunks: &mut [u32],
    ) {
        let i = global_id().x;
        if i < x.len() {
            from_words[i] = f32::from_bits(words[i]);
            negated[i] = x[i].to_bits() ^ 0x8000_0000;
            sign[i] = bitcast::<i32>(x[i]) >> 31;
            halves[i] = pack_2x16_float(unpack_2x16_float(words[i]).yx);
            chunks[i] = ceil_div(i, 2 + i % 3);
        }
    }
}

#[test]
fn vec4_kernel_matches_reference_and_leaves_the_tail_alone() {
    let rt = runtime();
    let axpy = vectors::Axpy4::new(&rt).unwrap();
    for n in [1u32, 3, 4, 5, 255, 256, 258] {
        let vectors = n.div_ceil(4) as usize;
        let xs: Vec<[f32; 4]> = (0..vectors)
            .map(|v| std::array::from_fn(|c| (4 * v + c) as f32 * 0.5 - 3.0))
            .collect();
        // Past `n`, `y` holds a marker the kernel must not overwrite.
        let ys: Vec<[f32; 4]> = (0..vectors)
            .map(|v| {
                std::array::from_fn(|c| {
                    if 4 * v + c < n as usize {
                        c as f32
                    } else {
                        -7.0
                    }
                })
            })
            .collect();
        let x = rt.upload(&xs).unwrap();
        let mut y = rt.upload(&ys).unwrap();
        let p = vectors::Axpy { n, a: 2.0 };
        axpy.launch(
            &rt,
            vectors::Axpy4Args {
                p: &p,
                x: &x,
                y: &mut y,
            },
        )
        .unwrap();
        let want: Vec<[f32; 4]> = xs
            .iter()
            .zip(&ys)
            .enumerate()
            .map(|(v, (x, y))| {
                std::array::from_fn(|c| {
                    if 4 * v + c < n as usize {
                        2.0 * x[c] + y[c]
                    } else {
                        y[c]
                    }
                })
            })
            .collect();
        assert_eq!(y.read(&rt).unwrap(), want, "n = {n}");
    }
}

/// A buffer of scalars bound where a kernel takes vectors, through views: `x` read as vectors,
/// `y` written as vectors; the scalars the host sees afterwards are the kernel's results. A
/// buffer whose bytes are not whole vectors is refused with an error naming it.
#[test]
fn scalar_buffers_viewed_as_vectors() {
    let rt = runtime();
    let axpy = vectors::Axpy4::new(&rt).unwrap();
    let xs: Vec<f32> = (0..12).map(|i| i as f32 - 5.0).collect();
    let ys: Vec<f32> = (0..12).map(|i| 0.25 * i as f32).collect();
    let x = rt.upload(&xs).unwrap();
    let mut y = rt.upload_labeled("y", &ys).unwrap();
    {
        let x4 = x.view_as::<[f32; 4]>().unwrap();
        let mut y4 = y.view_as_mut::<[f32; 4]>().unwrap();
        assert_eq!((x4.len(), y4.len(), y4.label()), (3, 3, "y"));
        let p = vectors::Axpy { n: 12, a: 3.0 };
        let args = vectors::Axpy4Args {
            p: &p,
            x: &x4,
            y: &mut y4,
        };
        axpy.launch(&rt, args).unwrap();
        assert_eq!(y4.read(&rt).unwrap()[2], [11.0, 14.25, 17.5, 20.75]);
    }
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| 3.0 * x + y).collect();
    assert_eq!(y.read(&rt).unwrap(), want);

    let odd = rt.upload_labeled("odd", &[1.0f32; 6]).unwrap();
    let err = odd.view_as::<[f32; 4]>().unwrap_err().to_string();
    assert!(
        err.contains("`odd`") && err.contains("24 bytes") && err.contains("16-byte"),
        "{err}"
    );
}

#[test]
fn a_vector_buffer_of_the_kernels_element_type() {
    let rt = runtime();
    let pairs: Vec<[f32; 2]> = (0..70).map(|i| [i as f32, -(i as f32)]).collect();
    let mut buffer = rt.upload(&pairs).unwrap();
    vectors::SwapPairs::<f32>::new(&rt)
        .unwrap()
        .launch(&rt, vectors::SwapPairsArgs { pairs: &mut buffer })
        .unwrap();
    let swapped: Vec<[f32; 2]> = pairs.iter().map(|[a, b]| [*b, *a]).collect();
    assert_eq!(buffer.read(&rt).unwrap(), swapped);

    if rt.info().features.contains(wgpu::Features::SHADER_F16) {
        let halves: Vec<[f16; 2]> = pairs
            .iter()
            .map(|[a, b]| [f16::from_f32(*a), f16::from_f32(*b)])
            .collect();
        let mut buffer = rt.upload(&halves).unwrap();
        vectors::SwapPairs::<f16>::new(&rt)
            .unwrap()
            .launch(&rt, vectors::SwapPairsArgs { pairs: &mut buffer })
            .unwrap();
        let swapped: Vec<[f16; 2]> = halves.iter().map(|[a, b]| [*b, *a]).collect();
        assert_eq!(buffer.read(&rt).unwrap(), swapped);
    }
}

#[test]
fn packed_bytes_unpack_and_pack_like_the_cpu() {
    let rt = runtime();
    let words: Vec<u32> = (0..100u32)
        .map(|i| i.wrapping_mul(2654435761) ^ (i << 7))
        .chain([0, u32::MAX, 0x00ff_00ff, 0x8040_2010])
        .collect();
    let n = words.len();
    let pixels = rt.upload(&words).unwrap();
    let mut luma = rt.zeros::<f32>(n).unwrap();
    let mut sums = rt.zeros::<u32>(n).unwrap();
    let mut repacked = rt.zeros::<u32>(n).unwrap();
    vectors::Pixels::new(&rt)
        .unwrap()
        .launch(
            &rt,
            vectors::PixelsArgs {
                pixels: &pixels,
                luma: &mut luma,
                sums: &mut sums,
                repacked: &mut repacked,
            },
        )
        .unwrap();
    let (luma, sums, repacked) = (
        luma.read(&rt).unwrap(),
        sums.read(&rt).unwrap(),
        repacked.read(&rt).unwrap(),
    );
    for (i, word) in words.iter().enumerate() {
        let [r, g, b, a] = word.to_le_bytes();
        let unorm = |byte: u8| byte as f32 / 255.0;
        let want_luma = 0.25 * unorm(r) + 0.5 * unorm(g) + 0.25 * unorm(b);
        assert!(
            (luma[i] - want_luma).abs() < 1e-5,
            "pixel {word:#x}: luma {}",
            luma[i]
        );
        assert_eq!(sums[i], [r, g, b, a].iter().map(|&c| c as u32).sum::<u32>());
        let want = u32::from_le_bytes([255 - b, 255 - g, 255 - r, 255 - a]);
        assert_eq!(repacked[i], want, "pixel {word:#x}");
    }
}

#[test]
fn bit_casts_keep_the_bits() {
    let rt = runtime();
    let kernel = vectors::Bits::new(&rt).unwrap();
    let xs: Vec<f32> = vec![
        0.0,
        -0.0,
        1.5,
        -2.25,
        f32::MAX,
        f32::MIN_POSITIVE,
        -1e-30,
        7.0,
    ];
    // Each word is read as an `f32` and as two `f16` halves (high, low), so some of these are
    // bit patterns on purpose; their halves are named in the comments.
    let word_values: Vec<u32> = vec![
        1.0f32.to_bits(),    // halves 1.875 and 0
        (-2.0f32).to_bits(), // halves -2 and 0
        0,
        1, // the smallest positive f32 subnormal; halves 0 and f16::MIN_POSITIVE_SUBNORMAL
        f32::MAX.to_bits(), // halves NaN and NaN
        0x1234_5678, // halves about 7.57e-4 and 103.5
        0x8000_0001, // halves -0 and f16::MIN_POSITIVE_SUBNORMAL
        42,
    ];
    let n = xs.len();
    let x = rt.upload(&xs).unwrap();
    let words = rt.upload(&word_values).unwrap();
    let mut from_words = rt.zeros::<f32>(n).unwrap();
    let mut negated = rt.zeros::<u32>(n).unwrap();
    let mut sign = rt.zeros::<i32>(n).unwrap();
    let mut halves = rt.zeros::<u32>(n).unwrap();
    let mut chunks = rt.zeros::<u32>(n).unwrap();
    kernel
        .launch(
            &rt,
            vectors::BitsArgs {
                x: &x,
                words: &words,
                from_words: &mut from_words,
                negated: &mut negated,
                sign: &mut sign,
                halves: &mut halves,
                chunks: &mut chunks,
            },
        )
        .unwrap();
    let from_words = from_words.read(&rt).unwrap();
    for (got, word) in from_words.iter().zip(&word_values) {
        // Compare bits: a subnormal may be flushed, so only normal values and zero count.
        let want = f32::from_bits(*word);
        if want.is_normal() || want == 0.0 {
            assert_eq!(got.to_bits(), *word);
        }
    }
    let want_negated: Vec<u32> = xs.iter().map(|x| (-x).to_bits()).collect();
    assert_eq!(negated.read(&rt).unwrap(), want_negated);
    let want_sign: Vec<i32> = xs.iter().map(|x| (x.to_bits() as i32) >> 31).collect();
    assert_eq!(sign.read(&rt).unwrap(), want_sign);
    // Halves that are NaN or subnormal may change on the way; the others must not.
    let plain = |h: u16| {
        let h = f16::from_bits(h);
        h.is_normal() || h == f16::ZERO // -0 compares equal too
    };
    for (got, word) in halves.read(&rt).unwrap().iter().zip(&word_values) {
        if plain(*word as u16) && plain((word >> 16) as u16) {
            assert_eq!(*got, word.rotate_left(16), "{word:#x}");
        }
    }
    let want_chunks: Vec<u32> = (0..n as u32).map(|i| i.div_ceil(2 + i % 3)).collect();
    assert_eq!(chunks.read(&rt).unwrap(), want_chunks);
}
