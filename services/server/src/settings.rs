//! The one settings struct of `planshare-server`, and where its values come
//! from, lowest precedence first:
//!
//! 1. embedded defaults (`planshare.default.toml` documents them);
//! 2. the TOML file given with `--config` (or `PLANSHARE_CONFIG`);
//! 3. `PLANSHARE_*` environment variables, and `OTEL_EXPORTER_OTLP_ENDPOINT`
//!    below `PLANSHARE_OTLP_ENDPOINT` ([`ENV_VARS`]);
//! 4. the upstream paste service's variables (`PASTE_PORT`, `PASTE_DATA_DIR`,
//!    `PASTE_TTL_DAYS`, `PASTE_MAX_SIZE`, `PASTE_ALLOWED_ORIGINS`), so an
//!    existing deployment's environment keeps its meaning.
//!
//! A variable is a row of a table naming the setting it sets ([`EnvVar`]);
//! the file's TOML and the variables are merged as TOML, then read into
//! [`Settings`] once, so a setting is parsed by the same serde code whichever
//! layer sets it. Only upstream's variables that mean something else than a
//! setting's value, and the `limits` switch, are translated by hand.
//!
//! Each crate owns the section it reads (`[paste]`, `[http]`, `[admin]` and
//! `[limits]` in `paste-api`, `[store]` in `paste-store`, `[catalog]` in
//! `tenancy`, `[portal]` in `portal`); none of them reads the environment or
//! a configuration file itself. The exceptions are standard variables read
//! where they are used: `RUST_LOG` (the log filter, `telemetry.rs`),
//! `OTEL_EXPORTER_OTLP_HEADERS` (the trace exporter) and the AWS credential
//! chain (`AWS_*`, in the S3 backend).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use paste_api::{AdminConfig, HttpConfig, LimitsConfig, PasteConfig, ReviewConfig, split_origins};
use paste_store::{StoreConfig, StoreKind, redacted};
use serde::{Deserialize, Serialize};
use tenancy::CatalogConfig;

/// The embedded defaults, a commented reference for operators.
pub const DEFAULT_TOML: &str = include_str!("../planshare.default.toml");

/// Everything `planshare-server` can be configured with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// `[server]`: listener, data directory, connection bounds.
    pub server: ServerConfig,
    /// `[paste]`: size limit, TTL, id length, CORS origins.
    pub paste: PasteConfig,
    /// `[http]`: per-request bounds.
    pub http: HttpConfig,
    /// `[reviews]`: the limits of live reviews.
    pub reviews: ReviewConfig,
    /// `[store]`: the storage backend.
    pub store: StoreConfig,
    /// `[catalog]`: the tenant catalog's database.
    pub catalog: CatalogConfig,
    /// `[admin]`: the admin API.
    pub admin: AdminConfig,
    /// `[limits]`: rate limits.
    pub limits: LimitsConfig,
    /// `[portal]`: the share portal served on the same origin.
    pub portal: portal::PortalConfig,
    /// `[log]`: log format and filter.
    pub log: LogConfig,
    /// `[telemetry]`: Prometheus metrics and OpenTelemetry traces.
    pub telemetry: TelemetryConfig,
    /// `[notify]`: review notifications.
    pub notify: NotifySettings,
}

/// `[notify]`
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifySettings {
    /// Let the default tenant's notifications reach private, loopback and
    /// link-local addresses and plain `http` (a LAN, a test suite). Other
    /// tenants have their own `notify_private_targets` setting.
    pub private_targets: bool,
    /// The portal origin notifications link to (`<base>/r/<id>`). Empty:
    /// `portal.share_base_url` when set, else the origin each subscriber
    /// reached the server at.
    pub link_base: String,
    /// This replica's name in the outbox's claims, stable across its
    /// restarts (two replicas must not share one). Empty: the host name.
    pub replica: String,
}

/// `[telemetry]`
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Serve Prometheus metrics on `/metrics`: on the admin listener when
    /// `admin.addr` is set, else on the main listener behind the admin token
    /// (and not at all while the admin token is empty).
    pub metrics: bool,
    /// Base URL of an OTLP/HTTP collector (e.g. `http://127.0.0.1:4318`);
    /// traces are posted as JSON to `<url>/v1/traces`. Empty: no exporter.
    /// May carry a password (`http://user:password@host`): printed redacted.
    #[serde(serialize_with = "redact_url")]
    pub otlp_endpoint: String,
}

impl std::fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryConfig")
            .field("metrics", &self.metrics)
            .field("otlp_endpoint", &redacted(&self.otlp_endpoint))
            .finish()
    }
}

fn redact_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redacted(url))
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            metrics: true,
            otlp_endpoint: String::new(),
        }
    }
}

/// `[server]`
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on. Like upstream, all interfaces by default.
    pub host: String,
    /// Port to listen on.
    pub port: u16,
    /// Directory for planshare's data. Empty: the user's data directory
    /// (`$XDG_DATA_HOME/planshare`, `~/.local/share/planshare`, …).
    pub data_dir: PathBuf,
    /// Seconds a new connection may stay silent before it is closed.
    pub first_byte_timeout_secs: u64,
    /// Seconds a client has to send a request's headers.
    pub header_read_timeout_secs: u64,
    /// Largest request head (request line + headers) in bytes; larger gets 431.
    pub max_header_bytes: usize,
    /// Most header fields in one request; more gets 431.
    pub max_headers: usize,
    /// Connections served at once; further ones wait in the kernel's backlog.
    pub max_connections: usize,
    /// Seconds a connection may go without its client taking any bytes of
    /// an answer being written; then it is closed (a reader that never
    /// reads holds no memory for longer).
    pub write_timeout_secs: u64,
    /// Seconds to keep accepting after a shutdown signal while `/readyz`
    /// already says 503 (give load balancers time to notice; 5 under Kubernetes).
    pub shutdown_delay_secs: u64,
    /// Seconds in-flight requests get to finish after the listener closes.
    pub shutdown_grace_secs: u64,
    /// PEM file of the certificate chain to serve HTTPS with (the server's
    /// certificate first, then its intermediates). Empty, with `tls_key`
    /// empty too: plain HTTP. Re-read when it changes (see `tls.rs`).
    pub tls_cert: PathBuf,
    /// PEM file of the private key of `tls_cert` (PKCS#8, RSA or SEC1 EC).
    /// Only its path is ever printed or logged.
    pub tls_key: PathBuf,
}

impl ServerConfig {
    /// Whether the main listener serves HTTPS (`tls_cert` and `tls_key` set).
    pub fn tls_enabled(&self) -> bool {
        !self.tls_cert.as_os_str().is_empty() && !self.tls_key.as_os_str().is_empty()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: "0.0.0.0".into(),
            port: 19433,
            data_dir: PathBuf::new(),
            first_byte_timeout_secs: 10,
            header_read_timeout_secs: 10,
            max_header_bytes: 32 * 1024,
            max_headers: 64,
            max_connections: 4096,
            write_timeout_secs: 30,
            shutdown_delay_secs: 0,
            shutdown_grace_secs: 20,
            tls_cert: PathBuf::new(),
            tls_key: PathBuf::new(),
        }
    }
}

/// `[log]`
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `pretty` (human-readable) or `json` (one object per line).
    pub format: LogFormat,
    /// A `tracing` filter such as `info` or `planshare=debug,info`.
    /// `RUST_LOG`, when set, takes its place.
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Pretty,
            filter: "info".into(),
        }
    }
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// Why the settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The configuration file could not be read.
    #[error("cannot read the configuration file {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration file is not valid TOML for these settings.
    #[error("invalid configuration file {path}: {message}")]
    ParseFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the location.
        message: String,
    },
    /// An environment variable has a value that does not parse.
    #[error("invalid value {value:?} in {var}: {expected}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// The merged settings are inconsistent.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// An environment variable and the setting it sets. Its text becomes that
/// setting's TOML value and is then read by the same serde code as the
/// file, so a variable accepts what the file accepts: the type of the
/// setting in [`DEFAULT_TOML`] says whether the text is a string (trimmed),
/// an integer, an on/off switch or a comma-separated list.
pub struct EnvVar {
    /// The variable's name.
    pub name: &'static str,
    /// The path of the setting it sets, as in the file (`server.port`).
    pub setting: &'static str,
    /// What a valid value looks like, said in place of the type's own words
    /// where those are poor (`u16` for a port).
    expected: Option<&'static str>,
    read: Read,
}

/// How a variable's text becomes a TOML value.
#[derive(Clone, Copy)]
enum Read {
    /// By the setting's type in the defaults; strings trimmed.
    Typed,
    /// As [`Read::Typed`], but a string is kept as given: whitespace can be
    /// part of a path, a key prefix or a log filter.
    Verbatim,
    /// A value in upstream's terms (or not one setting), translated by hand;
    /// the function also gets the setting's value so far.
    Translated(fn(&str, Option<&toml::Value>) -> Result<toml::Value, String>),
}

impl EnvVar {
    const fn new(name: &'static str, setting: &'static str) -> Self {
        EnvVar {
            name,
            setting,
            expected: None,
            read: Read::Typed,
        }
    }

    const fn expecting(self, expected: &'static str) -> Self {
        EnvVar {
            expected: Some(expected),
            ..self
        }
    }

    const fn verbatim(self) -> Self {
        EnvVar {
            read: Read::Verbatim,
            ..self
        }
    }

    const fn translated(
        self,
        translate: fn(&str, Option<&toml::Value>) -> Result<toml::Value, String>,
    ) -> Self {
        EnvVar {
            read: Read::Translated(translate),
            ..self
        }
    }
}

const A_PORT: &str = "a port number 0-65535";
const A_SIZE: &str = "a size in bytes";

/// `PLANSHARE_*` variables, applied in this order (a later one wins).
pub const ENV_VARS: &[EnvVar] = &[
    EnvVar::new("PLANSHARE_HOST", "server.host"),
    EnvVar::new("PLANSHARE_PORT", "server.port").expecting(A_PORT),
    EnvVar::new("PLANSHARE_DATA_DIR", "server.data_dir").verbatim(),
    EnvVar::new("PLANSHARE_TLS_CERT", "server.tls_cert").verbatim(),
    EnvVar::new("PLANSHARE_TLS_KEY", "server.tls_key").verbatim(),
    EnvVar::new("PLANSHARE_STORE", "store.kind"),
    EnvVar::new("PLANSHARE_FS_SYNC", "store.fs.sync"),
    EnvVar::new("PLANSHARE_REDIS_URL", "store.redis.url"),
    EnvVar::new("PLANSHARE_S3_ENDPOINT", "store.s3.endpoint"),
    EnvVar::new("PLANSHARE_S3_BUCKET", "store.s3.bucket"),
    EnvVar::new("PLANSHARE_S3_REGION", "store.s3.region"),
    EnvVar::new("PLANSHARE_S3_PREFIX", "store.s3.prefix").verbatim(),
    EnvVar::new("PLANSHARE_DATABASE_URL", "catalog.url"),
    EnvVar::new("PLANSHARE_ADMIN_TOKEN", "admin.token"),
    EnvVar::new("PLANSHARE_ADMIN_ADDR", "admin.addr"),
    EnvVar::new("PLANSHARE_PORTAL", "portal.enabled"),
    EnvVar::new("PLANSHARE_PORTAL_PASTE_API_URL", "portal.paste_api_url"),
    EnvVar::new(
        "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
        "portal.allowed_paste_apis",
    ),
    EnvVar::new("PLANSHARE_SHARE_BASE_URL", "portal.share_base_url"),
    EnvVar::new(
        "PLANSHARE_PORTAL_CALLBACK_ORIGINS",
        "portal.callback_origins",
    ),
    EnvVar::new("PLANSHARE_TRUSTED_PROXIES", "limits.trusted_proxies"),
    EnvVar::new("PLANSHARE_LIMITS_REDIS_URL", "limits.redis_url"),
    EnvVar::new("PLANSHARE_TENANCY_BYPASS", "http.tenancy_bypass"),
    // After the two `limits.*` above, whose values it keeps.
    EnvVar::new("PLANSHARE_RATE_LIMITS", "limits").translated(rate_limits),
    EnvVar::new("PLANSHARE_MAX_SIZE", "paste.max_size").expecting(A_SIZE),
    EnvVar::new("PLANSHARE_TTL_SECS", "paste.ttl_secs").expecting("a number of seconds"),
    EnvVar::new("PLANSHARE_ID_LENGTH", "paste.id_length").expecting("a length from 8 to 16"),
    EnvVar::new("PLANSHARE_ALLOWED_ORIGINS", "paste.allowed_origins"),
    EnvVar::new("PLANSHARE_LOG", "log.filter").verbatim(),
    EnvVar::new("PLANSHARE_LOG_FORMAT", "log.format"),
    EnvVar::new("PLANSHARE_METRICS", "telemetry.metrics"),
    EnvVar::new("PLANSHARE_NOTIFY_PRIVATE_TARGETS", "notify.private_targets"),
    EnvVar::new("PLANSHARE_NOTIFY_LINK_BASE", "notify.link_base"),
    EnvVar::new("PLANSHARE_NOTIFY_REPLICA", "notify.replica"),
    // The standard OpenTelemetry variable first, so that ours wins.
    EnvVar::new("OTEL_EXPORTER_OTLP_ENDPOINT", "telemetry.otlp_endpoint"),
    EnvVar::new("PLANSHARE_OTLP_ENDPOINT", "telemetry.otlp_endpoint"),
];

/// The upstream paste service's variables, applied after [`ENV_VARS`].
pub const UPSTREAM_ENV_VARS: &[EnvVar] = &[
    EnvVar::new("PASTE_PORT", "server.port").expecting(A_PORT),
    // Without a data directory of planshare's own, also the data directory
    // (`resolve_paths`).
    EnvVar::new("PASTE_DATA_DIR", "store.fs.path").verbatim(),
    EnvVar::new("PASTE_TTL_DAYS", "paste.ttl_secs").translated(days_as_secs),
    EnvVar::new("PASTE_MAX_SIZE", "paste.max_size").expecting(A_SIZE),
    EnvVar::new("PASTE_ALLOWED_ORIGINS", "paste.allowed_origins"),
];

/// `PASTE_TTL_DAYS`: upstream counts the TTL in days.
fn days_as_secs(text: &str, _: Option<&toml::Value>) -> Result<toml::Value, String> {
    let days: u64 = text
        .trim()
        .parse()
        .map_err(|_| "a whole number of days".to_owned())?;
    let secs = days
        .checked_mul(86_400)
        .and_then(|secs| i64::try_from(secs).ok())
        .ok_or("a smaller number of days")?;
    Ok(toml::Value::Integer(secs))
}

/// `PLANSHARE_RATE_LIMITS`: the whole `[limits]` table, `on` at the
/// defaults, `off` with every limiter off. The trusted proxies and the
/// shared limiter's Redis are not limiters: their values so far stay.
fn rate_limits(text: &str, limits: Option<&toml::Value>) -> Result<toml::Value, String> {
    let base = if switch(text)? {
        LimitsConfig::default()
    } else {
        LimitsConfig::off()
    };
    // Serialized without loss: the one secret, the Redis URL, is empty in
    // both, and the value set so far is put back below.
    let mut table = toml::Table::try_from(base).map_err(|e| e.to_string())?;
    for kept in ["trusted_proxies", "redis_url"] {
        if let Some(value) = limits.and_then(|limits| limits.get(kept)) {
            table.insert(kept.to_owned(), value.clone());
        }
    }
    Ok(toml::Value::Table(table))
}

/// The one parser of every on/off variable: `on`/`off`, `true`/`false`,
/// `yes`/`no` or `1`/`0`, any case; anything else (a typo such as `ture`)
/// stops start-up with the variable named (see [`SettingsError::Env`]).
fn switch(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err("expected on or off (also true/false, yes/no, 1/0)".into()),
    }
}

impl EnvVar {
    /// Sets this variable's setting to `text` in `tree` (the file's table,
    /// with the variables before this one set). `defaults` is
    /// [`DEFAULT_TOML`], whose values give each setting's TOML type.
    fn apply(
        &self,
        tree: &mut toml::Table,
        defaults: &toml::Table,
        text: &str,
    ) -> Result<(), SettingsError> {
        let refused = |expected: String| SettingsError::Env {
            var: self.name,
            value: text.to_owned(),
            expected,
        };
        let in_own_words = |message: String| refused(self.expected.map_or(message, str::to_owned));
        let value = match self.read {
            Read::Translated(translate) => {
                translate(text, lookup(tree, self.setting)).map_err(refused)?
            }
            Read::Typed | Read::Verbatim => {
                let default = lookup(defaults, self.setting).ok_or_else(|| {
                    SettingsError::Invalid(format!(
                        "{} names {}, which is not a setting",
                        self.name, self.setting
                    ))
                })?;
                typed(default, text, matches!(self.read, Read::Verbatim)).map_err(in_own_words)?
            }
        };
        // The setting's own type judges the value here, alone, so that a
        // refusal names this variable rather than a key of the merged tree.
        let mut alone = toml::Table::new();
        insert(&mut alone, self.setting, value.clone());
        alone
            .try_into::<Settings>()
            .map_err(|e| in_own_words(e.message().to_owned()))?;
        insert(tree, self.setting, value);
        Ok(())
    }
}

/// `text` as a TOML value of the type of `default`.
fn typed(default: &toml::Value, text: &str, verbatim: bool) -> Result<toml::Value, String> {
    use toml::Value;
    Ok(match default {
        Value::String(_) if verbatim => Value::String(text.to_owned()),
        Value::String(_) => Value::String(text.trim().to_owned()),
        Value::Integer(_) => Value::Integer(
            text.trim()
                .parse()
                .map_err(|_| "a whole number".to_owned())?,
        ),
        Value::Boolean(_) => Value::Boolean(switch(text)?),
        Value::Array(_) => {
            Value::Array(split_origins(text).into_iter().map(Value::String).collect())
        }
        other => {
            return Err(format!(
                "a {} cannot be set from the environment",
                other.type_str()
            ));
        }
    })
}

/// The value at a dotted path.
fn lookup<'a>(tree: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut keys = path.split('.');
    let first = tree.get(keys.next()?)?;
    keys.try_fold(first, |value, key| value.get(key))
}

/// Puts `value` at a dotted path, making the tables on the way.
fn insert(tree: &mut toml::Table, path: &str, value: toml::Value) {
    let Some((section, rest)) = path.split_once('.') else {
        tree.insert(path.to_owned(), value);
        return;
    };
    let entry = tree
        .entry(section.to_owned())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !entry.is_table() {
        *entry = toml::Value::Table(toml::Table::new());
    }
    if let toml::Value::Table(table) = entry {
        insert(table, rest, value);
    }
}

impl Settings {
    /// Loads the settings from the defaults, `file` and the environment as
    /// read by `env`, then fills in derived paths and validates.
    pub fn load(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let mut tree = match file {
            None => toml::Table::new(),
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| SettingsError::ReadFile {
                        path: path.to_owned(),
                        source,
                    })?;
                let unparsable = |message| SettingsError::ParseFile {
                    path: path.to_owned(),
                    message,
                };
                // Read as settings first, for errors that point into the file.
                Settings::from_toml(&text).map_err(unparsable)?;
                toml::from_str(&text).map_err(|e| unparsable(e.to_string()))?
            }
        };
        let defaults: toml::Table = toml::from_str(DEFAULT_TOML)
            .map_err(|e| SettingsError::Invalid(format!("the embedded defaults: {e}")))?;
        for var in ENV_VARS.iter().chain(UPSTREAM_ENV_VARS) {
            if let Some(text) = env(var.name) {
                var.apply(&mut tree, &defaults, &text)?;
            }
        }
        let mut settings: Settings = tree
            .try_into()
            .map_err(|e: toml::de::Error| SettingsError::Invalid(e.to_string()))?;
        settings.resolve_paths()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Parses a TOML document over the defaults.
    pub fn from_toml(text: &str) -> Result<Settings, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// The settings as TOML, for `check-config`. Secrets (the admin token,
    /// passwords in URLs) serialize redacted; a secret added later must too.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render settings: {e}\n"))
    }

    fn resolve_paths(&mut self) -> Result<(), SettingsError> {
        // Upstream's `PASTE_DATA_DIR` (or `[store.fs] path`) without a data
        // directory of our own means "my data lives here": the catalog goes
        // there too, not into a user directory nobody created.
        if self.server.data_dir.as_os_str().is_empty() && !self.store.fs.path.as_os_str().is_empty()
        {
            self.server.data_dir = self.store.fs.path.clone();
        }
        if self.server.data_dir.as_os_str().is_empty() {
            self.server.data_dir =
                dirs::data_dir()
                    .map(|d| d.join("planshare"))
                    .ok_or_else(|| {
                        SettingsError::Invalid(
                            "no user data directory is known (HOME unset?): set PLANSHARE_DATA_DIR"
                                .into(),
                        )
                    })?;
        }
        if self.store.fs.path.as_os_str().is_empty() {
            self.store.fs.path = self.server.data_dir.join("pastes");
        }
        if self.catalog.url.trim().is_empty() {
            let file = self.server.data_dir.join("catalog.sqlite");
            self.catalog.url = format!("sqlite://{}", file.display());
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), SettingsError> {
        self.paste.validate().map_err(SettingsError::Invalid)?;
        self.reviews.validate().map_err(SettingsError::Invalid)?;
        // Every stream holds a connection: streams filling every place would
        // leave no room for probes, reads or writes.
        let stream_room = self.server.max_connections / 4 * 3;
        if usize::try_from(self.reviews.max_streams).unwrap_or(usize::MAX) > stream_room {
            return Err(SettingsError::Invalid(format!(
                "reviews.max_streams ({}) must be at most three quarters of server.max_connections ({}), so that ordinary requests keep room beside the event streams: lower it to {stream_room} or raise server.max_connections",
                self.reviews.max_streams, self.server.max_connections
            )));
        }
        self.limits.validate().map_err(SettingsError::Invalid)?;
        self.portal.validate().map_err(SettingsError::Invalid)?;
        let admin_addr = self.admin.addr.trim();
        if !admin_addr.is_empty() && admin_addr.parse::<SocketAddr>().is_err() {
            return Err(SettingsError::Invalid(format!(
                "admin.addr must be an address such as 127.0.0.1:19434, got {admin_addr:?}"
            )));
        }
        let otlp = self.telemetry.otlp_endpoint.trim();
        let is_url = otlp.starts_with("http://") || otlp.starts_with("https://");
        if !otlp.is_empty() && !is_url {
            return Err(SettingsError::Invalid(format!(
                "telemetry.otlp_endpoint must be an http:// or https:// URL, got {:?}",
                redacted(otlp)
            )));
        }
        let missing = |var: &str, key: &str, kind: &str| {
            SettingsError::Invalid(format!(
                "{var} ({key}) must be set when store.kind is \"{kind}\""
            ))
        };
        match self.store.kind {
            StoreKind::Redis if self.store.redis.url.trim().is_empty() => {
                return Err(missing("PLANSHARE_REDIS_URL", "store.redis.url", "redis"));
            }
            StoreKind::S3 if self.store.s3.bucket.trim().is_empty() => {
                return Err(missing("PLANSHARE_S3_BUCKET", "store.s3.bucket", "s3"));
            }
            _ => {}
        }
        let (cert, key) = (&self.server.tls_cert, &self.server.tls_key);
        match (cert.as_os_str().is_empty(), key.as_os_str().is_empty()) {
            (false, true) => {
                return Err(SettingsError::Invalid(format!(
                    "server.tls_cert is set ({}) but server.tls_key (PLANSHARE_TLS_KEY) is not: HTTPS needs the certificate's private key too (or unset both for plain HTTP)",
                    cert.display()
                )));
            }
            (true, false) => {
                return Err(SettingsError::Invalid(format!(
                    "server.tls_key is set ({}) but server.tls_cert (PLANSHARE_TLS_CERT) is not: HTTPS needs the certificate chain too (or unset both for plain HTTP)",
                    key.display()
                )));
            }
            _ => {}
        }
        if self.server.host.parse::<std::net::IpAddr>().is_err() {
            return Err(SettingsError::Invalid(format!(
                "server.host must be an IP address such as 0.0.0.0, 127.0.0.1 or ::, got {:?}",
                self.server.host
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use paste_store::FsSync;

    use super::*;

    fn load(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut vars_with_home = map;
        vars_with_home
            .entry("PLANSHARE_DATA_DIR".into())
            .or_insert_with(|| "/srv/planshare".into());
        Settings::load(None, &|name| vars_with_home.get(name).cloned())
    }

    #[test]
    fn the_embedded_defaults_file_matches_the_code_defaults() {
        assert_eq!(
            Settings::from_toml(DEFAULT_TOML).unwrap(),
            Settings::default()
        );
    }

    #[test]
    fn no_configuration_serves_files_on_19433() {
        let s = load(&[]).unwrap();
        assert_eq!(s.server.port, 19433);
        assert_eq!(s.server.host, "0.0.0.0");
        assert_eq!(s.store.kind, StoreKind::Fs);
        assert_eq!(s.store.fs.path, PathBuf::from("/srv/planshare/pastes"));
        assert_eq!(s.paste.max_size, 5_242_880);
        assert_eq!(s.paste.ttl_secs, 604_800);
        assert_eq!(s.paste.id_length, 16);
    }

    #[test]
    fn upstream_variables_keep_their_meaning() {
        let s = load(&[
            ("PASTE_PORT", "8080"),
            ("PASTE_DATA_DIR", "/var/pastes"),
            ("PASTE_TTL_DAYS", "0"),
            ("PASTE_MAX_SIZE", "2000"),
            (
                "PASTE_ALLOWED_ORIGINS",
                "https://plans.example.com, https://other.example.com ,",
            ),
        ])
        .unwrap();
        assert_eq!(s.server.port, 8080);
        assert_eq!(s.store.fs.path, PathBuf::from("/var/pastes"));
        assert_eq!(s.paste.ttl_secs, 0);
        assert_eq!(s.paste.max_size, 2000);
        assert_eq!(
            s.paste.allowed_origins,
            ["https://plans.example.com", "https://other.example.com"]
        );
        assert_eq!(
            load(&[("PASTE_TTL_DAYS", "3")]).unwrap().paste.ttl_secs,
            3 * 86_400
        );
    }

    #[test]
    fn planshare_variables_set_their_settings() {
        let s = load(&[
            ("PLANSHARE_HOST", "127.0.0.1"),
            ("PLANSHARE_PORT", "1234"),
            ("PLANSHARE_DATA_DIR", "/data"),
            ("PLANSHARE_STORE", "memory"),
            ("PLANSHARE_MAX_SIZE", "100"),
            ("PLANSHARE_TTL_SECS", "60"),
            ("PLANSHARE_ID_LENGTH", "8"),
            ("PLANSHARE_ALLOWED_ORIGINS", "*"),
            ("PLANSHARE_LOG", "debug"),
            ("PLANSHARE_LOG_FORMAT", "json"),
        ])
        .unwrap();
        assert_eq!((s.server.host.as_str(), s.server.port), ("127.0.0.1", 1234));
        assert_eq!(s.server.data_dir, PathBuf::from("/data"));
        assert_eq!(s.store.fs.path, PathBuf::from("/data/pastes"));
        assert_eq!(s.store.kind, StoreKind::Memory);
        assert_eq!(
            (s.paste.max_size, s.paste.ttl_secs, s.paste.id_length),
            (100, 60, 8)
        );
        assert_eq!(s.paste.allowed_origins, ["*"]);
        assert_eq!(
            (s.log.filter.as_str(), s.log.format),
            ("debug", LogFormat::Json)
        );
    }

    #[test]
    fn backend_variables_select_and_configure_the_store() {
        let s = load(&[
            ("PLANSHARE_STORE", "redis"),
            ("PLANSHARE_REDIS_URL", "redis://:pw@cache:6379/1"),
        ])
        .unwrap();
        assert_eq!(
            (s.store.kind, s.store.redis.url.as_str()),
            (StoreKind::Redis, "redis://:pw@cache:6379/1")
        );
        assert!(
            !s.to_toml().contains(":pw@"),
            "the password is redacted when printed"
        );
        let s = load(&[
            ("PLANSHARE_STORE", "S3"),
            ("PLANSHARE_S3_ENDPOINT", "http://127.0.0.1:9000"),
            ("PLANSHARE_S3_BUCKET", "pastes"),
            ("PLANSHARE_S3_REGION", "eu-west-1"),
            ("PLANSHARE_S3_PREFIX", "team/"),
        ])
        .unwrap();
        assert_eq!(s.store.kind, StoreKind::S3);
        assert_eq!(
            (
                s.store.s3.endpoint.as_str(),
                s.store.s3.bucket.as_str(),
                s.store.s3.region.as_str(),
                s.store.s3.prefix.as_str()
            ),
            ("http://127.0.0.1:9000", "pastes", "eu-west-1", "team/")
        );
    }

    #[test]
    fn a_password_in_the_otlp_endpoint_is_redacted_when_printed() {
        let endpoint = "http://user:0tlp-pw@127.0.0.1:4318";
        let s = load(&[("PLANSHARE_OTLP_ENDPOINT", endpoint)]).unwrap();
        assert_eq!(s.telemetry.otlp_endpoint, endpoint, "used as given");
        let printed = s.to_toml();
        assert!(
            printed.contains("otlp_endpoint = \"http://user:<redacted>@127.0.0.1:4318\""),
            "{printed}"
        );
        assert!(!printed.contains("0tlp-pw") && !format!("{s:?}").contains("0tlp-pw"));
        let refused = load(&[("PLANSHARE_OTLP_ENDPOINT", "ftp://user:0tlp-pw@h")]).unwrap_err();
        assert!(!refused.to_string().contains("0tlp-pw"), "{refused}");
    }

    #[test]
    fn event_streams_may_take_at_most_three_quarters_of_the_connections() {
        let with = |toml: &str| {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("planshare.toml");
            std::fs::write(&file, toml).unwrap();
            Settings::load(Some(&file), &|name| {
                (name == "PLANSHARE_DATA_DIR").then(|| "/srv/planshare".to_owned())
            })
        };
        let defaults = load(&[]).unwrap();
        assert!(
            defaults.reviews.max_streams as usize * 4 <= defaults.server.max_connections * 3,
            "the defaults keep the rule"
        );
        assert!(with("[server]\nmax_connections = 1000\n[reviews]\nmax_streams = 750\n").is_ok());
        let refused =
            with("[server]\nmax_connections = 1000\n[reviews]\nmax_streams = 751\n").unwrap_err();
        let message = refused.to_string();
        assert!(
            message.contains("reviews.max_streams (751)")
                && message.contains("server.max_connections (1000)")
                && message.contains("lower it to 750"),
            "{message}"
        );
        // The old defaults broke the rule.
        assert!(with("[reviews]\nmax_streams = 10000\n").is_err());
    }

    #[test]
    fn upstreams_data_directory_holds_the_catalog_too() {
        let only = |vars: &'static [(&'static str, &'static str)]| {
            Settings::load(None, &|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            })
            .unwrap()
        };
        let s = only(&[("PASTE_DATA_DIR", "/srv/pastes")]);
        assert_eq!(s.store.fs.path, PathBuf::from("/srv/pastes"));
        assert_eq!(s.server.data_dir, PathBuf::from("/srv/pastes"));
        assert_eq!(s.catalog.url, "sqlite:///srv/pastes/catalog.sqlite");
        // A data directory of planshare's own still wins for the catalog.
        let s = only(&[
            ("PASTE_DATA_DIR", "/srv/pastes"),
            ("PLANSHARE_DATA_DIR", "/srv/planshare"),
        ]);
        assert_eq!(s.store.fs.path, PathBuf::from("/srv/pastes"));
        assert_eq!(s.catalog.url, "sqlite:///srv/planshare/catalog.sqlite");
        // As does a catalog URL.
        let s = only(&[
            ("PASTE_DATA_DIR", "/srv/pastes"),
            ("PLANSHARE_DATABASE_URL", "sqlite:///elsewhere/c.sqlite"),
        ]);
        assert_eq!(s.catalog.url, "sqlite:///elsewhere/c.sqlite");
    }

    #[test]
    fn the_catalog_defaults_to_sqlite_in_the_data_directory() {
        let s = load(&[]).unwrap();
        assert_eq!(s.catalog.url, "sqlite:///srv/planshare/catalog.sqlite");
        let s = load(&[
            (
                "PLANSHARE_DATABASE_URL",
                "postgres://planshare:s3cret@db:5432/planshare",
            ),
            ("PLANSHARE_ADMIN_TOKEN", "admin-secret"),
        ])
        .unwrap();
        assert_eq!(
            s.catalog.url,
            "postgres://planshare:s3cret@db:5432/planshare"
        );
        assert_eq!(s.admin.token, "admin-secret");
        let s = Settings {
            limits: LimitsConfig {
                redis_url: "redis://:l1mits@cache:6379/2".into(),
                ..s.limits
            },
            ..s
        };
        let printed = s.to_toml();
        assert!(
            !printed.contains("l1mits") && !format!("{s:?}").contains("l1mits"),
            "{printed}"
        );
        assert!(
            !printed.contains("s3cret") && !printed.contains("admin-secret"),
            "{printed}"
        );
        assert!(!format!("{s:?}").contains("admin-secret"));
    }

    #[test]
    fn a_shared_limiter_url_survives_rate_limits_on_and_off() {
        for switch in ["on", "off"] {
            let s = load(&[
                ("PLANSHARE_LIMITS_REDIS_URL", "redis://cache:6379/3"),
                ("PLANSHARE_RATE_LIMITS", switch),
            ])
            .unwrap();
            assert_eq!(s.limits.redis_url, "redis://cache:6379/3", "{switch}");
        }
        let err = load(&[("PLANSHARE_LIMITS_REDIS_URL", "http://cache")]).unwrap_err();
        assert!(err.to_string().contains("redis_url"), "{err}");
    }

    #[test]
    fn every_switch_takes_the_same_words_and_refuses_typos() {
        type Read = fn(&Settings) -> bool;
        let switches: [(&str, Read); 4] = [
            ("PLANSHARE_PORTAL", |s| s.portal.enabled),
            ("PLANSHARE_TENANCY_BYPASS", |s| s.http.tenancy_bypass),
            ("PLANSHARE_RATE_LIMITS", |s| s.limits != LimitsConfig::off()),
            ("PLANSHARE_METRICS", |s| s.telemetry.metrics),
        ];
        for (var, read) in switches {
            for (word, on) in [
                ("on", true),
                ("ON", true),
                ("true", true),
                ("yes", true),
                (" 1 ", true),
                ("off", false),
                ("False", false),
                ("no", false),
                ("0", false),
            ] {
                let s = load(&[(var, word)]).unwrap_or_else(|e| panic!("{var}={word}: {e}"));
                assert_eq!(read(&s), on, "{var}={word}");
            }
            for typo in ["ture", "enabled", ""] {
                let err = load(&[(var, typo)]).unwrap_err().to_string();
                assert_eq!(
                    err,
                    format!(
                        "invalid value {typo:?} in {var}: expected on or off (also true/false, yes/no, 1/0)"
                    ),
                );
            }
        }
    }

    #[test]
    fn tls_needs_both_files_and_names_the_missing_one() {
        let s = load(&[]).unwrap();
        assert!(!s.server.tls_enabled(), "plain HTTP by default");
        let s = load(&[
            ("PLANSHARE_TLS_CERT", "/etc/planshare/fullchain.pem"),
            ("PLANSHARE_TLS_KEY", "/etc/planshare/privkey.pem"),
        ])
        .unwrap();
        assert!(s.server.tls_enabled());
        assert_eq!(
            s.server.tls_key,
            PathBuf::from("/etc/planshare/privkey.pem")
        );
        let err = load(&[("PLANSHARE_TLS_CERT", "/etc/planshare/fullchain.pem")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("server.tls_key (PLANSHARE_TLS_KEY) is not")
                && err.contains("/etc/planshare/fullchain.pem"),
            "{err}"
        );
        let err = load(&[("PLANSHARE_TLS_KEY", "/etc/planshare/privkey.pem")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("server.tls_cert (PLANSHARE_TLS_CERT) is not"),
            "{err}"
        );
        let err = Settings::from_toml("[server]\ntls_cert = \"/c.pem\"\n")
            .and_then(|s| s.validate().map_err(|e| e.to_string()))
            .unwrap_err();
        assert!(err.contains("server.tls_key"), "{err}");
    }

    #[test]
    fn upstream_variables_come_last() {
        let s = load(&[("PLANSHARE_PORT", "1111"), ("PASTE_PORT", "2222")]).unwrap();
        assert_eq!(s.server.port, 2222);
    }

    #[test]
    fn bad_values_name_the_variable_and_what_was_expected() {
        let err = load(&[("PASTE_PORT", "http")]).unwrap_err().to_string();
        assert_eq!(
            err,
            r#"invalid value "http" in PASTE_PORT: a port number 0-65535"#
        );
        let err = load(&[("PLANSHARE_STORE", "mongo")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PLANSHARE_STORE") && err.contains("valid kinds: fs, redis, s3, memory"),
            "{err}"
        );
        let err = load(&[("PLANSHARE_FS_SYNC", "sometimes")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PLANSHARE_FS_SYNC") && err.contains("valid modes: batch, file"),
            "{err}"
        );
        for (value, mode) in [("batch", FsSync::Batch), ("File", FsSync::File)] {
            let settings = load(&[("PLANSHARE_FS_SYNC", value)]).unwrap();
            assert_eq!(settings.store.fs.sync, mode, "{value}");
        }
        assert_eq!(load(&[]).unwrap().store.fs.sync, FsSync::Batch);
        let err = load(&[("PLANSHARE_STORE", "redis")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("PLANSHARE_REDIS_URL"), "{err}");
        let err = load(&[("PLANSHARE_STORE", "s3")]).unwrap_err().to_string();
        assert!(err.contains("PLANSHARE_S3_BUCKET"), "{err}");
        let err = load(&[("PLANSHARE_ID_LENGTH", "20")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("paste.id_length must be 8-16"), "{err}");
        let err = load(&[("PLANSHARE_HOST", "localhost")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.host"), "{err}");
    }

    #[test]
    fn every_variable_sets_the_setting_its_row_names() {
        // A valid value of each variable, other than its setting's default.
        let samples = [
            ("PLANSHARE_HOST", "127.0.0.1"),
            ("PLANSHARE_PORT", "1234"),
            ("PLANSHARE_DATA_DIR", "/data"),
            ("PLANSHARE_TLS_CERT", "/etc/planshare/cert.pem"),
            ("PLANSHARE_TLS_KEY", "/etc/planshare/key.pem"),
            ("PLANSHARE_STORE", "memory"),
            ("PLANSHARE_FS_SYNC", "file"),
            ("PLANSHARE_REDIS_URL", "redis://cache:6379/1"),
            ("PLANSHARE_S3_ENDPOINT", "http://127.0.0.1:9000"),
            ("PLANSHARE_S3_BUCKET", "pastes"),
            ("PLANSHARE_S3_REGION", "eu-west-1"),
            ("PLANSHARE_S3_PREFIX", "team/"),
            ("PLANSHARE_DATABASE_URL", "sqlite:///elsewhere/c.sqlite"),
            ("PLANSHARE_ADMIN_TOKEN", "admin-secret"),
            ("PLANSHARE_ADMIN_ADDR", "127.0.0.1:19434"),
            ("PLANSHARE_PORTAL", "off"),
            (
                "PLANSHARE_PORTAL_PASTE_API_URL",
                "https://paste.example.com",
            ),
            (
                "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
                "https://a.example, https://b.example",
            ),
            ("PLANSHARE_SHARE_BASE_URL", "https://share.example.com"),
            (
                "PLANSHARE_PORTAL_CALLBACK_ORIGINS",
                "https://bot.example.com",
            ),
            ("PLANSHARE_TRUSTED_PROXIES", "10.0.0.0/8"),
            ("PLANSHARE_LIMITS_REDIS_URL", "redis://cache:6379/3"),
            ("PLANSHARE_TENANCY_BYPASS", "on"),
            ("PLANSHARE_RATE_LIMITS", "off"),
            ("PLANSHARE_MAX_SIZE", "100"),
            ("PLANSHARE_TTL_SECS", "60"),
            ("PLANSHARE_ID_LENGTH", "8"),
            ("PLANSHARE_ALLOWED_ORIGINS", "*"),
            ("PLANSHARE_LOG", "debug"),
            ("PLANSHARE_LOG_FORMAT", "json"),
            ("PLANSHARE_METRICS", "off"),
            ("PLANSHARE_NOTIFY_PRIVATE_TARGETS", "true"),
            ("PLANSHARE_NOTIFY_LINK_BASE", "https://plans.example.com"),
            ("PLANSHARE_NOTIFY_REPLICA", "replica-a"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("PLANSHARE_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("PASTE_PORT", "8080"),
            ("PASTE_DATA_DIR", "/var/pastes"),
            ("PASTE_TTL_DAYS", "3"),
            ("PASTE_MAX_SIZE", "2000"),
            ("PASTE_ALLOWED_ORIGINS", "https://plans.example.com"),
        ];
        let all: Vec<&EnvVar> = ENV_VARS.iter().chain(UPSTREAM_ENV_VARS).collect();
        assert_eq!(samples.len(), all.len(), "one sample per variable");
        // Read back from the printed settings: secrets print redacted, but
        // "<redacted>" differs from the empty default all the same.
        let printed = |s: Settings| toml::from_str::<toml::Table>(&s.to_toml()).unwrap();
        let before = printed(load(&[]).unwrap());
        for var in all {
            let (_, sample) = samples
                .iter()
                .find(|(name, _)| *name == var.name)
                .unwrap_or_else(|| panic!("no sample value for {}", var.name));
            // The TLS files come in pairs: the other one set to its default's
            // neighbour, so that only this variable's setting differs.
            let partner = match var.name {
                "PLANSHARE_TLS_CERT" => Some(("PLANSHARE_TLS_KEY", "/etc/planshare/key.pem")),
                "PLANSHARE_TLS_KEY" => Some(("PLANSHARE_TLS_CERT", "/etc/planshare/cert.pem")),
                _ => None,
            };
            let vars: Vec<(&str, &str)> = std::iter::once((var.name, *sample))
                .chain(partner)
                .collect();
            let after = printed(load(&vars).unwrap_or_else(|e| panic!("{}: {e}", var.name)));
            let setting = lookup(&after, var.setting);
            assert!(
                setting.is_some(),
                "{}: no setting {}",
                var.name,
                var.setting
            );
            assert_ne!(
                setting,
                lookup(&before, var.setting),
                "{}={sample} left {} alone",
                var.name,
                var.setting
            );
        }
    }

    #[test]
    fn every_variable_is_documented() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .unwrap();
        for var in ENV_VARS.iter().chain(UPSTREAM_ENV_VARS) {
            assert!(readme.contains(var.name), "README.md lacks {}", var.name);
            assert!(
                DEFAULT_TOML.contains(var.name),
                "planshare.default.toml lacks {}",
                var.name
            );
        }
    }

    #[test]
    fn a_variable_takes_what_the_file_takes() {
        let file =
            Settings::from_toml("[store]\nkind = \"S3\"\n[store.fs]\nsync = \"File\"\n").unwrap();
        let env = load(&[("PLANSHARE_STORE", "S3"), ("PLANSHARE_FS_SYNC", "File")]);
        let env = env.unwrap_err().to_string();
        assert!(env.contains("PLANSHARE_S3_BUCKET"), "{env}");
        assert_eq!(
            (file.store.kind, file.store.fs.sync),
            (StoreKind::S3, FsSync::File)
        );
        let err = load(&[("PLANSHARE_LOG_FORMAT", "xml")])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(r#"invalid value "xml" in PLANSHARE_LOG_FORMAT: "#)
                && err.contains("`pretty` or `json`"),
            "{err}"
        );
        for (var, value, expected) in [
            ("PLANSHARE_PORT", "70000", "a port number 0-65535"),
            ("PLANSHARE_TTL_SECS", "-1", "a number of seconds"),
            ("PASTE_TTL_DAYS", "-1", "a whole number of days"),
            (
                "PASTE_TTL_DAYS",
                "1000000000000000",
                "a smaller number of days",
            ),
        ] {
            let err = load(&[(var, value)]).unwrap_err().to_string();
            assert_eq!(err, format!("invalid value {value:?} in {var}: {expected}"));
        }
    }

    #[test]
    fn rate_limits_replace_the_files_limiters_and_keep_the_proxies() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("planshare.toml");
        std::fs::write(&file, "[limits]\nip_per_sec = 7\nip_burst = 7\n").unwrap();
        let env_with = |switch: Option<&'static str>| {
            move |name: &str| match name {
                "PLANSHARE_DATA_DIR" => Some("/srv/planshare".to_owned()),
                "PLANSHARE_TRUSTED_PROXIES" => Some("10.0.0.1".to_owned()),
                "PLANSHARE_RATE_LIMITS" => switch.map(str::to_owned),
                _ => None,
            }
        };
        let s = Settings::load(Some(&file), &env_with(None)).unwrap();
        assert_eq!((s.limits.ip_per_sec, s.limits.ip_burst), (7, 7));
        let s = Settings::load(Some(&file), &env_with(Some("on"))).unwrap();
        assert_eq!(
            s.limits,
            LimitsConfig {
                trusted_proxies: vec!["10.0.0.1".into()],
                ..LimitsConfig::default()
            },
            "on: the defaults, over the file's limiters"
        );
        let s = Settings::load(Some(&file), &env_with(Some("off"))).unwrap();
        assert_eq!(
            s.limits,
            LimitsConfig {
                trusted_proxies: vec!["10.0.0.1".into()],
                ..LimitsConfig::off()
            }
        );
    }

    #[test]
    fn a_file_overrides_defaults_and_env_overrides_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("planshare.toml");
        std::fs::write(
            &file,
            "[server]\nport = 5000\n[paste]\nallowed_origins = \"https://a.example, https://b.example\"\n[store]\nkind = \"memory\"\n",
        )
        .unwrap();
        let env = |name: &str| (name == "PLANSHARE_PORT").then(|| "6000".to_owned());
        let s = Settings::load(Some(&file), &env).unwrap();
        assert_eq!(s.server.port, 6000);
        assert_eq!(
            s.paste.allowed_origins,
            ["https://a.example", "https://b.example"]
        );
        assert_eq!(s.store.kind, StoreKind::Memory);
        assert_eq!(
            s.paste.max_size, 5_242_880,
            "untouched keys keep their defaults"
        );
    }

    #[test]
    fn unknown_keys_and_kinds_in_a_file_are_errors() {
        let err = Settings::from_toml("[server]\nprot = 1\n").unwrap_err();
        assert!(err.contains("unknown field `prot`"), "{err}");
        let err = Settings::from_toml("[store]\nkind = \"mongo\"\n").unwrap_err();
        assert!(err.contains("fs") && err.contains("memory"), "{err}");
    }

    #[test]
    fn printed_settings_parse_back_to_the_same_settings() {
        let s = load(&[("PASTE_MAX_SIZE", "2000")]).unwrap();
        assert_eq!(Settings::from_toml(&s.to_toml()).unwrap(), s);
    }
}
