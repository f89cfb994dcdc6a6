//! The whole pipeline in one call each way, for callers that do not need the
//! intermediate strings: payload ⇄ hash data, payload ⇄ paste data.

use crate::compress::{compress, decompress};
use crate::crypto::{ShareKey, decrypt, encrypt};
use crate::error::CodecError;
use crate::payload::SharePayload;

/// The hash of a hash link: `compress(JSON.stringify(payload))`.
pub fn encode_hash(payload: &SharePayload) -> String {
    compress(&payload.to_json())
}

/// Restores a payload from hash data (upstream's `parseShareHash` followed by
/// `fromShareable`), inflating at most `max_inflated_bytes`.
///
/// # Errors
/// Any [`decompress`] error, then [`CodecError::InvalidJson`] or
/// [`CodecError::NotAPayload`].
pub fn decode_hash(data: &str, max_inflated_bytes: usize) -> Result<SharePayload, CodecError> {
    SharePayload::from_json(&decompress(data, max_inflated_bytes)?)
}

/// The body of a paste for a short link: the payload compressed and then
/// encrypted with a fresh key. Returns the key (for `#key=`) and the data to
/// store.
///
/// # Errors
/// [`CodecError::Random`] when the system random generator fails.
pub fn encrypt_payload(payload: &SharePayload) -> Result<(ShareKey, String), CodecError> {
    encrypt(&encode_hash(payload))
}

/// Restores a payload from stored paste data: decrypted with `key` when the
/// link has one, else read as a legacy unencrypted paste (compressed text).
///
/// # Errors
/// Any [`decrypt`] error, then as [`decode_hash`].
pub fn decode_paste(
    data: &str,
    key: Option<&str>,
    max_inflated_bytes: usize,
) -> Result<SharePayload, CodecError> {
    match key {
        Some(key) => decode_hash(&decrypt(data, key)?, max_inflated_bytes),
        None => decode_hash(data, max_inflated_bytes),
    }
}
