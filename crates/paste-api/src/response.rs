//! Building answers: JSON bodies with upstream's content type. The bottom
//! of the crate's HTTP side: it imports nothing of the crate.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

/// Upstream's JSON content type, byte for byte.
pub(crate) const JSON_CONTENT_TYPE: HeaderValue =
    HeaderValue::from_static("application/json;charset=utf-8");

/// A compact JSON response with upstream's content type.
pub(crate) fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => json_bytes_response(status, bytes),
        // Serialising our own plain structs cannot fail; answer honestly if it does.
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// A response whose body is JSON already built, with upstream's content type.
pub(crate) fn json_bytes_response(status: StatusCode, json: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(json));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    response
}
