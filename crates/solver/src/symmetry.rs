//! Symmetry classes of solutions: the test for being a class's representative (the member
//! whose column vector is lexicographically least), and the row masks every representative
//! obeys, which the enumeration uses to prune. The symmetries themselves are defined in
//! `geometry.rs`; no search lives here.

use super::geometry::{MAX, Symmetry, inverse};
use std::cmp::Ordering;

/// If `columns` is the lexicographically least member of its symmetry class, the size of the
/// class (8, 4, 2, or 1 for n = 1); otherwise `None`.
///
/// The seven non-identity images are compared lazily, entry by entry, so most
/// non-representatives are rejected after a few entries.
pub fn class_size(columns: &[u8]) -> Option<u64> {
    debug_assert!(columns.len() <= MAX);
    let inverse = inverse(columns);
    let mut stabilizer = 1u64;
    for g in &Symmetry::ALL[1..] {
        match compare(columns, &inverse, *g) {
            Ordering::Greater => return None,
            Ordering::Equal => stabilizer += 1,
            Ordering::Less => {}
        }
    }
    Some(8 / stabilizer)
}

/// Lexicographic comparison of `columns` with its image under `g`, entry by entry.
#[inline]
fn compare(columns: &[u8], inverse: &[u8], g: Symmetry) -> Ordering {
    for (r, &c) in columns.iter().enumerate() {
        match c.cmp(&g.image_entry(columns, inverse, r)) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}

/// Per-row column masks that every representative obeys, given its row-0 column `c0`.
///
/// A representative's first entry is the least first entry of its eight images, and those
/// are `c0`, `n-1-c0`, the last row's column and its mirror, and the rows of the queens in
/// columns 0 and n-1 and their mirrors. So the last row's queen and the rows holding the
/// queens of the two edge columns all lie in `c0 ..= n-1-c0`. Returns the mask for row `r`.
pub(crate) fn corner_mask(n: u32, c0: u32, r: u32, full: u32) -> u32 {
    let last = n - 1;
    if r == 0 {
        return 1 << c0;
    }
    let mut mask = full;
    if r < c0 || r > last - c0 {
        mask &= !(1 | (1 << last));
    }
    if r == last {
        let inside = full >> c0 << c0; // columns >= c0
        let inside = inside & (full >> c0); // columns <= last - c0
        mask &= inside;
    }
    mask
}
