//! A synthetic image-classification data set: stripes in one of four orientations.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// Stripe orientations, one class each.
pub const CLASSES: u32 = 4;

/// Images (`[len, 1, size, size]`, NCHW) and their labels.
pub struct Dataset {
    pub size: u32,
    pub images: Vec<f32>,
    pub labels: Vec<u32>,
}

impl Dataset {
    /// `len` images of `size x size` pixels: horizontal, vertical, diagonal or anti-diagonal
    /// stripes of random period (3 to 5 pixels) and phase, plus uniform noise; class `i % 4`.
    pub fn stripes(len: u32, size: u32, seed: u64) -> Self {
        let mut rng = rng(seed);
        let mut images = Vec::with_capacity((len * size * size) as usize);
        let mut labels = Vec::with_capacity(len as usize);
        for i in 0..len {
            let class = i % CLASSES;
            let period = 3.0 + 2.0 * rng.random::<f32>();
            let phase = rng.random::<f32>() * std::f32::consts::TAU;
            for row in 0..size {
                for col in 0..size {
                    let (r, c) = (row as f32, col as f32);
                    let along = match class {
                        0 => r,
                        1 => c,
                        2 => (r + c) / std::f32::consts::SQRT_2,
                        _ => (r - c) / std::f32::consts::SQRT_2,
                    };
                    let stripe = (along * std::f32::consts::TAU / period + phase).sin();
                    images.push(stripe + 0.5 * (rng.random::<f32>() - 0.5));
                }
            }
            labels.push(class);
        }
        Dataset {
            size,
            images,
            labels,
        }
    }

    /// Number of images.
    pub fn len(&self) -> u32 {
        self.labels.len() as u32
    }

    /// Images `first..first + count` (wrapping around the end) and their labels.
    pub fn batch(&self, first: u32, count: u32) -> (Vec<f32>, Vec<u32>) {
        let pixels = (self.size * self.size) as usize;
        let mut images = Vec::with_capacity(count as usize * pixels);
        let mut labels = Vec::with_capacity(count as usize);
        for i in 0..count {
            let index = ((first + i) % self.len()) as usize;
            images.extend_from_slice(&self.images[index * pixels..(index + 1) * pixels]);
            labels.push(self.labels[index]);
        }
        (images, labels)
    }
}

/// The example's generator: the library's seeded `ChaCha8Rng`, so that runs repeat exactly,
/// on any platform.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}
