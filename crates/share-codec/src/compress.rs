//! Raw DEFLATE + base64url, the text form of every share (`docs/wire-format.md`,
//! "Compressed text"): the
//! hash of a hash link and the plaintext of an encrypted paste.
//!
//! Deflate output is not canonical (Node, Bun and flate2 all differ), so
//! compatibility is judged after inflating. Decoding is as forgiving as the
//! browser (`atob`, U+FFFD for bad UTF-8) but as strict as browsers about the
//! stream itself (no trailing bytes, no truncation), and bounded: inflation
//! stops as soon as the output would exceed the caller's cap.

use std::io::Write as _;

use flate2::write::DeflateEncoder;
use flate2::{Compression, Decompress, FlushDecompress, Status};

use crate::b64::{decode_forgiving, encode_base64url};
use crate::error::CodecError;

/// A default cap on inflated size for [`decompress`]: 32 MiB, far above any
/// real plan (pastes are limited to 5 MiB of ciphertext) yet small enough
/// that a decompression bomb fails fast.
pub const DEFAULT_MAX_INFLATED_BYTES: usize = 32 * 1024 * 1024;

/// Output is produced in chunks of this size, so memory use is bounded by
/// the cap plus one chunk.
const CHUNK: usize = 32 * 1024;

/// Compresses text as upstream's `compress`: UTF-8 → raw DEFLATE (RFC 1951,
/// no zlib/gzip header) → base64url without padding.
pub fn compress(json: &str) -> String {
    encode_base64url(&deflate_raw(json.as_bytes()))
}

/// Raw DEFLATE of `bytes` at the default level (what `CompressionStream('deflate-raw')` uses).
pub fn deflate_raw(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(
        Vec::with_capacity(bytes.len() / 4 + 16),
        Compression::default(),
    );
    // The sink is a Vec, whose `Write` impl never fails, so neither can the
    // encoder; the fallbacks only keep the signature total.
    if encoder.write_all(bytes).is_err() {
        return Vec::new();
    }
    encoder.finish().unwrap_or_default()
}

/// Decodes share text as upstream's `decompress` up to `JSON.parse`:
/// forgiving base64 (both alphabets, optional padding, whitespace), raw
/// inflate, then UTF-8 with U+FFFD for invalid sequences and a leading BOM
/// removed (`TextDecoder`).
///
/// # Errors
/// - [`CodecError::InvalidBase64`] when `atob` would throw;
/// - [`CodecError::TruncatedOrCorrupt`] for a corrupt or truncated stream
///   (including empty input);
/// - [`CodecError::TrailingData`] when bytes follow the final block;
/// - [`CodecError::TooLarge`] when the text would inflate beyond `max_inflated_bytes`.
pub fn decompress(text: &str, max_inflated_bytes: usize) -> Result<String, CodecError> {
    let bytes = decode_forgiving(text)?;
    let mut inflated = inflate_raw(&bytes, max_inflated_bytes)?;
    if inflated.starts_with(b"\xEF\xBB\xBF") {
        inflated.drain(..3);
    }
    Ok(match String::from_utf8(inflated) {
        Ok(text) => text,
        Err(invalid) => String::from_utf8_lossy(invalid.as_bytes()).into_owned(),
    })
}

/// Inflates one complete raw DEFLATE stream of at most `max_inflated_bytes`.
///
/// # Errors
/// As [`decompress`], minus base64.
pub fn inflate_raw(input: &[u8], max_inflated_bytes: usize) -> Result<Vec<u8>, CodecError> {
    let mut inflater = Decompress::new(false);
    let mut out = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let consumed = offset(inflater.total_in());
        let before_out = inflater.total_out();
        let status = inflater
            .decompress(
                &input[consumed.min(input.len())..],
                &mut chunk,
                FlushDecompress::None,
            )
            .map_err(|_| CodecError::TruncatedOrCorrupt)?;
        let produced = offset(inflater.total_out() - before_out);
        if out.len() + produced > max_inflated_bytes {
            return Err(CodecError::TooLarge {
                limit: max_inflated_bytes,
            });
        }
        out.extend_from_slice(&chunk[..produced]);
        match status {
            Status::StreamEnd => break,
            Status::Ok | Status::BufError => {
                let progressed = produced > 0 || offset(inflater.total_in()) > consumed;
                if !progressed {
                    return Err(CodecError::TruncatedOrCorrupt);
                }
            }
        }
    }
    if offset(inflater.total_in()) < input.len() {
        return Err(CodecError::TrailingData);
    }
    Ok(out)
}

/// A byte count of data already held in memory, as an index.
fn offset(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_raw_deflate() {
        let hash = compress(r##"{"p":"# Plan","a":[]}"##);
        assert!(hash.starts_with("q1Yq"), "{hash}");
        assert_eq!(
            decompress(&hash, 1024).unwrap(),
            r##"{"p":"# Plan","a":[]}"##
        );
    }

    #[test]
    fn empty_input_is_truncated() {
        assert_eq!(decompress("", 1024), Err(CodecError::TruncatedOrCorrupt));
    }

    #[test]
    fn the_cap_is_exact() {
        let text = "x".repeat(1000);
        let hash = compress(&text);
        assert_eq!(decompress(&hash, 1000).unwrap(), text);
        assert_eq!(
            decompress(&hash, 999),
            Err(CodecError::TooLarge { limit: 999 })
        );
    }

    #[test]
    fn invalid_utf8_becomes_replacement_and_bom_is_dropped() {
        let hash = encode_base64url(&deflate_raw(b"\xEF\xBB\xBFa\xFFb"));
        assert_eq!(decompress(&hash, 100).unwrap(), "a\u{FFFD}b");
    }
}
