//! Tenant resolution with in-memory caches, so the paste hot path makes no
//! SQL round trip.
//!
//! A request is for the tenant of its API key (`Authorization: Bearer
//! pst_…`), else the tenant its `Host` is mapped to, else the default tenant
//! (which upstream clients use). [`Directory`] keeps a snapshot of every
//! tenant (refreshed every [`CACHE_TTL`] and at once after an admin change in
//! this process) and a bounded cache of key digests (entries live at most
//! [`CACHE_TTL`]), so a revoked key or a changed setting takes effect on
//! every replica within that time. Until the catalog has opened, the default
//! tenant is served from the server's own `[paste]` settings; keys cannot be
//! checked then, and keyed requests fail closed (503).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use paste_store::Namespace;
use tenancy::{ApiKey, CatalogError, KeyDigest, KeyId, LazyCatalog, Tenant, TenantId};

use crate::config::PasteConfig;
use crate::cors::CorsPolicy;

/// Longest time a cached tenant setting or key check is used.
pub const CACHE_TTL: Duration = Duration::from_secs(1);

/// Most key digests cached at once (the cache is emptied when it is full).
const MAX_CACHED_KEYS: usize = 10_000;

/// A tenant as the request path needs it: settings converted once.
#[derive(Debug)]
pub(crate) struct TenantView {
    pub(crate) id: TenantId,
    pub(crate) namespace: Namespace,
    pub(crate) is_default: bool,
    pub(crate) active: bool,
    pub(crate) max_size: usize,
    pub(crate) default_ttl_secs: u64,
    pub(crate) max_ttl_secs: u64,
    pub(crate) id_length: usize,
    pub(crate) allow_anonymous: bool,
    /// Whether a quota is set (then every create is accounted in the catalog).
    pub(crate) has_quota: bool,
    pub(crate) rate_per_sec: u32,
    pub(crate) rate_burst: u32,
    pub(crate) cors: CorsPolicy,
    /// Live reviewer links and versions per review.
    pub(crate) review_limits: tenancy::ReviewLimits,
    /// Whether notification targets may be private addresses or plain http.
    pub(crate) notify_private_targets: bool,
    /// Paste requests not yet added to the catalog's usage (shared by every
    /// snapshot's view of this tenant).
    requests: Arc<AtomicI64>,
    /// The tenant's per-key limiter, looked up once per snapshot.
    pub(crate) key_limiter: OnceLock<Option<Arc<KeyLimiter>>>,
}

/// A limiter keyed by API key.
pub(crate) type KeyLimiter = governor::DefaultKeyedRateLimiter<KeyId>;

/// Quotas at or above this are "unlimited" (the catalog's default is 2^62).
const UNLIMITED_FROM: i64 = i64::MAX / 4;

impl TenantView {
    /// The view of `t`, for tests that need a tenant without a directory.
    #[cfg(test)]
    pub(crate) fn of(t: &Tenant) -> Option<TenantView> {
        TenantView::from_tenant(t, Arc::default())
    }

    fn from_tenant(t: &Tenant, requests: Arc<AtomicI64>) -> Option<TenantView> {
        let s = &t.settings;
        Some(TenantView {
            id: t.id.clone(),
            namespace: Namespace::parse(&t.namespace).ok()?,
            is_default: t.id == TenantId::default_tenant(),
            active: t.is_active(),
            max_size: usize::try_from(s.max_paste_size).unwrap_or(usize::MAX),
            default_ttl_secs: u64::try_from(s.default_ttl_secs).unwrap_or(0),
            max_ttl_secs: u64::try_from(s.max_ttl_secs).unwrap_or(0),
            id_length: usize::try_from(s.id_length).unwrap_or(16),
            allow_anonymous: s.allow_anonymous,
            has_quota: s.quota_bytes < UNLIMITED_FROM || s.quota_pastes < UNLIMITED_FROM,
            rate_per_sec: u32::try_from(s.rate_per_sec).unwrap_or(u32::MAX),
            rate_burst: u32::try_from(s.rate_burst).unwrap_or(u32::MAX),
            cors: CorsPolicy::new(&s.cors_origins),
            review_limits: tenancy::ReviewLimits {
                max_links: s.review_max_links,
                max_versions: s.review_max_versions,
                max_events: api_types::rules::REVIEW_MAX_EVENTS,
            },
            notify_private_targets: s.notify_private_targets,
            requests,
            key_limiter: OnceLock::new(),
        })
    }

    /// The default tenant from the server's `[paste]` settings, used until
    /// the catalog has been read.
    fn from_config(paste: &PasteConfig, requests: Arc<AtomicI64>) -> TenantView {
        TenantView {
            id: TenantId::default_tenant(),
            namespace: Namespace::default_tenant(),
            is_default: true,
            active: true,
            max_size: paste.max_size,
            default_ttl_secs: paste.ttl_secs,
            max_ttl_secs: paste.ttl_secs,
            id_length: paste.id_length,
            allow_anonymous: true,
            has_quota: false,
            rate_per_sec: 10,
            rate_burst: 60,
            cors: CorsPolicy::new(&paste.allowed_origins),
            // Reviews need the catalog, which sets the real ones.
            review_limits: tenancy::ReviewLimits {
                max_links: api_types::rules::REVIEW_MAX_LINKS,
                max_versions: api_types::rules::REVIEW_MAX_VERSIONS,
                max_events: api_types::rules::REVIEW_MAX_EVENTS,
            },
            notify_private_targets: false,
            requests,
            key_limiter: OnceLock::new(),
        }
    }

    /// Counts one paste request (added to the catalog's usage in batches by
    /// [`Directory::flush_requests`]).
    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
}

/// Every tenant at one moment.
struct Snapshot {
    by_id: HashMap<TenantId, Arc<TenantView>>,
    by_host: HashMap<String, Arc<TenantView>>,
    default: Arc<TenantView>,
}

/// A cached key check: the tenant and key, or `None` for an unknown key.
type KeyEntry = (Instant, Option<Arc<KeyOwner>>);

/// An API key that checked out, and its tenant. Shared (not copied) by the
/// cache and every request that presents the key.
#[derive(Debug)]
pub(crate) struct KeyOwner {
    pub(crate) tenant: TenantId,
    pub(crate) key: KeyId,
}

/// Resolves tenants and API keys from caches backed by the catalog.
pub(crate) struct Directory {
    catalog: Arc<LazyCatalog>,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Read on every keyed request, written on a miss.
    keys: RwLock<HashMap<KeyDigest, KeyEntry>>,
    refresh: tokio::sync::Mutex<()>,
    /// Per tenant, the request counter its views share.
    requests: Mutex<HashMap<TenantId, Arc<AtomicI64>>>,
}

/// Why a request could not be given a tenant.
#[derive(Debug)]
pub(crate) enum ResolveError {
    /// The key is malformed, unknown, revoked, or its tenant is disabled.
    BadKey,
    /// The catalog could not be asked (fail closed).
    Unavailable(CatalogError),
}

impl Directory {
    pub(crate) fn new(catalog: Arc<LazyCatalog>, paste: &PasteConfig) -> Directory {
        let counter = Arc::new(AtomicI64::new(0));
        let default = Arc::new(TenantView::from_config(paste, counter.clone()));
        Directory {
            catalog,
            snapshot: RwLock::new(Arc::new(Snapshot {
                by_id: HashMap::from([(default.id.clone(), default.clone())]),
                by_host: HashMap::new(),
                default,
            })),
            keys: RwLock::new(HashMap::new()),
            refresh: tokio::sync::Mutex::new(()),
            requests: Mutex::new(HashMap::from([(TenantId::default_tenant(), counter)])),
        }
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Re-reads every tenant from the catalog.
    pub(crate) async fn refresh(&self) -> Result<(), CatalogError> {
        let _one_at_a_time = self.refresh.lock().await;
        let tenants = self.catalog.get().await?.list_tenants().await?;
        let current = self.snapshot();
        let mut by_id = HashMap::with_capacity(tenants.len());
        let mut by_host = HashMap::new();
        let mut default = current.default.clone();
        for tenant in &tenants {
            let counter = self.counter(&tenant.id);
            let Some(view) = TenantView::from_tenant(tenant, counter) else {
                tracing::error!(tenant.id = %tenant.id, "tenant has an unusable namespace; skipped");
                continue;
            };
            let view = Arc::new(view);
            if view.is_default {
                default = view.clone();
            }
            for host in &tenant.settings.hosts {
                by_host.insert(host.clone(), view.clone());
            }
            by_id.insert(view.id.clone(), view);
        }
        by_id.insert(default.id.clone(), default.clone());
        *self
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(Snapshot {
            by_id,
            by_host,
            default,
        });
        Ok(())
    }

    /// After an admin change in this process: forget cached keys and re-read
    /// the tenants now (other replicas follow within [`CACHE_TTL`]).
    pub(crate) async fn invalidate(&self) {
        self.keys
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        if let Err(error) = self.refresh().await {
            tracing::warn!(%error, "cannot re-read tenants after a change");
        }
    }

    /// The tenant `host` (the `Host` header) is mapped to, else the default.
    /// A disabled tenant is returned as such (the caller refuses it).
    pub(crate) fn by_host(&self, host: Option<&str>) -> Arc<TenantView> {
        let snapshot = self.snapshot();
        if !snapshot.by_host.is_empty()
            && let Some(host) = host
        {
            let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
            let bare = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
            if let Some(t) = snapshot
                .by_host
                .get(&host)
                .or_else(|| snapshot.by_host.get(bare))
            {
                return t.clone();
            }
        }
        snapshot.default.clone()
    }

    /// The default tenant (from the snapshot).
    pub(crate) fn default_tenant(&self) -> Arc<TenantView> {
        self.snapshot().default.clone()
    }

    /// A tenant by id (from the snapshot).
    pub(crate) fn by_id(&self, id: &TenantId) -> Option<Arc<TenantView>> {
        self.snapshot().by_id.get(id).cloned()
    }

    /// The tenant and key of a presented API key. Malformed keys are refused
    /// before any lookup; a catalog that cannot answer is an error (fail
    /// closed), never a refusal.
    pub(crate) async fn authenticate(
        &self,
        presented: &str,
    ) -> Result<(Arc<TenantView>, Arc<KeyOwner>), ResolveError> {
        // Only parsed keys are ever cached, so a cache hit is a well-formed
        // key; a miss parses (checksum first) before asking the catalog.
        let digest = KeyDigest::of(presented);
        let cached = {
            let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
            keys.get(&digest)
                .filter(|(at, _)| at.elapsed() < CACHE_TTL)
                .map(|(_, found)| found.clone())
        };
        let found = match cached {
            Some(found) => found,
            None => {
                let key = ApiKey::parse(presented).map_err(|_| ResolveError::BadKey)?;
                let catalog = self
                    .catalog
                    .get()
                    .await
                    .map_err(ResolveError::Unavailable)?;
                let found = catalog
                    .authenticate(&key)
                    .await
                    .map_err(ResolveError::Unavailable)?
                    .map(|(tenant, key)| Arc::new(KeyOwner { tenant, key }));
                let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
                if keys.len() >= MAX_CACHED_KEYS {
                    keys.clear();
                }
                keys.insert(digest, (Instant::now(), found.clone()));
                found
            }
        };
        let owner = found.ok_or(ResolveError::BadKey)?;
        let tenant = match self.by_id(&owner.tenant) {
            Some(t) => t,
            None => {
                // A tenant newer than the snapshot.
                self.refresh().await.map_err(ResolveError::Unavailable)?;
                self.by_id(&owner.tenant).ok_or(ResolveError::BadKey)?
            }
        };
        if !tenant.active {
            return Err(ResolveError::BadKey);
        }
        Ok((tenant, owner))
    }

    /// The request counter of `tenant`, shared by all its views.
    fn counter(&self, tenant: &TenantId) -> Arc<AtomicI64> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(tenant.clone())
            .or_default()
            .clone()
    }

    /// Adds the counted requests to each tenant's usage. Counts that cannot
    /// be written are kept for the next flush.
    pub(crate) async fn flush_requests(&self) {
        let counters: Vec<(TenantId, Arc<AtomicI64>)> = self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(t, c)| (t.clone(), c.clone()))
            .collect();
        let Ok(catalog) = self.catalog.get().await else {
            return;
        };
        for (tenant, counter) in counters {
            let n = counter.swap(0, Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            match catalog.add_requests(&tenant, n).await {
                Ok(()) | Err(CatalogError::NotFound) => {}
                Err(error) => {
                    tracing::debug!(%error, "request counts not written yet");
                    counter.fetch_add(n, Ordering::Relaxed);
                }
            }
        }
    }

    /// Drops key checks older than [`CACHE_TTL`] (run periodically).
    pub(crate) fn clean(&self) {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        keys.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenancy::CatalogConfig;

    fn directory() -> Directory {
        let catalog = Arc::new(LazyCatalog::new(
            CatalogConfig::new("sqlite:///nonexistent-dir/never-opened.sqlite"),
            tenancy::TenantUpdate::default(),
        ));
        Directory::new(catalog, &PasteConfig::default())
    }

    #[test]
    fn unknown_hosts_resolve_to_the_default_tenant_from_config() {
        let d = directory();
        let t = d.by_host(Some("anything.example"));
        assert!(t.is_default && t.active && t.allow_anonymous);
        assert_eq!(t.max_size, PasteConfig::default().max_size);
        assert!(d.by_host(None).is_default);
    }

    #[tokio::test]
    async fn malformed_keys_are_refused_without_a_lookup() {
        let d = directory();
        for bad in ["", "pst_live_x", "not-a-key", &"a".repeat(300)] {
            assert!(matches!(
                d.authenticate(bad).await,
                Err(ResolveError::BadKey)
            ));
        }
    }
}
