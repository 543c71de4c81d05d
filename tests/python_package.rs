//! The Python package `queens-client` (`clients/python`) as its users get it: built into a
//! wheel, installed with its `arrow` extra into a fresh virtual environment (its own, under
//! `<target>/tools`, removed afterwards), then its pytest files (`clients/python/tests`) run
//! against real `queens` binaries on loopback: a plain server (Count with and without fixed
//! queens and shards, CountProgress ending with the total, Enumerate into numpy arrays viewed
//! in place, n = 10 in lexicographic order, Flight into pyarrow, INVALID_ARGUMENT naming the
//! field with its BadRequest detail), one with `--auth-tokens` (a refused or missing token is
//! UNAUTHENTICATED over gRPC and Flight), one with TLS, and one offering gzip only (n = 12
//! with compressed responses, the default, and with `accept_compression=False`: the same
//! boards, the first in under half the bytes, counted by a proxy); and the committed stubs
//! equal those grpcio-tools makes of `proto/queens.proto` now.

use crate::common::{self, ServerProcess};
use crate::tools;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The token the `--auth-tokens` server accepts.
const TOKEN: &str = "package-token-0123456789abcdef";

/// Longest one install step (venv, pip) may take; the tests themselves take seconds.
const STEP_LIMIT: Duration = Duration::from_secs(600);

#[test]
fn python_package_wheel_installs_and_calls_real_servers() {
    let started = Instant::now();
    let package = tools::repo().join("clients/python");
    let requirements = package.join("tests/requirements.txt");
    let venv = Scratch(tools::tools_dir().join(format!("python-package-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&venv.0);
    let python_cmd = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    step(Command::new(python_cmd).args(["-m", "venv"]).arg(&venv.0));
    let python = venv.0.join("bin/python");
    // The test's tools (pytest, grpcio-tools for the stubs check, hatchling to build with).
    step(pip(&python).arg("-r").arg(&requirements));
    let wheels = venv.0.join("wheels");
    step(
        pip_command(&python, "wheel")
            .args(["--no-deps", "--no-build-isolation", "-w"])
            .arg(&wheels)
            .arg(&package),
    );
    let wheel = only_wheel(&wheels);
    step(
        pip(&python)
            .arg(format!("{}[arrow]", wheel.display()))
            .arg("-c")
            .arg(&requirements),
    );
    eprintln!("python package: wheel installed in {:?}", started.elapsed());

    let plain = ServerProcess::start(&[]);
    let auth = common::token_server("python-package", TOKEN, &[]);
    let (_tls_dir, cert, tls) = common::tls_server("python-package");
    // grpcio takes gzip and deflate, not zstd: a server offering gzip.
    let gzip = ServerProcess::start(&["--compression", "gzip"]);
    let summary = tools::pytest(
        Command::new(&python).current_dir(&package).envs([
            ("QUEENS_ADDR", plain.addr.to_string()),
            ("QUEENS_AUTH_ADDR", auth.addr.to_string()),
            ("QUEENS_TOKEN", TOKEN.to_string()),
            ("QUEENS_TLS_ADDR", tls.addr.to_string()),
            ("QUEENS_CA_CERT", cert.display().to_string()),
            ("QUEENS_COMPRESS_ADDR", gzip.addr.to_string()),
        ]),
        "tests",
        &venv.0.join("pytest"),
        Duration::from_secs(120),
    );
    eprintln!("python package: {summary} ({:?} in all)", started.elapsed());
}

/// `python -m pip install` with the usual quiet flags.
fn pip(python: &Path) -> Command {
    pip_command(python, "install")
}

fn pip_command(python: &Path, command: &str) -> Command {
    let mut pip = Command::new(python);
    pip.args(["-m", "pip", command])
        .args(["--no-input", "--disable-pip-version-check"]);
    pip
}

/// Runs an install step; panics with its output unless it succeeds.
fn step(command: &mut Command) {
    let run = tools::run_bounded(command, STEP_LIMIT);
    assert!(
        run.success(),
        "{command:?} failed ({:?})\n{}",
        run.status,
        run.output()
    );
}

/// The one `.whl` file in `dir`.
fn only_wheel(dir: &Path) -> PathBuf {
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the wheel folder")
        .map(|entry| entry.expect("a wheel folder entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "one wheel in {dir:?}: {wheels:?}");
    wheels.into_iter().next().unwrap()
}

/// A folder removed when the test ends, passed or failed.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
