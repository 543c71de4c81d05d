//! What a count's engine keeps from key to key so that a key allocates nothing new once its
//! lists have grown ([`Work`]): the two lists of half words, room for sorting them, the
//! sieve's blocks, and what they may still grow by (an `Allowance`, `memory.rs`), so that an
//! engine stays within what its count reserved; and the engines' lists of one count
//! ([`Works`]), which go when the count ends. What the lists hold is `halves.rs`'s and
//! `sieve.rs`'s.

use super::memory::Allowance;
use super::sieve::Sieve;
use super::wide::KeyBands;
use crate::counts::CountError;
use crate::simd::Tier;
use crate::sync::lock;
use std::sync::Mutex;

/// One engine's lists, kept from key to key, and what they may still grow by.
pub(super) struct Work {
    /// The top halves of the key being counted.
    pub(super) tops: Vec<u64>,
    /// Its bottom halves.
    pub(super) bottoms: Vec<u64>,
    /// Room for sorting either list.
    pub(super) scratch: Vec<u64>,
    /// The pair counter and its blocks.
    pub(super) sieve: Sieve,
    /// On the wide path, the bands of the key's top and bottom halves.
    pub(super) bands: [KeyBands; 2],
    /// What the lists above may still grow by.
    pub(super) allowance: Allowance,
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
        }
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
}

impl Works {
    /// None yet; each made with an allowance of `bytes`.
    pub(super) fn new(bytes: usize) -> Works {
        Works {
            spare: Mutex::new(Vec::new()),
            bytes,
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
