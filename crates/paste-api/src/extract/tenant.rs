//! [`Tenant`]: who a paste request is for, resolved by the extractor itself
//! (API key, else `Host`, else the default tenant), with its refusals
//! (401, 403, 429, 503) answered as the API's error bodies.
//!
//! The edge layer reads the result back for CORS and the log line through a
//! [`TenantSlot`] it puts in the request: the extractor fills it, so error
//! answers from later extractors (a bad body, a bad id) are still judged by
//! the tenant the key named.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponse as _, Response};
use governor::clock::{Clock as _, DefaultClock};
use http::request::Parts;
use http::{HeaderMap, header};

use super::headers::bearer_token;
use super::json::DataLimit;
use crate::context::TenantCtx;
use crate::error::ApiError;
use crate::metrics::rate_limited;
use crate::shared_limit::Verdict;
use crate::state::AppState;
use crate::tenants::{KeyOwner, ResolveError, TenantView};

/// Who a paste request is for. The only way a handler reaches the store:
/// through the service, with this context (`ctx.key(id)`).
pub(crate) struct Tenant(pub(crate) Arc<TenantCtx>);

impl FromRequestParts<AppState> for Tenant {
    /// The API's error answer; a refusal by the key's rate is counted
    /// under its limiter (hence a response, which carries that mark).
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let ctx = Arc::new(resolve(state, &parts.headers).await?);
        if let Some(slot) = parts.extensions.get::<TenantSlot>() {
            slot.fill(ctx.clone());
        }
        parts.extensions.insert(DataLimit(ctx.tenant.max_size));
        Ok(Tenant(ctx))
    }
}

/// Who a create is for: a [`Tenant`] that may create (an API key, or a
/// tenant that allows anonymous creates; else 401 before the body is read).
pub(crate) struct Creator(pub(crate) Arc<TenantCtx>);

impl FromRequestParts<AppState> for Creator {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Tenant(ctx) = Tenant::from_request_parts(parts, state).await?;
        ctx.may_create()
            .map_err(|_| ApiError::Unauthorized.into_response())?;
        Ok(Creator(ctx))
    }
}

/// Where the [`Tenant`] extractor leaves the context for the layers
/// outside the router (CORS follows the key's tenant; the log line names
/// it). Empty for requests that never asked who they were for.
#[derive(Clone, Default)]
pub(crate) struct TenantSlot(Arc<OnceLock<Arc<TenantCtx>>>);

impl TenantSlot {
    pub(crate) fn fill(&self, ctx: Arc<TenantCtx>) {
        // A handler extracts its tenant once; a second fill keeps the first.
        let _ = self.0.set(ctx);
    }

    /// The tenant the request was resolved to, if it was.
    pub(crate) fn get(&self) -> Option<&Arc<TenantCtx>> {
        self.0.get()
    }
}

/// A bearer that is an API key rather than a paste's delete token (delete
/// tokens never start with `pst_`).
fn presented_api_key(headers: &HeaderMap) -> Option<&str> {
    bearer_token(headers).filter(|t| t.starts_with("pst_"))
}

/// The tenant of a paste request: its API key's (401 for a bad key, 503
/// when keys cannot be checked, 429 past the key's rate), else its host's
/// (403 when that tenant is disabled), else the default tenant.
async fn resolve(state: &AppState, headers: &HeaderMap) -> Result<TenantCtx, Response> {
    let directory = &state.inner.directory;
    if state.inner.http.tenancy_bypass {
        return Ok(TenantCtx {
            tenant: directory.default_tenant(),
            key: None,
        });
    }
    let ctx = match presented_api_key(headers) {
        // Boxed: a large future, which inline would be moved with the
        // handler's future on every request, keyed or not.
        Some(token) => match Box::pin(directory.authenticate(token)).await {
            Ok((tenant, key)) => {
                within_key_rate(state, &tenant, &key).await?;
                TenantCtx {
                    tenant,
                    key: Some(key),
                }
            }
            Err(ResolveError::BadKey) => return Err(ApiError::Unauthorized.into_response()),
            Err(ResolveError::Unavailable(source)) => {
                return Err(ApiError::from_catalog_open(source).into_response());
            }
        },
        None => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
            let tenant = directory.by_host(host);
            if !tenant.active {
                return Err(ApiError::TenantDisabled.into_response());
            }
            TenantCtx { tenant, key: None }
        }
    };
    ctx.tenant.count_request();
    Ok(ctx)
}

/// The key's rate: the shared (Redis) limit first; the process's own when
/// there is none or Redis does not answer.
async fn within_key_rate(
    state: &AppState,
    tenant: &TenantView,
    key: &KeyOwner,
) -> Result<(), Response> {
    let limiter = tenant.key_limiter.get_or_init(|| {
        state
            .inner
            .limiters
            .key_limiter(&tenant.id, tenant.rate_per_sec, tenant.rate_burst)
    });
    let shared = match &state.inner.limiters.shared {
        Some(shared) if limiter.is_some() => {
            Box::pin(shared.check(
                tenant.id.as_str(),
                key.key.as_str(),
                tenant.rate_per_sec,
                tenant.rate_burst,
            ))
            .await
        }
        _ => Verdict::Unknown,
    };
    if let Verdict::Limited(retry_after) = shared {
        return Err(refused_by_rate(retry_after));
    }
    if shared == Verdict::Unknown
        && let Some(limiter) = limiter
        && let Err(denied) = limiter.check_key(&key.key)
    {
        let retry_after = denied.wait_time_from(DefaultClock::default().now());
        return Err(refused_by_rate(retry_after));
    }
    Ok(())
}

fn refused_by_rate(retry_after: Duration) -> Response {
    rate_limited(
        "key",
        ApiError::TooManyRequests { retry_after }.into_response(),
    )
}
