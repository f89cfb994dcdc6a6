//! Reading and parsing the body of `POST /api/paste` the way upstream does:
//! any Content-Type, JSON parsed regardless; `data` must be a non-empty string
//! of at most `max_size` UTF-16 code units.
//!
//! The body is read frame by frame while counting UTF-16 code units, so an
//! oversized upload is refused as soon as it passes the limit plus a small
//! allowance for the JSON around `data`, before it is buffered whole.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::BodyExt;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

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

/// A body read whole, and its share of the [`BodyBudget`], returned on drop.
pub(crate) struct LimitedBody {
    pub(crate) bytes: Bytes,
    pub(crate) _reservation: Option<OwnedSemaphorePermit>,
}

/// Reads the whole body, refusing it once it holds more UTF-16 code units than
/// `max_units`, takes longer than `timeout`, or would overdraw `budget`.
pub(crate) async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    max_units: usize,
    max_size: usize,
    timeout: Duration,
    budget: &BodyBudget,
) -> Result<LimitedBody, ApiError> {
    // A UTF-16 code unit takes at most 3 bytes of UTF-8, so a declared length
    // beyond that cannot fit.
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > (max_units as u64).saturating_mul(3)) {
        return Err(ApiError::PayloadTooLarge { max_size });
    }
    let capacity = declared
        .and_then(|len| usize::try_from(len).ok())
        .unwrap_or(0)
        .min(INITIAL_CAPACITY_CAP);
    let read = async move {
        let mut body = body;
        let mut reservation = None;
        // A body that arrives in one frame is kept as it is; only a second
        // frame starts a buffer to gather them in.
        let mut first: Option<Bytes> = None;
        let mut buf: Option<BytesMut> = None;
        let mut units = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| ApiError::BodyRead)?;
            if let Ok(chunk) = frame.into_data() {
                units += utf16_units(&chunk);
                if units > max_units {
                    return Err(ApiError::PayloadTooLarge { max_size });
                }
                budget.reserve(&mut reservation, chunk.len())?;
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
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| ApiError::BodyTimeout)?
}

/// UTF-16 code units in a UTF-8 byte stream (split sequences count once):
/// one per sequence start, two for 4-byte sequences. Invalid bytes count as one.
fn utf16_units(bytes: &[u8]) -> usize {
    // Payloads are base64url: ASCII is checked a word at a time, and then
    // every byte is one unit (the per-byte count was a create's largest
    // cost in a profile).
    if bytes.is_ascii() {
        return bytes.len();
    }
    bytes
        .iter()
        .map(|&b| match b {
            0x80..=0xBF => 0,
            0xF0..=0xFF => 2,
            _ => 1,
        })
        .sum()
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

    #[test]
    fn lengths_are_counted_in_utf16_units() {
        assert_eq!(js_length("abc"), 3);
        assert_eq!(js_length("é"), 1);
        assert_eq!(js_length("🚀"), 2);
        assert_eq!(utf16_units("a é 🚀 ✓".as_bytes()), js_length("a é 🚀 ✓"));
        // However a text is cut into frames (even inside a character), the
        // frames' counts add up to its length, ASCII-only frames included.
        let text = format!("{}é🚀{}✓x", "a".repeat(40), "b".repeat(17));
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(
                utf16_units(a) + utf16_units(b),
                js_length(&text),
                "cut at {cut}"
            );
        }
    }
}
