//! `enumerate`: one stream's boards on stdout as they come (rendered, compact or packed),
//! with a progress bar on a terminal; or, with `--out DIR`, the boards fetched shard by
//! shard into files (text or Parquet), resumably, from the server or over `--endpoints`; or,
//! with `--out FILE.parquet`, one stream into one Parquet file.
//!
//! Not here: the Parquet encoding (`crate::parquet_file`), the shard files and their
//! manifest (`crate::fanout`).

use super::args::EnumerateArgs;
use super::error::Error;
use super::print::print_stats;
use super::progress::{enumerate_bar, finish, with_shards_bar};
use crate::client::{Target, records};
use crate::fanout::{self, Format};
use crate::parquet_file::{self, BoardWriter};
use crate::pb::EnumerateRequest;
use crate::render;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// Where `--out` and `--format` send the boards.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    /// One file per shard and a manifest in this directory.
    Dir(PathBuf, Format),
    /// One Parquet file at this path.
    File(PathBuf),
}

impl Out {
    /// What `--out PATH` means: a path ending in `.parquet` is one Parquet file (one stream:
    /// no `--shards` or `--endpoints`), any other a directory of shard files in `format`
    /// (text unless given). `--format text` with a `.parquet` path is a usage error.
    fn of(path: &Path, format: Option<Format>, spread: bool) -> Result<Out, Error> {
        let usage = |message: &str| {
            let kind = clap::error::ErrorKind::ArgumentConflict;
            Err(Error::Usage(clap::Error::raw(kind, format!("{message}\n"))))
        };
        let file = path.extension().is_some_and(|e| e == "parquet");
        match (file, format) {
            (false, format) => Ok(Out::Dir(path.to_path_buf(), format.unwrap_or_default())),
            (true, Some(Format::Text)) => usage(
                "--format text writes a directory; a path ending in .parquet is a Parquet file",
            ),
            (true, _) if spread => usage(
                "--out FILE.parquet is one stream into one file; for --shards or --endpoints give a \
                 directory (--out DIR --format parquet)",
            ),
            (true, _) => Ok(Out::File(path.to_path_buf())),
        }
    }
}

/// `enumerate`: into files with `--out DIR` (from `--endpoints`, else from `--addr`), into
/// one Parquet file with `--out FILE.parquet`, else one stream on stdout.
pub async fn enumerate(args: EnumerateArgs) -> Result<(), Error> {
    let spread = !args.spread.endpoints.is_empty() || args.spread.shards.is_some();
    let out = match &args.out {
        Some(path) => Some(Out::of(path, args.format, spread)?),
        None => None,
    };
    if let Some(Out::Dir(dir, format)) = &out {
        let mut job = args.spread.job(args.n, &args.client, args.fundamental)?;
        job.layout = args.layout;
        let endpoints = match args.spread.endpoints.is_empty() {
            true => vec![args.client.addr.clone()],
            false => args.spread.endpoints.clone(),
        };
        let urls = fanout::resolve(&endpoints).await?;
        let (boards, stats) = with_shards_bar(job.shards, |progress| {
            fanout::enumerate(&job, &urls, dir, *format, progress)
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
        layout: args.layout.wire(),
    };
    if let Some(Out::File(path)) = &out {
        return to_file(&args.client.target(), request, path).await;
    }
    let print = match (args.packed, args.compact) {
        (true, _) => Print::Packed,
        (false, true) => Print::Compact,
        (false, false) => Print::Classic,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let n = args.n as usize;
    let table = render::row_table(n);
    let mut text = Vec::new();
    let mut first = true;
    stream(&args.client.target(), request, |records| {
        let bytes: &[u8] = match print {
            Print::Packed => records,
            Print::Compact => {
                text.clear();
                render::compact_records(n, records, &mut text);
                &text
            }
            Print::Classic => {
                text.clear();
                render::classic_records(n, &table, records, first, &mut text);
                &text
            }
        };
        first &= records.is_empty();
        // A closed stdout (`| head`) ends the command quietly.
        Ok(out.write_all(bytes).and_then(|()| out.flush()).is_ok())
    })
    .await
}

/// One stream's boards into the Parquet file `path` (written under a temporary name,
/// renamed when complete; removed if the stream fails), then a line saying how many.
async fn to_file(target: &Target, request: EnumerateRequest, path: &Path) -> Result<(), Error> {
    let n = request.n as usize;
    let fixed: Vec<(u32, u32)> = request.fixed.iter().map(|s| (s.row, s.column)).collect();
    let shard = request.shard.map(|s| (s.index, s.count));
    let metadata = parquet_file::metadata(request.fundamental, &fixed, shard);
    let mut writer = BoardWriter::create(path, n, &metadata)?;
    let streamed = stream(target, request, |records| {
        writer.write_records(records)?;
        Ok(true)
    })
    .await;
    let written = streamed.and_then(|()| Ok(writer.finish()?));
    match written {
        Ok(boards) => {
            println!("boards: {boards} in {}", path.display());
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(parquet_file::temp_path(path));
            Err(e)
        }
    }
}

/// The boards of one stream, message by message, as packed records to `each` (which
/// returns false to end the stream quietly), with a progress bar on a terminal (its total
/// from a Count asked alongside). The boards travel packed whatever the output.
async fn stream(
    target: &Target,
    mut request: EnumerateRequest,
    mut each: impl FnMut(&[u8]) -> Result<bool, Error>,
) -> Result<(), Error> {
    request.packed = true;
    let n = request.n as usize;
    let mut client = target.connect().await?;
    let (count_client, asked) = (client.clone(), request.clone());
    let mut stream = client.enumerate(request).await?.into_inner();
    // Only now, with the stream admitted: a Count asked first could take the client's one
    // search slot and get the stream refused.
    let bar = enumerate_bar(&count_client, &asked);
    while let Some(response) = stream.message().await? {
        let records = records(n, &response)?;
        if !each(&records)? {
            return Ok(());
        }
        if let Some(bar) = &bar {
            bar.inc((records.len() / n.max(1)) as u64);
        }
    }
    finish(bar);
    Ok(())
}
