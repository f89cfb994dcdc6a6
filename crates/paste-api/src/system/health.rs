//! Probes: liveness never depends on a dependency; readiness does.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::error::ApiError;
use crate::response::json_response;
use crate::state::AppState;

/// `GET /healthz`: the process is up and serving.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "probes",
    operation_id = "healthz",
    responses(
        (status = 200, description = "The process is serving", body = api_types::HealthResponse),
    ),
)]
pub(crate) async fn healthz() -> Response {
    json_response(
        StatusCode::OK,
        &api_types::HealthResponse {
            status: "ok".into(),
        },
    )
}

/// `GET /readyz`: 200 when the store answers and no shutdown has begun,
/// else 503 + `Retry-After`.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "probes",
    operation_id = "readyz",
    responses(
        (status = 200, description = "Ready", body = api_types::HealthResponse),
        (status = 503, response = crate::openapi::responses::Unavailable),
    ),
)]
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    let readiness = state.readiness();
    if readiness.is_shutting_down() {
        return ApiError::ShuttingDown.into_response();
    }
    match readiness.store_health().await {
        Ok(()) => json_response(
            StatusCode::OK,
            &api_types::HealthResponse {
                status: "ready".into(),
            },
        ),
        Err(reason) => {
            tracing::warn!(%reason, "not ready: store health check failed");
            ApiError::StoreUnavailable {
                retry_after: std::time::Duration::from_secs(1),
                source: None,
            }
            .into_response()
        }
    }
}
