//! Fan-out over replicas: one count or enumeration split into shards and spread over several
//! servers, with an explicit queue so that a shard whose server fails goes to another.
//!
//! tonic's `balance_list` does not fail over from a dead endpoint, so each endpoint gets its
//! own workers (as many as it admits) that take shards from a shared queue; a retryable
//! failure (UNAVAILABLE,
//! RESOURCE_EXHAUSTED, a broken connection) puts the shard back, up to a bounded number of
//! attempts. Enumeration writes each shard to its own file and resumes from the last complete
//! line, recording finished shards in a manifest, so rerunning the command finishes the job.
//! Local (server-less) shard counts and their summing live in `batch.rs`; printing in
//! `client`; flags in `main.rs`.

use crate::client::{Access, Client};
use crate::pb::{CountRequest, EnumerateRequest, Shard, Square};
use crate::solver::Counts;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::Code;

/// Most calls one endpoint gets at once. Each endpoint starts this many workers; a worker
/// whose call is refused with RESOURCE_EXHAUSTED while others of its endpoint still work
/// retires (its shard goes back to the queue, no retry used), so every endpoint ends up with
/// as many calls as it admits (its `--max-searches`), up to this cap.
pub const MAX_CALLS_PER_ENDPOINT: usize = 16;

/// Default attempts per shard before the run gives up.
pub const MAX_ATTEMPTS: u32 = 8;

/// Consecutive failed calls after which an endpoint is given up.
const ENDPOINT_FAILURES: u32 = 3;

/// Pause after a failure before a worker takes the next shard.
const BACKOFF: Duration = Duration::from_millis(200);

/// What to split and how.
#[derive(Clone, Debug)]
pub struct Job {
    /// Board size.
    pub n: u32,
    /// Fixed queens (no fundamental count with them).
    pub fixed: Vec<Square>,
    /// Only symmetry-class representatives (enumeration only).
    pub fundamental: bool,
    /// Number of shards.
    pub shards: u32,
    /// Attempts per shard before giving up.
    pub max_attempts: u32,
    /// Credentials and trust for every endpoint.
    pub access: Access,
}

/// Per-endpoint statistics of a run.
#[derive(Clone, Debug, Default)]
pub struct EndpointStats {
    /// The endpoint's URL.
    pub url: String,
    /// Shards it finished.
    pub shards: u64,
    /// Solutions (or boards) of those shards.
    pub solutions: u64,
    /// Calls that failed on it.
    pub failures: u64,
    /// Seconds spent in successful calls.
    pub busy_seconds: f64,
}

/// The result of a fanned-out count.
#[derive(Clone, Debug)]
pub struct CountTotal {
    /// Total solutions.
    pub solutions: u64,
    /// Total symmetry classes (absent with fixed queens).
    pub fundamental: Option<u64>,
    /// How each endpoint fared.
    pub endpoints: Vec<EndpointStats>,
}

/// Called as shards finish: shards done, shards in all, solutions so far.
pub type OnShard = Arc<dyn Fn(u64, u64, u64) + Send + Sync>;

/// Why a fanned-out run failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An endpoint's name did not resolve.
    #[error("cannot resolve {endpoint}: {source}")]
    Resolve {
        /// The endpoint as given.
        endpoint: String,
        /// Why.
        source: std::io::Error,
    },
    /// No endpoint was given.
    #[error("no endpoints given")]
    NoEndpoints,
    /// A shard failed with a retryable status on every attempt.
    #[error(
        "shard {index} failed {attempts} times; last from {url}: {:?}: {}",
        status.code(),
        status.message()
    )]
    Attempts {
        /// The shard.
        index: u32,
        /// Attempts made.
        attempts: u32,
        /// The endpoint of the last attempt.
        url: String,
        /// Its status.
        status: Box<tonic::Status>,
    },
    /// A shard failed with a status no retry can change.
    #[error("shard {index} on {url}: {:?}: {}", status.code(), status.message())]
    Refused {
        /// The shard.
        index: u32,
        /// The endpoint.
        url: String,
        /// Its status.
        status: Box<tonic::Status>,
    },
    /// Every endpoint was given up with shards left.
    #[error("every endpoint failed; {} shards unfinished ({})", left.len(), list(left))]
    Unfinished {
        /// The shards left.
        left: Vec<u32>,
    },
    /// The total does not fit in a `u64`.
    #[error("the total does not fit in 64 bits")]
    Overflow,
    /// A file or directory of the output could not be used.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The manifest of the output directory could not be read.
    #[error("unreadable manifest in {}: {source}", dir.display())]
    Manifest {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The output directory holds another job's files.
    #[error("{} holds another job (n {n}, {shards} shards); use an empty directory", dir.display())]
    OtherJob {
        /// The directory.
        dir: PathBuf,
        /// The other job's board size.
        n: u32,
        /// The other job's number of shards.
        shards: u32,
    },
}

/// Shard numbers as `1,4,7`.
fn list(shards: &[u32]) -> String {
    let text: Vec<String> = shards.iter().map(u32::to_string).collect();
    text.join(",")
}

/// Expands endpoint arguments into URLs: each is a URL or `host:port`; a name that resolves
/// to several addresses (a Kubernetes headless Service) becomes one endpoint per address.
pub async fn resolve(endpoints: &[String]) -> Result<Vec<String>, Error> {
    let mut urls = Vec::new();
    for endpoint in endpoints {
        let (scheme, rest) = match endpoint.split_once("://") {
            Some((scheme, rest)) => (scheme, rest),
            None => ("http", endpoint.as_str()),
        };
        let host_port = rest.trim_end_matches('/');
        let addrs: Vec<_> = tokio::net::lookup_host(host_port)
            .await
            .map_err(|source| Error::Resolve {
                endpoint: endpoint.clone(),
                source,
            })?
            .collect();
        let is_literal = host_port.parse::<std::net::SocketAddr>().is_ok();
        if addrs.len() <= 1 || is_literal || scheme == "https" {
            urls.push(format!("{scheme}://{host_port}"));
        } else {
            urls.extend(addrs.iter().map(|a| format!("{scheme}://{a}")));
        }
    }
    urls.sort();
    urls.dedup();
    if urls.is_empty() {
        return Err(Error::NoEndpoints);
    }
    Ok(urls)
}

/// Whether a failed call may succeed on another try or another endpoint.
fn retryable(status: &tonic::Status) -> bool {
    // A server killed mid-call shows up in tonic as Unknown "h2 protocol error", or as
    // Cancelled "operation was canceled" when the connection drops under a stream (this
    // client never cancels its own calls, so Cancelled always comes from the other side).
    matches!(
        status.code(),
        Code::Unavailable
            | Code::ResourceExhausted
            | Code::Unknown
            | Code::Aborted
            | Code::Cancelled
    )
}

/// The shared queue of one run.
struct Queue<R> {
    pending: VecDeque<(u32, u32)>,
    results: Vec<Option<R>>,
    outstanding: usize,
    fatal: Option<Error>,
    stats: Vec<EndpointStats>,
    /// Workers still running, per endpoint.
    live: Vec<usize>,
    /// Failed calls in a row, per endpoint (any of its workers); at [`ENDPOINT_FAILURES`]
    /// the endpoint is given up, so a dead one burns few of its shards' attempts.
    failing: Vec<u32>,
}

/// What a worker does with one shard; `Err` carries the status of a failed call.
trait ShardTask: Clone + Send + Sync + 'static {
    type Output: Send + 'static;
    /// Runs shard `index` on `client`; returns its output and its number of solutions.
    fn run(
        &self,
        client: Client,
        index: u32,
    ) -> impl std::future::Future<Output = Result<(Self::Output, u64), tonic::Status>> + Send;
}

/// Runs every shard of `job` not in `skip` over `urls`; returns the outputs by shard index.
async fn run_shards<T: ShardTask>(
    job: &Job,
    urls: &[String],
    skip: &[u32],
    task: T,
    progress: Option<OnShard>,
) -> Result<(Vec<Option<T::Output>>, Vec<EndpointStats>), Error> {
    let pending: VecDeque<(u32, u32)> = (0..job.shards)
        .filter(|i| !skip.contains(i))
        .map(|i| (i, 0))
        .collect();
    let total = job.shards as u64;
    let queue = Arc::new(Mutex::new(Queue {
        outstanding: pending.len(),
        pending,
        results: (0..job.shards).map(|_| None).collect(),
        fatal: None,
        live: vec![MAX_CALLS_PER_ENDPOINT; urls.len()],
        failing: vec![0; urls.len()],
        stats: urls
            .iter()
            .map(|u| EndpointStats {
                url: u.clone(),
                ..Default::default()
            })
            .collect(),
    }));
    let done_before = skip.len() as u64;
    let mut workers = Vec::new();
    for (e, url) in urls.iter().enumerate() {
        for _ in 0..MAX_CALLS_PER_ENDPOINT {
            let (queue, url, task) = (queue.clone(), url.clone(), task.clone());
            let (progress, max_attempts) = (progress.clone(), job.max_attempts);
            let access = job.access.clone();
            workers.push(tokio::spawn(async move {
                worker(
                    e,
                    (url, access),
                    queue,
                    task,
                    max_attempts,
                    total,
                    done_before,
                    progress,
                )
                .await
            }));
        }
    }
    for w in workers {
        let _ = w.await;
    }
    let mut q = queue.lock().expect("queue lock");
    if let Some(fatal) = q.fatal.take() {
        return Err(fatal);
    }
    if q.outstanding > 0 {
        let left = q.pending.iter().map(|&(i, _)| i).collect();
        return Err(Error::Unfinished { left });
    }
    let results = std::mem::take(&mut q.results);
    Ok((results, std::mem::take(&mut q.stats)))
}

/// One worker of one endpoint: takes shards until the queue is empty, the run failed, or
/// its endpoint failed [`ENDPOINT_FAILURES`] times in a row.
#[allow(clippy::too_many_arguments)]
async fn worker<T: ShardTask>(
    e: usize,
    (url, access): (String, Access),
    queue: Arc<Mutex<Queue<T::Output>>>,
    task: T,
    max_attempts: u32,
    total: u64,
    done_before: u64,
    progress: Option<OnShard>,
) {
    let _live = Live {
        queue: queue.clone(),
        endpoint: e,
    };
    let mut client: Option<Client> = None;
    loop {
        let next = {
            let mut q = queue.lock().expect("queue lock");
            if q.fatal.is_some() || q.outstanding == 0 || q.failing[e] >= ENDPOINT_FAILURES {
                return;
            }
            q.pending.pop_front()
        };
        let Some((index, attempts)) = next else {
            // Others hold the remaining shards; one may come back.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        if client.is_none() {
            client = crate::client::connect_with(&url, &access).await.ok();
        }
        let started = Instant::now();
        let outcome = match &client {
            Some(c) => task.run(c.clone(), index).await,
            None => Err(tonic::Status::unavailable(format!(
                "cannot connect to {url}"
            ))),
        };
        let next_step = record(
            &queue,
            e,
            &url,
            index,
            attempts,
            max_attempts,
            started,
            outcome,
        );
        match next_step {
            Step::Next => {}
            Step::Stop | Step::Retire => return,
            Step::Retry => {
                client = None;
                tokio::time::sleep(BACKOFF).await;
            }
        }
        if let (Some(p), Step::Next) = (&progress, next_step) {
            let q = queue.lock().expect("queue lock");
            let done = done_before + q.stats.iter().map(|s| s.shards).sum::<u64>();
            let found = q.stats.iter().map(|s| s.solutions).sum();
            drop(q);
            p(done, total, found);
        }
    }
}

/// What a worker does after a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Take the next shard.
    Next,
    /// The shard went back to the queue; back off first.
    Retry,
    /// The run failed.
    Stop,
    /// The endpoint is at capacity with other workers: leave it to them.
    Retire,
}

/// Counts a worker as live for its endpoint until dropped.
struct Live<R> {
    queue: Arc<Mutex<Queue<R>>>,
    endpoint: usize,
}

impl<R> Drop for Live<R> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.lock() {
            q.live[self.endpoint] -= 1;
        }
    }
}

/// Records a call's outcome in the queue and says what the worker does next.
#[allow(clippy::too_many_arguments)]
fn record<R>(
    queue: &Mutex<Queue<R>>,
    e: usize,
    url: &str,
    index: u32,
    attempts: u32,
    max_attempts: u32,
    started: Instant,
    outcome: Result<(R, u64), tonic::Status>,
) -> Step {
    let mut q = queue.lock().expect("queue lock");
    match outcome {
        Ok((output, solutions)) => {
            q.results[index as usize] = Some(output);
            q.outstanding -= 1;
            q.failing[e] = 0;
            let s = &mut q.stats[e];
            s.shards += 1;
            s.solutions += solutions;
            s.busy_seconds += started.elapsed().as_secs_f64();
            Step::Next
        }
        Err(status) if status.code() == Code::ResourceExhausted && q.live[e] > 1 => {
            q.pending.push_back((index, attempts));
            Step::Retire
        }
        Err(status) if retryable(&status) => {
            q.stats[e].failures += 1;
            q.failing[e] += 1;
            if attempts + 1 >= max_attempts {
                q.fatal = Some(Error::Attempts {
                    index,
                    attempts: attempts + 1,
                    url: url.to_string(),
                    status: Box::new(status),
                });
                return Step::Stop;
            }
            q.pending.push_back((index, attempts + 1));
            Step::Retry
        }
        Err(status) => {
            q.fatal = Some(Error::Refused {
                index,
                url: url.to_string(),
                status: Box::new(status),
            });
            Step::Stop
        }
    }
}

/// Counting one shard.
#[derive(Clone)]
struct CountShard {
    job: Arc<Job>,
}

impl ShardTask for CountShard {
    type Output = Counts;

    async fn run(&self, mut client: Client, index: u32) -> Result<(Counts, u64), tonic::Status> {
        let request = CountRequest {
            n: self.job.n,
            fixed: self.job.fixed.clone(),
            shard: Some(Shard {
                index,
                count: self.job.shards,
            }),
        };
        let r = client.count(request).await?.into_inner();
        let counts = Counts {
            solutions: r.solutions,
            fundamental: r.fundamental,
        };
        Ok((counts, r.solutions))
    }
}

/// Counts `job` over the servers at `urls`, shard by shard, summing with checked arithmetic.
pub async fn count(
    job: &Job,
    urls: &[String],
    progress: Option<OnShard>,
) -> Result<CountTotal, Error> {
    let task = CountShard {
        job: Arc::new(job.clone()),
    };
    let (results, endpoints) = run_shards(job, urls, &[], task, progress).await?;
    let mut total = Counts {
        solutions: 0,
        fundamental: Some(0),
    };
    for part in results.into_iter().flatten() {
        total = total.checked_add(part).map_err(|_| Error::Overflow)?;
    }
    Ok(CountTotal {
        solutions: total.solutions,
        fundamental: total.fundamental,
        endpoints,
    })
}

/// What a resumable enumeration records in `DIR/manifest.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// Board size.
    pub n: u32,
    /// Number of shards.
    pub shards: u32,
    /// Only representatives.
    pub fundamental: bool,
    /// Fixed queens as (row, column).
    pub fixed: Vec<(u32, u32)>,
    /// Shards whose files are complete.
    pub done: Vec<u32>,
}

impl Manifest {
    fn of(job: &Job) -> Manifest {
        Manifest {
            n: job.n,
            shards: job.shards,
            fundamental: job.fundamental,
            fixed: job.fixed.iter().map(|s| (s.row, s.column)).collect(),
            done: Vec::new(),
        }
    }

    fn path(dir: &Path) -> PathBuf {
        dir.join("manifest.json")
    }

    /// Writes the manifest atomically (a temporary file renamed over the old one).
    fn save(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join("manifest.json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(tmp, Manifest::path(dir))
    }
}

/// The file of shard `index` of `count` in `dir`.
pub fn shard_file(dir: &Path, index: u32, count: u32) -> PathBuf {
    dir.join(format!("shard-{index:05}-of-{count:05}.txt"))
}

/// Enumerating one shard into its file, resuming after its last complete line.
#[derive(Clone)]
struct EnumerateShard {
    job: Arc<Job>,
    dir: PathBuf,
    manifest: Arc<Mutex<Manifest>>,
}

impl EnumerateShard {
    /// Opens the shard's file for appending after its last complete line (a partial last
    /// line, left by a killed writer, is cut off); returns it with that line's board.
    fn open(&self, index: u32) -> std::io::Result<(std::fs::File, Vec<u32>, u64)> {
        let path = shard_file(&self.dir, index, self.job.shards);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)?;
        let (mut keep, mut last, mut lines) = (0u64, Vec::new(), 0u64);
        let mut reader = std::io::BufReader::new(&file);
        let mut line = String::new();
        loop {
            line.clear();
            let read = reader.read_line(&mut line)?;
            if read == 0 || !line.ends_with('\n') {
                break;
            }
            keep += read as u64;
            lines += 1;
            last = line
                .trim_end()
                .split(',')
                .map(|c| c.parse().map_err(std::io::Error::other))
                .collect::<Result<_, _>>()?;
        }
        drop(reader);
        file.set_len(keep)?;
        file.seek(std::io::SeekFrom::Start(keep))?;
        Ok((file, last, lines))
    }
}

impl ShardTask for EnumerateShard {
    type Output = u64;

    async fn run(&self, mut client: Client, index: u32) -> Result<(u64, u64), tonic::Status> {
        let io = |e: std::io::Error| tonic::Status::internal(format!("shard {index} file: {e}"));
        let (file, start_after, mut written) = self.open(index).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        let request = EnumerateRequest {
            n: self.job.n,
            fundamental: self.job.fundamental,
            fixed: self.job.fixed.clone(),
            shard: Some(Shard {
                index,
                count: self.job.shards,
            }),
            start_after,
            packed: true,
            ..Default::default()
        };
        let n = self.job.n as usize;
        let mut stream = client.enumerate(request).await?.into_inner();
        let mut text = Vec::new();
        while let Some(message) = stream.message().await? {
            let records = crate::client::records(n, &message);
            text.clear();
            crate::render::compact_records(n, &records, &mut text);
            out.write_all(&text).map_err(io)?;
            // Whole lines reach the file message by message: a resume starts after them.
            out.flush().map_err(io)?;
            written += (records.len() / n.max(1)) as u64;
        }
        out.flush().map_err(io)?;
        let mut manifest = self.manifest.lock().expect("manifest lock");
        manifest.done.push(index);
        manifest.done.sort_unstable();
        manifest.save(&self.dir).map_err(io)?;
        Ok((written, written))
    }
}

/// Enumerates `job` into `dir` (one file per shard plus `manifest.json`) over `urls`,
/// resuming whatever an earlier run left; returns the boards in all files and the stats.
pub async fn enumerate(
    job: &Job,
    urls: &[String],
    dir: &Path,
    progress: Option<OnShard>,
) -> Result<(u64, Vec<EndpointStats>), Error> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { what, path, source }
    };
    std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
    let fresh = Manifest::of(job);
    let manifest = match std::fs::read(Manifest::path(dir)) {
        Ok(bytes) => {
            let old: Manifest =
                serde_json::from_slice(&bytes).map_err(|source| Error::Manifest {
                    dir: dir.to_path_buf(),
                    source,
                })?;
            let same = Manifest {
                done: Vec::new(),
                ..old.clone()
            };
            if same != fresh {
                return Err(Error::OtherJob {
                    dir: dir.to_path_buf(),
                    n: old.n,
                    shards: old.shards,
                });
            }
            old
        }
        Err(_) => fresh,
    };
    manifest
        .save(dir)
        .map_err(io("cannot write the manifest in", dir))?;
    let skip = manifest.done.clone();
    let task = EnumerateShard {
        job: Arc::new(job.clone()),
        dir: dir.to_path_buf(),
        manifest: Arc::new(Mutex::new(manifest)),
    };
    let (_, stats) = run_shards(job, urls, &skip, task, progress).await?;
    let mut boards = 0;
    for index in 0..job.shards {
        let path = shard_file(dir, index, job.shards);
        let file = std::fs::File::open(&path).map_err(io("cannot read", &path))?;
        boards += std::io::BufReader::new(file).lines().count() as u64;
    }
    Ok((boards, stats))
}
