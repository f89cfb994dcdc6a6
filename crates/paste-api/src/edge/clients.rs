//! The client limiters: who a request is from (its IP, behind trusted
//! proxies), and the penalties of clients that fail authentication or read
//! absent pastes too often.

use std::convert::Infallible;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, header};
use tower::Service;

use super::shed::shed_load;
use crate::error::{ApiError, LoggedError};
use crate::metrics::rate_limited;
use crate::ratelimit::{ClientIp, client_ip, peer_of};
use crate::routing::Shedding;
use crate::state::AppState;

/// Attributes the request to a client IP and applies the penalty limiters:
/// an IP that failed authentication too often gets 429 on every request
/// carrying credentials; one that read too many absent pastes gets 429 on
/// paste reads. Runs on every route (admin included).
///
/// Part of [`crate::edge::Edge`]; `inner` is reached through the
/// load shedder.
pub(super) async fn limit_clients<S>(
    state: &AppState,
    mut request: Request,
    inner: S,
    shedding: Shedding,
) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let limiters = &state.inner.limiters;
    let ip = client_ip(peer_of(&request), request.headers(), &limiters.trusted);
    request.extensions_mut().insert(ClientIp(ip));
    let has_credentials = request.headers().contains_key(header::AUTHORIZATION);
    let reads_pastes = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::DELETE
    ) && is_paste_path(request.uri().path());
    if has_credentials && let Some(wait) = limiters.failed_auth.as_ref().and_then(|p| p.blocked(ip))
    {
        // Every attempt is an event, refused ones included.
        tracing::warn!(client.ip = %ip, "authentication attempt refused: too many failures");
        return rate_limited(
            "failed_auth",
            ApiError::TooManyRequests { retry_after: wait }.into_response(),
        );
    }
    if reads_pastes && let Some(wait) = limiters.not_found.as_ref().and_then(|p| p.blocked(ip)) {
        return rate_limited(
            "not_found",
            ApiError::TooManyRequests { retry_after: wait }.into_response(),
        );
    }
    let response = shed_load(state, request, inner, shedding).await;
    // A review token that finds no review is a failed authentication too.
    let bad_review_token = has_credentials
        && response
            .extensions()
            .get::<LoggedError>()
            .is_some_and(|e| matches!(*e.0, ApiError::ReviewNotFound));
    if response.status() == StatusCode::UNAUTHORIZED || bad_review_token {
        tracing::warn!(client.ip = %ip, "authentication failed");
        if let Some(wait) = limiters.failed_auth.as_ref().and_then(|p| p.strike(ip)) {
            return rate_limited(
                "failed_auth",
                ApiError::TooManyRequests { retry_after: wait }.into_response(),
            );
        }
    } else if reads_pastes
        && response
            .extensions()
            .get::<LoggedError>()
            .is_some_and(|e| matches!(*e.0, ApiError::PasteNotFound { .. }))
        && let Some(wait) = limiters.not_found.as_ref().and_then(|p| p.strike(ip))
    {
        return rate_limited(
            "not_found",
            ApiError::TooManyRequests { retry_after: wait }.into_response(),
        );
    }
    response
}

fn is_paste_path(path: &str) -> bool {
    path.starts_with("/api/paste/") || path.starts_with("/api/v1/pastes/")
}
