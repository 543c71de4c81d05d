//! A reader that takes nothing: the one place the stall timeout (`--stall-timeout`) is
//! applied to a bounded channel of responses, whether every message must arrive
//! ([`send_within`]: Enumerate's messages, a count's last word) or a reader that is behind
//! may miss some ([`Behind`]: CountProgress's updates).
//!
//! Not here: the other reasons a search ends early (`end.rs`).

use super::end::End;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Sends `item`, waiting for room at most `stall`: [`End::Stalled`] when the reader took
/// nothing meanwhile, [`End::ClientGone`] when it went away.
pub async fn send_within<T>(tx: &mpsc::Sender<T>, item: T, stall: Duration) -> Result<(), End> {
    tokio::select! {
        sent = tx.send(item) => sent.map_err(|_| End::ClientGone),
        () = tokio::time::sleep(stall) => Err(End::Stalled { after: stall }),
    }
}

/// Since when a reader has left every offered item in the channel, for a sender that may
/// skip items but not wait forever.
#[derive(Debug)]
pub struct Behind {
    /// How long the reader may take nothing.
    stall: Duration,
    /// When the channel was first found full, since the last item that went in.
    full_since: Option<Instant>,
}

impl Behind {
    /// A reader not yet behind, allowed to take nothing for `stall`.
    pub fn new(stall: Duration) -> Behind {
        Behind {
            stall,
            full_since: None,
        }
    }

    /// Offers `item` without waiting: `Ok(true)` if it went in, `Ok(false)` if it was
    /// dropped (the channel is full or closed), [`End::Stalled`] when the channel has been
    /// full for the stall timeout.
    pub fn offer<T>(&mut self, tx: &mpsc::Sender<T>, item: T) -> Result<bool, End> {
        match tx.try_send(item) {
            Ok(()) => {
                self.full_since = None;
                Ok(true)
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                let since = *self.full_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= self.stall {
                    return Err(End::Stalled { after: self.stall });
                }
                Ok(false)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.full_since = None;
                Ok(false)
            }
        }
    }
}
