//! Where a client command connects, as its flags name it: the address, and the paths of its
//! PEM files, read into an [`Access`] when the command connects.

use super::connect::{Access, Client, ConnectError, connect_with};
use crate::config::{Encodings, ReadError, read};
use std::path::PathBuf;

/// Why a client could not be made from a [`Target`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No connection to the server.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A certificate or key file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Where a client command connects.
#[derive(Clone, Debug)]
pub struct Target {
    /// Server URL or `host:port`.
    pub addr: String,
    /// Trust this PEM CA certificate and connect over TLS.
    pub ca_cert: Option<PathBuf>,
    /// Present this PEM certificate chain and key (mutual TLS).
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Send this bearer token with every call.
    pub token: Option<String>,
    /// Encodings of responses to accept (none: uncompressed responses only).
    pub accept: Encodings,
}

impl Target {
    /// What the target's files and token say, read.
    pub fn access(&self) -> Result<Access, ReadError> {
        let identity = match &self.client_cert {
            Some((cert, key)) => Some((read(cert)?, read(key)?)),
            None => None,
        };
        Ok(Access {
            token: self.token.clone(),
            ca_pem: self.ca_cert.as_deref().map(read).transpose()?,
            identity,
            accept: self.accept,
        })
    }

    /// A client connected as the target says.
    pub async fn connect(&self) -> Result<Client, Error> {
        Ok(connect_with(&self.addr, &self.access()?).await?)
    }
}
