//! `enumerate --out` into Parquet, against a real server over loopback: a job of shard
//! files (`--out DIR --format parquet`) row for row equal, shard by shard, to the text job's
//! files, and together to the Enumerate stream; one file (`--out FILE.parquet`) equal to the
//! stream in order, its row groups bounded; both counting what Count and OEIS A000170 say,
//! with n in the footer. A job SIGKILLed at seeded moments and rerun, and one left a torn
//! shard and a torn temporary file by hand, end equal to an uninterrupted job, and no kill
//! ever leaves an incomplete file under a `.parquet` name. Bad paths fail with one line.
//! Read by pyarrow, polars and DuckDB: the system test `system::parquet`.

use crate::common::{A000170, ServerProcess, queens_cli};
use crate::fanout::{finish_within, kill_after, spawn, xorshift};
use crate::tools;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use queens::parquet_file::{N_KEY, ROW_GROUP_ROWS};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest one CLI run may take here (runs take seconds; this only catches a hang).
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// A scratch folder of this test, empty, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = tools::scratch_dir().join(format!("queens-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a scratch folder");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scratch folder named for `name`, and a server with its URL.
fn setup(name: &str) -> (Scratch, ServerProcess, String) {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    (Scratch::new(name), server, url)
}

/// The boards of a Parquet file as n-byte records, in file order, checking its schema
/// (`r0`..`r{n-1}`, UInt8) and the n in its footer; with its row groups' sizes.
fn read_boards(path: &Path, n: usize) -> (Vec<u8>, Vec<i64>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("a Parquet file");
    let meta = builder.metadata().clone();
    let stored_n = meta
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == N_KEY))
        .and_then(|kv| kv.value.clone());
    assert_eq!(stored_n, Some(n.to_string()), "{path:?}: n in the footer");
    let groups = meta.row_groups().iter().map(|g| g.num_rows()).collect();
    let names: Vec<String> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| format!("{}:{}", f.name(), f.data_type()))
        .collect();
    let expected: Vec<String> = (0..n).map(|r| format!("r{r}:UInt8")).collect();
    assert_eq!(names, expected, "{path:?}: schema");
    let mut records = Vec::new();
    for batch in builder.build().expect("a reader") {
        let batch = batch.expect("a record batch");
        let columns: Vec<&arrow_array::UInt8Array> = (0..n)
            .map(|r| batch.column(r).as_any().downcast_ref().expect("UInt8"))
            .collect();
        for row in 0..batch.num_rows() {
            records.extend(columns.iter().map(|c| c.value(row)));
        }
    }
    (records, groups)
}

/// The files of `dir` ending in `.extension`, by name.
fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a job folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    paths.sort();
    paths
}

/// Column lists, one per line, as n-byte records.
fn records_of_lines(text: &str) -> Vec<u8> {
    text.lines()
        .flat_map(|line| line.split(',').map(|c| c.parse::<u8>().expect("a column")))
        .collect()
}

/// Runs the CLI to its end; asserts it succeeded and returns its stdout.
fn run_ok(args: &[&str]) -> String {
    let (ok, out, err) = finish_within(spawn(args), RUN_LIMIT);
    assert!(ok, "queens {args:?}: {out}{err}");
    out
}

#[test]
fn parquet_files_equal_the_text_job_and_the_stream_row_for_row() {
    let (n, shards) = (12usize, "4");
    let (scratch, _server, url) = setup("parquet-equal");
    let (text, table, single) = (
        scratch.0.join("text"),
        scratch.0.join("table"),
        scratch.0.join("n12.parquet"),
    );
    let dir = |d: &Path| d.to_str().unwrap().to_string();
    let job = |out: &Path, format: &[&str]| {
        let out = dir(out);
        let args = [
            "enumerate",
            "12",
            "--addr",
            &url,
            "--shards",
            shards,
            "--out",
            &out,
        ];
        run_ok(&[&args[..], format].concat())
    };
    let parquet_job = || job(&table, &["--format", "parquet"]);
    job(&text, &[]);
    let out = parquet_job();
    let total = A000170[n - 1];
    assert!(
        out.starts_with(&format!("boards: {total} in 4 shard files")),
        "{out}"
    );
    let out = run_ok(&["enumerate", "12", "--addr", &url, "--out", &dir(&single)]);
    assert_eq!(out, format!("boards: {total} in {}\n", single.display()));
    let (code, stream, err) = queens_cli(&["enumerate", "12", "--addr", &url, "--compact"]);
    assert_eq!(code, 0, "{err}");
    let stream = records_of_lines(&stream);
    assert_eq!(
        stream.len() as u64,
        total * n as u64,
        "the stream is Count's"
    );

    // The single file: the stream, in its order.
    let (boards, groups) = read_boards(&single, n);
    assert!(boards == stream, "the single file differs from the stream");
    assert_eq!(groups, vec![total as i64]);

    // The shards: each the text job's shard, row for row; together the stream.
    let parquet_shards = files(&table, "parquet");
    let text_shards = files(&text, "txt");
    assert_eq!(parquet_shards.len(), 4, "{parquet_shards:?}");
    let mut all: Vec<Vec<u8>> = Vec::new();
    for (parquet, text) in parquet_shards.iter().zip(&text_shards) {
        assert_eq!(parquet.file_stem(), text.file_stem());
        let (boards, _) = read_boards(parquet, n);
        let lines = std::fs::read_to_string(text).unwrap();
        assert!(
            boards == records_of_lines(&lines),
            "{parquet:?} differs from {text:?}"
        );
        all.extend(boards.chunks(n).map(<[u8]>::to_vec));
    }
    all.sort();
    assert!(
        all.concat() == stream,
        "the shards together differ from the stream"
    );
    // Nothing else in the folder a `*.parquet` glob or a dataset reader would pick up.
    let names: Vec<String> = std::fs::read_dir(&table)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with(['.', '_']) && !name.ends_with(".parquet"))
        .collect();
    assert!(names.is_empty(), "{names:?}");

    // Rerunning the finished job changes nothing; another job in the folder is refused.
    let out = parquet_job();
    assert!(out.starts_with(&format!("boards: {total} ")), "{out}");
    for (args, says) in [
        (
            vec![
                "--shards",
                shards,
                "--out",
                &dir(&text),
                "--format",
                "parquet",
            ],
            "another job",
        ),
        (
            vec![
                "--shards",
                "5",
                "--out",
                &dir(&table),
                "--format",
                "parquet",
            ],
            "another job",
        ),
    ] {
        let (code, _, err) =
            queens_cli(&[&["enumerate", "12", "--addr", &url], &args[..]].concat());
        assert!(code == 1 && err.contains(says), "{args:?}: {code} {err}");
    }
}

#[test]
fn a_single_file_has_bounded_row_groups_and_a_fixed_queen_counts_as_count_does() {
    // n = 15: 2,279,184 boards, more than two row groups.
    let n = 15usize;
    let (scratch, _server, url) = setup("parquet-groups");
    let file = scratch.0.join("n15.parquet");
    run_ok(&[
        "enumerate",
        "15",
        "--addr",
        &url,
        "--out",
        file.to_str().unwrap(),
    ]);
    let (boards, groups) = read_boards(&file, n);
    let total = A000170[n - 1];
    assert_eq!(boards.len() as u64, total * n as u64);
    assert!(groups.len() >= 3, "{groups:?}");
    assert!(
        groups.iter().all(|&g| g as usize <= ROW_GROUP_ROWS),
        "{groups:?}"
    );
    assert_eq!(groups.iter().sum::<i64>() as u64, total);
    assert!(
        boards
            .chunks(n)
            .zip(boards.chunks(n).skip(1))
            .all(|(a, b)| a < b),
        "not in lexicographic order"
    );
    // The queen on a1 (row 0, column 0): the rows with r0 = 0 are Count's with it fixed.
    let on_a1 = boards.chunks(n).filter(|b| b[0] == 0).count();
    let (code, out, err) = queens_cli(&["count", "15", "--addr", &url, "--fixed", "0,0"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("solutions: {on_a1}\n"));
}

/// Whether every `*.parquet` file in `dir` is complete and holds its reference's rows.
fn assert_complete_prefix_of(dir: &Path, reference: &[(PathBuf, Vec<u8>)], n: usize) -> usize {
    let present = files(dir, "parquet");
    for path in &present {
        let (_, expected) = reference
            .iter()
            .find(|(p, _)| p.file_name() == path.file_name())
            .unwrap_or_else(|| panic!("{path:?} is not a shard of the job"));
        let (boards, _) = read_boards(path, n);
        assert!(
            &boards == expected,
            "{path:?} is under its name but not whole"
        );
    }
    present.len()
}

/// A job of 8 shards of n = 15 SIGKILLed 8 times at seeded moments within its first half
/// and rerun: after every kill each `*.parquet` file present is complete (torn ones exist
/// only under hidden temporary names); then a torn temporary file and a shard file cut in
/// half under its name by hand (whether or not the manifest calls it done); the last rerun ends with every shard equal
/// to the uninterrupted job's, row for row. A single file killed mid-write leaves no file
/// under its name, and a rerun writes it whole.
#[test]
fn a_parquet_job_killed_and_rerun_ends_equal_to_an_uninterrupted_one() {
    let n = 15usize;
    let (scratch, _server, url) = setup("parquet-kill");
    let args = |out: &Path| -> Vec<String> {
        let mut args = vec![
            "enumerate",
            "15",
            "--addr",
            &url,
            "--shards",
            "8",
            "--format",
        ];
        args.extend(["parquet", "--out", out.to_str().unwrap()]);
        args.into_iter().map(str::to_string).collect()
    };
    let start = |out: &Path| {
        let args = args(out);
        spawn(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (whole, killed) = (scratch.0.join("whole"), scratch.0.join("killed"));
    let started = Instant::now();
    let (ok, out, err) = finish_within(start(&whole), RUN_LIMIT);
    assert!(ok, "{out}{err}");
    let uninterrupted = started.elapsed();
    let reference: Vec<(PathBuf, Vec<u8>)> = files(&whole, "parquet")
        .into_iter()
        .map(|p| {
            let (boards, _) = read_boards(&p, n);
            (p, boards)
        })
        .collect();
    assert_eq!(reference.len(), 8);
    let rows: usize = reference.iter().map(|(_, b)| b.len() / n).sum();
    assert_eq!(rows as u64, A000170[n - 1]);

    let mut seed = 0x2545_f491_u32;
    let mut complete_seen = 0;
    for _ in 0..8 {
        // 5 % to 50 % of the uninterrupted run's time after each start.
        let delay = uninterrupted * (1 + xorshift(&mut seed) % 10) / 20;
        kill_after(start(&killed), delay);
        complete_seen = assert_complete_prefix_of(&killed, &reference, n);
    }
    println!("8 kills: {complete_seen} shards complete after the last ({uninterrupted:.2?} a run)");
    // By hand: a torn temporary file, and shard 3 torn under its name.
    std::fs::write(
        killed.join(".shard-00005-of-00008.parquet.tmp"),
        b"PAR1 torn",
    )
    .unwrap();
    let three = killed.join("shard-00003-of-00008.parquet");
    let (_, whole_three) = &reference[3];
    std::fs::copy(&reference[3].0, &three).unwrap();
    let bytes = std::fs::read(&three).unwrap();
    std::fs::write(&three, &bytes[..bytes.len() / 2]).unwrap();
    let (ok, out, err) = finish_within(start(&killed), RUN_LIMIT);
    assert!(ok, "{out}{err}");
    assert!(
        out.starts_with(&format!("boards: {rows} in 8 shard files")),
        "{out}"
    );
    assert_eq!(assert_complete_prefix_of(&killed, &reference, n), 8);
    assert!(&read_boards(&three, n).0 == whole_three);
    let leftovers: Vec<String> = std::fs::read_dir(&killed)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp") && !name.starts_with(".shard-00005"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // One file, killed mid-write: nothing under its name; a rerun writes it whole.
    let single = scratch.0.join("n15.parquet");
    let path = single.to_str().unwrap();
    let child = spawn(&["enumerate", "15", "--addr", &url, "--out", path]);
    kill_after(child, uninterrupted / 10);
    assert!(
        !single.exists(),
        "a killed single file was left under its name"
    );
    run_ok(&["enumerate", "15", "--addr", &url, "--out", path]);
    let mut sorted: Vec<&[u8]> = reference.iter().flat_map(|(_, b)| b.chunks(n)).collect();
    sorted.sort();
    assert!(read_boards(&single, n).0 == sorted.concat());
}

#[test]
fn bad_parquet_outputs_fail_with_one_line() {
    let (scratch, _server, url) = setup("parquet-bad");
    let plain = scratch.0.join("a-file");
    std::fs::write(&plain, b"not a folder").unwrap();
    let under_file = plain.join("x.parquet");
    let cases: [(Vec<&str>, i32, &str); 4] = [
        (
            vec!["--out", under_file.to_str().unwrap()],
            1,
            "cannot create",
        ),
        (
            vec!["--out", plain.to_str().unwrap(), "--format", "parquet"],
            1,
            "cannot create",
        ),
        (
            vec!["--out", "x.parquet", "--format", "text"],
            2,
            "--format text",
        ),
        (
            vec!["--out", "x.parquet", "--shards", "4"],
            2,
            "give a directory",
        ),
    ];
    for (args, code, says) in cases {
        let (got, out, err) =
            queens_cli(&[&["enumerate", "8", "--addr", &url], &args[..]].concat());
        assert_eq!(got, code, "{args:?}: {out}{err}");
        assert!(
            err.starts_with("error: ") && err.contains(says),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!Path::new("x.parquet").exists());
}
