//! AES-GCM for short links, as upstream's WebCrypto code does it
//! (`docs/wire-format.md`, "Encryption"):
//! a fresh 256-bit key and 12-byte IV per share, no associated data, a
//! 128-bit tag, and `base64url(IV ‖ ciphertext ‖ tag)` as the stored text.
//! The plaintext is the *compressed base64url string*, not the deflate bytes.
//!
//! Decryption accepts what WebCrypto accepts: 16-, 24- or 32-byte keys
//! (AES-128/192/256; upstream's raw import ignores the requested length) and
//! both strings through the same forgiving base64 decoder. A wrong key or any
//! tampering is an error, never wrong plaintext.

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::aes::{Aes192, cipher::consts::U12};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm, Nonce};

use crate::b64::{decode_forgiving, encode_base64url};
use crate::error::CodecError;

/// IV length in bytes (the prefix of the stored data).
pub const IV_LEN: usize = 12;
/// GCM tag length in bytes (the suffix of the stored data).
pub const TAG_LEN: usize = 16;
/// Length of an encoded [`ShareKey`] in a link: 43 base64url characters.
pub const KEY_B64_LEN: usize = 43;

type Aes192Gcm = AesGcm<Aes192, U12>;

/// A 256-bit share key, as generated for every short link. Its `Debug` form
/// is redacted so that keys never reach logs by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ShareKey([u8; 32]);

impl ShareKey {
    /// Wraps raw key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        ShareKey(bytes)
    }

    /// A fresh key from the system random generator.
    ///
    /// # Errors
    /// [`CodecError::Random`] when the system random generator fails.
    pub fn generate() -> Result<Self, CodecError> {
        random_bytes().map(ShareKey)
    }

    /// Reads a key as it appears in `#key=` (forgiving base64, as
    /// [`decrypt`] reads it); it must be 32 bytes.
    ///
    /// # Errors
    /// [`CodecError::InvalidKey`] when the text is not base64 of 32 bytes.
    pub fn parse(text: &str) -> Result<Self, CodecError> {
        let bytes =
            decode_forgiving(text).map_err(|_| CodecError::InvalidKey("not base64".to_owned()))?;
        let len = bytes.len();
        <[u8; 32]>::try_from(bytes)
            .map(ShareKey)
            .map_err(|_| CodecError::InvalidKey(format!("{len} bytes (expected 32)")))
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key as it appears in `#key=`: 43 base64url characters, unpadded.
    pub fn to_base64url(&self) -> String {
        encode_base64url(&self.0)
    }
}

impl fmt::Debug for ShareKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ShareKey(<redacted>)")
    }
}

/// Encrypts compressed share text with a fresh key and IV (upstream's `encrypt`).
/// Returns the key and `base64url(IV ‖ ciphertext ‖ tag)`.
///
/// # Errors
/// [`CodecError::Random`] when the system random generator fails.
pub fn encrypt(plaintext_compressed: &str) -> Result<(ShareKey, String), CodecError> {
    let key = ShareKey::generate()?;
    let iv: [u8; IV_LEN] = random_bytes()?;
    let data = encrypt_with(&key, &iv, plaintext_compressed);
    Ok((key, data))
}

/// Deterministic [`encrypt`] with a caller-chosen key and IV (tests, fixtures).
/// Never reuse an IV with the same key for different plaintexts.
pub fn encrypt_with(key: &ShareKey, iv: &[u8; IV_LEN], plaintext: &str) -> String {
    let cipher = Aes256Gcm::new(&key.0.into());
    let nonce = Nonce::<U12>::from(*iv);
    // AES-GCM encryption fails only for plaintexts above 64 GiB, which a
    // `&str` held in memory for a share never reaches.
    let sealed = cipher
        .encrypt(&nonce, plaintext.as_bytes())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(IV_LEN + sealed.len());
    out.extend_from_slice(iv);
    out.extend_from_slice(&sealed);
    encode_base64url(&out)
}

/// Decrypts stored share data with the key from a link (upstream's `decrypt`),
/// returning the compressed share text for [`crate::decompress`].
///
/// # Errors
/// - [`CodecError::InvalidKey`] when the key is not base64 or not 16/24/32 bytes;
/// - [`CodecError::InvalidBase64`] when the data is not base64;
/// - [`CodecError::CiphertextTooShort`] below 28 bytes (IV + tag);
/// - [`CodecError::DecryptFailed`] for a wrong key or tampered data;
/// - [`CodecError::InvalidUtf8`] when the plaintext is not UTF-8.
pub fn decrypt(ciphertext_b64: &str, key_b64: &str) -> Result<String, CodecError> {
    let key =
        decode_forgiving(key_b64).map_err(|_| CodecError::InvalidKey("not base64".to_owned()))?;
    if !matches!(key.len(), 16 | 24 | 32) {
        return Err(CodecError::InvalidKey(format!(
            "{} bytes (expected 16, 24 or 32)",
            key.len()
        )));
    }
    let data = decode_forgiving(ciphertext_b64)?;
    if data.len() < IV_LEN + TAG_LEN {
        return Err(CodecError::CiphertextTooShort { len: data.len() });
    }
    let (iv, sealed) = data.split_at(IV_LEN);
    let nonce = Nonce::<U12>::try_from(iv).map_err(|_| CodecError::DecryptFailed)?;
    let opened = match key.len() {
        16 => open::<Aes128Gcm>(&key, &nonce, sealed),
        24 => open::<Aes192Gcm>(&key, &nonce, sealed),
        _ => open::<Aes256Gcm>(&key, &nonce, sealed),
    }?;
    String::from_utf8(opened).map_err(|_| CodecError::InvalidUtf8)
}

fn open<C: KeyInit + Aead<NonceSize = U12>>(
    key: &[u8],
    nonce: &Nonce<U12>,
    sealed: &[u8],
) -> Result<Vec<u8>, CodecError> {
    let cipher = C::new_from_slice(key).map_err(|_| CodecError::InvalidKey("bad length".into()))?;
    cipher
        .decrypt(nonce, sealed)
        .map_err(|_| CodecError::DecryptFailed)
}

fn random_bytes<const N: usize>() -> Result<[u8; N], CodecError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| CodecError::Random(e.to_string()))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_43_chars_and_fresh() {
        let (k1, d1) = encrypt("abc").unwrap();
        let (k2, d2) = encrypt("abc").unwrap();
        assert_eq!(k1.to_base64url().len(), KEY_B64_LEN);
        assert_ne!(k1, k2);
        assert_ne!(d1, d2);
        assert_eq!(decrypt(&d1, &k1.to_base64url()).unwrap(), "abc");
        assert_eq!(format!("{k1:?}"), "ShareKey(<redacted>)");
        assert_eq!(ShareKey::parse(&k1.to_base64url()).unwrap(), k1);
        assert!(matches!(
            ShareKey::parse("AAAA"),
            Err(CodecError::InvalidKey(_))
        ));
    }

    #[test]
    fn empty_plaintext_is_38_chars() {
        let data = encrypt_with(&ShareKey::from_bytes([7; 32]), &[1; 12], "");
        assert_eq!(data.len(), 38);
    }

    #[test]
    fn wrong_key_fails() {
        let data = encrypt_with(&ShareKey::from_bytes([7; 32]), &[1; 12], "x");
        let other = ShareKey::from_bytes([8; 32]).to_base64url();
        assert_eq!(decrypt(&data, &other), Err(CodecError::DecryptFailed));
    }
}
