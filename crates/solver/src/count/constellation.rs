//! Border constellations: the queens a solution has on the board's edge, one per edge line
//! (row 0, row n-1, column 0, column n-1; a corner queen serves two lines).
//!
//! The eight symmetries of the board permute constellations, and symmetric constellations
//! have equally many completions, so the count searches one constellation per orbit and
//! weighs it by the orbit's size. Here: listing those representatives with their stabilizers.
//! Not here: searching their completions (`board.rs`) or adding them up (`mod.rs`).

use crate::geometry::{Square, Symmetry, attack, peaceful};

/// The queens on the four edge lines, as (column in row 0, column in row n-1, row in column
/// 0, row in column n-1); a board's constellations are compared as these tuples.
type Edges = [u8; 4];

/// One constellation per orbit of the symmetry group, with what the count needs of its orbit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Constellation {
    /// Its distinct queens (two to four: corners are shared by two edge lines), in the image
    /// of the orbit that the search completes fastest.
    pub(super) queens: Vec<Square>,
    /// Number of symmetries mapping it to itself (1, 2, 4 or 8); the orbit has 8 / this.
    pub(super) stabilizer: u64,
    /// Whether a half turn maps it to itself; only then can a completion be symmetric.
    pub(super) rotational: bool,
}

/// The representatives (least edge tuple of their orbit) of `n`×`n` boards, `n` at least 2,
/// in increasing order of the tuple.
pub(super) fn representatives(n: u32) -> Vec<Constellation> {
    edge_tuples(n)
        .filter_map(|edges| representative(n, edges))
        .collect()
}

/// Every edge tuple of an `n`×`n` board, in increasing order.
fn edge_tuples(n: u32) -> impl Iterator<Item = Edges> {
    let n = n as u8;
    (0..n).flat_map(move |a| {
        (0..n).flat_map(move |b| (0..n).flat_map(move |c| (0..n).map(move |d| [a, b, c, d])))
    })
}

/// When the constellation `queens` (with edge tuple `edges`) has the least tuple of its orbit
/// under the symmetries `group`: how many of them map it to itself.
fn stabilizer_if_least(n: u32, queens: &[Square], edges: Edges, group: &[Symmetry]) -> Option<u64> {
    let mut stabilizer = 0;
    for &g in group {
        let image: Vec<Square> = queens.iter().map(|&q| g.apply(n, q)).collect();
        match edges_of(n, &image)?.cmp(&edges) {
            std::cmp::Ordering::Less => return None,
            std::cmp::Ordering::Equal => stabilizer += 1,
            std::cmp::Ordering::Greater => {}
        }
    }
    Some(stabilizer)
}

/// The constellation of `edges` when its queens do not attack each other and it is the least
/// of its orbit.
fn representative(n: u32, edges: Edges) -> Option<Constellation> {
    let queens = queens_of(n, edges);
    if !peaceful(&queens) {
        return None;
    }
    let stabilizer = stabilizer_if_least(n, &queens, edges, &Symmetry::ALL)?;
    let half_turn: Vec<Square> = queens
        .iter()
        .map(|&q| Symmetry::HALF_TURN.apply(n, q))
        .collect();
    Some(Constellation {
        rotational: edges_of(n, &half_turn) == Some(edges),
        queens: fastest_image(n, &queens, &Symmetry::ALL),
        stabilizer,
    })
}

/// The image of a constellation that the top-down search completes fastest, by a rule
/// measured on n = 12..15 (within 8% of the best image's node count, where the least
/// tuple's image needs 75% more): the bottom row's queen nearest a corner, then one side
/// queen as low as can be; ties go to the lower symmetry number. Only the images by the
/// symmetries in `group` are candidates.
fn fastest_image(n: u32, queens: &[Square], group: &[Symmetry]) -> Vec<Square> {
    let last = n - 1;
    let key = |image: &[Square]| {
        let edges = edges_of(n, image).unwrap_or_default();
        let bottom = u32::from(edges[1]);
        let lowest_side = u32::from(edges[2].max(edges[3]));
        (bottom.min(last - bottom), last - lowest_side)
    };
    group
        .iter()
        .map(|&g| {
            queens
                .iter()
                .map(|&q| g.apply(n, q))
                .collect::<Vec<Square>>()
        })
        .min_by_key(|image| key(image))
        .unwrap_or_else(|| queens.to_vec())
}

/// The symmetries that map the set `fixed` to itself, in number order; always holds the
/// identity.
pub(super) fn symmetries_of(n: u32, fixed: &[Square]) -> Vec<Symmetry> {
    let mut sorted = fixed.to_vec();
    sorted.sort();
    Symmetry::ALL
        .into_iter()
        .filter(|&g| {
            let mut image: Vec<Square> = fixed.iter().map(|&q| g.apply(n, q)).collect();
            image.sort();
            image == sorted
        })
        .collect()
}

/// A board to count for a fixed set: the fixed queens plus one border constellation, and how
/// many boards of its orbit it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Weighted {
    /// The fixed queens and the constellation's queens, without repeats.
    pub(super) queens: Vec<Square>,
    /// Size of the constellation's orbit under the fixed set's symmetries.
    pub(super) orbit: u64,
}

/// The border constellations that fit the queens `fixed` (no two attack each other), one per
/// orbit of `group` (symmetries mapping `fixed` to itself, from [`symmetries_of`]), each in
/// its fastest image within the group. Each solution holding `fixed` has exactly one
/// constellation, and symmetric constellations have equally many completions, so the
/// completions of these boards, each times its orbit, add up to the count.
pub(super) fn representatives_under(n: u32, fixed: &[Square], group: &[Symmetry]) -> Vec<Weighted> {
    edge_tuples(n)
        .filter_map(|edges| {
            let queens = queens_of(n, edges);
            let fits = queens
                .iter()
                .all(|&q| fixed.iter().all(|&f| f == q || !attack(f, q)));
            if !fits || !peaceful(&queens) {
                return None;
            }
            let stabilizer = stabilizer_if_least(n, &queens, edges, group)?;
            Some(Weighted {
                queens: with_fixed(&fastest_image(n, &queens, group), fixed),
                orbit: group.len() as u64 / stabilizer,
            })
        })
        .collect()
}

/// `queens` and `fixed` together, without repeats.
fn with_fixed(queens: &[Square], fixed: &[Square]) -> Vec<Square> {
    let mut all = fixed.to_vec();
    for q in queens {
        if !all.contains(q) {
            all.push(*q);
        }
    }
    all
}

/// The distinct squares named by `edges`.
fn queens_of(n: u32, [a, b, c, d]: Edges) -> Vec<Square> {
    let last = n - 1;
    let mut queens = Vec::with_capacity(4);
    for (row, column) in [
        (0, u32::from(a)),
        (last, u32::from(b)),
        (u32::from(c), 0),
        (u32::from(d), last),
    ] {
        let q = Square { row, column };
        if !queens.contains(&q) {
            queens.push(q);
        }
    }
    queens
}

/// The edge tuple of a peaceful set of queens holding every edge line.
fn edges_of(n: u32, queens: &[Square]) -> Option<Edges> {
    let last = n - 1;
    let find = |hit: &dyn Fn(&Square) -> bool, pick: &dyn Fn(&Square) -> u32| {
        queens.iter().find(|q| hit(q)).map(|q| pick(q) as u8)
    };
    Some([
        find(&|q| q.row == 0, &|q| q.column)?,
        find(&|q| q.row == last, &|q| q.column)?,
        find(&|q| q.column == 0, &|q| q.row)?,
        find(&|q| q.column == last, &|q| q.row)?,
    ])
}
