//! What a fanned-out enumeration leaves in its directory besides the boards: the shard files'
//! [`Format`] and names ([`shard_file`]: `shard-IIIII-of-KKKKK.txt` or `.parquet`), and the
//! [`Manifest`] recording the job and its finished shards (`manifest.json` beside text,
//! `_manifest.json` beside Parquet, a name dataset readers skip), saved atomically.
//!
//! It stands below the run's error (`error.rs` names a directory's other job by its format)
//! and takes nothing from the rest of the fan-out but the job. Not here: reading an old
//! manifest and deciding what is left to do, and writing the shards (`enumerate.rs`).

use super::job::FanoutJob;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

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
    /// The shard files' format (manifests from before Parquet have none: text).
    #[serde(default)]
    pub format: Format,
    /// Shards whose files are complete.
    pub done: Vec<u32>,
}

/// The format of an enumeration's shard files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Column lists (`1,3,0,2`), one board per line.
    #[default]
    Text,
    /// Parquet, one `UInt8` column per row (`r0`..`r{n-1}`).
    Parquet,
}

impl Format {
    /// The shard files' extension.
    fn extension(self) -> &'static str {
        match self {
            Format::Text => "txt",
            Format::Parquet => "parquet",
        }
    }

    /// The manifest's name: `_manifest.json` beside Parquet shards (a name dataset
    /// readers skip), `manifest.json` beside text ones.
    fn manifest(self) -> &'static str {
        match self {
            Format::Text => "manifest.json",
            Format::Parquet => "_manifest.json",
        }
    }
}

impl Manifest {
    /// A fresh manifest of `job` in `format`: no shard done.
    pub(super) fn of(job: &FanoutJob, format: Format) -> Manifest {
        Manifest {
            n: job.n,
            shards: job.shards,
            fundamental: job.fundamental,
            fixed: job.fixed.iter().map(|s| (s.row, s.column)).collect(),
            format,
            done: Vec::new(),
        }
    }

    /// Where the manifest of `format`'s shards stands in `dir`.
    pub(super) fn path(dir: &Path, format: Format) -> PathBuf {
        dir.join(format.manifest())
    }

    /// Writes the manifest atomically: a temporary file, synced to disk, renamed over the
    /// old one, and the directory synced, so a crash (even of the machine) leaves the old
    /// manifest or the new one, never a torn one.
    pub(super) fn save(&self, dir: &Path) -> std::io::Result<()> {
        let path = Manifest::path(dir, self.format);
        let tmp = path.with_extension("json.tmp");
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?)?;
        file.sync_all()?;
        std::fs::rename(tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    }
}

/// The file of shard `index` of `count` in `dir`, in `format`.
pub fn shard_file(dir: &Path, index: u32, count: u32, format: Format) -> PathBuf {
    let extension = format.extension();
    dir.join(format!("shard-{index:05}-of-{count:05}.{extension}"))
}
