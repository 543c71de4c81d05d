//! The batch commands as a user runs them: `queens estimate` (its output's shape and
//! arithmetic, its seeded sample, its refusals), the provenance of `count --local --json`
//! lines, and what `queens sum` says of them (its digest, mixed builds refused).

use crate::common;

use common::{A000170, queens_cli};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

/// `queens ARGS --json` run to success, its stdout as JSON.
fn json(args: &[&str]) -> Value {
    let (code, out, err) = queens_cli(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// The sampled parts' indices of an estimate's JSON.
fn indices(report: &Value) -> Vec<u64> {
    let sample = report["estimate"]["sample"].as_array().expect("a sample");
    sample
        .iter()
        .map(|p| p["index"].as_u64().unwrap())
        .collect()
}

/// A figure of an estimate's JSON.
fn figure(report: &Value, path: &[&str]) -> f64 {
    let value = path.iter().fold(report, |v, key| &v[*key]);
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{path:?} in {report}"))
}

/// `queens sum` of `input` on stdin: exit code, stdout, stderr.
fn sum(args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = Command::new(common::queens_bin())
        .arg("sum")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run queens sum");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// With every part sampled the estimate is the count itself: the exact solutions, the CPU
/// the parts took, and no interval.
#[test]
fn every_part_sampled_gives_the_exact_count_and_no_interval() {
    let report = json(&["estimate", "12", "--parts", "6", "--samples", "6", "--json"]);
    assert_eq!(indices(&report), [0, 1, 2, 3, 4, 5]);
    let solutions = A000170[11] as f64;
    for end in ["estimate", "low", "high"] {
        assert_eq!(figure(&report, &["estimate", "solutions", end]), solutions);
    }
    let sample = report["estimate"]["sample"].as_array().unwrap();
    let cpu: f64 = sample
        .iter()
        .map(|p| p["cpu_seconds"].as_f64().unwrap())
        .sum();
    let hours = figure(&report, &["estimate", "core_hours", "estimate"]);
    assert!((hours * 3600.0 - cpu).abs() < 1e-9, "{report}");
    assert_eq!(hours, figure(&report, &["estimate", "core_hours", "high"]));
    assert_eq!(figure(&report, &["estimate", "t"]), 0.0);
    let peak = figure(&report, &["estimate", "peak_bytes"]);
    assert!(peak > f64::from(1 << 20), "{report}");
    assert!(figure(&report, &["plan", "parts"]) >= 1.0);
    let memory = figure(&report, &["plan", "memory_mib"]);
    assert!(memory >= 128.0 && memory % 128.0 == 0.0, "{report}");
    assert_eq!(
        report["provenance"]["build"]["version"],
        env!("CARGO_PKG_VERSION")
    );
}

/// The same seed samples the same parts; another seed others. The estimate is the sample's
/// mean times K, inside its interval.
#[test]
fn a_seeded_sample_is_the_same_parts_and_its_mean_times_k() {
    let run = |seed: &str| {
        json(&[
            "estimate",
            "11",
            "--parts",
            "64",
            "--samples",
            "5",
            "--seed",
            seed,
            "--json",
        ])
    };
    let (a, b, c) = (run("3"), run("3"), run("4"));
    assert_eq!(indices(&a), indices(&b));
    assert_ne!(indices(&a), indices(&c));
    assert_eq!(indices(&a).len(), 5);
    let sample = a["estimate"]["sample"].as_array().unwrap();
    let mean = sample
        .iter()
        .map(|p| p["solutions"].as_f64().unwrap())
        .sum::<f64>()
        / 5.0;
    let estimate = figure(&a, &["estimate", "solutions", "estimate"]);
    assert!((estimate - 64.0 * mean).abs() < 1e-6, "{a}");
    assert!(figure(&a, &["estimate", "solutions", "low"]) <= estimate);
    assert!(figure(&a, &["estimate", "solutions", "high"]) >= estimate);
    assert_eq!(figure(&a, &["estimate", "t"]), 2.776);
    // The same parts counted again give the same solutions.
    let solutions = |r: &Value| figure(r, &["estimate", "solutions", "estimate"]);
    assert_eq!(solutions(&a), solutions(&b));
}

/// With `--cpus-per-task` below the CPUs here, each sampled part runs held to that many
/// (its line says it counted on one thread), side by side: the same parts and solutions as
/// a sample on every CPU here, whose parts count on all of them.
#[test]
fn parts_sampled_for_tasks_of_one_cpu_count_on_one() {
    let run = |extra: &[&str]| {
        let args = [
            "estimate",
            "14",
            "--parts",
            "32",
            "--samples",
            "4",
            "--seed",
            "2",
        ];
        json(&[&args[..], extra, &["--json"]].concat())
    };
    let (all, one) = (run(&[]), run(&["--cpus-per-task", "1"]));
    assert_eq!(indices(&all), indices(&one));
    let solutions = |r: &Value| figure(r, &["estimate", "solutions", "estimate"]);
    assert_eq!(solutions(&all), solutions(&one));
    assert_eq!(one["provenance"]["threads"], 1, "{one}");
    assert_eq!(one["plan"]["cpus_per_task"], 1, "{one}");
    let here = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(all["provenance"]["threads"], here as u64, "{all}");
}

/// The text output names every figure a user plans with.
#[test]
fn the_text_output_names_its_figures() {
    let (code, out, err) = queens_cli(&[
        "estimate",
        "10",
        "--parts",
        "8",
        "--samples",
        "3",
        "--part-hours",
        "0.5",
        "--cpus-per-task",
        "4",
        "--array-limit",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    for wanted in [
        "n = 10 in 8 parts: 3 sampled (seed 0)",
        "core-hours: ",
        "(95 % interval ",
        "solutions: ",
        "peak memory per part: ",
        "Student's t = 4.303 (2 degrees of freedom)",
        "for parts of 0.5 h on 4 CPUs per task:",
        "slurm arrays: 1 of at most 2 tasks",
        "--mem=",
        "deploy/slurm/submit.sh 10 1 DIR -c 4 --mem=",
    ] {
        assert!(out.contains(wanted), "{wanted:?} in {out}");
    }
    // Progress on stderr, a line per part when it is not a terminal.
    assert_eq!(err.matches("part ").count(), 3, "{err}");
    assert!(err.contains(" of 8: "), "{err}");
}

/// Flags that make no estimate are refused, naming the flag (or n).
#[test]
fn bad_flags_are_refused() {
    let refused = |args: &[&str], code: i32, wanted: &str| {
        let (got, out, err) = queens_cli(args);
        assert_eq!(got, code, "{args:?}: {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(err.contains(wanted), "{args:?}: {wanted:?} in {err}");
    };
    refused(&["estimate", "10"], 2, "--parts <K>");
    refused(&["estimate", "10", "--parts", "0"], 2, "--parts <K>");
    refused(
        &["estimate", "10", "--parts", "8", "--samples", "1"],
        1,
        "--samples: 1 ",
    );
    refused(
        &["estimate", "10", "--parts", "4", "--samples", "5"],
        1,
        "--samples: 5 is more than the 4 parts of --parts",
    );
    for hours in ["0", "-1", "nan", "inf", "x"] {
        refused(
            &["estimate", "10", "--parts", "4", "--part-hours", hours],
            2,
            "--part-hours <HOURS>",
        );
    }
    refused(
        &["estimate", "10", "--parts", "4", "--cpus-per-task", "0"],
        2,
        "--cpus-per-task <CPUS>",
    );
    refused(
        &["estimate", "10", "--parts", "4", "--array-limit", "0"],
        2,
        "--array-limit",
    );
    refused(
        &["estimate", "40", "--parts", "4"],
        1,
        "n: 40 is not a supported board size",
    );
}

/// A local count's line says how and where it was counted; `--version` names the commit.
#[test]
fn count_lines_carry_their_provenance() {
    let line = json(&[
        "count",
        "11",
        "--local",
        "--json",
        "--shard",
        "1/3",
        "--recount",
        "0.5",
    ]);
    assert_eq!(
        line["build"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{line}"
    );
    let commit = line["build"]["commit"].as_str().unwrap().to_string();
    assert!(!commit.is_empty(), "{line}");
    for field in ["tier", "cpu", "host"] {
        assert!(
            line[field].as_str().is_some_and(|s| !s.is_empty()),
            "{line}"
        );
    }
    assert!(
        line["cpu_seconds"].as_f64().is_some_and(|s| s >= 0.0),
        "{line}"
    );
    assert!(
        line["peak_bytes"].as_u64().is_some_and(|b| b > 1 << 20),
        "{line}"
    );
    assert!(line["threads"].as_u64().is_some_and(|t| t >= 1), "{line}");
    assert_eq!(line["recount"], 0.5, "{line}");
    assert_eq!(line["recount_method"], "tier", "{line}");
    assert!(line["seconds"].as_f64().is_some(), "{line}");
    assert!(
        line["finished"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{line}"
    );
    let (code, out, _) = queens_cli(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("(commit {commit})")), "{out}");
}

/// `--recount-method search` checks a seeded sample of the keys of n = 16 by a plain
/// search: each line says how many, how, with which seed and how long it took, and the sum
/// of both halves says how many parts each method checked.
#[test]
fn parts_checked_by_a_search_say_so() {
    let mut text = String::new();
    let mut recounted = 0;
    for shard in ["0/2", "1/2"] {
        let args = [
            "count",
            "16",
            "--local",
            "--json",
            "--shard",
            shard,
            "--recount",
            "0.02",
            "--recount-method",
            "search",
            "--recount-seed",
            "9",
        ];
        let line = json(&args);
        assert_eq!(line["recount_method"], "search", "{line}");
        assert_eq!(line["recount_seed"], 9, "{line}");
        // About 2% of about 1,600 keys.
        let checked = line["recounted"].as_u64().unwrap();
        assert!((5..100).contains(&checked), "{line}");
        recounted += checked;
        assert!(
            line["recount_seconds"].as_f64().is_some_and(|s| s > 0.0),
            "{line}"
        );
        text.push_str(&format!("{line}\n"));
    }
    let (code, out, err) = sum(&[], &text);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("solutions: 14772512"), "{out}");
    let by_search = format!("recounted by search: {recounted} parts in 2 shards");
    assert!(out.contains(&by_search), "{out}");
}

/// `queens sum` prints the digest of the counts and who counted them; the digest does not
/// depend on the lines' order; lines of two builds are refused unless allowed.
#[test]
fn sum_prints_a_digest_and_refuses_mixed_builds() {
    let lines: Vec<String> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            let (code, out, err) =
                queens_cli(&["count", "10", "--local", "--json", "--shard", &shard]);
            assert_eq!(code, 0, "{err}");
            out
        })
        .collect();
    let (code, out, err) = sum(&[], &lines.concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("n: 10\nshards: 3\nsolutions: 724\n"),
        "{out}"
    );
    let digest = out.lines().find(|l| l.starts_with("digest: sha256:"));
    let digest = digest.unwrap_or_else(|| panic!("{out}")).to_string();
    assert!(out.contains(" (3 shards)\ntiers: "), "{out}");
    let reversed: String = lines.iter().rev().cloned().collect();
    let (_, again, _) = sum(&[], &reversed);
    assert!(again.contains(&format!("{digest}\n")), "{again}");
    // Shard 1 counted by another build.
    let mut other: Value = serde_json::from_str(&lines[1]).unwrap();
    other["build"]["commit"] = "0000000".into();
    let mixed = format!("{}{other}\n{}", lines[0], lines[2]);
    let (code, out, err) = sum(&[], &mixed);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains("2 builds: ") && err.contains("--allow-mixed-builds"),
        "{err}"
    );
    let (code, out, err) = sum(&["--allow-mixed-builds"], &mixed);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("{digest}\n")), "{out}");
    assert!(out.contains("0000000 (1 shard); "), "{out}");
    assert!(err.contains("counted by 2 builds"), "{err}");
}
