//! A validated N-Queens question: board size, fixed queens, symmetry mode and shard.
//!
//! Validation lives here so that every caller (the gRPC service, the CLI, tests) gets the
//! same checks and the same messages, each naming the request field at fault. Nothing here
//! searches; `search.rs` turns a `Problem` into boards or counts.

use super::geometry::{MAX_N, Square, blocked, full_mask};
use std::fmt;

/// Part `index` of `count` disjoint parts of one search; `count` 0 or 1 is the whole search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shard {
    /// Which part, below `count` (0 for the whole search).
    pub index: u32,
    /// How many parts; 0 and 1 both mean the whole search.
    pub count: u32,
}

/// Why a text is not a shard (`I/K`) or a square (`R,C`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The separator is missing.
    #[error("expected {0}")]
    Form(&'static str),
    /// A part is not a number.
    #[error("{part}: {source}")]
    Number {
        /// Which part.
        part: &'static str,
        /// Why.
        source: std::num::ParseIntError,
    },
}

/// Splits `text` at `separator` into two numbers named `parts`.
fn two_numbers(
    text: &str,
    separator: char,
    form: &'static str,
    parts: [&'static str; 2],
) -> Result<(u32, u32), ParseError> {
    let (a, b) = text.split_once(separator).ok_or(ParseError::Form(form))?;
    let number = |text: &str, part| {
        text.trim()
            .parse()
            .map_err(|source| ParseError::Number { part, source })
    };
    Ok((number(a, parts[0])?, number(b, parts[1])?))
}

/// `I/K`: part `I` of `K` (e.g. `0/4`).
impl std::str::FromStr for Shard {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Shard, ParseError> {
        let (index, count) = two_numbers(text, '/', "INDEX/COUNT, e.g. 0/4", ["index", "count"])?;
        Ok(Shard { index, count })
    }
}

/// `R,C`: the square in row `R`, column `C` (from 0).
impl std::str::FromStr for Square {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Square, ParseError> {
        let (row, column) = two_numbers(text, ',', "ROW,COLUMN", ["row", "column"])?;
        Ok(Square { row, column })
    }
}

impl Shard {
    /// The whole search as a single part.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Number of parts, with 0 read as 1.
    pub fn parts(self) -> u32 {
        self.count.max(1)
    }

    /// Whether subproblem `index` of a count's list is in this part: its index is the part's
    /// index modulo the number of parts.
    pub fn holds(self, index: usize) -> bool {
        index % self.parts() as usize == self.index as usize
    }
}

/// Why a question is not a valid one; the message names the request field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// `n` outside `1..=max`.
    BoardSize {
        /// The size asked for.
        n: u32,
        /// The largest size allowed here.
        max: u32,
    },
    /// A fixed queen outside the board.
    FixedOffBoard {
        /// Position in the `fixed` list.
        index: usize,
        /// The square asked for.
        square: Square,
        /// Board size.
        n: u32,
    },
    /// The same fixed square listed twice.
    FixedDuplicate {
        /// Position of the second occurrence in the `fixed` list.
        index: usize,
        /// The repeated square.
        square: Square,
    },
    /// `fundamental` asked together with fixed queens (fixed queens break the symmetry).
    FundamentalWithFixed,
    /// A shard index that is not one of the parts.
    ShardIndex {
        /// The index asked for.
        index: u32,
        /// The number of parts asked for.
        count: u32,
    },
    /// `start_after` with a length other than `n`.
    StartAfterLength {
        /// Its length.
        len: usize,
        /// Board size.
        n: u32,
    },
    /// A `start_after` entry that is not a column of the board.
    StartAfterEntry {
        /// Position in `start_after`.
        index: usize,
        /// The bad column.
        value: u32,
        /// Board size.
        n: u32,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QueryError::BoardSize { n, max } => {
                write!(
                    f,
                    "n: {n} is not a supported board size; n must be between 1 and {max}"
                )
            }
            QueryError::FixedOffBoard { index, square, n } => write!(
                f,
                "fixed[{index}]: square (row {}, column {}) is off the {n}x{n} board; \
                 rows and columns run from 0 to {}",
                square.row,
                square.column,
                n - 1
            ),
            QueryError::FixedDuplicate { index, square } => write!(
                f,
                "fixed[{index}]: square (row {}, column {}) is listed twice",
                square.row, square.column
            ),
            QueryError::FundamentalWithFixed => write!(
                f,
                "fundamental: cannot be combined with fixed queens \
                 (fixed queens break the board's symmetry)"
            ),
            QueryError::ShardIndex { index, count } if count <= 1 => write!(
                f,
                "shard.index: {index} must be 0 when shard.count is {count} (the whole search)"
            ),
            QueryError::ShardIndex { index, count } => write!(
                f,
                "shard.index: {index} is not below shard.count {count}; parts are 0 to {}",
                count - 1
            ),
            QueryError::StartAfterLength { len, n } => write!(
                f,
                "start_after: has {len} entries but must be empty or have n = {n} entries"
            ),
            QueryError::StartAfterEntry { index, value, n } => write!(
                f,
                "start_after[{index}]: {value} is not a column of the {n}x{n} board \
                 (columns run from 0 to {})",
                n - 1
            ),
        }
    }
}

impl std::error::Error for QueryError {}

impl QueryError {
    /// The request field at fault as a path of the proto's field names (`n`, `fixed[2]`,
    /// `shard.index`, `start_after[3]`), the one the message starts with, for a client's
    /// `BadRequest`; a square off the board is named down to its coordinate (`fixed[2].row`,
    /// or `fixed[2].column` when only the column is off).
    pub fn field(&self) -> String {
        match *self {
            QueryError::BoardSize { .. } => "n".into(),
            QueryError::FixedOffBoard { index, square, n } if square.row >= n => {
                format!("fixed[{index}].row")
            }
            QueryError::FixedOffBoard { index, .. } => format!("fixed[{index}].column"),
            QueryError::FixedDuplicate { index, .. } => format!("fixed[{index}]"),
            QueryError::FundamentalWithFixed => "fundamental".into(),
            QueryError::ShardIndex { .. } => "shard.index".into(),
            QueryError::StartAfterLength { .. } => "start_after".into(),
            QueryError::StartAfterEntry { index, .. } => format!("start_after[{index}]"),
        }
    }
}

/// A validated question: which board, which queens are fixed, whether only the
/// representatives of symmetry classes are wanted, and which part of the search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    n: u32,
    fixed: Vec<Square>,
    fundamental: bool,
    shard: Shard,
}

impl Problem {
    /// Checks a question against the core's limits ([`MAX_N`]) and builds it.
    pub fn new(
        n: u32,
        fixed: &[Square],
        fundamental: bool,
        shard: Shard,
    ) -> Result<Problem, QueryError> {
        Problem::with_max_n(n, fixed, fundamental, shard, MAX_N)
    }

    /// Like [`Problem::new`], with a lower largest board size (a server's `--max-n`).
    pub fn with_max_n(
        n: u32,
        fixed: &[Square],
        fundamental: bool,
        shard: Shard,
        max_n: u32,
    ) -> Result<Problem, QueryError> {
        let max = max_n.min(MAX_N);
        if n == 0 || n > max {
            return Err(QueryError::BoardSize { n, max });
        }
        let mut seen: Vec<Square> = Vec::with_capacity(fixed.len().min((n * n) as usize));
        for (index, &square) in fixed.iter().enumerate() {
            if square.row >= n || square.column >= n {
                return Err(QueryError::FixedOffBoard { index, square, n });
            }
            if seen.contains(&square) {
                return Err(QueryError::FixedDuplicate { index, square });
            }
            seen.push(square);
        }
        if fundamental && !fixed.is_empty() {
            return Err(QueryError::FundamentalWithFixed);
        }
        if shard.index >= shard.parts() {
            return Err(QueryError::ShardIndex {
                index: shard.index,
                count: shard.count,
            });
        }
        seen.sort_unstable();
        Ok(Problem {
            n,
            fixed: seen,
            fundamental,
            shard: Shard {
                index: shard.index,
                count: shard.parts(),
            },
        })
    }

    /// Checks a resume point for this board: empty, or `n` columns each below `n`.
    pub fn check_start_after(&self, start_after: &[u32]) -> Result<Option<Vec<u8>>, QueryError> {
        if start_after.is_empty() {
            return Ok(None);
        }
        if start_after.len() != self.n as usize {
            return Err(QueryError::StartAfterLength {
                len: start_after.len(),
                n: self.n,
            });
        }
        let mut columns = Vec::with_capacity(start_after.len());
        for (index, &value) in start_after.iter().enumerate() {
            if value >= self.n {
                return Err(QueryError::StartAfterEntry {
                    index,
                    value,
                    n: self.n,
                });
            }
            columns.push(value as u8);
        }
        Ok(Some(columns))
    }

    /// Board size.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The fixed queens, sorted, without repeats.
    pub fn fixed(&self) -> &[Square] {
        &self.fixed
    }

    /// Whether only symmetry-class representatives are wanted.
    pub fn fundamental(&self) -> bool {
        self.fundamental
    }

    /// The part of the search asked for (`count` is at least 1).
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Per row, the columns not excluded by the fixed queens: a fixed row allows only its
    /// queen's column, and no row allows a square a fixed queen attacks. Attacking fixed
    /// queens therefore leave some row with no column at all, and the search finds nothing.
    pub(crate) fn allowed_rows(&self) -> Vec<u32> {
        (0..self.n)
            .map(|r| {
                let taken = self.fixed.iter().fold(0, |m, &q| m | blocked(self.n, q, r));
                full_mask(self.n) & !taken
            })
            .collect()
    }
}
