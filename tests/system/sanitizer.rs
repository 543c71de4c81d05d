//! The libraries' unit tests (the solver crate's and the service's) under AddressSanitizer:
//! the solver's SIMD code has many `unsafe` blocks, and this checks their memory accesses
//! instead of assuming them. It runs `cargo +nightly test -p queens-solver -p queens --lib
//! --target x86_64-unknown-linux-gnu` with
//! `RUSTFLAGS=-Zsanitizer=address` in a target folder of its own (`<target>/asan`; the
//! explicit target keeps the sanitizer out of build scripts and proc macros). The unit tests
//! test every SIMD tier the CPU has against the others and the naive oracle, so one run
//! covers them all. Needs the nightly toolchain (`-Z` flags are refused by stable); without it
//! the test fails saying so in one line. About 6 minutes cold on 2 cores.

use crate::tools;
use std::process::Command;
use std::time::Duration;

/// Longest the sanitized build and run may take (cold: about 6 minutes on 2 cores).
const LIMIT: Duration = Duration::from_secs(40 * 60);

/// The only target the sanitizer's runtime is used with here.
const TARGET: &str = "x86_64-unknown-linux-gnu";

/// `cargo +nightly` with the outer cargo's and rustup's choices of toolchain cleared.
fn nightly_cargo() -> Command {
    let mut cargo = Command::new("cargo");
    cargo
        .arg("+nightly")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    cargo
}

/// The library's unit tests pass under AddressSanitizer with no report.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn unit_tests_pass_under_address_sanitizer() {
    let version = tools::run_bounded(nightly_cargo().args(["--version"]), Duration::from_secs(60));
    assert!(
        version.success() && version.stdout.contains("nightly"),
        "AddressSanitizer needs Rust's nightly toolchain: install it with `rustup toolchain \
         install nightly` (cargo +nightly --version said: {})",
        version.output().trim()
    );
    eprintln!("sanitizer: {}", version.stdout.trim());
    let run = tools::run_bounded(
        nightly_cargo()
            .args([
                "test",
                "-p",
                "queens-solver",
                "-p",
                "queens",
                "--lib",
                "--target",
                TARGET,
            ])
            .env("RUSTFLAGS", "-Zsanitizer=address")
            .env("CARGO_TARGET_DIR", tools::target_dir().join("asan"))
            .current_dir(tools::repo()),
        LIMIT,
    );
    let summary: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("test result:"))
        .collect();
    eprintln!("sanitizer: {summary:?}");
    assert!(
        run.success(),
        "tests under AddressSanitizer:\n{}",
        run.output()
    );
    assert!(
        !summary.is_empty() && summary.iter().all(|l| l.starts_with("test result: ok")),
        "no passing test result under AddressSanitizer:\n{}",
        run.output()
    );
    assert!(
        !run.stderr.contains("ERROR: AddressSanitizer"),
        "{}",
        run.output()
    );
}
