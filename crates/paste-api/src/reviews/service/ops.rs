//! The review operations: each checks the caller's role, writes any new
//! blob first, commits one catalog change, removes what the change freed
//! and tells the hub.

use std::future::Future;

use paste_store::{Namespace, Payload, StoreError, StoredPaste};
use tenancy::{
    BlobRef, CatalogError, NewDecision, NewReview, NewVersion, Principal, Pushed, ReviewEvent,
    ReviewSnapshot, ReviewState, Role, VersionRow,
};

use super::context::{
    FREED_GRACE, ID_ATTEMPTS, ID_LEN, LINK_ID_LEN, ReviewService, blob_key, fresh_id,
};
use super::error::ReviewError;
use super::tokens::{self, Token};
use crate::context::TenantCtx;

/// A token holder of one review, as the extractor found it.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) principal: Principal,
    pub(crate) namespace: Namespace,
    /// The review's tenant's limits.
    pub(crate) limits: tenancy::ReviewLimits,
}

impl Caller {
    /// Owner-only operations refuse every link.
    fn require_owner(&self) -> Result<(), ReviewError> {
        match self.principal.role {
            Role::Owner => Ok(()),
            Role::Reviewer | Role::Approver => Err(ReviewError::OwnerOnly),
        }
    }
}

/// A validated create request.
pub(crate) struct NewReviewInput {
    pub(crate) data: String,
    pub(crate) digest: String,
    pub(crate) ttl_secs: u64,
}

/// A created review, as its owner is told (the token only here).
pub(crate) struct ReviewCreated {
    pub(crate) id: String,
    pub(crate) owner_token: String,
    pub(crate) expires_at: i64,
}

/// A review as a token holder reads it: the catalog's snapshot and the
/// ciphertext of every comment set and of every decision's feedback (in
/// the snapshot's order; `None` for a decision without).
pub(crate) struct ReviewRead {
    pub(crate) snapshot: ReviewSnapshot,
    pub(crate) comments: Vec<String>,
    pub(crate) feedback: Vec<Option<String>>,
}

/// What a push did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PushResult {
    /// The new version's `n`, or the latest's when unchanged.
    pub(crate) n: i64,
    /// The plan equals the latest version's: nothing was stored.
    pub(crate) unchanged: bool,
    /// The round the new version is in (`None` when unchanged).
    pub(crate) round: Option<i64>,
}

/// A version to push, as the request gave it.
pub(crate) struct VersionPush {
    pub(crate) data: String,
    pub(crate) digest: String,
    pub(crate) parent: i64,
    pub(crate) progress: bool,
}

/// A decision, as the request gave it.
pub(crate) struct DecisionInput {
    pub(crate) decision: Decision,
    pub(crate) version: i64,
    pub(crate) name: Option<String>,
    pub(crate) feedback: Option<String>,
    /// The preview the decider's client sealed, for notifications.
    pub(crate) sealed: Option<String>,
}

/// A comment set as stored: its writer, when, and its revision.
pub(crate) struct Stored {
    pub(crate) writer: String,
    pub(crate) updated_at: i64,
    pub(crate) seq: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Approved,
    ChangesRequested,
}

impl Decision {
    fn state(self) -> ReviewState {
        match self {
            Decision::Approved => ReviewState::Approved,
            Decision::ChangesRequested => ReviewState::ChangesRequested,
        }
    }
}

impl ReviewService {
    /// Creates a review with its first version for the tenant of `ctx`.
    pub(crate) async fn create(
        &self,
        ctx: &TenantCtx,
        input: NewReviewInput,
    ) -> Result<ReviewCreated, ReviewError> {
        ctx.may_create()?;
        let tenant = &ctx.tenant;
        let now = crate::within::now_ms_i64();
        let ttl_ms = i64::try_from(input.ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        let expires_at = now.saturating_add(ttl_ms);
        let blob = self
            .put_blob(&tenant.namespace, input.data, now, expires_at)
            .await?;
        for _ in 0..ID_ATTEMPTS {
            let token = Token::generate()?;
            let new = NewReview {
                id: fresh_id(ID_LEN)?,
                owner_digest: token.digest(),
                created_at: now,
                expires_at,
                digest: input.digest.clone(),
                blob: blob.clone(),
            };
            let tenant_id = tenant.id.clone();
            let new_row = new.clone();
            let created = self
                .catalog_call(|c| async move { c.create_review(&tenant_id, &new_row).await })
                .await;
            match created {
                Ok(Ok(_event)) => {
                    return Ok(ReviewCreated {
                        id: new.id,
                        owner_token: token.reveal(),
                        expires_at,
                    });
                }
                Ok(Err(refusal)) => {
                    self.remove_blobs(&tenant.namespace, [&blob]).await;
                    return Err(ReviewError::Refused(refusal));
                }
                Err(ReviewError::Catalog(CatalogError::Conflict(_))) => continue,
                Err(other) => {
                    self.remove_blobs(&tenant.namespace, [&blob]).await;
                    return Err(other);
                }
            }
        }
        self.remove_blobs(&tenant.namespace, [&blob]).await;
        Err(ReviewError::Draw)
    }

    /// Everything of the review, with the ciphertext of each comment set and
    /// of the feedback. `admit` is told how large the answer will be (the
    /// blobs' text, as the catalog counts them) before any blob is read,
    /// and may refuse.
    ///
    /// A comment set replaced or withdrawn while the review is being read
    /// keeps its blob for [`FREED_GRACE`] after the change, so a reader of
    /// the snapshot before it still finds it. A reader that finds a blob
    /// gone all the same (slower than that) reads again from a fresh
    /// snapshot (blob ids are never reused): a read never fails because of
    /// a concurrent write. A blob still missing under an unchanged snapshot
    /// is damage, not a missing review.
    pub(crate) async fn read<E: From<ReviewError>>(
        &self,
        caller: &Caller,
        admit: &mut impl Admit<E>,
    ) -> Result<ReviewRead, E> {
        let mut seen_seq = None;
        for _ in 0..READ_ATTEMPTS {
            let snapshot = self.snapshot(caller).await?;
            admit.admit(answer_text_len(&snapshot)).await?;
            match self.read_blobs(caller, &snapshot).await {
                Ok((comments, feedback)) => {
                    return Ok(ReviewRead {
                        comments,
                        feedback,
                        snapshot,
                    });
                }
                Err(BlobRead::Missing(blob)) => {
                    if seen_seq == Some(snapshot.head.seq) {
                        return Err(ReviewError::Damaged {
                            reason: format!(
                                "the catalog names blob {blob} of review {}, which the store does not have",
                                snapshot.head.id
                            ),
                        }
                        .into());
                    }
                    seen_seq = Some(snapshot.head.seq);
                }
                Err(BlobRead::Failed(error)) => return Err(error.into()),
            }
        }
        // Changed under every attempt: a writer faster than a reader.
        Err(ReviewError::Contended.into())
    }

    /// The catalog's snapshot of the caller's review.
    async fn snapshot(&self, caller: &Caller) -> Result<ReviewSnapshot, ReviewError> {
        let head = &caller.principal.review;
        let (tenant, id) = (head.tenant.clone(), head.id.clone());
        self.catalog_call(|c| async move { c.review_snapshot(&tenant, &id).await })
            .await?
            .ok_or(ReviewError::NotFound)
    }

    /// The comment sets' and the decisions' feedback's ciphertext of
    /// `snapshot`.
    async fn read_blobs(
        &self,
        caller: &Caller,
        snapshot: &ReviewSnapshot,
    ) -> Result<(Vec<String>, Vec<Option<String>>), BlobRead> {
        // A handful of blobs (one per writer and one per round at most),
        // read in turn.
        let mut comments = Vec::with_capacity(snapshot.comments.len());
        for row in &snapshot.comments {
            comments.push(self.read_named_blob(&caller.namespace, &row.blob).await?);
        }
        let mut feedback = Vec::with_capacity(snapshot.decisions.len());
        for decision in &snapshot.decisions {
            feedback.push(match &decision.feedback {
                Some(blob) => Some(self.read_named_blob(&caller.namespace, blob).await?),
                None => None,
            });
        }
        Ok((comments, feedback))
    }

    /// Reads a blob a snapshot names, telling a missing one apart.
    async fn read_named_blob(
        &self,
        namespace: &Namespace,
        blob: &BlobRef,
    ) -> Result<String, BlobRead> {
        let key = blob_key(namespace, &blob.blob).map_err(BlobRead::Failed)?;
        match self.store_call(self.store.get(&key)).await {
            Ok(stored) => Ok(stored.payload.to_text()),
            Err(StoreError::NotFound) => Err(BlobRead::Missing(blob.blob.clone())),
            Err(other) => Err(BlobRead::Failed(ReviewError::from_store(other))),
        }
    }

    /// Version `n` with its ciphertext; `admit` as for [`read`](Self::read).
    /// A version's blob is removed only with its review: one missing under
    /// a review that is still there is damage.
    pub(crate) async fn version<E: From<ReviewError>>(
        &self,
        caller: &Caller,
        n: i64,
        admit: &mut impl Admit<E>,
    ) -> Result<(VersionRow, String), E> {
        let head = &caller.principal.review;
        let (tenant, id) = (head.tenant.clone(), head.id.clone());
        let row = self
            .catalog_call(|c| async move { c.review_version(&tenant, &id, n).await })
            .await?
            .ok_or(ReviewError::NoSuch("version"))?;
        admit.admit(blob_text_len(&row.blob)).await?;
        match self.read_named_blob(&caller.namespace, &row.blob).await {
            Ok(data) => Ok((row, data)),
            Err(BlobRead::Missing(blob)) => {
                // Deleted or expired meanwhile, or damaged.
                self.snapshot(caller).await?;
                Err(ReviewError::Damaged {
                    reason: format!(
                        "the catalog names blob {blob} of version {n} of review {}, which the store does not have",
                        head.id
                    ),
                }
                .into())
            }
            Err(BlobRead::Failed(error)) => Err(error.into()),
        }
    }

    /// Pushes a version on its parent (owner only), in any state: after
    /// a decision it opens the next round (a progress push keeps an
    /// approval). An unchanged plan stores nothing.
    pub(crate) async fn push(
        &self,
        caller: &Caller,
        push: VersionPush,
    ) -> Result<PushResult, ReviewError> {
        caller.require_owner()?;
        let VersionPush {
            data,
            digest,
            parent,
            progress,
        } = push;
        let head = &caller.principal.review;
        // The common no-op (an identical re-capture) writes no blob.
        let (tenant, id, latest) = (head.tenant.clone(), head.id.clone(), head.latest);
        let latest_row = self
            .catalog_call(|c| async move { c.review_version(&tenant, &id, latest).await })
            .await?;
        if latest_row.as_ref().is_some_and(|row| row.digest == digest) {
            return Ok(PushResult {
                n: latest,
                unchanged: true,
                round: None,
            });
        }
        let now = crate::within::now_ms_i64();
        let blob = self
            .put_blob(&caller.namespace, data, now, head.expires_at)
            .await?;
        let (tenant, id, limits) = (head.tenant.clone(), head.id.clone(), caller.limits);
        let stored = blob.clone();
        let pushed = self
            .catalog_call(|c| async move {
                let version = NewVersion {
                    parent,
                    digest: &digest,
                    blob: &stored,
                    progress,
                };
                c.push_review_version(&tenant, &id, &version, now, limits)
                    .await
            })
            .await;
        match pushed {
            Ok(Ok(Pushed::Created { n, round, event })) => {
                self.publish(caller, event);
                Ok(PushResult {
                    n,
                    unchanged: false,
                    round: Some(round),
                })
            }
            Ok(Ok(Pushed::Unchanged { n })) => {
                self.remove_blobs(&caller.namespace, [&blob]).await;
                Ok(PushResult {
                    n,
                    unchanged: true,
                    round: None,
                })
            }
            Ok(Err(refusal)) => {
                self.remove_blobs(&caller.namespace, [&blob]).await;
                Err(ReviewError::Refused(refusal))
            }
            Err(error) => {
                self.remove_blobs(&caller.namespace, [&blob]).await;
                Err(error)
            }
        }
    }

    /// Mints a reviewer's or an approver's link (owner only): its id and
    /// its token, shown once.
    pub(crate) async fn add_link(
        &self,
        caller: &Caller,
        role: Role,
    ) -> Result<(String, String), ReviewError> {
        caller.require_owner()?;
        let head = &caller.principal.review;
        for _ in 0..ID_ATTEMPTS {
            let token = Token::generate()?;
            let link = fresh_id(LINK_ID_LEN)?;
            let (tenant, id, limits, digest) = (
                head.tenant.clone(),
                head.id.clone(),
                caller.limits,
                token.digest(),
            );
            let link_id = link.clone();
            let now = crate::within::now_ms_i64();
            let added = self
                .catalog_call(|c| async move {
                    c.add_review_link(&tenant, &id, &link_id, role, &digest, now, limits)
                        .await
                })
                .await;
            match added {
                Ok(Ok(event)) => {
                    self.publish(caller, event);
                    return Ok((link, token.reveal()));
                }
                Ok(Err(refusal)) => return Err(ReviewError::Refused(refusal)),
                Err(ReviewError::Catalog(CatalogError::Conflict(_))) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(ReviewError::Draw)
    }

    /// Revokes reviewer link `link` (owner only); revoking it again is a no-op.
    pub(crate) async fn revoke(&self, caller: &Caller, link: &str) -> Result<(), ReviewError> {
        caller.require_owner()?;
        let head = &caller.principal.review;
        let (tenant, id, link) = (head.tenant.clone(), head.id.clone(), link.to_owned());
        let now = crate::within::now_ms_i64();
        let revoked = self
            .catalog_call(|c| async move { c.revoke_review_link(&tenant, &id, &link, now).await })
            .await
            .map_err(|e| match e {
                ReviewError::NotFound => ReviewError::NoSuch("link"),
                other => other,
            })?;
        if let Some(event) = revoked {
            self.publish(caller, event);
        }
        Ok(())
    }

    /// Sets or clears the review's deadline and reminder interval (ms)
    /// (the owner).
    pub(crate) async fn set_deadline(
        &self,
        caller: &Caller,
        deadline: Option<i64>,
        remind_every: Option<i64>,
    ) -> Result<(), ReviewError> {
        caller.require_owner()?;
        let head = &caller.principal.review;
        let (tenant, id) = (head.tenant.clone(), head.id.clone());
        let now = crate::within::now_ms_i64();
        self.catalog_call(|c| async move {
            c.set_review_deadline(&tenant, &id, deadline, remind_every, now)
                .await
        })
        .await
    }

    /// Stores the caller's comment set, replacing its previous one: the
    /// writer id and when it was stored.
    pub(crate) async fn put_comments(
        &self,
        caller: &Caller,
        name: String,
        version: i64,
        base: Option<i64>,
        data: String,
        sealed: Option<String>,
    ) -> Result<Stored, ReviewError> {
        let head = &caller.principal.review;
        let now = crate::within::now_ms_i64();
        let blob = self
            .put_blob(&caller.namespace, data, now, head.expires_at)
            .await?;
        let (tenant, id, writer, limits) = (
            head.tenant.clone(),
            head.id.clone(),
            caller.principal.link.clone(),
            caller.limits,
        );
        let stored = blob.clone();
        let put = self
            .catalog_call(|c| async move {
                c.put_review_comments_sealed(
                    &tenant,
                    &id,
                    &writer,
                    &name,
                    version,
                    base,
                    &stored,
                    now,
                    limits,
                    sealed.as_deref(),
                )
                .await
            })
            .await;
        match put {
            Ok(Ok(done)) => {
                let stored = Stored {
                    writer: caller.principal.link.clone(),
                    updated_at: done.event.created_at,
                    seq: done.event.seq,
                };
                self.publish(caller, done.event);
                if let Some(old) = &done.replaced {
                    self.remove_freed(&caller.namespace, old);
                }
                Ok(stored)
            }
            Ok(Err(refusal)) => {
                self.remove_blobs(&caller.namespace, [&blob]).await;
                Err(ReviewError::Refused(refusal))
            }
            Err(error) => {
                self.remove_blobs(&caller.namespace, [&blob]).await;
                Err(error)
            }
        }
    }

    /// Withdraws the caller's comment set (a no-op when it has none).
    /// With `base`, only when the set is still that revision (0: none).
    pub(crate) async fn delete_comments(
        &self,
        caller: &Caller,
        base: Option<i64>,
    ) -> Result<(), ReviewError> {
        let head = &caller.principal.review;
        let (tenant, id, writer) = (
            head.tenant.clone(),
            head.id.clone(),
            caller.principal.link.clone(),
        );
        let now = crate::within::now_ms_i64();
        let withdrawn = self
            .catalog_call(|c| async move {
                c.delete_review_comments(&tenant, &id, &writer, base, now)
                    .await
            })
            .await?
            .map_err(ReviewError::Refused)?;
        if let Some((event, blob)) = withdrawn {
            self.publish(caller, event);
            self.remove_freed(&caller.namespace, &blob);
        }
        Ok(())
    }

    /// Records this round's decision (the owner or an approver), on the
    /// version the decider read, with optional feedback: the decision as
    /// recorded.
    pub(crate) async fn decide(
        &self,
        caller: &Caller,
        input: DecisionInput,
    ) -> Result<tenancy::DecisionRow, ReviewError> {
        if !caller.principal.role.decides() {
            return Err(ReviewError::ApproverOnly);
        }
        let head = &caller.principal.review;
        let now = crate::within::now_ms_i64();
        let blob = match input.feedback {
            Some(text) => Some(
                self.put_blob(&caller.namespace, text, now, head.expires_at)
                    .await?,
            ),
            None => None,
        };
        let (tenant, id, writer) = (
            head.tenant.clone(),
            head.id.clone(),
            caller.principal.link.clone(),
        );
        let (state, version, name) = (input.decision.state(), input.version, input.name);
        let sealed = input.sealed;
        let stored = blob.clone();
        let decided = self
            .catalog_call(|c| async move {
                let decision = NewDecision {
                    state,
                    version,
                    writer: &writer,
                    name: name.as_deref(),
                    feedback: stored.as_ref(),
                    sealed: sealed.as_deref(),
                };
                c.decide_review(&tenant, &id, &decision, now).await
            })
            .await;
        let refused = match decided {
            Ok(Ok(decided)) => {
                self.publish(caller, decided.event);
                return Ok(decided.decision);
            }
            Ok(Err(refusal)) => ReviewError::Refused(refusal),
            Err(error) => error,
        };
        if let Some(blob) = &blob {
            self.remove_blobs(&caller.namespace, [blob]).await;
        }
        Err(refused)
    }

    /// Deletes the review and everything of it (owner only); its streams
    /// are told `closed`. The review is gone when this returns; the number
    /// of its blobs the store could not remove yet (they are unreachable,
    /// and removed in the background) is the answer.
    pub(crate) async fn delete(&self, caller: &Caller) -> Result<usize, ReviewError> {
        caller.require_owner()?;
        let head = &caller.principal.review;
        let (tenant, id) = (head.tenant.clone(), head.id.clone());
        let removed = self
            .catalog_call(|c| async move { c.delete_review(&tenant, &id).await })
            .await?;
        self.hub.removed(&head.tenant, &head.id);
        let pending = match removed {
            Some(removed) => {
                self.remove_blobs(&caller.namespace, removed.blobs.iter())
                    .await
            }
            None => 0,
        };
        Ok(pending)
    }

    /// Events of the caller's review after `after`, oldest first.
    pub(crate) async fn events(
        &self,
        caller: &Caller,
        after: i64,
    ) -> Result<Vec<ReviewEvent>, ReviewError> {
        let head = &caller.principal.review;
        let (tenant, id) = (head.tenant.clone(), head.id.clone());
        self.catalog_call(|c| async move {
            c.review_events(&tenant, &id, after, tenancy::MAX_EVENTS_PER_READ)
                .await
        })
        .await
    }

    /// Removes reviews that expired (rows, quota, then blobs) and tells
    /// their streams; a failure is logged and retried on the next round.
    pub(crate) async fn sweep_expired(&self, catalog: &tenancy::Catalog) {
        let now = crate::within::now_ms_i64();
        match catalog.sweep_expired_reviews(now, 1000).await {
            Ok(removed) => {
                if !removed.is_empty() {
                    tracing::info!(swept = removed.len(), "expired reviews removed");
                }
                for review in removed {
                    self.hub.removed(&review.tenant, &review.id);
                    if let Ok(namespace) = Namespace::parse(&review.namespace) {
                        self.remove_blobs(&namespace, review.blobs.iter()).await;
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "review expiry sweep failed"),
        }
    }

    /// Hands a committed event to the streams of this process.
    fn publish(&self, caller: &Caller, event: ReviewEvent) {
        let head = &caller.principal.review;
        self.hub.publish(&head.tenant, &head.id, event);
        // The change may have queued notifications: the deliverer looks.
        self.notices.notify_one();
    }

    /// Writes `text` as a new blob of `namespace` that expires with its
    /// review, durable when this returns.
    async fn put_blob(
        &self,
        namespace: &Namespace,
        text: String,
        now: i64,
        expires_at: i64,
    ) -> Result<BlobRef, ReviewError> {
        let payload = Payload::from_text(text);
        let bytes = i64::try_from(payload.stored_len()).unwrap_or(i64::MAX);
        let stored = StoredPaste {
            payload,
            created_at: u64::try_from(now).unwrap_or(0),
            expires_at: u64::try_from(expires_at).unwrap_or(0),
            delete_token: None,
            burn_after_read: false,
        };
        for _ in 0..ID_ATTEMPTS {
            let id = fresh_id(ID_LEN)?;
            let key = blob_key(namespace, &id)?;
            match self
                .store_call(self.store.put_if_absent(&key, stored.clone()))
                .await
            {
                Ok(()) => return Ok(BlobRef { blob: id, bytes }),
                Err(StoreError::AlreadyExists) => continue,
                Err(other) => return Err(ReviewError::Store(other)),
            }
        }
        Err(ReviewError::Draw)
    }

    /// Removes blobs the catalog no longer names: the number it could not
    /// remove now. Those are queued and tried again in the background (see
    /// [`retry_removals`](Self::retry_removals)); once the store fails, the
    /// rest are queued without waiting on it again.
    async fn remove_blobs<'a>(
        &self,
        namespace: &Namespace,
        blobs: impl IntoIterator<Item = &'a BlobRef>,
    ) -> usize {
        let mut failed = 0;
        for blob in blobs {
            let Ok(key) = blob_key(namespace, &blob.blob) else {
                continue;
            };
            if failed == 0 {
                match self.store_call(self.store.delete(&key)).await {
                    Ok(()) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "cannot remove a review blob now; it is tried again in the background");
                    }
                }
            }
            failed += 1;
            self.removals.push(key);
        }
        failed
    }

    /// Removes a blob a replaced or withdrawn comment set freed, after
    /// [`FREED_GRACE`]: readers of the snapshot before the change still
    /// find it (see [`read`](Self::read)).
    fn remove_freed(&self, namespace: &Namespace, blob: &BlobRef) {
        if let Ok(key) = blob_key(namespace, &blob.blob) {
            self.removals.push_after(key, FREED_GRACE);
        }
    }

    /// Removes every queued blob now, due or not (tests).
    #[cfg(test)]
    pub(crate) async fn remove_queued_now(&self) {
        self.removals.make_all_due();
        self.retry_removals().await;
    }

    /// Tries again the removals that failed, those that are due (called by
    /// the maintenance loop). Stops at the first failure: the store is still
    /// down, and the rest wait for the next round.
    pub(crate) async fn retry_removals(&self) {
        while let Some(due) = self.removals.next_due() {
            match self.store_call(self.store.delete(&due.key)).await {
                Ok(()) => {}
                Err(error) => {
                    tracing::debug!(%error, "a review blob still cannot be removed");
                    self.removals.put_back(due);
                    return;
                }
            }
        }
    }
}

/// Decides whether an answer of some size may be built: a reader's memory
/// budget (the service itself keeps none).
pub(crate) trait Admit<E> {
    /// Makes room for an answer of about `bytes`, or refuses.
    fn admit(&mut self, bytes: usize) -> impl Future<Output = Result<(), E>> + Send;
}

/// Snapshots a read tries before it gives up (each one changed under it).
const READ_ATTEMPTS: usize = 5;

/// Why a blob a snapshot names could not be read.
enum BlobRead {
    /// The store has no such blob (this id).
    Missing(String),
    /// Anything else.
    Failed(ReviewError),
}

/// The text length of a blob of `stored` bytes at most: a base64url text is
/// stored as its bytes (¾ of the text), any other as its UTF-8.
fn blob_text_len(blob: &BlobRef) -> usize {
    usize::try_from(blob.bytes)
        .unwrap_or(usize::MAX)
        .saturating_mul(4)
        .div_ceil(3)
}

/// About how long a review's answer is: its blobs' text, plus the fields
/// around them.
fn answer_text_len(snapshot: &ReviewSnapshot) -> usize {
    const PER_ROW: usize = 256;
    let blobs = snapshot.comments.iter().map(|row| &row.blob).chain(
        snapshot
            .decisions
            .iter()
            .filter_map(|d| d.feedback.as_ref()),
    );
    let rows = snapshot.versions.len()
        + snapshot.comments.len()
        + snapshot.links.len()
        + snapshot.decisions.len()
        + 1;
    blobs
        .map(blob_text_len)
        .fold(rows.saturating_mul(PER_ROW), usize::saturating_add)
}

/// The digest of a presented token (for the extractor).
pub(crate) fn presented_digest(token: &str) -> [u8; 32] {
    tokens::digest(token)
}
