//! The doctor over the fs store, one tenant's namespace at a time. The
//! paste files and review blobs come through the store's listing
//! ([`StoreInventory`](paste_store::StoreInventory): key order, a page at
//! a time, each with its record head), side by side with the catalog's
//! paste rows of the namespace's tenant read in the same order a page at a
//! time, so memory stays flat however many pastes there are (a tenant's review blobs are held in a
//! map: there are few of them beside its pastes). Before that the
//! namespace's shards are walked for what only files can be, which the
//! listing leaves out or names only as unknown: links, temporary files of
//! puts that never finished, directories and names the store never
//! writes. Repairs act on a file only if it is still the inode the
//! listing read (its tag).
//!
//! Symbolic links are reported (`symlink`) and never followed, at every
//! level: the root's namespace directories, a namespace's shards, a shard's
//! files, the quarantine's directories. The store writes none, so a link is
//! someone else's doing, and what it points to — outside the data
//! directory or inside — is not the doctor's to read, move or delete.
//! Nothing behind a link is checked either: a row whose file would be
//! behind one is not reported missing (and so never removed).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use paste_store::{
    EntryKind, FsConfig, FsEntry, FsEntryKind, FsStore, InventoryEntry, Namespace, PasteId,
    PasteKey, RecordInfo, RecordProblem, StoreInventory as _, not_followed, shard_of,
};
use tenancy::{Catalog, PasteRecord, Tenant, TenantId};

use super::{DoctorOptions, FindingKind, Ledger, Report};

/// Catalog rows read per query.
const ROW_PAGE: i64 = 2000;

/// Entries asked for per listing page (each page lists the namespace's
/// directory again, from the shard the last one ended in).
const LIST_PAGE: usize = 4096;

pub(super) async fn check(
    config: &FsConfig,
    catalog: &Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let store = FsStore::open_for_inspection(config).context("cannot open the fs store")?;
    let (tenants, purging) = super::tenants_to_check(catalog, options).await?;
    let mut walk = Walk {
        store,
        catalog,
        ledger: Ledger::new(options, tenants.len()),
        behind_links: HashSet::new(),
    };
    // The quarantine's own directories, where a repair would move files.
    let quarantine_links = walk.store.quarantine_links().with_context(|| {
        format!(
            "cannot list the quarantine of {}",
            walk.store.root().display()
        )
    })?;
    for (namespace, path, target) in quarantine_links {
        let wanted = match (&options.tenant, &namespace) {
            (None, _) | (Some(_), None) => true,
            (Some(_), Some(ns)) => tenants.iter().any(|t| &t.namespace == ns),
        };
        if wanted {
            walk.link_met(
                &path,
                target.as_deref(),
                None,
                "no damaged file is moved through it",
            );
        }
    }
    let dirs = walk
        .store
        .namespace_dirs()
        .with_context(|| format!("cannot list {}", walk.store.root().display()))?;
    // Namespaces walked, or reported as links (their pastes not checked).
    let mut seen: Vec<&str> = Vec::new();
    for entry in &dirs {
        let tenant = tenants.iter().find(|t| t.namespace == entry.name);
        match &entry.kind {
            FsEntryKind::Directory => match tenant {
                Some(tenant) => {
                    walk.namespace(tenant, Some(entry)).await?;
                    seen.push(&tenant.namespace);
                }
                None if options.tenant.is_some() || purging.contains(&entry.name) => {}
                None => walk.finding(
                    FindingKind::UnknownNamespace,
                    &entry.path,
                    None,
                    None,
                    "a namespace directory of no tenant (its files are never served)".into(),
                ),
            },
            FsEntryKind::Symlink => match tenant {
                Some(tenant) => {
                    walk.symlink(
                        entry,
                        Some(&tenant.id),
                        "this tenant's pastes and rows were not checked",
                    );
                    seen.push(&tenant.namespace);
                }
                // The root may hold the catalog and what else the operator
                // keeps beside the pastes (upstream's layout): only links
                // named as a namespace or a temporary file are the store's
                // business.
                None if options.tenant.is_none()
                    && (paste_store::Namespace::parse(&entry.name).is_ok()
                        || entry.name.starts_with(".tmp-")) =>
                {
                    walk.symlink(entry, None, "");
                }
                None => {}
            },
            _ if options.tenant.is_none() => walk.loose_file(entry),
            _ => {}
        }
    }
    for tenant in &tenants {
        if !seen.contains(&tenant.namespace.as_str()) {
            walk.namespace(tenant, None).await?;
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
    /// The shards of the namespace being walked that are links (not
    /// followed): what the catalog says is in them is not checked.
    behind_links: HashSet<String>,
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
    fn loose_file(&mut self, entry: &FsEntry) {
        if let FsEntryKind::Temporary(_) = entry.kind {
            // The probe's name carries no creation time.
            self.temporary(entry, None);
        }
    }

    /// A symbolic link listed where the store keeps its directories and
    /// files: reported, not followed, not repaired. `skipped` says what
    /// was therefore not checked.
    fn symlink(&mut self, entry: &FsEntry, tenant: Option<&TenantId>, skipped: &str) {
        let target = self.store.link_target(entry).ok();
        self.link_met(&entry.path, target.as_deref(), tenant, skipped);
    }

    /// A symbolic link at `path` (pointing to `target`, where read), met
    /// while listing or when an operation refused to follow it; reported
    /// once.
    fn link_met(
        &mut self,
        path: &Path,
        target: Option<&Path>,
        tenant: Option<&TenantId>,
        skipped: &str,
    ) {
        let location = path.display().to_string();
        if self
            .ledger
            .findings
            .iter()
            .any(|f| f.code == FindingKind::Symlink && f.location == location)
        {
            return;
        }
        self.ledger.checked.symlinks += 1;
        let mut detail = match target {
            Some(target) => format!("a symbolic link to {}", target.display()),
            None => "a symbolic link".to_owned(),
        };
        detail.push_str(
            ": the store writes none; not followed and not repaired, an operator must look at it",
        );
        if !skipped.is_empty() {
            detail.push_str(&format!(" ({skipped})"));
        }
        self.finding(FindingKind::Symlink, path, tenant, None, detail);
    }

    /// One tenant's namespace: its files beside its rows. `dir`: its
    /// directory, if there is one.
    async fn namespace(&mut self, tenant: &Tenant, dir: Option<&FsEntry>) -> anyhow::Result<()> {
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
        self.behind_links.clear();
        // The default tenant indexes only some of its pastes (the upstream
        // fast path indexes none): a file without a row is expected there.
        let fully_indexed = !id.is_default();
        let shards = match dir.map(|dir| (dir, self.store.entries_of(dir))) {
            None => Vec::new(),
            Some((_, Ok(shards))) => shards,
            // Made a link since the root was listed.
            Some((dir, Err(e))) if not_followed(&e).is_some() => {
                self.link_met(
                    &dir.path,
                    None,
                    Some(id),
                    "this tenant's pastes and rows were not checked",
                );
                return Ok(());
            }
            Some((_, Err(e))) => {
                return Err(e)
                    .with_context(|| format!("cannot list the namespace {}", tenant.namespace));
            }
        };
        for shard in shards {
            match shard.kind {
                FsEntryKind::Directory => {}
                FsEntryKind::Symlink => {
                    self.symlink(
                        &shard,
                        Some(id),
                        "the pastes kept under it were not checked",
                    );
                    self.behind_links.insert(shard.name.clone());
                    continue;
                }
                _ => {
                    self.finding(
                        FindingKind::UnknownFile,
                        &shard.path,
                        Some(id),
                        None,
                        "a file where the store keeps shard directories".into(),
                    );
                    continue;
                }
            }
            let entries = match self.store.entries_of(&shard) {
                Ok(entries) => entries,
                Err(e) if not_followed(&e).is_some() => {
                    self.link_met(
                        &shard.path,
                        None,
                        Some(id),
                        "the pastes kept under it were not checked",
                    );
                    self.behind_links.insert(shard.name.clone());
                    continue;
                }
                // Removed since the namespace was listed.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot list the shard {}/{}", tenant.namespace, shard.name)
                    });
                }
            };
            // What only files can be; the records come through the listing.
            for entry in entries {
                match &entry.kind {
                    FsEntryKind::Temporary(created) => self.temporary(&entry, *created),
                    FsEntryKind::Symlink => self.symlink(&entry, Some(id), ""),
                    FsEntryKind::Directory => self.finding(
                        FindingKind::UnknownFile,
                        &entry.path,
                        Some(id),
                        None,
                        "a directory where the store keeps only files".into(),
                    ),
                    FsEntryKind::Unknown => self.finding(
                        FindingKind::UnknownFile,
                        &entry.path,
                        Some(id),
                        None,
                        "a name the store never writes".into(),
                    ),
                    FsEntryKind::Paste(record) | FsEntryKind::ReviewBlob(record)
                        if shard_of(record) != shard.name =>
                    {
                        self.finding(
                            FindingKind::UnknownFile,
                            &entry.path,
                            Some(id),
                            None,
                            "a record's name in a shard it does not belong to (the store never reads it there)".into(),
                        );
                    }
                    FsEntryKind::Paste(_) | FsEntryKind::ReviewBlob(_) => {}
                }
            }
        }
        if dir.is_some() {
            self.records(tenant, &mut rows, &mut review_blobs, fully_indexed)
                .await?;
        }
        // Rows after the last file: none of them is stored.
        while let Some(row) = rows.next(self.catalog).await? {
            self.row_without_blob(id, &tenant.namespace, row).await?;
        }
        let mut missing: Vec<(String, i64)> = review_blobs.into_iter().collect();
        missing.sort();
        for (blob, _) in missing {
            if self.behind_link(&blob) {
                continue;
            }
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

    /// The tenant's paste files and review blobs, a page at a time through
    /// the store's listing ([`StoreInventory`](paste_store::StoreInventory)),
    /// in key order beside its rows.
    async fn records(
        &mut self,
        tenant: &Tenant,
        rows: &mut Rows,
        review_blobs: &mut HashMap<String, i64>,
        fully_indexed: bool,
    ) -> anyhow::Result<()> {
        let id = &tenant.id;
        let Ok(namespace) = Namespace::parse(&tenant.namespace) else {
            return Ok(());
        };
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .store
                .entries(Some(&namespace), cursor.as_deref(), LIST_PAGE)
                .await
                .with_context(|| format!("cannot list the namespace {}", tenant.namespace))?;
            for listed in &page.items {
                let path = PathBuf::from(&listed.name);
                match &listed.kind {
                    EntryKind::Paste(key) => {
                        let stored = self.entry(listed, key, id).await;
                        self.paste(rows, &path, id, key.id(), stored, fully_indexed)
                            .await?;
                    }
                    EntryKind::ReviewBlob(key) => {
                        let stored = self.entry(listed, key, id).await;
                        self.review_blob(review_blobs, &path, id, key.id(), stored);
                    }
                    // Reported by the walk of the shards.
                    EntryKind::Unknown => {}
                }
                self.ledger
                    .progress
                    .tick(self.ledger.checked.entries, self.ledger.findings.len());
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// Checks a paste file or review blob as listed; `Some` when it
    /// decodes. Damage is reported (and, with `--repair`, the file
    /// quarantined) here.
    async fn entry(
        &mut self,
        listed: &InventoryEntry,
        key: &PasteKey,
        tenant: &TenantId,
    ) -> Option<Stored> {
        let id = key.id();
        let path_buf = PathBuf::from(&listed.name);
        let path = path_buf.as_path();
        self.ledger.checked.entries += 1;
        let head = listed.record.as_ref()?;
        let ino = head.tag.as_deref().and_then(|tag| tag.parse::<u64>().ok());
        let problem = match &head.header {
            Ok(info) if info.text => match self.store.check_payload(listed).await {
                Ok(Some(Ok(()))) => Ok(*info),
                Ok(Some(Err(problem))) => Err(problem),
                // Removed, or made a link, since it was listed.
                Ok(None) => return None,
                Err(_) => Err(RecordProblem::TruncatedPayload {
                    expected: info.payload_len,
                    stored: 0,
                }),
            },
            Ok(info) => Ok(*info),
            Err(RecordProblem::Unreadable(e)) => {
                self.finding(
                    FindingKind::DamagedRecord,
                    path,
                    Some(tenant),
                    Some(id.as_str()),
                    format!("cannot be read: {e}"),
                );
                return None;
            }
            Err(problem) => Err(problem.clone()),
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
                    if self.ledger.repair
                        && let Some(ino) = ino
                    {
                        match self
                            .store
                            .record_entry(key)
                            .and_then(|entry| self.store.remove_checked(&entry, ino))
                        {
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
                if self.ledger.repair
                    && let Some(ino) = ino
                {
                    match self
                        .store
                        .record_entry(key)
                        .and_then(|entry| self.store.quarantine(&entry, ino))
                    {
                        Ok(Some(dest)) => {
                            self.ledger.repaired(format!("moved to {}", dest.display()));
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(path = %path.display(), error = %e, "cannot quarantine a damaged file");
                            // A link in the quarantine (nothing was moved).
                            if let Some(link) = not_followed(&e).map(Path::to_path_buf) {
                                self.link_met(
                                    &link,
                                    None,
                                    None,
                                    "no damaged file is moved through it",
                                );
                            }
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
        // Its file would be behind a link, which is not followed: it is not
        // known to be missing (the link is the finding).
        if self.behind_link(&row.id) {
            return Ok(());
        }
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
        let key = PasteId::parse(&row.id).ok().and_then(|id| {
            paste_store::Namespace::parse(namespace)
                .ok()
                .map(|ns| paste_store::PasteKey::new(ns, id))
        });
        let location = key
            .as_ref()
            .map(|key| self.store.path_of(key))
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
        // Only a row whose file is still absent when the repair comes (a
        // link on the way, made meanwhile, is not followed: not absent).
        let absent = key.is_some_and(|key| self.store.is_absent(&key));
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
    fn temporary(&mut self, entry: &FsEntry, created: Option<u64>) {
        self.ledger.checked.temporaries += 1;
        let Ok(meta) = self.store.entry_meta(entry) else {
            return;
        };
        if meta.is_symlink {
            // Made a link since the shard was listed.
            self.symlink(entry, None, "");
            return;
        }
        if !meta.is_file {
            return;
        }
        // The name carries its creation time; else the inode's change time.
        let created = created.unwrap_or(meta.changed_ms);
        if !self.ledger.settled(created) {
            return;
        }
        let path = entry.path.as_path();
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
            match self.store.remove_checked(entry, meta.ino) {
                Ok(true) => self.ledger.repaired("removed".into()),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove a temporary file")
                }
            }
        }
    }

    /// Whether the file of `id` would be in a shard of the namespace being
    /// walked that is a link (not followed, so not checked).
    fn behind_link(&self, id: &str) -> bool {
        !self.behind_links.is_empty()
            && PasteId::parse(id).is_ok_and(|id| self.behind_links.contains(&shard_of(&id)))
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
