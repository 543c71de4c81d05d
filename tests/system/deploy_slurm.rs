//! The Slurm deployment (`deploy/slurm`) on a real Slurm: Debian's `slurm-wlm` and `munge`
//! (installed by the test if missing), with munged, slurmctld and slurmd started on this one
//! node from a configuration under `<target>/slurm` (no systemd, no cgroups:
//! `proctrack/linuxproc`, `task/none`), and stopped at the end, also when the test fails.
//!
//! `deploy/slurm/submit.sh 16 16 DIR` submits the 16-task count array and the sum job that
//! depends on it (from an environment with `QUEENS_SHARD_OFFSET` and `QUEENS_SHARDS` set,
//! the variables older versions of `count.sbatch` took a shard's offset from: they reach
//! the tasks and must move no shard); the sum must be OEIS's for n = 16 (counted by joining
//! half boards: each shard's line carries its turn-fixed points, from which the sum makes
//! the classes). Every run is
//! checked the same way: each task's log names the shard it counted, `DIR` holds one
//! `shard-IIIII.json` per shard 0 to 15 whose line names that shard of 16 (and no temporary
//! file), the lines' solutions add up to OEIS's, and `total.txt` and the sum's log hold
//! OEIS's solutions and classes.
//! Then again with task 7 requeued while it runs: the `queens` the test hands the jobs
//! (`$QUEENS`) is a wrapper that, in task 7's first run only, counts, and then holds the
//! task (sleeps) after the line is in its temporary file and before `count.sbatch` renames
//! it into place. The test waits until it holds, checks that the task is RUNNING with a
//! temporary file and no shard file, runs `scontrol requeue`, and the sum (of the requeued
//! run's line, `restart 1` in its log) must still be exact. Then with `QUEENS_ARRAY_SIZE=5`
//! and `--hold` (and the stray variables again): `submit.sh` must print four array ids
//! (`count array: A,B,C,D`), the held sum's `Dependency` must name all four, and once
//! released the arrays must have run 5, 5, 5 and 1 tasks, counting shards 0-4, 5-9, 10-14
//! and 15 (each array is told 16 and its first shard as `count.sbatch`'s arguments), with an
//! exact sum. Then the four arrays again with the user's own `--export=QUEENS,...` among the
//! sbatch options, which hands the jobs only the variables it names (and Slurm's): the
//! shards must be the same, which they were not when the offsets travelled in the
//! environment. Last, `count.sbatch` refuses what it must, naming what is wrong and leaving
//! no file: an `--array=1-2` fails in both tasks naming `SLURM_ARRAY_TASK_MIN`; an
//! `--array=0-1` told `SHARDS 2 OFFSET 2` fails in both naming OFFSET and SHARDS; and, run
//! outside Slurm as a task would be, a SHARDS or OFFSET that is not a number, a SHARDS
//! without OFFSET, and `--shards` given with them are refused.
//! Every wait is bounded; the run takes about 45 s. The cluster itself (daemons, commands,
//! the submission, cleaning up): `deploy_slurm/cluster.rs`.

mod cluster;

use self::cluster::{COMMAND_LIMIT, Cluster, JOB_LIMIT, N, SHARDS, field};
use crate::common::{A000170, A002562};
use crate::tools;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The array task the second run requeues while it runs.
const HELD_TASK: u32 = 7;

/// The sum job's `total.txt` in `out` on one line (its lines joined by commas).
fn totals(out: &Path) -> String {
    fs::read_to_string(out.join("total.txt"))
        .expect("total.txt")
        .trim_end()
        .replace('\n', ", ")
}

/// What `queens sum` prints first for the whole n = 16 board in 16 shards (OEIS A000170,
/// A002562): its digest and provenance follow.
fn expected_total() -> String {
    format!(
        "n: {N}\nshards: {SHARDS}\nsolutions: {}\nfundamental: {}\n",
        A000170[N as usize - 1],
        A002562[N as usize - 1]
    )
}

/// Checks a finished run of `submit.sh` whose count arrays are `arrays`, in the order of
/// their shards: every task and the sum job COMPLETED, each task's log naming the shard it
/// counted (the arrays' tasks are shards 0 to SHARDS-1 in turn), one shard file per shard
/// holding that shard's line and no temporary file left, and the total exact.
fn check_run(cluster: &Cluster, out: &Path, arrays: &[String], sum: &str) {
    let mut first = 0;
    for array in arrays {
        let states = cluster.states(array);
        assert!(
            !states.is_empty() && states.iter().all(|s| s == "COMPLETED"),
            "count array {array} (of {arrays:?}): {states:?}"
        );
        let tasks = states.len() as u32;
        for task in 0..tasks {
            let log = fs::read_to_string(out.join(format!("slurm-{array}_{task}.out")))
                .expect("a task's log");
            let says = format!(
                "array task {task} of {tasks}, shard index {},",
                first + task
            );
            assert!(
                log.contains(&says),
                "task {array}_{task}'s log should say {says:?}: {log}"
            );
        }
        first += tasks;
    }
    assert_eq!(first, SHARDS, "tasks in the count arrays {arrays:?}");
    assert_eq!(cluster.states(sum), vec!["COMPLETED"], "sum job {sum}");
    let mut names: Vec<String> = fs::read_dir(out)
        .expect("the output folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| !name.starts_with("slurm-"))
        .collect();
    names.sort();
    let mut expected: Vec<String> = (0..SHARDS).map(|i| format!("shard-{i:05}.json")).collect();
    expected.push("total.txt".to_string());
    assert_eq!(names, expected, "files in {}", out.display());
    let mut solutions = 0;
    for i in 0..SHARDS {
        let file = out.join(format!("shard-{i:05}.json"));
        let text = fs::read_to_string(&file).expect("a shard file");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{}: {text}", file.display());
        let line: serde_json::Value = serde_json::from_str(lines[0])
            .unwrap_or_else(|e| panic!("{}: {e}: {text}", file.display()));
        assert_eq!(
            (&line["n"], &line["shard"]["index"], &line["shard"]["count"]),
            (&N.into(), &i.into(), &SHARDS.into()),
            "{}: {text}",
            file.display()
        );
        solutions += line["solutions"].as_u64().expect("solutions");
    }
    assert_eq!(
        solutions,
        A000170[N as usize - 1],
        "the shard lines' solutions"
    );
    // The total, then the digest of the counts and where they were counted: one build.
    let total = fs::read_to_string(out.join("total.txt")).expect("total.txt");
    assert!(total.starts_with(&expected_total()), "{total}");
    assert!(total.contains("\ndigest: sha256:"), "{total}");
    let build = total.lines().find(|l| l.starts_with("builds: "));
    let one = format!("({SHARDS} shards)");
    assert!(
        build.is_some_and(|l| l.ends_with(&one) && !l.contains(';')),
        "{total}"
    );
    let log = fs::read_to_string(out.join(format!("slurm-{sum}.out"))).expect("the sum's log");
    assert_eq!(log, total, "the sum job's log");
}

/// The module's runs on one cluster, started once: plain, requeued, in four arrays (twice),
/// refused.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn slurm_array_counts_n16_exactly_also_with_a_task_requeued_mid_run() {
    let started = Instant::now();
    let cluster = Cluster::start();
    let queens = Path::new(env!("CARGO_BIN_EXE_queens"));

    // 1. The array as a user submits it, from a shell that still exports the shard variables
    //    older versions of count.sbatch read: sbatch hands them to the tasks, which must
    //    ignore them.
    let t = Instant::now();
    let stray = [("QUEENS_SHARD_OFFSET", "7"), ("QUEENS_SHARDS", "99")];
    let (out, arrays, sum) = cluster.submit("plain", queens, &stray, &[]);
    assert_eq!(arrays.len(), 1, "count arrays: {arrays:?}");
    cluster.wait_until_done(&[&arrays[0], &sum]);
    check_run(&cluster, &out, &arrays, &sum);
    eprintln!(
        "slurm: {SHARDS} tasks of n = {N} and the sum in {:.1} s: {}",
        t.elapsed().as_secs_f64(),
        totals(&out)
    );

    // 2. Task 7 requeued while it runs, held between its count and its rename.
    let t = Instant::now();
    let hold = cluster.dir.join("hold");
    let wrapper = cluster.dir.join("queens-holding-task");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n\
             # Test only: task {HELD_TASK}'s first run counts, then holds (its line in the\n\
             # temporary file, not yet renamed) until it is requeued. Other runs just count.\n\
             if [ \"$SLURM_ARRAY_TASK_ID\" = {HELD_TASK} ] && mkdir {hold} 2>/dev/null; then\n\
             \x20   {queens} \"$@\" || exit\n\
             \x20   echo \"$SLURM_JOB_ID\" > {hold}/counted\n\
             \x20   exec sleep 600\n\
             fi\n\
             exec {queens} \"$@\"\n",
            hold = hold.display(),
            queens = queens.display(),
        ),
    )
    .expect("write the wrapper");
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).expect("chmod");
    let (out, arrays, sum) = cluster.submit("requeued", &wrapper, &[], &[]);
    assert_eq!(arrays.len(), 1, "count arrays: {arrays:?}");
    let task = format!("{}_{HELD_TASK}", arrays[0]);
    let deadline = Instant::now() + JOB_LIMIT;
    while !hold.join("counted").exists() {
        assert!(
            Instant::now() < deadline,
            "task {task} never held\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(cluster.squeue_state(&task), "RUNNING", "task {task}");
    let shard = out.join(format!("shard-{HELD_TASK:05}.json"));
    let temporary: Vec<String> = fs::read_dir(&out)
        .expect("the output folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&format!(".shard-{HELD_TASK:05}.json.")))
        .collect();
    assert!(
        !shard.exists() && temporary.len() == 1,
        "mid-run, task {task} should have a temporary file and no shard file: {temporary:?}"
    );
    cluster.must(&["scontrol", "requeue", &task]);
    // A requeued job waits out a begin time of two minutes: once it is pending again, it
    // is told to start now.
    let deadline = Instant::now() + JOB_LIMIT;
    loop {
        let state = cluster.squeue_state(&task);
        if state == "PENDING" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "task {task} not pending again after the requeue: {state}\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Started again within the second its old run was killed in, slurmd refuses the new
    // run ("Job credential revoked": Slurm compares whole seconds) and the task FAILS, as a
    // fresh-clone CI run showed. So: wait until the old run is gone (its TERM trap removes
    // its temporary file), then two seconds more.
    let deadline = Instant::now() + JOB_LIMIT;
    while fs::read_dir(&out).expect("the output folder").any(|e| {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        name.starts_with(&format!(".shard-{HELD_TASK:05}.json."))
    }) {
        assert!(
            Instant::now() < deadline,
            "task {task}'s killed run left its temporary file\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    cluster.must(&[
        "scontrol",
        "update",
        &format!("JobId={task}"),
        "StartTime=now",
    ]);
    cluster.wait_until_done(&[&arrays[0], &sum]);
    check_run(&cluster, &out, &arrays, &sum);
    let record = cluster.must(&["scontrol", "-o", "show", "job", &task]);
    assert_eq!(field(&record, "Restarts"), "1", "{record}");
    let log = fs::read_to_string(out.join(format!("slurm-{task}.out"))).expect("task log");
    assert!(log.contains(", restart 1, "), "task {task}'s log: {log}");
    eprintln!(
        "slurm: again with task {task} requeued mid-run in {:.1} s: {}",
        t.elapsed().as_secs_f64(),
        totals(&out)
    );

    // 3. More shards than an array may hold: QUEENS_ARRAY_SIZE=5 cuts the 16 shards into
    //    arrays of 5, 5, 5 and 1 tasks, their first shards 0, 5, 10 and 15. Submitted held
    //    (`--hold` goes to every job), so the sum's dependency is read before any task runs:
    //    it must name every array. Then released, and checked as the single array was. The
    //    stray shard variables are exported again, and must move no array's shards.
    let t = Instant::now();
    let size = [
        ("QUEENS_ARRAY_SIZE", "5"),
        ("QUEENS_SHARD_OFFSET", "7"),
        ("QUEENS_SHARDS", "99"),
    ];
    let (out, arrays, sum) = cluster.submit("arrays-of-5", queens, &size, &["--hold"]);
    assert_eq!(
        arrays.len(),
        4,
        "count arrays of at most 5 tasks: {arrays:?}"
    );
    let record = cluster.must(&["scontrol", "-o", "show", "job", &sum]);
    let dependency = field(&record, "Dependency");
    for array in &arrays {
        assert!(
            dependency.contains(&format!("afterok:{array}_*")),
            "the sum job {sum} should wait for array {array}: {record}"
        );
    }
    let mut jobs: Vec<&str> = arrays.iter().map(String::as_str).collect();
    jobs.push(&sum);
    cluster.must(&["scontrol", "release", &jobs.join(",")]);
    cluster.wait_until_done(&jobs);
    let tasks: Vec<usize> = arrays.iter().map(|a| cluster.states(a).len()).collect();
    assert_eq!(tasks, [5, 5, 5, 1], "tasks of the count arrays {arrays:?}");
    check_run(&cluster, &out, &arrays, &sum);
    eprintln!(
        "slurm: {SHARDS} tasks of n = {N} in arrays {} and the sum in {:.1} s: {}",
        arrays.join(","),
        t.elapsed().as_secs_f64(),
        totals(&out)
    );

    // 4. The four arrays again, with the user's own --export among the sbatch options: it
    //    comes after anything submit.sh could put before it, and sbatch takes the last, so
    //    the jobs get only the variables it names (and Slurm's). The shards and the sum must
    //    be as before: count.sbatch has K and each array's first shard as arguments.
    let t = Instant::now();
    let size = [("QUEENS_ARRAY_SIZE", "5")];
    let (out, arrays, sum) = cluster.submit(
        "arrays-of-5-export",
        queens,
        &size,
        &["--export=QUEENS,QUEENS_SLURM_TEST_DIR"],
    );
    assert_eq!(
        arrays.len(),
        4,
        "count arrays of at most 5 tasks: {arrays:?}"
    );
    let mut jobs: Vec<&str> = arrays.iter().map(String::as_str).collect();
    jobs.push(&sum);
    cluster.wait_until_done(&jobs);
    let tasks: Vec<usize> = arrays.iter().map(|a| cluster.states(a).len()).collect();
    assert_eq!(tasks, [5, 5, 5, 1], "tasks of the count arrays {arrays:?}");
    check_run(&cluster, &out, &arrays, &sum);
    eprintln!(
        "slurm: again with --export=QUEENS,QUEENS_SLURM_TEST_DIR, arrays {}, in {:.1} s: {}",
        arrays.join(","),
        t.elapsed().as_secs_f64(),
        totals(&out)
    );

    // 5. count.sbatch refuses, naming what is wrong, and leaves no shard file: an array whose
    //    ids are not 0..K-1; an array told SHARDS 2 and OFFSET 2 (no task's shard is below
    //    2); and, outside Slurm, arguments that are not a SHARDS and an OFFSET.
    let t = Instant::now();
    /// An array count.sbatch must refuse: its folder, its `--array`, the arguments after N
    /// and DIR, its task ids and what each task's log must say.
    struct Refused {
        name: &'static str,
        array: &'static str,
        extra: &'static [&'static str],
        tasks: [u32; 2],
        says: fn(u32) -> String,
    }
    let refused = [
        Refused {
            name: "from-1",
            array: "--array=1-2",
            extra: &[],
            tasks: [1, 2],
            says: |_| {
                "error: $SLURM_ARRAY_TASK_MIN is 1, but the task ids of a job array".to_string()
            },
        },
        Refused {
            name: "past-shards",
            array: "--array=0-1",
            extra: &["2", "2"],
            tasks: [0, 1],
            says: |task| {
                format!(
                    "count.sbatch: OFFSET 2 + array task {task} is shard {}, but SHARDS is 2",
                    2 + task
                )
            },
        },
    ];
    let mut submitted = Vec::new();
    for Refused {
        name, array, extra, ..
    } in &refused
    {
        let out = cluster.dir.join("jobs").join(name);
        fs::create_dir_all(&out).expect("create the output folder");
        let run = tools::run_bounded(
            cluster
                .command("sbatch")
                .args(["--parsable", array])
                .arg(format!("--output={}/slurm-%A_%a.out", out.display()))
                .arg(tools::repo().join("deploy/slurm/count.sbatch"))
                .arg(N.to_string())
                .arg(&out)
                .args(*extra)
                .env("QUEENS", queens),
            COMMAND_LIMIT,
        );
        assert!(run.success(), "sbatch failed\n{}", run.output());
        let id = run.stdout.trim().split(';').next().unwrap_or_default();
        submitted.push((out, id.to_string()));
    }
    let ids: Vec<&str> = submitted.iter().map(|(_, id)| id.as_str()).collect();
    cluster.wait_until_done(&ids);
    for (refused, (out, array)) in refused.iter().zip(&submitted) {
        let Refused { tasks, says, .. } = refused;
        assert_eq!(
            cluster.states(array),
            vec!["FAILED"; 2],
            "array {array} ({})",
            refused.array
        );
        for task in tasks {
            let log = fs::read_to_string(out.join(format!("slurm-{array}_{task}.out")))
                .expect("the task's log");
            assert!(
                log.contains(&says(*task)),
                "task {array}_{task}'s log should say {:?}: {log}",
                says(*task)
            );
        }
        assert_eq!(
            files_besides_logs(out),
            Vec::<String>::new(),
            "{}",
            out.display()
        );
    }
    let out = cluster.dir.join("jobs").join("bad-arguments");
    let script = tools::repo().join("deploy/slurm/count.sbatch");
    for (args, says) in [
        (
            &["x", "0"][..],
            "count.sbatch: SHARDS (the third argument) must be a positive number",
        ),
        (
            &["016", "0"][..],
            "count.sbatch: SHARDS (the third argument) must be a positive number",
        ),
        (&["16"][..], "count.sbatch: SHARDS 16 needs OFFSET after it"),
        (
            &["16", "07"][..],
            "count.sbatch: OFFSET (the fourth argument) must be a number from 0",
        ),
        (
            &["16", "-1"][..],
            "count.sbatch: OFFSET (the fourth argument) must be a number from 0",
        ),
        (
            &["16", "0", "--shards", "16"][..],
            "count.sbatch: SHARDS and OFFSET choose the shard: --shards may not be given too",
        ),
    ] {
        let run = tools::run_bounded(
            cluster
                .command("bash")
                .arg(&script)
                .arg(N.to_string())
                .arg(&out)
                .args(args)
                .env("SLURM_ARRAY_TASK_ID", "0")
                .env("QUEENS", queens),
            COMMAND_LIMIT,
        );
        assert_eq!(run.code(), 2, "count.sbatch {args:?}\n{}", run.output());
        assert!(
            run.stderr.contains(says),
            "count.sbatch {args:?}\n{}",
            run.output()
        );
    }
    assert!(!out.exists(), "refused runs made {}", out.display());
    eprintln!(
        "slurm: --array=1-2, SHARDS 2 OFFSET 2 and bad arguments refused in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    eprintln!("slurm: whole test {:.1} s", started.elapsed().as_secs_f64());
}

/// The names in `out` but the jobs' logs (`slurm-*`), sorted.
fn files_besides_logs(out: &Path) -> Vec<String> {
    let mut left: Vec<String> = fs::read_dir(out)
        .expect("the output folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("slurm-"))
        .collect();
    left.sort();
    left
}
