//! The doctor over the fs store: one pass over the namespaces, their shards
//! and files in key order, side by side with the catalog's paste rows of the
//! namespace's tenant read in the same order a page at a time, so memory
//! stays flat however many pastes there are (a tenant's review blobs are
//! held in a map: there are few of them beside its pastes).

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use anyhow::Context as _;
use paste_store::{
    FsEntryKind, FsStore, PasteId, RecordInfo, RecordProblem, check_record_text, inspect_record,
};
use tenancy::{Catalog, PasteRecord, Tenant, TenantId};

use super::{DoctorOptions, FindingKind, Ledger, Report};
use crate::Settings;

/// Catalog rows read per query.
const ROW_PAGE: i64 = 2000;

pub(super) async fn check(
    settings: &Settings,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store =
        FsStore::open_for_inspection(&settings.store.fs).context("cannot open the fs store")?;
    let (tenants, purging) = super::tenants_to_check(catalog, options).await?;
    let mut walk = Walk {
        store,
        catalog,
        ledger: Ledger::new(options, tenants.len()),
    };
    let dirs = walk
        .store
        .namespace_dirs()
        .with_context(|| format!("cannot list {}", walk.store.root().display()))?;
    let mut walked: Vec<&str> = Vec::new();
    for (name, is_dir) in &dirs {
        let path = walk.store.root().join(name);
        if !is_dir {
            if options.tenant.is_none() {
                walk.loose_file(&path).await;
            }
            continue;
        }
        match tenants.iter().find(|t| &t.namespace == name) {
            Some(tenant) => {
                walk.namespace(tenant, true).await?;
                walked.push(&tenant.namespace);
            }
            None if options.tenant.is_some() || purging.contains(name) => {}
            None => walk.finding(
                FindingKind::UnknownNamespace,
                &path,
                None,
                None,
                "a namespace directory of no tenant (its files are never served)".into(),
            ),
        }
    }
    for tenant in &tenants {
        if !walked.contains(&tenant.namespace.as_str()) {
            walk.namespace(tenant, false).await?;
        }
    }
    for tenant in &tenants {
        walk.ledger.usage(catalog, &tenant.id).await?;
    }
    Ok(walk.ledger.report("fs", catalog))
}

struct Walk<'a> {
    store: FsStore,
    catalog: &'a Catalog,
    ledger: Ledger,
}

/// A stored entry that decoded, with what its header says.
struct Stored {
    info: RecordInfo,
}

impl Walk<'_> {
    fn finding(
        &mut self,
        code: FindingKind,
        path: &Path,
        tenant: Option<&TenantId>,
        id: Option<&str>,
        detail: String,
    ) {
        self.ledger
            .finding(code, path.display().to_string(), tenant, id, detail);
    }

    /// A file directly under the root: the store leaves only its health
    /// probe's temporary files there (the data directory also holds the
    /// SQLite catalog and whatever else the operator keeps beside it).
    async fn loose_file(&mut self, path: &Path) {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(".tmp-"))
        {
            self.temporary(path, None);
        }
    }

    /// One tenant's namespace: its files beside its rows.
    async fn namespace(&mut self, tenant: &Tenant, has_dir: bool) -> anyhow::Result<()> {
        let id = &tenant.id;
        let mut rows = Rows::new(id.clone());
        let mut review_blobs: HashMap<String, i64> = self
            .catalog
            .review_blobs(id)
            .await
            .with_context(|| format!("cannot list the review blobs of {id}"))?
            .into_iter()
            .map(|b| (b.blob, b.bytes))
            .collect();
        self.ledger.checked.review_blobs += review_blobs.len() as u64;
        // The default tenant indexes only some of its pastes (the upstream
        // fast path indexes none): a file without a row is expected there.
        let fully_indexed = !id.is_default();
        let shards = if has_dir {
            self.store
                .shard_dirs(&tenant.namespace)
                .with_context(|| format!("cannot list the namespace {}", tenant.namespace))?
        } else {
            Vec::new()
        };
        for shard in shards {
            let entries = match self.store.shard_entries(&tenant.namespace, &shard) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                    let path = self.store.root().join(&tenant.namespace).join(&shard);
                    self.finding(
                        FindingKind::UnknownFile,
                        &path,
                        Some(id),
                        None,
                        "a file where the store keeps shard directories".into(),
                    );
                    continue;
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot list the shard {}/{shard}", tenant.namespace)
                    });
                }
            };
            for entry in entries {
                match entry.kind {
                    FsEntryKind::Temporary(created) => self.temporary(&entry.path, created),
                    FsEntryKind::Unknown => self.finding(
                        FindingKind::UnknownFile,
                        &entry.path,
                        Some(id),
                        None,
                        "a name the store never writes".into(),
                    ),
                    FsEntryKind::Paste(paste) => {
                        let stored = self.entry(&entry.path, id, &paste);
                        self.paste(&mut rows, &entry.path, id, &paste, stored, fully_indexed)
                            .await?;
                    }
                    FsEntryKind::ReviewBlob(blob) => {
                        let stored = self.entry(&entry.path, id, &blob);
                        self.review_blob(&mut review_blobs, &entry.path, id, &blob, stored);
                    }
                }
                self.ledger
                    .progress
                    .tick(self.ledger.checked.entries, self.ledger.findings.len());
            }
        }
        // Rows after the last file: none of them is stored.
        while let Some(row) = rows.next(self.catalog).await? {
            self.row_without_blob(id, &tenant.namespace, row).await?;
        }
        let mut missing: Vec<(String, i64)> = review_blobs.into_iter().collect();
        missing.sort();
        for (blob, _) in missing {
            let path = self.store.root().join(&tenant.namespace);
            self.finding(
                FindingKind::ReviewBlobMissing,
                &path,
                Some(id),
                Some(&blob),
                "a review row names this blob, and it is not stored: that version, comment set or feedback cannot be read".into(),
            );
        }
        Ok(())
    }

    /// Checks a paste file or review blob; `Some` when it decodes. Damage
    /// is reported (and, with `--repair`, the file quarantined) here.
    fn entry(&mut self, path: &Path, tenant: &TenantId, id: &PasteId) -> Option<Stored> {
        self.ledger.checked.entries += 1;
        let head = match self.store.read_head(path) {
            Ok(head) => head,
            // Removed since the shard was listed (a delete, a burn, the sweep).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.finding(
                    FindingKind::DamagedRecord,
                    path,
                    Some(tenant),
                    Some(id.as_str()),
                    format!("cannot be read: {e}"),
                );
                return None;
            }
        };
        let problem = match inspect_record(&head.head, head.len) {
            Ok(info) if info.text => match self.store.read_whole(path) {
                Ok(bytes) => match check_record_text(&bytes[paste_store::RECORD_HEADER_LEN..]) {
                    Ok(()) => Ok(info),
                    Err(problem) => Err(problem),
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(_) => Err(RecordProblem::TruncatedPayload {
                    expected: info.payload_len,
                    stored: 0,
                }),
            },
            Ok(info) => Ok(info),
            Err((problem, _)) => Err(problem),
        };
        match problem {
            Ok(info) => {
                if info.expires_at < self.ledger.now && self.ledger.settled(info.expires_at) {
                    self.finding(
                        FindingKind::Expired,
                        path,
                        Some(tenant),
                        Some(id.as_str()),
                        format!(
                            "expired {} s ago and not yet removed",
                            self.ledger.now.saturating_sub(info.expires_at) / 1000
                        ),
                    );
                    if self.ledger.repair {
                        match self.store.remove_checked(path, head.ino) {
                            Ok(true) => self.ledger.repaired("removed".into()),
                            Ok(false) => {}
                            Err(e) => {
                                tracing::warn!(path = %path.display(), error = %e, "cannot remove an expired file")
                            }
                        }
                    }
                }
                Some(Stored { info })
            }
            Err(RecordProblem::UnknownFormat(version)) => {
                self.finding(
                    FindingKind::UnknownFormat,
                    path,
                    Some(tenant),
                    Some(id.as_str()),
                    format!(
                        "record format version {version:?}: written by another build; this one reads version {}",
                        paste_store::RECORD_FORMAT
                    ),
                );
                None
            }
            Err(problem) => {
                self.finding(
                    FindingKind::DamagedRecord,
                    path,
                    Some(tenant),
                    Some(id.as_str()),
                    problem.to_string(),
                );
                if self.ledger.repair {
                    match self.store.quarantine(path, head.ino) {
                        Ok(Some(dest)) => {
                            self.ledger.repaired(format!("moved to {}", dest.display()));
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(path = %path.display(), error = %e, "cannot quarantine a damaged file")
                        }
                    }
                }
                None
            }
        }
    }

    /// A paste file beside the tenant's rows: rows before it have no file;
    /// its own row must agree with it.
    async fn paste(
        &mut self,
        rows: &mut Rows,
        path: &Path,
        tenant: &TenantId,
        id: &PasteId,
        stored: Option<Stored>,
        fully_indexed: bool,
    ) -> anyhow::Result<()> {
        let namespace = path
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        while let Some(row) = rows.next_before(self.catalog, id.as_str()).await? {
            self.row_without_blob(tenant, &namespace, row).await?;
        }
        let row = rows.take_if(self.catalog, id.as_str()).await?;
        let quarantined = self.ledger.findings.last().is_some_and(|f| {
            f.code == FindingKind::DamagedRecord
                && f.location == path.display().to_string()
                && f.repaired.is_some()
        });
        match (row, stored) {
            (Some(row), _) if quarantined => {
                // The damaged paste is out of the way: its row goes too,
                // with its quota.
                if let Some(gone) = self.catalog.forget_paste(tenant, &row.id).await? {
                    tracing::info!(tenant = %tenant, id = %gone.id, bytes = gone.bytes, "doctor removed the row of a quarantined paste");
                    if let Some(last) = self.ledger.findings.last_mut()
                        && let Some(done) = &mut last.repaired
                    {
                        done.push_str(&format!(
                            "; its catalog row removed, {} bytes of quota released",
                            gone.bytes
                        ));
                    }
                }
            }
            (Some(row), Some(stored)) => {
                self.ledger.checked.rows += 1;
                if u64::try_from(row.bytes).ok() != Some(stored.info.payload_len) {
                    self.finding(
                        FindingKind::SizeMismatch,
                        path,
                        Some(tenant),
                        Some(id.as_str()),
                        format!(
                            "the catalog accounts {} bytes, the file holds {}",
                            row.bytes, stored.info.payload_len
                        ),
                    );
                }
            }
            (Some(_), None) => self.ledger.checked.rows += 1,
            (None, Some(stored)) => {
                let info = stored.info;
                if !fully_indexed {
                    self.ledger.checked.unindexed += 1;
                } else if !self.ledger.settled(info.created_at) {
                    self.ledger.checked.too_young += 1;
                } else if info.expires_at > self.ledger.now {
                    self.finding(
                        FindingKind::BlobWithoutRow,
                        path,
                        Some(tenant),
                        Some(id.as_str()),
                        "stored, but the catalog has no row for it: it is not accounted against the quota, and is served only until it expires".into(),
                    );
                }
            }
            (None, None) => {}
        }
        Ok(())
    }

    fn review_blob(
        &mut self,
        named: &mut HashMap<String, i64>,
        path: &Path,
        tenant: &TenantId,
        id: &PasteId,
        stored: Option<Stored>,
    ) {
        let row_bytes = named.remove(id.as_str());
        let Some(stored) = stored else { return };
        match row_bytes {
            Some(bytes) if u64::try_from(bytes).ok() != Some(stored.info.payload_len) => {
                self.finding(
                    FindingKind::SizeMismatch,
                    path,
                    Some(tenant),
                    Some(id.as_str()),
                    format!(
                        "the review row accounts {bytes} bytes, the blob holds {}",
                        stored.info.payload_len
                    ),
                );
            }
            Some(_) => {}
            None if !self.ledger.settled(stored.info.created_at) => {
                self.ledger.checked.too_young += 1
            }
            None if stored.info.expires_at > self.ledger.now => self.finding(
                FindingKind::ReviewBlobUnknown,
                path,
                Some(tenant),
                Some(id.as_str()),
                "a review blob no review row names".into(),
            ),
            None => {}
        }
    }

    /// A row whose file is not stored: its quota is held for nothing.
    async fn row_without_blob(
        &mut self,
        tenant: &TenantId,
        namespace: &str,
        row: PasteRecord,
    ) -> anyhow::Result<()> {
        self.ledger.checked.rows += 1;
        let created = u64::try_from(row.created_at).unwrap_or(0);
        let expires = u64::try_from(row.expires_at).unwrap_or(0);
        if expires <= self.ledger.now {
            self.ledger.checked.expired_rows += 1;
            return Ok(());
        }
        if !self.ledger.settled(created) {
            self.ledger.checked.too_young += 1;
            return Ok(());
        }
        let path = PasteId::parse(&row.id)
            .ok()
            .and_then(|id| {
                paste_store::Namespace::parse(namespace)
                    .ok()
                    .map(|ns| (ns, id))
            })
            .map(|(ns, id)| self.store.path_of(&paste_store::PasteKey::new(ns, id)));
        let location = path
            .clone()
            .unwrap_or_else(|| self.store.root().join(namespace));
        self.finding(
            FindingKind::RowWithoutBlob,
            &location,
            Some(tenant),
            Some(&row.id),
            format!(
                "the catalog indexes this paste ({} bytes of quota held) and it is not stored",
                row.bytes
            ),
        );
        // Only a row whose file is still absent when the repair comes.
        let absent = path.is_some_and(|p| {
            std::fs::symlink_metadata(&p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        });
        if self.ledger.repair
            && absent
            && let Some(gone) = self.catalog.forget_paste(tenant, &row.id).await?
        {
            self.ledger.repaired(format!(
                "row removed, {} bytes of quota released",
                gone.bytes
            ));
        }
        Ok(())
    }

    /// A put's temporary file: stale when older than `--min-age`.
    fn temporary(&mut self, path: &Path, created: Option<u64>) {
        self.ledger.checked.temporaries += 1;
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        // The name carries its creation time; else the inode's change time.
        let created = created.unwrap_or_else(|| {
            u64::try_from(meta.ctime())
                .unwrap_or(0)
                .saturating_mul(1000)
        });
        if !self.ledger.settled(created) {
            return;
        }
        self.finding(
            FindingKind::StaleTemporary,
            path,
            None,
            None,
            format!(
                "a temporary file of a put that never finished, {} s old",
                self.ledger.now.saturating_sub(created) / 1000
            ),
        );
        if self.ledger.repair {
            match self.store.remove_checked(path, meta.ino()) {
                Ok(true) => self.ledger.repaired("removed".into()),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove a temporary file")
                }
            }
        }
    }
}

/// A tenant's paste rows in id order, a page at a time.
struct Rows {
    tenant: TenantId,
    page: VecDeque<PasteRecord>,
    after: String,
    end: bool,
}

impl Rows {
    fn new(tenant: TenantId) -> Self {
        Rows {
            tenant,
            page: VecDeque::new(),
            after: String::new(),
            end: false,
        }
    }

    async fn fill(&mut self, catalog: &Catalog) -> anyhow::Result<()> {
        if self.page.is_empty() && !self.end {
            let rows = catalog
                .paste_rows_after(&self.tenant, &self.after, ROW_PAGE)
                .await
                .with_context(|| format!("cannot read the paste rows of {}", self.tenant))?;
            self.end = rows.len() < usize::try_from(ROW_PAGE).unwrap_or(usize::MAX);
            if let Some(last) = rows.last() {
                self.after.clone_from(&last.id);
            }
            self.page.extend(rows);
        }
        Ok(())
    }

    /// The next row, whatever its id.
    async fn next(&mut self, catalog: &Catalog) -> anyhow::Result<Option<PasteRecord>> {
        self.fill(catalog).await?;
        Ok(self.page.pop_front())
    }

    /// The next row if its id sorts before `id`.
    async fn next_before(
        &mut self,
        catalog: &Catalog,
        id: &str,
    ) -> anyhow::Result<Option<PasteRecord>> {
        self.fill(catalog).await?;
        Ok(if self.page.front().is_some_and(|r| r.id.as_str() < id) {
            self.page.pop_front()
        } else {
            None
        })
    }

    /// The next row if its id is `id`.
    async fn take_if(
        &mut self,
        catalog: &Catalog,
        id: &str,
    ) -> anyhow::Result<Option<PasteRecord>> {
        self.fill(catalog).await?;
        Ok(if self.page.front().is_some_and(|r| r.id == id) {
            self.page.pop_front()
        } else {
            None
        })
    }
}
