//! The fast counter against OEIS, the plain search and the naive oracle: every thread count,
//! shard splits, fixed queens, cancellation, overflow.

use super::board::Board;
use super::constellation::{self, symmetries_of, transform};
use super::lanes;
use super::{Partial, count_fast, count_parallel};
use crate::solver::naive;
use crate::solver::{CountError, Counts, Problem, Shard, Square, count};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// OEIS A000170: solutions of the n-queens problem, n = 1..16.
const A000170: [u64; 16] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
];

/// OEIS A002562: solutions up to rotations and reflections, n = 1..16.
const A002562: [u64; 16] = [
    1, 0, 0, 1, 2, 1, 6, 12, 46, 92, 341, 1787, 9233, 45752, 285053, 1846955,
];

/// Deterministic pseudo-random numbers (splitmix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, k: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % k
    }
}

fn never() -> AtomicBool {
    AtomicBool::new(false)
}

fn problem(n: u32, fixed: &[Square], shard: Shard) -> Problem {
    Problem::new(n, fixed, false, shard).expect("valid problem")
}

fn fast(p: &Problem, threads: usize) -> Counts {
    count_parallel(p, &never(), threads).expect("count")
}

/// The parts of a split, added up.
fn sum_of_parts(n: u32, fixed: &[Square], parts: u32, threads: usize) -> Counts {
    let mut total = Counts {
        solutions: 0,
        fundamental: fixed.is_empty().then_some(0),
    };
    for index in 0..parts {
        let part = fast(
            &problem(
                n,
                fixed,
                Shard {
                    index,
                    count: parts,
                },
            ),
            threads,
        );
        total.solutions += part.solutions;
        total.fundamental = total.fundamental.zip(part.fundamental).map(|(a, b)| a + b);
        assert_eq!(part.fundamental.is_some(), fixed.is_empty());
    }
    total
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

/// Counting without lanes (as on a CPU without AVX2) gives the same answers: whole boards,
/// shards, a centre queen (its symmetric path) and random fixed queens.
#[test]
fn without_lanes_the_counts_match_too() {
    /// Lets the lanes back in when the test ends, also by a panic.
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            super::SEARCH_ALONE.store(false, Ordering::Relaxed);
        }
    }
    super::SEARCH_ALONE.store(true, Ordering::Relaxed);
    let _restore = Restore;
    for threads in [1, 2] {
        for n in 1..=13u32 {
            let got = fast(&problem(n, &[], Shard::WHOLE), threads);
            assert_oeis(n, got, &format!("no lanes, {threads} threads"));
        }
    }
    assert_oeis(12, sum_of_parts(12, &[], 5, 2), "no lanes, 5 parts");
    let mut rng = Rng(0xA10E);
    for n in [7u32, 9, 11] {
        let centre = [Square {
            row: n / 2,
            column: n / 2,
        }];
        let mut fixed = vec![Square {
            row: rng.below(u64::from(n)) as u32,
            column: rng.below(u64::from(n)) as u32,
        }];
        if fixed[0].row != 0 {
            fixed.push(Square {
                row: 0,
                column: rng.below(u64::from(n)) as u32,
            });
        }
        for queens in [&centre[..], &fixed] {
            let p = problem(n, queens, Shard::WHOLE);
            let expected = count(&p, &never()).expect("count");
            assert_eq!(fast(&p, 2), expected, "no lanes: n = {n}, {queens:?}");
        }
    }
}

#[test]
fn the_single_thread_entry_point_matches_oeis() {
    for n in [6u32, 9, 12] {
        let got = count_fast(&problem(n, &[], Shard::WHOLE), &never()).expect("count");
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

#[test]
fn more_parts_than_subproblems_still_add_up() {
    // n = 7 has a few dozen constellation orbits; most of 500 parts are empty.
    let total = sum_of_parts(7, &[], 500, 1);
    assert_eq!(total.solutions, 40);
    assert_eq!(total.fundamental, Some(6));
    let fixed = [Square { row: 2, column: 3 }];
    let total = sum_of_parts(8, &fixed, 700, 2);
    let whole = count(&problem(8, &fixed, Shard::WHOLE), &never()).expect("count");
    assert_eq!(total, whole);
}

#[test]
fn a_part_is_the_same_every_time() {
    let p = problem(12, &[], Shard { index: 3, count: 7 });
    let first = fast(&p, 2);
    for threads in [1, 2, 3] {
        assert_eq!(fast(&p, threads), first);
    }
}

#[test]
fn fixed_queens_match_the_search_and_the_oracle() {
    let mut rng = Rng(0x5EED);
    for round in 0..120 {
        let n = 4 + rng.below(7) as u32; // 4..=10
        let k = 1 + rng.below(3) as usize;
        let mut fixed: Vec<Square> = Vec::new();
        while fixed.len() < k {
            let q = Square {
                row: rng.below(u64::from(n)) as u32,
                column: rng.below(u64::from(n)) as u32,
            };
            if !fixed.contains(&q) {
                fixed.push(q);
            }
        }
        let oracle = oracle_count(n, &fixed);
        let whole = problem(n, &fixed, Shard::WHOLE);
        let expected = count(&whole, &never()).expect("count");
        assert_eq!(
            expected.solutions, oracle,
            "round {round}: the search itself"
        );
        for threads in [1, 2] {
            assert_eq!(
                fast(&whole, threads),
                expected,
                "round {round}: n = {n}, {fixed:?}"
            );
        }
        let parts = 1 + rng.below(9) as u32;
        assert_eq!(
            sum_of_parts(n, &fixed, parts, 2),
            expected,
            "round {round}: {parts} parts"
        );
    }
}

/// The completions of `fixed` on an n x n board, by the naive oracle.
fn oracle_count(n: u32, fixed: &[Square]) -> u64 {
    naive::solutions(n as usize)
        .iter()
        .filter(|b| {
            fixed
                .iter()
                .all(|q| u32::from(b[q.row as usize]) == q.column)
        })
        .count() as u64
}

/// `seed` and its images under the symmetries in `group`, without repeats.
fn closure(n: u32, seed: &[Square], group: &[u8]) -> Vec<Square> {
    let mut all: Vec<Square> = Vec::new();
    for &g in group {
        for &q in seed {
            let image = transform(n, g, q);
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
    const ROTATIONS: [u8; 4] = [0, 3, 6, 7];
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
                if !constellation::peaceful(&fixed) {
                    continue;
                }
                assert!(symmetries_of(n, &fixed).len() >= 4, "{fixed:?}");
                let whole = problem(n, &fixed, Shard::WHOLE);
                let expected = count(&whole, &never()).expect("count");
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
        let expected = count(&whole, &never()).expect("count");
        assert_eq!(fast(&whole, 2), expected, "n = {n}");
        assert_eq!(sum_of_parts(n, &centre, 6, 2), expected, "n = {n} in parts");
    }
    // A set only a half turn maps to itself keeps the plain split, and still agrees.
    let pair = [Square { row: 2, column: 5 }, Square { row: 10, column: 7 }];
    assert_eq!(symmetries_of(13, &pair), vec![0, 3]);
    let whole = problem(13, &pair, Shard::WHOLE);
    assert_eq!(fast(&whole, 2), count(&whole, &never()).expect("count"));
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
        let expected = count(&whole, &never()).expect("count");
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
            let images: Vec<Vec<Square>> = (0..8)
                .map(|g| {
                    let mut image: Vec<Square> =
                        c.queens.iter().map(|&q| transform(n, g, q)).collect();
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
    let cancel = AtomicBool::new(true);
    for threads in [1, 2] {
        for n in [6u32, 12, 16] {
            let p = problem(n, &[], Shard::WHOLE);
            assert_eq!(
                count_parallel(&p, &cancel, threads),
                Err(CountError::Cancelled)
            );
        }
        let fixed = problem(14, &[Square { row: 3, column: 5 }], Shard::WHOLE);
        assert_eq!(
            count_parallel(&fixed, &cancel, threads),
            Err(CountError::Cancelled)
        );
    }
}

#[test]
fn a_flag_raised_mid_count_stops_both_threads_within_a_second() {
    let cancel = AtomicBool::new(false);
    let p = problem(19, &[], Shard::WHOLE);
    let (result, stopping) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| count_parallel(&p, &cancel, 2));
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

/// Counts `boards` (queen sets) in lanes, through `count` (the dispatching entry point or the
/// portable one), and checks each against the scalar search of its board.
fn assert_lanes_match_boards(
    n: u32,
    boards: &[Vec<Square>],
    count: fn(u32, &mut ListFeed, &AtomicBool) -> Result<(), CountError>,
) {
    let mut feed = ListFeed {
        starts: Vec::new(),
        next: 0,
        got: Vec::new(),
    };
    let mut owner = Vec::new();
    for (i, queens) in boards.iter().enumerate() {
        let plan = lanes::Plan::new(n, queens).expect("the board fits");
        feed.starts.extend(plan);
        owner.resize(feed.starts.len(), i);
    }
    feed.got = vec![None; feed.starts.len()];
    count(n, &mut feed, &never()).unwrap();
    let mut got = vec![0; boards.len()];
    for (i, found) in feed.got.iter().enumerate() {
        got[owner[i]] += found.expect("every board reported");
    }
    for (queens, got) in boards.iter().zip(got) {
        let want = Board::new(n, queens)
            .count(Board::root(), &never())
            .unwrap();
        assert_eq!(got, want, "n = {n}: board {queens:?}");
    }
}

/// The lanes count every constellation of n = 6..12 like the scalar search of its board,
/// in the registers the CPU offers, in AVX2 registers and in the portable rounds, with
/// lanes refilled as boards finish.
#[test]
fn lanes_match_the_board_search() {
    for n in 6..=12 {
        let boards: Vec<Vec<Square>> = constellation::representatives(n)
            .into_iter()
            .map(|c| c.queens)
            .collect();
        assert_lanes_match_boards(n, &boards, lanes::count);
        assert_lanes_match_boards(n, &boards, lanes::count_in_avx2);
        assert_lanes_match_boards(n, &boards, lanes::count_portable);
    }
}

/// Boards with more free rows than a lane holds are split into boards with their first free
/// row filled (one queen on n = 15 leaves 14 free rows); fixed queens that leave rows
/// between free rows make wide gaps.
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
    let plan = lanes::Plan::new(15, &boards[0]).expect("the board fits");
    assert!(plan.count() > 1, "a board with 14 free rows is split");
    assert_lanes_match_boards(15, &boards, lanes::count);
    assert_lanes_match_boards(15, &boards, lanes::count_in_avx2);
    assert_lanes_match_boards(15, &boards, lanes::count_portable);
    // 15 free rows: two rows split; 16 free rows: three.
    let deeper = vec![vec![square(0, 3)], vec![square(9, 0)]];
    assert_lanes_match_boards(16, &deeper, lanes::count);
    assert_lanes_match_boards(17, &deeper[1..], lanes::count);
    // Queens that attack each other are not planned (the scalar search counts 0 for them).
    assert!(lanes::Plan::new(8, &[square(0, 0), square(2, 2)]).is_none());
}
