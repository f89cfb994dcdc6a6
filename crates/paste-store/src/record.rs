//! The stored form of a paste, shared by the fs, Redis and S3 backends: a
//! fixed 64-byte header, then the payload.
//!
//! ```text
//! 0  magic "PSP1"          4 bytes
//! 4  flags                 1 byte   bit 0: payload is decoded base64url
//!                                   bit 1: a delete-token digest is present
//!                                   bit 2: burn after read
//! 5  reserved              3 bytes  zero
//! 8  created_at  (ms, LE)  8 bytes
//! 16 expires_at  (ms, LE)  8 bytes
//! 24 payload length (LE)   8 bytes
//! 32 delete-token digest  32 bytes  zero when absent
//! 64 payload
//! ```
use crate::{DeleteTokenDigest, Payload, StoreError, StoredPaste};

const MAGIC: &[u8; 4] = b"PSP1";
const HEADER_LEN: usize = 64;
const FLAG_BASE64URL: u8 = 1;
const FLAG_TOKEN: u8 = 2;
const FLAG_BURN: u8 = 4;

pub(crate) fn encode(paste: &StoredPaste) -> Vec<u8> {
    let (header, body) = encode_parts(paste);
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(body);
    out
}

/// The length of the record [`encode`] gives, without building it.
pub(crate) fn encoded_len(paste: &StoredPaste) -> usize {
    HEADER_LEN + paste.payload.stored_len()
}

/// The record as its header and its body (the payload, borrowed): what
/// [`encode`] joins, for writers that can send the two parts as they are.
pub(crate) fn encode_parts(paste: &StoredPaste) -> ([u8; HEADER_LEN], &[u8]) {
    let (flags, body): (u8, &[u8]) = match &paste.payload {
        Payload::Base64Url(bytes) => (FLAG_BASE64URL, bytes),
        Payload::Text(text) => (0, text.as_bytes()),
    };
    let flags = flags
        | if paste.delete_token.is_some() {
            FLAG_TOKEN
        } else {
            0
        }
        | if paste.burn_after_read { FLAG_BURN } else { 0 };
    let mut header = [0u8; HEADER_LEN];
    let fields: [&[u8]; 6] = [
        MAGIC,
        &[flags, 0, 0, 0],
        &paste.created_at.to_le_bytes(),
        &paste.expires_at.to_le_bytes(),
        &(body.len() as u64).to_le_bytes(),
        &paste.delete_token.map(|d| d.0).unwrap_or([0; 32]),
    ];
    let mut at = 0;
    for field in fields {
        header[at..at + field.len()].copy_from_slice(field);
        at += field.len();
    }
    debug_assert_eq!(at, HEADER_LEN);
    (header, body)
}

pub(crate) fn decode(bytes: &[u8]) -> Result<StoredPaste, StoreError> {
    decode_owned(bytes.to_vec())
}

/// [`decode`] of a record the caller owns: the payload keeps the record's
/// buffer (the header is moved out of the way) instead of a copy of it.
pub(crate) fn decode_owned(mut bytes: Vec<u8>) -> Result<StoredPaste, StoreError> {
    let corrupt = |what: &str| StoreError::internal(format!("damaged paste file: {what}"));
    if bytes.len() < HEADER_LEN || &bytes[..4] != MAGIC {
        return Err(corrupt("bad header"));
    }
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let flags = bytes[4];
    if u64_at(24) != (bytes.len() - HEADER_LEN) as u64 {
        return Err(corrupt("length mismatch"));
    }
    let delete_token = (flags & FLAG_TOKEN != 0).then(|| {
        let mut d = [0u8; 32];
        d.copy_from_slice(&bytes[32..64]);
        DeleteTokenDigest(d)
    });
    let (created_at, expires_at) = (u64_at(8), u64_at(16));
    let payload = if flags & FLAG_BASE64URL != 0 {
        // The record's own buffer, past the header: no copy.
        Payload::Base64Url(bytes::Bytes::from(bytes).slice(HEADER_LEN..))
    } else {
        bytes.drain(..HEADER_LEN);
        Payload::Text(String::from_utf8(bytes).map_err(|_| corrupt("text is not UTF-8"))?)
    };
    Ok(StoredPaste {
        payload,
        created_at,
        expires_at,
        delete_token,
        burn_after_read: flags & FLAG_BURN != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(payload: Payload, token: bool) -> StoredPaste {
        StoredPaste {
            payload,
            created_at: 1_700_000_000_000,
            expires_at: 1_700_000_604_800,
            delete_token: token.then_some(DeleteTokenDigest([7; 32])),
            burn_after_read: token,
        }
    }

    #[test]
    fn records_round_trip() {
        for paste in [
            sample(Payload::Base64Url(vec![1, 2, 3].into()), true),
            sample(Payload::Text("héllo 🚀".into()), false),
            sample(Payload::Text(String::new()), true),
        ] {
            assert_eq!(decode(&encode(&paste)).unwrap(), paste);
            assert_eq!(encoded_len(&paste), encode(&paste).len());
            assert_eq!(decode_owned(encode(&paste)).unwrap(), paste);
        }
    }

    #[test]
    fn an_invalid_text_payload_is_damaged_not_lossy() {
        let mut record = encode(&sample(Payload::Text("ab".into()), false));
        let last = record.len() - 1;
        record[last] = 0xff;
        assert!(matches!(
            decode_owned(record),
            Err(StoreError::Internal { .. })
        ));
    }

    #[test]
    fn truncated_or_foreign_files_are_reported_as_damaged() {
        let full = encode(&sample(Payload::Base64Url(vec![9; 100].into()), true));
        for cut in [0, 3, 63, 64, 100, full.len() - 1] {
            assert!(
                matches!(decode(&full[..cut]), Err(StoreError::Internal { .. })),
                "cut {cut}"
            );
        }
        assert!(matches!(
            decode(b"{\"data\":\"x\",\"expiresAt\":1}"),
            Err(StoreError::Internal { .. })
        ));
    }
}
