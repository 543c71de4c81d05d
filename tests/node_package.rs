//! The Node package (`clients/node`, ESM over Connect's gRPC transport) as a user gets it: its
//! committed generated code equal to a fresh `buf generate` (`scripts/generate.mjs`, the
//! generator the page uses), then `npm pack`, the tarball installed into an empty project
//! under `<target>/tools` (its dependencies from the registry or npm's cache), and that
//! project's `node --test` of `clients/node/test/package.test.js` against real servers: Count
//! (92 and 12 for n = 8, a fixed queen, shards), CountProgress ending with the total,
//! Enumerate of n = 10 as `Uint8Array`s (724 valid boards in order) and its options, boards,
//! INVALID_ARGUMENT naming `n`, tokens (UNAUTHENTICATED when refused), TLS with `ca`,
//! UNAVAILABLE with no server, and against a server offering gzip, n = 12 with compressed
//! responses (the default) and with `acceptCompression: false`: the same boards, the first
//! in under half the bytes (counted by a proxy).

use crate::common;
use crate::tools;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::ServerProcess;

/// Longest one npm or node step may take.
const STEP_LIMIT: Duration = Duration::from_secs(300);

/// The package's folder in the repository.
fn package_dir() -> PathBuf {
    tools::repo().join("clients/node")
}

/// Runs a step within [`STEP_LIMIT`] and returns its stdout; panics with its output otherwise.
fn step(what: &str, command: &mut Command) -> String {
    let started = Instant::now();
    let run = tools::run_bounded(command, STEP_LIMIT);
    assert!(
        run.success(),
        "{what} failed: {command:?}\n{}",
        run.output()
    );
    eprintln!(
        "node package: {what} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    run.stdout
}

/// A scratch folder, removed when dropped (also when an assertion fails).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The files of a folder, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in fs::read_dir(&at).expect("read a folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn node_package_generated_code_is_current() {
    let modules = tools::client_node_modules();
    let out = tools::scratch_dir().join(format!("node-package-gen-{}", std::process::id()));
    let _remove = Scratch(out.clone());
    step(
        "scripts/generate.mjs",
        Command::new("node")
            .arg(package_dir().join("scripts/generate.mjs"))
            .arg(&out)
            .env("QUEENS_NODE_MODULES", modules),
    );
    let committed = package_dir().join("src/gen");
    let fresh = files_under(&out);
    assert_eq!(fresh, files_under(&committed), "generated files differ");
    for file in &fresh {
        assert!(
            fs::read(out.join(file)).ok() == fs::read(committed.join(file)).ok(),
            "clients/node/src/gen/{} is not what proto/queens.proto generates: run \
             `npm ci && npm run generate` in clients/node and commit the result",
            file.display()
        );
    }
}

#[test]
fn node_package_installs_from_its_tarball_and_calls_a_server() {
    let project = tools::tools_dir().join(format!("node-package-project-{}", std::process::id()));
    let _ = fs::remove_dir_all(&project);
    fs::create_dir_all(&project).expect("create the scratch project");
    let _remove = Scratch(project.clone());

    let packed = step(
        "npm pack",
        Command::new("npm")
            .args(["pack", "--ignore-scripts", "--pack-destination"])
            .arg(&project)
            .current_dir(package_dir()),
    );
    let tarball = project.join(packed.lines().last().expect("npm pack names the tarball"));
    let listing = step("tar -tzf", Command::new("tar").arg("-tzf").arg(&tarball));
    for file in [
        "package/package.json",
        "package/README.md",
        "package/src/index.js",
        "package/src/index.d.ts",
        "package/src/gen/queens_pb.js",
        "package/src/gen/queens_pb.d.ts",
    ] {
        assert!(
            listing.lines().any(|l| l == file),
            "{file} not in\n{listing}"
        );
    }
    assert!(
        !listing.contains("node_modules") && !listing.contains("/test/"),
        "the tarball holds more than the package:\n{listing}"
    );

    fs::write(
        project.join("package.json"),
        r#"{ "name": "scratch", "private": true, "type": "module" }"#,
    )
    .expect("write the scratch package.json");
    step(
        "npm install <tarball>",
        Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--prefer-offline",
            ])
            .arg(&tarball)
            .current_dir(&project),
    );
    fs::copy(
        package_dir().join("test/package.test.js"),
        project.join("package.test.js"),
    )
    .expect("copy the test file");

    let server = ServerProcess::start(&[]);
    let token = "node-package-token-0123456789";
    let guarded = common::token_server("node-package", token, &[]);
    let (tls_dir, ca, secure) = common::tls_server("node-package");
    // Connect takes gzip (and brotli), not zstd: a server offering gzip.
    let gzip = ServerProcess::start(&["--compression", "gzip"]);
    let _remove_tls = Scratch(tls_dir);
    let started = Instant::now();
    let passed = tools::node_test(
        Command::new("node")
            .args(["--test", "package.test.js"])
            .current_dir(&project)
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("QUEENS_TOKEN_ADDR", guarded.addr.to_string())
            .env("QUEENS_TOKEN", token)
            .env("QUEENS_TLS_ADDR", secure.addr.to_string())
            .env("QUEENS_TLS_CA", &ca)
            .env("QUEENS_COMPRESS_ADDR", gzip.addr.to_string()),
        STEP_LIMIT,
    );
    eprintln!(
        "node package: node --test, {passed} passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
