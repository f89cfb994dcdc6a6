//! `/api/paste`: create (compat), read (compat) and delete (new).

use std::future::Future;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use paste_store::{DeleteToken, PasteId, PasteKey, Payload, StoreError, StoredPaste, now_ms};

use crate::body::{self, ENVELOPE_ALLOWANCE};
use crate::error::ApiError;
use crate::handlers::bearer_token;
use crate::middleware::json_response;
use crate::state::AppState;

/// Fresh ids tried when the store already holds the drawn one.
const ID_ATTEMPTS: usize = 5;

/// `POST /api/paste` — stores `data` under a fresh id, never overwriting.
pub(crate) async fn create_paste(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let config = &state.inner.paste;
    let raw = body::read_limited(
        &headers,
        body,
        config.max_size.saturating_add(ENVELOPE_ALLOWANCE),
        config.max_size,
        Duration::from_secs(state.inner.http.body_timeout_secs.max(1)),
        &state.inner.body_budget,
    )
    .await?;
    // The reservation is held until the paste is stored: `data` is a copy.
    let data = body::parse_create(&raw.bytes)?.ok_or(ApiError::MissingData)?;
    if body::js_length(&data) > config.max_size {
        return Err(ApiError::PayloadTooLarge {
            max_size: config.max_size,
        });
    }

    let token = DeleteToken::generate().map_err(|e| ApiError::Internal(e.to_string()))?;
    let created_at = now_ms();
    let expires_at = created_at.saturating_add(config.ttl_secs.saturating_mul(1000));
    let paste = StoredPaste {
        payload: Payload::from_text(data),
        created_at,
        expires_at,
        delete_token: Some(token.digest()),
    };
    for _ in 0..ID_ATTEMPTS {
        let id =
            PasteId::generate(config.id_length).map_err(|e| ApiError::Internal(e.to_string()))?;
        let key = PasteKey::new(state.inner.namespace.clone(), id);
        match with_timeout(&state, state.inner.store.put_if_absent(&key, paste.clone())).await {
            Ok(()) => {
                let body = api_types::CreatePasteResponse {
                    id: key.id().to_string(),
                    delete_token: Some(token.expose().to_owned()),
                    expires_at: Some(expires_at),
                };
                return Ok(json_response(StatusCode::CREATED, &body));
            }
            Err(StoreError::AlreadyExists) => continue,
            Err(e) => return Err(ApiError::from_store(e, true)),
        }
    }
    Err(ApiError::Internal(format!(
        "{ID_ATTEMPTS} id collisions in a row"
    )))
}

/// `GET /api/paste/{id}` — upstream's read: ids outside `[A-Za-z0-9]{6,16}`
/// get the generic route 404, absent and expired ones the paste 404.
pub(crate) async fn get_paste(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = id
        .ok()
        .and_then(|Path(id)| PasteId::parse(&id).ok())
        .ok_or(ApiError::RouteNotFound)?;
    let key = PasteKey::new(state.inner.namespace.clone(), id);
    let paste = with_timeout(&state, state.inner.store.get(&key))
        .await
        .map_err(|e| ApiError::from_store(e, true))?;
    let body = api_types::GetPasteResponse {
        data: paste.payload.to_text(),
    };
    let mut response = json_response(StatusCode::OK, &body);
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
}

/// `DELETE /api/paste/{id}` with `Authorization: Bearer <deleteToken>` — 204.
/// A wrong token answers exactly as an absent paste does.
pub(crate) async fn delete_paste(
    State(state): State<AppState>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let token = bearer_token(&headers).ok_or(ApiError::Unauthorized)?;
    let id = id
        .ok()
        .and_then(|Path(id)| PasteId::parse(&id).ok())
        .ok_or(ApiError::InvalidPasteId)?;
    let key = PasteKey::new(state.inner.namespace.clone(), id);
    let not_found = ApiError::PasteNotFound { compat: false };
    let paste = match with_timeout(&state, state.inner.store.get(&key)).await {
        Ok(paste) => paste,
        Err(StoreError::NotFound) => return Err(not_found),
        Err(e) => return Err(ApiError::from_store(e, false)),
    };
    if !paste
        .delete_token
        .is_some_and(|digest| digest.matches(token))
    {
        return Err(not_found);
    }
    with_timeout(&state, state.inner.store.delete(&key))
        .await
        .map_err(|e| ApiError::from_store(e, false))?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Bounds a store call by `http.store_timeout_secs`; a late answer is an outage.
async fn with_timeout<T>(
    state: &AppState,
    op: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(state.store_timeout(), op)
        .await
        .unwrap_or(Err(StoreError::Unavailable {
            reason: "store operation timed out",
            retry_after: Some(Duration::from_secs(1)),
            source: None,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_one_well_formed_bearer_header_is_accepted() {
        assert_eq!(bearer_token(&auth(&["Bearer abc"])), Some("abc"));
        assert_eq!(bearer_token(&auth(&["bearer abc"])), Some("abc"));
        for bad in [
            &["Bearer "][..],
            &["Bearer"],
            &["Basic abc"],
            &["Bearer a b"],
            &["Bearer abc", "Bearer abc"],
            &[],
        ] {
            assert_eq!(bearer_token(&auth(bad)), None, "{bad:?}");
        }
        let long = format!("Bearer {}", "a".repeat(10 * 1024));
        assert_eq!(bearer_token(&auth(&[&long])), None);
    }
}
