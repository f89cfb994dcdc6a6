//! The doctor over the stores that name entries by flat keys: Redis
//! (`SCAN`) and S3 (`ListObjectsV2`), both listed through
//! [`StoreInventory`]. A listing gives keys in no order the catalog can
//! follow (Redis) or in an order of its own (S3), so the catalog is asked
//! about each page of keys (one query per tenant per page), and the rows
//! are then read a page at a time and their keys looked up: memory stays
//! flat however many pastes there are (a tenant's review blobs are held in
//! a map, as on fs).
//!
//! Both stores expire entries themselves (Redis) or let reads treat them
//! as gone (S3, until its lifecycle rule deletes them), and a put never
//! replaces a live entry, so the findings are the same as on fs less the
//! temporary files.

use std::collections::{BTreeSet, HashMap};

use anyhow::Context as _;
use paste_store::{
    EntryKind, InventoryEntry, Namespace, PasteId, PasteKey, RecordProblem, RedisConfig,
    RedisStore, S3Config, S3Repair, S3Store, StoreError, StoreInventory,
};
use tenancy::{Catalog, Tenant, TenantId};

use super::{DoctorOptions, FindingKind, Ledger, Report};

/// Catalog rows read per query.
const ROW_PAGE: i64 = 1000;

/// Entries asked for per listing page (one `SCAN` step, one
/// `ListObjectsV2` page).
const LIST_PAGE: usize = 1000;

/// A keyed store: listed through [`StoreInventory`]; what differs between
/// the two is how a damaged or expired value is moved aside or removed.
enum Keyed {
    Redis(RedisStore),
    S3(S3Store),
}

impl Keyed {
    fn inventory(&self) -> &dyn StoreInventory {
        match self {
            Keyed::Redis(store) => store,
            Keyed::S3(store) => store,
        }
    }

    /// The context of a failed listing.
    fn listing_failed(&self) -> &'static str {
        match self {
            Keyed::Redis(_) => "cannot scan the Redis keys",
            Keyed::S3(_) => "cannot list the S3 objects",
        }
    }

    /// What an expired entry that is still stored means on this backend.
    fn expired(&self) -> &'static str {
        match self {
            Keyed::Redis(_) => "expired, and kept by Redis (a key without a time to live)",
            Keyed::S3(_) => {
                "expired, and still stored (reads answer not found; the bucket's lifecycle rule has not removed it)"
            }
        }
    }

    /// The keys of `namespace`, as a pattern for a person.
    fn namespace_pattern(&self, namespace: &str) -> String {
        match self {
            Keyed::Redis(store) => format!("{}{namespace}:*", store.key_prefix()),
            Keyed::S3(store) => format!("{}{namespace}/*", store.prefix()),
        }
    }

    /// Moves `name` (the value with tag `tag`, as listed) aside; where to,
    /// or `None` when it is gone or changed.
    async fn quarantine(
        &self,
        name: &str,
        tag: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        match self {
            Keyed::Redis(store) => store.quarantine(name).await,
            Keyed::S3(store) => Ok(match store.quarantine(name, tag).await? {
                S3Repair::Done(dest) => dest,
                S3Repair::Changed => None,
            }),
        }
    }

    /// Removes the expired `name` (as listed); whether it did.
    async fn remove_expired(&self, name: &str, tag: Option<&str>) -> Result<bool, StoreError> {
        match self {
            Keyed::Redis(store) => store.remove(name).await,
            Keyed::S3(store) => Ok(store.remove_expired(name, tag).await? != S3Repair::Changed),
        }
    }
}

/// Checks a Redis store.
pub(super) async fn check_redis(
    config: &RedisConfig,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store = RedisStore::open(config)
        .await
        .context("cannot open the Redis store")?;
    check(Keyed::Redis(store), catalog, options).await
}

/// Checks an S3 store.
pub(super) async fn check_s3(
    config: &S3Config,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store = S3Store::open(config)
        .await
        .context("cannot open the S3 store")?;
    check(Keyed::S3(store), catalog, options).await
}

async fn check(store: Keyed, catalog: &Catalog, options: &DoctorOptions) -> anyhow::Result<Report> {
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
        let page = walk
            .store
            .inventory()
            .entries(None, cursor.as_deref(), LIST_PAGE)
            .await
            .context(walk.store.listing_failed())?;
        let next = page.next;
        walk.page(page.items, options, &purging).await?;
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
    let backend = walk.store.inventory().backend();
    Ok(walk.ledger.report(backend, catalog))
}

/// A paste value that decoded: its key, and what its header says.
struct Decoded {
    name: String,
    key: PasteKey,
    created: u64,
    expires: u64,
    len: u64,
}

struct Walk<'a> {
    store: Keyed,
    catalog: &'a Catalog,
    ledger: Ledger,
    tenants: &'a [Tenant],
    /// Per namespace, the review blobs its tenant's rows name, less those
    /// seen so far.
    review_blobs: HashMap<String, HashMap<String, i64>>,
    unknown_namespaces: BTreeSet<String>,
}

impl Walk<'_> {
    fn tenant_of(&self, namespace: &Namespace) -> Option<&Tenant> {
        self.tenants
            .iter()
            .find(|t| t.namespace == namespace.as_str())
    }

    /// One listing page: every value checked, the pastes beside their rows.
    async fn page(
        &mut self,
        entries: Vec<InventoryEntry>,
        options: &DoctorOptions,
        purging: &[String],
    ) -> anyhow::Result<()> {
        let mut keys = Vec::new();
        for entry in entries {
            match &entry.kind {
                EntryKind::Unknown => {
                    if options.tenant.is_none() {
                        self.ledger.finding(
                            FindingKind::UnknownFile,
                            entry.name,
                            None,
                            None,
                            "a key the store never writes under its prefix".into(),
                        );
                    }
                }
                EntryKind::Paste(key) | EntryKind::ReviewBlob(key) => {
                    let ns = key.namespace().as_str().to_owned();
                    if self.tenant_of(key.namespace()).is_some() {
                        keys.push((key.clone(), entry));
                    } else if options.tenant.is_none() && !purging.contains(&ns) {
                        self.unknown_namespaces.insert(ns);
                    }
                }
            }
        }
        // The pastes whose values decode, per tenant, for the catalog.
        let mut decoded: HashMap<TenantId, Vec<Decoded>> = HashMap::new();
        for (key, entry) in keys {
            let Some(tenant) = self.tenant_of(key.namespace()).map(|t| t.id.clone()) else {
                continue;
            };
            self.ledger.checked.entries += 1;
            let Some((created, expires, len)) = self.entry(&entry, &key, &tenant).await? else {
                continue;
            };
            let name = entry.name;
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
        entry: &InventoryEntry,
        key: &PasteKey,
        tenant: &TenantId,
    ) -> anyhow::Result<Option<(u64, u64, u64)>> {
        let name = entry.name.as_str();
        let id = key.id().as_str();
        let Some(head) = &entry.record else {
            return Ok(None);
        };
        let tag = head.tag.as_deref();
        let checked = match &head.header {
            Ok(info) if info.text => match self.store.inventory().check_payload(entry).await? {
                Some(Ok(())) => Ok(*info),
                Some(Err(problem)) => Err(problem),
                None => return Ok(None),
            },
            Ok(info) => Ok(*info),
            Err(problem) => Err(problem.clone()),
        };
        match checked {
            Ok(info) => {
                if info.expires_at < self.ledger.now && self.ledger.settled(info.expires_at) {
                    self.ledger.finding(
                        FindingKind::Expired,
                        name.to_owned(),
                        Some(tenant),
                        Some(id),
                        self.store.expired().into(),
                    );
                    if self.ledger.repair && self.store.remove_expired(name, tag).await? {
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
                    && let Some(dest) = self.store.quarantine(name, tag).await?
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

    /// Whether a value is stored under `key` (`None`: a row's id that is no
    /// key's, under which nothing can be stored).
    async fn stored(&self, key: Option<&PasteKey>) -> Result<bool, StoreError> {
        let Some(key) = key else { return Ok(false) };
        let found = self
            .store
            .inventory()
            .contains(std::slice::from_ref(key))
            .await?;
        Ok(found.first().copied().unwrap_or(false))
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
            let inventory = self.store.inventory();
            let keys: Vec<Option<PasteKey>> = page
                .iter()
                .map(|row| {
                    PasteId::parse(&row.id)
                        .ok()
                        .map(|id| PasteKey::new(namespace.clone(), id))
                })
                .collect();
            let names: Vec<String> = page
                .iter()
                .zip(&keys)
                .map(|(row, key)| match key {
                    Some(key) => inventory.location(key),
                    None => format!("(row id {:?})", row.id),
                })
                .collect();
            // A row whose id is no key's has nothing stored.
            let valid: Vec<PasteKey> = keys.iter().flatten().cloned().collect();
            let mut found = inventory
                .contains(&valid)
                .await
                .context("cannot look the rows' keys up")?
                .into_iter();
            let present: Vec<bool> = keys
                .iter()
                .map(|key| key.is_some() && found.next().unwrap_or(false))
                .collect();
            for (((row, name), key), present) in page.iter().zip(names).zip(keys).zip(present) {
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
                    && !self.stored(key.as_ref()).await?
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
            let key = PasteKey::review_blob(namespace.clone(), id);
            if self.stored(Some(&key)).await? {
                continue;
            }
            let name = self.store.inventory().location(&key);
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
