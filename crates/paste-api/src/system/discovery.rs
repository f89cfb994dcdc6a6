//! Discovery: what this server is and where its parts are, for a client
//! that knows only the paste API's URL (the `planshare` CLI asks it to find
//! the portal its review links open on, and to tell a planshare server from
//! upstream's paste service, which answers 404 here).
//!
//! Unauthenticated, the same answer for everyone, built from settings only
//! (no store, no catalog): cheap, and cacheable for five minutes.

use axum::extract::State;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

use crate::response::json_response;
use crate::state::AppState;

/// How long clients and caches may keep the answer.
const CACHE: HeaderValue = HeaderValue::from_static("public, max-age=300");

/// `GET /api/v1/discovery`: what this server is and where its review API
/// and portal are, without credentials.
#[utoipa::path(
    get,
    path = "/api/v1/discovery",
    tag = "discovery",
    operation_id = "discovery",
    responses(
        (status = 200, description = "What this server is, and where its review API and portal are. \
            Cacheable (`Cache-Control: public, max-age=300`). Upstream's paste service has no such \
            route: its 404 tells a client it is not a planshare server.",
            body = api_types::Discovery,
            headers(("Cache-Control" = String, description = "`public, max-age=300`"))),
        (status = 429, response = crate::openapi::responses::TooManyRequests),
        (status = 503, response = crate::openapi::responses::Unavailable),
    ),
)]
pub(crate) async fn discovery(State(state): State<AppState>) -> Response {
    answer(&state)
}

/// `GET /.well-known/planshare`: the same answer as `/api/v1/discovery`.
#[utoipa::path(
    get,
    path = "/.well-known/planshare",
    tag = "discovery",
    operation_id = "discoveryWellKnown",
    responses(
        (status = 200, description = "The same answer as `GET /api/v1/discovery`",
            body = api_types::Discovery,
            headers(("Cache-Control" = String, description = "`public, max-age=300`"))),
        (status = 429, response = crate::openapi::responses::TooManyRequests),
        (status = 503, response = crate::openapi::responses::Unavailable),
    ),
)]
pub(crate) async fn discovery_well_known(State(state): State<AppState>) -> Response {
    answer(&state)
}

fn answer(state: &AppState) -> Response {
    let body = api_types::Discovery {
        service: "planshare".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        api: "/api/v1".into(),
        reviews: true,
        portal: state.inner.portal.answer(),
    };
    let mut response = json_response(StatusCode::OK, &body);
    response.headers_mut().insert(header::CACHE_CONTROL, CACHE);
    response
}

#[cfg(test)]
mod tests {
    use crate::config::PortalBase;

    #[test]
    fn the_portal_is_null_empty_or_a_base_without_its_trailing_slash() {
        assert_eq!(PortalBase::Off.answer(), None);
        assert_eq!(PortalBase::SameOrigin.answer(), Some(String::new()));
        assert_eq!(
            PortalBase::At("https://share.example/".into()).answer(),
            Some("https://share.example".into())
        );
    }
}
