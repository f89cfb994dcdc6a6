//! Checks of the request head that the HTTP parser leaves to the server.

use axum::extract::Request;
use http::{HeaderValue, header};

use crate::config::HeadLimits;
use crate::error::ApiError;

/// What RFC 9112 asks of a server about the request head that hyper leaves
/// to it: more than one `Host` is a 400 (the `Host` headers are dropped, so
/// no tenant is picked by the first); a transfer coding other than
/// `chunked` alone is a 501, not read as plain chunked; and a request in
/// absolute form (`GET http://host/path`) is for the target's host, whatever
/// `Host` says (§3.2.2), so its `Host` is replaced by the target's. A head
/// over `limits` is a 431 answered here, so that it carries CORS headers
/// like every other answer (hyper's own 431, past twice the limits, cannot).
pub(super) fn check_head(request: &mut Request, limits: HeadLimits) -> Result<(), ApiError> {
    if head_size(request) > limits.max_bytes || request.headers().len() > limits.max_headers {
        return Err(ApiError::HeadTooLarge);
    }
    let headers = request.headers_mut();
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        headers.remove(header::HOST);
        return Err(ApiError::MalformedHead(
            "more than one Host header: send exactly one",
        ));
    }
    let mut codings = 0;
    for value in headers.get_all(header::TRANSFER_ENCODING) {
        let value = value
            .to_str()
            .map_err(|_| ApiError::UnsupportedTransferCoding)?;
        for coding in value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            codings += 1;
            if codings > 1 || !coding.eq_ignore_ascii_case("chunked") {
                return Err(ApiError::UnsupportedTransferCoding);
            }
        }
    }
    if let Some(authority) = request.uri().authority() {
        let host = match authority.port() {
            Some(port) => format!("{}:{port}", authority.host()),
            None => authority.host().to_owned(),
        };
        let host = HeaderValue::try_from(host)
            .map_err(|_| ApiError::MalformedHead("the request target's host is not valid"))?;
        request.headers_mut().insert(header::HOST, host);
    }
    Ok(())
}

/// About the bytes of `request`'s head on the wire: the request line, each
/// field as `name: value\r\n`, and the blank line.
fn head_size(request: &Request) -> usize {
    let uri = request.uri();
    let target = uri.path_and_query().map_or(1, |p| p.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len());
    let line = request.method().as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    let fields: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    line + fields + 2
}
