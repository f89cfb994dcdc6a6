//! The admin family's route table (below `/admin`): the routes with their
//! documentation (utoipa-axum), and each route's row. The rows name the
//! paths as the document does, with the prefix; every admin request is
//! shed like any other.

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::handlers;
use crate::routing::{Auth, RouteRow, Shedding, row, with_method_fallback};
use crate::state::AppState;

const fn admin(method: &'static str, path: &'static str) -> RouteRow {
    row(method, path, Shedding::Applies, Auth::AdminToken)
}

/// Each route's shedding and credential.
pub(crate) const ROWS: &[RouteRow] = &[
    admin("GET", "/admin/v1/tenants"),
    admin("POST", "/admin/v1/tenants"),
    admin("GET", "/admin/v1/tenants/{id}"),
    admin("PATCH", "/admin/v1/tenants/{id}"),
    admin("DELETE", "/admin/v1/tenants/{id}"),
    admin("POST", "/admin/v1/tenants/{id}/disable"),
    admin("POST", "/admin/v1/tenants/{id}/enable"),
    admin("GET", "/admin/v1/tenants/{id}/keys"),
    admin("POST", "/admin/v1/tenants/{id}/keys"),
    admin("DELETE", "/admin/v1/tenants/{id}/keys/{key_id}"),
    admin("GET", "/admin/v1/tenants/{id}/usage"),
];

/// The admin routes (below `/admin`) and their documentation.
pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(
            routes!(handlers::list_tenants, handlers::create_tenant),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(
            routes!(
                handlers::get_tenant,
                handlers::update_tenant,
                handlers::delete_tenant
            ),
            "GET, HEAD, PATCH, DELETE",
        ))
        .routes(with_method_fallback(
            routes!(handlers::disable_tenant),
            "POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::enable_tenant),
            "POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::list_keys, handlers::create_key),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::revoke_key),
            "DELETE",
        ))
        .routes(with_method_fallback(
            routes!(handlers::get_usage),
            "GET, HEAD",
        ))
}
