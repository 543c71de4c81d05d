//! Glue of the `queens` binary for the commands that spread work: building the fan-out job
//! from flags, progress bars on a terminal, and printing results. The work itself lives in
//! the library (`queens::fanout`, `queens::batch`); this module only presents it.

use crate::Spread;
use indicatif::{ProgressBar, ProgressStyle};
use queens::fanout::{self, EndpointStats, Job, Progress};
use queens::pb::{Shard, Square};
use std::io::{BufRead, IsTerminal};
use std::path::Path;
use std::sync::Arc;

/// Shards per endpoint by default: a few per core of a typical replica, so a slow or lost
/// endpoint leaves little work to redistribute and the rest balance.
const SHARDS_PER_ENDPOINT: u32 = 8;

/// The fan-out job the flags describe.
pub(crate) fn job(n: u32, fixed: &[Square], fundamental: bool, spread: &Spread) -> Job {
    let endpoints = spread.endpoints.len().max(1) as u32;
    Job {
        n,
        fixed: fixed.to_vec(),
        fundamental,
        shards: spread.shards.unwrap_or(SHARDS_PER_ENDPOINT * endpoints),
        max_attempts: spread.max_attempts.max(1),
    }
}

/// A progress bar on stderr when it is a terminal: shards done, solutions so far, ETA.
fn progress_bar(total: u64) -> (Option<ProgressBar>, Option<Progress>) {
    if !std::io::stderr().is_terminal() {
        return (None, None);
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} shards, {msg} solutions, {elapsed} elapsed, ETA {eta}",
        )
        .expect("valid template"),
    );
    let shown = bar.clone();
    let update: Progress = Arc::new(move |done, _, found| {
        shown.set_position(done);
        shown.set_message(found.to_string());
    });
    (Some(bar), Some(update))
}

/// A progress bar for `count` on stderr when it is a terminal.
pub(crate) fn count_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} subproblems, {msg}, {elapsed} elapsed, ETA {eta}",
        )
        .expect("valid template"),
    );
    Some(bar)
}

/// Shows a CountProgress update: subproblems done, solutions so far and their rate.
pub(crate) fn show_count(bar: &ProgressBar, update: &queens::pb::CountUpdate) {
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

/// `count --endpoints`: the total on stdout, per-endpoint statistics on stderr.
pub(crate) async fn count_fanout(job: Job, endpoints: &[String]) -> Result<(), String> {
    let urls = fanout::resolve(endpoints).await?;
    let (bar, progress) = progress_bar(u64::from(job.shards));
    let total = fanout::count(&job, &urls, progress).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let total = total?;
    println!("solutions: {}", total.solutions);
    if let Some(fundamental) = total.fundamental {
        println!("fundamental: {fundamental}");
    }
    print_stats(&total.endpoints);
    Ok(())
}

/// `enumerate --endpoints --out DIR`: the boards written, on stdout.
pub(crate) async fn enumerate_fanout(
    job: Job,
    endpoints: &[String],
    dir: &Path,
) -> Result<(), String> {
    let urls = fanout::resolve(endpoints).await?;
    let (bar, progress) = progress_bar(u64::from(job.shards));
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

/// `count --local`: one shard counted in process.
pub(crate) fn count_local(
    n: u32,
    fixed: &[Square],
    shard: Option<Shard>,
    shards: Option<u32>,
    json: bool,
) -> Result<(), String> {
    let shard = match (shard, shards) {
        (Some(s), _) => queens::solver::Shard {
            index: s.index,
            count: s.count,
        },
        (None, Some(count)) => {
            let index = std::env::var("JOB_COMPLETION_INDEX")
                .map_err(|_| "--shards without --shard needs $JOB_COMPLETION_INDEX".to_string())?
                .trim()
                .parse()
                .map_err(|e| format!("JOB_COMPLETION_INDEX: {e}"))?;
            queens::solver::Shard { index, count }
        }
        (None, None) => queens::solver::Shard::WHOLE,
    };
    let fixed: Vec<queens::solver::Square> = fixed
        .iter()
        .map(|s| queens::solver::Square {
            row: s.row,
            column: s.column,
        })
        .collect();
    let counted = queens::batch::count_local(n, &fixed, shard)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&counted).map_err(|e| e.to_string())?
        );
    } else {
        println!("solutions: {}", counted.solutions);
        if let Some(fundamental) = counted.fundamental {
            println!("fundamental: {fundamental}");
        }
    }
    Ok(())
}

/// `sum`: the total of shard lines from files or stdin.
pub(crate) fn sum(files: &[std::path::PathBuf]) -> Result<(), String> {
    let mut lines = Vec::new();
    if files.is_empty() {
        for line in std::io::stdin().lock().lines() {
            lines.push(line.map_err(|e| format!("stdin: {e}"))?);
        }
    }
    for path in files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        lines.extend(text.lines().map(str::to_string));
    }
    let total = queens::batch::sum(lines)?;
    println!("n: {}", total.n);
    println!("shards: {}", total.shards);
    println!("solutions: {}", total.solutions);
    if let Some(fundamental) = total.fundamental {
        println!("fundamental: {fundamental}");
    }
    Ok(())
}
