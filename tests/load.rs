//! Load from other processes: the `queens-load` driver runs 32 Enumerate n = 10 streams and
//! 8 Count n = 12 calls against a served process while a second driver process checks health
//! back to back. Every call completes correctly or is refused with RESOURCE_EXHAUSTED, and
//! every health check answers SERVING within 1 s.

use crate::common;

use common::ServerProcess;

/// Starts the `queens-load` driver against `url` with `args`, output captured.
fn driver(url: &str, args: &[&str]) -> std::process::Child {
    let args = [&["--addr", url], args].concat();
    common::spawn_captured(env!("CARGO_BIN_EXE_queens-load"), &args)
}

#[test]
fn mixed_load_with_health_checks_from_another_process() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let health = driver(&url, &["health", "--seconds", "4"]);
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let out = driver(&url, &["mixed"]).wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outcomes.push(text);
    }
    let health = health.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&health.stdout);
    assert!(
        health.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&health.stderr)
    );
    assert!(text.contains(" 0 failed"), "{text}");
    // Some calls got through each time (the cap refuses the rest, it does not fail them).
    for o in &outcomes {
        assert!(!o.starts_with("mixed: 0 correct"), "{o}");
    }
}
