//! Reading what a request says, in the API's own terms: who it is for
//! ([`Tenant`]), the bearer token, the idempotency key, the JSON content
//! type, and JSON object bodies whose faults are answered with the API's
//! error bodies (no parser positions, no Rust type names).

mod tenant;

use axum::extract::{FromRequestParts, Path};
use http::request::Parts;
use http::{HeaderMap, header};
use paste_store::PasteId;
use serde::de::DeserializeOwned;
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;

pub(crate) use tenant::{Tenant, TenantSlot};

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// The `{id}` of a paste route: `400 invalid-paste-id` unless it is a paste
/// id.
pub(crate) struct PastePath(pub(crate) PasteId);

impl<S: Send + Sync> FromRequestParts<S> for PastePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        path_id(parts, state)
            .await
            .map(PastePath)
            .ok_or(ApiError::InvalidPasteId)
    }
}

/// The `{id}` of upstream's `GET /api/paste/{id}`, where anything but a
/// paste id is upstream's generic 404 (no such route), not a 400.
pub(crate) struct CompatPastePath(pub(crate) PasteId);

impl<S: Send + Sync> FromRequestParts<S> for CompatPastePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        path_id(parts, state)
            .await
            .map(CompatPastePath)
            .ok_or(ApiError::RouteNotFound)
    }
}

async fn path_id<S: Send + Sync>(parts: &mut Parts, state: &S) -> Option<PasteId> {
    let Path(id) = Path::<String>::from_request_parts(parts, state)
        .await
        .ok()?;
    PasteId::parse(&id).ok()
}

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

/// `Idempotency-Key` with the SHA-256 of the body it came with.
pub(crate) fn idempotency_key(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Option<(String, [u8; 32])>, ApiError> {
    let mut values = headers.get_all("idempotency-key").iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| {
            values.next().is_none()
                && (1..=MAX_IDEMPOTENCY_KEY).contains(&k.len())
                && k.bytes().all(|b| b.is_ascii_graphic())
        })
        .ok_or(ApiError::InvalidIdempotencyKey)?;
    Ok(Some((key.to_owned(), Sha256::digest(body).into())))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn auth(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_one_well_formed_bearer_header_is_accepted() {
        assert_eq!(bearer_token(&auth(&["Bearer abc"])), Some("abc"));
        assert_eq!(bearer_token(&auth(&["bearer abc"])), Some("abc"));
        for bad in [
            &["Bearer "][..],
            &["Bearer"],
            &["Basic abc"],
            &["Bearer a b"],
            &["Bearer abc", "Bearer abc"],
            &[],
        ] {
            assert_eq!(bearer_token(&auth(bad)), None, "{bad:?}");
        }
        let long = format!("Bearer {}", "a".repeat(10 * 1024));
        assert_eq!(bearer_token(&auth(&[&long])), None);
    }

    #[test]
    fn idempotency_keys_are_bounded_printable_and_single() {
        let h = |vals: &[&str]| {
            let mut h = HeaderMap::new();
            for v in vals {
                h.append("idempotency-key", HeaderValue::from_str(v).unwrap());
            }
            h
        };
        assert_eq!(idempotency_key(&h(&[]), b"x").unwrap(), None);
        let (k, d) = idempotency_key(&h(&["abc-123"]), b"x").unwrap().unwrap();
        assert_eq!(k, "abc-123");
        assert_ne!(
            d,
            idempotency_key(&h(&["abc-123"]), b"y").unwrap().unwrap().1
        );
        for bad in [&["a b"][..], &["a", "b"], &[&"k".repeat(256)]] {
            assert!(idempotency_key(&h(bad), b"x").is_err(), "{bad:?}");
        }
    }
}
