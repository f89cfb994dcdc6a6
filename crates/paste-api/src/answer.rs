//! The body of a paste read, `{"data":"…"}`, and the memory it may hold.
//!
//! A client that asks for a large paste and then never reads its answer
//! would otherwise keep a whole copy of it in memory for as long as the
//! connection lives: 800 such readers of a 5 MB paste held 4 GB. So:
//! - large base64url answers are encoded part by part as the connection
//!   takes them ([`PasteBody`]): what is held is the stored bytes (¾ of the
//!   text) and one part, not the whole text beside them;
//! - every answer holds a share of one [`ResponseBudget`] until it is
//!   written or dropped; a read that finds the budget spent waits briefly,
//!   then gets 503 + `Retry-After` (shed, like a request beyond
//!   `max_in_flight`);
//! - the server closes connections whose client takes no bytes for the
//!   write timeout (`services/server`), which drops their answers.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use paste_store::Payload;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Answers up to this many bytes are built whole; larger base64url answers
/// are encoded in parts of this size (a multiple of 4: whole base64 groups).
pub(crate) const PART: usize = 64 * 1024;

/// How long a read waits for room in the budget before it is shed.
const BUDGET_WAIT: Duration = Duration::from_secs(1);

const PREFIX: &[u8] = br#"{"data":""#;
const SUFFIX: &[u8] = br#""}"#;

/// Bytes of paste answers held at once across all requests, in KiB permits.
#[derive(Clone)]
pub(crate) struct ResponseBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
}

impl ResponseBudget {
    pub(crate) fn new(mib: usize) -> Self {
        let total_kib = u32::try_from(mib.max(1).saturating_mul(1024)).unwrap_or(u32::MAX >> 3);
        ResponseBudget {
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }

    /// Room for `bytes` (rounded up to KiB, at most the whole budget, so
    /// that one answer larger than the budget is still served alone),
    /// waited for up to [`BUDGET_WAIT`]; `Overloaded` past that.
    pub(crate) async fn reserve(&self, bytes: usize) -> Result<Reserved, ApiError> {
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.total_kib);
        let acquire = self.permits.clone().acquire_many_owned(kib);
        match tokio::time::timeout(BUDGET_WAIT, acquire).await {
            Ok(Ok(permit)) => Ok(Reserved(permit)),
            Ok(Err(_)) | Err(_) => Err(ApiError::Overloaded),
        }
    }

    /// KiB of the budget not held by any answer (for tests).
    #[cfg(test)]
    fn available_kib(&self) -> usize {
        self.permits.available_permits()
    }
}

/// A share of the [`ResponseBudget`], given back on drop.
pub(crate) struct Reserved(OwnedSemaphorePermit);

impl Reserved {
    /// Adds `other` to this share.
    pub(crate) fn merge(&mut self, other: Reserved) {
        self.0.merge(other.0);
    }
}

/// What an answer of `payload` holds while it is written, in bytes.
pub(crate) fn held_bytes(payload: &Payload) -> usize {
    if streams(payload) {
        payload.stored_len() + PART
    } else {
        // The whole JSON, plus the payload until it is dropped.
        payload.stored_len() + PREFIX.len() + payload.text_len() + SUFFIX.len()
    }
}

/// Whether an answer of `payload` is written in parts.
fn streams(payload: &Payload) -> bool {
    payload.is_base64url() && payload.text_len() > PART
}

/// The body of a paste read: `{"data":"<text>"}`, built whole when small or
/// when the text needs JSON escaping, else encoded part by part. Holds its
/// share of the budget until it is dropped.
pub(crate) struct PasteBody {
    stage: Stage,
    /// Bytes not yet handed out (the exact length, for `Content-Length`).
    remaining: u64,
    _held: Reserved,
}

enum Stage {
    /// The whole answer, not yet handed out.
    Whole(Option<Bytes>),
    /// A base64url payload, encoded from text byte `next` on.
    Parts { payload: Payload, next: usize },
    /// Everything handed out.
    Done,
}

impl PasteBody {
    pub(crate) fn new(payload: Payload, held: Reserved) -> Self {
        if streams(&payload) {
            let remaining = (PREFIX.len() + payload.text_len() + SUFFIX.len()) as u64;
            return PasteBody {
                stage: Stage::Parts { payload, next: 0 },
                remaining,
                _held: held,
            };
        }
        let whole = Bytes::from(paste_json(&payload));
        PasteBody {
            remaining: whole.len() as u64,
            stage: Stage::Whole(Some(whole)),
            _held: held,
        }
    }

    /// The next piece of the answer, `None` at the end.
    fn next_piece(&mut self) -> Option<Bytes> {
        match &mut self.stage {
            Stage::Whole(whole) => {
                let piece = whole.take();
                self.stage = Stage::Done;
                piece
            }
            Stage::Parts { payload, next } => {
                let text_len = payload.text_len();
                let mut piece = Vec::with_capacity(PART + PREFIX.len() + SUFFIX.len());
                if *next == 0 {
                    piece.extend_from_slice(PREFIX);
                }
                payload.append_text_part(*next, PART, &mut piece);
                *next += PART;
                if *next >= text_len {
                    piece.extend_from_slice(SUFFIX);
                    self.stage = Stage::Done;
                }
                Some(Bytes::from(piece))
            }
            Stage::Done => None,
        }
    }
}

impl http_body::Body for PasteBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let piece = this.next_piece();
        if let Some(piece) = &piece {
            this.remaining = this.remaining.saturating_sub(piece.len() as u64);
        }
        Poll::Ready(piece.map(|p| Ok(Frame::data(p))))
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// `{"data":"<text>"}`, the body of a read (`api_types::GetPasteResponse`),
/// built whole. The hot path: a stored base64url payload is encoded straight
/// into a buffer of the exact size — its alphabet needs no JSON escaping, so
/// it skips serde_json's per-byte escape scan (the largest cost of a read in
/// a profile); other text goes through serde_json.
pub(crate) fn paste_json(payload: &Payload) -> Vec<u8> {
    if payload.is_base64url() {
        let mut body = Vec::with_capacity(PREFIX.len() + payload.text_len() + SUFFIX.len());
        body.extend_from_slice(PREFIX);
        payload.append_text(&mut body);
        body.extend_from_slice(SUFFIX);
        return body;
    }
    let body = api_types::GetPasteResponse {
        data: payload.to_text(),
    };
    // Serialising a struct with one String field cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;
    use http_body_util::BodyExt as _;

    use super::*;

    fn base64url(len: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        // Lengths of 1 mod 4 are not base64; a multiple of 4 always is canonical.
        let len = len / 4 * 4;
        (0..len)
            .map(|i| char::from(ALPHABET[(i * 31 + i / 7) % 64]))
            .collect()
    }

    async fn collect(body: PasteBody) -> (Vec<u8>, usize) {
        let hinted = body.size_hint().exact().unwrap();
        let mut body = body;
        let mut out = Vec::new();
        let mut frames = 0;
        while let Some(frame) = body.frame().await {
            out.extend_from_slice(frame.unwrap().data_ref().unwrap());
            frames += 1;
        }
        assert_eq!(out.len() as u64, hinted, "size hint");
        (out, frames)
    }

    #[test]
    fn read_bodies_are_the_json_of_the_text() {
        for text in [
            "",
            "AA",
            "q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg",
            "ab cd",
            "a\"b\\c\n",
            "🚀",
        ] {
            let body = paste_json(&Payload::from_text(text.to_owned()));
            let parsed: api_types::GetPasteResponse = serde_json::from_slice(&body).unwrap();
            assert_eq!(parsed.data, text);
            let expected = serde_json::to_vec(&api_types::GetPasteResponse { data: text.into() });
            assert_eq!(
                body,
                expected.unwrap(),
                "{text:?}: same bytes as serde_json"
            );
        }
    }

    #[tokio::test]
    async fn answers_are_the_json_of_the_text_whole_or_in_parts() {
        let budget = ResponseBudget::new(16);
        for len in [4, PART - 4, PART, PART + 4, 3 * PART + 100, 5 * 1024 * 1024] {
            let text = base64url(len);
            let payload = Payload::from_text(text.clone());
            assert!(payload.is_base64url());
            let held = budget.reserve(held_bytes(&payload)).await.unwrap();
            let (json, frames) = collect(PasteBody::new(payload, held)).await;
            let parsed: api_types::GetPasteResponse = serde_json::from_slice(&json).unwrap();
            assert_eq!(parsed.data, text, "{len}");
            assert_eq!(frames, text.len().div_ceil(PART).max(1), "{len}");
        }
        // Text that needs escaping is built whole, through serde_json.
        let payload = Payload::from_text("\"quoted\" ✓ \n".repeat(10_000));
        let held = budget.reserve(held_bytes(&payload)).await.unwrap();
        let (json, frames) = collect(PasteBody::new(payload, held)).await;
        let parsed: api_types::GetPasteResponse = serde_json::from_slice(&json).unwrap();
        assert_eq!(parsed.data, "\"quoted\" ✓ \n".repeat(10_000));
        assert_eq!(frames, 1);
        assert_eq!(budget.available_kib(), 16 * 1024, "all given back");
    }

    #[tokio::test]
    async fn a_spent_budget_sheds_reads_until_answers_are_dropped() {
        let budget = ResponseBudget::new(1);
        let payload = Payload::from_text(base64url(600 * 1024));
        let first = budget.reserve(held_bytes(&payload)).await.unwrap();
        assert!(matches!(
            budget.reserve(held_bytes(&payload)).await,
            Err(ApiError::Overloaded)
        ));
        let body = PasteBody::new(payload.clone(), first);
        drop(body);
        // A share larger than the whole budget takes all of it, alone.
        let huge = budget.reserve(10 * 1024 * 1024).await.unwrap();
        assert_eq!(budget.available_kib(), 0);
        drop(huge);
        assert!(budget.reserve(held_bytes(&payload)).await.is_ok());
    }
}
