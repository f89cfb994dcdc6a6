//! What a store keeps for one paste: the payload, its expiry and the digest of
//! its owner's delete token.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::UnixMillis;

/// A paste's data as clients sent it, in the most compact form that gives the
/// exact text back.
///
/// Upstream clients send base64url ciphertext. When the text is *canonical*
/// base64url (alphabet `A–Z a–z 0–9 - _`, no padding, zero trailing bits), it
/// is kept as the decoded bytes (¾ of the size) and re-encoded on read; the
/// round trip is exact because canonical encoding is unique. Anything else is
/// kept verbatim.
#[derive(Clone, PartialEq, Eq)]
pub enum Payload {
    /// Decoded bytes of a canonical base64url text (shared, so a clone of
    /// a paste does not copy its payload).
    Base64Url(Bytes),
    /// Text stored as received.
    Text(String),
}

impl Payload {
    /// Chooses the stored form of `text`.
    pub fn from_text(text: String) -> Self {
        match canonical_bytes(text.as_bytes()) {
            Some(bytes) => Payload::Base64Url(Bytes::from(bytes)),
            None => Payload::Text(text),
        }
    }

    /// [`from_text`](Self::from_text) of a borrowed text: a canonical
    /// base64url text is decoded without copying it first (a create holds
    /// one buffer less); other text is copied.
    pub fn from_borrowed(text: &str) -> Self {
        match canonical_bytes(text.as_bytes()) {
            Some(bytes) => Payload::Base64Url(Bytes::from(bytes)),
            None => Payload::Text(text.to_owned()),
        }
    }

    /// The payload of `text` if it is canonical base64url (see the type),
    /// `None` otherwise: for a caller that has the text as bytes and takes
    /// another route for anything else.
    pub fn from_canonical(text: &[u8]) -> Option<Self> {
        canonical_bytes(text).map(|bytes| Payload::Base64Url(Bytes::from(bytes)))
    }

    /// The text the client sent.
    pub fn to_text(&self) -> String {
        match self {
            Payload::Base64Url(bytes) => base64_simd::URL_SAFE_NO_PAD.encode_to_string(bytes),
            Payload::Text(text) => text.clone(),
        }
    }

    /// Whether the text is base64url, whose alphabet needs no escaping in a
    /// JSON string (so [`append_text`](Self::append_text) may write it
    /// between quotes as it is).
    pub fn is_base64url(&self) -> bool {
        matches!(self, Payload::Base64Url(_))
    }

    /// The length of [`to_text`](Self::to_text) in bytes, without building it.
    pub fn text_len(&self) -> usize {
        match self {
            Payload::Base64Url(bytes) => base64_simd::URL_SAFE_NO_PAD.encoded_length(bytes.len()),
            Payload::Text(text) => text.len(),
        }
    }

    /// Appends the text the client sent to `out`: the read path's encoder,
    /// which writes a stored base64url payload straight into the response
    /// buffer (SIMD where the CPU has it) instead of through a `String`.
    pub fn append_text(&self, out: &mut Vec<u8>) {
        match self {
            Payload::Base64Url(bytes) => base64_simd::URL_SAFE_NO_PAD.encode_append(bytes, out),
            Payload::Text(text) => out.extend_from_slice(text.as_bytes()),
        }
    }

    /// Appends up to `max` bytes of the text from byte `start` on, for an
    /// answer written in parts. For a base64url payload `start` and `max`
    /// must be multiples of 4 (whole groups of three stored bytes), and the
    /// part is encoded from the stored bytes without building the whole text.
    pub fn append_text_part(&self, start: usize, max: usize, out: &mut Vec<u8>) {
        match self {
            Payload::Base64Url(bytes) => {
                debug_assert!(
                    start.is_multiple_of(4) && max.is_multiple_of(4),
                    "whole base64 groups"
                );
                let from = (start / 4 * 3).min(bytes.len());
                let to = from.saturating_add(max / 4 * 3).min(bytes.len());
                base64_simd::URL_SAFE_NO_PAD.encode_append(&bytes[from..to], out);
            }
            Payload::Text(text) => {
                let bytes = text.as_bytes();
                let from = start.min(bytes.len());
                let to = from.saturating_add(max).min(bytes.len());
                out.extend_from_slice(&bytes[from..to]);
            }
        }
    }

    /// Number of bytes this payload occupies in storage.
    pub fn stored_len(&self) -> usize {
        match self {
            Payload::Base64Url(bytes) => bytes.len(),
            Payload::Text(text) => text.len(),
        }
    }
}

/// The bytes `text` decodes to, if it is canonical base64url: it decodes, and
/// encoding the result gives `text` back exactly (no padding, no other
/// characters, zero trailing bits).
///
/// The decoder (base64-simd, SIMD where the CPU has it) checks the alphabet,
/// the absence of padding and the length. The one freedom left is the last
/// character's unused low bits (4 of them when `len % 4 == 2`, 2 when
/// `len % 4 == 3`): canonical text has them zero, and that is checked here
/// rather than trusted to the decoder. A re-encoding round trip did the same
/// and cost about a third as much again as the decode.
fn canonical_bytes(text: &[u8]) -> Option<Vec<u8>> {
    let engine = base64_simd::URL_SAFE_NO_PAD;
    let bytes = engine.decode_type::<Vec<u8>>(text).ok()?;
    if engine.encoded_length(bytes.len()) != text.len() {
        return None;
    }
    let unused_bits = match text.len() % 4 {
        2 => 0b1111,
        3 => 0b0011,
        _ => 0,
    };
    if let Some(&last) = text.last()
        && sextet(last)? & unused_bits != 0
    {
        return None;
    }
    Some(bytes)
}

/// The 6-bit value of a base64url character.
fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

impl std::fmt::Debug for Payload {
    // Never print payloads: they are user data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Base64Url(b) => write!(f, "Payload::Base64Url({} bytes)", b.len()),
            Payload::Text(t) => write!(f, "Payload::Text({} bytes)", t.len()),
        }
    }
}

/// A paste's owner token, shown once to the creator and needed to delete it.
pub struct DeleteToken(String);

impl DeleteToken {
    /// Draws a fresh token: 256 random bits as 43 base64url characters.
    pub fn generate() -> Result<Self, crate::KeyError> {
        // A token never looks like an API key (`pst_…`), so a bearer can be
        // told apart by its prefix; redrawing costs 1 in 16 million draws.
        loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|_| crate::KeyError::Random)?;
            let token = URL_SAFE_NO_PAD.encode(bytes);
            if !token.starts_with("pst_") {
                return Ok(DeleteToken(token));
            }
        }
    }

    /// Whether `token` has the shape of an issued token (43 base64url
    /// characters). A bearer of any other shape cannot be a delete token, so
    /// it is refused as malformed before any paste is looked up.
    pub fn is_well_formed(token: &str) -> bool {
        token.len() == 43
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }

    /// The token text to hand to the creator.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The digest that is stored instead of the token.
    pub fn digest(&self) -> DeleteTokenDigest {
        DeleteTokenDigest::of(&self.0)
    }
}

impl std::fmt::Debug for DeleteToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeleteToken(<redacted>)")
    }
}

/// SHA-256 of a delete token; what the stores keep.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DeleteTokenDigest(pub [u8; 32]);

impl DeleteTokenDigest {
    /// The digest of `token`.
    pub fn of(token: &str) -> Self {
        DeleteTokenDigest(Sha256::digest(token.as_bytes()).into())
    }

    /// Whether `token` hashes to this digest, compared in constant time.
    pub fn matches(&self, token: &str) -> bool {
        Self::of(token).0.ct_eq(&self.0).into()
    }
}

impl std::fmt::Debug for DeleteTokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeleteTokenDigest(..)")
    }
}

/// One stored paste.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPaste {
    /// The data.
    pub payload: Payload,
    /// When it was stored (Unix ms).
    pub created_at: UnixMillis,
    /// When it stops being readable (Unix ms); it is expired once now > expires_at.
    pub expires_at: UnixMillis,
    /// Digest of the owner's delete token; `None` when the paste cannot be deleted.
    pub delete_token: Option<DeleteTokenDigest>,
    /// Whether the first successful read deletes it (who wins that read is
    /// decided by the tenant catalog, not by the store).
    pub burn_after_read: bool,
}

impl StoredPaste {
    /// Whether the paste is expired at `now` (upstream semantics: `now > expires_at`).
    pub fn is_expired_at(&self, now: UnixMillis) -> bool {
        now > self.expires_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_base64url_is_stored_as_bytes_and_round_trips() {
        for text in [
            "",
            "AA",
            "AAA",
            "q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg",
            "Xc6xCsJAEATQ_1km-g",
        ] {
            let p = Payload::from_text(text.to_owned());
            assert!(matches!(p, Payload::Base64Url(_)), "{text:?}");
            assert_eq!(p.to_text(), text);
        }
    }

    #[test]
    fn a_text_written_in_parts_is_the_whole_text() {
        let base64: String = (0..1000u32)
            .map(|i| {
                char::from(
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                        [(i * 7 % 64) as usize],
                )
            })
            .collect();
        for len in [0, 2, 3, 4, 5, 8, 999 / 4 * 4 + 3, 1000] {
            let Some(text) = [&base64[..len], &base64[..len.saturating_sub(1)]]
                .into_iter()
                .find(|t| canonical_bytes(t.as_bytes()).is_some())
            else {
                continue;
            };
            for payload in [
                Payload::from_text(text.to_owned()),
                Payload::Text(text.to_owned()),
            ] {
                for part in [4, 8, 12, 64, 1024] {
                    let mut out = Vec::new();
                    let mut start = 0;
                    while start < payload.text_len() {
                        payload.append_text_part(start, part, &mut out);
                        start += part;
                    }
                    assert_eq!(out, text.as_bytes(), "{len} in parts of {part}");
                }
            }
        }
    }

    #[test]
    fn non_canonical_text_is_stored_verbatim() {
        // padding, standard alphabet, whitespace, non-zero trailing bits, length % 4 == 1,
        // non-ASCII and JSON-looking text
        for text in [
            "AA==",
            "ab+/",
            "ab cd",
            "AB",
            "AAAAA",
            "🚀🚀",
            "{\"p\":1}",
            "abc=",
        ] {
            let p = Payload::from_text(text.to_owned());
            assert!(matches!(p, Payload::Text(_)), "{text:?}");
            assert_eq!(p.to_text(), text);
        }
    }

    /// The read path's encoder (base64-simd) gives exactly what the create
    /// path's canonical check (the base64 crate) accepted, for every length
    /// and every byte value.
    #[test]
    fn the_read_encoder_round_trips_what_the_create_decoder_accepts() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in (0..300).chain([4095, 4096, 4097, 6144, 75_000]) {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let text = URL_SAFE_NO_PAD.encode(&bytes);
            let p = Payload::from_text(text.clone());
            assert!(p.is_base64url(), "{len}");
            assert_eq!(p.to_text(), text, "{len}");
            assert_eq!(p.text_len(), text.len(), "{len}");
            let mut out = b"prefix".to_vec();
            p.append_text(&mut out);
            assert_eq!(&out[6..], text.as_bytes(), "{len}");
        }
        let text = Payload::from_text("ab cd".into());
        let mut out = Vec::new();
        text.append_text(&mut out);
        assert_eq!(
            (out.as_slice(), text.text_len(), text.is_base64url()),
            (&b"ab cd"[..], 5, false)
        );
    }

    /// The stored form is chosen exactly as the base64 crate's strict
    /// decoder would: canonical base64url → bytes, anything else verbatim.
    #[test]
    fn canonical_texts_are_recognised_exactly_as_the_strict_decoder_does() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        const ALPHABET: &[u8] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/= .\n";
        for round in 0..20_000 {
            let len = if round % 50 == 0 {
                (next() % 20_000) as usize // several 3 KiB chunks
            } else {
                (next() % 70) as usize
            };
            let text: String = if round % 2 == 0 {
                // Mostly canonical: encode random bytes, then maybe damage it.
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let mut t = URL_SAFE_NO_PAD.encode(&bytes).into_bytes();
                if !t.is_empty() && next() % 3 == 0 {
                    let at = (next() as usize) % t.len();
                    t[at] = ALPHABET[(next() as usize) % ALPHABET.len()];
                }
                String::from_utf8(t).unwrap()
            } else {
                (0..len)
                    .map(|_| ALPHABET[(next() as usize) % ALPHABET.len()] as char)
                    .collect()
            };
            let strict = URL_SAFE_NO_PAD.decode(text.as_bytes()).ok();
            assert_eq!(
                Payload::from_borrowed(&text),
                Payload::from_text(text.clone())
            );
            match (Payload::from_text(text.clone()), strict) {
                (Payload::Base64Url(bytes), Some(expected)) => assert_eq!(bytes, expected),
                (Payload::Text(t), None) => assert_eq!(t, text),
                (got, strict) => panic!("{text:?}: {got:?} but the strict decoder says {strict:?}"),
            }
        }
    }

    /// Every possible last byte, after every length of canonical prefix
    /// that matters (the text's length modulo 4, with and without a full
    /// SIMD block before it): accepted exactly when the strict decoder
    /// accepts it. This covers the unused trailing bits, which the random
    /// damage above reaches only now and then.
    #[test]
    fn every_last_character_is_judged_as_the_strict_decoder_does() {
        let block = URL_SAFE_NO_PAD.encode((0..=255u8).collect::<Vec<_>>());
        for prefix_len in (0..8).chain(block.len()..block.len() + 4) {
            let prefix = &format!("{block}{block}")[..prefix_len];
            for last in 0..=255u8 {
                let mut text = prefix.as_bytes().to_vec();
                text.push(last);
                let Ok(text) = String::from_utf8(text) else {
                    continue; // a lone byte >= 0x80 is not a &str
                };
                let strict = URL_SAFE_NO_PAD.decode(text.as_bytes()).ok();
                match (Payload::from_borrowed(&text), strict) {
                    (Payload::Base64Url(bytes), Some(expected)) => assert_eq!(bytes, expected),
                    (Payload::Text(t), None) => assert_eq!(t, text),
                    (got, strict) => {
                        panic!("{text:?}: {got:?} but the strict decoder says {strict:?}")
                    }
                }
            }
        }
    }

    #[test]
    fn stored_bytes_are_three_quarters_of_the_text() {
        let text = "A".repeat(8192);
        assert_eq!(Payload::from_text(text).stored_len(), 6144);
    }

    #[test]
    fn delete_tokens_match_only_themselves() {
        let token = DeleteToken::generate().unwrap();
        assert_eq!(token.expose().len(), 43);
        let digest = token.digest();
        assert!(digest.matches(token.expose()));
        assert!(!digest.matches(""));
        assert!(!digest.matches(&token.expose()[1..]));
        assert_ne!(DeleteToken::generate().unwrap().expose(), token.expose());
        assert_eq!(format!("{token:?}"), "DeleteToken(<redacted>)");
    }

    #[test]
    fn issued_tokens_are_well_formed_and_other_shapes_are_not() {
        for _ in 0..100 {
            let token = DeleteToken::generate().unwrap();
            assert!(DeleteToken::is_well_formed(token.expose()));
        }
        let ok = "a".repeat(43);
        assert!(DeleteToken::is_well_formed(&ok));
        for bad in [
            String::new(),
            "a".repeat(42),
            "a".repeat(44),
            format!("{}=", "a".repeat(42)),
            format!("{}+", "a".repeat(42)),
            format!("{}é", "a".repeat(41)),
            "SCHEMATHESIS-INVALID-VALUE".to_owned(),
        ] {
            assert!(!DeleteToken::is_well_formed(&bad), "{bad:?}");
        }
    }
}
