//! What crate walls cannot say: the layers inside `src/`, that the solver crate pulls in no
//! async, gRPC or Arrow crate, and that its x86-64-only names stay under `cfg(target_arch)`.
//! Std only. Not here: the solver/service wall, which the compiler keeps; that no two files
//! of `crates/`, `src/` or `clients/` import each other (`architecture/file_graph.rs`).
//!
//! # The layers of `src/` (bottom-up; an arrow only points down)
//! `sync`, `solver` (re-exports of `queens-solver`), `render`, `pb` are leaves; then `wire`,
//! `config`, `stream`, `service`, `flight`, `web`, `server`, each using only those before it.
//! The client side (`client`, `fanout`, `batch`, `parquet_file`) may use each other and `config` and below.
//! `cli` may use anything; only the binaries (`src/main.rs`, `src/bin/`, not checked) may use
//! it. Nothing may name the root's own items. The top-level modules' graph has no cycle.
//!
//! # How the code is read (a token scan, not name resolution)
//! Comments (not nested), string and char literals are removed; each `crate::X` and `super::`
//! path (and `use` group) names the top-level module it reaches. Bare names are seen at their
//! `use`; macro-generated code is not seen; `#[cfg(test)]` code counts. `#[cfg(target_arch ..)]`
//! (not `not(..)`) gates the next item, statement or arm: to its first `;` or `,` before any
//! brace, or to its closing brace; on a `mod NAME;` line it gates the whole of that module's
//! file and every file below it, and so does an inner `#![cfg(target_arch ..)]` that opens a
//! file (the solver's per-target files are gated so, once). Items defined only under a gate
//! are not followed.
//!
//! # The tier modules
//! The files that open with an inner `#![cfg(..)]` naming `target_arch` (either way), and the
//! files below them, are the tier modules: no other file of `crates/` or `src/` names
//! `target_arch`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod file_graph;

/// The ranked layers, bottom first: each may use itself and every layer before it.
const LAYERS: [&str; 11] = [
    "sync", "solver", "render", "pb", "wire", "config", "stream", "service", "flight", "web",
    "server",
];
/// The client side: each may use the others and the layers up to `config`.
const CLIENT_SIDE: [&str; 4] = ["client", "fanout", "batch", "parquet_file"];
/// The binary's commands: may use anything, used only by the binaries.
const CLI: &str = "cli";
/// Crates the solver must not depend on, even through another crate (prefixes of names).
const NOT_IN_SOLVER: [&str; 6] = ["tokio", "tonic", "prost", "hyper", "arrow", "h2"];

/// Why the top-level module `from` may not use `to`, or `None` when it may.
fn rule(from: &str, to: &str) -> Option<String> {
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let known = |m: &str| rank(m).is_some() || CLIENT_SIDE.contains(&m) || m == CLI;
    if !known(from) || !known(to) {
        return Some(format!("{from} -> {to}: add both to a layer"));
    }
    let ok = match (rank(from), rank(to)) {
        _ if from == to || from == CLI => true,
        _ if to == CLI => return Some(format!("only the binaries may use {CLI}")),
        (Some(f), t) => t.is_some_and(|t| t <= f),
        (None, t) => t <= rank("config"), // the client side: None is the client side too
    };
    (!ok).then(|| format!("{from} may not use {to}"))
}

/// `src` with comments, string and char literals replaced by spaces (lifetimes are kept).
fn strip(src: &str) -> String {
    let (b, mut out, mut i) = (src.as_bytes(), String::new(), 0);
    while i < b.len() {
        let rest = &src[i..];
        let raw = (rest.strip_prefix('r'))
            .filter(|_| i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            .map(|r| r.len() - r.trim_start_matches('#').len())
            .filter(|&h| rest[1 + h..].starts_with('"'));
        let char_literal = rest.starts_with("'\\") || rest.chars().nth(2) == Some('\'');
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
            out.push(' ');
        } else if let Some(h) = raw {
            let close = format!("\"{}", "#".repeat(h));
            let body = &rest[2 + h..];
            i += 2 + h + body.find(&close).map_or(body.len(), |e| e + close.len());
            out.push(' ');
        } else if rest.starts_with('"') || (rest.starts_with('\'') && char_literal) {
            let close = b[i];
            i += 1;
            while i < b.len() && b[i] != close {
                i += 1 + usize::from(b[i] == b'\\'); // an escape: skip what it escapes
            }
            i += 1;
            out.push(' ');
        } else {
            let ch = rest.chars().next().expect("not at the end");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The tokens of stripped source: identifiers (with `_`) and single punctuation characters.
fn tokens(src: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_ident = false;
    for ch in strip(src).chars() {
        let word = ch.is_alphanumeric() || ch == '_';
        match out.last_mut() {
            Some(last) if word && in_ident => last.push(ch),
            _ if word || !ch.is_whitespace() => out.push(ch.to_string()),
            _ => {}
        }
        in_ident = word;
    }
    out
}

/// The top-level modules named by the `crate::` and `super::` paths of the file whose module
/// path (below the crate root) is `module`.
fn named_modules(module: &[&str], src: &str) -> BTreeSet<String> {
    let (t, mut out, mut i) = (tokens(src), BTreeSet::new(), 0);
    let is = |i: usize, s: &str| t.get(i).is_some_and(|x| x == s);
    while i < t.len() {
        let (mut depth, start) = (module.len(), i);
        if is(i, "crate") && is(i + 1, ":") && is(i + 2, ":") {
            (depth, i) = (0, i + 3);
        }
        while is(i, "super") && is(i + 1, ":") && is(i + 2, ":") {
            (depth, i) = (depth.saturating_sub(1), i + 3);
        }
        if i == start {
            i += 1;
        } else if depth > 0 {
            out.insert(module[0].to_string());
        } else if is(i, "{") {
            let mut level = 0;
            for j in i..t.len() {
                level = level + usize::from(t[j] == "{") - usize::from(t[j] == "}");
                if level == 0 {
                    break;
                } else if level == 1 && ["{", ","].contains(&t[j - 1].as_str()) {
                    out.insert(t[j].clone());
                }
            }
        } else if let Some(name) = t.get(i).filter(|n| n.starts_with(char::is_alphabetic)) {
            out.insert(name.clone());
        }
    }
    out
}

/// Every `.rs` file below `CARGO_MANIFEST_DIR/dir`, as (path below `dir`, source).
fn files_below(dir: &str) -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let read = std::fs::read_dir(&path).unwrap_or_else(|e| panic!("{dir}: {e}"));
    let mut out = Vec::new();
    for path in read.map(|e| e.expect("a directory entry").path()) {
        let name = path.file_name().expect("a name").to_string_lossy();
        if path.is_dir() {
            let below = files_below(&format!("{dir}/{name}"));
            out.extend(below.into_iter().map(|(p, s)| (format!("{name}/{p}"), s)));
        } else if name.ends_with(".rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.push((name.into(), text));
        }
    }
    out
}

/// The layer violations and cycles of a crate's files (paths relative to its `src/`), and the
/// number of (file, module) uses seen. The root and the binaries are not checked.
fn check_layers(files: &[(String, String)]) -> (Vec<String>, usize) {
    let (mut bad, mut seen) = (Vec::new(), 0);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, src) in files {
        let stem = path.trim_end_matches(".rs").trim_end_matches("/mod");
        let module: Vec<&str> = stem.split('/').collect();
        if ["lib", "main", "bin"].contains(&module[0]) {
            continue;
        }
        for to in named_modules(&module, src) {
            seen += 1;
            if let Some(why) = rule(module[0], &to) {
                bad.push(format!("src/{path}: {why}"));
            } else if to != module[0] {
                graph.entry(module[0].into()).or_default().insert(to);
            }
        }
    }
    for (from, tos) in &graph {
        for to in tos {
            let mut reach: Vec<&String> = vec![to];
            let mut done = BTreeSet::new();
            while let Some(m) = reach.pop() {
                if m == from {
                    bad.push(format!("a cycle: {from} -> {to} -> .. -> {from}"));
                    break;
                }
                if done.insert(m) {
                    reach.extend(graph.get(m).into_iter().flatten());
                }
            }
        }
    }
    (bad, seen)
}

/// The x86-64-only names outside a `target_arch` gate, and how many were gated.
fn x86_outside_gates(path: &str, src: &str) -> (Vec<String>, usize) {
    let t = tokens(src);
    let (mut outside, mut gated, mut depth) = (Vec::new(), 0, 0usize);
    let mut gate: Option<(usize, bool)> = None; // (depth at the gate, a brace opened since)
    for i in 0..t.len() {
        let s = t[i].as_str();
        if s == "#" && t.get(i + 1).is_some_and(|x| x == "[") && gate.is_none() {
            let attr: String = t[i..].iter().take_while(|x| *x != "]").cloned().collect();
            if attr.contains("target_arch") && !attr.contains("not(") {
                gate = Some((depth, false));
            }
        }
        // A module named after the target (`mod x86_64;`) is no x86-only name: its file is
        // checked on its own, and it is gated by its first line.
        let declared = i > 0 && t[i - 1] == "mod";
        let x86 = (["x86_64", "is_x86_feature_detected", "target_feature"].contains(&s)
            || s.starts_with("_mm")
            || s.starts_with("__m"))
            && !declared;
        match (x86, gate) {
            (true, Some(_)) => gated += 1,
            (true, None) => outside.push(format!("{path}: `{s}`")),
            _ => {}
        }
        depth += usize::from(matches!(s, "{" | "(" | "["));
        depth = depth.saturating_sub(usize::from(matches!(s, "}" | ")" | "]")));
        if let Some((at, opened)) = gate {
            let opened = opened || s == "{";
            let end = s == "}" || (!opened && matches!(s, ";" | ","));
            gate = (depth > at || (depth == at && !end)).then_some((at, opened));
        }
    }
    (outside, gated)
}

/// The values of a file's `#[path = "..."]` attributes, in order: the token scan loses
/// literals, so they are read from the text (none may stand in a comment).
fn path_attributes(src: &str) -> Vec<String> {
    (src.split("#[path = \"").skip(1))
        .filter_map(|rest| rest.split_once('"').map(|(value, _)| value.to_string()))
        .collect()
}

/// How the inner attributes that open `src` gate it on `target_arch`: `Some(true)` for
/// x86-64 only (a `cfg` naming it without `not(..)`), `Some(false)` for a `cfg` naming it
/// otherwise (other targets, or those and tests), `None` for no such gate.
fn file_gate(src: &str) -> Option<bool> {
    let t = tokens(src);
    let mut i = 0;
    while t.get(i..i + 3).is_some_and(|x| x == ["#", "!", "["]) {
        let attr: Vec<&String> = t[i + 3..].iter().take_while(|x| *x != "]").collect();
        if attr.first().is_some_and(|x| *x == "cfg") && attr.iter().any(|x| *x == "target_arch") {
            return Some(!attr.iter().any(|x| *x == "not"));
        }
        i += 3 + attr.len() + 1;
    }
    None
}

/// A file and, for a `mod.rs`, its folder (paths as in `files`).
fn with_folder(path: &str) -> Vec<String> {
    let folder = path.strip_suffix("mod.rs").map(String::from);
    [path.to_string()].into_iter().chain(folder).collect()
}

/// The files of the tier modules (see the module's docs), with their folders.
fn tier_files(files: &[(String, String)]) -> Vec<String> {
    (files.iter())
        .filter(|(_, src)| file_gate(src).is_some())
        .flat_map(|(path, _)| with_folder(path))
        .collect()
}

/// Whether `path` is one of `gated` (a file, or below a folder ending in `/`).
fn below(gated: &[String], path: &str) -> bool {
    (gated.iter()).any(|f| path == f || (f.ends_with('/') && path.starts_with(f.as_str())))
}

/// Each `target_arch` (code, not comments) of `files` outside the tier modules, and how many
/// files those have.
fn target_arch_outside_tiers(files: &[(String, String)]) -> (Vec<String>, usize) {
    let tiers = tier_files(files);
    let outside = (files.iter())
        .filter(|(path, _)| !below(&tiers, path))
        .flat_map(|(path, src)| {
            let named = tokens(src).iter().filter(|t| *t == "target_arch").count();
            (0..named).map(move |_| format!("{path}: `target_arch`"))
        })
        .collect();
    let tier_count = files.iter().filter(|(path, _)| below(&tiers, path)).count();
    (outside, tier_count)
}

/// The files (paths as in `files`) of the modules gated on x86-64: those declared under a
/// `target_arch` gate on their `mod NAME;` line, and the folders below them (`NAME.rs` or
/// `NAME/mod.rs` beside the declaring file's own module, and everything in `NAME/`; for a
/// module with a `#[path = "P"]` after its gate, `P` beside the declaring file and, if `P`
/// is a `mod.rs`, its folder), and those opened by an inner x86-64 gate ([`file_gate`]),
/// with their folders.
fn gated_files(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, src) in files {
        if file_gate(src) == Some(true) {
            out.extend(with_folder(path));
        }
        // The declaring module's folder: `a/` for `a/mod.rs` and `a.rs`, `` for the root.
        let stem = path.trim_end_matches(".rs");
        let dir = match stem.rsplit_once('/') {
            Some((dir, "mod")) => format!("{dir}/"),
            None if ["lib", "main", "mod"].contains(&stem) => String::new(),
            _ => format!("{stem}/"),
        };
        // A `#[path]` starts from the file's folder.
        let paths = path_attributes(src);
        let here = path
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| format!("{d}/"));
        let t = tokens(src);
        let is_attr = |i: usize| t[i] == "#" && t.get(i + 1).is_some_and(|x| x == "[");
        let attr_len = |i: usize| t[i..].iter().take_while(|x| *x != "]").count() + 1;
        let is_path = |i: usize| is_attr(i) && t.get(i + 2).is_some_and(|x| x == "path");
        let mut paths_seen = 0;
        for i in 0..t.len() {
            if !is_attr(i) {
                continue;
            }
            if is_path(i) {
                paths_seen += 1;
            }
            let attr: Vec<&String> = t[i..].iter().take_while(|x| *x != "]").collect();
            let arch =
                attr.iter().any(|x| *x == "target_arch") && !attr.iter().any(|x| *x == "not");
            let mut j = i + attr.len() + 1;
            let mut file = None;
            let mut k = paths_seen;
            while j < t.len() && is_attr(j) {
                if is_path(j) {
                    file = paths.get(k).map(String::as_str);
                    k += 1;
                }
                j += attr_len(j);
            }
            if t.get(j).is_some_and(|x| x == "pub") {
                j += 1;
                if t.get(j).is_some_and(|x| x == "(") {
                    j += t[j..].iter().position(|x| x == ")").map_or(0, |p| p + 1);
                }
            }
            let name = t
                .get(j + 1)
                .filter(|_| t.get(j).is_some_and(|x| x == "mod"));
            if let Some(name) = name.filter(|_| arch && t.get(j + 2).is_some_and(|x| x == ";")) {
                match file {
                    Some(file) => {
                        out.push(format!("{here}{file}"));
                        if let Some(folder) = file.strip_suffix("mod.rs") {
                            out.push(format!("{here}{folder}"));
                        }
                    }
                    None => out.extend([format!("{dir}{name}.rs"), format!("{dir}{name}/")]),
                }
            }
        }
    }
    out
}

/// The x86-64-only names of `files` outside a `target_arch` gate, and how many were gated
/// (those of a file gated on its `mod` line all are, [`gated_files`]).
fn x86_in_files(files: &[(String, String)]) -> (Vec<String>, usize) {
    let gated_files = gated_files(files);
    let (mut outside, mut gated) = (Vec::new(), 0);
    for (path, text) in files {
        let (o, g) = x86_outside_gates(path, text);
        if below(&gated_files, path) {
            gated += o.len() + g;
        } else {
            (outside, gated) = ([outside, o].concat(), gated + g);
        }
    }
    (outside, gated)
}

/// Panics with `what` and each of `found`, if there is any.
fn none_of(what: &str, found: &[String]) {
    assert!(found.is_empty(), "{what}:\n  {}", found.join("\n  "));
}

#[test]
fn src_modules_use_only_the_layers_below_them() {
    let (bad, seen) = check_layers(&files_below("src"));
    assert!(seen > 40, "{seen} uses: the scan is blind");
    none_of("src/ breaks its layers", &bad);
}

#[test]
fn the_solver_crate_depends_on_no_async_grpc_or_arrow_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args("tree -p queens-solver -e normal --prefix none".split(' '))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("libc"), "cargo tree: {out:?}");
    let banned = |line: &&str| NOT_IN_SOLVER.iter().any(|b| line.starts_with(b));
    let banned: Vec<String> = tree.lines().filter(banned).map(String::from).collect();
    none_of("queens-solver depends on", &banned);
}

#[test]
fn x86_only_names_in_the_solver_stay_under_target_arch() {
    let (outside, gated) = x86_in_files(&files_below("crates/solver/src"));
    assert!(gated > 50, "{gated} gated names: the scan is blind");
    none_of("x86-only names outside a gate", &outside);
}

#[test]
fn target_arch_is_named_only_in_the_tier_modules() {
    let (mut outside, mut tiers) = (Vec::new(), 0);
    for dir in ["crates/solver/src", "src"] {
        let (o, t) = target_arch_outside_tiers(&files_below(dir));
        outside.extend(o.into_iter().map(|o| format!("{dir}/{o}")));
        tiers += t;
    }
    assert!(
        tiers >= 6,
        "{tiers} files in tier modules: the scan is blind"
    );
    none_of("`target_arch` outside the tier modules", &outside);
}

/// Small files of a made-up crate, each after a line `@path`.
const SNIPPETS: &str = r##"
@stream/send.rs
use crate::server::Gate; // crate::cli
@stream/mod.rs
use super::{config::X, pb}; fn f() { super::service::g() }
@fanout/mod.rs
use crate::{client::Conn, stream::S}; let s = "crate::cli";
@client/mod.rs
fn f<'a>(c: char) -> &'a str { '"'; crate::fanout::go() }
@render.rs
/* crate::web */ /* crate::server */ use r"crate::cli"; use r#"crate::cli"#;
"##;

/// The scan reports a forbidden path in each spelling and a cycle, and nothing hidden in a
/// comment or a literal: the checks above can fail.
#[test]
fn the_scan_reports_what_it_should_and_not_what_it_should_not() {
    let files: Vec<(String, String)> = (SNIPPETS.split("\n@").skip(1))
        .map(|f| f.split_once('\n').expect("a path line"))
        .map(|(path, src)| (path.into(), src.into()))
        .collect();
    let (bad, _) = check_layers(&files);
    let want = [
        "src/stream/send.rs: stream may not use server",
        "src/stream/mod.rs: stream may not use service",
        "src/fanout/mod.rs: fanout may not use stream",
        "a cycle: client -> fanout -> .. -> client",
        "a cycle: fanout -> client -> .. -> fanout",
    ];
    let bad: BTreeSet<&str> = bad.iter().map(String::as_str).collect();
    assert_eq!(bad, BTreeSet::from(want));
    let src = "#[cfg(target_arch = \"x86_64\")]\nfn k() { use std::arch::x86_64::*; }\n\
               fn p() { std::arch::is_x86_feature_detected!(\"avx2\"); }";
    let (outside, gated) = x86_outside_gates("k.rs", src);
    assert_eq!((outside.len(), gated), (1, 1), "{outside:?}");
    // A module gated on its `mod` line is gated whole, with the files below it; one gated
    // by `not(..)`, or a file of the same name elsewhere, is not.
    let file = |path: &str, src: &str| (path.to_string(), src.to_string());
    let files = [
        file(
            "a/mod.rs",
            "#[cfg(target_arch = \"x86_64\")]\npub(super) mod k;\nmod p;",
        ),
        file("a/k.rs", "use std::arch::x86_64::*; mod deep;"),
        file(
            "a/k/deep.rs",
            "fn f() -> __m256i { _mm256_setzero_si256() }",
        ),
        file("a/p.rs", "#[cfg(not(target_arch = \"x86_64\"))]\nmod q;"),
        file(
            "c/mod.rs",
            "#[cfg(test)]\n#[path = \"t.rs\"]\nmod t;\n#[cfg(target_arch = \"x86_64\")]\n\
             #[path = \"x/mod.rs\"]\nmod arch;",
        ),
        file("c/x/mod.rs", "use std::arch::x86_64::*; mod deep;"),
        file("c/x/deep.rs", "use std::arch::x86_64::_pext_u64;"),
        file("c/t.rs", "use std::arch::x86_64::_pext_u64;"),
        file("a/p/q.rs", "use std::arch::x86_64::_pext_u64;"),
        file("b/k.rs", "use std::arch::x86_64::_pext_u64;"),
    ];
    let (outside, gated) = x86_in_files(&files);
    assert_eq!(gated, 5, "{outside:?}");
    assert_eq!(
        outside,
        ["c/t.rs: `x86_64`", "a/p/q.rs: `x86_64`", "b/k.rs: `x86_64`"]
    );
    // An inner gate that opens a file gates it whole (and a `mod.rs`'s folder) and makes it
    // a tier module; one that lets other targets in does not gate x86-64 names; a
    // `target_arch` elsewhere is reported, in code only.
    let files = [
        file(
            "d/x/mod.rs",
            "//! Doc.\n#![cfg(target_arch = \"x86_64\")]\nuse std::arch::x86_64::*; mod deep;",
        ),
        file("d/x/deep.rs", "use std::arch::x86_64::_pext_u64;"),
        file(
            "d/g.rs",
            "#![allow(dead_code)]\n#![cfg(any(not(target_arch = \"x86_64\"), test))]\n\
             use std::arch::x86_64::_pext_u64;",
        ),
        file(
            "d/mod.rs",
            "// target_arch\nmod g; mod x; fn f() -> bool { cfg!(target_arch = \"x86\") }",
        ),
    ];
    let (outside, gated) = x86_in_files(&files);
    assert_eq!((outside, gated), (vec!["d/g.rs: `x86_64`".to_string()], 2));
    let (outside, tiers) = target_arch_outside_tiers(&files);
    assert_eq!(
        (outside, tiers),
        (vec!["d/mod.rs: `target_arch`".to_string()], 3)
    );
}
