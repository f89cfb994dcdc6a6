//! The paste family's routes: upstream's compat routes on `/api/paste`
//! and the tenant-aware `/api/v1/pastes`.
//!
//! | route | method | operation | who |
//! |---|---|---|---|
//! | `/api/paste` | `POST` | `createPasteCompat` | API key, or anonymous where the tenant allows it |
//! | `/api/paste/{id}` | `GET` | `getPasteCompat` | anyone with the id |
//! | `/api/paste/{id}` | `DELETE` | `deletePasteCompat` | API key of the tenant, or the paste's delete token |
//! | `/api/v1/pastes` | `POST` | `createPaste` | API key, or anonymous where the tenant allows it |
//! | `/api/v1/pastes` | `GET` | `listPastes` | API key: the tenant's live pastes, a page at a time |
//! | `/api/v1/pastes/{id}` | `GET` | `getPaste` | anyone with the id (burn-after-read: the first reader) |
//! | `/api/v1/pastes/{id}` | `DELETE` | `deletePaste` | API key of the tenant, or the paste's delete token |
//!
//! v1 creates take `{"data", "ttl"?, "burnAfterRead"?}` as
//! `application/json` (unknown fields → 422) and honour `Idempotency-Key`.
//! Each handler is named after its operation; the HTTP steps the routes
//! share are in `steps.rs`, the rules in `service/`.

use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use paste_store::Payload;
use serde::Deserialize;

use super::service::{NewPaste, ReadMode};
use super::steps;
use crate::body;
use crate::error::ApiError;
use crate::extract::{
    CompatPastePath, Creator, JsonBody, PastePath, Tenant, idempotency_key, read_within,
};
use crate::ratelimit::ClientIp;
use crate::response::json_response;
use crate::state::AppState;

/// `POST /api/paste` — stores `data` under a fresh id, never overwriting.
#[utoipa::path(
    post,
    path = "/api/paste",
    tag = "compat",
    operation_id = "createPasteCompat",
    request_body(content = crate::openapi::schemas::CompatCreateRequest, content_type = "application/json", description = "Upstream's body; any Content-Type is read as JSON"),
    responses(
        (status = 201, description = "Created", body = api_types::CreatePasteResponse),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
    ),
    security(
        ("apiKey" = []),
        (),
    ),
)]
pub(crate) async fn create_paste_compat(
    State(state): State<AppState>,
    Creator(ctx): Creator,
    request: Request,
) -> Result<Response, ApiError> {
    let max_size = ctx.tenant.max_size;
    let (parts, body) = request.into_parts();
    // The body is released (memory and body budget) once the payload is
    // decoded from it, before the store is waited for; the place among the
    // requests in flight is kept to the end.
    let (raw, _place) = read_within(&state, &parts, body, max_size).await?;
    let new = NewPaste {
        payload: steps::compat_payload(&raw.bytes, max_size)?,
        // Upstream's create names no lifetime: the tenant's default.
        ttl_secs: ctx.ttl_secs(None, 0)?,
        burn_after_read: false,
        idempotency: idempotency_key(&parts.headers, &raw.bytes)?,
        always_index: false,
    };
    drop(raw);
    steps::create(&state, &ctx, new).await
}

/// `GET /api/paste/{id}` — upstream's read: ids outside `[A-Za-z0-9]{6,16}`
/// get the generic route 404, absent and expired ones the paste 404.
#[utoipa::path(
    get,
    path = "/api/paste/{id}",
    tag = "compat",
    operation_id = "getPasteCompat",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The paste id (6-16 characters of A-Z, a-z, 0-9)"),
    ),
    responses(
        (status = 200, description = "The paste (`Cache-Control: private, no-store`)", body = api_types::GetPasteResponse),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 410, response = crate::openapi::responses::Gone),
    ),
    security(
        ("apiKey" = []),
        (),
    ),
)]
pub(crate) async fn get_paste_compat(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    client: Option<Extension<ClientIp>>,
    CompatPastePath(id): CompatPastePath,
) -> Result<Response, ApiError> {
    // `HEAD` here is upstream's generic 404 (see the routes): always a take.
    let client = client.as_ref().map(|Extension(ip)| ip);
    steps::read(&state, &ctx, client, id, true, ReadMode::Take).await
}

/// `DELETE /api/paste/{id}` — 204. Authorised by the paste's delete token
/// (`Authorization: Bearer <deleteToken>`) or by an API key of the paste's
/// tenant. A wrong token answers exactly as an absent paste does; a bearer
/// that is neither an API key nor shaped like a delete token is 401.
#[utoipa::path(
    delete,
    path = "/api/paste/{id}",
    tag = "compat",
    operation_id = "deletePasteCompat",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The paste id (6-16 characters of A-Z, a-z, 0-9)"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 410, response = crate::openapi::responses::Gone),
    ),
    security(
        ("apiKey" = []),
        ("deleteToken" = []),
    ),
)]
pub(crate) async fn delete_paste_compat(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    headers: HeaderMap,
    PastePath(id): PastePath,
) -> Result<Response, ApiError> {
    steps::delete(&state, &ctx, &headers, id).await
}

/// `POST /api/v1/pastes` — 201 `{id, deleteToken, expiresAt, burnAfterRead?}`.
#[utoipa::path(
    post,
    path = "/api/v1/pastes",
    tag = "pastes",
    operation_id = "createPaste",
    params(
        ("Idempotency-Key" = Option<String>, Header, pattern = "^[\\x21-\\x7e]{1,255}$", description = "1-255 printable ASCII characters, the credential's own (an API key's, or no key's): the same key and body from it give the same paste once (replayed: `Idempotent-Replayed: true`, no delete token); another body: 422; still running: 409 with Retry-After (until a retry may take the key over)"),
    ),
    request_body(content = api_types::CreatePasteRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Created (or replayed for the same Idempotency-Key)", body = api_types::CreatePasteResponse, headers(("Idempotent-Replayed" = String, description = "`true` when this answers an earlier request with the same Idempotency-Key"))),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(
        ("apiKey" = []),
        (),
    ),
)]
pub(crate) async fn create_paste(
    State(state): State<AppState>,
    Creator(ctx): Creator,
    headers: HeaderMap,
    JsonBody(request, admitted): JsonBody<api_types::CreatePasteRequest>,
) -> Result<Response, ApiError> {
    body::check_data("data", &request.data, admitted.max_data)?;
    let new = NewPaste {
        ttl_secs: ctx.ttl_secs(request.ttl, 0)?,
        burn_after_read: request.burn_after_read.unwrap_or(false),
        idempotency: admitted.idempotency(&headers)?,
        always_index: true,
        payload: Payload::from_text(request.data),
    };
    steps::create(&state, &ctx, new).await
}

/// Query of `GET /api/v1/pastes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    after: Option<String>,
    limit: Option<u32>,
}

/// `GET /api/v1/pastes?after=&limit=` — the key's tenant's live pastes, by id.
#[utoipa::path(
    get,
    path = "/api/v1/pastes",
    tag = "pastes",
    operation_id = "listPastes",
    params(
        ("after" = Option<String>, Query, pattern = "^[A-Za-z0-9]{6,16}$", description = "Return pastes after this id (the `next` of the previous page)"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Page size (default 100)"),
    ),
    responses(
        (status = 200, description = "A page of the tenant's live pastes, by id", body = api_types::PasteList),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(
        ("apiKey" = []),
    ),
)]
pub(crate) async fn list_pastes(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    ctx.require_key()?;
    let Query(query) = query.map_err(|_| {
        ApiError::InvalidField("query: expected after=<paste id> and limit=1..1000".into())
    })?;
    let limit = steps::page_size(query.after.as_deref(), query.limit)?;
    let page = state
        .inner
        .pastes
        .list(&ctx, query.after.as_deref(), limit)
        .await
        .map_err(|e| ApiError::from_paste(e, false))?;
    Ok(json_response(StatusCode::OK, &steps::paste_list(page)))
}

/// `GET /api/v1/pastes/{id}` — `{"data"}`.
#[utoipa::path(
    get,
    path = "/api/v1/pastes/{id}",
    tag = "pastes",
    operation_id = "getPaste",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The paste id (6-16 characters of A-Z, a-z, 0-9)"),
    ),
    responses(
        (status = 200, description = "The paste (`Cache-Control: private, no-store`); a burn-after-read paste goes to its first reader only", body = api_types::GetPasteResponse),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 410, response = crate::openapi::responses::Gone),
    ),
    security(
        ("apiKey" = []),
        (),
    ),
)]
pub(crate) async fn get_paste(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    client: Option<Extension<ClientIp>>,
    method: http::Method,
    PastePath(id): PastePath,
) -> Result<Response, ApiError> {
    // axum answers `HEAD` with this handler (and drops the body): a `HEAD`
    // must not burn a burn-after-read paste.
    let mode = steps::read_mode(&method);
    let client = client.as_ref().map(|Extension(ip)| ip);
    steps::read(&state, &ctx, client, id, false, mode).await
}

/// `DELETE /api/v1/pastes/{id}` — 204.
#[utoipa::path(
    delete,
    path = "/api/v1/pastes/{id}",
    tag = "pastes",
    operation_id = "deletePaste",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The paste id (6-16 characters of A-Z, a-z, 0-9)"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 410, response = crate::openapi::responses::Gone),
    ),
    security(
        ("apiKey" = []),
        ("deleteToken" = []),
    ),
)]
pub(crate) async fn delete_paste(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    headers: HeaderMap,
    PastePath(id): PastePath,
) -> Result<Response, ApiError> {
    steps::delete(&state, &ctx, &headers, id).await
}
