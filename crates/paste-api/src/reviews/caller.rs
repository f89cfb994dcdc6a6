//! [`ReviewCaller`]: who a review request comes from — the holder of one of
//! the review's tokens, found by the token's digest (the token travels only
//! in `Authorization: Bearer`, never in a path or query).
//!
//! A wrong, malformed or revoked token, an unknown, expired or deleted
//! review, another tenant's review and an API key in place of a token all
//! get the same 404 (no existence oracle); the client limiter counts each
//! as a failed authentication. No token at all is a 401.

use std::sync::Arc;

use axum::extract::{FromRequestParts, RawPathParams};
use http::header;
use http::request::Parts;
use paste_store::{Namespace, PasteId};

use super::service::{Caller, presented_digest};
use crate::context::TenantCtx;
use crate::error::ApiError;
use crate::extract::{DataLimit, TenantSlot, bearer_token};
use crate::state::AppState;

/// See the module documentation.
pub(crate) struct ReviewCaller(pub(crate) Caller);

impl FromRequestParts<AppState> for ReviewCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let bad_id = ApiError::InvalidId { what: "review id" };
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| bad_id)?;
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .map(|(_, value)| value.to_owned())
            .ok_or(ApiError::InvalidId { what: "review id" })?;
        if PasteId::parse(&id).is_err() {
            return Err(ApiError::InvalidId { what: "review id" });
        }
        let token = bearer_token(&parts.headers).ok_or(ApiError::ReviewTokenMissing)?;
        if !api_types::rules::is_review_token(token) {
            return Err(ApiError::ReviewNotFound);
        }
        let digest = presented_digest(token);
        let directory = &state.inner.directory;
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        let by_host = directory.by_host(host);
        // A request no host name maps to may reach any tenant's review: the
        // token proves access (a keyed tenant without hosts has no other
        // way in). One a host maps to reaches only that tenant's.
        let service = &state.inner.reviews;
        let now = crate::within::now_ms_i64();
        let principal = if by_host.is_default {
            service
                .catalog_call(
                    |c| async move { c.review_principal_any_tenant(&id, &digest, now).await },
                )
                .await
        } else {
            let tenant = by_host.id.clone();
            service
                .catalog_call(
                    |c| async move { c.review_principal(&tenant, &id, &digest, now).await },
                )
                .await
        }
        .map_err(ApiError::from_review)?
        .ok_or(ApiError::ReviewNotFound)?;
        let tenant = directory
            .by_id(&principal.review.tenant)
            .ok_or(ApiError::ReviewNotFound)?;
        if !tenant.active {
            return Err(ApiError::TenantDisabled);
        }
        let namespace =
            Namespace::parse(&principal.review.namespace).map_err(|_| ApiError::ReviewNotFound)?;
        let limits = tenant.review_limits;
        parts.extensions.insert(DataLimit(tenant.max_size));
        if let Some(slot) = parts.extensions.get::<TenantSlot>() {
            slot.fill(Arc::new(TenantCtx { tenant, key: None }));
        }
        Ok(ReviewCaller(Caller {
            principal,
            namespace,
            limits,
        }))
    }
}
