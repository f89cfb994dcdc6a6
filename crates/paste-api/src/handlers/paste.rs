//! `/api/paste`: create (compat), read (compat) and delete (new), and the
//! HTTP halves of the create / read / delete steps shared with
//! `/api/v1/pastes`: reading bodies, making room for answers, and turning
//! the [`PasteService`](crate::service::PasteService)'s results into
//! answers. The rules themselves are the service's.

use axum::Extension;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use paste_store::{PasteId, Payload};
use tokio::sync::OwnedSemaphorePermit;

use crate::answer::{self, PasteBody};
use crate::body::{self, ENVELOPE_ALLOWANCE};
use crate::edge::PlaceAfterBody;
use crate::error::ApiError;
use crate::extract::{
    CompatPastePath, PastePath, Tenant, bearer_token, body_rules, idempotency_key,
};
use crate::ratelimit::ClientIp;
use crate::response::{JSON_CONTENT_TYPE, json_response};
use crate::service::{NewPaste, ReadMode, TenantCtx};
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
pub(crate) async fn create_paste(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    request: Request,
) -> Result<Response, ApiError> {
    ctx.may_create()
        .map_err(|e| ApiError::from_paste(e, true))?;
    let max_size = ctx.tenant.max_size;
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    // The body is released (memory and body budget) once the payload is
    // decoded from it, before the store is waited for; the place among the
    // requests in flight is kept to the end.
    let (raw, _place) = read_body(&state, &parts, body, max_size).await?;
    let request = {
        let raw = raw;
        // Upstream's body with canonical base64url (ASCII: one UTF-16 unit
        // per byte) skips the JSON parser; anything else is parsed.
        let shortcut = body::upstream_data(&raw.bytes)
            .filter(|data| data.len() <= max_size)
            .and_then(Payload::from_canonical);
        let payload = match shortcut {
            Some(payload) => payload,
            None => {
                let data = body::parse_create(&raw.bytes)?.ok_or(ApiError::MissingData)?;
                if body::js_length(&data) > max_size {
                    return Err(ApiError::PayloadTooLarge { max_size });
                }
                Payload::from_borrowed(&data)
            }
        };
        NewPaste {
            payload,
            ttl_secs: ctx.tenant.default_ttl_secs,
            burn_after_read: false,
            idempotency: idempotency_key(headers, &raw.bytes)?,
            always_index: false,
        }
    };
    create(&state, &ctx, request).await
}

/// Reads a create body within the tenant's size limit plus the envelope,
/// the body rules of `[http]`, and the client's cap of slow bodies;
/// then, for a request marked [`PlaceAfterBody`], takes its place among the
/// requests in flight (503 when there is none), held by the returned guard
/// until the handler ends.
pub(crate) async fn read_body(
    state: &AppState,
    parts: &http::request::Parts,
    body: Body,
    max_size: usize,
) -> Result<(body::LimitedBody, InFlightPlace), ApiError> {
    let mut rules = body_rules(state, max_size.saturating_add(ENVELOPE_ALLOWANCE), max_size);
    rules.slow = parts
        .extensions
        .get::<ClientIp>()
        .map(|ClientIp(ip)| (&state.inner.body_clients, *ip));
    let raw = body::read_limited(&parts.headers, body, &rules).await?;
    let place = match parts.extensions.get::<PlaceAfterBody>() {
        Some(PlaceAfterBody) => Some(
            state
                .inner
                .in_flight
                .clone()
                .try_acquire_owned()
                .map_err(|_| ApiError::Overloaded)?,
        ),
        None => None,
    };
    Ok((raw, InFlightPlace(place)))
}

/// A create's place among the requests in flight, taken once its body has
/// arrived (none when the edge took it before the handler ran).
pub(crate) struct InFlightPlace(
    #[expect(dead_code, reason = "held, not read")] Option<OwnedSemaphorePermit>,
);

/// Creates a paste for the request's tenant and answers `201` with its id,
/// delete token and expiry (a replayed create: without the token, marked
/// `Idempotent-Replayed: true`).
pub(crate) async fn create(
    state: &AppState,
    ctx: &TenantCtx,
    request: NewPaste,
) -> Result<Response, ApiError> {
    let burn = request.burn_after_read;
    let created = state
        .inner
        .pastes
        .create(ctx, request)
        .await
        .map_err(|e| ApiError::from_paste(e, true))?;
    let body = api_types::CreatePasteResponse {
        id: created.id,
        delete_token: created.token.map(|t| t.expose().to_owned()),
        expires_at: u64::try_from(created.expires_at).ok(),
        burn_after_read: burn.then_some(true),
    };
    let mut response = json_response(StatusCode::CREATED, &body);
    if created.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
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
pub(crate) async fn get_paste(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    client: Option<Extension<ClientIp>>,
    CompatPastePath(id): CompatPastePath,
) -> Result<Response, ApiError> {
    // `HEAD` here is upstream's generic 404 (see the router): always a take.
    let client = client.as_ref().map(|Extension(ip)| ip);
    read(&state, &ctx, client, id, true, ReadMode::Take).await
}

/// How a request with `method` reads: `HEAD` only looks.
pub(crate) fn read_mode(method: &http::Method) -> ReadMode {
    if method == http::Method::HEAD {
        ReadMode::Peek
    } else {
        ReadMode::Take
    }
}

/// Reads a paste of the request's tenant and answers it, having made room
/// for the answer in the response budget (see [`answer`]): a part before
/// the store is asked (so that, with the budget spent, no more payloads are
/// loaded), the rest once the size is known, before a burn-after-read paste
/// is claimed (so that a shed read never loses it). A read that finds the
/// budget spent once it knows the size lets go of the payload while it
/// waits, then reads it again: waiting reads hold nothing.
pub(crate) async fn read(
    state: &AppState,
    ctx: &TenantCtx,
    client: Option<&ClientIp>,
    id: PasteId,
    compat: bool,
    mode: ReadMode,
) -> Result<Response, ApiError> {
    let pastes = &state.inner.pastes;
    let failed = |e| ApiError::from_paste(e, compat);
    let budget = &state.inner.response_budget;
    let client = client.map(|ClientIp(ip)| *ip);
    let mut held = budget.reserve(answer::PART, client).await?;
    let mut paste = pastes.fetch(ctx, id.clone()).await.map_err(failed)?;
    let rest = answer::held_bytes(&paste.payload).saturating_sub(answer::PART);
    match held.grow(budget, rest, false).await {
        Ok(()) => {}
        Err(answer::Refused::Spent) => {
            drop(paste);
            held.grow(budget, rest, true).await?;
            paste = pastes.fetch(ctx, id.clone()).await.map_err(failed)?;
        }
        Err(refused) => return Err(refused.into()),
    }
    pastes
        .hand_over(ctx, &id, &paste, mode)
        .await
        .map_err(failed)?;
    let mut response = Response::new(Body::new(PasteBody::new(paste.payload, held)));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
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
pub(crate) async fn delete_paste(
    State(state): State<AppState>,
    Tenant(ctx): Tenant,
    headers: HeaderMap,
    PastePath(id): PastePath,
) -> Result<Response, ApiError> {
    delete(&state, &ctx, &headers, id).await
}

/// The delete step shared by both routes: the bearer is the delete token
/// unless the request came with an API key (the service decides).
pub(crate) async fn delete(
    state: &AppState,
    ctx: &TenantCtx,
    headers: &HeaderMap,
    id: PasteId,
) -> Result<Response, ApiError> {
    state
        .inner
        .pastes
        .delete(ctx, &id, bearer_token(headers))
        .await
        .map_err(|e| ApiError::from_paste(e, false))?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
