//! The layout of a half's 64-bit word, shared by the tables that build the words
//! (`tables.rs`) and the sieve that counts their pairs (`sieve.rs`): the diagonal fields
//! below [`BALANCE_SHIFT`], the balance fields above. Nothing here builds or counts words.

/// Where a top half's balance field starts; a bottom half's is a byte higher, so that the
/// two never meet in a pair test. The diagonal fields end below bit 48 (n ≤ 24: on even boards
/// the field of the left-going diagonals has n - 1 bits).
pub(super) const BALANCE_SHIFT: u32 = 48;

/// Offset of a band's balance in its field (a band has at most 6 queens, a half 12).
pub(super) const BAND_BIAS: i32 = 32;
