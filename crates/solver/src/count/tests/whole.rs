//! Whole boards and shards against OEIS: on one and two threads, on the join path, without
//! lanes, sharing a thread, through the single-thread entry point, and shard parts that add
//! up.

use super::*;

#[test]
fn whole_boards_match_oeis_on_one_and_two_threads() {
    for threads in [1, 2] {
        for n in 1..=16u32 {
            let got = fast(&problem(n, &[], Shard::WHOLE), threads);
            assert_oeis(n, got, &format!("{threads} threads"));
        }
    }
}

/// Count's join path (plain boards from n = 16 on) forced on every
/// smaller board, through the same engines: solutions and classes from fixed points.
fn joined(n: u32, threads: usize, cancel: Arc<AtomicBool>) -> Result<Counts, CountError> {
    let pool = Pool::new(threads);
    let options = CountOptions {
        threads,
        lanes: false,
        cancel,
        ..CountOptions::default()
    };
    let (settings, on) = (options.clone(), pool.clone());
    let parts = wait(|done| {
        pool.spawn(move || super::super::join::parts(n, Shard::WHOLE, &settings, &on, done))
    })
    .expect("parts")?;
    let progress = options.progress.clone();
    let got = wait(|done| {
        super::super::start(
            n,
            parts,
            super::super::Classes::FixedPoints,
            options,
            &pool,
            Box::new(done),
        )
    })
    .expect("a result");
    if let Ok(counts) = &got {
        assert_finished(&progress, counts);
    }
    got
}

#[test]
fn the_join_path_matches_oeis_on_one_and_two_threads_and_stops_when_cancelled() {
    for threads in [1, 2] {
        for n in 4..=16u32 {
            let got = joined(n, threads, Arc::default()).expect("count");
            assert_oeis(n, got, &format!("join path, {threads} threads"));
        }
        let raised = Arc::new(AtomicBool::new(true));
        assert_eq!(joined(14, threads, raised), Err(CountError::Cancelled));
    }
}

/// Counting without lanes (as on a CPU without AVX2) gives the same answers: whole boards,
/// shards, a centre queen (its symmetric path) and fixed queens.
#[test]
fn without_lanes_the_counts_match_too() {
    for threads in [1, 2] {
        for n in 1..=13u32 {
            let got = counted(
                &problem(n, &[], Shard::WHOLE),
                threads,
                false,
                Arc::default(),
            );
            assert_oeis(
                n,
                got.expect("count"),
                &format!("no lanes, {threads} threads"),
            );
        }
    }
    for index in 0..5 {
        let shard = Shard { index, count: 5 };
        let got = counted(&problem(12, &[], shard), 2, false, Arc::default()).expect("count");
        assert_eq!(
            got,
            fast(&problem(12, &[], shard), 2),
            "no lanes, {shard:?}"
        );
    }
    for n in [7u32, 9, 11] {
        let centre = Square {
            row: n / 2,
            column: n / 2,
        };
        let pair = [
            Square { row: 1, column: 2 },
            Square {
                row: 0,
                column: n - 1,
            },
        ];
        for queens in [&[centre][..], &pair] {
            let p = problem(n, queens, Shard::WHOLE);
            let got = counted(&p, 2, false, Arc::default()).expect("count");
            assert_eq!(got, plain(&p), "no lanes: n = {n}, {queens:?}");
        }
    }
}

/// Counts that share one thread take turns (each gives way after its slice while the other
/// waits, lanes and all) and both come out right.
#[test]
fn counts_sharing_a_thread_take_turns_and_agree() {
    let pool = Pool::new(1);
    let started = Instant::now();
    let results: Vec<_> = [16u32, 13]
        .iter()
        .map(|&n| {
            let (tx, rx) = std::sync::mpsc::channel();
            let p = problem(n, &[], Shard::WHOLE);
            count(&p, CountOptions::default(), &pool, move |c| {
                let _ = tx.send((c, started.elapsed()));
            });
            (n, rx)
        })
        .collect();
    let mut finished = Vec::new();
    for (n, rx) in results {
        let (got, at) = rx.recv().expect("a result");
        assert_oeis(n, got.expect("count"), "sharing one thread");
        finished.push(at);
    }
    // n = 13 was queued behind n = 16 yet finished first: they took turns.
    assert!(finished[1] < finished[0], "{finished:?}");
}

#[test]
fn the_single_thread_entry_point_matches_oeis() {
    for n in [6u32, 9, 12] {
        let got = fast(&problem(n, &[], Shard::WHOLE), 1);
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

/// Shard counts in `[lo, hi)` from a fixed-seed generator (splitmix64): the same every run.
fn random_shard_counts(seed: u64, lo: u32, hi: u32, how_many: usize) -> Vec<u32> {
    let mut state = seed;
    (0..how_many)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            lo + ((z ^ (z >> 31)) % u64::from(hi - lo)) as u32
        })
        .collect()
}

#[test]
fn join_shards_add_up_to_oeis_through_their_turn_fixed_points() {
    let mut sixteen = vec![1, 2, 3, 7, 16, 64, 257];
    sixteen.extend(random_shard_counts(16, 2, 1000, 2));
    // Each n = 17 sum costs at least a whole count (about 2 s here): two of them.
    let seventeen = vec![2, 257];
    for (n, counts) in [(16, sixteen), (17, seventeen)] {
        for parts in counts {
            let total = sum_of_parts(n, &[], parts, 2);
            assert_oeis(n, total, &format!("{parts} join shards"));
        }
    }
    // A part on its own never claims classes, and is the same on one thread or two.
    let p = problem(16, &[], Shard { index: 5, count: 9 });
    let part = fast(&p, 1);
    assert_eq!(part.fundamental, None);
    assert!(part.solutions > 0 && part.turn_fixed.is_some(), "{part:?}");
    assert_eq!(fast(&p, 2), part);
}

#[test]
fn more_parts_than_subproblems_still_add_up() {
    // n = 7 has a few dozen constellation orbits; most of 500 parts are empty.
    let total = sum_of_parts(7, &[], 500, 1);
    assert_eq!(total.solutions, 40);
    assert_eq!(total.fundamental, Some(6));
    let fixed = [Square { row: 2, column: 3 }];
    let total = sum_of_parts(8, &fixed, 700, 2);
    assert_eq!(total, plain(&problem(8, &fixed, Shard::WHOLE)));
}

#[test]
fn a_part_is_the_same_every_time() {
    let p = problem(12, &[], Shard { index: 3, count: 7 });
    let first = fast(&p, 2);
    for threads in [1, 2, 3] {
        assert_eq!(fast(&p, threads), first);
    }
}

/// The shortcut on the caller's thread answers what the entry point does, for whole boards
/// up to its bound (with a fixed queen too), and leaves shards and bigger boards to it.
#[test]
fn count_now_answers_the_smallest_whole_boards_only() {
    use super::super::{NOW_MAX_N, count_now};
    for n in 1..=NOW_MAX_N {
        let whole = problem(n, &[], Shard::WHOLE);
        assert_eq!(count_now(&whole), Some(Ok(fast(&whole, 1))), "n = {n}");
        let corner = problem(n, &[Square { row: 0, column: 0 }], Shard::WHOLE);
        assert_eq!(
            count_now(&corner),
            Some(Ok(fast(&corner, 1))),
            "n = {n}, a corner"
        );
    }
    let half = Shard { index: 0, count: 2 };
    assert_eq!(count_now(&problem(NOW_MAX_N, &[], half)), None);
    assert_eq!(count_now(&problem(NOW_MAX_N + 1, &[], Shard::WHOLE)), None);
}
