//! The review family's route table: the routes with their documentation
//! (utoipa-axum), and each route's row (shedding, credential).

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{events, handlers, subscriptions};
use crate::routing::{Auth, RouteRow, Shedding, row, with_method_fallback};
use crate::state::AppState;

const ID: &str = "/api/v1/reviews/{id}";

/// Each route's shedding and credential. Event streams are not shed: they
/// hold no place among the requests in flight (a long poll would, for up
/// to 25 s) and are bounded by their own caps (`[reviews]`).
pub(crate) const ROWS: &[RouteRow] = &[
    row(
        "POST",
        "/api/v1/reviews",
        Shedding::AfterBody,
        Auth::KeyOrAnonymous,
    ),
    row("GET", ID, Shedding::Applies, Auth::ReviewToken),
    row("DELETE", ID, Shedding::Applies, Auth::ReviewToken),
    row(
        "POST",
        "/api/v1/reviews/{id}/versions",
        Shedding::AfterBody,
        Auth::ReviewToken,
    ),
    row(
        "GET",
        "/api/v1/reviews/{id}/versions/{n}",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
    row(
        "POST",
        "/api/v1/reviews/{id}/links",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
    row(
        "DELETE",
        "/api/v1/reviews/{id}/links/{link}",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
    row(
        "PUT",
        "/api/v1/reviews/{id}/comments",
        Shedding::AfterBody,
        Auth::ReviewToken,
    ),
    row(
        "DELETE",
        "/api/v1/reviews/{id}/comments",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
    row(
        "POST",
        "/api/v1/reviews/{id}/decision",
        Shedding::AfterBody,
        Auth::ReviewToken,
    ),
    row(
        "GET",
        "/api/v1/reviews/{id}/events",
        Shedding::Exempt,
        Auth::ReviewToken,
    ),
    row(
        "PUT",
        "/api/v1/reviews/{id}/deadline",
        Shedding::AfterBody,
        Auth::ReviewToken,
    ),
    row(
        "POST",
        "/api/v1/reviews/{id}/subscriptions",
        Shedding::AfterBody,
        Auth::ReviewToken,
    ),
    row(
        "GET",
        "/api/v1/reviews/{id}/subscriptions",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
    row(
        "DELETE",
        "/api/v1/reviews/{id}/subscriptions/{sid}",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
    row(
        "GET",
        "/api/v1/reviews/{id}/subscriptions/{sid}/deliveries",
        Shedding::Applies,
        Auth::ReviewToken,
    ),
];

/// The review routes and their documentation, without layers.
pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(
            routes!(handlers::create_review),
            "POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::get_review, handlers::delete_review),
            "GET, HEAD, DELETE",
        ))
        .routes(with_method_fallback(
            routes!(handlers::push_review_version),
            "POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::get_review_version),
            "GET, HEAD",
        ))
        .routes(with_method_fallback(
            routes!(handlers::create_review_link),
            "POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::revoke_review_link),
            "DELETE",
        ))
        .routes(with_method_fallback(
            routes!(
                handlers::put_review_comments,
                handlers::delete_review_comments
            ),
            "PUT, DELETE",
        ))
        .routes(with_method_fallback(
            routes!(handlers::decide_review),
            "POST",
        ))
        .routes(with_method_fallback(
            routes!(events::review_events),
            "GET, HEAD",
        ))
        .routes(with_method_fallback(
            routes!(handlers::set_review_deadline),
            "PUT",
        ))
        .routes(with_method_fallback(
            routes!(
                subscriptions::create_review_subscription,
                subscriptions::list_review_subscriptions
            ),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(
            routes!(subscriptions::delete_review_subscription),
            "DELETE",
        ))
        .routes(with_method_fallback(
            routes!(subscriptions::list_subscription_deliveries),
            "GET, HEAD",
        ))
}
