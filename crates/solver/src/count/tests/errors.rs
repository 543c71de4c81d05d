//! Cancellation on every path and mid-count, sums that do not fit, and parts that make a
//! whole only when they are of one kind.

use super::*;

#[test]
fn a_raised_flag_cancels_every_path() {
    let cancel = Arc::new(AtomicBool::new(true));
    for lanes in [true, false] {
        for threads in [1, 2] {
            for n in [6u32, 12, 16] {
                let p = problem(n, &[], Shard::WHOLE);
                let got = counted(&p, threads, lanes, cancel.clone());
                assert_eq!(got, Err(CountError::Cancelled));
            }
            let fixed = problem(14, &[Square { row: 3, column: 5 }], Shard::WHOLE);
            let got = counted(&fixed, threads, lanes, cancel.clone());
            assert_eq!(got, Err(CountError::Cancelled));
        }
    }
}

#[test]
fn a_flag_raised_mid_count_stops_both_threads_within_a_second() {
    let cancel = Arc::new(AtomicBool::new(false));
    let p = problem(19, &[], Shard::WHOLE);
    let (result, stopping) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| counted(&p, 2, true, cancel.clone()));
        std::thread::sleep(Duration::from_millis(200));
        cancel.store(true, Ordering::Relaxed);
        let raised = Instant::now();
        let result = worker.join().expect("no panic");
        (result, raised.elapsed())
    });
    assert_eq!(result, Err(CountError::Cancelled));
    assert!(
        stopping < Duration::from_secs(1),
        "took {stopping:?} to stop"
    );
}

#[test]
fn sums_that_do_not_fit_are_errors() {
    let big = Partial {
        solutions: u64::MAX,
        classes: 1,
    };
    let one = Partial {
        solutions: 1,
        classes: 1,
    };
    assert_eq!(big.add(one), Err(CountError::Overflow));
    assert_eq!(
        one.add(one),
        Ok(Partial {
            solutions: 2,
            classes: 2
        })
    );
}

#[test]
fn parts_make_a_whole_only_when_they_are_of_one_kind() {
    let part = |solutions, fundamental, turn_fixed| Counts {
        solutions,
        fundamental,
        turn_fixed,
    };
    let whole = |parts: &[Counts]| Counts::whole(parts.iter().copied());
    // n = 8 in classes, and in turn-fixed points: (92 + 4) / 8 = 12.
    let classes = [part(60, Some(8), None), part(32, Some(4), None)];
    assert_eq!(whole(&classes), Ok(part(92, Some(12), None)));
    let points = [part(60, None, Some(4)), part(32, None, Some(0))];
    assert_eq!(whole(&points), Ok(part(92, Some(12), None)));
    // Fixed queens: no classes, as before.
    assert_eq!(
        whole(&[part(3, None, None), part(4, None, None)]),
        Ok(part(7, None, None))
    );
    assert_eq!(whole(&[]), Ok(part(0, Some(0), None)));
    for mixed in [
        [part(60, Some(8), None), part(32, None, Some(4))],
        [part(60, None, None), part(32, None, Some(4))],
        [part(60, Some(8), Some(4)), part(32, Some(4), None)],
    ] {
        assert_eq!(whole(&mixed), Err(PartsError::Mixed), "{mixed:?}");
    }
    assert_eq!(
        whole(&[part(60, None, Some(5)), part(32, None, Some(0))]),
        Err(PartsError::NotWhole)
    );
    assert_eq!(
        whole(&[part(u64::MAX, None, Some(1)), part(1, None, Some(0))]),
        Err(PartsError::Overflow)
    );
    assert_eq!(
        whole(&[part(8, None, Some(u64::MAX)), part(0, None, Some(8))]),
        Err(PartsError::Overflow)
    );
}
