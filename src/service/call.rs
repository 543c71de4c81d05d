//! What the service knows of one call beyond its request: who it comes from ([`ClientId`],
//! for sharing the search slots), when it arrived ([`Arrived`], for its deadline), how many
//! calls its client had in flight then ([`Calls`], for sharing the CPU), and the
//! note the service leaves for the call's log line ([`CallNote`]). The server's gate fills
//! these in as request extensions; in-process calls carry none of them.
//!
//! Not here: how the gate works a client's identity out (the server's gate), what the slots do
//! with it (`admission.rs`).

use std::sync::atomic::{AtomicU32, AtomicU64};

/// Who a call comes from, for sharing the search slots fairly: the authenticated name (a
/// token's or a client certificate's) when authentication is on, else the peer's IP address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClientId {
    /// The name of the token the call carried.
    Token(String),
    /// The fingerprint of the client certificate (mutual TLS).
    Certificate(String),
    /// The peer's IP address.
    Address(std::net::IpAddr),
    /// A call that did not come over a connection (in-process tests).
    Local,
}

#[cfg(test)]
impl ClientId {
    /// The client at 127.0.0.`last`, for the service's unit tests.
    pub(crate) fn loopback(last: u8) -> ClientId {
        ClientId::Address(std::net::IpAddr::from([127, 0, 0, last]))
    }
}

impl std::fmt::Display for ClientId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientId::Token(name) => write!(f, "token {name}"),
            ClientId::Certificate(print) => write!(f, "certificate {print}"),
            ClientId::Address(ip) => write!(f, "{ip}"),
            ClientId::Local => write!(f, "local"),
        }
    }
}

/// How many requests its client had in flight when a request arrived, itself included (set by
/// the server's gate; in-process calls carry none).
#[derive(Clone, Copy, Debug)]
pub struct Calls(pub usize);

/// When a request reached the server (its deadline counts from then, as tonic's does).
#[derive(Clone, Copy, Debug)]
pub struct Arrived(pub std::time::Instant);

/// What the service adds to a call's log line: the board size, and the solutions counted or
/// the boards sent. Put in every request's extensions by the server's gate; filled in by the
/// service.
#[derive(Debug)]
pub struct CallNote {
    /// The request's `n` (0: not set).
    pub n: AtomicU32,
    /// Solutions counted by a Count (`u64::MAX`: none).
    pub solutions: AtomicU64,
    /// Boards sent by an Enumerate.
    pub boards: AtomicU64,
    /// Messages a streaming call sent (unary calls count their one answer themselves).
    pub messages: AtomicU64,
}

impl Default for CallNote {
    /// A note with nothing noted yet (no `n`, no solutions, no boards or messages).
    fn default() -> CallNote {
        CallNote {
            n: AtomicU32::new(0),
            solutions: AtomicU64::new(u64::MAX),
            boards: AtomicU64::new(0),
            messages: AtomicU64::new(0),
        }
    }
}
