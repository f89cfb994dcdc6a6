//! The catalog's records and the values that create or change them, with
//! their validation. The rules themselves (patterns, lengths, ranges) are
//! `api_types::rules`, which the OpenAPI document states too; the admin
//! API's bodies are `api_types`' own types, converted by the HTTP
//! layer, so nothing here is serialised.

use api_types::rules;

use crate::{ApiKey, CatalogError, KeyId, TenantId};

/// Whether a tenant may be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TenantStatus {
    /// Served normally.
    Active,
    /// Its keys fail to authenticate and its host no longer resolves to it
    /// for new requests (the HTTP layer decides what to answer).
    Disabled,
}

impl TenantStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TenantStatus::Active => "active",
            TenantStatus::Disabled => "disabled",
        }
    }

    pub(crate) fn from_db(s: &str) -> Result<Self, CatalogError> {
        match s {
            "active" => Ok(TenantStatus::Active),
            "disabled" => Ok(TenantStatus::Disabled),
            other => Err(CatalogError::internal(format!(
                "unknown tenant status {other:?} in the catalog"
            ))),
        }
    }
}

/// A tenant's settable limits and options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantSettings {
    /// Host names (custom domains or subdomains, lower case, optional
    /// `:port`) that resolve to this tenant. A name (the host without its
    /// port) belongs to one tenant only, whatever the port, and is listed
    /// once; `:80` and `:443` are stored as the bare name.
    pub hosts: Vec<String>,
    /// Exact origins (`https://app.example.com`) allowed by CORS.
    pub cors_origins: Vec<String>,
    /// Largest accepted paste `data`, in bytes.
    pub max_paste_size: i64,
    /// TTL of a paste created without one, in seconds.
    pub default_ttl_secs: i64,
    /// Longest TTL a client may ask for, in seconds.
    pub max_ttl_secs: i64,
    /// Storage quota, in bytes of live pastes.
    pub quota_bytes: i64,
    /// Quota of live pastes.
    pub quota_pastes: i64,
    /// Sustained request rate per API key, per second.
    pub rate_per_sec: i64,
    /// Burst size of the rate limiter.
    pub rate_burst: i64,
    /// Length of issued paste ids (8–16).
    pub id_length: i64,
    /// Whether requests without an API key may create pastes.
    pub allow_anonymous: bool,
    /// Live reviewer links per review.
    pub review_max_links: i64,
    /// Versions per review.
    pub review_max_versions: i64,
    /// Whether notification targets may be private, loopback or
    /// link-local addresses and plain `http` (a LAN, a test suite).
    pub notify_private_targets: bool,
}

impl Default for TenantSettings {
    fn default() -> Self {
        TenantSettings {
            hosts: Vec::new(),
            cors_origins: Vec::new(),
            max_paste_size: 524_288,
            default_ttl_secs: 7 * 86_400,
            max_ttl_secs: 30 * 86_400,
            quota_bytes: rules::UNLIMITED,
            quota_pastes: rules::UNLIMITED,
            rate_per_sec: 10,
            rate_burst: 60,
            id_length: 8,
            allow_anonymous: false,
            review_max_links: rules::REVIEW_MAX_LINKS,
            review_max_versions: rules::REVIEW_MAX_VERSIONS,
            notify_private_targets: false,
        }
    }
}

impl TenantSettings {
    /// Normalises host names and origins (lower case, trimmed, sorted,
    /// deduplicated) and checks every value's range.
    pub fn validate(&mut self) -> Result<(), CatalogError> {
        let invalid = |m: String| Err(CatalogError::Invalid(m));
        // Counted as sent, before duplicates are dropped (as documented).
        if self.hosts.len() > rules::MAX_HOSTS || self.cors_origins.len() > rules::MAX_CORS_ORIGINS
        {
            return invalid(format!(
                "at most {} hosts and {} CORS origins",
                rules::MAX_HOSTS,
                rules::MAX_CORS_ORIGINS
            ));
        }
        for h in &mut self.hosts {
            if !rules::is_host(h) {
                return invalid(format!(
                    "invalid host {h:?}: expected a host name such as team.example.com[:port]"
                ));
            }
            // Host names are case-insensitive; stored lower case, and
            // without the default ports, which clients leave out of `Host`.
            h.make_ascii_lowercase();
            if let Some(name) = h.strip_suffix(":80").or_else(|| h.strip_suffix(":443")) {
                *h = name.to_owned();
            }
        }
        self.hosts.sort();
        self.hosts.dedup();
        // A name belongs to one tenant whatever the port (requests fall back
        // from `name:port` to `name`), and is listed once: `name` for every
        // port, or `name:port`.
        let mut names = std::collections::HashMap::new();
        for h in &self.hosts {
            if let Some(other) = names.insert(host_name(h), h) {
                return invalid(format!(
                    "hosts {other:?} and {h:?} name the same host: list it once \
                     (without a port for every port)"
                ));
            }
        }
        for o in &self.cors_origins {
            if !rules::is_origin(o) {
                return invalid(format!(
                    "invalid CORS origin {o:?}: expected scheme://host[:port] in lower case with no path, or *"
                ));
            }
        }
        self.cors_origins.sort();
        self.cors_origins.dedup();
        if !rules::MAX_PASTE_SIZE.contains(&self.max_paste_size) {
            return invalid("max_paste_size must be positive".into());
        }
        // 0 is upstream's PASTE_TTL_DAYS=0: pastes expire at once.
        if self.default_ttl_secs < *rules::TTL_SECS.start()
            || self.max_ttl_secs < self.default_ttl_secs
        {
            return invalid("ttls must satisfy 0 <= default_ttl_secs <= max_ttl_secs".into());
        }
        if self.max_ttl_secs > *rules::TTL_SECS.end() {
            return invalid("max_ttl_secs is at most 100 years".into());
        }
        if !rules::QUOTA.contains(&self.quota_bytes) || !rules::QUOTA.contains(&self.quota_pastes) {
            return invalid("quotas must be between 0 and 2^62".into());
        }
        if !rules::RATE.contains(&self.rate_per_sec) || !rules::RATE.contains(&self.rate_burst) {
            return invalid(format!(
                "rate_per_sec and rate_burst must be between {} and {}",
                rules::RATE.start(),
                rules::RATE.end()
            ));
        }
        if !rules::ID_LENGTH.contains(&self.id_length) {
            return invalid(format!(
                "id_length must be between {} and {}",
                rules::ID_LENGTH.start(),
                rules::ID_LENGTH.end()
            ));
        }
        if !rules::REVIEW_LINKS.contains(&self.review_max_links)
            || !rules::REVIEW_VERSIONS.contains(&self.review_max_versions)
        {
            return invalid(format!(
                "review_max_links must be between {} and {}, review_max_versions between {} and {}",
                rules::REVIEW_LINKS.start(),
                rules::REVIEW_LINKS.end(),
                rules::REVIEW_VERSIONS.start(),
                rules::REVIEW_VERSIONS.end()
            ));
        }
        Ok(())
    }

    /// Applies the fields `update` sets.
    pub(crate) fn apply(&mut self, update: &TenantUpdate) {
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = &update.$f { self.$f = v.clone(); } )* };
        }
        set!(
            hosts,
            cors_origins,
            max_paste_size,
            default_ttl_secs,
            max_ttl_secs,
            quota_bytes,
            quota_pastes,
            rate_per_sec,
            rate_burst,
            id_length,
            allow_anonymous,
            review_max_links,
            review_max_versions,
            notify_private_targets
        );
    }
}

/// The name of a `name[:port]` host, which one tenant at most may hold.
pub(crate) fn host_name(host: &str) -> &str {
    host.split_once(':').map_or(host, |(name, _)| name)
}

/// Validates a paste-store namespace ([`rules::NAMESPACE_PATTERN`]).
pub fn validate_namespace(ns: &str) -> Result<(), CatalogError> {
    if rules::is_namespace(ns) {
        Ok(())
    } else {
        Err(CatalogError::Invalid(
            "invalid namespace: expected [a-z0-9][a-z0-9_-]{0,62}".into(),
        ))
    }
}

/// Validates a tenant name ([`rules::is_tenant_name`]): 1–200 characters,
/// not only white space, no control characters.
pub fn validate_name(name: &str) -> Result<(), CatalogError> {
    if rules::is_tenant_name(name) {
        Ok(())
    } else {
        Err(CatalogError::Invalid(format!(
            "name must be 1-{} characters with no control characters",
            rules::NAME_MAX_CHARS
        )))
    }
}

/// Validates an API key's name ([`rules::is_key_name`]): at most 200
/// characters, no control characters (empty is allowed).
pub fn validate_key_name(name: &str) -> Result<(), CatalogError> {
    if rules::is_key_name(name) {
        Ok(())
    } else {
        Err(CatalogError::Invalid(format!(
            "key name must be at most {} characters with no control characters",
            rules::NAME_MAX_CHARS
        )))
    }
}

/// What an administrator supplies to create a tenant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTenant {
    /// Human-readable name.
    pub name: String,
    /// The paste-store namespace; unique, never changes.
    pub namespace: String,
    /// Limits and options.
    pub settings: TenantSettings,
}

impl NewTenant {
    pub(crate) fn validate(&mut self) -> Result<(), CatalogError> {
        validate_name(&self.name)?;
        validate_namespace(&self.namespace)?;
        self.settings.validate()
    }
}

/// The fields an administrator may change; `None` leaves a field as it is.
/// The id, namespace, status and timestamps are not settable here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantUpdate {
    /// New name.
    pub name: Option<String>,
    /// Replaces the host list.
    pub hosts: Option<Vec<String>>,
    /// Replaces the CORS origin list.
    pub cors_origins: Option<Vec<String>>,
    /// See [`TenantSettings::max_paste_size`].
    pub max_paste_size: Option<i64>,
    /// See [`TenantSettings::default_ttl_secs`].
    pub default_ttl_secs: Option<i64>,
    /// See [`TenantSettings::max_ttl_secs`].
    pub max_ttl_secs: Option<i64>,
    /// See [`TenantSettings::quota_bytes`].
    pub quota_bytes: Option<i64>,
    /// See [`TenantSettings::quota_pastes`].
    pub quota_pastes: Option<i64>,
    /// See [`TenantSettings::rate_per_sec`].
    pub rate_per_sec: Option<i64>,
    /// See [`TenantSettings::rate_burst`].
    pub rate_burst: Option<i64>,
    /// See [`TenantSettings::id_length`].
    pub id_length: Option<i64>,
    /// See [`TenantSettings::allow_anonymous`].
    pub allow_anonymous: Option<bool>,
    /// See [`TenantSettings::review_max_links`].
    pub review_max_links: Option<i64>,
    /// See [`TenantSettings::review_max_versions`].
    pub review_max_versions: Option<i64>,
    /// See [`TenantSettings::notify_private_targets`].
    pub notify_private_targets: Option<bool>,
}

impl TenantUpdate {
    pub(crate) fn validate_name(&self) -> Result<(), CatalogError> {
        self.name.as_deref().map_or(Ok(()), validate_name)
    }
}

/// A tenant as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    /// Its id.
    pub id: TenantId,
    /// Human-readable name.
    pub name: String,
    /// The paste-store namespace of its pastes.
    pub namespace: String,
    /// Limits and options.
    pub settings: TenantSettings,
    /// Active or disabled.
    pub status: TenantStatus,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Last change, Unix ms.
    pub updated_at: i64,
}

impl Tenant {
    /// Whether the tenant may be served.
    pub fn is_active(&self) -> bool {
        self.status == TenantStatus::Active
    }
}

/// An API key as listed: never the secret, never the digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// Its id.
    pub id: KeyId,
    /// The tenant it authenticates as.
    pub tenant_id: TenantId,
    /// Non-secret prefix, e.g. `pst_live_AbCd…`.
    pub display: String,
    /// Human-readable name.
    pub name: String,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Revocation time, Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Last successful authentication, Unix ms (updated at most once a minute).
    pub last_used_at: Option<i64>,
}

/// A newly created key: the only value that ever carries the plaintext.
#[derive(Debug)]
pub struct CreatedKey {
    /// The key's id.
    pub id: KeyId,
    /// The full key; show it once, never store or log it.
    pub key: ApiKey,
    /// The key as it will be listed.
    pub info: KeyInfo,
}

/// A tenant's accounted usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of pastes reserved and not released.
    pub bytes: i64,
    /// Pastes reserved and not released.
    pub pastes: i64,
    /// Requests counted with [`Catalog::add_requests`](crate::Catalog::add_requests).
    pub requests: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_validation_normalises_and_rejects() {
        let mut s = TenantSettings {
            hosts: vec![
                "Team.Example.com".into(),
                "team.example.com".into(),
                "x:8080".into(),
            ],
            cors_origins: vec!["https://app.example.com".into()],
            ..TenantSettings::default()
        };
        s.validate().unwrap();
        assert_eq!(s.hosts, ["team.example.com", "x:8080"]);
        // The default ports are left out, as clients leave them out of Host.
        let mut s = TenantSettings {
            hosts: vec![
                "A.example:80".into(),
                "a.example".into(),
                "b.example:443".into(),
                "c.example:8443".into(),
            ],
            ..TenantSettings::default()
        };
        s.validate().unwrap();
        assert_eq!(s.hosts, ["a.example", "b.example", "c.example:8443"]);
        // One name, two entries: refused, however far apart they sort.
        for hosts in [
            ["x.com", "x.com:8080", "x.com.z"],
            ["x.com:8081", "x.com-y", "x.com:8080"],
        ] {
            let mut s = TenantSettings {
                hosts: hosts.map(String::from).to_vec(),
                ..TenantSettings::default()
            };
            assert!(
                matches!(s.validate(), Err(CatalogError::Invalid(m)) if m.contains("same host")),
                "{hosts:?}"
            );
        }
        let mut s = TenantSettings {
            hosts: vec![
                format!("{}.b:65535", vec!["a".repeat(63); 3].join(".")),
                "A-1.b".into(),
            ],
            ..TenantSettings::default()
        };
        s.validate().unwrap();
        assert_eq!(s.hosts[0], "a-1.b");
        // The list limit counts what was sent, duplicates included.
        let mut s = TenantSettings {
            hosts: vec!["a.com".into(); 101],
            ..TenantSettings::default()
        };
        assert!(s.validate().is_err());
        for bad in [
            "",
            "a b",
            "-a.com",
            "a..b",
            "http://a.com",
            "a.com:0",
            "a.com/x",
            " a.com",
            "a.com ",
            "a.com:080",
            "a.com:+80",
            "a.com:65536",
            "a.com:",
            "a-.com",
            "é.com",
            &format!("{}.com", "a".repeat(64)),
            &format!("{}.a", vec!["a".repeat(63); 4].join(".")), // 254 characters
        ] {
            let mut s = TenantSettings {
                hosts: vec![bad.into()],
                ..TenantSettings::default()
            };
            assert!(s.validate().is_err(), "host {bad:?} accepted");
        }
        // `*` allows any origin, as upstream's allow-list does.
        let mut s = TenantSettings {
            cors_origins: vec!["*".into()],
            default_ttl_secs: 0, // upstream's PASTE_TTL_DAYS=0: expire at once
            ..TenantSettings::default()
        };
        assert!(s.validate().is_ok());
        for bad in [
            "null",
            "https://a.com/",
            "https://a.com/x",
            "ftp://a.com",
            "https://App.example.com",
            " https://a.com",
            "https://a.com:0443",
        ] {
            let mut s = TenantSettings {
                cors_origins: vec![bad.into()],
                ..TenantSettings::default()
            };
            assert!(s.validate().is_err(), "origin {bad:?} accepted");
        }
        let mut s = TenantSettings {
            default_ttl_secs: 10,
            max_ttl_secs: 5,
            ..TenantSettings::default()
        };
        assert!(s.validate().is_err());
        assert!(validate_namespace("team-a_1").is_ok());
        for bad in ["", "-a", "A", "a/b", &"a".repeat(64)] {
            assert!(validate_namespace(bad).is_err(), "{bad:?}");
        }
    }
}
