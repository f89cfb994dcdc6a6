//! Review tokens: 32 random bytes shown once as unpadded base64url, kept
//! only as their SHA-256.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::error::ReviewError;

/// A freshly drawn token (owner or reviewer).
pub(crate) struct Token(String);

impl Token {
    /// Draws a token from the OS CSPRNG. A token never starts like an API
    /// key (`pst_`), so the two never meet in an `Authorization` header.
    pub(crate) fn generate() -> Result<Self, ReviewError> {
        loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|_| ReviewError::Draw)?;
            let text = URL_SAFE_NO_PAD.encode(bytes);
            if !text.starts_with("pst_") {
                return Ok(Token(text));
            }
        }
    }

    /// The token, to show its holder once.
    pub(crate) fn reveal(self) -> String {
        self.0
    }

    /// What the catalog keeps.
    pub(crate) fn digest(&self) -> [u8; 32] {
        digest(&self.0)
    }
}

/// The SHA-256 of a presented token.
pub(crate) fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_43_base64url_characters_and_differ() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_ne!(a.digest(), b.digest());
        let a = a.reveal();
        assert!(api_types::rules::is_review_token(&a), "{a}");
        assert!(!a.starts_with("pst_"));
        assert_eq!(digest(&a), digest(&a.clone()));
    }
}
