//! The doctor over the Redis store. `SCAN` gives keys in no order, so the
//! catalog is asked about each page of keys (one query per tenant per
//! page), and the rows are then read a page at a time and their keys
//! looked up with `EXISTS`: memory stays flat however many pastes there
//! are (a tenant's review blobs are held in a map, as on fs).
//!
//! Redis expires keys itself and a put never replaces a key, so the
//! findings are the same as on fs less the temporary files.

use std::collections::{BTreeSet, HashMap};

use anyhow::Context as _;
use paste_store::{
    Namespace, PasteId, PasteKey, RECORD_HEADER_LEN, RecordProblem, RedisKeyKind, RedisStore,
    ValueHead, check_record_text, inspect_record,
};
use tenancy::{Catalog, Tenant, TenantId};

use super::{DoctorOptions, FindingKind, Ledger, Report};
use crate::Settings;

/// Keys asked for per `SCAN` call.
const SCAN_COUNT: usize = 1000;
/// Catalog rows read per query.
const ROW_PAGE: i64 = 1000;

pub(super) async fn check(
    settings: &Settings,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store = RedisStore::open(&settings.store.redis)
        .await
        .context("cannot open the Redis store")?;
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
    let mut cursor = 0;
    loop {
        let (next, names) = walk
            .store
            .scan_keys(cursor, SCAN_COUNT)
            .await
            .context("cannot scan the Redis keys")?;
        walk.page(names, options, &purging).await?;
        walk.ledger
            .progress
            .tick(walk.ledger.checked.entries, walk.ledger.findings.len());
        if next == 0 {
            break;
        }
        cursor = next;
    }
    for namespace in std::mem::take(&mut walk.unknown_namespaces) {
        walk.ledger.finding(
            FindingKind::UnknownNamespace,
            format!("{}{namespace}:*", settings.store.redis.key_prefix),
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
    Ok(walk.ledger.report("redis", catalog))
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
    store: RedisStore,
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
                RedisKeyKind::Quarantined => {}
                RedisKeyKind::Unknown => {
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
                RedisKeyKind::Paste(key) | RedisKeyKind::ReviewBlob(key) => {
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
            .context("cannot read the Redis values")?;
        // The pastes whose values decode, per tenant, for the catalog.
        let mut decoded: HashMap<TenantId, Vec<Decoded>> = HashMap::new();
        for ((name, key), head) in keys.into_iter().zip(heads) {
            let Some(head) = head else { continue };
            let Some(tenant) = self.tenant_of(key.namespace()).map(|t| t.id.clone()) else {
                continue;
            };
            self.ledger.checked.entries += 1;
            let Some((created, expires, len)) = self.value(&name, &key, &tenant, head).await?
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
    async fn value(
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
                        "expired, and kept by Redis (a key without a time to live)".into(),
                    );
                    if self.ledger.repair && self.store.remove(name).await? {
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
                    && let Some(dest) = self.store.quarantine(name).await?
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

    /// The tenant's rows a page at a time, each looked up in Redis.
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
                        |id| self.store.key_name(&PasteKey::new(namespace.clone(), id)),
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
                .key_name(&PasteKey::review_blob(namespace.clone(), id));
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
