//! Catalog configuration, deserialized from the server's settings.

use serde::{Deserialize, Serialize};

/// `[catalog]`: where the tenant catalog lives and how to reach it.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogConfig {
    /// `sqlite://<path>` (the file is created if missing) or
    /// `postgres://[user[:password]@]host[:port]/db` (also `postgresql://`).
    /// May carry a password: printed redacted. Empty by default: the server
    /// fills in `sqlite://<data_dir>/catalog.sqlite`.
    #[serde(serialize_with = "redact_url")]
    pub url: String,
    /// Connections in the pool.
    pub max_connections: u32,
    /// Milliseconds to wait for a pooled connection before answering
    /// [`Unavailable`](crate::CatalogError::Unavailable).
    pub acquire_timeout_ms: u64,
    /// Milliseconds to establish the first connection at open (Postgres).
    pub connect_timeout_ms: u64,
    /// Milliseconds any one statement may run (Postgres `statement_timeout`,
    /// set on every connection).
    pub statement_timeout_ms: u64,
    /// Milliseconds SQLite waits for a lock held by another connection.
    pub busy_timeout_ms: u64,
    /// Open even when the database would not make commits durable (SQLite
    /// `synchronous` below FULL, Postgres `fsync`/`synchronous_commit` off).
    /// For throw-away test databases only.
    pub allow_unsafe_durability: bool,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            url: String::new(),
            max_connections: 20,
            acquire_timeout_ms: 2000,
            connect_timeout_ms: 2000,
            statement_timeout_ms: 5000,
            busy_timeout_ms: 5000,
            allow_unsafe_durability: false,
        }
    }
}

impl CatalogConfig {
    /// A configuration for `url` with every other setting at its default.
    pub fn new(url: impl Into<String>) -> Self {
        CatalogConfig {
            url: url.into(),
            ..CatalogConfig::default()
        }
    }

    /// The URL with its password (if any) replaced by `<redacted>`.
    pub fn redacted_url(&self) -> String {
        redacted(&self.url)
    }
}

impl std::fmt::Debug for CatalogConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogConfig")
            .field("url", &self.redacted_url())
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout_ms", &self.acquire_timeout_ms)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .field("busy_timeout_ms", &self.busy_timeout_ms)
            .field("allow_unsafe_durability", &self.allow_unsafe_durability)
            .finish()
    }
}

fn redact_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redacted(url))
}

/// A URL with its password (userinfo after `:`) replaced by `<redacted>`, and
/// any `password=` query parameter too.
pub(crate) fn redacted(url: &str) -> String {
    let mut out = match (url.find("://"), url.rfind('@')) {
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
    };
    if let Some(pos) = out.find("password=") {
        let start = pos + "password=".len();
        let end = out[start..].find('&').map_or(out.len(), |e| start + e);
        out.replace_range(start..end, "<redacted>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_redacted() {
        assert_eq!(
            redacted("postgres://app:s3cret@db:5432/planshare"),
            "postgres://app:<redacted>@db:5432/planshare"
        );
        assert_eq!(
            redacted("postgres://db/planshare?user=app&password=s3cret&sslmode=require"),
            "postgres://db/planshare?user=app&password=<redacted>&sslmode=require"
        );
        assert_eq!(redacted("sqlite:///var/lib/x.db"), "sqlite:///var/lib/x.db");
        let config = CatalogConfig::new("postgres://app:s3cret@db/planshare");
        assert!(!format!("{config:?}").contains("s3cret"));
        let json = serde_json::to_string(&config).unwrap();
        assert!(!json.contains("s3cret"), "{json}");
    }

    #[test]
    fn defaults_are_those_of_the_default_settings_file() {
        let c: CatalogConfig = serde_json::from_str(r#"{"url": "sqlite://x.db"}"#).unwrap();
        assert_eq!(c.acquire_timeout_ms, 2000);
        assert_eq!(c.statement_timeout_ms, 5000);
        assert_eq!(c.max_connections, 20);
        assert!(serde_json::from_str::<CatalogConfig>(r#"{"urll": "x"}"#).is_err());
    }
}
