//! The Slurm test's own one-node cluster: Debian's `slurm-wlm` and `munge` (installed if
//! missing), munged, slurmctld and slurmd started from a configuration under
//! `<target>/slurm` (no systemd, no cgroups), the commands run against it (each bounded in
//! time), a run of `deploy/slurm/submit.sh`, and everything stopped when the [`Cluster`] is
//! dropped, jobs first, also what an earlier run left when it could not clean up.
//!
//! Not here: what the runs submit and check (`deploy_slurm.rs`).

use crate::common::free_port;
use crate::tools;

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Board size and number of shards of every count submitted (`submit.sh N SHARDS`).
pub(super) const N: u32 = 16;
pub(super) const SHARDS: u32 = 16;

/// Longest the daemons may take to come up, and the jobs to finish.
pub(super) const START_LIMIT: Duration = Duration::from_secs(60);
pub(super) const JOB_LIMIT: Duration = Duration::from_secs(180);

/// Longest this test waits for another run of it (another `cargo test`) to finish.
pub(super) const LOCK_LIMIT: Duration = Duration::from_secs(600);

/// How long a Slurm command may take.
pub(super) const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// A one-node Slurm cluster of this test's own; stopped when dropped, jobs first.
pub(super) struct Cluster {
    /// Where its configuration, state, logs and the jobs' outputs are.
    pub(super) dir: PathBuf,
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
    pub(super) fn start() -> Cluster {
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
                // munged refuses files under a folder owned by another user, as the checkout
                // is when CI runs the system tests as root in its ordinary user's copy;
                // `--force` makes that a warning (a throwaway cluster on loopback).
                .arg("--force")
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
    pub(super) fn logs(&self) -> String {
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
    pub(super) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
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
    pub(super) fn slurm(&self, args: &[&str]) -> String {
        let run = tools::run_bounded(self.command(args[0]).args(&args[1..]), COMMAND_LIMIT);
        if run.success() {
            run.stdout
        } else {
            String::new()
        }
    }

    /// Runs a Slurm client command (bounded); panics unless it succeeds.
    pub(super) fn must(&self, args: &[&str]) -> String {
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
    pub(super) fn submit(
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
    pub(super) fn wait_until_done(&self, jobs: &[&str]) {
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
    pub(super) fn states(&self, id: &str) -> Vec<String> {
        self.must(&["scontrol", "-o", "show", "job", id])
            .lines()
            .map(|record| field(record, "JobState").to_string())
            .collect()
    }

    /// The state of one job (or array task, `ID_TASK`) that squeue still shows.
    pub(super) fn squeue_state(&self, id: &str) -> String {
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
pub(super) fn field<'a>(record: &'a str, name: &str) -> &'a str {
    record
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or("")
}

/// The cluster's configuration, `one-node.conf` filled in (shared with the rehearsal script):
/// one node, `localhost`, with this machine's CPUs; root runs everything; no systemd, cgroups
/// or accounting; scheduling without the batch delays, so a 16-task array on 2 CPUs takes
/// seconds.
fn slurm_conf(dir: &Path, munge_socket: &Path) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Nine tenths of the machine's memory, in MiB, as the template says.
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(1, |kib| kib / 1024 * 9 / 10);
    let dir = dir.display().to_string();
    [
        ("@CLUSTER@", "queens-test".to_string()),
        ("@CTLD_PORT@", free_port().to_string()),
        ("@SLURMD_PORT@", free_port().to_string()),
        ("@SOCKET@", munge_socket.display().to_string()),
        ("@DIR@", dir),
        ("@CPUS@", cpus.to_string()),
        ("@MEMORY@", memory.to_string()),
    ]
    .iter()
    .fold(
        include_str!("one-node.conf").to_string(),
        |conf, (name, value)| conf.replace(name, value),
    )
}
