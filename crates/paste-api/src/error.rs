//! `ApiError`: every way a request can fail, and the only place that decides
//! status codes and bodies. The match in [`ApiError::parts`] has no wildcard, so
//! a new variant does not compile until it is mapped.

use std::sync::Arc;
use std::time::Duration;

use api_types::ErrorCode;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use paste_store::StoreError;
use tenancy::CatalogError;

use crate::response::json_response;

/// Upstream's body for any path or method it does not serve.
pub(crate) const ROUTE_NOT_FOUND: &str =
    "Not found. Valid paths: POST /api/paste, GET /api/paste/:id";

/// A request failure, rendered as a JSON `{"error", "code"}` body.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Compat: no such route (upstream's generic 404).
    #[error("route not found")]
    RouteNotFound,
    /// Compat: the body of `POST /api/paste` is not JSON.
    #[error("invalid JSON body")]
    InvalidJsonBody,
    /// Compat: `data` is missing, not a string or empty.
    #[error("missing or invalid data field")]
    MissingData,
    /// Compat: `data` (or the whole body) exceeds the limit.
    #[error("payload too large")]
    PayloadTooLarge {
        /// The configured limit, for upstream's message.
        max_size: usize,
    },
    /// No live paste under this id, or the caller may not act on it. One body
    /// for every cause, so nothing can be learned from it.
    #[error("paste not found")]
    PasteNotFound {
        /// New routes add `"code"`; the compat read keeps upstream's exact body.
        compat: bool,
    },
    /// The paste's stored data is damaged (empty, truncated, not a record, a
    /// header that does not check out): it cannot be served. Not absent (it
    /// is there, and deleting it works) and not an outage (retrying does not
    /// help): `410 paste-damaged` on every route.
    #[error("paste damaged: {reason}")]
    PasteDamaged {
        /// What is wrong with it, for the log only.
        reason: String,
    },
    /// A new route got an id outside `[A-Za-z0-9]{6,16}`.
    #[error("invalid paste id")]
    InvalidPasteId,
    /// Missing or malformed `Authorization: Bearer` credentials.
    #[error("missing or malformed bearer token")]
    Unauthorized,
    /// The route exists but not for this method.
    #[error("method not allowed")]
    MethodNotAllowed {
        /// Value of the `Allow` header.
        allow: &'static str,
    },
    /// The client did not send its body in time.
    #[error("request body timeout")]
    BodyTimeout,
    /// The client sent its body slower than the minimum rate.
    #[error("request body too slow")]
    BodyTooSlow {
        /// The minimum, bytes per second.
        min_rate: u64,
    },
    /// The request body broke off or could not be read.
    #[error("request body could not be read")]
    BodyRead,
    /// The storage backend is down or too slow.
    #[error("store unavailable")]
    StoreUnavailable {
        /// Hint for `Retry-After`.
        retry_after: Duration,
        /// The store's error, for the log only.
        #[source]
        source: Option<StoreError>,
    },
    /// Too many requests in flight; shed.
    #[error("server overloaded")]
    Overloaded,
    /// Readiness: shutting down.
    #[error("shutting down")]
    ShuttingDown,
    /// A bug. The body says nothing more.
    #[error("internal error: {0}")]
    Internal(String),
    /// The store failed in a way no retry helps (a bug, or an id it
    /// already holds). The body says nothing more; the log has the source.
    #[error("store failure")]
    StoreFailed(#[source] StoreError),
    /// The catalog failed in a way no retry helps, or cannot be opened for
    /// a reason that is not an outage (bad configuration). The body says
    /// nothing more; the log has the source.
    #[error("tenant catalog failure")]
    CatalogFailed(#[source] CatalogError),
    /// A paste operation failed in a way no retry helps (see
    /// [`PasteError`]). The body says nothing more; the log has the source.
    #[error("paste operation failure")]
    PasteFailed(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Valid credentials of the wrong kind (a tenant API key on the admin API).
    #[error("forbidden")]
    Forbidden,
    /// A new route got a body that is not `application/json` (UTF-8).
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// A new route got a body that is not one JSON object.
    #[error("malformed JSON body")]
    MalformedJson,
    /// A new route got a body larger than it accepts.
    #[error("request body too large")]
    BodyTooLarge,
    /// The body names a field the route does not accept (no mass assignment).
    #[error("unknown field")]
    UnknownField {
        /// The field's name, when it is short and printable.
        field: Option<String>,
    },
    /// A field is missing or has the wrong type; the message says which.
    #[error("invalid field: {0}")]
    InvalidField(String),
    /// A value was refused by the tenant catalog's validation; the message
    /// is the catalog's (safe to show: never a secret or a connection string).
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A tenant or key id that is not well-formed.
    #[error("invalid id")]
    InvalidId {
        /// What kind of id (`tenant id`, `key id`).
        what: &'static str,
    },
    /// No such tenant or key (or a key of another tenant). One body for every cause.
    #[error("not found")]
    NotFound,
    /// A unique value is already taken (`namespace`, `host`, `key`, `tenant`).
    #[error("{0} already exists")]
    Conflict(&'static str),
    /// The change is not allowed on this record, whatever the input: the
    /// default tenant cannot be deleted, and a namespace whose deleted
    /// tenant's pastes may still be in the store cannot be taken.
    #[error("{0}")]
    Protected(&'static str),
    /// A rate limit ran out.
    #[error("too many requests")]
    TooManyRequests {
        /// Until the next request is allowed.
        retry_after: Duration,
    },
    /// New routes: `data` (or the whole body) exceeds the tenant's limit.
    #[error("data too large")]
    DataTooLarge {
        /// The tenant's limit.
        max_size: usize,
    },
    /// The tenant the request's host maps to is disabled.
    #[error("tenant disabled")]
    TenantDisabled,
    /// The tenant's storage quota (bytes or pastes) is used up.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// A create with this `Idempotency-Key` is still running.
    #[error("idempotent request in progress")]
    IdempotencyInProgress {
        /// Until that create's lease runs out and a retry takes the key over.
        retry_after: Duration,
    },
    /// The `Idempotency-Key` was used with a different body.
    #[error("idempotency key reused with another body")]
    IdempotencyMismatch,
    /// `Idempotency-Key` is empty, too long, repeated or not printable ASCII.
    #[error("invalid idempotency key")]
    InvalidIdempotencyKey,
    /// The request head breaks RFC 9112 in a way the HTTP parser lets
    /// through (more than one `Host`); the message says how.
    #[error("malformed request head: {0}")]
    MalformedHead(&'static str),
    /// The request head is larger than [`crate::HeadLimits`] allows (in
    /// bytes or in header fields).
    #[error("request head too large")]
    HeadTooLarge,
    /// A `Transfer-Encoding` other than `chunked` alone (RFC 9112 §6.1: a
    /// coding the server does not understand is answered 501).
    #[error("unsupported transfer coding")]
    UnsupportedTransferCoding,
    /// The tenant catalog is down or too slow.
    #[error("tenant catalog unavailable")]
    CatalogUnavailable {
        /// Hint for `Retry-After`.
        retry_after: Duration,
        /// The catalog's error, for the log only.
        #[source]
        source: Option<CatalogError>,
    },
    /// No review for this id and token: unknown, expired, deleted, another
    /// tenant's, or a wrong, malformed or revoked token (one answer for all).
    #[error("review not found")]
    ReviewNotFound,
    /// A review route was called without a bearer token.
    #[error("review token missing")]
    ReviewTokenMissing,
    /// A reviewer called an owner-only review route.
    #[error("owner only")]
    OwnerOnly,
    /// A reviewer link tried to decide.
    #[error("approver only")]
    ApproverOnly,
    /// A review's version or link that does not exist.
    #[error("{0} not found")]
    ReviewPartNotFound(&'static str),
    /// The review's rules refused the change (409); the message says which.
    #[error("review conflict: {code}")]
    ReviewConflict {
        /// What to tell the client.
        message: String,
        /// The stable code.
        code: ErrorCode,
    },
    /// A stored part of the review is damaged.
    #[error("review damaged: {reason}")]
    ReviewDamaged {
        /// For the log only.
        reason: String,
    },
    /// Too many event streams are open (on the review, or in the process).
    #[error("too many event streams")]
    TooManyStreams {
        /// What to tell the client (names the limit).
        message: String,
    },
    /// A notification target that may not be used; the message says why
    /// and what to do.
    #[error("notification target not allowed: {0}")]
    TargetNotAllowed(String),
    /// No subscription of the review with this id that the caller may see.
    #[error("subscription not found")]
    SubscriptionNotFound,
    /// The review has the most subscriptions it may have.
    #[error("too many subscriptions")]
    TooManySubscriptions(i64),
}

impl ApiError {
    /// Status, message and stable code (`None`: upstream's exact body, no code).
    fn parts(&self) -> (StatusCode, String, Option<ErrorCode>) {
        use ApiError::*;
        use ErrorCode as C;
        match self {
            RouteNotFound => (StatusCode::NOT_FOUND, ROUTE_NOT_FOUND.into(), None),
            InvalidJsonBody => (StatusCode::BAD_REQUEST, "Invalid JSON body".into(), None),
            MissingData => (
                StatusCode::BAD_REQUEST,
                "Missing or invalid \"data\" field".into(),
                None,
            ),
            PayloadTooLarge { max_size } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "Payload too large (max {} encrypted)",
                    size_label(*max_size)
                ),
                None,
            ),
            PasteNotFound { compat } => (
                StatusCode::NOT_FOUND,
                "Paste not found or expired".into(),
                (!compat).then_some(C::PasteNotFound),
            ),
            PasteDamaged { .. } => (
                StatusCode::GONE,
                "the paste's stored data is damaged and cannot be read; \
                 it can be deleted (with an API key of its tenant when its delete token cannot be checked)"
                    .into(),
                Some(C::PasteDamaged),
            ),
            InvalidPasteId => (
                StatusCode::BAD_REQUEST,
                "invalid paste id: expected 6-16 characters of A-Z, a-z, 0-9".into(),
                Some(C::InvalidPasteId),
            ),
            Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "missing or malformed credentials: send Authorization: Bearer <token>".into(),
                Some(C::Unauthorized),
            ),
            MethodNotAllowed { .. } => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed on this path".into(),
                Some(C::MethodNotAllowed),
            ),
            BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                "the request body was not received in time".into(),
                Some(C::BodyTimeout),
            ),
            BodyTooSlow { min_rate } => (
                StatusCode::REQUEST_TIMEOUT,
                format!("the request body arrived slower than {min_rate} bytes per second"),
                Some(C::BodyTooSlow),
            ),
            BodyRead => (
                StatusCode::BAD_REQUEST,
                "the request body could not be read".into(),
                Some(C::BodyUnreadable),
            ),
            StoreUnavailable { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "storage is temporarily unavailable, retry later".into(),
                Some(C::StoreUnavailable),
            ),
            Overloaded => (
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is overloaded, retry later".into(),
                Some(C::Overloaded),
            ),
            ShuttingDown => (
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down".into(),
                Some(C::ShuttingDown),
            ),
            Internal(_) | StoreFailed(_) | CatalogFailed(_) | PasteFailed(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error".into(),
                Some(C::Internal),
            ),
            Forbidden => (
                StatusCode::FORBIDDEN,
                "these credentials may not use this route".into(),
                Some(C::Forbidden),
            ),
            UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send the body as Content-Type: application/json".into(),
                Some(C::UnsupportedMediaType),
            ),
            MalformedJson => (
                StatusCode::BAD_REQUEST,
                "the request body must be one valid JSON object".into(),
                Some(C::InvalidJson),
            ),
            BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large".into(),
                Some(C::BodyTooLarge),
            ),
            UnknownField { field } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                match field {
                    Some(f) => format!("unknown field \"{f}\""),
                    None => "the body has an unknown field".into(),
                },
                Some(C::UnknownField),
            ),
            InvalidField(message) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                message.clone(),
                Some(C::InvalidField),
            ),
            InvalidValue(message) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                message.clone(),
                Some(C::InvalidValue),
            ),
            InvalidId { what } => (
                StatusCode::BAD_REQUEST,
                format!("invalid {what}"),
                Some(C::InvalidId),
            ),
            NotFound => (StatusCode::NOT_FOUND, "not found".into(), Some(C::NotFound)),
            Conflict(subject) => (
                StatusCode::CONFLICT,
                format!("{subject} already exists"),
                Some(C::Conflict),
            ),
            Protected(why) => (StatusCode::CONFLICT, (*why).into(), Some(C::Protected)),
            TooManyRequests { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "too many requests, retry later".into(),
                Some(C::RateLimited),
            ),
            DataTooLarge { max_size } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "Payload too large (max {} encrypted)",
                    size_label(*max_size)
                ),
                Some(C::PayloadTooLarge),
            ),
            TenantDisabled => (
                StatusCode::FORBIDDEN,
                "this tenant is disabled".into(),
                Some(C::TenantDisabled),
            ),
            QuotaExceeded => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the tenant's storage quota is used up: delete pastes or ask for a larger quota"
                    .into(),
                Some(C::QuotaExceeded),
            ),
            IdempotencyInProgress { .. } => (
                StatusCode::CONFLICT,
                "a request with this Idempotency-Key is still in progress, retry later".into(),
                Some(C::IdempotencyInProgress),
            ),
            IdempotencyMismatch => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "this Idempotency-Key was already used with a different request body".into(),
                Some(C::IdempotencyKeyReused),
            ),
            InvalidIdempotencyKey => (
                StatusCode::BAD_REQUEST,
                "Idempotency-Key must be one header of 1-255 printable ASCII characters".into(),
                Some(C::InvalidIdempotencyKey),
            ),
            MalformedHead(why) => (StatusCode::BAD_REQUEST, (*why).into(), Some(C::BadRequest)),
            HeadTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "the request's header fields are too large or too many: send fewer or smaller headers"
                    .into(),
                Some(C::HeadersTooLarge),
            ),
            UnsupportedTransferCoding => (
                StatusCode::NOT_IMPLEMENTED,
                "unsupported Transfer-Encoding: only chunked is accepted".into(),
                Some(C::UnsupportedTransferCoding),
            ),
            CatalogUnavailable { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "the tenant catalog is temporarily unavailable, retry later".into(),
                Some(C::CatalogUnavailable),
            ),
            ReviewNotFound => (
                StatusCode::NOT_FOUND,
                "review not found: the link is wrong, revoked or expired, or the review was deleted"
                    .into(),
                Some(C::ReviewNotFound),
            ),
            ReviewTokenMissing => (
                StatusCode::UNAUTHORIZED,
                "this route needs the review link's token as `Authorization: Bearer <token>` (the `t` of the link's fragment)"
                    .into(),
                Some(C::Unauthorized),
            ),
            OwnerOnly => (
                StatusCode::FORBIDDEN,
                "only the review's owner can do this; a reviewer or approver link cannot".into(),
                Some(C::OwnerOnly),
            ),
            ApproverOnly => (
                StatusCode::FORBIDDEN,
                "only the review's owner or an approver link can decide; this is a reviewer link: comment instead, or ask the owner for an approver link".into(),
                Some(C::ApproverOnly),
            ),
            ReviewPartNotFound(what) => (
                StatusCode::NOT_FOUND,
                format!("this review has no such {what}"),
                Some(match *what {
                    "version" => C::VersionNotFound,
                    _ => C::LinkNotFound,
                }),
            ),
            ReviewConflict { message, code } => (StatusCode::CONFLICT, message.clone(), Some(*code)),
            ReviewDamaged { .. } => (
                StatusCode::GONE,
                "a stored part of this review is damaged and cannot be read".into(),
                Some(C::ReviewDamaged),
            ),
            TooManyStreams { message } => (
                StatusCode::TOO_MANY_REQUESTS,
                message.clone(),
                Some(C::TooManyStreams),
            ),
            TargetNotAllowed(why) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                why.clone(),
                Some(C::TargetNotAllowed),
            ),
            SubscriptionNotFound => (
                StatusCode::NOT_FOUND,
                "this review has no such subscription, or it is another writer's".into(),
                Some(C::SubscriptionNotFound),
            ),
            TooManySubscriptions(max) => (
                StatusCode::CONFLICT,
                format!("this review has {max} subscriptions, the most it may have: remove one first"),
                Some(C::TooManySubscriptions),
            ),
        }
    }

    /// Seconds for `Retry-After`, on the statuses that promise recovery.
    fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::StoreUnavailable { retry_after, .. }
            | ApiError::CatalogUnavailable { retry_after, .. } => {
                Some(retry_after.as_secs().max(1))
            }
            ApiError::Overloaded | ApiError::ShuttingDown => Some(1),
            ApiError::TooManyStreams { .. } => Some(5),
            ApiError::TooManyRequests { retry_after }
            | ApiError::IdempotencyInProgress { retry_after } => {
                // Round up: a client that waits this long is let through.
                Some(retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0))
                    .map(|s| s.max(1))
            }
            // Listed one by one, no wildcard: a new variant does not compile
            // until it says whether it promises recovery.
            ApiError::RouteNotFound
            | ApiError::InvalidJsonBody
            | ApiError::MissingData
            | ApiError::PayloadTooLarge { .. }
            | ApiError::PasteNotFound { .. }
            | ApiError::PasteDamaged { .. }
            | ApiError::InvalidPasteId
            | ApiError::Unauthorized
            | ApiError::MethodNotAllowed { .. }
            | ApiError::BodyTimeout
            | ApiError::BodyTooSlow { .. }
            | ApiError::BodyRead
            | ApiError::Internal(_)
            | ApiError::StoreFailed(_)
            | ApiError::CatalogFailed(_)
            | ApiError::PasteFailed(_)
            | ApiError::Forbidden
            | ApiError::UnsupportedMediaType
            | ApiError::MalformedJson
            | ApiError::BodyTooLarge
            | ApiError::UnknownField { .. }
            | ApiError::InvalidField(_)
            | ApiError::InvalidValue(_)
            | ApiError::InvalidId { .. }
            | ApiError::NotFound
            | ApiError::Conflict(_)
            | ApiError::Protected(_)
            | ApiError::DataTooLarge { .. }
            | ApiError::TenantDisabled
            | ApiError::QuotaExceeded
            | ApiError::IdempotencyMismatch
            | ApiError::InvalidIdempotencyKey
            | ApiError::MalformedHead(_)
            | ApiError::HeadTooLarge
            | ApiError::UnsupportedTransferCoding
            | ApiError::ReviewNotFound
            | ApiError::ReviewTokenMissing
            | ApiError::OwnerOnly
            | ApiError::ApproverOnly
            | ApiError::ReviewPartNotFound(_)
            | ApiError::ReviewConflict { .. }
            | ApiError::ReviewDamaged { .. }
            | ApiError::TargetNotAllowed(_)
            | ApiError::SubscriptionNotFound
            | ApiError::TooManySubscriptions(_) => None,
        }
    }

    /// Maps a store failure; `NotFound` becomes the paste-not-found answer of
    /// the calling route, damaged data `410 paste-damaged`.
    pub(crate) fn from_store(err: StoreError, compat: bool) -> Self {
        match err {
            StoreError::NotFound => ApiError::PasteNotFound { compat },
            StoreError::Unavailable { retry_after, .. } => ApiError::StoreUnavailable {
                retry_after: retry_after.unwrap_or(Duration::from_secs(1)),
                source: Some(err),
            },
            StoreError::Damaged { reason, .. } => ApiError::PasteDamaged { reason },
            StoreError::AlreadyExists | StoreError::Internal { .. } => ApiError::StoreFailed(err),
        }
    }
}

impl ApiError {
    /// Maps a catalog failure of an admin operation.
    pub(crate) fn from_catalog(err: CatalogError) -> Self {
        match err {
            CatalogError::NotFound => ApiError::NotFound,
            CatalogError::Conflict(subject) => ApiError::Conflict(subject),
            CatalogError::Protected(why) => ApiError::Protected(why),
            CatalogError::Invalid(message) => ApiError::InvalidValue(message),
            CatalogError::Unavailable { retry_after, .. } => ApiError::CatalogUnavailable {
                retry_after: retry_after.unwrap_or(Duration::from_secs(1)),
                source: Some(err),
            },
            CatalogError::Internal { .. } => ApiError::CatalogFailed(err),
        }
    }

    /// Maps a failure to open the catalog: never the client's fault, so an
    /// `Invalid` (bad configuration) is an internal error, not a 422.
    pub(crate) fn from_catalog_open(err: CatalogError) -> Self {
        match err {
            CatalogError::Unavailable { retry_after, .. } => ApiError::CatalogUnavailable {
                retry_after: retry_after.unwrap_or(Duration::from_secs(1)),
                source: Some(err),
            },
            CatalogError::NotFound
            | CatalogError::Conflict(_)
            | CatalogError::Protected(_)
            | CatalogError::Invalid(_)
            | CatalogError::Internal { .. } => ApiError::CatalogFailed(err),
        }
    }
}

impl From<crate::context::CredentialRequired> for ApiError {
    fn from(_: crate::context::CredentialRequired) -> Self {
        ApiError::Unauthorized
    }
}

impl From<crate::context::TtlOutOfRange> for ApiError {
    fn from(range: crate::context::TtlOutOfRange) -> Self {
        ApiError::InvalidField(format!(
            "\"ttl\" must be between 1 and {} seconds for this tenant",
            range.max_secs
        ))
    }
}

/// A bounded catalog call's failure (`crate::within`), mapped as the
/// catalog's: a late answer is an outage.
impl From<crate::within::CatalogStep> for ApiError {
    fn from(step: crate::within::CatalogStep) -> Self {
        use crate::within::CatalogStep;
        match step {
            CatalogStep::Timeout => ApiError::CatalogUnavailable {
                retry_after: Duration::from_secs(1),
                source: None,
            },
            CatalogStep::Open(e) => ApiError::from_catalog_open(e),
            CatalogStep::Failed(e) => ApiError::from_catalog(e),
        }
    }
}

/// Upstream's size wording: whole MB from 1 MiB up, else whole KB
/// (`Math.round`, halves away from zero).
fn size_label(max: usize) -> String {
    const MIB: usize = 1024 * 1024;
    let (unit, div) = if max >= MIB {
        ("MB", MIB)
    } else {
        ("KB", 1024)
    };
    format!("{} {unit}", (max + div / 2) / div)
}

/// The error as it travels to the logging middleware (P10: log once, there).
#[derive(Clone)]
pub(crate) struct LoggedError(pub(crate) Arc<ApiError>);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message, code) = self.parts();
        let body = api_types::ErrorBody {
            error: message,
            code: code.map(|c| c.as_str().to_owned()),
        };
        let mut response = json_response(status, &body);
        let headers = response.headers_mut();
        if let Some(secs) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        match &self {
            ApiError::MethodNotAllowed { allow } => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
            .extensions_mut()
            .insert(LoggedError(Arc::new(self)));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pastes::service::PasteError;
    use crate::reviews::service::ReviewError;

    /// One of every variant (the match below has no wildcard, so a new
    /// variant must be added here to compile).
    fn every_variant() -> Vec<ApiError> {
        let second = Duration::from_secs(1);
        let all = vec![
            ApiError::RouteNotFound,
            ApiError::InvalidJsonBody,
            ApiError::MissingData,
            ApiError::PayloadTooLarge { max_size: 1 },
            ApiError::PasteNotFound { compat: true },
            ApiError::PasteDamaged { reason: "x".into() },
            ApiError::InvalidPasteId,
            ApiError::Unauthorized,
            ApiError::MethodNotAllowed { allow: "GET" },
            ApiError::BodyTimeout,
            ApiError::BodyTooSlow { min_rate: 1 },
            ApiError::BodyRead,
            ApiError::StoreUnavailable {
                retry_after: second,
                source: None,
            },
            ApiError::Overloaded,
            ApiError::ShuttingDown,
            ApiError::Internal("x".into()),
            ApiError::StoreFailed(StoreError::AlreadyExists),
            ApiError::CatalogFailed(CatalogError::NotFound),
            ApiError::PasteFailed(Box::new(PasteError::IdsExhausted(1))),
            ApiError::Forbidden,
            ApiError::UnsupportedMediaType,
            ApiError::MalformedJson,
            ApiError::BodyTooLarge,
            ApiError::UnknownField { field: None },
            ApiError::InvalidField("x".into()),
            ApiError::InvalidValue("x".into()),
            ApiError::InvalidId { what: "x" },
            ApiError::NotFound,
            ApiError::Conflict("x"),
            ApiError::Protected("x"),
            ApiError::TooManyRequests {
                retry_after: second,
            },
            ApiError::DataTooLarge { max_size: 1 },
            ApiError::TenantDisabled,
            ApiError::QuotaExceeded,
            ApiError::IdempotencyInProgress {
                retry_after: second,
            },
            ApiError::IdempotencyMismatch,
            ApiError::InvalidIdempotencyKey,
            ApiError::MalformedHead("x"),
            ApiError::HeadTooLarge,
            ApiError::UnsupportedTransferCoding,
            ApiError::CatalogUnavailable {
                retry_after: second,
                source: None,
            },
            ApiError::ReviewNotFound,
            ApiError::ReviewTokenMissing,
            ApiError::OwnerOnly,
            ApiError::ApproverOnly,
            ApiError::ReviewPartNotFound("version"),
            ApiError::ReviewConflict {
                message: "x".into(),
                code: ErrorCode::StaleParent,
            },
            ApiError::ReviewDamaged { reason: "x".into() },
            ApiError::TooManyStreams {
                message: "x".into(),
            },
            ApiError::TargetNotAllowed("x".into()),
            ApiError::SubscriptionNotFound,
            ApiError::TooManySubscriptions(1),
        ];
        for error in &all {
            match error {
                ApiError::RouteNotFound
                | ApiError::InvalidJsonBody
                | ApiError::MissingData
                | ApiError::PayloadTooLarge { .. }
                | ApiError::PasteNotFound { .. }
                | ApiError::PasteDamaged { .. }
                | ApiError::InvalidPasteId
                | ApiError::Unauthorized
                | ApiError::MethodNotAllowed { .. }
                | ApiError::BodyTimeout
                | ApiError::BodyTooSlow { .. }
                | ApiError::BodyRead
                | ApiError::StoreUnavailable { .. }
                | ApiError::Overloaded
                | ApiError::ShuttingDown
                | ApiError::Internal(_)
                | ApiError::StoreFailed(_)
                | ApiError::CatalogFailed(_)
                | ApiError::PasteFailed(_)
                | ApiError::Forbidden
                | ApiError::UnsupportedMediaType
                | ApiError::MalformedJson
                | ApiError::BodyTooLarge
                | ApiError::UnknownField { .. }
                | ApiError::InvalidField(_)
                | ApiError::InvalidValue(_)
                | ApiError::InvalidId { .. }
                | ApiError::NotFound
                | ApiError::Conflict(_)
                | ApiError::Protected(_)
                | ApiError::TooManyRequests { .. }
                | ApiError::DataTooLarge { .. }
                | ApiError::TenantDisabled
                | ApiError::QuotaExceeded
                | ApiError::IdempotencyInProgress { .. }
                | ApiError::IdempotencyMismatch
                | ApiError::InvalidIdempotencyKey
                | ApiError::MalformedHead(_)
                | ApiError::HeadTooLarge
                | ApiError::UnsupportedTransferCoding
                | ApiError::CatalogUnavailable { .. }
                | ApiError::ReviewNotFound
                | ApiError::ReviewTokenMissing
                | ApiError::OwnerOnly
                | ApiError::ApproverOnly
                | ApiError::ReviewPartNotFound(_)
                | ApiError::ReviewConflict { .. }
                | ApiError::ReviewDamaged { .. }
                | ApiError::TooManyStreams { .. }
                | ApiError::TargetNotAllowed(_)
                | ApiError::SubscriptionNotFound
                | ApiError::TooManySubscriptions(_) => {}
            }
        }
        all
    }

    /// Every answer that tells the client to come back (503, 429, and the
    /// 409 of a create in progress) says when, and no other does.
    #[test]
    fn every_answer_that_promises_recovery_says_when() {
        for error in every_variant() {
            let name = format!("{error:?}");
            let response = error.into_response();
            let status = response.status();
            let retry_after = response.headers().get(header::RETRY_AFTER);
            let promises = status == StatusCode::SERVICE_UNAVAILABLE
                || status == StatusCode::TOO_MANY_REQUESTS
                || name.starts_with("IdempotencyInProgress");
            assert_eq!(retry_after.is_some(), promises, "{name}: {status}");
        }
    }

    /// Every code of `api_types::ErrorCode` is one some answer carries (the
    /// enum lists no code the server never sends), and every answer's code
    /// is one of them (by construction: `parts` names them).
    #[test]
    fn every_error_code_is_answered() {
        use tenancy::{ReviewRefusal as R, ReviewState};
        let mut answered: std::collections::BTreeSet<&str> = every_variant()
            .iter()
            .filter_map(|e| e.parts().2)
            .map(ErrorCode::as_str)
            .collect();
        // The variants with a code that depends on their fields.
        for error in [
            ApiError::PasteNotFound { compat: false },
            ApiError::ReviewPartNotFound("link"),
        ] {
            answered.extend(error.parts().2.map(ErrorCode::as_str));
        }
        for refusal in [
            R::NotOpen(ReviewState::Approved),
            R::StaleParent { latest: 2 },
            R::TooManyVersions(1),
            R::TooManyLinks(1),
            R::NameBound { bound: "a".into() },
            R::NameTaken,
            R::TooManyEvents(1),
            R::CommentsChanged { current: 1 },
            R::StaleVersion { latest: 2 },
            R::NameRequired,
        ] {
            let error = ApiError::from_review(ReviewError::Refused(refusal));
            answered.extend(error.parts().2.map(ErrorCode::as_str));
        }
        let listed: std::collections::BTreeSet<&str> =
            ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(answered, listed);
    }

    /// A store or catalog failure answered 500 keeps the error it came from,
    /// whole, for the log line (which prints the error and its chain).
    #[test]
    fn failures_keep_their_sources() {
        let store = ApiError::from_store(
            StoreError::Internal {
                reason: "disk said no".into(),
                source: Some("EIO".into()),
            },
            false,
        );
        let source = std::error::Error::source(&store).expect("a source");
        let inner = source
            .downcast_ref::<StoreError>()
            .expect("the store's error");
        assert!(
            std::error::Error::source(inner).is_some(),
            "and its own source"
        );
        let catalog = ApiError::from_catalog_open(CatalogError::Invalid("bad url".into()));
        let source = std::error::Error::source(&catalog).expect("a source");
        assert!(source.downcast_ref::<CatalogError>().is_some());
        assert_eq!(
            catalog.into_response().status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    /// The review refusals and failures this issue added: each a coded
    /// answer, none a 500.
    #[tokio::test]
    async fn review_refusals_answer_with_their_codes() {
        use http_body_util::BodyExt as _;
        let cases = [
            (
                ReviewError::Refused(tenancy::ReviewRefusal::TooManyEvents(10_000)),
                StatusCode::CONFLICT,
                "too-many-changes",
            ),
            (
                ReviewError::Contended,
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
            ),
            (
                ReviewError::Damaged {
                    reason: "gone".into(),
                },
                StatusCode::GONE,
                "review-damaged",
            ),
        ];
        for (error, status, code) in cases {
            let response = ApiError::from_review(error).into_response();
            assert_eq!(response.status(), status, "{code}");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["code"], code);
            assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
        }
    }

    #[test]
    fn size_labels_match_upstream() {
        assert_eq!(size_label(5 * 1024 * 1024), "5 MB");
        assert_eq!(size_label(2000), "2 KB");
        assert_eq!(size_label(524_288), "512 KB");
        assert_eq!(size_label(1536), "2 KB"); // 1.5 rounds up like Math.round
        assert_eq!(size_label(1_572_864), "2 MB");
        assert_eq!(size_label(1), "0 KB");
    }
}
