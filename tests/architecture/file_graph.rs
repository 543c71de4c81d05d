//! The file-by-file import graph: no two files of `crates/`, `src/` or `clients/` import each
//! other, directly or round a circle. A failure lists each circle: its files, and the arrows
//! between them with the first path seen making each. Std only.
//!
//! # Rust
//! Each crate is read from its roots (`src/lib.rs`, `src/main.rs`, `src/bin/..`) down its `mod`
//! lines (inline `mod x { .. }` too, and a `#[path = ".."]` on a `mod` line), with the token
//! scan of `architecture.rs` (comments and literals removed; `#[cfg(..)]` code counts; a
//! module declared twice under opposite `cfg`s is reached in its first declaration's file,
//! and the second's file is read for its own arrows). A file's arrows are its `use` lines and the
//! paths it spells from `crate::`, `super::`, `self::`, a child module or a name it imports.
//! Each goes to the file that defines what the path reaches (an item's file, or a module's own
//! file when the path ends at a module), followed through `use`, `pub use` and `*` wherever
//! they stand.
//! - A re-export is a door, not a room: `pub use self::child::X` in a mod.rs is no arrow of the
//!   mod.rs (unless it names `X` again outside `use` lines), and a sibling's `super::X` is an
//!   arrow to child.rs.
//! - A parent declaring its children (`mod child;`) is no arrow; a parent naming `child::f` is
//!   one, and so is a child's `super::Y` where the parent defines `Y`.
//! - A name the scan does not see defined (one a macro makes) counts as its module's file.
//! - Other crates are not followed: Cargo keeps the crates' graph acyclic.
//!
//! # Python and Node
//! Python: `from .x import ..`, `from . import x`, `import pkg.x` and `from pkg.x import ..`
//! (under `if TYPE_CHECKING:` and inside functions too: a late import still ties two files) go
//! to the module's `.py` or its package's `__init__.py`. Node: `import .. from "./x"`,
//! `export .. from`, `import("./x")` and `require("./x")`, resolved as Node does (from a `.d.ts`,
//! to the `.d.ts`).

use super::{none_of, path_attributes, tokens};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A repository's files by path (below the repository), with their text.
type Files = BTreeMap<String, String>;
/// File -> the files it imports -> the first path seen doing it.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The source files below these repository directories (no `node_modules`, hidden or
/// `__pycache__` directories).
fn repo_files(dirs: &[&str]) -> Files {
    let source = [".rs", ".py", ".js", ".mjs", ".cjs", ".ts"];
    let mut out = Files::new();
    let mut todo: Vec<String> = dirs.iter().map(|d| d.to_string()).collect();
    while let Some(dir) = todo.pop() {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(&dir);
        for entry in std::fs::read_dir(&full).unwrap_or_else(|e| panic!("{dir}: {e}")) {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .to_string();
            let skip = name.starts_with('.') || ["node_modules", "__pycache__"].contains(&&*name);
            if path.is_dir() && !skip {
                todo.push(format!("{dir}/{name}"));
            } else if source.iter().any(|s| name.ends_with(s)) {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.insert(format!("{dir}/{name}"), text);
            }
        }
    }
    out
}

/// One module of a crate as the file graph sees it.
#[derive(Default)]
struct Module {
    /// The file that holds it (an inline module's is its parent's).
    file: String,
    /// The modules declared in it.
    children: BTreeSet<String>,
    /// The names it defines.
    items: BTreeSet<String>,
    /// The names it imports (re-exports too), with their paths.
    uses: BTreeMap<String, Vec<String>>,
    /// The paths of its `*` imports.
    globs: Vec<Vec<String>>,
}

/// A path a file names: the module it stands in, its segments, whether it is an arrow.
struct Named {
    file: String,
    module: Vec<String>,
    path: Vec<String>,
    arrow: bool,
}

/// What a path reaches: a module, or a name defined in a file.
enum Target {
    Module(Vec<String>),
    File(String),
}

/// Whether a token is an identifier (or a keyword).
fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Whether `t[i..]` starts with `::`.
fn colons(t: &[String], i: usize) -> bool {
    t.get(i).is_some_and(|x| x == ":") && t.get(i + 1).is_some_and(|x| x == ":")
}

/// The leaves of the use tree at `t[*i..]`, below `prefix`: (path, the name it binds; `None`
/// for a `*`). A leading `::` (another crate) gives the path a first segment no module has.
fn use_tree(
    t: &[String],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix.to_vec();
    if colons(t, *i) {
        (path, *i) = (vec!["::".into()], *i + 2);
    }
    loop {
        match t.get(*i).map(String::as_str) {
            Some("{") => {
                *i += 1;
                while t.get(*i).is_some_and(|x| x != "}") {
                    let before = *i;
                    use_tree(t, i, &path, out);
                    *i += usize::from(*i == before || t.get(*i).is_some_and(|x| x == ","));
                }
                *i += 1;
                return;
            }
            Some("*") => {
                *i += 1;
                return out.push((path, None));
            }
            Some(s) if is_ident(s) => {
                path.push(s.into());
                *i += 1;
                if colons(t, *i) {
                    *i += 2;
                    continue;
                }
                let mut name = path.last().cloned();
                if t.get(*i).is_some_and(|x| x == "as") {
                    (name, *i) = (t.get(*i + 1).cloned(), *i + 2);
                }
                if path.last().is_some_and(|s| s == "self") {
                    path.pop();
                    name = name
                        .filter(|n| n != "self")
                        .or_else(|| path.last().cloned());
                }
                return out.push((path, name));
            }
            _ => return,
        }
    }
}

/// The directory of the files that `file`'s `mod x;` lines declare.
fn child_dir(file: &str, root: bool) -> String {
    let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
    match name {
        "mod.rs" => dir.into(),
        _ if root => dir.into(),
        _ => format!("{dir}/{}", name.trim_end_matches(".rs")),
    }
}

/// Reads the crate whose root is `root` down its `mod` lines: its modules and the paths its
/// files name.
fn read_crate(files: &Files, root: &str) -> (BTreeMap<Vec<String>, Module>, Vec<Named>) {
    const ITEMS: [&str; 9] = [
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "union",
        "macro_rules",
    ];
    let (mut modules, mut named) = (BTreeMap::<Vec<String>, Module>::new(), Vec::new());
    let mut todo = vec![(root.to_string(), Vec::<String>::new())];
    let mut declared = BTreeSet::new();
    while let Some((file, module)) = todo.pop() {
        let t = tokens(&files[&file]);
        // The file's `#[path]` values, and the one for the next `mod` line, if any.
        let (paths, mut seen_paths, mut path_for_next) = (path_attributes(&files[&file]), 0, None);
        let is = |i: usize, s: &str| t.get(i).is_some_and(|x| x == s);
        modules.entry(module.clone()).or_default().file = file.clone();
        let (mut stack, mut depth) = (vec![(module.clone(), 0)], 0usize); // modules, their depth
        let mut inline = None; // a `mod x {` before its brace
        let (mut in_uses, mut reexports) = (BTreeSet::new(), Vec::new());
        let mut i = 0;
        while i < t.len() {
            let (here, body) = stack.last().cloned().expect("the file's module");
            let (s, top) = (t[i].as_str(), body == depth);
            let next = t.get(i + 1).filter(|n| is_ident(n)).cloned();
            if s == "#" && is(i + 1, "[") && is(i + 2, "path") {
                path_for_next = paths.get(seen_paths).cloned();
                seen_paths += 1;
            }
            if top
                && s == "mod"
                && let Some(name) = next
            {
                modules
                    .entry(here.clone())
                    .or_default()
                    .children
                    .insert(name.clone());
                let path = [here, vec![name.clone()]].concat();
                if is(i + 2, ";") {
                    let dir = child_dir(&file, file == root);
                    let flat = format!("{dir}/{name}.rs");
                    let child = if let Some(at) = path_for_next.take() {
                        // A `#[path]` is taken from the declaring file's own folder.
                        let (here, _) = file.rsplit_once('/').unwrap_or(("", ""));
                        format!("{here}/{at}")
                    } else if files.contains_key(&flat) {
                        flat
                    } else {
                        format!("{dir}/{name}/mod.rs")
                    };
                    assert!(
                        files.contains_key(&child),
                        "{file}: no file for `mod {name};`"
                    );
                    // A module declared twice (under opposite `cfg`s, each with its own
                    // `#[path]`): paths to it reach its first file, x86-64's; the other is
                    // read too, as a sibling of another name, for its own arrows.
                    let mut path = path;
                    while !declared.insert(path.clone()) {
                        path.last_mut().expect("a module").push('\'');
                    }
                    todo.push((child, path));
                } else {
                    modules.entry(path.clone()).or_default().file = file.clone();
                    inline = Some(path);
                }
                in_uses.insert(i + 1);
                i += 2;
                continue;
            } else if s == "use" {
                let reexport = i > 0 && (is(i - 1, "pub") || is(i - 1, ")"));
                let (mut leaves, start) = (Vec::new(), i);
                i += 1;
                use_tree(&t, &mut i, &[], &mut leaves);
                in_uses.extend(start..i);
                for (path, name) in leaves {
                    let m = modules.entry(here.clone()).or_default();
                    match (&name, top) {
                        (Some(name), true) => drop(m.uses.insert(name.clone(), path.clone())),
                        (None, true) => m.globs.push(path.clone()),
                        _ => {}
                    }
                    if reexport && let Some(name) = name {
                        reexports.push((named.len(), name));
                    }
                    let (file, module) = (file.clone(), here.clone());
                    named.push(Named {
                        file,
                        module,
                        path,
                        arrow: !reexport,
                    });
                }
                continue;
            } else if top && ITEMS.contains(&s) {
                let name = t.get(i + 1 + usize::from(s == "macro_rules")).cloned();
                let name = name.filter(|n| is_ident(n) && !["fn", "_"].contains(&n.as_str()));
                modules.entry(here.clone()).or_default().items.extend(name);
            } else if is_ident(s) && colons(&t, i + 1) && !(i > 0 && is(i - 1, ":")) {
                let mut path = vec![s.to_string()];
                i += 1;
                while colons(&t, i) && t.get(i + 2).is_some_and(|n| is_ident(n)) {
                    path.push(t[i + 2].clone());
                    i += 3;
                }
                named.push(Named {
                    file: file.clone(),
                    module: here,
                    path,
                    arrow: true,
                });
                continue;
            }
            if s == "{" {
                depth += 1;
                stack.extend(inline.take().map(|path| (path, depth)));
            } else if s == "}" {
                if stack.len() > 1 && body == depth {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            i += 1;
        }
        // A re-export is an arrow too when its file names the name again outside `use` lines.
        for (at, name) in reexports {
            let again = (0..t.len()).any(|i| t[i] == name && !in_uses.contains(&i));
            named[at].arrow = again;
        }
    }
    (modules, named)
}

/// What `path`, named in module `at`, reaches (`None`: a name from outside the crate).
fn resolve(
    modules: &BTreeMap<Vec<String>, Module>,
    at: &[String],
    path: &[String],
    hops: u32,
) -> Option<Target> {
    let mut m = at.to_vec();
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => (m, rest) = (Vec::new(), &path[1..]),
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                (rest, _) = (&rest[1..], m.pop()?);
            }
        }
        _ => {}
    }
    let relative = rest.len() == path.len();
    for (k, s) in rest.iter().enumerate() {
        let module = modules.get(&m)?;
        if module.children.contains(s) {
            m.push(s.clone());
            continue;
        } else if module.items.contains(s) {
            return Some(Target::File(module.file.clone()));
        }
        let through_use = (hops < 32).then(|| module.uses.get(s)).flatten();
        let through_glob = || {
            let globs = module.globs.iter().filter(|_| hops < 32);
            let reached = globs.filter_map(|g| resolve(modules, &m, g, hops + 1));
            let modules_reached = reached.filter_map(|t| match t {
                Target::Module(g) => Some(g),
                Target::File(_) => None,
            });
            let glob: Vec<Vec<String>> = modules_reached.collect();
            let knows = |g: &Vec<String>| {
                modules.get(g).is_some_and(|g| {
                    g.children.contains(s) || g.items.contains(s) || g.uses.contains_key(s)
                })
            };
            glob.into_iter().find(knows)
        };
        let next = match through_use {
            Some(used) => Some(resolve(modules, &m, used, hops + 1)?), // None: another crate's
            None => through_glob().and_then(|g| resolve(modules, &g, &rest[k..k + 1], hops + 1)),
        };
        match next {
            Some(Target::Module(to)) => m = to,
            Some(file) => return Some(file),
            None if relative && k == 0 => return None,
            None => return Some(Target::File(module.file.clone())),
        }
    }
    Some(Target::Module(m))
}

/// The Rust files' arrows, crate by crate (roots: each `src/lib.rs`, `src/main.rs` and
/// `src/bin/` root); every `.rs` file below a `src/` must be reached from one.
fn rust_arrows(files: &Files, graph: &mut Graph) {
    let root = |p: &&String| {
        let bin = p
            .rsplit_once("/src/bin/")
            .or_else(|| p.strip_prefix("src/bin/").map(|b| ("", b)));
        p.ends_with("src/lib.rs")
            || p.ends_with("src/main.rs")
            || bin.is_some_and(|(_, b)| b.ends_with("/main.rs") || !b.contains('/'))
    };
    let roots: Vec<&String> = files
        .keys()
        .filter(|p| p.ends_with(".rs"))
        .filter(root)
        .collect();
    let mut reached = BTreeSet::new();
    for root in roots {
        let (modules, named) = read_crate(files, root);
        reached.extend(modules.values().map(|m| m.file.clone()));
        for n in named.iter().filter(|n| n.arrow) {
            let to = match resolve(&modules, &n.module, &n.path, 0) {
                Some(Target::Module(m)) => modules[&m].file.clone(),
                Some(Target::File(f)) => f,
                None => continue,
            };
            if to != n.file {
                let arrows = graph.entry(n.file.clone()).or_default();
                arrows.entry(to).or_insert_with(|| n.path.join("::"));
            }
        }
    }
    let included = |p: &String| {
        let name = p.rsplit('/').next().expect("a name");
        reached
            .iter()
            .any(|r| files[r].contains(&format!("include!(\"{name}\")")))
    };
    let rust = files
        .keys()
        .filter(|p| p.ends_with(".rs") && p.contains("src/"));
    let unread = rust.filter(|p| !reached.contains(*p) && !included(p));
    let unread: Vec<String> = unread.cloned().collect();
    none_of(
        "files no crate root reaches through its `mod` lines",
        &unread,
    );
}

/// `path` with its `.` and `..` components resolved.
fn normal(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "." | "" => {}
            ".." => drop(out.pop()),
            _ => out.push(part),
        }
    }
    out.join("/")
}

/// Python source with comments and string literals replaced by spaces.
fn strip_python(src: &str) -> String {
    let (mut out, mut rest) = (String::new(), src);
    while let Some(ch) = rest.chars().next() {
        if ch == '#' {
            rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
        } else if ch == '"' || ch == '\'' {
            let triple = ch.to_string().repeat(3);
            let close = if rest.starts_with(&triple) {
                triple
            } else {
                ch.to_string()
            };
            let (mut j, body) = (close.len(), rest.as_bytes());
            while j < body.len() && !body[j..].starts_with(close.as_bytes()) {
                j += 1 + usize::from(body[j] == b'\\');
            }
            rest = &rest[(j + close.len()).min(rest.len())..];
            out.push(' ');
        } else {
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    out
}

/// The Python files' arrows: `from`/`import` of a module of the same directory tree, to its
/// `.py` file or its package's `__init__.py`.
fn python_arrows(files: &Files, graph: &mut Graph) {
    let py: Vec<&String> = files.keys().filter(|p| p.ends_with(".py")).collect();
    // Where absolute names start: the directories of top-level packages and of loose scripts.
    let is_package = |dir: &str| files.contains_key(&format!("{dir}/__init__.py"));
    let tops: BTreeSet<String> = py
        .iter()
        .map(|p| p.rsplit_once('/').map_or("", |(d, _)| d))
        .map(|mut d| {
            while is_package(d) {
                d = d.rsplit_once('/').map_or("", |(up, _)| up);
            }
            d.to_string()
        })
        .collect();
    let module = |dir: &str, dotted: &str| {
        let base = normal(&format!("{dir}/{}", dotted.replace('.', "/")));
        [format!("{base}.py"), format!("{base}/__init__.py")]
            .into_iter()
            .find(|f| files.contains_key(f))
    };
    for file in py {
        let t = tokens(&strip_python(&files[file])); // nothing left for `strip` to take
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        for i in (0..t.len()).filter(|&i| t[i] == "from" || t[i] == "import") {
            let mut j = i + 1;
            let dots = t[j..].iter().take_while(|x| *x == ".").count();
            j += dots;
            let mut dotted = String::new();
            while t.get(j).is_some_and(|x| is_ident(x) && x != "import") {
                dotted.push_str(&t[j]);
                j += 1;
                if t.get(j).is_some_and(|x| x == ".") {
                    (dotted, j) = (dotted + ".", j + 1);
                }
            }
            let mut targets = Vec::new();
            let bases: Vec<String> = if dots > 0 {
                vec![normal(&format!("{dir}/{}", "../".repeat(dots - 1)))]
            } else {
                tops.iter().cloned().collect()
            };
            if t[i] == "import" && dots == 0 {
                targets.extend(bases.iter().filter_map(|b| module(b, &dotted)));
            } else if t[i] == "from" && t.get(j).is_some_and(|x| x == "import") {
                let names = t[j + 1..].iter().skip_while(|x| *x == "(");
                let names: Vec<&String> = names.step_by(2).take_while(|x| is_ident(x)).collect();
                for base in &bases {
                    if dotted.is_empty() && dots == 0 {
                        break;
                    }
                    let at = normal(&format!("{base}/{}", dotted.replace('.', "/")));
                    for name in &names {
                        let sub = module(&at, name).or_else(|| module(base, &dotted));
                        targets.extend(sub);
                    }
                }
            }
            for to in targets.into_iter().filter(|to| to != file) {
                let arrows = graph.entry(file.clone()).or_default();
                arrows
                    .entry(to)
                    .or_insert_with(|| format!("{} {dotted}", t[i]));
            }
        }
    }
}

/// The JavaScript and TypeScript files' arrows: relative `import`/`export .. from`,
/// `import(..)` and `require(..)`, resolved as Node (or TypeScript, for a `.d.ts`) would.
fn node_arrows(files: &Files, graph: &mut Graph) {
    let js = [".js", ".mjs", ".cjs", ".ts"];
    for file in files.keys().filter(|p| js.iter().any(|e| p.ends_with(e))) {
        let src = &files[file];
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        // Each string literal and the word before it (comments skipped).
        let (mut rest, mut word, mut specs) = (src.as_str(), String::new(), Vec::new());
        while let Some(ch) = rest.chars().next() {
            if rest.starts_with("//") || rest.starts_with("/*") {
                let end = if rest.starts_with("//") { "\n" } else { "*/" };
                rest = &rest[rest[2..]
                    .find(end)
                    .map_or(rest.len(), |e| e + 2 + end.len())..];
                continue;
            } else if ['"', '\'', '`'].contains(&ch) {
                let end = rest[1..].find(ch).map_or(rest.len(), |e| e + 1);
                specs.push((word.clone(), rest[1..end].to_string()));
                rest = &rest[(end + 1).min(rest.len())..];
            } else if ch.is_alphanumeric() || ch == '_' {
                word = rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .into();
                rest = &rest[word.len()..];
                continue;
            } else {
                rest = &rest[ch.len_utf8()..];
                if ch.is_whitespace() || (ch == '(' && ["import", "require"].contains(&&*word)) {
                    continue; // the word still stands before what comes next
                }
            }
            word.clear();
        }
        let imports = specs.into_iter().filter(|(w, s)| {
            ["from", "import", "require"].contains(&w.as_str()) && s.starts_with('.')
        });
        for (_, spec) in imports {
            let base = normal(&format!("{dir}/{spec}"));
            let typed = file
                .ends_with(".d.ts")
                .then(|| base.trim_end_matches(".js").to_string() + ".d.ts");
            let tries = [
                typed.unwrap_or_default(),
                base.clone(),
                format!("{base}.js"),
                format!("{base}/index.js"),
            ];
            if let Some(to) = tries
                .into_iter()
                .find(|f| files.contains_key(f) && f != file)
            {
                graph
                    .entry(file.clone())
                    .or_default()
                    .entry(to)
                    .or_insert(spec);
            }
        }
    }
}

/// The import graph of these files.
fn import_graph(files: &Files) -> Graph {
    let mut graph = Graph::new();
    rust_arrows(files, &mut graph);
    python_arrows(files, &mut graph);
    node_arrows(files, &mut graph);
    graph
}

/// Every set of files that import each other round a circle (the graph's strongly connected
/// components of two or more), each with its arrows.
fn circles(graph: &Graph) -> Vec<String> {
    let reach = |from: &String| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from]);
        while let Some(f) = todo.pop() {
            for to in graph.get(f).into_iter().flat_map(|a| a.keys()) {
                if seen.insert(to.clone()) {
                    todo.push(to);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|f| (f, reach(f))).collect();
    let (mut done, mut out) = (BTreeSet::new(), Vec::new());
    for (file, reached) in &reaches {
        let circle: Vec<&String> = (reaches.keys().copied())
            .filter(|g| reached.contains(*g) && reaches[g].contains(*file))
            .collect();
        if circle.is_empty() || !done.insert(circle.clone()) {
            continue;
        }
        let inside = |f: &String| circle.contains(&f);
        let arrows = circle
            .iter()
            .flat_map(|f| graph[*f].iter().map(move |(to, why)| (f, to, why)));
        let arrows: Vec<String> = arrows
            .filter(|(_, to, _)| inside(to))
            .map(|(f, to, why)| format!("{f} -> {to} ({why})"))
            .collect();
        let names: Vec<&str> = circle.iter().map(|f| f.as_str()).collect();
        out.push(format!(
            "{} files round a circle: {}\n    {}",
            circle.len(),
            names.join(", "),
            arrows.join("\n    ")
        ));
    }
    out
}

#[test]
fn no_two_files_of_src_or_clients_import_each_other() {
    let graph = import_graph(&repo_files(&["src", "clients"]));
    let arrows = |ext: &str| {
        graph
            .iter()
            .filter(|(f, _)| f.ends_with(ext))
            .map(|(_, a)| a.len())
            .sum::<usize>()
    };
    none_of(
        "files of src/ or clients/ that import each other",
        &circles(&graph),
    );
    let seen = (arrows(".rs"), arrows(".py"), arrows(".js"));
    assert!(
        seen.0 > 150 && seen.1 > 5 && seen.2 > 0,
        "{seen:?} arrows: the scan is blind"
    );
}

#[test]
fn no_two_files_of_crates_import_each_other() {
    let graph = import_graph(&repo_files(&["crates"]));
    assert!(
        graph.values().map(BTreeMap::len).sum::<usize>() > 100,
        "the scan is blind"
    );
    none_of("files of crates/ that import each other", &circles(&graph));
}

/// A made-up repository for the file graph, each file after a line `@path`.
const GRAPH_SNIPPETS: &str = r##"
@a/src/lib.rs
mod m; mod n;
@a/src/m/mod.rs
//! A parent: declares its children, re-exports one, uses another.
mod x; mod y;
pub use self::x::X; use self::y::helper; pub struct Top; fn f() { helper() }
@a/src/m/x.rs
use super::Top; // crate::n::g
pub struct X; const S: &str = "crate::n::g";
@a/src/m/y.rs
use super::X; pub fn helper() {}
@a/src/n.rs
fn g() { let _ = crate::m::X; }
mod tests { use super::*; }
#[cfg(unix)]
#[path = "n/unix.rs"]
mod os;
#[cfg(not(unix))]
#[path = "n/other.rs"]
mod os;
@a/src/n/unix.rs
use super::super::n::g;
@a/src/n/other.rs
use crate::m::Top;
@p/pkg/__init__.py
from ._a import A
@p/pkg/_a.py
"""Not an import: from ._c import C"""
from ._b import B
A = 1
@p/pkg/_b.py
def f():
    from . import _a  # done late, still an arrow
B = 2
@p/pkg/_c.py
C = 3
@j/a.js
import { b } from "./b.js";
@j/b.js
const a = require("./a");
@j/c.js
// import { a } from "./a.js";
export const c = "./b.js";
"##;

/// The file graph follows a re-export to the file that defines the name, sees Python's late
/// imports and Node's `require`, and nothing in a comment or a literal: the checks can fail.
#[test]
fn the_file_graph_reports_what_it_should_and_not_what_it_should_not() {
    let files: Files = (GRAPH_SNIPPETS.split("\n@").skip(1))
        .map(|f| f.split_once('\n').expect("a path line"))
        .map(|(path, src)| (path.into(), src.into()))
        .collect();
    let graph = import_graph(&files);
    let to = |from: &str| {
        graph
            .get(from)
            .map(|a| a.keys().cloned().collect::<Vec<_>>())
    };
    assert_eq!(
        to("a/src/n.rs"),
        Some(vec!["a/src/m/x.rs".into()]),
        "{graph:?}"
    );
    assert_eq!(
        to("a/src/m/mod.rs"),
        Some(vec!["a/src/m/y.rs".into()]),
        "{graph:?}"
    );
    assert_eq!(
        to("p/pkg/__init__.py"),
        Some(vec!["p/pkg/_a.py".into()]),
        "{graph:?}"
    );
    // A `#[path]` module is read in its file, each of two declarations.
    assert_eq!(
        to("a/src/n/unix.rs"),
        Some(vec!["a/src/n.rs".into()]),
        "{graph:?}"
    );
    assert_eq!(
        to("a/src/n/other.rs"),
        Some(vec!["a/src/m/mod.rs".into()]),
        "{graph:?}"
    );
    assert_eq!(to("j/c.js"), None, "{graph:?}");
    let found: Vec<String> = circles(&graph)
        .iter()
        .map(|c| c.lines().next().unwrap_or("").into())
        .collect();
    let want = [
        "3 files round a circle: a/src/m/mod.rs, a/src/m/x.rs, a/src/m/y.rs",
        "2 files round a circle: j/a.js, j/b.js",
        "2 files round a circle: p/pkg/_a.py, p/pkg/_b.py",
    ];
    assert_eq!(found, want, "{graph:?}");
}
