//! The module graph of `src/`: no cycles between files, and every edge points down the layers.
//!
//! What lives here: a small reader of Rust source (std only) that builds the file-level graph,
//! the check of the real `src/` against it, and tests of the reader itself on small in-memory
//! crates, so that the check cannot pass because the reader sees nothing. What does not: any
//! knowledge of the crate's items (everything is read from the files).
//!
//! # The graph
//! - Nodes are the files under `src/` reached through `mod x;` declarations: a `mod.rs` is its
//!   folder's module, `src/lib.rs` is the library's root, and `src/main.rs`, each
//!   `src/bin/*.rs` and each `src/bin/*/main.rs` are the roots of separate crates whose `queens::` paths resolve in the
//!   library. The generated `pb` module (inline in `src/lib.rs`) is one leaf node, `pb`, and
//!   any name inside it resolves to it.
//! - There is an edge A -> B when code in A names an item *defined* in B: through a path
//!   anywhere in the code (`crate::`, `super::`, `self::`, `queens::` from the binaries, or a
//!   name brought in by `use`), or through a private `use` (the compiler rejects unused ones,
//!   so a private import is a use). A re-export (`pub use`, `pub(crate) use`, groups,
//!   `self::`, globs) is not an edge by itself: names are followed through it to the file that
//!   defines them. `mod x;` declarations are not edges.
//! - Comments, doc comments, string and char literals are removed first. Items under
//!   `#[cfg(test)]` (and `#[cfg(all(test, ..))]`) are removed, so are files named `tests.rs`,
//!   and modules declared only under `#[cfg(test)]` are never read.
//!
//! # Approximations (each errs towards reporting an edge, never towards hiding one)
//! - A bare name is looked up in its module's scope as a whole: a local variable that shadows
//!   an imported name counts as a use of the import. Names after `.` (fields, methods), names
//!   followed by a single `:` (fields, parameters, `let` bindings with types) and names right
//!   after `let` are not looked up.
//! - `use` declarations inside function bodies count for the whole module.
//! - A glob import of a module (`use super::*`) makes each bare name of the importing file
//!   that the glob provides an edge to the file defining it; a glob of an item (an enum's
//!   variants) is an edge to that item's file.
//! - A name defined both as a module and as an item (`solver::count` the folder and the
//!   function) is followed as both.
//! - Paths inside strings (`#[serde(with = "..")]`) and inside macro-generated code are not
//!   seen; the binaries may not declare modules of their own (the reader stops if one does).
//!
//! Set `ARCHITECTURE_EDGES=1` to print every edge with the place that names it.
//!
//! # Only the SIMD tiers know the CPU
//! The same reader checks that the code would build for a CPU other than x86-64: every name
//! that exists only there (`std::arch::x86_64`, its intrinsics and vector types,
//! `is_x86_feature_detected`, `#[target_feature]`), and every item defined only under
//! `#[cfg(target_arch = ..)]`, is named only inside code under such a `cfg` (the standard
//! library of another target cannot be installed here, so `cargo check --target` cannot say
//! it). Names after `.` (methods) are not looked at.
//!
//! # The layers (bottom-up; see the notes the layout follows)
//! `sync`, `solver`, `render`, `pb` are the leaves; `wire` (pb <-> solver conversions) may use
//! them; `config` may use those; `stream` config and
//! below; `service` stream and below; `flight` service and below; `web` flight and below; `server` web and below. The client side (`client`,
//! `fanout`, `batch`) may use each other (without cycles) and `config` and below, never
//! `stream`, `service` or `server`. `cli`, the binary's commands (flags, the serve command,
//! the client commands' output), sits on top of both: it may use anything, and only the
//! binaries may use it. The binaries may use anything; nothing may use the library root or a
//! binary.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;

/// The library's crate name, as the binaries spell it in paths.
const LIB: &str = "queens";

/// The ranked layers, bottom first: each may use its own files and every layer before it.
const LAYERS: [&str; 11] = [
    "sync", "solver", "render", "pb", "wire", "config", "stream", "service", "flight", "web",
    "server",
];

/// The client side: its modules may use each other and the layers up to [`CLIENT_SIDE_TOP`].
const CLIENT_SIDE: [&str; 3] = ["client", "fanout", "batch"];

/// The binary's commands: on top of the server and the client side, used only by the binaries.
const COMMANDS: &str = "cli";

/// The highest layer the client side may use: it speaks the wire and the solver, never the
/// stream, service or server internals.
const CLIENT_SIDE_TOP: &str = "config";

/// Fewer edges than this in the real graph means the reader has stopped seeing the code.
const MIN_EDGES: usize = 40;

#[test]
fn module_graph_has_no_cycles_and_respects_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    read_tree(root, &root.join("src"), &mut files);
    let graph = graph::build(&files);
    assert!(
        graph.edges.len() > MIN_EDGES,
        "only {} edges among {} files: the reader no longer sees the code's paths",
        graph.edges.len(),
        graph.nodes.len()
    );
    if std::env::var_os("ARCHITECTURE_EDGES").is_some() {
        for (a, b) in graph.edges.keys() {
            let (from, to) = (&graph.nodes[*a], &graph.nodes[*b]);
            eprintln!("{from} -> {to}: {}", graph.evidence(from, to));
        }
    }
    let cycles = graph.cycles();
    let violations = layer_violations(&graph);
    if cycles.is_empty() && violations.is_empty() {
        return;
    }
    let mut report = format!(
        "the module graph of src/ ({} files, {} edges) breaks the layering rules\n",
        graph.nodes.len(),
        graph.edges.len()
    );
    report += &format!(
        "\n{} cycle(s) (each edge: where it is named):\n",
        cycles.len()
    );
    for cycle in &cycles {
        report += &format!("  {}\n", cycle.join(" -> "));
        for pair in cycle.windows(2) {
            report += &format!("      {}\n", graph.evidence(&pair[0], &pair[1]));
        }
    }
    report += &format!("\n{} layer violation(s):\n", violations.len());
    for v in &violations {
        report += &format!("  {v}\n");
    }
    panic!("{report}");
}

#[test]
fn x86_only_names_stay_inside_their_cfg() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    read_tree(root, &root.join("src"), &mut files);
    let (outside, gated) = graph::x86_outside_gates(&files);
    assert!(
        gated > 100,
        "only {gated} names under target_arch gates: the reader no longer sees the SIMD tiers"
    );
    assert!(
        outside.is_empty(),
        "x86-64-only names outside a #[cfg(target_arch = ..)] item (a build for another CPU \
         would fail):\n  {}",
        outside.join("\n  ")
    );
}

/// Every `.rs` file below `dir`, as (path relative to `root` with `/`, source).
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_tree(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("below the root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            out.push((rel, text));
        }
    }
}

/// The top-level module a node belongs to: `sync`, `solver`, ..., `pb`, or `bin` for the
/// binaries and `root` for `src/lib.rs`.
fn top_module(node: &str) -> String {
    if node == "pb" {
        return "pb".into();
    }
    if node == "src/lib.rs" {
        return "root".into();
    }
    if node == "src/main.rs" || node.starts_with("src/bin/") {
        return "bin".into();
    }
    let rest = node.strip_prefix("src/").unwrap_or(node);
    let first = rest.split('/').next().unwrap_or(rest);
    first.trim_end_matches(".rs").into()
}

/// Why `from` may not use `to` (two top-level modules), or `None` when it may.
fn layer_rule(from: &str, to: &str) -> Option<String> {
    if from == to || from == "bin" {
        return None;
    }
    if to == "bin" || to == "root" {
        return Some(format!("nothing may use {to}"));
    }
    if to == COMMANDS {
        return Some(format!("only the binaries may use {COMMANDS}"));
    }
    if from == COMMANDS {
        return None;
    }
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let below = |top: &str| -> Vec<&str> {
        let end = rank(top).expect("a ranked layer");
        LAYERS[..end].to_vec()
    };
    let allowed: Vec<&str> = if let Some(r) = rank(from) {
        LAYERS[..r].to_vec()
    } else if CLIENT_SIDE.contains(&from) {
        let mut a = below(CLIENT_SIDE_TOP);
        a.push(CLIENT_SIDE_TOP);
        a.extend(CLIENT_SIDE);
        a
    } else if from == "root" {
        return None;
    } else {
        return Some(format!(
            "`{from}` is in no layer: add it to LAYERS or CLIENT_SIDE in tests/architecture.rs"
        ));
    };
    if allowed.contains(&to) {
        None
    } else if allowed.is_empty() {
        Some(format!("{from} is a leaf and may use nothing of the crate"))
    } else {
        Some(format!("{from} may use only {}", allowed.join(", ")))
    }
}

/// Every edge that points up or across the layers, with where it is named.
fn layer_violations(graph: &graph::Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b) in graph.edges.keys() {
        let (from, to) = (&graph.nodes[*a], &graph.nodes[*b]);
        let (ta, tb) = (top_module(from), top_module(to));
        if let Some(why) = layer_rule(&ta, &tb) {
            out.push(format!(
                "{from} ({ta}) -> {to} ({tb}): {why}\n      {}",
                graph.evidence(from, to)
            ));
        }
    }
    out
}

/// The reader: source text to tokens to modules to the file graph.
mod graph {
    use super::*;

    /// One lexical token; literals and lifetimes keep no text.
    #[derive(Clone, Debug, PartialEq)]
    enum Tok {
        Ident(String),
        /// `::`
        Sep,
        P(char),
        /// A string, char or number literal.
        Lit,
        Life,
    }

    /// A token and the line it starts on.
    #[derive(Clone, Debug)]
    struct Token {
        tok: Tok,
        line: usize,
    }

    fn ident_char(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }

    /// Tokens of `src` without comments (doc comments included); literals become `Lit`.
    fn lex(src: &str) -> Vec<Token> {
        let c: Vec<char> = src.chars().collect();
        let n = c.len();
        let at = |k: usize| if k < n { c[k] } else { '\0' };
        let mut out = Vec::new();
        let (mut i, mut line) = (0, 1);
        // Skips a "..." string whose opening quote is at `i`; returns the index after it.
        let quoted = |mut i: usize, line: &mut usize| {
            i += 1;
            while i < n && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    *line += 1;
                }
                i += 1;
            }
            i + 1
        };
        // Skips a raw string whose first `#` or quote is at `i`.
        let raw = |mut i: usize, line: &mut usize| {
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            loop {
                if i >= n {
                    return n;
                }
                if c[i] == '"' && (1..=hashes).all(|h| at(i + h) == '#') {
                    return i + 1 + hashes;
                }
                if c[i] == '\n' {
                    *line += 1;
                }
                i += 1;
            }
        };
        // Skips a char literal whose opening quote is at `i`.
        let char_lit = |mut i: usize| {
            if at(i + 1) == '\\' {
                i += 3;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i + 1
            } else {
                i + 3
            }
        };
        while i < n {
            let ch = c[i];
            let start = line;
            let mut push = |tok| out.push(Token { tok, line: start });
            if ch == '\n' {
                line += 1;
                i += 1;
            } else if ch.is_whitespace() {
                i += 1;
            } else if ch == '/' && at(i + 1) == '/' {
                while i < n && c[i] != '\n' {
                    i += 1;
                }
            } else if ch == '/' && at(i + 1) == '*' {
                let mut depth = 0;
                while i < n {
                    if c[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            } else if ch == '"' {
                i = quoted(i, &mut line);
                push(Tok::Lit);
            } else if ch == '\'' {
                if at(i + 1) == '\\' || at(i + 2) == '\'' {
                    i = char_lit(i);
                    push(Tok::Lit);
                } else {
                    i += 1;
                    while i < n && ident_char(c[i]) {
                        i += 1;
                    }
                    push(Tok::Life);
                }
            } else if ch.is_ascii_digit() {
                while i < n && (ident_char(c[i]) || (c[i] == '.' && at(i + 1).is_ascii_digit())) {
                    i += 1;
                }
                push(Tok::Lit);
            } else if ident_char(ch) {
                let s = i;
                while i < n && ident_char(c[i]) {
                    i += 1;
                }
                let word: String = c[s..i].iter().collect();
                let next = at(i);
                let raw_string_follows =
                    next == '"' || (next == '#' && (at(i + 1) == '"' || at(i + 1) == '#'));
                if matches!(word.as_str(), "r" | "br" | "cr") && raw_string_follows {
                    i = raw(i, &mut line);
                    push(Tok::Lit);
                } else if word == "r" && next == '#' && ident_char(at(i + 1)) {
                    let s = i + 1;
                    i += 1;
                    while i < n && ident_char(c[i]) {
                        i += 1;
                    }
                    push(Tok::Ident(c[s..i].iter().collect()));
                } else if matches!(word.as_str(), "b" | "c") && next == '"' {
                    i = quoted(i, &mut line);
                    push(Tok::Lit);
                } else if word == "b" && next == '\'' {
                    i = char_lit(i);
                    push(Tok::Lit);
                } else {
                    push(Tok::Ident(word));
                }
            } else if ch == ':' && at(i + 1) == ':' {
                i += 2;
                push(Tok::Sep);
            } else {
                i += 1;
                push(Tok::P(ch));
            }
        }
        out
    }

    fn is(t: &[Token], i: usize, tok: &Tok) -> bool {
        t.get(i).is_some_and(|x| x.tok == *tok)
    }

    fn ident_at(t: &[Token], i: usize) -> Option<&str> {
        match t.get(i).map(|x| &x.tok) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    /// The index after the bracket that closes the one opened at `i`.
    fn close(t: &[Token], i: usize) -> usize {
        let mut depth = 0;
        let mut k = i;
        while k < t.len() {
            match t[k].tok {
                Tok::P('(' | '[' | '{') => depth += 1,
                Tok::P(')' | ']' | '}') => {
                    depth -= 1;
                    if depth == 0 {
                        return k + 1;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        t.len()
    }

    /// If `#[cfg(test)]` (or `#![..]`, or `cfg(all(test, ..))`) starts at `i`: the index after
    /// it, and whether it is an inner attribute.
    fn test_attr(t: &[Token], i: usize) -> Option<(usize, bool)> {
        if !is(t, i, &Tok::P('#')) {
            return None;
        }
        let inner = is(t, i + 1, &Tok::P('!'));
        let open = if inner { i + 2 } else { i + 1 };
        if !is(t, open, &Tok::P('[')) || ident_at(t, open + 1) != Some("cfg") {
            return None;
        }
        let end = close(t, open);
        let pred: Vec<&str> = t
            .get(open + 3..end.saturating_sub(2))
            .unwrap_or(&[])
            .iter()
            .filter_map(|x| match &x.tok {
                Tok::Ident(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        let test_only = pred == ["test"]
            || (pred.first() == Some(&"all")
                && pred.contains(&"test")
                && !pred.contains(&"not")
                && !pred.contains(&"any"));
        test_only.then_some((end, inner))
    }

    /// The index after the item (or statement, or field) starting at `i`, its attributes
    /// included; stops before a bracket that closes an enclosing one.
    fn skip_item(t: &[Token], mut i: usize) -> usize {
        while is(t, i, &Tok::P('#')) && is(t, i + 1, &Tok::P('[')) {
            i = close(t, i + 1);
        }
        let mut depth = 0;
        while i < t.len() {
            match t[i].tok {
                Tok::P('(' | '[' | '{') => depth += 1,
                Tok::P(c @ (')' | ']' | '}')) => {
                    if depth == 0 {
                        return i;
                    }
                    depth -= 1;
                    if depth == 0 && c == '}' {
                        return i + 1;
                    }
                }
                Tok::P(';') if depth == 0 => return i + 1,
                _ => {}
            }
            i += 1;
        }
        i
    }

    /// `t` without the code under `#[cfg(test)]`; empty for a file that is test-only.
    fn strip_test_code(t: Vec<Token>) -> Vec<Token> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < t.len() {
            if let Some((end, inner)) = test_attr(&t, i) {
                if inner {
                    return Vec::new();
                }
                i = skip_item(&t, end);
            } else {
                out.push(t[i].clone());
                i += 1;
            }
        }
        out
    }

    /// If a `#[cfg(..)]` that names `target_arch` (and not `not`) starts at `i`: the index
    /// after it.
    fn arch_attr(t: &[Token], i: usize) -> Option<usize> {
        if !is(t, i, &Tok::P('#'))
            || !is(t, i + 1, &Tok::P('['))
            || ident_at(t, i + 2) != Some("cfg")
        {
            return None;
        }
        let end = close(t, i + 1);
        let names: Vec<&str> = (i + 3..end).filter_map(|k| ident_at(t, k)).collect();
        (names.contains(&"target_arch") && !names.contains(&"not")).then_some(end)
    }

    /// Names that exist only on x86-64: the module, its intrinsics and vector types, the
    /// feature test, the attribute that compiles for a feature.
    fn x86_only(name: &str) -> bool {
        matches!(
            name,
            "x86_64" | "is_x86_feature_detected" | "target_feature"
        ) || [
            "_mm", "__m", "_pext", "_pdep", "_bzhi", "_popcnt", "_lzcnt", "_tzcnt",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
    }

    /// The names `t` defines (after `fn`, `mod`, `const`, `static`, `struct`, `enum`,
    /// `type`, `trait`, `macro_rules!`).
    fn definitions(t: &[Token], out: &mut BTreeSet<String>) {
        for k in 0..t.len() {
            let at = match ident_at(t, k) {
                Some("fn" | "mod" | "const" | "static" | "struct" | "enum" | "type" | "trait") => {
                    k + 1
                }
                Some("macro_rules") if is(t, k + 1, &Tok::P('!')) => k + 2,
                _ => continue,
            };
            if let Some(name) = ident_at(t, at).filter(|&name| name != "_") {
                out.insert(name.to_string());
            }
        }
    }

    /// Where `files` name an x86-64-only name, or an item defined only under a
    /// `target_arch` gate, outside such a gate (`path:line: name`; test code included: the
    /// tests must build for another CPU too), and how many names sit inside the gates.
    pub fn x86_outside_gates(files: &[(String, String)]) -> (Vec<String>, usize) {
        let (mut gated_defs, mut open_defs) = (BTreeSet::new(), BTreeSet::new());
        let (mut open_code, mut gated) = (Vec::new(), 0);
        for (path, src) in files {
            let t = lex(src);
            let (mut open, mut i) = (Vec::new(), 0);
            while i < t.len() {
                if let Some(end) = arch_attr(&t, i) {
                    let stop = skip_item(&t, end);
                    definitions(&t[end..stop], &mut gated_defs);
                    gated += (end..stop).filter(|&k| ident_at(&t, k).is_some()).count();
                    i = stop;
                } else {
                    open.push(t[i].clone());
                    i += 1;
                }
            }
            definitions(&open, &mut open_defs);
            open_code.push((path, open));
        }
        let mut outside = Vec::new();
        for (path, t) in open_code {
            for k in 0..t.len() {
                let Some(name) = ident_at(&t, k) else {
                    continue;
                };
                let method = k > 0 && is(&t, k - 1, &Tok::P('.'));
                let only_gated = gated_defs.contains(name) && !open_defs.contains(name);
                if !method && (x86_only(name) || only_gated) {
                    outside.push(format!("{path}:{}: {name}", t[k].line));
                }
            }
        }
        (outside, gated)
    }

    /// What one `use` tree binds: a name to a path, or a glob of a path.
    enum UseItem {
        Named(String, Vec<String>),
        Glob(Vec<String>),
    }

    /// Parses the use tree at `*i` (after `use`, or inside a group) with `prefix` before it.
    fn use_tree(t: &[Token], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<UseItem>) {
        if is(t, *i, &Tok::Sep) {
            prefix.push("::".into()); // an external crate: never resolves
            *i += 1;
        }
        loop {
            match t.get(*i).map(|x| &x.tok) {
                Some(Tok::Ident(s)) => {
                    prefix.push(s.clone());
                    *i += 1;
                    if is(t, *i, &Tok::Sep) {
                        *i += 1;
                        continue;
                    }
                    break;
                }
                Some(Tok::P('*')) => {
                    *i += 1;
                    out.push(UseItem::Glob(prefix));
                    return;
                }
                Some(Tok::P('{')) => {
                    *i += 1;
                    while *i < t.len() && !is(t, *i, &Tok::P('}')) {
                        use_tree(t, i, prefix.clone(), out);
                        if is(t, *i, &Tok::P(',')) {
                            *i += 1;
                        }
                    }
                    *i += 1;
                    return;
                }
                _ => return,
            }
        }
        if prefix.last().is_some_and(|s| s == "self") {
            prefix.pop();
        }
        let mut name = prefix.last().cloned().unwrap_or_default();
        if ident_at(t, *i) == Some("as") {
            name = ident_at(t, *i + 1).unwrap_or("_").to_string();
            *i += 2;
        }
        out.push(UseItem::Named(name, prefix));
    }

    /// Whether the `use` at `i` is public in any way (`pub`, `pub(crate)`, `pub(in ..)`).
    fn is_pub_before(t: &[Token], i: usize) -> bool {
        if i == 0 {
            return false;
        }
        if ident_at(t, i - 1) == Some("pub") {
            return true;
        }
        if is(t, i - 1, &Tok::P(')')) {
            let mut k = i - 1;
            while k > 0 && !is(t, k, &Tok::P('(')) {
                k -= 1;
            }
            return k > 0 && ident_at(t, k - 1) == Some("pub");
        }
        false
    }

    /// Keywords whose next name is a definition, not a use.
    const DEFINES: [&str; 9] = [
        "fn", "struct", "enum", "trait", "type", "const", "static", "union", "let",
    ];

    /// A module: a file, or an inline `mod x { .. }` inside one.
    struct Module {
        node: usize,
        krate: usize,
        parent: Option<usize>,
        path: Vec<String>,
        /// Generated code: every name in it resolves to its node.
        opaque: bool,
        children: HashMap<String, usize>,
        items: HashSet<String>,
        uses: Vec<(String, Vec<String>)>,
        globs: Vec<Vec<String>>,
        /// Paths named in code, and by private `use` declarations, with their lines.
        refs: Vec<(Vec<String>, usize)>,
    }

    /// What a path names: a module, or an item defined in a node.
    #[derive(Clone, Copy, PartialEq)]
    enum Target {
        Mod(usize),
        Item(usize),
    }

    /// The file graph: nodes are file paths (and `pb`); each edge keeps where it is named.
    pub struct Graph {
        /// Files relative to the crate (`src/server/mod.rs`), and `pb`.
        pub nodes: Vec<String>,
        /// (from, to) -> `file:line `path`` of the first place that names `to` in `from`.
        pub edges: BTreeMap<(usize, usize), String>,
    }

    struct Builder<'a> {
        files: HashMap<&'a str, &'a str>,
        nodes: Vec<String>,
        mods: Vec<Module>,
        lib_root: Option<usize>,
        queue: VecDeque<(String, usize)>,
    }

    /// Builds the graph of the crate whose files are given as (path from the crate, source).
    pub fn build(files: &[(String, String)]) -> Graph {
        let mut b = Builder {
            files: files
                .iter()
                .map(|(p, s)| (p.as_str(), s.as_str()))
                .collect(),
            nodes: Vec::new(),
            mods: Vec::new(),
            lib_root: None,
            queue: VecDeque::new(),
        };
        let mut roots: Vec<&str> = files
            .iter()
            .map(|(p, _)| p.as_str())
            .filter(|p| {
                *p == "src/lib.rs"
                    || *p == "src/main.rs"
                    || (p.starts_with("src/bin/") && p[8..].split('/').count() == 1)
                    || (p.starts_with("src/bin/")
                        && p.ends_with("/main.rs")
                        && p[8..].split('/').count() == 2)
            })
            .collect();
        roots.sort();
        for root in roots {
            let m = b.new_module(root.to_string(), None, Vec::new(), false);
            if root == "src/lib.rs" {
                b.lib_root = Some(m);
            }
            b.queue.push_back((root.to_string(), m));
        }
        while let Some((path, m)) = b.queue.pop_front() {
            let tokens = strip_test_code(lex(b.files[path.as_str()]));
            b.scan(&tokens, m);
        }
        b.edges()
    }

    impl Builder<'_> {
        /// A new module; a new node unless `inline_in` names the module whose node it shares.
        fn new_module(
            &mut self,
            node_name: String,
            inline_in: Option<usize>,
            path: Vec<String>,
            opaque: bool,
        ) -> usize {
            let id = self.mods.len();
            let node = match inline_in {
                Some(parent) if !opaque => self.mods[parent].node,
                _ => {
                    self.nodes.push(node_name);
                    self.nodes.len() - 1
                }
            };
            let (krate, parent) = match inline_in {
                Some(p) => (self.mods[p].krate, Some(p)),
                None => (id, None),
            };
            self.mods.push(Module {
                node,
                krate,
                parent,
                path,
                opaque,
                children: HashMap::new(),
                items: HashSet::new(),
                uses: Vec::new(),
                globs: Vec::new(),
                refs: Vec::new(),
            });
            if let Some(p) = inline_in {
                let name = self.mods[id].path.last().cloned().unwrap_or_default();
                self.mods[p].children.insert(name, id);
            }
            id
        }

        /// `mod name;` in module `m`: queues the file that holds it (`tests.rs` never). The
        /// library's files are under `src/`; a binary's, beside its root (`src/bin/x/main.rs`).
        fn declare_file_child(&mut self, m: usize, name: &str) {
            let krate = self.mods[m].krate;
            let dir = if Some(krate) == self.lib_root {
                "src".to_string()
            } else {
                let root = &self.nodes[self.mods[krate].node];
                assert!(
                    root.ends_with("/main.rs") && root != "src/main.rs",
                    "{root} declares `mod {name};`: teach tests/architecture.rs where its files are"
                );
                root.trim_end_matches("/main.rs").to_string()
            };
            if name == "tests" {
                return;
            }
            let mut path = self.mods[m].path.clone();
            path.push(name.to_string());
            let base = format!("{dir}/{}", path.join("/"));
            let file = [format!("{base}.rs"), format!("{base}/mod.rs")]
                .into_iter()
                .find(|f| self.files.contains_key(f.as_str()));
            let Some(file) = file else { return };
            let id = self.new_module(file.clone(), None, path, false);
            self.mods[id].krate = self.mods[m].krate;
            self.mods[id].parent = Some(m);
            self.mods[m].children.insert(name.to_string(), id);
            self.queue.push_back((file, id));
        }

        /// Reads one file's tokens into module `file_mod` and the inline modules in it.
        fn scan(&mut self, t: &[Token], file_mod: usize) {
            let mut stack = vec![(file_mod, 0)];
            let mut depth = 0;
            let mut i = 0;
            while i < t.len() {
                let (m, base) = *stack.last().expect("the file's module");
                let after_dot = i > 0 && matches!(t[i - 1].tok, Tok::P('.') | Tok::Sep);
                let word = ident_at(t, i);
                match (&t[i].tok, word) {
                    (Tok::P('{'), _) => {
                        depth += 1;
                        i += 1;
                    }
                    (Tok::P('}'), _) => {
                        depth -= 1;
                        if stack.len() > 1 && depth < base {
                            stack.pop();
                        }
                        i += 1;
                    }
                    (_, Some("mod")) if ident_at(t, i + 1).is_some() => {
                        let name = ident_at(t, i + 1).unwrap_or_default().to_string();
                        if is(t, i + 2, &Tok::P(';')) {
                            self.declare_file_child(m, &name);
                            i += 3;
                        } else if is(t, i + 2, &Tok::P('{')) {
                            let mut path = self.mods[m].path.clone();
                            path.push(name.clone());
                            if Some(m) == self.lib_root && name == "pb" {
                                self.new_module("pb".into(), Some(m), path, true);
                                i = close(t, i + 2);
                            } else {
                                let id = self.new_module(String::new(), Some(m), path, false);
                                depth += 1;
                                stack.push((id, depth));
                                i += 3;
                            }
                        } else {
                            i += 2;
                        }
                    }
                    (_, Some("use")) if !after_dot => {
                        let public = is_pub_before(t, i);
                        let line = t[i].line;
                        let mut items = Vec::new();
                        i += 1;
                        while i < t.len() && !is(t, i, &Tok::P(';')) {
                            let before = i;
                            use_tree(t, &mut i, Vec::new(), &mut items);
                            if i == before {
                                i += 1;
                            }
                        }
                        for item in items {
                            let (name, path) = match item {
                                UseItem::Named(name, path) => (Some(name), path),
                                UseItem::Glob(path) => (None, path),
                            };
                            if !public {
                                self.mods[m].refs.push((path.clone(), line));
                            }
                            match name {
                                Some(name) if name != "_" => self.mods[m].uses.push((name, path)),
                                Some(_) => {}
                                None => self.mods[m].globs.push(path),
                            }
                        }
                    }
                    (_, Some(kw)) if DEFINES.contains(&kw) && !after_dot => {
                        let mut k = i + 1;
                        while matches!(ident_at(t, k), Some("mut" | "fn" | "unsafe" | "async")) {
                            k += 1;
                        }
                        if let Some(name) = ident_at(t, k) {
                            if depth == base && kw != "let" {
                                self.mods[m].items.insert(name.to_string());
                            }
                            i = k + 1;
                        } else {
                            i += 1;
                        }
                    }
                    (_, Some("macro_rules")) if is(t, i + 1, &Tok::P('!')) => {
                        if let Some(name) = ident_at(t, i + 2) {
                            self.mods[m].items.insert(name.to_string());
                        }
                        i += 3;
                    }
                    (_, Some(first)) if !after_dot => {
                        let line = t[i].line;
                        let mut path = vec![first.to_string()];
                        i += 1;
                        while is(t, i, &Tok::Sep) {
                            match ident_at(t, i + 1) {
                                Some(s) => path.push(s.to_string()),
                                None => break,
                            }
                            i += 2;
                        }
                        let binding = path.len() == 1 && (is(t, i, &Tok::P(':')) || first == "_");
                        if !binding {
                            self.mods[m].refs.push((path, line));
                        }
                    }
                    _ => i += 1,
                }
            }
        }

        fn parent(&self, m: usize) -> Option<usize> {
            self.mods[m].parent
        }

        /// What `segs` names from module `m`.
        fn resolve(
            &self,
            m: usize,
            segs: &[String],
            guard: &mut HashSet<(usize, String)>,
        ) -> Vec<Target> {
            let Some(first) = segs.first() else {
                return Vec::new();
            };
            let mut cur = match first.as_str() {
                "crate" => vec![Target::Mod(self.mods[m].krate)],
                "self" => vec![Target::Mod(m)],
                "super" => self.parent(m).map(Target::Mod).into_iter().collect(),
                "Self" => Vec::new(),
                s if s == LIB && self.lib_root.is_some_and(|l| l != self.mods[m].krate) => {
                    vec![Target::Mod(self.lib_root.unwrap_or_default())]
                }
                s => self.lookup(m, s, guard),
            };
            for seg in &segs[1..] {
                let mut next = Vec::new();
                for target in cur {
                    match (target, seg.as_str()) {
                        (Target::Item(_), _) => next.push(target),
                        (Target::Mod(q), "super") => {
                            next.extend(self.parent(q).map(Target::Mod));
                        }
                        (Target::Mod(q), "self") => next.push(Target::Mod(q)),
                        (Target::Mod(q), s) => next.extend(self.lookup(q, s, guard)),
                    }
                }
                next.dedup();
                cur = next;
            }
            cur
        }

        /// What `name` names in the scope of module `m`.
        fn lookup(
            &self,
            m: usize,
            name: &str,
            guard: &mut HashSet<(usize, String)>,
        ) -> Vec<Target> {
            let md = &self.mods[m];
            if md.opaque {
                return vec![Target::Item(md.node)];
            }
            if !guard.insert((m, name.to_string())) {
                return Vec::new();
            }
            let mut out = Vec::new();
            if let Some(&c) = md.children.get(name) {
                out.push(Target::Mod(c));
            }
            if md.items.contains(name) {
                out.push(Target::Item(md.node));
            }
            for (bound, path) in &md.uses {
                if bound == name {
                    out.extend(self.resolve(m, path, guard));
                }
            }
            if out.is_empty() {
                for glob in &md.globs {
                    for target in self.resolve(m, glob, guard) {
                        if let Target::Mod(q) = target {
                            out.extend(self.lookup(q, name, guard));
                        }
                    }
                }
            }
            guard.remove(&(m, name.to_string()));
            out
        }

        fn edges(self) -> Graph {
            let mut edges = BTreeMap::new();
            for (m, md) in self.mods.iter().enumerate() {
                if md.opaque {
                    continue;
                }
                for (path, line) in &md.refs {
                    for target in self.resolve(m, path, &mut HashSet::new()) {
                        if let Target::Item(to) = target
                            && to != md.node
                        {
                            edges.entry((md.node, to)).or_insert_with(|| {
                                format!("{}:{line} `{}`", self.nodes[md.node], path.join("::"))
                            });
                        }
                    }
                }
            }
            Graph {
                nodes: self.nodes,
                edges,
            }
        }
    }

    impl Graph {
        fn index(&self, node: &str) -> usize {
            self.nodes
                .iter()
                .position(|n| n == node)
                .unwrap_or_else(|| panic!("no node {node}"))
        }

        /// Whether there is an edge `from -> to`.
        pub fn has_edge(&self, from: &str, to: &str) -> bool {
            self.edges.contains_key(&(self.index(from), self.index(to)))
        }

        /// Where `from` names `to`.
        pub fn evidence(&self, from: &str, to: &str) -> String {
            self.edges
                .get(&(self.index(from), self.index(to)))
                .cloned()
                .unwrap_or_default()
        }

        /// One cycle through every edge that lies on a cycle (the shortest way back), each
        /// as file names from its smallest node back to it; empty when the graph is acyclic.
        pub fn cycles(&self) -> Vec<Vec<String>> {
            let n = self.nodes.len();
            let mut next = vec![Vec::new(); n];
            for (a, b) in self.edges.keys() {
                next[*a].push(*b);
            }
            // The shortest path from `from` to `to`, as nodes, if there is one.
            let path = |from: usize, to: usize| -> Option<Vec<usize>> {
                let mut prev = vec![usize::MAX; n];
                let mut queue = VecDeque::from([from]);
                prev[from] = from;
                while let Some(u) = queue.pop_front() {
                    if u == to {
                        let mut p = vec![to];
                        let mut k = to;
                        while k != from {
                            k = prev[k];
                            p.push(k);
                        }
                        p.reverse();
                        return Some(p);
                    }
                    for &v in &next[u] {
                        if prev[v] == usize::MAX {
                            prev[v] = u;
                            queue.push_back(v);
                        }
                    }
                }
                None
            };
            let mut found = BTreeSet::new();
            for &(a, b) in self.edges.keys() {
                if let Some(back) = path(b, a) {
                    let mut cycle = vec![a];
                    cycle.extend(back);
                    cycle.pop();
                    let start = (0..cycle.len()).min_by_key(|&k| &self.nodes[cycle[k]]);
                    cycle.rotate_left(start.unwrap_or(0));
                    found.insert(cycle);
                }
            }
            found
                .into_iter()
                .map(|mut c| {
                    c.push(c[0]);
                    c.into_iter().map(|k| self.nodes[k].clone()).collect()
                })
                .collect()
        }
    }
}

/// Tests of the reader on small crates, so the real check cannot pass by seeing nothing.
mod reader {
    use super::*;

    fn x86_outside(src: &str) -> Vec<String> {
        graph::x86_outside_gates(&[("src/lib.rs".to_string(), src.to_string())]).0
    }

    #[test]
    fn x86_names_are_found_outside_their_gates_only() {
        let gated = r#"
            #[cfg(target_arch = "x86_64")]
            mod avx { use std::arch::x86_64::*; pub fn go() { let _ = unsafe { _mm512_setzero_si512() }; } }
            #[cfg(not(target_arch = "x86_64"))]
            mod avx { pub fn go() {} }
            pub fn run() {
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") { avx::go(); }
                v.kernel();
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn kernel() {}
        "#;
        assert_eq!(x86_outside(gated), Vec::<String>::new());
        let open = "use std::arch::x86_64::__m256i; fn f() {}";
        assert_eq!(
            x86_outside(open),
            ["src/lib.rs:1: x86_64", "src/lib.rs:1: __m256i"]
        );
        let called = "#[cfg(target_arch = \"x86_64\")]\nfn kernel() {}\nfn f() { kernel() }";
        assert_eq!(x86_outside(called), ["src/lib.rs:3: kernel"]);
        let negated = "#[cfg(not(target_arch = \"x86_64\"))]\nfn g() { _mm_pause() }";
        assert_eq!(x86_outside(negated), ["src/lib.rs:2: _mm_pause"]);
    }

    fn crate_of(files: &[(&str, &str)]) -> graph::Graph {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect();
        graph::build(&files)
    }

    #[test]
    fn a_cycle_between_two_files_is_found() {
        let g = crate_of(&[
            ("src/lib.rs", "mod a; mod b;"),
            ("src/a.rs", "use crate::b::B; pub struct A; fn f(_: B) {}"),
            ("src/b.rs", "pub struct B; fn g(_: super::a::A) {}"),
        ]);
        assert!(g.has_edge("src/a.rs", "src/b.rs"));
        assert!(g.has_edge("src/b.rs", "src/a.rs"));
        assert_eq!(
            g.cycles(),
            vec![vec!["src/a.rs", "src/b.rs", "src/a.rs"]],
            "the one cycle, from its smallest file"
        );
    }

    #[test]
    fn a_longer_cycle_is_printed_as_a_path() {
        let g = crate_of(&[
            ("src/lib.rs", "mod a; mod b; mod c;"),
            ("src/a.rs", "pub fn a() { crate::b::b() }"),
            ("src/b.rs", "pub fn b() { crate::c::c() }"),
            ("src/c.rs", "pub fn c() { crate::a::a() }"),
        ]);
        assert_eq!(
            g.cycles(),
            vec![vec!["src/a.rs", "src/b.rs", "src/c.rs", "src/a.rs"]]
        );
    }

    #[test]
    fn re_exports_are_followed_to_the_defining_file_and_are_not_edges() {
        let g = crate_of(&[
            ("src/lib.rs", "pub mod p; mod q;"),
            (
                "src/p/mod.rs",
                "mod c; mod d; pub use c::X; pub use self::c::{Y as Why}; pub(crate) use d::*;",
            ),
            ("src/p/c.rs", "pub struct X; pub struct Y;"),
            ("src/p/d.rs", "pub struct Z;"),
            (
                "src/q.rs",
                "use crate::p::{X, Why};\nfn f(_: X, _: Why, _: crate::p::Z) {}",
            ),
        ]);
        assert!(g.has_edge("src/q.rs", "src/p/c.rs"));
        assert!(
            g.has_edge("src/q.rs", "src/p/d.rs"),
            "through the glob re-export"
        );
        assert_eq!(
            g.edges.len(),
            2,
            "no edge to the re-exporting file, none from it"
        );
        assert!(g.cycles().is_empty());
    }

    #[test]
    fn a_child_using_its_parents_item_while_the_parent_uses_the_child_is_a_cycle() {
        let g = crate_of(&[
            ("src/lib.rs", "mod p;"),
            (
                "src/p/mod.rs",
                "mod c;\npub struct Shared;\npub fn run() { c::work() }",
            ),
            (
                "src/p/c.rs",
                "use super::Shared;\npub fn work() -> Shared { Shared }",
            ),
        ]);
        assert_eq!(
            g.cycles(),
            vec![vec!["src/p/c.rs", "src/p/mod.rs", "src/p/c.rs"]]
        );
    }

    #[test]
    fn comments_strings_and_test_code_are_not_edges() {
        let g = crate_of(&[
            ("src/lib.rs", "mod a; mod b; #[cfg(test)] mod c;"),
            (
                "src/a.rs",
                r####"
                //! crate::b::B in a header
                // crate::b::B in a comment
                /* crate::b::B /* nested */ crate::b::B */
                /// crate::b::B in a doc comment
                pub const S: &str = "crate::b::B \" crate::b::B";
                pub const R: &str = r#"crate::b::B "quoted" crate::b::B"#;
                pub const C: char = '"'; pub const D: u8 = b'\'';
                fn lifetimes<'a>(x: &'a str) -> &'a str { x }
                #[cfg(test)]
                mod tests { use crate::b::B; fn t(_: B) {} }
                #[cfg(test)]
                fn helper() -> crate::b::B { crate::b::B }
                "####,
            ),
            ("src/b.rs", "pub struct B; mod tests;"),
            ("src/b/tests.rs", "use crate::a::S;"),
            ("src/c.rs", "use crate::a::S;"),
        ]);
        assert!(g.edges.is_empty(), "edges: {:?}", g.edges);
        assert!(
            !g.nodes
                .iter()
                .any(|n| n.ends_with("tests.rs") || n == "src/c.rs")
        );
    }

    #[test]
    fn binaries_reach_the_library_and_pb_is_one_leaf() {
        let g = crate_of(&[
            (
                "src/lib.rs",
                "pub mod a; pub mod pb { tonic::include_proto!(\"x\"); pub mod server { } }",
            ),
            (
                "src/a.rs",
                "pub fn f(_: crate::pb::Req, _: &crate::pb::server::S) {}",
            ),
            (
                "src/main.rs",
                "use queens::a;\nfn main() { a::f(todo!(), todo!()) }",
            ),
            (
                "src/bin/load.rs",
                "fn main() { let _ = queens::pb::Req::default(); }",
            ),
        ]);
        assert!(g.has_edge("src/a.rs", "pb"));
        assert!(g.has_edge("src/main.rs", "src/a.rs"));
        assert!(g.has_edge("src/bin/load.rs", "pb"));
        assert_eq!(g.edges.len(), 3, "edges: {:?}", g.edges);
    }

    #[test]
    fn groups_self_super_and_locals() {
        let g = crate_of(&[
            ("src/lib.rs", "mod a; mod b;"),
            ("src/a/mod.rs", "mod x; mod y; pub struct Top;"),
            ("src/a/x.rs", "pub struct X; pub enum E { One }"),
            (
                "src/a/y.rs",
                "use super::{self as up, x::{self, E::*}};\n\
                 fn f(_: up::x::X) { let count: u32 = 0; let v = One; v.count; }",
            ),
            ("src/b.rs", "fn g() -> crate::a::Top { crate::a::Top }"),
        ]);
        assert!(g.has_edge("src/a/y.rs", "src/a/x.rs"));
        assert!(g.has_edge("src/b.rs", "src/a/mod.rs"));
        assert!(
            !g.has_edge("src/a/mod.rs", "src/a/x.rs"),
            "`mod x;` is not an edge"
        );
        assert_eq!(g.edges.len(), 2, "edges: {:?}", g.edges);
    }

    #[test]
    fn the_layer_rules() {
        assert_eq!(layer_rule("server", "service"), None);
        assert_eq!(layer_rule("client", "fanout"), None);
        assert_eq!(layer_rule("batch", "config"), None);
        assert_eq!(layer_rule("bin", "server"), None);
        assert_eq!(layer_rule("cli", "server"), None);
        assert_eq!(layer_rule("bin", "cli"), None);
        assert!(layer_rule("fanout", "cli").is_some());
        assert!(layer_rule("server", "cli").is_some());
        assert!(layer_rule("config", "server").is_some());
        assert!(layer_rule("fanout", "stream").is_some());
        assert!(layer_rule("solver", "render").is_some());
        assert!(layer_rule("sync", "solver").is_some());
        assert!(layer_rule("stream", "service").is_some());
        assert!(layer_rule("server", "bin").is_some());
        assert!(
            layer_rule("newthing", "sync").is_some(),
            "an unranked module is reported"
        );
        assert_eq!(top_module("src/solver/count/join.rs"), "solver");
        assert_eq!(top_module("src/sync.rs"), "sync");
        assert_eq!(top_module("src/bin/queens-load.rs"), "bin");
    }
}
