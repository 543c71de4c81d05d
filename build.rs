//! Compiles `proto/queens.proto` without a system `protoc`: the pure-Rust `protox`
//! parses it into a descriptor set, `tonic-prost-build` generates the messages and the
//! service from that set, and the set itself is written to `OUT_DIR` for server reflection.
//!
//! A second, server-only generation (in `OUT_DIR/encoded/`) maps
//! `queens.v1.EnumerateResponse` to `crate::stream::EncodedBatch`, whose bytes the server
//! writes directly; every other type is the generated one from `crate::pb`, and clients keep
//! the plain generated `EnumerateResponse`.
//!
//! It also names the commit the binary is built from, for the provenance of a batch count's
//! line (`QUEENS_COMMIT` at compile time): `$QUEENS_COMMIT` when the build sets it (a build
//! without `.git`, such as the container image's), else `git rev-parse HEAD`, with `-dirty`
//! after it when tracked files differ from that commit, else `unknown`.

use prost::Message;
use std::{env, fs, path::PathBuf, process::Command};

/// The variable that names the commit when there is no `.git` to ask.
const COMMIT_VARIABLE: &str = "QUEENS_COMMIT";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rustc-env={COMMIT_VARIABLE}={}", commit());
    let proto = "proto/queens.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out.join("queens_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds.clone())?;
    let encoded = out.join("encoded");
    fs::create_dir_all(&encoded)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".queens.v1", "crate::pb")
        .extern_path(
            ".queens.v1.EnumerateResponse",
            "crate::stream::EncodedBatch",
        )
        .out_dir(encoded)
        .compile_fds(fds)?;
    Ok(())
}

/// `git` run in the package's directory with `args`: its output trimmed, if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| text.trim().to_string())
}

/// The commit the build is made from (see the module's doc), and what makes cargo run this
/// script again when it may have changed: the variable, the checked-out branch and commit,
/// the index, and the sources compiled into the binary.
fn commit() -> String {
    println!("cargo:rerun-if-env-changed={COMMIT_VARIABLE}");
    if let Some(given) = env::var(COMMIT_VARIABLE)
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        return given.trim().to_string();
    }
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        return "unknown".to_string();
    };
    let mut watched = vec![
        "HEAD".to_string(),
        "index".to_string(),
        "packed-refs".to_string(),
    ];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // A path that does not exist would make cargo run the script on every build.
        let path = git(&["rev-parse", "--git-path", &name]);
        if let Some(path) = path.filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    for path in [
        "src",
        "crates",
        "build.rs",
        "Cargo.toml",
        "Cargo.lock",
        "web/dist",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    // Untracked files are left out: a new source file is named by a tracked one, which then
    // differs. When git cannot tell, the commit stands alone. `--no-optional-locks` keeps
    // git from refreshing the index it reads: a refreshed index is newer than this run, so
    // the next cargo command (another user's, the benches') would run this script and
    // rebuild the package again for nothing.
    match git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ]) {
        Some(changes) if !changes.is_empty() => format!("{head}-dirty"),
        _ => head,
    }
}
