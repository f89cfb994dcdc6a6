//! Reading and parsing the body of `POST /api/paste` the way upstream does:
//! any Content-Type, JSON parsed regardless; `data` must be a non-empty string
//! of at most `max_size` UTF-16 code units.
//!
//! The body is read frame by frame while counting the UTF-16 code units it
//! decodes to, so an oversized upload is refused as soon as it passes the
//! limit plus a small allowance for the JSON around `data`, before it is
//! buffered whole; a body that trickles in is dropped (408) once it falls
//! below a minimum rate.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::BodyExt;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Marks a request whose handler must take its place of
/// `http.max_in_flight` itself, once its body has arrived: the edge's
/// load shedder sets it for the routes whose bodies may be large, and the
/// body reader (`extract::read_within`) takes the place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlaceAfterBody;

/// Room for the JSON around `data` (`{"data":""}`, ignored extra fields).
pub(crate) const ENVELOPE_ALLOWANCE: usize = 64 * 1024;

/// Bodies are buffered whole; no single request reserves more than this up front.
const INITIAL_CAPACITY_CAP: usize = 256 * 1024;

/// Bytes of request bodies buffered at once across all requests, in KiB
/// permits. A request that would exceed it is shed with 503 instead of
/// letting many large uploads exhaust memory.
#[derive(Clone)]
pub(crate) struct BodyBudget(Arc<Semaphore>);

impl BodyBudget {
    pub(crate) fn new(mib: usize) -> Self {
        BodyBudget(Arc::new(Semaphore::new(mib.max(1).saturating_mul(1024))))
    }

    /// Reserves `bytes` more (rounded up to KiB) on `held`, or fails at once.
    fn reserve(
        &self,
        held: &mut Option<OwnedSemaphorePermit>,
        bytes: usize,
    ) -> Result<(), ApiError> {
        let kib = u32::try_from(bytes.div_ceil(1024)).map_err(|_| ApiError::Overloaded)?;
        if kib == 0 {
            return Ok(());
        }
        let permit = self
            .0
            .clone()
            .try_acquire_many_owned(kib)
            .map_err(|_| ApiError::Overloaded)?;
        match held {
            Some(h) => h.merge(permit),
            None => *held = Some(permit),
        }
        Ok(())
    }
}

/// The slow request bodies each client (IP) is sending right now, at most
/// `cap` at once per client: one client cannot hold many connections open
/// with bodies that never finish. A body is slow once it has taken
/// [`SLOW_BODY_AFTER`]. Only clients with a slow body under way are kept,
/// so the map is bounded by the connections.
pub(crate) struct BodyClients {
    cap: usize,
    sending: Mutex<HashMap<IpAddr, usize>>,
}

impl BodyClients {
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(BodyClients {
            cap: cap.max(1),
            sending: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more body from `ip`, or 429 when it has `cap` under way.
    pub(crate) fn enter(self: &Arc<Self>, ip: IpAddr) -> Result<BodySlot, ApiError> {
        let mut sending = self.sending.lock().unwrap_or_else(PoisonError::into_inner);
        let count = sending.entry(ip).or_insert(0);
        if *count >= self.cap {
            return Err(ApiError::TooManyRequests {
                retry_after: Duration::from_secs(1),
            });
        }
        *count += 1;
        Ok(BodySlot {
            clients: self.clone(),
            ip,
        })
    }

    /// Clients with a body under way (for tests and metrics).
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// One body under way; its place is given back on drop.
pub(crate) struct BodySlot {
    clients: Arc<BodyClients>,
    ip: IpAddr,
}

impl Drop for BodySlot {
    fn drop(&mut self) {
        let mut sending = self
            .clients
            .sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = sending.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                sending.remove(&self.ip);
            }
        }
    }
}

/// A body read whole, and its share of the [`BodyBudget`], returned on drop.
pub(crate) struct LimitedBody {
    pub(crate) bytes: Bytes,
    pub(crate) _reservation: Option<OwnedSemaphorePermit>,
}

/// What a body must keep to while it arrives.
pub(crate) struct BodyRules<'a> {
    /// Most UTF-16 code units the body may hold once its JSON escapes are
    /// decoded (see [`DecodedUnits`]).
    pub(crate) max_units: usize,
    /// The limit named in the 413.
    pub(crate) max_size: usize,
    /// The whole body must have arrived by then (408).
    pub(crate) timeout: Duration,
    /// Bytes per second a body must average once `grace` has passed (408);
    /// 0 turns the check off.
    pub(crate) min_rate: u64,
    /// How long a body may take before its rate is checked.
    pub(crate) grace: Duration,
    /// Memory shared by all bodies being read.
    pub(crate) budget: &'a BodyBudget,
    /// The client's cap of slow bodies: a body still arriving after
    /// [`SLOW_BODY_AFTER`] must take one of its client's places (429 when
    /// they are all taken).
    pub(crate) slow: Option<(&'a Arc<BodyClients>, IpAddr)>,
}

/// A body still arriving after this long is slow: it needs one of its
/// client's places ([`BodyClients`]). Bodies that arrive at once, however
/// many at a time, never do.
const SLOW_BODY_AFTER: Duration = Duration::from_secs(1);

/// The largest request body, in bytes, that could decode to `max_units`:
/// an escape `\uXXXX` is six bytes for one unit.
fn max_raw_bytes(max_units: usize) -> u64 {
    (max_units as u64).saturating_mul(6)
}

/// Reads the whole body, refusing it once it holds more decoded UTF-16 code
/// units than `rules.max_units` (413), takes longer than `rules.timeout` or
/// arrives slower than `rules.min_rate` after `rules.grace` (408), or would
/// overdraw the budget (503). A refused oversized body is read to its end
/// and thrown away first, within bounds ([`drain`]), so that a client still
/// sending it hears the 413.
pub(crate) async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    rules: &BodyRules<'_>,
) -> Result<LimitedBody, ApiError> {
    let (max_units, max_size) = (rules.max_units, rules.max_size);
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let capacity = declared
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(0)
        .min(INITIAL_CAPACITY_CAP);
    let started = tokio::time::Instant::now();
    let mut body = body;
    let mut received: u64 = 0;
    let mut slot: Option<BodySlot> = None;
    let read = async {
        if declared.is_some_and(|len| len > max_raw_bytes(max_units)) {
            return Err(ApiError::PayloadTooLarge { max_size });
        }
        let mut reservation = None;
        // A body that arrives in one frame is kept as it is; only a second
        // frame starts a buffer to gather them in.
        let mut first: Option<Bytes> = None;
        let mut buf: Option<BytesMut> = None;
        let mut units = DecodedUnits::default();
        let slow_at = started + SLOW_BODY_AFTER;
        loop {
            let needs_slot = slot.is_none() && rules.slow.is_some();
            if needs_slot && tokio::time::Instant::now() >= slow_at {
                if let Some((clients, ip)) = rules.slow {
                    slot = Some(clients.enter(ip)?);
                }
                continue;
            }
            let deadline = rate_deadline(started, received, rules.min_rate, rules.grace);
            let wake = if needs_slot {
                deadline.min(slow_at)
            } else {
                deadline
            };
            let frame = match tokio::time::timeout_at(wake, body.frame()).await {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                // Time to take a place: the top of the loop does.
                Err(_) if wake < deadline => continue,
                Err(_) => {
                    return Err(ApiError::BodyTooSlow {
                        min_rate: rules.min_rate,
                    });
                }
            };
            let frame = frame.map_err(|_| ApiError::BodyRead)?;
            if let Ok(chunk) = frame.into_data() {
                received += chunk.len() as u64;
                if units.add(&chunk) > max_units {
                    return Err(ApiError::PayloadTooLarge { max_size });
                }
                rules.budget.reserve(&mut reservation, chunk.len())?;
                match (&mut buf, first.take()) {
                    (Some(buf), _) => buf.extend_from_slice(&chunk),
                    (None, None) => first = Some(chunk),
                    (None, Some(earlier)) => {
                        let mut gathered =
                            BytesMut::with_capacity(capacity.max(earlier.len() + chunk.len()));
                        gathered.extend_from_slice(&earlier);
                        gathered.extend_from_slice(&chunk);
                        buf = Some(gathered);
                    }
                }
            }
        }
        let bytes = match (buf, first) {
            (Some(buf), _) => buf.freeze(),
            (None, first) => first.unwrap_or_default(),
        };
        Ok(LimitedBody {
            bytes,
            _reservation: reservation,
        })
    };
    let read = tokio::time::timeout(rules.timeout, read)
        .await
        .map_err(|_| ApiError::BodyTimeout)?;
    if let Err(ApiError::PayloadTooLarge { .. }) = &read
        && declared.is_none_or(|len| len <= DRAIN_LIMIT)
    {
        drain(&mut body, started, received, rules, slot).await;
    }
    read
}

/// The most of a refused body that is read and thrown away before the
/// refusal is sent. A browser whose upload is cut off by a closed
/// connection reports a network failure, never the answer; so the rest of
/// an oversized body is read (into nothing) up to this many bytes in all,
/// as long as it keeps the body's rate and timeout. Past any of these
/// bounds the connection is closed after the answer instead.
const DRAIN_LIMIT: u64 = 64 * 1024 * 1024;

/// Reads the rest of a refused body and drops it, within [`DRAIN_LIMIT`],
/// the body's rate and timeout and its client's cap of slow bodies (the
/// body takes one of its client's places once slow, as while it was read).
/// `received` counts what was read of it before (since `started`).
async fn drain(
    body: &mut Body,
    started: tokio::time::Instant,
    mut received: u64,
    rules: &BodyRules<'_>,
    mut slot: Option<BodySlot>,
) {
    let slow_at = started + SLOW_BODY_AFTER;
    let end = started + rules.timeout;
    while received <= DRAIN_LIMIT {
        let needs_slot = slot.is_none() && rules.slow.is_some();
        if needs_slot && tokio::time::Instant::now() >= slow_at {
            if let Some((clients, ip)) = rules.slow {
                match clients.enter(ip) {
                    Ok(place) => slot = Some(place),
                    Err(_) => return,
                }
            }
            continue;
        }
        let deadline = rate_deadline(started, received, rules.min_rate, rules.grace).min(end);
        let wake = if needs_slot {
            deadline.min(slow_at)
        } else {
            deadline
        };
        match tokio::time::timeout_at(wake, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Ok(chunk) = frame.into_data() {
                    received += chunk.len() as u64;
                }
            }
            Err(_) if wake < deadline => {}
            Ok(None | Some(Err(_))) | Err(_) => return,
        }
    }
}

/// When a body that has delivered `received` bytes since `started` falls
/// below `min_rate` bytes per second if nothing more comes: never before
/// `grace` has passed.
fn rate_deadline(
    started: tokio::time::Instant,
    received: u64,
    min_rate: u64,
    grace: Duration,
) -> tokio::time::Instant {
    let earned = match min_rate {
        // The overall timeout is then the only bound: a day stands for never.
        0 => Duration::from_secs(86_400),
        rate => Duration::from_secs_f64(received as f64 / rate as f64),
    };
    started + earned.max(grace)
}

/// Counts the UTF-16 code units a JSON text holds once its escapes are
/// decoded, as the bytes arrive (escapes split across chunks count once):
/// `\uXXXX` is one unit (a surrogate pair, two escapes, two), any other
/// escape one, and everything else its UTF-16 length. Upstream limits the
/// decoded `data`, so counting raw bytes would refuse an escaped body six
/// times too early. The count of the whole body bounds that of `data`.
#[derive(Debug, Default)]
struct DecodedUnits {
    units: usize,
    /// Where an escape sequence stands at the end of the last chunk.
    escape: Escape,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Escape {
    /// Outside any escape.
    #[default]
    None,
    /// Just after a backslash.
    Started,
    /// Inside `\uXXXX`, with this many hex digits still to come.
    Hex(u8),
}

impl DecodedUnits {
    /// Adds `chunk`; returns the units so far.
    fn add(&mut self, chunk: &[u8]) -> usize {
        // Payloads are base64url: no escape and all ASCII, one unit a byte
        // (checked a word at a time; the per-byte count was a create's
        // largest cost in a profile).
        if self.escape == Escape::None && chunk.is_ascii() && !chunk.contains(&b'\\') {
            self.units += chunk.len();
            return self.units;
        }
        for &b in chunk {
            self.escape = match (self.escape, b) {
                (Escape::None, b'\\') => Escape::Started,
                (Escape::None, b) => {
                    self.units += utf16_units_of_byte(b);
                    Escape::None
                }
                (Escape::Started, b'u') => {
                    self.units += 1;
                    Escape::Hex(4)
                }
                (Escape::Started, _) => {
                    self.units += 1;
                    Escape::None
                }
                (Escape::Hex(1), _) => Escape::None,
                (Escape::Hex(n), _) => Escape::Hex(n - 1),
            };
        }
        self.units
    }
}

/// UTF-16 code units of one byte of UTF-8: one per sequence start, two for
/// a 4-byte sequence, none for continuation bytes (invalid bytes count one).
fn utf16_units_of_byte(b: u8) -> usize {
    match b {
        0x80..=0xBF => 0,
        0xF0..=0xFF => 2,
        _ => 1,
    }
}

/// Length of `s` in UTF-16 code units (JavaScript's `string.length`).
pub(crate) fn js_length(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().map(char::len_utf16).sum()
    }
}

/// The `data` of a body shaped exactly as upstream's client sends it,
/// `{"data":"…"}` byte for byte (`JSON.stringify({ data })`), or `None` for
/// any other body.
///
/// This is a shortcut, not a parser: the caller uses it only when the text
/// is then accepted as canonical base64url, whose alphabet holds no `"`, `\`
/// or control character, so the body is that one-member object and
/// [`parse_create`] would give the same `data`. Anything else goes to
/// [`parse_create`]. It saves the JSON string scan over the payload, the
/// largest user-space cost of a 100 KB create in a profile.
pub(crate) fn upstream_data(body: &[u8]) -> Option<&[u8]> {
    body.strip_prefix(br#"{"data":""#)?
        .strip_suffix(br#""}"#)
        .filter(|data| !data.is_empty())
}

/// Parses the create body: `Err` when it is not JSON at all, `Ok(None)` when
/// it is JSON without a non-empty string `data` (an object field, the last one
/// when repeated, as `JSON.parse` keeps).
/// The text is borrowed from `body` when it holds no escapes (base64url
/// never does), so a create does not copy its payload here.
pub(crate) fn parse_create(body: &[u8]) -> Result<Option<Cow<'_, str>>, ApiError> {
    let parsed: CreateBody<'_> =
        serde_json::from_slice(body).map_err(|_| ApiError::InvalidJsonBody)?;
    Ok(parsed.data.filter(|d| !d.is_empty()))
}

/// Any JSON value; keeps only a top-level string field `data`, skipping
/// everything else without building it.
struct CreateBody<'de> {
    data: Option<Cow<'de, str>>,
}

impl<'de> de::Deserialize<'de> for CreateBody<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TopLevel)
    }
}

struct TopLevel;

impl<'de> Visitor<'de> for TopLevel {
    type Value = CreateBody<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CreateBody<'de>, A::Error> {
        let mut data = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                data = map.next_value::<DataField>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(CreateBody { data })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CreateBody<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(CreateBody { data: None })
    }

    fn visit_unit<E>(self) -> Result<CreateBody<'de>, E> {
        Ok(CreateBody { data: None })
    }
    fn visit_bool<E>(self, _: bool) -> Result<CreateBody<'de>, E> {
        Ok(CreateBody { data: None })
    }
    fn visit_i64<E>(self, _: i64) -> Result<CreateBody<'de>, E> {
        Ok(CreateBody { data: None })
    }
    fn visit_u64<E>(self, _: u64) -> Result<CreateBody<'de>, E> {
        Ok(CreateBody { data: None })
    }
    fn visit_f64<E>(self, _: f64) -> Result<CreateBody<'de>, E> {
        Ok(CreateBody { data: None })
    }
    fn visit_str<E>(self, _: &str) -> Result<CreateBody<'de>, E> {
        Ok(CreateBody { data: None })
    }
}

/// The value of `data`: the string, or `None` for any other JSON type.
struct DataField<'de>(Option<Cow<'de, str>>);

impl<'de> de::Deserialize<'de> for DataField<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DataVisitor)
    }
}

struct DataVisitor;

impl<'de> Visitor<'de> for DataVisitor {
    type Value = DataField<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<DataField<'de>, E> {
        Ok(DataField(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<DataField<'de>, E> {
        Ok(DataField(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E>(self, v: String) -> Result<DataField<'de>, E> {
        Ok(DataField(Some(Cow::Owned(v))))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DataField<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(DataField(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DataField<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(DataField(None))
    }
    fn visit_unit<E>(self) -> Result<DataField<'de>, E> {
        Ok(DataField(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<DataField<'de>, E> {
        Ok(DataField(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<DataField<'de>, E> {
        Ok(DataField(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<DataField<'de>, E> {
        Ok(DataField(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<DataField<'de>, E> {
        Ok(DataField(None))
    }
}

/// A ciphertext field of a strict body: not empty, and within `max`
/// counted as upstream counts (UTF-16 units); 422 or 413 otherwise.
pub(crate) fn check_data(field: &str, data: &str, max: usize) -> Result<(), ApiError> {
    if data.is_empty() {
        return Err(ApiError::InvalidField(format!(
            "\"{field}\" must not be empty"
        )));
    }
    if js_length(data) > max {
        return Err(ApiError::DataTooLarge { max_size: max });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Option<String>, &'static str> {
        parse_create(body.as_bytes())
            .map(|d| d.map(Cow::into_owned))
            .map_err(|e| match e {
                ApiError::InvalidJsonBody => "invalid json",
                _ => "other",
            })
    }

    #[test]
    fn data_without_escapes_is_borrowed_from_the_body() {
        let body = br#"{"x":[1,{"data":"no"}],"data":"q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg"}"#;
        let data = parse_create(body).unwrap().unwrap();
        assert!(matches!(data, Cow::Borrowed(_)));
        assert_eq!(data, "q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg");
        let escaped = parse_create(br#"{"data":"a\nb"}"#).unwrap().unwrap();
        assert!(matches!(escaped, Cow::Owned(_)));
        assert_eq!(escaped, "a\nb");
    }

    #[test]
    fn bodies_parse_as_upstream_reads_them() {
        assert_eq!(parse(r#"{"data":"abc"}"#), Ok(Some("abc".into())));
        assert_eq!(
            parse(r#" {"ttl":1,"data":"abc","id":"x","n":{"a":[1,{"b":null}]}} "#),
            Ok(Some("abc".into()))
        );
        assert_eq!(
            parse(r#"{"data":"a","data":"b"}"#),
            Ok(Some("b".into())),
            "last key wins"
        );
        assert_eq!(parse(r#"{"d\u0061ta":"esc"}"#), Ok(Some("esc".into())));
        assert_eq!(parse(r#"{"data":"\ud83d\ude80"}"#), Ok(Some("🚀".into())));
        for no_data in [
            "null",
            "[]",
            "[1,2]",
            r#""abc""#,
            "1",
            "true",
            "{}",
            r#"{"other":1}"#,
            r#"{"data":123}"#,
            r#"{"data":null}"#,
            r#"{"data":""}"#,
            r#"{"data":["x"]}"#,
            r#"{"data":{"x":"y"}}"#,
            r#"{"data":true}"#,
        ] {
            assert_eq!(parse(no_data), Ok(None), "{no_data}");
        }
        for invalid in [
            "",
            "{not json",
            r#"{"data":"abc""#,
            r#"{"data":"abc"} x"#,
            "NaN",
            "\u{feff}{}",
            r#"{"data":"\ud800"}"#,
            "{'data':'x'}",
            r#"{"data":"a"}{"data":"b"}"#,
        ] {
            assert_eq!(parse(invalid), Err("invalid json"), "{invalid:?}");
        }
    }

    #[test]
    fn deep_nesting_is_skipped_without_overflowing_the_stack() {
        for deep in [
            format!("{{\"x\":{}1{}}}", "[".repeat(100_000), "]".repeat(100_000)),
            format!(
                "{{\"data\":{}1{}}}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        ] {
            assert_eq!(parse(&deep), Ok(None));
        }
    }

    /// Whenever the handler would take the shortcut (the upstream shape
    /// around canonical base64url), the parser reads the same text: same
    /// stored payload, and a length in UTF-16 units equal to the byte count
    /// the shortcut's size check uses.
    #[test]
    fn the_upstream_shortcut_agrees_with_the_parser() {
        use paste_store::Payload;

        let mut state = 0x853c_49e6_748f_ea9b_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        const PIECES: &[&str] = &[
            "q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg",
            "AA",
            "A",
            "-_",
            "\\",
            "\"",
            "\\u0041",
            "\"}",
            "\",\"data\":\"",
            "{\"data\":\"",
            " ",
            "\n",
            "é",
            "=",
        ];
        let mut shortcuts = 0;
        for round in 0..20_000 {
            let pieces: String = (0..next() % 6)
                .map(|_| PIECES[(next() as usize) % PIECES.len()])
                .collect();
            let data: String = if round % 3 == 0 {
                pieces
            } else {
                // Canonical text, now and then with a piece spliced in.
                let bytes: Vec<u8> = (0..next() % 300).map(|_| next() as u8).collect();
                let mut text = Payload::Base64Url(bytes.into()).to_text();
                if round % 3 == 1 {
                    let at = (next() as usize) % (text.len() + 1);
                    text.insert_str(at, &pieces);
                }
                text
            };
            let body = match round % 4 {
                0 => data.clone(),
                1 => format!("{{\"data\":\"{data}\"}}"),
                2 => format!("{{\"data\":\"{data}\"}} "),
                _ => format!("{{\"data\":\"{data}\",\"data\":\"{data}\"}}"),
            };
            let Some(payload) = upstream_data(body.as_bytes()).and_then(Payload::from_canonical)
            else {
                continue;
            };
            shortcuts += 1;
            let text = upstream_data(body.as_bytes()).unwrap();
            let parsed = parse_create(body.as_bytes()).unwrap().unwrap();
            assert_eq!(Payload::from_borrowed(&parsed), payload, "{body}");
            assert_eq!(js_length(&parsed), text.len(), "{body}");
        }
        assert!(
            shortcuts > 1_000,
            "only {shortcuts} bodies took the shortcut"
        );
        // Shapes that are not byte-for-byte upstream's are left to the parser.
        for body in [
            r#"{ "data":"AA"}"#,
            r#"{"data":"AA","x":1}"#,
            r#"{"data":""}"#,
            "{\"data\":\"AA\"}\n",
            r#"{"data":"A"}"#,
        ] {
            let shortcut = upstream_data(body.as_bytes()).and_then(Payload::from_canonical);
            assert_eq!(shortcut, None, "{body}");
        }
    }

    /// `text` as a JSON string with every non-ASCII character, quote,
    /// backslash and control character escaped (`\uXXXX`, surrogate pairs
    /// as two escapes; `\n`-style where JSON has one).
    fn escaped_json(text: &str) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
                c => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }

    fn decoded_units(parts: &[&[u8]]) -> usize {
        let mut units = DecodedUnits::default();
        parts.iter().map(|p| units.add(p)).last().unwrap_or(0)
    }

    #[test]
    fn bodies_are_counted_in_the_utf16_units_they_decode_to() {
        assert_eq!(js_length("abc"), 3);
        assert_eq!(js_length("é"), 1);
        assert_eq!(js_length("🚀"), 2);
        let text = format!("{}é🚀{}✓x\"\\\n\u{1}", "a".repeat(40), "b".repeat(17));
        // Plain JSON and fully escaped JSON both count as the text's length
        // (plus the two quotes of a JSON string), however the bytes are cut
        // into frames (inside a character or an escape too).
        // Raw text (no JSON, so no backslash) counts as its length too.
        let raw = text.replace('\\', "");
        assert_eq!(decoded_units(&[raw.as_bytes()]), js_length(&raw));
        let plain = serde_json::to_string(&text).unwrap();
        let escaped = escaped_json(&text);
        assert_eq!(
            serde_json::from_str::<String>(&escaped).unwrap(),
            text,
            "the escaping helper"
        );
        for (form, extra) in [(plain, 2), (escaped, 2)] {
            let bytes = form.as_bytes();
            for cut in 0..=bytes.len() {
                let (a, b) = bytes.split_at(cut);
                assert_eq!(
                    decoded_units(&[a, b]),
                    js_length(&text) + extra,
                    "{form}: cut at {cut}"
                );
            }
        }
        // Six bytes a unit at most: the raw bound holds every escaped body.
        let rockets = escaped_json(&"🚀".repeat(100));
        assert_eq!(decoded_units(&[rockets.as_bytes()]), 202);
        assert!(rockets.len() as u64 <= max_raw_bytes(202));
    }

    #[test]
    fn each_client_sends_at_most_its_cap_of_bodies_at_once() {
        let clients = BodyClients::new(2);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let first = clients.enter(a).unwrap();
        let second = clients.enter(a).unwrap();
        assert!(matches!(
            clients.enter(a),
            Err(ApiError::TooManyRequests { .. })
        ));
        // Another client is not affected.
        let other = clients.enter(b).unwrap();
        drop(first);
        let third = clients.enter(a).unwrap();
        drop((second, third, other));
        // Nothing is kept of clients with no body under way.
        assert_eq!(clients.clients(), 0);
    }

    #[test]
    fn a_body_may_take_its_time_only_while_it_keeps_the_rate() {
        let start = tokio::time::Instant::now();
        let grace = Duration::from_secs(5);
        // Nothing yet: the grace period.
        assert_eq!(rate_deadline(start, 0, 1024, grace), start + grace);
        // 1 KiB/s earns a second per KiB received, but never less than the grace.
        assert_eq!(rate_deadline(start, 2048, 1024, grace), start + grace);
        assert_eq!(
            rate_deadline(start, 10 * 1024, 1024, grace),
            start + Duration::from_secs(10)
        );
        // Off: only the overall timeout bounds it.
        assert!(rate_deadline(start, 0, 0, grace) >= start + Duration::from_secs(86_400));
    }
}
