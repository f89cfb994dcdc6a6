//! The review family's routes on `/api/v1/reviews` (the event stream is
//! in `events.rs`).
//!
//! | route | method | operation | who |
//! |---|---|---|---|
//! | `/api/v1/reviews` | `POST` | `createReview` | API key, or anonymous where the tenant allows it |
//! | `/api/v1/reviews/{id}` | `GET` | `getReview` | owner, reviewer |
//! | `/api/v1/reviews/{id}` | `DELETE` | `deleteReview` | owner |
//! | `/api/v1/reviews/{id}/versions` | `POST` | `pushReviewVersion` | owner |
//! | `/api/v1/reviews/{id}/versions/{n}` | `GET` | `getReviewVersion` | owner, reviewer |
//! | `/api/v1/reviews/{id}/links` | `POST` | `createReviewLink` | owner |
//! | `/api/v1/reviews/{id}/links/{link}` | `DELETE` | `revokeReviewLink` | owner |
//! | `/api/v1/reviews/{id}/comments` | `PUT`, `DELETE` | `putReviewComments`, `deleteReviewComments` | owner, reviewer (own set) |
//! | `/api/v1/reviews/{id}/decision` | `POST` | `decideReview` | owner |
//!
//! Tokens travel only in `Authorization: Bearer` ([`ReviewCaller`]). Bodies
//! are JSON objects with no unknown fields ([`JsonBody`]); `data` fields
//! are ciphertext within the tenant's paste size limit. The wire views
//! and the response budget's part are in `view.rs`.

use api_types::reviews as wire;
use axum::Extension;
use axum::extract::{RawPathParams, RawQuery, State};
use axum::response::{IntoResponse as _, Response};
use http::StatusCode;

use super::caller::ReviewCaller;
use super::service::{Decision, DecisionInput, NewReviewInput, VersionPush};
use super::view::{self, check_data, check_digest, path_param, signed, unsigned};
use crate::error::ApiError;
use crate::extract::{Creator, JsonBody};
use crate::ratelimit::ClientIp;
use crate::response::json_response;
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
pub(crate) async fn create_review(
    State(state): State<AppState>,
    Creator(ctx): Creator,
    JsonBody(request, admitted): JsonBody<wire::CreateReviewRequest>,
) -> Result<Response, ApiError> {
    check_data("version.data", &request.version.data, admitted.max_data)?;
    check_digest(&request.version.digest)?;
    let input = NewReviewInput {
        ttl_secs: ctx.ttl_secs(request.ttl, 1)?,
        data: request.version.data,
        digest: request.version.digest,
    };
    let created = state.inner.reviews.create(&ctx, input).await?;
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
pub(crate) async fn get_review(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    client: Option<Extension<ClientIp>>,
) -> Result<Response, ApiError> {
    let budget = &state.inner.response_budget;
    let mut held = view::reserve(budget, client).await?;
    let read = state
        .inner
        .reviews
        .read(&caller, &mut view::BudgetAdmit::new(budget, &mut held))
        .await?;
    Ok(view::held_json(budget, held, &view::review(&caller, read)).await)
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
pub(crate) async fn delete_review(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
) -> Result<Response, ApiError> {
    let pending = state.inner.reviews.delete(&caller).await?;
    if pending == 0 {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    Ok(json_response(StatusCode::ACCEPTED, &view::deleted(pending)))
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
pub(crate) async fn get_review_version(
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
    let mut held = view::reserve(budget, client).await?;
    let (row, data) = state
        .inner
        .reviews
        .version(&caller, n, &mut view::BudgetAdmit::new(budget, &mut held))
        .await?;
    Ok(view::held_json(budget, held, &view::version(row, data)).await)
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
pub(crate) async fn push_review_version(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    JsonBody(body, admitted): JsonBody<wire::PushVersionRequest>,
) -> Result<Response, ApiError> {
    check_data("data", &body.data, admitted.max_data)?;
    check_digest(&body.digest)?;
    let push = VersionPush {
        parent: signed(body.parent, "parent")?,
        data: body.data,
        digest: body.digest,
        progress: body.progress,
    };
    let pushed = state.inner.reviews.push(&caller, push).await?;
    let status = if pushed.unchanged {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let answer = wire::PushVersionResponse {
        n: unsigned(pushed.n),
        unchanged: pushed.unchanged.then_some(true),
        round: pushed.round.map(unsigned),
    };
    Ok(json_response(status, &answer))
}

/// The largest body of a route without ciphertext.
const SMALL_BODY: usize = 1024;

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
pub(crate) async fn create_review_link(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    JsonBody(body, _admitted): JsonBody<wire::CreateLinkRequest, SMALL_BODY>,
) -> Result<Response, ApiError> {
    let role = view::link_role(body.role.as_deref())?;
    let (id, token) = state.inner.reviews.add_link(&caller, role).await?;
    let role = role.as_str().to_owned();
    Ok(json_response(
        StatusCode::CREATED,
        &wire::CreatedLink { id, token, role },
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
pub(crate) async fn revoke_review_link(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    params: RawPathParams,
) -> Result<Response, ApiError> {
    let link = path_param(&params, "link")
        .filter(|l| paste_store::PasteId::parse(l).is_ok())
        .ok_or(ApiError::InvalidId { what: "link id" })?
        .to_owned();
    state.inner.reviews.revoke(&caller, &link).await?;
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
pub(crate) async fn put_review_comments(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    JsonBody(body, admitted): JsonBody<wire::PutCommentsRequest>,
) -> Result<Response, ApiError> {
    // Stored as normalised: "Alice " is "Alice".
    let name = view::checked_name(&body.name)?;
    check_data("data", &body.data, admitted.max_data)?;
    let version = signed(body.version, "version")?;
    let base = body.base.map(view::base_revision).transpose()?;
    let sealed = view::checked_sealed(body.sealed)?;
    let stored = state
        .inner
        .reviews
        .put_comments(&caller, name, version, base, body.data, sealed)
        .await?;
    let answer = wire::PutCommentsResponse {
        writer: stored.writer,
        updated_at: unsigned(stored.updated_at),
        seq: unsigned(stored.seq),
    };
    Ok(json_response(StatusCode::OK, &answer))
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
pub(crate) async fn delete_review_comments(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let base = view::base_of(query.as_deref())?;
    state.inner.reviews.delete_comments(&caller, base).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
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
pub(crate) async fn decide_review(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    JsonBody(body, admitted): JsonBody<wire::DecisionRequest>,
) -> Result<Response, ApiError> {
    let decision = match body.decision.as_str() {
        "approved" => Decision::Approved,
        "changes_requested" => Decision::ChangesRequested,
        _ => return Err(view::bad_decision()),
    };
    if let Some(data) = &body.data {
        check_data("data", data, admitted.max_data)?;
    }
    let input = DecisionInput {
        decision,
        version: signed(body.version, "version")?,
        name: body.name.as_deref().map(view::checked_name).transpose()?,
        feedback: body.data.clone(),
        sealed: view::checked_sealed(body.sealed)?,
    };
    let decided = state.inner.reviews.decide(&caller, input).await?;
    let answer = view::decision_info(&decided, body.data);
    Ok(json_response(StatusCode::OK, &answer))
}

/// `PUT /api/v1/reviews/{id}/deadline` — 200: the deadline and reminder
/// interval now in force (the owner); an empty body clears both.
#[utoipa::path(
    put,
    path = "/api/v1/reviews/{id}/deadline",
    tag = "reviews",
    operation_id = "setReviewDeadline",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    request_body(content = api_types::reviews::ReviewDeadline, content_type = "application/json"),
    responses(
        (status = 200, description = "Set", body = api_types::reviews::ReviewDeadline),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 403, response = crate::openapi::responses::Forbidden),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn set_review_deadline(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    JsonBody(body, _): JsonBody<wire::ReviewDeadline>,
) -> Result<Response, ApiError> {
    let (deadline, remind_every) = view::checked_deadline(&caller, &body)?;
    state
        .inner
        .reviews
        .set_deadline(&caller, deadline, remind_every)
        .await?;
    Ok(json_response(StatusCode::OK, &body))
}
