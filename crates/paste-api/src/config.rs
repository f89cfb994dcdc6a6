//! Settings this crate reads, deserialized by the server from its one
//! settings file (`[paste]` and `[http]`).

use serde::{Deserialize, Serialize};

/// `[paste]`: limits and defaults of the paste routes.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PasteConfig {
    /// Largest accepted `data`, in UTF-16 code units as upstream counts
    /// (equal to bytes for base64url). Upstream `PASTE_MAX_SIZE`.
    pub max_size: usize,
    /// Lifetime of a new paste in seconds. Upstream `PASTE_TTL_DAYS` × 86 400.
    pub ttl_secs: u64,
    /// Length of issued ids, 8–16 (reads accept 6–16).
    pub id_length: usize,
    /// Origins allowed by CORS, exact strings; `*` allows any.
    /// `http(s)://localhost[:port]` is always allowed, as upstream does.
    /// Upstream `PASTE_ALLOWED_ORIGINS` (comma-separated).
    #[serde(deserialize_with = "origins::deserialize")]
    pub allowed_origins: Vec<String>,
}

impl Default for PasteConfig {
    fn default() -> Self {
        PasteConfig {
            max_size: 5 * 1024 * 1024,
            ttl_secs: 7 * 86_400,
            id_length: 16,
            allowed_origins: vec![
                "https://share.plannotator.ai".into(),
                "http://localhost:3001".into(),
            ],
        }
    }
}

impl PasteConfig {
    /// Checks the values that cannot be expressed in types.
    pub fn validate(&self) -> Result<(), String> {
        // The default tenant takes this length, so it follows the tenants' rule.
        let ids = &api_types::rules::ID_LENGTH;
        if !i64::try_from(self.id_length).is_ok_and(|n| ids.contains(&n)) {
            return Err(format!(
                "paste.id_length must be {}-{}, got {}",
                ids.start(),
                ids.end(),
                self.id_length
            ));
        }
        if self.max_size == 0 {
            return Err("paste.max_size must be at least 1".into());
        }
        Ok(())
    }
}

/// `[reviews]`: the limits of live reviews. `max_links` and `max_versions`
/// are the default tenant's (every other tenant has its own, set through the
/// admin API); the stream caps hold for the process.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// The default tenant's live reviewer links per review; the next is
    /// refused (409).
    pub max_links: u32,
    /// The default tenant's versions per review; the next push is refused (409).
    pub max_versions: u32,
    /// Event streams (SSE and long polls) open at once on one review, per
    /// process; the next is refused (429).
    pub streams_per_review: u32,
    /// Event streams open at once through one link (the owner's or a
    /// reviewer's) of one review, per process: one link cannot take every
    /// place of its review and lock the others out.
    pub streams_per_link: u32,
    /// Event streams one client (an IP address; an IPv6 client by its /64)
    /// may hold open at once, per process.
    pub streams_per_client: u32,
    /// Event streams open at once in the process; the next is refused (429).
    /// Each holds a connection: at most three quarters of
    /// `server.max_connections`, so that ordinary requests keep room.
    pub max_streams: u32,
    /// Seconds between keep-alive comments on an idle event stream.
    pub keep_alive_secs: u64,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            max_links: 8,
            max_versions: 100,
            streams_per_review: 32,
            streams_per_link: 8,
            streams_per_client: 64,
            max_streams: 2048,
            keep_alive_secs: 15,
        }
    }
}

impl ReviewConfig {
    /// Checks the values that cannot be expressed in types.
    pub fn validate(&self) -> Result<(), String> {
        for (name, value, range) in [
            (
                "reviews.max_links",
                self.max_links,
                &api_types::rules::REVIEW_LINKS,
            ),
            (
                "reviews.max_versions",
                self.max_versions,
                &api_types::rules::REVIEW_VERSIONS,
            ),
        ] {
            if !range.contains(&i64::from(value)) {
                return Err(format!(
                    "{name} must be {}-{}, got {value}",
                    range.start(),
                    range.end()
                ));
            }
        }
        for (name, value) in [
            ("reviews.streams_per_review", self.streams_per_review),
            ("reviews.streams_per_link", self.streams_per_link),
            ("reviews.streams_per_client", self.streams_per_client),
            ("reviews.max_streams", self.max_streams),
        ] {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if !(1..=3600).contains(&self.keep_alive_secs) {
            return Err(format!(
                "reviews.keep_alive_secs must be 1-3600, got {}",
                self.keep_alive_secs
            ));
        }
        Ok(())
    }
}

/// `[http]`: per-request bounds of the API.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Seconds a client has to send a whole request body (then 408).
    pub body_timeout_secs: u64,
    /// Seconds one storage operation may take (then 503 + `Retry-After`).
    pub store_timeout_secs: u64,
    /// Requests handled at once; more are shed with 503 + `Retry-After`.
    pub max_in_flight: usize,
    /// MiB of request bodies buffered at once across all requests; an upload
    /// that would exceed it is shed with 503 + `Retry-After`.
    pub body_memory_mib: usize,
    /// Bytes per second a request body must average once
    /// `body_rate_grace_secs` have passed, else 408 (0: no minimum).
    pub body_min_rate_bytes: u64,
    /// Seconds a request body may take before its rate is checked.
    pub body_rate_grace_secs: u64,
    /// Slow request bodies (still arriving after a second) one client (IP)
    /// may be sending at once; more get 429 + `Retry-After`. A create's body
    /// being received does not hold a place of `max_in_flight`; it takes one
    /// once it has arrived.
    pub max_bodies_per_client: usize,
    /// MiB of paste answers held at once across all requests, until their
    /// clients have taken them; a read that would exceed it waits briefly,
    /// then gets 503 + `Retry-After`. One client (IP) may hold a quarter of
    /// it (429 past that; its first answer always passes).
    pub response_memory_mib: usize,
    /// Measurement only (`planshare-loadtest tenancy`): serve every paste
    /// request as the default tenant without looking at keys or hosts, to
    /// price tenant resolution. Never set it in production: keys are ignored.
    /// `PLANSHARE_TENANCY_BYPASS=1`.
    pub tenancy_bypass: bool,
    /// One `tracing` span per request, around everything logged while it is
    /// served, for traces exported over OTLP (set by the server when an
    /// OTLP endpoint is configured; not a setting). Without it each request
    /// is one flat access-log event carrying the same fields, which costs a
    /// fraction of a span (see `edge/access_log.rs`).
    #[serde(skip)]
    pub request_spans: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            body_timeout_secs: 30,
            store_timeout_secs: 10,
            max_in_flight: 512,
            body_memory_mib: 256,
            body_min_rate_bytes: 1024,
            body_rate_grace_secs: 5,
            max_bodies_per_client: 32,
            response_memory_mib: 128,
            tenancy_bypass: false,
            request_spans: false,
        }
    }
}

/// The request-head limits the API answers itself, with a JSON `431` that
/// carries CORS headers like every other answer (the server's
/// `server.max_header_bytes` and `server.max_headers`). The HTTP parser is
/// given twice these as its own hard limits, so a browser meets this answer
/// and not the parser's bare one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadLimits {
    /// Bytes of request line and header fields together.
    pub max_bytes: usize,
    /// Header fields (each repeated field counts).
    pub max_headers: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        HeadLimits {
            max_bytes: 32 * 1024,
            max_headers: 64,
        }
    }
}

/// Origins come as a list in TOML or as upstream's comma-separated string
/// (each entry trimmed, empty entries dropped).
pub mod origins {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Origins {
        List(Vec<String>),
        Csv(String),
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(match Origins::deserialize(d)? {
            Origins::List(list) => list.into_iter().map(|s| s.trim().to_owned()).collect(),
            Origins::Csv(s) => split(&s),
        })
    }

    /// Splits upstream's comma-separated origin list.
    pub fn split(s: &str) -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

pub use origins::split as split_origins;

/// `[admin]`: the admin API (`/admin/v1/…`).
#[derive(Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// The bearer token of the admin API; empty turns the admin API off.
    /// `PLANSHARE_ADMIN_TOKEN`. Printed redacted.
    #[serde(serialize_with = "redact_secret")]
    pub token: String,
    /// Where the admin API listens, e.g. `127.0.0.1:19434`: a separate,
    /// internal listener, and then the public one answers `/admin/…` with the
    /// generic 404. Empty: served on the main listener. `PLANSHARE_ADMIN_ADDR`.
    pub addr: String,
}

impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConfig")
            .field(
                "token",
                &if self.token.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("addr", &self.addr)
            .finish()
    }
}

fn redact_secret<S: serde::Serializer>(secret: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if secret.is_empty() { "" } else { "<redacted>" })
}

/// Where the portal is, as discovery tells it (`portal` of the answer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PortalBase {
    /// No portal is served here and none is named: `null`.
    #[default]
    Off,
    /// The portal is served on this same origin: `""`.
    SameOrigin,
    /// Links open on this absolute base URL.
    At(String),
}

impl PortalBase {
    /// The `portal` field of the answer.
    pub(crate) fn answer(&self) -> Option<String> {
        match self {
            PortalBase::Off => None,
            PortalBase::SameOrigin => Some(String::new()),
            PortalBase::At(url) => Some(url.trim_end_matches('/').to_owned()),
        }
    }
}
