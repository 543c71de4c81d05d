//! The core against the naive oracle on every request feature, for small n, with
//! random fixed sets, shards, resume points and limits (property tests: a failure prints
//! the smallest case proptest finds).
//!
//! One file of over 500 lines: every test here checks the enumeration against the same
//! oracle through the same helpers (`problem`, `boards`, `paths`, `by_tasks`).

use super::naive;
use super::oeis::{A000170, A002562};
use super::search::count as plain_count;
use super::*;
use proptest::prelude::*;
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;

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

/// Up to three distinct squares of an n×n board.
fn fixed_set(n: u32) -> impl Strategy<Value = Vec<Square>> {
    proptest::collection::btree_set((0..n, 0..n), 0..=3).prop_map(|set| {
        set.into_iter()
            .map(|(row, column)| Square { row, column })
            .collect()
    })
}

/// A size (1 to 9), and either `fundamental` or some fixed queens (never both).
fn query() -> impl Strategy<Value = (u32, bool, Vec<Square>)> {
    (1u32..=9).prop_flat_map(|n| {
        prop_oneof![
            1 => Just((n, true, Vec::new())),
            2 => fixed_set(n).prop_map(move |fixed| (n, false, fixed)),
        ]
    })
}

/// A column vector of size `n` (not necessarily a solution).
fn vector(n: u32) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0..n as u8, n as usize)
}

/// A query with a resume point: a random vector, or one of the answer's boards.
fn query_after() -> impl Strategy<Value = ((u32, bool, Vec<Square>), Vec<u8>, prop::sample::Index)>
{
    query().prop_flat_map(|q| {
        let n = q.0;
        (Just(q), vector(n), any::<prop::sample::Index>())
    })
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
        let reps = naive::answer(n as usize, &[], true);
        assert_eq!(
            boards(&problem(n, &[], true, Shard::WHOLE), None, None),
            reps,
            "n={n}"
        );
        let counts = plain_count(&problem(n, &[], false, Shard::WHOLE), &never()).unwrap();
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fixed_queens_match_the_oracle((n, fixed) in (1u32..=9).prop_flat_map(|n| (Just(n), fixed_set(n)))) {
        let expected = naive::answer(n as usize, &fixed, false);
        let p = problem(n, &fixed, false, Shard::WHOLE);
        prop_assert_eq!(boards(&p, None, None), expected.clone());
        let counts = plain_count(&p, &never()).unwrap();
        let fundamental = fixed
            .is_empty()
            .then(|| naive::answer(n as usize, &[], true).len() as u64);
        prop_assert_eq!(counts.solutions, expected.len() as u64);
        prop_assert_eq!(counts.fundamental, fundamental);
    }

    #[test]
    fn start_after_and_limit_match_the_oracle(
        ((n, fundamental, fixed), random, pick) in query_after(),
        limit in prop::option::of(0u64..20),
        existing in any::<bool>(),
    ) {
        let all = naive::answer(n as usize, &fixed, fundamental);
        let after = if existing && !all.is_empty() { pick.get(&all).clone() } else { random };
        let expected: Vec<Vec<u8>> = all
            .iter()
            .filter(|b| b.as_slice() > after.as_slice())
            .take(limit.unwrap_or(u64::MAX) as usize)
            .cloned()
            .collect();
        let p = problem(n, &fixed, fundamental, Shard::WHOLE);
        prop_assert_eq!(boards(&p, Some(&after), limit), expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn shards_partition_the_result_and_resume_within_themselves(
        ((n, fundamental, fixed), after, _) in query_after(),
        count_parts in 1u32..=40,
    ) {
        let all = naive::answer(n as usize, &fixed, fundamental);
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
            prop_assert!(part.windows(2).all(|w| w[0] < w[1]), "part in order");
            // Resuming inside the part gives the rest of the same part.
            let rest: Vec<_> = part
                .iter()
                .filter(|b| b.as_slice() > after.as_slice())
                .cloned()
                .collect();
            prop_assert_eq!(boards(&p, Some(&after), None), rest, "{:?}", shard);
            union.extend(part);
            let counted = plain_count(&problem(n, &fixed, false, shard), &never()).unwrap();
            solutions += counted.solutions;
            classes += counted.fundamental.unwrap_or(0);
        }
        union.sort();
        prop_assert_eq!(union, all);
        let whole = plain_count(&problem(n, &fixed, false, Shard::WHOLE), &never()).unwrap();
        prop_assert_eq!(solutions, whole.solutions);
        prop_assert_eq!(classes, whole.fundamental.unwrap_or(0));
    }

    #[test]
    fn prefix_tasks_in_order_make_up_the_whole_search(
        ((n, fundamental, fixed), after, _) in query_after(),
        count_parts in 1u32..=6,
        index in any::<prop::sample::Index>(),
        depth in any::<prop::sample::Index>(),
        resume in any::<bool>(),
    ) {
        let shard = Shard {
            index: index.index(count_parts as usize) as u32,
            count: count_parts,
        };
        let p = problem(n, &fixed, fundamental, shard);
        let after = resume.then_some(after);
        // Streams use depths 3 and 4; deeper ones only multiply the (empty) tasks.
        let depth = depth.index(n.min(5) as usize + 1);
        let tasks = Tasks::new(n, depth, after.as_deref());
        let mut sink = Collect::default();
        for i in 0..tasks.total() {
            let flow = enumerate_under(&p, &tasks.prefix(i), after.as_deref(), &mut sink);
            prop_assert!(flow.is_continue());
            if !tasks.wanted(i) {
                // A task that is not wanted holds no boards.
                let mut alone = Collect::default();
                let _ = enumerate_under(&p, &tasks.prefix(i), after.as_deref(), &mut alone);
                prop_assert!(alone.0.is_empty(), "task {:?} is not wanted", tasks.prefix(i));
            }
        }
        prop_assert_eq!(sink.0, boards(&p, after.as_deref(), None));
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
        assert_eq!(plain_count(&p, &never()).unwrap().solutions, 0);
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
        sizes.push(plain_count(&p, &never()).unwrap().solutions);
    }
    assert_eq!(sizes.iter().sum::<u64>(), 14_200);
    assert!(sizes.iter().all(|&s| s > 14_200 / 7 / 4), "{sizes:?}");
}

#[test]
fn counts_match_oeis_up_to_12() {
    for n in 1..=12u32 {
        let c = plain_count(&problem(n, &[], false, Shard::WHOLE), &never()).unwrap();
        assert_eq!(c.solutions, A000170[n as usize - 1], "n={n}");
        assert_eq!(c.fundamental, Some(A002562[n as usize - 1]), "n={n}");
    }
}

#[test]
fn a_raised_flag_cancels_a_count() {
    let cancel = AtomicBool::new(true);
    let p = problem(20, &[], false, Shard::WHOLE);
    assert_eq!(plain_count(&p, &cancel), Err(CountError::Cancelled));
    let fixed = [Square { row: 3, column: 3 }];
    let p = problem(20, &fixed, false, Shard::WHOLE);
    assert_eq!(plain_count(&p, &cancel), Err(CountError::Cancelled));
}

/// A sink that stops at its first poll.
struct StopAtPoll(usize);

impl Sink for StopAtPoll {
    fn push(&mut self, _: &[u8]) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }
    fn poll(&mut self, _: &[u8]) -> ControlFlow<()> {
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
        assert!(naive::is_solution(b));
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
            .all(|b| naive::is_representative(b) && naive::is_solution(b))
    );
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
fn every_refusal_gives_its_proto_field_path() {
    let sq = |row, column| Square { row, column };
    let refused = |n, fixed: &[Square], fundamental, shard| {
        Problem::new(n, fixed, fundamental, shard).expect_err("refused")
    };
    let p = problem(4, &[], false, Shard::WHOLE);
    let cases = [
        (refused(0, &[], false, Shard::WHOLE), "n"),
        (refused(8, &[sq(8, 0)], false, Shard::WHOLE), "fixed[0].row"),
        (refused(8, &[sq(9, 9)], false, Shard::WHOLE), "fixed[0].row"),
        (
            refused(8, &[sq(0, 1), sq(2, 9)], false, Shard::WHOLE),
            "fixed[1].column",
        ),
        (
            refused(8, &[sq(1, 1), sq(2, 2), sq(1, 1)], false, Shard::WHOLE),
            "fixed[2]",
        ),
        (refused(8, &[sq(1, 1)], true, Shard::WHOLE), "fundamental"),
        (
            refused(8, &[], false, Shard { index: 3, count: 3 }),
            "shard.index",
        ),
        (p.check_start_after(&[1, 2, 3]).unwrap_err(), "start_after"),
        (
            p.check_start_after(&[1, 2, 4, 0]).unwrap_err(),
            "start_after[2]",
        ),
    ];
    for (error, field) in cases {
        assert_eq!(error.field(), field, "{error}");
        // The message starts with the field, or with the square whose coordinate it is.
        let head = field.trim_end_matches(".row").trim_end_matches(".column");
        assert!(
            error.to_string().starts_with(&format!("{head}: ")),
            "{error}"
        );
    }
}

/// Every path `enumerate_under_by` can take on this CPU: the scalar engine and the lanes
/// in each tier [`simd::tiers_to_test`] gives `test` (the portable rounds, and each
/// register set the CPU has).
fn paths(test: &str) -> Vec<search::Path> {
    let lanes = simd::tiers_to_test(test)
        .into_iter()
        .map(search::Path::Lanes);
    std::iter::once(search::Path::Scalar).chain(lanes).collect()
}

/// The boards of every task of prefix length `depth`, in task order, by `path`.
fn by_tasks(p: &Problem, depth: usize, after: Option<&[u8]>, path: search::Path) -> Vec<Vec<u8>> {
    let tasks = Tasks::new(p.n(), depth, after);
    let mut sink = Collect::default();
    for i in 0..tasks.total() {
        let flow = search::enumerate_under_by(p, &tasks.prefix(i), after, &mut sink, path);
        assert!(flow.is_continue());
    }
    sink.0
}

#[test]
fn lanes_match_the_scalar_search_on_every_tier() {
    let paths = paths("lanes_match_the_scalar_search_on_every_tier");
    for n in 1..=11u32 {
        let p = problem(n, &[], false, Shard::WHOLE);
        let scalar = boards(&p, None, None);
        assert_eq!(scalar.len() as u64, A000170[n as usize - 1], "n = {n}");
        for depth in 0..=(n as usize).min(4) {
            for &path in &paths {
                let got = by_tasks(&p, depth, None, path);
                assert!(got == scalar, "n = {n}, depth {depth}, {path:?}");
            }
        }
    }
}

#[test]
fn lanes_count_oeis_at_13_and_14_in_order() {
    let paths = paths("lanes_count_oeis_at_13_and_14_in_order");
    for n in [13u32, 14] {
        let p = problem(n, &[], false, Shard::WHOLE);
        for &path in &paths[1..] {
            let got = by_tasks(&p, 3, None, path);
            assert_eq!(
                got.len() as u64,
                A000170[n as usize - 1],
                "n = {n}, {path:?}"
            );
            assert!(got.windows(2).all(|w| w[0] < w[1]), "n = {n}, {path:?}");
            assert!(
                got.iter().all(|b| naive::is_solution(b)),
                "n = {n}, {path:?}"
            );
        }
    }
}

/// Keeps the boards; stops at board number `boards_left` or poll number `polls_left`
/// (counting down; `usize::MAX` for never), noting the node a stopping poll named.
struct Stopper {
    boards: Vec<Vec<u8>>,
    boards_left: usize,
    polls_left: usize,
    at: Option<Vec<u8>>,
}

impl Stopper {
    fn new(boards_left: usize, polls_left: usize) -> Stopper {
        Stopper {
            boards: Vec::new(),
            boards_left,
            polls_left,
            at: None,
        }
    }

    /// Where the stream resumes after this stop: from the least vector under the node a
    /// poll named, or after the last board pushed.
    fn resume_point(&self, n: usize) -> Vec<u8> {
        match &self.at {
            Some(at) => {
                let mut resume = at.clone();
                resume.resize(n, 0);
                resume
            }
            None => self.boards.last().expect("a board").clone(),
        }
    }
}

impl Sink for Stopper {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.boards.push(columns.to_vec());
        self.boards_left = self.boards_left.saturating_sub(1);
        if self.boards_left == 0 {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
    fn poll(&mut self, at: &[u8]) -> ControlFlow<()> {
        self.polls_left = self.polls_left.saturating_sub(1);
        if self.polls_left == 0 {
            self.at = Some(at.to_vec());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

#[test]
fn lanes_resume_from_a_stopped_board_or_poll() {
    let n = 12u32;
    let p = problem(n, &[], false, Shard::WHOLE);
    let whole = boards(&p, None, None);
    for path in paths("lanes_resume_from_a_stopped_board_or_poll") {
        let never = usize::MAX;
        for (left, polls) in [(1, never), (777, never), (9_000, never), (never, 1)] {
            let mut sink = Stopper::new(left, polls);
            let flow = search::enumerate_under_by(&p, &[], None, &mut sink, path);
            assert!(flow.is_break(), "{path:?}, {left}");
            // Resume as the stream does.
            let resume = sink.resume_point(n as usize);
            let mut rest = Collect::default();
            let flow = search::enumerate_under_by(&p, &[], Some(&resume), &mut rest, path);
            assert!(flow.is_continue());
            let mut got = sink.boards;
            got.extend(rest.0);
            assert!(
                got == whole,
                "{path:?}, stopped after {left} boards or {polls} polls"
            );
        }
    }
}

/// [`paths`] for the property test below, its tiers said once rather than per case.
static RESUME_PATHS: std::sync::LazyLock<Vec<search::Path>> =
    std::sync::LazyLock::new(|| paths("lanes_resume_anywhere_like_the_scalar_search"));

proptest! {
    #[test]
    fn lanes_resume_anywhere_like_the_scalar_search(
        n in 4u32..=11,
        after in (4u32..=11).prop_flat_map(vector),
        depth in 0usize..=4,
    ) {
        let mut after = after;
        after.resize(n as usize, 0);
        for a in &mut after {
            *a %= n as u8;
        }
        let p = problem(n, &[], false, Shard::WHOLE);
        let want = boards(&p, Some(&after), None);
        for &path in RESUME_PATHS.iter() {
            prop_assert_eq!(&by_tasks(&p, depth.min(n as usize), Some(&after), path), &want);
        }
    }
}

#[test]
fn lanes_polled_while_walking_for_roots_resume_without_loss_or_repeat() {
    // A budget of a node or two makes the walk for roots stop between almost every root, so
    // polls come both from the window's head and from where the walk goes on.
    for n in [8u32, 10, 12] {
        let p = problem(n, &[], false, Shard::WHOLE);
        let whole = boards(&p, None, None);
        let depth = lockstep::subtree_depth(n as usize, 0).expect("room for lanes");
        for budget in [1, 2, 7] {
            for stop_at in (1..=60).chain([100, 200, 400]) {
                let mut sink = Stopper::new(usize::MAX, stop_at);
                let flow = lockstep::enumerate_roots_budget(
                    n as usize,
                    depth,
                    simd::Tier::PORTABLE,
                    budget,
                    &mut sink,
                );
                let mut got = sink.boards.clone();
                if let Some(at) = &sink.at {
                    assert!(flow.is_break());
                    assert!(at.len() + 2 <= n as usize, "n = {n}: polled at {at:?}");
                    got.extend(boards(&p, Some(&sink.resume_point(n as usize)), None));
                } else {
                    assert!(flow.is_continue(), "n = {n}: fewer than {stop_at} polls");
                }
                assert!(got == whole, "n = {n}, budget {budget}, poll {stop_at}");
            }
        }
    }
}
