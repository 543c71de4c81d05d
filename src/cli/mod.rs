//! The commands of the `queens` binary, as a library so that tests can reach them: their
//! flags (`args.rs`, clap), the serve flags made into a `Config` and the server run
//! (`serve.rs`), the client commands and what they print (`count.rs`, `local.rs`,
//! `enumerate.rs`, `print.rs`, `progress.rs`), the batch run's price (`estimate.rs`: sampled
//! parts run as processes of this binary), the memory model as a table (`memory.rs`), and the one error type with its exit codes
//! (`error.rs`).
//!
//! The top of the crate: it may use every layer below. The client commands use the client
//! side (`crate::client`, `crate::fanout`, `crate::batch`) and the wire types, never the
//! service, stream or server; only `serve.rs` and the error type name the server. The
//! command enum and the dispatch are `src/main.rs`'s.

mod args;
mod count;
mod enumerate;
mod error;
mod estimate;
mod local;
mod memory;
mod print;
mod progress;
mod serve;

pub use self::args::{
    ClientArgs, CountArgs, EnumerateArgs, EstimateArgs, MemoryArgs, ServeArgs, SpreadArgs, SumArgs,
};
pub use self::count::count;
pub use self::enumerate::enumerate;
pub use self::error::Error;
pub use self::estimate::estimate;
pub use self::local::{count_local, sum};
pub use self::memory::memory;
pub use self::serve::serve;
