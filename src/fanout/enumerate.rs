//! A fanned-out enumeration into files: one file of column lists per shard, each resumed
//! after its last complete line, and `manifest.json` recording the job and its finished
//! shards, so rerunning the same command finishes the job.

use super::error::Error;
use super::job::FanoutJob;
use super::queue::{EndpointStats, OnShard, ShardTask, run_shards};
use crate::client::{Client, records};
use crate::pb::EnumerateRequest;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    fn of(job: &FanoutJob) -> Manifest {
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

    /// Writes the manifest atomically: a temporary file, synced to disk, renamed over the
    /// old one, and the directory synced, so a crash (even of the machine) leaves the old
    /// manifest or the new one, never a torn one.
    fn save(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join("manifest.json.tmp");
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?)?;
        file.sync_all()?;
        std::fs::rename(tmp, Manifest::path(dir))?;
        std::fs::File::open(dir)?.sync_all()
    }
}

/// The file of shard `index` of `count` in `dir`.
pub fn shard_file(dir: &Path, index: u32, count: u32) -> PathBuf {
    dir.join(format!("shard-{index:05}-of-{count:05}.txt"))
}

/// Enumerating one shard into its file, resuming after its last complete line.
#[derive(Clone)]
struct EnumerateShard {
    job: Arc<FanoutJob>,
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
            shard: Some(self.job.shard(index)),
            start_after,
            packed: true,
            ..Default::default()
        };
        let n = self.job.n as usize;
        let mut stream = client.enumerate(request).await?.into_inner();
        let mut text = Vec::new();
        while let Some(message) = stream.message().await? {
            let records = records(n, &message);
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
    job: &FanoutJob,
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
