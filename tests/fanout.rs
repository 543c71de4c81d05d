//! Work spread over replicas and orchestrators: `count --endpoints` over three servers with
//! one killed (SIGKILL) mid-run, with one stopped (SIGSTOP) mid-run, and with a listening
//! socket nobody reads; a shard whose replica is killed while counting it finished on
//! another, and a shard that two replicas in turn die holding failing the run without
//! reaching a third; a refusal carrying RetryInfo waited out (against a Queens server in this
//! process that refuses once); `enumerate --endpoints --out DIR` resuming after a killed
//! server and a killed client, past a stopped server, and after 20 SIGKILLs of the client at
//! seeded moments; and local shard counts as an Indexed Job runs them, summed.

use crate::common;

use common::{A000170, A002562, InProcess, ServerProcess, queens_cli};
use queens::pb::server::queens_server::{Queens, QueensServer};
use queens::pb::{CountRequest, CountResponse, CountUpdate, EnumerateRequest};
use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// OEIS A000170 and A002562 at n = 18 (the shared tables stop at 17).
const SOLUTIONS_18: u64 = 666_090_624;
/// See [`SOLUTIONS_18`].
const FUNDAMENTAL_18: u64 = 83_263_591;

/// A generous bound on a run past a hung endpoint, only to catch a hang (the documented
/// bound is 10 s to notice it, plus redoing its shards).
const HUNG_RUN_LIMIT: Duration = Duration::from_secs(90);

/// Sends `signal` to process `pid`.
fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) takes plain integers; the pid is a child this test started and has not
    // reaped (its ServerProcess is alive), so it names no other process.
    let sent = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(sent, 0, "kill({pid}, {signal})");
}

/// Waits for `child` for at most `limit`; kills it and panics past that.
pub(crate) fn finish_within(
    mut child: std::process::Child,
    limit: Duration,
) -> (bool, String, String) {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let (_, out, err) = finish(child);
            panic!("still running after {limit:?}: {out}{err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    finish(child)
}

/// Whether a fan-out's stderr shows `url` never holding a shard: none finished, no call
/// failed, nothing given up. Workers take shards in the order the (sorted) endpoints were
/// started, so a hung endpoint started after the others can find every shard taken, and then
/// the run has nothing to give up; a test of giving up runs again.
fn never_held_a_shard(err: &str, url: &str) -> bool {
    err.contains(&format!("{url}: 0 shards, 0 solutions, 0 failed calls"))
        && !err.contains(&format!("gave up on {url}"))
}

/// Runs `scenario` (which returns the hung endpoint's URL and the run's stderr) until the
/// hung endpoint held a shard, at most 3 times; returns that run's stderr.
fn until_it_held_a_shard(mut scenario: impl FnMut() -> (String, String)) -> (String, String) {
    for _ in 0..3 {
        let (url, err) = scenario();
        if !never_held_a_shard(&err, &url) {
            return (url, err);
        }
        println!("{url} took no shard; running again:\n{err}");
    }
    panic!("the hung endpoint took no shard in 3 runs");
}

/// Asserts that a fan-out count, as [`finish`] returns it, ended well with exactly
/// `solutions` and `fundamental`.
fn assert_total((ok, out, err): &(bool, String, String), solutions: u64, fundamental: u64) {
    assert!(ok, "{out}{err}");
    assert_eq!(
        *out,
        format!("solutions: {solutions}\nfundamental: {fundamental}\n"),
        "{err}"
    );
}

/// The next of a fixed, reproducible sequence (xorshift32), for seeded kill moments.
pub(crate) fn xorshift(seed: &mut u32) -> u32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 17;
    *seed ^= *seed << 5;
    *seed
}

/// SIGKILLs `child` after `delay`, and reaps it.
pub(crate) fn kill_after(mut child: std::process::Child, delay: Duration) {
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

/// Starts the `queens` binary with `args`, output captured.
pub(crate) fn spawn(args: &[&str]) -> std::process::Child {
    common::spawn_captured(env!("CARGO_BIN_EXE_queens"), args)
}

/// Starts `queens count N --endpoints ... --shards SHARDS`.
fn count_over(n: u32, endpoints: &[String], shards: u32) -> std::process::Child {
    spawn(&[
        "count",
        &n.to_string(),
        "--endpoints",
        &endpoints.join(","),
        "--shards",
        &shards.to_string(),
    ])
}

fn finish(child: std::process::Child) -> (bool, String, String) {
    let out = child.wait_with_output().expect("wait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Which of `servers` (those not in `killed`) is running a search: the first whose CPU time
/// grows by 20 clock ticks (0.2 s of CPU) from now, more than an idle server spends on its
/// health checks in minutes. Panics after 60 s.
fn the_one_counting(servers: &[ServerProcess], killed: &[usize]) -> usize {
    let before: Vec<u64> = servers.iter().map(|s| common::cpu_ticks(s.pid())).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let busy = (0..servers.len()).find(|i| {
            !killed.contains(i) && common::cpu_ticks(servers[*i].pid()) >= before[*i] + 20
        });
        if let Some(busy) = busy {
            return busy;
        }
        assert!(
            Instant::now() < deadline,
            "no server began counting within 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `count 18 --shards 1` over three servers: the one server counting the only shard is
/// SIGKILLed while it counts, and the shard, lost with it, is counted again by another: the
/// total is exact, and the killed one finished nothing.
#[test]
fn a_shard_whose_replica_is_killed_while_counting_it_is_counted_by_another() {
    let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&[])).collect();
    let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let client = count_over(18, &endpoints, 1);
    let holder = the_one_counting(&servers, &[]);
    signal(servers[holder].pid(), libc::SIGKILL);
    let run = finish_within(client, HUNG_RUN_LIMIT);
    drop(servers);
    assert_total(&run, SOLUTIONS_18, FUNDAMENTAL_18);
    let err = run.2;
    assert!(
        err.contains(&format!(
            "{}: 0 shards, 0 solutions, 1 failed calls",
            endpoints[holder]
        )),
        "{err}"
    );
    println!("{err}");
}

/// `count 19 --shards 1` over three servers: the server counting the only shard is SIGKILLed
/// while it counts, and so is the one that counts it next, as if the shard brought each down
/// (the kernel's OOM killer). The run fails at once naming the shard and both servers, and the
/// third, still alive, was never given the shard: no call of n = 19 in its log before a Count
/// of n = 8 made afterwards.
#[test]
fn a_shard_lost_with_two_replicas_fails_the_run_before_a_third() {
    let servers: Vec<ServerProcess> = (0..3)
        .map(|_| ServerProcess::start(&["--log-format", "json"]))
        .collect();
    let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let client = count_over(19, &endpoints, 1);
    let first = the_one_counting(&servers, &[]);
    signal(servers[first].pid(), libc::SIGKILL);
    let second = the_one_counting(&servers, &[first]);
    signal(servers[second].pid(), libc::SIGKILL);
    let (ok, out, err) = finish_within(client, HUNG_RUN_LIMIT);
    println!("{err}");
    assert!(!ok, "{out}{err}");
    let lost = format!(
        "shard 0 was lost twice: its server went away while running it on {}, then on {}",
        endpoints[first], endpoints[second]
    );
    assert!(err.contains(&lost), "{err}");
    let third = (0..3).find(|i| ![first, second].contains(i)).unwrap();
    let (code, out, err) = queens_cli(&["count", "8", "--addr", &endpoints[third]]);
    assert_eq!(
        (code, out.as_str()),
        (0, "solutions: 92\nfundamental: 12\n"),
        "{err}"
    );
    loop {
        let call = servers[third].next_log("call");
        assert_ne!(
            call["n"], 19,
            "the third server was given the shard: {call}"
        );
        if call["n"] == 8 {
            break;
        }
    }
}

/// A Queens server that refuses the first Count it is asked with RESOURCE_EXHAUSTED carrying
/// a RetryInfo of `delay` (as a server short of memory for the search would), and passes every
/// other Count on to a real server; it notes when each Count arrived, and its shard.
#[derive(Clone)]
struct RefusesFirst {
    real: queens::client::Client,
    delay: Duration,
    arrivals: Arc<Mutex<Vec<(u32, Instant)>>>,
}

#[tonic::async_trait]
impl Queens for RefusesFirst {
    type EnumerateStream = tokio_stream::Empty<Result<queens::stream::EncodedBatch, Status>>;
    type CountProgressStream = tokio_stream::Empty<Result<CountUpdate, Status>>;

    async fn enumerate(
        &self,
        _: Request<EnumerateRequest>,
    ) -> Result<Response<Self::EnumerateStream>, Status> {
        Err(Status::unimplemented("Count only"))
    }

    async fn count(
        &self,
        request: Request<CountRequest>,
    ) -> Result<Response<CountResponse>, Status> {
        let shard = request.get_ref().shard.map_or(0, |s| s.index);
        let first = {
            let mut arrivals = self.arrivals.lock().unwrap();
            arrivals.push((shard, Instant::now()));
            arrivals.len() == 1
        };
        if first {
            let wait = ErrorDetails::with_retry_info(Some(self.delay));
            return Err(Status::with_error_details(
                tonic::Code::ResourceExhausted,
                "not enough free memory for this search; retry later",
                wait,
            ));
        }
        self.real.clone().count(request.into_inner()).await
    }

    async fn count_progress(
        &self,
        _: Request<CountRequest>,
    ) -> Result<Response<Self::CountProgressStream>, Status> {
        Err(Status::unimplemented("Count only"))
    }
}

/// A fan-out whose call is refused with RetryInfo 1.5 s tries that shard again no sooner
/// than 1.5 s after the refusal (the fixed backoff is 0.2 s), and ends with the exact total.
#[tokio::test]
async fn a_refusal_with_retry_info_is_waited_out() {
    const DELAY: Duration = Duration::from_millis(1500);
    let real = InProcess::start().await;
    let refuses = RefusesFirst {
        real: queens::client::connect(&real.url()).await.expect("connect"),
        delay: DELAY,
        arrivals: Arc::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tonic::transport::Server::builder()
        .add_service(QueensServer::new(refuses.clone()))
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            async {
                let _ = stopped.await;
            },
        );
    let server = tokio::spawn(server);
    let job = queens::fanout::FanoutJob::new(
        12,
        Vec::new(),
        false,
        Some(4),
        1,
        queens::fanout::MAX_ATTEMPTS,
        queens::client::Access::default(),
    );
    let total = tokio::time::timeout(
        Duration::from_secs(60),
        queens::fanout::count(&job, &[url], None),
    )
    .await
    .expect("the count ends within 60 s")
    .expect("the count");
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    assert_eq!(
        (total.solutions, total.fundamental),
        (A000170[11], Some(A002562[11]))
    );
    let arrivals = refuses.arrivals.lock().unwrap().clone();
    let (shard, refused) = arrivals[0];
    let (_, again) = arrivals[1..]
        .iter()
        .find(|(s, _)| *s == shard)
        .expect("the refused shard asked again");
    assert!(
        again.duration_since(refused) >= DELAY,
        "shard {shard} asked again {:?} after a refusal asking for {DELAY:?}",
        again.duration_since(refused)
    );
}

/// Asserts that a count's stderr `err` names `url` as the endpoint it gave up on.
fn assert_gave_up_on(err: &str, url: &str) {
    assert!(
        err.contains(&format!("gave up on {url}: no answer")),
        "{err}"
    );
}

/// Three servers and a client counting `n` over them in `shards` shards, `head_start` after
/// the client started.
fn three_servers_counting(
    n: u32,
    shards: u32,
    head_start: Duration,
) -> (Vec<ServerProcess>, std::process::Child) {
    let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&[])).collect();
    let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let client = count_over(n, &endpoints, shards);
    std::thread::sleep(head_start);
    (servers, client)
}

/// n = 16's shards are counted by joining halves, so they carry turn_fixed, not fundamental:
/// the total's classes are exact only through them.
#[test]
fn a_count_survives_losing_a_server() {
    let (mut servers, client) = three_servers_counting(16, 32, Duration::from_millis(300));
    drop(servers.remove(0)); // SIGKILL, mid-run
    let run = finish(client);
    assert_total(&run, A000170[15], A002562[15]);
    println!("{}", run.2);
}

/// One of three servers stopped (SIGSTOP) mid-run: its TCP connections stay open and nothing
/// answers on them. The count still ends with the exact total, and names the server it gave
/// up on.
#[test]
fn a_count_finishes_past_a_stopped_server() {
    let (servers, client) = three_servers_counting(18, 48, Duration::from_millis(800));
    let stopped_url = servers[1].url();
    signal(servers[1].pid(), libc::SIGSTOP);
    let stopped = Instant::now();
    let run = finish_within(client, HUNG_RUN_LIMIT);
    let took = stopped.elapsed();
    signal(servers[1].pid(), libc::SIGCONT);
    drop(servers);
    assert_total(&run, SOLUTIONS_18, FUNDAMENTAL_18);
    let err = run.2;
    assert_gave_up_on(&err, &stopped_url);
    println!("SIGSTOP to the end of the count: {took:.2?}\n{err}");
}

/// A listening socket nobody accepts or reads, as one of three endpoints: the kernel
/// completes the TCP handshake, and nothing ever answers.
#[test]
fn a_count_finishes_past_a_socket_nobody_reads() {
    let servers: Vec<ServerProcess> = (0..2).map(|_| ServerProcess::start(&[])).collect();
    let (silent_url, err) = until_it_held_a_shard(|| {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let silent_url = format!("http://{}", silent.local_addr().unwrap());
        let mut endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
        endpoints.push(silent_url.clone());
        let started = Instant::now();
        // More shards than the live servers' workers take at once (2 x 16), so that the
        // silent endpoint's workers find some left.
        let client = count_over(17, &endpoints, 64);
        let run = finish_within(client, HUNG_RUN_LIMIT);
        let took = started.elapsed();
        drop(silent);
        assert_total(&run, A000170[16], A002562[16]);
        println!("count with a silent endpoint: {took:.2?}");
        (silent_url, run.2)
    });
    assert_gave_up_on(&err, &silent_url);
    println!("{err}");
}

/// `enumerate --out` over three servers, one of them stopped before the run: every board
/// exactly once, and the stopped one named.
#[test]
fn an_enumeration_finishes_past_a_stopped_server() {
    let dir = crate::tools::scratch_dir().join(format!("queens-stopped-{}", std::process::id()));
    let (stopped, err) = until_it_held_a_shard(|| {
        let _ = std::fs::remove_dir_all(&dir);
        let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&[])).collect();
        let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
        signal(servers[2].pid(), libc::SIGSTOP);
        // More shards than two servers' workers take at once (2 x 16), so that the stopped
        // one's workers find some left.
        let client = spawn(&[
            "enumerate",
            "13",
            "--endpoints",
            &endpoints.join(","),
            "--shards",
            "64",
            "--out",
            dir.to_str().unwrap(),
        ]);
        let (ok, out, err) = finish_within(client, HUNG_RUN_LIMIT);
        signal(servers[2].pid(), libc::SIGCONT);
        drop(servers);
        assert!(ok, "{out}{err}");
        assert!(
            out.starts_with(&format!("boards: {} ", A000170[12])),
            "{out}"
        );
        let boards = boards_in(&dir);
        let distinct: HashSet<&String> = boards.iter().collect();
        assert_eq!(distinct.len(), boards.len(), "every board exactly once");
        assert_eq!(boards.len() as u64, A000170[12]);
        (endpoints[2].clone(), err)
    });
    assert_gave_up_on(&err, &stopped);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shard files of `dir` by name, with their bytes.
fn shard_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// `enumerate --out DIR` SIGKILLed 20 times at seeded moments (0.5 % to 3 % of the
/// uninterrupted run's time after each start, so that the 20 kills fall inside the job on
/// a fast machine as on a slow one, with room for the reruns to go several times faster
/// than the measured run; the test checks that the job was unfinished at the last),
/// rerun each time: after every kill each shard file is a prefix of the uninterrupted run's
/// (so its complete lines are that run's records, in order, none twice; a kill may leave a
/// partial last line, which the next run cuts off before it appends), a shard the manifest
/// calls done is whole, and the final rerun leaves files equal byte for byte.
#[test]
fn an_enumeration_killed_20_times_ends_with_an_uninterrupted_runs_files() {
    let base = crate::tools::scratch_dir().join(format!("queens-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (whole, killed) = (base.join("whole"), base.join("killed"));
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let args = |dir: &std::path::Path| {
        [
            "enumerate".to_string(),
            "15".to_string(),
            "--addr".to_string(),
            url.clone(),
            "--shards".to_string(),
            "64".to_string(),
            "--out".to_string(),
            dir.to_str().unwrap().to_string(),
        ]
    };
    let run = |dir: &std::path::Path| {
        let args = args(dir);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn(&args)
    };
    let started = Instant::now();
    let (ok, out, err) = finish_within(run(&whole), HUNG_RUN_LIMIT);
    assert!(
        ok && out.starts_with(&format!("boards: {} ", A000170[14])),
        "{out}{err}"
    );
    let uninterrupted = started.elapsed();
    println!("uninterrupted: {uninterrupted:.2?}");
    let reference = shard_files(&whole);
    assert_eq!(reference.len(), 64);
    let (mut seed, mut torn, mut done_seen) = (0x9e37_79b9_u32, 0, 0);
    for _ in 0..20 {
        let delay = uninterrupted * (1 + xorshift(&mut seed) % 6) / 200;
        kill_after(run(&killed), delay);
        let manifest: Option<queens::fanout::Manifest> =
            std::fs::read(killed.join("manifest.json"))
                .ok()
                .map(|b| serde_json::from_slice(&b).expect("a whole manifest"));
        let files = shard_files(&killed);
        for (name, bytes) in &files {
            let (_, full) = reference.iter().find(|(n, _)| n == name).expect(name);
            assert!(
                full.starts_with(bytes),
                "{name} is not a prefix of the whole run's"
            );
            torn += usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
        }
        if let Some(manifest) = manifest {
            for &index in &manifest.done {
                let name = format!("shard-{index:05}-of-00064.txt");
                let (_, bytes) = files.iter().find(|(n, _)| *n == name).expect(&name);
                let (_, full) = reference.iter().find(|(n, _)| *n == name).unwrap();
                assert_eq!(bytes.len(), full.len(), "{name} marked done but short");
            }
            done_seen = manifest.done.len();
        }
    }
    assert!(
        done_seen < 64,
        "every shard was done before the last kill: the kills fell after the job"
    );
    let (ok, out, err) = finish_within(run(&killed), HUNG_RUN_LIMIT);
    assert!(
        ok && out.starts_with(&format!("boards: {} ", A000170[14])),
        "{out}{err}"
    );
    assert!(
        shard_files(&killed) == reference,
        "the files differ from the whole run's"
    );
    // A torn tail made by hand (the kills above may never stop a write mid-line): shard 7
    // cut 3 bytes short of its end and no longer marked done; a rerun cuts the partial line
    // off and rewrites it.
    let seven = killed.join("shard-00007-of-00064.txt");
    let bytes = std::fs::read(&seven).unwrap();
    std::fs::write(&seven, &bytes[..bytes.len() - 3]).unwrap();
    let mut manifest: queens::fanout::Manifest =
        serde_json::from_slice(&std::fs::read(killed.join("manifest.json")).unwrap()).unwrap();
    manifest.done.retain(|&i| i != 7);
    std::fs::write(
        killed.join("manifest.json"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
    let (ok, out, err) = finish_within(run(&killed), HUNG_RUN_LIMIT);
    assert!(ok, "{out}{err}");
    assert!(
        shard_files(&killed) == reference,
        "a torn tail was not cut off and rewritten"
    );
    println!(
        "20 kills: {done_seen} shards done before the last rerun, {torn} torn tails seen, \
         {:.2?} in all",
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_count_with_no_live_endpoint_fails_clearly() {
    let server = ServerProcess::start(&[]);
    let url = server.url();
    drop(server);
    let (code, _, err) = queens_cli(&[
        "count",
        "8",
        "--endpoints",
        &url,
        "--shards",
        "4",
        "--max-attempts",
        "3",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("error:"), "{err}");
}

/// Every line of every shard file in `dir`.
fn boards_in(dir: &std::path::Path) -> Vec<String> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "txt") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{path:?} ends mid-line"
            );
            all.extend(text.lines().map(str::to_string));
        }
    }
    all
}

#[test]
fn an_enumeration_into_files_resumes_after_failures() {
    let dir = crate::tools::scratch_dir().join(format!("queens-fanout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&[])).collect();
    let endpoints: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let endpoints = endpoints.join(",");
    let args = [
        "enumerate",
        "12",
        "--endpoints",
        &endpoints,
        "--shards",
        "32",
        "--out",
        dir.to_str().unwrap(),
    ];
    // A client killed mid-run leaves partial files behind.
    let mut first = spawn(&args);
    std::thread::sleep(Duration::from_millis(150));
    let _ = first.kill();
    let _ = first.wait();
    // A rerun, during which one server is killed, finishes the job.
    let client = spawn(&args);
    std::thread::sleep(Duration::from_millis(100));
    let mut servers = servers;
    drop(servers.remove(1));
    let (ok, out, err) = finish(client);
    assert!(ok, "{out}{err}");
    assert!(out.starts_with("boards: 14200 "), "{out}");
    let boards = boards_in(&dir);
    assert_eq!(boards.len(), 14_200);
    let distinct: HashSet<&String> = boards.iter().collect();
    assert_eq!(distinct.len(), 14_200, "every board exactly once");
    for b in &boards {
        let columns: Vec<u32> = b.split(',').map(|c| c.parse().unwrap()).collect();
        assert!(common::is_solution(&columns), "{b}");
    }
    // Rerunning a finished job changes nothing.
    let (ok, out, _) = finish(spawn(&args));
    assert!(ok && out.starts_with("boards: 14200 "), "{out}");
    // Another job in the same directory is refused.
    let (code, _, err) = queens_cli(&[
        "enumerate",
        "11",
        "--endpoints",
        &endpoints,
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("another job"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn indexed_job_shards_sum_to_the_whole() {
    let lines: Vec<String> = (0..7)
        .map(|i| {
            let out = Command::new(env!("CARGO_BIN_EXE_queens"))
                .args(["count", "14", "--local", "--json", "--shards", "7"])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        })
        .collect();
    let sum = |input: String| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_queens"))
            .arg("sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        finish(child)
    };
    let (ok, out, err) = sum(lines.concat());
    assert!(ok, "{err}");
    let total = format!(
        "n: 14\nshards: 7\nsolutions: {}\nfundamental: {}\ndigest: sha256:",
        A000170[13], A002562[13]
    );
    assert!(out.starts_with(&total), "{out}");
    assert!(
        out.contains("\nbuilds: ") && out.contains(" (7 shards)\n"),
        "{out}"
    );
    // Shard 3 missing, shard 5 twice.
    let broken: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, l)| l.clone())
        .chain(std::iter::once(lines[5].clone()))
        .collect();
    let (ok, _, err) = sum(broken);
    assert!(!ok);
    assert!(err.contains("1 shard missing: 3;"), "{err}");
    assert!(
        err.contains("1 shard repeated with the same counts: 5"),
        "{err}"
    );
}
