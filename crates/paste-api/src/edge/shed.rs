//! Load shedding: at most `http.max_in_flight` requests are handled at once.

use std::convert::Infallible;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tower::Service;

use crate::error::ApiError;
use crate::state::AppState;

/// Whether a request counts against `http.max_in_flight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shedding {
    /// It takes a place, or is shed when there is none.
    Applies,
    /// Probes and scrapes: served without a place.
    Exempt,
    /// Creates: the handler takes a place once the body has arrived, so
    /// that bodies trickling in do not hold the places of requests that
    /// are ready to be served. Bodies under way are bounded on their own
    /// (per client, by rate and by memory).
    AfterBody,
}

/// Marks a request whose handler must take its place of
/// `http.max_in_flight` itself, once its body has arrived
/// ([`crate::handlers::paste::read_body`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlaceAfterBody;

/// Sheds requests beyond `http.max_in_flight` with 503 + `Retry-After`
/// instead of queueing them without bound.
pub(crate) async fn shed_load<S>(
    state: &AppState,
    mut request: Request,
    inner: S,
    shedding: Shedding,
) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    match shedding {
        Shedding::Exempt => call_inner(inner, request).await,
        Shedding::AfterBody => {
            request.extensions_mut().insert(PlaceAfterBody);
            call_inner(inner, request).await
        }
        Shedding::Applies => match state.inner.in_flight.try_acquire() {
            Ok(_permit) => call_inner(inner, request).await,
            Err(_) => ApiError::Overloaded.into_response(),
        },
    }
}

/// Calls the service inside the layer: axum's routes never fail.
async fn call_inner<S>(mut inner: S, request: Request) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    match inner.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
