//! `serve`: the one conversion of the serve flags into a [`Config`] (the files they name
//! read, the policy that every search shares the pool's threads), and the command itself:
//! the log set up first, then the server until SIGTERM, then the trace exporter flushed.

use super::args::ServeArgs;
use super::error::Error;
use crate::config::{self, Config, TlsPem, Tokens};
use crate::server;

impl ServeArgs {
    /// The server's settings these flags ask for, their files read: the flags given, the
    /// defaults for the rest. Streams and counts may each use the whole search pool.
    pub fn to_config(&self) -> Result<Config, Error> {
        let defaults = Config::default();
        let search_threads = self
            .search_threads
            .map_or(defaults.search_threads, |t| t as usize);
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsPem::read(cert, key)?),
            _ => None,
        };
        let client_ca = self
            .tls_client_ca
            .as_deref()
            .map(config::read)
            .transpose()?;
        let tokens = match &self.auth_tokens {
            Some(path) => {
                let text = String::from_utf8_lossy(&config::read(path)?).into_owned();
                let tokens = Tokens::parse(&text).map_err(|source| Error::Tokens {
                    path: path.clone(),
                    source,
                })?;
                Some(tokens)
            }
            None => None,
        };
        Ok(Config {
            max_n: self.max_n,
            shutdown_grace: self.shutdown_grace.0,
            max_searches: self
                .max_searches
                .map_or(defaults.max_searches, |m| m as usize),
            max_memory: self.max_memory.map_or(defaults.max_memory, |b| b.0),
            max_search_time: self.max_search_seconds.0,
            search_threads,
            produce_threads: search_threads,
            count_threads: search_threads,
            tls,
            client_ca,
            tokens,
            max_streams_per_connection: self.max_streams_per_connection,
            max_connections: self.max_connections as usize,
            max_requests: self.max_requests as usize,
            max_searches_per_client: self.max_searches_per_client.map(|m| m as usize),
            max_requests_per_client: self.max_requests_per_client.map(|m| m as usize),
            max_small_searches: self
                .max_small_searches
                .map_or(defaults.max_small_searches, |m| m as usize),
            max_small_searches_per_client: self.max_small_searches_per_client.map(|m| m as usize),
            small_search_wait: self.small_search_wait.0,
            preface_timeout: self.preface_timeout.0,
            idle_timeout: self.idle_timeout.0,
            max_connection_age: self.max_connection_age.map(|s| s.0),
            stall_timeout: self.stall_timeout.0,
            metrics_addr: self.metrics_addr,
            otlp_endpoint: self.otlp_endpoint.clone(),
            advertise: self.advertise.clone(),
            web: !self.no_web,
            cors_origins: self.cors_origin.clone(),
            compression: self.compression,
            ..defaults
        })
    }
}

/// `serve`: sets up the log (and the trace exporter), serves until SIGTERM or Ctrl-C, then
/// sends the spans still queued.
pub async fn serve(args: ServeArgs) -> Result<(), Error> {
    let traces = server::init_logs(args.log_format, args.otlp_endpoint.as_deref())?;
    let config = args.to_config()?;
    let served = server::serve(&args.addr, config).await;
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    Ok(served?)
}
