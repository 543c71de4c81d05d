//! Turns on the CPU for small counts, taken by clients in rotation: at most a fixed number of
//! small counts run at once, and when one ends, the next turn goes to the next client in line
//! that has a count waiting, not to the oldest waiting count. So a client with dozens of small
//! counts in flight waits behind its own, while another client's call waits for at most one
//! turn of each client ahead of it. Its waiting calls sit here, parked, instead of in the
//! runtime's and the pool's queues in front of everyone else's work. Waiters are calls holding
//! a small search's place (`lane.rs`), so they are as bounded as the places are. The line
//! also remembers the last two clients to start a small count, so the service can tell a
//! client alone (its smallest counts are counted at once, no turn) from one beside others.
//!
//! Not here: the places themselves and how long a call may wait (`lane.rs`), which searches
//! are small (`admission.rs`).

use super::call::ClientId;
use crate::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The turns: how many may run at once, and who waits for one.
#[derive(Clone, Debug)]
pub struct Turns(Arc<Mutex<Line>>);

/// Who runs and who waits, in the order clients take turns.
#[derive(Debug, Default)]
struct Line {
    limit: usize,
    running: usize,
    /// Turns each client holds (a client is listed while it holds one).
    held: HashMap<ClientId, usize>,
    /// Each waiting client's calls, oldest first (a client is listed while it has one).
    waiting: HashMap<ClientId, VecDeque<oneshot::Sender<Turn>>>,
    /// The clients with calls waiting, in the order their next turn comes.
    order: VecDeque<ClientId>,
    /// The last two clients to start a small count, and when: whether a client is alone.
    recent: [Option<(ClientId, Instant)>; 2],
}

impl Line {
    /// Whether `client` may take a free turn now: the last free one is kept for a client
    /// that holds none, so a newcomer never waits for another client's count to end.
    fn may_take(&self, client: &ClientId) -> bool {
        let holds = self.held.get(client).copied().unwrap_or(0);
        self.running < self.limit && (holds == 0 || self.running + 1 < self.limit)
    }

    /// Counts a turn taken by `client`.
    fn took(&mut self, client: &ClientId) {
        self.running += 1;
        *self.held.entry(client.clone()).or_insert(0) += 1;
    }

    /// Counts a turn of `client` ended.
    fn ended(&mut self, client: &ClientId) {
        self.running -= 1;
        if let Some(holds) = self.held.get_mut(client) {
            *holds -= 1;
            if *holds == 0 {
                self.held.remove(client);
            }
        }
    }
}

/// One running small count's turn; given on when dropped, or when it has lasted as long as
/// [`Turn::lasting`] asks, whichever comes later.
#[derive(Debug)]
pub struct Turn {
    /// None when it was never counted (its call had stopped waiting).
    turns: Option<Turns>,
    client: ClientId,
    /// When the turn may be given on at the earliest.
    until: Option<tokio::time::Instant>,
}

impl Turn {
    /// This turn, given on no sooner than `at_least` from now, even if dropped before (on
    /// the runtime: dropped off it, it is given on when dropped).
    pub fn lasting(mut self, at_least: Duration) -> Turn {
        self.until = Some(tokio::time::Instant::now() + at_least);
        self
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(turns) = self.turns.take() else {
            return;
        };
        let early = self
            .until
            .filter(|until| *until > tokio::time::Instant::now());
        match (early, tokio::runtime::Handle::try_current()) {
            (Some(until), Ok(runtime)) => {
                let client = self.client.clone();
                drop(runtime.spawn(async move {
                    tokio::time::sleep_until(until).await;
                    turns.give_on(&client);
                }));
            }
            _ => turns.give_on(&self.client),
        }
    }
}

impl Turns {
    /// At most `limit` (at least two: one is kept for newcomers) small counts running at once.
    pub fn new(limit: usize) -> Turns {
        Turns(Arc::new(Mutex::new(Line {
            limit: limit.max(2),
            ..Line::default()
        })))
    }

    /// A turn for `client`: at once when it may take a free one and nobody waits, else when
    /// its turn in the rotation comes. Cancel-safe: a call that stops waiting leaves the line
    /// (a turn handed to it meanwhile goes on to the next). None if the line lost the call
    /// (its sender dropped unsent: never, as the line is written; the caller answers an
    /// internal error rather than wait on).
    pub async fn take(&self, client: &ClientId) -> Option<Turn> {
        let rx = {
            let mut line = lock(&self.0);
            if line.order.is_empty() && line.may_take(client) {
                line.took(client);
                return Some(self.turn(client));
            }
            let (tx, rx) = oneshot::channel();
            let Line { waiting, order, .. } = &mut *line;
            let calls = waiting.entry(client.clone()).or_insert_with(|| {
                order.push_back(client.clone());
                VecDeque::new()
            });
            // Calls that stopped waiting leave no sender behind for long.
            calls.retain(|call| !call.is_closed());
            calls.push_back(tx);
            // A newcomer may take the turn kept free.
            self.fill(&mut line);
            rx
        };
        // The sender is only dropped after sending or when its waiter has gone.
        rx.await.ok()
    }

    /// How many small counts may run at once.
    pub fn limit(&self) -> usize {
        lock(&self.0).limit
    }

    /// Most turns one client may hold: all but the one kept for a client running none.
    pub fn per_client(&self) -> usize {
        self.limit() - 1
    }

    /// Notes a small count of `client` starting, and answers whether another client started
    /// one within `window`.
    pub fn others_within(&self, client: &ClientId, window: Duration) -> bool {
        let now = Instant::now();
        let mut line = lock(&self.0);
        let others = line
            .recent
            .iter()
            .flatten()
            .any(|(other, at)| other != client && now.saturating_duration_since(*at) < window);
        match &mut line.recent {
            [Some((last, at)), _] if last == client => *at = now,
            recent => {
                recent[1] = recent[0].take();
                recent[0] = Some((client.clone(), now));
            }
        }
        others
    }

    /// Counts a turn of `client` ended and gives the free turns on.
    fn give_on(&self, client: &ClientId) {
        let mut line = lock(&self.0);
        line.ended(client);
        self.fill(&mut line);
    }

    /// A turn of `client`.
    fn turn(&self, client: &ClientId) -> Turn {
        Turn {
            turns: Some(self.clone()),
            client: client.clone(),
            until: None,
        }
    }

    /// Gives the free turns to the waiting clients in rotation (one each, then to the back
    /// of the line if it has more waiting), each as far as it may take one.
    fn fill(&self, line: &mut Line) {
        let mut passed = 0;
        while line.running < line.limit && passed < line.order.len() {
            let Some(client) = line.order.pop_front() else {
                break;
            };
            if !line.may_take(&client) {
                line.order.push_back(client);
                passed += 1;
                continue;
            }
            let Some(calls) = line.waiting.get_mut(&client) else {
                continue;
            };
            let next = calls.pop_front();
            if calls.is_empty() {
                line.waiting.remove(&client);
            } else {
                line.order.push_back(client.clone());
            }
            let Some(next) = next else { continue };
            match next.send(self.turn(&client)) {
                Ok(()) => {
                    line.took(&client);
                    passed = 0;
                }
                // That call stopped waiting: the turn was never counted, nor is it given
                // back when dropped here.
                Err(mut unused) => unused.turns = None,
            }
        }
    }

    /// Turns running now and calls waiting for one (not those that stopped waiting).
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let line = lock(&self.0);
        let waiting = line.waiting.values().flatten();
        (
            line.running,
            waiting.filter(|call| !call.is_closed()).count(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client at 127.0.0.`last`.
    fn ip(last: u8) -> ClientId {
        ClientId::loopback(last)
    }

    /// A client holding a turn does not take the last free one: a newcomer does, at once.
    #[tokio::test]
    async fn a_newcomer_takes_the_turn_kept_free() {
        let turns = Turns::new(2);
        let _a1 = turns.take(&ip(1)).await.expect("a turn");
        let a2 = tokio::time::timeout(Duration::from_millis(5), turns.take(&ip(1))).await;
        assert!(a2.is_err(), "A took the turn kept for others");
        let _b = turns.take(&ip(2)).await.expect("a turn");
        assert_eq!(turns.counts(), (2, 0));
    }

    /// With both turns held by others, client A queues three calls, then B one: B's call
    /// runs second, after one of A's, not after all three.
    #[tokio::test]
    async fn clients_take_turns_in_rotation() {
        let turns = Turns::new(2);
        let x = turns.take(&ip(9)).await.expect("a turn");
        let _y = turns.take(&ip(8)).await.expect("a turn");
        let (a, b) = (ip(1), ip(2));
        let (tx, mut ran) = tokio::sync::mpsc::unbounded_channel();
        let mut waiting = Vec::new();
        for (i, client) in [&a, &a, &a, &b].into_iter().enumerate() {
            let (turns, client, tx) = (turns.clone(), client.clone(), tx.clone());
            waiting.push(tokio::spawn(async move {
                let _turn = turns.take(&client).await.expect("a turn");
                tx.send(i).unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }));
            // Queued in this order.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(turns.counts(), (2, 4));
        drop(x);
        for task in waiting {
            task.await.unwrap();
        }
        let order: Vec<usize> = std::iter::from_fn(|| ran.try_recv().ok()).collect();
        assert_eq!(order, [0, 3, 1, 2]);
        assert_eq!(turns.counts(), (1, 0));
    }

    /// A call that stops waiting leaves the line: the turn goes on to the next, and a freed
    /// turn with nobody waiting is free again.
    #[tokio::test]
    async fn a_call_that_stops_waiting_passes_its_turn_on() {
        let turns = Turns::new(2);
        let held = turns.take(&ip(1)).await.expect("a turn");
        let _other = turns.take(&ip(4)).await.expect("a turn");
        let gone = tokio::time::timeout(Duration::from_millis(5), turns.take(&ip(2))).await;
        assert!(gone.is_err(), "no turn was free");
        let (t2, c3) = (turns.clone(), ip(3));
        let next = tokio::spawn(async move { drop(t2.take(&c3).await) });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(
            turns.counts(),
            (2, 1),
            "the call that stopped waiting is not counted"
        );
        drop(held);
        next.await.unwrap();
        assert_eq!(turns.counts(), (1, 0));
        let _again = turns.take(&ip(2)).await.expect("a turn");
        assert_eq!(turns.counts(), (2, 0));
    }

    /// A turn made to last is given on only once it has lasted, though dropped at once: an
    /// hour's is still held after its drop, a millisecond's goes to the next client.
    #[tokio::test]
    async fn a_lasting_turn_is_given_on_once_it_has_lasted() {
        for (lasts, given_on) in [
            (Duration::from_secs(3600), false),
            (Duration::from_millis(1), true),
        ] {
            let turns = Turns::new(2);
            let _other = turns.take(&ip(9)).await.expect("a turn");
            drop(turns.take(&ip(1)).await.expect("a turn").lasting(lasts));
            assert_eq!(turns.counts().0, 2, "held after its drop");
            let wait = if given_on {
                Duration::from_secs(10)
            } else {
                Duration::from_millis(20)
            };
            let next = tokio::time::timeout(wait, turns.take(&ip(2))).await;
            assert_eq!(next.is_ok(), given_on, "a turn lasting {lasts:?}");
        }
    }

    /// A client is alone until another starts a small count, and again once the other's
    /// last one is older than the window; a third client keeps the company going.
    #[test]
    fn others_are_seen_within_the_window() {
        let turns = Turns::new(3);
        let hour = Duration::from_secs(3600);
        let (a, b, c) = (ip(1), ip(2), ip(3));
        assert!(!turns.others_within(&a, hour), "nobody before A");
        assert!(!turns.others_within(&a, hour), "A alone");
        assert!(turns.others_within(&b, hour), "A before B");
        assert!(turns.others_within(&a, hour), "B beside A");
        assert!(turns.others_within(&c, hour));
        assert!(turns.others_within(&a, hour));
        assert!(
            !turns.others_within(&a, Duration::ZERO),
            "the others are too old"
        );
        assert_eq!(turns.per_client(), 2);
    }
}
