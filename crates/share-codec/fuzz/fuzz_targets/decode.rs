//! Fuzz target: everything that reads untrusted share text — links, base64,
//! inflate, JSON payloads, decryption — must return `Ok` or `Err`, never
//! panic, hang or allocate without bound; a payload that decodes must
//! re-encode to JSON that decodes to the same payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use share_codec::compress::inflate_raw;
use share_codec::{
    ShareLink, SharePayload, decode_hash, decode_paste, decompress, decrypt, encode_base64url,
    looks_like_share_payload, parse_import_url, parse_share_link,
};

/// Small, so that bombs are cut short quickly.
const CAP: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    // Links: the CLI's parser, Import Review's parser and the classifier.
    if let Ok(ShareLink::Hash { data: hash, .. }) = parse_share_link(&text) {
        let _ = decode_hash(&hash, CAP);
    }
    let _ = parse_import_url(&text);
    let _ = looks_like_share_payload(&text);

    // Base64 + inflate + payload, from text and from raw bytes.
    if let Ok(json) = decompress(&text, CAP) {
        check_payload(&json);
    }
    if let Ok(bytes) = inflate_raw(data, CAP) {
        check_payload(&String::from_utf8_lossy(&bytes));
    }
    check_payload(&text);

    // Decryption with the first 32 bytes as the key.
    if data.len() > 32 {
        let key = encode_base64url(&data[..32]);
        let _ = decrypt(&encode_base64url(&data[32..]), &key);
        let _ = decode_paste(&text, Some(&key), CAP);
    }
});

fn check_payload(json: &str) {
    if let Ok(payload) = SharePayload::from_json(json) {
        let again = SharePayload::from_json(&payload.to_json());
        assert_eq!(
            again.as_ref(),
            Ok(&payload),
            "re-encoding changed the payload"
        );
    }
}
