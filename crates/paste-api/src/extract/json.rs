//! JSON object bodies, read within the body limits.

use std::time::Duration;

use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use super::headers::is_json;
use crate::body;
use crate::error::ApiError;
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

/// Largest JSON body of the routes that take one besides the paste
/// creates (a tenant with 100 hosts and 100 origins fits).
pub(crate) const MAX_JSON_BODY: usize = 64 * 1024;

/// A JSON object body read into `T`, within the body limits (rate, time,
/// the shared body budget) and at most `MAX` bytes: 415 unless
/// `application/json`, 413 `body-too-large` past `MAX`, 400 unless one JSON
/// object, 422 for unknown, missing or mistyped fields.
pub(crate) struct JsonBody<T, const MAX: usize = MAX_JSON_BODY>(pub(crate) T);

impl<T: DeserializeOwned, const MAX: usize> FromRequest<AppState> for JsonBody<T, MAX> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        if !is_json(&parts.headers) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let raw = body::read_limited(&parts.headers, body, &body_rules(state, MAX, MAX))
            .await
            .map_err(|e| match e {
                ApiError::PayloadTooLarge { .. } => ApiError::BodyTooLarge,
                other => other,
            })?;
        parse_object(&raw.bytes).map(JsonBody)
    }
}

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
