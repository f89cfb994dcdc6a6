//! The one error type of the crate. Each variant is a distinct failure class
//! that callers (the CLI's exit codes, the portal's error text) can tell
//! apart; none of them carries payload text, keys or ciphertext.

/// Upstream's Import Review text for input that is neither a short link nor
/// contains a `#`, used verbatim by [`CodecError::InvalidLink`].
pub const NO_HASH_OR_SHORT_LINK: &str = "Invalid share URL: no hash fragment or short link found";

/// Upstream's Import Review text for a link whose fragment is empty
/// (`docs/wire-format.md`, "Links"), used verbatim by [`CodecError::InvalidLink`].
pub const EMPTY_HASH: &str = "Invalid share URL: empty hash";

/// Why decoding, decrypting or parsing a share failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The text is not forgiving base64 (browser `atob` would throw
    /// `InvalidCharacterError`).
    #[error("invalid base64: {0}")]
    InvalidBase64(&'static str),

    /// The raw DEFLATE stream is corrupt or ends before its final block.
    #[error("compressed data is truncated or corrupt")]
    TruncatedOrCorrupt,

    /// Bytes follow the final DEFLATE block (browsers reject this; Node ignores it).
    #[error("unexpected data after the end of the compressed stream")]
    TrailingData,

    /// Inflating would produce more than `limit` bytes (a decompression bomb
    /// or a payload above the caller's cap).
    #[error("inflated data exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The cap that was exceeded, in bytes.
        limit: usize,
    },

    /// Decrypted data is not UTF-8 (the plaintext must be a base64url string).
    #[error("decrypted data is not valid utf-8")]
    InvalidUtf8,

    /// The inflated text is not JSON (upstream: `JSON.parse` `SyntaxError`).
    #[error("payload is not valid json: {0}")]
    InvalidJson(String),

    /// Valid JSON that is not a share payload: not an object, no `a` array,
    /// or a field of the wrong type.
    #[error("not a share payload: {0}")]
    NotAPayload(String),

    /// Fewer than 28 bytes (12-byte IV + 16-byte tag) after base64 decoding.
    #[error("ciphertext is too short ({len} bytes, at least 28 expected)")]
    CiphertextTooShort {
        /// Decoded length in bytes.
        len: usize,
    },

    /// Authentication failed: the key is wrong or the data was tampered with.
    #[error("decryption failed: wrong key or tampered data")]
    DecryptFailed,

    /// The key is not base64 or not 16, 24 or 32 bytes long.
    #[error("invalid key: {0}")]
    InvalidKey(String),

    /// The system random generator failed while creating a key or IV.
    #[error("system random generator failed: {0}")]
    Random(String),

    /// The text is not a share link. Carries upstream's exact message
    /// ([`NO_HASH_OR_SHORT_LINK`], [`EMPTY_HASH`]) or a lowercase description.
    #[error("{0}")]
    InvalidLink(String),
}
