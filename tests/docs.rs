//! The docs against the code: every `queens` and `queens-load` command that the Markdown, the
//! deploy recipes and the examples name is a subcommand of the built binaries, with flags that
//! subcommand has; every `--flag` named on its own in the Markdown is a flag of one of them
//! (or of another tool the docs run, listed below with its tool); and every relative link
//! and `#anchor` in the Markdown resolves; every `queens memory` table the Markdown shows is
//! what the binary prints. Std only; the binaries' own `--help` is the source of what exists. Not here: the grpcurl examples (`readme_grpcurl.rs` runs them)
//! and the manifests' meaning (`deploy_manifests.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;

/// Flags of other programs that the docs name on their own, each with its program. A flag in
/// backticks that neither binary has must be one of these (or the check fails).
const OTHER_TOOLS: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "--release",
            "--features",
            "--locked",
            "--bin",
            "--bench",
            "--test",
            "--lib",
            "--manifest-path",
            "--no-run",
            "--all-targets",
            "--workspace",
            "--path",
            "--document-private-items",
            "--no-deps",
        ],
    ),
    (
        "sbatch",
        &[
            "--array",
            "--mem",
            "--export",
            "--hold",
            "--kill-on-invalid-dep",
            "--cpus-per-task",
            "--dependency",
            "--time",
            "--requeue",
        ],
    ),
    ("docker", &["--read-only", "--rm"]),
    ("kubectl", &["--tail"]),
    ("node", &["--grpc-js"]),
    ("pytest", &["--runs"]),
];

/// A binary's subcommands, each with its long flags, read from `--help`.
type Commands = BTreeMap<String, BTreeSet<String>>;

/// The subcommands and flags of `queens` and `queens-load`, by binary name.
fn binaries() -> &'static BTreeMap<&'static str, Commands> {
    static ALL: OnceLock<BTreeMap<&'static str, Commands>> = OnceLock::new();
    ALL.get_or_init(|| {
        let load: PathBuf = env!("CARGO_BIN_EXE_queens-load").into();
        BTreeMap::from([
            ("queens", commands(Path::new(&common::queens_bin()))),
            ("queens-load", commands(&load)),
        ])
    })
}

/// `bin`'s subcommands (and "" for the top level) with the long flags each accepts.
fn commands(bin: &Path) -> Commands {
    let top = help(bin, &[]);
    let mut out = Commands::new();
    let top_flags = long_flags(&top);
    out.insert(String::new(), top_flags.clone());
    for sub in subcommands(&top) {
        let mut flags = long_flags(&help(bin, &[&sub]));
        flags.extend(top_flags.iter().cloned()); // global flags such as queens-load's --addr
        out.insert(sub, flags);
    }
    out
}

/// What `bin ARGS --help` prints.
fn help(bin: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .arg("--help")
        .output()
        .expect("run --help");
    assert!(
        out.status.success(),
        "{} {args:?} --help failed",
        bin.display()
    );
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// The names listed under `Commands:` in a help text.
fn subcommands(help: &str) -> Vec<String> {
    let section = help.split("Commands:").nth(1).unwrap_or("");
    let section = section.split("\n\n").next().unwrap_or("");
    (section.lines())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_owned)
        .collect()
}

/// Every `--name` at the start of an option line of a help text.
fn long_flags(help: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for line in help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
    {
        for word in line.split([' ', ',']).take(3) {
            if let Some(name) = word.strip_prefix("--") {
                let name = name.split(['=', '<', '[']).next().unwrap_or(name);
                flags.insert(format!("--{name}"));
            }
        }
    }
    flags
}

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (recursively, skipping build output and installed packages) whose
/// name satisfies `keep`, sorted.
fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !["target", "node_modules", ".git", ".venv"].contains(&&*name) {
                out.extend(files(&path, keep));
            }
        } else if keep(&path) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The Markdown of the repository: its own docs, not installed packages' or build output.
fn markdown() -> Vec<PathBuf> {
    files(root(), &|p| p.extension().is_some_and(|e| e == "md"))
}

/// The files whose commands are checked: the README, docs/, deploy/ and examples/ (their
/// Markdown, scripts and manifests).
fn documents() -> Vec<PathBuf> {
    let text = |p: &Path| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = p
            .extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default();
        ["md", "sh", "sbatch", "yaml", "yml"].contains(&&*ext) || name == "Dockerfile"
    };
    let mut out = vec![root().join("README.md")];
    for dir in ["docs", "deploy", "examples"] {
        out.extend(files(&root().join(dir), &text));
    }
    out
}

/// `path` relative to the root, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The lines of a Markdown text with a flag for each: inside a fenced code block or not.
fn fenced(text: &str) -> Vec<(usize, &str, bool)> {
    (shell_blocks(text).into_iter())
        .map(|(n, line, block)| (n, line, block.is_some()))
        .collect()
}

/// The lines of a Markdown text, each with the language of the fenced block it is in (`""`
/// for a block without one), or `None` outside code.
fn shell_blocks(text: &str) -> Vec<(usize, &str, Option<&str>)> {
    let mut block: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(lang) = line.trim_start().strip_prefix("```") {
            block = if block.is_some() {
                None
            } else {
                Some(lang.trim())
            };
            continue;
        }
        out.push((i + 1, line, block));
    }
    out
}

/// Whether a fenced block of this language holds commands to run.
fn is_shell(lang: &str) -> bool {
    ["", "sh", "bash", "shell", "console", "sh-session"].contains(&lang)
}

/// The inline code spans of a line (between single backticks).
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// The commands in a piece of shell text: from each `queens` or `queens-load` word (also as
/// `$queens`/`"$queens"`, the recipes' variable) to the end of its command (`|`, `;`, `&&`,
/// `>`, `#`, `)` or the end of the text), as words.
fn invocations(text: &str) -> Vec<(&'static str, Vec<String>)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let bare = word.trim_matches(|c| c == '"' || c == '\'' || c == '`' || c == '(');
        let bin = match bare {
            "queens" | "$queens" | "${queens}" => "queens",
            "queens-load" => "queens-load",
            _ => continue,
        };
        let mut args = Vec::new();
        for w in &words[i + 1..] {
            if w.starts_with(['|', ';', '&', '>', '<', '#', ')']) {
                break;
            }
            let ends = w.ends_with([';', ')']);
            args.push(
                w.trim_end_matches([';', ')', ','])
                    .trim_matches('"')
                    .to_owned(),
            );
            if ends {
                break;
            }
        }
        out.push((bin, args));
    }
    out
}

/// What is wrong with one invocation, if anything: an unknown subcommand or flag.
fn check(bin: &str, args: &[String]) -> Vec<String> {
    let commands = &binaries()[bin];
    // Global flags may come before the subcommand (`queens-load --addr URL latency ...`):
    // each is checked, and a word after one that is no subcommand is its value.
    let mut rest = args;
    let mut wrong = Vec::new();
    while let Some(flag) = rest.first().filter(|a| a.starts_with('-')) {
        wrong.extend(unknown_flags(&commands[""], std::slice::from_ref(flag)));
        let value = rest
            .get(1)
            .filter(|v| !v.starts_with('-') && !commands.contains_key(*v));
        rest = &rest[1 + usize::from(value.is_some() && !flag.contains('='))..];
    }
    if !wrong.is_empty() {
        return wrong;
    }
    let args = rest;
    let Some(sub) = args.first() else {
        return Vec::new();
    };
    if !sub.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        return Vec::new(); // prose or a placeholder such as `queens …` or `queens N`
    }
    match commands.get(sub.as_str()) {
        Some(flags) => unknown_flags(flags, &args[1..]),
        None if sub == "help" => Vec::new(),
        None => vec![format!("`{bin} {sub}`: no such subcommand")],
    }
}

/// The `--flags` among `args` that `flags` does not have (`[--x]` and `--x=V` read as `--x`).
fn unknown_flags(flags: &BTreeSet<String>, args: &[String]) -> Vec<String> {
    (args.iter())
        .map(|a| a.trim_start_matches('['))
        .filter(|a| a.starts_with("--") && a.len() > 2)
        .map(|a| a.split(['=', ']', ',']).next().unwrap_or(a))
        .filter(|a| !flags.contains(*a))
        .map(|a| format!("{a}: not a flag of this command"))
        .collect()
}

/// Shell lines with their `\` continuations joined, each with its first line's number.
fn joined(lines: &[(usize, &str)]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for &(n, line) in lines {
        let (body, more) = match line.trim_end().strip_suffix('\\') {
            Some(b) => (b, true),
            None => (line, false),
        };
        match out.last_mut() {
            Some((_, acc)) if open => acc.push_str(body),
            _ => out.push((n, body.to_owned())),
        }
        open = more;
    }
    out
}

/// The args lists of a Kubernetes manifest (`args: [a, b]` or a block list), as words.
fn manifest_args(text: &str) -> Vec<(usize, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("args:") else {
            continue;
        };
        let unquote = |w: &str| w.trim().trim_matches(|c| c == '"' || c == '\'').to_owned();
        let words = if let Some(flow) = rest.trim().strip_prefix('[') {
            flow.trim_end_matches(']').split(',').map(unquote).collect()
        } else {
            let indent = |l: &str| l.len() - l.trim_start().len();
            (lines[i + 1..].iter())
                .take_while(|l| l.trim_start().starts_with("- ") && indent(l) > indent(line))
                .map(|l| unquote(&l.trim_start()[2..]))
                .collect()
        };
        out.push((i + 1, words));
    }
    out
}

#[test]
fn commands_the_docs_name_exist_with_their_flags() {
    let mut wrong = Vec::new();
    for path in documents() {
        let text = std::fs::read_to_string(&path).expect("read");
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
        let mut found: Vec<(usize, &'static str, Vec<String>)> = Vec::new();
        match ext.as_deref() {
            Some("md") => {
                let lines = fenced(&text);
                let code: Vec<(usize, &str)> = (shell_blocks(&text).into_iter())
                    .filter(|l| l.2.is_some_and(is_shell))
                    .map(|l| (l.0, l.1))
                    .collect();
                for (n, line) in joined(&code) {
                    let line = line.split(" #").next().unwrap_or(&line).to_owned();
                    found.extend(invocations(&line).into_iter().map(|(b, a)| (n, b, a)));
                }
                for &(n, line, inside) in &lines {
                    for span in code_spans(line).into_iter().filter(|_| !inside) {
                        if span.starts_with("queens") {
                            found.extend(invocations(span).into_iter().map(|(b, a)| (n, b, a)));
                        }
                    }
                }
            }
            Some("yaml" | "yml") => {
                found.extend(
                    manifest_args(&text)
                        .into_iter()
                        .map(|(n, a)| (n, "queens", a)),
                );
            }
            _ => {
                let lines: Vec<(usize, &str)> = (text.lines().enumerate())
                    .map(|(i, l)| (i + 1, l))
                    .filter(|(_, l)| !l.trim_start().starts_with('#'))
                    .collect();
                for (n, line) in joined(&lines) {
                    found.extend(invocations(&line).into_iter().map(|(b, a)| (n, b, a)));
                }
            }
        }
        for (n, bin, args) in found {
            for problem in check(bin, &args) {
                wrong.push(format!(
                    "{}:{n}: {problem} ({bin} {})",
                    shown(&path),
                    args.join(" ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands the binaries lack:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn flags_the_docs_name_on_their_own_exist() {
    let mut ours: BTreeSet<&str> = BTreeSet::new();
    for commands in binaries().values() {
        ours.extend(commands.values().flatten().map(String::as_str));
    }
    let others: BTreeSet<&str> = OTHER_TOOLS
        .iter()
        .flat_map(|(_, f)| f.iter().copied())
        .collect();
    let mut wrong = Vec::new();
    for path in documents()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(&path).expect("read");
        let example = example_sources(&path);
        for (n, line, inside) in fenced(&text) {
            for span in code_spans(line).into_iter().filter(|_| !inside) {
                let Some(flag) = span.split([' ', '=', '[']).next() else {
                    continue;
                };
                let name = flag.trim_end_matches([',', '.']);
                let is_flag = name.starts_with("--")
                    && name.len() > 3
                    && name[2..]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-');
                let known = ours.contains(name) || others.contains(name);
                if is_flag && !known && !defines(&example, name) {
                    wrong.push(format!("{}:{n}: `{name}`", shown(&path)));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "flags that neither binary has (nor a tool in OTHER_TOOLS):\n{}",
        wrong.join("\n")
    );
}

/// The source of the example program a document under `examples/NAME/` describes (its
/// folder's non-Markdown files, concatenated), where that program's own flags are defined;
/// empty for other documents.
fn example_sources(doc: &Path) -> String {
    let examples = root().join("examples");
    let Ok(rest) = doc.strip_prefix(&examples) else {
        return String::new();
    };
    let Some(name) = rest.iter().next() else {
        return String::new();
    };
    let code = |p: &Path| {
        p.extension()
            .is_some_and(|e| e == "py" || e == "js" || e == "mjs")
    };
    (files(&examples.join(name), &code).iter())
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// Whether an example's source defines the flag `name` (`--x`): as argparse's `"--x"`, or
/// as node:util's `parseArgs` option `'x':` or `x:`.
fn defines(source: &str, name: &str) -> bool {
    let bare = &name[2..];
    [
        format!("\"{name}\""),
        format!("'{name}'"),
        format!("'{bare}':"),
        format!(" {bare}: {{"),
    ]
    .iter()
    .any(|form| source.contains(form.as_str()))
}

/// GitHub's anchor for a heading's text: lower case, punctuation other than `-` and `_`
/// dropped, spaces made hyphens.
fn slug(heading: &str) -> String {
    (heading.trim().to_lowercase().chars())
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file: its headings' slugs (a repeated one gets `-1`, `-2`, …)
/// and the `id`/`name` of its HTML anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line, inside) in fenced(text) {
        if inside {
            continue;
        }
        if let Some(title) = line.strip_prefix('#').map(|l| l.trim_start_matches('#'))
            && title.starts_with(' ')
        {
            let base = slug(title);
            let count = seen.entry(base.clone()).or_default();
            out.insert(if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            });
            *count += 1;
        }
        for attr in ["id=\"", "name=\""] {
            for part in line.split(attr).skip(1) {
                out.insert(part.split('"').next().unwrap_or("").to_owned());
            }
        }
    }
    out
}

/// The link targets of a Markdown line outside code: `[text](target)` and `[label]: target`.
fn links(line: &str) -> Vec<String> {
    let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    for part in prose.split("](").skip(1) {
        let target = part.split(')').next().unwrap_or("");
        out.push(target.split_whitespace().next().unwrap_or("").to_owned());
    }
    let trimmed = prose.trim_start();
    if trimmed.starts_with('[')
        && let Some((_, target)) = trimmed.split_once("]: ")
    {
        out.push(target.split_whitespace().next().unwrap_or("").to_owned());
    }
    out
}

#[test]
fn relative_links_and_anchors_in_the_markdown_resolve() {
    let mut wrong = Vec::new();
    let mut cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for path in markdown() {
        let text = std::fs::read_to_string(&path).expect("read");
        for (n, line, inside) in fenced(&text) {
            for target in links(line).into_iter().filter(|_| !inside) {
                let external = ["http://", "https://", "mailto:"]
                    .iter()
                    .any(|s| target.starts_with(s));
                if target.is_empty() || external {
                    continue;
                }
                let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let file = if file.is_empty() {
                    path.clone()
                } else {
                    path.parent().expect("a folder").join(file)
                };
                if !file.exists() {
                    wrong.push(format!("{}:{n}: {target}: no such file", shown(&path)));
                    continue;
                }
                let is_md = file.extension().is_some_and(|e| e == "md");
                if anchor.is_empty() || !is_md {
                    continue;
                }
                let set = cache
                    .entry(file.clone())
                    .or_insert_with(|| anchors(&std::fs::read_to_string(&file).expect("read")));
                if !set.contains(anchor) {
                    wrong.push(format!("{}:{n}: {target}: no such anchor", shown(&path)));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "links that do not resolve:\n{}",
        wrong.join("\n")
    );
}

/// The model figures the Markdown quotes: each fenced `sh` block of one line that runs
/// `queens memory`, followed (blank lines allowed) by a `text` block, with the lines the
/// binary prints for it. So the memory tables of the docs and the recipes are the code's
/// model, not copies of it that drift.
fn printed_examples(text: &str) -> Vec<(usize, Vec<String>, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for i in 0..lines.len().saturating_sub(2) {
        let one = lines[i + 1].trim();
        if lines[i].trim_end() != "```sh" || lines[i + 2].trim_end() != "```" {
            continue;
        }
        let Some(args) = one.strip_prefix("queens memory") else {
            continue;
        };
        let mut next = i + 3;
        while lines.get(next).is_some_and(|l| l.trim().is_empty()) {
            next += 1;
        }
        if lines.get(next).map(|l| l.trim_end()) != Some("```text") {
            continue;
        }
        let end = (next + 1..lines.len())
            .find(|&j| lines[j].trim_end() == "```")
            .unwrap_or(lines.len());
        let words = std::iter::once("memory".to_owned())
            .chain(args.split_whitespace().map(str::to_owned))
            .collect();
        out.push((i + 2, words, lines[next + 1..end].join("\n")));
    }
    out
}

#[test]
fn the_memory_tables_of_the_docs_are_what_queens_memory_prints() {
    let mut shown_blocks = 0;
    let mut wrong = Vec::new();
    for path in markdown() {
        let text = std::fs::read_to_string(&path).expect("read");
        for (n, args, expected) in printed_examples(&text) {
            shown_blocks += 1;
            let out = Command::new(common::queens_bin())
                .args(&args)
                .output()
                .expect("run queens memory");
            let printed = String::from_utf8_lossy(&out.stdout);
            let trim = |t: &str| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
            if !out.status.success() || trim(&printed).trim() != trim(&expected).trim() {
                wrong.push(format!(
                    "{}:{n}: queens {}\n--- the document shows ---\n{expected}\n--- it prints ---\n{printed}",
                    shown(&path),
                    args.join(" ")
                ));
            }
        }
    }
    assert!(
        shown_blocks >= 2,
        "the docs quote `queens memory` with its output"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn the_checks_catch_what_they_are_for() {
    // A made-up subcommand and flag are reported; real ones are not.
    assert!(check("queens", &["count".into(), "12".into(), "--local".into()]).is_empty());
    assert_eq!(
        check("queens", &["count".into(), "--no-such-flag".into()]).len(),
        1
    );
    assert_eq!(check("queens", &["recount".into()]).len(), 1);
    assert_eq!(
        check("queens-load", &["latency".into(), "--addr".into()]).len(),
        0
    );
    let global = ["--addr", "http://x", "latency", "--concurrency", "2"].map(String::from);
    assert!(check("queens-load", &global).is_empty());
    let global = ["--addr", "http://x", "latency", "--bogus"].map(String::from);
    assert_eq!(check("queens-load", &global).len(), 1);
    // Anchors as GitHub makes them, repeats numbered.
    let set = anchors("# A `queens` title\n## Two commands\n## Two commands\n");
    assert!(
        set.contains("a-queens-title") && set.contains("two-commands-1"),
        "{set:?}"
    );
    assert_eq!(
        links("see [x](docs/a.md#b) and `[y](not)`"),
        vec!["docs/a.md#b"]
    );
    // A printed example: the command, then its output block.
    let shown = printed_examples("```sh\nqueens memory 20\n```\n\n```text\nA\nB\n```\n");
    assert_eq!(
        shown,
        vec![(2, vec!["memory".into(), "20".into()], "A\nB".into())]
    );
    assert!(printed_examples("```sh\nqueens memory 20\n```\nprose\n").is_empty());
}
