//! The second opinion by a plain search (`check.rs`): a key's search against the join's
//! pairs on both paths and, over all keys, against A000170; and in a count, the checked keys
//! agreeing, a key cut in pieces checked whole, and a disagreement ending the count.

use super::super::check::Rows;
use super::*;

/// A key's weighted solutions by the search: the sum over its openings.
fn searched(n: u32, key: &Key) -> u64 {
    let rows = Rows::of(n, key);
    let cancel = AtomicBool::new(false);
    rows.openings()
        .into_iter()
        .map(|opening| rows.weighted_from(opening, &cancel).unwrap())
        .sum()
}

/// Every key of n = 4 to 12 searched: the same weighted count as the join's pairs on the
/// tables' path and on the wide path (in chunks of 64 words, so that its keys take several),
/// and the keys' weighted sum is A000170 (the search's and the keys' weights alone, without
/// the join).
#[test]
fn searched_keys_match_the_join_and_sum_to_a000170() {
    let cancel = AtomicBool::new(false);
    for n in 4..=12u32 {
        let tables = Join::new(n, &cancel, &|| {}).unwrap();
        let wide = Join::wide(n, 64);
        let (mut total, mut work) = (0, Work::new(usize::MAX));
        for key in keys::keys(n) {
            let by_search = searched(n, &key);
            for join in [&tables, &wide] {
                let pairs = join.pairs(&key, tier(), &cancel, &mut work).unwrap();
                assert_eq!(pairs, by_search, "n = {n}, {key:?}");
            }
            total += by_search * key.weight;
        }
        assert_eq!(total, A000170[n as usize - 1], "n = {n}");
    }
}

/// A raised flag stops a search: it answers nothing.
#[test]
fn a_cancelled_search_answers_nothing() {
    let key = keys::keys(12)[3];
    let rows = Rows::of(12, &key);
    let opening = rows.openings()[0];
    assert_eq!(rows.weighted_from(opening, &AtomicBool::new(true)), None);
}

/// `shard` of n = 16 counted on two engines, its keys chosen with `fraction` checked by the
/// search: the count and the keys checked.
fn count_checked(shard: Shard, fraction: f64) -> (Result<crate::Counts, CountError>, u64) {
    let pool = Pool::new(2);
    let recount = Recount {
        fraction,
        seed: 11,
        method: RecountMethod::Search,
    };
    let options = CountOptions {
        threads: 2,
        recount: Some(recount),
        ..CountOptions::default()
    };
    let progress = options.progress.clone();
    let problem = crate::Problem::new(16, &[], false, shard).unwrap();
    let got = wait(|done| crate::count(&problem, options, &pool, done)).unwrap();
    (got, progress.recounted.load(Ordering::Relaxed))
}

/// A count that checks keys by the search answers what it answers without them, and counts
/// as checked exactly the keys the seed chooses; a shard of one key (cut in two pieces on
/// two engines) is checked whole; and a search that disagrees ends the count with
/// `Searched`, naming the key and both counts, instead of an answer.
#[test]
fn checked_keys_agree_and_a_disagreeing_search_ends_the_count() {
    let n = 16;
    let shard = Shard { index: 2, count: 9 };
    let plain = |shard| {
        let pool = Pool::new(2);
        let options = CountOptions {
            threads: 2,
            ..CountOptions::default()
        };
        let problem = crate::Problem::new(n, &[], false, shard).unwrap();
        wait(|done| crate::count(&problem, options, &pool, done))
            .unwrap()
            .unwrap()
    };
    let held = {
        let mut keys = Vec::new();
        keys::shard_keys_into(n, n as usize, shard, &mut keys);
        keys
    };
    let recount = Recount {
        fraction: 0.1,
        seed: 11,
        method: RecountMethod::Search,
    };
    let chosen_keys = held.iter().filter(|key| chosen(key, recount)).count() as u64;
    assert!(chosen_keys > 0, "of {}", held.len());
    assert_eq!(count_checked(shard, 0.1), (Ok(plain(shard)), chosen_keys));

    // Part 20 of 4,000 is one key (the first 16 parts are turn-fixed searches).
    let one = Shard {
        index: 20,
        count: 4_000,
    };
    assert_eq!(keys_held(n, one), 1);
    assert_eq!(count_checked(one, 1.0), (Ok(plain(one)), 1));

    SEARCH_FAULT.store(1, Ordering::Relaxed);
    let (got, _) = count_checked(one, 1.0);
    SEARCH_FAULT.store(0, Ordering::Relaxed);
    let Err(CountError::Searched {
        top,
        middle,
        joined,
        searched,
        ..
    }) = got
    else {
        panic!("{got:?}");
    };
    assert!(searched > joined, "{searched} against {joined}");
    assert_eq!((top.count_ones(), middle), (n / 2, None), "{top:#b}");
}
