//! Fuzz target `request`: arbitrary bytes through request decoding and validation into the
//! solver, on boards of at most [`MAX_FUZZ_N`] squares a side so every search is quick.
//!
//! The first byte picks the call (even: Count, odd: Enumerate); the rest is decoded with prost
//! as a `queens.v1.CountRequest` or `EnumerateRequest` (bytes that do not decode end the run,
//! as the service answers them with an error). The request is then mapped and validated as
//! `src/service.rs` does (`count_problem`, `enumeration`) and handed to the solver. Checked:
//!
//! - validation accepts exactly the questions the contract allows, and every refusal renders
//!   a message that starts with the field at fault;
//! - Enumerate: every board has `n` columns below `n`, is a solution, holds the fixed queens,
//!   comes strictly after `start_after` and after the board before it, and with `fundamental`
//!   is the least member of its symmetry class; the whole search gives exactly the oracle's
//!   boards (cut at `limit`), a shard gives a subset of them, and the parts of a split into at
//!   most [`MAX_PARTS_CHECKED`] parts together give all of them;
//! - Count: `count` and `count_fast` give the oracle's `solutions` (and `fundamental` when no
//!   queens are fixed) for the whole search, and a split's parts add up to them.
//!
//! The oracle is a plain backtracking search written here, independent of the solver. Any
//! panic is a finding.

#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use queens::pb;
use queens::service;
use queens::solver::{self, Counts, Problem, QueryError, Shard, Sink, Square};
use std::ops::ControlFlow;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

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

/// A Count call: validated like the service's `count_problem`, then counted two ways.
fn count_request(req: &pb::CountRequest) {
    let fixed = service::squares(&req.fixed);
    let shard = service::shard(req.shard.as_ref());
    let Some(problem) = validate(req.n, &fixed, false, shard) else {
        return;
    };
    let want = oracle_counts(req.n, &fixed);
    let got = counts(&problem);
    let parts = problem.shard().count;
    if parts == 1 {
        assert_eq!(got, [want; 2], "count, count_fast of {problem:?}");
        return;
    }
    for c in got {
        assert!(c.solutions <= want.solutions, "shard count of {problem:?}");
        assert_eq!(c.fundamental.is_some(), want.fundamental.is_some());
    }
    if parts <= MAX_PARTS_CHECKED {
        let zero = Counts {
            solutions: 0,
            fundamental: want.fundamental.map(|_| 0),
        };
        let mut sum = [zero; 2];
        for part in all_parts(&problem, &fixed) {
            for (total, c) in sum.iter_mut().zip(counts(&part)) {
                total.solutions += c.solutions;
                total.fundamental = total.fundamental.zip(c.fundamental).map(|(a, b)| a + b);
            }
        }
        assert_eq!(sum, [want; 2], "parts of {problem:?} (count, count_fast)");
    }
}

/// An Enumerate call: validated like the service's `enumeration`, then enumerated into a
/// checking sink and compared with the oracle.
fn enumerate_request(req: &pb::EnumerateRequest) {
    let fixed = service::squares(&req.fixed);
    let shard = service::shard(req.shard.as_ref());
    let Some(problem) = validate(req.n, &fixed, req.fundamental, shard) else {
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

/// Counts with the search the service uses and with the fast path (in that order).
fn counts(problem: &Problem) -> [Counts; 2] {
    let cancel = AtomicBool::new(false);
    [
        solver::count(problem, &cancel).expect("count"),
        solver::count_fast(problem, &cancel).expect("count_fast"),
    ]
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
        assert!(is_solution(columns), "{columns:?} is not a solution");
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
                is_representative(columns),
                "{columns:?} is not a class's least"
            );
        }
        self.boards.push(columns.to_vec());
        ControlFlow::Continue(())
    }
}

/// Whether `columns` (one queen per row) is a solution: every column on the board, no two
/// queens attacking.
fn is_solution(columns: &[u8]) -> bool {
    columns.iter().all(|&c| (c as usize) < columns.len()) && no_attacks(columns)
}

/// Whether no two queens of `columns` (one per row, possibly a partial board) share a column
/// or a diagonal.
fn no_attacks(columns: &[u8]) -> bool {
    (0..columns.len()).all(|r| {
        (0..r).all(|q| {
            let (a, b) = (columns[q] as usize, columns[r] as usize);
            a != b && a.abs_diff(b) != r - q
        })
    })
}

/// Whether `columns` is lexicographically least among its eight rotations and reflections.
fn is_representative(columns: &[u8]) -> bool {
    let n = columns.len();
    let last = n - 1;
    let maps: [fn(usize, usize, usize) -> (usize, usize); 8] = [
        |_, r, c| (r, c),
        |l, r, c| (r, l - c),
        |l, r, c| (l - r, c),
        |l, r, c| (l - r, l - c),
        |_, r, c| (c, r),
        |l, r, c| (c, l - r),
        |l, r, c| (l - c, r),
        |l, r, c| (l - c, l - r),
    ];
    maps.iter().all(|map| {
        let mut image = vec![0u8; n];
        for (r, &c) in columns.iter().enumerate() {
            let (r2, c2) = map(last, r, c as usize);
            image[r2] = c2 as u8;
        }
        columns <= image.as_slice()
    })
}

/// All solutions of the n×n board in lexicographic order, from a plain backtracking search.
fn solutions(n: u32) -> &'static [Vec<u8>] {
    static ALL: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        (0..=MAX_FUZZ_N as usize)
            .map(|n| {
                let mut out = Vec::new();
                place(n, &mut Vec::new(), &mut out);
                out
            })
            .collect()
    });
    &all[n as usize]
}

/// Extends `board` row by row with every safe column, in ascending order.
fn place(n: usize, board: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
    if board.len() == n {
        out.push(board.clone());
        return;
    }
    for c in 0..n as u8 {
        board.push(c);
        if no_attacks(board) {
            place(n, board, out);
        }
        board.pop();
    }
}

/// The oracle's boards of a question (whole search, no limit).
fn oracle_boards(
    n: u32,
    fixed: &[Square],
    fundamental: bool,
    after: Option<&[u8]>,
) -> Vec<Vec<u8>> {
    solutions(n)
        .iter()
        .filter(|b| {
            fixed
                .iter()
                .all(|q| u32::from(b[q.row as usize]) == q.column)
        })
        .filter(|b| !fundamental || is_representative(b))
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
    }
}
