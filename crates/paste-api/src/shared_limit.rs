//! The per-key rate limit shared by every replica: GCRA (the algorithm
//! governor uses in process) with the theoretical arrival time of each key
//! kept in Redis and updated by one Lua script, so N replicas together
//! allow a key its tenant's rate and burst, not N times it. The clock is
//! Redis's (`TIME`), so replicas need not agree on theirs.
//!
//! When Redis does not answer within its deadline the check says
//! "unknown" and the caller falls back to the process's own limiter: during
//! a Redis outage each replica enforces the limit alone (up to N× across N
//! replicas), and requests are never refused or slowed for the limiter's
//! sake. After a failure Redis is left alone for [`BACKOFF`] so that an
//! outage does not add the deadline to every request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// How long Redis is skipped after it failed to answer.
const BACKOFF: Duration = Duration::from_secs(1);

/// GCRA over one key. ARGV: emission interval and burst tolerance, in µs.
/// Returns 0 when the request may pass, else the µs until it would.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
if tat - tolerance > now then return tat - tolerance - now end
local next_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', math.ceil((next_tat - now) / 1000) + 1)
return 0
";

/// What the shared limiter says about one request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Within the key's rate.
    Allowed,
    /// Over it: retry after this long.
    Limited(Duration),
    /// Redis did not answer: use the process's limiter.
    Unknown,
}

/// Per-key limits in Redis, shared by the replicas.
pub(crate) struct SharedKeyLimiter {
    connection: ConnectionManager,
    prefix: String,
    deadline: Duration,
    /// Milliseconds since the epoch before which Redis is not asked.
    skip_until_ms: AtomicU64,
}

impl std::fmt::Debug for SharedKeyLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedKeyLimiter")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl SharedKeyLimiter {
    /// A limiter on the Redis at `url` (connected lazily). `deadline`
    /// bounds each check.
    pub(crate) fn new(url: &str, deadline: Duration) -> Result<Self, String> {
        let client = redis::Client::open(url)
            .map_err(|e| format!("limits.redis_url is not a Redis URL: {e}"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(deadline))
            .set_response_timeout(Some(deadline))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(1000));
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("cannot set up the rate-limit Redis client: {e}"))?;
        Ok(SharedKeyLimiter {
            connection,
            prefix: "planshare:ratelimit:".to_owned(),
            deadline,
            skip_until_ms: AtomicU64::new(0),
        })
    }

    /// One request of `key` (of `tenant`) at `rate` per second with
    /// `burst`.
    pub(crate) async fn check(&self, tenant: &str, key: &str, rate: u32, burst: u32) -> Verdict {
        if rate == 0 || burst == 0 {
            return Verdict::Allowed;
        }
        if now_ms() < self.skip_until_ms.load(Ordering::Relaxed) {
            return Verdict::Unknown;
        }
        let interval = (1_000_000 / u64::from(rate)).max(1);
        let tolerance = interval * u64::from(burst - 1);
        let mut connection = self.connection.clone();
        let name = format!("{}{tenant}:{key}", self.prefix);
        let mut command = redis::cmd("EVAL");
        command
            .arg(GCRA)
            .arg(1)
            .arg(&name)
            .arg(interval)
            .arg(tolerance);
        let call = command.query_async::<i64>(&mut connection);
        match tokio::time::timeout(self.deadline, call).await {
            Ok(Ok(0)) => Verdict::Allowed,
            Ok(Ok(wait)) => Verdict::Limited(Duration::from_micros(wait.unsigned_abs())),
            Ok(Err(error)) => {
                self.back_off(&error.to_string());
                Verdict::Unknown
            }
            Err(_) => {
                self.back_off("no answer within the deadline");
                Verdict::Unknown
            }
        }
    }

    fn back_off(&self, why: &str) {
        let until = now_ms() + u64::try_from(BACKOFF.as_millis()).unwrap_or(1000);
        let before = self.skip_until_ms.swap(until, Ordering::Relaxed);
        if before < now_ms() {
            tracing::warn!(
                reason = why,
                "shared rate limiter unavailable: limiting per process for now"
            );
        }
    }
}
