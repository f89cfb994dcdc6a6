//! Store configuration, deserialized from the server's settings.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which backend stores the pastes. Read with its [`FromStr`](std::str::FromStr)
/// in the file as in `PLANSHARE_STORE`: any case, and a refusal lists the kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum StoreKind {
    /// Files on local disk (the self-hosted default).
    Fs,
    /// Redis (`SET NX PX`), for hosted replicas sharing one store.
    Redis,
    /// An S3-compatible object store, for hosted replicas.
    S3,
    /// Process memory; for tests and benchmarks, lost on restart.
    Memory,
}

impl StoreKind {
    /// The names accepted in configuration, for error messages.
    pub const NAMES: &'static [&'static str] = &["fs", "redis", "s3", "memory"];
}

impl TryFrom<String> for StoreKind {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        name.parse()
    }
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fs" => Ok(StoreKind::Fs),
            "redis" => Ok(StoreKind::Redis),
            "s3" => Ok(StoreKind::S3),
            "memory" => Ok(StoreKind::Memory),
            other => Err(format!(
                "unknown store kind {other:?}; valid kinds: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// `[store]`: the backend and each backend's settings.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// The backend to use.
    pub kind: StoreKind,
    /// `[store.fs]`: settings of the fs backend.
    pub fs: FsConfig,
    /// `[store.redis]`: settings of the Redis backend.
    pub redis: RedisConfig,
    /// `[store.s3]`: settings of the S3 backend.
    pub s3: S3Config,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            kind: StoreKind::Fs,
            fs: FsConfig::default(),
            redis: RedisConfig::default(),
            s3: S3Config::default(),
        }
    }
}

/// `[store.redis]`: the Redis backend.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[user:password@]host[:port][/db]` (or `rediss://` for TLS).
    /// Required when `kind = "redis"`. May carry a password: printed redacted.
    #[serde(serialize_with = "redact_url")]
    pub url: String,
    /// Prefix of every key, before `<namespace>:<id>`.
    pub key_prefix: String,
    /// Milliseconds to establish a connection.
    pub connect_timeout_ms: u64,
    /// Milliseconds to wait for any one command's answer.
    pub response_timeout_ms: u64,
    /// Longest pause between reconnection attempts, in milliseconds.
    pub max_reconnect_delay_ms: u64,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: String::new(),
            key_prefix: "planshare:paste:".into(),
            connect_timeout_ms: 500,
            response_timeout_ms: 250,
            max_reconnect_delay_ms: 2000,
        }
    }
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redacted(&self.url))
            .field("key_prefix", &self.key_prefix)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("response_timeout_ms", &self.response_timeout_ms)
            .field("max_reconnect_delay_ms", &self.max_reconnect_delay_ms)
            .finish()
    }
}

/// `[store.s3]`: an S3-compatible object store.
///
/// Credentials come from the standard AWS chain (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, profiles, instance roles).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct S3Config {
    /// Endpoint URL for S3-compatible servers (empty: AWS's own endpoints).
    pub endpoint: String,
    /// Region (S3-compatible servers usually accept any).
    pub region: String,
    /// Bucket. Required when `kind = "s3"`.
    pub bucket: String,
    /// Prefix of every object key, before `<namespace>/<id>`.
    pub prefix: String,
    /// Path-style addressing (`endpoint/bucket/key`), which most
    /// S3-compatible servers need.
    pub force_path_style: bool,
    /// Milliseconds one attempt of an operation may take.
    pub attempt_timeout_ms: u64,
    /// Milliseconds an operation may take over all its attempts.
    pub operation_timeout_ms: u64,
    /// Attempts per operation, the first included.
    pub max_attempts: u32,
}

impl Default for S3Config {
    fn default() -> Self {
        S3Config {
            endpoint: String::new(),
            region: "us-east-1".into(),
            bucket: String::new(),
            prefix: "pastes/".into(),
            force_path_style: true,
            attempt_timeout_ms: 2000,
            operation_timeout_ms: 5000,
            max_attempts: 3,
        }
    }
}

/// A URL with its password (if any) replaced by `<redacted>`.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &url[scheme_end + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    format!("{}{user}:<redacted>{}", &url[..scheme_end + 3], &url[at..])
                }
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

fn redact_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redacted(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_redacted() {
        assert_eq!(
            redacted("redis://:s3cret@cache:6379/0"),
            "redis://:<redacted>@cache:6379/0"
        );
        assert_eq!(
            redacted("redis://user:s3cret@cache:6379"),
            "redis://user:<redacted>@cache:6379"
        );
        assert_eq!(redacted("redis://cache:6379"), "redis://cache:6379");
        let config = RedisConfig {
            url: "redis://:s3cret@cache".into(),
            ..RedisConfig::default()
        };
        assert!(!format!("{config:?}").contains("s3cret"));
        assert!(!toml_like(&config).contains("s3cret"));
    }

    fn toml_like(config: &RedisConfig) -> String {
        serde_json::to_string(config).unwrap_or_default()
    }
}

/// `[store.fs]`: the filesystem backend.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FsConfig {
    /// Directory holding the pastes. Empty means "`pastes` under the server's
    /// data directory" (filled in by the server before opening).
    pub path: PathBuf,
    /// Seconds between background sweeps that delete expired pastes and
    /// leftover temporary files.
    pub sweep_interval_secs: u64,
    /// Seconds after start-up before the first sweep.
    pub first_sweep_delay_secs: u64,
    /// Temporary files older than this many seconds are leftovers of an
    /// interrupted write and are removed by the sweep.
    pub stale_tmp_secs: u64,
    /// How a new paste is made durable before its `201`.
    pub sync: FsSync,
}

/// `[store.fs] sync`: how the fs backend makes a new paste durable. Both
/// keep the same order — the paste's data on disk before its name appears,
/// the name on disk before the write is acknowledged. Read with its
/// [`FromStr`](std::str::FromStr), as [`StoreKind`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum FsSync {
    /// Group commit: concurrent writes share one `syncfs(2)` of the paste
    /// directory's filesystem per step, so a flush costs the same for one
    /// paste or a hundred. It flushes everything written to that filesystem,
    /// so it is cheapest on a volume of its own. Linux only; elsewhere, and
    /// for a write that lands on another filesystem than the paste
    /// directory, `file` is used.
    #[default]
    Batch,
    /// Each write `fsync(2)`s its own file, then its directory.
    File,
}

impl TryFrom<String> for FsSync {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        name.parse()
    }
}

impl std::str::FromStr for FsSync {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "batch" => Ok(FsSync::Batch),
            "file" => Ok(FsSync::File),
            other => Err(format!(
                "unknown fs sync mode {other:?}; valid modes: batch, file"
            )),
        }
    }
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            path: PathBuf::new(),
            sweep_interval_secs: 600,
            first_sweep_delay_secs: 10,
            stale_tmp_secs: 3600,
            sync: FsSync::default(),
        }
    }
}
