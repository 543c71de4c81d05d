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
//! Every wait is bounded; the run takes about 45 s.

use crate::common;
use crate::tools;

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{A000170, A002562, free_port};

/// Board size and number of shards of the test's count.
const N: u32 = 16;
const SHARDS: u32 = 16;

/// The array task the second run requeues while it runs.
const HELD_TASK: u32 = 7;

/// Longest the daemons may take to come up, and the jobs to finish.
const START_LIMIT: Duration = Duration::from_secs(60);
const JOB_LIMIT: Duration = Duration::from_secs(180);

/// Longest this test waits for another run of it (another `cargo test`) to finish.
const LOCK_LIMIT: Duration = Duration::from_secs(600);

/// How long a Slurm command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// A one-node Slurm cluster of this test's own; stopped when dropped, jobs first.
struct Cluster {
    /// Where its configuration, state, logs and the jobs' outputs are.
    dir: PathBuf,
    /// Its `slurm.conf`.
    conf: PathBuf,
    /// munged, slurmctld and slurmd, in the order they were started.
    daemons: Vec<(&'static str, Child)>,
    /// Keeps another run of this test from using `dir` at the same time.
    _lock: File,
}

impl Cluster {
    /// Installs Slurm and munge if need be, writes a configuration and starts the daemons;
    /// returns once the node takes jobs.
    fn start() -> Cluster {
        tools::apt_packages(&["slurm-wlm", "munge"]);
        let dir = tools::target_dir().join("slurm");
        fs::create_dir_all(&dir).expect("create target/slurm");
        let lock = File::create(tools::target_dir().join("slurm.lock")).expect("slurm.lock");
        let deadline = Instant::now() + LOCK_LIMIT;
        while let Err(e) = lock.try_lock() {
            assert!(
                Instant::now() < deadline,
                "target/slurm.lock still held by another run after {LOCK_LIMIT:?}: {e}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        stop_stale_daemons(&dir);
        fs::remove_dir_all(&dir).expect("remove the last run's target/slurm");
        for sub in ["munge", "state", "spool", "log", "jobs"] {
            fs::create_dir_all(dir.join(sub)).expect("create a Slurm folder");
        }
        // munged wants its key private, and its socket's folder open to all but not writable
        // by others.
        let munge = dir.join("munge");
        fs::set_permissions(&munge, fs::Permissions::from_mode(0o755)).expect("chmod munge");
        let mut key = vec![0u8; 1024];
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .expect("read /dev/urandom");
        fs::write(munge.join("munge.key"), &key).expect("write the munge key");
        fs::set_permissions(munge.join("munge.key"), fs::Permissions::from_mode(0o600))
            .expect("chmod the munge key");
        let socket = munge.join("munge.socket");
        assert!(
            socket.as_os_str().len() < 100,
            "the munge socket path {} is too long for a Unix socket",
            socket.display()
        );

        let conf = dir.join("slurm.conf");
        fs::write(&conf, slurm_conf(&dir, &socket)).expect("write slurm.conf");
        let mut cluster = Cluster {
            dir: dir.clone(),
            conf,
            daemons: Vec::new(),
            _lock: lock,
        };
        let started = Instant::now();
        cluster.daemon(
            "munged",
            Command::new(sbin("munged"))
                .arg("--foreground")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", munge.join("munge.key").display()))
                .arg(format!("--log-file={}", munge.join("munged.log").display()))
                .arg(format!("--pid-file={}", munge.join("munged.pid").display()))
                .arg(format!(
                    "--seed-file={}",
                    munge.join("munged.seed").display()
                )),
        );
        cluster.wait_for("munged's socket", |_| socket.exists());
        cluster.daemon("slurmctld", Command::new(sbin("slurmctld")).arg("-D"));
        cluster.wait_for("slurmctld to answer", |cluster| {
            cluster.slurm(&["scontrol", "ping"]).contains("is UP")
        });
        cluster.daemon(
            "slurmd",
            Command::new(sbin("slurmd")).args(["-D", "-N", "localhost"]),
        );
        cluster.wait_for("the node to be idle", |cluster| {
            cluster.slurm(&["sinfo", "-h", "-o", "%T"]).trim() == "idle"
        });
        eprintln!(
            "slurm: munged, slurmctld and slurmd up in {:.1} s ({})",
            started.elapsed().as_secs_f64(),
            cluster
                .slurm(&["sinfo", "-h", "-o", "%N %c CPUs %T"])
                .trim()
        );
        cluster
    }

    /// Starts `command` as daemon `name`, its output in `log/<name>.out`.
    fn daemon(&mut self, name: &'static str, command: &mut Command) {
        use std::os::unix::process::CommandExt;
        let out = File::create(self.dir.join("log").join(format!("{name}.out"))).expect("log");
        let child = command
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Waits (bounded) until `ready`; panics with the daemons' logs if it never is, or if a
    /// daemon has exited.
    fn wait_for(&mut self, what: &str, ready: impl Fn(&Cluster) -> bool) {
        let deadline = Instant::now() + START_LIMIT;
        while !ready(self) {
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| Some((*name, child.try_wait().ok()??)));
            if let Some((name, status)) = exited {
                panic!(
                    "{name} exited ({status}) waiting for {what}\n{}",
                    self.logs()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {what} after {START_LIMIT:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The daemons' logs, for a failure message.
    fn logs(&self) -> String {
        let mut text = String::new();
        for name in ["munged.out", "slurmctld.out", "slurmd.out"] {
            let log = fs::read_to_string(self.dir.join("log").join(name)).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            text += &format!("--- {name} (last lines) ---\n");
            for line in tail.iter().rev() {
                text += line;
                text.push('\n');
            }
        }
        text
    }

    /// A Slurm command against this cluster, with the environment of the test minus any
    /// Slurm variables of its own (a test run inside a Slurm job must not leak them) and
    /// `QUEENS_ARRAY_SIZE`, which `submit.sh` reads to cut the arrays.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if ["SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SQUEUE_", "SINFO_"]
                .iter()
                .any(|p| name_text.starts_with(p))
            {
                command.env_remove(&name);
            }
        }
        command.env_remove("QUEENS_ARRAY_SIZE");
        command
            .env("SLURM_CONF", &self.conf)
            .env("QUEENS_SLURM_TEST_DIR", &self.dir)
            .current_dir(&self.dir);
        command
    }

    /// Runs a Slurm client command (bounded); its stdout, or "" if it failed.
    fn slurm(&self, args: &[&str]) -> String {
        let run = tools::run_bounded(self.command(args[0]).args(&args[1..]), COMMAND_LIMIT);
        if run.success() {
            run.stdout
        } else {
            String::new()
        }
    }

    /// Runs a Slurm client command (bounded); panics unless it succeeds.
    fn must(&self, args: &[&str]) -> String {
        let run = tools::run_bounded(self.command(args[0]).args(&args[1..]), COMMAND_LIMIT);
        assert!(
            run.success(),
            "{args:?} failed\n{}\n{}",
            run.output(),
            self.logs()
        );
        run.stdout
    }

    /// Submits `deploy/slurm/submit.sh N SHARDS <jobs>/<name> <options>` with `queens` as
    /// `$QUEENS` and the variables `env` set; returns the output folder, the ids of the
    /// count arrays (in the order printed, `count array: ID,ID,...`) and that of the sum job.
    fn submit(
        &self,
        name: &str,
        queens: &Path,
        env: &[(&str, &str)],
        options: &[&str],
    ) -> (PathBuf, Vec<String>, String) {
        let out = self.dir.join("jobs").join(name);
        let script = tools::repo().join("deploy/slurm/submit.sh");
        let run = tools::run_bounded(
            self.command(&script)
                .arg(N.to_string())
                .arg(SHARDS.to_string())
                .arg(&out)
                .args(options)
                .env("QUEENS", queens)
                .envs(env.iter().copied()),
            COMMAND_LIMIT,
        );
        assert!(run.success(), "submit.sh failed\n{}", run.output());
        let id = |label: &str| -> String {
            run.stdout
                .lines()
                .find_map(|l| l.strip_prefix(label))
                .unwrap_or_else(|| panic!("no {label:?} in submit.sh's output\n{}", run.stdout))
                .trim()
                .to_string()
        };
        let arrays: Vec<String> = id("count array:")
            .split(',')
            .map(|a| a.trim().to_string())
            .collect();
        let sum = id("sum:");
        for job in arrays.iter().chain([&sum]) {
            assert!(
                !job.is_empty() && job.bytes().all(|b| b.is_ascii_digit()),
                "not a job id: {job:?} in submit.sh's output\n{}",
                run.stdout
            );
        }
        (out, arrays, sum)
    }

    /// Waits (bounded) until none of `jobs` is pending or running.
    fn wait_until_done(&self, jobs: &[&str]) {
        let list = jobs.join(",");
        let deadline = Instant::now() + JOB_LIMIT;
        loop {
            let run = tools::run_bounded(
                self.command("squeue")
                    .args(["-h", "-o", "%i %T %r", "-j", &list]),
                COMMAND_LIMIT,
            );
            assert!(run.success(), "squeue failed\n{}", run.output());
            if run.stdout.trim().is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "jobs {list} not done after {JOB_LIMIT:?}:\n{}\n{}",
                run.stdout,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The `JobState=` of every record `scontrol show job <id>` prints (one per array task).
    fn states(&self, id: &str) -> Vec<String> {
        self.must(&["scontrol", "-o", "show", "job", id])
            .lines()
            .map(|record| field(record, "JobState").to_string())
            .collect()
    }

    /// The state of one job (or array task, `ID_TASK`) that squeue still shows.
    fn squeue_state(&self, id: &str) -> String {
        self.slurm(&["squeue", "-h", "-o", "%T", "-j", id])
            .trim()
            .to_string()
    }
}

impl Drop for Cluster {
    /// Cancels the jobs, then stops the daemons and kills what is left of the jobs.
    fn drop(&mut self) {
        // Jobs first (a held task sleeps), through slurmctld if it runs (clients wait for a
        // controller that does not answer), then the daemons, newest first.
        let controller = self
            .daemons
            .iter_mut()
            .any(|(name, child)| *name == "slurmctld" && matches!(child.try_wait(), Ok(None)));
        if controller {
            let _ = tools::run_bounded(self.command("scancel").args(["-u", "root"]), COMMAND_LIMIT);
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline && !self.slurm(&["squeue", "-h"]).trim().is_empty() {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        while let Some((_, mut child)) = self.daemons.pop() {
            stop(&mut child);
        }
        kill_job_processes(&self.dir);
    }
}

/// A daemon's path: Debian puts them in /usr/sbin, which a non-login PATH may lack.
fn sbin(name: &str) -> PathBuf {
    let path = Path::new("/usr/sbin").join(name);
    if path.exists() {
        path
    } else {
        PathBuf::from(name)
    }
}

/// Sends `signal` to `pid` (a negative pid: that process group); a process already gone is
/// not an error here.
fn send_signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) takes two integers and reads or writes no memory of ours; every caller
    // names a process (or group) this test started, or a leftover of an earlier run of it.
    unsafe { libc::kill(pid, signal) };
}

/// The sum job's `total.txt` in `out` on one line (its lines joined by commas).
fn totals(out: &Path) -> String {
    fs::read_to_string(out.join("total.txt"))
        .expect("total.txt")
        .trim_end()
        .replace('\n', ", ")
}

/// Asks `child` (and its process group) to stop with SIGTERM; SIGKILL after 10 s.
fn stop(child: &mut Child) {
    let group = -(child.id() as i32);
    // A process group we started.
    send_signal(group, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Whatever is left of the group goes.
    send_signal(group, libc::SIGKILL);
    let _ = child.wait();
}

/// Kills what an earlier run of this test left running when it could not clean up (killed
/// itself): the daemons named by its pid files, and its jobs' processes.
fn stop_stale_daemons(dir: &Path) {
    for (pid_file, name) in [
        ("slurmd.pid", "slurmd"),
        ("slurmctld.pid", "slurmctld"),
        ("munge/munged.pid", "munged"),
    ] {
        let Ok(text) = fs::read_to_string(dir.join(pid_file)) else {
            continue;
        };
        let Ok(pid) = text.trim().parse::<i32>() else {
            continue;
        };
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == name {
            eprintln!("slurm: stopping {name} (pid {pid}) left by an earlier run");
            // A daemon our own earlier run started (its name checked).
            send_signal(pid, libc::SIGKILL);
        }
    }
    kill_job_processes(dir);
}

/// Kills the processes of this cluster's jobs still alive: the jobs' own (they carry
/// `QUEENS_SLURM_TEST_DIR=<dir>` in their environment, from sbatch) and their slurmstepd
/// (it holds the slurmd log under `dir` open).
fn kill_job_processes(dir: &Path) {
    let marker = format!("QUEENS_SLURM_TEST_DIR={}", dir.display());
    let me = std::process::id() as i32;
    let Ok(entries) = fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc = entry.path();
        let ours = fs::read(proc.join("environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
            || fs::read_to_string(proc.join("comm")).is_ok_and(|c| c.trim() == "slurmstepd")
                && fs::read_dir(proc.join("fd")).is_ok_and(|fds| {
                    fds.flatten()
                        .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t.starts_with(dir)))
                });
        if ours {
            // A process of one of our own test jobs.
            send_signal(pid, libc::SIGKILL);
        }
    }
}

/// The value of `name=` in a one-line `scontrol -o` record.
fn field<'a>(record: &'a str, name: &str) -> &'a str {
    record
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or("")
}

/// The cluster's configuration: one node, `localhost`, with this machine's CPUs; root runs
/// everything; no systemd, cgroups or accounting; scheduling without the batch delays, so a
/// 16-task array on 2 CPUs takes seconds.
fn slurm_conf(dir: &Path, munge_socket: &Path) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let d = dir.display();
    format!(
        "# Written by tests/system/deploy_slurm.rs for one test run.
ClusterName=queens-test
SlurmctldHost=localhost
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
ReturnToService=2
KillWait=5
NodeName=localhost CPUs={cpus} State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
",
        ctld = free_port(),
        slurmd = free_port(),
        socket = munge_socket.display(),
    )
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
