//! Hard limits of the decoder: decompression bombs, trailing data, truncation.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use share_codec::compress::{deflate_raw, inflate_raw};
use share_codec::{
    CodecError, DEFAULT_MAX_INFLATED_BYTES, compress, decode_forgiving, decompress,
    encode_base64url,
};

const MIB: usize = 1024 * 1024;

fn zeros_bomb() -> String {
    encode_base64url(&deflate_raw(&vec![0u8; 64 * MIB]))
}

#[test]
fn a_64_mib_bomb_fails_fast_with_a_small_cap() {
    let bomb = zeros_bomb();
    assert!(bomb.len() < 100_000, "the bomb is small: {}", bomb.len());
    let start = Instant::now();
    assert_eq!(
        decompress(&bomb, MIB),
        Err(CodecError::TooLarge { limit: MIB })
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
    // The default cap stops it too.
    assert_eq!(
        decompress(&bomb, DEFAULT_MAX_INFLATED_BYTES),
        Err(CodecError::TooLarge {
            limit: DEFAULT_MAX_INFLATED_BYTES
        })
    );
}

#[test]
fn trailing_bytes_after_the_stream_are_rejected() {
    let json = r##"{"p":"# Plan","a":[]}"##;
    let mut bytes = decode_forgiving(&compress(json)).unwrap();
    assert_eq!(inflate_raw(&bytes, MIB).unwrap(), json.as_bytes());
    for junk in [&[0u8][..], &[0, 1, 2], b"x"] {
        let mut with_junk = bytes.clone();
        with_junk.extend_from_slice(junk);
        assert_eq!(
            inflate_raw(&with_junk, MIB),
            Err(CodecError::TrailingData),
            "{junk:?}"
        );
        assert_eq!(
            decompress(&encode_base64url(&with_junk), MIB),
            Err(CodecError::TrailingData)
        );
    }
    // A second complete stream is trailing data as well.
    let second = bytes.clone();
    bytes.extend_from_slice(&second);
    assert_eq!(inflate_raw(&bytes, MIB), Err(CodecError::TrailingData));
}

#[test]
fn every_truncation_of_a_stream_is_an_error() {
    let text = "plan text that is long enough to span a few deflate symbols ".repeat(20);
    let bytes = deflate_raw(text.as_bytes());
    for len in 0..bytes.len() {
        let result = inflate_raw(&bytes[..len], MIB);
        assert!(
            matches!(result, Err(CodecError::TruncatedOrCorrupt)),
            "prefix {len}/{}: {result:?}",
            bytes.len()
        );
    }
    assert_eq!(inflate_raw(&bytes, MIB).unwrap(), text.as_bytes());
}

#[test]
fn corrupt_streams_are_errors_not_panics() {
    // BTYPE=11 is reserved.
    assert_eq!(
        inflate_raw(&[0x07], MIB),
        Err(CodecError::TruncatedOrCorrupt)
    );
    // A stored block whose LEN/NLEN do not match.
    assert_eq!(
        inflate_raw(&[0x01, 0x05, 0x00, 0x00, 0x00], MIB),
        Err(CodecError::TruncatedOrCorrupt)
    );
}

#[test]
fn the_cap_counts_inflated_bytes_exactly() {
    let bytes = deflate_raw(&vec![b'a'; 100_000]);
    assert_eq!(inflate_raw(&bytes, 100_000).unwrap().len(), 100_000);
    assert_eq!(
        inflate_raw(&bytes, 99_999),
        Err(CodecError::TooLarge { limit: 99_999 })
    );
    assert_eq!(inflate_raw(&deflate_raw(b""), 0).unwrap(), b"");
}
