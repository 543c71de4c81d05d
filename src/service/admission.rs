//! Admission: every search is admitted by its cost, as the server can bound it before running
//! it ([`Size`]). A long search takes one of the server-wide slots (`--max-searches`) within
//! its client's share of them (`--max-searches-per-client`), so one client cannot keep
//! everyone else out, and is refused at once when none is free. A small search (a Count or an
//! Enumerate of a small board: milliseconds of work) takes no slot but a place among the small
//! searches (`lane.rs`), waiting briefly for one. Both reserve their memory from the budget
//! (`--max-memory`, `budget.rs`) before they start, refused at once when it does not fit, and
//! hold slot or place and memory until they end. Which threads a search runs on is the pool's
//! business, not this one's.

use super::Error;
use super::budget::{Budget, Need, Reservation, Reserved};
use super::call::ClientId;
use super::lane::{Lane, Place, Waited};
use super::shares::{Share, Shares};
use super::turns::Turn;
use crate::config::{SMALL_COUNT_N, SMALL_ENUMERATE_N};
use crate::solver::Problem;
use crate::stream::Enumeration;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// How big a search is, as the server can bound it from the request alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Milliseconds of work whatever else the request says: a Count up to n = 12
    /// ([`SMALL_COUNT_N`]), an Enumerate up to n = 12 ([`SMALL_ENUMERATE_N`]).
    Small,
    /// Anything bigger: up to hours on a core.
    Long,
}

impl Size {
    /// The size of a Count (or CountProgress) of `problem`: its board's alone, since fixed
    /// queens and shards only cut the work.
    pub fn of_count(problem: &Problem) -> Size {
        Size::small_if(problem.n() <= SMALL_COUNT_N)
    }

    /// The size of an Enumerate of `job`: its board's alone; a limit does not make a big
    /// board's stream small (with fixed queens or a shard its first board may be hours away).
    pub fn of_enumeration(job: &Enumeration) -> Size {
        Size::small_if(job.problem.n() <= SMALL_ENUMERATE_N)
    }

    fn small_if(small: bool) -> Size {
        if small { Size::Small } else { Size::Long }
    }

    /// The `size` label of the metrics.
    pub fn label(self) -> &'static str {
        match self {
            Size::Small => "small",
            Size::Long => "long",
        }
    }
}

/// The search slots, each client's share, the small searches' places, the memory budget and
/// the server's shutdown signal.
#[derive(Clone, Debug)]
pub struct Admission {
    /// One permit per running long search, server-wide.
    slots: Arc<Semaphore>,
    limit: usize,
    /// Long searches running per client.
    shares: Shares,
    /// The small searches' places.
    lane: Lane,
    /// The bytes searches reserve.
    budget: Budget,
    stopping: watch::Receiver<bool>,
}

/// What a running search holds of the server besides memory.
#[derive(Debug)]
enum Held {
    /// A long search's slot and its place in its client's share.
    Long {
        _permit: OwnedSemaphorePermit,
        _share: Share,
    },
    /// A small search's place.
    Small { _place: Place },
}

/// A running search's slot (or place) and memory; given back when dropped.
#[derive(Debug)]
pub struct SearchSlot {
    held: Held,
    memory: Reserved,
    /// A small count's turn on the CPU, once it has one.
    turn: Option<Turn>,
}

impl SearchSlot {
    /// The engines its memory was reserved for.
    pub fn engines(&self) -> usize {
        self.memory.engines
    }

    /// Holds `turn` (a small count's turn on the CPU) as long as the slot.
    pub fn hold(&mut self, turn: Turn) {
        self.turn = Some(turn);
    }

    /// The reservation of the join's tables this search uses, if any: the solver keeps it
    /// alive with the tables.
    pub fn tables(&self) -> Option<Arc<Reservation>> {
        self.memory.tables.clone()
    }
}

impl Drop for SearchSlot {
    fn drop(&mut self) {
        metrics::gauge!(running(&self.held)).decrement(1.0);
    }
}

/// The gauge of the searches holding what `held` holds.
fn running(held: &Held) -> &'static str {
    match held {
        Held::Long { .. } => "queens_searches_running",
        Held::Small { .. } => "queens_small_searches_running",
    }
}

/// Counts a refusal of a search of `size` for `reason`.
fn refused(size: Size, reason: &'static str) {
    metrics::counter!("queens_searches_refused_total", "reason" => reason, "size" => size.label())
        .increment(1);
}

/// Counts a small search that waited `waited` for its place (and was then admitted or not).
fn waited(waited: Duration) {
    metrics::counter!("queens_searches_waited_total", "size" => "small").increment(1);
    metrics::histogram!("queens_search_wait_seconds", "size" => "small")
        .record(waited.as_secs_f64());
}

impl Admission {
    /// `limit` slots for long searches, at most `per_client` of them for one client, the
    /// small searches' `lane`, and `memory` bytes for all, refused to all once `stopping`
    /// turns true.
    pub fn new(
        (limit, per_client): (usize, usize),
        lane: Lane,
        memory: u64,
        stopping: watch::Receiver<bool>,
    ) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            shares: Shares::new(per_client),
            lane,
            budget: Budget::new(memory),
            stopping,
        }
    }

    /// The memory budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Admits a search of `size` for `client` needing `need` of memory, whose call has
    /// `deadline` left (if it has one). A long search takes a slot or is refused at once: a
    /// quick RESOURCE_EXHAUSTED lets clients back off or go to another replica, where a queue
    /// would hide the overload and hold their connections for hours. A small search waits for
    /// a place at most the lane's wait and its deadline, since places free in milliseconds.
    pub async fn admit(
        &self,
        client: &ClientId,
        size: Size,
        need: Need,
        deadline: Option<Duration>,
    ) -> Result<SearchSlot, Error> {
        if *self.stopping.borrow() {
            refused(size, "shutting_down");
            return Err(Error::ShuttingDown);
        }
        let held = match size {
            Size::Long => self.slot(client)?,
            Size::Small => self.place(client, deadline).await?,
        };
        let memory = self.budget.reserve(need).inspect_err(|_| {
            refused(size, "max_memory");
            metrics::counter!("queens_requests_shed_total", "reason" => "max_memory").increment(1);
        })?;
        metrics::gauge!(running(&held)).increment(1.0);
        metrics::counter!("queens_searches_admitted_total", "size" => size.label()).increment(1);
        Ok(SearchSlot {
            held,
            memory,
            turn: None,
        })
    }

    /// A turn on the CPU for a small count of `client` (which holds its place), in rotation
    /// with other clients, waited for at most the lane's wait and `deadline`.
    pub async fn turn(&self, client: &ClientId, deadline: Option<Duration>) -> Result<Turn, Error> {
        let start = std::time::Instant::now();
        self.lane
            .turn(client, deadline, &self.stopping)
            .await
            .inspect_err(|error| match error {
                Error::SmallTurnBusy { .. } => refused(Size::Small, "max_small_searches"),
                Error::ShuttingDown => refused(Size::Small, "shutting_down"),
                _ => {}
            })
            .inspect(|_| {
                metrics::histogram!("queens_small_count_turn_wait_seconds")
                    .record(start.elapsed().as_secs_f64());
            })
    }

    /// Whether a small count of `client`, with `calls` requests in flight, crowds other
    /// clients (`Lane::crowds`); notes the count.
    pub fn crowds(&self, client: &ClientId, calls: usize) -> bool {
        self.lane.crowds(client, calls)
    }

    /// A long search's slot for `client`, or the refusal at once.
    fn slot(&self, client: &ClientId) -> Result<Held, Error> {
        // A full server says so first: that is what every client is waiting for.
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            refused(Size::Long, "max_searches");
            Error::Busy { limit: self.limit }
        })?;
        let share = self.shares.take(client).ok_or_else(|| {
            refused(Size::Long, "max_searches_per_client");
            Error::ClientBusy {
                limit: self.shares.per_client(),
            }
        })?;
        Ok(Held::Long {
            _permit: permit,
            _share: share,
        })
    }

    /// A small search's place for `client`, waited for at most the lane's wait and
    /// `deadline`.
    async fn place(&self, client: &ClientId, deadline: Option<Duration>) -> Result<Held, Error> {
        match self.lane.enter(client, deadline, &self.stopping).await {
            Ok((place, Waited::No)) => Ok(Held::Small { _place: place }),
            Ok((place, Waited::For(time))) => {
                waited(time);
                Ok(Held::Small { _place: place })
            }
            Err(error) => {
                match &error {
                    Error::SmallBusy { waited: time, .. } => {
                        waited(*time);
                        refused(Size::Small, "max_small_searches");
                    }
                    Error::SmallClientBusy { waited: time, .. } => {
                        waited(*time);
                        refused(Size::Small, "max_small_searches_per_client");
                    }
                    _ => refused(Size::Small, "shutting_down"),
                }
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An admission of `limit` long slots (`per_client` each) and `small` places (`small`
    /// each), a second's wait, no memory limit.
    fn admission(
        limit: usize,
        per_client: usize,
        small: usize,
    ) -> (watch::Sender<bool>, Admission) {
        let (tx, stopping) = watch::channel(false);
        let lane = Lane::new(small, small, Duration::from_millis(20), 1);
        (
            tx,
            Admission::new((limit, per_client), lane, u64::MAX, stopping),
        )
    }

    /// Admits a search of `size` for `client`, no memory, no deadline.
    async fn admit(
        admission: &Admission,
        client: &ClientId,
        size: Size,
    ) -> Result<SearchSlot, Error> {
        admission.admit(client, size, Need::default(), None).await
    }

    #[tokio::test]
    async fn one_client_cannot_take_every_slot() {
        let (_tx, admission) = admission(4, 2, 4);
        let a = ClientId::Address("127.0.0.1".parse().unwrap());
        let b = ClientId::Address("127.0.0.2".parse().unwrap());
        let a1 = admit(&admission, &a, Size::Long).await.expect("first");
        let _a2 = admit(&admission, &a, Size::Long).await.expect("second");
        assert!(matches!(
            admit(&admission, &a, Size::Long).await,
            Err(Error::ClientBusy { limit: 2 })
        ));
        let _b1 = admit(&admission, &b, Size::Long)
            .await
            .expect("another client");
        let _b2 = admit(&admission, &b, Size::Long)
            .await
            .expect("another client's second");
        assert!(matches!(
            admit(&admission, &ClientId::Local, Size::Long).await,
            Err(Error::Busy { limit: 4 })
        ));
        drop(a1);
        let _a3 = admit(&admission, &a, Size::Long)
            .await
            .expect("a slot given back is taken again");
        assert_eq!(admission.shares.held_by(&a), 2);
    }

    /// Small searches take no long slot: with every slot and a client's share taken, that
    /// client's small searches are admitted, up to the places, and refused after the wait;
    /// long ones are still refused at once. After shutdown both are refused.
    #[tokio::test]
    async fn small_searches_go_beside_the_slots() {
        let (tx, admission) = admission(1, 1, 2);
        let a = ClientId::Address("127.0.0.1".parse().unwrap());
        let _long = admit(&admission, &a, Size::Long)
            .await
            .expect("the one slot");
        assert!(matches!(
            admit(&admission, &a, Size::Long).await,
            Err(Error::Busy { limit: 1 })
        ));
        let _s1 = admit(&admission, &a, Size::Small)
            .await
            .expect("a small one");
        let _s2 = admit(&admission, &a, Size::Small).await.expect("a second");
        assert!(matches!(
            admit(&admission, &a, Size::Small).await,
            Err(Error::SmallClientBusy { limit: 2, .. })
        ));
        tx.send(true).unwrap();
        assert!(matches!(
            admit(&admission, &a, Size::Small).await,
            Err(Error::ShuttingDown)
        ));
    }

    /// A client crowds others only beside another client that started a small count within
    /// the window, and only with more calls in flight than the turns one client may hold
    /// (two of three here); the lighter client never crowds.
    #[test]
    fn a_client_crowds_others_only_beside_them_with_more_calls_than_turns() {
        let (_tx, stopping) = watch::channel(false);
        let lane = Lane::new(4, 4, Duration::from_millis(20), 3);
        let admission = Admission::new((1, 1), lane, u64::MAX, stopping);
        let (a, b) = (ClientId::loopback(1), ClientId::loopback(2));
        assert!(!admission.crowds(&a, 32), "A alone");
        assert!(!admission.crowds(&b, 1), "B with one call");
        assert!(admission.crowds(&a, 32), "A with 32 beside B");
        assert!(admission.crowds(&a, 3), "A with 3 beside B");
        assert!(!admission.crowds(&a, 2), "A within its two turns");
        assert!(!admission.crowds(&b, 1), "B with one call beside A");
    }

    /// The rule: Count up to n = 12 and Enumerate up to n = 12 are small, whatever the rest
    /// of the request; n = 13 is long, with a limit too.
    #[test]
    fn small_is_decided_by_the_board() {
        let problem =
            |n| Problem::new(n, &[], false, crate::solver::Shard::WHOLE).expect("a board");
        assert_eq!(Size::of_count(&problem(8)), Size::Small);
        assert_eq!(Size::of_count(&problem(12)), Size::Small);
        assert_eq!(Size::of_count(&problem(13)), Size::Long);
        let enumeration = |n, limit| Enumeration {
            problem: problem(n),
            start_after: None,
            limit,
            batch: 1,
            form: crate::stream::Form::Compact,
        };
        assert_eq!(Size::of_enumeration(&enumeration(12, None)), Size::Small);
        assert_eq!(Size::of_enumeration(&enumeration(13, Some(1))), Size::Long);
    }
}
