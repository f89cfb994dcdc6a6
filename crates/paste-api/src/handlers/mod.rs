//! Request handlers, one module per resource.

pub(crate) mod admin;
pub(crate) mod health;
pub(crate) mod paste;

use http::{HeaderMap, header};

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
