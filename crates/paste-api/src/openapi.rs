//! The shared parts of the OpenAPI 3.1 document: the title and description
//! ([`ApiDoc`]), the security schemes, the reusable error responses and the
//! schemas the handlers name (the bodies' schemas are `api_types`' own). The paths come from the route tables, and the
//! whole document is put together where they are (`router/docs.rs`); this
//! module never reaches for the routes.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// The name of the tenant API key scheme in the document.
pub(crate) const API_KEY: &str = "apiKey";
/// The name of the per-paste delete token scheme in the document.
pub(crate) const DELETE_TOKEN: &str = "deleteToken";
/// The name of the review token scheme (owner or reviewer) in the document.
pub(crate) const REVIEW_TOKEN: &str = "reviewToken";
/// The name of the admin token scheme in the document.
pub(crate) const ADMIN_TOKEN: &str = "adminToken";

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
        (name = "reviews", description = "Live shared reviews: versions, reviewer links, comment sets, the owner's decision and an event stream; end-to-end encrypted (the server stores only ciphertext)"),
        (name = "admin", description = "Tenants, API keys and usage, for operators (admin token)"),
        (name = "discovery", description = "What this server is and where its review API and portal are (unauthenticated, cacheable)"),
        (name = "probes", description = "Liveness and readiness"),
        (name = "docs", description = "This document"),
    ),
    components(
        schemas(
            api_types::ErrorBody,
            schemas::CompatCreateRequest,
            api_types::Tenant,
            api_types::TenantSettings,
            api_types::TenantStatus,
            api_types::NewTenant,
            api_types::TenantUpdate,
            api_types::TenantList,
            api_types::KeyInfo,
            api_types::CreatedKey,
            api_types::KeyList,
            api_types::Usage,
            api_types::reviews::ReviewEventFrame,
        ),
        responses(
            responses::BadRequest,
            responses::Unauthorized,
            responses::Forbidden,
            responses::NotFound,
            responses::Gone,
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
pub(crate) struct ApiDoc;

/// Adds the three bearer schemes.
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
                         tenant's key answers 401.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            DELETE_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("43 base64url characters")
                    .description(Some(
                        "The `deleteToken` returned when the paste was created, \
                         `Authorization: Bearer <deleteToken>`; it deletes that paste only. \
                         A bearer of another shape answers 401; a well-formed token that \
                         is not the paste's answers 404, as an absent paste does.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            REVIEW_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("43 base64url characters")
                    .description(Some(
                        "A review's owner token (returned by `POST /api/v1/reviews`) or a \
                         reviewer link's token (returned by `POST /api/v1/reviews/{id}/links`), \
                         the `t` of the review link's fragment. Never in a path or query. \
                         A wrong, revoked or malformed token answers the same 404 as an \
                         unknown, expired or deleted review; none at all answers 401.",
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

    /// The paste's stored data is damaged and cannot be read
    /// (`paste-damaged`); it is there, and deleting it works (with an API
    /// key of its tenant when the damage leaves its delete token unreadable).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct Gone(ErrorBody);

    /// The request body was not received in time (`body-timeout`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct RequestTimeout(ErrorBody);

    /// A unique value is taken (`conflict`), or a create with this
    /// `Idempotency-Key` is still running (`idempotency-in-progress`, with
    /// `Retry-After`).
    #[derive(utoipa::ToResponse)]
    #[response(headers(("Retry-After" = u64, description = "Seconds to wait: for idempotency-in-progress, until the running create's hold on the key ends and a retry takes it over")))]
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

    /// A bug; the body says nothing more (`internal`).
    #[derive(utoipa::ToResponse)]
    pub(crate) struct Internal(ErrorBody);

    /// The store or catalog is unavailable, the server is overloaded or
    /// shutting down. Never a false 404.
    #[derive(utoipa::ToResponse)]
    #[response(headers(("Retry-After" = u64, description = "Seconds to wait before retrying")))]
    pub(crate) struct Unavailable(ErrorBody);
}

/// The bodies that are not `api-types` types: the compat create, parsed by
/// hand as upstream does, and the review stream's events.
pub(crate) mod schemas {
    #![expect(dead_code, reason = "types only describe bodies in the document")]

    use utoipa::ToSchema;

    /// One server-sent event of `GET /api/v1/reviews/{id}/events`, as an
    /// SSE parser reads it from the `id:`, `event:` and `data:` lines.
    #[derive(ToSchema)]
    pub(crate) struct ReviewSseEvent {
        /// The event's sequence number (absent on `closed`, which is not
        /// stored: the review is gone).
        pub(crate) id: Option<String>,
        /// `version`, `comments`, `links`, `decision`, `revoked` or `closed`.
        pub(crate) event: String,
        /// A small JSON object: ids, numbers and names, never content or a
        /// token (the same `data` as the long poll's).
        pub(crate) data: String,
    }

    /// `POST /api/paste` body, as upstream: any `Content-Type`; other
    /// fields are ignored.
    #[derive(ToSchema)]
    pub(crate) struct CompatCreateRequest {
        /// The payload: a non-empty string within the tenant's size limit
        /// (counted in UTF-16 code units, as upstream).
        #[schema(min_length = 1)]
        pub(crate) data: String,
    }
}
