//! The paste rules, with no HTTP in them: creating (idempotency, quota,
//! the catalog index, undo on failure), reading (burn-after-read) and
//! deleting (by API key or delete token) pastes, and listing a tenant's.
//!
//! [`PasteService`] takes who a request is for ([`TenantCtx`]) and plain
//! values, and answers plain values or a [`PasteError`]; the handlers turn
//! those into answers. Every store key is made by [`TenantCtx::key`] (or,
//! for a delete token, which reaches across tenants, inside this module),
//! so one tenant's id never reaches another tenant's pastes.
//!
//! Store and catalog calls are bounded by the store timeout (`crate::within`):
//! a late answer is an outage ([`PasteError::Store`] /
//! [`PasteError::CatalogTimeout`]).

mod context;
mod create;
mod delete;
mod error;
mod list;
mod read;
#[cfg(test)]
mod tests;

pub(crate) use context::PasteService;
pub(crate) use create::NewPaste;
pub(crate) use error::PasteError;
pub(crate) use list::PastePage;
pub(crate) use read::ReadMode;
