//! Base64 as upstream uses it: base64url without padding on the way out, and
//! on the way in the WHATWG *forgiving-base64 decode* (browser `atob`) after
//! upstream's `-`→`+`, `_`→`/` mapping (`docs/wire-format.md`, "Compressed text").

use ::base64::Engine as _;
use ::base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::CodecError;

/// Encodes bytes as base64url without `=` padding (what upstream produces
/// with `btoa` followed by `+`→`-`, `/`→`_` and stripping `=`).
pub fn encode_base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes text exactly as upstream's `atob(s.replace(/-/g,'+').replace(/_/g,'/'))`.
///
/// - ASCII whitespace (TAB, LF, FF, CR, SPACE) anywhere is removed;
/// - both alphabets are accepted (`+/` and `-_`, even mixed);
/// - one or two `=` are removed only when the length (after whitespace
///   removal) is a multiple of 4; any other `=` is an invalid character;
/// - a length ≡ 1 (mod 4) is rejected;
/// - non-zero unused bits in the last character are accepted and dropped.
///
/// # Errors
/// [`CodecError::InvalidBase64`] when `atob` would throw `InvalidCharacterError`.
pub fn decode_forgiving(text: &str) -> Result<Vec<u8>, CodecError> {
    let mut data: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' '))
        .collect();
    if data.len().is_multiple_of(4) {
        if data.ends_with(b"==") {
            data.truncate(data.len() - 2);
        } else if data.ends_with(b"=") {
            data.truncate(data.len() - 1);
        }
    }
    if data.len() % 4 == 1 {
        return Err(CodecError::InvalidBase64("length is not valid"));
    }
    let mut out = Vec::with_capacity(data.len() / 4 * 3 + 2);
    let mut buffer: u32 = 0;
    let mut bits: u32 = 0;
    for &byte in &data {
        let value = sextet(byte).ok_or(CodecError::InvalidBase64("invalid character"))?;
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            // Lossless: the shifted value has at most 8 significant bits left.
            out.push(((buffer >> bits) & 0xff) as u8);
        }
        buffer &= (1 << bits) - 1;
    }
    Ok(out)
}

/// The 6-bit value of a base64 character in either alphabet.
fn sextet(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_optional_but_only_at_a_multiple_of_four() {
        assert_eq!(decode_forgiving("QQ").unwrap(), b"A");
        assert_eq!(decode_forgiving("QQ==").unwrap(), b"A");
        assert!(decode_forgiving("QQ=").is_err());
        assert!(decode_forgiving("Q===").is_err());
        assert!(decode_forgiving("QQ==QQ==").is_err());
        assert_eq!(decode_forgiving("QUI=").unwrap(), b"AB");
    }

    #[test]
    fn whitespace_and_both_alphabets_are_accepted() {
        assert_eq!(decode_forgiving(" Q\tU\nJ\x0cD\r").unwrap(), b"ABC");
        assert_eq!(
            decode_forgiving("-_+/").unwrap(),
            decode_forgiving("+/+/").unwrap()
        );
    }

    #[test]
    fn length_one_mod_four_and_stray_characters_are_rejected() {
        assert!(decode_forgiving("Q").is_err());
        assert!(decode_forgiving("QUJDR").is_err());
        assert!(decode_forgiving("QU!D").is_err());
        assert!(decode_forgiving("QUJ\u{a0}D").is_err());
        assert_eq!(decode_forgiving("").unwrap(), b"");
    }

    #[test]
    fn non_zero_trailing_bits_are_dropped() {
        assert_eq!(decode_forgiving("QR").unwrap(), b"A");
        assert_eq!(
            decode_forgiving("QUJ").unwrap(),
            decode_forgiving("QUI").unwrap()
        );
    }

    #[test]
    fn encoding_is_unpadded_base64url() {
        assert_eq!(encode_base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(encode_base64url(b""), "");
    }
}
