//! `planshare-server doctor`: checks every stored entry against its record
//! format and the catalog against the store, names what is wrong, and with
//! `--repair` fixes what is safe to fix while a server serves.
//!
//! What is checked (every store's records as its `StoreInventory` lists
//! them; on fs, `fs.rs`, also what only files can be; on Redis and S3,
//! `keyed.rs`, the same less the temporary files):
//! - each paste file and review blob: its record header (format version,
//!   checksum, flags), its length against the header's, a text payload's
//!   encoding, its expiry;
//! - temporary files left by puts that never finished, and names the
//!   store never writes;
//! - namespaces that belong to no tenant;
//! - (fs) symbolic links where the store keeps directories and files: the
//!   store writes none, so each is reported and none is followed — what it
//!   points to, outside the data directory or inside, is never read,
//!   moved or deleted, and the link is left as it is;
//! - the catalog's paste rows whose file is missing, and paste files a
//!   fully indexed tenant's catalog does not know; the same for the blobs
//!   review rows name;
//! - each tenant's recorded usage against what its rows add up to.
//!
//! What `--repair` does, each time logged and counted: damaged files are
//! moved to the quarantine directory (never deleted) and a damaged paste's
//! row is removed with its quota; rows of pastes that are not stored give
//! their quota back; usage is re-counted; temporary files older than
//! `--min-age` are removed; files expired longer than `--min-age` ago are
//! removed. Nothing younger than `--min-age` is touched or reported as
//! missing: a create writes its file and its row side by side, so for a
//! moment one may stand without the other. Files the catalog does not know
//! are reported, never removed: after a restore from a backup they may be
//! pastes acknowledged after the catalog's copy was taken.

mod fs;
mod keyed;

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use paste_store::StoreConfig;
use serde::Serialize;
use tenancy::{CatalogConfig, TenantId};

/// How `doctor` was asked to run.
#[derive(Clone, Debug)]
pub struct DoctorOptions {
    /// Repair what is safe to repair.
    pub repair: bool,
    /// Only this tenant's namespace and rows.
    pub tenant: Option<TenantId>,
    /// Entries younger than this (and expiries more recent) are left alone.
    pub min_age: Duration,
    /// Print a progress line (on a terminal).
    pub progress: bool,
}

/// What kind of problem a finding is (its `code` in the JSON report).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A record that does not decode (header, length or encoding).
    DamagedRecord,
    /// A record of a format version this build does not know.
    UnknownFormat,
    /// A file past its expiry by more than `--min-age`.
    Expired,
    /// A put's temporary file older than `--min-age`.
    StaleTemporary,
    /// A name the store never writes.
    UnknownFile,
    /// A namespace directory of no tenant.
    UnknownNamespace,
    /// A catalog paste row whose file is missing (its quota still held).
    RowWithoutBlob,
    /// A paste file a fully indexed tenant's catalog does not know.
    BlobWithoutRow,
    /// A blob a review row names that is not stored.
    ReviewBlobMissing,
    /// A review blob no review row names.
    ReviewBlobUnknown,
    /// A row's size differs from its file's payload.
    SizeMismatch,
    /// A tenant's recorded usage differs from what its rows add up to.
    UsageMismatch,
    /// (fs) A symbolic link where the store keeps its directories and
    /// files: never followed, never repaired (an operator must look at it).
    Symlink,
}

/// One thing found wrong.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// What kind of problem.
    pub code: FindingKind,
    /// The file (path) or row it is about.
    pub location: String,
    /// The tenant, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The paste or blob id, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What is wrong, in words.
    pub detail: String,
    /// What `--repair` did about it, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<String>,
}

/// Counts of what was looked at.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Checked {
    /// Stored entries (paste files and review blobs).
    pub entries: u64,
    /// Temporary files.
    pub temporaries: u64,
    /// Catalog paste rows.
    pub rows: u64,
    /// Blobs named by review rows.
    pub review_blobs: u64,
    /// Tenants.
    pub tenants: u64,
    /// Default-tenant pastes the catalog does not index (the upstream
    /// fast path: expected, not a finding).
    pub unindexed: u64,
    /// Entries and rows younger than `--min-age`, left alone.
    pub too_young: u64,
    /// Rows of expired pastes whose file is already gone (the catalog's
    /// own sweep removes them).
    pub expired_rows: u64,
    /// Symbolic links met (fs; each one a finding too): not followed, so
    /// what lies behind them was not checked.
    pub symlinks: u64,
}

/// The outcome of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The store backend.
    pub store: String,
    /// The catalog backend.
    pub catalog: String,
    /// Whether `--repair` was given.
    pub repair: bool,
    /// What was looked at.
    pub checked: Checked,
    /// Everything found wrong, repaired or not.
    pub findings: Vec<Finding>,
    /// Seconds the run took.
    pub elapsed_secs: f64,
    /// What the run cost this process (Linux: from `/proc/self`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
}

/// CPU time and peak memory of the doctor's process.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Resources {
    /// User plus system CPU seconds, all threads.
    pub cpu_secs: f64,
    /// Peak resident set size, KiB (`VmHWM`).
    pub peak_rss_kib: u64,
}

impl Resources {
    /// This process's so far, where `/proc` tells.
    pub fn of_this_process() -> Option<Resources> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name (which may hold spaces), from
        // field 3: utime and stime are fields 14 and 15, in USER_HZ
        // ticks (100 a second on Linux).
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let peak_rss_kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(Resources {
            cpu_secs: ticks as f64 / 100.0,
            peak_rss_kib,
        })
    }
}

impl Report {
    /// Findings `--repair` did not (or was not asked to) fix.
    pub fn remaining(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.repaired.is_none())
            .count()
    }

    /// Findings repaired.
    pub fn repaired(&self) -> usize {
        self.findings.len() - self.remaining()
    }

    /// The process exit status: 0 healthy, 1 findings remain.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.remaining() > 0)
    }

    /// The report for a person: one line per finding, then the counts.
    /// Paths and ids are escaped: a file name is not trusted text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            let mut line = format!("{:?}: {}", f.code, f.location.escape_debug());
            if let Some(tenant) = &f.tenant {
                line.push_str(&format!(" (tenant {}", tenant.escape_debug()));
                if let Some(id) = &f.id {
                    line.push_str(&format!(", id {}", id.escape_debug()));
                }
                line.push(')');
            }
            line.push_str(&format!(": {}", f.detail.escape_debug()));
            if let Some(done) = &f.repaired {
                line.push_str(&format!(" — repaired: {}", done.escape_debug()));
            }
            out.push_str(&line);
            out.push('\n');
        }
        let c = &self.checked;
        let rate = c.entries as f64 / self.elapsed_secs.max(1e-9);
        out.push_str(&format!(
            "checked {} entries, {} temporary files, {} catalog rows, {} review blobs, {} tenants in {:.2} s ({:.0} entries/s; {} store, {} catalog)\n",
            c.entries, c.temporaries, c.rows, c.review_blobs, c.tenants, self.elapsed_secs, rate, self.store, self.catalog
        ));
        if let Some(r) = &self.resources {
            out.push_str(&format!(
                "cost: {:.2} CPU s, peak RSS {} KiB\n",
                r.cpu_secs, r.peak_rss_kib
            ));
        }
        if c.unindexed + c.too_young + c.expired_rows > 0 {
            out.push_str(&format!(
                "not findings: {} default-tenant pastes not indexed (as created), {} entries younger than --min-age, {} expired rows awaiting the catalog's sweep\n",
                c.unindexed, c.too_young, c.expired_rows
            ));
        }
        if c.symlinks > 0 {
            out.push_str(&format!(
                "{} symbolic links: never followed (what they point to was not checked) and never repaired; an operator must look at each\n",
                c.symlinks
            ));
        }
        out.push_str(&match (self.findings.len(), self.repair) {
            (0, _) => "healthy\n".to_owned(),
            (n, false) => format!("{n} findings (run with --repair to fix what is safe to fix)\n"),
            (n, true) => format!(
                "{n} findings: {} repaired, {} remain\n",
                self.repaired(),
                self.remaining()
            ),
        });
        out
    }
}

/// Runs the doctor over the store `store` configures, against the catalog
/// `catalog` configures. `Err`: it could not run.
pub async fn run(
    store: &StoreConfig,
    catalog: &CatalogConfig,
    options: &DoctorOptions,
) -> anyhow::Result<Report> {
    let catalog = tenancy::Catalog::open(catalog)
        .await
        .context("cannot open the tenant catalog")?;
    let result = match store.kind {
        paste_store::StoreKind::Fs => fs::check(&store.fs, &catalog, options).await,
        paste_store::StoreKind::Redis => keyed::check_redis(&store.redis, &catalog, options).await,
        paste_store::StoreKind::S3 => keyed::check_s3(&store.s3, &catalog, options).await,
        paste_store::StoreKind::Memory => Err(anyhow::anyhow!(
            "store.kind is memory: its pastes live in the server's process, there is no store to check"
        )),
    };
    catalog.close().await;
    result
}

/// The tenants a run looks at (all, or the one `--tenant` names) and the
/// namespaces of deleted tenants still being purged.
pub(crate) async fn tenants_to_check(
    catalog: &tenancy::Catalog,
    options: &DoctorOptions,
) -> anyhow::Result<(Vec<tenancy::Tenant>, Vec<String>)> {
    let mut tenants = catalog
        .list_tenants()
        .await
        .context("cannot list the tenants")?;
    if let Some(only) = &options.tenant {
        tenants.retain(|t| &t.id == only);
        if tenants.is_empty() {
            anyhow::bail!("no tenant {only}");
        }
    }
    let purging = catalog
        .namespace_purges()
        .await
        .context("cannot list the namespaces being purged")?
        .into_iter()
        .map(|p| p.namespace)
        .collect();
    Ok((tenants, purging))
}

/// What a run has found and done so far, whatever the store: the findings,
/// the counts, the repair switch and the settle time.
pub(crate) struct Ledger {
    pub(crate) repair: bool,
    pub(crate) now: u64,
    pub(crate) min_age_ms: u64,
    pub(crate) checked: Checked,
    pub(crate) findings: Vec<Finding>,
    pub(crate) progress: Progress,
}

impl Ledger {
    pub(crate) fn new(options: &DoctorOptions, tenants: usize) -> Self {
        Ledger {
            repair: options.repair,
            now: paste_store::now_ms(),
            min_age_ms: u64::try_from(options.min_age.as_millis()).unwrap_or(u64::MAX),
            checked: Checked {
                tenants: tenants as u64,
                ..Checked::default()
            },
            findings: Vec::new(),
            progress: Progress::new(options.progress),
        }
    }

    pub(crate) fn finding(
        &mut self,
        code: FindingKind,
        location: String,
        tenant: Option<&TenantId>,
        id: Option<&str>,
        detail: String,
    ) {
        self.findings.push(Finding {
            code,
            location,
            tenant: tenant.map(|t| t.as_str().to_owned()),
            id: id.map(str::to_owned),
            detail,
            repaired: None,
        });
    }

    /// Records what was repaired for the last finding, and logs it.
    pub(crate) fn repaired(&mut self, what: String) {
        if let Some(last) = self.findings.last_mut() {
            tracing::info!(code = ?last.code, location = %last.location, repair = %what, "doctor repaired");
            last.repaired = Some(what);
        }
    }

    /// Whether a time (Unix ms) is older than `--min-age`.
    pub(crate) fn settled(&self, at: u64) -> bool {
        self.now.saturating_sub(at) >= self.min_age_ms
    }

    /// A tenant's recorded usage against what its rows add up to (after
    /// the row repairs of this run); with `--repair`, re-counted.
    pub(crate) async fn usage(
        &mut self,
        catalog: &tenancy::Catalog,
        tenant: &TenantId,
    ) -> anyhow::Result<()> {
        let count = if self.repair {
            catalog.recount_usage(tenant).await
        } else {
            catalog.count_usage(tenant).await
        }
        .with_context(|| format!("cannot count the usage of {tenant}"))?;
        if count.agrees() {
            return Ok(());
        }
        self.finding(
            FindingKind::UsageMismatch,
            format!("catalog usage of {tenant}"),
            Some(tenant),
            None,
            format!(
                "recorded {} bytes in {} entries; its rows add up to {} bytes in {} entries",
                count.recorded_bytes,
                count.recorded_pastes,
                count.counted_bytes,
                count.counted_pastes
            ),
        );
        if self.repair {
            self.repaired(format!(
                "set to {} bytes in {} entries",
                count.counted_bytes, count.counted_pastes
            ));
        }
        Ok(())
    }

    /// The report of the run.
    pub(crate) fn report(self, store: &str, catalog: &tenancy::Catalog) -> Report {
        self.progress.finish();
        Report {
            store: store.into(),
            catalog: format!("{:?}", catalog.backend()).to_lowercase(),
            repair: self.repair,
            elapsed_secs: self.progress.started().elapsed().as_secs_f64(),
            checked: self.checked,
            findings: self.findings,
            resources: Resources::of_this_process(),
        }
    }
}

/// A progress line on standard error, at most a few times a second.
pub(crate) struct Progress {
    enabled: bool,
    started: Instant,
    last: Instant,
}

impl Progress {
    pub(crate) fn new(wanted: bool) -> Self {
        let now = Instant::now();
        Progress {
            enabled: wanted && std::io::stderr().is_terminal(),
            started: now,
            last: now,
        }
    }

    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    pub(crate) fn tick(&mut self, entries: u64, findings: usize) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last = Instant::now();
        let secs = self.started.elapsed().as_secs_f64();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{entries} entries checked, {:.0}/s, {findings} findings   ",
            entries as f64 / secs.max(1e-9)
        );
        let _ = err.flush();
    }

    pub(crate) fn finish(&self) {
        if self.enabled {
            let _ = writeln!(std::io::stderr().lock());
        }
    }
}
