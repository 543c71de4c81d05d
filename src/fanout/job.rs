//! What a fan-out spreads: the question, into how many shards, how many attempts each may
//! take, and the credentials for every endpoint; with the defaults of the last two, and the
//! bounds on how long a hung endpoint may hold a shard.

use crate::client::{Access, Layout};
use crate::pb::{Shard, Square};
use std::time::Duration;

/// How often each endpoint is asked whether it still answers (a `grpc.health.v1` Check,
/// which a queens server answers from its network threads, not its search pool, so a busy
/// replica answers at once): one small call per endpoint every 5 s costs nothing next to the
/// shards, and keeps the server's call log quiet.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(5);

/// How long a health Check may go unanswered before its endpoint is given up as hung (a
/// stopped process, a socket nobody reads): a live server answers in milliseconds even on an
/// overloaded machine. A hung endpoint is therefore noticed within [`PROBE_INTERVAL`] +
/// this (10 s) of its last answer, and its shards go back to the queue.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest a connection may take to open (name lookup, TCP, TLS, HTTP/2): as long as a
/// health Check may take, for the same reason.
pub const CONNECT_TIMEOUT: Duration = PROBE_TIMEOUT;

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
    /// How the enumerations' boards travel (records unless set otherwise).
    pub layout: Layout,
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
            layout: Layout::default(),
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
