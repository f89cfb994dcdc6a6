//! A review's notification subscriptions (`/api/v1/reviews/{id}/subscriptions`):
//! each writer (the owner, a reviewer, an approver) makes and removes its
//! own and reads what was delivered to them; the owner sees and removes all.
//! The notifications themselves are `crate::notify`'s.
//!
//! | route | method | operation | who |
//! |---|---|---|---|
//! | `…/subscriptions` | `POST` | `createReviewSubscription` | any writer |
//! | `…/subscriptions` | `GET` | `listReviewSubscriptions` | any writer (own; owner: all) |
//! | `…/subscriptions/{sid}` | `DELETE` | `deleteReviewSubscription` | its writer, the owner |
//! | `…/subscriptions/{sid}/deliveries` | `GET` | `listSubscriptionDeliveries` | its writer, the owner |

use api_types::notify as wire;
use axum::extract::{RawPathParams, State};
use axum::response::{IntoResponse as _, Response};
use http::{HeaderMap, StatusCode, header};
use tenancy::{Delivery, NoticeType, Subscription, TargetKind};

use super::caller::ReviewCaller;
use super::service::Caller;
use super::view::{path_param, unsigned};
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::notify::{SubscribeInput, events_mask};
use crate::response::json_response;
use crate::state::AppState;

/// `POST /api/v1/reviews/{id}/subscriptions` — 201: the subscription, and a
/// webhook's signing secret (shown only here).
#[utoipa::path(
    post,
    path = "/api/v1/reviews/{id}/subscriptions",
    tag = "reviews",
    operation_id = "createReviewSubscription",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    request_body(content = api_types::notify::CreateSubscriptionRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Subscribed; a webhook's secret is shown only here", body = api_types::notify::CreatedSubscription),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 409, response = crate::openapi::responses::Conflict),
        (status = 413, response = crate::openapi::responses::PayloadTooLarge),
        (status = 415, response = crate::openapi::responses::UnsupportedMediaType),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn create_review_subscription(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    headers: HeaderMap,
    JsonBody(body, _): JsonBody<wire::CreateSubscriptionRequest>,
) -> Result<Response, ApiError> {
    let kind = match body.kind.as_str() {
        "webhook" => TargetKind::Webhook,
        "ntfy" => TargetKind::Ntfy,
        _ => {
            return Err(ApiError::InvalidField(
                "\"kind\" must be \"webhook\" or \"ntfy\"".into(),
            ));
        }
    };
    let input = SubscribeInput {
        kind,
        url: body.url,
        events: events_mask(body.events.as_deref())?,
        origin: origin_of(&headers),
    };
    let head = &caller.principal.review;
    let allow_private = allows_private(&state, &caller);
    let (made, secret) = state
        .inner
        .notify
        .subscribe(
            &head.tenant,
            &head.id,
            &caller.principal.link,
            allow_private,
            input,
        )
        .await?;
    let answer = wire::CreatedSubscription {
        subscription: info(made),
        secret,
    };
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// `GET /api/v1/reviews/{id}/subscriptions` — the caller's own
/// subscriptions; the owner's answer has all of the review's.
#[utoipa::path(
    get,
    path = "/api/v1/reviews/{id}/subscriptions",
    tag = "reviews",
    operation_id = "listReviewSubscriptions",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id")),
    responses(
        (status = 200, description = "The subscriptions the caller may see, oldest first", body = api_types::notify::SubscriptionList),
        (status = 400, response = crate::openapi::responses::BadRequest),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn list_review_subscriptions(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
) -> Result<Response, ApiError> {
    let head = &caller.principal.review;
    let listed = state
        .inner
        .notify
        .list(&head.tenant, &head.id, visible_to(&caller))
        .await?;
    let answer = wire::SubscriptionList {
        subscriptions: listed.into_iter().map(info).collect(),
    };
    Ok(json_response(StatusCode::OK, &answer))
}

/// `DELETE /api/v1/reviews/{id}/subscriptions/{sid}` — 204: removed, with
/// whatever it had not delivered yet.
#[utoipa::path(
    delete,
    path = "/api/v1/reviews/{id}/subscriptions/{sid}",
    tag = "reviews",
    operation_id = "deleteReviewSubscription",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id"),
        ("sid" = String, Path, pattern = "^sub_[A-Za-z0-9]{16}$", description = "The subscription id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, response = crate::openapi::responses::BadRequest),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn delete_review_subscription(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    params: RawPathParams,
) -> Result<Response, ApiError> {
    let sid = subscription_id(&params)?;
    let head = &caller.principal.review;
    state
        .inner
        .notify
        .remove(&head.tenant, &head.id, sid, visible_to(&caller))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /api/v1/reviews/{id}/subscriptions/{sid}/deliveries` — the newest
/// 100 notifications of the subscription with every attempt.
#[utoipa::path(
    get,
    path = "/api/v1/reviews/{id}/subscriptions/{sid}/deliveries",
    tag = "reviews",
    operation_id = "listSubscriptionDeliveries",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id"),
        ("sid" = String, Path, pattern = "^sub_[A-Za-z0-9]{16}$", description = "The subscription id"),
    ),
    responses(
        (status = 200, description = "Newest first", body = api_types::notify::DeliveryList),
        (status = 400, response = crate::openapi::responses::BadRequest),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn list_subscription_deliveries(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    params: RawPathParams,
) -> Result<Response, ApiError> {
    let sid = subscription_id(&params)?;
    let head = &caller.principal.review;
    let listed = state
        .inner
        .notify
        .deliveries(&head.tenant, &head.id, sid, visible_to(&caller))
        .await?;
    let answer = wire::DeliveryList {
        deliveries: listed
            .into_iter()
            .map(|d| delivery(&head.id, sid, d))
            .collect(),
    };
    Ok(json_response(StatusCode::OK, &answer))
}

/// Whose subscriptions the caller sees: all for the owner, else its own.
fn visible_to(caller: &Caller) -> Option<&str> {
    (caller.principal.role != tenancy::Role::Owner).then_some(caller.principal.link.as_str())
}

/// The tenant's `notify_private_targets` (the default tenant's follows
/// `[notify] private_targets`).
fn allows_private(state: &AppState, caller: &Caller) -> bool {
    state
        .inner
        .directory
        .by_id(&caller.principal.review.tenant)
        .is_some_and(|t| t.notify_private_targets)
}

fn subscription_id(params: &RawPathParams) -> Result<&str, ApiError> {
    path_param(params, "sid")
        .filter(|s| tenancy::is_subscription_id(s))
        .ok_or(ApiError::InvalidId {
            what: "subscription id",
        })
}

/// The origin the subscriber reached the server at: the request's
/// `Origin` (a browser sends it; the CLI sends its server's), else its
/// `Host` over the scheme a trusted proxy named, else http.
fn origin_of(headers: &HeaderMap) -> String {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(origin) = text(header::ORIGIN)
        && let Ok(url) = url::Url::parse(origin)
        && matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
    {
        return url.origin().ascii_serialization();
    }
    let scheme = match text(http::HeaderName::from_static("x-forwarded-proto")) {
        Some("https") => "https",
        _ => "http",
    };
    match text(header::HOST) {
        Some(host) if !host.is_empty() && host.bytes().all(|b| b.is_ascii_graphic()) => {
            format!("{scheme}://{host}")
        }
        _ => String::new(),
    }
}

fn info(s: Subscription) -> wire::SubscriptionInfo {
    wire::SubscriptionInfo {
        id: s.id,
        kind: s.kind.as_str().to_owned(),
        url: s.target,
        events: NoticeType::of_mask(s.events)
            .into_iter()
            .map(|t| t.as_str().to_owned())
            .collect(),
        writer: s.writer,
        created_at: unsigned(s.created_at),
        disabled_at: s.disabled_at.map(unsigned),
    }
}

fn delivery(review: &str, sid: &str, d: Delivery) -> wire::DeliveryInfo {
    wire::DeliveryInfo {
        id: crate::notify::message::message_id_of(review, d.seq, sid, d.id),
        kind: d.kind.as_str().to_owned(),
        seq: unsigned(d.seq),
        created_at: unsigned(d.created_at),
        state: d.state.as_str().to_owned(),
        next_attempt_at: d.next_at.map(unsigned),
        attempts: d
            .attempts
            .into_iter()
            .map(|a| wire::AttemptInfo {
                at: unsigned(a.at),
                status: a.status.and_then(|s| u16::try_from(s).ok()),
                error: a.error,
                ms: unsigned(a.ms),
            })
            .collect(),
    }
}
