//! Looking after a deployment's data, beside a running server: the
//! commands `planshare-server doctor` and `planshare-server backup` run.
//!
//! - [`doctor`]: every stored entry checked against its record format and
//!   the tenant catalog against the store, a page at a time; with
//!   `--repair`, what is safe to fix while a server serves is fixed. Every
//!   store's records are listed through its
//!   [`StoreInventory`](paste_store::StoreInventory); on fs the doctor also
//!   walks the directories for what only files can be (links, temporary
//!   files, the quarantine).
//! - [`backup`]: a consistent copy of the self-hosted default (fs store,
//!   SQLite catalog).
//!
//! This crate speaks to the store (`paste-store`) and the catalog
//! (`tenancy`) only: it knows nothing of HTTP, the API or the server's
//! settings file (the server hands it the store's and the catalog's
//! configurations), and must not depend on `paste-api`, axum or
//! `planshare-server` (`scripts/check-layering`).

pub mod backup;
pub mod doctor;
