//! Each client's share of a bounded resource: how many units every client holds now, at most
//! a fixed number each, and the RAII [`Share`] that gives one back when dropped. The search
//! slots (`admission.rs`) and the requests in flight (the server's gate) are shared this way.
//! Not here: the server-wide bounds themselves (semaphores, held beside a share).

use super::call::ClientId;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Units held per client (only clients holding at least one are listed).
type Held = Arc<Mutex<HashMap<ClientId, usize>>>;

/// How many units each client holds, at most `per_client` each.
#[derive(Clone, Debug)]
pub struct Shares {
    per_client: usize,
    held: Held,
}

/// One unit held by one client; given back when dropped.
#[derive(Debug)]
pub struct Share {
    client: ClientId,
    held: Held,
}

impl Shares {
    /// Shares of at most `per_client` units per client.
    pub fn new(per_client: usize) -> Shares {
        Shares {
            per_client,
            held: Arc::default(),
        }
    }

    /// The most one client may hold.
    pub fn per_client(&self) -> usize {
        self.per_client
    }

    /// Takes a unit for `client`, or None when it already holds its whole share.
    pub fn take(&self, client: &ClientId) -> Option<Share> {
        let mut held = lock(&self.held);
        let mine = held.get(client).copied().unwrap_or(0);
        if mine >= self.per_client {
            return None;
        }
        held.insert(client.clone(), mine + 1);
        Some(Share {
            client: client.clone(),
            held: self.held.clone(),
        })
    }

    /// How many units `client` holds now.
    pub fn held_by(&self, client: &ClientId) -> usize {
        lock(&self.held).get(client).copied().unwrap_or(0)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        if let Some(count) = held.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_holds_at_most_its_share_and_gives_it_back() {
        let shares = Shares::new(2);
        let a = ClientId::Address("127.0.0.1".parse().unwrap());
        let b = ClientId::Address("127.0.0.2".parse().unwrap());
        let a1 = shares.take(&a).expect("first");
        let _a2 = shares.take(&a).expect("second");
        assert!(shares.take(&a).is_none(), "a third beyond a share of 2");
        let _b1 = shares.take(&b).expect("another client is not held back");
        assert_eq!((shares.held_by(&a), shares.held_by(&b)), (2, 1));
        drop(a1);
        assert_eq!(shares.held_by(&a), 1);
        let _a3 = shares.take(&a).expect("a unit given back is taken again");
        drop(_b1);
        assert_eq!(shares.held_by(&b), 0);
        assert!(
            lock(&shares.held).get(&b).is_none(),
            "an empty entry is removed"
        );
    }
}
