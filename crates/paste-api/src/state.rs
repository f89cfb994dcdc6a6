//! Shared state of the API: the store, the settings it serves with, and
//! readiness.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use paste_store::{PasteStore, StoreError};
use tenancy::LazyCatalog;
use tokio::sync::{Mutex, Semaphore};

use crate::admin::service::AdminService;
use crate::answer::ResponseBudget;
use crate::body::{BodyBudget, BodyClients};
use crate::config::{AdminConfig, HeadLimits, HttpConfig, PasteConfig, PortalBase, ReviewConfig};
use crate::notify::{NotifyConfig, NotifyService};
use crate::pastes::service::PasteService;
use crate::purge::Purger;
use crate::ratelimit::{Limiters, LimitsConfig};
use crate::reviews::service::ReviewService;
use crate::tenants::{CACHE_TTL, Directory};

/// Everything a handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn PasteStore>,
    /// The tenant catalog, opened on first use.
    pub(crate) catalog: Arc<LazyCatalog>,
    /// The admin API's settings (off when the token is empty).
    pub(crate) admin: AdminConfig,
    /// Tenants and key checks, cached.
    pub(crate) directory: Arc<Directory>,
    /// The paste operations (store, catalog index, idempotency).
    pub(crate) pastes: PasteService,
    /// The operator's operations (tenants, keys, usage).
    pub(crate) admin_ops: AdminService,
    /// The review operations and their event fan-out.
    pub(crate) reviews: Arc<ReviewService>,
    /// Review subscriptions and this process's deliverer's wake-up.
    pub(crate) notify: Arc<NotifyService>,
    pub(crate) limits: LimitsConfig,
    pub(crate) limiters: Limiters,
    pub(crate) http: HttpConfig,
    /// The request-head limits answered with a JSON 431.
    pub(crate) head: HeadLimits,
    pub(crate) in_flight: Arc<Semaphore>,
    pub(crate) body_budget: BodyBudget,
    /// Memory of paste answers not yet written.
    pub(crate) response_budget: ResponseBudget,
    /// Purges of deleted tenants' namespaces.
    pub(crate) purger: Arc<Purger>,
    /// Bodies under way per client.
    pub(crate) body_clients: Arc<BodyClients>,
    pub(crate) readiness: Readiness,
    /// Handles of the request metrics.
    pub(crate) http_metrics: crate::metrics::HttpMetrics,
    /// Where the portal is, as discovery tells it.
    pub(crate) portal: PortalBase,
}

impl AppState {
    /// Builds the state. `paste` must have passed [`PasteConfig::validate`],
    /// `reviews` [`ReviewConfig::validate`] and `limits`
    /// [`LimitsConfig::validate`]. `portal`: where the portal is, as
    /// `GET /api/v1/discovery` tells it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Arc<dyn PasteStore>,
        catalog: Arc<LazyCatalog>,
        paste: PasteConfig,
        http: HttpConfig,
        head: HeadLimits,
        admin: AdminConfig,
        limits: LimitsConfig,
        reviews: ReviewConfig,
        portal: PortalBase,
        notify: NotifyConfig,
    ) -> Self {
        // Every store operation is timed and counted (`paste_store::instrument`).
        let store = paste_store::instrument::Instrumented::wrap(store);
        let timeout = Duration::from_secs(http.store_timeout_secs.max(1));
        let directory = Arc::new(Directory::new(catalog.clone(), &paste));
        let notify = Arc::new(NotifyService::new(catalog.clone(), timeout, notify));
        AppState {
            inner: Arc::new(Inner {
                pastes: PasteService::new(store.clone(), catalog.clone(), timeout),
                reviews: Arc::new(ReviewService::new(
                    store.clone(),
                    catalog.clone(),
                    timeout,
                    reviews,
                    notify.wake.clone(),
                )),
                notify,
                admin_ops: AdminService::new(
                    catalog.clone(),
                    store.clone(),
                    directory.clone(),
                    timeout,
                ),
                directory,
                limiters: Limiters::new(&limits),
                limits,
                in_flight: Arc::new(Semaphore::new(http.max_in_flight.max(1))),
                body_budget: BodyBudget::new(http.body_memory_mib),
                body_clients: BodyClients::new(http.max_bodies_per_client),
                response_budget: ResponseBudget::new(http.response_memory_mib),
                purger: Arc::new(Purger::default()),
                readiness: Readiness::new(store.clone(), catalog.clone()),
                catalog,
                admin,
                store,
                http,
                head,
                http_metrics: crate::metrics::HttpMetrics::default(),
                portal,
            }),
        }
    }

    /// Ends every review event stream: the server is going away (not the
    /// review), so clients reconnect, to another replica where there is one.
    /// Call when the drain begins; the streams would hold it up otherwise.
    pub fn end_streams(&self) {
        self.inner.reviews.hub.shut_down();
    }

    /// The readiness switch (flip it at the start of a graceful shutdown).
    pub fn readiness(&self) -> &Readiness {
        &self.inner.readiness
    }

    /// Starts the background upkeep, which lives as long as the state does:
    /// tenant snapshot refresh (every [`CACHE_TTL`]), limiter and key-cache
    /// cleaning and the flush of request counts to usage (every 10 s), the
    /// sweep of expired index entries and reviews, which gives their quota
    /// back, and the purge of deleted tenants' pastes (every minute); and the
    /// following of review changes committed by other replicas. Call once,
    /// inside a runtime. And the notification deliverer
    /// (`notify/deliver.rs`).
    pub fn spawn_maintenance(&self) {
        tokio::spawn(crate::notify::deliver::run(
            Arc::downgrade(&self.inner.notify),
            self.inner.catalog.clone(),
            self.inner.directory.clone(),
        ));
        tokio::spawn(crate::reviews::service::hub::Hub::follow_notices(
            Arc::downgrade(&self.inner.reviews.hub),
        ));
        // Review blobs whose removal failed (a store outage), on a loop of
        // their own: a store that is still down must not hold up the rest.
        let reviews = Arc::downgrade(&self.inner.reviews);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(reviews) = reviews.upgrade() else {
                    return;
                };
                reviews.retry_removals().await;
            }
        });
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(CACHE_TTL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut ticks: u64 = 0;
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                ticks += 1;
                if let Err(error) = inner.directory.refresh().await {
                    tracing::debug!(%error, "tenant snapshot not refreshed");
                }
                if ticks.is_multiple_of(10) {
                    inner.limiters.clean();
                    inner.directory.clean();
                    inner.directory.flush_requests().await;
                }
                if ticks.is_multiple_of(60)
                    && let Ok(catalog) = inner.catalog.get().await
                {
                    let now = tenancy::now_ms();
                    match catalog.sweep_expired(now, 10_000).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(swept = n, "expired pastes released from quotas"),
                        Err(error) => tracing::warn!(%error, "expiry sweep failed"),
                    }
                    inner.reviews.sweep_expired(&catalog).await;
                    // On a task of its own: a large purge must not hold up
                    // the snapshot refresh.
                    let (purger, store) = (inner.purger.clone(), inner.store.clone());
                    tokio::spawn(async move {
                        purger.round(store.as_ref(), &catalog).await;
                    });
                }
            }
        });
    }

    /// Entries held by the rate limiters (bounded by the upkeep).
    pub fn limiter_entries(&self) -> usize {
        self.inner.limiters.entries()
    }
}

/// Whether the instance should receive traffic: not shutting down, and the
/// store and the tenant catalog answered their health checks (cached for a
/// second, bounded by a timeout so a hung backend cannot hang the probe).
#[derive(Clone)]
pub struct Readiness {
    shutting_down: Arc<AtomicBool>,
    store: Arc<dyn PasteStore>,
    catalog: Arc<LazyCatalog>,
    cache: Arc<Mutex<Option<HealthSample>>>,
}

/// A health check result and when it was taken.
type HealthSample = (Instant, Result<(), String>);

const HEALTH_CACHE: Duration = Duration::from_secs(1);
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

impl Readiness {
    fn new(store: Arc<dyn PasteStore>, catalog: Arc<LazyCatalog>) -> Self {
        Readiness {
            shutting_down: Arc::new(AtomicBool::new(false)),
            store,
            catalog,
            cache: Arc::new(Mutex::new(None)),
        }
    }

    /// From now on `/readyz` answers 503.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Whether a shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// The store's and the catalog's health, at most a second old.
    pub(crate) async fn store_health(&self) -> Result<(), String> {
        let mut cache = self.cache.lock().await;
        if let Some((_, result)) = cache.as_ref().filter(|(at, _)| at.elapsed() < HEALTH_CACHE) {
            return result.clone();
        }
        let checks = async {
            self.store.health().await.map_err(|e| describe(&e))?;
            self.catalog
                .health()
                .await
                .map_err(|e| format!("tenant catalog: {e}"))
        };
        let result = match tokio::time::timeout(HEALTH_TIMEOUT, checks).await {
            Ok(result) => result,
            Err(_) => Err("health check timed out".to_owned()),
        };
        *cache = Some((Instant::now(), result.clone()));
        result
    }
}

fn describe(e: &StoreError) -> String {
    match e {
        StoreError::Unavailable { reason, .. } => (*reason).to_owned(),
        other => other.to_string(),
    }
}
