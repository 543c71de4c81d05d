//! The batch side's tests: orchestrators' variables to shards, local shard counts summed
//! to the whole with their provenance, sums that name missing and repeated shards, refuse
//! mixed boards, splits and builds, and digest their counts.

use super::*;
use crate::solver::Shard;

/// A recount of `fraction` of the keys in another tier, seed 0.
fn tier_recount(fraction: f64) -> crate::solver::Recount {
    crate::solver::Recount {
        fraction,
        seed: 0,
        method: crate::solver::RecountMethod::Tier,
    }
}

fn line(index: u32, count: u32, solutions: u64) -> String {
    serde_json::to_string(&ShardCount {
        n: 8,
        shard: ShardId { index, count },
        solutions,
        fundamental: Some(1),
        turn_fixed: None,
        recounted: None,
        seconds: 0.0,
        provenance: Provenance::default(),
    })
    .unwrap()
}

/// The shard `shard_from` picks with only these variables set.
fn shard_with(
    shard: Option<Shard>,
    shards: Option<u32>,
    variables: &[(&str, &str)],
) -> Result<Shard, TaskShardError> {
    shard_from(shard, shards, |name| {
        variables
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    })
}

/// A Slurm array task's variables: task `id` of `--array=min-max` (`count` tasks).
fn slurm(
    id: &'static str,
    count: &'static str,
    min: &'static str,
    max: &'static str,
) -> Vec<(&'static str, &'static str)> {
    vec![
        (SLURM_TASK_ID, id),
        (SLURM_TASK_COUNT, count),
        (SLURM_TASK_MIN, min),
        (SLURM_TASK_MAX, max),
        (SLURM_TASK_STEP, "1"),
    ]
}

fn shard(index: u32, count: u32) -> Shard {
    Shard { index, count }
}

#[test]
fn kubernetes_index_with_shards() {
    let k = [(INDEX_VARIABLE, "3")];
    assert_eq!(shard_with(None, Some(8), &k).unwrap(), shard(3, 8));
    // Without --shards an Indexed Job's index alone means nothing, as before.
    assert_eq!(shard_with(None, None, &k).unwrap(), Shard::WHOLE);
    assert_eq!(shard_with(None, None, &[]).unwrap(), Shard::WHOLE);
    let err = shard_with(None, Some(8), &[]).unwrap_err().to_string();
    assert!(
        err.contains("JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID"),
        "{err}"
    );
    let err = shard_with(None, Some(8), &[(INDEX_VARIABLE, "x")])
        .unwrap_err()
        .to_string();
    assert_eq!(err, r#"$JOB_COMPLETION_INDEX is "x", not a number"#);
    let err = shard_with(None, Some(8), &[(INDEX_VARIABLE, "8")])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "$JOB_COMPLETION_INDEX is 8, but there are 8 shards (0 to 7)"
    );
}

#[test]
fn slurm_array_gives_index_and_count() {
    // sbatch --array=0-15: task 5 counts shard 5 of 16, with or without --shards 16.
    let array = slurm("5", "16", "0", "15");
    assert_eq!(shard_with(None, None, &array).unwrap(), shard(5, 16));
    assert_eq!(shard_with(None, Some(16), &array).unwrap(), shard(5, 16));
    // --shard wins over everything.
    assert_eq!(
        shard_with(Some(shard(1, 2)), None, &array).unwrap(),
        shard(1, 2)
    );
    // Whitespace around a number is fine; one task is the whole search.
    let one = slurm(" 0 ", "1", "0", "0");
    assert_eq!(shard_with(None, None, &one).unwrap(), shard(0, 1));
    // No STEP variable (older Slurm) is no problem when the ids are 0..K-1.
    let mut no_step = array.clone();
    no_step.retain(|(n, _)| *n != SLURM_TASK_STEP);
    assert_eq!(shard_with(None, None, &no_step).unwrap(), shard(5, 16));
}

#[test]
fn slurm_and_kubernetes_must_agree() {
    let mut both = slurm("5", "16", "0", "15");
    both.push((INDEX_VARIABLE, "5"));
    assert_eq!(shard_with(None, None, &both).unwrap(), shard(5, 16));
    both.pop();
    both.push((INDEX_VARIABLE, "6"));
    let err = shard_with(None, None, &both).unwrap_err();
    assert!(
        matches!(
            err,
            TaskShardError::Conflict {
                kubernetes: 6,
                slurm: 5
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.starts_with("$JOB_COMPLETION_INDEX is 6 but $SLURM_ARRAY_TASK_ID is 5"),
        "{err}"
    );
    // --shard settles it.
    assert_eq!(
        shard_with(Some(shard(2, 4)), None, &both).unwrap(),
        shard(2, 4)
    );
}

#[test]
fn slurm_arrays_that_are_not_0_to_k_minus_1_are_refused() {
    let refused = |variables: &[(&str, &str)], variable: &str, value: &str| {
        let err = shard_with(None, None, variables).unwrap_err();
        match &err {
            TaskShardError::NotShards {
                variable: v,
                value: x,
            } => {
                assert_eq!((*v, x.as_str()), (variable, value), "{err}")
            }
            _ => panic!("{err:?}"),
        }
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("${variable} is {value}, ")),
            "{text}"
        );
        assert!(text.contains("--shards K"), "{text}");
    };
    // --array=1-16: ids from 1.
    refused(&slurm("1", "16", "1", "16"), SLURM_TASK_MIN, "1");
    // --array=0-30:2: a step.
    let mut stepped = slurm("2", "16", "0", "30");
    stepped.retain(|(n, _)| *n != SLURM_TASK_STEP);
    stepped.push((SLURM_TASK_STEP, "2"));
    refused(&stepped, SLURM_TASK_STEP, "2");
    // --array=0,1,5: a gap (Slurm says step 1).
    refused(&slurm("5", "3", "0", "5"), SLURM_TASK_MAX, "5");
    // The variables that show the shape are missing.
    let mut bare = slurm("5", "16", "0", "15");
    bare.retain(|(n, _)| *n == SLURM_TASK_ID || *n == SLURM_TASK_COUNT);
    refused(&bare, SLURM_TASK_MIN, "unset");
    bare.push((SLURM_TASK_MIN, "0"));
    refused(&bare, SLURM_TASK_MAX, "unset");
    refused(&slurm("0", "0", "0", "0"), SLURM_TASK_COUNT, "0");
    let err = shard_with(None, None, &[(SLURM_TASK_ID, "5")]).unwrap_err();
    assert!(matches!(err, TaskShardError::NoCount), "{err:?}");
    let err = shard_with(None, None, &slurm("5", "sixteen", "0", "15")).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"$SLURM_ARRAY_TASK_COUNT is "sixteen", not a number"#
    );
}

#[test]
fn slurm_ids_with_shards_are_taken_as_they_are() {
    // sbatch --array=3,7 … --shards 16 reruns shards 3 and 7 of 16.
    let rerun = slurm("7", "2", "3", "7");
    assert_eq!(shard_with(None, Some(16), &rerun).unwrap(), shard(7, 16));
    let err = shard_with(None, Some(4), &rerun).unwrap_err().to_string();
    assert_eq!(
        err,
        "$SLURM_ARRAY_TASK_ID is 7, but there are 4 shards (0 to 3)"
    );
}

#[test]
fn local_shards_sum_to_the_whole() {
    let lines: Vec<String> = (0..5)
        .map(|i| {
            let c = count_local(10, &[], Shard { index: i, count: 5 }, 2, None).unwrap();
            serde_json::to_string(&c).unwrap()
        })
        .collect();
    let total = sum(lines).unwrap();
    assert_eq!(total.solutions, 724);
    assert_eq!(total.fundamental, Some(92));
    assert_eq!(total.shards, 5);
}

#[test]
fn join_shard_lines_carry_turn_fixed_and_sum_to_the_whole() {
    let lines: Vec<String> = (0..3)
        .map(|i| {
            let c = count_local(
                16,
                &[],
                Shard { index: i, count: 3 },
                2,
                Some(tier_recount(0.25)),
            )
            .unwrap();
            assert_eq!(c.fundamental, None);
            let line = serde_json::to_string(&c).unwrap();
            assert!(line.contains("\"turn_fixed\":"), "{line}");
            // A quarter of a third of n = 16's keys recounted in another tier.
            assert!(c.recounted.is_some_and(|r| r > 0), "{line}");
            line
        })
        .collect();
    let total = sum(lines.clone()).unwrap();
    assert_eq!(total.solutions, 14_772_512);
    assert_eq!(total.fundamental, Some(1_846_955));
    let recounted: u64 = lines
        .iter()
        .map(|line| {
            serde_json::from_str::<ShardCount>(line)
                .unwrap()
                .recounted
                .unwrap()
        })
        .sum();
    let by_tier = total.origins.recounts.get("tier");
    assert_eq!(by_tier, Some(&(3, recounted)), "{total:?}");
    // One line from a version that split the count another way: an error, not a number.
    let mut old: ShardCount = serde_json::from_str(&lines[1]).unwrap();
    (old.fundamental, old.turn_fixed) = (Some(100), None);
    let mut mixed = lines.clone();
    mixed[1] = serde_json::to_string(&old).unwrap();
    let err = sum(mixed).unwrap_err();
    assert!(
        matches!(
            err,
            SumError::Parts {
                n: 16,
                shards: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("mix") && err.contains("turn_fixed"), "{err}");
    // Turn-fixed points that make no whole classes: not the parts of one count.
    let mut off: ShardCount = serde_json::from_str(&lines[2]).unwrap();
    off.turn_fixed = off.turn_fixed.map(|t| t + 1);
    let mut broken = lines;
    broken[2] = serde_json::to_string(&off).unwrap();
    let err = sum(broken).unwrap_err().to_string();
    assert!(err.contains("not all the parts of one count"), "{err}");
}

#[test]
fn missing_and_duplicated_shards_are_named() {
    let err = sum(vec![line(0, 3, 1), line(2, 3, 1), line(2, 3, 1)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 shard missing: 1;"), "{err}");
    assert!(
        err.contains("1 shard repeated with the same counts: 2"),
        "{err}"
    );
    let err = sum(vec![line(0, 2, 1), line(1, 3, 1)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("earlier lines"), "{err}");
    assert!(sum(Vec::<String>::new()).is_err());
    assert!(sum(vec!["{nonsense".to_string()]).is_err());
}

/// A record run's sum: a million-part sharding's lines in any order; its gaps, repeats and
/// conflicting repeats named as ranges of indices, however many; the total only when every
/// part came once.
#[test]
fn a_large_sharding_sums_in_any_order_and_names_its_gaps_as_ranges() {
    const PARTS: u32 = 1_000_000;
    // Every 7th index first, then the rest: not in order.
    let order = (0..PARTS)
        .step_by(7)
        .chain((0..PARTS).filter(|i| i % 7 != 0));
    let lines: Vec<String> = order.map(|i| line(i, PARTS, u64::from(i % 5))).collect();
    let total = sum(lines.iter().cloned()).unwrap();
    let expected: u64 = (0..PARTS).map(|i| u64::from(i % 5)).sum();
    assert_eq!((total.solutions, total.shards), (expected, PARTS));
    assert_eq!(total.fundamental, Some(u64::from(PARTS)));

    // Gaps: 10..20 and every index from 500,000 on dropped; 3 twice alike, 4 twice unlike.
    let mut broken: Vec<String> = (0..PARTS)
        .filter(|&i| !(10..20).contains(&i) && i < 500_000)
        .map(|i| line(i, PARTS, 1))
        .collect();
    broken.push(line(3, PARTS, 1));
    broken.push(line(4, PARTS, 2));
    let err = sum(broken).unwrap_err();
    let SumError::Incomplete { gaps, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(gaps.missing.ranges, [(10, 19), (500_000, PARTS - 1)]);
    assert_eq!(gaps.missing.len(), 10 + 500_000);
    assert_eq!(gaps.repeated.ranges, [(3, 3)]);
    assert_eq!(gaps.conflicting.ranges, [(4, 4)]);
    let text = err.to_string();
    assert!(
        text.contains("500010 shards missing: 10-19, 500000-999999"),
        "{text}"
    );
    assert!(text.contains("repeated with different counts: 4"), "{text}");

    // A billion parts with one line: one missing range, not a billion indices.
    let err = sum(vec![line(7, u32::MAX, 1)]).unwrap_err().to_string();
    assert!(
        err.contains("4294967294 shards missing: 0-6, 8-4294967294"),
        "{err}"
    );

    // Many scattered gaps: the first 20 ranges shown, the rest counted.
    let odd: Vec<String> = (0..1000).step_by(2).map(|i| line(i, 1000, 1)).collect();
    let err = sum(odd).unwrap_err().to_string();
    assert!(err.contains("500 shards missing: 1, 3, 5,"), "{err}");
    assert!(err.contains("39 and 480 more ranges"), "{err}");
}

/// A local count's line says which build, tier, CPU and host counted it, with its CPU
/// seconds, peak memory and recount fraction; the sum reports them, and its digest.
#[test]
fn local_lines_carry_provenance_and_the_sum_reports_it() {
    let c = count_local(
        12,
        &[],
        Shard { index: 1, count: 2 },
        2,
        Some(tier_recount(0.0)),
    )
    .unwrap();
    let text = serde_json::to_string(&c).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json["build"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{text}"
    );
    let commit = json["build"]["commit"].as_str().unwrap();
    let hex = commit.trim_end_matches("-dirty");
    assert!(
        commit == UNKNOWN || (hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit())),
        "{text}"
    );
    assert_eq!(json["tier"], crate::solver::tier_name(), "{text}");
    for field in ["cpu", "host"] {
        assert!(
            json[field].as_str().is_some_and(|s| !s.is_empty()),
            "{text}"
        );
    }
    // The whole test process's: other tests run beside this one.
    let cpu = json["cpu_seconds"].as_f64().unwrap();
    assert!(cpu > 0.0 && cpu.is_finite(), "{text}");
    let peak = json["peak_bytes"].as_u64().unwrap();
    assert!(peak > 1 << 20 && peak < 1 << 40, "{text}");
    assert_eq!(json["recount"], 0.0, "{text}");
    // Read back as it was written.
    assert_eq!(serde_json::from_str::<ShardCount>(&text).unwrap(), c);
    let other = count_local(12, &[], Shard { index: 0, count: 2 }, 2, None).unwrap();
    let total = sum([text, serde_json::to_string(&other).unwrap()]).unwrap();
    assert_eq!(total.solutions, 14_200);
    let build = Build::this().to_string();
    assert_eq!(total.origins.builds.get(&build), Some(&2), "{total:?}");
    assert_eq!(total.origins.tiers.len(), 1, "{total:?}");
    assert_eq!(total.origins.cpus.values().sum::<u64>(), 2);
    assert_eq!(total.origins.cpu_seconds.1, 2);
    assert_eq!(
        total.origins.peak_bytes,
        Some(peak.max(other.provenance.peak_bytes.unwrap()))
    );
}

/// Lines of an older version, without provenance, still sum; their build, tier and CPU are
/// `unknown`.
#[test]
fn lines_without_provenance_still_sum() {
    let old =
        r#"{"n":8,"shard":{"index":0,"count":2},"solutions":40,"fundamental":6,"seconds":0.1}"#;
    let old_too =
        r#"{"n":8,"shard":{"index":1,"count":2},"solutions":52,"fundamental":6,"seconds":0.1}"#;
    let total = sum([old.to_string(), old_too.to_string()]).unwrap();
    assert_eq!((total.solutions, total.fundamental), (92, Some(12)));
    for tally in [
        &total.origins.builds,
        &total.origins.tiers,
        &total.origins.cpus,
    ] {
        assert_eq!(tally.get(UNKNOWN), Some(&2), "{total:?}");
    }
    assert_eq!(total.origins.cpu_seconds, (0.0, 0));
    assert_eq!(total.origins.peak_bytes, None);
}

/// A line of another board or another split is refused, naming both.
#[test]
fn a_sum_of_other_boards_or_splits_is_refused() {
    let mut other_n: ShardCount = serde_json::from_str(&line(1, 2, 5)).unwrap();
    other_n.n = 9;
    let err = sum([line(0, 2, 5), serde_json::to_string(&other_n).unwrap()]).unwrap_err();
    assert!(
        matches!(
            err,
            SumError::Mismatch {
                line: 2,
                n: 9,
                first_n: 8,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "line 2: n 9 with 2 shards, but earlier lines have n 8 with 2 shards"
    );
    let err = sum([line(0, 2, 5), line(1, 4, 5)]).unwrap_err();
    assert!(
        matches!(
            err,
            SumError::Mismatch {
                count: 4,
                first_count: 2,
                ..
            }
        ),
        "{err:?}"
    );
}

/// Lines of two builds (or of a build and an older version that names none) are refused
/// unless mixing is allowed, and then both builds are reported.
#[test]
fn a_sum_of_mixed_builds_is_refused_unless_allowed() {
    let with_build = |index: u32, commit: &str| {
        let mut c: ShardCount = serde_json::from_str(&line(index, 3, 5)).unwrap();
        c.provenance.build = Some(Build {
            version: "0.1.0".into(),
            commit: commit.into(),
        });
        serde_json::to_string(&c).unwrap()
    };
    let lines = [
        with_build(0, "aaa"),
        with_build(1, "bbb"),
        with_build(2, "aaa"),
    ];
    let err = sum(lines.clone()).unwrap_err();
    let SumError::MixedBuilds { builds, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(builds.get("0.1.0 aaa"), Some(&2));
    assert_eq!(builds.get("0.1.0 bbb"), Some(&1));
    let text = err.to_string();
    assert!(
        text.contains("2 builds: 0.1.0 aaa (2 shards); 0.1.0 bbb (1 shard)")
            && text.contains("--allow-mixed-builds"),
        "{text}"
    );
    let mut allowed = Summer::new(true);
    for l in &lines {
        allowed.add(l).unwrap();
    }
    let total = allowed.total().unwrap();
    assert_eq!((total.solutions, total.origins.builds.len()), (15, 2));
    // One build and lines that name none: mixed too.
    let err = sum([with_build(0, "aaa"), line(1, 3, 5), line(2, 3, 5)]).unwrap_err();
    assert!(err.to_string().contains("unknown (2 shards)"), "{err}");
    // One build throughout: summed.
    let same = [
        with_build(0, "aaa"),
        with_build(1, "aaa"),
        with_build(2, "aaa"),
    ];
    assert_eq!(sum(same).unwrap().solutions, 15);
}

/// The digest depends on the counts summed alone: not on the lines' order, timings or
/// provenance; a changed count changes it.
#[test]
fn the_digest_is_stable_under_reordering_and_follows_the_counts() {
    let lines: Vec<String> = (0..6).map(|i| line(i, 6, 10 + u64::from(i))).collect();
    let digest = sum(lines.clone()).unwrap().digest;
    assert_eq!(digest.len(), 64);
    assert!(digest.chars().all(|c| c.is_ascii_hexdigit()), "{digest}");
    let mut reordered = lines.clone();
    reordered.reverse();
    reordered.swap(1, 4);
    assert_eq!(sum(reordered).unwrap().digest, digest);
    // Other timings and provenance: the same digest.
    let mut timed: ShardCount = serde_json::from_str(&lines[2]).unwrap();
    timed.seconds = 99.0;
    timed.provenance.host = Some("elsewhere".into());
    let mut retimed = lines.clone();
    retimed[2] = serde_json::to_string(&timed).unwrap();
    assert_eq!(sum(retimed).unwrap().digest, digest);
    // One count changed: another digest.
    let mut changed = lines.clone();
    changed[3] = line(3, 6, 14);
    assert_ne!(sum(changed).unwrap().digest, digest);
    let mut classes: ShardCount = serde_json::from_str(&lines[0]).unwrap();
    classes.fundamental = Some(2);
    let mut changed = lines;
    changed[0] = serde_json::to_string(&classes).unwrap();
    assert_ne!(sum(changed).unwrap().digest, digest);
    // The canonical text of the module's doc, hashed by hand: `8 0/1 92 12 -`.
    let one =
        r#"{"n":8,"shard":{"index":0,"count":1},"solutions":92,"fundamental":12,"seconds":0}"#;
    assert_eq!(
        sum([one.to_string()]).unwrap().digest,
        "059b0e485654c19be2baa457df0d7b6511b4f0f21ca7b665ed8e2de2cc51f3a5"
    );
}
