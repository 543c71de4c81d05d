//! Boards as Parquet files: the schema (one `UInt8` column per row, `r0` to `r{n-1}`, holding
//! the column of that row's queen, so "a queen on a1" is `WHERE r0 = 0`), a writer that takes
//! the packed n-byte records of an Enumerate stream as they come and writes them in row
//! groups of a fixed number of rows (memory stays flat whatever n), into a temporary file
//! beside the final one that is synced and renamed over the final name only once complete;
//! and the footer of a finished file read back.
//!
//! Not here: which boards are asked for (the CLI and the fan-out call the server), where a
//! job's files go and which are done (the fan-out's manifest, `crate::fanout`).

use arrow_array::{ArrayRef, RecordBatch, UInt8Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::{KeyValue, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Boards per row group. Parquet buffers a whole row group (encoded and compressed) before
/// it writes it, so this bounds the writer's memory: at n = 16 a group of 2^20 boards is
/// about 4 MB on disk, and a few times that while it is built. Readers skip whole groups on
/// their statistics (`r0 = 0` reads the groups whose `r0` range holds 0), which smaller
/// groups would sharpen at the cost of more footer.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Boards gathered from the stream's messages (about 4,096 each at n = 16) before they go to
/// the writer as one record batch: fewer, larger batches cost the encoder less per board.
const BATCH_ROWS: usize = 1 << 16;

/// The compression of every column, chosen by measurement (docs/performance.md, "Parquet
/// files"): at n = 16 zstd (its default level, 1) made the file 15% smaller than snappy or
/// none (63.5 MB against 73.5 and 74.9: dictionary encoding does most of the work) for 13%
/// more writer CPU (1.8 s against 1.6 for 14.8 M boards).
fn compression() -> Compression {
    Compression::ZSTD(ZstdLevel::default())
}

/// The key of the board size in a file's key-value metadata (its value: decimal digits).
pub const N_KEY: &str = "queens.n";

/// The footer's key-value pairs (besides [`N_KEY`]) that say which boards a file holds:
/// `queens.fundamental` (`true`/`false`), `queens.fixed` (the fixed queens as JSON
/// `[[row, column], ...]`) and, for one part of a split search, `queens.shard` (`I/K`).
pub fn metadata(
    fundamental: bool,
    fixed: &[(u32, u32)],
    shard: Option<(u32, u32)>,
) -> Vec<(&'static str, String)> {
    let fixed: Vec<String> = fixed.iter().map(|(r, c)| format!("[{r},{c}]")).collect();
    let mut pairs = vec![
        ("queens.fundamental", fundamental.to_string()),
        ("queens.fixed", format!("[{}]", fixed.join(","))),
    ];
    if let Some((index, count)) = shard {
        pairs.push(("queens.shard", format!("{index}/{count}")));
    }
    pairs
}

/// Why a Parquet file of boards could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file system refused an operation on the path.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done (`create`, `sync`, `rename to its name`, ...).
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The Parquet encoder or decoder failed (a torn or foreign file, when reading).
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The path.
        path: PathBuf,
        /// Why.
        source: ParquetError,
    },
    /// Records whose length is not a multiple of n (a response that is not whole boards).
    #[error("{}: {len} bytes of records are not whole boards of n = {n}", path.display())]
    Ragged {
        /// The path being written.
        path: PathBuf,
        /// The records' length.
        len: usize,
        /// The board size.
        n: usize,
    },
}

/// The schema of boards of size `n`: columns `r0` to `r{n-1}`, `UInt8`, not null, with n
/// under [`N_KEY`] in its metadata (which pyarrow shows as the table's, besides the footer's
/// key-value pairs that every reader sees).
pub fn schema(n: usize) -> Schema {
    let fields: Vec<Field> = (0..n)
        .map(|r| Field::new(format!("r{r}"), DataType::UInt8, false))
        .collect();
    let metadata = std::collections::HashMap::from([(N_KEY.to_string(), n.to_string())]);
    Schema::new(fields).with_metadata(metadata)
}

/// Where the file for `path` is written until it is complete: the same folder, the name
/// with a leading `.` and a `.tmp` suffix, so that neither a glob of `*.parquet` nor
/// pyarrow's dataset discovery (which skips names starting with `.` or `_`) ever sees it.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.tmp"))
}

/// A Parquet file of boards being written: records in, row groups out, the file under its
/// final name only after [`BoardWriter::finish`].
pub struct BoardWriter {
    /// The final name.
    path: PathBuf,
    /// Where the file is written until then ([`temp_path`]).
    temp: PathBuf,
    /// The encoder, on the temporary file.
    writer: ArrowWriter<File>,
    /// The schema of its batches.
    schema: SchemaRef,
    /// The board size.
    n: usize,
    /// The gathered boards' columns: `columns[r]` holds row r's column of each board.
    columns: Vec<Vec<u8>>,
    /// Boards written so far (gathered ones included).
    rows: u64,
}

impl BoardWriter {
    /// Starts the file for `path` (boards of size `n`, `metadata` added to the footer's
    /// key-value pairs after [`N_KEY`]): creates, or truncates, its temporary file.
    pub fn create(
        path: &Path,
        n: usize,
        metadata: &[(&str, String)],
    ) -> Result<BoardWriter, FileError> {
        let temp = temp_path(path);
        let file = File::create(&temp).map_err(|source| FileError::Io {
            what: "create",
            path: temp.clone(),
            source,
        })?;
        let mut pairs = vec![KeyValue::new(N_KEY.to_string(), n.to_string())];
        pairs.extend(
            metadata
                .iter()
                .map(|(k, v)| KeyValue::new(k.to_string(), v.clone())),
        );
        let properties = WriterProperties::builder()
            .set_compression(compression())
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(pairs))
            .build();
        let schema = Arc::new(schema(n));
        let writer =
            ArrowWriter::try_new(file, schema.clone(), Some(properties)).map_err(|source| {
                FileError::Parquet {
                    path: temp.clone(),
                    source,
                }
            })?;
        Ok(BoardWriter {
            path: path.to_path_buf(),
            temp,
            writer,
            schema,
            n,
            columns: vec![Vec::with_capacity(BATCH_ROWS); n],
            rows: 0,
        })
    }

    /// Adds boards given as consecutive n-byte records (byte r = the column of row r).
    pub fn write_records(&mut self, records: &[u8]) -> Result<(), FileError> {
        if self.n == 0 || !records.len().is_multiple_of(self.n) {
            return Err(FileError::Ragged {
                path: self.path.clone(),
                len: records.len(),
                n: self.n,
            });
        }
        for board in records.chunks_exact(self.n) {
            for (column, &value) in self.columns.iter_mut().zip(board) {
                column.push(value);
            }
            if self.columns[0].len() == BATCH_ROWS {
                self.flush_batch()?;
            }
        }
        self.rows += (records.len() / self.n) as u64;
        Ok(())
    }

    /// Boards written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Hands the gathered boards to the encoder as one record batch.
    fn flush_batch(&mut self) -> Result<(), FileError> {
        if self.columns[0].is_empty() {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|c| Arc::new(UInt8Array::from(std::mem::take(c))) as ArrayRef)
            .collect();
        let parquet = |source| FileError::Parquet {
            path: self.temp.clone(),
            source,
        };
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| parquet(ParquetError::from(e)))?;
        self.writer.write(&batch).map_err(parquet)?;
        for column in &mut self.columns {
            column.reserve(BATCH_ROWS);
        }
        Ok(())
    }

    /// Completes the file: the last boards and the footer written, the file synced to disk,
    /// renamed to its final name and the folder synced, so that a crash leaves either no
    /// file under the final name or a complete one. Returns the boards written.
    pub fn finish(mut self) -> Result<u64, FileError> {
        self.flush_batch()?;
        let temp = self.temp;
        let file = self
            .writer
            .into_inner()
            .map_err(|source| FileError::Parquet {
                path: temp.clone(),
                source,
            })?;
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| FileError::Io { what, path, source }
        };
        file.sync_all().map_err(io("sync", &temp))?;
        std::fs::rename(&temp, &self.path).map_err(io("rename to its name", &self.path))?;
        let folder = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(folder)
            .and_then(|f| f.sync_all())
            .map_err(io("sync the folder of", &self.path))?;
        Ok(self.rows)
    }
}

/// The number of boards in the complete Parquet file at `path`, from its footer; an error
/// for a missing, torn or foreign file (no footer, or no [`N_KEY`] of `n`).
pub fn rows(path: &Path, n: usize) -> Result<u64, FileError> {
    let file = File::open(path).map_err(|source| FileError::Io {
        what: "open",
        path: path.to_path_buf(),
        source,
    })?;
    let parquet = |source| FileError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .map_err(parquet)?;
    let meta = metadata.file_metadata();
    let stored_n = meta
        .key_value_metadata()
        .and_then(|pairs| pairs.iter().find(|kv| kv.key == N_KEY))
        .and_then(|kv| kv.value.as_deref());
    if stored_n != Some(n.to_string().as_str()) {
        return Err(parquet(ParquetError::General(format!(
            "not a file of boards of n = {n} (its {N_KEY} is {stored_n:?})"
        ))));
    }
    Ok(u64::try_from(meta.num_rows()).unwrap_or(0))
}
