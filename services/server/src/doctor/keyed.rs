//! The doctor over the stores that name entries by flat keys: Redis
//! (`SCAN`) and S3 (`ListObjectsV2`). A listing gives keys in no order the
//! catalog can follow (Redis) or in an order of its own (S3), so the
//! catalog is asked about each page of keys (one query per tenant per
//! page), and the rows are then read a page at a time and their keys
//! looked up: memory stays flat however many pastes there are (a tenant's
//! review blobs are held in a map, as on fs).
//!
//! Both stores expire entries themselves (Redis) or let reads treat them
//! as gone (S3, until its lifecycle rule deletes them), and a put never
//! replaces a live entry, so the findings are the same as on fs less the
//! temporary files.

use std::collections::{BTreeSet, HashMap};

use anyhow::Context as _;
use paste_store::{
    Namespace, PasteId, PasteKey, RECORD_HEADER_LEN, RecordProblem, RedisStore, S3Repair, S3Store,
    StoreError, StoredKeyKind, ValueHead, check_record_text, inspect_record,
};
use tenancy::{Catalog, Tenant, TenantId};

use super::{DoctorOptions, FindingKind, Ledger, Report};
use crate::Settings;

/// Catalog rows read per query.
const ROW_PAGE: i64 = 1000;

/// A store whose entries are keys in a flat listing, as the walk needs it.
pub(super) trait KeyedStore {
    /// The backend's name in the report.
    const BACKEND: &'static str;
    /// The context of a failed listing.
    const LISTING: &'static str;
    /// What an expired entry that is still stored means on this backend.
    const EXPIRED: &'static str;

    /// The key of `key`.
    fn name_of(&self, key: &PasteKey) -> String;
    /// What the listed key `name` is.
    fn classify(&self, name: &str) -> StoredKeyKind;
    /// The keys of `namespace`, as a pattern for a person.
    fn namespace_pattern(&self, namespace: &str) -> String;
    /// One page of keys from `cursor` (`None`: the start), and the cursor
    /// of the next page (`None`: done).
    async fn list(
        &self,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), StoreError>;
    /// The heads of `names`' values; `None` for one that is gone.
    async fn heads(&self, names: &[String]) -> Result<Vec<Option<ValueHead>>, StoreError>;
    /// The whole value of `name`, if it is there.
    async fn value(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Whether each of `names` is stored.
    async fn exist(&self, names: &[String]) -> Result<Vec<bool>, StoreError>;
    /// Moves `name` (as `head` saw it) aside; where to, or `None` when it
    /// is gone or changed.
    async fn quarantine(&self, name: &str, head: &ValueHead) -> Result<Option<String>, StoreError>;
    /// Removes the expired `name` (as `head` saw it); whether it did.
    async fn remove_expired(&self, name: &str, head: &ValueHead) -> Result<bool, StoreError>;
}

/// Keys asked for per `SCAN` call.
const SCAN_COUNT: usize = 1000;

impl KeyedStore for RedisStore {
    const BACKEND: &'static str = "redis";
    const LISTING: &'static str = "cannot scan the Redis keys";
    const EXPIRED: &'static str = "expired, and kept by Redis (a key without a time to live)";

    fn name_of(&self, key: &PasteKey) -> String {
        self.key_name(key)
    }
    fn classify(&self, name: &str) -> StoredKeyKind {
        RedisStore::classify(self, name)
    }
    fn namespace_pattern(&self, namespace: &str) -> String {
        format!("{}{namespace}:*", self.key_prefix())
    }
    async fn list(
        &self,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), StoreError> {
        let from = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
        let (next, names) = self.scan_keys(from, SCAN_COUNT).await?;
        Ok((names, (next != 0).then(|| next.to_string())))
    }
    async fn heads(&self, names: &[String]) -> Result<Vec<Option<ValueHead>>, StoreError> {
        RedisStore::heads(self, names).await
    }
    async fn value(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        RedisStore::value(self, name).await
    }
    async fn exist(&self, names: &[String]) -> Result<Vec<bool>, StoreError> {
        RedisStore::exist(self, names).await
    }
    async fn quarantine(
        &self,
        name: &str,
        _head: &ValueHead,
    ) -> Result<Option<String>, StoreError> {
        RedisStore::quarantine(self, name).await
    }
    async fn remove_expired(&self, name: &str, _head: &ValueHead) -> Result<bool, StoreError> {
        self.remove(name).await
    }
}

impl KeyedStore for S3Store {
    const BACKEND: &'static str = "s3";
    const LISTING: &'static str = "cannot list the S3 objects";
    const EXPIRED: &'static str = "expired, and still stored (reads answer not found; the bucket's lifecycle rule has not removed it)";

    fn name_of(&self, key: &PasteKey) -> String {
        self.object_name(key)
    }
    fn classify(&self, name: &str) -> StoredKeyKind {
        S3Store::classify(self, name)
    }
    fn namespace_pattern(&self, namespace: &str) -> String {
        format!("{}{namespace}/*", self.prefix())
    }
    async fn list(
        &self,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), StoreError> {
        self.list_page(cursor).await
    }
    async fn heads(&self, names: &[String]) -> Result<Vec<Option<ValueHead>>, StoreError> {
        S3Store::heads(self, names).await
    }
    async fn value(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.object(name).await
    }
    async fn exist(&self, names: &[String]) -> Result<Vec<bool>, StoreError> {
        S3Store::exist(self, names).await
    }
    async fn quarantine(&self, name: &str, head: &ValueHead) -> Result<Option<String>, StoreError> {
        Ok(match S3Store::quarantine(self, name, head).await? {
            S3Repair::Done(dest) => dest,
            S3Repair::Changed => None,
        })
    }
    async fn remove_expired(&self, name: &str, head: &ValueHead) -> Result<bool, StoreError> {
        Ok(S3Store::remove_expired(self, name, head).await? != S3Repair::Changed)
    }
}

/// Checks a Redis store.
pub(super) async fn check_redis(
    settings: &Settings,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store = RedisStore::open(&settings.store.redis)
        .await
        .context("cannot open the Redis store")?;
    check(store, catalog, options).await
}

/// Checks an S3 store.
pub(super) async fn check_s3(
    settings: &Settings,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store = S3Store::open(&settings.store.s3)
        .await
        .context("cannot open the S3 store")?;
    check(store, catalog, options).await
}

async fn check<S: KeyedStore>(
    store: S,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let (tenants, purging) = super::tenants_to_check(catalog, options).await?;
    let mut review_blobs: HashMap<String, HashMap<String, i64>> = HashMap::new();
    for tenant in &tenants {
        let blobs = catalog
            .review_blobs(&tenant.id)
            .await
            .with_context(|| format!("cannot list the review blobs of {}", tenant.id))?;
        review_blobs.insert(
            tenant.namespace.clone(),
            blobs.into_iter().map(|b| (b.blob, b.bytes)).collect(),
        );
    }
    let mut walk = Walk {
        store,
        catalog,
        ledger: Ledger::new(options, tenants.len()),
        tenants: &tenants,
        review_blobs,
        unknown_namespaces: BTreeSet::new(),
    };
    let mut cursor = None;
    loop {
        let (names, next) = walk.store.list(cursor).await.context(S::LISTING)?;
        walk.page(names, options, &purging).await?;
        walk.ledger
            .progress
            .tick(walk.ledger.checked.entries, walk.ledger.findings.len());
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    for namespace in std::mem::take(&mut walk.unknown_namespaces) {
        let pattern = walk.store.namespace_pattern(&namespace);
        walk.ledger.finding(
            FindingKind::UnknownNamespace,
            pattern,
            None,
            None,
            "keys of a namespace of no tenant (they are never served)".into(),
        );
    }
    for tenant in &tenants {
        walk.rows(tenant).await?;
        walk.missing_review_blobs(tenant).await?;
    }
    for tenant in &tenants {
        walk.ledger.usage(catalog, &tenant.id).await?;
    }
    Ok(walk.ledger.report(S::BACKEND, catalog))
}

/// A paste value that decoded: its key, and what its header says.
struct Decoded {
    name: String,
    key: PasteKey,
    created: u64,
    expires: u64,
    len: u64,
}

struct Walk<'a, S> {
    store: S,
    catalog: &'a Catalog,
    ledger: Ledger,
    tenants: &'a [Tenant],
    /// Per namespace, the review blobs its tenant's rows name, less those
    /// seen so far.
    review_blobs: HashMap<String, HashMap<String, i64>>,
    unknown_namespaces: BTreeSet<String>,
}

impl<S: KeyedStore> Walk<'_, S> {
    fn tenant_of(&self, namespace: &Namespace) -> Option<&Tenant> {
        self.tenants
            .iter()
            .find(|t| t.namespace == namespace.as_str())
    }

    /// One `SCAN` page: every value checked, the pastes beside their rows.
    async fn page(
        &mut self,
        names: Vec<String>,
        options: &DoctorOptions,
        purging: &[String],
    ) -> anyhow::Result<()> {
        let mut keys = Vec::new();
        for name in names {
            match self.store.classify(&name) {
                StoredKeyKind::Quarantined => {}
                StoredKeyKind::Unknown => {
                    if options.tenant.is_none() {
                        self.ledger.finding(
                            FindingKind::UnknownFile,
                            name,
                            None,
                            None,
                            "a key the store never writes under its prefix".into(),
                        );
                    }
                }
                StoredKeyKind::Paste(key) | StoredKeyKind::ReviewBlob(key) => {
                    let ns = key.namespace().as_str().to_owned();
                    if self.tenant_of(key.namespace()).is_some() {
                        keys.push((name, key));
                    } else if options.tenant.is_none() && !purging.contains(&ns) {
                        self.unknown_namespaces.insert(ns);
                    }
                }
            }
        }
        let names: Vec<String> = keys.iter().map(|(name, _)| name.clone()).collect();
        let heads = self
            .store
            .heads(&names)
            .await
            .context("cannot read the stored values")?;
        // The pastes whose values decode, per tenant, for the catalog.
        let mut decoded: HashMap<TenantId, Vec<Decoded>> = HashMap::new();
        for ((name, key), head) in keys.into_iter().zip(heads) {
            let Some(head) = head else { continue };
            let Some(tenant) = self.tenant_of(key.namespace()).map(|t| t.id.clone()) else {
                continue;
            };
            self.ledger.checked.entries += 1;
            let Some((created, expires, len)) = self.entry(&name, &key, &tenant, head).await?
            else {
                continue;
            };
            if key.kind() == paste_store::KeyKind::ReviewBlob {
                self.review_blob(&name, &key, &tenant, created, expires, len);
            } else {
                decoded.entry(tenant).or_default().push(Decoded {
                    name,
                    key,
                    created,
                    expires,
                    len,
                });
            }
        }
        for (tenant, pastes) in decoded {
            let ids: Vec<String> = pastes
                .iter()
                .map(|d| d.key.id().as_str().to_owned())
                .collect();
            let rows: HashMap<String, i64> = self
                .catalog
                .paste_rows_among(&tenant, &ids)
                .await
                .with_context(|| format!("cannot read the paste rows of {tenant}"))?
                .into_iter()
                .map(|r| (r.id, r.bytes))
                .collect();
            for Decoded {
                name,
                key,
                created,
                expires,
                len,
            } in pastes
            {
                match rows.get(key.id().as_str()) {
                    Some(&bytes) if u64::try_from(bytes).ok() != Some(len) => self.ledger.finding(
                        FindingKind::SizeMismatch,
                        name,
                        Some(&tenant),
                        Some(key.id().as_str()),
                        format!("the catalog accounts {bytes} bytes, the value holds {len}"),
                    ),
                    Some(_) => {}
                    None if tenant.is_default() => self.ledger.checked.unindexed += 1,
                    None if !self.ledger.settled(created) => self.ledger.checked.too_young += 1,
                    None if expires > self.ledger.now => self.ledger.finding(
                        FindingKind::BlobWithoutRow,
                        name,
                        Some(&tenant),
                        Some(key.id().as_str()),
                        "stored, but the catalog has no row for it: it is not accounted against the quota, and is served only until it expires".into(),
                    ),
                    None => {}
                }
            }
        }
        Ok(())
    }

    /// Checks one value; its creation, expiry and payload length when it
    /// decodes. Damage is reported (and, with `--repair`, quarantined) here.
    async fn entry(
        &mut self,
        name: &str,
        key: &PasteKey,
        tenant: &TenantId,
        head: ValueHead,
    ) -> anyhow::Result<Option<(u64, u64, u64)>> {
        let id = key.id().as_str();
        let checked = match inspect_record(&head.head, head.len) {
            Ok(info) if info.text => match self.store.value(name).await? {
                Some(bytes) => {
                    check_record_text(bytes.get(RECORD_HEADER_LEN..).unwrap_or(&[])).map(|()| info)
                }
                None => return Ok(None),
            },
            Ok(info) => Ok(info),
            Err((problem, _)) => Err(problem),
        };
        match checked {
            Ok(info) => {
                if info.expires_at < self.ledger.now && self.ledger.settled(info.expires_at) {
                    self.ledger.finding(
                        FindingKind::Expired,
                        name.to_owned(),
                        Some(tenant),
                        Some(id),
                        S::EXPIRED.into(),
                    );
                    if self.ledger.repair && self.store.remove_expired(name, &head).await? {
                        self.ledger.repaired("removed".into());
                    }
                }
                Ok(Some((info.created_at, info.expires_at, info.payload_len)))
            }
            Err(RecordProblem::UnknownFormat(version)) => {
                self.ledger.finding(
                    FindingKind::UnknownFormat,
                    name.to_owned(),
                    Some(tenant),
                    Some(id),
                    format!(
                        "record format version {version:?}: written by another build; this one reads version {}",
                        paste_store::RECORD_FORMAT
                    ),
                );
                Ok(None)
            }
            Err(problem) => {
                self.ledger.finding(
                    FindingKind::DamagedRecord,
                    name.to_owned(),
                    Some(tenant),
                    Some(id),
                    problem.to_string(),
                );
                if self.ledger.repair
                    && let Some(dest) = self.store.quarantine(name, &head).await?
                {
                    let mut done = format!("renamed to {dest}");
                    if key.kind() == paste_store::KeyKind::Paste
                        && let Some(gone) = self.catalog.forget_paste(tenant, id).await?
                    {
                        done.push_str(&format!(
                            "; its catalog row removed, {} bytes of quota released",
                            gone.bytes
                        ));
                    }
                    self.ledger.repaired(done);
                }
                Ok(None)
            }
        }
    }

    fn review_blob(
        &mut self,
        name: &str,
        key: &PasteKey,
        tenant: &TenantId,
        created: u64,
        expires: u64,
        len: u64,
    ) {
        let named = self
            .review_blobs
            .get_mut(key.namespace().as_str())
            .and_then(|blobs| blobs.remove(key.id().as_str()));
        match named {
            Some(bytes) if u64::try_from(bytes).ok() != Some(len) => self.ledger.finding(
                FindingKind::SizeMismatch,
                name.to_owned(),
                Some(tenant),
                Some(key.id().as_str()),
                format!("the review row accounts {bytes} bytes, the blob holds {len}"),
            ),
            Some(_) => {}
            None if !self.ledger.settled(created) => self.ledger.checked.too_young += 1,
            None if expires > self.ledger.now => self.ledger.finding(
                FindingKind::ReviewBlobUnknown,
                name.to_owned(),
                Some(tenant),
                Some(key.id().as_str()),
                "a review blob no review row names".into(),
            ),
            None => {}
        }
    }

    /// The tenant's rows a page at a time, each looked up in the store.
    async fn rows(&mut self, tenant: &Tenant) -> anyhow::Result<()> {
        let Ok(namespace) = Namespace::parse(&tenant.namespace) else {
            return Ok(());
        };
        let mut after = String::new();
        loop {
            let page = self
                .catalog
                .paste_rows_after(&tenant.id, &after, ROW_PAGE)
                .await
                .with_context(|| format!("cannot read the paste rows of {}", tenant.id))?;
            let Some(last) = page.last() else { break };
            after.clone_from(&last.id);
            let names: Vec<String> = page
                .iter()
                .map(|row| {
                    PasteId::parse(&row.id).map_or_else(
                        |_| format!("(row id {:?})", row.id),
                        |id| self.store.name_of(&PasteKey::new(namespace.clone(), id)),
                    )
                })
                .collect();
            let present = self
                .store
                .exist(&names)
                .await
                .context("cannot look the rows' keys up")?;
            for ((row, name), present) in page.iter().zip(names).zip(present) {
                self.ledger.checked.rows += 1;
                if present {
                    continue;
                }
                let created = u64::try_from(row.created_at).unwrap_or(0);
                let expires = u64::try_from(row.expires_at).unwrap_or(0);
                if expires <= self.ledger.now {
                    self.ledger.checked.expired_rows += 1;
                    continue;
                }
                if !self.ledger.settled(created) {
                    self.ledger.checked.too_young += 1;
                    continue;
                }
                self.ledger.finding(
                    FindingKind::RowWithoutBlob,
                    name.clone(),
                    Some(&tenant.id),
                    Some(&row.id),
                    format!(
                        "the catalog indexes this paste ({} bytes of quota held) and it is not stored",
                        row.bytes
                    ),
                );
                // Only a row whose key is still absent when the repair comes.
                if self.ledger.repair
                    && !self.store.exist(std::slice::from_ref(&name)).await?[0]
                    && let Some(gone) = self.catalog.forget_paste(&tenant.id, &row.id).await?
                {
                    self.ledger.repaired(format!(
                        "row removed, {} bytes of quota released",
                        gone.bytes
                    ));
                }
            }
            if page.len() < usize::try_from(ROW_PAGE).unwrap_or(usize::MAX) {
                break;
            }
        }
        Ok(())
    }

    /// Review blobs the rows named at the start and the scan did not see:
    /// still named now, and still not stored.
    async fn missing_review_blobs(&mut self, tenant: &Tenant) -> anyhow::Result<()> {
        let Some(unseen) = self.review_blobs.remove(&tenant.namespace) else {
            return Ok(());
        };
        if unseen.is_empty() {
            return Ok(());
        }
        let Ok(namespace) = Namespace::parse(&tenant.namespace) else {
            return Ok(());
        };
        let named_now: HashMap<String, i64> = self
            .catalog
            .review_blobs(&tenant.id)
            .await?
            .into_iter()
            .map(|b| (b.blob, b.bytes))
            .collect();
        let mut unseen: Vec<String> = unseen
            .into_keys()
            .filter(|b| named_now.contains_key(b))
            .collect();
        unseen.sort();
        for blob in unseen {
            let Ok(id) = PasteId::parse(&blob) else {
                continue;
            };
            let name = self
                .store
                .name_of(&PasteKey::review_blob(namespace.clone(), id));
            if self.store.exist(std::slice::from_ref(&name)).await?[0] {
                continue;
            }
            self.ledger.finding(
                FindingKind::ReviewBlobMissing,
                name,
                Some(&tenant.id),
                Some(&blob),
                "a review row names this blob, and it is not stored: that version, comment set or feedback cannot be read".into(),
            );
        }
        Ok(())
    }
}
