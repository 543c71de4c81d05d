//! The client side's bottom layer: connecting to a server (a plain address or URL, TLS,
//! a bearer token), the flags' paths read into credentials, and the packed records of an
//! Enumerate response. Shared by the fan-out, the CLI commands, the load driver and the tests.
//!
//! Nothing here retries, spreads work or prints: the fan-out is `crate::fanout`, the
//! commands' output `crate::cli`. Nothing here uses the service, stream or server modules:
//! the client speaks only the wire (`crate::pb`).

mod connect;
mod records;
mod target;

pub use self::connect::{
    ACCEPT, Access, Bearer, Client, ConnectError, DEFAULT_URL, Health, connect, connect_with,
    health_with,
};
pub use self::records::{Layout, records};
pub use self::target::{Error, Target};
