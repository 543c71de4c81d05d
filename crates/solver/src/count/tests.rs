//! The fast counter against OEIS, the plain search and the naive oracle: every thread count,
//! shard splits, fixed queens, cancellation, overflow.
//!
//! One file of over 500 lines: every test here checks the count through the same helpers
//! (`counted`, `fast`, `plain`, the lanes' `ListFeed`) against the same references.

use super::board::Board;
use super::constellation::{self, symmetries_of};
use super::lanes::{self, LaneSet};
use super::subproblem::Partial;
use super::{CountOptions, Progress, answers_turn_fixed, count};
use crate::geometry::{Symmetry, peaceful};
use crate::naive;
use crate::oeis::{A000170, A002562};
use crate::pool::{Pool, wait};
use crate::search::count as plain_count;
use crate::simd::{Tier, tier, tiers_to_test};
use crate::{CountError, Counts, PartsError, Problem, Shard, Square};
use proptest::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn never() -> AtomicBool {
    AtomicBool::new(false)
}

fn problem(n: u32, fixed: &[Square], shard: Shard) -> Problem {
    Problem::new(n, fixed, false, shard).expect("valid problem")
}

/// Counts `p` through the one entry point on a pool of `threads` threads, lanes on or off,
/// stopped by `cancel`.
fn counted(
    p: &Problem,
    threads: usize,
    lanes: bool,
    cancel: Arc<AtomicBool>,
) -> Result<Counts, CountError> {
    let pool = Pool::new(threads);
    let options = CountOptions {
        threads,
        lanes,
        cancel,
        ..CountOptions::default()
    };
    let progress = options.progress.clone();
    let got = wait(|done| count(p, options, &pool, done)).expect("a result");
    if let Ok(counts) = &got {
        assert_finished(&progress, counts);
    }
    got
}

/// A finished count's progress: every planned step done, and the solutions shown (some of
/// them while their subproblems ran) adding up to the answer.
fn assert_finished(progress: &Progress, counts: &Counts) {
    let total = progress.total.load(Ordering::Relaxed);
    assert_eq!(progress.done.load(Ordering::Relaxed), total, "steps");
    let shown = progress.solutions.load(Ordering::Relaxed);
    assert_eq!(shown, counts.solutions, "solutions shown");
}

/// The count of `p` on `threads` threads with the lanes.
fn fast(p: &Problem, threads: usize) -> Counts {
    counted(p, threads, true, Arc::default()).expect("count")
}

/// The count of `p` by the plain search, the reference.
fn plain(p: &Problem) -> Counts {
    plain_count(p, &never()).expect("count")
}

/// The parts of a split, added up into the whole's counts; each part answers classes or
/// turn-fixed points as [`answers_turn_fixed`] says.
fn sum_of_parts(n: u32, fixed: &[Square], parts: u32, threads: usize) -> Counts {
    let all: Vec<Counts> = (0..parts)
        .map(|index| {
            let p = problem(
                n,
                fixed,
                Shard {
                    index,
                    count: parts,
                },
            );
            let part = fast(&p, threads);
            let turns = answers_turn_fixed(&p);
            assert_eq!(part.turn_fixed.is_some(), turns, "n = {n}, {parts} parts");
            assert_eq!(part.fundamental.is_some(), fixed.is_empty() && !turns);
            part
        })
        .collect();
    Counts::whole(all).expect("the parts of one count")
}

/// Asserts that `got` holds both OEIS counts of the n x n board.
fn assert_oeis(n: u32, got: Counts, what: &str) {
    let i = n as usize - 1;
    assert_eq!(got.solutions, A000170[i], "n = {n}, {what}");
    assert_eq!(got.fundamental, Some(A002562[i]), "n = {n}, {what}");
}

#[test]
fn whole_boards_match_oeis_on_one_and_two_threads() {
    for threads in [1, 2] {
        for n in 1..=16u32 {
            let got = fast(&problem(n, &[], Shard::WHOLE), threads);
            assert_oeis(n, got, &format!("{threads} threads"));
        }
    }
}

/// Count's join path (plain boards from n = 16 on) forced on every
/// smaller board, through the same engines: solutions and classes from fixed points.
fn joined(n: u32, threads: usize, cancel: Arc<AtomicBool>) -> Result<Counts, CountError> {
    let pool = Pool::new(threads);
    let options = CountOptions {
        threads,
        lanes: false,
        cancel,
        ..CountOptions::default()
    };
    let (settings, on) = (options.clone(), pool.clone());
    let parts =
        wait(|done| pool.spawn(move || super::join::parts(n, Shard::WHOLE, &settings, &on, done)))
            .expect("parts")?;
    let progress = options.progress.clone();
    let got = wait(|done| {
        super::start(
            n,
            parts,
            super::Classes::FixedPoints,
            options,
            &pool,
            Box::new(done),
        )
    })
    .expect("a result");
    if let Ok(counts) = &got {
        assert_finished(&progress, counts);
    }
    got
}

#[test]
fn the_join_path_matches_oeis_on_one_and_two_threads_and_stops_when_cancelled() {
    for threads in [1, 2] {
        for n in 4..=16u32 {
            let got = joined(n, threads, Arc::default()).expect("count");
            assert_oeis(n, got, &format!("join path, {threads} threads"));
        }
        let raised = Arc::new(AtomicBool::new(true));
        assert_eq!(joined(14, threads, raised), Err(CountError::Cancelled));
    }
}

/// Counting without lanes (as on a CPU without AVX2) gives the same answers: whole boards,
/// shards, a centre queen (its symmetric path) and fixed queens.
#[test]
fn without_lanes_the_counts_match_too() {
    for threads in [1, 2] {
        for n in 1..=13u32 {
            let got = counted(
                &problem(n, &[], Shard::WHOLE),
                threads,
                false,
                Arc::default(),
            );
            assert_oeis(
                n,
                got.expect("count"),
                &format!("no lanes, {threads} threads"),
            );
        }
    }
    for index in 0..5 {
        let shard = Shard { index, count: 5 };
        let got = counted(&problem(12, &[], shard), 2, false, Arc::default()).expect("count");
        assert_eq!(
            got,
            fast(&problem(12, &[], shard), 2),
            "no lanes, {shard:?}"
        );
    }
    for n in [7u32, 9, 11] {
        let centre = Square {
            row: n / 2,
            column: n / 2,
        };
        let pair = [
            Square { row: 1, column: 2 },
            Square {
                row: 0,
                column: n - 1,
            },
        ];
        for queens in [&[centre][..], &pair] {
            let p = problem(n, queens, Shard::WHOLE);
            let got = counted(&p, 2, false, Arc::default()).expect("count");
            assert_eq!(got, plain(&p), "no lanes: n = {n}, {queens:?}");
        }
    }
}

/// Counts that share one thread take turns (each gives way after its slice while the other
/// waits, lanes and all) and both come out right.
#[test]
fn counts_sharing_a_thread_take_turns_and_agree() {
    let pool = Pool::new(1);
    let started = Instant::now();
    let results: Vec<_> = [16u32, 13]
        .iter()
        .map(|&n| {
            let (tx, rx) = std::sync::mpsc::channel();
            let p = problem(n, &[], Shard::WHOLE);
            count(&p, CountOptions::default(), &pool, move |c| {
                let _ = tx.send((c, started.elapsed()));
            });
            (n, rx)
        })
        .collect();
    let mut finished = Vec::new();
    for (n, rx) in results {
        let (got, at) = rx.recv().expect("a result");
        assert_oeis(n, got.expect("count"), "sharing one thread");
        finished.push(at);
    }
    // n = 13 was queued behind n = 16 yet finished first: they took turns.
    assert!(finished[1] < finished[0], "{finished:?}");
}

#[test]
fn the_single_thread_entry_point_matches_oeis() {
    for n in [6u32, 9, 12] {
        let got = fast(&problem(n, &[], Shard::WHOLE), 1);
        assert_oeis(n, got, "one thread");
    }
}

#[test]
fn shard_parts_add_up_to_oeis() {
    for (n, parts) in [
        (8, 2),
        (8, 3),
        (10, 7),
        (11, 5),
        (12, 16),
        (13, 3),
        (14, 2),
        (15, 4),
        (16, 3),
    ] {
        for threads in [1, 2] {
            let total = sum_of_parts(n, &[], parts, threads);
            assert_oeis(n, total, &format!("{parts} parts"));
        }
    }
}

/// Shard counts in `[lo, hi)` from a fixed-seed generator (splitmix64): the same every run.
fn random_shard_counts(seed: u64, lo: u32, hi: u32, how_many: usize) -> Vec<u32> {
    let mut state = seed;
    (0..how_many)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            lo + ((z ^ (z >> 31)) % u64::from(hi - lo)) as u32
        })
        .collect()
}

#[test]
fn join_shards_add_up_to_oeis_through_their_turn_fixed_points() {
    let mut sixteen = vec![1, 2, 3, 7, 16, 64, 257];
    sixteen.extend(random_shard_counts(16, 2, 1000, 2));
    // Each n = 17 sum costs at least a whole count (about 2 s here): two of them.
    let seventeen = vec![2, 257];
    for (n, counts) in [(16, sixteen), (17, seventeen)] {
        for parts in counts {
            let total = sum_of_parts(n, &[], parts, 2);
            assert_oeis(n, total, &format!("{parts} join shards"));
        }
    }
    // A part on its own never claims classes, and is the same on one thread or two.
    let p = problem(16, &[], Shard { index: 5, count: 9 });
    let part = fast(&p, 1);
    assert_eq!(part.fundamental, None);
    assert!(part.solutions > 0 && part.turn_fixed.is_some(), "{part:?}");
    assert_eq!(fast(&p, 2), part);
}

#[test]
fn more_parts_than_subproblems_still_add_up() {
    // n = 7 has a few dozen constellation orbits; most of 500 parts are empty.
    let total = sum_of_parts(7, &[], 500, 1);
    assert_eq!(total.solutions, 40);
    assert_eq!(total.fundamental, Some(6));
    let fixed = [Square { row: 2, column: 3 }];
    let total = sum_of_parts(8, &fixed, 700, 2);
    assert_eq!(total, plain(&problem(8, &fixed, Shard::WHOLE)));
}

#[test]
fn a_part_is_the_same_every_time() {
    let p = problem(12, &[], Shard { index: 3, count: 7 });
    let first = fast(&p, 2);
    for threads in [1, 2, 3] {
        assert_eq!(fast(&p, threads), first);
    }
}

/// Up to three distinct squares of an n×n board, n from 4 to 10.
fn fixed_query() -> impl Strategy<Value = (u32, Vec<Square>)> {
    (4u32..=10).prop_flat_map(|n| {
        let set = proptest::collection::btree_set((0..n, 0..n), 1..=3).prop_map(|set| {
            set.into_iter()
                .map(|(row, column)| Square { row, column })
                .collect::<Vec<_>>()
        });
        (Just(n), set)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn fixed_queens_match_the_search_and_the_oracle(
        (n, fixed) in fixed_query(),
        parts in 1u32..=9,
    ) {
        let whole = problem(n, &fixed, Shard::WHOLE);
        let expected = plain(&whole);
        prop_assert_eq!(expected.solutions, oracle_count(n, &fixed), "the search itself");
        for threads in [1, 2] {
            prop_assert_eq!(fast(&whole, threads), expected);
        }
        prop_assert_eq!(sum_of_parts(n, &fixed, parts, 2), expected, "{} parts", parts);
    }
}

/// The completions of `fixed` on an n x n board, by the naive oracle.
fn oracle_count(n: u32, fixed: &[Square]) -> u64 {
    naive::answer(n as usize, fixed, false).len() as u64
}

/// `seed` and its images under the symmetries in `group`, without repeats.
fn closure(n: u32, seed: &[Square], group: &[Symmetry]) -> Vec<Square> {
    let mut all: Vec<Square> = Vec::new();
    for &g in group {
        for &q in seed {
            let image = g.apply(n, q);
            if !all.contains(&image) {
                all.push(image);
            }
        }
    }
    all
}

#[test]
fn symmetric_fixed_sets_match_the_search() {
    // A peaceful set with four or more symmetries is a pinwheel: queens closed under the
    // quarter turns, with the centre queen or not on odd boards (mirrors would pair queens
    // in one row). Every pinwheel of one square's orbit, n = 6..12; the plain search is the
    // reference (itself checked against the oracle above), and the oracle too for n <= 10.
    const ROTATIONS: [Symmetry; 4] = [
        Symmetry::ALL[0],
        Symmetry::ALL[3],
        Symmetry::ALL[6],
        Symmetry::ALL[7],
    ];
    let mut with_completions = 0;
    for n in 6..=12u32 {
        let centre = Square {
            row: n / 2,
            column: n / 2,
        };
        for square in 0..n * n {
            let seed = Square {
                row: square / n,
                column: square % n,
            };
            let mut sets = vec![closure(n, &[seed], &ROTATIONS)];
            if n % 2 == 1 && seed != centre {
                sets.push(closure(n, &[seed, centre], &ROTATIONS));
            }
            for fixed in sets {
                if !peaceful(&fixed) {
                    continue;
                }
                assert!(symmetries_of(n, &fixed).len() >= 4, "{fixed:?}");
                let whole = problem(n, &fixed, Shard::WHOLE);
                let expected = plain(&whole);
                if n <= 10 {
                    assert_eq!(expected.solutions, oracle_count(n, &fixed), "{fixed:?}");
                }
                with_completions += usize::from(expected.solutions > 0);
                for threads in [1, 2] {
                    assert_eq!(fast(&whole, threads), expected, "n = {n}, {fixed:?}");
                }
                let parts = 1 + square % 7;
                assert_eq!(
                    sum_of_parts(n, &fixed, parts, 1),
                    expected,
                    "{parts} parts of {fixed:?}"
                );
            }
        }
    }
    assert!(
        with_completions >= 20,
        "only {with_completions} sets with completions"
    );
}

#[test]
fn a_centre_queen_matches_the_search_on_larger_boards() {
    for n in [11u32, 13] {
        let centre = [Square {
            row: n / 2,
            column: n / 2,
        }];
        assert_eq!(symmetries_of(n, &centre).len(), 8);
        let whole = problem(n, &centre, Shard::WHOLE);
        let expected = plain(&whole);
        assert_eq!(fast(&whole, 2), expected, "n = {n}");
        assert_eq!(sum_of_parts(n, &centre, 6, 2), expected, "n = {n} in parts");
    }
    // A set only a half turn maps to itself keeps the plain split, and still agrees.
    let pair = [Square { row: 2, column: 5 }, Square { row: 10, column: 7 }];
    let numbers: Vec<u8> = symmetries_of(13, &pair)
        .iter()
        .map(|g| g.number())
        .collect();
    assert_eq!(numbers, vec![0, 3]);
    let whole = problem(13, &pair, Shard::WHOLE);
    assert_eq!(fast(&whole, 2), plain(&whole));
}

#[test]
fn fixed_queens_on_larger_boards_match_the_search() {
    let cases: [&[Square]; 3] = [
        &[Square { row: 0, column: 0 }],
        &[Square { row: 5, column: 2 }, Square { row: 9, column: 7 }],
        &[Square { row: 11, column: 3 }],
    ];
    for fixed in cases {
        let whole = problem(12, fixed, Shard::WHOLE);
        let expected = plain(&whole);
        assert_eq!(fast(&whole, 2), expected, "{fixed:?}");
        assert_eq!(
            sum_of_parts(12, fixed, 5, 1),
            expected,
            "{fixed:?} in parts"
        );
    }
}

#[test]
fn attacking_or_complete_fixed_sets() {
    let attacking = [Square { row: 1, column: 1 }, Square { row: 3, column: 3 }];
    assert_eq!(fast(&problem(9, &attacking, Shard::WHOLE), 2).solutions, 0);
    let same_row = [Square { row: 4, column: 1 }, Square { row: 4, column: 6 }];
    assert_eq!(fast(&problem(9, &same_row, Shard::WHOLE), 1).solutions, 0);
    // A whole solution of n = 8 given as fixed queens: exactly itself.
    let solution = [0u32, 4, 7, 5, 2, 6, 1, 3];
    let fixed: Vec<Square> = (0..8)
        .map(|row| Square {
            row,
            column: solution[row as usize],
        })
        .collect();
    assert_eq!(fast(&problem(8, &fixed, Shard::WHOLE), 2).solutions, 1);
}

#[test]
fn constellation_orbits_cover_every_border_once() {
    for n in 4..=11u32 {
        let reps = constellation::representatives(n);
        let covered: u64 = reps.iter().map(|c| 8 / c.stabilizer).sum();
        let mut peaceful = 0u64;
        let last = n - 1;
        for [a, b, c, d] in borders(n) {
            let squares = [(0, a), (last, b), (c, 0), (d, last)];
            let ok = squares.iter().enumerate().all(|(i, p)| {
                squares[i + 1..].iter().all(|q| {
                    let (dr, dc) = (p.0.abs_diff(q.0), p.1.abs_diff(q.1));
                    (dr == 0 && dc == 0) || (dr != 0 && dc != 0 && dr != dc)
                })
            });
            peaceful += u64::from(ok);
        }
        assert_eq!(covered, peaceful, "n = {n}");
        for c in &reps {
            // The searched image is still a constellation of the same orbit size.
            let images: Vec<Vec<Square>> = Symmetry::ALL
                .iter()
                .map(|g| {
                    let mut image: Vec<Square> = c.queens.iter().map(|&q| g.apply(n, q)).collect();
                    image.sort();
                    image
                })
                .collect();
            let mut distinct = images.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len() as u64, 8 / c.stabilizer, "n = {n}");
        }
    }
}

/// Every (top column, bottom column, left row, right row) of an n×n board.
fn borders(n: u32) -> impl Iterator<Item = [u32; 4]> {
    (0..n.pow(4)).map(move |i| [i % n, i / n % n, i / n / n % n, i / n / n / n])
}

#[test]
fn a_raised_flag_cancels_every_path() {
    let cancel = Arc::new(AtomicBool::new(true));
    for lanes in [true, false] {
        for threads in [1, 2] {
            for n in [6u32, 12, 16] {
                let p = problem(n, &[], Shard::WHOLE);
                let got = counted(&p, threads, lanes, cancel.clone());
                assert_eq!(got, Err(CountError::Cancelled));
            }
            let fixed = problem(14, &[Square { row: 3, column: 5 }], Shard::WHOLE);
            let got = counted(&fixed, threads, lanes, cancel.clone());
            assert_eq!(got, Err(CountError::Cancelled));
        }
    }
}

#[test]
fn a_flag_raised_mid_count_stops_both_threads_within_a_second() {
    let cancel = Arc::new(AtomicBool::new(false));
    let p = problem(19, &[], Shard::WHOLE);
    let (result, stopping) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| counted(&p, 2, true, cancel.clone()));
        std::thread::sleep(Duration::from_millis(200));
        cancel.store(true, Ordering::Relaxed);
        let raised = Instant::now();
        let result = worker.join().expect("no panic");
        (result, raised.elapsed())
    });
    assert_eq!(result, Err(CountError::Cancelled));
    assert!(
        stopping < Duration::from_secs(1),
        "took {stopping:?} to stop"
    );
}

#[test]
fn sums_that_do_not_fit_are_errors() {
    let big = Partial {
        solutions: u64::MAX,
        classes: 1,
    };
    let one = Partial {
        solutions: 1,
        classes: 1,
    };
    assert_eq!(big.add(one), Err(CountError::Overflow));
    assert_eq!(
        one.add(one),
        Ok(Partial {
            solutions: 2,
            classes: 2
        })
    );
}

#[test]
fn parts_make_a_whole_only_when_they_are_of_one_kind() {
    let part = |solutions, fundamental, turn_fixed| Counts {
        solutions,
        fundamental,
        turn_fixed,
    };
    let whole = |parts: &[Counts]| Counts::whole(parts.iter().copied());
    // n = 8 in classes, and in turn-fixed points: (92 + 4) / 8 = 12.
    let classes = [part(60, Some(8), None), part(32, Some(4), None)];
    assert_eq!(whole(&classes), Ok(part(92, Some(12), None)));
    let points = [part(60, None, Some(4)), part(32, None, Some(0))];
    assert_eq!(whole(&points), Ok(part(92, Some(12), None)));
    // Fixed queens: no classes, as before.
    assert_eq!(
        whole(&[part(3, None, None), part(4, None, None)]),
        Ok(part(7, None, None))
    );
    assert_eq!(whole(&[]), Ok(part(0, Some(0), None)));
    for mixed in [
        [part(60, Some(8), None), part(32, None, Some(4))],
        [part(60, None, None), part(32, None, Some(4))],
        [part(60, Some(8), Some(4)), part(32, Some(4), None)],
    ] {
        assert_eq!(whole(&mixed), Err(PartsError::Mixed), "{mixed:?}");
    }
    assert_eq!(
        whole(&[part(60, None, Some(5)), part(32, None, Some(0))]),
        Err(PartsError::NotWhole)
    );
    assert_eq!(
        whole(&[part(u64::MAX, None, Some(1)), part(1, None, Some(0))]),
        Err(PartsError::Overflow)
    );
    assert_eq!(
        whole(&[part(8, None, Some(u64::MAX)), part(0, None, Some(8))]),
        Err(PartsError::Overflow)
    );
}

/// Hands out boards in order, tagged by their index, and keeps their counts.
struct ListFeed {
    starts: Vec<lanes::Start>,
    next: usize,
    got: Vec<Option<u64>>,
}

impl lanes::Feed for ListFeed {
    fn next(&mut self) -> Result<Option<(usize, lanes::Start)>, CountError> {
        self.next += 1;
        Ok(self.starts.get(self.next - 1).map(|s| (self.next - 1, *s)))
    }

    fn done(&mut self, tag: usize, completions: u64) -> Result<(), CountError> {
        assert!(
            self.got[tag].replace(completions).is_none(),
            "board {tag} twice"
        );
        Ok(())
    }
}

/// Counts `boards` (queen sets) in lanes in each of `tiers`, and checks each against the
/// scalar search of its board (run once).
fn assert_lanes_match_boards(n: u32, boards: &[Vec<Square>], tiers: &[Tier]) {
    let want: Vec<u64> = boards
        .iter()
        .map(|queens| {
            Board::new(n, queens)
                .count(Board::root(), &never(), &mut |_| {})
                .unwrap()
        })
        .collect();
    for &simd in tiers {
        let mut feed = ListFeed {
            starts: Vec::new(),
            next: 0,
            got: Vec::new(),
        };
        let mut owner = Vec::new();
        for (i, queens) in boards.iter().enumerate() {
            let split = lanes::Split::new(n, queens).expect("the board fits");
            feed.starts.extend(split);
            owner.resize(feed.starts.len(), i);
        }
        feed.got = vec![None; feed.starts.len()];
        let outcome = LaneSet::new(n).run(simd, &mut feed, &|| false);
        assert_eq!(outcome, Ok(lanes::Outcome::Done));
        let mut got = vec![0; boards.len()];
        for (i, found) in feed.got.iter().enumerate() {
            got[owner[i]] += found.expect("every board reported");
        }
        for ((queens, got), want) in boards.iter().zip(got).zip(&want) {
            assert_eq!(got, *want, "n = {n}, {}: board {queens:?}", simd.name());
        }
    }
}

/// The lanes count every constellation of n = 6..12 like the scalar search of its board,
/// in every tier, with lanes refilled as boards finish.
#[test]
fn lanes_match_the_board_search() {
    let tiers = tiers_to_test("lanes_match_the_board_search");
    for n in 6..=12 {
        let boards: Vec<Vec<Square>> = constellation::representatives(n)
            .into_iter()
            .map(|c| c.queens)
            .collect();
        assert_lanes_match_boards(n, &boards, &tiers);
    }
}

/// A set of lanes paused every few checks and run again keeps its boards and loses no
/// completion.
#[test]
fn paused_lanes_resume_where_they_were() {
    let n = 12;
    let boards: Vec<Vec<Square>> = constellation::representatives(n)
        .into_iter()
        .map(|c| c.queens)
        .collect();
    let mut feed = ListFeed {
        starts: boards
            .iter()
            .flat_map(|q| lanes::Split::new(n, q).expect("fits"))
            .collect(),
        next: 0,
        got: Vec::new(),
    };
    feed.got = vec![None; feed.starts.len()];
    let mut set = LaneSet::new(n);
    let mut pauses = 0;
    while set.run(tier(), &mut feed, &|| true) == Ok(lanes::Outcome::Paused) {
        pauses += 1;
    }
    assert!(pauses > 10, "only {pauses} pauses");
    let mut fresh = ListFeed {
        starts: feed.starts.clone(),
        next: 0,
        got: vec![None; feed.starts.len()],
    };
    let outcome = LaneSet::new(n).run(tier(), &mut fresh, &|| false);
    assert_eq!(outcome, Ok(lanes::Outcome::Done));
    assert_eq!(feed.got, fresh.got);
}

/// Boards with more free rows than a lane holds are split into boards with their first free
/// rows filled (one queen on n = 15 leaves 14 free rows, one split row); fixed queens that
/// leave rows between free rows make wide gaps.
#[test]
fn lanes_split_boards_with_many_free_rows() {
    let square = |row, column| Square { row, column };
    let boards = vec![
        vec![square(0, 0)],
        vec![square(7, 7)],
        vec![square(3, 5)],
        vec![square(14, 2)],
        vec![square(2, 1), square(3, 3), square(4, 0), square(5, 2)],
    ];
    let split = lanes::Split::new(15, &boards[0]).expect("the board fits");
    assert_eq!(split.rows_filled(), 1, "a board with 14 free rows is split");
    assert!(split.count() > 1);
    let tiers = tiers_to_test("lanes_split_boards_with_many_free_rows");
    assert_lanes_match_boards(15, &boards, &tiers);
    // 15 free rows: two rows split; 16 free rows: three. Three queens in the middle rows
    // (a knight's move apart) keep these boards' searches short.
    let middle = |n: u32| -> Vec<Square> {
        let m = n / 2 - 1;
        vec![square(m, m), square(m + 1, m + 2), square(m + 2, m + 4)]
    };
    for (n, rows) in [(18, 2), (19, 3)] {
        let split = lanes::Split::new(n, &middle(n)).expect("the board fits");
        assert_eq!(split.rows_filled(), rows, "n = {n}");
        assert_lanes_match_boards(n, &[middle(n)], &[tier()]);
    }
    // Queens that attack each other are not split (the scalar search counts 0 for them).
    assert!(lanes::Split::new(8, &[square(0, 0), square(2, 2)]).is_none());
}
