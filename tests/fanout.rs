//! Work spread over replicas and orchestrators: `count --endpoints` over three servers with
//! one killed (SIGKILL) mid-run, `enumerate --endpoints --out DIR` resuming after a killed
//! server and a killed client, and local shard counts as an Indexed Job runs them, summed.

use crate::common;

use common::{A000170, A002562, ServerProcess, queens_cli};
use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Starts the `queens` binary with `args`, output captured.
fn spawn(args: &[&str]) -> std::process::Child {
    common::spawn_captured(env!("CARGO_BIN_EXE_queens"), args)
}

fn finish(child: std::process::Child) -> (bool, String, String) {
    let out = child.wait_with_output().expect("wait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// n = 16's shards are counted by joining halves, so they carry turn_fixed, not fundamental:
/// the total's classes are exact only through them.
#[test]
fn a_count_survives_losing_a_server() {
    let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&[])).collect();
    let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let client = spawn(&[
        "count",
        "16",
        "--endpoints",
        &endpoints.join(","),
        "--shards",
        "32",
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let mut servers = servers;
    drop(servers.remove(0)); // SIGKILL, mid-run
    let (ok, out, err) = finish(client);
    assert!(ok, "{out}{err}");
    assert_eq!(
        out,
        format!("solutions: {}\nfundamental: {}\n", A000170[15], A002562[15]),
        "{err}"
    );
    println!("{err}");
}

#[test]
fn a_count_with_no_live_endpoint_fails_clearly() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    drop(server);
    let (code, _, err) = queens_cli(&[
        "count",
        "8",
        "--endpoints",
        &url,
        "--shards",
        "4",
        "--max-attempts",
        "3",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("error:"), "{err}");
}

/// Every line of every shard file in `dir`.
fn boards_in(dir: &std::path::Path) -> Vec<String> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "txt") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{path:?} ends mid-line"
            );
            all.extend(text.lines().map(str::to_string));
        }
    }
    all
}

#[test]
fn an_enumeration_into_files_resumes_after_failures() {
    let dir = crate::tools::scratch_dir().join(format!("queens-fanout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&[])).collect();
    let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let endpoints = endpoints.join(",");
    let args = [
        "enumerate",
        "12",
        "--endpoints",
        &endpoints,
        "--shards",
        "32",
        "--out",
        dir.to_str().unwrap(),
    ];
    // A client killed mid-run leaves partial files behind.
    let mut first = spawn(&args);
    std::thread::sleep(Duration::from_millis(150));
    let _ = first.kill();
    let _ = first.wait();
    // A rerun, during which one server is killed, finishes the job.
    let client = spawn(&args);
    std::thread::sleep(Duration::from_millis(100));
    let mut servers = servers;
    drop(servers.remove(1));
    let (ok, out, err) = finish(client);
    assert!(ok, "{out}{err}");
    assert!(out.starts_with("boards: 14200 "), "{out}");
    let boards = boards_in(&dir);
    assert_eq!(boards.len(), 14_200);
    let distinct: HashSet<&String> = boards.iter().collect();
    assert_eq!(distinct.len(), 14_200, "every board exactly once");
    for b in &boards {
        let columns: Vec<u32> = b.split(',').map(|c| c.parse().unwrap()).collect();
        assert!(common::is_solution(&columns), "{b}");
    }
    // Rerunning a finished job changes nothing.
    let (ok, out, _) = finish(spawn(&args));
    assert!(ok && out.starts_with("boards: 14200 "), "{out}");
    // Another job in the same directory is refused.
    let (code, _, err) = queens_cli(&[
        "enumerate",
        "11",
        "--endpoints",
        &endpoints,
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("another job"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn indexed_job_shards_sum_to_the_whole() {
    let lines: Vec<String> = (0..7)
        .map(|i| {
            let out = Command::new(env!("CARGO_BIN_EXE_queens"))
                .args(["count", "14", "--local", "--json", "--shards", "7"])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        })
        .collect();
    let sum = |input: String| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_queens"))
            .arg("sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        finish(child)
    };
    let (ok, out, err) = sum(lines.concat());
    assert!(ok, "{err}");
    assert_eq!(
        out,
        format!(
            "n: 14\nshards: 7\nsolutions: {}\nfundamental: {}\n",
            A000170[13], A002562[13]
        )
    );
    // Shard 3 missing, shard 5 twice.
    let broken: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, l)| l.clone())
        .chain(std::iter::once(lines[5].clone()))
        .collect();
    let (ok, _, err) = sum(broken);
    assert!(!ok);
    assert!(err.contains("missing shards [3]"), "{err}");
    assert!(err.contains("duplicated shards [5]"), "{err}");
}
