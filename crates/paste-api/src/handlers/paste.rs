//! `/api/paste`: create (compat), read (compat) and delete (new), and the
//! create / read / delete steps shared with `/api/v1/pastes`.
//!
//! Every step addresses the store only through a [`PasteKey`] built from the
//! request's resolved tenant ([`Resolved`]), so one tenant's id never reaches
//! another tenant's pastes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use paste_store::{
    DeleteToken, DeleteTokenDigest, Namespace, PasteId, PasteKey, Payload, StoreError, StoredPaste,
    now_ms,
};
use sha2::{Digest as _, Sha256};
use tenancy::{Idempotency, PasteRecord, TenantId};
use tokio::sync::OwnedSemaphorePermit;

use crate::answer::{self, PasteBody};
use crate::body::{self, ENVELOPE_ALLOWANCE};
use crate::edge::PlaceAfterBody;
use crate::error::ApiError;
use crate::extract::bearer_token;
use crate::ratelimit::ClientIp;
use crate::resolve::Resolved;
use crate::response::{JSON_CONTENT_TYPE, json_response};
use crate::state::AppState;

/// Fresh ids tried when the store already holds the drawn one.
const ID_ATTEMPTS: usize = 5;

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

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
        (status = 401, response = crate::openapi::responses::Unauthorized),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 429, response = crate::openapi::responses::TooManyRequests),
        (status = 503, response = crate::openapi::responses::Unavailable),
    ),
    security(
        ("apiKey" = []),
        (),
    ),
)]
pub(crate) async fn create_paste(
    State(state): State<AppState>,
    Extension(resolved): Extension<Arc<Resolved>>,
    request: Request,
) -> Result<Response, ApiError> {
    resolved.may_create()?;
    let max_size = resolved.tenant.max_size;
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
            ttl_secs: resolved.tenant.default_ttl_secs,
            burn_after_read: false,
            idempotency: idempotency_key(headers, &raw.bytes)?,
            always_index: false,
        }
    };
    create(&state, &resolved, request).await
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

/// The `[http]` rules for a body of at most `max_units` decoded units.
pub(crate) fn body_rules(
    state: &AppState,
    max_units: usize,
    max_size: usize,
) -> body::BodyRules<'_> {
    let http = &state.inner.http;
    body::BodyRules {
        max_units,
        max_size,
        timeout: Duration::from_secs(http.body_timeout_secs.max(1)),
        min_rate: http.body_min_rate_bytes,
        grace: Duration::from_secs(http.body_rate_grace_secs),
        budget: &state.inner.body_budget,
        slow: None,
    }
}

/// A create's place among the requests in flight, taken once its body has
/// arrived (none when the edge took it before the handler ran).
pub(crate) struct InFlightPlace(
    #[expect(dead_code, reason = "held, not read")] Option<OwnedSemaphorePermit>,
);

/// `Idempotency-Key` with the SHA-256 of the body it came with.
pub(crate) fn idempotency_key(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Option<(String, [u8; 32])>, ApiError> {
    let mut values = headers.get_all("idempotency-key").iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| {
            values.next().is_none()
                && (1..=MAX_IDEMPOTENCY_KEY).contains(&k.len())
                && k.bytes().all(|b| b.is_ascii_graphic())
        })
        .ok_or(ApiError::InvalidIdempotencyKey)?;
    Ok(Some((key.to_owned(), Sha256::digest(body).into())))
}

/// A validated create request.
pub(crate) struct NewPaste {
    /// The payload in its stored form.
    pub(crate) payload: Payload,
    pub(crate) ttl_secs: u64,
    pub(crate) burn_after_read: bool,
    pub(crate) idempotency: Option<(String, [u8; 32])>,
    /// Index the paste in the catalog even when nothing else requires it
    /// (the v1 routes list every paste they create).
    pub(crate) always_index: bool,
}

/// Stores a paste for the resolved tenant. A paste is indexed in the catalog
/// (accounted against the quota, listable, burnable) unless it is a plain
/// compat create on the default tenant without a quota — the upstream fast
/// path, which touches no database.
pub(crate) async fn create(
    state: &AppState,
    resolved: &Resolved,
    request: NewPaste,
) -> Result<Response, ApiError> {
    let tenant = &resolved.tenant;
    // Idempotency records belong to the credential that made them: the API
    // key, or none (anonymous, e.g. through the tenant's host).
    let credential = resolved.key.as_ref().map(|owner| owner.key.clone());
    if let Some((key, digest)) = &request.idempotency {
        let (key, digest) = (key.clone(), *digest);
        let tenant_id = tenant.id.clone();
        let credential = credential.clone();
        let lease_ms = i64::try_from(idempotency_lease(state).as_millis()).unwrap_or(i64::MAX);
        let started = super::catalog_call(state, |c| async move {
            c.begin_idempotent(
                &tenant_id,
                credential.as_ref(),
                &key,
                &digest,
                now_ms_i64(),
                lease_ms,
            )
            .await
        })
        .await?;
        match started {
            Idempotency::Started => {}
            Idempotency::Completed {
                paste_id,
                expires_at,
            } => return Ok(replayed(paste_id, expires_at, request.burn_after_read)),
            Idempotency::InProgress { retry_after_ms } => {
                return Err(ApiError::IdempotencyInProgress {
                    retry_after: Duration::from_millis(u64::try_from(retry_after_ms).unwrap_or(1)),
                });
            }
            Idempotency::Mismatch => return Err(ApiError::IdempotencyMismatch),
        }
    }
    let outcome = store_new(state, resolved, &request).await;
    if let Some((key, _)) = &request.idempotency {
        let tenant_id = tenant.id.clone();
        let key = key.clone();
        let finished = match &outcome {
            Ok(created) => {
                let (id, expires_at) = (created.id.clone(), created.expires_at);
                super::catalog_call(state, |c| async move {
                    c.complete_idempotent(&tenant_id, credential.as_ref(), &key, &id, expires_at)
                        .await
                })
                .await
            }
            Err(_) => {
                super::catalog_call(state, |c| async move {
                    c.abandon_idempotent(&tenant_id, credential.as_ref(), &key)
                        .await
                })
                .await
            }
        };
        if let Err(error) = finished {
            // The paste itself is stored (or not) as reported; a retry with
            // the key once the lease has run out starts afresh.
            tracing::warn!(%error, "cannot record the idempotency outcome");
        }
    }
    let created = outcome?;
    let body = api_types::CreatePasteResponse {
        id: created.id,
        delete_token: Some(created.token.expose().to_owned()),
        expires_at: u64::try_from(created.expires_at).ok(),
        burn_after_read: request.burn_after_read.then_some(true),
    };
    Ok(json_response(StatusCode::CREATED, &body))
}

/// How long a create under an `Idempotency-Key` holds the key before a
/// retry may take it over (its record otherwise stays "in progress" when the
/// create never finishes: the server crashed, or dropped the request with
/// its connection). The longest a create runs after taking the key: the
/// store and index writes (side by side, each bounded by
/// `http.store_timeout_secs`), taking back a half-written paste (the same
/// bound), and recording the outcome (a catalog call: opening and the
/// query, each bounded the same) — four store timeouts, 40 s by default.
pub(crate) fn idempotency_lease(state: &AppState) -> Duration {
    state.store_timeout().saturating_mul(4)
}

/// The answer to a retried create: the same id, without the delete token
/// (which is stored only as a digest; a key holder can delete by key).
fn replayed(id: String, expires_at: i64, burn: bool) -> Response {
    let body = api_types::CreatePasteResponse {
        id,
        delete_token: None,
        expires_at: u64::try_from(expires_at).ok(),
        burn_after_read: burn.then_some(true),
    };
    let mut response = json_response(StatusCode::CREATED, &body);
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}

struct Created {
    id: String,
    token: DeleteToken,
    expires_at: i64,
}

fn now_ms_i64() -> i64 {
    i64::try_from(now_ms()).unwrap_or(i64::MAX)
}

async fn store_new(
    state: &AppState,
    resolved: &Resolved,
    request: &NewPaste,
) -> Result<Created, ApiError> {
    let tenant = &resolved.tenant;
    let token = DeleteToken::generate().map_err(|e| ApiError::Internal(e.to_string()))?;
    let created_at = now_ms();
    let expires_at = created_at.saturating_add(request.ttl_secs.saturating_mul(1000));
    let paste = StoredPaste {
        payload: request.payload.clone(),
        created_at,
        expires_at,
        delete_token: Some(token.digest()),
        burn_after_read: request.burn_after_read,
    };
    // Idempotent creates are indexed too: a replay checks that its paste is
    // still there.
    let index = request.always_index
        || request.burn_after_read
        || request.idempotency.is_some()
        || !tenant.is_default
        || tenant.has_quota;
    let bytes = i64::try_from(paste.payload.stored_len()).unwrap_or(i64::MAX);
    for _ in 0..ID_ATTEMPTS {
        let id =
            PasteId::generate(tenant.id_length).map_err(|e| ApiError::Internal(e.to_string()))?;
        let key = PasteKey::new(tenant.namespace.clone(), id);
        let store = with_timeout(state, state.inner.store.put_if_absent(&key, paste.clone()));
        // An indexed paste is written to the store and to the catalog (its
        // index row and quota reservation) at the same time; it is
        // acknowledged only when both hold, and whichever half succeeded
        // alone is undone.
        let (reserved, stored) = if index {
            let record = PasteRecord {
                id: key.id().to_string(),
                bytes,
                created_at: i64::try_from(created_at).unwrap_or(i64::MAX),
                expires_at: i64::try_from(expires_at).unwrap_or(i64::MAX),
                burn_after_read: request.burn_after_read,
            };
            let (reserved, stored) = tokio::join!(reserve(state, resolved, record), store);
            (Some(reserved), stored)
        } else {
            (None, store.await)
        };
        match (reserved, stored) {
            (None | Some(Ok(Reservation::Reserved)), Ok(())) => {
                return Ok(Created {
                    id: key.id().to_string(),
                    token,
                    expires_at: i64::try_from(expires_at).unwrap_or(i64::MAX),
                });
            }
            // Stored but not accounted: take the paste back.
            (Some(Ok(Reservation::IdTaken)), Ok(())) => discard(state, &key).await,
            (Some(Ok(Reservation::OverQuota)), Ok(())) => {
                discard(state, &key).await;
                return Err(ApiError::QuotaExceeded);
            }
            (Some(Err(error)), Ok(())) => {
                discard(state, &key).await;
                return Err(error);
            }
            (reservation, Err(error)) => {
                if let Some(Ok(Reservation::Reserved)) = reservation {
                    unindex(state, &resolved.tenant.id, key.id().as_str()).await;
                }
                match error {
                    StoreError::AlreadyExists => continue,
                    e => return Err(ApiError::from_store(e, true)),
                }
            }
        }
    }
    Err(ApiError::Internal(format!(
        "{ID_ATTEMPTS} id collisions in a row"
    )))
}

/// What the catalog said to an index write.
enum Reservation {
    Reserved,
    OverQuota,
    IdTaken,
}

/// Writes a paste's index row and quota reservation (group-committed with
/// other creates' writes).
async fn reserve(
    state: &AppState,
    resolved: &Resolved,
    record: PasteRecord,
) -> Result<Reservation, ApiError> {
    let written = tokio::time::timeout(
        state.store_timeout(),
        state
            .inner
            .index_writer
            .record(resolved.tenant.id.clone(), record),
    )
    .await
    .map_err(|_| ApiError::CatalogUnavailable {
        retry_after: Duration::from_secs(1),
        source: None,
    })?;
    match written {
        Ok(true) => Ok(Reservation::Reserved),
        Ok(false) => Ok(Reservation::OverQuota),
        Err(tenancy::CatalogError::Conflict(_)) => Ok(Reservation::IdTaken),
        Err(e) => Err(ApiError::from_catalog(e)),
    }
}

/// Removes a paste this request stored but may not keep (not accounted). A
/// failure leaves it to expire: it was never acknowledged.
async fn discard(state: &AppState, key: &PasteKey) {
    if let Err(error) = with_timeout(state, state.inner.store.delete(key)).await {
        tracing::warn!(%error, "cannot remove an unaccounted paste; it will expire");
    }
}

/// Gives back the index entry (and quota) of a paste that was not stored or
/// is gone. A catalog failure only delays it: expired entries are swept.
/// Gives back the index entry of paste `id` of `tenant_id` (a no-op when it
/// was never indexed).
async fn unindex(state: &AppState, tenant_id: &TenantId, id: &str) {
    let tenant_id = tenant_id.clone();
    let id = id.to_owned();
    let result = super::catalog_call(
        state,
        |c| async move { c.forget_paste(&tenant_id, &id).await },
    )
    .await;
    if let Err(error) = result {
        tracing::warn!(%error, "cannot release a paste's index entry; the sweep will");
    }
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
        (status = 401, response = crate::openapi::responses::Unauthorized),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 410, response = crate::openapi::responses::Gone),
        (status = 429, response = crate::openapi::responses::TooManyRequests),
        (status = 503, response = crate::openapi::responses::Unavailable),
    ),
    security(
        ("apiKey" = []),
        (),
    ),
)]
pub(crate) async fn get_paste(
    State(state): State<AppState>,
    Extension(resolved): Extension<Arc<Resolved>>,
    client: Option<Extension<ClientIp>>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = id
        .ok()
        .and_then(|Path(id)| PasteId::parse(&id).ok())
        .ok_or(ApiError::RouteNotFound)?;
    // `HEAD` here is upstream's generic 404 (see the router): always a take.
    let client = client.as_ref().map(|Extension(ip)| ip);
    read(&state, &resolved, client, id, true, ReadMode::Take).await
}

/// How a paste is read: `GET` hands it over; `HEAD` only looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// A `GET`: a burn-after-read paste is claimed and removed.
    Take,
    /// A `HEAD` (a link preview, a crawler): the same status and headers,
    /// but a burn-after-read paste is left for its reader.
    Peek,
}

impl ReadMode {
    pub(crate) fn of(method: &http::Method) -> Self {
        if method == http::Method::HEAD {
            ReadMode::Peek
        } else {
            ReadMode::Take
        }
    }
}

/// Reads a paste of the resolved tenant. A burn-after-read paste is handed
/// to the one reader whose claim removes it from the catalog; every other
/// reader gets the not-found answer. A [`ReadMode::Peek`] never claims: it
/// answers as a read would while the paste is unclaimed.
pub(crate) async fn read(
    state: &AppState,
    resolved: &Resolved,
    client: Option<&ClientIp>,
    id: PasteId,
    compat: bool,
    mode: ReadMode,
) -> Result<Response, ApiError> {
    let key = PasteKey::new(resolved.tenant.namespace.clone(), id);
    // Room for the answer is taken in two steps: a part before the store is
    // asked (so that, with the budget spent, no more payloads are loaded),
    // the rest once the size is known, before a burn-after-read paste is
    // claimed (so that a shed read never loses it).
    // A read that finds the budget spent once it knows the size lets go of
    // the payload while it waits, then reads it again: waiting reads hold
    // nothing.
    let budget = &state.inner.response_budget;
    let client = client.map(|ClientIp(ip)| *ip);
    let mut held = budget.reserve(answer::PART, client).await?;
    let mut paste = with_timeout(state, state.inner.store.get(&key))
        .await
        .map_err(|e| ApiError::from_store(e, compat))?;
    let rest = answer::held_bytes(&paste.payload).saturating_sub(answer::PART);
    match held.grow(budget, rest, false).await {
        Ok(()) => {}
        Err(answer::Refused::Spent) => {
            drop(paste);
            held.grow(budget, rest, true).await?;
            paste = with_timeout(state, state.inner.store.get(&key))
                .await
                .map_err(|e| ApiError::from_store(e, compat))?;
        }
        Err(refused) => return Err(refused.into()),
    }
    if paste.burn_after_read && mode == ReadMode::Peek {
        let tenant_id = resolved.tenant.id.clone();
        let id = key.id().to_string();
        let indexed =
            super::catalog_call(
                state,
                |c| async move { c.paste_record(&tenant_id, &id).await },
            )
            .await?;
        if indexed.is_none() {
            return Err(ApiError::PasteNotFound { compat });
        }
    } else if paste.burn_after_read {
        let tenant_id = resolved.tenant.id.clone();
        let id = key.id().to_string();
        let claimed =
            super::catalog_call(
                state,
                |c| async move { c.forget_paste(&tenant_id, &id).await },
            )
            .await?;
        if claimed.is_none() {
            return Err(ApiError::PasteNotFound { compat });
        }
        match with_timeout(state, state.inner.store.delete(&key)).await {
            Ok(()) | Err(StoreError::NotFound) => {}
            // Claimed, so no one else can read it; the store copy expires.
            Err(error) => tracing::warn!(%error, "cannot delete a burnt paste"),
        }
    }
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
        (status = 401, response = crate::openapi::responses::Unauthorized),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 404, response = crate::openapi::responses::NotFound),
        (status = 410, response = crate::openapi::responses::Gone),
        (status = 429, response = crate::openapi::responses::TooManyRequests),
        (status = 503, response = crate::openapi::responses::Unavailable),
    ),
    security(
        ("apiKey" = []),
        ("deleteToken" = []),
    ),
)]
pub(crate) async fn delete_paste(
    State(state): State<AppState>,
    Extension(resolved): Extension<Arc<Resolved>>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = id
        .ok()
        .and_then(|Path(id)| PasteId::parse(&id).ok())
        .ok_or(ApiError::InvalidPasteId)?;
    delete(&state, &resolved, &headers, id).await
}

/// The delete step shared by both routes.
pub(crate) async fn delete(
    state: &AppState,
    resolved: &Resolved,
    headers: &HeaderMap,
    id: PasteId,
) -> Result<Response, ApiError> {
    // With an API key the request is already the tenant's; otherwise the
    // bearer must be the paste's delete token.
    // A bearer that cannot be a delete token is malformed whatever the
    // paste: 401 before any lookup. A well-formed wrong token answers as an
    // absent paste does (no existence oracle).
    let token = match resolved.key {
        Some(_) => None,
        None => Some(
            bearer_token(headers)
                .filter(|t| DeleteToken::is_well_formed(t))
                .ok_or(ApiError::Unauthorized)?,
        ),
    };
    let not_found = ApiError::PasteNotFound { compat: false };
    let here = &resolved.tenant;
    if delete_in(state, &here.namespace, &id, token).await? == Deleted::Yes {
        unindex(state, &here.id, id.as_str()).await;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let Some(token) = token else {
        return Err(not_found);
    };
    // A delete token deletes its paste whatever tenant the request was
    // resolved to (a keyed tenant without hosts has no other way in): the
    // other tenants that index this id are tried, and the token decides.
    let id_text = id.as_str().to_owned();
    let owners =
        super::catalog_call(state, |c| async move { c.tenants_indexing(&id_text).await }).await?;
    for (tenant_id, namespace) in owners {
        if tenant_id == here.id {
            continue;
        }
        let Ok(namespace) = Namespace::parse(&namespace) else {
            continue;
        };
        if delete_in(state, &namespace, &id, Some(token)).await? == Deleted::Yes {
            unindex(state, &tenant_id, id.as_str()).await;
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
    }
    Err(not_found)
}

/// Whether [`delete_in`] deleted the paste.
#[derive(Debug, PartialEq, Eq)]
enum Deleted {
    Yes,
    /// Absent, or the token is not its token.
    No,
}

/// Deletes paste `id` of `namespace` if it is there and `token` (when
/// given; an API key's request gives none) is its delete token.
async fn delete_in(
    state: &AppState,
    namespace: &Namespace,
    id: &PasteId,
    token: Option<&str>,
) -> Result<Deleted, ApiError> {
    let key = PasteKey::new(namespace.clone(), id.clone());
    let delete_token = match with_timeout(state, state.inner.store.get(&key)).await {
        Ok(paste) => paste.delete_token,
        Err(StoreError::NotFound) => return Ok(Deleted::No),
        Err(e) => damaged_delete_token(e, token)?,
    };
    if let Some(token) = token
        && !delete_token.is_some_and(|digest| digest.matches(token))
    {
        return Ok(Deleted::No);
    }
    with_timeout(state, state.inner.store.delete(&key))
        .await
        .map_err(|e| ApiError::from_store(e, false))?;
    Ok(Deleted::Yes)
}

/// What authorises the DELETE of a paste whose stored data is damaged
/// (`get` answered [`StoreError::Damaged`]), as the delete-token digest to
/// check a bearer token against: with an API key of the tenant (`token` is
/// `None`) nothing more is needed; with a delete token, the digest in the
/// record's header, when the header checked out (the damage is past it). A
/// damaged header leaves nothing to check a token against, so that DELETE
/// answers `410 paste-damaged` (an API key can still delete it). Any other
/// store failure maps as usual.
pub(crate) fn damaged_delete_token(
    error: StoreError,
    token: Option<&str>,
) -> Result<Option<DeleteTokenDigest>, ApiError> {
    match error {
        StoreError::Damaged {
            header: Some(header),
            ..
        } => Ok(header.delete_token),
        StoreError::Damaged { header: None, .. } if token.is_none() => Ok(None),
        other => Err(ApiError::from_store(other, false)),
    }
}

/// Bounds a store call by `http.store_timeout_secs`; a late answer is an outage.
pub(crate) async fn with_timeout<T>(
    state: &AppState,
    op: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(state.store_timeout(), op)
        .await
        .unwrap_or(Err(StoreError::Unavailable {
            reason: "store operation timed out",
            retry_after: Some(Duration::from_secs(1)),
            source: None,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_one_well_formed_bearer_header_is_accepted() {
        assert_eq!(bearer_token(&auth(&["Bearer abc"])), Some("abc"));
        assert_eq!(bearer_token(&auth(&["bearer abc"])), Some("abc"));
        for bad in [
            &["Bearer "][..],
            &["Bearer"],
            &["Basic abc"],
            &["Bearer a b"],
            &["Bearer abc", "Bearer abc"],
            &[],
        ] {
            assert_eq!(bearer_token(&auth(bad)), None, "{bad:?}");
        }
        let long = format!("Bearer {}", "a".repeat(10 * 1024));
        assert_eq!(bearer_token(&auth(&[&long])), None);
    }

    #[test]
    fn idempotency_keys_are_bounded_printable_and_single() {
        let h = |vals: &[&str]| {
            let mut h = HeaderMap::new();
            for v in vals {
                h.append("idempotency-key", HeaderValue::from_str(v).unwrap());
            }
            h
        };
        assert_eq!(idempotency_key(&h(&[]), b"x").unwrap(), None);
        let (k, d) = idempotency_key(&h(&["abc-123"]), b"x").unwrap().unwrap();
        assert_eq!(k, "abc-123");
        assert_ne!(
            d,
            idempotency_key(&h(&["abc-123"]), b"y").unwrap().unwrap().1
        );
        for bad in [&["a b"][..], &["a", "b"], &[&"k".repeat(256)]] {
            assert!(idempotency_key(&h(bad), b"x").is_err(), "{bad:?}");
        }
    }
}
