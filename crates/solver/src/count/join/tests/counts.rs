//! The join's counts against OEIS: whole boards and shards on the tables' path, the
//! turn-fixed solutions and classes, and the wide path run at small n.

use super::*;

/// The join's solutions for `n` (4 ≤ n ≤ MAX), or for one shard of its keys, on the calling
/// thread with the pair tests in `tier` (the tests' way in; Count runs the keys as its
/// subproblems).
fn total_in(n: u32, shard: Shard, tier: Tier) -> Result<u64, CountError> {
    assert!(
        (4..=MAX).contains(&n),
        "the join counter covers n = 4..=MAX"
    );
    let join = Join::new(n, &AtomicBool::new(false), &|| {})?;
    let parts = shard.parts() as usize;
    let mut work = Work::new(usize::MAX);
    let mut total = 0u64;
    for key in keys::keys(n)
        .into_iter()
        .skip(shard.index as usize)
        .step_by(parts)
    {
        let pairs = join.pairs(&key, tier, &AtomicBool::new(false), &mut work)?;
        let weighted = pairs.checked_mul(key.weight).ok_or(CountError::Overflow)?;
        total = total.checked_add(weighted).ok_or(CountError::Overflow)?;
    }
    Ok(total)
}

/// The solutions a half turn maps to themselves and those a quarter turn does (the sums of
/// [`turn_fixed_from`] over the first row's columns).
fn turn_fixed(n: u32, cancel: &AtomicBool) -> Result<(u64, u64), CountError> {
    let (mut half, mut quarter) = (0, 0);
    for first in 0..n {
        let (h, q) = turn_fixed_from(n, first, cancel, &|| ())?;
        half += h;
        quarter += q;
    }
    Ok((half, quarter))
}

#[test]
fn join_counts_a000170_on_every_tier() {
    for tier in tiers_to_test("join_counts_a000170_on_every_tier") {
        for n in 4..=13u32 {
            let got = total_in(n, Shard::WHOLE, tier).unwrap();
            assert_eq!(got, A000170[n as usize - 1], "n = {n}, {}", tier.name());
        }
    }
}

#[test]
fn join_counts_14_and_15_and_its_shards_add_up() {
    for n in [14u32, 15] {
        let best = tier();
        let whole = total_in(n, Shard::WHOLE, best).unwrap();
        assert_eq!(whole, A000170[n as usize - 1], "n = {n}");
        let parts: u64 = (0..7)
            .map(|index| total_in(n, Shard { index, count: 7 }, best).unwrap())
            .sum();
        assert_eq!(parts, whole, "n = {n}: 7 shards");
    }
}

#[test]
fn turn_fixed_solutions_match_the_oracle_and_classes_match_a002562() {
    // n = 1 is left out: its one board is also its own mirror image.
    for n in 2..=14u32 {
        let (half, quarter) = turn_fixed(n, &AtomicBool::new(false)).unwrap();
        if n <= 10 {
            let turned = |board: &[u8], quarter: bool| {
                let last = n as u8 - 1;
                (0..n as usize).all(|r| {
                    let c = board[r];
                    if quarter {
                        // (r, c) -> (c, last - r)
                        board[c as usize] == last - r as u8
                    } else {
                        board[last as usize - r] == last - c
                    }
                })
            };
            let all = crate::naive::solutions(n as usize);
            let expect_half = all.iter().filter(|b| turned(b, false)).count() as u64;
            let expect_quarter = all.iter().filter(|b| turned(b, true)).count() as u64;
            assert_eq!((half, quarter), (expect_half, expect_quarter), "n = {n}");
        }
        let sum = A000170[n as usize - 1] + half + 2 * quarter;
        assert_eq!(sum % 8, 0, "n = {n}");
        assert_eq!(sum / 8, A002562[n as usize - 1], "n = {n}");
    }
}

/// The wide path's total for size `n` on the calling thread, its lists in chunks of at most
/// `chunk` words, the pair tests in `tier`.
fn wide_total(n: u32, chunk: usize, tier: Tier) -> u64 {
    let join = Join::wide(n, chunk);
    let mut work = Work::new(usize::MAX);
    keys::keys(n)
        .iter()
        .map(|key| {
            let pairs = join.pairs(key, tier, &AtomicBool::new(false), &mut work);
            pairs.unwrap() * key.weight
        })
        .sum()
}

/// The wide path (n = 26 to 28: no tables, halves from a key's own bands, five-bit balances above
/// `2n - 2` bits of diagonals) run at small n, with its large-n layout, against A000170:
/// in chunks large enough for a key's lists and in chunks of 8 and 100 words, which cut
/// every key's lists into many chunk pairs (and the bottoms are made again for each chunk
/// of the tops), on every tier.
#[test]
fn the_wide_path_at_small_n_counts_a000170_whole_and_in_chunks() {
    for tier in tiers_to_test("the_wide_path_at_small_n_counts_a000170_whole_and_in_chunks") {
        for n in 4..=15u32 {
            let expected = A000170[n as usize - 1];
            assert_eq!(
                wide_total(n, CHUNK, tier),
                expected,
                "n = {n}, {}",
                tier.name()
            );
            for chunk in [8, 100] {
                assert_eq!(
                    wide_total(n, chunk, tier),
                    expected,
                    "n = {n}, chunk {chunk}"
                );
            }
        }
    }
}

/// Each key's pairs on the wide path equal the tables' path's, for a sample of the keys of
/// n = 16 to 22 (in chunks of 4,096 words up to n = 19, which cut the larger keys' lists in
/// several): two ways of making a key's halves (the tables' heads and tails joined; a
/// search) and two layouts of their words, counted by one sieve.
#[test]
fn wide_keys_count_what_the_tables_count() {
    let tier = tier();
    for (n, step) in [
        (16, 41),
        (17, 41),
        (18, 101),
        (19, 101),
        (20, 1001),
        (21, 1001),
        (22, 20001),
    ] {
        let tables = Join::new(n, &AtomicBool::new(false), &|| {}).unwrap();
        let chunk = if n < 20 { 1 << 12 } else { CHUNK };
        let wide = Join::wide(n, chunk);
        let (mut a, mut b) = (Work::new(usize::MAX), Work::new(usize::MAX));
        let cancel = AtomicBool::new(false);
        for key in keys::keys(n).iter().step_by(step) {
            let from_tables = tables.pairs(key, tier, &cancel, &mut a).unwrap();
            let searched = wide.pairs(key, tier, &cancel, &mut b).unwrap();
            assert_eq!(searched, from_tables, "n = {n}, {key:?}");
        }
    }
}
