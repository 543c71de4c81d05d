//! What the client commands print: boards as they stream in, counts with a progress bar on a
//! terminal, fan-out totals with per-endpoint statistics, local shard counts and their sums.
//! Results go to stdout, progress and statistics to stderr.

use super::{Access, Client, Error, connect_with};
use crate::batch::{self, ShardCount};
use crate::config::read;
use crate::fanout::{self, EndpointStats, Job, OnShard};
use crate::pb::{CountRequest, CountUpdate, EnumerateRequest, Square};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Shards per endpoint by default: a few per core of a typical replica, so a slow or lost
/// endpoint leaves little work to redistribute and the rest balance.
const SHARDS_PER_ENDPOINT: u32 = 8;

/// Where a client command connects.
#[derive(Clone, Debug)]
pub struct Target {
    /// Server URL or `host:port`.
    pub addr: String,
    /// Trust this PEM CA certificate and connect over TLS.
    pub ca_cert: Option<PathBuf>,
    /// Present this PEM certificate chain and key (mutual TLS).
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Send this bearer token with every call.
    pub token: Option<String>,
}

impl Target {
    /// What the target's files and token say, read.
    pub fn access(&self) -> Result<Access, Error> {
        let identity = match &self.client_cert {
            Some((cert, key)) => Some((read(cert)?, read(key)?)),
            None => None,
        };
        Ok(Access {
            token: self.token.clone(),
            ca_pem: self.ca_cert.as_deref().map(read).transpose()?,
            identity,
        })
    }

    /// A client connected as the target says.
    pub async fn connect(&self) -> Result<Client, Error> {
        connect_with(&self.addr, &self.access()?)
            .await
            .map_err(|source| Error::Connect {
                addr: self.addr.clone(),
                source,
            })
    }
}

/// The fan-out job of a command: `shards` of them, or [`SHARDS_PER_ENDPOINT`] per endpoint.
pub fn fanout_job(
    n: u32,
    fixed: Vec<Square>,
    fundamental: bool,
    shards: Option<u32>,
    endpoints: usize,
    max_attempts: u32,
    access: Access,
) -> Job {
    let endpoints = endpoints.max(1) as u32;
    Job {
        n,
        fixed,
        fundamental,
        shards: shards.unwrap_or(SHARDS_PER_ENDPOINT * endpoints),
        max_attempts: max_attempts.max(1),
        access,
    }
}

/// `count`: CountProgress from one server, with a progress bar on a terminal; the result on
/// stdout.
pub async fn count(target: &Target, request: CountRequest) -> Result<(), Error> {
    let mut client = target.connect().await?;
    let mut updates = client.count_progress(request).await?.into_inner();
    let bar = bar("{bar:30} {pos}/{len} subproblems, {msg}, {elapsed} elapsed, ETA {eta}");
    let mut last = None;
    while let Some(update) = updates.message().await? {
        if let Some(bar) = &bar {
            show_count(bar, &update);
        }
        if update.done {
            last = Some(update);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let counts = last.ok_or(Error::NoResult)?;
    print_counts(counts.solutions, counts.fundamental);
    Ok(())
}

/// How `enumerate` writes boards on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Print {
    /// Rendered rows, a blank line between boards.
    Classic,
    /// One column list (`1,3,0,2`) per line.
    Compact,
    /// Raw `n`-byte records (byte r = the column of row r), as `count-ref -e` writes them.
    Packed,
}

/// `enumerate`: the boards of one stream on stdout as they come, in the form `print` asks
/// for, with a progress bar on a terminal (its total from a Count asked alongside). The
/// boards travel packed whatever the form, and are written from those bytes. A closed
/// stdout (`| head`) ends the command quietly.
pub async fn enumerate(
    target: &Target,
    mut request: EnumerateRequest,
    print: Print,
) -> Result<(), Error> {
    request.packed = true;
    let n = request.n as usize;
    let mut client = target.connect().await?;
    let (count_client, asked) = (client.clone(), request.clone());
    let mut stream = client.enumerate(request).await?.into_inner();
    // Only now, with the stream admitted: a Count asked first could take the client's one
    // search slot and get the stream refused.
    let bar = enumerate_bar(&count_client, &asked);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let table = crate::render::row_table(n);
    let mut text = Vec::new();
    let mut first = true;
    while let Some(response) = stream.message().await? {
        let records = super::records(n, &response);
        let bytes: &[u8] = match print {
            Print::Packed => &records,
            Print::Compact => {
                text.clear();
                crate::render::compact_records(n, &records, &mut text);
                &text
            }
            Print::Classic => {
                text.clear();
                crate::render::classic_records(n, &table, &records, first, &mut text);
                &text
            }
        };
        first &= records.is_empty();
        if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
            return Ok(());
        }
        if let Some(bar) = &bar {
            bar.inc((records.len() / n.max(1)) as u64);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(())
}

/// A progress bar for an Enumerate stream when stderr is a terminal; its total comes from a
/// Count of the same question asked alongside (none when resuming, or when the count fails).
/// Call it once the stream is admitted.
fn enumerate_bar(client: &Client, request: &EnumerateRequest) -> Option<ProgressBar> {
    let bar = bar("{bar:30} {pos}/{len} boards, {per_sec}, {elapsed} elapsed, ETA {eta}")?;
    let no_total = |bar: &ProgressBar| {
        bar.set_style(
            ProgressStyle::with_template("{pos} boards, {per_sec}, {elapsed} elapsed")
                .expect("a valid template"),
        )
    };
    if !request.start_after.is_empty() {
        no_total(&bar);
        return Some(bar);
    }
    let (mut client, shown) = (client.clone(), bar.clone());
    let count = CountRequest {
        n: request.n,
        fixed: request.fixed.clone(),
        shard: request.shard,
    };
    let (fundamental, limit) = (request.fundamental, request.limit);
    tokio::spawn(async move {
        // A server that admits one search per client refuses the Count (RESOURCE_EXHAUSTED):
        // the bar then shows boards and rate without a total.
        let total = match client.count(count).await {
            Ok(counted) if fundamental => counted.into_inner().fundamental,
            Ok(counted) => Some(counted.into_inner().solutions),
            Err(_) => None,
        };
        match total {
            Some(total) => shown.set_length(if limit > 0 { total.min(limit) } else { total }),
            None => no_total(&shown),
        }
    });
    Some(bar)
}

/// `count --endpoints`: the total on stdout, per-endpoint statistics on stderr.
pub async fn count_fanout(job: Job, endpoints: &[String]) -> Result<(), Error> {
    let urls = fanout::resolve(endpoints).await?;
    let (bar, progress) = shards_bar(u64::from(job.shards));
    let total = fanout::count(&job, &urls, progress).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let total = total?;
    print_counts(total.solutions, total.fundamental);
    print_stats(&total.endpoints);
    Ok(())
}

/// `enumerate --endpoints --out DIR`: the boards written, on stdout.
pub async fn enumerate_fanout(job: Job, endpoints: &[String], dir: &Path) -> Result<(), Error> {
    let urls = fanout::resolve(endpoints).await?;
    let (bar, progress) = shards_bar(u64::from(job.shards));
    let result = fanout::enumerate(&job, &urls, dir, progress).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (boards, stats) = result?;
    println!(
        "boards: {boards} in {} shard files in {}",
        job.shards,
        dir.display()
    );
    print_stats(&stats);
    Ok(())
}

/// `count --local`: one shard counted in process on every core (the shard from the
/// request, else from the orchestrator's index when `shards` is given); one JSON line with
/// `json`.
pub fn count_local(
    mut request: CountRequest,
    shards: Option<u32>,
    json: bool,
) -> Result<(), Error> {
    let shard = request.shard.as_ref().map(crate::solver::Shard::from);
    request.shard = Some(batch::shard_of_task(shard, shards)?.into());
    let counted: ShardCount =
        batch::count_local(&request, crate::config::default_search_threads())?;
    if json {
        println!("{}", serde_json::to_string(&counted)?);
    } else {
        print_counts(counted.solutions, counted.fundamental);
    }
    Ok(())
}

/// `sum`: the total of shard lines from files, or stdin when none is given.
pub fn sum(files: &[PathBuf]) -> Result<(), Error> {
    let mut lines = Vec::new();
    if files.is_empty() {
        for line in std::io::stdin().lock().lines() {
            lines.push(line.map_err(Error::Stdin)?);
        }
    }
    for path in files {
        let text = read(path)?;
        lines.extend(String::from_utf8_lossy(&text).lines().map(str::to_string));
    }
    let total = batch::sum(lines)?;
    println!("n: {}", total.n);
    println!("shards: {}", total.shards);
    print_counts(total.solutions, total.fundamental);
    Ok(())
}

/// Prints a result's counts.
fn print_counts(solutions: u64, fundamental: Option<u64>) {
    println!("solutions: {solutions}");
    if let Some(fundamental) = fundamental {
        println!("fundamental: {fundamental}");
    }
}

/// A progress bar on stderr with this template, when stderr is a terminal.
fn bar(template: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    Some(bar)
}

/// A bar of shards done, solutions so far and ETA, and the callback that moves it.
fn shards_bar(total: u64) -> (Option<ProgressBar>, Option<OnShard>) {
    let Some(bar) =
        bar("{bar:30} {pos}/{len} shards, {msg} solutions, {elapsed} elapsed, ETA {eta}")
    else {
        return (None, None);
    };
    bar.set_length(total);
    let shown = bar.clone();
    let update: OnShard = Arc::new(move |done, _, found| {
        shown.set_position(done);
        shown.set_message(found.to_string());
    });
    (Some(bar), Some(update))
}

/// Shows a CountProgress update: subproblems done, solutions so far and their rate.
fn show_count(bar: &ProgressBar, update: &CountUpdate) {
    bar.set_length(update.subproblems_total);
    bar.set_position(update.subproblems_done);
    let rate = update.solutions as f64 / update.elapsed_seconds.max(1e-9);
    bar.set_message(format!("{} solutions ({rate:.3e}/s)", update.solutions));
}

/// Per-endpoint statistics, on stderr.
fn print_stats(stats: &[EndpointStats]) {
    for s in stats {
        eprintln!(
            "{}: {} shards, {} solutions, {} failed calls, {:.2} s busy",
            s.url, s.shards, s.solutions, s.failures, s.busy_seconds
        );
    }
}
