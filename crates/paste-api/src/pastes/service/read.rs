//! Reading a paste, in two steps so that the caller can make room for the
//! answer between them: [`PasteService::fetch`] loads it, and
//! [`PasteService::hand_over`] settles burn-after-read before it is served.

use paste_store::{PasteId, StoredPaste};

use super::context::PasteService;
use super::error::PasteError;
use crate::context::TenantCtx;

/// How a paste is read: a `GET` hands it over; a `HEAD` only looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// A burn-after-read paste is claimed and removed.
    Take,
    /// The same answer, but a burn-after-read paste is left for its reader
    /// (a link preview, a crawler).
    Peek,
}

impl PasteService {
    /// Paste `id` of the tenant of `ctx`, as stored.
    pub(crate) async fn fetch(
        &self,
        ctx: &TenantCtx,
        id: PasteId,
    ) -> Result<StoredPaste, PasteError> {
        let key = ctx.key(id);
        self.store_call(self.store.get(&key))
            .await
            .map_err(PasteError::from_store)
    }

    /// Lets `paste` (fetched as `id`) be served. A burn-after-read paste is
    /// handed to the one reader whose claim removes it from the catalog;
    /// every other reader gets [`PasteError::NotFound`]. A
    /// [`ReadMode::Peek`] never claims: it answers as a read would while
    /// the paste is unclaimed.
    pub(crate) async fn hand_over(
        &self,
        ctx: &TenantCtx,
        id: &PasteId,
        paste: &StoredPaste,
        mode: ReadMode,
    ) -> Result<(), PasteError> {
        if !paste.burn_after_read {
            return Ok(());
        }
        let tenant_id = ctx.tenant.id.clone();
        let text = id.as_str().to_owned();
        if mode == ReadMode::Peek {
            let indexed = self
                .catalog_call(|c| async move { c.paste_record(&tenant_id, &text).await })
                .await?;
            return indexed.map(|_| ()).ok_or(PasteError::NotFound);
        }
        let claimed = self
            .catalog_call(|c| async move { c.forget_paste(&tenant_id, &text).await })
            .await?;
        if claimed.is_none() {
            return Err(PasteError::NotFound);
        }
        let key = ctx.key(id.clone());
        match self.store_call(self.store.delete(&key)).await {
            Ok(()) | Err(paste_store::StoreError::NotFound) => {}
            // Claimed, so no one else can read it; the store copy expires.
            Err(error) => tracing::warn!(%error, "cannot delete a burnt paste"),
        }
        Ok(())
    }
}
