//! Serves the Queens service on a bound listener, with gRPC health and server reflection
//! (v1 and v1alpha), until a shutdown future completes; then a bounded, graceful stop.
//!
//! Taking a bound listener (not an address) lets tests bind `127.0.0.1:0` and read the port
//! back. The server owns the one pool of search threads ([`crate::solver::Pool`], sized by
//! `config.search_threads`) that every Count and Enumerate runs on. Request handling lives in
//! `crate::service`; flags live in the binary.

use crate::config::Config;
use crate::pb::server::queens_server::QueensServer;
use crate::service::QueensService;
use crate::solver::Pool;
use std::future::Future;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic_health::ServingStatus;

/// Serves (over TLS when `config.tls` is set) until `shutdown` completes, then: health turns NOT_SERVING, new connections are
/// refused, open streams end with UNAVAILABLE "server shutting down", and after at most
/// `config.shutdown_grace` the function returns even if some client never read its stream.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    let grace = config.shutdown_grace;
    let max_request = config.max_request_bytes;
    let mut builder = Server::builder()
        .http2_keepalive_interval(Some(config.keepalive_interval))
        .http2_keepalive_timeout(Some(config.keepalive_timeout))
        .tcp_keepalive(Some(config.keepalive_interval));
    if let Some(tls) = &config.tls {
        let identity = Identity::from_pem(&tls.cert, &tls.key);
        builder = builder.tls_config(ServerTlsConfig::new().identity(identity))?;
    }
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<QueensServer<QueensService>>().await;
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .expect("the embedded descriptor sets are valid");
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .expect("the embedded descriptor sets are valid");

    // The builder's TCP settings apply only to listeners it binds itself: set them here.
    // Without TCP_NODELAY, Nagle's algorithm holds a stream's first small message behind its
    // response headers until the client's delayed ACK, about 40 ms.
    let incoming = TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(config.keepalive_interval));
    let (stop_tx, stop_rx) = watch::channel(false);
    let pool = Pool::new(config.search_threads);
    let queens = QueensService::new(config, pool, stop_rx.clone());
    let mut stopped = stop_rx;
    let queens = QueensServer::new(queens).max_decoding_message_size(max_request);
    let serve = builder
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(queens)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        });
    tokio::pin!(serve);
    tokio::select! {
        result = &mut serve => return result,
        () = shutdown => {}
    }
    health
        .set_not_serving::<QueensServer<QueensService>>()
        .await;
    health
        .set_service_status("", ServingStatus::NotServing)
        .await;
    let _ = stop_tx.send(true);
    match tokio::time::timeout(grace, serve).await {
        Ok(result) => result,
        Err(_) => {
            eprintln!(
                "queens: shutdown grace of {grace:?} passed with streams still open; closing them"
            );
            Ok(())
        }
    }
}

/// Why `queens serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server failed.
    #[error("server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// `queens serve`: binds `addr`, logs where it listens, and serves until SIGTERM or Ctrl-C.
pub async fn serve(addr: &str, config: Config) -> Result<(), ServeError> {
    let bind = |source| ServeError::Bind {
        addr: addr.to_string(),
        source,
    };
    // A literal address binds without a name lookup (which would start a blocking thread).
    let listener = match addr.parse::<std::net::SocketAddr>() {
        Ok(socket) => TcpListener::bind(socket).await,
        Err(_) => TcpListener::bind(addr).await,
    }
    .map_err(bind)?;
    let local = listener.local_addr().map_err(bind)?;
    let lanes = crate::solver::simd_registers().map_or("no SIMD lanes".to_string(), |r| {
        format!("Count in {r} lanes")
    });
    eprintln!(
        "queens: listening on {local} (max n {}, {} search threads, {lanes})",
        config.max_n, config.search_threads
    );
    run(listener, config, shutdown_signal()).await?;
    eprintln!("queens: stopped");
    Ok(())
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    let term = async {
        match term {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
    eprintln!("queens: shutting down");
}
