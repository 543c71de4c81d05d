//! The join's keys and the ranks of column sets: a key is a top half's set of columns (and
//! the middle queen's column on odd boards), one per orbit of the two mirrors ([`Key`],
//! listed and cut into shards by [`shard_keys_into`]); the sets of `k` columns are
//! listed in colex order ([`subsets`]) and numbered by it ([`rank`], [`unrank`]), which is
//! how the tables and a key's bands are indexed. Free functions of the board's size alone:
//! the tables are `tables.rs`'s, a key's halves `halves.rs`'s and `bands.rs`'s.

use crate::problem::Shard;

/// One key: the top half's columns, the middle queen's column on odd boards, and how many
/// keys the mirrors map onto this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    /// Columns of the top half's queens.
    pub(super) top: u32,
    /// Columns of the bottom half's queens.
    pub(super) bottom: u32,
    /// The middle row's queen (odd n).
    pub(super) middle: Option<u32>,
    /// Keys this one stands for (1, 2 or 4).
    pub(super) weight: u64,
}

/// `BINOMIAL[p][j]` = p choose j, for the ranks of column sets (p < 32, j ≤ 14: a band
/// has at most 12 rows, a half 14).
pub(super) static BINOMIAL: [[u32; 15]; 32] = {
    let mut table = [[0u32; 15]; 32];
    let mut p = 0;
    while p < 32 {
        table[p][0] = 1;
        let mut j = 1;
        while j < 15 && j <= p {
            table[p][j] = table[p - 1][j - 1] + if j < p { table[p - 1][j] } else { 0 };
            j += 1;
        }
        p += 1;
    }
    table
};

/// `RANK_BYTES[c][j][b]`: what the bits of chunk `b` add to a colex rank when it is chunk
/// `c` of a set (bits `8c` on: two bytes, then the 9 bits from 16) and `j` of the set's
/// bits lie below it (the sum of `BINOMIAL[column][index]` over its bits); 0 where an index
/// would pass 12, which no band's set reaches. The first two chunks use 256 of the 512
/// entries.
static RANK_BYTES: [[[u32; 512]; 13]; 3] = {
    let mut table = [[[0u32; 512]; 13]; 3];
    let mut c = 0;
    while c < 3 {
        let bits = if c == 2 { 9 } else { 8 };
        let mut j = 0;
        while j < 13 {
            let mut b = 0;
            while b < 1 << bits {
                let (mut sum, mut index, mut bit) = (0, j + 1, 0);
                while bit < bits {
                    if b & (1 << bit) != 0 {
                        if index <= 12 {
                            sum += BINOMIAL[8 * c + bit][index];
                        }
                        index += 1;
                    }
                    bit += 1;
                }
                table[c][j][b] = sum;
                b += 1;
            }
            j += 1;
        }
        c += 1;
    }
    table
};

/// The largest board the ranks cover: [`rank`] takes columns below 25.
pub(super) const RANK_COLUMNS: u32 = 25;

/// The colex rank of `set` (columns below [`RANK_COLUMNS`]) among the sets of `k` columns:
/// its place in increasing order of the masks, the order [`subsets`] lists them in. Three
/// lookups, one per chunk (two bytes, then the 9 bits from 16; building the tables ranks
/// every placement twice).
#[inline]
pub(super) fn rank(set: u32, k: u32) -> usize {
    debug_assert_eq!(set.count_ones(), k);
    debug_assert!(set < 1 << RANK_COLUMNS && k <= 12);
    let (b0, b1, b2) = (set & 0xff, (set >> 8) & 0xff, set >> 16);
    let (j1, j2) = (b0.count_ones(), (set & 0xffff).count_ones());
    (RANK_BYTES[0][0][b0 as usize]
        + RANK_BYTES[1][j1 as usize][b1 as usize]
        + RANK_BYTES[2][j2 as usize][(b2 & 0x1ff) as usize]) as usize
}

/// The set of `k` columns whose colex rank ([`rank`]) is `rank`: column by column from the
/// highest, the highest whose sets of that many columns below it do not pass the rank.
fn unrank(mut rank: usize, k: u32) -> u32 {
    let mut set = 0;
    for j in (1..=k as usize).rev() {
        let mut column = j - 1;
        while BINOMIAL[column + 1][j] as usize <= rank {
            column += 1;
        }
        set |= 1 << column;
        rank -= BINOMIAL[column][j] as usize;
    }
    set
}

/// The sets of `k` of the `n` low bits (n < 32), in increasing order (Gosper's hack): the
/// masks of `0..2^n` with `k` bits, without walking the others.
pub(super) fn subsets(n: u32, k: u32) -> impl Iterator<Item = u32> {
    let first = (1u64 << k.min(n)) - 1;
    let next = |&x: &u64| {
        let low = x & x.wrapping_neg();
        let carried = x + low;
        // `low` is 0 only for the empty set, the one set of no bits.
        // Dividing by `low` is shifting by its zeros, without a division's latency.
        (low != 0).then(|| (((carried ^ x) >> 2) >> low.trailing_zeros()) | carried)
    };
    std::iter::successors(Some(first), next)
        .take_while(move |&x| x < 1u64 << n)
        .map(|x| x as u32)
}

/// The keys of size `n`, one per orbit of the two mirrors, in a fixed order (no tables
/// needed).
#[cfg(test)]
pub(super) fn keys(n: u32) -> Vec<Key> {
    shard_keys(n, 0, Shard::WHOLE)
}

/// Those of [`keys`] whose place in their order, counted from `offset`, `shard`
/// holds ([`Shard::holds`]), in that order. The keys of a middle queen left of the centre
/// are picked by their place alone, without walking the others.
#[cfg(test)]
pub(super) fn shard_keys(n: u32, offset: usize, shard: Shard) -> Vec<Key> {
    let mut keys = Vec::new();
    walk_keys(n, offset, shard, &mut keys);
    keys
}

/// `shard_keys` into `keys`, which has room for them all (so that a count's list
/// of keys, tens of MiB at n = 24, is allocated once, where a failure is an error).
pub(super) fn shard_keys_into(n: u32, offset: usize, shard: Shard, keys: &mut Vec<Key>) {
    walk_keys(n, offset, shard, keys);
}

/// How many keys size `n` has (walked once per size in the process, then remembered;
/// n = 24: a few milliseconds, nothing allocated).
pub(super) fn key_count(n: u32) -> usize {
    static COUNTS: std::sync::Mutex<[Option<usize>; 33]> = std::sync::Mutex::new([None; 33]);
    if let Some(count) = crate::sync::lock(&COUNTS)[n as usize] {
        return count;
    }
    // A shard that holds only the first key: the walk's end is the count.
    let first_only = Shard {
        index: 0,
        count: u32::MAX,
    };
    let count = walk_keys(n, 0, first_only, &mut Vec::new());
    crate::sync::lock(&COUNTS)[n as usize] = Some(count);
    count
}

/// Pushes `shard_keys` to `keys`, and says where the keys' places end (`offset`
/// plus their number).
fn walk_keys(n: u32, offset: usize, shard: Shard, keys: &mut Vec<Key>) -> usize {
    let (m, full) = (n / 2, (1u32 << n) - 1);
    let mirror = |columns: u32| columns.reverse_bits() >> (32 - n);
    let middles: Vec<Option<u32>> = if n.is_multiple_of(2) {
        vec![None]
    } else {
        (0..n).map(Some).collect()
    };
    let mut index = offset;
    for middle in middles {
        // The sets of m of the other columns: those of n (or n - 1) bits, the middle
        // queen's column left out by moving the bits above it up one.
        let (others, q) = middle.map_or((n, n), |q| (n - 1, q));
        // A middle queen right of the centre has a mirror image left of it, which
        // comes first: no key has her there.
        if middle.is_some_and(|q| n - 1 - q < q) {
            continue;
        }
        let below = (1u32 << q) - 1;
        let taken = middle.map_or(0, |q| 1 << q);
        let halves = |set: u32| {
            let top = (set & below) | ((set & !below) << u32::from(middle.is_some()));
            (top, full & !top & !taken)
        };
        // A top half on the highest of the other columns is larger than its bottom half
        // (its complement among them), which comes first: the sets without that column
        // are all the keys can be, in the same order.
        let size = others.saturating_sub(1);
        if middle.is_some_and(|q| q < n - 1 - q) {
            // Left of the centre every such set is a key standing for four: its images
            // have the bottom half on top, or the middle queen right of the centre.
            let sets = BINOMIAL[size as usize][m as usize] as usize;
            let parts = shard.parts() as usize;
            if (shard.index as usize) < parts {
                let first = index + (shard.index as usize + parts - index % parts) % parts;
                for at in (first..index + sets).step_by(parts) {
                    let (top, bottom) = halves(unrank(at - index, m));
                    keys.push(Key {
                        top,
                        bottom,
                        middle,
                        weight: 4,
                    });
                }
            }
            index += sets;
            continue;
        }
        for set in subsets(size, m) {
            let (top, bottom) = halves(set);
            let flipped = middle.map(|q| n - 1 - q);
            let images = [
                (middle, top),
                (middle, bottom),
                (flipped, mirror(top)),
                (flipped, mirror(bottom)),
            ];
            if images.iter().any(|&image| image < (middle, top)) {
                continue;
            }
            if shard.holds(index) {
                let same = images
                    .iter()
                    .filter(|&&image| image == (middle, top))
                    .count();
                keys.push(Key {
                    top,
                    bottom,
                    middle,
                    weight: (4 / same) as u64,
                });
            }
            index += 1;
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::{rank, subsets, unrank};

    #[test]
    fn ranks_number_the_sets_in_the_order_they_are_listed() {
        for n in [4, 9, 16, 19, 24, 25] {
            for k in 1..=6.min(n) {
                for (i, set) in subsets(n, k).enumerate() {
                    assert_eq!(rank(set, k), i, "n = {n}, k = {k}, set = {set:#b}");
                    assert_eq!(unrank(i, k), set, "n = {n}, k = {k}, rank = {i}");
                }
            }
        }
    }
}
