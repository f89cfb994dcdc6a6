//! Deleting a paste, by an API key of its tenant or by its delete token.

use paste_store::{DeleteToken, DeleteTokenDigest, Namespace, PasteId, PasteKey, StoreError};

use super::context::PasteService;
use super::error::PasteError;
use crate::context::TenantCtx;

/// Whether [`PasteService::delete_in`] deleted the paste.
#[derive(Debug, PartialEq, Eq)]
enum Deleted {
    Yes,
    /// Absent, or the token is not its token.
    No,
}

impl PasteService {
    /// Deletes paste `id`. With an API key (`ctx.key`) the request is the
    /// tenant's and `token` is not looked at; otherwise `token` must be the
    /// paste's delete token ([`PasteError::CredentialRequired`] without
    /// one, or with one that is not shaped like a delete token). A wrong token answers [`PasteError::NotFound`], as an absent
    /// paste does (no existence oracle). A delete token deletes its paste
    /// whatever tenant the request was for: a keyed tenant without hosts
    /// has no other way in.
    pub(crate) async fn delete(
        &self,
        ctx: &TenantCtx,
        id: &PasteId,
        token: Option<&str>,
    ) -> Result<(), PasteError> {
        // A token that cannot be a delete token is refused whatever the
        // paste, before any lookup.
        let token = match ctx.key {
            Some(_) => None,
            None => Some(
                token
                    .filter(|t| DeleteToken::is_well_formed(t))
                    .ok_or(PasteError::CredentialRequired)?,
            ),
        };
        let here = &ctx.tenant;
        if self.delete_in(&ctx.key(id.clone()), token).await? == Deleted::Yes {
            self.unindex(&here.id, id.as_str()).await;
            return Ok(());
        }
        let Some(token) = token else {
            return Err(PasteError::NotFound);
        };
        // The other tenants that index this id are tried; the token decides.
        let id_text = id.as_str().to_owned();
        let owners = self
            .catalog_call(|c| async move { c.tenants_indexing(&id_text).await })
            .await?;
        for (tenant_id, namespace) in owners {
            if tenant_id == here.id {
                continue;
            }
            let Ok(namespace) = Namespace::parse(&namespace) else {
                continue;
            };
            #[expect(
                clippy::disallowed_methods,
                reason = "a delete token reaches across tenants: its key is made here"
            )]
            let key = PasteKey::new(namespace, id.clone());
            if self.delete_in(&key, Some(token)).await? == Deleted::Yes {
                self.unindex(&tenant_id, id.as_str()).await;
                return Ok(());
            }
        }
        Err(PasteError::NotFound)
    }

    /// Deletes the paste at `key` if it is there and `token` (when given;
    /// an API key's request gives none) is its delete token.
    async fn delete_in(&self, key: &PasteKey, token: Option<&str>) -> Result<Deleted, PasteError> {
        let delete_token = match self.store_call(self.store.get(key)).await {
            Ok(paste) => paste.delete_token,
            Err(StoreError::NotFound) => return Ok(Deleted::No),
            Err(e) => damaged_delete_token(e, token)?,
        };
        if let Some(token) = token
            && !delete_token.is_some_and(|digest| digest.matches(token))
        {
            return Ok(Deleted::No);
        }
        self.store_call(self.store.delete(key))
            .await
            .map_err(PasteError::from_store)?;
        Ok(Deleted::Yes)
    }
}

/// What authorises the delete of a paste whose stored data is damaged
/// (the store's `get` answered [`StoreError::Damaged`]), as the
/// delete-token digest to check a token against: with an API key of the
/// tenant (`token` is `None`) nothing more is needed; with a delete token,
/// the digest in the record's header, when the header checked out (the
/// damage is past it). A damaged header leaves nothing to check a token
/// against, so that delete is refused as damaged (an API key can still
/// delete it). Any other store failure is passed on.
fn damaged_delete_token(
    error: StoreError,
    token: Option<&str>,
) -> Result<Option<DeleteTokenDigest>, PasteError> {
    match error {
        StoreError::Damaged {
            header: Some(header),
            ..
        } => Ok(header.delete_token),
        StoreError::Damaged { header: None, .. } if token.is_none() => Ok(None),
        other => Err(PasteError::from_store(other)),
    }
}
