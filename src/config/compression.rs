//! Which gRPC message encodings a side offers ([`Encodings`]): the server's `--compression`
//! (what Enumerate's responses may be compressed with, and what requests may arrive in) and
//! the client's (what it tells servers it can read). A list in order of preference, or none.
//! Choosing among them per call is the server's (`crate::server`); the client only announces
//! its list.

use tonic::codec::CompressionEncoding;

/// A message encoding both sides can speak besides `identity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Zstandard (tonic's level 3).
    Zstd,
    /// gzip (level 6).
    Gzip,
}

impl Encoding {
    /// Its name in `grpc-encoding` and `grpc-accept-encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Zstd => "zstd",
            Encoding::Gzip => "gzip",
        }
    }

    /// tonic's name for it.
    pub fn tonic(self) -> CompressionEncoding {
        match self {
            Encoding::Zstd => CompressionEncoding::Zstd,
            Encoding::Gzip => CompressionEncoding::Gzip,
        }
    }

    /// The encoding called `name` (as a header spells it), if it is one of ours.
    pub fn named(name: &str) -> Option<Encoding> {
        match name {
            "zstd" => Some(Encoding::Zstd),
            "gzip" => Some(Encoding::Gzip),
            _ => None,
        }
    }
}

/// Encodings in order of preference, each at most once; empty: none (identity only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encodings {
    /// The list, its unused places `None` after the used ones.
    list: [Option<Encoding>; 2],
}

impl Encodings {
    /// No compression.
    pub const NONE: Encodings = Encodings { list: [None, None] };

    /// zstd first, then gzip: what the clients accept by default and what the server reads
    /// requests in; the server offers it for responses only when asked (`--compression`; why:
    /// docs/operations.md, "Compression and long links").
    pub const ZSTD_GZIP: Encodings = Encodings {
        list: [Some(Encoding::Zstd), Some(Encoding::Gzip)],
    };

    /// The encodings in order of preference.
    pub fn iter(&self) -> impl Iterator<Item = Encoding> + '_ {
        self.list.iter().flatten().copied()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list[0].is_none()
    }

    /// The first of these encodings that a `grpc-accept-encoding` value (`gzip,identity`)
    /// names: this side's preference decides, not the order the peer listed them in.
    pub fn pick(&self, accepted: &str) -> Option<Encoding> {
        let named = |e: Encoding| accepted.split(',').any(|a| a.trim() == e.name());
        self.iter().find(|&e| named(e))
    }
}

/// Why a text is not a list of [`Encodings`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodingsError {
    /// A name that is neither `zstd` nor `gzip`.
    #[error("unknown encoding {0:?}: expected zstd, gzip (comma-separated) or none")]
    Unknown(String),
    /// The same encoding twice.
    #[error("{0} is listed twice")]
    Twice(&'static str),
}

impl std::str::FromStr for Encodings {
    type Err = EncodingsError;

    /// `none`, or `zstd`, `gzip` comma-separated in order of preference.
    fn from_str(text: &str) -> Result<Encodings, EncodingsError> {
        let text = text.trim();
        let mut encodings = Encodings::NONE;
        if text.eq_ignore_ascii_case("none") {
            return Ok(encodings);
        }
        for (place, name) in text.split(',').map(str::trim).enumerate() {
            let lower = name.to_ascii_lowercase();
            let encoding =
                Encoding::named(&lower).ok_or_else(|| EncodingsError::Unknown(name.into()))?;
            if encodings.iter().any(|e| e == encoding) {
                return Err(EncodingsError::Twice(encoding.name()));
            }
            // Two distinct encodings exist, so a third name is a repeat or unknown.
            encodings.list[place] = Some(encoding);
        }
        Ok(encodings)
    }
}

impl std::fmt::Display for Encodings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.iter().map(Encoding::name).collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_none() {
        assert_eq!("zstd,gzip".parse(), Ok(Encodings::ZSTD_GZIP));
        assert_eq!(" none ".parse(), Ok(Encodings::NONE));
        let gzip: Encodings = "GZIP".parse().unwrap();
        assert_eq!(gzip.iter().collect::<Vec<_>>(), [Encoding::Gzip]);
        assert_eq!(gzip.to_string(), "gzip");
        assert_eq!(Encodings::ZSTD_GZIP.to_string(), "zstd,gzip");
        assert_eq!(Encodings::NONE.to_string(), "none");
    }

    #[test]
    fn refuses_unknown_repeated_and_empty_names() {
        assert_eq!(
            "zstd,br".parse::<Encodings>(),
            Err(EncodingsError::Unknown("br".into()))
        );
        assert_eq!(
            "gzip,gzip".parse::<Encodings>(),
            Err(EncodingsError::Twice("gzip"))
        );
        assert!("".parse::<Encodings>().is_err());
        assert!("zstd,".parse::<Encodings>().is_err());
    }

    #[test]
    fn picks_by_own_preference_among_the_accepted() {
        let ours = Encodings::ZSTD_GZIP;
        assert_eq!(ours.pick("gzip, zstd,identity"), Some(Encoding::Zstd));
        assert_eq!(ours.pick("identity,deflate,gzip"), Some(Encoding::Gzip));
        assert_eq!(ours.pick("br,identity"), None);
        assert_eq!(ours.pick(""), None);
        assert_eq!(Encodings::NONE.pick("zstd,gzip"), None);
    }
}
