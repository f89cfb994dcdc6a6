//! `planshare-server doctor`: the `upkeep` crate's doctor, run with the
//! server's settings (its store and catalog).

pub use upkeep::doctor::{Checked, DoctorOptions, Finding, FindingKind, Report, Resources};

use crate::Settings;

/// Runs the doctor over the store and catalog of `settings`. `Err`: it
/// could not run.
pub async fn run(settings: &Settings, options: &DoctorOptions) -> anyhow::Result<Report> {
    upkeep::doctor::run(&settings.store, &settings.catalog, options).await
}
