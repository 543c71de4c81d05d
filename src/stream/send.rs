//! The sending side of one stream, an async task: takes the producer's bytes in order, cuts
//! them into response messages of the stream's batch size, and sends them through the bounded
//! channel that is the response stream, waiting while the client is behind. It ends the
//! stream at the limit or the search's end, or early when the client goes away, the server
//! shuts down or the search reaches the server's time limit, and then stops the producer and
//! gives back the stream's search slot. An early end's reason goes out on its own channel,
//! ahead of queued messages (`Messages`, in `mod.rs`), so it never waits for a slow reader.

use super::encode::EncodedBatch;
use super::end::{Cutoffs, End};
use super::produce::{Producer, Take};
use super::stall::send_within;
use crate::wire::front::FrontEncoder;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// One stream's sender.
pub(super) struct Sender {
    pub(super) producer: Arc<Producer>,
    pub(super) tx: mpsc::Sender<EncodedBatch>,
    /// Where the reason of an early end goes.
    pub(super) end: oneshot::Sender<End>,
    /// The server's shutdown, its time limit on one search and the call's deadline.
    pub(super) cutoffs: Cutoffs,
    /// Bytes of one board's entry.
    pub(super) entry_len: usize,
    /// Messages carry packed records.
    pub(super) packed: bool,
    /// Messages go out front coded: the board size and the encoder.
    pub(super) front: Option<(usize, FrontEncoder)>,
    /// Boards per message.
    pub(super) per_message: usize,
    /// Boards to send at most.
    pub(super) limit: Option<u64>,
    /// Longest a board waits in a partly filled message.
    pub(super) flush: Duration,
    /// Longest a message waits for the reader to make room.
    pub(super) stall: Duration,
}

impl Sender {
    /// Sends the whole stream; `slot` (the stream's search slot) is dropped when the search
    /// ends, before any last word to the client.
    pub(super) async fn run<S>(mut self, slot: S) {
        let result = self.pump().await;
        self.producer.stop();
        drop(slot);
        match result {
            Err(End::ClientGone) => {
                metrics::counter!("queens_streams_client_gone_total", "grpc_method" => "Enumerate")
                    .increment(1);
            }
            Err(end) => {
                let _ = self.end.send(end);
            }
            Ok(()) => {}
        }
    }

    /// Moves the producer's bytes into messages until the stream is complete.
    async fn pump(&mut self) -> Result<(), End> {
        let entry = self.entry_len;
        let mut batch = Vec::new();
        let mut in_batch = 0;
        let mut left = self.limit.unwrap_or(u64::MAX);
        // As if a message had just gone a flush interval ago: the first boards go out at
        // once, then messages fill up.
        let mut sent = Instant::now()
            .checked_sub(self.flush)
            .unwrap_or_else(Instant::now);
        while left > 0 {
            match self.producer.take() {
                Take::Bytes(chunk) => {
                    let keep = ((chunk.len() / entry) as u64).min(left);
                    left -= keep;
                    let mut rest = &chunk[..keep as usize * entry];
                    while !rest.is_empty() {
                        let room = (self.per_message - in_batch) * entry;
                        let (now, later) = rest.split_at(room.min(rest.len()));
                        batch.extend_from_slice(now);
                        in_batch += now.len() / entry;
                        rest = later;
                        if in_batch == self.per_message {
                            self.send(&mut batch).await?;
                            (in_batch, sent) = (0, Instant::now());
                        }
                    }
                    if in_batch > 0 && sent.elapsed() >= self.flush {
                        self.send(&mut batch).await?;
                        (in_batch, sent) = (0, Instant::now());
                    }
                }
                Take::Empty => {
                    let due = self.flush.saturating_sub(sent.elapsed());
                    if in_batch > 0 && due.is_zero() {
                        self.send(&mut batch).await?;
                        (in_batch, sent) = (0, Instant::now());
                        continue;
                    }
                    self.wait(in_batch > 0, due).await?;
                }
                Take::Done => break,
                Take::Failed => return Err(End::Failed),
            }
        }
        if in_batch > 0 {
            self.send(&mut batch).await?;
        }
        Ok(())
    }

    /// Waits for the producer's next bytes, or for `due` when a partial message is waiting.
    async fn wait(&mut self, partial: bool, due: Duration) -> Result<(), End> {
        let flush = async {
            if partial {
                tokio::time::sleep(due).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = self.producer.wake.notified() => Ok(()),
            () = flush => Ok(()),
            () = self.tx.closed() => Err(End::ClientGone),
            end = self.cutoffs.reached() => Err(end),
        }
    }

    /// Sends `batch` as one message, waiting for room in the channel.
    async fn send(&mut self, batch: &mut Vec<u8>) -> Result<(), End> {
        let capacity = self.per_message * self.entry_len;
        let message = match &mut self.front {
            // The records are coded into a new buffer; theirs is kept for the next message.
            Some((n, encoder)) => {
                let mut coded = Vec::with_capacity(batch.len() / 3);
                encoder.encode(*n, batch, &mut coded);
                let boards = (batch.len() / *n) as u32;
                batch.clear();
                EncodedBatch {
                    bytes: coded,
                    packed: true,
                    front_coded: Some(boards),
                }
            }
            None => EncodedBatch {
                bytes: std::mem::replace(batch, Vec::with_capacity(capacity)),
                packed: self.packed,
                front_coded: None,
            },
        };
        tokio::select! {
            sent = send_within(&self.tx, message, self.stall) => sent,
            end = self.cutoffs.reached() => Err(end),
        }
    }
}
