//! [`NotifyService`]: a review's subscriptions (no HTTP here): making one
//! (the target checked, a webhook's secret derived and shown once),
//! listing, removing, and reading what was delivered; and the wake-up of
//! this process's deliverer after a commit that queued notifications.

use std::sync::Arc;
use std::time::Duration;

use tenancy::{
    Catalog, CatalogError, Delivery, LazyCatalog, NewSubscription, NoticeType, Subscription,
    SubscriptionRefusal, TargetKind, TenantId,
};
use tokio::sync::{Notify, OnceCell};

use super::{sign, target};
use crate::error::ApiError;
use crate::within::{CatalogStep, catalog_within, now_ms_i64};

/// How notifications are sent from this process.
#[derive(Clone, Debug, Default)]
pub struct NotifyConfig {
    /// This replica's name in outbox claims: stable across restarts, so a
    /// restarted replica gives back what it held at once.
    pub replica: String,
    /// The portal origin notifications link to (`<base>/r/<id>`); empty:
    /// the origin the subscriber reached the server at.
    pub link_base: String,
}

/// A subscription to make, as a handler read it.
pub(crate) struct SubscribeInput {
    /// Where.
    pub(crate) kind: TargetKind,
    /// The URL.
    pub(crate) url: String,
    /// The types (a mask; all when the request named none).
    pub(crate) events: i64,
    /// The origin to link to, when the configuration names none.
    pub(crate) origin: String,
}

/// See the module documentation.
pub(crate) struct NotifyService {
    catalog: Arc<LazyCatalog>,
    timeout: Duration,
    config: NotifyConfig,
    /// Rung after a commit that may have queued notifications.
    pub(crate) wake: Arc<Notify>,
    /// The webhook root key, read (or made) once.
    root: OnceCell<[u8; 32]>,
}

impl NotifyService {
    pub(crate) fn new(catalog: Arc<LazyCatalog>, timeout: Duration, config: NotifyConfig) -> Self {
        NotifyService {
            catalog,
            timeout,
            config,
            wake: Arc::new(Notify::new()),
            root: OnceCell::new(),
        }
    }

    /// This process's notification settings.
    pub(crate) fn config(&self) -> &NotifyConfig {
        &self.config
    }

    async fn call<T, F, Fut>(&self, op: F) -> Result<T, ApiError>
    where
        F: FnOnce(Arc<Catalog>) -> Fut,
        Fut: Future<Output = Result<T, CatalogError>>,
    {
        catalog_within(&self.catalog, self.timeout, op)
            .await
            .map_err(|step| match step {
                CatalogStep::Failed(CatalogError::NotFound) => ApiError::ReviewNotFound,
                CatalogStep::Failed(CatalogError::Invalid(why)) => ApiError::InvalidValue(why),
                CatalogStep::Timeout => ApiError::CatalogUnavailable {
                    retry_after: Duration::from_secs(1),
                    source: None,
                },
                CatalogStep::Open(e) | CatalogStep::Failed(e) => ApiError::from_catalog(e),
            })
    }

    /// The webhook root key: the catalog's, made by the first replica.
    pub(crate) async fn root(&self) -> Result<[u8; 32], ApiError> {
        let root = self
            .root
            .get_or_try_init(|| async {
                let stored = self
                    .call(|c| async move {
                        c.notify_key(sign::ROOT_KEY, now_ms_i64(), || {
                            sign::fresh_root().unwrap_or_default()
                        })
                        .await
                    })
                    .await?;
                sign::root_bytes(&stored).ok_or_else(|| {
                    ApiError::Internal(
                        "the stored webhook root key is not 32 bytes of base64".into(),
                    )
                })
            })
            .await?;
        Ok(*root)
    }

    /// Makes a subscription for `writer` of review `review`; answers it and,
    /// for a webhook, its secret (shown once).
    pub(crate) async fn subscribe(
        &self,
        tenant: &TenantId,
        review: &str,
        writer: &str,
        allow_private: bool,
        input: SubscribeInput,
    ) -> Result<(Subscription, Option<String>), ApiError> {
        let url =
            target::check_url(&input.url, allow_private).map_err(ApiError::TargetNotAllowed)?;
        target::check_resolved(&url, allow_private)
            .await
            .map_err(ApiError::TargetNotAllowed)?;
        let id = fresh_subscription_id()?;
        let link_base = if self.config.link_base.is_empty() {
            input.origin
        } else {
            self.config.link_base.clone()
        };
        let secret = match input.kind {
            TargetKind::Webhook => {
                let root = self.root().await?;
                Some(sign::secret_text(&sign::secret_for(
                    &root,
                    tenant.as_str(),
                    &id,
                )))
            }
            TargetKind::Ntfy | TargetKind::WebPush => None,
        };
        let target = url.to_string();
        let made = self
            .call(|c| async move {
                c.add_subscription(
                    tenant,
                    review,
                    &NewSubscription {
                        id: &id,
                        writer,
                        kind: input.kind,
                        target: &target,
                        link_base: &link_base,
                        events: input.events,
                        now: now_ms_i64(),
                    },
                )
                .await
            })
            .await?;
        match made {
            Ok(subscription) => Ok((subscription, secret)),
            Err(SubscriptionRefusal::TooMany(max)) => Err(ApiError::TooManySubscriptions(max)),
        }
    }

    /// `writer`'s subscriptions, or all with `None` (the owner).
    pub(crate) async fn list(
        &self,
        tenant: &TenantId,
        review: &str,
        writer: Option<&str>,
    ) -> Result<Vec<Subscription>, ApiError> {
        self.call(|c| async move { c.subscriptions(tenant, review, writer).await })
            .await
    }

    /// Removes one (`writer`'s own, or any with `None`).
    pub(crate) async fn remove(
        &self,
        tenant: &TenantId,
        review: &str,
        id: &str,
        writer: Option<&str>,
    ) -> Result<(), ApiError> {
        let removed = self
            .call(|c| async move { c.remove_subscription(tenant, review, id, writer).await })
            .await?;
        if removed {
            Ok(())
        } else {
            Err(ApiError::SubscriptionNotFound)
        }
    }

    /// The newest 100 deliveries of one subscription `writer` may see.
    pub(crate) async fn deliveries(
        &self,
        tenant: &TenantId,
        review: &str,
        id: &str,
        writer: Option<&str>,
    ) -> Result<Vec<Delivery>, ApiError> {
        let visible = self
            .call(|c| async move { c.subscription(tenant, review, id, writer).await })
            .await?;
        if visible.is_none() {
            return Err(ApiError::SubscriptionNotFound);
        }
        self.call(|c| async move { c.deliveries(tenant, review, id, 100).await })
            .await
    }
}

/// The mask of `names` (`review.comment`, …); all types when `None`.
pub(crate) fn events_mask(names: Option<&[String]>) -> Result<i64, ApiError> {
    let Some(names) = names else {
        return Ok(NoticeType::ALL_MASK);
    };
    if names.is_empty() {
        return Err(ApiError::InvalidField(
            "events must name at least one type, or be left out for all of them".into(),
        ));
    }
    names.iter().try_fold(0, |mask, name| {
        NoticeType::parse(name)
            .map(|t| mask | t.bit())
            .ok_or_else(|| {
                ApiError::InvalidField(format!(
                    "events: {name:?} is not a notification type; the types are {}",
                    api_types::notify::NOTICE_TYPES.join(", ")
                ))
            })
    })
}

fn fresh_subscription_id() -> Result<String, ApiError> {
    let id = paste_store::PasteId::generate(16)
        .map_err(|_| ApiError::Internal("no random source for a subscription id".into()))?;
    Ok(format!("sub_{}", id.as_str()))
}
