//! API keys: `pst_live_<secret>_<checksum>`.
//!
//! - `secret`: 43 characters of unpadded base64url encoding 256 bits from the
//!   operating system's CSPRNG (canonical: the unused low bits are zero).
//! - `checksum`: the first 4 bytes of SHA-256 of everything before it
//!   (`pst_live_<secret>`), read as a big-endian `u32` and written as exactly
//!   6 base62 characters (`0-9A-Za-z`, most significant first, zero-padded).
//!
//! The checksum lets [`ApiKey::parse`] reject typos and random guesses without
//! touching the database (so a malformed credential costs no lookup); it is
//! not a secret. The catalog stores only [`ApiKey::digest`] (SHA-256 of the
//! whole key) and the display prefix, and looks keys up by digest.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The prefix of live keys.
const PREFIX: &str = "pst_live_";
/// Characters of the base64url secret (256 bits).
const SECRET_LEN: usize = 43;
/// Characters of the base62 checksum.
const CHECKSUM_LEN: usize = 6;
/// Total length of a key.
const KEY_LEN: usize = PREFIX.len() + SECRET_LEN + 1 + CHECKSUM_LEN;
/// Characters of the secret kept in the display prefix (24 of 256 bits).
const DISPLAY_SECRET_CHARS: usize = 4;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Why a string is not an API key. Deliberately coarse: callers answer every
/// case the same way (401).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyFormatError {
    /// Wrong prefix, length or characters.
    #[error("malformed API key")]
    Malformed,
    /// Well-formed, but the checksum does not match (a typo or a guess).
    #[error("API key checksum mismatch")]
    Checksum,
    /// The operating system's random source failed while generating a key.
    #[error("the operating system's random number generator failed")]
    Random,
}

/// The SHA-256 digest of a full API key: what the catalog stores and looks up.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyDigest(pub [u8; 32]);

impl KeyDigest {
    /// The digest of a presented bearer, exactly as [`ApiKey::digest`]
    /// computes it for a parsed key — for looking up keys already checked
    /// (a cache keyed by digest) without parsing them again.
    pub fn of(presented: &str) -> KeyDigest {
        KeyDigest(Sha256::digest(presented.as_bytes()).into())
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyDigest(")?;
        for b in &self.0[..4] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// A syntactically valid API key with a correct checksum. Holding one does
/// not mean it is known to the catalog: see
/// [`Catalog::authenticate`](crate::Catalog::authenticate).
///
/// `Debug` and `Display` show only the display prefix, never the secret; the
/// full key is available only through [`ApiKey::expose_secret`].
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

fn checksum(body: &str) -> String {
    let hash = Sha256::digest(body.as_bytes());
    let mut n = u32::from_be_bytes([hash[0], hash[1], hash[2], hash[3]]);
    let mut out = [b'0'; CHECKSUM_LEN];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    out.iter().map(|&b| char::from(b)).collect()
}

impl ApiKey {
    /// A fresh live key with 256 random bits.
    pub fn generate() -> Result<Self, KeyFormatError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|_| KeyFormatError::Random)?;
        let body = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(secret));
        let sum = checksum(&body);
        Ok(ApiKey(format!("{body}_{sum}")))
    }

    /// Validates shape and checksum. Does no I/O: a malformed or mistyped key
    /// is rejected here, before any lookup.
    pub fn parse(s: &str) -> Result<Self, KeyFormatError> {
        if s.len() != KEY_LEN || !s.is_ascii() || !s.starts_with(PREFIX) {
            return Err(KeyFormatError::Malformed);
        }
        let body = &s[..PREFIX.len() + SECRET_LEN];
        let secret = &s[PREFIX.len()..PREFIX.len() + SECRET_LEN];
        let sep = &s[PREFIX.len() + SECRET_LEN..PREFIX.len() + SECRET_LEN + 1];
        let sum = &s[PREFIX.len() + SECRET_LEN + 1..];
        // Canonical base64url of exactly 32 bytes (non-zero trailing bits rejected).
        let decoded = URL_SAFE_NO_PAD
            .decode(secret.as_bytes())
            .map_err(|_| KeyFormatError::Malformed)?;
        if decoded.len() != 32 || sep != "_" || !sum.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(KeyFormatError::Malformed);
        }
        if checksum(body) != sum {
            return Err(KeyFormatError::Checksum);
        }
        Ok(ApiKey(s.to_owned()))
    }

    /// SHA-256 of the whole key.
    pub fn digest(&self) -> KeyDigest {
        KeyDigest::of(&self.0)
    }

    /// The non-secret prefix shown in listings: `pst_live_` and the first 4
    /// characters of the secret (24 of its 256 bits).
    pub fn display_prefix(&self) -> String {
        format!("{}…", &self.0[..PREFIX.len() + DISPLAY_SECRET_CHARS])
    }

    /// The full key. Hand it to the client once, at creation; never log it.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// The 43-character secret part (for tests that search dumps for it).
    pub fn secret_part(&self) -> &str {
        &self.0[PREFIX.len()..PREFIX.len() + SECRET_LEN]
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({})", self.display_prefix())
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_prefix())
    }
}

impl std::str::FromStr for ApiKey {
    type Err = KeyFormatError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApiKey::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generated_keys_have_the_documented_shape() {
        let k = ApiKey::generate().unwrap();
        let s = k.expose_secret();
        assert_eq!(s.len(), KEY_LEN);
        assert!(s.starts_with("pst_live_"));
        assert_eq!(&s[52..53], "_");
        assert_eq!(ApiKey::parse(s).unwrap(), k);
        assert!(!format!("{k:?}").contains(k.secret_part()));
        assert!(!format!("{k}").contains(k.secret_part()));
        assert_ne!(ApiKey::generate().unwrap(), k);
    }

    #[test]
    fn malformed_keys_are_rejected() {
        let k = ApiKey::generate().unwrap();
        let s = k.expose_secret();
        for bad in [
            "",
            "pst_live_",
            &s[1..],
            &format!("{s}x"),
            &s.replace("pst_live_", "pst_test_"),
            &format!("{s} "),
            &s.to_uppercase(),
        ] {
            assert!(ApiKey::parse(bad).is_err(), "{bad:?} parsed");
        }
        let mut wrong_sum = s.to_owned();
        let last = if s.ends_with('0') { "1" } else { "0" };
        wrong_sum.replace_range(KEY_LEN - 1.., last);
        assert_eq!(ApiKey::parse(&wrong_sum), Err(KeyFormatError::Checksum));
    }

    #[test]
    fn a_thousand_keys_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(ApiKey::generate().unwrap().digest()));
        }
    }

    proptest! {
        #[test]
        fn any_single_character_change_is_rejected(pos in 0usize..KEY_LEN, c in proptest::char::any()) {
            let k = ApiKey::generate().unwrap();
            let s = k.expose_secret();
            prop_assert!(ApiKey::parse(s).is_ok());
            let mut chars: Vec<char> = s.chars().collect();
            prop_assume!(chars[pos] != c);
            chars[pos] = c;
            let changed: String = chars.into_iter().collect();
            prop_assert!(ApiKey::parse(&changed).is_err(), "{changed:?} parsed");
        }

        #[test]
        fn any_single_alphabet_substitution_fails_the_checksum(pos in 9usize..KEY_LEN, i in 0usize..64) {
            // Substitutions that keep the shape valid must be caught by the checksum.
            const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            let k = ApiKey::generate().unwrap();
            let mut bytes = k.expose_secret().as_bytes().to_vec();
            prop_assume!(bytes[pos] != ALPHABET[i] && pos != 52);
            bytes[pos] = ALPHABET[i];
            let changed = String::from_utf8(bytes).unwrap();
            prop_assert!(ApiKey::parse(&changed).is_err());
        }
    }
}
