//! The receiving side of one stream ([`Messages`]): the channel's messages in order, then the
//! reason when the stream ended early, which overtakes messages still queued.
//!
//! Not here: what fills the channel (`send.rs`), how a stream starts (`mod.rs`).

use super::encode::EncodedBatch;
use super::end::End;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::Stream;

/// The messages of one stream, in order, then the reason when it ends early.
///
/// The reason overtakes messages still queued: a stream cut short must never look complete
/// to its client, not even to one that reads too slowly to take the queued messages first.
pub struct Messages {
    rx: mpsc::Receiver<EncodedBatch>,
    end: Option<oneshot::Receiver<End>>,
    /// Set once the reason went out: nothing follows it.
    ended: bool,
}

impl Stream for Messages {
    type Item = Result<EncodedBatch, End>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if let Some(end) = self.end.as_mut() {
            match Pin::new(end).poll(cx) {
                Poll::Ready(Ok(end)) => {
                    self.end = None;
                    self.ended = true;
                    self.rx.close();
                    return Poll::Ready(Some(Err(end)));
                }
                Poll::Ready(Err(_)) => self.end = None,
                Poll::Pending => {}
            }
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(batch)) => Poll::Ready(Some(Ok(batch))),
            // The sender sets the reason before it lets go of the channel.
            Poll::Ready(None) if self.end.is_some() => {
                let end = self.end.as_mut().and_then(|end| end.try_recv().ok());
                self.end = None;
                Poll::Ready(end.map(Err))
            }
            other => other.map(|batch| batch.map(Ok)),
        }
    }
}

impl Messages {
    /// The messages of `rx`, then the reason `end` carries if the sender sets one.
    pub(super) fn new(rx: mpsc::Receiver<EncodedBatch>, end: oneshot::Receiver<End>) -> Messages {
        Messages {
            rx,
            end: Some(end),
            ended: false,
        }
    }
}
