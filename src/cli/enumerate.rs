//! `enumerate`: one stream's boards on stdout as they come (rendered, compact or packed),
//! with a progress bar on a terminal; or, with `--out DIR`, the boards fetched shard by
//! shard into files, resumably, from the server or over `--endpoints`.

use super::args::EnumerateArgs;
use super::error::Error;
use super::print::print_stats;
use super::progress::{enumerate_bar, finish, with_shards_bar};
use crate::client::{Target, records};
use crate::fanout;
use crate::pb::EnumerateRequest;
use crate::render;
use std::io::Write;

/// How `enumerate` writes boards on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Print {
    /// Rendered rows, a blank line between boards.
    Classic,
    /// One column list (`1,3,0,2`) per line.
    Compact,
    /// Raw `n`-byte records (byte r = the column of row r), as `count-ref -e` writes them.
    Packed,
}

/// `enumerate`: into files with `--out DIR` (from `--endpoints`, else from `--addr`), else
/// one stream on stdout.
pub async fn enumerate(args: EnumerateArgs) -> Result<(), Error> {
    if let Some(dir) = &args.out {
        let job = args.spread.job(args.n, &args.client, args.fundamental)?;
        let endpoints = match args.spread.endpoints.is_empty() {
            true => vec![args.client.addr.clone()],
            false => args.spread.endpoints.clone(),
        };
        let urls = fanout::resolve(&endpoints).await?;
        let (boards, stats) = with_shards_bar(job.shards, |progress| {
            fanout::enumerate(&job, &urls, dir, progress)
        })
        .await?;
        println!(
            "boards: {boards} in {} shard files in {}",
            job.shards,
            dir.display()
        );
        print_stats(&stats);
        return Ok(());
    }
    let print = match (args.packed, args.compact) {
        (true, _) => Print::Packed,
        (false, true) => Print::Compact,
        (false, false) => Print::Classic,
    };
    let request = EnumerateRequest {
        n: args.n,
        fundamental: args.fundamental,
        fixed: args.client.fixed(),
        shard: args.client.shard(),
        start_after: args.start_after,
        limit: args.limit,
        batch_size: args.batch_size,
        compact: args.compact,
        packed: args.packed,
    };
    stream(&args.client.target(), request, print).await
}

/// The boards of one stream on stdout as they come, in the form `print` asks for, with a
/// progress bar on a terminal (its total from a Count asked alongside). The boards travel
/// packed whatever the form, and are written from those bytes. A closed stdout (`| head`)
/// ends the command quietly.
async fn stream(target: &Target, mut request: EnumerateRequest, print: Print) -> Result<(), Error> {
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
    let table = render::row_table(n);
    let mut text = Vec::new();
    let mut first = true;
    while let Some(response) = stream.message().await? {
        let records = records(n, &response);
        let bytes: &[u8] = match print {
            Print::Packed => &records,
            Print::Compact => {
                text.clear();
                render::compact_records(n, &records, &mut text);
                &text
            }
            Print::Classic => {
                text.clear();
                render::classic_records(n, &table, &records, first, &mut text);
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
    finish(bar);
    Ok(())
}
