//! The paste rules on the memory store with a SQLite catalog: no HTTP.

use std::sync::Arc;
use std::time::Duration;

use paste_store::{MemoryStore, PasteId, PasteStore, Payload};
use tenancy::{Catalog, CatalogConfig, LazyCatalog, NewTenant, TenantSettings, TenantUpdate};

use super::{NewPaste, PasteError, PasteService, ReadMode};
use crate::context::TenantCtx;
use crate::tenants::{KeyOwner, TenantView};

struct World {
    service: PasteService,
    store: Arc<MemoryStore>,
    catalog: Arc<Catalog>,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let config = CatalogConfig {
        url: format!("sqlite://{}/catalog.sqlite", dir.path().display()),
        ..CatalogConfig::default()
    };
    let lazy = Arc::new(LazyCatalog::new(config, TenantUpdate::default()));
    let catalog = lazy.get().await.unwrap();
    let store = Arc::new(MemoryStore::new());
    let service = PasteService::new(store.clone(), lazy, Duration::from_secs(5));
    World {
        service,
        store,
        catalog,
        _dir: dir,
    }
}

/// A new tenant's context, with an API key when `keyed`.
async fn tenant(world: &World, name: &str, settings: TenantSettings, keyed: bool) -> TenantCtx {
    let tenant = world
        .catalog
        .create_tenant(&NewTenant {
            name: name.into(),
            namespace: name.into(),
            settings,
        })
        .await
        .unwrap();
    let key = if keyed {
        let created = world.catalog.create_key(&tenant.id, "test").await.unwrap();
        Some(Arc::new(KeyOwner {
            tenant: tenant.id.clone(),
            key: created.id,
        }))
    } else {
        None
    };
    TenantCtx {
        tenant: Arc::new(TenantView::of(&tenant).unwrap()),
        key,
    }
}

/// Settings that let anonymous requests create (new tenants refuse them).
fn open() -> TenantSettings {
    TenantSettings {
        allow_anonymous: true,
        ..TenantSettings::default()
    }
}

fn new_paste(data: &str) -> NewPaste {
    NewPaste {
        payload: Payload::from_text(data.into()),
        ttl_secs: 3600,
        burn_after_read: false,
        idempotency: None,
        always_index: false,
    }
}

fn id(text: &str) -> PasteId {
    PasteId::parse(text).unwrap()
}

#[tokio::test]
async fn a_created_paste_reads_back_and_its_token_deletes_it() {
    let w = world().await;
    let ctx = tenant(&w, "alpha", open(), false).await;
    let created = w.service.create(&ctx, new_paste("hello")).await.unwrap();
    assert!(!created.replayed);
    let paste = w.service.fetch(&ctx, id(&created.id)).await.unwrap();
    assert_eq!(paste.payload.to_text(), "hello");
    w.service
        .hand_over(&ctx, &id(&created.id), &paste, ReadMode::Take)
        .await
        .unwrap();

    // A well-formed token of another paste is "not found", and deletes nothing.
    let other = w.service.create(&ctx, new_paste("other")).await.unwrap();
    let other_token = other.token.unwrap();
    let wrong = w
        .service
        .delete(&ctx, &id(&created.id), Some(other_token.expose()))
        .await;
    assert!(matches!(wrong, Err(PasteError::NotFound)), "{wrong:?}");
    // No token, or one not shaped like a token: a credential is required.
    for token in [None, Some("not a token")] {
        let refused = w.service.delete(&ctx, &id(&created.id), token).await;
        assert!(
            matches!(refused, Err(PasteError::CredentialRequired)),
            "{refused:?}"
        );
    }
    let token = created.token.unwrap();
    w.service
        .delete(&ctx, &id(&created.id), Some(token.expose()))
        .await
        .unwrap();
    let gone = w.service.fetch(&ctx, id(&created.id)).await;
    assert!(matches!(gone, Err(PasteError::NotFound)), "{gone:?}");
}

#[tokio::test]
async fn tenants_do_not_reach_each_others_pastes_except_by_delete_token() {
    let w = world().await;
    let alpha = tenant(&w, "alpha", TenantSettings::default(), true).await;
    let beta = tenant(&w, "beta", TenantSettings::default(), true).await;
    let created = w.service.create(&alpha, new_paste("mine")).await.unwrap();
    let absent = w.service.fetch(&beta, id(&created.id)).await;
    assert!(matches!(absent, Err(PasteError::NotFound)), "{absent:?}");
    // Beta's API key cannot delete alpha's paste ...
    let refused = w.service.delete(&beta, &id(&created.id), None).await;
    assert!(matches!(refused, Err(PasteError::NotFound)), "{refused:?}");
    assert!(w.service.fetch(&alpha, id(&created.id)).await.is_ok());
    // ... but the paste's delete token does, from an anonymous request
    // resolved to another tenant, and its index entry goes with it.
    let anonymous_beta = TenantCtx {
        tenant: beta.tenant.clone(),
        key: None,
    };
    let token = created.token.unwrap();
    w.service
        .delete(&anonymous_beta, &id(&created.id), Some(token.expose()))
        .await
        .unwrap();
    assert!(w.service.fetch(&alpha, id(&created.id)).await.is_err());
    let record = w
        .catalog
        .paste_record(&alpha.tenant.id, &created.id)
        .await
        .unwrap();
    assert!(record.is_none(), "the index entry is released");
}

#[tokio::test]
async fn a_burn_after_read_paste_is_handed_to_one_reader_and_a_peek_leaves_it() {
    let w = world().await;
    let ctx = tenant(&w, "alpha", open(), false).await;
    let mut request = new_paste("once");
    request.burn_after_read = true;
    let created = w.service.create(&ctx, request).await.unwrap();
    let paste_id = id(&created.id);
    let paste = w.service.fetch(&ctx, paste_id.clone()).await.unwrap();
    w.service
        .hand_over(&ctx, &paste_id, &paste, ReadMode::Peek)
        .await
        .unwrap();
    w.service
        .hand_over(&ctx, &paste_id, &paste, ReadMode::Take)
        .await
        .unwrap();
    // A second reader that fetched it before the first claim loses.
    let late = w
        .service
        .hand_over(&ctx, &paste_id, &paste, ReadMode::Take)
        .await;
    assert!(matches!(late, Err(PasteError::NotFound)), "{late:?}");
    let peek = w
        .service
        .hand_over(&ctx, &paste_id, &paste, ReadMode::Peek)
        .await;
    assert!(matches!(peek, Err(PasteError::NotFound)), "{peek:?}");
    assert!(
        w.service.fetch(&ctx, paste_id).await.is_err(),
        "removed from the store"
    );
}

#[tokio::test]
async fn a_create_over_the_quota_is_refused_and_leaves_nothing_behind() {
    let w = world().await;
    let settings = TenantSettings {
        quota_pastes: 1,
        ..open()
    };
    let ctx = tenant(&w, "alpha", settings, false).await;
    w.service.create(&ctx, new_paste("first")).await.unwrap();
    let refused = w.service.create(&ctx, new_paste("second")).await;
    assert!(
        matches!(refused, Err(PasteError::QuotaExceeded)),
        "{refused:?}"
    );
    // The stored half of the refused create was taken back: the namespace
    // holds the first paste only.
    let held = w
        .store
        .purge_namespace(&ctx.tenant.namespace)
        .await
        .unwrap();
    assert_eq!(held, 1);
}

#[tokio::test]
async fn an_idempotent_retry_gets_the_same_paste_and_another_body_is_refused() {
    let w = world().await;
    let ctx = tenant(&w, "alpha", TenantSettings::default(), true).await;
    let keyed = |data: &str, digest: u8| NewPaste {
        idempotency: Some(("retry-1".into(), [digest; 32])),
        ..new_paste(data)
    };
    let first = w.service.create(&ctx, keyed("body", 1)).await.unwrap();
    let again = w.service.create(&ctx, keyed("body", 1)).await.unwrap();
    assert!(again.replayed && again.token.is_none());
    assert_eq!((again.id, again.expires_at), (first.id, first.expires_at));
    let other = w.service.create(&ctx, keyed("else", 2)).await;
    assert!(
        matches!(other, Err(PasteError::IdempotencyMismatch)),
        "{other:?}"
    );
}

#[tokio::test]
async fn anonymous_creates_need_a_tenant_that_allows_them_and_listing_needs_a_key() {
    let w = world().await;
    let settings = TenantSettings {
        allow_anonymous: false,
        ..TenantSettings::default()
    };
    let closed = tenant(&w, "closed", settings, false).await;
    let refused = w.service.create(&closed, new_paste("x")).await;
    assert!(
        matches!(refused, Err(PasteError::CredentialRequired)),
        "{refused:?}"
    );
    let refused = w.service.list(&closed, None, 10).await;
    assert!(
        matches!(refused, Err(PasteError::CredentialRequired)),
        "{refused:?}"
    );

    let open = tenant(&w, "open", TenantSettings::default(), true).await;
    let mut made = Vec::new();
    for n in 0..3 {
        let mut request = new_paste(&format!("paste {n}"));
        request.always_index = true;
        made.push(w.service.create(&open, request).await.unwrap().id);
    }
    made.sort();
    let first = w.service.list(&open, None, 2).await.unwrap();
    assert_eq!(first.pastes.len(), 2);
    let rest = w
        .service
        .list(&open, first.next.as_deref(), 2)
        .await
        .unwrap();
    assert!(rest.next.is_none());
    let listed: Vec<_> = first
        .pastes
        .iter()
        .chain(&rest.pastes)
        .map(|p| p.id.clone())
        .collect();
    assert_eq!(listed, made);
}
