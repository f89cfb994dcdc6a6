//! Request bodies, read within the body limits: [`JsonBody`], the one way a
//! JSON body comes in, and [`read_within`] beneath it (which upstream's
//! create, whose body is not strict JSON, uses itself).

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use tokio::sync::OwnedSemaphorePermit;

use sha2::{Digest as _, Sha256};

use super::headers::{has_idempotency_key, idempotency_key_only, is_json};
use crate::body::{self, ENVELOPE_ALLOWANCE, PlaceAfterBody};
use crate::error::ApiError;
use crate::ratelimit::ClientIp;
use crate::state::AppState;

/// The `[http]` rules for a body of at most `max_units` decoded units.
pub(crate) fn body_rules(
    state: &AppState,
    max_units: usize,
    max_size: usize,
) -> body::BodyRules<'_> {
    let http = &state.inner.http;
    body::BodyRules {
        max_units,
        max_size,
        timeout: Duration::from_secs(http.body_timeout_secs.max(1)),
        min_rate: http.body_min_rate_bytes,
        grace: Duration::from_secs(http.body_rate_grace_secs),
        budget: &state.inner.body_budget,
        slow: None,
    }
}

/// Largest JSON body of the routes whose bodies carry no ciphertext (the
/// admin API: a tenant with 100 hosts and 100 origins fits).
pub(crate) const MAX_JSON_BODY: usize = 64 * 1024;

/// How much ciphertext a request's body may carry, left in the request by
/// the extractor that found who the request is for (the tenant's paste
/// size limit: [`super::Tenant`], `ReviewCaller`). A route without one
/// reads at most [`MAX_JSON_BODY`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataLimit(pub(crate) usize);

/// The one way a JSON body comes in. A JSON object body read into `T`:
/// 415 unless `application/json`; read within the body rules (rate, time,
/// the shared body budget, the client's cap of slow bodies) and the
/// request's [`DataLimit`] plus the envelope, 413 `payload-too-large`
/// naming that limit past it (`body-too-large` past [`MAX_JSON_BODY`] on
/// routes without one); then the request's place among the requests in
/// flight taken (for the routes that take it after the body, 503 when there
/// is none), held by [`Admitted`] until the handler ends; 400 unless one
/// JSON object, 422 for unknown, missing or mistyped fields.
///
/// `CAP`, when not 0, replaces the data limit (a route whose body carries
/// no ciphertext).
pub(crate) struct JsonBody<T, const CAP: usize = 0>(pub(crate) T, pub(crate) Admitted);

/// What a [`JsonBody`] was read within, and its place in flight.
pub(crate) struct Admitted {
    /// The data limit the body was read within: `data` fields are checked
    /// against it.
    pub(crate) max_data: usize,
    /// The SHA-256 of the body as it came, when the request names an
    /// `Idempotency-Key` (the same key with another body is refused).
    digest: Option<[u8; 32]>,
    _place: InFlightPlace,
}

impl Admitted {
    /// The request's `Idempotency-Key` with the digest of its body (400
    /// for a malformed key).
    pub(crate) fn idempotency(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<Option<(String, [u8; 32])>, ApiError> {
        let key = idempotency_key_only(headers)?;
        Ok(key.zip(self.digest))
    }
}

impl<T: DeserializeOwned, const CAP: usize> FromRequest<AppState> for JsonBody<T, CAP> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        if !is_json(&parts.headers) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let limit = parts.extensions.get::<DataLimit>().copied();
        let (raw, admitted) = match limit {
            Some(DataLimit(max)) => {
                let max = if CAP == 0 { max } else { CAP };
                let (raw, place) =
                    read_within(state, &parts, body, max)
                        .await
                        .map_err(|e| match e {
                            ApiError::PayloadTooLarge { .. } => {
                                ApiError::DataTooLarge { max_size: max }
                            }
                            other => other,
                        })?;
                let admitted = Admitted {
                    max_data: max,
                    digest: None,
                    _place: place,
                };
                (raw, admitted)
            }
            None => {
                let rules = body_rules(state, MAX_JSON_BODY, MAX_JSON_BODY);
                let raw = body::read_limited(&parts.headers, body, &rules)
                    .await
                    .map_err(|e| match e {
                        ApiError::PayloadTooLarge { .. } => ApiError::BodyTooLarge,
                        other => other,
                    })?;
                let admitted = Admitted {
                    max_data: MAX_JSON_BODY,
                    digest: None,
                    _place: InFlightPlace(None),
                };
                (raw, admitted)
            }
        };
        let value = parse_object(&raw.bytes)?;
        let digest = has_idempotency_key(&parts.headers).then(|| Sha256::digest(&raw.bytes).into());
        Ok(JsonBody(value, Admitted { digest, ..admitted }))
    }
}

/// Reads a body of at most `max_size` data bytes plus the envelope, within
/// the body rules of `[http]` and the client's cap of slow bodies; then,
/// for a request marked [`PlaceAfterBody`], takes its place among the
/// requests in flight (503 when there is none), held by the returned guard
/// until the handler ends. Past the limit: upstream's 413.
pub(crate) async fn read_within(
    state: &AppState,
    parts: &http::request::Parts,
    body: Body,
    max_size: usize,
) -> Result<(body::LimitedBody, InFlightPlace), ApiError> {
    let mut rules = body_rules(state, max_size.saturating_add(ENVELOPE_ALLOWANCE), max_size);
    rules.slow = parts
        .extensions
        .get::<ClientIp>()
        .map(|ClientIp(ip)| (&state.inner.body_clients, *ip));
    let raw = body::read_limited(&parts.headers, body, &rules).await?;
    let place = match parts.extensions.get::<PlaceAfterBody>() {
        Some(PlaceAfterBody) => Some(
            state
                .inner
                .in_flight
                .clone()
                .try_acquire_owned()
                .map_err(|_| ApiError::Overloaded)?,
        ),
        None => None,
    };
    Ok((raw, InFlightPlace(place)))
}

/// A request's place among the requests in flight, taken once its body has
/// arrived (none when the edge took it before the handler ran).
pub(crate) struct InFlightPlace(
    #[expect(dead_code, reason = "held, not read")] Option<OwnedSemaphorePermit>,
);

/// Reads a JSON object body into `T`: 415 unless `application/json` (UTF-8),
/// 400 unless one JSON object, 422 for unknown, missing or mistyped fields.
/// Messages are ours: no parser positions or Rust type names.
pub(crate) fn parse_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|_| ApiError::MalformedJson)?;
    if !value.is_object() {
        return Err(ApiError::MalformedJson);
    }
    serde_json::from_value(value).map_err(|e| classify(&e.to_string()))
}

/// Turns serde's message into ours, keeping only a field name that is short
/// and plain.
fn classify(message: &str) -> ApiError {
    let field = || {
        message
            .split('`')
            .nth(1)
            .filter(|f| {
                (1..=64).contains(&f.len())
                    && f.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
            .map(str::to_owned)
    };
    if message.starts_with("unknown field") {
        ApiError::UnknownField { field: field() }
    } else if message.starts_with("missing field") {
        ApiError::InvalidField(match field() {
            Some(f) => format!("missing field \"{f}\""),
            None => "a required field is missing".into(),
        })
    } else {
        ApiError::InvalidField("a field has the wrong type or value".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_errors_are_ours() {
        for bad in [
            &b""[..],
            b"null",
            b"[]",
            b"\"s\"",
            b"{\"name\":",
            b"{} x",
            b"\xef\xbb\xbf{}",
        ] {
            assert!(
                matches!(
                    parse_object::<api_types::CreateKeyRequest>(bad),
                    Err(ApiError::MalformedJson)
                ),
                "{bad:?}"
            );
        }
        let unknown = parse_object::<api_types::CreateKeyRequest>(br#"{"name":"a","role":"x"}"#);
        assert!(
            matches!(&unknown, Err(ApiError::UnknownField { field: Some(f) }) if f == "role"),
            "{unknown:?}"
        );
        let missing = parse_object::<api_types::CreateKeyRequest>(b"{}");
        assert!(
            matches!(&missing, Err(ApiError::InvalidField(m)) if m == "missing field \"name\""),
            "{missing:?}"
        );
        let mistyped = parse_object::<api_types::CreateKeyRequest>(br#"{"name":1}"#);
        assert!(
            matches!(&mistyped, Err(ApiError::InvalidField(m)) if !m.contains("i64") && !m.contains("line")),
            "{mistyped:?}"
        );
    }
}
