//! A fanned-out enumeration into files, one per shard, and a manifest recording the job and
//! its finished shards, so rerunning the same command finishes the job. Two formats:
//!
//! - text: `shard-IIIII-of-KKKKK.txt`, column lists, each resumed after its last complete
//!   line; the manifest `manifest.json`.
//! - Parquet: `shard-IIIII-of-KKKKK.parquet` (`crate::parquet_file`), each written under a
//!   hidden temporary name and renamed when complete, so a shard is whole or absent; a rerun
//!   redoes every shard the manifest does not list as done with a readable footer. The
//!   manifest is `_manifest.json` and the temporary files start with `.`, so that
//!   `DIR/*.parquet` globs and pyarrow's dataset discovery see only the shards.
//!
//! Not here: the Parquet encoding (`crate::parquet_file`), the retry queue (`queue.rs`), the
//! format, the files' names and the manifest's own reading and writing (`manifest.rs`).

use super::error::Error;
use super::job::FanoutJob;
use super::manifest::{Format, Manifest, shard_file};
use super::queue::{EndpointStats, OnShard, ShardTask, run_shards};
use crate::client::{Client, records};
use crate::parquet_file::{self, BoardWriter};
use crate::pb::EnumerateRequest;
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Enumerating one shard into its file, resuming after its last complete line.
#[derive(Clone)]
struct EnumerateShard {
    job: Arc<FanoutJob>,
    dir: PathBuf,
    format: Format,
    manifest: Arc<Mutex<Manifest>>,
}

impl EnumerateShard {
    /// Opens the shard's file for appending after its last complete line (a partial last
    /// line, left by a killed writer, is cut off); returns it with that line's board.
    fn open(&self, index: u32) -> std::io::Result<(std::fs::File, Vec<u32>, u64)> {
        let path = shard_file(&self.dir, index, self.job.shards, Format::Text);
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

impl EnumerateShard {
    /// Streams shard `index` into its text file after its last complete line; returns the
    /// boards the file holds.
    async fn run_text(&self, mut client: Client, index: u32) -> Result<u64, tonic::Status> {
        let io = |e: std::io::Error| tonic::Status::internal(format!("shard {index} file: {e}"));
        let (file, start_after, mut written) = self.open(index).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        let n = self.job.n as usize;
        let request = self.request(index, start_after);
        let mut stream = client.enumerate(request).await?.into_inner();
        let mut text = Vec::new();
        while let Some(message) = stream.message().await? {
            let records = records(n, &message)?;
            text.clear();
            crate::render::compact_records(n, &records, &mut text);
            out.write_all(&text).map_err(io)?;
            // Whole lines reach the file message by message: a resume starts after them.
            out.flush().map_err(io)?;
            written += (records.len() / n.max(1)) as u64;
        }
        out.flush().map_err(io)?;
        // On disk before the manifest says done: a done shard's file is never short.
        out.get_ref().sync_data().map_err(io)?;
        Ok(written)
    }

    /// Streams shard `index` into its Parquet file, from its first board (a file left by an
    /// interrupted run is never complete, so never kept); returns the boards written.
    async fn run_parquet(&self, mut client: Client, index: u32) -> Result<u64, tonic::Status> {
        let failed = |e| tonic::Status::internal(format!("shard {index} file: {e}"));
        let path = shard_file(&self.dir, index, self.job.shards, Format::Parquet);
        let n = self.job.n as usize;
        let fixed: Vec<(u32, u32)> = self.job.fixed.iter().map(|s| (s.row, s.column)).collect();
        let metadata =
            parquet_file::metadata(self.job.fundamental, &fixed, Some((index, self.job.shards)));
        let mut writer = BoardWriter::create(&path, n, &metadata).map_err(failed)?;
        let mut stream = client
            .enumerate(self.request(index, Vec::new()))
            .await?
            .into_inner();
        while let Some(message) = stream.message().await? {
            writer
                .write_records(&records(n, &message)?)
                .map_err(failed)?;
        }
        // Synced and renamed before the manifest says done: a done shard's file is whole.
        writer.finish().map_err(failed)
    }

    /// The packed Enumerate request of shard `index`, after `start_after`.
    fn request(&self, index: u32, start_after: Vec<u32>) -> EnumerateRequest {
        EnumerateRequest {
            n: self.job.n,
            fundamental: self.job.fundamental,
            fixed: self.job.fixed.clone(),
            shard: Some(self.job.shard(index)),
            start_after,
            packed: true,
            layout: self.job.layout.wire(),
            ..Default::default()
        }
    }
}

impl ShardTask for EnumerateShard {
    type Output = u64;

    async fn run(&self, client: Client, index: u32) -> Result<(u64, u64), tonic::Status> {
        let written = match self.format {
            Format::Text => self.run_text(client, index).await?,
            Format::Parquet => self.run_parquet(client, index).await?,
        };
        let mut manifest = crate::sync::lock(&self.manifest);
        manifest.done.push(index);
        manifest.done.sort_unstable();
        manifest
            .save(&self.dir)
            .map_err(|e| tonic::Status::internal(format!("shard {index} manifest: {e}")))?;
        Ok((written, written))
    }
}

/// Enumerates `job` into `dir` (one file per shard in `format`, plus the manifest) over
/// `urls`, resuming whatever an earlier run left; returns the boards in all files and the
/// stats.
pub async fn enumerate(
    job: &FanoutJob,
    urls: &[String],
    dir: &Path,
    format: Format,
    progress: Option<OnShard>,
) -> Result<(u64, Vec<EndpointStats>), Error> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { what, path, source }
    };
    std::fs::create_dir_all(dir).map_err(io("cannot create", dir))?;
    let fresh = Manifest::of(job, format);
    // Either format's manifest: a folder of the other format's job is another job.
    let found = [Format::Text, Format::Parquet]
        .into_iter()
        .filter_map(|f| std::fs::read(Manifest::path(dir, f)).ok())
        .next();
    let mut manifest = match found {
        Some(bytes) => {
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
                    format: old.format,
                });
            }
            old
        }
        None => fresh,
    };
    let n = job.n as usize;
    if format == Format::Parquet {
        // A done shard whose file is gone or unreadable is done again.
        manifest.done.retain(|&index| {
            parquet_file::rows(&shard_file(dir, index, job.shards, format), n).is_ok()
        });
    }
    manifest
        .save(dir)
        .map_err(io("cannot write the manifest in", dir))?;
    let skip = manifest.done.clone();
    let task = EnumerateShard {
        job: Arc::new(job.clone()),
        dir: dir.to_path_buf(),
        format,
        manifest: Arc::new(Mutex::new(manifest)),
    };
    let (_, stats) = run_shards(job, urls, &skip, task, progress).await?;
    let mut boards = 0;
    for index in 0..job.shards {
        let path = shard_file(dir, index, job.shards, format);
        boards += match format {
            Format::Text => {
                let file = std::fs::File::open(&path).map_err(io("cannot read", &path))?;
                std::io::BufReader::new(file).lines().count() as u64
            }
            Format::Parquet => parquet_file::rows(&path, n)?,
        };
    }
    Ok((boards, stats))
}
