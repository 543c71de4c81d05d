//! What a request may ask: the largest board streams at once, and every invalid question
//! names its field (and its proto field path).

use super::*;

#[test]
fn the_largest_board_streams_at_once() {
    let p = problem(32, &[], false, Shard::WHOLE);
    let first = boards(&p, None, Some(3));
    assert_eq!(first.len(), 3);
    assert!(first.windows(2).all(|w| w[0] < w[1]));
    for b in &first {
        assert!(naive::is_solution(b));
    }
    let reps = boards(
        &problem(
            32,
            &[],
            true,
            Shard {
                index: 5,
                count: 1000,
            },
        ),
        None,
        Some(2),
    );
    assert_eq!(reps.len(), 2);
    assert!(
        reps.iter()
            .all(|b| naive::is_representative(b) && naive::is_solution(b))
    );
}

#[test]
fn invalid_questions_name_their_field() {
    let sq = |row, column| Square { row, column };
    let cases: Vec<(Result<Problem, QueryError>, &str)> = vec![
        (Problem::new(0, &[], false, Shard::WHOLE), "n: 0"),
        (Problem::new(33, &[], false, Shard::WHOLE), "n: 33"),
        (
            Problem::with_max_n(13, &[], false, Shard::WHOLE, 12),
            "n: 13",
        ),
        (
            Problem::new(8, &[sq(8, 0)], false, Shard::WHOLE),
            "fixed[0]",
        ),
        (
            Problem::new(8, &[sq(0, 1), sq(2, 9)], false, Shard::WHOLE),
            "fixed[1]",
        ),
        (
            Problem::new(8, &[sq(1, 1), sq(1, 1)], false, Shard::WHOLE),
            "listed twice",
        ),
        (
            Problem::new(8, &[sq(1, 1)], true, Shard::WHOLE),
            "fundamental",
        ),
        (
            Problem::new(8, &[], false, Shard { index: 3, count: 3 }),
            "shard.index: 3",
        ),
        (
            Problem::new(8, &[], false, Shard { index: 1, count: 0 }),
            "shard.index: 1",
        ),
        (
            Problem::new(8, &[], false, Shard { index: 1, count: 1 }),
            "shard.index: 1",
        ),
    ];
    for (result, needle) in cases {
        let message = result.expect_err(needle).to_string();
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
    let p = problem(4, &[], false, Shard::WHOLE);
    let message = p.check_start_after(&[1, 2, 3]).unwrap_err().to_string();
    assert!(message.starts_with("start_after:"), "{message}");
    let message = p.check_start_after(&[1, 2, 4, 0]).unwrap_err().to_string();
    assert!(message.starts_with("start_after[2]: 4"), "{message}");
    assert_eq!(p.check_start_after(&[]), Ok(None));
    assert_eq!(
        p.check_start_after(&[3, 3, 3, 3]),
        Ok(Some(vec![3, 3, 3, 3]))
    );
}

#[test]
fn every_refusal_gives_its_proto_field_path() {
    let sq = |row, column| Square { row, column };
    let refused = |n, fixed: &[Square], fundamental, shard| {
        Problem::new(n, fixed, fundamental, shard).expect_err("refused")
    };
    let p = problem(4, &[], false, Shard::WHOLE);
    let cases = [
        (refused(0, &[], false, Shard::WHOLE), "n"),
        (refused(8, &[sq(8, 0)], false, Shard::WHOLE), "fixed[0].row"),
        (refused(8, &[sq(9, 9)], false, Shard::WHOLE), "fixed[0].row"),
        (
            refused(8, &[sq(0, 1), sq(2, 9)], false, Shard::WHOLE),
            "fixed[1].column",
        ),
        (
            refused(8, &[sq(1, 1), sq(2, 2), sq(1, 1)], false, Shard::WHOLE),
            "fixed[2]",
        ),
        (refused(8, &[sq(1, 1)], true, Shard::WHOLE), "fundamental"),
        (
            refused(8, &[], false, Shard { index: 3, count: 3 }),
            "shard.index",
        ),
        (p.check_start_after(&[1, 2, 3]).unwrap_err(), "start_after"),
        (
            p.check_start_after(&[1, 2, 4, 0]).unwrap_err(),
            "start_after[2]",
        ),
    ];
    for (error, field) in cases {
        assert_eq!(error.field(), field, "{error}");
        // The message starts with the field, or with the square whose coordinate it is.
        let head = field.trim_end_matches(".row").trim_end_matches(".column");
        assert!(
            error.to_string().starts_with(&format!("{head}: ")),
            "{error}"
        );
    }
}
