//! The join's second opinion by another method: a key's weighted solutions found by a plain
//! backtracking search, row by row from the top, each row's queen on one of its half's
//! columns (the middle row's on the middle queen), each solution weighted by the sign of
//! its balance as the sieve weighs a pair ([`Rows`]); the search cut by the placements of
//! its first two rows into openings that engines share, and what they and the join's parts
//! of the key add up to, compared when the last of them ends ([`Check`]).
//!
//! Nothing here shares code with the join's halves, words, bands, tables, sieve or kernels:
//! it takes the key (its columns and middle queen) and nothing else, so a wrong idea in the
//! join shows as a difference. It walks every solution of the key, so it costs far more per
//! key than the join (measured in `docs/performance.md`, "A second opinion"). Not here:
//! which keys are checked and the parts that carry them (`mod.rs`).

use super::keys::Key;
use super::sizes::MAX;
use crate::counts::CountError;
use crate::sync::lock;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rows above this one poll the cancel flag at each node: a node there stands for at most
/// seconds of search at n = 28, and the check below it costs nothing measurable.
const POLL_ROWS: usize = 6;

/// A key's rows for the search: the columns each row's queen may take, and the squares of
/// each row whose balance is +1 and -1.
pub(super) struct Rows {
    /// The board's size.
    n: u32,
    /// The columns each row's queen may take: the key's top columns in the top half, the
    /// middle queen's on the middle row, the bottom columns below.
    allowed: [u32; MAX as usize],
    /// Per row, the columns strictly between the long diagonals above or below the centre
    /// (balance +1).
    plus: [u32; MAX as usize],
    /// Per row, the columns left or right of the centre, off both long diagonals (balance
    /// -1).
    minus: [u32; MAX as usize],
}

impl Rows {
    /// The rows of `key` on a board of size `n` (4 to [`MAX`]: two rows in each half).
    pub(super) fn of(n: u32, key: &Key) -> Rows {
        assert!(
            (4..=MAX).contains(&n),
            "the check takes boards of 4 to {MAX}"
        );
        let m = n / 2;
        let (mut allowed, mut plus, mut minus) =
            ([0; MAX as usize], [0; MAX as usize], [0; MAX as usize]);
        for row in 0..n {
            allowed[row as usize] = match key.middle {
                Some(q) if row == m => 1 << q,
                _ if row < m => key.top,
                _ => key.bottom,
            };
            for column in 0..n {
                // Signed distances from the two long diagonals through the centre.
                let main = row as i32 - column as i32;
                let anti = (row + column) as i32 - (n as i32 - 1);
                if main == 0 || anti == 0 {
                    continue;
                }
                if (main > 0) == (anti > 0) {
                    plus[row as usize] |= 1 << column;
                } else {
                    minus[row as usize] |= 1 << column;
                }
            }
        }
        Rows {
            n,
            allowed,
            plus,
            minus,
        }
    }

    /// The placements of the first two rows at peace with each other, as the two queens'
    /// column bits: the openings each search starts from (their searches add up to the
    /// key's).
    pub(super) fn openings(&self) -> Vec<[u32; 2]> {
        let mut all = Vec::new();
        for first in bits(self.allowed[0]) {
            let attacked = first | first << 1 | first >> 1;
            for second in bits(self.allowed[1] & !attacked) {
                all.push([first, second]);
            }
        }
        all
    }

    /// The weighted solutions that start with `opening` (2 for a positive balance, 1 for
    /// zero, 0 for a negative one); `None` if `cancel` was raised meanwhile. A depth-first
    /// walk from row 2 down, each row's state on a stack of its own (no recursion).
    pub(super) fn weighted_from(&self, opening: [u32; 2], cancel: &AtomicBool) -> Option<u64> {
        let [a, b] = opening;
        let (n, full) = (self.n as usize, (1u32 << self.n) - 1);
        let mut stack = [Node::default(); MAX as usize + 1];
        stack[2] = Node {
            columns: a | b,
            left: ((a << 1 | b) << 1) & full,
            right: (a >> 1 | b) >> 1,
            balance: self.balance(0, a) + self.balance(1, b),
            free: 0,
        };
        let top = &mut stack[2];
        top.free = self.allowed[2] & !(top.columns | top.left | top.right);
        let (mut row, mut total) = (2, 0u64);
        loop {
            let node = stack[row];
            if node.free == 0 {
                if row == 2 {
                    break;
                }
                row -= 1;
                continue;
            }
            let bit = node.free & node.free.wrapping_neg();
            stack[row].free ^= bit;
            let balance = node.balance + self.balance(row as u32, bit);
            if row == n - 1 {
                total += match balance {
                    1.. => 2,
                    0 => 1,
                    _ => 0,
                };
                continue;
            }
            let (columns, left, right) = (
                node.columns | bit,
                ((node.left | bit) << 1) & full,
                (node.right | bit) >> 1,
            );
            row += 1;
            stack[row] = Node {
                columns,
                left,
                right,
                balance,
                free: self.allowed[row] & !(columns | left | right),
            };
            if row < POLL_ROWS && cancel.load(Ordering::Relaxed) {
                return None;
            }
        }
        (!cancel.load(Ordering::Relaxed)).then_some(total)
    }

    /// The balance of the queen `bit` on `row`.
    #[inline]
    fn balance(&self, row: u32, bit: u32) -> i32 {
        i32::from(self.plus[row as usize] & bit != 0)
            - i32::from(self.minus[row as usize] & bit != 0)
    }
}

/// A row of the search: the columns taken above it, the diagonals attacked on it (going
/// left to right downwards, and right to left), the balance so far, and its queen's columns
/// still to try.
#[derive(Clone, Copy, Default)]
struct Node {
    columns: u32,
    left: u32,
    right: u32,
    balance: i32,
    free: u32,
}

/// The single bits of `mask`, lowest first.
fn bits(mut mask: u32) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        let bit = mask & mask.wrapping_neg();
        mask ^= bit;
        (bit != 0).then_some(bit)
    })
}

/// One checked key: what its join parts and its searches have added up to so far, and how
/// many of them are still to end. The last to end compares the two sums.
pub(super) struct Check {
    /// The key.
    pub(super) key: Key,
    /// The tier its join parts count in (named in a failure).
    pub(super) tier: &'static str,
    /// Its rows for the search.
    pub(super) rows: Rows,
    /// The sums so far.
    state: Mutex<Sums>,
}

/// A [`Check`]'s sums so far.
struct Sums {
    /// The join's weighted pairs of the key (of its pieces ended so far).
    joined: u64,
    /// The search's weighted solutions (of its openings searched so far).
    searched: u64,
    /// Parts of the key (join pieces and openings) still to end.
    left: usize,
}

/// What a [`Check`] found when its last part ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Parts of the key are still to end.
    Pending,
    /// The join and the search agree.
    Agreed,
}

impl Check {
    /// A check of `key` on a board of size `n` whose join is cut in `pieces` parts counted in
    /// the tier `tier`; its searches are [`Rows::openings`] of the returned rows.
    pub(super) fn new(n: u32, key: Key, pieces: usize, tier: &'static str) -> (Check, usize) {
        let rows = Rows::of(n, &key);
        let openings = rows.openings().len();
        let check = Check {
            key,
            tier,
            rows,
            state: Mutex::new(Sums {
                joined: 0,
                searched: 0,
                left: pieces + openings,
            }),
        };
        (check, openings)
    }

    /// Adds an ended part's count (`joined` from a join piece, `searched` from an opening):
    /// when it is the last, `Searched` if the two sums differ.
    pub(super) fn add(&self, joined: u64, searched: u64) -> Result<Verdict, CountError> {
        let mut sums = lock(&self.state);
        let overflow = CountError::Overflow;
        sums.joined = sums.joined.checked_add(joined).ok_or(overflow)?;
        sums.searched = sums
            .searched
            .checked_add(searched)
            .ok_or(CountError::Overflow)?;
        sums.left -= 1;
        if sums.left > 0 {
            return Ok(Verdict::Pending);
        }
        if sums.joined != sums.searched {
            return Err(CountError::Searched {
                top: self.key.top,
                middle: self.key.middle,
                joined: sums.joined,
                tier: self.tier,
                searched: sums.searched,
            });
        }
        Ok(Verdict::Agreed)
    }
}
