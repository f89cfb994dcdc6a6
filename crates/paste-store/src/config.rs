//! Store configuration, deserialized from the server's settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which backend stores the pastes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// Files on local disk (the self-hosted default).
    Fs,
    /// Process memory; for tests and benchmarks, lost on restart.
    Memory,
}

impl StoreKind {
    /// The names accepted in configuration, for error messages.
    pub const NAMES: &'static [&'static str] = &["fs", "memory"];
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fs" => Ok(StoreKind::Fs),
            "memory" => Ok(StoreKind::Memory),
            other => Err(format!(
                "unknown store kind {other:?}; valid kinds: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// `[store]`: the backend and each backend's settings.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// The backend to use.
    pub kind: StoreKind,
    /// `[store.fs]`: settings of the fs backend.
    pub fs: FsConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            kind: StoreKind::Fs,
            fs: FsConfig::default(),
        }
    }
}

/// `[store.fs]`: the filesystem backend.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FsConfig {
    /// Directory holding the pastes. Empty means "`pastes` under the server's
    /// data directory" (filled in by the server before opening).
    pub path: PathBuf,
    /// Seconds between background sweeps that delete expired pastes and
    /// leftover temporary files.
    pub sweep_interval_secs: u64,
    /// Seconds after start-up before the first sweep.
    pub first_sweep_delay_secs: u64,
    /// Temporary files older than this many seconds are leftovers of an
    /// interrupted write and are removed by the sweep.
    pub stale_tmp_secs: u64,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            path: PathBuf::new(),
            sweep_interval_secs: 600,
            first_sweep_delay_secs: 10,
            stale_tmp_secs: 3600,
        }
    }
}
