//! The layout of a half's 64-bit word, shared by the tables and the search that build the
//! words (`tables.rs`, `wide.rs`) and the sieve that counts their pairs (`sieve.rs`): the
//! diagonal fields below the balance fields ([`Layout`]: from [`BALANCE_SHIFT`] up to
//! n = 25, from bit `2n - 2` in five-bit fields past it). Nothing here builds or counts
//! words.
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
    /// What a half's field adds to its balance.
    pub(super) bias: i32,
}

impl Layout {
    /// The tables' layout (n = 16 to 25): byte fields from [`BALANCE_SHIFT`], each half's
    /// biased by its two bands' [`BAND_BIAS`].
    pub(super) const NARROW: Layout = Layout {
        balance: BALANCE_SHIFT,
        width: 8,
        bias: 2 * BAND_BIAS,
    };

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
