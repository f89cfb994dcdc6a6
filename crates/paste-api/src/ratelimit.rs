//! Rate limits, all in process and all bounded:
//!
//! - **per client IP**: a `tower-governor` layer over the paste routes
//!   (flood protection for everyone, keyed or not);
//! - **per API key**: the key's tenant's `rate_per_sec` / `rate_burst`, one
//!   `governor` keyed limiter per tenant;
//! - **penalties per client IP**: failed authentication (any 401) and
//!   not-found paste reads (id enumeration) each spend a token of a strict
//!   limiter; an IP that runs out gets 429 for those requests until it refills.
//!
//! The client IP is the socket peer; `X-Forwarded-For` is believed only when
//! the peer is a configured trusted proxy (then the rightmost address that is
//! not itself a trusted proxy counts). Limiter maps drop idle entries every
//! few seconds ([`Limiters::clean`]), so their memory follows recent clients
//! only. Limits are per process: N replicas allow up to N× a limit.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::{HeaderMap, Request};
use serde::{Deserialize, Serialize};
use tenancy::{KeyId, TenantId};
use tower_governor::GovernorError;
use tower_governor::key_extractor::KeyExtractor;

use crate::shared_limit::SharedKeyLimiter;

/// `[limits]`: rate limits of the API (0 turns a limiter off).
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Sustained requests per second per client IP on the paste routes.
    pub ip_per_sec: u32,
    /// Burst of the per-IP limiter.
    pub ip_burst: u32,
    /// Failed authentications (401) per minute per client IP.
    pub failed_auth_per_min: u32,
    /// Burst of the failed-authentication limiter.
    pub failed_auth_burst: u32,
    /// Not-found paste reads per minute per client IP.
    pub not_found_per_min: u32,
    /// Burst of the not-found limiter.
    pub not_found_burst: u32,
    /// Whether each API key is held to its tenant's `rate_per_sec` / `rate_burst`.
    pub per_key: bool,
    /// Peers whose `X-Forwarded-For` is believed: IP addresses or CIDR
    /// ranges (`10.0.0.0/8`, `::1/128`).
    pub trusted_proxies: Vec<String>,
    /// Redis holding the per-key limits, shared by every replica
    /// (`redis://…`); empty: each process limits on its own. While Redis
    /// does not answer, each process falls back to its own limiter. May
    /// carry a password: printed redacted.
    #[serde(serialize_with = "redact_url")]
    pub redis_url: String,
}

fn redact_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&paste_store::redacted(url))
}

impl std::fmt::Debug for LimitsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitsConfig")
            .field("ip_per_sec", &self.ip_per_sec)
            .field("ip_burst", &self.ip_burst)
            .field("failed_auth_per_min", &self.failed_auth_per_min)
            .field("failed_auth_burst", &self.failed_auth_burst)
            .field("not_found_per_min", &self.not_found_per_min)
            .field("not_found_burst", &self.not_found_burst)
            .field("per_key", &self.per_key)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("redis_url", &paste_store::redacted(&self.redis_url))
            .finish()
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            ip_per_sec: 100,
            ip_burst: 200,
            failed_auth_per_min: 10,
            failed_auth_burst: 10,
            not_found_per_min: 30,
            not_found_burst: 30,
            per_key: true,
            trusted_proxies: Vec::new(),
            redis_url: String::new(),
        }
    }
}

impl LimitsConfig {
    /// All limiters off (tests and load tests that hammer from one address).
    pub fn off() -> Self {
        LimitsConfig {
            ip_per_sec: 0,
            ip_burst: 0,
            failed_auth_per_min: 0,
            failed_auth_burst: 0,
            not_found_per_min: 0,
            not_found_burst: 0,
            per_key: false,
            trusted_proxies: Vec::new(),
            redis_url: String::new(),
        }
    }

    /// Checks the trusted proxy list, the Redis URL and that each rate has
    /// a burst.
    pub fn validate(&self) -> Result<(), String> {
        if !self.redis_url.trim().is_empty() {
            redis::Client::open(self.redis_url.trim())
                .map_err(|e| format!("limits.redis_url: not a Redis URL ({e})"))?;
        }
        for entry in &self.trusted_proxies {
            Cidr::parse(entry).ok_or_else(|| {
                format!("limits.trusted_proxies: {entry:?} is not an IP address or CIDR range")
            })?;
        }
        for (name, rate, burst) in [
            ("ip", self.ip_per_sec, self.ip_burst),
            (
                "failed_auth",
                self.failed_auth_per_min,
                self.failed_auth_burst,
            ),
            ("not_found", self.not_found_per_min, self.not_found_burst),
        ] {
            if (rate == 0) != (burst == 0) {
                return Err(format!(
                    "limits.{name}: the rate and the burst must both be 0 (off) or both positive"
                ));
            }
        }
        Ok(())
    }
}

/// An address range from the trusted proxy list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub(crate) fn parse(s: &str) -> Option<Cidr> {
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a.parse::<IpAddr>().ok()?, Some(p.parse::<u8>().ok()?)),
            None => (s.trim().parse::<IpAddr>().ok()?, None),
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Cidr { net: addr, prefix })
    }

    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (canonical(self.net), ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// IPv4-mapped IPv6 addresses compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The client address a request is attributed to (a request extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClientIp(pub(crate) IpAddr);

/// The client's address: the peer, or — only when the peer is a trusted
/// proxy — the rightmost `X-Forwarded-For` entry that is not a trusted proxy.
pub(crate) fn client_ip(peer: Option<SocketAddr>, headers: &HeaderMap, trusted: &[Cidr]) -> IpAddr {
    let Some(peer) = peer.map(|p| canonical(p.ip())) else {
        return IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    };
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|hop| hop.trim().parse::<IpAddr>().map(canonical))
        .collect::<Result<_, _>>()
        // A malformed chain is not believed at all.
        .unwrap_or_default();
    hops.into_iter()
        .rev()
        .find(|ip| !is_trusted(*ip))
        .unwrap_or(peer)
}

/// Reads the peer from axum's `ConnectInfo` (inserted by the server).
pub(crate) fn peer_of<B>(request: &Request<B>) -> Option<SocketAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr)
}

/// `tower-governor` key: the [`ClientIp`] the request was attributed to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClientIpKey;

impl KeyExtractor for ClientIpKey {
    type Key = IpAddr;

    fn extract<T>(&self, req: &Request<T>) -> Result<IpAddr, GovernorError> {
        Ok(req
            .extensions()
            .get::<ClientIp>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0))
    }
}

/// A strict per-IP limiter whose tokens are spent by failures; an IP that
/// runs dry is blocked until its next token. An escalating one (the
/// not-found limiter) doubles the block each time the same IP runs dry
/// again, up to [`MAX_PENALTY`]; the doubling is forgotten one step per
/// [`PENALTY_DECAY`] without a block.
pub(crate) struct Penalty {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    blocked: Mutex<HashMap<IpAddr, Block>>,
    escalates: bool,
}

/// An IP's block: until when, and how many doublings it has earned.
#[derive(Clone, Copy, Debug)]
struct Block {
    until: Instant,
    level: u32,
}

/// The longest block an escalating limiter gives.
const MAX_PENALTY: Duration = Duration::from_secs(3600);
/// Quiet time that takes one doubling off.
const PENALTY_DECAY: Duration = Duration::from_secs(600);

/// The block after `previous` for a base wait of `base`, at `now`: the
/// level decayed by the quiet time since the previous block ended, plus
/// one; the wait `base × 2^level`, at most [`MAX_PENALTY`].
fn escalated(previous: Option<Block>, base: Duration, now: Instant) -> Block {
    let level = previous.map_or(0, |b| {
        let quiet = now.saturating_duration_since(b.until);
        let decayed = u32::try_from(quiet.as_secs() / PENALTY_DECAY.as_secs()).unwrap_or(u32::MAX);
        b.level.saturating_sub(decayed) + 1
    });
    let wait = base
        .max(Duration::from_secs(1))
        .saturating_mul(2u32.saturating_pow(level.min(20)))
        .min(MAX_PENALTY);
    Block {
        until: now + wait,
        level,
    }
}

/// Most IPs remembered as blocked at once (beyond it, the limiter alone still
/// turns each further failure into a 429).
const MAX_BLOCKED: usize = 65_536;

impl Penalty {
    fn new(per_min: u32, burst: u32, escalates: bool) -> Option<Penalty> {
        let per_min = NonZeroU32::new(per_min)?;
        let burst = NonZeroU32::new(burst)?;
        Some(Penalty {
            limiter: RateLimiter::keyed(Quota::per_minute(per_min).allow_burst(burst)),
            blocked: Mutex::new(HashMap::new()),
            escalates,
        })
    }

    /// How long `ip` is still blocked, if it is.
    pub(crate) fn blocked(&self, ip: IpAddr) -> Option<Duration> {
        let blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        let block = *blocked.get(&ip)?;
        block.until.checked_duration_since(Instant::now())
    }

    /// Records one failure of `ip`; `Some(wait)` when it has none left (the
    /// wait that the `Retry-After` names: the real one).
    pub(crate) fn strike(&self, ip: IpAddr) -> Option<Duration> {
        let clock = DefaultClock::default();
        let denied = self.limiter.check_key(&ip).err()?;
        let base = denied.wait_time_from(clock.now());
        let now = Instant::now();
        let mut blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        let block = if self.escalates {
            escalated(blocked.get(&ip).copied(), base, now)
        } else {
            Block {
                until: now + base,
                level: 0,
            }
        };
        if blocked.len() < MAX_BLOCKED || blocked.contains_key(&ip) {
            blocked.insert(ip, block);
        }
        Some(block.until.saturating_duration_since(now))
    }

    fn clean(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        let now = Instant::now();
        let mut blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        // Kept while blocked, or while a doubling is still remembered.
        blocked.retain(|_, b| {
            b.until > now
                || (b.level > 0
                    && now.saturating_duration_since(b.until)
                        < PENALTY_DECAY.saturating_mul(b.level))
        });
        blocked.shrink_to_fit();
    }

    /// Entries held (for tests and metrics).
    fn len(&self) -> usize {
        self.limiter.len() + self.blocked.lock().map_or(0, |b| b.len())
    }
}

/// A tenant's per-key limiter and the settings it was built with.
struct TenantLimiter {
    rate: u32,
    burst: u32,
    limiter: Arc<DefaultKeyedRateLimiter<KeyId>>,
}

/// How long a shared (Redis) limit check may take before the process's own
/// limiter decides instead.
const SHARED_LIMIT_DEADLINE: Duration = Duration::from_millis(100);

fn shared_limiter(config: &LimitsConfig) -> Option<SharedKeyLimiter> {
    let url = config.redis_url.trim();
    if !config.per_key || url.is_empty() {
        return None;
    }
    match SharedKeyLimiter::new(url, SHARED_LIMIT_DEADLINE) {
        Ok(limiter) => Some(limiter),
        Err(error) => {
            tracing::error!(%error, "shared rate limiter off: limiting per process");
            None
        }
    }
}

/// Every limiter of the process except the per-IP layer (which owns its own).
pub(crate) struct Limiters {
    pub(crate) trusted: Vec<Cidr>,
    pub(crate) failed_auth: Option<Penalty>,
    pub(crate) not_found: Option<Penalty>,
    per_key: bool,
    keys: Mutex<HashMap<TenantId, TenantLimiter>>,
    /// The per-key limits in Redis, when `limits.redis_url` is set.
    pub(crate) shared: Option<SharedKeyLimiter>,
    /// The per-IP layer's limiter, for cleaning.
    ip: Mutex<Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>>,
}

impl Limiters {
    pub(crate) fn new(config: &LimitsConfig) -> Self {
        Limiters {
            trusted: config
                .trusted_proxies
                .iter()
                .filter_map(|s| Cidr::parse(s))
                .collect(),
            failed_auth: Penalty::new(config.failed_auth_per_min, config.failed_auth_burst, false),
            not_found: Penalty::new(config.not_found_per_min, config.not_found_burst, true),
            per_key: config.per_key,
            keys: Mutex::new(HashMap::new()),
            shared: shared_limiter(config),
            ip: Mutex::new(None),
        }
    }

    /// Hands over the per-IP layer's limiter, for cleaning and counting.
    pub(crate) fn set_ip_limiter(&self, limiter: Arc<DefaultKeyedRateLimiter<IpAddr>>) {
        *self.ip.lock().unwrap_or_else(PoisonError::into_inner) = Some(limiter);
    }

    /// The per-key limiter of a tenant with these settings (`None` when
    /// per-key limits are off). New settings start from full buckets.
    pub(crate) fn key_limiter(
        &self,
        tenant: &TenantId,
        rate: u32,
        burst: u32,
    ) -> Option<Arc<DefaultKeyedRateLimiter<KeyId>>> {
        if !self.per_key {
            return None;
        }
        let rate_nz = NonZeroU32::new(rate)?;
        let burst_nz = NonZeroU32::new(burst)?;
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = keys.entry(tenant.clone()).or_insert_with(|| TenantLimiter {
            rate: 0,
            burst: 0,
            limiter: Arc::new(RateLimiter::keyed(Quota::per_second(rate_nz))),
        });
        if entry.rate != rate || entry.burst != burst {
            *entry = TenantLimiter {
                rate,
                burst,
                limiter: Arc::new(RateLimiter::keyed(
                    Quota::per_second(rate_nz).allow_burst(burst_nz),
                )),
            };
        }
        Some(entry.limiter.clone())
    }

    /// Drops idle limiter entries (run every few seconds).
    pub(crate) fn clean(&self) {
        for penalty in [&self.failed_auth, &self.not_found].into_iter().flatten() {
            penalty.clean();
        }
        let tenants: Vec<_> = self
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|t| t.limiter.clone())
            .collect();
        for limiter in tenants {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        if let Some(ip) = self
            .ip
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            ip.retain_recent();
            ip.shrink_to_fit();
        }
    }

    /// Entries held across all limiters.
    pub(crate) fn entries(&self) -> usize {
        let penalties: usize = [&self.failed_auth, &self.not_found]
            .into_iter()
            .flatten()
            .map(Penalty::len)
            .sum();
        let keys: usize = self
            .keys
            .lock()
            .map_or(0, |k| k.values().map(|t| t.limiter.len()).sum());
        let ip = self
            .ip
            .lock()
            .ok()
            .and_then(|ip| ip.as_ref().map(|l| l.len()))
            .unwrap_or(0);
        penalties + keys + ip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn xff(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn cidrs_match_their_range_only() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.200.1.1")));
        assert!(c.contains(ip("::ffff:10.1.2.3")));
        assert!(!c.contains(ip("11.0.0.1")));
        let one = Cidr::parse("127.0.0.1").unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let v6 = Cidr::parse("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        for bad in ["", "10.0.0.0/33", "x", "10.0.0.0/", "::/129"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_peers() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        let peer = |s: &str| Some(SocketAddr::new(ip(s), 1234));
        // An untrusted peer's header is ignored.
        assert_eq!(
            client_ip(peer("1.2.3.4"), &xff("9.9.9.9"), &trusted),
            ip("1.2.3.4")
        );
        // Through a trusted proxy: the rightmost untrusted hop.
        assert_eq!(
            client_ip(
                peer("10.0.0.5"),
                &xff("6.6.6.6, 7.7.7.7, 10.0.0.9"),
                &trusted
            ),
            ip("7.7.7.7")
        );
        // A malformed chain or no header: the proxy itself.
        assert_eq!(
            client_ip(peer("10.0.0.5"), &xff("7.7.7.7, junk"), &trusted),
            ip("10.0.0.5")
        );
        assert_eq!(
            client_ip(peer("10.0.0.5"), &HeaderMap::new(), &trusted),
            ip("10.0.0.5")
        );
        assert_eq!(
            client_ip(None, &HeaderMap::new(), &trusted),
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        );
    }

    #[test]
    fn a_penalty_blocks_after_its_burst() {
        let p = Penalty::new(1, 3, false).unwrap();
        let a = ip("192.0.2.1");
        for _ in 0..3 {
            assert_eq!(p.strike(a), None);
            assert_eq!(p.blocked(a), None);
        }
        let wait = p.strike(a).unwrap();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(60));
        assert!(p.blocked(a).is_some());
        assert_eq!(p.blocked(ip("192.0.2.2")), None);
    }

    #[test]
    fn repeated_blocks_double_up_to_the_cap_and_decay_when_quiet() {
        let t0 = Instant::now();
        let base = Duration::from_secs(2);
        let first = escalated(None, base, t0);
        assert_eq!(first.until - t0, base, "the first block is the plain wait");
        // Blocked again right after: 4 s, 8 s, 16 s …
        let mut block = first;
        let mut waits = Vec::new();
        for _ in 0..4 {
            let now = block.until;
            block = escalated(Some(block), base, now);
            waits.push((block.until - now).as_secs());
        }
        assert_eq!(waits, [4, 8, 16, 32]);
        // … never more than the cap.
        let mut now = block.until;
        for _ in 0..30 {
            now = block.until;
            block = escalated(Some(block), base, now);
        }
        assert_eq!(block.until - now, MAX_PENALTY);
        // Quiet for two decay periods after the block takes two doublings off.
        let level = block.level;
        let later = block.until + PENALTY_DECAY * 2;
        let after = escalated(Some(block), base, later);
        assert_eq!(after.level, level - 2 + 1);
        // Quiet for long enough forgets it all: the plain wait again, doubled once.
        let much_later = block.until + PENALTY_DECAY * 1000;
        let fresh = escalated(Some(block), base, much_later);
        assert_eq!(fresh.until - much_later, base * 2);
    }

    #[test]
    fn the_not_found_limiter_escalates_and_names_the_real_wait() {
        let p = Penalty::new(1, 3, true).unwrap();
        let a = ip("192.0.2.9");
        for _ in 0..3 {
            assert_eq!(p.strike(a), None);
        }
        let first = p.strike(a).unwrap();
        let second = p.strike(a).unwrap();
        assert!(second > first + first / 2, "{first:?} then {second:?}");
        let left = p.blocked(a).unwrap();
        assert!(left <= second && left + Duration::from_secs(1) > second);
    }

    #[test]
    fn config_validation_names_the_bad_entry() {
        let mut c = LimitsConfig {
            trusted_proxies: vec!["10.0.0.0/8".into(), "nope".into()],
            ..LimitsConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("nope"));
        c.trusted_proxies.clear();
        c.ip_burst = 0;
        assert!(c.validate().is_err());
        assert!(LimitsConfig::off().validate().is_ok());
    }
}
