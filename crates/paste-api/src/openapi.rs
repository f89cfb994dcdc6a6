//! The OpenAPI 3.1 document of the API and the pages that serve it.
//!
//! The document is not written by hand: [`openapi`] takes the paths from the
//! very route tables [`crate::router`] serves (utoipa-axum's
//! `OpenApiRouter`, one `#[utoipa::path]` per handler), the request and
//! response schemas from `api-types`, and adds what the handlers cannot say:
//! the title, the security schemes and the reusable error responses. The
//! committed copy is `openapi/openapi.json` (`planshare-server openapi`).
//!
//! `GET /api/openapi.json` serves the document and `GET /api/docs/` a Swagger
//! UI page built into the binary (no network needed), with its own
//! Content-Security-Policy: the API's `default-src 'none'; sandbox` would
//! stop its scripts.

use std::sync::OnceLock;

use axum::Router;
use axum::response::{IntoResponse as _, Response};
use http::{HeaderValue, StatusCode, header};
use tower_http::set_header::SetResponseHeaderLayer;
use utoipa::OpenApi as _;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::error::ApiError;
use crate::middleware::JSON_CONTENT_TYPE;
use crate::state::AppState;

/// Where the document is served.
pub(crate) const DOCUMENT_PATH: &str = "/api/openapi.json";
/// Where the API reference page is served.
pub(crate) const DOCS_PATH: &str = "/api/docs";

/// The name of the tenant API key scheme in the document.
pub(crate) const API_KEY: &str = "apiKey";
/// The name of the admin token scheme in the document.
pub(crate) const ADMIN_TOKEN: &str = "adminToken";

/// The policy of the reference page: only this origin's scripts, styles
/// (Swagger UI sets inline styles), images (and its `data:` icons) and
/// requests ("Try it out"); never framed, no forms, no base.
const DOCS_CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'",
);

/// The OpenAPI document of every route: the paste API, the probes, the
/// document itself and the admin API (even where the admin API is served on
/// its own listener, or is off).
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(crate::router::paste_api().into_openapi());
    doc.merge(crate::router::probe_api().into_openapi());
    doc.merge(document_api().into_openapi());
    doc.nest("/admin", crate::router::admin_api().into_openapi())
}

/// [`openapi`] as pretty JSON with a trailing newline: the bytes of the
/// committed `openapi/openapi.json` and of `GET /api/openapi.json`.
pub fn openapi_json() -> String {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| match serde_json::to_string_pretty(&openapi()) {
        Ok(mut text) => {
            text.push('\n');
            text
        }
        // utoipa's types always serialise; if not, say so in the document.
        Err(error) => format!("{{\"error\": \"cannot serialise the document: {error}\"}}\n"),
    })
    .clone()
}

/// `GET /api/openapi.json` and the reference page, without layers (the
/// shared layers wrap them like every route; no rate limit applies).
pub(crate) fn docs_routes() -> Router<AppState> {
    let (document, _) = document_api().split_for_parts();
    let page: Router<AppState> = SwaggerUi::new(DOCS_PATH)
        .config(
            Config::new([DOCUMENT_PATH])
                // Swagger UI's default asks a remote validator for a badge.
                .validator_url("none")
                .try_it_out_enabled(false),
        )
        .into();
    let page = page
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed { allow: "GET, HEAD" } })
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            DOCS_CSP,
        ));
    document.merge(page)
}

fn document_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::router::with_method_fallback(
        routes!(openapi_document),
        "GET, HEAD",
    ))
}

/// The OpenAPI document of this API (this document).
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "docs",
    operation_id = "openapi",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object),
    ),
)]
pub(crate) async fn openapi_document() -> Response {
    let mut response = (StatusCode::OK, openapi_json()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    response
}

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "planshare",
        version = "1",
        description = "The planshare paste API: a multi-tenant, Plannotator-compatible share backend.\n\n\
            `/api/paste` and `/api/paste/{id}` are the upstream-compatible routes: their errors are \
            upstream's exact `{\"error\"}` bodies. Every other route answers errors as \
            `{\"error\", \"code\"}` with a stable `code`. `OPTIONS` on any path answers `204` with \
            CORS headers for the tenant's allowed origins; any other path or method answers the \
            generic `404` (a wrong method on a new route: `405` with `Allow`).\n\n\
            A paste request is for the tenant of its API key (`Authorization: Bearer pst_live_…`), \
            else the tenant of its `Host`, else the default tenant. Rate limits answer `429` with \
            `Retry-After`; an unavailable store or catalog `503` with `Retry-After`.\n\n\
            The admin API (`/admin/v1/…`) is off unless the server has an admin token (then every \
            `/admin` path answers the generic 404). With `PLANSHARE_ADMIN_ADDR` set it is served \
            only on that separate internal listener, not on the public one; it is described here \
            either way.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    tags(
        (name = "compat", description = "Upstream-compatible paste routes (Plannotator's paste service)"),
        (name = "pastes", description = "The tenant-aware paste API"),
        (name = "admin", description = "Tenants, API keys and usage, for operators (admin token)"),
        (name = "probes", description = "Liveness and readiness"),
        (name = "docs", description = "This document"),
    ),
    components(
        schemas(
            api_types::ErrorBody,
            schemas::CompatCreateRequest,
            schemas::Tenant,
            schemas::TenantSettings,
            schemas::TenantStatus,
            schemas::NewTenant,
            schemas::TenantUpdate,
            schemas::TenantList,
            schemas::KeyInfo,
            schemas::CreatedKey,
            schemas::KeyList,
            schemas::Usage,
        ),
        responses(
            responses::BadRequest,
            responses::Unauthorized,
            responses::Forbidden,
            responses::NotFound,
            responses::RequestTimeout,
            responses::Conflict,
            responses::PayloadTooLarge,
            responses::UnsupportedMediaType,
            responses::Unprocessable,
            responses::TooManyRequests,
            responses::Internal,
            responses::Unavailable,
        ),
    ),
    modifiers(&SecuritySchemes),
)]
struct ApiDoc;

/// Adds the two bearer schemes.
struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            API_KEY,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("pst_live_…")
                    .description(Some(
                        "A tenant API key, `Authorization: Bearer pst_live_…` (made with \
                         `POST /admin/v1/tenants/{id}/keys`). A bad, revoked or disabled \
                         tenant's key answers 401. On `DELETE` of a paste the paste's \
                         `deleteToken` is accepted in its place.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            ADMIN_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The server's admin token (`PLANSHARE_ADMIN_TOKEN` or `admin.token`), \
                         compared in constant time. A tenant API key gets 403.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Reusable error responses; every body is `ErrorBody`.
pub(crate) mod responses {
    #![expect(dead_code, reason = "types only describe responses in the document")]

    use api_types::ErrorBody;

    /// Malformed request: body not JSON (or not one object), invalid id,
    /// invalid `Idempotency-Key`, unreadable body.
    #[derive(utoipa::ToResponse)]
    pub(crate) struct BadRequest(ErrorBody);

    /// Missing, malformed or refused credentials.
    #[derive(utoipa::ToResponse)]
    #[response(headers(("WWW-Authenticate" = String, description = "`Bearer`")))]
    pub(crate) struct Unauthorized(ErrorBody);

    /// Credentials of the wrong kind (`forbidden`), or the tenant of the
    /// request's host is disabled (`tenant-disabled`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct Forbidden(ErrorBody);

    /// No such paste, tenant or key, or the caller may not act on it (one
    /// body for every cause).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct NotFound(ErrorBody);

    /// The request body was not received in time (`body-timeout`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct RequestTimeout(ErrorBody);

    /// A unique value is taken (`conflict`), or a create with this
    /// `Idempotency-Key` is still running (`idempotency-in-progress`, with
    /// `Retry-After`).
    #[derive(utoipa::ToResponse)]
    #[response(headers(("Retry-After" = u64, description = "Seconds to wait (idempotency-in-progress only)")))]
    pub(crate) struct Conflict(ErrorBody);

    /// The data or body is larger than the tenant or route accepts, or the
    /// tenant's quota is used up (`quota-exceeded`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct PayloadTooLarge(ErrorBody);

    /// The body must be `Content-Type: application/json` (UTF-8).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct UnsupportedMediaType(ErrorBody);

    /// Unknown (`unknown-field`), missing or mistyped (`invalid-field`) or
    /// refused (`invalid-value`) fields; an `Idempotency-Key` reused with
    /// another body (`idempotency-key-reused`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct Unprocessable(ErrorBody);

    /// A rate limit ran out (`rate-limited`).
    #[derive(utoipa::ToResponse)]
    #[response(headers(("Retry-After" = u64, description = "Seconds until a request is allowed")))]
    pub(crate) struct TooManyRequests(ErrorBody);

    /// A bug or damaged data; the body says nothing more (`internal`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct Internal(ErrorBody);

    /// The store or catalog is unavailable, the server is overloaded or
    /// shutting down. Never a false 404.
    #[derive(utoipa::ToResponse)]
    #[response(headers(("Retry-After" = u64, description = "Seconds to wait before retrying")))]
    pub(crate) struct Unavailable(ErrorBody);
}

/// Bodies that are not `api-types`: the compat create (parsed by hand, as
/// upstream does) and the tenant catalog's records, which live in `tenancy`
/// (kept equal to them by the tests below).
pub(crate) mod schemas {
    #![expect(dead_code, reason = "types only describe bodies in the document")]

    use utoipa::ToSchema;

    /// `POST /api/paste` body, as upstream: any `Content-Type`; other
    /// fields are ignored.
    #[derive(ToSchema)]
    pub(crate) struct CompatCreateRequest {
        /// The payload: a non-empty string within the tenant's size limit
        /// (counted in UTF-16 code units, as upstream).
        #[schema(min_length = 1)]
        pub(crate) data: String,
    }

    /// A tenant's settable limits and options.
    #[derive(ToSchema)]
    pub(crate) struct TenantSettings {
        /// Host names (custom domains or subdomains, lower case, optional
        /// `:port`) that resolve to this tenant; each belongs to one tenant.
        pub(crate) hosts: Vec<String>,
        /// Exact origins (`https://app.example.com`) allowed by CORS.
        pub(crate) cors_origins: Vec<String>,
        /// Largest accepted paste `data`, in bytes.
        pub(crate) max_paste_size: i64,
        /// TTL of a paste created without one, in seconds.
        pub(crate) default_ttl_secs: i64,
        /// Longest TTL a client may ask for, in seconds.
        pub(crate) max_ttl_secs: i64,
        /// Storage quota, in bytes of live pastes.
        pub(crate) quota_bytes: i64,
        /// Quota of live pastes.
        pub(crate) quota_pastes: i64,
        /// Sustained request rate per API key, per second.
        pub(crate) rate_per_sec: i64,
        /// Burst size of the per-key rate limiter.
        pub(crate) rate_burst: i64,
        /// Length of issued paste ids (8–16).
        pub(crate) id_length: i64,
        /// Whether requests without an API key may create pastes.
        pub(crate) allow_anonymous: bool,
    }

    /// Whether a tenant may be served.
    #[derive(ToSchema)]
    #[schema(rename_all = "lowercase")]
    pub(crate) enum TenantStatus {
        /// Served normally.
        Active,
        /// Its keys fail and its hosts answer 403; data is kept.
        Disabled,
    }

    /// `POST /admin/v1/tenants` body. Unknown fields are refused (422).
    #[derive(ToSchema)]
    pub(crate) struct NewTenant {
        /// Human-readable name (1–200 characters, no control characters).
        pub(crate) name: String,
        /// The paste-store namespace; unique, never changes.
        pub(crate) namespace: String,
        /// Limits and options; any omitted field takes its default.
        #[schema(required = false)]
        pub(crate) settings: TenantSettings,
    }

    /// `PATCH /admin/v1/tenants/{id}` body: an absent or `null` field is
    /// left as it is. Unknown fields (id, namespace, status, timestamps) are
    /// refused (422).
    #[derive(ToSchema)]
    pub(crate) struct TenantUpdate {
        /// New name.
        pub(crate) name: Option<String>,
        /// Replaces the host list.
        pub(crate) hosts: Option<Vec<String>>,
        /// Replaces the CORS origin list.
        pub(crate) cors_origins: Option<Vec<String>>,
        /// See `TenantSettings.max_paste_size`.
        pub(crate) max_paste_size: Option<i64>,
        /// See `TenantSettings.default_ttl_secs`.
        pub(crate) default_ttl_secs: Option<i64>,
        /// See `TenantSettings.max_ttl_secs`.
        pub(crate) max_ttl_secs: Option<i64>,
        /// See `TenantSettings.quota_bytes`.
        pub(crate) quota_bytes: Option<i64>,
        /// See `TenantSettings.quota_pastes`.
        pub(crate) quota_pastes: Option<i64>,
        /// See `TenantSettings.rate_per_sec`.
        pub(crate) rate_per_sec: Option<i64>,
        /// See `TenantSettings.rate_burst`.
        pub(crate) rate_burst: Option<i64>,
        /// See `TenantSettings.id_length`.
        pub(crate) id_length: Option<i64>,
        /// See `TenantSettings.allow_anonymous`.
        pub(crate) allow_anonymous: Option<bool>,
    }

    /// A tenant as stored.
    #[derive(ToSchema)]
    pub(crate) struct Tenant {
        /// Its id.
        pub(crate) id: String,
        /// Human-readable name.
        pub(crate) name: String,
        /// The paste-store namespace of its pastes.
        pub(crate) namespace: String,
        /// Limits and options.
        pub(crate) settings: TenantSettings,
        /// Active or disabled.
        pub(crate) status: TenantStatus,
        /// Creation time, Unix ms.
        pub(crate) created_at: i64,
        /// Last change, Unix ms.
        pub(crate) updated_at: i64,
    }

    /// `GET /admin/v1/tenants`: every tenant, oldest first.
    #[derive(ToSchema)]
    pub(crate) struct TenantList {
        /// The tenants.
        pub(crate) tenants: Vec<Tenant>,
    }

    /// An API key as listed: never the secret, never its digest.
    #[derive(ToSchema)]
    pub(crate) struct KeyInfo {
        /// Its id.
        pub(crate) id: String,
        /// The tenant it authenticates as.
        pub(crate) tenant_id: String,
        /// Non-secret prefix, e.g. `pst_live_AbCd…`.
        pub(crate) display: String,
        /// Human-readable name.
        pub(crate) name: String,
        /// Creation time, Unix ms.
        pub(crate) created_at: i64,
        /// Revocation time, Unix ms, if revoked.
        pub(crate) revoked_at: Option<i64>,
        /// Last successful authentication, Unix ms (updated at most once a
        /// minute).
        pub(crate) last_used_at: Option<i64>,
    }

    /// `POST /admin/v1/tenants/{id}/keys` response: the listing fields plus
    /// the key itself, shown only here.
    #[derive(ToSchema)]
    pub(crate) struct CreatedKey {
        /// Its id.
        pub(crate) id: String,
        /// The tenant it authenticates as.
        pub(crate) tenant_id: String,
        /// Non-secret prefix, e.g. `pst_live_AbCd…`.
        pub(crate) display: String,
        /// Human-readable name.
        pub(crate) name: String,
        /// Creation time, Unix ms.
        pub(crate) created_at: i64,
        /// Always `null` for a new key.
        pub(crate) revoked_at: Option<i64>,
        /// Always `null` for a new key.
        pub(crate) last_used_at: Option<i64>,
        /// The API key (`pst_live_…`): store it now, it is never shown again.
        pub(crate) key: String,
    }

    /// `GET /admin/v1/tenants/{id}/keys`: revoked ones included.
    #[derive(ToSchema)]
    pub(crate) struct KeyList {
        /// The keys.
        pub(crate) keys: Vec<KeyInfo>,
    }

    /// A tenant's accounted usage.
    #[derive(ToSchema)]
    pub(crate) struct Usage {
        /// Bytes of indexed live pastes.
        pub(crate) bytes: i64,
        /// Indexed live pastes.
        pub(crate) pastes: i64,
        /// Paste requests counted (added every 10 s per process).
        pub(crate) requests: i64,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn properties(schema: &str) -> BTreeSet<String> {
        let doc = serde_json::to_value(openapi()).unwrap();
        doc["components"]["schemas"][schema]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no schema {schema}"))
            .keys()
            .cloned()
            .collect()
    }

    fn fields(value: impl serde::Serialize) -> BTreeSet<String> {
        serde_json::to_value(value)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    /// The mirrors of `tenancy`'s records list the same fields.
    #[test]
    fn tenant_schemas_match_the_catalogs_types() {
        assert_eq!(
            properties("TenantSettings"),
            fields(tenancy::TenantSettings::default())
        );
        assert_eq!(
            properties("TenantUpdate"),
            fields(tenancy::TenantUpdate::default())
        );
        assert_eq!(properties("Usage"), fields(tenancy::Usage::default()));
    }

    #[test]
    fn the_document_is_openapi_3_1_with_both_security_schemes() {
        let doc = serde_json::to_value(openapi()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes[API_KEY]["scheme"], "bearer");
        assert_eq!(schemes[ADMIN_TOKEN]["scheme"], "bearer");
        assert!(openapi_json().ends_with("}\n"));
    }
}
