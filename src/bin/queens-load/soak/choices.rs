//! The callers' choices: a seeded generator (the same calls for the same seed) and random
//! fixed queens.
//!
//! Not here: what each call does with them (`caller.rs`, `hostile.rs`).

use queens::batch::SplitMix64;
use queens::pb::Square;

/// The callers' choices, the same for the same seed (SplitMix64, the estimate's generator).
pub(super) struct Rng(pub(super) SplitMix64);

impl Rng {
    /// The next number.
    fn next(&mut self) -> u64 {
        self.0.next()
    }

    /// A number in `lo..=hi`.
    pub(super) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True once in `one_in` times, on average.
    pub(super) fn chance(&mut self, one_in: u64) -> bool {
        self.next().is_multiple_of(one_in)
    }
}

/// Up to `most` random squares of the n×n board, distinct (they may attack each other).
pub(super) fn random_squares(rng: &mut Rng, n: u32, most: u64) -> Vec<Square> {
    let mut squares: Vec<Square> = Vec::new();
    for _ in 0..rng.range(0, most) {
        let row = rng.range(0, u64::from(n) - 1) as u32;
        if squares.iter().all(|q| q.row != row) {
            let column = rng.range(0, u64::from(n) - 1) as u32;
            squares.push(Square { row, column });
        }
    }
    squares
}
