//! Admission: the server-wide cap on searches running at once (`--max-searches`), each
//! client's share of it (`--max-searches-per-client`), so one client cannot keep everyone
//! else out, and the memory budget (`--max-memory`, `budget.rs`). A search takes a slot and
//! reserves its memory before it starts and holds both until it ends; when either is not
//! there the call is refused at once. Which threads a search runs on is the pool's business,
//! not this one's.

use super::Error;
use super::budget::{Budget, Need, Reservation, Reserved};
use super::call::ClientId;
use super::shares::{Share, Shares};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// The search slots, each client's share, and the server's shutdown signal.
#[derive(Clone, Debug)]
pub struct Admission {
    /// One permit per running search, server-wide.
    slots: Arc<Semaphore>,
    limit: usize,
    /// Searches running per client.
    shares: Shares,
    /// The bytes searches reserve.
    budget: Budget,
    stopping: watch::Receiver<bool>,
}

/// A running search's slot and memory; given back when dropped.
#[derive(Debug)]
pub struct SearchSlot {
    _permit: OwnedSemaphorePermit,
    _share: Share,
    memory: Reserved,
}

impl SearchSlot {
    /// The engines its memory was reserved for.
    pub fn engines(&self) -> usize {
        self.memory.engines
    }

    /// The reservation of the join's tables this search uses, if any: the solver keeps it
    /// alive with the tables.
    pub fn tables(&self) -> Option<Arc<Reservation>> {
        self.memory.tables.clone()
    }
}

impl Drop for SearchSlot {
    fn drop(&mut self) {
        metrics::gauge!("queens_searches_running").decrement(1.0);
    }
}

impl Admission {
    /// `limit` slots, at most `per_client` of them for one client, and `memory` bytes for
    /// all, refused to all once `stopping` turns true.
    pub fn new(
        limit: usize,
        per_client: usize,
        memory: u64,
        stopping: watch::Receiver<bool>,
    ) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            shares: Shares::new(per_client),
            budget: Budget::new(memory),
            stopping,
        }
    }

    /// The memory budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Takes a search slot for `client` and reserves `need` of memory, or refuses at once: a
    /// quick RESOURCE_EXHAUSTED lets clients back off or go to another replica, where a
    /// queue would hide the overload and hold their connections.
    pub fn admit(&self, client: &ClientId, need: Need) -> Result<SearchSlot, Error> {
        let refused = |reason: &'static str| {
            metrics::counter!("queens_searches_refused_total", "reason" => reason).increment(1);
        };
        if *self.stopping.borrow() {
            refused("shutting_down");
            return Err(Error::ShuttingDown);
        }
        // A full server says so first: that is what every client is waiting for.
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            refused("max_searches");
            Error::Busy { limit: self.limit }
        })?;
        let share = self.shares.take(client).ok_or_else(|| {
            refused("max_searches_per_client");
            Error::ClientBusy {
                limit: self.shares.per_client(),
            }
        })?;
        let memory = self.budget.reserve(need).inspect_err(|_| {
            refused("max_memory");
            metrics::counter!("queens_requests_shed_total", "reason" => "max_memory").increment(1);
        })?;
        metrics::gauge!("queens_searches_running").increment(1.0);
        Ok(SearchSlot {
            _permit: permit,
            _share: share,
            memory,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_client_cannot_take_every_slot() {
        let (_tx, stopping) = watch::channel(false);
        let admission = Admission::new(4, 2, u64::MAX, stopping);
        let a = ClientId::Address("127.0.0.1".parse().unwrap());
        let b = ClientId::Address("127.0.0.2".parse().unwrap());
        let a1 = admission.admit(&a, Need::default()).expect("first");
        let _a2 = admission.admit(&a, Need::default()).expect("second");
        assert!(matches!(
            admission.admit(&a, Need::default()),
            Err(Error::ClientBusy { limit: 2 })
        ));
        let _b1 = admission
            .admit(&b, Need::default())
            .expect("another client");
        let _b2 = admission
            .admit(&b, Need::default())
            .expect("another client's second");
        assert!(matches!(
            admission.admit(&ClientId::Local, Need::default()),
            Err(Error::Busy { limit: 4 })
        ));
        drop(a1);
        let _a3 = admission
            .admit(&a, Need::default())
            .expect("a slot given back is taken again");
        assert_eq!(admission.shares.held_by(&a), 2);
    }
}
