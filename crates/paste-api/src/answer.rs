//! The body of a paste read, `{"data":"…"}`, and the memory it and the
//! other large answers (a review, a review's version) may hold.
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

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use paste_store::Payload;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// The size of the parts a long base64url answer is encoded in (a multiple
/// of 4: whole base64 groups).
pub(crate) const PART: usize = 64 * 1024;

/// How long a read waits for room in the budget before it is shed.
const BUDGET_WAIT: Duration = Duration::from_secs(1);

const PREFIX: &[u8] = br#"{"data":""#;
const SUFFIX: &[u8] = br#""}"#;

/// Bytes of paste answers held at once across all requests, in KiB
/// permits, and each client's (IP's) share of them: one client may hold at
/// most a quarter of the budget, so a single address that asks and never
/// reads cannot starve everybody else's reads.
///
/// A read reserves in two steps: a part before the store is asked, the
/// rest once the answer's size is known ([`Reserved::grow`]), which makes
/// it a *sized* answer. A client's share refuses only a client that holds a
/// sized answer already, so that its first answer always goes through: a
/// burst of reads that have all reserved their first part does not refuse
/// every one of them (each would see the others' parts), but lets the first
/// to be sized through and refuses the rest.
#[derive(Clone)]
pub(crate) struct ResponseBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
    shares: Arc<Mutex<HashMap<IpAddr, ClientHeld>>>,
}

/// What one client holds of the budget, KiB.
#[derive(Default)]
struct ClientHeld {
    /// Everything: sized answers and first parts.
    total: u32,
    /// Of answers whose size is known.
    sized: u32,
}

/// Why room for an answer was not given.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The whole budget is held.
    Spent,
    /// The client holds its share already.
    ClientShare,
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Spent => ApiError::Overloaded,
            Refused::ClientShare => ApiError::TooManyRequests {
                retry_after: BUDGET_WAIT,
            },
        }
    }
}

impl ResponseBudget {
    pub(crate) fn new(mib: usize) -> Self {
        let total_kib = u32::try_from(mib.max(1).saturating_mul(1024)).unwrap_or(u32::MAX >> 3);
        ResponseBudget {
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            shares: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A client's largest share, KiB (at least one whole answer's worth is
    /// always possible: see [`kib_of`](Self::kib_of)).
    fn client_cap(&self) -> u32 {
        self.total_kib / 4
    }

    /// `bytes` in KiB, rounded up, at most a client's share (so that one
    /// answer larger than the share is still served, alone).
    fn kib_of(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.client_cap().max(1))
    }

    /// Counts `kib` more against `client`'s share, or refuses: only a
    /// client that holds a sized answer already is refused, so its first
    /// answer is always let through, whatever its size. `sized`: the KiB
    /// are of an answer whose size is known.
    fn take_share(&self, client: Option<IpAddr>, kib: u32, sized: bool) -> Result<Share, Refused> {
        let Some(ip) = client else {
            return Ok(Share::none(self));
        };
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        let held = shares.entry(ip).or_default();
        if held.sized > 0 && held.total.saturating_add(kib) > self.client_cap() {
            return Err(Refused::ClientShare);
        }
        held.total += kib;
        if sized {
            held.sized += kib;
        }
        Ok(Share {
            shares: self.shares.clone(),
            client: Some(ClientPart { ip, kib, sized }),
        })
    }

    /// Room for the first `bytes` of an answer for `client`, its size not
    /// yet known, waited for up to [`BUDGET_WAIT`].
    pub(crate) async fn reserve(
        &self,
        bytes: usize,
        client: Option<IpAddr>,
    ) -> Result<Reserved, Refused> {
        self.reserve_part(bytes, client, false, true).await
    }

    /// Room for a whole answer of `bytes` for `client` if there is some
    /// right now.
    #[cfg(test)]
    fn try_reserve(&self, bytes: usize, client: Option<IpAddr>) -> Result<Reserved, Refused> {
        let kib = self.kib_of(bytes);
        let share = self.take_share(client, kib, true)?;
        match self.permits.clone().try_acquire_many_owned(kib) {
            Ok(permit) => Ok(Reserved { permit, share }),
            Err(_) => Err(Refused::Spent),
        }
    }

    /// Room for `bytes` for `client`, of a sized answer when `sized`;
    /// waits up to [`BUDGET_WAIT`] when `wait`.
    async fn reserve_part(
        &self,
        bytes: usize,
        client: Option<IpAddr>,
        sized: bool,
        wait: bool,
    ) -> Result<Reserved, Refused> {
        let kib = self.kib_of(bytes);
        let share = self.take_share(client, kib, sized)?;
        let permits = self.permits.clone();
        let permit = if wait {
            match tokio::time::timeout(BUDGET_WAIT, permits.acquire_many_owned(kib)).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) | Err(_) => return Err(Refused::Spent),
            }
        } else {
            permits
                .try_acquire_many_owned(kib)
                .map_err(|_| Refused::Spent)?
        };
        Ok(Reserved { permit, share })
    }

    /// KiB of the budget not held by any answer (for tests).
    #[cfg(test)]
    fn available_kib(&self) -> usize {
        self.permits.available_permits()
    }

    /// Clients holding a share (for tests).
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.shares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// A client's part of a [`Reserved`], given back on drop.
struct Share {
    shares: Arc<Mutex<HashMap<IpAddr, ClientHeld>>>,
    client: Option<ClientPart>,
}

/// What one [`Share`] counts against its client.
struct ClientPart {
    ip: IpAddr,
    kib: u32,
    /// Counted as of a sized answer too.
    sized: bool,
}

impl Share {
    fn none(budget: &ResponseBudget) -> Self {
        Share {
            shares: budget.shares.clone(),
            client: None,
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let Some(part) = self.client.take() else {
            return;
        };
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = shares.get_mut(&part.ip) {
            held.total = held.total.saturating_sub(part.kib);
            if part.sized {
                held.sized = held.sized.saturating_sub(part.kib);
            }
            if held.total == 0 {
                shares.remove(&part.ip);
            }
        }
    }
}

/// A share of the [`ResponseBudget`], given back on drop.
pub(crate) struct Reserved {
    permit: OwnedSemaphorePermit,
    share: Share,
}

impl Reserved {
    /// Room for the other `bytes` of the same answer, now that its size is
    /// known (so that it is a sized answer from now on); waited for when
    /// `wait`.
    pub(crate) async fn grow(
        &mut self,
        budget: &ResponseBudget,
        bytes: usize,
        wait: bool,
    ) -> Result<(), Refused> {
        let client = self.share.client.as_ref().map(|part| part.ip);
        let more = budget.reserve_part(bytes, client, true, wait).await?;
        self.merge(more);
        Ok(())
    }

    /// Room for `bytes` in all (what this share holds already counts),
    /// waited for when `wait`.
    pub(crate) async fn grow_to(
        &mut self,
        budget: &ResponseBudget,
        bytes: usize,
        wait: bool,
    ) -> Result<(), Refused> {
        let held = self.permit.num_permits().saturating_mul(1024);
        if bytes <= held {
            return Ok(());
        }
        self.grow(budget, bytes - held, wait).await
    }

    /// Gives back what this share holds beyond `bytes` (an answer built
    /// whole holds less than its parts did while it was being built).
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        let held = self.permit.num_permits();
        let keep = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .max(1) as usize;
        if keep >= held {
            return;
        }
        let freed = held - keep;
        drop(self.permit.split(freed));
        let Some(part) = self.share.client.as_mut() else {
            return;
        };
        let freed = u32::try_from(freed).unwrap_or(u32::MAX).min(part.kib);
        part.kib -= freed;
        let mut shares = self
            .share
            .shares
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = shares.get_mut(&part.ip) {
            client.total = client.total.saturating_sub(freed);
            if part.sized {
                client.sized = client.sized.saturating_sub(freed);
            }
        }
    }

    /// Adds `other`, of the same request, to this share.
    pub(crate) fn merge(&mut self, other: Reserved) {
        self.permit.merge(other.permit);
        let mut other_share = other.share;
        let Some(theirs) = other_share.client.take() else {
            return;
        };
        let Some(mine) = self.share.client.as_mut() else {
            // Ours counts against nobody: theirs goes back to its client.
            other_share.client = Some(theirs);
            return;
        };
        if theirs.sized && !mine.sized {
            // The answer is sized now: so is the part reserved first.
            let mut shares = self
                .share
                .shares
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(held) = shares.get_mut(&mine.ip) {
                held.sized += mine.kib;
            }
            mine.sized = true;
        }
        mine.kib += theirs.kib;
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

/// Answers up to this long are built whole (one buffer, one frame: the
/// cheapest for the common sizes); longer base64url ones in [`PART`]s.
/// Either way the budget counts what they hold.
const STREAM_FROM: usize = 1024 * 1024;

/// Whether an answer of `payload` is written in parts.
fn streams(payload: &Payload) -> bool {
    payload.is_base64url() && payload.text_len() > STREAM_FROM
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

    /// An answer built whole (a review's JSON), holding `held` until it
    /// is written or dropped.
    pub(crate) fn whole(json: Vec<u8>, held: Reserved) -> Self {
        PasteBody {
            remaining: json.len() as u64,
            stage: Stage::Whole(Some(Bytes::from(json))),
            _held: held,
        }
    }

    /// The next piece of the answer, `None` at the end.
    fn next_piece(&mut self) -> Option<Bytes> {
        match &mut self.stage {
            // Handed out a part at a time, so that the body (and with it its
            // share of the budget) lives until the connection has taken all
            // but the last part: a body that handed over everything at once
            // would be dropped at once, while the whole answer still waits
            // in the connection's buffer for a client that does not read.
            // The parts share one buffer: no copy.
            Stage::Whole(whole) => {
                let Some(rest) = whole.as_mut() else {
                    self.stage = Stage::Done;
                    return None;
                };
                if rest.len() <= PART {
                    let piece = whole.take();
                    self.stage = Stage::Done;
                    return piece;
                }
                Some(rest.split_to(PART))
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
        for len in [
            4,
            PART,
            STREAM_FROM,
            STREAM_FROM + 4,
            STREAM_FROM + PART + 100,
            5 * 1024 * 1024,
        ] {
            let text = base64url(len);
            let payload = Payload::from_text(text.clone());
            assert!(payload.is_base64url());
            let held = budget.reserve(held_bytes(&payload), None).await.unwrap();
            let (json, frames) = collect(PasteBody::new(payload, held)).await;
            let parsed: api_types::GetPasteResponse = serde_json::from_slice(&json).unwrap();
            assert_eq!(parsed.data, text, "{len}");
            let json_len = text.len() + PREFIX.len() + SUFFIX.len();
            let expected = if text.len() > STREAM_FROM {
                text.len().div_ceil(PART)
            } else {
                json_len.div_ceil(PART)
            };
            assert_eq!(frames, expected, "{len}");
        }
        // Text that needs escaping is built whole, through serde_json.
        let payload = Payload::from_text("\"quoted\" ✓ \n".repeat(10_000));
        let held = budget.reserve(held_bytes(&payload), None).await.unwrap();
        let (json, frames) = collect(PasteBody::new(payload, held)).await;
        let parsed: api_types::GetPasteResponse = serde_json::from_slice(&json).unwrap();
        assert_eq!(parsed.data, "\"quoted\" ✓ \n".repeat(10_000));
        assert_eq!(frames, json.len().div_ceil(PART), "a part at a time");
        assert_eq!(budget.available_kib(), 16 * 1024, "all given back");
    }

    #[tokio::test]
    async fn a_spent_budget_sheds_reads_until_answers_are_dropped() {
        let budget = ResponseBudget::new(1);
        let payload = Payload::from_text(base64url(100 * 1024));
        let each = held_bytes(&payload);
        assert!(each < 256 * 1024, "within a client's share");
        let mut held = Vec::new();
        while let Ok(r) = budget.try_reserve(each, None) {
            held.push(r);
        }
        assert_eq!(held.len(), 1024 * 1024 / each.div_ceil(1024) / 1024);
        assert!(matches!(
            budget.reserve(each, None).await,
            Err(Refused::Spent)
        ));
        let first = held.pop().unwrap();
        drop(PasteBody::new(payload.clone(), first));
        assert!(budget.try_reserve(each, None).is_ok());
        drop(held);
        assert_eq!(budget.available_kib(), 1024, "all given back");
    }

    #[tokio::test]
    async fn one_client_holds_at_most_a_quarter_of_the_budget() {
        let budget = ResponseBudget::new(4);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        // A's first answer is always possible, even one larger than a
        // share, also when it is reserved in two steps.
        let mut held = budget.reserve(PART, Some(a)).await.unwrap();
        held.grow(&budget, 2 * 1024 * 1024, false).await.unwrap();
        assert!(matches!(
            budget.try_reserve(1024, Some(a)),
            Err(Refused::ClientShare)
        ));
        // Another client is not affected, nor are requests with no address.
        let other = budget.reserve(512 * 1024, Some(b)).await.unwrap();
        let anonymous = budget.try_reserve(512 * 1024, None).unwrap();
        held.merge(anonymous);
        drop((held, other));
        assert_eq!(
            budget.clients(),
            0,
            "nothing kept of clients holding nothing"
        );
        assert_eq!(budget.available_kib(), 4 * 1024);
        // A burst of reads of one client that have all reserved their first
        // part: the first one sized goes through, the others are refused.
        let mut firsts = Vec::new();
        for _ in 0..8 {
            firsts.push(budget.reserve(PART, Some(a)).await.unwrap());
        }
        let mut sized = Vec::new();
        let mut refused = 0;
        for mut first in firsts {
            match first.grow(&budget, 900 * 1024, false).await {
                Ok(()) => sized.push(first),
                Err(Refused::ClientShare) => refused += 1,
                Err(Refused::Spent) => panic!("the budget is not spent"),
            }
        }
        assert_eq!((sized.len(), refused), (1, 7));
        drop(sized);
        assert_eq!(budget.clients(), 0);
        // Small answers of one client add up to its share, then are refused.
        let mut small = Vec::new();
        while let Ok(r) = budget.try_reserve(100 * 1024, Some(a)) {
            small.push(r);
        }
        assert_eq!(small.len(), 10, "1 MiB share / 100 KiB");
    }
}
