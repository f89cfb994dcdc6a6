//! The stored form of a paste, shared by the fs, Redis and S3 backends: a
//! fixed 64-byte header, then the payload.
//!
//! ```text
//! 0  magic "PSP1"          4 bytes
//! 4  flags                 1 byte   bit 0: payload is decoded base64url
//!                                   bit 1: a delete-token digest is present
//!                                   bit 2: burn after read
//!                                   bit 3: bytes 5-7 hold the header checksum
//! 5  header checksum       3 bytes  (zero in records written before it)
//! 8  created_at  (ms, LE)  8 bytes
//! 16 expires_at  (ms, LE)  8 bytes
//! 24 payload length (LE)   8 bytes
//! 32 delete-token digest  32 bytes  zero when absent
//! 64 payload
//! ```
//!
//! The checksum is the low 24 bits of FNV-1a (32 bit) over the 64 header
//! bytes with the checksum bytes zeroed: a damaged header (a flipped expiry,
//! flag or digest) is reported as damaged instead of being believed, which
//! could make a paste read as expired or burnt, or lose its delete token.
//! Readers before it ignored bytes 5-7 and unknown flags, so they still read
//! the records written with it; records without it are checked for the zero
//! bytes and the flags a writer could have set.
//!
//! Anything that does not decode is [`StoreError::Damaged`], with the header
//! when the header itself checked out (the damage is in the payload).
use crate::{DeleteTokenDigest, Payload, RecordHeader, StoreError, StoredPaste};

const MAGIC: &[u8; 4] = b"PSP1";
/// The stored-format version of the records this build writes: the last
/// byte of the magic (`PSP1`). A record of another version is reported
/// by [`inspect`] as such, so a later format can be told apart and
/// migrated instead of being read as damage.
pub const RECORD_FORMAT: u8 = 1;
/// The length of a record's header.
pub const HEADER_LEN: usize = 64;
const FLAG_BASE64URL: u8 = 1;
const FLAG_TOKEN: u8 = 2;
const FLAG_BURN: u8 = 4;
const FLAG_CHECKSUM: u8 = 8;
/// The flags a writer sets.
const KNOWN_FLAGS: u8 = FLAG_BASE64URL | FLAG_TOKEN | FLAG_BURN | FLAG_CHECKSUM;
/// Where the checksum lives in the header.
const CHECKSUM: std::ops::Range<usize> = 5..8;

/// The header checksum: FNV-1a over the header, checksum bytes zeroed.
fn checksum(header: &[u8]) -> [u8; 3] {
    let mut hash: u32 = 0x811c_9dc5;
    for (i, &byte) in header[..HEADER_LEN].iter().enumerate() {
        let byte = if CHECKSUM.contains(&i) { 0 } else { byte };
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    let [a, b, c, _] = hash.to_le_bytes();
    [a, b, c]
}

/// The stored form of `paste`: its header, then its payload.
pub fn encode(paste: &StoredPaste) -> Vec<u8> {
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
        | FLAG_CHECKSUM
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
    let sum = checksum(&header);
    header[CHECKSUM].copy_from_slice(&sum);
    (header, body)
}

#[cfg_attr(not(feature = "s3"), allow(dead_code))]
pub(crate) fn decode(bytes: &[u8]) -> Result<StoredPaste, StoreError> {
    decode_owned(bytes.to_vec())
}

/// The header of `bytes`, if it checks out: the magic, the flags, and the
/// checksum (or, in a record from before it, the zero bytes), and a digest
/// exactly when the flags say there is one.
fn check_header(bytes: &[u8]) -> Result<RecordHeader, StoreError> {
    if bytes.is_empty() {
        return Err(StoreError::damaged("empty record"));
    }
    if !bytes.starts_with(MAGIC) && !MAGIC.starts_with(bytes) {
        return Err(StoreError::damaged("not a paste record"));
    }
    if bytes.len() < HEADER_LEN {
        return Err(StoreError::damaged("truncated header"));
    }
    let header = &bytes[..HEADER_LEN];
    let flags = header[4];
    let sealed = if flags & FLAG_CHECKSUM != 0 {
        header[CHECKSUM] == checksum(header)
    } else {
        header[CHECKSUM] == [0, 0, 0]
    };
    let digest = &header[32..64];
    let has_digest = digest.iter().any(|&b| b != 0);
    if flags & !KNOWN_FLAGS != 0 || !sealed || has_digest != (flags & FLAG_TOKEN != 0) {
        return Err(StoreError::damaged("damaged header"));
    }
    let mut d = [0u8; 32];
    d.copy_from_slice(digest);
    Ok(RecordHeader {
        expires_at: u64_at(header, 16),
        delete_token: has_digest.then_some(DeleteTokenDigest(d)),
    })
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// [`decode`] of a record the caller owns: the payload keeps the record's
/// buffer (the header is moved out of the way) instead of a copy of it.
pub(crate) fn decode_owned(mut bytes: Vec<u8>) -> Result<StoredPaste, StoreError> {
    let header = check_header(&bytes)?;
    let damaged = |what: &str| StoreError::Damaged {
        reason: what.to_owned(),
        header: Some(header),
    };
    let flags = bytes[4];
    let length = u64_at(&bytes, 24);
    let stored = (bytes.len() - HEADER_LEN) as u64;
    if length > stored {
        return Err(damaged("truncated payload"));
    }
    if length < stored {
        return Err(damaged("payload longer than its header says"));
    }
    let created_at = u64_at(&bytes, 8);
    let payload = if flags & FLAG_BASE64URL != 0 {
        // The record's own buffer, past the header: no copy.
        Payload::Base64Url(bytes::Bytes::from(bytes).slice(HEADER_LEN..))
    } else {
        bytes.drain(..HEADER_LEN);
        Payload::Text(String::from_utf8(bytes).map_err(|_| damaged("text is not UTF-8"))?)
    };
    Ok(StoredPaste {
        payload,
        created_at,
        expires_at: header.expires_at,
        delete_token: header.delete_token,
        burn_after_read: flags & FLAG_BURN != 0,
    })
}

/// Whether `result`, a read at `now`, means "nothing live here": expired,
/// or damaged with a header that checked out and says it expired.
pub(crate) fn is_expired(result: &Result<StoredPaste, StoreError>, now: u64) -> bool {
    match result {
        Ok(paste) => paste.is_expired_at(now),
        Err(StoreError::Damaged {
            header: Some(header),
            ..
        }) => now > header.expires_at,
        Err(_) => false,
    }
}

/// What the header of a stored record says ([`inspect`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    /// The stored-format version ([`RECORD_FORMAT`]).
    pub format: u8,
    /// Creation time, Unix ms.
    pub created_at: u64,
    /// Expiry time, Unix ms.
    pub expires_at: u64,
    /// The payload length the header gives.
    pub payload_len: u64,
    /// Whether the payload is text (which must be UTF-8), not bytes.
    pub text: bool,
    /// Whether the header carries a checksum (records written before it do not).
    pub checksummed: bool,
}

/// Why a stored value is not a readable record ([`inspect`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordProblem {
    /// Nothing stored.
    #[error("empty record")]
    Empty,
    /// No `PSP` magic: not a paste record at all.
    #[error("not a paste record (it does not start with the PSP magic)")]
    Foreign,
    /// A `PSP` magic of a format this build does not know.
    #[error("unknown record format version {0:?} (this build reads version 1)")]
    UnknownFormat(char),
    /// Shorter than a header.
    #[error("truncated header: {0} of 64 bytes")]
    TruncatedHeader(u64),
    /// The checksum, the flags or the digest do not check out.
    #[error("damaged header (checksum, flags or delete-token digest do not check out)")]
    DamagedHeader,
    /// Fewer payload bytes than the header says.
    #[error("truncated payload: the header says {expected} bytes, {stored} are stored")]
    TruncatedPayload {
        /// What the header says.
        expected: u64,
        /// What is stored.
        stored: u64,
    },
    /// More payload bytes than the header says.
    #[error("payload longer than its header says: {expected} bytes expected, {stored} stored")]
    LongPayload {
        /// What the header says.
        expected: u64,
        /// What is stored.
        stored: u64,
    },
    /// A text payload that is not UTF-8.
    #[error("text payload is not UTF-8")]
    NotUtf8,
    /// The value is there and could not be read (fs: a file the process
    /// may not read, an I/O error): listed, not checked.
    #[error("cannot be read: {0}")]
    Unreadable(String),
}

/// Checks a stored record from its first bytes (`head`, at least the
/// header when the record has one) and its whole length `total`, without
/// the payload: the magic and format version, the header's checksum,
/// flags and digest, and the payload length. A text payload's encoding is
/// checked apart ([`check_text`]). `Err` carries the header when it
/// checked out.
pub fn inspect(head: &[u8], total: u64) -> Result<RecordInfo, (RecordProblem, Option<RecordInfo>)> {
    if total == 0 {
        return Err((RecordProblem::Empty, None));
    }
    let known = head.len().min(4);
    if head.len() >= 4 && head.starts_with(b"PSP") && head[3] != MAGIC[3] {
        return Err((RecordProblem::UnknownFormat(char::from(head[3])), None));
    }
    if head[..known] != MAGIC[..known] {
        return Err((RecordProblem::Foreign, None));
    }
    if total < HEADER_LEN as u64 || head.len() < HEADER_LEN {
        return Err((
            RecordProblem::TruncatedHeader(total.min(HEADER_LEN as u64)),
            None,
        ));
    }
    check_header(head).map_err(|_| (RecordProblem::DamagedHeader, None))?;
    let info = RecordInfo {
        format: RECORD_FORMAT,
        created_at: u64_at(head, 8),
        expires_at: u64_at(head, 16),
        payload_len: u64_at(head, 24),
        text: head[4] & FLAG_BASE64URL == 0,
        checksummed: head[4] & FLAG_CHECKSUM != 0,
    };
    let stored = total - HEADER_LEN as u64;
    let expected = info.payload_len;
    if expected > stored {
        return Err((
            RecordProblem::TruncatedPayload { expected, stored },
            Some(info),
        ));
    }
    if expected < stored {
        return Err((RecordProblem::LongPayload { expected, stored }, Some(info)));
    }
    Ok(info)
}

/// Checks a text record's payload (the bytes after the header).
pub fn check_text(payload: &[u8]) -> Result<(), RecordProblem> {
    std::str::from_utf8(payload)
        .map(|_| ())
        .map_err(|_| RecordProblem::NotUtf8)
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
            Err(StoreError::Damaged {
                header: Some(_),
                ..
            })
        ));
    }

    #[test]
    fn truncated_or_foreign_files_are_reported_as_damaged() {
        let paste = sample(Payload::Base64Url(vec![9; 100].into()), true);
        let full = encode(&paste);
        for cut in [0, 3, 63] {
            assert!(
                matches!(
                    decode(&full[..cut]),
                    Err(StoreError::Damaged { header: None, .. })
                ),
                "cut {cut}"
            );
        }
        // Past the header, the header still holds: its expiry and token.
        for cut in [64, 100, full.len() - 1] {
            match decode(&full[..cut]) {
                Err(StoreError::Damaged {
                    header: Some(header),
                    ..
                }) => {
                    assert_eq!(header.expires_at, paste.expires_at);
                    assert_eq!(header.delete_token, paste.delete_token);
                }
                other => panic!("cut {cut}: {other:?}"),
            }
        }
        let mut longer = full.clone();
        longer.push(0);
        assert!(matches!(decode(&longer), Err(StoreError::Damaged { .. })));
        assert!(matches!(
            decode(b"{\"data\":\"x\",\"expiresAt\":1}"),
            Err(StoreError::Damaged { header: None, .. })
        ));
    }

    /// A header byte changed anywhere — the expiry, a flag, the digest, the
    /// length, the checksum itself — is damage, not a paste that reads as
    /// expired, burnt or without its delete token.
    #[test]
    fn any_damaged_header_byte_is_caught() {
        for paste in [
            sample(Payload::Base64Url(vec![9; 10].into()), true),
            sample(Payload::Text("hi".into()), false),
        ] {
            let full = encode(&paste);
            assert_eq!(full[4] & FLAG_CHECKSUM, FLAG_CHECKSUM);
            for at in 4..HEADER_LEN {
                for flip in [0x01, 0x80, 0xff] {
                    let mut record = full.clone();
                    record[at] ^= flip;
                    assert!(
                        matches!(
                            decode(&record),
                            Err(StoreError::Damaged { header: None, .. })
                        ),
                        "byte {at} ^ {flip:#x}"
                    );
                }
            }
        }
    }

    /// Records written before the checksum (bytes 5-7 zero, flag 3 unset)
    /// still read; the same shape with those bytes not zero does not.
    #[test]
    fn records_from_before_the_checksum_still_read() {
        let paste = sample(Payload::Base64Url(vec![1, 2, 3].into()), true);
        let mut old = encode(&paste);
        old[4] &= !FLAG_CHECKSUM;
        old[CHECKSUM].fill(0);
        assert_eq!(decode(&old).unwrap(), paste);
        old[6] = 1;
        assert!(matches!(decode(&old), Err(StoreError::Damaged { .. })));
        // A token flag without a digest, or a digest without the flag.
        let mut no_digest = encode(&paste);
        no_digest[4] &= !FLAG_CHECKSUM;
        no_digest[CHECKSUM].fill(0);
        no_digest[32..64].fill(0);
        assert!(matches!(
            decode(&no_digest),
            Err(StoreError::Damaged { .. })
        ));
        let mut stray = encode(&sample(Payload::Text("x".into()), false));
        stray[4] &= !FLAG_CHECKSUM;
        stray[CHECKSUM].fill(0);
        stray[40] = 7;
        assert!(matches!(decode(&stray), Err(StoreError::Damaged { .. })));
    }

    #[test]
    fn damaged_records_whose_header_says_expired_read_as_expired() {
        let paste = sample(Payload::Base64Url(vec![9; 10].into()), true);
        let full = encode(&paste);
        let truncated = decode(&full[..full.len() - 1]);
        assert!(!is_expired(&truncated, paste.expires_at));
        assert!(is_expired(&truncated, paste.expires_at + 1));
        assert!(!is_expired(&decode(&full[..10]), u64::MAX));
        assert!(is_expired(&decode(&full), paste.expires_at + 1));
    }

    /// Each kind of damage is named by `inspect`, and the header is kept
    /// where it checked out.
    #[test]
    fn inspect_names_each_kind_of_damage() {
        let paste = sample(Payload::Text("héllo".into()), true);
        let full = encode(&paste);
        let len = |b: &[u8]| b.len() as u64;
        let info = inspect(&full, len(&full)).unwrap();
        assert_eq!(
            (info.format, info.expires_at, info.payload_len, info.text),
            (1, paste.expires_at, 6, true)
        );
        assert_eq!(inspect(&[], 0).unwrap_err().0, RecordProblem::Empty);
        assert_eq!(inspect(b"{}", 2).unwrap_err().0, RecordProblem::Foreign);
        let mut v2 = full.clone();
        v2[3] = b'2';
        assert_eq!(
            inspect(&v2, len(&v2)).unwrap_err().0,
            RecordProblem::UnknownFormat('2')
        );
        assert_eq!(
            inspect(&full[..40], 40).unwrap_err().0,
            RecordProblem::TruncatedHeader(40)
        );
        let mut flipped = full.clone();
        flipped[20] ^= 1;
        assert_eq!(
            inspect(&flipped, len(&flipped)).unwrap_err().0,
            RecordProblem::DamagedHeader
        );
        let short = inspect(&full[..HEADER_LEN], len(&full) - 2).unwrap_err();
        assert_eq!(
            short.0,
            RecordProblem::TruncatedPayload {
                expected: 6,
                stored: 4
            }
        );
        assert_eq!(short.1.map(|i| i.expires_at), Some(paste.expires_at));
        assert_eq!(
            inspect(&full, len(&full) + 1).unwrap_err().0,
            RecordProblem::LongPayload {
                expected: 6,
                stored: 7
            }
        );
        assert_eq!(check_text(&[0xff]), Err(RecordProblem::NotUtf8));
        assert_eq!(check_text(&full[HEADER_LEN..]), Ok(()));
    }
}
