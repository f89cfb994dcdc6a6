//! Load shedding: at most `http.max_in_flight` requests are handled at once.

use std::convert::Infallible;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tower::Service;

use crate::body::PlaceAfterBody;
use crate::error::ApiError;
use crate::routing::Shedding;
use crate::state::AppState;

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
