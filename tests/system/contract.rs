//! The service's contract, `proto/queens.proto`, checked with buf (PyPI `buf-bin`, installed by
//! the test) under the repository's `buf.yaml` (STANDARD and COMMENTS lint rules but the ones
//! it excepts, FILE breaking rules):
//!
//! - `buf lint` and `buf format --diff --exit-code` pass;
//! - `buf breaking` passes against the proto as it was before its last committed change: the
//!   first parent of the last commit that touched `proto/`, its `proto/` written out by git
//!   under `target/contract/` (buf is not asked to read git itself: it clones the repository
//!   with its own git settings, which refuse a checkout owned by another user, as the system
//!   tests' checkout is under CI). On a commit that changes the proto that is
//!   HEAD~1, the previous commit; on any later commit it still checks the latest change (HEAD~1's
//!   proto would be the same as HEAD's). While `proto/` has uncommitted changes, it also passes
//!   against HEAD's. A full clone has that history; a shallow one may not, and then the test
//!   fails saying how to fetch it;
//! - the checks bite: copies of the proto under `target/contract/` with a field renumbered and
//!   with a field renamed fail `buf breaking` against `proto/` with the rules named, one with
//!   a doc comment removed fails `buf lint`, and an unchanged copy passes both.
//!
//! buf needs no network here (one local module, no dependencies); its cache goes under
//! `target/tools/buf-cache`.

use crate::tools;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// buf, pinned.
const BUF: &str = "buf-bin==1.75.0";

/// Longest one buf or git run may take.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs buf with `args` in the repository; returns the run.
fn buf(args: &[&str]) -> tools::Run {
    let exe = tools::pypi_tool(BUF, "buf");
    let run = tools::run_bounded(
        Command::new(exe)
            .args(args)
            .current_dir(tools::repo())
            .env("BUF_CACHE_DIR", tools::tools_dir().join("buf-cache")),
        LIMIT,
    );
    eprintln!(
        "buf {}: exit {}\n{}{}",
        args.join(" "),
        run.code(),
        run.stdout,
        run.stderr
    );
    run
}

/// Runs git with `args` in the repository: its trimmed stdout if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let run = tools::run_bounded(
        Command::new("git").args(args).current_dir(tools::repo()),
        LIMIT,
    );
    run.success().then(|| run.stdout.trim().to_string())
}

/// The rule IDs in buf's `--error-format json` output.
fn rules(run: &tools::Run) -> Vec<String> {
    run.stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("buf's JSON line");
            v["type"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

/// A workspace `target/contract/<name>` holding `buf.yaml` and the proto with `edit` applied
/// (which must change it); its path relative to the repository.
fn copy_with(name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let repo = tools::repo();
    let dir = tools::target_dir().join("contract").join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove an old copy");
    }
    std::fs::create_dir_all(dir.join("proto")).expect("create the copy");
    std::fs::copy(repo.join("buf.yaml"), dir.join("buf.yaml")).expect("copy buf.yaml");
    let proto = std::fs::read_to_string(repo.join("proto/queens.proto")).expect("the proto");
    let edited = edit(&proto);
    std::fs::write(dir.join("proto/queens.proto"), &edited).expect("write the copy");
    dir.strip_prefix(&repo)
        .map(Path::to_path_buf)
        .unwrap_or(dir)
}

/// `text` with the first `from` replaced by `to`; panics if `from` is not in it.
fn replace_first(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the proto no longer has {from:?}");
    text.replacen(from, to, 1)
}

/// The commits whose proto the working tree's must stay compatible with, each with why.
fn baselines() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let changed_now = git(&["status", "--porcelain", "--", "proto"])
        .expect("git status (is this a git checkout?)");
    if !changed_now.is_empty() {
        let head = git(&["rev-parse", "HEAD"]).expect("a HEAD commit");
        out.push((head, "HEAD (proto/ has uncommitted changes)".to_string()));
    }
    let last = git(&["log", "-1", "--format=%H", "--", "proto"]).expect("git log");
    assert!(!last.is_empty(), "no commit has touched proto/");
    match git(&["rev-parse", "--verify", "--quiet", &format!("{last}^")]) {
        Some(parent) => {
            if git(&["cat-file", "-e", &format!("{parent}:proto")]).is_some() {
                out.push((
                    parent,
                    format!("the parent of {last}, the last commit that changed proto/"),
                ));
            } else {
                eprintln!("proto/ first appeared in {last}: no earlier contract to keep");
            }
        }
        None => {
            let shallow = git(&["rev-parse", "--is-shallow-repository"]);
            assert_ne!(
                shallow.as_deref(),
                Some("true"),
                "this is a shallow clone: the commit before {last}, the last one that changed \
                 proto/, is not here, so the contract cannot be compared with it. Fetch the \
                 history (`git fetch --unshallow`, or `--deepen=N`) or clone without --depth."
            );
            eprintln!("{last} is the first commit: no earlier contract to keep");
        }
    }
    out
}

/// `buf lint` and `buf format` pass on the proto as it is.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn lint_and_format_pass() {
    let lint = buf(&["lint"]);
    assert!(lint.success(), "buf lint:\n{}", lint.output());
    assert!(lint.stdout.trim().is_empty(), "{}", lint.output());
    let format = buf(&["format", "--diff", "--exit-code"]);
    assert!(format.success(), "buf format:\n{}", format.output());
}

/// `buf breaking` passes against the proto before its last committed change (and HEAD's, while
/// there are uncommitted changes), written out from this repository's git.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn compatible_with_the_previous_contract() {
    let baselines = baselines();
    for (commit, why) in &baselines {
        eprintln!("against {commit}: {why}");
        let against = export(commit);
        let against = against.to_str().expect("a UTF-8 path");
        let run = buf(&["breaking", "--against", against]);
        assert!(
            run.success(),
            "buf breaking against {why} ({commit}):\n{}",
            run.output()
        );
    }
}

/// A workspace `target/contract/at-<commit>` holding today's `buf.yaml` and `proto/` as it was
/// at `commit`, every file of it as git has it; its path relative to the repository.
fn export(commit: &str) -> PathBuf {
    let repo = tools::repo();
    let dir = tools::target_dir()
        .join("contract")
        .join(format!("at-{commit}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove an old export");
    }
    let files = git(&["ls-tree", "-r", "--name-only", commit, "--", "proto"])
        .expect("git ls-tree of the baseline's proto/");
    assert!(!files.is_empty(), "{commit} has no files under proto/");
    for file in files.lines() {
        let text = git(&["show", &format!("{commit}:{file}")]).expect("git show");
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a file under proto/"))
            .expect("create the export");
        std::fs::write(&path, text + "\n").expect("write the export");
    }
    std::fs::copy(repo.join("buf.yaml"), dir.join("buf.yaml")).expect("copy buf.yaml");
    dir.strip_prefix(&repo)
        .map(Path::to_path_buf)
        .unwrap_or(dir)
}

/// The checks bite: a renumbered field and a renamed field break the contract (by the rules
/// named), a field without its doc comment fails lint, and an unchanged copy passes both.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn the_checks_catch_breaking_changes() {
    let same = copy_with("unchanged", str::to_string);
    let same = same.to_str().expect("a UTF-8 path");
    let run = buf(&["breaking", same, "--against", "proto"]);
    assert!(run.success(), "an unchanged copy:\n{}", run.output());
    let run = buf(&["lint", same]);
    assert!(run.success(), "an unchanged copy:\n{}", run.output());

    for (name, from, to, rule) in [
        (
            "renumbered",
            "uint32 n = 1;",
            "uint32 n = 99;",
            "FIELD_NO_DELETE",
        ),
        (
            "renamed",
            "uint64 solutions = 1;",
            "uint64 solution_count = 1;",
            "FIELD_SAME_NAME",
        ),
    ] {
        let copy = copy_with(name, |p| replace_first(p, from, to));
        let copy = copy.to_str().expect("a UTF-8 path");
        let run = buf(&[
            "breaking",
            copy,
            "--against",
            "proto",
            "--error-format",
            "json",
        ]);
        assert_eq!(run.code(), 100, "{name} must break:\n{}", run.output());
        let found = rules(&run);
        assert!(
            found.iter().any(|r| r == rule),
            "{name}: expected {rule}, got {found:?}\n{}",
            run.output()
        );
    }

    let uncommented = copy_with("uncommented", |p| {
        // The whole comment above EnumerateRequest.n, however many lines it runs to.
        let lines: Vec<&str> = p.lines().collect();
        let field = lines
            .iter()
            .position(|l| l.trim() == "uint32 n = 1;")
            .expect("the field n");
        let mut first = field;
        while first > 0 && lines[first - 1].trim_start().starts_with("//") {
            first -= 1;
        }
        assert!(first < field, "n has no doc comment to remove");
        let kept: Vec<&str> = lines[..first]
            .iter()
            .chain(&lines[field..])
            .copied()
            .collect();
        kept.join("\n") + "\n"
    });
    let uncommented = uncommented.to_str().expect("a UTF-8 path");
    let run = buf(&["lint", uncommented, "--error-format", "json"]);
    assert_eq!(run.code(), 100, "lint must fail:\n{}", run.output());
    let found = rules(&run);
    assert!(
        found.iter().any(|r| r == "COMMENT_FIELD"),
        "expected COMMENT_FIELD, got {found:?}"
    );
}
