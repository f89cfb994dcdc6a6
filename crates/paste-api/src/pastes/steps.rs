//! The HTTP halves of the paste steps the compat and v1 routes share:
//! decoding upstream's create body, checking `data`, making room for
//! answers, and turning the [`PasteService`](super::service::PasteService)'s
//! results into answers. The rules themselves are the service's.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use paste_store::{PasteId, Payload};

use super::service::{NewPaste, PastePage, ReadMode};
use crate::answer::{self, PasteBody};
use crate::body;
use crate::context::TenantCtx;
use crate::error::ApiError;
use crate::extract::bearer_token;
use crate::ratelimit::ClientIp;
use crate::response::{JSON_CONTENT_TYPE, json_response};
use crate::state::AppState;

/// Upstream's create body decoded to the payload: its canonical base64url
/// `data` (ASCII: one UTF-16 unit per byte) skips the JSON parser;
/// anything else is parsed. 400 without `data`, upstream's 413 past
/// `max_size`.
pub(crate) fn compat_payload(raw: &[u8], max_size: usize) -> Result<Payload, ApiError> {
    let shortcut = body::upstream_data(raw)
        .filter(|data| data.len() <= max_size)
        .and_then(Payload::from_canonical);
    if let Some(payload) = shortcut {
        return Ok(payload);
    }
    let data = body::parse_create(raw)?.ok_or(ApiError::MissingData)?;
    if body::js_length(&data) > max_size {
        return Err(ApiError::PayloadTooLarge { max_size });
    }
    Ok(Payload::from_borrowed(&data))
}

/// Default and largest page of `GET /api/v1/pastes`.
const PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

/// The page size a listing asked for, with its `after` checked.
pub(crate) fn page_size(after: Option<&str>, limit: Option<u32>) -> Result<u32, ApiError> {
    if after.is_some_and(|a| PasteId::parse(a).is_err()) {
        return Err(ApiError::InvalidPasteId);
    }
    let limit = limit.unwrap_or(PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidField(format!(
            "limit must be between 1 and {MAX_PAGE}"
        )));
    }
    Ok(limit)
}

/// A page of the catalog's paste index as the wire lists it.
pub(crate) fn paste_list(page: PastePage) -> api_types::PasteList {
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
    api_types::PasteList {
        pastes,
        next: page.next,
    }
}

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
