//! S3 backend: one object per paste in an S3-compatible bucket.
//!
//! Layout: the object key is `<prefix><namespace>/<id>` (see
//! `PasteKey::object_key`), the object body is a record (`crate::record`: a
//! 64-byte header, then the payload), and each object also carries its expiry
//! as user metadata `x-amz-meta-expires-at` (Unix ms) and as the `Expires`
//! header, for operators and lifecycle tooling. The record is authoritative.
//!
//! # Operations
//!
//! - `put_if_absent` is a `PutObject` with `If-None-Match: *`, so S3 itself
//!   decides which of many concurrent writers wins; the others get
//!   `412 Precondition Failed` (or `409 ConditionalRequestConflict` while a
//!   concurrent conditional write is in flight). A conflict takes the slow path:
//!   the existing object is read (`GetObject`, which also yields its ETag).
//!   - Live and different from ours: [`StoreError::AlreadyExists`].
//!   - Byte-identical to ours: `Ok` — an earlier attempt of *this* put landed
//!     and the SDK's retry then hit our own object. (Every record holds a
//!     random delete-token digest and a millisecond timestamp, so two different
//!     puts do not produce the same bytes.)
//!   - Damaged: `AlreadyExists`; the object is left alone for an operator.
//!   - Expired: it is replaced *atomically* by a `PutObject` with
//!     `If-Match: <etag of the expired object>`. Of several writers racing over
//!     the same expired object, only one can match the ETag; the rest get 412.
//!     Servers without conditional overwrites (`501 NotImplemented`) get a
//!     `DeleteObject` with `If-Match: <etag>` followed by one more
//!     `If-None-Match: *` put; servers without conditional deletes either get
//!     a plain `DeleteObject` and then the conditional put.
//!   - Gone in the meantime: one more `If-None-Match: *` put.
//!
//!   Residual race: only on a server that supports neither conditional
//!   overwrites nor conditional deletes (or silently ignores `If-Match`), a slow
//!   writer's unconditional delete of the *expired* object can remove the fresh
//!   paste another writer just put in its place, and both writers report
//!   success. AWS S3 (conditional writes since 2024, conditional deletes since
//!   2025), MinIO and moto honour `If-Match` on `PutObject`, so the fallbacks
//!   are for older S3-compatible servers.
//! - `get` is a `GetObject`. The body is read with a hard cap (the largest
//!   record the service can produce, 64 MiB of payload plus the header): a
//!   larger `Content-Length` or stream is refused as [`StoreError::Damaged`]
//!   without reading it. Expiry is enforced on read (`now > expires_at` →
//!   `NotFound`), whatever S3 lifecycle has or has not deleted yet. A key
//!   that is not there is looked for in the quarantine (`HeadObject`):
//!   one `planshare-server doctor --repair` moved aside answers `Damaged`.
//! - `delete` is a `DeleteObject`; S3 answers 204 for absent keys, so it is
//!   idempotent.
//! - `health` is a `HeadBucket`.
//!
//! # Failures
//!
//! Every transport error, timeout, 5xx, throttling answer, authentication or
//! authorisation refusal and missing bucket is [`StoreError::Unavailable`] with
//! a one-second retry hint — never `NotFound`: only `NoSuchKey` on the object
//! itself means "not found". The error source is a plain description (operation,
//! HTTP status, S3 error code and message) with no request, response body or
//! credentials in it. Damaged or oversized objects are `Damaged`.
//!
//! # Time bounds
//!
//! The client has a connect timeout (at most 1 s, never above the attempt
//! timeout), a per-attempt timeout, an operation timeout and the standard retry
//! strategy with `max_attempts` attempts (which backs off and stops retrying
//! when its retry quota is spent, so an outage does not multiply the load).
//! Because the SDK's operation timeout ends when the response *headers*
//! arrive, each trait call as a whole (including reading a `GetObject` body and
//! the slow path of a put) is additionally bounded by `operation_timeout_ms`.
//!
//! Opening builds the client only: it contacts neither S3 nor the instance
//! metadata service, so the server starts while S3 is down and reports it via
//! `health` (`/readyz`). Credentials come from the standard AWS chain and are
//! resolved lazily on the first request.
//!
//! # Requirements on the server and the credentials
//!
//! The server must honour `If-None-Match: *` on `PutObject` (AWS S3 since
//! 2024, MinIO, Ceph RGW, moto, s3s-fs); one that ignores it would let a put
//! overwrite. The credentials need `s3:PutObject`, `s3:GetObject` and
//! `s3:DeleteObject` on `<bucket>/<prefix>*` and `s3:ListBucket` on the bucket:
//! without `ListBucket`, S3 answers 403 instead of 404 for a missing key, which
//! this backend must treat as an outage (and `HeadBucket` needs it too).
//! [`apply_lifecycle_rule`] also needs `s3:GetLifecycleConfiguration` and
//! `s3:PutLifecycleConfiguration`.
//!
//! Checksums are computed and validated only where S3 requires them
//! (`WhenRequired`): some S3-compatible servers store the SDK's default
//! `aws-chunked` framing verbatim.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{Region, RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, Delete, ExpirationStatus, LifecycleExpiration, LifecycleRule,
    LifecycleRuleFilter, ObjectIdentifier,
};

pub mod inventory;

use crate::record;
use crate::{
    Namespace, OpenError, PasteKey, PasteStore, S3Config, StoreError, StoredPaste, now_ms,
};

/// Largest payload a record may carry (far above what the HTTP layer accepts).
const MAX_PAYLOAD_BYTES: u64 = 64 * 1024 * 1024;
/// Size of the record header (`crate::record`).
const RECORD_HEADER_BYTES: u64 = 64;
/// Largest object `get` reads; anything bigger is refused unread.
const MAX_OBJECT_BYTES: u64 = MAX_PAYLOAD_BYTES + RECORD_HEADER_BYTES;
/// User-metadata key holding the expiry in Unix ms (`x-amz-meta-expires-at`).
const EXPIRES_AT_METADATA: &str = "expires-at";
/// Id of the lifecycle rule [`apply_lifecycle_rule`] manages.
pub const LIFECYCLE_RULE_ID: &str = "planshare-expire-pastes";
/// Upper bound of the connect timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// 9999-12-31T23:59:59.999Z: the latest instant an HTTP date can carry.
const MAX_HTTP_DATE_MS: u64 = 253_402_300_799_999;

/// Pastes as objects in an S3-compatible bucket.
#[derive(Clone)]
pub struct S3Store {
    client: Client,
    bucket: String,
    prefix: String,
    endpoint: String,
    /// Bound on every trait call as a whole (`operation_timeout_ms`).
    deadline: Duration,
}

impl fmt::Debug for S3Store {
    // The client's configuration holds the credentials provider: never print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Store")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl S3Store {
    /// Builds the client for `config`. Does not contact S3: a bucket that is
    /// missing or unreachable shows up in [`PasteStore::health`] and as
    /// [`StoreError::Unavailable`] from the operations.
    pub async fn open(config: &S3Config) -> Result<Self, OpenError> {
        validate(config)?;
        let attempt = Duration::from_millis(config.attempt_timeout_ms);
        let operation = Duration::from_millis(config.operation_timeout_ms);
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(attempt.min(MAX_CONNECT_TIMEOUT))
            .operation_attempt_timeout(attempt)
            .operation_timeout(operation)
            .build();
        let retries = RetryConfig::standard().with_max_attempts(config.max_attempts);

        // An explicit region keeps `load` from asking the instance metadata
        // service; credentials are resolved lazily, on the first request.
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(config.region.clone()));
        if !config.endpoint.is_empty() {
            loader = loader.endpoint_url(config.endpoint.clone());
        }
        let sdk = loader.load().await;
        let s3 = aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(config.force_path_style)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .timeout_config(timeouts)
            .retry_config(retries)
            .build();
        Ok(S3Store {
            client: Client::from_conf(s3),
            bucket: config.bucket.clone(),
            prefix: config.prefix.clone(),
            endpoint: config.endpoint.clone(),
            deadline: operation,
        })
    }

    /// Runs `op` within the whole-call deadline.
    async fn within<T>(
        &self,
        op: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.deadline, op).await {
            Ok(result) => result,
            Err(elapsed) => Err(StoreError::unavailable(
                "S3 did not answer in time",
                elapsed,
            )),
        }
    }

    /// `PutObject` of `body` under `key` with the precondition `cond`.
    async fn put_object(
        &self,
        key: &str,
        body: &[u8],
        expires_at: u64,
        cond: Precondition<'_>,
    ) -> Result<PutOutcome, StoreError> {
        let expires = i64::try_from(expires_at.min(MAX_HTTP_DATE_MS)).unwrap_or(i64::MAX);
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/octet-stream")
            .metadata(EXPIRES_AT_METADATA, expires_at.to_string())
            .expires(DateTime::from_millis(expires))
            .body(ByteStream::from(body.to_vec()));
        let request = match cond {
            Precondition::Absent => request.if_none_match("*"),
            Precondition::Matches(etag) => request.if_match(etag),
        };
        match request.send().await {
            Ok(_) => Ok(PutOutcome::Stored),
            Err(err) => {
                let (status, code) = status_and_code(&err);
                Ok(match (status, code.as_deref()) {
                    (Some(412 | 409), _) | (_, Some("PreconditionFailed")) => PutOutcome::Conflict,
                    (Some(404), Some("NoSuchKey")) => PutOutcome::Gone,
                    (Some(501), _) | (_, Some("NotImplemented")) => PutOutcome::NotImplemented,
                    _ => return Err(unavailable("PutObject", &err)),
                })
            }
        }
    }

    /// `GetObject` of `key`, reading at most [`MAX_OBJECT_BYTES`] of body.
    /// `None` when there is no such key.
    async fn fetch(&self, key: &str) -> Result<Option<Fetched>, StoreError> {
        let output = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => output,
            Err(err) if is_no_such_key(&err) => return Ok(None),
            Err(err) => return Err(unavailable("GetObject", &err)),
        };
        let etag = output.e_tag().map(str::to_owned);
        let declared = output
            .content_length()
            .and_then(|len| u64::try_from(len).ok());
        if let Some(len) = declared.filter(|&len| len > MAX_OBJECT_BYTES) {
            return Err(self.oversized(len));
        }
        let capacity = declared.unwrap_or(0).min(MAX_OBJECT_BYTES);
        let mut bytes = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
        let mut body = output.body;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| unreadable_body(&e))?;
            if (bytes.len() + chunk.len()) as u64 > MAX_OBJECT_BYTES {
                return Err(self.oversized((bytes.len() + chunk.len()) as u64));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Some(Fetched { etag, bytes }))
    }

    fn oversized(&self, len: u64) -> StoreError {
        StoreError::damaged(format!(
            "S3 object of {len} bytes is larger than the maximum of {MAX_OBJECT_BYTES}"
        ))
    }

    /// `DeleteObject` of `key`, with `If-Match: etag` when given.
    async fn delete_object(
        &self,
        key: &str,
        etag: Option<&str>,
    ) -> Result<DeleteOutcome, StoreError> {
        let mut request = self.client.delete_object().bucket(&self.bucket).key(key);
        if let Some(etag) = etag {
            request = request.if_match(etag);
        }
        match request.send().await {
            Ok(_) => Ok(DeleteOutcome::Deleted),
            Err(err) => {
                let (status, code) = status_and_code(&err);
                Ok(match (status, code.as_deref()) {
                    (Some(404), Some("NoSuchKey")) => DeleteOutcome::Deleted,
                    (Some(412 | 409), _) | (_, Some("PreconditionFailed")) => {
                        DeleteOutcome::Conflict
                    }
                    (Some(501), _) | (_, Some("NotImplemented")) => DeleteOutcome::NotImplemented,
                    _ => return Err(unavailable("DeleteObject", &err)),
                })
            }
        }
    }

    /// The whole `put_if_absent`, without the deadline.
    async fn put_flow(&self, key: &str, record: &[u8], expires_at: u64) -> Result<(), StoreError> {
        match self
            .put_object(key, record, expires_at, Precondition::Absent)
            .await?
        {
            PutOutcome::Stored => return Ok(()),
            PutOutcome::Conflict | PutOutcome::Gone => {}
            PutOutcome::NotImplemented => {
                tracing::error!(
                    bucket = %self.bucket,
                    "S3 does not implement If-None-Match on PutObject: this server cannot store pastes safely"
                );
                return Err(StoreError::unavailable(
                    "S3 does not support conditional writes",
                    S3Failure::plain("PutObject", "If-None-Match: * answered NotImplemented"),
                ));
            }
        }

        // Slow path: something is stored under the key.
        let Some(existing) = self.fetch(key).await? else {
            // Deleted since our put was refused: try once more.
            return self
                .last_put(key, record, expires_at, Precondition::Absent)
                .await;
        };
        if existing.bytes == record {
            return Ok(()); // an earlier attempt of this put landed
        }
        // A live object, or a damaged one not known to be expired (left
        // alone: a DELETE of its paste or an operator removes it), stays.
        if !record::is_expired(&record::decode(&existing.bytes), now_ms()) {
            return Err(StoreError::AlreadyExists);
        }

        // The existing object is expired: replace exactly that object.
        if let Some(etag) = existing.etag.as_deref() {
            match self
                .put_object(key, record, expires_at, Precondition::Matches(etag))
                .await?
            {
                PutOutcome::Stored => return Ok(()),
                PutOutcome::Conflict => return self.settle_conflict(key, record).await,
                PutOutcome::Gone => {
                    return self
                        .last_put(key, record, expires_at, Precondition::Absent)
                        .await;
                }
                PutOutcome::NotImplemented => {}
            }
        }
        // Fallback for servers without conditional overwrites.
        let conditional = existing.etag.as_deref();
        let mut outcome = self.delete_object(key, conditional).await?;
        if outcome == DeleteOutcome::NotImplemented && conditional.is_some() {
            // No conditional deletes either: the residual race of the module docs.
            outcome = self.delete_object(key, None).await?;
        }
        match outcome {
            DeleteOutcome::Deleted => {
                self.last_put(key, record, expires_at, Precondition::Absent)
                    .await
            }
            // Someone replaced the expired object first.
            DeleteOutcome::Conflict => self.settle_conflict(key, record).await,
            DeleteOutcome::NotImplemented => Err(StoreError::unavailable(
                "S3 refused to delete an expired paste",
                S3Failure::plain("DeleteObject", "answered NotImplemented"),
            )),
        }
    }

    /// The final conditional put of the slow path: no further retries.
    async fn last_put(
        &self,
        key: &str,
        record: &[u8],
        expires_at: u64,
        cond: Precondition<'_>,
    ) -> Result<(), StoreError> {
        match self.put_object(key, record, expires_at, cond).await? {
            PutOutcome::Stored => Ok(()),
            PutOutcome::Conflict | PutOutcome::Gone | PutOutcome::NotImplemented => {
                self.settle_conflict(key, record).await
            }
        }
    }

    /// After a refused conditional write: `Ok` if what is stored is byte for
    /// byte our record (an earlier attempt of ours landed), else `AlreadyExists`.
    async fn settle_conflict(&self, key: &str, record: &[u8]) -> Result<(), StoreError> {
        match self.fetch(key).await {
            Ok(Some(existing)) if existing.bytes == record => Ok(()),
            _ => Err(StoreError::AlreadyExists),
        }
    }

    async fn get_flow(&self, key: &str) -> Result<StoredPaste, StoreError> {
        let Some(existing) = self.fetch(key).await? else {
            return Err(self.missing(key).await);
        };
        let read = record::decode(&existing.bytes);
        if record::is_expired(&read, now_ms()) {
            return Err(StoreError::NotFound);
        }
        read
    }

    async fn health_flow(&self) -> Result<(), StoreError> {
        match self.client.head_bucket().bucket(&self.bucket).send().await {
            Ok(_) => Ok(()),
            Err(err) if err.as_service_error().is_some_and(|e| e.is_not_found()) => {
                Err(StoreError::unavailable(
                    "the S3 bucket does not exist",
                    S3Failure::from_sdk("HeadBucket", &err),
                ))
            }
            Err(err) => Err(unavailable("HeadBucket", &err)),
        }
    }

    /// Puts our lifecycle rule into the bucket's lifecycle configuration,
    /// keeping every other rule.
    async fn put_lifecycle_rule(&self, expire_after_days: i32) -> Result<(), StoreError> {
        let current = match self
            .client
            .get_bucket_lifecycle_configuration()
            .bucket(&self.bucket)
            .send()
            .await
        {
            Ok(output) => Some(output),
            Err(err) if err.code() == Some("NoSuchLifecycleConfiguration") => None,
            Err(err) => return Err(unavailable("GetBucketLifecycleConfiguration", &err)),
        };
        let ours = LifecycleRule::builder()
            .id(LIFECYCLE_RULE_ID)
            .filter(LifecycleRuleFilter::builder().prefix(&self.prefix).build())
            .status(ExpirationStatus::Enabled)
            .expiration(
                LifecycleExpiration::builder()
                    .days(expire_after_days)
                    .build(),
            )
            .build()
            .map_err(|e| StoreError::Internal {
                reason: "cannot build the S3 lifecycle rule".into(),
                source: Some(Box::new(e)),
            })?;
        let mut rules: Vec<LifecycleRule> = current
            .as_ref()
            .map(|c| c.rules().to_vec())
            .unwrap_or_default();
        rules.retain(|rule| rule.id() != Some(LIFECYCLE_RULE_ID));
        rules.push(ours);
        let configuration = BucketLifecycleConfiguration::builder()
            .set_rules(Some(rules))
            .build()
            .map_err(|e| StoreError::Internal {
                reason: "cannot build the S3 lifecycle configuration".into(),
                source: Some(Box::new(e)),
            })?;
        let request = self
            .client
            .put_bucket_lifecycle_configuration()
            .bucket(&self.bucket)
            .lifecycle_configuration(configuration)
            .set_transition_default_minimum_object_size(
                current.and_then(|c| c.transition_default_minimum_object_size().cloned()),
            );
        request
            .send()
            .await
            .map(|_| ())
            .map_err(|err| unavailable("PutBucketLifecycleConfiguration", &err))
    }
}

#[async_trait::async_trait]
impl PasteStore for S3Store {
    fn backend(&self) -> &'static str {
        "s3"
    }

    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        let record = record::encode(&paste);
        if record.len() as u64 > MAX_OBJECT_BYTES {
            return Err(StoreError::internal(format!(
                "paste larger than the S3 backend's maximum of {MAX_PAYLOAD_BYTES} bytes"
            )));
        }
        let key = key.object_key(&self.prefix);
        self.within(self.put_flow(&key, &record, paste.expires_at))
            .await
    }

    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        let key = key.object_key(&self.prefix);
        self.within(self.get_flow(&key)).await
    }

    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        let key = key.object_key(&self.prefix);
        self.within(async {
            match self.delete_object(&key, None).await? {
                DeleteOutcome::Deleted => Ok(()),
                DeleteOutcome::Conflict | DeleteOutcome::NotImplemented => {
                    Err(StoreError::unavailable(
                        "S3 refused to delete the paste",
                        S3Failure::plain("DeleteObject", "unconditional delete was refused"),
                    ))
                }
            }
        })
        .await
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.within(self.health_flow()).await
    }

    /// Lists the namespace's objects a page (up to 1 000) at a time and
    /// deletes each page with one `DeleteObjects`; each call has the usual
    /// deadline. Listing restarts from the top after each page, so objects
    /// written meanwhile are found too, until a listing comes back empty.
    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let prefix = namespace.object_prefix(&self.prefix);
        let mut removed = 0;
        loop {
            let listed = self
                .within(async {
                    self.client
                        .list_objects_v2()
                        .bucket(&self.bucket)
                        .prefix(&prefix)
                        .send()
                        .await
                        .map_err(|err| unavailable("ListObjectsV2", &err))
                })
                .await?;
            let keys: Vec<ObjectIdentifier> = listed
                .contents()
                .iter()
                .filter_map(|object| object.key())
                .filter_map(|key| ObjectIdentifier::builder().key(key).build().ok())
                .collect();
            if keys.is_empty() {
                return Ok(removed);
            }
            let count = keys.len() as u64;
            let delete = Delete::builder()
                .set_objects(Some(keys))
                .quiet(true)
                .build()
                .map_err(|e| StoreError::internal(format!("cannot build DeleteObjects: {e}")))?;
            let deleted = self
                .within(async {
                    self.client
                        .delete_objects()
                        .bucket(&self.bucket)
                        .delete(delete)
                        .send()
                        .await
                        .map_err(|err| unavailable("DeleteObjects", &err))
                })
                .await?;
            if let Some(error) = deleted.errors().first() {
                return Err(StoreError::unavailable(
                    "S3 refused to delete a purged paste",
                    S3Failure::plain(
                        "DeleteObjects",
                        error.message().unwrap_or("an object was not deleted"),
                    ),
                ));
            }
            removed += count;
        }
    }
}

/// Puts an S3 lifecycle rule (id [`LIFECYCLE_RULE_ID`]) on `config.bucket` that
/// expires objects under `config.prefix` `expire_after_days` days after they
/// were written, so expired pastes are eventually deleted without a sweeper.
///
/// Other rules of the bucket are kept; an earlier version of our rule is
/// replaced. Reads never depend on it (expiry is enforced on read), so the
/// number of days should be at least the longest paste lifetime.
///
/// Configuration problems (empty bucket, `expire_after_days` of 0) come back as
/// [`StoreError::Internal`]; an unreachable or refusing S3 as
/// [`StoreError::Unavailable`].
pub async fn apply_lifecycle_rule(
    config: &S3Config,
    expire_after_days: u32,
) -> Result<(), StoreError> {
    let days = i32::try_from(expire_after_days)
        .ok()
        .filter(|&d| d > 0)
        .ok_or_else(|| {
            StoreError::internal(format!(
                "invalid lifecycle expiry of {expire_after_days} days: must be 1 to {}",
                i32::MAX
            ))
        })?;
    let store = S3Store::open(config)
        .await
        .map_err(|e| StoreError::Internal {
            reason: e.to_string(),
            source: Some(Box::new(e)),
        })?;
    store.put_lifecycle_rule(days).await
}

fn validate(config: &S3Config) -> Result<(), OpenError> {
    let fail = |msg: &str| Err(OpenError::Config(msg.to_owned()));
    if config.bucket.is_empty() {
        return fail("store.s3.bucket is not set (PLANSHARE_S3_BUCKET)");
    }
    if config.region.is_empty() {
        return fail("store.s3.region is empty");
    }
    if !(config.endpoint.is_empty()
        || config.endpoint.starts_with("http://")
        || config.endpoint.starts_with("https://"))
    {
        return fail("store.s3.endpoint must be an http:// or https:// URL (or empty for AWS)");
    }
    if config.attempt_timeout_ms == 0 || config.operation_timeout_ms == 0 {
        return fail("store.s3.attempt_timeout_ms and operation_timeout_ms must be positive");
    }
    if config.max_attempts == 0 {
        return fail("store.s3.max_attempts must be at least 1");
    }
    Ok(())
}

/// The condition of a conditional `PutObject`.
#[derive(Clone, Copy)]
enum Precondition<'a> {
    /// `If-None-Match: *`: only if no object exists.
    Absent,
    /// `If-Match: <etag>`: only if exactly this object exists.
    Matches(&'a str),
}

/// What a conditional `PutObject` did.
enum PutOutcome {
    Stored,
    /// 412 or 409: the precondition does not hold (or a concurrent
    /// conditional write is in flight).
    Conflict,
    /// 404 `NoSuchKey` on an `If-Match` put: the object is gone.
    Gone,
    /// 501: the server does not support this precondition.
    NotImplemented,
}

/// What a (conditional) `DeleteObject` did.
#[derive(PartialEq, Eq)]
enum DeleteOutcome {
    /// Deleted, or there was nothing to delete.
    Deleted,
    /// `If-Match` did not hold.
    Conflict,
    /// 501: the server does not support this precondition.
    NotImplemented,
}

/// An object read by `fetch`.
struct Fetched {
    etag: Option<String>,
    bytes: Vec<u8>,
}

/// A `GetObject` body that broke off while it was read.
fn unreadable_body(err: &(dyn std::error::Error + 'static)) -> StoreError {
    StoreError::unavailable(
        "the S3 object could not be read",
        S3Failure::describe("GetObject", err),
    )
}

fn status_and_code<E: ProvideErrorMetadata>(
    err: &SdkError<E, HttpResponse>,
) -> (Option<u16>, Option<String>) {
    let status = err.raw_response().map(|r| r.status().as_u16());
    (status, err.code().map(str::to_owned))
}

fn is_no_such_key<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    matches!(status_and_code(err), (Some(404), Some(code)) if code == "NoSuchKey")
}

/// Maps any SDK failure that is not an expected answer to `Unavailable`.
fn unavailable<E>(op: &'static str, err: &SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let (status, code) = status_and_code(err);
    let reason = match err {
        SdkError::TimeoutError(_) => "S3 did not answer in time",
        SdkError::DispatchFailure(d) if d.is_timeout() => "S3 did not answer in time",
        SdkError::DispatchFailure(d) if d.is_io() => "cannot reach S3",
        // Mostly: no usable credentials in the AWS credential chain.
        SdkError::DispatchFailure(_) => CREDENTIALS_REASON,
        SdkError::ResponseError(_) => "S3 sent a response that could not be read",
        SdkError::ConstructionFailure(_) => "the S3 request could not be prepared",
        SdkError::ServiceError(_) => service_reason(status, code.as_deref()),
        _ => "the S3 request failed",
    };
    let failure = S3Failure::from_sdk(op, err);
    if reason == AUTH_REASON || reason == CREDENTIALS_REASON {
        tracing::warn!(
            operation = op,
            error = %failure,
            "S3 refused the request: check the credentials and the bucket policy"
        );
    }
    StoreError::unavailable(reason, failure)
}

const AUTH_REASON: &str = "S3 refused the credentials or the access";
const CREDENTIALS_REASON: &str = "the S3 request could not be sent (credentials unavailable?)";

fn service_reason(status: Option<u16>, code: Option<&str>) -> &'static str {
    const AUTH_CODES: &[&str] = &[
        "AccessDenied",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AllAccessDisabled",
        "AccountProblem",
        "RequestTimeTooSkewed",
    ];
    const THROTTLE_CODES: &[&str] = &[
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
    ];
    match (status, code) {
        (_, Some("NoSuchBucket")) => "the S3 bucket does not exist",
        (_, Some(c)) if AUTH_CODES.contains(&c) => AUTH_REASON,
        (Some(401 | 403), _) => AUTH_REASON,
        (_, Some(c)) if THROTTLE_CODES.contains(&c) => "S3 is throttling requests",
        (Some(429), _) => "S3 is throttling requests",
        (Some(500..=599), _) => "S3 is failing",
        _ => "S3 rejected the request",
    }
}

/// The log-safe description of an S3 failure kept as an error source:
/// operation, status, error code and message, no request or body.
#[derive(Debug)]
struct S3Failure {
    operation: &'static str,
    status: Option<u16>,
    code: Option<String>,
    detail: String,
}

impl S3Failure {
    fn from_sdk<E>(operation: &'static str, err: &SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let (status, code) = status_and_code(err);
        // Only the error chain below the `SdkError`: its own `Debug` (which
        // `DisplayErrorContext` appends) would include the raw HTTP response.
        let detail = match std::error::Error::source(err) {
            Some(source) => format!("{err}: {}", DisplayErrorContext(source)),
            None => err.to_string(),
        };
        S3Failure {
            operation,
            status,
            code,
            detail,
        }
    }

    fn describe(operation: &'static str, err: &(dyn std::error::Error + 'static)) -> Self {
        S3Failure {
            operation,
            status: None,
            code: None,
            detail: DisplayErrorContext(err).to_string(),
        }
    }

    fn plain(operation: &'static str, detail: &str) -> Self {
        S3Failure {
            operation,
            status: None,
            code: None,
            detail: detail.to_owned(),
        }
    }
}

impl fmt::Display for S3Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3 {}", self.operation)?;
        if let Some(status) = self.status {
            write!(f, " HTTP {status}")?;
        }
        if let Some(code) = &self.code {
            write!(f, " {code}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

impl std::error::Error for S3Failure {}

#[cfg(test)]
mod tests {
    // A failed step is a failed test.
    #![allow(clippy::unwrap_used, clippy::print_stderr)]

    use super::*;

    #[test]
    fn configuration_is_checked_before_anything_else() {
        let base = S3Config {
            bucket: "b".into(),
            ..S3Config::default()
        };
        assert!(validate(&base).is_ok());
        for (config, needle) in [
            (
                S3Config {
                    bucket: String::new(),
                    ..base.clone()
                },
                "PLANSHARE_S3_BUCKET",
            ),
            (
                S3Config {
                    region: String::new(),
                    ..base.clone()
                },
                "region",
            ),
            (
                S3Config {
                    endpoint: "localhost:9000".into(),
                    ..base.clone()
                },
                "endpoint",
            ),
            (
                S3Config {
                    max_attempts: 0,
                    ..base.clone()
                },
                "max_attempts",
            ),
            (
                S3Config {
                    operation_timeout_ms: 0,
                    ..base.clone()
                },
                "timeout",
            ),
        ] {
            match validate(&config) {
                Err(OpenError::Config(msg)) => assert!(msg.contains(needle), "{msg}"),
                other => panic!("{config:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn service_errors_are_classified_without_not_found() {
        assert_eq!(
            service_reason(Some(404), Some("NoSuchBucket")),
            "the S3 bucket does not exist"
        );
        assert_eq!(
            service_reason(Some(403), Some("InvalidAccessKeyId")),
            AUTH_REASON
        );
        assert_eq!(
            service_reason(Some(403), Some("SignatureDoesNotMatch")),
            AUTH_REASON
        );
        assert_eq!(service_reason(Some(403), None), AUTH_REASON);
        assert_eq!(
            service_reason(Some(503), Some("SlowDown")),
            "S3 is throttling requests"
        );
        assert_eq!(
            service_reason(Some(500), Some("InternalError")),
            "S3 is failing"
        );
    }

    /// The test server's endpoint, or `None` (test skipped) outside CI.
    fn endpoint() -> Option<String> {
        match std::env::var("PLANSHARE_TEST_S3_ENDPOINT") {
            Ok(endpoint) if !endpoint.is_empty() => Some(endpoint),
            _ if std::env::var_os("CI").is_some() => {
                panic!("PLANSHARE_TEST_S3_ENDPOINT is not set: scripts/test starts an S3 server")
            }
            _ => {
                eprintln!("skipped: PLANSHARE_TEST_S3_ENDPOINT is not set (no S3 test server)");
                None
            }
        }
    }

    fn random_hex() -> String {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).unwrap();
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[tokio::test]
    async fn lifecycle_rule_is_stored_and_other_rules_are_kept() {
        let Some(endpoint) = endpoint() else { return };
        let config = S3Config {
            endpoint,
            bucket: format!("planshare-lc-{}", random_hex()),
            prefix: "pastes/".into(),
            ..S3Config::default()
        };
        let store = S3Store::open(&config).await.unwrap();
        store
            .client
            .create_bucket()
            .bucket(&config.bucket)
            .send()
            .await
            .unwrap();

        // Someone else's rule, which must survive.
        let other = LifecycleRule::builder()
            .id("someone-elses-rule")
            .filter(LifecycleRuleFilter::builder().prefix("logs/").build())
            .status(ExpirationStatus::Enabled)
            .expiration(LifecycleExpiration::builder().days(3).build())
            .build()
            .unwrap();
        store
            .client
            .put_bucket_lifecycle_configuration()
            .bucket(&config.bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .rules(other)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();

        for days in [30, 45] {
            apply_lifecycle_rule(&config, days).await.unwrap();
            let read = store
                .client
                .get_bucket_lifecycle_configuration()
                .bucket(&config.bucket)
                .send()
                .await
                .unwrap();
            let ids: Vec<_> = read.rules().iter().filter_map(|r| r.id()).collect();
            assert_eq!(ids.len(), 2, "{ids:?}");
            assert!(ids.contains(&"someone-elses-rule"), "{ids:?}");
            let ours = read
                .rules()
                .iter()
                .find(|r| r.id() == Some(LIFECYCLE_RULE_ID))
                .unwrap();
            assert_eq!(ours.status(), &ExpirationStatus::Enabled);
            assert_eq!(ours.expiration().and_then(|e| e.days()), Some(days as i32));
            assert_eq!(ours.filter().and_then(|f| f.prefix()), Some("pastes/"));
        }
    }

    #[tokio::test]
    async fn lifecycle_rule_rejects_bad_input() {
        let config = S3Config {
            bucket: "b".into(),
            ..S3Config::default()
        };
        assert!(matches!(
            apply_lifecycle_rule(&config, 0).await,
            Err(StoreError::Internal { .. })
        ));
        let no_bucket = S3Config::default();
        match apply_lifecycle_rule(&no_bucket, 7).await {
            Err(StoreError::Internal { reason, .. }) => {
                assert!(reason.contains("PLANSHARE_S3_BUCKET"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}
