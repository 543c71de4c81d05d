//! Admission: the server-wide cap on searches running at once (`--max-searches`). A search
//! takes a slot before it starts and holds it until it ends; when none is free the call is
//! refused at once. Which threads a search runs on is the pool's business, not this one's.

use super::Error;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// The search slots and the server's shutdown signal.
#[derive(Clone, Debug)]
pub struct Admission {
    /// One permit per running search, server-wide.
    slots: Arc<Semaphore>,
    limit: usize,
    stopping: watch::Receiver<bool>,
}

/// A running search's slot; given back when dropped.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

impl Admission {
    /// `limit` slots, refused to all once `stopping` turns true.
    pub fn new(limit: usize, stopping: watch::Receiver<bool>) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            stopping,
        }
    }

    /// Takes a search slot, or refuses at once: a quick RESOURCE_EXHAUSTED lets clients back
    /// off or go to another replica, where a queue would hide the overload and hold their
    /// connections.
    pub fn admit(&self) -> Result<Slot, Error> {
        if *self.stopping.borrow() {
            return Err(Error::ShuttingDown);
        }
        self.slots
            .clone()
            .try_acquire_owned()
            .map(Slot)
            .map_err(|_| Error::Busy { limit: self.limit })
    }
}
