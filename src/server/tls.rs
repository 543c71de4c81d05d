//! TLS for the listener: the rustls configuration from the operator's PEM files, with client
//! certificates required when a client CA is given (mutual TLS). The handshake itself, with
//! its time limit, runs in `listen.rs`.

use crate::config::TlsPem;
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// Why the TLS material was refused.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file holds no usable certificate or key.
    #[error("{what}: {source}")]
    Pem {
        /// Which file.
        what: &'static str,
        /// Why.
        source: rustls_pki_types::pem::Error,
    },
    /// rustls refused the material.
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client CA could not be used to verify clients.
    #[error("--tls-client-ca: {0}")]
    ClientCa(#[from] rustls::server::VerifierBuilderError),
}

/// The server's TLS configuration (HTTP/2 by ALPN, and HTTP/1.1 when `http1`, for browsers
/// that have no HTTP/2); with `client_ca`, every client must present a certificate that CA
/// signed.
pub fn server_config(
    pem: &TlsPem,
    client_ca: Option<&[u8]>,
    http1: bool,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let pem_error = |what| move |source| TlsError::Pem { what, source };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem.cert)
        .collect::<Result<_, _>>()
        .map_err(pem_error("--tls-cert"))?;
    let key = PrivateKeyDer::from_pem_slice(&pem.key).map_err(pem_error("--tls-key"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let mut config = match client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(ca) {
                roots.add(cert.map_err(pem_error("--tls-client-ca"))?)?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
            builder
                .with_client_cert_verifier(verifier)
                .with_single_cert(chain, key)?
        }
        None => builder.with_no_client_auth().with_single_cert(chain, key)?,
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    if http1 {
        config.alpn_protocols.push(b"http/1.1".to_vec());
    }
    Ok(Arc::new(config))
}
