//! `/api/v1/reviews`: live shared reviews (the event stream is in
//! `review_events.rs`).
//!
//! | route | method | who |
//! |---|---|---|
//! | `/api/v1/reviews` | `POST` | API key, or anonymous where the tenant allows it |
//! | `/api/v1/reviews/{id}` | `GET` | owner, reviewer |
//! | `/api/v1/reviews/{id}` | `DELETE` | owner |
//! | `/api/v1/reviews/{id}/versions` | `POST` | owner |
//! | `/api/v1/reviews/{id}/versions/{n}` | `GET` | owner, reviewer |
//! | `/api/v1/reviews/{id}/links` | `POST` | owner |
//! | `/api/v1/reviews/{id}/links/{link}` | `DELETE` | owner |
//! | `/api/v1/reviews/{id}/comments` | `PUT`, `DELETE` | owner, reviewer (own set) |
//! | `/api/v1/reviews/{id}/decision` | `POST` | owner |
//!
//! Tokens travel only in `Authorization: Bearer` ([`ReviewCaller`]). Bodies
//! are JSON objects with no unknown fields; `data` fields are ciphertext
//! within the tenant's paste size limit.

use api_types::reviews as wire;
use api_types::rules;
use axum::Extension;
use axum::body::Body;
use axum::extract::{RawPathParams, RawQuery, Request, State};
use axum::response::{IntoResponse as _, Response};
use http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::answer::{self, PasteBody, Reserved, ResponseBudget};
use crate::body;
use crate::error::ApiError;
use crate::extract::{ReviewCaller, Tenant, is_json, parse_object};
use crate::handlers::paste::{InFlightPlace, read_body};
use crate::ratelimit::ClientIp;
use crate::response::{JSON_CONTENT_TYPE, json_response};
use crate::reviews::{Admit, Decision, NewReviewInput, ReviewRead};
use crate::state::AppState;

/// `POST /api/v1/reviews` — 201 `{id, ownerToken, version, expiresAt}`.
#[utoipa::path(
    post,
    path = "/api/v1/reviews",
    tag = "reviews",
    operation_id = "createReview",
    request_body(content = api_types::reviews::CreateReviewRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Created; the owner token is shown only here", body = api_types::reviews::CreateReviewResponse),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 408, response = crate::openapi::responses::RequestTimeout),
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
    let tenant = &ctx.tenant;
    if ctx.key.is_none() && !tenant.allow_anonymous {
        return Err(ApiError::Unauthorized);
    }
    let (request, _place): (wire::CreateReviewRequest, _) =
        read_json(&state, request, tenant.max_size).await?;
    check_data("version.data", &request.version.data, tenant.max_size)?;
    check_digest(&request.version.digest)?;
    let ttl_secs = match request.ttl {
        None => tenant.default_ttl_secs.max(1),
        Some(ttl) if (1..=tenant.max_ttl_secs).contains(&ttl) => ttl,
        Some(_) => {
            return Err(ApiError::InvalidField(format!(
                "\"ttl\" must be between 1 and {} seconds for this tenant",
                tenant.max_ttl_secs
            )));
        }
    };
    let created = state
        .inner
        .reviews
        .create(
            &ctx,
            NewReviewInput {
                data: request.version.data,
                digest: request.version.digest,
                ttl_secs,
            },
        )
        .await
        .map_err(ApiError::from_review)?;
    Ok(json_response(
        StatusCode::CREATED,
        &wire::CreateReviewResponse {
            id: created.id,
            owner_token: created.owner_token,
            version: 1,
            expires_at: unsigned(created.expires_at),
        },
    ))
}

/// `GET /api/v1/reviews/{id}` — the review: versions, every comment set,
/// links (owner only), decision.
#[utoipa::path(
    get,
    path = "/api/v1/reviews/{id}",
    tag = "reviews",
    operation_id = "getReview",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    responses(
        (status = 200, description = "The review as the token's holder sees it", body = api_types::reviews::ReviewView),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 410, response = crate::openapi::responses::Gone),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn get(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    client: Option<Extension<ClientIp>>,
) -> Result<Response, ApiError> {
    let budget = &state.inner.response_budget;
    let mut held = budget.reserve(answer::PART, client_of(client)).await?;
    let read = state
        .inner
        .reviews
        .read(
            &caller,
            &mut BudgetAdmit {
                budget,
                held: &mut held,
            },
        )
        .await?;
    Ok(held_json(budget, held, &view(&caller, read)).await)
}

/// `DELETE /api/v1/reviews/{id}` — 204: the review and everything of it is
/// gone; its streams are told `closed`.
#[utoipa::path(
    delete,
    path = "/api/v1/reviews/{id}",
    tag = "reviews",
    operation_id = "deleteReview",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    responses(
        (status = 204, description = "Deleted, with everything stored of it"),
        (status = 202, description = "Deleted; some stored parts could not be removed yet (the store was unavailable) and are removed in the background", body = api_types::reviews::ReviewDeleted),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 403, response = crate::openapi::responses::Forbidden),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn delete(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
) -> Result<Response, ApiError> {
    let pending = state
        .inner
        .reviews
        .delete(&caller)
        .await
        .map_err(ApiError::from_review)?;
    if pending == 0 {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    Ok(json_response(
        StatusCode::ACCEPTED,
        &wire::ReviewDeleted {
            deleted: true,
            pending_blobs: pending as u64,
            message: format!(
                "the review is deleted and can no longer be read; {pending} of its stored parts could not be removed now (storage is unavailable): the server removes them in the background, and they expire with the review at the latest"
            ),
        },
    ))
}

/// `GET /api/v1/reviews/{id}/versions/{n}` — one version's ciphertext.
#[utoipa::path(
    get,
    path = "/api/v1/reviews/{id}/versions/{n}",
    tag = "reviews",
    operation_id = "getReviewVersion",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id"),
        ("n" = u64, Path, minimum = 1, description = "The version number"),
    ),
    responses(
        (status = 200, description = "The version", body = api_types::reviews::VersionBody),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 410, response = crate::openapi::responses::Gone),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn version(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    client: Option<Extension<ClientIp>>,
    params: RawPathParams,
) -> Result<Response, ApiError> {
    let n = path_param(&params, "n")
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n >= 1)
        .ok_or(ApiError::InvalidId {
            what: "version number",
        })?;
    let budget = &state.inner.response_budget;
    let mut held = budget.reserve(answer::PART, client_of(client)).await?;
    let (row, data) = state
        .inner
        .reviews
        .version(
            &caller,
            n,
            &mut BudgetAdmit {
                budget,
                held: &mut held,
            },
        )
        .await?;
    let body = wire::VersionBody {
        n: unsigned(row.n),
        digest: row.digest,
        data,
        created_at: unsigned(row.created_at),
    };
    Ok(held_json(budget, held, &body).await)
}

/// The client a request is counted against in the response budget.
fn client_of(client: Option<Extension<ClientIp>>) -> Option<std::net::IpAddr> {
    client.map(|Extension(ClientIp(ip))| ip)
}

/// Makes room in the response budget for an answer before its blobs are
/// read (see `answer`): a client that asks and never reads holds its share,
/// and no more, and with the budget spent no more blobs are loaded.
struct BudgetAdmit<'a> {
    budget: &'a ResponseBudget,
    held: &'a mut Reserved,
}

impl Admit<ApiError> for BudgetAdmit<'_> {
    async fn admit(&mut self, bytes: usize) -> Result<(), ApiError> {
        // The blobs' text and the answer's JSON are both held while it is
        // built; the JSON alone afterwards (`held_json`).
        self.held
            .grow_to(self.budget, bytes.saturating_mul(2), true)
            .await
            .map_err(ApiError::from)
    }
}

/// A `200` JSON answer that holds its share of the response budget until
/// the client has taken it (or the connection is dropped).
async fn held_json<T: serde::Serialize>(
    budget: &ResponseBudget,
    mut held: Reserved,
    value: &T,
) -> Response {
    // Serialising the API's own types cannot fail.
    let json = serde_json::to_vec(value).unwrap_or_default();
    // What is held now is the JSON alone. The estimate can fall short when
    // the text needs escaping; the answer is built by then, so a budget
    // with no more room does not refuse it.
    held.shrink_to(json.len());
    let _ = held.grow_to(budget, json.len(), false).await;
    let mut response = Response::new(Body::new(PasteBody::whole(json, held)));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    response
}

/// `POST /api/v1/reviews/{id}/versions` — 201 `{n}`; the latest version's
/// plan again: 200 `{n, unchanged: true}`; a parent that is not the latest: 409.
#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/versions",
    tag = "reviews",
    operation_id = "pushReviewVersion",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    request_body(content = api_types::reviews::PushVersionRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "A new version", body = api_types::reviews::PushVersionResponse),
        (status = 200, description = "The plan equals the latest version's: nothing stored", body = api_types::reviews::PushVersionResponse),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn push(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    request: Request,
) -> Result<Response, ApiError> {
    let max = max_size(&state, &caller);
    let (body, _place): (wire::PushVersionRequest, _) = read_json(&state, request, max).await?;
    check_data("data", &body.data, max)?;
    check_digest(&body.digest)?;
    let parent = signed(body.parent, "parent")?;
    let pushed = state
        .inner
        .reviews
        .push(&caller, body.data, body.digest, parent)
        .await
        .map_err(ApiError::from_review)?;
    let status = if pushed.unchanged {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(json_response(
        status,
        &wire::PushVersionResponse {
            n: unsigned(pushed.n),
            unchanged: pushed.unchanged.then_some(true),
        },
    ))
}

/// `POST /api/v1/reviews/{id}/links` — 201 `{id, token}`: a reviewer link.
#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/links",
    tag = "reviews",
    operation_id = "createReviewLink",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    request_body(content = api_types::reviews::CreateLinkRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "A reviewer link; its token is shown only here", body = api_types::reviews::CreatedLink),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn add_link(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    request: Request,
) -> Result<Response, ApiError> {
    let (_empty, _place): (wire::CreateLinkRequest, _) =
        read_json(&state, request, SMALL_BODY).await?;
    let (id, token) = state
        .inner
        .reviews
        .add_link(&caller)
        .await
        .map_err(ApiError::from_review)?;
    Ok(json_response(
        StatusCode::CREATED,
        &wire::CreatedLink { id, token },
    ))
}

/// `DELETE /api/v1/reviews/{id}/links/{link}` — 204: the link's token stops
/// answering at once and its open streams get `revoked`.
#[utoipa::path(
    delete,
    path = "/api/v1/reviews/{id}/links/{link}",
    tag = "reviews",
    operation_id = "revokeReviewLink",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id"),
        ("link" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The link id"),
    ),
    responses(
        (status = 204, description = "Revoked (also when it already was)"),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 403, response = crate::openapi::responses::Forbidden),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn revoke_link(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    params: RawPathParams,
) -> Result<Response, ApiError> {
    let link = path_param(&params, "link")
        .filter(|l| paste_store::PasteId::parse(l).is_ok())
        .ok_or(ApiError::InvalidId { what: "link id" })?
        .to_owned();
    state
        .inner
        .reviews
        .revoke(&caller, &link)
        .await
        .map_err(ApiError::from_review)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PUT /api/v1/reviews/{id}/comments` — 200 `{writer, updatedAt}`: the
/// caller's comment set, replacing its previous one.
#[utoipa::path(
    put,
    path = "/api/v1/reviews/{id}/comments",
    tag = "reviews",
    operation_id = "putReviewComments",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    request_body(content = api_types::reviews::PutCommentsRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Stored", body = api_types::reviews::PutCommentsResponse),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn put_comments(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    request: Request,
) -> Result<Response, ApiError> {
    let max = max_size(&state, &caller);
    let (body, _place): (wire::PutCommentsRequest, _) = read_json(&state, request, max).await?;
    // Stored as normalised: "Alice " is "Alice".
    let Some(name) = rules::normalize_review_name(&body.name) else {
        return Err(ApiError::InvalidField(format!(
            "\"name\" must be 1-{} characters, not only spaces, without control characters or invisible formatting characters (zero-width spaces, direction overrides)",
            rules::REVIEW_NAME_MAX_CHARS
        )));
    };
    check_data("data", &body.data, max)?;
    let version = signed(body.version, "version")?;
    let base = body
        .base
        .map(|b| {
            i64::try_from(b).map_err(|_| {
                ApiError::InvalidField(
                    "\"base\" must be the revision (seq) of your comment set as you read it, or 0 for none"
                        .into(),
                )
            })
        })
        .transpose()?;
    let stored = state
        .inner
        .reviews
        .put_comments(&caller, name, version, base, body.data)
        .await
        .map_err(ApiError::from_review)?;
    Ok(json_response(
        StatusCode::OK,
        &wire::PutCommentsResponse {
            writer: stored.writer,
            updated_at: unsigned(stored.updated_at),
            seq: unsigned(stored.seq),
        },
    ))
}

/// `DELETE /api/v1/reviews/{id}/comments` — 204: the caller's own comment
/// set is withdrawn (its name stays bound).
#[utoipa::path(
    delete,
    path = "/api/v1/reviews/{id}/comments",
    tag = "reviews",
    operation_id = "deleteReviewComments",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id"),
        ("base" = Option<u64>, Query, minimum = 0, maximum = 9223372036854775807_u64, description = "Compare-and-set: withdraw only when the caller's set is still this revision (`seq`; 0: none), else 409 comments-changed"),
    ),
    responses(
        (status = 204, description = "Withdrawn (also when there was none)"),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn delete_comments(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let base = base_of(query.as_deref())?;
    state
        .inner
        .reviews
        .delete_comments(&caller, base)
        .await
        .map_err(ApiError::from_review)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The `base=<revision>` of a withdrawal's query, if any.
fn base_of(query: Option<&str>) -> Result<Option<i64>, ApiError> {
    let bad = || {
        ApiError::InvalidField(
            "query: expected nothing or base=<the revision (seq) of your comment set, 0 for none>"
                .into(),
        )
    };
    let mut base = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("base", value)) if base.is_none() => {
                let value: u64 = value.parse().map_err(|_| bad())?;
                base = Some(i64::try_from(value).map_err(|_| bad())?);
            }
            _ => return Err(bad()),
        }
    }
    Ok(base)
}

/// `POST /api/v1/reviews/{id}/decision` — 200 `{decision, decidedAt}`; a
/// second decision: 409.
#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/decision",
    tag = "reviews",
    operation_id = "decideReview",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    request_body(content = api_types::reviews::DecisionRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Decided", body = api_types::reviews::DecisionInfo),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn decide(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    request: Request,
) -> Result<Response, ApiError> {
    let max = max_size(&state, &caller);
    let (body, _place): (wire::DecisionRequest, _) = read_json(&state, request, max).await?;
    let decision = match body.decision.as_str() {
        "approved" => Decision::Approved,
        "changes_requested" => Decision::ChangesRequested,
        _ => {
            return Err(ApiError::InvalidField(
                "\"decision\" must be \"approved\" or \"changes_requested\"".into(),
            ));
        }
    };
    if let Some(data) = &body.data {
        check_data("data", data, max)?;
    }
    let data = body.data.clone();
    let decided_at = state
        .inner
        .reviews
        .decide(&caller, decision, body.data)
        .await
        .map_err(ApiError::from_review)?;
    Ok(json_response(
        StatusCode::OK,
        &wire::DecisionInfo {
            decision: body.decision,
            data,
            decided_at: unsigned(decided_at),
        },
    ))
}

/// The largest body of a route without ciphertext.
const SMALL_BODY: usize = 1024;

/// Reads a JSON object body of at most `max` data bytes (plus the
/// envelope), taking the request's place in flight once it has arrived.
async fn read_json<T: DeserializeOwned>(
    state: &AppState,
    request: Request,
    max: usize,
) -> Result<(T, InFlightPlace), ApiError> {
    let (parts, body) = request.into_parts();
    if !is_json(&parts.headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let (raw, place) = read_body(state, &parts, body, max)
        .await
        .map_err(|e| match e {
            ApiError::PayloadTooLarge { .. } => ApiError::DataTooLarge { max_size: max },
            other => other,
        })?;
    let value = parse_object(&raw.bytes)?;
    Ok((value, place))
}

/// The paste size limit of the review's tenant.
fn max_size(state: &AppState, caller: &crate::reviews::Caller) -> usize {
    state
        .inner
        .directory
        .by_id(&caller.principal.review.tenant)
        .map_or(0, |t| t.max_size)
}

fn check_data(field: &str, data: &str, max: usize) -> Result<(), ApiError> {
    if data.is_empty() {
        return Err(ApiError::InvalidField(format!(
            "\"{field}\" must not be empty"
        )));
    }
    if body::js_length(data) > max {
        return Err(ApiError::DataTooLarge { max_size: max });
    }
    Ok(())
}

fn check_digest(digest: &str) -> Result<(), ApiError> {
    if rules::is_review_digest(digest) {
        Ok(())
    } else {
        Err(ApiError::InvalidField(
            "\"digest\" must be 43 base64url characters (an HMAC-SHA256 of the plan)".into(),
        ))
    }
}

fn signed(n: u64, field: &str) -> Result<i64, ApiError> {
    i64::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
        ApiError::InvalidField(format!("\"{field}\" must be a version number (1 or more)"))
    })
}

pub(crate) fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(crate) fn path_param<'a>(params: &'a RawPathParams, name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The wire view of a review for `caller`.
fn view(caller: &crate::reviews::Caller, read: ReviewRead) -> wire::ReviewView {
    let ReviewRead {
        snapshot,
        comments,
        feedback,
    } = read;
    let principal = &caller.principal;
    let owner = principal.role == tenancy::Role::Owner;
    // The name bound now (the extractor's may predate this request's read).
    let bound = snapshot
        .comments
        .iter()
        .find(|c| c.writer == principal.link)
        .map(|c| c.name.clone())
        .or_else(|| principal.name.clone());
    wire::ReviewView {
        id: snapshot.head.id.clone(),
        state: snapshot.head.state.as_str().to_owned(),
        you: wire::You {
            role: principal.role.as_str().to_owned(),
            link: principal.link.clone(),
            name: bound,
        },
        latest: unsigned(snapshot.head.latest),
        versions: snapshot
            .versions
            .iter()
            .map(|v| wire::VersionInfo {
                n: unsigned(v.n),
                digest: v.digest.clone(),
                created_at: unsigned(v.created_at),
                size: unsigned(v.blob.bytes),
            })
            .collect(),
        comments: snapshot
            .comments
            .iter()
            .zip(comments)
            .map(|(row, data)| wire::CommentSet {
                writer: row.writer.clone(),
                name: row.name.clone(),
                version: unsigned(row.version),
                data,
                updated_at: unsigned(row.updated_at),
                seq: unsigned(row.seq),
            })
            .collect(),
        links: owner.then(|| {
            snapshot
                .links
                .iter()
                .map(|l| wire::LinkInfo {
                    id: l.id.clone(),
                    name: l.name.clone(),
                    created_at: unsigned(l.created_at),
                })
                .collect()
        }),
        decision: snapshot.decision.as_ref().map(|d| wire::DecisionInfo {
            decision: d.state.as_str().to_owned(),
            data: feedback,
            decided_at: unsigned(d.decided_at),
        }),
        seq: unsigned(snapshot.head.seq),
        expires_at: unsigned(snapshot.head.expires_at),
    }
}
