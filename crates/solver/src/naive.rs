//! The naive oracle: plain backtracking over permutations with explicit attack checks, and
//! symmetry classes from explicit coordinate transforms. Slow and obviously right, and
//! written apart from the solver's own definitions (`geometry.rs`) so that it checks them.
//!
//! The one oracle of the project: the solver's unit tests use it, and so do the integration
//! tests, the fuzz target and `queens-load soak`.

use super::geometry::Square;

/// Every solution of the n×n board, in lexicographic order.
pub fn solutions(n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut board = Vec::with_capacity(n);
    extend(n, &mut board, &mut out);
    out
}

fn extend(n: usize, board: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
    if board.len() == n {
        out.push(board.clone());
        return;
    }
    for c in 0..n as u8 {
        let r = board.len();
        let safe = board
            .iter()
            .enumerate()
            .all(|(qr, &qc)| qc != c && (r - qr) as i32 != (i32::from(c) - i32::from(qc)).abs());
        if safe {
            board.push(c);
            extend(n, board, out);
            board.pop();
        }
    }
}

/// Whether `board` (row r's queen in column `board[r]`) is a solution of the n×n board, n
/// its length: every column on the board, no two queens sharing a column or a diagonal.
pub fn is_solution(board: &[u8]) -> bool {
    let n = board.len();
    (0..n).all(|i| {
        usize::from(board[i]) < n
            && (i + 1..n).all(|j| {
                board[i] != board[j]
                    && (j - i) as i32 != (i32::from(board[i]) - i32::from(board[j])).abs()
            })
    })
}

/// A symmetry of the board as a map of squares, given the last index.
type Transform = fn(usize, usize, usize) -> (usize, usize);

/// The eight images of a board under rotations and reflections, as column vectors.
pub fn images(board: &[u8]) -> Vec<Vec<u8>> {
    let n = board.len();
    let last = n - 1;
    let squares: Vec<(usize, usize)> = board
        .iter()
        .enumerate()
        .map(|(r, &c)| (r, c as usize))
        .collect();
    let maps: [Transform; 8] = [
        |_, r, c| (r, c),
        |l, r, c| (r, l - c),
        |l, r, c| (l - r, c),
        |l, r, c| (l - r, l - c),
        |_, r, c| (c, r),
        |l, r, c| (l - c, l - r),
        |l, r, c| (c, l - r),
        |l, r, c| (l - c, r),
    ];
    maps.iter()
        .map(|f| {
            let mut image = vec![0u8; n];
            for &(r, c) in &squares {
                let (r2, c2) = f(last, r, c);
                image[r2] = c2 as u8;
            }
            image
        })
        .collect()
}

/// Whether a board is the least of its class.
pub fn is_representative(board: &[u8]) -> bool {
    images(board).iter().all(|image| board <= image.as_slice())
}

/// The oracle's answer to a question: every solution of the n×n board holding the queens
/// `fixed`, only the least of each symmetry class when `fundamental`, in lexicographic order.
pub fn answer(n: usize, fixed: &[Square], fundamental: bool) -> Vec<Vec<u8>> {
    select(&solutions(n), fixed, fundamental).cloned().collect()
}

/// The boards of `all` (the solutions of one board size, as [`solutions`] lists them) that
/// hold the queens `fixed`, only the least of each class when `fundamental`, in their order:
/// [`answer`] for a caller that keeps the list.
pub fn select<'a>(
    all: &'a [Vec<u8>],
    fixed: &'a [Square],
    fundamental: bool,
) -> impl Iterator<Item = &'a Vec<u8>> + 'a {
    all.iter()
        .filter(|b| {
            fixed
                .iter()
                .all(|q| u32::from(b[q.row as usize]) == q.column)
        })
        .filter(move |b| !fundamental || is_representative(b))
}
