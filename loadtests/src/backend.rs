//! The store backends `run` can measure planshare with (`fs`, `redis`, `s3`,
//! `memory`): their names, the environment that selects one in a
//! `planshare-server` child, and what a report may say about them. The S3
//! bucket a run prepares is [`crate::s3`]'s.

use anyhow::bail;
use std::fmt;
use std::str::FromStr;

/// Where the `redis` store writes unless told otherwise: database 15 of the
/// local Redis, away from the default database 0.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/15";

/// How to start a local S3 server, for the message when none is configured.
pub const MOTO_HINT: &str = "~/.cache/planshare/venv/bin/moto_server -H 127.0.0.1 -p 5055";

/// The access key id and secret of `dummy_credentials` (what moto accepts).
pub const DUMMY_CREDENTIAL: &str = "test";

/// A planshare store backend (`PLANSHARE_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Store {
    /// One file per paste in a temporary data directory (durable as the
    /// server's `store.fs.sync` says: group commit unless told otherwise).
    Fs,
    /// One key per paste in Redis.
    Redis,
    /// One object per paste in an S3-compatible server.
    S3,
    /// Pastes in the server's memory.
    Memory,
}

impl Store {
    /// Every store, in the order of the documentation.
    pub const ALL: [Self; 4] = [Self::Fs, Self::Redis, Self::S3, Self::Memory];

    /// The name `PLANSHARE_STORE` and `--stores` use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fs => "fs",
            Self::Redis => "redis",
            Self::S3 => "s3",
            Self::Memory => "memory",
        }
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Store {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|store| store.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown store `{s}`: expected fs, redis, s3 or memory"))
    }
}

/// Fails on an empty list or a store named twice.
pub fn check_stores(stores: &[Store]) -> anyhow::Result<()> {
    if stores.is_empty() {
        bail!("--stores needs at least one store (fs, redis, s3 or memory)");
    }
    for (i, store) in stores.iter().enumerate() {
        if stores[..i].contains(store) {
            bail!("--stores names `{store}` twice");
        }
    }
    Ok(())
}

/// One store with the settings its server is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// The fs store (its data directory is set by whoever starts the server).
    Fs,
    /// The memory store.
    Memory,
    /// The Redis store.
    Redis {
        /// `redis://host:port/db`.
        url: String,
        /// `PLANSHARE_TTL_SECS`, so that what a run leaves in Redis expires.
        ttl_secs: u64,
    },
    /// The S3 store.
    S3 {
        /// `http://host:port` of the S3-compatible server.
        endpoint: String,
        /// The bucket (must exist when the server starts).
        bucket: String,
        /// Object key prefix.
        prefix: String,
        /// Pass `AWS_ACCESS_KEY_ID=test` and `AWS_SECRET_ACCESS_KEY=test`
        /// (for moto, when the caller's environment has no credentials).
        dummy_credentials: bool,
    },
}

impl StoreConfig {
    /// Which store this is.
    pub fn store(&self) -> Store {
        match self {
            Self::Fs => Store::Fs,
            Self::Memory => Store::Memory,
            Self::Redis { .. } => Store::Redis,
            Self::S3 { .. } => Store::S3,
        }
    }

    /// The variables that select and configure this store in a
    /// `planshare-server` child (on top of host, port and data directory).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![("PLANSHARE_STORE", self.store().name().to_owned())];
        match self {
            Self::Fs | Self::Memory => {}
            Self::Redis { url, ttl_secs } => {
                env.push(("PLANSHARE_REDIS_URL", url.clone()));
                env.push(("PLANSHARE_TTL_SECS", ttl_secs.to_string()));
            }
            Self::S3 {
                endpoint,
                bucket,
                prefix,
                dummy_credentials,
            } => {
                env.push(("PLANSHARE_S3_ENDPOINT", endpoint.clone()));
                env.push(("PLANSHARE_S3_BUCKET", bucket.clone()));
                env.push(("PLANSHARE_S3_PREFIX", prefix.clone()));
                if *dummy_credentials {
                    env.push(("AWS_ACCESS_KEY_ID", DUMMY_CREDENTIAL.to_owned()));
                    env.push(("AWS_SECRET_ACCESS_KEY", DUMMY_CREDENTIAL.to_owned()));
                }
            }
        }
        env
    }

    /// What a finished run leaves in this store and how to free it now, for
    /// stores that keep the run's pastes after it (Redis: until they
    /// expire; a `--stores fs,redis` run stores ~20 GB there, and a second
    /// run or test before they expire can exhaust a small machine's memory).
    pub fn leftovers(&self) -> Option<String> {
        match self {
            Self::Redis { url, ttl_secs } => Some(format!(
                "the run's pastes stay in {} for up to {ttl_secs} s; if that database is the \
                 run's own, free them now with `redis-cli -u {} FLUSHDB`",
                redacted(url),
                redacted(url)
            )),
            Self::Fs | Self::Memory | Self::S3 { .. } => None,
        }
    }

    /// A one-line description for reports (passwords in URLs redacted).
    pub fn describe(&self) -> String {
        match self {
            Self::Fs => "temporary data directory (removed afterwards)".to_owned(),
            Self::Memory => "server memory".to_owned(),
            Self::Redis { url, ttl_secs } => {
                format!("{} (pastes expire after {ttl_secs} s)", redacted(url))
            }
            Self::S3 {
                endpoint,
                bucket,
                prefix,
                ..
            } => format!("{} bucket `{bucket}` prefix `{prefix}`", redacted(endpoint)),
        }
    }
}

/// `url` with the password of its user information, if any, replaced by
/// `<redacted>` (`redis://user:pw@host` → `redis://user:<redacted>@host`).
pub fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let user = authority[..at].split(':').next().unwrap_or_default();
    if !authority[..at].contains(':') {
        return url.to_owned();
    }
    format!(
        "{}{user}:<redacted>{}",
        &url[..scheme_end],
        &url[scheme_end + at..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_round_trip() {
        for store in Store::ALL {
            assert_eq!(store.name().parse::<Store>(), Ok(store));
        }
        assert_eq!(" Redis ".parse::<Store>(), Ok(Store::Redis));
        assert!("postgres".parse::<Store>().is_err());
    }

    #[test]
    fn store_lists_are_checked() {
        assert!(check_stores(&[Store::Fs, Store::Redis, Store::S3]).is_ok());
        assert!(check_stores(&[]).is_err());
        assert!(check_stores(&[Store::Fs, Store::Redis, Store::Fs]).is_err());
    }

    #[test]
    fn env_selects_the_store() {
        let names = |config: &StoreConfig| {
            config
                .env()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&StoreConfig::Fs), ["PLANSHARE_STORE=fs"]);
        assert_eq!(
            names(&StoreConfig::Redis {
                url: DEFAULT_REDIS_URL.to_owned(),
                ttl_secs: 60,
            }),
            [
                "PLANSHARE_STORE=redis",
                "PLANSHARE_REDIS_URL=redis://127.0.0.1:6379/15",
                "PLANSHARE_TTL_SECS=60",
            ]
        );
        let s3 = StoreConfig::S3 {
            endpoint: "http://127.0.0.1:5055".to_owned(),
            bucket: "b".to_owned(),
            prefix: "pastes/".to_owned(),
            dummy_credentials: true,
        };
        assert_eq!(s3.store(), Store::S3);
        assert_eq!(
            names(&s3),
            [
                "PLANSHARE_STORE=s3",
                "PLANSHARE_S3_ENDPOINT=http://127.0.0.1:5055",
                "PLANSHARE_S3_BUCKET=b",
                "PLANSHARE_S3_PREFIX=pastes/",
                "AWS_ACCESS_KEY_ID=test",
                "AWS_SECRET_ACCESS_KEY=test",
            ]
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redacted("redis://:pw@cache:6379/1"),
            "redis://:<redacted>@cache:6379/1"
        );
        assert_eq!(
            redacted("redis://user:pw@cache:6379"),
            "redis://user:<redacted>@cache:6379"
        );
        assert_eq!(redacted("redis://user@cache"), "redis://user@cache");
        assert_eq!(redacted(DEFAULT_REDIS_URL), DEFAULT_REDIS_URL);
        assert_eq!(redacted("not a url"), "not a url");
        let described = StoreConfig::Redis {
            url: "redis://:s3cret@h/2".to_owned(),
            ttl_secs: 5,
        }
        .describe();
        assert!(!described.contains("s3cret"), "{described}");
    }

    #[test]
    fn only_redis_runs_leave_pastes_behind() {
        let redis = StoreConfig::Redis {
            url: "redis://:s3cret@h:6379/15".to_owned(),
            ttl_secs: 1200,
        };
        let advice = redis.leftovers().unwrap();
        assert!(advice.contains("1200 s"), "{advice}");
        assert!(advice.contains("FLUSHDB"), "{advice}");
        assert!(advice.contains("h:6379/15"), "{advice}");
        assert!(!advice.contains("s3cret"), "{advice}");
        assert_eq!(StoreConfig::Fs.leftovers(), None);
        assert_eq!(StoreConfig::Memory.leftovers(), None);
    }
}
