//! `planshare admin …`: the admin API (`/admin/v1/…`) of a planshare server —
//! tenants, their API keys and usage. Results are the server's JSON, pretty
//! printed on stdout; `delete` and `revoke` print nothing.
//!
//! Requests are sent once (creating a tenant or a key is not idempotent, so
//! a lost answer is reported rather than retried). Plain `http://` is used
//! only towards this machine unless `--insecure`, as for the paste client.

use std::io::Write as _;
use std::time::Duration;

use clap::{Args, Subcommand};
use reqwest::{Method, Response, StatusCode, header};
use serde_json::{Map, Value, json};

use crate::client::{describe, is_loopback};
use crate::error::CliError;

/// Default admin API: the server on this machine.
pub const DEFAULT_ADMIN_URL: &str = "http://127.0.0.1:19433";

/// Where the admin API is and how to authenticate.
#[derive(Args, Clone)]
pub struct AdminArgs {
    /// Admin API base URL.
    #[arg(long, global = true, env = "PLANSHARE_ADMIN_URL", default_value = DEFAULT_ADMIN_URL)]
    pub url: String,
    /// The server's admin token (its PLANSHARE_ADMIN_TOKEN).
    #[arg(
        long,
        global = true,
        env = "PLANSHARE_ADMIN_TOKEN",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub token: Option<String>,
    /// Allow plain http:// to hosts other than this machine.
    #[arg(long, global = true)]
    pub insecure: bool,
}

/// `planshare admin …`.
#[derive(Args)]
pub struct AdminCli {
    #[command(flatten)]
    api: AdminArgs,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create, list, read, change, disable, enable or delete tenants.
    #[command(subcommand)]
    Tenants(TenantsCommand),
    /// Create, list or revoke a tenant's API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Print a tenant's accounted usage.
    Usage {
        /// The tenant id (`tnt_…`).
        tenant_id: String,
    },
}

#[derive(Subcommand)]
enum TenantsCommand {
    /// Create a tenant; prints it with its id.
    Create {
        /// Human-readable name.
        #[arg(long)]
        name: String,
        /// Paste-store namespace (`[a-z0-9][a-z0-9_-]{0,62}`); never changes.
        #[arg(long)]
        namespace: String,
        #[command(flatten)]
        settings: SettingsArgs,
    },
    /// List every tenant.
    List,
    /// Print one tenant.
    Get {
        /// The tenant id.
        id: String,
    },
    /// Change a tenant's name or settings (only the flags given).
    Update {
        /// The tenant id.
        id: String,
        /// New name.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        settings: SettingsArgs,
    },
    /// Disable a tenant (its keys stop working; data is kept).
    Disable {
        /// The tenant id.
        id: String,
    },
    /// Enable a disabled tenant.
    Enable {
        /// The tenant id.
        id: String,
    },
    /// Delete a tenant with its hosts, keys, usage and pastes.
    Delete {
        /// The tenant id.
        id: String,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create an API key; prints it once (it cannot be shown again).
    Create {
        /// The tenant id.
        tenant_id: String,
        /// A name for the key.
        #[arg(long)]
        name: String,
    },
    /// List a tenant's keys (never their secrets).
    List {
        /// The tenant id.
        tenant_id: String,
    },
    /// Revoke a key.
    Revoke {
        /// The tenant id.
        tenant_id: String,
        /// The key id (`key_…`).
        key_id: String,
    },
}

/// Tenant settings; a flag not given is left out of the request.
#[derive(Args, Clone, Default)]
struct SettingsArgs {
    /// Host name that resolves to the tenant (repeatable; replaces the list).
    #[arg(long = "host", value_name = "HOST")]
    hosts: Vec<String>,
    /// CORS origin allowed for the tenant (repeatable; replaces the list).
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    cors_origins: Vec<String>,
    /// Largest accepted paste, in bytes.
    #[arg(long)]
    max_paste_size: Option<i64>,
    /// TTL of a paste created without one, in seconds.
    #[arg(long)]
    default_ttl_secs: Option<i64>,
    /// Longest TTL a client may ask for, in seconds.
    #[arg(long)]
    max_ttl_secs: Option<i64>,
    /// Storage quota in bytes.
    #[arg(long)]
    quota_bytes: Option<i64>,
    /// Quota of live pastes.
    #[arg(long)]
    quota_pastes: Option<i64>,
    /// Sustained requests per second per key.
    #[arg(long)]
    rate_per_sec: Option<i64>,
    /// Burst size of the rate limiter.
    #[arg(long)]
    rate_burst: Option<i64>,
    /// Length of issued paste ids (8-16).
    #[arg(long)]
    id_length: Option<i64>,
    /// Let requests without an API key create pastes (`--allow-anonymous false` to turn off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    allow_anonymous: Option<bool>,
}

impl SettingsArgs {
    /// The fields given, as a JSON object.
    fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        if !self.hosts.is_empty() {
            map.insert("hosts".into(), json!(self.hosts));
        }
        if !self.cors_origins.is_empty() {
            map.insert("cors_origins".into(), json!(self.cors_origins));
        }
        let numbers = [
            ("max_paste_size", self.max_paste_size),
            ("default_ttl_secs", self.default_ttl_secs),
            ("max_ttl_secs", self.max_ttl_secs),
            ("quota_bytes", self.quota_bytes),
            ("quota_pastes", self.quota_pastes),
            ("rate_per_sec", self.rate_per_sec),
            ("rate_burst", self.rate_burst),
            ("id_length", self.id_length),
        ];
        for (name, value) in numbers {
            if let Some(v) = value {
                map.insert(name.into(), json!(v));
            }
        }
        if let Some(v) = self.allow_anonymous {
            map.insert("allow_anonymous".into(), json!(v));
        }
        map
    }
}

/// Runs an admin command; returns what to print on stdout.
pub async fn run(cli: AdminCli) -> Result<String, CliError> {
    let client = AdminClient::new(&cli.api)?;
    let tenant_path = |id: &str| -> Result<String, CliError> {
        Ok(format!("/admin/v1/tenants/{}", segment(id)?))
    };
    let result = match cli.command {
        AdminCommand::Tenants(command) => match command {
            TenantsCommand::Create {
                name,
                namespace,
                settings,
            } => {
                let mut body = json!({ "name": name, "namespace": namespace });
                let settings = settings.to_map();
                if !settings.is_empty() {
                    body["settings"] = Value::Object(settings);
                }
                client
                    .send(Method::POST, "/admin/v1/tenants", Some(body))
                    .await?
            }
            TenantsCommand::List => client.send(Method::GET, "/admin/v1/tenants", None).await?,
            TenantsCommand::Get { id } => {
                client.send(Method::GET, &tenant_path(&id)?, None).await?
            }
            TenantsCommand::Update { id, name, settings } => {
                let mut body = settings.to_map();
                if let Some(name) = name {
                    body.insert("name".into(), json!(name));
                }
                client
                    .send(Method::PATCH, &tenant_path(&id)?, Some(Value::Object(body)))
                    .await?
            }
            TenantsCommand::Disable { id } => {
                let path = format!("{}/disable", tenant_path(&id)?);
                client.send(Method::POST, &path, None).await?
            }
            TenantsCommand::Enable { id } => {
                let path = format!("{}/enable", tenant_path(&id)?);
                client.send(Method::POST, &path, None).await?
            }
            TenantsCommand::Delete { id } => {
                client
                    .send(Method::DELETE, &tenant_path(&id)?, None)
                    .await?
            }
        },
        AdminCommand::Keys(command) => match command {
            KeysCommand::Create { tenant_id, name } => {
                let path = format!("{}/keys", tenant_path(&tenant_id)?);
                let created = client
                    .send(Method::POST, &path, Some(json!({ "name": name })))
                    .await?;
                let _ = writeln!(
                    std::io::stderr(),
                    "planshare: store this key now: it is not shown again"
                );
                created
            }
            KeysCommand::List { tenant_id } => {
                let path = format!("{}/keys", tenant_path(&tenant_id)?);
                client.send(Method::GET, &path, None).await?
            }
            KeysCommand::Revoke { tenant_id, key_id } => {
                let path = format!("{}/keys/{}", tenant_path(&tenant_id)?, segment(&key_id)?);
                client.send(Method::DELETE, &path, None).await?
            }
        },
        AdminCommand::Usage { tenant_id } => {
            let path = format!("{}/usage", tenant_path(&tenant_id)?);
            client.send(Method::GET, &path, None).await?
        }
    };
    match result {
        None => Ok(String::new()),
        Some(value) => serde_json::to_string_pretty(&value)
            .map(|s| s + "\n")
            .map_err(|e| CliError::Output(e.to_string())),
    }
}

/// An id as a path segment: ids are letters, digits and `_`, so anything
/// else (a typo, `..`, `/`) is refused before it can become another path.
fn segment(id: &str) -> Result<&str, CliError> {
    if (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(id)
    } else {
        Err(CliError::Input(format!(
            "invalid id {:?}: expected letters, digits and _",
            id.chars().take(64).collect::<String>()
        )))
    }
}

/// A client of one admin API.
struct AdminClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl AdminClient {
    fn new(args: &AdminArgs) -> Result<Self, CliError> {
        let token = args
            .token
            .clone()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                CliError::Usage(
                    "no admin token: pass --token or set PLANSHARE_ADMIN_TOKEN".to_owned(),
                )
            })?;
        let base = args.url.trim_end_matches('/').to_owned();
        let url = reqwest::Url::parse(&base)
            .map_err(|e| CliError::Input(format!("invalid admin API URL {base:?}: {e}")))?;
        match url.scheme() {
            "https" => {}
            "http" if args.insecure || is_loopback(&url) => {}
            "http" => return Err(CliError::Insecure(base)),
            other => {
                return Err(CliError::Input(format!(
                    "invalid admin API URL {base:?}: scheme {other:?} is not http(s)"
                )));
            }
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("planshare/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Unavailable(format!("cannot set up HTTP: {e}")))?;
        Ok(AdminClient { base, token, http })
    }

    /// Sends one request; the JSON answer, or `None` for 204.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Option<Value>, CliError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request
            .send()
            .await
            .map_err(|e| CliError::Unavailable(describe(&e, &self.base)))?;
        let status = response.status();
        if status == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        if status.is_success() {
            return response
                .json::<Value>()
                .await
                .map(Some)
                .map_err(|_| CliError::Service("unreadable admin API response".to_owned()));
        }
        Err(self.failure(status, response).await)
    }

    async fn failure(&self, status: StatusCode, response: Response) -> CliError {
        let body: Option<api_types::ErrorBody> = response.json().await.ok();
        let (message, code) = match body {
            Some(b) => (one_line(&b.error), b.code),
            None => (String::new(), None),
        };
        let detail = format!("HTTP {}{}", status.as_u16(), suffix(&message));
        match status {
            // Our admin routes always send a code; the generic 404 does not.
            StatusCode::NOT_FOUND if code.is_none() => CliError::Service(format!(
                "no admin API at {} (is PLANSHARE_ADMIN_TOKEN set on the server?)",
                self.base
            )),
            StatusCode::NOT_FOUND => CliError::AdminNotFound(message),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => CliError::Unauthorized(detail),
            StatusCode::BAD_REQUEST
            | StatusCode::CONFLICT
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::UNSUPPORTED_MEDIA_TYPE
            | StatusCode::UNPROCESSABLE_ENTITY => CliError::Rejected(detail),
            s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
                CliError::Unavailable(detail)
            }
            _ => CliError::Service(detail),
        }
    }
}

/// The server's message on one line (error output is one line).
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_given_settings_are_sent() {
        let args = SettingsArgs {
            hosts: vec!["a.example.com".into()],
            quota_bytes: Some(10),
            allow_anonymous: Some(false),
            ..SettingsArgs::default()
        };
        assert_eq!(
            Value::Object(args.to_map()),
            json!({"hosts": ["a.example.com"], "quota_bytes": 10, "allow_anonymous": false})
        );
        assert!(SettingsArgs::default().to_map().is_empty());
    }

    #[test]
    fn ids_cannot_escape_their_path_segment() {
        assert_eq!(segment("tnt_abc").unwrap(), "tnt_abc");
        for bad in ["", "..", ".", "a/b", "a b", "tnt_%2e"] {
            assert!(segment(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plain_http_only_to_this_machine() {
        let args = |url: &str, insecure| AdminArgs {
            url: url.into(),
            token: Some("t".into()),
            insecure,
        };
        assert!(AdminClient::new(&args("http://127.0.0.1:19433", false)).is_ok());
        assert!(AdminClient::new(&args("https://admin.example.com", false)).is_ok());
        assert!(matches!(
            AdminClient::new(&args("http://admin.example.com", false)),
            Err(CliError::Insecure(_))
        ));
        assert!(AdminClient::new(&args("http://admin.example.com", true)).is_ok());
        let no_token = AdminArgs {
            token: None,
            ..args("http://127.0.0.1:1", false)
        };
        assert!(matches!(
            AdminClient::new(&no_token),
            Err(CliError::Usage(_))
        ));
    }
}
