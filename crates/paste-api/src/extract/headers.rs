//! What the headers say: the bearer token, the idempotency key, whether
//! the body is JSON.

use http::{HeaderMap, header};
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

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
    Ok(idempotency_key_only(headers)?.map(|key| (key, Sha256::digest(body).into())))
}

/// Whether the request names an `Idempotency-Key` at all (the body's
/// digest is then worth taking).
pub(crate) fn has_idempotency_key(headers: &HeaderMap) -> bool {
    headers.contains_key("idempotency-key")
}

/// `Idempotency-Key`, checked: one header of 1-255 printable ASCII
/// characters (400 otherwise).
pub(crate) fn idempotency_key_only(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
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
    Ok(Some(key.to_owned()))
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

    fn content_type(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn only_utf8_json_is_accepted() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(is_json(&content_type(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/json; charset=utf-16",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
        ] {
            assert!(!is_json(&content_type(bad)), "{bad}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}
