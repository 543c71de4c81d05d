//! The join against OEIS, the naive oracle and the definitions: every tier this CPU has,
//! shards, keys, the sieve's sampling and weights, cancellation.

use super::super::subproblem::Subproblem;
use super::super::{CountOptions, Progress, Recount};
use super::fixed::turn_fixed_from;
use super::keys::{Key, subsets};
use super::memory::Allowance;
use super::sieve::{LONG_BLOCK, LONG_SAMPLE, Piece, SAMPLE, Sieve, density, leaf};
use super::tables::{Join, build_steps};
use super::wide::KeyBands;
use super::word::{BALANCE_SHIFT, BAND_BIAS};
use super::work::Work;
use super::{Kind, MAX, Part, parts};
use crate::Shard;
use crate::counts::CountError;
use crate::oeis::{A000170, A002562};
use crate::pool::{Pool, wait};
use crate::simd::{Tier, TierKind, tier, tiers_to_test};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    for key in Join::keys(n)
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

/// The parts of a count of `shard` of size `n` with these options, made on a pool of one.
fn parts_now(n: u32, shard: Shard, options: &CountOptions) -> Result<Vec<Part>, CountError> {
    let pool = Pool::new(1);
    let on = pool.clone();
    let options = options.clone();
    wait(|done| pool.spawn(move || parts(n, shard, &options, &on, done))).expect("parts")
}

/// The tables a count's key parts share, if it has any.
fn tables_of(parts: &[Part]) -> Option<*const super::shared::Tables> {
    parts.iter().find_map(|part| match &part.0 {
        Kind::Key(tables, ..) => Some(Arc::as_ptr(tables)),
        Kind::Turns(..) => None,
    })
}

#[test]
fn a_raised_flag_stops_the_tables() {
    let raised = AtomicBool::new(true);
    assert!(matches!(
        Join::new(16, &raised, &|| {}),
        Err(CountError::Cancelled)
    ));
    assert!(Join::new(16, &AtomicBool::new(false), &|| {}).is_ok());
}

/// Counts of one size running at once share one set of tables, however many shards they
/// are; a shard that holds no key builds none and plans no building steps.
#[test]
fn counts_of_one_size_share_the_tables_and_an_empty_shard_builds_none() {
    let options = CountOptions::default();
    let whole = parts_now(17, Shard::WHOLE, &options).unwrap();
    let shard = parts_now(
        17,
        Shard {
            index: 5,
            count: 64,
        },
        &options,
    )
    .unwrap();
    let (a, b) = (tables_of(&whole), tables_of(&shard));
    assert!(a.is_some() && a == b, "one set of tables for both");
    assert!(super::shared::alive(17));
    drop((whole, shard));
    assert!(!super::shared::alive(17), "freed with the last count");
    // Keys are numbered after the 17 turn-fixed parts: a shard past them all has none.
    let progress = Arc::new(Progress::default());
    let empty = CountOptions {
        progress: progress.clone(),
        ..CountOptions::default()
    };
    let none = parts_now(
        17,
        Shard {
            index: 999_999,
            count: 1_000_000,
        },
        &empty,
    )
    .unwrap();
    assert!(none.is_empty());
    assert!(tables_of(&none).is_none());
    assert_eq!(
        progress.total.load(Ordering::Relaxed),
        0,
        "no building steps"
    );
    assert!(!super::shared::alive(17), "no tables built");
}

/// A key's two pieces add up to its count on the tables' path and on the wide path, each
/// piece's lists in chunks of any size (the cut's bit does not depend on them: the pieces
/// are counted in different chunks here); and for keys with many pairs the cut shares them
/// out rather than leaving them to one side.
#[test]
fn a_keys_two_pieces_add_up_to_the_key_on_both_paths() {
    let (tier, cancel) = (tier(), AtomicBool::new(false));
    let joins = [
        (16, Join::new(16, &cancel, &|| {}).unwrap(), None),
        (17, Join::new(17, &cancel, &|| {}).unwrap(), None),
        (
            16,
            Join::wide(16, 100),
            Some(Join::wide(16, super::wide::CHUNK)),
        ),
        (
            17,
            Join::wide(17, super::wide::CHUNK),
            Some(Join::wide(17, 1 << 10)),
        ),
    ];
    for (n, join, other) in &joins {
        let other = other.as_ref().unwrap_or(join);
        let mut work = Work::new(usize::MAX);
        let mut shared = 0;
        for key in Join::keys(*n).iter().step_by(53) {
            let mut count = |join: &Join, piece| {
                join.pairs_tallied(key, piece, tier, &cancel, &mut work, &mut |_| ())
                    .unwrap()
            };
            let whole = count(join, Piece::Whole);
            let (with, without) = (count(join, Piece::With), count(other, Piece::Without));
            assert_eq!(with + without, whole, "n = {n}, {key:?}");
            if whole > 1000 {
                assert!(
                    with > 0 && without > 0,
                    "n = {n}, {key:?}: {with} + {without}"
                );
                shared += 1;
            }
        }
        assert!(shared > 0, "n = {n}: no key with many pairs");
    }
}

/// A shard with fewer keys than engines cuts each in two pieces, one part each, so that an
/// engine that would have no key has work; on one engine, or with a key per engine, it
/// does not; and the count is the same either way.
#[test]
fn a_shard_of_fewer_keys_than_engines_cuts_them_in_two() {
    let n = 16;
    let one = Shard {
        index: n + 100,
        count: 1 << 20,
    };
    let three = Shard {
        index: n + 100,
        count: (Join::key_count(n) as u32 + n) / 3 + 1,
    };
    assert_eq!(super::keys_held(n, one), 1);
    assert_eq!(super::keys_held(n, three), 3);
    let pieces = |shard: Shard, threads| -> Vec<Piece> {
        let options = CountOptions {
            threads,
            ..CountOptions::default()
        };
        let parts = parts_now(n, shard, &options).unwrap();
        parts
            .iter()
            .filter_map(|part| match &part.0 {
                Kind::Key(_, _, piece, ..) => Some(*piece),
                Kind::Turns(..) => None,
            })
            .collect()
    };
    assert_eq!(pieces(one, 1), [Piece::Whole]);
    assert_eq!(pieces(one, 2), [Piece::Without, Piece::With]);
    let sides = [[Piece::Without; 3], [Piece::With; 3]].concat();
    assert_eq!(pieces(three, 4), sides);
    assert_eq!(pieces(three, 3), [Piece::Whole; 3]);
    assert_eq!(pieces(three, 1), [Piece::Whole; 3]);
    let count = |shard: Shard, threads: usize| {
        let pool = Pool::new(threads);
        let options = CountOptions {
            threads,
            ..CountOptions::default()
        };
        let problem = crate::Problem::new(n, &[], false, shard).unwrap();
        wait(|done| crate::count(&problem, options, &pool, done))
            .unwrap()
            .unwrap()
    };
    for shard in [one, three] {
        let alone = count(shard, 1);
        assert!(alone.solutions > 0);
        assert_eq!(count(shard, 2), alone, "{shard:?}");
        assert_eq!(count(shard, 4), alone, "{shard:?}");
    }
}

/// How many keys a shard holds agrees with the keys it is given, and the count of keys
/// with the whole list.
#[test]
fn a_shard_holds_as_many_keys_as_it_is_given() {
    for n in [16u32, 17] {
        let count = Join::keys(n).len();
        assert_eq!(Join::key_count(n), count, "n = {n}");
        for parts in [
            1,
            2,
            7,
            count as u32,
            count as u32 + n,
            count as u32 + n + 3,
            1 << 20,
        ] {
            for index in [0, 1, n - 1, n, n + 1, parts.saturating_sub(1), parts / 2] {
                if index >= parts {
                    continue;
                }
                let shard = Shard {
                    index,
                    count: parts,
                };
                let given = Join::shard_keys(n, n as usize, shard).len();
                assert_eq!(
                    super::keys_held(n, shard),
                    given,
                    "n = {n}, {index}/{parts}"
                );
            }
        }
    }
}

/// A key whose two lists and the room to sort them do not fit its engine's allowance ends
/// with `OutOfMemory`, having allocated no more than it; one whose lists fit but whose sieve
/// has next to no room left counts the same as with all the room it wants.
#[test]
fn lists_past_the_allowance_are_out_of_memory_and_a_tight_sieve_counts_the_same() {
    let join = Join::new(16, &AtomicBool::new(false), &|| {}).unwrap();
    let mut room = Work::new(usize::MAX);
    let (key, pairs) = Join::keys(16)
        .into_iter()
        .map(|key| {
            let pairs = join.pairs(&key, tier(), &AtomicBool::new(false), &mut room);
            (key, pairs.unwrap())
        })
        .find(|&(_, pairs)| pairs > 1000)
        .expect("a key with pairs");
    let lists = 8 * (room.tops.len() + room.bottoms.len());
    for allowance in [0, 64, lists / 2] {
        let mut work = Work::new(allowance);
        let got = join.pairs(&key, tier(), &AtomicBool::new(false), &mut work);
        assert!(
            matches!(got, Err(CountError::OutOfMemory { .. })),
            "{allowance}: {got:?}"
        );
        assert!(work.bytes() <= allowance, "{allowance}: {}", work.bytes());
    }
    let lists = 8 * (room.tops.capacity() + room.bottoms.capacity() + room.scratch.capacity());
    for tight in [lists + 64, lists + 4096] {
        let mut work = Work::new(tight);
        let got = join.pairs(&key, tier(), &AtomicBool::new(false), &mut work);
        assert_eq!(got, Ok(pairs), "{tight}");
        assert!(work.bytes() <= tight);
    }
}

#[test]
fn join_keys_cover_every_column_split_once() {
    // Weighted, the keys stand for every (middle, top columns) pair exactly once, and come
    // in increasing order of (middle, top): the order shards are cut from.
    for n in 4..=20u32 {
        let m = n / 2;
        let keys = Join::keys(n);
        let order: Vec<_> = keys.iter().map(|k| (k.middle, k.top)).collect();
        assert!(order.is_sorted_by(|a, b| a < b), "n = {n}");
        let total: u64 = keys.iter().map(|k| k.weight).sum();
        let choose = |a: u64, b: u64| (0..b).fold(1u64, |c, i| c * (a - i) / (i + 1));
        let expected = if n.is_multiple_of(2) {
            choose(u64::from(n), u64::from(m))
        } else {
            u64::from(n) * choose(u64::from(n) - 1, u64::from(m))
        };
        assert_eq!(total, expected, "n = {n}");
    }
}

/// A shard's keys are those of the whole list whose place, after the list's offset, the
/// shard holds: picked by place (middle queens left of the centre) or by walking (the rest).
#[test]
fn a_shards_keys_are_its_places_in_the_whole_list() {
    for n in 4..=21u32 {
        let keys = Join::keys(n);
        for (offset, index, count) in [
            (0, 0, 1),
            (n as usize, 3, 7),
            (5, 0, 256),
            (n as usize, 255, 256),
            (1, 2, 2),
            (0, 9, 0),
        ] {
            let shard = Shard { index, count };
            let expected: Vec<_> = keys
                .iter()
                .enumerate()
                .filter(|&(at, _)| shard.holds(offset + at))
                .map(|(_, &key)| key)
                .collect();
            assert_eq!(
                Join::shard_keys(n, offset, shard),
                expected,
                "n = {n}, {offset}, {shard:?}"
            );
        }
    }
}

#[test]
fn the_sampled_bit_counts_match_on_every_tier() {
    let tiers = tiers_to_test("the_sampled_bit_counts_match_on_every_tier");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in [1usize, 7, 31, 32, 33, 100, 1000, 4095, 4096, 5000, 100_000] {
        let words: Vec<u64> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            })
            .collect();
        let size = if len >= LONG_BLOCK {
            LONG_SAMPLE
        } else {
            SAMPLE
        };
        let step = (len / size).max(1);
        let mut expected = [0u8; 64];
        for &word in words.iter().step_by(step).take(size) {
            for (bit, count) in expected.iter_mut().enumerate().take(BALANCE_SHIFT as usize) {
                *count += u8::from(word >> bit & 1 == 1);
            }
        }
        for &tier in &tiers {
            assert_eq!(
                density(&words, (1 << BALANCE_SHIFT) - 1, tier),
                expected,
                "{len} words, {tier:?}"
            );
        }
    }
}

#[test]
fn the_blocks_count_disjoint_pairs_like_the_definition() {
    // Random words with random balances, every tier, the weighted sieve against the
    // definition: words of 40 bits, and words of 30 bits spread up to bit 39, which the
    // AVX-512 and AVX2 tiers narrow to 32 bits for their pair tests (a narrowing that kept only the
    // low 32 bits would miss bits 32 to 39).
    let tiers = tiers_to_test("the_blocks_count_disjoint_pairs_like_the_definition");
    let spread: u64 = (0..40)
        .filter(|bit| bit % 8 != 3 && bit % 8 != 6)
        .map(|bit| 1 << bit)
        .sum();
    assert_eq!(spread.count_ones(), 30);
    for (field, narrowed) in [(0xff_ffff_ffffu64, false), (spread, true)] {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Sparse words, so that some pairs are disjoint; balances -5..=5 in their fields.
        let mut word = |shift: u32| {
            let bits = next();
            let balance = 2 * BAND_BIAS as u64 - 5 + next() % 11;
            (bits & (bits >> 3) & (bits >> 6) & field) | (balance << shift)
        };
        // Long enough that every tier splits them before its pair tests.
        let mut xs: Vec<u64> = (0..1517).map(|_| word(BALANCE_SHIFT)).collect();
        let mut ys: Vec<u64> = (0..1389).map(|_| word(BALANCE_SHIFT + 8)).collect();
        let disjoint = xs
            .iter()
            .map(|&x| ys.iter().filter(|&&y| x & y == 0).count() as u64)
            .sum::<u64>();
        assert!(disjoint > 0);
        for &tier in &tiers {
            assert_eq!(leaf(&xs, &ys, tier), disjoint, "{}", tier.name());
        }
        xs.sort_unstable_by_key(|&x| x >> BALANCE_SHIFT);
        ys.sort_unstable_by_key(|&y| y >> (BALANCE_SHIFT + 8));
        for middle in [-1, 0, 1] {
            let weight = |x: u64, y: u64| {
                let sum = ((x >> BALANCE_SHIFT) & 0xff) as i32 + (y >> (BALANCE_SHIFT + 8)) as i32
                    - 4 * BAND_BIAS
                    + middle;
                u64::from(sum >= 0) + u64::from(sum > 0)
            };
            let expected = xs
                .iter()
                .map(|&x| {
                    ys.iter()
                        .filter(|&&y| x & y == 0)
                        .map(|&y| weight(x, y))
                        .sum::<u64>()
                })
                .sum::<u64>();
            assert!(expected > 0);
            for &tier in &tiers {
                // The blocks' pair tests on narrowed words, where the tier narrows them.
                let narrow = Sieve::new(middle, tier).weighted_narrowed(&xs, &ys);
                if tier.kind() == TierKind::Avx512 || tier.fast_pext() {
                    assert_eq!(narrow, narrowed.then_some(expected), "{}", tier.name());
                } else {
                    assert_eq!(narrow, None, "{}", tier.name());
                }
                // With all the room it wants, with too little for some splits, and with
                // none (every block counted in halves down to pair tests): the same count.
                // Where the tier narrows, the spread words' splits work on narrow words
                // from the top (`narrow.rs`), given the room.
                for room in [usize::MAX, 8 * (xs.len() + ys.len()), 0] {
                    let mut allowance = Allowance::new(room);
                    let mut sieve = Sieve::new(middle, tier);
                    assert_eq!(
                        sieve.count(&xs, &ys, 0, &AtomicBool::new(false), &mut allowance),
                        expected,
                        "{}, {middle}, room {room}",
                        tier.name()
                    );
                    if narrowed && tier.fast_pext() && room == usize::MAX {
                        assert!(sieve.narrowed_bytes() > 0, "{}", tier.name());
                    }
                }
            }
        }
    }
}

#[test]
fn a_key_stops_when_cancelled() {
    let join = Join::new(14, &AtomicBool::new(false), &|| {}).unwrap();
    let key = Join::keys(14)[0];
    let cancel = AtomicBool::new(true);
    for tier in tiers_to_test("a_key_stops_when_cancelled") {
        assert_eq!(
            join.pairs(&key, tier, &cancel, &mut Work::new(usize::MAX)),
            Err(CountError::Cancelled),
            "{}",
            tier.name()
        );
    }
}

#[test]
fn building_the_tables_moves_progress_and_plans_every_part() {
    for shard in [Shard::WHOLE, Shard { index: 3, count: 7 }] {
        let progress = Arc::new(Progress::default());
        let options = CountOptions {
            progress: progress.clone(),
            ..CountOptions::default()
        };
        let made = parts_now(16, shard, &options).unwrap();
        let steps = build_steps(16);
        assert_eq!(progress.done.load(Ordering::Relaxed), steps, "{shard:?}");
        let total = progress.total.load(Ordering::Relaxed);
        let planned: u64 = made.iter().map(|part| part.steps(16)).sum();
        assert_eq!(total, steps + planned, "{shard:?}");
        assert!(
            planned > made.len() as u64,
            "turn-fixed parts tick: {shard:?}"
        );
    }
}

/// Cancelling at any step of the tables' build (the passes over the placements and the
/// arrays' fill alike) ends it there, as `Cancelled`, with no step after it.
#[test]
fn cancelling_the_build_at_any_step_stops_it_there() {
    for at in 1..build_steps(16) {
        let cancel = AtomicBool::new(false);
        let ticks = std::sync::atomic::AtomicU64::new(0);
        let tick = || {
            if ticks.fetch_add(1, Ordering::Relaxed) + 1 == at {
                cancel.store(true, Ordering::Relaxed);
            }
        };
        let built = Join::new(16, &cancel, &tick);
        assert!(matches!(built, Err(CountError::Cancelled)), "step {at}");
        assert_eq!(ticks.load(Ordering::Relaxed), at, "steps after step {at}");
    }
}

/// The figures behind the memory model, measured (run by hand:
/// `cargo test -p queens-solver --lib -- --ignored --nocapture memory_figures`): per n, the tables' build's
/// peak bytes, the bound on a key's lists, and the lists and sieve of sampled keys.
#[test]
#[ignore]
fn memory_figures() {
    let var = |name: &str, or: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(or)
    };
    let (from, to, sample) = (
        var("QUEENS_FROM", 16),
        var("QUEENS_TO", MAX as usize),
        var("QUEENS_SAMPLE", 24),
    );
    for n in from as u32..=to as u32 {
        let join = Join::new(n, &AtomicBool::new(false), &|| {}).unwrap();
        let bound = join.list_bound();
        let keys = Join::keys(n);
        let mut work = Work::new(usize::MAX);
        let (mut lists, mut most) = (0, 0);
        let step = (keys.len() / sample).max(1);
        for key in keys.iter().step_by(step) {
            join.pairs(key, tier(), &AtomicBool::new(false), &mut work)
                .unwrap();
            lists = lists.max(work.tops.len().max(work.bottoms.len()));
            most = most.max(work.bytes());
        }
        println!(
            "n = {n}: tables' peak {} bytes; list bound {bound} words; sampled {} keys: longest list {lists} words, work {most} bytes",
            join.peak_bytes,
            keys.len().div_ceil(step)
        );
    }
}

/// Added to every recount's answer by [`super::key_pairs`] in test builds: a fault the
/// recount must catch. Only the recount test sets it (no other test recounts).
pub(super) static RECOUNT_FAULT: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// A count told to recount keys counts each chosen key again in the other tier: every key
/// with fraction 1, about half with 0.5 (the same ones for the same seed), none with 0, the
/// answer unchanged; and a recount that disagrees ends the count with `Recounted`, naming
/// the key and both tiers, instead of an answer.
#[test]
fn recounted_keys_agree_and_a_disagreeing_recount_ends_the_count() {
    let (n, shard) = (16, Shard { index: 1, count: 3 });
    let count = |recount: Option<Recount>| {
        let pool = Pool::new(2);
        let options = CountOptions {
            threads: 2,
            recount,
            ..CountOptions::default()
        };
        let progress = options.progress.clone();
        let problem = crate::Problem::new(n, &[], false, shard).unwrap();
        let got = wait(|done| crate::count(&problem, options, &pool, done)).unwrap();
        (got, progress.recounted.load(Ordering::Relaxed))
    };
    let keys = super::keys_held(n, shard) as u64;
    let (plain, none) = count(None);
    let plain = plain.unwrap();
    assert_eq!(none, 0);
    let all = Recount {
        fraction: 1.0,
        seed: 7,
    };
    assert_eq!(count(Some(all)), (Ok(plain), keys));
    let half = Recount {
        fraction: 0.5,
        seed: 7,
    };
    let (got, some) = count(Some(half));
    assert_eq!(got, Ok(plain));
    assert!(keys / 4 < some && some < 3 * keys / 4, "{some} of {keys}");
    assert_eq!(count(Some(half)).1, some, "the same seed, the same keys");
    let zero = Recount {
        fraction: 0.0,
        seed: 7,
    };
    assert_eq!(count(Some(zero)), (Ok(plain), 0));

    RECOUNT_FAULT.store(1, Ordering::Relaxed);
    let (got, _) = count(Some(all));
    RECOUNT_FAULT.store(0, Ordering::Relaxed);
    let Err(CountError::Recounted {
        top,
        first,
        tier: first_tier,
        again,
        other,
    }) = got
    else {
        panic!("{got:?}");
    };
    assert_eq!(again, first + 1);
    if Tier::best().kind() != crate::TierKind::Portable {
        assert_ne!(first_tier, other, "another tier");
    }
    assert_eq!(top.count_ones(), n / 2, "a key's top half: {top:#b}");
    eprintln!("recounts: {some} of {keys} keys at 0.5; in {first_tier} then {other}");
}

/// The solutions of size `n` whose row `r` has its queen on a column of the mask `rows[r]`,
/// found by a plain backtracking search, each weighted as the sieve weighs it: 2 if its
/// balance (+1 per queen strictly between the long diagonals above or below the centre, -1
/// left or right of it) is positive, 1 if it is zero, 0 if negative.
fn weighted_search(n: u32, rows: &[u32]) -> u64 {
    fn square(n: u32, row: u32, column: u32) -> i32 {
        let (main, anti) = (
            row as i32 - column as i32,
            (row + column) as i32 - (n as i32 - 1),
        );
        match (main.signum(), anti.signum()) {
            (0, _) | (_, 0) => 0,
            (a, b) if a == b => 1,
            _ => -1,
        }
    }
    fn from(n: u32, rows: &[u32], row: u32, taken: [u32; 3], balance: i32) -> u64 {
        if row == n {
            return match balance.signum() {
                1 => 2,
                0 => 1,
                _ => 0,
            };
        }
        let [columns, ld, rd] = taken;
        let full = (1u32 << n) - 1;
        let mut free = rows[row as usize] & full & !(columns | ld | rd);
        let mut total = 0;
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            let next = [columns | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1];
            let here = square(n, row, bit.trailing_zeros());
            total += from(n, rows, row + 1, next, balance + here);
        }
        total
    }
    assert_eq!(rows.len(), n as usize);
    from(n, rows, 0, [0; 3], 0)
}

/// The orders of `columns` (each a head's rows' columns), in lexicographic order of places.
fn orders(columns: &[u32]) -> Vec<Vec<u32>> {
    if columns.is_empty() {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for (at, &column) in columns.iter().enumerate() {
        let mut rest = columns.to_vec();
        rest.remove(at);
        for mut order in orders(&rest) {
            order.insert(0, column);
            all.push(order);
        }
    }
    all
}

/// The weighted pairs of the whole of `key` (of size `n`), as the join counts them in each
/// of `tiers`, checked against [`weighted_search`] with the rows' columns restricted to the
/// key's halves and its middle queen.
fn check_whole_key(join: &Join, key: &Key, tiers: &[Tier]) {
    let (n, m) = (join.n, join.m as usize);
    let mut rows = vec![key.top; m];
    rows.extend(key.middle.map(|q| 1 << q));
    rows.extend(vec![key.bottom; m]);
    let searched = weighted_search(n, &rows);
    for &tier in tiers {
        let mut work = Work::new(usize::MAX);
        let got = join.pairs(key, tier, &AtomicBool::new(false), &mut work);
        assert_eq!(got.unwrap(), searched, "{key:?}, {}", tier.name());
    }
}

/// The keys of n = 25 that [`heads_of_keys_of_25_match_a_search`] checks: their places in
/// the list of keys (middle queen on column 0, 3 and 12, the centre).
const KEYS_OF_25: [usize; 3] = [1_234, 5_000_000, 16_500_000];

/// The key of n = 25 at `place` in the list of keys.
fn key_of_25(place: usize) -> Key {
    let shard = Shard {
        index: place as u32,
        count: 1 << 25,
    };
    Join::shard_keys(25, 0, shard)[0]
}

/// A part of n = 25, the largest board the join's tables take, against a plain search: for
/// keys of three middle queens (left of the centre and on it), the weighted pairs of the
/// top halves of one head placement and every bottom half of the key, as the join counts
/// them (the tails' table, the half words' kernels, the bottoms' mirroring, the sort and
/// the sieve's weights, on every tier), against the same solutions found by backtracking
/// with the rows' columns restricted to the head's, the key's and the middle queen's; and
/// the whole of the first key (its middle queen on column 0 leaves it a few hundred
/// solutions). A whole key nearer the centre has up to hundreds of millions, too many for a
/// test's search: those are `whole_keys_of_25_match_a_search`'s, run by hand.
#[test]
fn heads_of_keys_of_25_match_a_search() {
    let n = 25u32;
    let join = Join::new(n, &AtomicBool::new(false), &|| {}).unwrap();
    let tiers = tiers_to_test("heads_of_keys_of_25_match_a_search");
    check_whole_key(&join, &key_of_25(KEYS_OF_25[0]), &tiers);
    for place in KEYS_OF_25 {
        let key = key_of_25(place);
        let middle = key.middle.expect("odd boards have a middle queen");
        // Heads on the key's top columns, sets in colex order, each in every order of
        // its rows, until two of them have solutions.
        let places: Vec<u32> = (0..32).filter(|c| key.top >> c & 1 != 0).collect();
        let mut checked = 0;
        'sets: for picks in subsets(12, 6) {
            let columns: Vec<u32> = (0..12)
                .filter(|p| picks >> p & 1 != 0)
                .map(|p| places[p as usize])
                .collect();
            for order in orders(&columns) {
                let Some((head, first)) = join.head_of(&order) else {
                    continue;
                };
                let table = join.heads.get(first);
                assert!(
                    table.chunks_exact(2).any(|entry| entry == head),
                    "{order:?}"
                );
                let mut rows: Vec<u32> = order.iter().map(|&c| 1 << c).collect();
                rows.extend([key.top & !first; 6]);
                rows.push(1 << middle);
                rows.extend([key.bottom; 12]);
                let searched = weighted_search(n, &rows);
                if searched == 0 {
                    continue;
                }
                for &tier in &tiers {
                    let mut work = Work::new(usize::MAX);
                    let got = join.pairs_of_head(&key, head, first, tier, &mut work);
                    let name = tier.name();
                    assert_eq!(got.unwrap(), searched, "{key:?}, head {order:?}, {name}");
                }
                checked += 1;
                if checked == 2 {
                    break 'sets;
                }
            }
        }
        assert_eq!(checked, 2, "{key:?}: two heads with solutions");
    }
}

/// The whole keys of [`KEYS_OF_25`] against a plain search, on every tier (run by hand:
/// `cargo test -p queens-solver --lib -- --ignored whole_keys_of_25`; the searches take
/// minutes).
#[test]
#[ignore]
fn whole_keys_of_25_match_a_search() {
    let join = Join::new(25, &AtomicBool::new(false), &|| {}).unwrap();
    let tiers = tiers_to_test("whole_keys_of_25_match_a_search");
    for place in KEYS_OF_25 {
        check_whole_key(&join, &key_of_25(place), &tiers);
    }
}

/// The wide path's total for size `n` on the calling thread, its lists in chunks of at most
/// `chunk` words, the pair tests in `tier`.
fn wide_total(n: u32, chunk: usize, tier: Tier) -> u64 {
    let join = Join::wide(n, chunk);
    let mut work = Work::new(usize::MAX);
    Join::keys(n)
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
                wide_total(n, super::wide::CHUNK, tier),
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
        let chunk = if n < 20 { 1 << 12 } else { super::wide::CHUNK };
        let wide = Join::wide(n, chunk);
        let (mut a, mut b) = (Work::new(usize::MAX), Work::new(usize::MAX));
        let cancel = AtomicBool::new(false);
        for key in Join::keys(n).iter().step_by(step) {
            let from_tables = tables.pairs(key, tier, &cancel, &mut a).unwrap();
            let searched = wide.pairs(key, tier, &cancel, &mut b).unwrap();
            assert_eq!(searched, from_tables, "n = {n}, {key:?}");
        }
    }
}

/// On the wide path, a key whose bands do not fit what its engine's allowance has left (the
/// sieve and the sort kept room from an earlier key) takes that room back and counts right,
/// within the allowance: each key is counted alone first with all the room it wants, then
/// the key with the largest bands after each key with smaller lists, in an allowance of what
/// the former took alone.
#[test]
fn a_wide_keys_bands_take_back_the_room_the_sieve_kept() {
    let (n, tier, cancel) = (17, tier(), AtomicBool::new(false));
    let join = Join::wide(n, super::wide::CHUNK);
    let band_bytes = |work: &Work| work.bands.iter().map(KeyBands::bytes).sum::<usize>();
    let list_bytes = |work: &Work| 8 * (work.tops.capacity() + work.bottoms.capacity());
    // Per key: its pairs, its bands' bytes, its lists' bytes and all of its bytes.
    let alone: Vec<(Key, u64, usize, usize, usize)> = Join::keys(n)
        .into_iter()
        .step_by(5)
        .map(|key| {
            let mut work = Work::new(usize::MAX);
            let pairs = join.pairs(&key, tier, &cancel, &mut work).unwrap();
            let bytes = (band_bytes(&work), list_bytes(&work), work.bytes());
            (key, pairs, bytes.0, bytes.1, bytes.2)
        })
        .collect();
    let &(second, pairs, bands, lists, limit) = alone.iter().max_by_key(|a| a.2).unwrap();
    let mut retried = 0;
    for &(first, first_pairs, _, first_lists, _) in &alone {
        if first_lists > lists {
            continue;
        }
        let mut work = Work::new(limit);
        assert_eq!(
            join.pairs(&first, tier, &cancel, &mut work),
            Ok(first_pairs)
        );
        // Whether the second key's bands find room without what the first key's sieve and
        // sort kept.
        if work.bytes() + bands.saturating_sub(band_bytes(&work)) <= limit {
            continue;
        }
        let got = join.pairs(&second, tier, &cancel, &mut work);
        assert_eq!(got, Ok(pairs), "{second:?} after {first:?}");
        assert!(work.bytes() <= limit, "{} > {limit}", work.bytes());
        retried += 1;
    }
    assert!(retried > 0, "no key left too little room for the bands");
    eprintln!("{retried} of {} keys left too little room", alone.len());
}

/// The key of size `n` at `place` in the list of keys.
fn key_at(n: u32, place: usize) -> Key {
    let shard = Shard {
        index: place as u32,
        count: 1 << 30,
    };
    Join::shard_keys(n, 0, shard)[0]
}

/// Up to `limit` solutions of size `n` whose row `r` has its queen on a column of the mask
/// `rows[r]`, each as its rows' columns, found by a plain backtracking search.
fn solutions_within(n: u32, rows: &[u32], limit: usize) -> Vec<Vec<u32>> {
    fn from(
        n: u32,
        rows: &[u32],
        placed: &mut Vec<u32>,
        taken: [u32; 3],
        out: &mut Vec<Vec<u32>>,
        limit: usize,
    ) {
        if out.len() == limit {
            return;
        }
        let row = placed.len();
        if row == n as usize {
            out.push(placed.clone());
            return;
        }
        let [columns, ld, rd] = taken;
        let full = (1u32 << n) - 1;
        let mut free = rows[row] & full & !(columns | ld | rd);
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            placed.push(bit.trailing_zeros());
            from(
                n,
                rows,
                placed,
                [columns | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1],
                out,
                limit,
            );
            placed.pop();
        }
    }
    let mut out = Vec::new();
    from(n, rows, &mut Vec::new(), [0; 3], &mut out, limit);
    out
}

/// Parts of n = 26, 27 and 28 on the wide path against a plain search: for two keys of each
/// size (a third and two thirds along their list), the weighted pairs of the top halves
/// whose first six rows are one placement and the bottom halves whose last six rows are one
/// placement, as the wide path counts them (its bands, words, mirror, sort and sieve, on
/// every tier), against the solutions found by backtracking with those rows fixed and the
/// others' columns restricted to the key's halves (and its middle queen); the placements
/// taken from the key's first solutions, two parts with weighted solutions per key. And a
/// whole key of n = 27 (its middle queen on column 0) in chunks of 65,536 words.
#[test]
fn parts_of_26_to_28_match_a_search() {
    let tiers = tiers_to_test("parts_of_26_to_28_match_a_search");
    let whole = Join::wide(27, 1 << 16);
    check_whole_key(&whole, &key_at(27, 1_234), &tiers);
    for n in [26u32, 27, 28] {
        let join = Join::wide(n, super::wide::CHUNK);
        let m = (n / 2) as usize;
        let keys = Join::key_count(n);
        for place in [keys / 3, 2 * keys / 3] {
            let key = key_at(n, place);
            let mut rows = vec![key.top; m];
            rows.extend(key.middle.map(|q| 1 << q));
            rows.extend(vec![key.bottom; m]);
            let mut checked: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
            for solution in solutions_within(n, &rows, 2_000) {
                let top = solution[..6].to_vec();
                let bottom: Vec<u32> = solution.iter().rev().take(6).copied().collect();
                if checked.iter().any(|(t, b)| *t == top && *b == bottom) {
                    continue;
                }
                let taken = |rows: &[u32]| rows.iter().fold(0, |s, c| s | 1 << c);
                let mut fixed: Vec<u32> = top.iter().map(|&c| 1 << c).collect();
                fixed.extend(vec![key.top & !taken(&top); m - 6]);
                fixed.extend(key.middle.map(|q| 1 << q));
                fixed.extend(vec![key.bottom & !taken(&bottom); m - 6]);
                fixed.extend(bottom.iter().rev().map(|&c| 1 << c));
                let searched = weighted_search(n, &fixed);
                if searched == 0 {
                    continue;
                }
                for &tier in &tiers {
                    let got = join.wide_pairs_from(&key, &top, &bottom, tier).unwrap();
                    assert_eq!(got, searched, "{key:?} {top:?} {bottom:?} {}", tier.name());
                }
                checked.push((top, bottom));
                if checked.len() == 2 {
                    break;
                }
            }
            assert_eq!(
                checked.len(),
                2,
                "n = {n}, {key:?}: two parts with solutions"
            );
        }
    }
}
