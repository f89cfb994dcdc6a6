//! The layer that decides who a paste request is for: [`resolve`] (tenant,
//! API key, per-key limit) over the paste routes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock as _, DefaultClock};
use http::header;

use crate::error::ApiError;
use crate::extract::bearer_token;
use crate::metrics::rate_limited;
use crate::service::TenantCtx;
use crate::shared_limit::Verdict;
use crate::state::AppState;
use crate::tenants::ResolveError;

/// A bearer that is an API key rather than a paste's delete token (delete
/// tokens never start with `pst_`).
fn presented_api_key(request: &Request) -> Option<&str> {
    bearer_token(request.headers()).filter(|t| t.starts_with("pst_"))
}

/// Resolves the tenant of a paste request: its API key's (401 for a bad
/// key, 503 when keys cannot be checked, 429 past the key's rate), else its
/// host's (403 when that tenant is disabled), else the default tenant.
pub(crate) async fn resolve(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let directory = &state.inner.directory;
    if state.inner.http.tenancy_bypass {
        let resolved = Arc::new(TenantCtx {
            tenant: directory.default_tenant(),
            key: None,
        });
        request.extensions_mut().insert(resolved.clone());
        let mut response = next.run(request).await;
        response.extensions_mut().insert(resolved);
        return response;
    }
    let resolved = match presented_api_key(&request) {
        // Boxed (like the Redis check below): large futures, and inline they
        // would be moved with this middleware's future on every request.
        Some(token) => match Box::pin(directory.authenticate(token)).await {
            Ok((tenant, key)) => {
                let limiter = tenant.key_limiter.get_or_init(|| {
                    state.inner.limiters.key_limiter(
                        &tenant.id,
                        tenant.rate_per_sec,
                        tenant.rate_burst,
                    )
                });
                // The shared (Redis) limit first; the process's own when
                // there is none or Redis does not answer.
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
                if let Verdict::Limited(wait) = shared {
                    return rate_limited(
                        "key",
                        ApiError::TooManyRequests { retry_after: wait }.into_response(),
                    );
                }
                if shared == Verdict::Unknown
                    && let Some(limiter) = limiter
                    && let Err(denied) = limiter.check_key(&key.key)
                {
                    let wait = denied.wait_time_from(DefaultClock::default().now());
                    return rate_limited(
                        "key",
                        ApiError::TooManyRequests { retry_after: wait }.into_response(),
                    );
                }
                TenantCtx {
                    tenant,
                    key: Some(key),
                }
            }
            Err(ResolveError::BadKey) => return ApiError::Unauthorized.into_response(),
            Err(ResolveError::Unavailable(source)) => {
                return ApiError::from_catalog_open(source).into_response();
            }
        },
        None => {
            let host = request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok());
            let tenant = directory.by_host(host);
            if !tenant.active {
                return ApiError::TenantDisabled.into_response();
            }
            TenantCtx { tenant, key: None }
        }
    };
    resolved.tenant.count_request();
    let resolved = Arc::new(resolved);
    request.extensions_mut().insert(resolved.clone());
    let mut response = next.run(request).await;
    response.extensions_mut().insert(resolved);
    response
}
