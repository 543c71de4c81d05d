//! The enumeration's lanes against the scalar search on every tier: in order, resumed from
//! a stopped board or poll, polled while walking for roots.

use super::*;

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
