//! Request bodies: random base64url `data` strings shaped like the encrypted,
//! compressed payloads real clients send, and the `{"data": ...}` JSON around
//! them. A tiny SplitMix64 generator is enough here (no cryptographic quality
//! needed), which keeps the crate free of a random-number dependency.

use bytes::Bytes;
use std::time::{SystemTime, UNIX_EPOCH};

/// The base64url alphabet (RFC 4648 §5), without padding.
pub const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// How many leading characters of each created body are rewritten so that no
/// two requests carry the same payload (16 characters = 96 random bits).
const UNIQUE_PREFIX: usize = 16;

/// A SplitMix64 pseudo-random generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator with a fixed seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator seeded from the clock, the process id and `salt`, so that
    /// parallel tasks and repeated runs do not produce the same bodies.
    pub fn from_entropy(salt: u64) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut rng = Self(nanos ^ (u64::from(std::process::id()) << 32) ^ salt.rotate_left(17));
        // Mix the seed once so that close seeds diverge immediately.
        rng.next_u64();
        rng
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Overwrites `buf` with random base64url characters.
    pub fn fill_base64url(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(10) {
            // 10 characters × 6 bits = 60 of the 64 bits.
            let mut bits = self.next_u64();
            for c in chunk {
                *c = ALPHABET[(bits & 63) as usize];
                bits >>= 6;
            }
        }
    }
}

/// Makes `data` canonical unpadded base64url: when its length leaves a partial
/// final group, the unused low bits of the last character must be zero, or a
/// strict decoder rejects or re-encodes it differently. (A length of 4k+1 is
/// never valid base64; it is left as it is.)
pub fn make_canonical(data: &mut [u8]) {
    let mask = match data.len() % 4 {
        2 => 0b1111,
        3 => 0b11,
        _ => return,
    };
    if let Some(last) = data.last_mut()
        && let Some(pos) = ALPHABET.iter().position(|c| c == last)
    {
        *last = ALPHABET[pos & !mask];
    }
}

/// `size` random base64url characters (canonical, see [`make_canonical`]).
pub fn random_base64url(rng: &mut Rng, size: usize) -> Vec<u8> {
    let mut data = vec![0u8; size];
    rng.fill_base64url(&mut data);
    make_canonical(&mut data);
    data
}

/// The JSON body `{"data":"<data>"}`. `data` must be base64url text, which
/// needs no JSON escaping.
pub fn data_json(data: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(data.len() + 11);
    body.extend_from_slice(b"{\"data\":\"");
    body.extend_from_slice(data);
    body.extend_from_slice(b"\"}");
    body
}

/// Produces `POST /api/paste` bodies of one size, each one different.
///
/// The random text is generated once; each call rewrites only its first 16
/// characters and copies the buffer, so producing a 100 KB body costs a
/// `memcpy`, not 100 KB of random numbers — the generator must stay cheap next
/// to the server it measures.
#[derive(Debug, Clone)]
pub struct CreateBodies {
    template: Vec<u8>,
    data_len: usize,
    rng: Rng,
}

/// Offset of the `data` text inside [`data_json`]'s output.
const DATA_OFFSET: usize = b"{\"data\":\"".len();

impl CreateBodies {
    /// Bodies whose `data` string is `size` characters long.
    pub fn new(size: usize, mut rng: Rng) -> Self {
        let data = random_base64url(&mut rng, size);
        Self {
            template: data_json(&data),
            data_len: size,
            rng,
        }
    }

    /// The next body: same size, fresh leading characters.
    pub fn next_body(&mut self) -> Bytes {
        let data = &mut self.template[DATA_OFFSET..DATA_OFFSET + self.data_len];
        let n = data.len().min(UNIQUE_PREFIX);
        self.rng.fill_base64url(&mut data[..n]);
        make_canonical(data);
        Bytes::copy_from_slice(&self.template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_of(body: &[u8]) -> anyhow::Result<String> {
        let v: serde_json::Value = serde_json::from_slice(body)?;
        v["data"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("no data field"))
    }

    #[test]
    fn bodies_have_the_requested_size_and_differ() -> anyhow::Result<()> {
        for size in [0, 1, 2, 3, 4, 15, 16, 17, 8192, 102_401] {
            let mut bodies = CreateBodies::new(size, Rng::new(7));
            let a = data_of(&bodies.next_body())?;
            let b = data_of(&bodies.next_body())?;
            assert_eq!(a.len(), size);
            assert!(a.bytes().all(|c| ALPHABET.contains(&c)));
            if size >= 8 {
                assert_ne!(a, b);
            }
        }
        Ok(())
    }

    #[test]
    fn canonical_endings_have_zero_trailing_bits() {
        let mut rng = Rng::new(1);
        for size in [2usize, 3, 6, 7, 1022, 1023] {
            for _ in 0..50 {
                let data = random_base64url(&mut rng, size);
                let Some(pos) = data
                    .last()
                    .and_then(|l| ALPHABET.iter().position(|c| c == l))
                else {
                    panic!("empty data");
                };
                let mask = if size % 4 == 2 { 0b1111 } else { 0b11 };
                assert_eq!(pos & mask, 0, "size {size}");
            }
        }
    }
}
