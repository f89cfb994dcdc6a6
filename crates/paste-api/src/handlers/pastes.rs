//! `/api/v1/pastes`: the tenant-aware paste API (new routes, strict bodies).
//!
//! | route | method | who |
//! |---|---|---|
//! | `/api/v1/pastes` | `POST` | API key, or anonymous where the tenant allows it |
//! | `/api/v1/pastes` | `GET` | API key: the tenant's live pastes, a page at a time |
//! | `/api/v1/pastes/{id}` | `GET` | anyone with the id (burn-after-read: the first reader) |
//! | `/api/v1/pastes/{id}` | `DELETE` | API key of the tenant, or the paste's delete token |
//!
//! Creates take `{"data", "ttl"?, "burnAfterRead"?}` as `application/json`
//! (unknown fields → 422) and honour `Idempotency-Key`.

use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use paste_store::{PasteId, Payload};
use serde::Deserialize;

use crate::body;
use crate::error::ApiError;
use crate::extract::{PastePath, Tenant, idempotency_key, is_json, parse_object};
use crate::handlers::paste;
use crate::ratelimit::ClientIp;
use crate::response::json_response;
use crate::service::NewPaste;
use crate::state::AppState;

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
pub(crate) async fn create(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    request: Request,
) -> Result<Response, ApiError> {
    ctx.may_create()
        .map_err(|e| ApiError::from_paste(e, false))?;
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let tenant = &ctx.tenant;
    let too_large = ApiError::DataTooLarge {
        max_size: tenant.max_size,
    };
    let (raw, _place) = paste::read_body(&state, &parts, body, tenant.max_size)
        .await
        .map_err(|e| match e {
            ApiError::PayloadTooLarge { .. } => ApiError::DataTooLarge {
                max_size: tenant.max_size,
            },
            other => other,
        })?;
    let request: api_types::CreatePasteRequest = parse_object(&raw.bytes)?;
    if request.data.is_empty() {
        return Err(ApiError::InvalidField("\"data\" must not be empty".into()));
    }
    if body::js_length(&request.data) > tenant.max_size {
        return Err(too_large);
    }
    let ttl_secs = match request.ttl {
        None => tenant.default_ttl_secs,
        Some(ttl) if (1..=tenant.max_ttl_secs).contains(&ttl) => ttl,
        Some(_) => {
            return Err(ApiError::InvalidField(format!(
                "\"ttl\" must be between 1 and {} seconds for this tenant",
                tenant.max_ttl_secs
            )));
        }
    };
    let new = NewPaste {
        payload: Payload::from_text(request.data),
        ttl_secs,
        burn_after_read: request.burn_after_read.unwrap_or(false),
        idempotency: idempotency_key(headers, &raw.bytes)?,
        always_index: true,
    };
    // Released (memory and body budget) before the store is waited for.
    drop(raw);
    paste::create(&state, &ctx, new).await
}

/// Query of `GET /api/v1/pastes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    after: Option<String>,
    limit: Option<u32>,
}

/// Default and largest page size.
const PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

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
pub(crate) async fn list(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    ctx.require_key()
        .map_err(|e| ApiError::from_paste(e, false))?;
    let Query(query) = query.map_err(|_| {
        ApiError::InvalidField("query: expected after=<paste id> and limit=1..1000".into())
    })?;
    if query
        .after
        .as_deref()
        .is_some_and(|a| PasteId::parse(a).is_err())
    {
        return Err(ApiError::InvalidPasteId);
    }
    let limit = query.limit.unwrap_or(PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidField(format!(
            "limit must be between 1 and {MAX_PAGE}"
        )));
    }
    let page = state
        .inner
        .pastes
        .list(&ctx, query.after.as_deref(), limit)
        .await
        .map_err(|e| ApiError::from_paste(e, false))?;
    let pastes = page
        .pastes
        .into_iter()
        .map(|p| api_types::PasteSummary {
            id: p.id,
            bytes: p.bytes,
            created_at: p.created_at,
            expires_at: p.expires_at,
            burn_after_read: p.burn_after_read,
        })
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &api_types::PasteList {
            pastes,
            next: page.next,
        },
    ))
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
pub(crate) async fn get(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    client: Option<Extension<ClientIp>>,
    method: http::Method,
    PastePath(id): PastePath,
) -> Result<Response, ApiError> {
    // axum answers `HEAD` with this handler (and drops the body): a `HEAD`
    // must not burn a burn-after-read paste.
    let mode = paste::read_mode(&method);
    let client = client.as_ref().map(|Extension(ip)| ip);
    paste::read(&state, &ctx, client, id, false, mode).await
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
pub(crate) async fn delete(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    headers: HeaderMap,
    PastePath(id): PastePath,
) -> Result<Response, ApiError> {
    paste::delete(&state, &ctx, &headers, id).await
}
