//! Redis backend: one key per paste, `SET key record NX PX <ttl>`.
//!
//! - Create-if-absent and expiry are Redis's own (`NX`, `PX`); expiry is
//!   also checked on every read against the record's `expires_at`, so a key
//!   Redis has not evicted yet is never served late.
//! - A paste whose expiry has already passed is not written at all (it could
//!   never be read), so an expired entry never blocks a later create.
//! - The connection is a lazily connecting `ConnectionManager`: start-up
//!   never waits for Redis, and after a failure it reconnects in the
//!   background with capped exponential backoff.
//! - Every operation is bounded by `connect_timeout_ms + response_timeout_ms`
//!   on top of the client's own timeouts: a dead or black-holed Redis (a
//!   stopped process accepts connections and never answers) makes requests
//!   fail fast with `Unavailable`, never hang.
//!
//! Durability is Redis's: a 201 is sent once Redis acknowledged the `SET`.
//! Run Redis with `appendonly yes` and `appendfsync always` for acknowledged
//! pastes to survive a Redis crash (README, "Storage").

use std::time::Duration;

pub mod inventory;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::backends::keyed;
use crate::config::redacted;
use crate::record;
use crate::{
    Namespace, OpenError, PasteKey, PasteStore, RedisConfig, StoreError, StoredPaste, now_ms,
};

/// Pastes in Redis.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    key_prefix: String,
    deadline: Duration,
    target: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("target", &self.target)
            .field("key_prefix", &self.key_prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Prepares the client for `config.url` without connecting: start-up
    /// succeeds with Redis down, and readiness reports it.
    pub async fn open(config: &RedisConfig) -> Result<Self, OpenError> {
        if config.url.trim().is_empty() {
            return Err(OpenError::Config(
                "store.redis.url is not set (PLANSHARE_REDIS_URL), e.g. redis://127.0.0.1:6379"
                    .into(),
            ));
        }
        let client = redis::Client::open(config.url.as_str()).map_err(|e| {
            OpenError::Config(format!(
                "invalid store.redis.url {}: {e}",
                redacted(&config.url)
            ))
        })?;
        let connect = Duration::from_millis(config.connect_timeout_ms.max(1));
        let response = Duration::from_millis(config.response_timeout_ms.max(1));
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(Some(response))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(config.max_reconnect_delay_ms.max(1)));
        let connection = ConnectionManager::new_lazy_with_config(client, manager_config)
            .map_err(|e| OpenError::Config(format!("cannot set up the Redis client: {e}")))?;
        Ok(RedisStore {
            connection,
            key_prefix: config.key_prefix.clone(),
            deadline: connect + response,
            target: redacted(&config.url),
        })
    }

    /// Runs `cmd` with the store's deadline; any failure is an outage.
    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        self.within_deadline(cmd.query_async::<T>(&mut connection))
            .await
    }

    /// A Redis call bounded by the store's deadline; any failure is an outage.
    async fn within_deadline<T>(
        &self,
        call: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.deadline, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(StoreError::unavailable("redis command failed", e)),
            Err(_) => Err(StoreError::Unavailable {
                reason: "redis did not answer in time",
                retry_after: Some(Duration::from_secs(1)),
                source: None,
            }),
        }
    }

    /// Why the value of `key` is missing: renamed aside by `doctor
    /// --repair` (damaged: the read answers so), else not found.
    async fn missing(&self, key: &PasteKey) -> StoreError {
        let name = key.redis_key(&self.key_prefix);
        let Some(quarantined) = keyed::quarantine_name(&self.key_prefix, ':', &name) else {
            return StoreError::NotFound;
        };
        let mut exists = redis::cmd("EXISTS");
        exists.arg(&quarantined);
        match self.query::<u8>(&exists).await {
            Ok(1) => StoreError::damaged(format!(
                "damaged, moved aside by planshare-server doctor: {quarantined}"
            )),
            Ok(_) => StoreError::NotFound,
            Err(e) => e,
        }
    }

    /// [`query`](Self::query) of a pipeline.
    async fn query_pipe<T: redis::FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        self.within_deadline(pipe.query_async::<T>(&mut connection))
            .await
    }
}

/// Room for `SET`'s options after the record: `NX`, `PX` and the
/// milliseconds to live (at most 20 digits).
const SET_OPTIONS_BYTES: usize = "NX".len() + "PX".len() + 20;

/// A paste's record as one Redis argument, its header and payload written
/// straight into the command: no joined copy of the payload first (a 100 KB
/// create held four copies of its payload at once; now three).
struct RecordArg<'a>(&'a StoredPaste);

impl redis::ToRedisArgs for RecordArg<'_> {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + redis::RedisWrite,
    {
        use std::io::Write as _;

        let (header, body) = record::encode_parts(self.0);
        out.reserve_space_for_args([header.len() + body.len()]);
        let mut arg = out.writer_for_next_arg();
        // The command's own buffer: writing to memory cannot fail.
        let _ = arg.write_all(&header).and_then(|()| arg.write_all(body));
    }
}

/// `SET <key> <record> NX PX <ttl_ms>`, in a buffer sized for all of it
/// before the first argument is written: sized by the record alone, the
/// `NX` after it made the buffer double (a 100 KB create held a 150 KB
/// command, and paid a copy of it to grow).
fn set_command(redis_key: String, paste: &StoredPaste, ttl_ms: u64) -> redis::Cmd {
    let mut cmd = redis::Cmd::with_capacity(6, set_command_len(redis_key.len(), paste));
    cmd.arg("SET")
        .arg(redis_key)
        .arg(RecordArg(paste))
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms);
    cmd
}

/// The bytes of [`set_command`]'s arguments, at most.
fn set_command_len(key_len: usize, paste: &StoredPaste) -> usize {
    "SET".len() + key_len + record::encoded_len(paste) + SET_OPTIONS_BYTES
}

#[async_trait::async_trait]
impl PasteStore for RedisStore {
    fn backend(&self) -> &'static str {
        "redis"
    }

    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        let ttl_ms = paste.expires_at.saturating_sub(now_ms());
        if ttl_ms == 0 {
            return Ok(()); // already expired: nothing could ever read it
        }
        let cmd = set_command(key.redis_key(&self.key_prefix), &paste, ttl_ms);
        match self.query::<Option<String>>(&cmd).await? {
            Some(_) => Ok(()),
            None => Err(StoreError::AlreadyExists),
        }
    }

    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(key.redis_key(&self.key_prefix));
        let Some(bytes) = self.query::<Option<Vec<u8>>>(&cmd).await? else {
            return Err(self.missing(key).await);
        };
        let read = record::decode_owned(bytes);
        if record::is_expired(&read, now_ms()) {
            return Err(StoreError::NotFound);
        }
        read
    }

    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(key.redis_key(&self.key_prefix));
        self.query::<i64>(&cmd).await.map(|_| ())
    }

    async fn health(&self) -> Result<(), StoreError> {
        self.query::<String>(&redis::cmd("PING")).await.map(|_| ())
    }

    /// `SCAN` for the namespace's keys a page at a time, `UNLINK` each
    /// page (the memory is freed in Redis's background thread). A key
    /// written while the scan runs may be missed; the catalog repeats the
    /// purge until one finds nothing.
    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let pattern = namespace.redis_pattern(&self.key_prefix);
        let mut cursor: u64 = 0;
        let mut removed = 0;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(PURGE_SCAN_COUNT);
            let (next, keys): (u64, Vec<String>) = self.query(&scan).await?;
            if !keys.is_empty() {
                let mut unlink = redis::cmd("UNLINK");
                unlink.arg(&keys);
                removed += self.query::<u64>(&unlink).await?;
            }
            if next == 0 {
                return Ok(removed);
            }
            cursor = next;
        }
    }
}

/// Keys looked at per `SCAN` call of a purge (each call well inside the
/// response timeout).
const PURGE_SCAN_COUNT: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Payload;

    /// The buffer `set_command` asks for holds every argument, so writing
    /// them never grows (and copies) it.
    #[test]
    fn the_set_command_fits_the_buffer_it_is_given() {
        for (payload, ttl_ms) in [
            (Payload::Base64Url(vec![7; 75_000].into()), u64::MAX),
            (Payload::Text("é".repeat(1000)), 1),
            (Payload::Text(String::new()), 3_600_000),
        ] {
            let paste = StoredPaste {
                payload,
                created_at: 1,
                expires_at: u64::MAX,
                delete_token: None,
                burn_after_read: true,
            };
            let key = "planshare:default:AbCdEfGh".to_owned();
            let cmd = set_command(key.clone(), &paste, ttl_ms);
            let written: usize = cmd
                .args_iter()
                .map(|arg| match arg {
                    redis::Arg::Simple(bytes) => bytes.len(),
                    _ => 0, // a cursor: SET has none
                })
                .sum();
            let room = set_command_len(key.len(), &paste);
            assert!(written <= room, "{written} bytes written, {room} reserved");
            assert!(room - written <= SET_OPTIONS_BYTES);
        }
    }
}
