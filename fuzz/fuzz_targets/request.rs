//! Fuzz target `request`: arbitrary bytes through request decoding and validation into the
//! solver, on boards of at most [`MAX_FUZZ_N`] squares a side so every search is quick.
//!
//! The first byte picks the call (even: Count, odd: Enumerate); the rest is decoded with prost
//! as a `queens.v1.CountRequest` or `EnumerateRequest` (bytes that do not decode end the run,
//! as the service answers them with an error). The request is then mapped and validated as
//! the service does (`Query::count` and `Query::enumerate`, `src/service/query.rs`), checked
//! against the solver's own validation, and handed to the solver. Checked:
//!
//! - validation accepts exactly the questions the contract allows, and every refusal renders
//!   a message that starts with the field at fault;
//! - Enumerate: every board has `n` columns below `n`, is a solution, holds the fixed queens,
//!   comes strictly after `start_after` and after the board before it, and with `fundamental`
//!   is the least member of its symmetry class; the whole search gives exactly the oracle's
//!   boards (cut at `limit`), a shard gives a subset of them, and the parts of a split into at
//!   most [`MAX_PARTS_CHECKED`] parts together give all of them;
//! - Count: the count with the SIMD lanes and without them gives the oracle's `solutions`
//!   (and `fundamental` when no queens are fixed) for the whole search, and a split's parts
//!   add up to them.
//!
//! The oracle is the project's naive oracle (`queens::solver::naive`, the `testing`
//! feature), independent of the solver's engines. Any panic is a finding.

#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use queens::pb;
use queens::service::Query;
use queens::solver::{self, CountOptions, Counts, Pool, Problem, QueryError, Shard, Sink, Square, naive};
use std::ops::ControlFlow;
use std::sync::OnceLock;

/// Largest board the target asks for (the server's `--max-n`): n = 10 has 724 solutions.
const MAX_FUZZ_N: u32 = 10;

/// Shard splits into at most this many parts are checked part by part against the whole.
const MAX_PARTS_CHECKED: u32 = 16;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    if which & 1 == 0 {
        if let Ok(req) = pb::CountRequest::decode(rest) {
            count_request(&req);
        }
    } else if let Ok(req) = pb::EnumerateRequest::decode(rest) {
        enumerate_request(&req);
    }
});

/// A Count call: validated like the service's `Query::count`, then counted two ways.
fn count_request(req: &pb::CountRequest) {
    let fixed = queens::wire::squares(&req.fixed);
    let shard = queens::wire::shard(req.shard.as_ref());
    let Some(problem) = validate(req.n, &fixed, false, shard) else {
        assert!(query().count(req).is_err(), "the service's reading differs");
        return;
    };
    assert_eq!(query().count(req).as_ref(), Ok(&problem), "the service's reading");
    let want = oracle_counts(req.n, &fixed);
    let got = counts(&problem);
    let parts = problem.shard().count;
    if parts == 1 {
        assert_eq!(got, [want; 2], "count with and without lanes of {problem:?}");
        return;
    }
    for c in got {
        assert!(c.solutions <= want.solutions, "shard count of {problem:?}");
        assert_eq!(c.fundamental.is_some(), want.fundamental.is_some());
    }
    if parts <= MAX_PARTS_CHECKED {
        // Boards this small never take the join, so no part carries `turn_fixed`.
        let zero = Counts {
            solutions: 0,
            fundamental: want.fundamental.map(|_| 0),
            turn_fixed: None,
        };
        let mut sum = [zero; 2];
        for part in all_parts(&problem, &fixed) {
            for (total, c) in sum.iter_mut().zip(counts(&part)) {
                total.solutions += c.solutions;
                total.fundamental = total.fundamental.zip(c.fundamental).map(|(a, b)| a + b);
            }
        }
        assert_eq!(sum, [want; 2], "parts of {problem:?} (with and without lanes)");
    }
}

/// An Enumerate call: validated like the service's `Query::enumerate`, then enumerated into a
/// checking sink and compared with the oracle.
fn enumerate_request(req: &pb::EnumerateRequest) {
    let fixed = queens::wire::squares(&req.fixed);
    let shard = queens::wire::shard(req.shard.as_ref());
    let Some(problem) = validate(req.n, &fixed, req.fundamental, shard) else {
        assert!(query().enumerate(req).is_err(), "the service's reading differs");
        return;
    };
    let start_after = match problem.check_start_after(&req.start_after) {
        Ok(after) => after,
        Err(err) => {
            let expected = !req.start_after.is_empty()
                && (req.start_after.len() != req.n as usize
                    || req.start_after.iter().any(|&c| c >= req.n));
            assert!(expected, "start_after {:?} refused: {err}", req.start_after);
            assert!(err.to_string().starts_with("start_after"), "{err}");
            return;
        }
    };
    match &start_after {
        None => assert!(req.start_after.is_empty()),
        Some(after) => assert!(
            after
                .iter()
                .map(|&c| u32::from(c))
                .eq(req.start_after.iter().copied())
        ),
    }
    let after = start_after.as_deref();
    // The service passes the client's limit on unchanged; n <= 10 bounds the boards anyway.
    let limit = (req.limit > 0).then_some(req.limit);
    let got = boards(&problem, after, limit);
    if let Some(limit) = limit {
        assert!(
            got.len() as u64 <= limit,
            "{} boards over limit {limit}",
            got.len()
        );
    }
    let want = oracle_boards(req.n, &fixed, req.fundamental, after);
    let cut = limit.map_or(want.len(), |l| {
        want.len().min(l.min(usize::MAX as u64) as usize)
    });
    let parts = problem.shard().count;
    if parts == 1 {
        assert_eq!(got, want[..cut], "boards of {problem:?} after {after:?}");
    } else {
        for board in &got {
            assert!(
                want.binary_search(board).is_ok(),
                "{board:?} not in the whole search"
            );
        }
        if parts <= MAX_PARTS_CHECKED {
            let mut union = Vec::new();
            for part in all_parts(&problem, &fixed) {
                let boards = boards(&part, after, None);
                if part.shard() == problem.shard() {
                    let cut = got.len().min(boards.len());
                    assert_eq!(got, boards[..cut], "limit cuts the part's own boards");
                }
                union.extend(boards);
            }
            union.sort();
            assert_eq!(union, want, "parts of {problem:?} after {after:?}");
        }
    }
    // The count of the whole question bounds what any enumeration of it streams.
    let whole = Problem::with_max_n(req.n, &fixed, false, Shard::WHOLE, MAX_FUZZ_N).unwrap();
    let total = counts(&whole)[0].solutions;
    assert!(
        got.len() as u64 <= total,
        "{} boards but {total} solutions",
        got.len()
    );
}

/// The service's reading of requests, with the target's largest board.
fn query() -> Query {
    Query {
        max_n: MAX_FUZZ_N,
        ..Query::default()
    }
}

/// Validates like the service (`Problem::with_max_n` with the server's largest n) and checks
/// the verdict against the contract; `None` when the question is refused.
fn validate(n: u32, fixed: &[Square], fundamental: bool, shard: Shard) -> Option<Problem> {
    let valid = (1..=MAX_FUZZ_N).contains(&n)
        && fixed.iter().all(|s| s.row < n && s.column < n)
        && fixed
            .iter()
            .enumerate()
            .all(|(i, s)| !fixed[..i].contains(s))
        && !(fundamental && !fixed.is_empty())
        && shard.index < shard.count.max(1);
    match Problem::with_max_n(n, fixed, fundamental, shard, MAX_FUZZ_N) {
        Ok(problem) => {
            assert!(
                valid,
                "accepted n={n} fixed={fixed:?} {fundamental} {shard:?}"
            );
            assert_eq!(problem.n(), n);
            let mut sorted = fixed.to_vec();
            sorted.sort();
            assert_eq!(problem.fixed(), sorted);
            assert_eq!(problem.fundamental(), fundamental);
            assert_eq!(problem.shard().index, shard.index);
            assert_eq!(problem.shard().count, shard.count.max(1));
            Some(problem)
        }
        Err(err) => {
            assert!(
                !valid,
                "refused n={n} fixed={fixed:?} {fundamental} {shard:?}: {err}"
            );
            let field = match err {
                QueryError::BoardSize { .. } => "n:",
                QueryError::FixedOffBoard { .. } | QueryError::FixedDuplicate { .. } => "fixed[",
                QueryError::FundamentalWithFixed => "fundamental:",
                QueryError::ShardIndex { .. } => "shard.index:",
                QueryError::StartAfterLength { .. } | QueryError::StartAfterEntry { .. } => {
                    "start_after"
                }
            };
            let message = err.to_string();
            assert!(message.starts_with(field), "{message}");
            None
        }
    }
}

/// Every part of `problem`'s shard split (its own part among them), asking the same question.
fn all_parts(problem: &Problem, fixed: &[Square]) -> impl Iterator<Item = Problem> {
    let count = problem.shard().count;
    (0..count).map(move |index| {
        let shard = Shard { index, count };
        Problem::with_max_n(problem.n(), fixed, problem.fundamental(), shard, MAX_FUZZ_N)
            .expect("same question, valid shard")
    })
}

/// Counts through the one entry point, with the SIMD lanes and without them (in that order).
fn counts(problem: &Problem) -> [Counts; 2] {
    static POOL: OnceLock<Pool> = OnceLock::new();
    let pool = POOL.get_or_init(|| Pool::new(2));
    [true, false].map(|lanes| {
        let options = CountOptions {
            threads: 2,
            lanes,
            ..CountOptions::default()
        };
        solver::pool::wait(|done| solver::count(problem, options, pool, done))
            .expect("a result")
            .expect("count")
    })
}

/// Enumerates into a sink that checks every board as it arrives.
fn boards(problem: &Problem, after: Option<&[u8]>, limit: Option<u64>) -> Vec<Vec<u8>> {
    let mut sink = Checked {
        n: problem.n() as usize,
        fixed: problem.fixed(),
        fundamental: problem.fundamental(),
        after,
        boards: Vec::new(),
    };
    let flow = solver::enumerate(problem, after, limit, &mut sink);
    assert!(flow.is_continue(), "the sink never stops the search");
    sink.boards
}

/// A sink that checks each board on arrival and keeps it.
struct Checked<'a> {
    n: usize,
    fixed: &'a [Square],
    fundamental: bool,
    after: Option<&'a [u8]>,
    boards: Vec<Vec<u8>>,
}

impl Sink for Checked<'_> {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        assert_eq!(columns.len(), self.n, "board length");
        assert!(naive::is_solution(columns), "{columns:?} is not a solution");
        for q in self.fixed {
            assert_eq!(
                u32::from(columns[q.row as usize]),
                q.column,
                "{columns:?} lacks the fixed queen {q:?}"
            );
        }
        if let Some(after) = self.after {
            assert!(
                columns > after,
                "{columns:?} not after start_after {after:?}"
            );
        }
        if let Some(last) = self.boards.last() {
            assert!(columns > last.as_slice(), "{columns:?} not after {last:?}");
        }
        if self.fundamental {
            assert!(
                naive::is_representative(columns),
                "{columns:?} is not a class's least"
            );
        }
        self.boards.push(columns.to_vec());
        ControlFlow::Continue(())
    }
}

/// All solutions of the n×n board in lexicographic order, by the naive oracle (kept).
fn solutions(n: u32) -> &'static [Vec<u8>] {
    static ALL: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        (0..=MAX_FUZZ_N as usize)
            .map(naive::solutions)
            .collect()
    });
    &all[n as usize]
}

/// The oracle's boards of a question (whole search, no limit).
fn oracle_boards(
    n: u32,
    fixed: &[Square],
    fundamental: bool,
    after: Option<&[u8]>,
) -> Vec<Vec<u8>> {
    naive::select(solutions(n), fixed, fundamental)
        .filter(|b| after.is_none_or(|a| b.as_slice() > a))
        .cloned()
        .collect()
}

/// The oracle's counts of a question (whole search).
fn oracle_counts(n: u32, fixed: &[Square]) -> Counts {
    Counts {
        solutions: oracle_boards(n, fixed, false, None).len() as u64,
        fundamental: fixed
            .is_empty()
            .then(|| oracle_boards(n, fixed, true, None).len() as u64),
        turn_fixed: None,
    }
}
