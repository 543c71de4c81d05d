//! What a count's engine is asked of a key ([`Task`]) and keeps from key to key so that a
//! key allocates nothing new once its lists have grown ([`Work`]): the two lists of half
//! words, room for sorting them, the sieve's blocks, the wide path's bands, and what they
//! may still grow by (an `Allowance`, `memory.rs`), so that an engine stays within what its
//! count reserved; and the engines' lists of one count ([`Works`]), which go when the count
//! ends. What the lists hold is the paths' (`halves.rs`, `wide.rs`) and the sieve's.

use super::bands::KeyBands;
use super::keys::Key;
use super::memory::Allowance;
use super::share::{Exchange, Lent};
use super::sieve::{Piece, Sieve};
use crate::counts::CountError;
use crate::simd::Tier;
use crate::sync::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What an engine is asked of one key: the key, which of its pairs (a [`Piece`]), the tier
/// of its kernels, and the flag that stops it.
#[derive(Clone, Copy)]
pub(super) struct Task<'a> {
    /// The key.
    pub(super) key: &'a Key,
    /// Which of its pairs.
    pub(super) piece: Piece,
    /// The tier its kernels run in.
    pub(super) tier: Tier,
    /// Raised to give up.
    pub(super) cancel: &'a AtomicBool,
}

/// A [`Work`]'s top halves, bottom halves, room to sort them, sieve and allowance, borrowed
/// apart ([`Work::lists`]).
pub(super) type Lists<'a> = (
    &'a mut Vec<u64>,
    &'a mut Vec<u64>,
    &'a mut Vec<u64>,
    &'a mut Sieve,
    &'a mut Allowance,
);

/// One engine's lists, kept from key to key, and what they may still grow by.
pub(super) struct Work {
    /// The top halves of the key being counted.
    pub(super) tops: Vec<u64>,
    /// Its bottom halves.
    pub(super) bottoms: Vec<u64>,
    /// Room for sorting either list (the tables' path; the wide path sorts in place).
    pub(super) scratch: Vec<u64>,
    /// The pair counter and its blocks.
    pub(super) sieve: Sieve,
    /// On the wide path, the bands of the key's top and bottom halves.
    pub(super) bands: [KeyBands; 2],
    /// What the lists above may still grow by.
    pub(super) allowance: Allowance,
    /// The bytes it was allowed in all (the wide path's chunks grow with it).
    pub(super) room: usize,
}

impl Work {
    /// Empty lists that may grow to `bytes` in all.
    pub(super) fn new(bytes: usize) -> Work {
        Work {
            tops: Vec::new(),
            bottoms: Vec::new(),
            scratch: Vec::new(),
            sieve: Sieve::new(0, Tier::PORTABLE),
            bands: Default::default(),
            allowance: Allowance::new(bytes),
            room: bytes,
        }
    }

    /// Its two lists, the room to sort them, the sieve and the allowance, borrowed apart.
    pub(super) fn lists(&mut self) -> Lists<'_> {
        let Work {
            tops,
            bottoms,
            scratch,
            sieve,
            allowance,
            ..
        } = self;
        (tops, bottoms, scratch, sieve, allowance)
    }

    /// Runs `make` (which fills a key's lists, or on the wide path its bands); where it
    /// found no room, gives back the room the sieve and the sort kept from other keys, so
    /// that the key may take it first, and runs it once more.
    pub(super) fn with_spare_room<T>(
        &mut self,
        mut make: impl FnMut(&mut Work) -> Result<T, CountError>,
    ) -> Result<T, CountError> {
        make(self).or_else(|_| {
            self.sieve.release(&mut self.allowance);
            self.allowance.release(&mut self.scratch);
            make(self)
        })
    }

    /// Counts the sides of splits that other engines of the count offer on `exchange`
    /// (`share.rs`), its lists parked there between them, until nothing counts any more:
    /// their solutions, each side's handed to `tally` as it ends; `Cancelled` if `cancel`
    /// is raised meanwhile.
    pub(super) fn help(
        &mut self,
        exchange: &Arc<Exchange>,
        cancel: &AtomicBool,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let mut solutions = 0u64;
        loop {
            let lent = Lent {
                tops: std::mem::take(&mut self.tops),
                bottoms: std::mem::take(&mut self.bottoms),
                allowance: std::mem::replace(&mut self.allowance, Allowance::new(0)),
            };
            let (lent, branch) = exchange.park(lent, cancel);
            (self.tops, self.bottoms, self.allowance) = (lent.tops, lent.bottoms, lent.allowance);
            let Some(branch) = branch else { break };
            let side = exchange.taken();
            let (tops, bottoms, _, sieve, allowance) = self.lists();
            sieve.reset(branch.middle, branch.tier, branch.layout);
            sieve.share(Some((exchange.clone(), branch.weight)));
            let pairs = sieve.count(tops, bottoms, 0, cancel, allowance);
            sieve.share(None);
            drop(side);
            let side = pairs
                .checked_mul(branch.weight)
                .ok_or(CountError::Overflow)?;
            tally(side);
            solutions = solutions.checked_add(side).ok_or(CountError::Overflow)?;
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        Ok(solutions)
    }

    /// Bytes its lists hold room for now.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        size_of::<u64>()
            * (self.tops.capacity() + self.bottoms.capacity() + self.scratch.capacity())
            + self.sieve.bytes()
            + self.bands.iter().map(KeyBands::bytes).sum::<usize>()
    }
}

/// The lists of one count's engines: an engine takes one for a key and gives it back, so a
/// count holds at most one per engine, and they go when the count ends.
pub(super) struct Works {
    spare: Mutex<Vec<Work>>,
    /// Each one's allowance.
    bytes: usize,
    /// Where the engines share a key's sides when some have no part left (`share.rs`).
    pub(super) exchange: Arc<Exchange>,
}

impl Works {
    /// None yet; each made with an allowance of `bytes`.
    pub(super) fn new(bytes: usize) -> Works {
        Works {
            spare: Mutex::new(Vec::new()),
            bytes,
            exchange: Arc::default(),
        }
    }

    /// A spare one, or a new one.
    pub(super) fn take(&self) -> Work {
        lock(&self.spare)
            .pop()
            .unwrap_or_else(|| Work::new(self.bytes))
    }

    /// Gives one back for the next key.
    pub(super) fn give(&self, work: Work) {
        lock(&self.spare).push(work);
    }
}
