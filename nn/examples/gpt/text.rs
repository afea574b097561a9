//! The text the model learns: `shakespeare.txt` (SOURCE.md says where it comes from), its
//! characters numbered, split into a training part and a held-out part, and cut into windows.

use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;

/// The whole text, shipped with the example.
pub const SHAKESPEARE: &str = include_str!("shakespeare.txt");

/// A text as character ids, with the characters the ids stand for.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// Every distinct character of the text, in code-point order: id `i` is `chars[i]`.
    chars: Vec<char>,
    /// The text's characters as ids.
    ids: Vec<u32>,
    /// Where the held-out part starts in `ids`.
    held_out: usize,
}

/// Which part of the corpus a window comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The first 90%.
    Train,
    /// The last 10%, never trained on.
    HeldOut,
}

impl Corpus {
    /// `text` numbered by its own characters, its last tenth held out.
    pub fn new(text: &str) -> Self {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        let ids = text
            .chars()
            .map(|c| chars.binary_search(&c).unwrap_or_default() as u32)
            .collect::<Vec<_>>();
        let held_out = ids.len() - ids.len() / 10;
        Corpus {
            chars,
            ids,
            held_out,
        }
    }

    /// Distinct characters: the model's vocabulary.
    pub fn vocab(&self) -> u32 {
        self.chars.len() as u32
    }

    /// Characters of `split`.
    pub fn len(&self, split: Split) -> usize {
        self.part(split).len()
    }

    fn part(&self, split: Split) -> &[u32] {
        match split {
            Split::Train => &self.ids[..self.held_out],
            Split::HeldOut => &self.ids[self.held_out..],
        }
    }

    /// The ids of `text`'s characters, or the first character that is not in the vocabulary.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, char> {
        text.chars()
            .map(|c| {
                self.chars
                    .binary_search(&c)
                    .map(|i| i as u32)
                    .map_err(|_| c)
            })
            .collect()
    }

    /// The characters of `ids`.
    pub fn decode(&self, ids: &[u32]) -> String {
        ids.iter().map(|&id| self.chars[id as usize]).collect()
    }

    /// `count` windows of `len` characters of `split` as (inputs, targets), each target the
    /// character after its input, concatenated window after window. `Start::Drawn` draws
    /// where each window starts (`0..=split's length - len - 1`); `Start::Every` takes the
    /// part's windows in order from window `first`, wrapping around. `split` must hold more
    /// than `len` characters.
    pub fn windows(&self, split: Split, count: u32, len: u32, mut start: Start<'_>) -> Windows {
        let part = self.part(split);
        let len = len as usize;
        let last = part.len() - len - 1;
        let whole = (part.len().saturating_sub(1) / len).max(1);
        let mut windows = Windows::default();
        for i in 0..count as usize {
            let at = match &mut start {
                Start::Drawn(draws) => draws.below(last as u64 + 1) as usize,
                Start::Every { first } => (*first + i) % whole * len,
            }
            .min(last);
            windows.inputs.extend_from_slice(&part[at..at + len]);
            windows
                .targets
                .extend_from_slice(&part[at + 1..at + len + 1]);
        }
        windows
    }

    /// How many whole windows of `len` the held-out part holds.
    pub fn held_out_windows(&self, len: u32) -> u32 {
        ((self.len(Split::HeldOut) - 1) / len as usize) as u32
    }
}

/// Where windows start (see [`Corpus::windows`]).
pub enum Start<'a> {
    /// Anywhere, the next draws of the stream.
    Drawn(&'a mut Draws),
    /// One after the other, from window `first`.
    Every { first: usize },
}

/// Windows of the text: `inputs[i]` is followed by `targets[i]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Windows {
    pub inputs: Vec<u32>,
    pub targets: Vec<u32>,
}

/// The generator of the sample's draws, from `seed`.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Where the training windows start: SplitMix64 from the seed, a generator of five lines
/// that `bench/gpt.py` repeats, so that PyTorch trains on the same windows in the same order.
#[derive(Clone, Debug)]
pub struct Draws {
    state: u64,
}

impl Draws {
    pub fn new(seed: u64) -> Self {
        Draws { state: seed }
    }

    /// The next draw in `0..n` (`n` > 0; the remainder of a 64-bit draw, so the bias is
    /// below `n / 2^64`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_one_described() {
        let corpus = Corpus::new(SHAKESPEARE);
        assert_eq!(SHAKESPEARE.len(), 1_115_394);
        assert_eq!(corpus.vocab(), 65);
        assert!(SHAKESPEARE.starts_with("First Citizen:\nBefore we proceed any further"));
        assert_eq!(
            corpus.len(Split::Train) + corpus.len(Split::HeldOut),
            1_115_394
        );
        assert_eq!(corpus.len(Split::HeldOut), 111_539);
    }

    #[test]
    fn windows_are_followed_by_their_targets_and_stay_in_their_part() {
        let corpus = Corpus::new("abcdefghij");
        assert_eq!(corpus.encode("cab"), Ok(vec![2, 0, 1]));
        assert_eq!(corpus.encode("abz"), Err('z'));
        assert_eq!(corpus.decode(&[9, 0]), "ja");
        // Train: "abcdefghi"; held out: "j" (too short for any window of 1 and its target).
        let every = corpus.windows(Split::Train, 5, 3, Start::Every { first: 1 });
        // Two whole windows fit (a target must follow the last character): from the second.
        assert_eq!(corpus.decode(&every.inputs), "defabcdefabcdef");
        assert_eq!(corpus.decode(&every.targets), "efgbcdefgbcdefg");
        let mut draws = Draws::new(1);
        let drawn = corpus.windows(Split::Train, 50, 4, Start::Drawn(&mut draws));
        for (input, target) in drawn.inputs.chunks(4).zip(drawn.targets.chunks(4)) {
            assert_eq!(input[1..], target[..3]);
            assert!(target[3] <= 8, "past the training part: {target:?}");
        }
    }

    #[test]
    fn draws_are_splitmix64() {
        // SplitMix64's first outputs from a state of 0, as its reference code gives them.
        let mut draws = Draws::new(0);
        assert_eq!(draws.below(u64::MAX), 0xE220_A839_7B1D_CDAF);
        assert_eq!(draws.below(u64::MAX), 0x6E78_9E6A_A1B9_65F4);
        // The first windows' starts of the default run (context 32), which bench/gpt.py's
        // `Draws` gives too.
        let corpus = Corpus::new(SHAKESPEARE);
        let n = corpus.len(Split::Train) as u64 - 32;
        let mut draws = Draws::new(1);
        let starts: Vec<u64> = (0..4).map(|_| draws.below(n)).collect();
        assert_eq!(starts, [457_874, 18_922, 578_936, 311_436]);
    }
}
