//! Shared state of the API: the store, the settings it serves with, and
//! readiness.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use paste_store::{Namespace, PasteStore, StoreError};
use tenancy::LazyCatalog;
use tokio::sync::{Mutex, Semaphore};

use crate::body::BodyBudget;
use crate::config::{AdminConfig, HttpConfig, PasteConfig};
use crate::cors::CorsPolicy;

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
    /// Namespace of the single tenant served until tenancy lands.
    pub(crate) namespace: Namespace,
    pub(crate) paste: PasteConfig,
    pub(crate) http: HttpConfig,
    pub(crate) cors: CorsPolicy,
    pub(crate) in_flight: Arc<Semaphore>,
    pub(crate) body_budget: BodyBudget,
    pub(crate) readiness: Readiness,
}

impl AppState {
    /// Builds the state. `paste` must have passed [`PasteConfig::validate`].
    pub fn new(
        store: Arc<dyn PasteStore>,
        catalog: Arc<LazyCatalog>,
        paste: PasteConfig,
        http: HttpConfig,
        admin: AdminConfig,
    ) -> Self {
        AppState {
            inner: Arc::new(Inner {
                cors: CorsPolicy::new(&paste.allowed_origins),
                in_flight: Arc::new(Semaphore::new(http.max_in_flight.max(1))),
                body_budget: BodyBudget::new(http.body_memory_mib),
                readiness: Readiness::new(store.clone(), catalog.clone()),
                catalog,
                admin,
                namespace: Namespace::default_tenant(),
                store,
                paste,
                http,
            }),
        }
    }

    /// The readiness switch (flip it at the start of a graceful shutdown).
    pub fn readiness(&self) -> &Readiness {
        &self.inner.readiness
    }

    pub(crate) fn store_timeout(&self) -> Duration {
        Duration::from_secs(self.inner.http.store_timeout_secs.max(1))
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
