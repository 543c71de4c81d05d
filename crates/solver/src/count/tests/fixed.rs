//! Fixed queens against the plain search and the naive oracle: random and symmetric sets,
//! a centre queen, larger boards, attacking or complete sets, and the border
//! constellations' orbits.

use super::*;

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
