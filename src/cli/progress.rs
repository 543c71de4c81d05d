//! Progress bars on stderr, shown only when stderr is a terminal: subproblems of a count,
//! boards of a stream (its total from a Count asked alongside), shards of a fan-out.

use crate::client::Client;
use crate::fanout::OnShard;
use crate::pb::{CountRequest, CountUpdate, EnumerateRequest};
use indicatif::{ProgressBar, ProgressStyle};
use std::future::Future;
use std::io::IsTerminal;
use std::sync::Arc;

/// A progress bar on stderr with this template, when stderr is a terminal.
pub(super) fn bar(template: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    Some(bar)
}

/// Clears a bar, if there is one, once its work is over.
pub(super) fn finish(bar: Option<ProgressBar>) {
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// A bar of CountProgress updates: subproblems done, solutions so far and their rate.
pub(super) fn count_bar() -> Option<ProgressBar> {
    bar("{bar:30} {pos}/{len} subproblems, {msg}, {elapsed} elapsed, ETA {eta}")
}

/// Shows a CountProgress update: subproblems done, solutions so far and their rate.
pub(super) fn show_count(bar: &ProgressBar, update: &CountUpdate) {
    bar.set_length(update.subproblems_total);
    bar.set_position(update.subproblems_done);
    let rate = update.solutions as f64 / update.elapsed_seconds.max(1e-9);
    bar.set_message(format!("{} solutions ({rate:.3e}/s)", update.solutions));
}

/// A progress bar for an Enumerate stream when stderr is a terminal; its total comes from a
/// Count of the same question asked alongside (none when resuming, or when the count fails).
/// Call it once the stream is admitted.
pub(super) fn enumerate_bar(client: &Client, request: &EnumerateRequest) -> Option<ProgressBar> {
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

/// Runs a fan-out of `shards` shards with a bar of shards done, solutions so far and ETA
/// (when stderr is a terminal), cleared when it ends.
pub(super) async fn with_shards_bar<T, F>(shards: u32, run: impl FnOnce(Option<OnShard>) -> F) -> T
where
    F: Future<Output = T>,
{
    let bar = bar("{bar:30} {pos}/{len} shards, {msg} solutions, {elapsed} elapsed, ETA {eta}");
    let progress = bar.as_ref().map(|bar| {
        bar.set_length(u64::from(shards));
        let shown = bar.clone();
        let update: OnShard = Arc::new(move |done, _, found| {
            shown.set_position(done);
            shown.set_message(found.to_string());
        });
        update
    });
    let result = run(progress).await;
    finish(bar);
    result
}
