//! The `soak` mode of `queens-load`: mixed, partly hostile traffic against one server for a
//! given time, every answer checked, the server's RSS, open files and threads sampled from
//! `/proc`.
//!
//! Here: the kinds of call, how each is checked, and the run. Not here: the server's samples
//! and the final report (`soak/report.rs`), the other modes and the command line
//! (`main.rs`). The oracle is the naive search of
//! `queens::solver::naive` (boards up to 12) and the OEIS counts below (up to 14); nothing of
//! the server's own code decides what is right.

mod report;

use self::report::{Sample, quiet_sample, report};
use queens::client::{Access, Client, connect_with};
use queens::pb::{CountRequest, EnumerateRequest, Shard, Square};
use queens::solver::naive;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::RwLock;
use tonic::Code;

/// A000170, the solutions of the n×n board, n = 1..=14.
pub(crate) const SOLUTIONS: [u64; 14] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596,
];
/// A002562, the symmetry classes of those solutions.
const CLASSES: [u64; 14] = [1, 0, 0, 1, 2, 1, 6, 12, 46, 92, 341, 1787, 9233, 45752];

/// The largest board whose every solution the oracle lists.
const ORACLE_N: u32 = 12;

/// What the soak is asked to do.
pub struct Options {
    /// The server's URL.
    pub addr: String,
    /// How long to run.
    pub period: Duration,
    /// When to take the sample later samples are held to.
    pub warm_up: Duration,
    /// Callers at once.
    pub concurrency: usize,
    /// The server's process, to sample from `/proc` (none: no samples).
    pub pid: Option<u32>,
    /// Seed of the callers' choices (each caller adds its index).
    pub seed: u64,
    /// Bearer token and TLS trust for every call.
    pub access: Access,
    /// Seconds between the samples printed while running.
    pub sample_every: Duration,
}

/// The kinds of call the soak makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Count, n ≤ 14, no fixed queens: both OEIS numbers.
    Count,
    /// Count with up to three fixed queens, n ≤ 12: the oracle's number.
    CountFixed,
    /// Count in K parts: the parts add up to the whole.
    CountParts,
    /// Enumerate with random fundamental, fixed queens, limit, batch size, packed or not.
    Enumerate,
    /// Enumerate in K shards: together, the whole once.
    Shards,
    /// Enumerate resumed after a board (or after a vector that is no solution).
    Resume,
    /// A stream read a little and left, or a Count dropped before its answer.
    Cancel,
    /// A Count with a deadline too short for it: DEADLINE_EXCEEDED.
    Deadline,
    /// A stream read with pauses between messages, then left.
    SlowReader,
    /// A stream read once, not read for seconds, then left.
    StalledReader,
    /// A connection dropped mid-stream, or a TCP connection with half a preface.
    Disconnect,
    /// A request with a bad field: INVALID_ARGUMENT naming it.
    Invalid,
    /// A call with a wrong token (only when a token is set): UNAUTHENTICATED.
    WrongToken,
}

const KINDS: [Kind; 13] = [
    Kind::Count,
    Kind::CountFixed,
    Kind::CountParts,
    Kind::Enumerate,
    Kind::Shards,
    Kind::Resume,
    Kind::Cancel,
    Kind::Deadline,
    Kind::SlowReader,
    Kind::StalledReader,
    Kind::Disconnect,
    Kind::Invalid,
    Kind::WrongToken,
];

/// How one call ended.
enum Outcome {
    /// As expected.
    Right,
    /// RESOURCE_EXHAUSTED: refused by the server's limits, which is allowed; the flag the
    /// refusal names (`--max-searches-per-client`, ...), or its whole message.
    Refused(String),
    /// An answer that is not the oracle's.
    Wrong(String),
    /// A status this call should not get.
    Unexpected(String),
}

/// Calls so far, by kind: right, refused, wrong, unexpected.
type Tally = BTreeMap<Kind, [u64; 4]>;

/// splitmix64: the callers' choices, the same for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.next().is_multiple_of(one_in)
    }
}

/// Every solution of the n×n board in lexicographic order, listed once per n.
fn oracle(n: u32) -> &'static [Vec<u8>] {
    static ALL: [OnceLock<Vec<Vec<u8>>>; ORACLE_N as usize] =
        [const { OnceLock::new() }; ORACLE_N as usize];
    ALL[n as usize - 1].get_or_init(|| naive::solutions(n as usize))
}

/// The oracle's answer: `fixed` held, only representatives when `fundamental`.
fn answer(n: u32, fixed: &[Square], fundamental: bool) -> Vec<Vec<u8>> {
    let fixed: Vec<queens::solver::Square> = fixed
        .iter()
        .map(|q| queens::solver::Square {
            row: q.row,
            column: q.column,
        })
        .collect();
    naive::select(oracle(n), &fixed, fundamental)
        .cloned()
        .collect()
}

/// Up to `most` random squares of the n×n board, distinct (they may attack each other).
fn random_squares(rng: &mut Rng, n: u32, most: u64) -> Vec<Square> {
    let mut squares: Vec<Square> = Vec::new();
    for _ in 0..rng.range(0, most) {
        let row = rng.range(0, u64::from(n) - 1) as u32;
        if squares.iter().all(|q| q.row != row) {
            let column = rng.range(0, u64::from(n) - 1) as u32;
            squares.push(Square { row, column });
        }
    }
    squares
}

/// The outcome of a call that failed with `status` when it should have succeeded.
fn failed(status: &tonic::Status) -> Outcome {
    if status.code() == Code::ResourceExhausted {
        Outcome::Refused(refused_by(status.message()))
    } else {
        Outcome::Unexpected(format!("{:?}: {}", status.code(), status.message()))
    }
}

/// The flag a refusal's message names in parentheses (`(--max-searches 6)`), else the
/// message.
fn refused_by(message: &str) -> String {
    message
        .split_once("(--")
        .and_then(|(_, rest)| rest.split([' ', ')']).next())
        .map_or_else(|| message.to_string(), |flag| format!("--{flag}"))
}

/// Reads a whole Enumerate stream of size `n` as records, or the status that ended it.
async fn drain(client: &mut Client, request: EnumerateRequest) -> Result<Vec<Vec<u8>>, Outcome> {
    let n = request.n as usize;
    let mut stream = client
        .enumerate(request)
        .await
        .map_err(|s| failed(&s))?
        .into_inner();
    let mut boards = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(m)) => boards.extend(
                queens::client::records(n, &m)
                    .chunks_exact(n)
                    .map(<[u8]>::to_vec),
            ),
            Ok(None) => return Ok(boards),
            Err(s) => return Err(failed(&s)),
        }
    }
}

/// `Right` when `got` is `want`, else what differs.
fn compare(what: &str, got: &[Vec<u8>], want: &[Vec<u8>]) -> Outcome {
    if got == want {
        return Outcome::Right;
    }
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    Outcome::Wrong(format!(
        "{what}: {} boards, expected {}; first difference at {first:?}",
        got.len(),
        want.len()
    ))
}

/// One caller's state: its connection (renewed now and then) and its choices.
struct Caller {
    addr: String,
    access: Access,
    client: Option<Client>,
    calls: u64,
    rng: Rng,
}

impl Caller {
    /// The caller's connection, made anew every 50 calls.
    async fn client(&mut self) -> Result<Client, Outcome> {
        if self.calls.is_multiple_of(50) {
            self.client = None;
        }
        self.calls += 1;
        if self.client.is_none() {
            let client = connect_with(&self.addr, &self.access)
                .await
                .map_err(|e| Outcome::Unexpected(format!("connect: {e}")))?;
            self.client = Some(client);
        }
        Ok(self.client.clone().expect("connected"))
    }

    /// Makes one call of `kind` and checks it.
    async fn call(&mut self, kind: Kind) -> Outcome {
        match self.checked(kind).await {
            Ok(outcome) | Err(outcome) => outcome,
        }
    }

    async fn checked(&mut self, kind: Kind) -> Result<Outcome, Outcome> {
        let mut client = self.client().await?;
        let rng = &mut self.rng;
        Ok(match kind {
            Kind::Count => {
                let n = rng.range(1, 14) as u32;
                let r = client
                    .count(CountRequest {
                        n,
                        ..Default::default()
                    })
                    .await
                    .map_err(|s| failed(&s))?
                    .into_inner();
                let i = n as usize - 1;
                if r.solutions == SOLUTIONS[i] && r.fundamental == Some(CLASSES[i]) {
                    Outcome::Right
                } else {
                    Outcome::Wrong(format!("Count n = {n}: {r:?}"))
                }
            }
            Kind::CountFixed => {
                let n = rng.range(1, u64::from(ORACLE_N)) as u32;
                let fixed = random_squares(rng, n, 3);
                let r = client
                    .count(CountRequest {
                        n,
                        fixed: fixed.clone(),
                        ..Default::default()
                    })
                    .await
                    .map_err(|s| failed(&s))?
                    .into_inner();
                let want = answer(n, &fixed, false).len() as u64;
                if r.solutions == want {
                    Outcome::Right
                } else {
                    Outcome::Wrong(format!("Count n = {n} {fixed:?}: {r:?}, expected {want}"))
                }
            }
            Kind::CountParts => {
                let n = rng.range(4, 14) as u32;
                let count = rng.range(2, 9) as u32;
                let mut solutions = 0;
                for index in 0..count {
                    let r = client
                        .count(CountRequest {
                            n,
                            shard: Some(Shard { index, count }),
                            ..Default::default()
                        })
                        .await
                        .map_err(|s| failed(&s))?
                        .into_inner();
                    solutions += r.solutions;
                }
                if solutions == SOLUTIONS[n as usize - 1] {
                    Outcome::Right
                } else {
                    Outcome::Wrong(format!("Count n = {n} in {count} parts: {solutions}"))
                }
            }
            Kind::Enumerate => {
                let n = rng.range(1, u64::from(ORACLE_N)) as u32;
                let fundamental = rng.chance(3);
                let fixed = if fundamental {
                    Vec::new()
                } else {
                    random_squares(rng, n, 2)
                };
                let limit = if rng.chance(2) { 0 } else { rng.range(1, 3000) };
                let batch_size = [0, 1, 7, 64, 1000][rng.range(0, 4) as usize];
                let packed = rng.chance(2);
                let mut want = answer(n, &fixed, fundamental);
                if limit > 0 {
                    want.truncate(limit as usize);
                }
                let request = EnumerateRequest {
                    n,
                    fundamental,
                    fixed,
                    limit,
                    batch_size,
                    packed,
                    compact: !packed,
                    ..Default::default()
                };
                let what = format!("{request:?}");
                compare(&what, &drain(&mut client, request).await?, &want)
            }
            Kind::Shards => {
                let n = rng.range(4, u64::from(ORACLE_N)) as u32;
                let count = rng.range(2, 7) as u32;
                let mut all = Vec::new();
                for index in 0..count {
                    let request = EnumerateRequest {
                        n,
                        shard: Some(Shard { index, count }),
                        packed: true,
                        ..Default::default()
                    };
                    let part = drain(&mut client, request).await?;
                    if !part.windows(2).all(|w| w[0] < w[1]) {
                        return Ok(Outcome::Wrong(format!(
                            "n = {n} shard {index}/{count}: out of order"
                        )));
                    }
                    all.extend(part);
                }
                all.sort();
                compare(&format!("n = {n} in {count} shards"), &all, oracle(n))
            }
            Kind::Resume => {
                let n = rng.range(4, u64::from(ORACLE_N)) as u32;
                let all = oracle(n);
                let (after, want): (Vec<u32>, Vec<Vec<u8>>) = if rng.chance(4) || all.is_empty() {
                    // A vector that is no solution: the boards after it in order.
                    let v: Vec<u32> = (0..n)
                        .map(|_| rng.range(0, u64::from(n) - 1) as u32)
                        .collect();
                    let bytes: Vec<u8> = v.iter().map(|&c| c as u8).collect();
                    (v, all.iter().filter(|b| **b > bytes).cloned().collect())
                } else {
                    let i = rng.range(0, all.len() as u64 - 1) as usize;
                    (
                        all[i].iter().map(|&c| u32::from(c)).collect(),
                        all[i + 1..].to_vec(),
                    )
                };
                let request = EnumerateRequest {
                    n,
                    start_after: after.clone(),
                    packed: rng.chance(2),
                    ..Default::default()
                };
                compare(
                    &format!("n = {n} after {after:?}"),
                    &drain(&mut client, request).await?,
                    &want,
                )
            }
            Kind::Cancel => {
                if rng.chance(2) {
                    // A Count of n = 16..18 dropped before its answer.
                    let n = rng.range(16, 18) as u32;
                    let wait = Duration::from_millis(rng.range(10, 300));
                    let call = client.count(CountRequest {
                        n,
                        ..Default::default()
                    });
                    match tokio::time::timeout(wait, call).await {
                        Err(_) | Ok(Ok(_)) => Outcome::Right,
                        Ok(Err(s)) => failed(&s),
                    }
                } else {
                    let n = rng.range(13, 20) as u32;
                    let messages = rng.range(1, 5);
                    read_and_leave(&mut client, n, messages, Duration::ZERO, Duration::ZERO).await
                }
            }
            Kind::Deadline => {
                // n = 18 is 666 million boards, seconds of search on any machine.
                let n = rng.range(18, 20) as u32;
                let mut request = tonic::Request::new(CountRequest {
                    n,
                    ..Default::default()
                });
                request.set_timeout(Duration::from_millis(rng.range(20, 100)));
                match client.count(request).await {
                    // The server's answer, or tonic's own timer firing first (it reports
                    // the deadline as CANCELLED "Timeout expired").
                    Err(s) if s.code() == Code::DeadlineExceeded => Outcome::Right,
                    Err(s) if s.code() == Code::Cancelled && s.message() == "Timeout expired" => {
                        Outcome::Right
                    }
                    Err(s) => failed(&s),
                    Ok(r) => Outcome::Unexpected(format!(
                        "Count n = {n} beat its deadline: {:?}",
                        r.into_inner()
                    )),
                }
            }
            Kind::SlowReader => {
                let n = rng.range(13, 16) as u32;
                let pause = Duration::from_millis(rng.range(20, 200));
                read_and_leave(&mut client, n, 20, pause, Duration::ZERO).await
            }
            Kind::StalledReader => {
                let n = rng.range(14, 16) as u32;
                let stall = Duration::from_millis(rng.range(1000, 5000));
                read_and_leave(&mut client, n, 2, Duration::ZERO, stall).await
            }
            Kind::Disconnect => {
                self.client = None;
                if rng.chance(2) {
                    half_preface(&self.addr).await
                } else {
                    // Its own connection, dropped with the stream open.
                    let mut own = connect_with(&self.addr, &self.access)
                        .await
                        .map_err(|e| Outcome::Unexpected(format!("connect: {e}")))?;
                    let n = rng.range(14, 18) as u32;
                    read_and_leave(&mut own, n, 1, Duration::ZERO, Duration::ZERO).await
                }
            }
            Kind::Invalid => invalid(&mut client, rng).await,
            Kind::WrongToken => {
                let access = Access {
                    token: Some("not-a-token-of-this-server".into()),
                    ..self.access.clone()
                };
                let mut wrong = connect_with(&self.addr, &access)
                    .await
                    .map_err(|e| Outcome::Unexpected(format!("connect: {e}")))?;
                match wrong
                    .count(CountRequest {
                        n: 8,
                        ..Default::default()
                    })
                    .await
                {
                    Err(s) if s.code() == Code::Unauthenticated => Outcome::Right,
                    Err(s) => failed(&s),
                    Ok(_) => Outcome::Unexpected("a wrong token was accepted".into()),
                }
            }
        })
    }
}

/// Opens an Enumerate n stream, checks up to `messages` messages (solutions in increasing
/// order) with `pause` between reads and `stall` after the first, then leaves.
async fn read_and_leave(
    client: &mut Client,
    n: u32,
    messages: u64,
    pause: Duration,
    stall: Duration,
) -> Outcome {
    let request = EnumerateRequest {
        n,
        packed: true,
        batch_size: 256,
        ..Default::default()
    };
    let mut stream = match client.enumerate(request).await {
        Ok(r) => r.into_inner(),
        Err(s) => return failed(&s),
    };
    let mut last: Option<Vec<u8>> = None;
    for i in 0..messages {
        match stream.message().await {
            Ok(Some(m)) => {
                for b in m.packed.chunks_exact(n as usize) {
                    if !naive::is_solution(b) || last.as_deref().is_some_and(|l| l >= b) {
                        return Outcome::Wrong(format!("n = {n}: {b:?} is not the next solution"));
                    }
                    last = Some(b.to_vec());
                }
            }
            Ok(None) => break,
            Err(s) => return failed(&s),
        }
        tokio::time::sleep(if i == 0 { stall } else { pause }).await;
    }
    Outcome::Right
}

/// A TCP connection that sends half the HTTP/2 preface and goes: nothing to check but the
/// server's health afterwards (the other calls).
async fn half_preface(addr: &str) -> Outcome {
    use tokio::io::AsyncWriteExt;
    let host = addr
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    match tokio::net::TcpStream::connect(host).await {
        Ok(mut sock) => {
            let _ = sock.write_all(b"PRI * HTTP/2.0\r\n").await;
            Outcome::Right
        }
        Err(e) => Outcome::Unexpected(format!("connect {host}: {e}")),
    }
}

/// A request with one bad field: INVALID_ARGUMENT whose message starts with that field.
async fn invalid(client: &mut Client, rng: &mut Rng) -> Outcome {
    let enumerate = |request: EnumerateRequest| {
        let mut client = client.clone();
        async move {
            let mut stream = client.enumerate(request).await?.into_inner();
            while stream.message().await?.is_some() {}
            Ok::<(), tonic::Status>(())
        }
    };
    let (field, result) = match rng.range(0, 4) {
        0 => {
            let n = [0, 33, 1000, u32::MAX][rng.range(0, 3) as usize];
            let request = CountRequest {
                n,
                ..Default::default()
            };
            ("n:", client.clone().count(request).await.map(drop))
        }
        1 => {
            let request = CountRequest {
                n: 8,
                fixed: vec![Square { row: 8, column: 0 }],
                ..Default::default()
            };
            ("fixed[0]:", client.clone().count(request).await.map(drop))
        }
        2 => {
            let request = EnumerateRequest {
                n: 8,
                shard: Some(Shard { index: 5, count: 3 }),
                ..Default::default()
            };
            ("shard", enumerate(request).await)
        }
        3 => {
            let request = EnumerateRequest {
                n: 8,
                start_after: vec![1, 2, 3],
                ..Default::default()
            };
            ("start_after:", enumerate(request).await)
        }
        _ => {
            let request = EnumerateRequest {
                n: 8,
                fundamental: true,
                fixed: vec![Square { row: 0, column: 0 }],
                ..Default::default()
            };
            ("fundamental:", enumerate(request).await)
        }
    };
    match result {
        Err(s) if s.code() == Code::InvalidArgument && s.message().starts_with(field) => {
            Outcome::Right
        }
        Err(s) => failed(&s),
        Ok(()) => Outcome::Unexpected(format!("a request with a bad {field} was answered")),
    }
}

/// Runs the soak; prints samples while it runs and the report at the end. True when no
/// answer was wrong, no status unexpected, and (with a pid) the server stayed flat from the
/// warm-up sample to the end.
pub async fn run(options: Options) -> bool {
    let started = Instant::now();
    let until = started + options.period;
    let tally: Arc<Mutex<Tally>> = Arc::default();
    let refusals: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let gate = Arc::new(RwLock::new(()));
    let with_token = options.access.token.is_some();
    let kinds: Vec<Kind> = KINDS
        .into_iter()
        .filter(|k| with_token || *k != Kind::WrongToken)
        .collect();
    let mut callers = Vec::new();
    for i in 0..options.concurrency {
        let mut caller = Caller {
            addr: options.addr.clone(),
            access: options.access.clone(),
            client: None,
            calls: 0,
            rng: Rng(options.seed.wrapping_add(i as u64)),
        };
        let (tally, refusals) = (tally.clone(), refusals.clone());
        let (gate, kinds) = (gate.clone(), kinds.clone());
        callers.push(tokio::spawn(async move {
            while Instant::now() < until {
                let kind = kinds[caller.rng.range(0, kinds.len() as u64 - 1) as usize];
                let outcome = {
                    let _open = gate.read().await;
                    caller.call(kind).await
                };
                let slot = match &outcome {
                    Outcome::Right => 0,
                    Outcome::Refused(by) => {
                        *refusals
                            .lock()
                            .expect("refusals")
                            .entry(by.clone())
                            .or_default() += 1;
                        1
                    }
                    Outcome::Wrong(what) => {
                        eprintln!("soak: wrong answer ({kind:?}): {what}");
                        2
                    }
                    Outcome::Unexpected(what) => {
                        eprintln!("soak: unexpected status ({kind:?}): {what}");
                        3
                    }
                };
                tally.lock().expect("tally").entry(kind).or_default()[slot] += 1;
                if slot == 1 || slot == 3 {
                    // Refused, or no server: back off as a client should, not spin.
                    let wait = caller.rng.range(50, 250);
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
            }
        }));
    }
    let mut warm: Option<Sample> = None;
    if let Some(pid) = options.pid {
        let mut next = started + options.sample_every;
        let mut warm_due = Some(started + options.warm_up);
        while Instant::now() < until {
            let due = warm_due.map_or(next, |w| w.min(next)).min(until);
            tokio::time::sleep_until(due.into()).await;
            let at = started.elapsed().as_secs();
            if warm_due.is_some_and(|w| Instant::now() >= w) {
                warm_due = None;
                warm = quiet_sample(&gate, pid).await;
                let shown = warm.map_or("gone".into(), |s| s.show());
                println!("soak: {at} s: warm-up sample (quiet): {shown}");
            } else if Instant::now() < until {
                next += options.sample_every;
                let shown = Sample::take(pid).map_or("gone".into(), |s| s.show());
                println!("soak: {at} s: {shown}");
            }
        }
    }
    for caller in callers {
        caller.await.expect("caller");
    }
    let end = match options.pid {
        Some(pid) => quiet_sample(&gate, pid).await,
        None => None,
    };
    report(
        &tally.lock().expect("tally"),
        &refusals.lock().expect("refusals"),
        started.elapsed(),
        warm,
        end,
        options.pid,
    )
}
