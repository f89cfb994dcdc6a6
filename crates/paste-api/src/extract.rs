//! Reading what a request says, in the API's own terms: the bearer token,
//! the JSON content type, and JSON object bodies whose faults are answered
//! with the API's error bodies (no parser positions, no Rust type names).

use http::{HeaderMap, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The token of a single well-formed `Authorization: Bearer <token>` header.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let text = value.to_str().ok()?;
    let (scheme, token) = text.split_once(' ')?;
    let valid = scheme.eq_ignore_ascii_case("bearer")
        && (1..=256).contains(&token.len())
        && token.bytes().all(|b| b.is_ascii_graphic());
    valid.then_some(token)
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

/// `application/json`, with no charset or `charset=utf-8`.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return false;
    }
    parts.all(|param| match param.split_once('=') {
        Some((name, value)) if name.trim().eq_ignore_ascii_case("charset") => {
            value.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
        }
        Some(_) => true,
        None => param.trim().is_empty(),
    })
}
