//! The layout of a half's 64-bit word, shared by the tables that build the words
//! (`tables.rs`) and the sieve that counts their pairs (`sieve.rs`): the diagonal fields
//! below [`BALANCE_SHIFT`], the balance fields above. Nothing here builds or counts words.
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
