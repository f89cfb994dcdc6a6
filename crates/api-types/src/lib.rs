//! Request and response bodies of the planshare HTTP API, shared by the server
//! (`paste-api`), the `planshare` CLI and the tests, so both ends of the wire
//! use one definition.
//!
//! Plain serde types only: this crate must not depend on axum, sqlx, tokio or
//! any storage crate, so a client can use it without linking the server stack.
//! With the `openapi` feature (the server's) every type also derives
//! `utoipa::ToSchema`, so `openapi/openapi.json` describes these very types.
//!
//! The paste API's bodies are at the top of this file; the admin API's are in
//! `admin.rs` (re-exported here); the review API's in [`reviews`]; [`rules`] holds the limits and patterns
//! their values must follow, which the catalog enforces and any client may
//! check before it sends a request.

mod admin;
mod codes;
pub mod notify;
pub mod reviews;
pub mod rules;

pub use admin::{
    CreateKeyRequest, CreatedKey, KeyInfo, KeyList, NewTenant, NewTenantSettings, Tenant,
    TenantList, TenantSettings, TenantStatus, TenantUpdate, Usage,
};
#[cfg(feature = "openapi")]
pub use admin::{Host, Origin};
pub use codes::ErrorCode;

use serde::{Deserialize, Serialize};

/// `POST /api/paste` response: upstream's `{"id"}` plus the owner's
/// delete token and the expiry. planshare always sends both; an upstream
/// paste service sends only `id`, so clients read them as optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreatePasteResponse {
    /// The paste id (16 base62 characters by default).
    pub id: String,
    /// Secret that authorises `DELETE /api/paste/{id}`; shown only here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_token: Option<String>,
    /// When the paste expires, in Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Whether the first read deletes the paste (sent only when it does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burn_after_read: Option<bool>,
}

/// `POST /api/v1/pastes` request. Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatePasteRequest {
    /// The payload (base64url text as upstream clients send it).
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub data: String,
    /// Lifetime in seconds, at most the tenant's `max_ttl_secs` (default:
    /// the tenant's `default_ttl_secs`); longer than the tenant allows → 422.
    /// The documented maximum is the most any tenant can allow (100 years).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 3_153_600_000_u64))]
    pub ttl: Option<u64>,
    /// Delete the paste when it is first read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burn_after_read: Option<bool>,
}

/// One paste in `GET /api/v1/pastes` (never its data or delete token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PasteSummary {
    /// The paste id.
    pub id: String,
    /// Stored size in bytes (as accounted against the quota).
    pub bytes: u64,
    /// Creation time, Unix milliseconds.
    pub created_at: u64,
    /// Expiry time, Unix milliseconds.
    pub expires_at: u64,
    /// Whether the first read deletes it.
    pub burn_after_read: bool,
}

/// `GET /api/v1/pastes` response: a page of the tenant's live pastes, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PasteList {
    /// This page.
    pub pastes: Vec<PasteSummary>,
    /// Pass as `?after=` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `GET /api/paste/{id}` response, exactly upstream's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GetPasteResponse {
    /// The stored text, byte for byte as it was sent.
    pub data: String,
}

/// The error body of every route: `{"error": "...", "code": "..."}`.
///
/// On the upstream-compatible routes `error` is upstream's exact string; `code`
/// is a stable machine-readable kebab-case identifier (omitted where upstream
/// clients compare whole bodies).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Human-readable message.
    pub error: String,
    /// Stable error code, e.g. `paste-not-found` (one of the `ErrorCode` values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<ErrorCode>))]
    pub code: Option<String>,
}

impl ErrorBody {
    /// The body's code, when it is one this build knows.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.code.as_deref().and_then(ErrorCode::parse)
    }
}

/// `GET /healthz` and `GET /readyz` success body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HealthResponse {
    /// `"ok"` (liveness) or `"ready"` (readiness).
    pub status: String,
}

/// `GET /api/v1/discovery` (also `GET /.well-known/planshare`): what this
/// server is and where its parts are, so a client given only the paste API's
/// URL finds the review API and the portal. Upstream's paste service has no
/// such route (it answers 404): a client tells a planshare server from it by
/// this answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Discovery {
    /// Always `planshare`.
    pub service: String,
    /// The server's version.
    pub version: String,
    /// The base path of the versioned API: `/api/v1`.
    pub api: String,
    /// Whether the review API (`/api/v1/reviews`) is served.
    pub reviews: bool,
    /// Where share and review links open: an absolute base URL (the
    /// configured `portal.share_base_url`); `""` when the portal is served
    /// on this same origin (a link opens at the origin the request went
    /// to); `null` when this server serves no portal and names none.
    #[serde(default)]
    pub portal: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_response_keeps_upstreams_id_first_and_uses_camel_case() {
        let body = CreatePasteResponse {
            id: "PwAB6RsTPwAB6RsT".into(),
            delete_token: Some("t".into()),
            expires_at: Some(1),
            burn_after_read: None,
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"id":"PwAB6RsTPwAB6RsT","deleteToken":"t","expiresAt":1}"#
        );
    }

    #[test]
    fn an_upstream_create_response_has_only_the_id() {
        let body: CreatePasteResponse = serde_json::from_str(r#"{"id":"PwAB6RsT"}"#).unwrap();
        assert_eq!((body.delete_token, body.expires_at), (None, None));
    }

    #[test]
    fn error_body_omits_an_absent_code() {
        let body = ErrorBody {
            error: "Invalid JSON body".into(),
            code: None,
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"error":"Invalid JSON body"}"#
        );
    }
}
