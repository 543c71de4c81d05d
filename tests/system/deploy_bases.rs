//! The Docker image test's base images, made locally from Debian's packages because Docker
//! Hub cannot be reached here: the runtime base (`queens-test/debian:bookworm`, thinned like
//! `debian:bookworm-slim`) and the builder base (`queens-test/rust:<rustc version>-bookworm`,
//! with gcc, libc6-dev, this machine's Rust toolchain and CA bundle), each made once with
//! `debootstrap` and `docker import` and kept in the daemon; and the Debian mirror they come
//! from, read from this machine's apt sources. The image's build, run and stop live in
//! `deploy_image.rs`, with the docker helpers this file uses.

use super::deploy_image::{QUICK, docker, image_id, must, scratch};

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::tools;

/// The runtime base image made here.
const RUNTIME_BASE: &str = "queens-test/debian:bookworm";
/// Longest a debootstrap, a copy of the toolchain or an import may take.
const SLOW: Duration = Duration::from_secs(900);
/// Paths a slim Debian image leaves out (emptied in the runtime base).
const SLIM: [&str; 6] = [
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
];
/// PATH in the imported images (imported images have no configuration of their own).
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The Debian mirror this machine's apt fetches bookworm from (one-line `.list` or deb822
/// `.sources` files), else `http://deb.debian.org/debian`.
pub(crate) fn debian_mirror() -> String {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(entries) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        more.sort();
        files.extend(more);
    }
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let name = file.to_string_lossy();
        let found = if name.ends_with(".sources") {
            mirror_in_deb822(&text)
        } else if name.ends_with(".list") {
            mirror_in_one_line(&text)
        } else {
            None
        };
        if let Some(mirror) = found {
            return mirror;
        }
    }
    "http://deb.debian.org/debian".to_string()
}

/// The first URI of a deb822 stanza (`Types: deb`) whose suites include `bookworm`.
fn mirror_in_deb822(text: &str) -> Option<String> {
    text.split("\n\n").find_map(|stanza| {
        let field = |name: &str| {
            stanza.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim().eq_ignore_ascii_case(name)).then(|| value.trim().to_string())
            })
        };
        let deb = field("Types")?.split_whitespace().any(|t| t == "deb");
        let bookworm = field("Suites")?.split_whitespace().any(|s| s == "bookworm");
        let enabled = field("Enabled").is_none_or(|e| e != "no");
        (deb && bookworm && enabled)
            .then(|| field("URIs"))
            .flatten()
            .and_then(|uris| uris.split_whitespace().next().map(str::to_string))
    })
}

/// The URI of the first `deb URI bookworm ...` line (options in brackets skipped).
fn mirror_in_one_line(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim();
        let rest = line.strip_prefix("deb ")?.trim_start();
        let rest = match rest.strip_prefix('[') {
            Some(options) => options.split_once(']')?.1,
            None => rest,
        };
        let mut words = rest.split_whitespace();
        let (uri, suite) = (words.next()?, words.next()?);
        (suite == "bookworm").then(|| uri.to_string())
    })
}

/// Unmounts whatever an interrupted debootstrap left mounted under `dir` (deepest first),
/// then removes `dir`.
fn remove_rootfs(dir: &Path) {
    if !dir.exists() {
        return;
    }
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let prefix = dir.to_string_lossy().to_string();
    let mut under: Vec<&str> = mounts
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter(|point| point.starts_with(&prefix))
        .collect();
    under.sort_by_key(|point| std::cmp::Reverse(point.len()));
    for point in under {
        let _ = tools::run_bounded(Command::new("umount").args(["-l", point]), QUICK);
    }
    fs::remove_dir_all(dir).unwrap_or_else(|e| panic!("remove {}: {e}", dir.display()));
}

/// Debootstraps bookworm (minbase, plus `include`) into `dir` from `mirror`.
fn debootstrap(dir: &Path, include: &[&str], mirror: &str) {
    remove_rootfs(dir);
    let mut command = Command::new("debootstrap");
    command.arg("--variant=minbase");
    if !include.is_empty() {
        command.arg(format!("--include={}", include.join(",")));
    }
    command.arg("bookworm").arg(dir).arg(mirror);
    eprintln!("docker: debootstrap {} from {mirror}", dir.display());
    must("debootstrap", &mut command, SLOW);
}

/// Empties `paths` under `root` (the folders stay, with apt's `partial` folders).
fn thin(root: &Path, paths: &[&str]) {
    for path in paths {
        let dir = root.join(path);
        if dir.exists() {
            fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("remove {}: {e}", dir.display()));
        }
        fs::create_dir_all(&dir).expect("recreate a thinned folder");
    }
    for partial in [
        "var/cache/apt/archives/partial",
        "var/lib/apt/lists/partial",
    ] {
        fs::create_dir_all(root.join(partial)).expect("create apt's partial folder");
    }
    for cache in [
        "var/cache/apt/pkgcache.bin",
        "var/cache/apt/srcpkgcache.bin",
    ] {
        let _ = fs::remove_file(root.join(cache));
    }
}

/// `tar -c root | docker import --change ENV ... - tag`, then removes `root`.
fn import(root: &Path, tag: &str, env: &[String]) {
    let changes: Vec<String> = env
        .iter()
        .flat_map(|e| ["--change".to_string(), format!("ENV {e}")])
        .collect();
    let docker = docker().get_program().to_owned();
    must(
        &format!("docker import {tag}"),
        Command::new("bash")
            .arg("-c")
            .arg(r#"set -o pipefail; root=$1 docker=$2 tag=$3; shift 3; tar -C "$root" -c . | "$docker" import "$@" - "$tag""#)
            .arg("import")
            .arg(root)
            .arg(docker)
            .arg(tag)
            .args(&changes),
        SLOW,
    );
    remove_rootfs(root);
}

/// The runtime base: bookworm minbase, thinned like `debian:bookworm-slim`; made once.
pub(crate) fn runtime_base(mirror: &str) -> String {
    if image_id(RUNTIME_BASE).is_none() {
        let root = scratch().join("rootfs-debian");
        debootstrap(&root, &[], mirror);
        thin(&root, &SLIM);
        import(&root, RUNTIME_BASE, &[format!("PATH={PATH}")]);
    }
    RUNTIME_BASE.to_string()
}

/// This machine's Rust toolchain: its sysroot and `rustc -V`'s version and commit as a tag.
fn toolchain() -> (PathBuf, String) {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = must(
        "rustc --print sysroot",
        Command::new(&rustc).args(["--print", "sysroot"]),
        QUICK,
    );
    let sysroot = PathBuf::from(sysroot.stdout.trim());
    assert!(
        sysroot.join("bin/cargo").exists(),
        "no cargo in the toolchain at {}",
        sysroot.display()
    );
    let version = must("rustc -V", Command::new(&rustc).arg("-V"), QUICK).stdout;
    // "rustc 1.95.0 (59807616e 2026-04-14)" -> "1.95.0-59807616e"
    let words: Vec<&str> = version.split_whitespace().collect();
    let tag = match words.as_slice() {
        [_, number, commit, ..] => format!("{number}-{}", commit.trim_start_matches('(')),
        _ => panic!("unexpected rustc -V: {version:?}"),
    };
    (sysroot, tag)
}

/// The builder base: bookworm minbase with gcc and libc6-dev, this machine's Rust toolchain
/// in `/usr/local/rust` and this machine's CA bundle; made once per toolchain.
pub(crate) fn builder_base(mirror: &str) -> String {
    let (sysroot, version) = toolchain();
    let tag = format!("queens-test/rust:{version}-bookworm");
    if image_id(&tag).is_some() {
        return tag;
    }
    let root = scratch().join("rootfs-rust");
    debootstrap(&root, &["gcc", "libc6-dev", "ca-certificates"], mirror);
    thin(&root, &SLIM[..2]);
    let rust = root.join("usr/local/rust");
    fs::create_dir_all(&rust).expect("create usr/local/rust");
    let parts: Vec<PathBuf> = ["bin", "lib", "libexec"]
        .iter()
        .map(|part| sysroot.join(part))
        .filter(|part| part.exists())
        .collect();
    must(
        "copy the Rust toolchain",
        Command::new("cp").arg("-a").args(&parts).arg(&rust),
        SLOW,
    );
    let bundle = Path::new("/etc/ssl/certs/ca-certificates.crt");
    if bundle.exists() {
        fs::copy(bundle, root.join("etc/ssl/certs/ca-certificates.crt")).expect("copy CAs");
    }
    import(
        &root,
        &tag,
        &[
            format!("PATH=/usr/local/rust/bin:{PATH}"),
            "CARGO_HOME=/usr/local/cargo".to_string(),
        ],
    );
    tag
}

/// The mirror is found in deb822 and one-line apt sources alike.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn mirrors_are_read_from_both_apt_formats() {
    let deb822 = "Types: deb\nURIs: http://deb.debian.org/debian-security\n\
                  Suites: bookworm-security\n\nTypes: deb deb-src\n\
                  URIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n";
    assert_eq!(
        mirror_in_deb822(deb822).as_deref(),
        Some("http://mirror.example/debian")
    );
    let one_line = "# deb http://old/debian bookworm main\n\
                    deb [signed-by=/k.gpg] http://mirror.example/debian bookworm main\n";
    assert_eq!(
        mirror_in_one_line(one_line).as_deref(),
        Some("http://mirror.example/debian")
    );
    assert_eq!(mirror_in_one_line("deb http://x/debian trixie main"), None);
}
