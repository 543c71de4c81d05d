//! The layout of a half's 64-bit word and what is done to whole lists of them: the
//! diagonal fields below the balance fields ([`Layout`]: from [`BALANCE_SHIFT`] up to
//! n = 25, from bit `2n - 2` in five-bit fields past it), the tables' tail word ([`Tail`])
//! and a tail's last queen ([`Last`]), the one mirror of top halves into bottom halves
//! ([`mirror`]) and the one sort by balance ([`copy_sorted_by_byte`]; [`sort_by_byte`] in
//! place) that both paths use. The
//! words are built by the tables, the key's bands and the kernels (`tables.rs`, `bands.rs`,
//! `kernels/`) and counted by the sieve (`sieve.rs`); nothing here builds or counts them.
//!
//! A top half's word keeps the diagonals it attacks on the row under it (odd boards: the
//! middle row): the left-going ones from bit 0, without column 0 (no left-going diagonal
//! from above reaches it), so `n - 1` bits; the right-going ones from [`right_field`]. On odd
//! boards the right-going field's column `n - 1` is never attacked either (no right-going
//! diagonal from above reaches it), so the two fields take `2n - 2` bits: n = 25 ends below
//! bit 48 as n = 24 does. A bottom half's word is a top half's with its fields swapped
//! ([`mirror_masks`]); on even boards the swap leaves the left-going field one column off
//! the right-going one, which is what meeting across the two halves' rows (no middle row)
//! asks for.

use super::memory::Allowance;
use crate::counts::CountError;

/// Where a top half's balance field starts; a bottom half's is a byte higher, so that the
/// two never meet in a pair test. The diagonal fields end below bit 48 up to n = 25 (even
/// boards: `n - 1 + n` bits, odd ones `2n - 2`).
pub(super) const BALANCE_SHIFT: u32 = 48;

/// Offset of a band's balance in its field (a band has at most 6 queens, a half 12).
pub(super) const BAND_BIAS: i32 = 32;

/// The bit of a half word's right-going field's column 0: `n` on even boards, `n - 1` on odd
/// ones (there the field's last column is never attacked, and the word ends at `2n - 2`).
pub(super) const fn right_field(n: u32) -> u32 {
    if n.is_multiple_of(2) { n } else { n - 1 }
}

/// The masks that make a bottom half's word of a top half's `w` (both shifts by `n`):
/// `((w & fields) >> n) | ((w & low) << n)`, as `(low, fields)`. Each field of the bottom
/// word then meets the other field of a top word; on odd boards what only columns no top
/// word has would meet is dropped (`w`'s right-going column 0, shifted out at the bottom,
/// against left-going column 0, and its left-going column `n - 1` against right-going
/// column `n - 1`), which keeps the word below bit `2n - 2`.
pub(super) const fn mirror_masks(n: u32) -> (u64, u64) {
    if n.is_multiple_of(2) {
        ((1u64 << n) - 1, (1u64 << (2 * n)) - 1)
    } else {
        ((1u64 << (n - 2)) - 1, (1u64 << (2 * n - 2)) - 1)
    }
}

/// Where a half word's balance fields lie and how they are biased: the sieve's sort keys
/// and weights read them there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Bit of a top half's balance field; a bottom half's follows it.
    pub(super) balance: u32,
    /// Bits of each balance field.
    pub(super) width: u32,
    /// What a half's field adds to its balance, so that the field is never negative (the
    /// sieve's weights take it off again).
    pub(super) bias: i32,
}

impl Layout {
    /// The wide path's layout for size `n` (`wide.rs`): the diagonal fields take `2n - 2`
    /// bits ([`wide_mirror`]), the balances five bits each above them (n = 28: bits 54 to
    /// 63), biased by 16 (a half of at most 14 queens has a balance within ±14).
    pub(super) const fn wide(n: u32) -> Layout {
        Layout {
            balance: 2 * n - 2,
            width: 5,
            bias: 16,
        }
    }

    /// The tables' layout (n = 16 to 25): byte fields from [`BALANCE_SHIFT`], each half's
    /// biased by its two bands' [`BAND_BIAS`].
    pub(super) const NARROW: Layout = Layout {
        balance: BALANCE_SHIFT,
        width: 8,
        bias: 2 * BAND_BIAS,
    };

    /// A top half's balance field of `word`, biased.
    #[inline(always)]
    pub(super) fn top(self, word: u64) -> i32 {
        ((word >> self.balance) & ((1 << self.width) - 1)) as i32
    }

    /// A mirrored bottom half's balance field of `word`, biased.
    #[inline(always)]
    pub(super) fn bottom(self, word: u64) -> i32 {
        (word >> (self.balance + self.width)) as i32
    }

    /// The diagonal fields' bits, below the balances.
    #[inline(always)]
    pub(super) fn diagonals(self) -> u64 {
        (1u64 << self.balance) - 1
    }
}

/// The wide path's mirror of a top half's word into a bottom half's (`wide.rs`), as
/// `(shift, low, fields)`: `((w & fields) >> shift) | ((w & low) << shift)`. Its right-going
/// field starts at bit `n - 1` on every board (column `n - 1` of it is never attacked), so
/// the fields take `2n - 2` bits: on odd boards as [`mirror_masks`] has them (shift `n`), on
/// even ones shifted by `n - 1`, which again meets each column of one field with the one
/// next to it in the other (no middle row between the halves).
pub(super) const fn wide_mirror(n: u32) -> (u32, u64, u64) {
    let fields = (1u64 << (2 * n - 2)) - 1;
    if n.is_multiple_of(2) {
        (n - 1, (1u64 << (n - 1)) - 1, fields)
    } else {
        (n, (1u64 << (n - 2)) - 1, fields)
    }
}

/// How a tail's one word keeps its placement, for a board of `n` columns and a tail of `t`
/// rows: its queens' diagonals traced back to the tail's first row, unmasked (those off the
/// board kept too), the up-left ones from bit 0 (shifted by `t - 1`) and the up-right ones
/// from bit `r + t`, `r` the half word's right-going field ([`right_field`]); its balance,
/// biased by [`TAIL_BIAS`], from bit `BALANCE_SHIFT + 2t`. The traces end at bit
/// `r + n + 2t - 2` (n = 24: 58, n = 25: 59, t = 6), below the balance at bit 60. A head's
/// test word marks the same traces, so the test is one AND; and the tail's share of the
/// half's word comes out of it by one shift and masks ([`Tail::half`]): the traces
/// continued down to the row under the half are the traces themselves moved by the band's
/// height. Half the bytes of a test word and a share word,
/// which matters because the tails' table is read afresh for every key.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tail {
    /// Bit of the up-left traces' column 0 (`t - 1`).
    pub(super) left: u32,
    /// Bit of the up-right traces' column 0 (`r + t`, `r` the right-going field's bit).
    pub(super) right: u32,
    /// The shift that brings the up-right traces to the half word's right-going field and the
    /// balance to its balance field (`2t`).
    pub(super) shift: u32,
    /// The half word's left-going field, as the up-left traces stand.
    pub(super) low: u64,
    /// The half word's right-going field, after the shift.
    pub(super) high: u64,
}

/// Offset of a tail's balance in its word's four bits (a tail has at most 6 queens).
pub(super) const TAIL_BIAS: i32 = 8;

/// The balance field's bits a tail's word brings, after [`Tail`]'s shift.
pub(super) const TAIL_BALANCE: u64 = 0xf << BALANCE_SHIFT;

impl Tail {
    /// The layout of a tail's word for a board of `n` columns (a half of `n / 2` rows, its
    /// tail the rows after its first `n / 4`).
    pub(super) fn new(n: u32) -> Tail {
        let m = n / 2;
        let full = (1u32 << n) - 1;
        let t = m - m / 2;
        let odd = !n.is_multiple_of(2);
        let right = right_field(n);
        Tail {
            left: t - 1,
            right: right + t,
            shift: 2 * t,
            low: u64::from(full >> 1),
            // Odd boards: the field's last column is never attacked, and its bit (n = 25:
            // bit 48) is where the balance comes to after the shift.
            high: u64::from(if odd { full >> 1 } else { full }) << right,
        }
    }

    /// The half word of a head's share `head` (its balance field biased for the tail's, see
    /// `Tables::head_entry`) and a tail's word: the diagonal fields ORed, the balances added.
    #[inline(always)]
    pub(super) fn half(self, head: u64, word: u64) -> u64 {
        let shifted = word >> self.shift;
        (head + (shifted & TAIL_BALANCE)) | (word & self.low) | (shifted & self.high)
    }

    /// A queen's diagonals on `column`, `k` rows below a band's first row, traced back to
    /// it as a tail's word keeps them (`k` is below the tail's rows, so none falls below
    /// bit 0).
    #[inline(always)]
    pub(super) fn trace(self, column: u32, k: u32) -> u64 {
        (1u64 << (column + self.left - k)) | (1u64 << (self.right + column + k))
    }

    /// The middle queen's bits in a tail's word: a half whose tail has one attacks her (her
    /// left-going column `q` at bit `q - 1`, none for column 0, which no trace reaches).
    pub(super) fn spare(self, n: u32, middle: Option<u32>) -> u64 {
        middle.map_or(0, |q| {
            ((1u64 << q) >> 1) | (1u64 << (right_field(n) + q + self.shift))
        })
    }
}

/// The tail's last queen on one column, for the tails' table (`tables.rs`): her column's
/// bit, her traces in a tail's word, and her balance where the word keeps it.
#[derive(Clone, Copy)]
pub(super) struct Last {
    /// Her column's bit.
    pub(super) bit: u64,
    /// Her diagonals traced back to the tail's first row ([`Tail::trace`]).
    pub(super) up: u64,
    /// Her balance, where the tail's word keeps it.
    pub(super) balance: u64,
}

/// Turns top halves' words laid out as `layout` says into bottom halves' for size `n`, the
/// balance moved to the bottom's field: the tables' layout as [`mirror_masks`] says, the
/// wide path's as [`wide_mirror`] does. The one mirror of both paths.
pub(super) fn mirror(words: &mut [u64], n: u32, layout: Layout) {
    let (shift, low, fields) = if layout == Layout::NARROW {
        let (low, fields) = mirror_masks(n);
        (n, low, fields)
    } else {
        wide_mirror(n)
    };
    for y in words.iter_mut() {
        let balance = *y >> layout.balance;
        let diagonals = *y & fields;
        *y = (diagonals >> shift)
            | ((diagonals & low) << shift)
            | (balance << (layout.balance + layout.width));
    }
}

/// Sorts `words` by their byte from bit `shift` on, keeping the order of words with the same
/// byte (a counting sort: the balances take a few dozen values, and the lists are long),
/// `scratch` lent for the pass (grown within `allowance`). The tables' path's sort: tops by
/// their balance field, bottoms (mirrored) by theirs.
pub(super) fn sort_by_byte(
    words: &mut Vec<u64>,
    shift: u32,
    scratch: &mut Vec<u64>,
    allowance: &mut Allowance,
) -> Result<(), CountError> {
    scratch.clear();
    allowance.reserve(scratch, words.len())?;
    copy_sorted_by_byte(words, shift, scratch);
    std::mem::swap(words, scratch);
    Ok(())
}

/// Appends `words` to the empty `out`, which has room for them, sorted by their byte from
/// bit `shift` on as [`sort_by_byte`] sorts them. The wide path's sort, as it copies a
/// block out of lists split in place (`sieve/in_place.rs`).
pub(super) fn copy_sorted_by_byte(words: &[u64], shift: u32, out: &mut Vec<u64>) {
    assert!(out.is_empty() && out.capacity() >= words.len());
    let byte = |word: u64| ((word >> shift) & 0xff) as usize;
    let mut starts = [0usize; 256];
    for &word in words {
        starts[byte(word)] += 1;
    }
    let mut at = 0;
    for start in starts.iter_mut() {
        (*start, at) = (at, at + *start);
    }
    // Every slot is written once (the starts cut the list's length into one range per
    // byte), so nothing is zeroed first.
    let free = &mut out.spare_capacity_mut()[..words.len()];
    for &word in words {
        let slot = &mut starts[byte(word)];
        free[*slot].write(word);
        *slot += 1;
    }
    // SAFETY: the words' slots are the ranges the starts cut `0..words.len()` into, one
    // word to a slot, so each of the first `words.len()` slots was written above.
    unsafe { out.set_len(words.len()) };
}

#[cfg(test)]
mod tests {
    use super::{BALANCE_SHIFT, BAND_BIAS, TAIL_BIAS, Tail};

    /// A half's word from a head's share and a tail's word: at n = 24 the diagonal fields
    /// reach bit 47, where both may have a bit, kept once; only the balance fields add up.
    #[test]
    fn a_half_word_ors_the_diagonals_and_adds_the_balances() {
        let tail = Tail::new(24);
        assert_eq!((tail.left, tail.right, tail.shift), (5, 30, 12));
        let field = |balance: i32| (balance as u64) << BALANCE_SHIFT;
        // The head: left-going diagonals 0 and 22 (bit 22 holds column 23 on even boards),
        // right-going 23 (bit 47), balance 3, biased for the tail's bias.
        let head = 1 | 1 << 22 | 1 << 47 | field(3 + 2 * BAND_BIAS - TAIL_BIAS);
        // The tail: up-left traces at bits 1 and 22 (the same fields), an up-right trace at
        // bit 58 (column 22 of the right-going field, bit 46, after the shift), balance -2.
        let word = 1 << 1 | 1 << 22 | 1 << 58 | ((-2 + TAIL_BIAS) as u64) << (BALANCE_SHIFT + 12);
        assert_eq!(
            tail.half(head, word),
            1 | 1 << 1 | 1 << 22 | 1 << 46 | 1 << 47 | field(1 + 2 * BAND_BIAS)
        );
    }
}
