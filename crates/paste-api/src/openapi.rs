//! The shared parts of the OpenAPI 3.1 document: the title and description
//! ([`ApiDoc`]), the security schemes, the reusable error responses and the
//! schemas the handlers name. The paths come from the route tables, and the
//! whole document is put together where they are (`router/docs.rs`); this
//! module never reaches for the routes.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// The name of the tenant API key scheme in the document.
pub(crate) const API_KEY: &str = "apiKey";
/// The name of the per-paste delete token scheme in the document.
pub(crate) const DELETE_TOKEN: &str = "deleteToken";
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

    /// A host name that resolves to a tenant: DNS labels of letters, digits
    /// and inner hyphens (stored lower case), an optional `:port`, at most
    /// 253 characters in all.
    #[derive(ToSchema)]
    #[schema(
        max_length = 253,
        pattern = "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$"
    )]
    pub(crate) struct Host(String);

    /// An exact CORS origin, `http(s)://host[:port]` in lower case with no
    /// path, or `*` for any origin.
    #[derive(ToSchema)]
    #[schema(
        max_length = 261,
        pattern = "^(\\*|https?://[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?)$"
    )]
    pub(crate) struct Origin(String);

    /// A tenant's settable limits and options. Besides each field's range,
    /// `default_ttl_secs` must not exceed `max_ttl_secs` (422 otherwise).
    /// When creating a tenant any field may be left out (it takes its
    /// default); a tenant as returned always has every field.
    #[derive(ToSchema)]
    pub(crate) struct TenantSettings {
        /// Host names (custom domains or subdomains, case-insensitive,
        /// optional `:port`) that resolve to this tenant. A name belongs to
        /// one tenant whatever the port (another tenant's `name` or
        /// `name:port`: 409) and is listed once (`name` covers every port;
        /// `name` and `name:8080` together: 422); `:80` and `:443` are
        /// dropped. Duplicates are dropped.
        #[schema(required = false, max_items = 100)]
        pub(crate) hosts: Vec<Host>,
        /// Exact origins (`https://app.example.com`) allowed by CORS.
        /// Duplicates are dropped.
        #[schema(required = false, max_items = 100)]
        pub(crate) cors_origins: Vec<Origin>,
        /// Largest accepted paste `data`, in bytes.
        #[schema(required = false, minimum = 1, maximum = 4_611_686_018_427_387_903_i64)]
        pub(crate) max_paste_size: i64,
        /// TTL of a paste created without one, in seconds (0: pastes expire
        /// at once, as upstream's `PASTE_TTL_DAYS=0`).
        #[schema(required = false, minimum = 0, maximum = 3_153_600_000_i64)]
        pub(crate) default_ttl_secs: i64,
        /// Longest TTL a client may ask for, in seconds (at most 100 years).
        #[schema(required = false, minimum = 0, maximum = 3_153_600_000_i64)]
        pub(crate) max_ttl_secs: i64,
        /// Storage quota, in bytes of live pastes (2^62: unlimited).
        #[schema(required = false, minimum = 0, maximum = 4_611_686_018_427_387_903_i64)]
        pub(crate) quota_bytes: i64,
        /// Quota of live pastes (2^62: unlimited).
        #[schema(required = false, minimum = 0, maximum = 4_611_686_018_427_387_903_i64)]
        pub(crate) quota_pastes: i64,
        /// Sustained request rate per API key, per second.
        #[schema(required = false, minimum = 1, maximum = 1_000_000)]
        pub(crate) rate_per_sec: i64,
        /// Burst size of the per-key rate limiter.
        #[schema(required = false, minimum = 1, maximum = 1_000_000)]
        pub(crate) rate_burst: i64,
        /// Length of issued paste ids.
        #[schema(required = false, minimum = 8, maximum = 16)]
        pub(crate) id_length: i64,
        /// Whether requests without an API key may create pastes.
        #[schema(required = false)]
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
        /// Human-readable name (1–200 characters, not only white space, no
        /// control characters).
        #[schema(
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )]
        pub(crate) name: String,
        /// The paste-store namespace; unique, never changes.
        #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,62}$")]
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
        /// New name (as `NewTenant.name`).
        #[schema(
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )]
        pub(crate) name: Option<String>,
        /// Replaces the host list.
        #[schema(max_items = 100)]
        pub(crate) hosts: Option<Vec<Host>>,
        /// Replaces the CORS origin list.
        #[schema(max_items = 100)]
        pub(crate) cors_origins: Option<Vec<Origin>>,
        /// See `TenantSettings.max_paste_size`.
        #[schema(minimum = 1, maximum = 4_611_686_018_427_387_903_i64)]
        pub(crate) max_paste_size: Option<i64>,
        /// See `TenantSettings.default_ttl_secs`; the result must not
        /// exceed the tenant's `max_ttl_secs` (422).
        #[schema(minimum = 0, maximum = 3_153_600_000_i64)]
        pub(crate) default_ttl_secs: Option<i64>,
        /// See `TenantSettings.max_ttl_secs`; the result must not be below
        /// the tenant's `default_ttl_secs` (422).
        #[schema(minimum = 0, maximum = 3_153_600_000_i64)]
        pub(crate) max_ttl_secs: Option<i64>,
        /// See `TenantSettings.quota_bytes`.
        #[schema(minimum = 0, maximum = 4_611_686_018_427_387_903_i64)]
        pub(crate) quota_bytes: Option<i64>,
        /// See `TenantSettings.quota_pastes`.
        #[schema(minimum = 0, maximum = 4_611_686_018_427_387_903_i64)]
        pub(crate) quota_pastes: Option<i64>,
        /// See `TenantSettings.rate_per_sec`.
        #[schema(minimum = 1, maximum = 1_000_000)]
        pub(crate) rate_per_sec: Option<i64>,
        /// See `TenantSettings.rate_burst`.
        #[schema(minimum = 1, maximum = 1_000_000)]
        pub(crate) rate_burst: Option<i64>,
        /// See `TenantSettings.id_length`.
        #[schema(minimum = 8, maximum = 16)]
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
