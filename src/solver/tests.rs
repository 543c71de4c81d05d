//! The core against the naive oracle on every request feature, for small n, with
//! random fixed sets, shards, resume points and limits.

use super::naive;
use super::*;
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;

/// Deterministic pseudo-random numbers (splitmix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, k: u64) -> u64 {
        self.next() % k
    }
}

/// Collects boards.
#[derive(Default)]
struct Collect(Vec<Vec<u8>>);

impl Sink for Collect {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.0.push(columns.to_vec());
        ControlFlow::Continue(())
    }
}

fn problem(n: u32, fixed: &[Square], fundamental: bool, shard: Shard) -> Problem {
    Problem::new(n, fixed, fundamental, shard).expect("valid problem")
}

fn boards(p: &Problem, after: Option<&[u8]>, limit: Option<u64>) -> Vec<Vec<u8>> {
    let mut sink = Collect::default();
    assert!(enumerate(p, after, limit, &mut sink).is_continue());
    sink.0
}

fn never() -> AtomicBool {
    AtomicBool::new(false)
}

/// The oracle's answer: all solutions filtered by the question's constraints.
fn oracle(n: usize, fixed: &[Square], fundamental: bool) -> Vec<Vec<u8>> {
    naive::solutions(n)
        .into_iter()
        .filter(|b| fixed.iter().all(|q| b[q.row as usize] as u32 == q.column))
        .filter(|b| !fundamental || naive::is_representative(b))
        .collect()
}

fn random_fixed(rng: &mut Rng, n: u32) -> Vec<Square> {
    let k = (rng.below(4) as usize).min((n * n) as usize);
    let mut fixed: Vec<Square> = Vec::new();
    while fixed.len() < k {
        let q = Square {
            row: rng.below(n as u64) as u32,
            column: rng.below(n as u64) as u32,
        };
        if !fixed.contains(&q) {
            fixed.push(q);
        }
    }
    fixed
}

/// A random size (1 to 9), and either `fundamental` or some fixed queens (never both).
fn random_query(rng: &mut Rng) -> (u32, bool, Vec<Square>) {
    let n = 1 + rng.below(9) as u32;
    let fundamental = rng.below(3) == 0;
    let fixed = if fundamental {
        vec![]
    } else {
        random_fixed(rng, n)
    };
    (n, fundamental, fixed)
}

fn random_vector(rng: &mut Rng, n: u32) -> Vec<u8> {
    (0..n).map(|_| rng.below(n as u64) as u8).collect()
}

#[test]
fn n4_is_the_classic_pair() {
    assert_eq!(
        boards(&problem(4, &[], false, Shard::WHOLE), None, None),
        vec![vec![1, 3, 0, 2], vec![2, 0, 3, 1]]
    );
}

#[test]
fn small_boards_match_the_oracle() {
    for n in 1..=9u32 {
        let all = naive::solutions(n as usize);
        assert_eq!(
            boards(&problem(n, &[], false, Shard::WHOLE), None, None),
            all,
            "n={n}"
        );
        let reps = oracle(n as usize, &[], true);
        assert_eq!(
            boards(&problem(n, &[], true, Shard::WHOLE), None, None),
            reps,
            "n={n}"
        );
        let counts = count(&problem(n, &[], false, Shard::WHOLE), &never()).unwrap();
        assert_eq!(counts.solutions, all.len() as u64, "n={n}");
        assert_eq!(counts.fundamental, Some(reps.len() as u64), "n={n}");
    }
}

#[test]
fn class_size_matches_distinct_images() {
    for n in 1..=9 {
        for board in naive::solutions(n) {
            let mut distinct = naive::images(&board);
            distinct.sort();
            distinct.dedup();
            let expected = naive::is_representative(&board).then_some(distinct.len() as u64);
            assert_eq!(class_size(&board), expected, "{board:?}");
        }
    }
}

#[test]
fn fixed_queens_match_the_oracle() {
    let mut rng = Rng(1);
    for _ in 0..400 {
        let n = 1 + rng.below(9) as u32;
        let fixed = random_fixed(&mut rng, n);
        let expected = oracle(n as usize, &fixed, false);
        let p = problem(n, &fixed, false, Shard::WHOLE);
        assert_eq!(boards(&p, None, None), expected, "n={n} fixed={fixed:?}");
        let counts = count(&p, &never()).unwrap();
        let fundamental = fixed
            .is_empty()
            .then(|| oracle(n as usize, &[], true).len() as u64);
        assert_eq!(
            counts.solutions,
            expected.len() as u64,
            "n={n} fixed={fixed:?}"
        );
        assert_eq!(counts.fundamental, fundamental);
    }
}

#[test]
fn fixed_queens_order_does_not_matter() {
    let a = [Square { row: 5, column: 2 }, Square { row: 0, column: 3 }];
    let b = [a[1], a[0]];
    assert_eq!(
        boards(&problem(8, &a, false, Shard::WHOLE), None, None),
        boards(&problem(8, &b, false, Shard::WHOLE), None, None)
    );
}

#[test]
fn attacking_fixed_queens_have_no_solutions() {
    let same_row = [Square { row: 1, column: 1 }, Square { row: 1, column: 4 }];
    let diagonal = [Square { row: 0, column: 0 }, Square { row: 3, column: 3 }];
    for fixed in [&same_row[..], &diagonal[..]] {
        let p = problem(8, fixed, false, Shard::WHOLE);
        assert!(boards(&p, None, None).is_empty());
        assert_eq!(count(&p, &never()).unwrap().solutions, 0);
    }
}

#[test]
fn start_after_and_limit_match_the_oracle() {
    let mut rng = Rng(2);
    for _ in 0..400 {
        let (n, fundamental, fixed) = random_query(&mut rng);
        let all = oracle(n as usize, &fixed, fundamental);
        let after = match (rng.below(2), all.is_empty()) {
            (0, false) => all[rng.below(all.len() as u64) as usize].clone(),
            _ => random_vector(&mut rng, n),
        };
        let limit = match rng.below(3) {
            0 => None,
            _ => Some(rng.below(all.len() as u64 + 2)),
        };
        let expected: Vec<Vec<u8>> = all
            .iter()
            .filter(|b| b.as_slice() > after.as_slice())
            .take(limit.unwrap_or(u64::MAX) as usize)
            .cloned()
            .collect();
        let p = problem(n, &fixed, fundamental, Shard::WHOLE);
        assert_eq!(
            boards(&p, Some(&after), limit),
            expected,
            "n={n} fixed={fixed:?} fundamental={fundamental} after={after:?} limit={limit:?}"
        );
    }
}

#[test]
fn shards_partition_the_result_and_resume_within_themselves() {
    let mut rng = Rng(3);
    for _ in 0..150 {
        let (n, fundamental, fixed) = random_query(&mut rng);
        let count_parts = 1 + rng.below(40) as u32;
        let all = oracle(n as usize, &fixed, fundamental);
        let mut union = Vec::new();
        let mut solutions = 0;
        let mut classes = 0;
        for index in 0..count_parts {
            let shard = Shard {
                index,
                count: count_parts,
            };
            let p = problem(n, &fixed, fundamental, shard);
            let part = boards(&p, None, None);
            assert!(part.windows(2).all(|w| w[0] < w[1]), "part in order");
            // Resuming inside the part gives the rest of the same part.
            let after = random_vector(&mut rng, n);
            let rest: Vec<_> = part
                .iter()
                .filter(|b| b.as_slice() > after.as_slice())
                .cloned()
                .collect();
            assert_eq!(
                boards(&p, Some(&after), None),
                rest,
                "n={n} {shard:?} after={after:?}"
            );
            union.extend(part);
            let counted = count(&problem(n, &fixed, false, shard), &never()).unwrap();
            solutions += counted.solutions;
            classes += counted.fundamental.unwrap_or(0);
        }
        union.sort();
        assert_eq!(union, all, "n={n} fixed={fixed:?} parts={count_parts}");
        let whole = count(&problem(n, &fixed, false, Shard::WHOLE), &never()).unwrap();
        assert_eq!(solutions, whole.solutions);
        assert_eq!(classes, whole.fundamental.unwrap_or(0));
    }
}

#[test]
fn shards_split_large_boards_evenly_enough() {
    let parts = 7;
    let mut sizes = Vec::new();
    for index in 0..parts {
        let p = problem(
            12,
            &[],
            false,
            Shard {
                index,
                count: parts,
            },
        );
        sizes.push(count(&p, &never()).unwrap().solutions);
    }
    assert_eq!(sizes.iter().sum::<u64>(), 14_200);
    assert!(sizes.iter().all(|&s| s > 14_200 / 7 / 4), "{sizes:?}");
}

#[test]
fn counts_match_oeis_up_to_12() {
    // OEIS A000170 and A002562.
    let total = [1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200];
    let classes = [1, 0, 0, 1, 2, 1, 6, 12, 46, 92, 341, 1787];
    for n in 1..=12u32 {
        let c = count(&problem(n, &[], false, Shard::WHOLE), &never()).unwrap();
        assert_eq!(c.solutions, total[n as usize - 1], "n={n}");
        assert_eq!(c.fundamental, Some(classes[n as usize - 1]), "n={n}");
    }
}

#[test]
fn a_raised_flag_cancels_a_count() {
    let cancel = AtomicBool::new(true);
    let p = problem(20, &[], false, Shard::WHOLE);
    assert_eq!(count(&p, &cancel), Err(CountError::Cancelled));
    let fixed = [Square { row: 3, column: 3 }];
    let p = problem(20, &fixed, false, Shard::WHOLE);
    assert_eq!(count(&p, &cancel), Err(CountError::Cancelled));
}

/// A sink that stops at its first poll.
struct StopAtPoll(usize);

impl Sink for StopAtPoll {
    fn push(&mut self, _: &[u8]) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }
    fn poll(&mut self) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

#[test]
fn a_sink_stops_the_search_at_a_poll() {
    // n = 32 with a fixed pair that attacks: no boards ever, so only polling can stop it.
    let fixed = [Square { row: 31, column: 0 }, Square { row: 30, column: 1 }];
    let p = problem(32, &fixed, false, Shard::WHOLE);
    let mut sink = StopAtPoll(0);
    assert!(enumerate(&p, None, None, &mut sink).is_break());
    assert_eq!(sink.0, 0);
}

#[test]
fn the_largest_board_streams_at_once() {
    let p = problem(32, &[], false, Shard::WHOLE);
    let first = boards(&p, None, Some(3));
    assert_eq!(first.len(), 3);
    assert!(first.windows(2).all(|w| w[0] < w[1]));
    for b in &first {
        assert!(naive_valid(b));
    }
    let reps = boards(
        &problem(
            32,
            &[],
            true,
            Shard {
                index: 5,
                count: 1000,
            },
        ),
        None,
        Some(2),
    );
    assert_eq!(reps.len(), 2);
    assert!(
        reps.iter()
            .all(|b| naive::is_representative(b) && naive_valid(b))
    );
}

fn naive_valid(b: &[u8]) -> bool {
    let n = b.len();
    (0..n).all(|i| {
        (i + 1..n).all(|j| b[i] != b[j] && (j - i) as i32 != (b[i] as i32 - b[j] as i32).abs())
    })
}

#[test]
fn invalid_questions_name_their_field() {
    let sq = |row, column| Square { row, column };
    let cases: Vec<(Result<Problem, QueryError>, &str)> = vec![
        (Problem::new(0, &[], false, Shard::WHOLE), "n: 0"),
        (Problem::new(33, &[], false, Shard::WHOLE), "n: 33"),
        (
            Problem::with_max_n(13, &[], false, Shard::WHOLE, 12),
            "n: 13",
        ),
        (
            Problem::new(8, &[sq(8, 0)], false, Shard::WHOLE),
            "fixed[0]",
        ),
        (
            Problem::new(8, &[sq(0, 1), sq(2, 9)], false, Shard::WHOLE),
            "fixed[1]",
        ),
        (
            Problem::new(8, &[sq(1, 1), sq(1, 1)], false, Shard::WHOLE),
            "listed twice",
        ),
        (
            Problem::new(8, &[sq(1, 1)], true, Shard::WHOLE),
            "fundamental",
        ),
        (
            Problem::new(8, &[], false, Shard { index: 3, count: 3 }),
            "shard.index: 3",
        ),
        (
            Problem::new(8, &[], false, Shard { index: 1, count: 0 }),
            "shard.index: 1",
        ),
        (
            Problem::new(8, &[], false, Shard { index: 1, count: 1 }),
            "shard.index: 1",
        ),
    ];
    for (result, needle) in cases {
        let message = result.expect_err(needle).to_string();
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
    let p = problem(4, &[], false, Shard::WHOLE);
    let message = p.check_start_after(&[1, 2, 3]).unwrap_err().to_string();
    assert!(message.starts_with("start_after:"), "{message}");
    let message = p.check_start_after(&[1, 2, 4, 0]).unwrap_err().to_string();
    assert!(message.starts_with("start_after[2]: 4"), "{message}");
    assert_eq!(p.check_start_after(&[]), Ok(None));
    assert_eq!(
        p.check_start_after(&[3, 3, 3, 3]),
        Ok(Some(vec![3, 3, 3, 3]))
    );
}

#[test]
fn prefix_tasks_in_order_make_up_the_whole_search() {
    let mut rng = Rng(11);
    for _ in 0..120 {
        let (n, fundamental, fixed) = random_query(&mut rng);
        let count_parts = 1 + rng.below(6) as u32;
        let shard = Shard {
            index: rng.below(u64::from(count_parts)) as u32,
            count: count_parts,
        };
        let p = problem(n, &fixed, fundamental, shard);
        let after = (rng.below(2) == 0).then(|| random_vector(&mut rng, n));
        let depth = rng.below(u64::from(n) + 1) as usize;
        let mut sink = Collect::default();
        let mut prefix = vec![0u8; depth];
        loop {
            assert!(enumerate_under(&p, &prefix, after.as_deref(), &mut sink).is_continue());
            // The next prefix of this length in lexicographic order (an odometer).
            let Some(i) = prefix.iter().rposition(|&c| u32::from(c) + 1 < n) else {
                break;
            };
            prefix[i] += 1;
            prefix[i + 1..].fill(0);
        }
        assert_eq!(
            sink.0,
            boards(&p, after.as_deref(), None),
            "n={n} depth={depth} {shard:?} fixed={fixed:?} after={after:?}"
        );
    }
}
