//! The Arrow form of boards: the schema of every Flight stream and one record batch per
//! packed Enumerate message, built without copying the records.
//!
//! One column, `board`, of type `FixedSizeList<UInt8>[n]` (neither the lists nor their items
//! nullable): item r of a row is the column of row r's queen. Its values buffer is the packed
//! records exactly as Enumerate sends them, so a batch costs no transposition here, and a
//! reader gets an `(boards, n)` uint8 array without a copy (pyarrow:
//! `column.combine_chunks().values.to_numpy().reshape(-1, n)`); polars reads it as an
//! `Array(UInt8, n)` column and DuckDB as `UTINYINT[n]` (`board[1]` is row 0's column).
//! n separate columns would cost a transposition per batch on the server for no reader's
//! gain. A ticket may ask for the buffers compressed (Arrow IPC's own ZSTD or LZ4_FRAME
//! buffer compression, [`write_options`]), which every Arrow reader undoes on its own. Not
//! here: what the boards are (the stream's) or how batches are sent (the service).

use super::command::Compression;
use arrow_array::{ArrayRef, FixedSizeListArray, RecordBatch, UInt8Array};
use arrow_buffer::ScalarBuffer;
use arrow_ipc::CompressionType;
use arrow_ipc::writer::IpcWriteOptions;
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema, SchemaRef};
use std::collections::HashMap;
use std::sync::Arc;

/// The name of the one column.
pub const COLUMN: &str = "board";

/// The zstd level of compressed batches. Level 1 both costs less CPU and writes fewer bytes
/// than zstd's default 3 on these records: packed boards of n = 14 in 64 KiB messages took
/// 5.08 bytes a board at level 1 and 5.24 at 3 (docs/performance.md, the packed layouts).
const ZSTD_LEVEL: i32 = 1;

/// The list items' field: a queen's column, never null.
fn item() -> FieldRef {
    Arc::new(Field::new("item", DataType::UInt8, false))
}

/// The schema of the boards of size `n` (1..=32), with `n` also in its metadata.
pub fn schema(n: u32) -> SchemaRef {
    let list = DataType::FixedSizeList(item(), n as i32);
    let metadata = HashMap::from([("queens.n".to_string(), n.to_string())]);
    Arc::new(Schema::new_with_metadata(
        vec![Field::new(COLUMN, list, false)],
        metadata,
    ))
}

/// The record batch of `packed` (whole n-byte records) under `schema` (from [`schema`]).
pub fn record_batch(
    schema: &SchemaRef,
    n: u32,
    packed: Vec<u8>,
) -> Result<RecordBatch, ArrowError> {
    let values: ArrayRef = Arc::new(UInt8Array::new(ScalarBuffer::from(packed), None));
    let boards = FixedSizeListArray::try_new(item(), n as i32, values, None)?;
    RecordBatch::try_new(schema.clone(), vec![Arc::new(boards)])
}

/// The IPC options of a stream whose buffers are compressed with `compression`.
pub fn write_options(compression: Compression) -> Result<IpcWriteOptions, ArrowError> {
    let options = IpcWriteOptions::default();
    match compression {
        Compression::None => Ok(options),
        Compression::Zstd => options
            .try_with_compression(Some(CompressionType::ZSTD))?
            .try_with_compression_level(Some(ZSTD_LEVEL)),
        Compression::Lz4 => options.try_with_compression(Some(CompressionType::LZ4_FRAME)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_ipc::reader::StreamReader;
    use arrow_ipc::writer::StreamWriter;

    #[test]
    fn a_batch_holds_the_records_as_rows() {
        let schema = schema(4);
        let batch = record_batch(&schema, 4, vec![1, 3, 0, 2, 2, 0, 3, 1]).unwrap();
        assert_eq!(batch.num_rows(), 2);
        let boards = batch
            .column(0)
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .unwrap();
        let second = boards.value(1);
        let second = second.as_any().downcast_ref::<UInt8Array>().unwrap();
        assert_eq!(second.values().as_ref(), [2, 0, 3, 1]);
        assert_eq!(boards.null_count(), 0);
        assert_eq!(schema.metadata()["queens.n"], "4");
        assert!(record_batch(&schema, 4, vec![1, 3, 0]).is_err());
    }

    #[test]
    fn compressed_streams_read_back_the_same_records_in_fewer_bytes() {
        let schema = schema(8);
        // 4,096 copies of two boards: as repetitive as a sorted run of boards, and more.
        let packed: Vec<u8> = [0u8, 4, 7, 5, 2, 6, 1, 3, 0, 5, 7, 2, 6, 3, 1, 4].repeat(2048);
        let batch = record_batch(&schema, 8, packed.clone()).unwrap();
        let mut sizes = Vec::new();
        for compression in [Compression::None, Compression::Zstd, Compression::Lz4] {
            let options = write_options(compression).expect("built in");
            let mut writer =
                StreamWriter::try_new_with_options(Vec::new(), &schema, options).unwrap();
            writer.write(&batch).unwrap();
            let bytes = writer.into_inner().unwrap();
            sizes.push(bytes.len());
            let read: Vec<RecordBatch> = StreamReader::try_new(&bytes[..], None)
                .unwrap()
                .map(|b| b.unwrap())
                .collect();
            assert_eq!(read, std::slice::from_ref(&batch), "{compression:?}");
        }
        assert!(sizes[0] > packed.len(), "{sizes:?}");
        assert!(
            sizes[1] * 10 < sizes[0] && sizes[2] * 10 < sizes[0],
            "{sizes:?}"
        );
    }
}
