//! Bearer tokens: the file an operator gives with `--auth-tokens` (one `name token` per line),
//! parsed into the set `Config::tokens` holds, and the constant-time
//! lookup of a presented token. Which calls need one, and what a refused call sees, live in
//! the server's gate; client certificates in its TLS setup.

use subtle::ConstantTimeEq;

/// The tokens calls may carry, each with the name a client is known by.
#[derive(Clone)]
pub struct Tokens(Vec<(String, Vec<u8>)>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a token.
        let names: Vec<&str> = self.0.iter().map(|(name, _)| name.as_str()).collect();
        write!(f, "Tokens({names:?})")
    }
}

/// Why a tokens file was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokensError {
    /// A line is not `name token`.
    #[error("line {line}: expected `name token`")]
    Form {
        /// Its number, from 1.
        line: usize,
    },
    /// A token is too short to be a secret.
    #[error("line {line}: the token of {name} has {len} characters; use at least 16")]
    Short {
        /// Its number, from 1.
        line: usize,
        /// The client's name.
        name: String,
        /// The token's length.
        len: usize,
    },
    /// A name is given twice.
    #[error("line {line}: {name} is named twice")]
    Duplicate {
        /// Its number, from 1.
        line: usize,
        /// The name.
        name: String,
    },
    /// No token is given.
    #[error("no tokens (blank lines and lines starting with # are skipped)")]
    Empty,
}

/// Shortest token accepted: 16 characters of a random token are well beyond guessing.
const MIN_TOKEN: usize = 16;

impl Tokens {
    /// The tokens of a file's text: `name token` per line; blank lines and `#` comments
    /// skipped.
    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        let mut tokens: Vec<(String, Vec<u8>)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(name), Some(token), None) = (words.next(), words.next(), words.next()) else {
                return Err(TokensError::Form { line: line_no });
            };
            if token.len() < MIN_TOKEN {
                return Err(TokensError::Short {
                    line: line_no,
                    name: name.to_string(),
                    len: token.len(),
                });
            }
            if tokens.iter().any(|(n, _)| n == name) {
                return Err(TokensError::Duplicate {
                    line: line_no,
                    name: name.to_string(),
                });
            }
            tokens.push((name.to_string(), token.as_bytes().to_vec()));
        }
        if tokens.is_empty() {
            return Err(TokensError::Empty);
        }
        Ok(Tokens(tokens))
    }

    /// The name of the client whose token is `presented`. Every token is compared, each in
    /// constant time, so the time taken says nothing about how much of a token matched (only
    /// whether lengths did).
    pub fn who(&self, presented: &[u8]) -> Option<&str> {
        let mut found = None;
        for (name, token) in &self.0 {
            let same = token.len() == presented.len() && bool::from(token.ct_eq(presented));
            if same && found.is_none() {
                found = Some(name.as_str());
            }
        }
        found
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (never, for parsed tokens).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_match() {
        let tokens = Tokens::parse("# ops\nalice aaaaaaaaaaaaaaaa\n\nbob   bbbbbbbbbbbbbbbbbb\n")
            .expect("valid");
        assert_eq!(tokens.len(), 2);
        assert_eq!(tokens.who(b"aaaaaaaaaaaaaaaa"), Some("alice"));
        assert_eq!(tokens.who(b"bbbbbbbbbbbbbbbbbb"), Some("bob"));
        assert_eq!(tokens.who(b"aaaaaaaaaaaaaaab"), None);
        assert_eq!(tokens.who(b""), None);
        assert!(!format!("{tokens:?}").contains("aaaa"));
    }

    #[test]
    fn bad_files_name_the_line() {
        assert!(matches!(
            Tokens::parse("alice\n"),
            Err(TokensError::Form { line: 1 })
        ));
        assert!(matches!(
            Tokens::parse("a short\n"),
            Err(TokensError::Short { line: 1, .. })
        ));
        assert!(matches!(
            Tokens::parse("a aaaaaaaaaaaaaaaa\na bbbbbbbbbbbbbbbb"),
            Err(TokensError::Duplicate { line: 2, .. })
        ));
        assert!(matches!(Tokens::parse("# none\n"), Err(TokensError::Empty)));
    }
}
