//! Path ids, parsed into the API's id types, with the API's error answers;
//! the admin ones describe themselves in the document too.

use api_types::rules;
use axum::extract::{FromRequestParts, Path};
use http::request::Parts;
use paste_store::PasteId;
use tenancy::{KeyId, TenantId};
use utoipa::IntoParams;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};

use crate::error::ApiError;

/// The `{id}` of a paste route: `400 invalid-paste-id` unless it is a paste
/// id.
pub(crate) struct PastePath(pub(crate) PasteId);

impl<S: Send + Sync> FromRequestParts<S> for PastePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        path_id(parts, state)
            .await
            .map(PastePath)
            .ok_or(ApiError::InvalidPasteId)
    }
}

/// The `{id}` of upstream's `GET /api/paste/{id}`, where anything but a
/// paste id is upstream's generic 404 (no such route), not a 400.
pub(crate) struct CompatPastePath(pub(crate) PasteId);

impl<S: Send + Sync> FromRequestParts<S> for CompatPastePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        path_id(parts, state)
            .await
            .map(CompatPastePath)
            .ok_or(ApiError::RouteNotFound)
    }
}

async fn path_id<S: Send + Sync>(parts: &mut Parts, state: &S) -> Option<PasteId> {
    let Path(id) = Path::<String>::from_request_parts(parts, state)
        .await
        .ok()?;
    PasteId::parse(&id).ok()
}

/// The `{id}` of every route below `/admin/v1/tenants/{id}`, parsed
/// (`400 invalid-id` unless it is a tenant id) and described in the
/// document (its `IntoParams`) in one place.
pub(crate) struct TenantPath(pub(crate) TenantId);

impl<S: Send + Sync> FromRequestParts<S> for TenantPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let bad = ApiError::InvalidId { what: "tenant id" };
        let Ok(Path(id)) = Path::<String>::from_request_parts(parts, state).await else {
            return Err(bad);
        };
        TenantId::parse(&id).map(TenantPath).map_err(|_| bad)
    }
}

impl IntoParams for TenantPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![id_param(
            "id",
            format!(
                "The tenant id (`{}` and 1-{} letters or digits; `{}` is the default tenant)",
                rules::TENANT_ID_PREFIX,
                rules::ID_MAX_CHARS,
                TenantId::DEFAULT
            ),
            rules::TENANT_ID_PATTERN,
        )]
    }
}

/// The `{id}` and `{key_id}` of `/admin/v1/tenants/{id}/keys/{key_id}`.
pub(crate) struct KeyPath(pub(crate) TenantId, pub(crate) KeyId);

impl<S: Send + Sync> FromRequestParts<S> for KeyPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let bad_tenant = ApiError::InvalidId { what: "tenant id" };
        let Ok(Path((tenant, key))) =
            Path::<(String, String)>::from_request_parts(parts, state).await
        else {
            return Err(bad_tenant);
        };
        let tenant = TenantId::parse(&tenant).map_err(|_| bad_tenant)?;
        let key = KeyId::parse(&key).map_err(|_| ApiError::InvalidId { what: "key id" })?;
        Ok(KeyPath(tenant, key))
    }
}

impl IntoParams for KeyPath {
    fn into_params(in_provider: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut params = TenantPath::into_params(in_provider);
        params.push(id_param(
            "key_id",
            format!(
                "The key id (`{}` and 1-{} letters or digits)",
                rules::KEY_ID_PREFIX,
                rules::ID_MAX_CHARS
            ),
            rules::KEY_ID_PATTERN,
        ));
        params
    }
}

/// A required path parameter holding an id of `pattern`.
fn id_param(name: &str, description: String, pattern: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .description(Some(description))
        .required(Required::True)
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(pattern)),
        ))
        .build()
}
