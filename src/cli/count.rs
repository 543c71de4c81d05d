//! `count` over the network: on one server with a CountProgress bar, or over several
//! (`--endpoints`) with a bar of shards and per-endpoint statistics. The result on stdout.
//! Not here: `count --local`, which needs no runtime (`local.rs`).

use super::args::CountArgs;
use super::error::Error;
use super::print::{print_counts, print_stats};
use super::progress::{count_bar, finish, show_count, with_shards_bar};
use crate::client::Target;
use crate::fanout;
use crate::pb::CountRequest;

/// `count` (without `--local`): over `--endpoints` when given, else on the server of
/// `--addr`.
pub async fn count(args: CountArgs) -> Result<(), Error> {
    if !args.spread.endpoints.is_empty() {
        let job = args.spread.job(args.n, &args.client, false)?;
        let urls = fanout::resolve(&args.spread.endpoints).await?;
        let total =
            with_shards_bar(job.shards, |progress| fanout::count(&job, &urls, progress)).await?;
        print_counts(total.solutions, total.fundamental, None);
        print_stats(&total.endpoints);
        return Ok(());
    }
    let request = CountRequest {
        n: args.n,
        fixed: args.client.fixed(),
        shard: args.client.shard(),
    };
    count_on_server(&args.client.target(), request).await
}

/// CountProgress from one server, with a progress bar on a terminal; the result on stdout.
async fn count_on_server(target: &Target, request: CountRequest) -> Result<(), Error> {
    let mut client = target.connect().await?;
    let mut updates = client.count_progress(request).await?.into_inner();
    let bar = count_bar();
    let mut last = None;
    while let Some(update) = updates.message().await? {
        if let Some(bar) = &bar {
            show_count(bar, &update);
        }
        if update.done {
            last = Some(update);
        }
    }
    finish(bar);
    let counts = last.ok_or(Error::NoResult)?;
    print_counts(counts.solutions, counts.fundamental, counts.turn_fixed);
    Ok(())
}
