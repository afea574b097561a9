//! A real, small image-classification data set that ships in the repository: 1797 handwritten
//! digits of 8x8 pixels, 10 classes (0 to 9), nothing downloaded at build or run time.
//!
//! The images are scikit-learn's `load_digits`: the test partition (`optdigits.tes`) of the UCI
//! "Optical Recognition of Handwritten Digits" data set, by E. Alpaydin and C. Kaynak (1998),
//! <https://doi.org/10.24432/C50P49>, licensed under Creative Commons Attribution 4.0
//! (CC BY 4.0, <https://creativecommons.org/licenses/by/4.0/>). Each image is a 32x32 bitmap
//! of one digit written by one of 13 people on a form, counted in 4x4 blocks: a pixel is the
//! number of set bits of its block, 0 to 16. About 180 images per class (174 to 183).
//!
//! `digits.bin` beside this file holds them unchanged, in the data set's order, as 1797
//! records of 65 bytes: the label (0 to 9), then the 64 pixels row by row (0 to 16). It was
//! extracted from the copy embedded in the `smartcore` crate (0.7.0, `src/dataset/digits.xy`,
//! stored there as `f32`), which matches scikit-learn's (same order, first labels 0 to 9,
//! class counts). The file is 114 KiB, 45 KiB compressed (as git stores it): shipping it costs
//! less than a dependency on a machine-learning library for its data.
//!
//! [`digits`] splits it without randomness: every fifth image of each class is held out (355
//! test images, 34 to 36 per class); the other 1442 train. Both splits hold images of all 13
//! writers, as in scikit-learn's usual examples: the held-out accuracy measures new images of
//! known hands.

use crate::data::Dataset;

/// The digits 0 to 9.
pub const CLASSES: u32 = 10;

/// Images are `SIZE x SIZE` pixels.
pub const SIZE: u32 = 8;

/// Images in the whole data set, both splits.
pub const LEN: u32 = 1797;

/// Every `HOLD_OUT`-th image of each class goes to the test split.
pub const HOLD_OUT: u32 = 5;

/// Label and pixels of every image, 65 bytes each (see the module's doc).
const RAW: &[u8] = include_bytes!("digits.bin");

/// The largest pixel value: a 4x4 block with every bit set.
const MAX_PIXEL: u8 = 16;

/// The training split and the held-out split, `[len, 1, 8, 8]` images with pixels scaled to
/// [0, 1] (the count of set bits over 16) and labels 0 to 9. Every fifth image of each class is
/// held out; both splits keep the data set's order, which already mixes the classes.
pub fn digits() -> (Dataset, Dataset) {
    let pixels = (SIZE * SIZE) as usize;
    let record = pixels + 1;
    assert_eq!(RAW.len(), LEN as usize * record, "digits.bin is truncated");
    let empty = || Dataset {
        size: SIZE,
        images: Vec::new(),
        labels: Vec::new(),
    };
    let (mut train, mut test) = (empty(), empty());
    let mut seen = [0u32; CLASSES as usize];
    for chunk in RAW.chunks_exact(record) {
        let label = u32::from(chunk[0]);
        assert!(label < CLASSES, "digits.bin: label {label}");
        let split = if seen[label as usize] % HOLD_OUT == HOLD_OUT - 1 {
            &mut test
        } else {
            &mut train
        };
        seen[label as usize] += 1;
        split.labels.push(label);
        split.images.extend(chunk[1..].iter().map(|&p| {
            assert!(p <= MAX_PIXEL, "digits.bin: pixel {p}");
            f32::from(p) / f32::from(MAX_PIXEL)
        }));
    }
    (train, test)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// FNV-1a, 64 bits: enough to tell that `digits.bin` is the file described above.
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    #[test]
    fn the_file_is_the_one_described() {
        assert_eq!(RAW.len(), 1797 * 65);
        assert_eq!(fnv1a(RAW), 0xd342_ce09_8b2a_951f);
        // scikit-learn's `load_digits().images[0]`: a zero.
        #[rustfmt::skip]
        let first: [u8; 64] = [
            0, 0, 5, 13, 9, 1, 0, 0,
            0, 0, 13, 15, 10, 15, 5, 0,
            0, 3, 15, 2, 0, 11, 8, 0,
            0, 4, 12, 0, 0, 8, 8, 0,
            0, 5, 8, 0, 0, 9, 8, 0,
            0, 4, 11, 0, 1, 12, 7, 0,
            0, 2, 14, 5, 10, 12, 0, 0,
            0, 0, 6, 13, 10, 0, 0, 0,
        ];
        assert_eq!(RAW[0], 0);
        assert_eq!(RAW[1..65], first);
        let labels: Vec<u8> = RAW.chunks_exact(65).map(|r| r[0]).collect();
        assert_eq!(labels[..10], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let mut counts = [0; 10];
        for &label in &labels {
            counts[label as usize] += 1;
        }
        assert_eq!(counts, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]);
    }

    #[test]
    fn splits_are_sized_scaled_balanced_and_disjoint() {
        let (train, test) = digits();
        assert_eq!((train.len(), test.len()), (1442, 355));
        for split in [&train, &test] {
            assert_eq!(split.size, SIZE);
            assert_eq!(split.images.len(), split.labels.len() * 64);
            assert!(split.labels.iter().all(|&l| l < CLASSES));
            assert!(split.images.iter().all(|&p| (0.0..=1.0).contains(&p)));
            // Some pixel of each image is ink, some is paper.
            for image in split.images.chunks_exact(64) {
                assert!(image.contains(&0.0) && image.iter().any(|&p| p >= 0.5));
            }
        }
        let mut per_class = [0; 10];
        for &label in &test.labels {
            per_class[label as usize] += 1;
        }
        assert_eq!(per_class, [35, 36, 35, 36, 36, 36, 36, 35, 34, 36]);
        // The first held-out zero is the file's fifth zero; the first training images keep
        // the file's order.
        let fifth_zero = RAW.chunks_exact(65).filter(|r| r[0] == 0).nth(4).unwrap();
        let first_zero = test.labels.iter().position(|&l| l == 0).unwrap();
        let scaled: Vec<f32> = fifth_zero[1..]
            .iter()
            .map(|&p| f32::from(p) / 16.0)
            .collect();
        assert_eq!(test.images[first_zero * 64..][..64], scaled);
        assert_eq!(train.labels[..10], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(train.images[2], 5.0 / 16.0);
        // No held-out image is among the training images (the 1797 are distinct).
        let key = |image: &[f32]| image.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
        let training: HashSet<Vec<u32>> = train.images.chunks_exact(64).map(key).collect();
        assert_eq!(training.len(), 1442);
        assert!(test
            .images
            .chunks_exact(64)
            .all(|i| !training.contains(&key(i))));
    }

    #[test]
    fn batches_wrap_around_the_training_split() {
        let (train, _) = digits();
        let (images, labels) = train.batch(train.len() - 1, 2);
        assert_eq!(labels, [train.labels[1441], train.labels[0]]);
        assert_eq!(images[64..], train.images[..64]);
    }
}
