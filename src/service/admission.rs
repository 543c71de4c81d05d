//! Admission: the server-wide cap on searches running at once (`--max-searches`), and each
//! client's share of it (`--max-searches-per-client`), so one client cannot keep everyone
//! else out. A search takes a slot before it starts and holds it until it ends; when none is
//! free the call is refused at once. Which threads a search runs on is the pool's business,
//! not this one's.

use super::Error;
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
    stopping: watch::Receiver<bool>,
}

/// A running search's slot; given back when dropped.
#[derive(Debug)]
pub struct SearchSlot {
    _permit: OwnedSemaphorePermit,
    _share: Share,
}

impl Drop for SearchSlot {
    fn drop(&mut self) {
        metrics::gauge!("queens_searches_running").decrement(1.0);
    }
}

impl Admission {
    /// `limit` slots, at most `per_client` of them for one client, refused to all once
    /// `stopping` turns true.
    pub fn new(limit: usize, per_client: usize, stopping: watch::Receiver<bool>) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            shares: Shares::new(per_client),
            stopping,
        }
    }

    /// Takes a search slot for `client`, or refuses at once: a quick RESOURCE_EXHAUSTED lets
    /// clients back off or go to another replica, where a queue would hide the overload and
    /// hold their connections.
    pub fn admit(&self, client: &ClientId) -> Result<SearchSlot, Error> {
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
        metrics::gauge!("queens_searches_running").increment(1.0);
        Ok(SearchSlot {
            _permit: permit,
            _share: share,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_client_cannot_take_every_slot() {
        let (_tx, stopping) = watch::channel(false);
        let admission = Admission::new(4, 2, stopping);
        let a = ClientId::Address("127.0.0.1".parse().unwrap());
        let b = ClientId::Address("127.0.0.2".parse().unwrap());
        let a1 = admission.admit(&a).expect("first");
        let _a2 = admission.admit(&a).expect("second");
        assert!(matches!(
            admission.admit(&a),
            Err(Error::ClientBusy { limit: 2 })
        ));
        let _b1 = admission.admit(&b).expect("another client");
        let _b2 = admission.admit(&b).expect("another client's second");
        assert!(matches!(
            admission.admit(&ClientId::Local),
            Err(Error::Busy { limit: 4 })
        ));
        drop(a1);
        let _a3 = admission
            .admit(&a)
            .expect("a slot given back is taken again");
        assert_eq!(admission.shares.held_by(&a), 2);
    }
}
