//! What a fan-out spreads: the question, into how many shards, how many attempts each may
//! take, and the credentials for every endpoint; with the defaults of the last two.

use crate::client::Access;
use crate::pb::{Shard, Square};

/// Default attempts per shard before the run gives up.
pub const MAX_ATTEMPTS: u32 = 8;

/// Shards per endpoint by default: a few per core of a typical replica, so a slow or lost
/// endpoint leaves little work to redistribute and the rest balance.
pub const SHARDS_PER_ENDPOINT: u32 = 8;

/// One count or enumeration to spread over servers, shard by shard.
#[derive(Clone, Debug)]
pub struct FanoutJob {
    /// Board size.
    pub n: u32,
    /// Fixed queens (no fundamental count with them).
    pub fixed: Vec<Square>,
    /// Only symmetry-class representatives (enumeration only).
    pub fundamental: bool,
    /// Number of shards.
    pub shards: u32,
    /// Attempts per shard before giving up.
    pub max_attempts: u32,
    /// Credentials and trust for every endpoint.
    pub access: Access,
}

impl FanoutJob {
    /// A job of `shards` shards, or [`SHARDS_PER_ENDPOINT`] per endpoint (at least one
    /// endpoint), and at least one attempt per shard.
    pub fn new(
        n: u32,
        fixed: Vec<Square>,
        fundamental: bool,
        shards: Option<u32>,
        endpoints: usize,
        max_attempts: u32,
        access: Access,
    ) -> FanoutJob {
        let endpoints = endpoints.max(1) as u32;
        FanoutJob {
            n,
            fixed,
            fundamental,
            shards: shards.unwrap_or(SHARDS_PER_ENDPOINT * endpoints),
            max_attempts: max_attempts.max(1),
            access,
        }
    }

    /// Shard `index` of this job, as a request names it.
    pub(super) fn shard(&self, index: u32) -> Shard {
        Shard {
            index,
            count: self.shards,
        }
    }
}
