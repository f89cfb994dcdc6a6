//! `/admin/v1/…`: tenants, their API keys and their usage, for operators.
//!
//! The whole API sits behind [`gate`]: with no admin token configured every
//! admin path answers the generic route 404 (its existence is not revealed);
//! otherwise it needs `Authorization: Bearer <admin token>`, compared in
//! constant time on SHA-256 digests so neither content nor length leaks.
//! Bodies must be `application/json` objects whose fields the body type knows
//! (`deny_unknown_fields`): unknown fields are refused with 422, so nothing
//! server-controlled (id, namespace of an existing tenant, status,
//! timestamps) can be set through a body.
//!
//! The bodies are `api_types`' admin types; `wire` converts them to and from
//! the catalog's records, which are never serialised themselves.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;
use tenancy::ApiKey;

use super::wire;
use crate::error::ApiError;
use crate::extract::{JsonBody, KeyPath, TenantPath, bearer_token};
use crate::response::json_response;
use crate::state::AppState;

/// Authorises every admin request (see the module docs). Runs inside the
/// shared layers, so admin requests are shed and logged like any other.
pub(crate) async fn gate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let expected = state.inner.admin.token.as_str();
    if expected.is_empty() {
        return ApiError::RouteNotFound.into_response();
    }
    let client = request
        .extensions()
        .get::<crate::ratelimit::ClientIp>()
        .map(|c| c.0);
    let method = request.method().clone();
    // Audit trail of refusals: who, what kind of credential, which method;
    // never the credential itself nor the path (it may carry ids).
    let denied = |reason: &'static str| {
        tracing::warn!(
            audit = true,
            client.ip = ?client,
            http.method = %method,
            reason = reason,
            "admin request denied"
        );
    };
    let Some(presented) = bearer_token(request.headers()) else {
        denied("no or malformed credentials");
        return ApiError::Unauthorized.into_response();
    };
    let presented_digest = Sha256::digest(presented.as_bytes());
    let expected_digest = Sha256::digest(expected.as_bytes());
    let matches: bool = presented_digest
        .as_slice()
        .ct_eq(expected_digest.as_slice())
        .into();
    if !matches {
        // A well-formed tenant key is a valid credential of the wrong kind.
        return if ApiKey::parse(presented).is_ok() {
            denied("tenant api key");
            ApiError::Forbidden.into_response()
        } else {
            denied("wrong admin token");
            ApiError::Unauthorized.into_response()
        };
    }
    let changes = !matches!(*request.method(), http::Method::GET | http::Method::HEAD);
    let mut response = next.run(request).await;
    if changes && response.status().is_success() {
        // This process sees the change at once; other replicas within the
        // cache TTL.
        state.inner.directory.invalidate().await;
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

// ---- tenants -----------------------------------------------------------

/// `POST /admin/v1/tenants` — 201 with the tenant as stored.
#[utoipa::path(
    post,
    path = "/v1/tenants",
    tag = "admin",
    operation_id = "createTenant",
    request_body(content = api_types::NewTenant, content_type = "application/json"),
    responses(
        (status = 201, description = "Created", body = api_types::Tenant),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn create_tenant(
    State(state): State<AppState>,
    JsonBody(new, _): JsonBody<api_types::NewTenant>,
) -> Result<Response, ApiError> {
    let tenant = state
        .inner
        .admin_ops
        .create_tenant(wire::new_tenant(new))
        .await?;
    Ok(json_response(StatusCode::CREATED, &wire::tenant(tenant)))
}

/// `GET /admin/v1/tenants` — `{"tenants": [...]}`, oldest first.
#[utoipa::path(
    get,
    path = "/v1/tenants",
    tag = "admin",
    operation_id = "listTenants",
    responses(
        (status = 200, description = "Every tenant, oldest first", body = api_types::TenantList),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn list_tenants(State(state): State<AppState>) -> Result<Response, ApiError> {
    let tenants = state.inner.admin_ops.list_tenants().await?;
    let tenants = tenants.into_iter().map(wire::tenant).collect();
    Ok(json_response(
        StatusCode::OK,
        &api_types::TenantList { tenants },
    ))
}

/// `GET /admin/v1/tenants/{id}`.
#[utoipa::path(
    get,
    path = "/v1/tenants/{id}",
    tag = "admin",
    operation_id = "getTenant",
    params(
        TenantPath,
    ),
    responses(
        (status = 200, description = "The tenant", body = api_types::Tenant),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn get_tenant(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
) -> Result<Response, ApiError> {
    let tenant = state.inner.admin_ops.tenant(id).await?;
    Ok(json_response(StatusCode::OK, &wire::tenant(tenant)))
}

/// `PATCH /admin/v1/tenants/{id}` with a `TenantUpdate` — the tenant as stored.
#[utoipa::path(
    patch,
    path = "/v1/tenants/{id}",
    tag = "admin",
    operation_id = "updateTenant",
    params(
        TenantPath,
    ),
    request_body(content = api_types::TenantUpdate, content_type = "application/json"),
    responses(
        (status = 200, description = "The tenant as stored", body = api_types::Tenant),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn update_tenant(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
    JsonBody(update, _): JsonBody<api_types::TenantUpdate>,
) -> Result<Response, ApiError> {
    let update = wire::tenant_update(update);
    let tenant = state.inner.admin_ops.update_tenant(id, update).await?;
    Ok(json_response(StatusCode::OK, &wire::tenant(tenant)))
}

/// `POST /admin/v1/tenants/{id}/disable` — the tenant as stored.
#[utoipa::path(
    post,
    path = "/v1/tenants/{id}/disable",
    tag = "admin",
    operation_id = "disableTenant",
    params(
        TenantPath,
    ),
    responses(
        (status = 200, description = "The tenant as stored", body = api_types::Tenant),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn disable_tenant(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
) -> Result<Response, ApiError> {
    let tenant = state.inner.admin_ops.set_enabled(id, false).await?;
    Ok(json_response(StatusCode::OK, &wire::tenant(tenant)))
}

/// `POST /admin/v1/tenants/{id}/enable` — the tenant as stored.
#[utoipa::path(
    post,
    path = "/v1/tenants/{id}/enable",
    tag = "admin",
    operation_id = "enableTenant",
    params(
        TenantPath,
    ),
    responses(
        (status = 200, description = "The tenant as stored", body = api_types::Tenant),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn enable_tenant(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
) -> Result<Response, ApiError> {
    let tenant = state.inner.admin_ops.set_enabled(id, true).await?;
    Ok(json_response(StatusCode::OK, &wire::tenant(tenant)))
}

/// `DELETE /admin/v1/tenants/{id}` — 204; the default tenant cannot be
/// deleted (409). The tenant's pastes are unreachable at once and removed
/// from the store (see `crate::purge`); its namespace can be taken by a new
/// tenant only once they are.
#[utoipa::path(
    delete,
    path = "/v1/tenants/{id}",
    tag = "admin",
    operation_id = "deleteTenant",
    params(
        TenantPath,
    ),
    responses(
        (status = 204, description = "Deleted: its pastes are unreachable at once and purged from the store; its namespace can be reused once the purge is done (a minute or two)"),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 409, response = crate::openapi::responses::Conflict),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn delete_tenant(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
) -> Result<Response, ApiError> {
    state.inner.admin_ops.delete_tenant(id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /admin/v1/tenants/{id}/usage`.
#[utoipa::path(
    get,
    path = "/v1/tenants/{id}/usage",
    tag = "admin",
    operation_id = "getUsage",
    params(
        TenantPath,
    ),
    responses(
        (status = 200, description = "The tenant's usage", body = api_types::Usage),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn get_usage(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
) -> Result<Response, ApiError> {
    let usage = state.inner.admin_ops.usage(id).await?;
    Ok(json_response(StatusCode::OK, &wire::usage(usage)))
}

// ---- keys --------------------------------------------------------------

/// `POST /admin/v1/tenants/{id}/keys` with `{"name"}` — 201 with the key's
/// listing fields and `key`, the plaintext, shown only here.
#[utoipa::path(
    post,
    path = "/v1/tenants/{id}/keys",
    tag = "admin",
    operation_id = "createKey",
    params(
        TenantPath,
    ),
    request_body(content = api_types::CreateKeyRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Created; `key` is shown only here", body = api_types::CreatedKey),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn create_key(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
    JsonBody(request, _): JsonBody<api_types::CreateKeyRequest>,
) -> Result<Response, ApiError> {
    let created = state.inner.admin_ops.create_key(id, request.name).await?;
    Ok(json_response(
        StatusCode::CREATED,
        &wire::created_key(created),
    ))
}

/// `GET /admin/v1/tenants/{id}/keys` — `{"keys": [...]}`, never a secret.
#[utoipa::path(
    get,
    path = "/v1/tenants/{id}/keys",
    tag = "admin",
    operation_id = "listKeys",
    params(
        TenantPath,
    ),
    responses(
        (status = 200, description = "The tenant's keys, revoked ones included", body = api_types::KeyList),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn list_keys(
    State(state): State<AppState>,
    TenantPath(id): TenantPath,
) -> Result<Response, ApiError> {
    let keys = state.inner.admin_ops.list_keys(id).await?;
    let keys = keys.into_iter().map(wire::key_info).collect();
    Ok(json_response(StatusCode::OK, &api_types::KeyList { keys }))
}

/// `DELETE /admin/v1/tenants/{id}/keys/{key_id}` — revokes, 204. A key of
/// another tenant is 404.
#[utoipa::path(
    delete,
    path = "/v1/tenants/{id}/keys/{key_id}",
    tag = "admin",
    operation_id = "revokeKey",
    params(
        KeyPath,
    ),
    responses(
        (status = 204, description = "Revoked"),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
    ),
    security(
        ("adminToken" = []),
    ),
)]
pub(crate) async fn revoke_key(
    State(state): State<AppState>,
    KeyPath(tenant, key): KeyPath,
) -> Result<Response, ApiError> {
    state.inner.admin_ops.revoke_key(tenant, key).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- helpers -----------------------------------------------------------
