//! `planshare-server backup DIR`: the `upkeep` crate's backup, run with the
//! server's settings (its store, catalog and data directory).

use std::path::Path;

pub use upkeep::backup::BackupReport;

use crate::Settings;

/// Backs up the fs store and SQLite catalog of `settings` into `dest`, a
/// new or empty directory laid out as the data directory is.
pub async fn run(settings: &Settings, dest: &Path) -> anyhow::Result<BackupReport> {
    upkeep::backup::run(
        &settings.store,
        &settings.catalog,
        &settings.server.data_dir,
        dest,
    )
    .await
}
