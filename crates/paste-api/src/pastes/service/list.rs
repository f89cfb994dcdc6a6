//! Listing a tenant's live pastes, a page at a time.

use super::context::PasteService;
use super::error::PasteError;
use crate::context::TenantCtx;
use crate::within::now_ms_i64;

/// One paste of a listing.
#[derive(Debug)]
pub(crate) struct ListedPaste {
    pub(crate) id: String,
    pub(crate) bytes: u64,
    /// Unix milliseconds.
    pub(crate) created_at: u64,
    /// Unix milliseconds.
    pub(crate) expires_at: u64,
    pub(crate) burn_after_read: bool,
}

/// A page of a listing, and where the next one starts.
#[derive(Debug)]
pub(crate) struct PastePage {
    pub(crate) pastes: Vec<ListedPaste>,
    /// The id to pass as `after` for the next page; none on the last.
    pub(crate) next: Option<String>,
}

impl PasteService {
    /// The live pastes of the tenant of `ctx` after id `after`, by id, at
    /// most `limit`. Needs the tenant's API key.
    pub(crate) async fn list(
        &self,
        ctx: &TenantCtx,
        after: Option<&str>,
        limit: u32,
    ) -> Result<PastePage, PasteError> {
        ctx.require_key()?;
        let tenant_id = ctx.tenant.id.clone();
        let after = after.map(str::to_owned);
        let page = self
            .catalog_call(|c| async move {
                c.list_pastes_page(&tenant_id, now_ms_i64(), after.as_deref(), i64::from(limit))
                    .await
            })
            .await?;
        let next = page
            .more
            .then(|| page.pastes.last().map(|r| r.id.clone()))
            .flatten();
        let pastes = page
            .pastes
            .into_iter()
            .map(|r| ListedPaste {
                id: r.id,
                bytes: u64::try_from(r.bytes).unwrap_or(0),
                created_at: u64::try_from(r.created_at).unwrap_or(0),
                expires_at: u64::try_from(r.expires_at).unwrap_or(0),
                burn_after_read: r.burn_after_read,
            })
            .collect();
        Ok(PastePage { pastes, next })
    }
}
