//! The board's geometry, the one base every engine of the solver builds on: the size limit,
//! squares, the attack rule, the eight symmetries of the square, and the bitboard step from
//! one row to the next.
//!
//! Everything here is a definition, used by the enumeration (`search.rs`), the counting path
//! (`count/`), validation (`problem.rs`) and the prefix tasks (`tasks.rs`). No search lives
//! here. The naive oracle (`naive.rs`) deliberately does not use it: it checks these
//! definitions from its own.

/// Largest board the core can search: rows are `u32` bitmasks, one bit per column.
pub const MAX_N: u32 = 32;

/// [`MAX_N`] as an array length.
pub(crate) const MAX: usize = MAX_N as usize;

/// A square of the board, counted from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Square {
    /// Row of the square (row 0 is the first row of a rendered board).
    pub row: u32,
    /// Column of the square.
    pub column: u32,
}

/// The mask of the `n` columns of a board (`n` from 1 to [`MAX_N`]).
pub(crate) fn full_mask(n: u32) -> u32 {
    u32::MAX >> (MAX_N - n)
}

/// Whether queens on `p` and `q` share a row, a column or a diagonal (a square shares all
/// of them with itself).
pub fn attack(p: Square, q: Square) -> bool {
    let dr = p.row.abs_diff(q.row);
    let dc = p.column.abs_diff(q.column);
    dr == 0 || dc == 0 || dr == dc
}

/// Whether no two of `queens` attack each other.
pub fn peaceful(queens: &[Square]) -> bool {
    queens
        .iter()
        .enumerate()
        .all(|(i, &p)| queens[i + 1..].iter().all(|&q| !attack(p, q)))
}

/// Whether the column vector `columns` (row r's queen in column `columns[r]`, for the first
/// rows of a board) has no two queens attacking each other.
pub fn peaceful_columns(columns: &[u8]) -> bool {
    let square = |r: usize| Square {
        row: r as u32,
        column: u32::from(columns[r]),
    };
    (0..columns.len()).all(|r| (0..r).all(|s| !attack(square(s), square(r))))
}

/// The columns of `row` that a queen on `q` takes from every other queen of an `n`×`n`
/// board: the squares it attacks, other than its own.
pub(crate) fn blocked(n: u32, q: Square, row: u32) -> u32 {
    (0..n)
        .map(|column| Square { row, column })
        .filter(|&s| s != q && attack(q, s))
        .fold(0, |mask, s| mask | 1 << s.column)
}

/// What a partial board takes from the next row it fills, as bitmasks of that row's
/// columns: the columns of its queens and their two diagonals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Masks {
    /// Columns holding a queen.
    pub(crate) cols: u32,
    /// Squares of the row on a queen's diagonal going down to the right (column + row).
    pub(crate) d1: u32,
    /// Squares of the row on a queen's diagonal going down to the left (column - row).
    pub(crate) d2: u32,
}

impl Masks {
    /// The masks of an empty board.
    pub(crate) const EMPTY: Masks = Masks {
        cols: 0,
        d1: 0,
        d2: 0,
    };

    /// The squares of the row that some queen attacks (bits off the board may be set too).
    #[inline(always)]
    pub(crate) fn taken(self) -> u32 {
        self.cols | self.d1 | self.d2
    }

    /// The masks after a queen on column `bit` (one bit) of this row, seen from the row
    /// `shift` rows further down (1 for the next row).
    #[inline(always)]
    pub(crate) fn child(self, bit: u32, shift: u32) -> Masks {
        Masks {
            cols: self.cols | bit,
            d1: (self.d1 | bit) << shift,
            d2: (self.d2 | bit) >> shift,
        }
    }
}

/// The set bits of `mask`, lowest first, each as a one-bit mask: the columns a row tries,
/// in ascending order.
#[inline(always)]
pub(crate) fn bits(mask: u32) -> Bits {
    Bits(mask)
}

/// Iterator of [`bits`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bits(u32);

impl Iterator for Bits {
    type Item = u32;

    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0 & self.0.wrapping_neg();
        self.0 ^= bit;
        Some(bit)
    }
}

/// One of the eight symmetries of the square board (rotations and reflections), numbered
/// 0 to 7: 0 the identity, 3 the half turn, 6 and 7 the quarter turns, the rest
/// reflections.
///
/// Each is a transpose (or not) followed by flipping the rows and the columns (or not):
/// square (r, c) goes to (a', b') where (a, b) is (c, r) for a transpose and (r, c)
/// otherwise, a' is a or n-1-a, and b' is b or n-1-b.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Symmetry(u8);

/// Per symmetry number: (transposes, flips rows, flips columns).
const FLAGS: [(bool, bool, bool); 8] = [
    (false, false, false), // 0 identity: (r, c)
    (false, false, true),  // 1 mirror left-right: (r, l-c)
    (false, true, false),  // 2 flip top-bottom: (l-r, c)
    (false, true, true),   // 3 half turn: (l-r, l-c)
    (true, false, false),  // 4 transpose: (c, r)
    (true, true, true),    // 5 anti-diagonal reflection: (l-c, l-r)
    (true, false, true),   // 6 quarter turn: (c, l-r)
    (true, true, false),   // 7 quarter turn the other way: (l-c, r)
];

impl Symmetry {
    /// All eight, in number order.
    pub const ALL: [Symmetry; 8] = [
        Symmetry(0),
        Symmetry(1),
        Symmetry(2),
        Symmetry(3),
        Symmetry(4),
        Symmetry(5),
        Symmetry(6),
        Symmetry(7),
    ];

    /// The identity.
    pub const IDENTITY: Symmetry = Symmetry(0);

    /// The half turn.
    pub const HALF_TURN: Symmetry = Symmetry(3);

    /// A quarter turn.
    pub const QUARTER_TURN: Symmetry = Symmetry(6);

    /// Its number, 0 to 7.
    pub fn number(self) -> u8 {
        self.0
    }

    /// The image of square `q` of an `n`×`n` board.
    pub fn apply(self, n: u32, q: Square) -> Square {
        let (transpose, flip_rows, flip_columns) = FLAGS[usize::from(self.0)];
        let last = n - 1;
        let (a, b) = if transpose {
            (q.column, q.row)
        } else {
            (q.row, q.column)
        };
        Square {
            row: if flip_rows { last - a } else { a },
            column: if flip_columns { last - b } else { b },
        }
    }

    /// Entry `r` of the image of the solution `columns`, whose `inverse` gives the row of
    /// each column's queen: computed alone, so images can be compared lazily.
    #[inline]
    pub fn image_entry(self, columns: &[u8], inverse: &[u8], r: usize) -> u8 {
        let (transpose, flip_rows, flip_columns) = FLAGS[usize::from(self.0)];
        let last = columns.len() - 1;
        let a = if flip_rows { last - r } else { r };
        let b = if transpose { inverse[a] } else { columns[a] };
        if flip_columns { last as u8 - b } else { b }
    }

    /// Whether it maps the solution `columns` to itself.
    pub fn fixes(self, columns: &[u8]) -> bool {
        let inverse = inverse(columns);
        (0..columns.len()).all(|r| self.image_entry(columns, &inverse, r) == columns[r])
    }
}

/// The inverse permutation of a solution: entry `c` is the row of column `c`'s queen.
pub(crate) fn inverse(columns: &[u8]) -> [u8; MAX] {
    let mut inverse = [0u8; MAX];
    for (r, &c) in columns.iter().enumerate() {
        inverse[usize::from(c)] = r as u8;
    }
    inverse
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_entries_agree_with_the_square_map() {
        let columns = [1u8, 3, 5, 7, 2, 0, 6, 4];
        let n = columns.len() as u32;
        let inv = inverse(&columns);
        for g in Symmetry::ALL {
            let mut image = [0u8; 8];
            for (r, &c) in columns.iter().enumerate() {
                let s = g.apply(
                    n,
                    Square {
                        row: r as u32,
                        column: u32::from(c),
                    },
                );
                image[s.row as usize] = s.column as u8;
            }
            for (r, &entry) in image.iter().enumerate() {
                assert_eq!(g.image_entry(&columns, &inv, r), entry, "{g:?} row {r}");
            }
        }
    }

    #[test]
    fn blocked_columns_follow_the_attack_rule() {
        let q = Square { row: 2, column: 3 };
        assert_eq!(blocked(6, q, 2), 0b11_0111);
        assert_eq!(blocked(6, q, 0), 1 << 1 | 1 << 3 | 1 << 5);
        assert_eq!(blocked(6, q, 5), 1 << 0 | 1 << 3);
    }

    #[test]
    fn bits_come_lowest_first() {
        assert_eq!(bits(0b1010_0110).collect::<Vec<_>>(), vec![2, 4, 32, 128]);
        assert_eq!(bits(0).count(), 0);
    }
}
