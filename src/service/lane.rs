//! The places of small searches (`--max-small-searches`, `--max-small-searches-per-client`):
//! a search the server can bound as small before running it takes one of these instead of a
//! long-search slot, and when none is free it waits for one, at most `--small-search-wait`
//! and never past its call's deadline, then is refused. A client first takes a place of its
//! own share, then one of the server's: both queues are first come, first served, so a
//! client flooding small calls waits behind its own calls, and holds at most its share of
//! the server's queue, ahead of anyone else's call. Every waiter is a request in flight, so
//! the queues are as bounded as `--max-requests-per-client` and `--max-requests`.
//!
//! Not here: which searches are small (`admission.rs`), the long-search slots and the memory
//! budget (`admission.rs`, `budget.rs`).

use super::Error;
use super::call::ClientId;
use super::turns::{Turn, Turns};
use crate::config::SMALL_COUNT_COMPANY;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// Each client's places, by client (only clients holding or waiting for one are listed).
type Clients = Arc<Mutex<HashMap<ClientId, Arc<Semaphore>>>>;

/// The server's places for small searches, each client's share of them, and how long a
/// search may wait for one.
#[derive(Clone, Debug)]
pub struct Lane {
    /// One permit per small search running, server-wide.
    places: Arc<Semaphore>,
    limit: usize,
    per_client: usize,
    clients: Clients,
    wait: Duration,
    /// The small counts' turns on the CPU.
    turns: Turns,
}

/// A small search's place: its client's and the server's, given back when dropped.
#[derive(Debug)]
pub struct Place {
    // Dropped in this order: the permits first, then the client's entry (which leaves the
    // map once nobody holds or waits for one of its places).
    _client: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
    _entry: Entry,
}

/// A hold on one client's semaphore; the last one removes the client from the map.
#[derive(Debug)]
struct Entry {
    client: ClientId,
    places: Arc<Semaphore>,
    clients: Clients,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut clients = lock(&self.clients);
        // The map's and this one: nobody else holds or waits for a place of this client.
        if Arc::strong_count(&self.places) == 2 {
            clients.remove(&self.client);
        }
    }
}

/// How a search came by its place, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// A place was free at once.
    No,
    /// It waited this long.
    For(Duration),
}

impl Lane {
    /// `limit` places, at most `per_client` of them for one client, waited for at most
    /// `wait`; `turns` small counts running at once.
    pub fn new(limit: usize, per_client: usize, wait: Duration, turns: usize) -> Lane {
        Lane {
            places: Arc::new(Semaphore::new(limit)),
            limit,
            per_client,
            clients: Arc::default(),
            wait,
            turns: Turns::new(turns),
        }
    }

    /// A turn on the CPU for a small count of `client` that holds its place, waited for in
    /// rotation with other clients at most the lane's wait and `deadline`, not past shutdown.
    /// Refused with `SmallTurnBusy` when none came in time: turns end in milliseconds, so that
    /// means the server is overloaded; `Internal` if the line lost the call.
    pub async fn turn(
        &self,
        client: &ClientId,
        deadline: Option<Duration>,
        stopping: &watch::Receiver<bool>,
    ) -> Result<Turn, Error> {
        let start = Instant::now();
        let until = start + deadline.map_or(self.wait, |d| d.min(self.wait));
        let mut stopping = stopping.clone();
        tokio::select! {
            turn = tokio::time::timeout_at(until.into(), self.turns.take(client)) => match turn {
                Ok(Some(turn)) => Ok(turn),
                Ok(None) => Err(Error::Internal("a small count's turn was lost".into())),
                Err(_) => Err(Error::SmallTurnBusy {
                    turns: self.turns.limit(),
                    waited: start.elapsed(),
                }),
            },
            _ = stopping.wait_for(|stop| *stop) => Err(Error::ShuttingDown),
        }
    }

    /// Whether a small count of `client`, which has `calls` requests in flight, crowds other
    /// clients: it has more calls in flight than turns it may hold, and another client
    /// started a small count within [`SMALL_COUNT_COMPANY`]. Notes the count either way.
    pub fn crowds(&self, client: &ClientId, calls: usize) -> bool {
        let others = self.turns.others_within(client, SMALL_COUNT_COMPANY);
        others && calls > self.turns.per_client()
    }

    /// The client's entry: its semaphore, made on its first place.
    fn entry(&self, client: &ClientId) -> Entry {
        let mut clients = lock(&self.clients);
        let places = clients
            .entry(client.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_client)))
            .clone();
        Entry {
            client: client.clone(),
            places,
            clients: self.clients.clone(),
        }
    }

    /// Takes a place for `client`, waiting for one at most the lane's wait and `deadline`
    /// (the time the call has left), and not past shutdown (`stopping`). Refused with
    /// `SmallClientBusy` when the client's own share stayed full, `SmallBusy` when the
    /// server's did, `ShuttingDown` when the server began to stop meanwhile.
    pub async fn enter(
        &self,
        client: &ClientId,
        deadline: Option<Duration>,
        stopping: &watch::Receiver<bool>,
    ) -> Result<(Place, Waited), Error> {
        let entry = self.entry(client);
        let mine = entry.places.clone().try_acquire_owned();
        let server = self.places.clone().try_acquire_owned();
        match (mine, server) {
            (Ok(mine), Ok(server)) => Ok((
                Place {
                    _client: mine,
                    _server: server,
                    _entry: entry,
                },
                Waited::No,
            )),
            (mine, _) => {
                let start = Instant::now();
                let until = start + deadline.map_or(self.wait, |d| d.min(self.wait));
                let mut stopping = stopping.clone();
                let mine = match mine {
                    Ok(mine) => mine,
                    Err(_) => {
                        let wait = entry.places.clone().acquire_owned();
                        self.within(wait, until, &mut stopping).await?.ok_or(
                            Error::SmallClientBusy {
                                limit: self.per_client,
                                waited: start.elapsed(),
                            },
                        )?
                    }
                };
                let server = self
                    .within(self.places.clone().acquire_owned(), until, &mut stopping)
                    .await?
                    .ok_or(Error::SmallBusy {
                        limit: self.limit,
                        waited: start.elapsed(),
                    })?;
                let place = Place {
                    _client: mine,
                    _server: server,
                    _entry: entry,
                };
                Ok((place, Waited::For(start.elapsed())))
            }
        }
    }

    /// A permit from `acquire` if it comes before `until` (None if not), or `ShuttingDown`.
    async fn within(
        &self,
        acquire: impl Future<Output = Result<OwnedSemaphorePermit, tokio::sync::AcquireError>>,
        until: Instant,
        stopping: &mut watch::Receiver<bool>,
    ) -> Result<Option<OwnedSemaphorePermit>, Error> {
        tokio::select! {
            permit = tokio::time::timeout_at(until.into(), acquire) => Ok(permit.ok().and_then(Result::ok)),
            _ = stopping.wait_for(|stop| *stop) => Err(Error::ShuttingDown),
        }
    }

    /// How many clients hold or wait for a place now.
    #[cfg(test)]
    fn clients(&self) -> usize {
        lock(&self.clients).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client at 127.0.0.`last`.
    fn ip(last: u8) -> ClientId {
        ClientId::loopback(last)
    }

    /// A client waits for its own share, not the server's, and is refused naming its share
    /// when none frees in time; another client is served beside it; entries go with their
    /// last place.
    #[tokio::test]
    async fn a_client_waits_for_its_share_and_others_go_ahead() {
        let (_tx, stopping) = watch::channel(false);
        let lane = Lane::new(3, 2, Duration::from_millis(50), 1);
        let (a, b) = (ip(1), ip(2));
        let (a1, waited) = lane.enter(&a, None, &stopping).await.expect("a's first");
        assert_eq!(waited, Waited::No);
        let _a2 = lane.enter(&a, None, &stopping).await.expect("a's second");
        let refused = lane.enter(&a, None, &stopping).await.unwrap_err();
        assert!(
            matches!(refused, Error::SmallClientBusy { limit: 2, waited } if waited >= Duration::from_millis(50)),
            "{refused:?}"
        );
        let (_b1, _) = lane.enter(&b, None, &stopping).await.expect("b beside a");
        // The server's last place is b's: b's second waits for the server's share.
        let full = lane.enter(&b, None, &stopping).await.unwrap_err();
        assert!(
            matches!(full, Error::SmallBusy { limit: 3, .. }),
            "{full:?}"
        );
        // A place given back while a call waits is its.
        let lane2 = lane.clone();
        let (a2, stop2) = (a.clone(), stopping.clone());
        let waiting = tokio::spawn(async move { lane2.enter(&a2, None, &stop2).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(a1);
        let (_a3, waited) = waiting.await.unwrap().expect("a's place given back");
        assert!(matches!(waited, Waited::For(_)), "{waited:?}");
        assert_eq!(lane.clients(), 2);
    }

    /// A call's deadline shortens its wait, shutdown ends it, and an entry nobody holds is
    /// removed.
    #[tokio::test]
    async fn deadlines_and_shutdown_end_the_wait() {
        let (tx, stopping) = watch::channel(false);
        let lane = Lane::new(1, 1, Duration::from_secs(60), 1);
        let a = ip(1);
        let held = lane.enter(&a, None, &stopping).await.expect("a's place");
        let refused = lane
            .enter(&a, Some(Duration::from_millis(20)), &stopping)
            .await
            .unwrap_err();
        assert!(
            matches!(refused, Error::SmallClientBusy { waited, .. } if waited < Duration::from_secs(30)),
            "{refused:?}"
        );
        let lane2 = lane.clone();
        let waiting = tokio::spawn(async move { lane2.enter(&ip(2), None, &stopping).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        tx.send(true).unwrap();
        let stopped = waiting.await.unwrap().unwrap_err();
        assert!(matches!(stopped, Error::ShuttingDown), "{stopped:?}");
        drop(held);
        assert_eq!(lane.clients(), 0, "no entry is left behind");
    }
}
