//! Creating a paste: idempotency, the catalog index and quota, and taking
//! back whatever half of a create did not hold.

use std::time::Duration;

use paste_store::{DeleteToken, PasteId, PasteKey, Payload, StoreError, StoredPaste, now_ms};
use tenancy::{Idempotency, PasteRecord};

use super::context::PasteService;
use super::error::PasteError;
use crate::context::TenantCtx;
use crate::within::now_ms_i64;

/// Fresh ids tried when the store already holds the drawn one.
const ID_ATTEMPTS: usize = 5;

/// A validated create request.
pub(crate) struct NewPaste {
    /// The payload in its stored form.
    pub(crate) payload: Payload,
    pub(crate) ttl_secs: u64,
    pub(crate) burn_after_read: bool,
    /// The request's idempotency key with the SHA-256 of its body.
    pub(crate) idempotency: Option<(String, [u8; 32])>,
    /// Index the paste in the catalog even when nothing else requires it
    /// (the v1 routes list every paste they create).
    pub(crate) always_index: bool,
}

/// A stored paste, as its creator is told.
#[derive(Debug)]
pub(crate) struct Created {
    pub(crate) id: String,
    /// The delete token, shown once; none for a replayed create (the token
    /// is stored only as a digest).
    pub(crate) token: Option<DeleteToken>,
    /// Unix milliseconds.
    pub(crate) expires_at: i64,
    /// This is the answer of an earlier create with the same idempotency key.
    pub(crate) replayed: bool,
}

/// What the catalog said to an index write.
enum Reservation {
    Reserved,
    OverQuota,
    IdTaken,
}

impl PasteService {
    /// Stores a paste for the tenant of `ctx`. A paste is indexed in the
    /// catalog (accounted against the quota, listable, burnable) unless it
    /// is a plain create on the default tenant without a quota — the
    /// upstream fast path, which touches no database. With an idempotency
    /// key, a retry of a finished create gets that create's paste again.
    pub(crate) async fn create(
        &self,
        ctx: &TenantCtx,
        request: NewPaste,
    ) -> Result<Created, PasteError> {
        ctx.may_create()?;
        let tenant = &ctx.tenant;
        // Idempotency records belong to the credential that made them: the
        // API key, or none (anonymous, e.g. through the tenant's host).
        let credential = ctx.key.as_ref().map(|owner| owner.key.clone());
        if let Some((key, digest)) = &request.idempotency {
            let (key, digest) = (key.clone(), *digest);
            let tenant_id = tenant.id.clone();
            let credential = credential.clone();
            let lease_ms = i64::try_from(self.idempotency_lease().as_millis()).unwrap_or(i64::MAX);
            let started = self
                .catalog_call(|c| async move {
                    c.begin_idempotent(
                        &tenant_id,
                        credential.as_ref(),
                        &key,
                        &digest,
                        now_ms_i64(),
                        lease_ms,
                    )
                    .await
                })
                .await?;
            match started {
                Idempotency::Started => {}
                Idempotency::Completed {
                    paste_id,
                    expires_at,
                } => {
                    return Ok(Created {
                        id: paste_id,
                        token: None,
                        expires_at,
                        replayed: true,
                    });
                }
                Idempotency::InProgress { retry_after_ms } => {
                    return Err(PasteError::IdempotencyInProgress {
                        retry_after: Duration::from_millis(
                            u64::try_from(retry_after_ms).unwrap_or(1),
                        ),
                    });
                }
                Idempotency::Mismatch => return Err(PasteError::IdempotencyMismatch),
            }
        }
        let outcome = self.store_new(ctx, &request).await;
        if let Some((key, _)) = &request.idempotency {
            let tenant_id = tenant.id.clone();
            let key = key.clone();
            let finished = match &outcome {
                Ok(created) => {
                    let (id, expires_at) = (created.id.clone(), created.expires_at);
                    self.catalog_call(|c| async move {
                        c.complete_idempotent(
                            &tenant_id,
                            credential.as_ref(),
                            &key,
                            &id,
                            expires_at,
                        )
                        .await
                    })
                    .await
                }
                Err(_) => {
                    self.catalog_call(|c| async move {
                        c.abandon_idempotent(&tenant_id, credential.as_ref(), &key)
                            .await
                    })
                    .await
                }
            };
            if let Err(error) = finished {
                // The paste itself is stored (or not) as reported; a retry
                // with the key once the lease has run out starts afresh.
                tracing::warn!(%error, "cannot record the idempotency outcome");
            }
        }
        outcome
    }

    /// How long a create under an idempotency key holds the key before a
    /// retry may take it over (its record otherwise stays "in progress"
    /// when the create never finishes: the server crashed, or dropped the
    /// request with its connection). The longest a create runs after taking
    /// the key: the store and index writes (side by side, each bounded by
    /// the store timeout), taking back a half-written paste (the same
    /// bound), and recording the outcome (a catalog call: opening and the
    /// query, each bounded the same) — four store timeouts, 40 s by default.
    pub(crate) fn idempotency_lease(&self) -> Duration {
        self.timeout.saturating_mul(4)
    }

    async fn store_new(&self, ctx: &TenantCtx, request: &NewPaste) -> Result<Created, PasteError> {
        let tenant = &ctx.tenant;
        let token = DeleteToken::generate().map_err(PasteError::Draw)?;
        let created_at = now_ms();
        let expires_at = created_at.saturating_add(request.ttl_secs.saturating_mul(1000));
        let paste = StoredPaste {
            payload: request.payload.clone(),
            created_at,
            expires_at,
            delete_token: Some(token.digest()),
            burn_after_read: request.burn_after_read,
        };
        // Idempotent creates are indexed too: a replay checks that its paste
        // is still there.
        let index = request.always_index
            || request.burn_after_read
            || request.idempotency.is_some()
            || !tenant.is_default
            || tenant.has_quota;
        let bytes = i64::try_from(paste.payload.stored_len()).unwrap_or(i64::MAX);
        for _ in 0..ID_ATTEMPTS {
            let id = PasteId::generate(tenant.id_length).map_err(PasteError::Draw)?;
            let key = ctx.key(id);
            let store = self.store_call(self.store.put_if_absent(&key, paste.clone()));
            // An indexed paste is written to the store and to the catalog
            // (its index row and quota reservation) at the same time; it is
            // acknowledged only when both hold, and whichever half succeeded
            // alone is undone.
            let (reserved, stored) = if index {
                let record = PasteRecord {
                    id: key.id().to_string(),
                    bytes,
                    created_at: i64::try_from(created_at).unwrap_or(i64::MAX),
                    expires_at: i64::try_from(expires_at).unwrap_or(i64::MAX),
                    burn_after_read: request.burn_after_read,
                };
                let (reserved, stored) = tokio::join!(self.reserve(ctx, record), store);
                (Some(reserved), stored)
            } else {
                (None, store.await)
            };
            match (reserved, stored) {
                (None | Some(Ok(Reservation::Reserved)), Ok(())) => {
                    return Ok(Created {
                        id: key.id().to_string(),
                        token: Some(token),
                        expires_at: i64::try_from(expires_at).unwrap_or(i64::MAX),
                        replayed: false,
                    });
                }
                // Stored but not accounted: take the paste back.
                (Some(Ok(Reservation::IdTaken)), Ok(())) => self.discard(&key).await,
                (Some(Ok(Reservation::OverQuota)), Ok(())) => {
                    self.discard(&key).await;
                    return Err(PasteError::QuotaExceeded);
                }
                (Some(Err(error)), Ok(())) => {
                    self.discard(&key).await;
                    return Err(error);
                }
                (reservation, Err(error)) => {
                    if let Some(Ok(Reservation::Reserved)) = reservation {
                        self.unindex(&tenant.id, key.id().as_str()).await;
                    }
                    match error {
                        StoreError::AlreadyExists => continue,
                        e => return Err(PasteError::Store(e)),
                    }
                }
            }
        }
        Err(PasteError::IdsExhausted(ID_ATTEMPTS))
    }

    /// Writes a paste's index row and quota reservation (group-committed
    /// with other creates' writes).
    async fn reserve(
        &self,
        ctx: &TenantCtx,
        record: PasteRecord,
    ) -> Result<Reservation, PasteError> {
        let written = tokio::time::timeout(
            self.timeout,
            self.index.record(ctx.tenant.id.clone(), record),
        )
        .await
        .map_err(|_| PasteError::CatalogTimeout)?;
        match written {
            Ok(true) => Ok(Reservation::Reserved),
            Ok(false) => Ok(Reservation::OverQuota),
            Err(tenancy::CatalogError::Conflict(_)) => Ok(Reservation::IdTaken),
            Err(e) => Err(PasteError::Catalog(e)),
        }
    }

    /// Removes a paste this create stored but may not keep (not accounted).
    /// A failure leaves it to expire: it was never acknowledged.
    async fn discard(&self, key: &PasteKey) {
        if let Err(error) = self.store_call(self.store.delete(key)).await {
            tracing::warn!(%error, "cannot remove an unaccounted paste; it will expire");
        }
    }
}
