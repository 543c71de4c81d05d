//! The count's lanes against the board search on every tier: paused and resumed, and
//! boards with more free rows than a lane holds.

use super::*;

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
