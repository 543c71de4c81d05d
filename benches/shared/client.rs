//! The client side the Enumerate benches share (by `#[path]`): a channel with wide HTTP/2
//! windows, and a tonic codec that encodes the request with prost and reads each response
//! message's bytes in place with a function of the bench's own (walking or checking the
//! boards), without building a `Board` per board.

use queens::pb::EnumerateRequest;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::transport::{Channel, Endpoint};
use tonic_prost::ProstCodec;

/// HTTP/2 flow-control window of the client: h2's default of 64 KiB makes the server wait
/// for a WINDOW_UPDATE every 64 KiB (about every message); 4 MiB lets a fast stream run.
pub const WINDOW: u32 = 4 * 1024 * 1024;

/// A channel to `url` with [`WINDOW`]-sized HTTP/2 windows.
pub async fn connect(url: &str) -> Channel {
    Endpoint::from_shared(url.to_string())
        .expect("a URL")
        .initial_stream_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// Encodes the request with prost; decodes each response message with `read`, whose error
/// becomes an internal `Status`.
pub struct InPlace<F> {
    /// The request's encoder.
    encode: ProstCodec<EnumerateRequest, EnumerateRequest>,
    /// Reads one message's bytes.
    read: F,
}

impl<F> InPlace<F> {
    /// A codec reading each message with `read`.
    pub fn new(read: F) -> InPlace<F> {
        InPlace {
            encode: ProstCodec::default(),
            read,
        }
    }
}

/// Reads one message with the codec's function.
pub struct InPlaceDecoder<F>(F);

impl<F, T, E> Codec for InPlace<F>
where
    F: Fn(&[u8]) -> Result<T, E> + Clone + Send + 'static,
    T: Send + 'static,
    E: std::fmt::Display,
{
    type Encode = EnumerateRequest;
    type Decode = T;
    type Encoder = <ProstCodec<EnumerateRequest, EnumerateRequest> as Codec>::Encoder;
    type Decoder = InPlaceDecoder<F>;

    fn encoder(&mut self) -> Self::Encoder {
        self.encode.encoder()
    }

    fn decoder(&mut self) -> InPlaceDecoder<F> {
        InPlaceDecoder(self.read.clone())
    }
}

impl<F, T, E> Decoder for InPlaceDecoder<F>
where
    F: Fn(&[u8]) -> Result<T, E>,
    E: std::fmt::Display,
{
    type Item = T;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<T>, Status> {
        use prost::bytes::Buf;
        let len = src.remaining();
        // The message is most often one contiguous buffer: read it in place.
        let read = if src.chunk().len() == len {
            (self.0)(src.chunk())
        } else {
            (self.0)(&src.copy_to_bytes(len))
        };
        src.advance(len);
        read.map(Some).map_err(|e| Status::internal(e.to_string()))
    }
}
