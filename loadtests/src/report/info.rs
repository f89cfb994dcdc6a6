//! What a run was: when it started, what it measured and how, and how its
//! servers are named in the reports.

use crate::backend::Store;
use crate::clock::UtcTime;
use crate::phases::Server;

/// A measured store and the settings its server ran with.
#[derive(Debug, Clone)]
pub struct StoreInfo {
    /// The store.
    pub store: Store,
    /// Its settings, for the report (no secrets).
    pub settings: String,
}

/// What a run was, for the report's header and the JSON file.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// When it started (UTC).
    pub started: UtcTime,
    /// Path of the planshare binary (or a note when it was replaced).
    pub server_bin: String,
    /// Path of the baseline planshare build measured beside it
    /// (`--baseline-bin`), if any (or a note when it was replaced).
    pub baseline_bin: Option<String>,
    /// The stores measured, in order.
    pub stores: Vec<StoreInfo>,
    /// Connections per phase: every scenario is measured at each.
    pub concurrency: Vec<usize>,
    /// Measured seconds per phase.
    pub duration_s: f64,
    /// Warm-up seconds per phase.
    pub warmup_s: f64,
    /// Rounds.
    pub rounds: usize,
    /// Payload sizes.
    pub sizes: Vec<usize>,
    /// CPUs available to this process.
    pub cpus: usize,
    /// Clock ticks per second used for CPU figures.
    pub clock_ticks: u64,
    /// Whether this runner (and so the reference server) is a debug build.
    pub debug_build: bool,
    /// Free-form notes (warnings) to print under the header.
    pub notes: Vec<String>,
}

impl RunInfo {
    /// Whether only the fs store is measured, by one build: the reports then
    /// keep the single-store layout (planshare against the reference).
    pub fn single_fs(&self) -> bool {
        self.baseline_bin.is_none()
            && matches!(self.stores.as_slice(), [only] if only.store == Store::Fs)
    }

    /// How `server` is named in progress lines and reports: `planshare` in a
    /// single-fs run, `planshare/<store>` (`baseline/<store>`) otherwise.
    pub fn label(&self, server: Server) -> String {
        if self.single_fs() {
            server.name().to_owned()
        } else {
            server.label()
        }
    }
}

/// Run settings for tests here and in the other report modules.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A run of 2 rounds of 5 s at 32 connections with `stores`, started at
    /// the epoch.
    pub fn info(stores: &[Store]) -> RunInfo {
        RunInfo {
            started: UtcTime::from_unix(0).unwrap_or_else(UtcTime::now),
            server_bin: "target/release/planshare-server".to_owned(),
            baseline_bin: None,
            stores: stores
                .iter()
                .map(|&store| StoreInfo {
                    store,
                    settings: format!("settings of {store}"),
                })
                .collect(),
            concurrency: vec![32],
            duration_s: 5.0,
            warmup_s: 2.0,
            rounds: 2,
            sizes: vec![8192],
            cpus: 2,
            clock_ticks: 100,
            debug_build: false,
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::info;
    use super::*;

    #[test]
    fn planshare_is_named_by_its_store_unless_fs_is_alone() {
        let fs = Server::Planshare(Store::Fs);
        let redis = Server::Planshare(Store::Redis);
        let single = info(&[Store::Fs]);
        assert!(single.single_fs());
        assert_eq!(single.label(fs), "planshare");
        assert_eq!(single.label(Server::Reference), "reference");

        let several = info(&[Store::Fs, Store::Redis]);
        assert!(!several.single_fs());
        assert_eq!(several.label(fs), "planshare/fs");
        assert_eq!(several.label(redis), "planshare/redis");
        assert_eq!(several.label(Server::Reference), "reference");

        // One store other than fs: the per-store layout.
        let redis_only = info(&[Store::Redis]);
        assert!(!redis_only.single_fs());
        assert_eq!(redis_only.label(redis), "planshare/redis");

        // With a baseline build, fs alone takes the per-store layout too.
        let mut with_baseline = info(&[Store::Fs]);
        with_baseline.baseline_bin = Some("old/planshare-server".to_owned());
        assert!(!with_baseline.single_fs());
        assert_eq!(with_baseline.label(fs), "planshare/fs");
        assert_eq!(
            with_baseline.label(Server::Baseline(Store::Fs)),
            "baseline/fs"
        );
    }
}
