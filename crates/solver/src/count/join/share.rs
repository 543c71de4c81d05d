//! A key's pairs shared among a count's engines ([`Exchange`]): an engine that has no part
//! left parks its lists here, and an engine whose sieve is in a key's large blocks copies
//! one side of a split into them ([`Exchange::offer`]) and goes on with the other side, so
//! that the last key of a count is not counted by one engine while the others wait. The
//! engine that takes a side counts it with its own sieve and room (`work.rs`, `Work::help`)
//! and may offer parts of it in turn, down to blocks of [`OFFER_PAIRS`] pairs. Not here:
//! where the sieve offers (`sieve.rs`), the parts that park (`mod.rs`).

use super::memory::Allowance;
use super::word::Layout;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
use crate::sync::lock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Blocks whose pairs (the product of their lengths) are fewer than this are counted where
/// they are, never offered: a side costs its taker a copy of its words and a sieve from the
/// start, a few milliseconds for blocks of this size.
pub(super) const OFFER_PAIRS: usize = 1 << 28;

/// Blocks of more words than this in all are not offered (2^22 words, 32 MiB: the most the
/// wide path's splits in place copy out at once), so that a copy never needs more room than
/// a count already takes.
const OFFER_WORDS: usize = 1 << 22;

/// How long a parked engine sleeps before it looks again whether anything still counts
/// (it is woken at once by an offer, or by the last part's end).
const NAP: Duration = Duration::from_millis(20);

/// What a side of a split needs besides its words: how its pairs are weighed, and in which
/// tier.
#[derive(Clone, Copy, Debug)]
pub(super) struct Branch {
    /// The middle queen's balance (0 on even boards).
    pub(super) middle: i32,
    /// Where its words keep their balances.
    pub(super) layout: Layout,
    /// The tier of its tests.
    pub(super) tier: Tier,
    /// The solutions each weighted pair stands for (its key's weight).
    pub(super) weight: u64,
}

/// A parked engine's lists, lent to the engine that fills them: the tops and the bottoms of
/// a side of a split, and the room they may take.
pub(super) struct Lent {
    /// Room for the side's top halves.
    pub(super) tops: Vec<u64>,
    /// Room for its bottom halves.
    pub(super) bottoms: Vec<u64>,
    /// What they may still grow by (the parked engine's).
    pub(super) allowance: Allowance,
}

/// A count's parked engines and what keeps them: the parts that may still offer a side.
#[derive(Default)]
pub(super) struct Exchange {
    /// How many engines are parked: read without the lock by the sieves that could offer.
    idle: AtomicUsize,
    /// Sides handed over so far (what the tests check).
    #[cfg(test)]
    given: AtomicUsize,
    state: Mutex<State>,
    wake: Condvar,
}

/// What the exchange's lock guards.
#[derive(Default)]
struct State {
    /// Parts counting a key, and engines counting a side: while there are any, a parked
    /// engine may still be offered one.
    running: usize,
    /// The parked engines' lists, by ticket.
    parked: Vec<(u64, Lent)>,
    /// Lists given back, by ticket, for their engines to take: filled with a side, or
    /// (`None`) without room for one, so that their engine leaves rather than be offered
    /// the next side it has no room for either.
    filled: Vec<(u64, Lent, Option<Branch>)>,
    /// The next parked engine's ticket.
    tickets: u64,
}

impl Exchange {
    /// A part starts counting a key: it may offer sides while the guard lives.
    pub(super) fn started(&self) -> Running<'_> {
        lock(&self.state).running += 1;
        Running(self)
    }

    /// A side handed over ([`Exchange::park`]'s branch) is being counted while the guard
    /// lives (its offer counted it as running already).
    pub(super) fn taken(&self) -> Running<'_> {
        Running(self)
    }

    /// How many sides were handed over so far.
    #[cfg(test)]
    pub(super) fn given(&self) -> usize {
        self.given.load(Ordering::Relaxed)
    }

    /// How many engines are parked now.
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.idle.load(Ordering::Relaxed)
    }

    /// Hands the side of `xs` (tops) and `ys` (bottoms) to a parked engine, its pairs
    /// weighed as `branch` says: `true` if one took it (copied into its lists, within its
    /// room), `false` if none is parked, the side is too small or too large to offer, or
    /// the engine had no room for it (it then leaves); then the caller counts it.
    pub(super) fn offer(&self, xs: &[u64], ys: &[u64], branch: Branch) -> bool {
        if self.idle.load(Ordering::Relaxed) == 0
            || xs.len().saturating_mul(ys.len()) < OFFER_PAIRS
            || xs.len() + ys.len() > OFFER_WORDS
        {
            return false;
        }
        let Some((ticket, mut lent)) = ({
            let mut state = lock(&self.state);
            let taken = state.parked.pop();
            if taken.is_some() {
                self.idle.fetch_sub(1, Ordering::Relaxed);
                // The side counts as running from here, so that no engine leaves while it
                // is on its way.
                state.running += 1;
            }
            taken
        }) else {
            return false;
        };
        let copied = copy_into(&mut lent.tops, xs, &mut lent.allowance).is_ok()
            && copy_into(&mut lent.bottoms, ys, &mut lent.allowance).is_ok();
        let mut state = lock(&self.state);
        state.filled.push((ticket, lent, copied.then_some(branch)));
        if copied {
            #[cfg(test)]
            self.given.fetch_add(1, Ordering::Relaxed);
        } else {
            state.running -= 1;
        }
        self.wake.notify_all();
        copied
    }

    /// Parks `lent` until a side is copied into it, an offer found no room in it, or
    /// nothing counts any more (or `cancel` is raised): the lists back, and the side's
    /// [`Branch`] if there is one. Gives way to other pool jobs while it waits.
    pub(super) fn park(&self, lent: Lent, cancel: &AtomicBool) -> (Lent, Option<Branch>) {
        let mut state = lock(&self.state);
        let ticket = state.tickets;
        state.tickets += 1;
        state.parked.push((ticket, lent));
        self.idle.fetch_add(1, Ordering::Relaxed);
        loop {
            if let Some(at) = state.filled.iter().position(|(t, ..)| *t == ticket) {
                let (_, lent, branch) = state.filled.swap_remove(at);
                return (lent, branch);
            }
            // Still parked unless an offer holds it (then `running` is not 0).
            let parked = state.parked.iter().position(|(t, _)| *t == ticket);
            if let Some(at) = parked
                && (state.running == 0 || cancel.load(Ordering::Relaxed))
            {
                let (_, lent) = state.parked.swap_remove(at);
                self.idle.fetch_sub(1, Ordering::Relaxed);
                return (lent, None);
            }
            state = self
                .wake
                .wait_timeout(state, NAP)
                .map_or_else(|e| e.into_inner().0, |(state, _)| state);
            drop(state);
            give_way();
            state = lock(&self.state);
        }
    }
}

/// A part counting a key, or an engine counting a side: while one lives, parked engines
/// wait for offers; when the last one ends (or unwinds), they leave.
pub(super) struct Running<'a>(&'a Exchange);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.running -= 1;
        if state.running == 0 {
            self.0.wake.notify_all();
        }
    }
}

/// Fills `list` with `words`, within `allowance`.
fn copy_into(
    list: &mut Vec<u64>,
    words: &[u64],
    allowance: &mut Allowance,
) -> Result<(), CountError> {
    list.clear();
    allowance.reserve(list, words.len())?;
    list.extend_from_slice(words);
    Ok(())
}
