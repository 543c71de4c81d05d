//! The `queens` binary end to end: `serve` on port 0 as a child process, the `count` and
//! `enumerate` clients run against it, their output and exit codes, `--help`, SIGTERM.

use crate::common;

use common::{ServerProcess, queens_cli};
use std::time::Duration;

#[test]
fn enumerate_prints_classic_boards_separated_by_blank_lines() {
    let server = ServerProcess::start(&[]);
    let (code, out, err) = queens_cli(&["enumerate", "4", "--addr", &server.url()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, ".Q..\n...Q\nQ...\n..Q.\n\n..Q.\nQ...\n...Q\n.Q..\n");
}

#[test]
fn compact_limit_and_start_after_page_through_the_result() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let (code, out, _) = queens_cli(&[
        "enumerate",
        "8",
        "--compact",
        "--limit",
        "2",
        "--addr",
        &url,
    ]);
    assert_eq!(code, 0);
    assert_eq!(out, "0,4,7,5,2,6,1,3\n0,5,7,2,6,3,1,4\n");
    let last = out.lines().last().unwrap();
    let (code, out, _) = queens_cli(&[
        "enumerate",
        "8",
        "--compact",
        "--limit",
        "1",
        "--start-after",
        last,
        "--addr",
        &url,
    ]);
    assert_eq!(code, 0);
    assert_eq!(out, "0,6,3,5,7,1,4,2\n");
    let (_, all, _) = queens_cli(&["enumerate", "8", "--compact", "--addr", &url]);
    assert_eq!(all.lines().count(), 92);
}

#[test]
fn shards_fixed_and_fundamental_flags_reach_the_server() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let mut union = Vec::new();
    for shard in ["0/3", "1/3", "2/3"] {
        let (code, out, err) = queens_cli(&[
            "enumerate",
            "8",
            "--compact",
            "--shard",
            shard,
            "--addr",
            &url,
        ]);
        assert_eq!(code, 0, "{err}");
        union.extend(out.lines().map(str::to_string));
    }
    union.sort();
    union.dedup();
    assert_eq!(union.len(), 92);
    let (_, out, _) = queens_cli(&[
        "enumerate",
        "8",
        "--compact",
        "--fundamental",
        "--addr",
        &url,
    ]);
    assert_eq!(out.lines().count(), 12);
    let (_, out, _) = queens_cli(&[
        "enumerate",
        "8",
        "--compact",
        "--fixed",
        "0,0",
        "--fixed",
        "1,4",
        "--addr",
        &url,
    ]);
    assert_eq!(out, "0,4,7,5,2,6,1,3\n");
}

#[test]
fn count_prints_solutions_and_fundamental() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let (code, out, _) = queens_cli(&["count", "8", "--addr", &url]);
    assert_eq!(code, 0);
    assert_eq!(out, "solutions: 92\nfundamental: 12\n");
    let (code, out, _) = queens_cli(&["count", "8", "--fixed", "0,0", "--addr", &url]);
    assert_eq!(code, 0);
    assert_eq!(out, "solutions: 4\n");
    let (code, out, _) = queens_cli(&["count", "8", "--shard", "1/2", "--addr", &url]);
    assert_eq!(code, 0);
    assert!(out.starts_with("solutions: "), "{out}");
}

#[test]
fn grpc_errors_print_code_and_message_and_fail() {
    let server = ServerProcess::start(&["--max-n", "10"]);
    let url = server.url();
    let (code, _, err) = queens_cli(&["count", "11", "--addr", &url]);
    assert_ne!(code, 0);
    assert!(err.contains("InvalidArgument"), "{err}");
    assert!(err.contains("n: 11"), "{err}");
    let (code, _, err) = queens_cli(&["enumerate", "4", "--shard", "5/2", "--addr", &url]);
    assert_ne!(code, 0);
    assert!(err.contains("shard.index: 5"), "{err}");
    // No server there at all.
    drop(server);
    let (code, _, err) = queens_cli(&["count", "4", "--addr", &url]);
    assert_ne!(code, 0);
    assert!(err.contains("error"), "{err}");
}

#[test]
fn help_explains_every_command_and_flag() {
    let (code, out, _) = queens_cli(&["--help"]);
    assert_eq!(code, 0);
    for word in ["serve", "count", "enumerate"] {
        assert!(out.contains(word), "{out}");
    }
    let (_, out, _) = queens_cli(&["enumerate", "--help"]);
    for flag in [
        "--addr",
        "--fundamental",
        "--limit",
        "--compact",
        "--fixed",
        "--shard",
        "--start-after",
        "--batch-size",
    ] {
        assert!(out.contains(flag), "{flag} missing from {out}");
    }
    let (_, out, _) = queens_cli(&["serve", "--help"]);
    assert!(out.contains("--addr") && out.contains("--max-n"), "{out}");
    let (code, _, err) = queens_cli(&["enumerate", "8", "--shard", "nonsense"]);
    assert_ne!(code, 0);
    assert!(err.contains("--shard"), "{err}");
}

#[test]
fn serve_stops_on_sigterm_with_exit_zero() {
    let mut server = ServerProcess::start(&[]);
    let (code, _, _) = queens_cli(&["count", "6", "--addr", &server.url()]);
    assert_eq!(code, 0);
    let status = server
        .terminate(Duration::from_secs(15))
        .expect("exits after SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// Spreading flags without what they spread over are refused, not silently ignored: usage
/// errors (exit code 2) that name the flag missing.
#[test]
fn shards_without_endpoints_or_out_are_refused() {
    let (code, _, err) = queens_cli(&["count", "8", "--shards", "4"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--shards <K>") && err.contains("<--endpoints <URL,URL,...>|--local>"),
        "{err}"
    );
    let (code, _, err) = queens_cli(&["enumerate", "8", "--shards", "4"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--out <DIR|FILE.parquet>"), "{err}");
    let (code, _, err) = queens_cli(&["enumerate", "8", "--endpoints", "http://127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--out <DIR|FILE.parquet>"), "{err}");
    // A flag for one stream on stdout, which --out refuses, does not let the spreading
    // flags through without --out (they would be ignored and the default --addr asked).
    for (flag, value) in [
        ("--packed", None),
        ("--limit", Some("5")),
        ("--start-after", Some("0,2,4,6,1,3,5,7")),
        ("--batch-size", Some("16")),
    ] {
        for spread in [["--shards", "4"], ["--endpoints", "http://127.0.0.1:1"]] {
            let mut args = vec!["enumerate", "8", flag];
            args.extend(value);
            args.extend(spread);
            let (code, _, err) = queens_cli(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(
                err.contains(flag) && err.contains(spread[0]),
                "{args:?}: {err}"
            );
        }
    }
}

/// With no server at the address, the client says so as the Python and Node clients do,
/// in one line, and exits 1.
#[test]
fn no_server_there_is_said_plainly() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    for command in ["count", "enumerate"] {
        let (code, out, err) = queens_cli(&[command, "8", "--addr", &url]);
        assert_eq!(code, 1, "{err}");
        assert_eq!(out, "");
        assert_eq!(
            err,
            format!(
                "error: cannot connect to {url}: connection refused (is the server running?)\n"
            )
        );
    }
}

#[test]
fn packed_writes_the_compact_boards_as_raw_records() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    for args in [&["9"][..], &["10", "--fixed", "2,3", "--limit", "20"][..]] {
        let run = |form: &str| {
            let mut all = vec!["enumerate", form, "--addr", &url];
            all.extend_from_slice(args);
            queens_cli(&all)
        };
        let (code, packed, err) = run("--packed");
        assert_eq!(code, 0, "{err}");
        let (code, compact, err) = run("--compact");
        assert_eq!(code, 0, "{err}");
        let n: usize = args[0].parse().unwrap();
        let expected: Vec<u8> = compact
            .lines()
            .flat_map(|l| l.split(',').map(|c| c.parse::<u8>().unwrap()))
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(packed.len(), expected.len());
        assert_eq!(packed.as_bytes(), expected.as_slice(), "{args:?}");
        assert_eq!(expected.len() % n, 0);
    }
    let (code, _, err) = queens_cli(&["enumerate", "8", "--packed", "--compact"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn out_fetches_into_files_from_one_server_and_resumes() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let dir = crate::tools::scratch_dir().join(format!("queens-cli-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_text = dir.to_str().unwrap();
    let (code, all, err) = queens_cli(&["enumerate", "9", "--compact", "--addr", &url]);
    assert_eq!(code, 0, "{err}");
    let mut expected: Vec<&str> = all.lines().collect();
    expected.sort_unstable();
    assert_eq!(expected.len(), 352);
    for _ in 0..2 {
        // The second run finds the job done and changes nothing.
        let (code, out, err) = queens_cli(&[
            "enumerate",
            "9",
            "--out",
            dir_text,
            "--shards",
            "3",
            "--addr",
            &url,
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("boards: 352 in 3 shard files"), "{out}");
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                lines.extend(
                    std::fs::read_to_string(&path)
                        .unwrap()
                        .lines()
                        .map(str::to_string),
                );
            }
        }
        lines.sort_unstable();
        assert_eq!(lines, expected);
    }
    // A file job is a whole enumeration: paging flags are refused, not ignored.
    let (code, _, err) = queens_cli(&["enumerate", "9", "--out", dir_text, "--limit", "5"]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `QUEENS_SIMD` forces the solver's SIMD tier: `portable` runs everywhere and counts the
/// same; an unknown name is refused at start, naming the variable, with exit code 1.
#[test]
fn queens_simd_forces_a_tier_or_is_refused() {
    let run = |value: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_queens"))
            .args(["count", "10", "--local"])
            .env("QUEENS_SIMD", value)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run queens");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, err) = run("portable");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "solutions: 724\nfundamental: 92\n");
    let (code, out, err) = run("sse9");
    assert_eq!(code, Some(1));
    assert_eq!(out, "");
    assert!(
        err.contains("QUEENS_SIMD=sse9: expected avx512, avx2 or portable"),
        "{err}"
    );
}
