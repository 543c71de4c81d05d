//! The enumeration against the naive oracle and OEIS: small boards, fixed queens, resume
//! points, limits, shards and prefix tasks (property tests), cancellation and sinks.

use super::*;

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
