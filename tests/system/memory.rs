//! The server as a good neighbour in a memory cgroup: started inside a memory cgroup of its
//! own (v2 `memory.max` or v1 `memory.limit_in_bytes`, whichever hierarchy holds the memory
//! controller here; no swap) with the Deployment's memory limit and the Deployment's args
//! (both read from `deploy/deployment.yaml`), it takes its budget from the cgroup, and answers
//! or refuses a Count of n = 24, two Counts of n = 23 at once and a shard of n = 24 as the
//! memory model predicts (`solver::count_memory`, `config::memory_reserve`); an Enumerate then
//! succeeds, and the kernel never killed it: the process is alive, the cgroup's `oom_kill`
//! counter is 0 and its peak usage is within the limit. The Deployment's 256 MiB refuses all
//! of those counts, so the same runs again under 1536 MiB, where n = 24 runs on one engine
//! until its deadline and the others meet MAX_MEMORY beside it. Each run prints its answers
//! and the cgroup's peak usage against the limit. The admission rule itself is unit-tested
//! (`service/budget.rs`); the manifests' other points are `deploy_manifests.rs`'s.

use crate::common::{self, A000170, ServerProcess};
use crate::deploy_manifests::{bytes, deployment_container, flag, local_serve_args};
use crate::fairness_deadlines::client_from;
use crate::limits::limit_details;
use crate::metrics::{sample, scrape_until};

use queens::config::{Bytes, memory_reserve};
use queens::pb::queens_client::QueensClient;
use queens::pb::{CountRequest, CountResponse};
use queens::solver::{Problem, Shard, count_memory};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

/// One MiB.
const MIB: u64 = 1 << 20;

/// The second run's limit: its budget (1536 less an eighth, 1344 MiB) holds Count n = 24 on
/// one engine (1198 MiB, two would take 1691) and leaves too little beside it for an n = 23
/// (280 MiB) or another engine of n = 24 (493 MiB).
const ROOMY_LIMIT: u64 = 1536 * MIB;

/// The deadline of every count: enough for n = 24 to build its tables (about 1 s) and search,
/// short enough to end the test (a count of n = 24 takes days).
const DEADLINE: Duration = Duration::from_secs(15);

/// How much longer than its deadline a call may take to be answered before the test fails.
const ANSWER_GRACE: Duration = Duration::from_secs(30);

/// The shard of n = 24 asked for: one of 16,384, which holds a key of the join, so it needs
/// the tables of n = 24 (shared with a whole count of n = 24 running beside it).
const SHARD_24: queens::pb::Shard = queens::pb::Shard {
    index: 1000,
    count: 16384,
};

/// Where the cgroup file systems are mounted.
const CGROUP_FS: &str = "/sys/fs/cgroup";

/// The Deployment's memory limit, in bytes.
fn deployment_limit() -> u64 {
    bytes(&deployment_container()["resources"]["limits"]["memory"])
}

/// Under the Deployment's own limit, every big count is refused as more than the whole
/// budget, an Enumerate is served, and the kernel never kills the server.
#[tokio::test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
async fn the_deployments_limit_refuses_big_counts_and_is_never_oom_killed() {
    run("deployment", deployment_limit()).await;
}

/// Under 1536 MiB, Count n = 24 runs on one engine until its deadline while the two n = 23
/// and the shard of n = 24 meet MAX_MEMORY, and the kernel never kills the server.
#[tokio::test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
async fn a_limit_of_1536_mib_runs_n_24_alone_and_is_never_oom_killed() {
    let expected = run("roomy", ROOMY_LIMIT).await;
    assert_eq!(
        expected,
        [Expect::Runs, Expect::Busy, Expect::Busy, Expect::Busy],
        "the model no longer admits n = 24 alone under {} MiB: pick another limit",
        ROOMY_LIMIT / MIB
    );
}

/// What the memory model says the server answers a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Admitted: it runs until it is answered or its deadline passes.
    Runs,
    /// RESOURCE_EXHAUSTED, `MAX_MEMORY`: running searches hold what it needs of the budget.
    Busy,
    /// RESOURCE_EXHAUSTED, `SEARCH_OVER_MAX_MEMORY`: it needs more than the whole budget.
    Over,
}

/// The budget as the server keeps it, replayed over the test's counts: what the counts
/// running now reserved, and the sizes whose tables they hold (shared with later counts).
struct Model {
    /// The server's whole budget (`--max-memory`, else the cgroup's limit less the reserve).
    budget: u64,
    /// Most engines a count runs (`--search-threads`).
    threads: usize,
    /// Bytes the running counts reserved.
    reserved: u64,
    /// Sizes whose tables running counts hold.
    tables: Vec<u32>,
}

impl Model {
    /// What the server answers `request`, and the bytes it needs on one engine; reserves
    /// them if it runs: its tables unless a running count holds them, its own lists, and as
    /// many engines (up to `threads`) as fit, at least one (`service/budget.rs`).
    fn admit(&mut self, request: &CountRequest) -> (Expect, u64) {
        let shard = request.shard.map_or(Shard::WHOLE, |s| Shard {
            index: s.index,
            count: s.count,
        });
        let problem = Problem::new(request.n, &[], false, shard).expect("a valid count");
        let memory = count_memory(&problem, 1);
        let tables = memory
            .tables
            .filter(|(n, _)| !self.tables.contains(n))
            .map_or(0, |(_, bytes)| bytes);
        let least = memory.fixed + tables;
        let one = least + memory.per_engine;
        let free = self.budget.saturating_sub(self.reserved);
        if one > self.budget {
            return (Expect::Over, one);
        }
        if one > free {
            return (Expect::Busy, one);
        }
        let engines = match memory.per_engine {
            0 => self.threads as u64,
            each => ((free - least) / each).clamp(1, self.threads as u64),
        };
        self.reserved += least + memory.per_engine * engines;
        self.tables.extend(memory.tables.map(|(n, _)| n));
        (Expect::Runs, one)
    }
}

/// Starts the server with the Deployment's args in a fresh memory cgroup of `limit` bytes,
/// asks the big counts and an Enumerate, checks every answer against the model and that the
/// kernel never killed the server, prints the answers and the peak usage, and cleans up.
/// Returns what the model expected of the counts, in the order asked.
async fn run(name: &str, limit: u64) -> Vec<Expect> {
    let started = Instant::now();
    let cgroup = MemoryCgroup::create(name, limit);
    let metrics_port = common::free_port();
    let (server, mut model) = start_in(&cgroup, limit, metrics_port).await;
    let label = format!(
        "{name}: cgroup {:?}, limit {} MiB, budget {} MiB",
        cgroup.hierarchy,
        limit / MIB,
        model.budget / MIB
    );
    let mut report = Vec::new();
    let expected = ask_big_counts(&server, metrics_port, &mut model, &label, &mut report).await;
    let boards = enumerate_10(&server).await;
    assert_eq!(boards, A000170[9], "{label}: Enumerate n = 10");
    report.push(format!("Enumerate n = 10: {boards} boards"));
    report.push(never_killed(&cgroup, &server, &label));
    eprintln!(
        "{label}, {:.1} s:\n  {}",
        started.elapsed().as_secs_f64(),
        report.join("\n  ")
    );
    drop(server); // killed and reaped before the cgroup goes
    drop(cgroup);
    expected
}

/// Starts `queens serve` with the Deployment's args (addresses on loopback, metrics on
/// `metrics_port`) inside `cgroup`, from its first instruction on, and checks that it took
/// its budget from the cgroup's `limit`; returns it and the model of its budget.
async fn start_in(cgroup: &MemoryCgroup, limit: u64, metrics_port: u16) -> (ServerProcess, Model) {
    let args = local_serve_args(metrics_port);
    let threads: usize = flag(&args, "--search-threads")
        .expect("the Deployment passes --search-threads")
        .parse()
        .expect("a number of threads");
    let budget = flag(&args, "--max-memory").map_or(limit - memory_reserve(limit), |b| {
        b.parse::<Bytes>().expect("--max-memory's bytes").0
    });
    // The shell joins the cgroup, then becomes the server.
    let mut command = Command::new("sh");
    command
        .args(["-c", r#"echo $$ > "$0" && exec "$@""#])
        .arg(cgroup.dir.join("cgroup.procs"))
        .arg(common::queens_bin());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = ServerProcess::start_with(command, &args);
    // The metrics endpoint opens just after the listening line.
    server.next_log(&format!(
        "metrics at http://127.0.0.1:{metrics_port}/metrics"
    ));
    let scrape = scrape_until(metrics_port, |t| {
        sample(t, "queens_memory_limit_bytes ").is_some()
    })
    .await;
    assert_eq!(
        sample(&scrape, "queens_memory_limit_bytes "),
        Some(budget as f64),
        "the server's budget is not the cgroup's limit of {limit} less the reserve"
    );
    let model = Model {
        budget,
        threads,
        reserved: 0,
        tables: Vec::new(),
    };
    (server, model)
}

/// Asks Count n = 24 and, while it runs (if it does), two Counts of n = 23 at once and a
/// shard of n = 24, each from a client of its own (one client may hold only part of the
/// search slots); checks each answer against `model` and adds it to `report`. Returns what
/// the model expected, in the order asked.
async fn ask_big_counts(
    server: &ServerProcess,
    metrics_port: u16,
    model: &mut Model,
    label: &str,
    report: &mut Vec<String>,
) -> Vec<Expect> {
    let mut check = |what: &str, (expect, need): (Expect, u64), answer: &Answer| {
        report.push(format!(
            "{what} (needs {} MiB on one engine): expected {expect:?}, answered {}",
            need.div_ceil(MIB),
            describe(answer)
        ));
        check_answer(&format!("{label}, {what}"), expect, answer);
    };
    let count = |n, shard| CountRequest {
        n,
        shard,
        ..Default::default()
    };

    let expect_24 = model.admit(&count(24, None));
    let client = client_from(&server.url(), "127.0.0.2").await;
    let big = tokio::spawn(ask(client, count(24, None)));
    if expect_24.0 == Expect::Runs {
        let reserved = model.reserved as f64;
        let scrape = scrape_until(metrics_port, |t| {
            sample(t, "queens_memory_reserved_bytes ") == Some(reserved)
        })
        .await;
        assert_eq!(
            sample(&scrape, "queens_memory_reserved_bytes "),
            Some(reserved),
            "{label}: bytes reserved for Count n = 24"
        );
    }

    let expect_23 = [model.admit(&count(23, None)), model.admit(&count(23, None))];
    assert!(
        expect_23.iter().all(|(e, _)| *e != Expect::Runs),
        "{label}: an n = 23 would run beside n = 24 and contend for its slots: pick another limit"
    );
    let pair = tokio::join!(
        ask(
            client_from(&server.url(), "127.0.0.3").await,
            count(23, None)
        ),
        ask(
            client_from(&server.url(), "127.0.0.4").await,
            count(23, None)
        ),
    );
    // While one of the two holds the last free search slot to reserve its memory (a moment),
    // the other can find the slots all taken; one of them at least reaches the budget.
    let slots_taken = |answer: &Answer| {
        matches!(answer, Err(s) if s.code() == Code::ResourceExhausted
            && limit_details(s).0 == "MAX_SEARCHES")
    };
    assert!(
        !(slots_taken(&pair.0) && slots_taken(&pair.1)),
        "{label}: both n = 23 found the slots taken: {pair:?}"
    );
    for (what, expect, answer) in [
        ("Count n = 23 (first)", expect_23[0], &pair.0),
        ("Count n = 23 (second)", expect_23[1], &pair.1),
    ] {
        if expect.0 == Expect::Busy && slots_taken(answer) {
            eprintln!("{label}, {what}: found the slots taken while the other reserved");
        } else {
            check(what, expect, answer);
        }
    }

    let expect_shard = model.admit(&count(24, Some(SHARD_24)));
    let client = client_from(&server.url(), "127.0.0.5").await;
    let shard = ask(client, count(24, Some(SHARD_24))).await;
    check("Count n = 24, shard 1000/16384", expect_shard, &shard);

    let big = big.await.expect("the n = 24 call's task");
    check("Count n = 24", expect_24, &big);
    [expect_24, expect_23[0], expect_23[1], expect_shard]
        .map(|(expect, _)| expect)
        .to_vec()
}

/// Checks that the kernel never killed the server in `cgroup`: it is alive, the cgroup's
/// OOM kills are 0 and its peak usage (where the kernel keeps it) within its limit. Returns
/// a line saying so, with the peak against the limit.
fn never_killed(cgroup: &MemoryCgroup, server: &ServerProcess, label: &str) -> String {
    assert!(alive(server.pid()), "{label}: the server died");
    let oom_kills = cgroup.oom_kills();
    assert_eq!(oom_kills, 0, "{label}: the kernel's OOM killer struck");
    let peak = cgroup.peak();
    if let Some(peak) = peak {
        assert!(
            peak <= cgroup.limit,
            "{label}: peak usage {peak} over the limit"
        );
    }
    format!(
        "server alive; OOM kills {oom_kills}; usage reached the limit {} times; peak usage {} \
         of {} MiB",
        cgroup.limit_hits(),
        peak.map_or("not kept by this kernel".to_string(), |p| format!(
            "{:.1} MiB",
            p as f64 / MIB as f64
        )),
        cgroup.limit / MIB,
    )
}

/// What a count call came to.
type Answer = Result<CountResponse, Status>;

/// Asks `request` on `client` with [`DEADLINE`]; panics if no answer comes within
/// [`ANSWER_GRACE`] after it.
async fn ask(mut client: QueensClient<Channel>, request: CountRequest) -> Answer {
    let n = request.n;
    let mut request = Request::new(request);
    request.set_timeout(DEADLINE);
    tokio::time::timeout(DEADLINE + ANSWER_GRACE, client.count(request))
        .await
        .unwrap_or_else(|_| panic!("Count n = {n} unanswered {ANSWER_GRACE:?} past its deadline"))
        .map(|r| r.into_inner())
}

/// An answer in a line: the count, or the status's code, reason and message.
fn describe(answer: &Answer) -> String {
    match answer {
        Ok(response) => format!("OK, {} solutions", response.solutions),
        Err(s) if s.code() == Code::ResourceExhausted => {
            format!("RESOURCE_EXHAUSTED {}: {}", limit_details(s).0, s.message())
        }
        Err(s) => format!("{:?}: {}", s.code(), s.message()),
    }
}

/// Panics, naming `what`, unless `answer` is what `expect` says: a count that runs is
/// answered or stopped at its deadline (DEADLINE_EXCEEDED from the server, or CANCELLED
/// "Timeout expired" if the client's own timer fired first); a refusal is RESOURCE_EXHAUSTED
/// with the reason and a message naming `--max-memory`.
fn check_answer(what: &str, expect: Expect, answer: &Answer) {
    let reason = match (expect, answer) {
        (Expect::Runs, Ok(_)) => return,
        (Expect::Runs, Err(s))
            if s.code() == Code::DeadlineExceeded
                || (s.code() == Code::Cancelled && s.message() == "Timeout expired") =>
        {
            return;
        }
        (Expect::Busy, _) => "MAX_MEMORY",
        (Expect::Over, _) => "SEARCH_OVER_MAX_MEMORY",
        (Expect::Runs, Err(s)) => panic!("{what}: admitted by the model, answered {s:?}"),
    };
    let status = match answer {
        Err(status) if status.code() == Code::ResourceExhausted => status,
        other => panic!("{what}: expected RESOURCE_EXHAUSTED {reason}, answered {other:?}"),
    };
    assert_eq!(limit_details(status).0, reason, "{what}: {status:?}");
    assert!(
        status.message().contains("--max-memory"),
        "{what}: the message names no --max-memory: {status:?}"
    );
}

/// Boards of an Enumerate of n = 10 on `server`, read to the end.
async fn enumerate_10(server: &ServerProcess) -> u64 {
    let mut client = client_from(&server.url(), "127.0.0.6").await;
    let mut request = Request::new(common::enumerate_request(10));
    request.set_timeout(DEADLINE);
    let read = async {
        let mut stream = client.enumerate(request).await?.into_inner();
        let mut boards = 0;
        while let Some(message) = stream.message().await? {
            boards += message.boards.len() as u64;
        }
        Ok::<u64, Status>(boards)
    };
    tokio::time::timeout(DEADLINE + ANSWER_GRACE, read)
        .await
        .expect("Enumerate n = 10 ended")
        .unwrap_or_else(|s| panic!("Enumerate n = 10: {s:?}"))
}

/// Whether process `pid` is still running (not gone, not a zombie waiting to be reaped).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat[stat.rfind(')').expect("comm") + 1..].trim_start();
        !state.starts_with(['Z', 'X'])
    })
}

/// Which cgroup hierarchy holds the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hierarchy {
    /// cgroup v1: a hierarchy of its own at `/sys/fs/cgroup/memory`.
    V1,
    /// cgroup v2: the unified hierarchy at `/sys/fs/cgroup` (most Kubernetes nodes).
    V2,
}

/// A memory cgroup made for one server at the top of the hierarchy, limited to a number of
/// bytes with no swap; removed when dropped (once the server has been killed).
struct MemoryCgroup {
    dir: PathBuf,
    hierarchy: Hierarchy,
    /// Its limit, in bytes.
    limit: u64,
}

impl MemoryCgroup {
    /// Makes `queens-memory-<name>-<pid>` with a limit of `limit` bytes under whichever
    /// hierarchy holds the memory controller; panics with one line saying what is missing.
    fn create(name: &str, limit: u64) -> MemoryCgroup {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(
            root,
            "this system test makes memory cgroups: run it as root"
        );
        let fs = Path::new(CGROUP_FS);
        let unified = std::fs::read_to_string(fs.join("cgroup.controllers")).unwrap_or_default();
        let (hierarchy, parent) = if unified.split_whitespace().any(|c| c == "memory") {
            let control = fs.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&control).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == "memory") {
                write(&control, "+memory");
            }
            (Hierarchy::V2, fs.to_path_buf())
        } else if fs.join("memory/memory.limit_in_bytes").exists() {
            (Hierarchy::V1, fs.join("memory"))
        } else {
            panic!(
                "no memory cgroup controller: neither {CGROUP_FS}/cgroup.controllers (v2) \
                 lists memory nor is {CGROUP_FS}/memory a v1 memory hierarchy"
            );
        };
        let dir = parent.join(format!("queens-memory-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let cgroup = MemoryCgroup {
            dir,
            hierarchy,
            limit,
        };
        // No swap, as on a Kubernetes node: over the limit the kernel reclaims, then kills.
        match hierarchy {
            Hierarchy::V1 => {
                cgroup.write("memory.limit_in_bytes", limit);
                if cgroup.dir.join("memory.memsw.limit_in_bytes").exists() {
                    cgroup.write("memory.memsw.limit_in_bytes", limit);
                }
            }
            Hierarchy::V2 => {
                cgroup.write("memory.max", limit);
                if cgroup.dir.join("memory.swap.max").exists() {
                    cgroup.write("memory.swap.max", 0);
                }
            }
        }
        cgroup
    }

    /// Writes `value` to the cgroup's `file`.
    fn write(&self, file: &str, value: u64) {
        write(&self.dir.join(file), &value.to_string());
    }

    /// The figure on the line `key N` of the cgroup's `file`.
    fn field(&self, file: &str, key: &str) -> u64 {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {}:\n{text}", path.display()))
    }

    /// How many processes of the cgroup the kernel's OOM killer has killed.
    fn oom_kills(&self) -> u64 {
        match self.hierarchy {
            Hierarchy::V1 => self.field("memory.oom_control", "oom_kill"),
            Hierarchy::V2 => self.field("memory.events", "oom_kill"),
        }
    }

    /// How many times the cgroup's usage reached its limit (and the kernel reclaimed).
    fn limit_hits(&self) -> u64 {
        match self.hierarchy {
            Hierarchy::V1 => self.figure("memory.failcnt").expect("memory.failcnt"),
            Hierarchy::V2 => self.field("memory.events", "max"),
        }
    }

    /// The cgroup's highest usage in bytes, where the kernel keeps it (v1
    /// `memory.max_usage_in_bytes`; v2 `memory.peak`, from Linux 5.19).
    fn peak(&self) -> Option<u64> {
        self.figure(match self.hierarchy {
            Hierarchy::V1 => "memory.max_usage_in_bytes",
            Hierarchy::V2 => "memory.peak",
        })
    }

    /// The one number the cgroup's `file` holds, if it exists.
    fn figure(&self, file: &str) -> Option<u64> {
        let text = std::fs::read_to_string(self.dir.join(file)).ok()?;
        Some(text.trim().parse().expect("a number"))
    }
}

impl Drop for MemoryCgroup {
    /// Removes the folder, retrying for a few seconds while the killed server's exit ends.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Err(e) = std::fs::remove_dir(&self.dir) {
            if Instant::now() > deadline {
                eprintln!("left behind: cgroup {} ({e})", self.dir.display());
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Writes `text` to the cgroup file `path`, panicking with the error.
fn write(path: &Path, text: &str) {
    std::fs::write(path, text)
        .unwrap_or_else(|e| panic!("write {text} to {}: {e}", path.display()));
}
