//! `planshare admin …`: the admin API (`/admin/v1/…`) of a planshare server —
//! tenants, their API keys and usage. Requests and answers are `api_types`'
//! admin bodies; an answer is printed on stdout as pretty JSON, in the
//! server's field order; `delete` and `revoke` print nothing.
//!
//! Requests are sent once (creating a tenant or a key is not idempotent, so
//! a lost answer is reported rather than retried). Plain `http://` is used
//! only towards this machine unless `--insecure` (or `PLANSHARE_INSECURE=1`),
//! as for the paste client.

use std::io::Write as _;
use std::time::Duration;

use api_types::{
    CreateKeyRequest, CreatedKey, KeyList, NewTenant, NewTenantSettings, Tenant, TenantList,
    TenantUpdate, Usage,
};
use clap::{Args, Subcommand};
use reqwest::{Method, Response, StatusCode, header};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{describe, is_loopback};
use crate::env::Env;
use crate::error::CliError;
use crate::terminal::json_pretty;

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
    /// Allow plain http:// to hosts other than this machine (also
    /// PLANSHARE_INSECURE=1).
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
    Tenants(Box<TenantsCommand>),
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
    /// Live reviewer links per review (1-1000).
    #[arg(long)]
    review_max_links: Option<i64>,
    /// Versions per review (1-10000).
    #[arg(long)]
    review_max_versions: Option<i64>,
    /// Let review notifications reach private, loopback and link-local
    /// addresses and plain http (`--notify-private-targets false` to turn off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    notify_private_targets: Option<bool>,
}

impl SettingsArgs {
    /// The settings given (an empty list counts as not given).
    fn given(&self) -> NewTenantSettings {
        let list = |l: &Vec<String>| (!l.is_empty()).then(|| l.clone());
        NewTenantSettings {
            hosts: list(&self.hosts),
            cors_origins: list(&self.cors_origins),
            max_paste_size: self.max_paste_size,
            default_ttl_secs: self.default_ttl_secs,
            max_ttl_secs: self.max_ttl_secs,
            quota_bytes: self.quota_bytes,
            quota_pastes: self.quota_pastes,
            rate_per_sec: self.rate_per_sec,
            rate_burst: self.rate_burst,
            id_length: self.id_length,
            allow_anonymous: self.allow_anonymous,
            review_max_links: self.review_max_links,
            review_max_versions: self.review_max_versions,
            notify_private_targets: self.notify_private_targets,
        }
    }

    /// A change of `name` (if given) and of the settings given.
    fn update(&self, name: Option<String>) -> TenantUpdate {
        let NewTenantSettings {
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
            notify_private_targets,
        } = self.given();
        TenantUpdate {
            name,
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
            notify_private_targets,
        }
    }
}

/// Runs an admin command; returns what to print on stdout.
pub async fn run(cli: AdminCli, env: &Env) -> Result<String, CliError> {
    let client = AdminClient::new(&cli.api, env.insecure())?;
    let tenant_path = |id: &str| -> Result<String, CliError> {
        Ok(format!("/admin/v1/tenants/{}", segment(id)?))
    };
    match cli.command {
        AdminCommand::Tenants(command) => match *command {
            TenantsCommand::Create {
                name,
                namespace,
                settings,
            } => {
                let body = NewTenant {
                    name,
                    namespace,
                    settings: settings.given(),
                };
                let tenant: Tenant = client
                    .send(Method::POST, "/admin/v1/tenants", Some(&body))
                    .await?;
                pretty(&tenant)
            }
            TenantsCommand::List => {
                let list: TenantList = client.get("/admin/v1/tenants").await?;
                pretty(&list)
            }
            TenantsCommand::Get { id } => {
                let tenant: Tenant = client.get(&tenant_path(&id)?).await?;
                pretty(&tenant)
            }
            TenantsCommand::Update { id, name, settings } => {
                let tenant: Tenant = client
                    .send(
                        Method::PATCH,
                        &tenant_path(&id)?,
                        Some(&settings.update(name)),
                    )
                    .await?;
                pretty(&tenant)
            }
            TenantsCommand::Disable { id } => {
                let path = format!("{}/disable", tenant_path(&id)?);
                let tenant: Tenant = client.send(Method::POST, &path, NO_BODY).await?;
                pretty(&tenant)
            }
            TenantsCommand::Enable { id } => {
                let path = format!("{}/enable", tenant_path(&id)?);
                let tenant: Tenant = client.send(Method::POST, &path, NO_BODY).await?;
                pretty(&tenant)
            }
            TenantsCommand::Delete { id } => {
                client.delete(&tenant_path(&id)?).await?;
                Ok(String::new())
            }
        },
        AdminCommand::Keys(command) => match command {
            KeysCommand::Create { tenant_id, name } => {
                let path = format!("{}/keys", tenant_path(&tenant_id)?);
                let created: CreatedKey = client
                    .send(Method::POST, &path, Some(&CreateKeyRequest { name }))
                    .await?;
                let _ = writeln!(
                    std::io::stderr(),
                    "planshare: store this key now: it is not shown again"
                );
                pretty(&created)
            }
            KeysCommand::List { tenant_id } => {
                let path = format!("{}/keys", tenant_path(&tenant_id)?);
                let keys: KeyList = client.get(&path).await?;
                pretty(&keys)
            }
            KeysCommand::Revoke { tenant_id, key_id } => {
                let path = format!("{}/keys/{}", tenant_path(&tenant_id)?, segment(&key_id)?);
                client.delete(&path).await?;
                Ok(String::new())
            }
        },
        AdminCommand::Usage { tenant_id } => {
            let path = format!("{}/usage", tenant_path(&tenant_id)?);
            let usage: Usage = client.get(&path).await?;
            pretty(&usage)
        }
    }
}

/// A request without a body.
const NO_BODY: Option<&()> = None;

/// An answer as printed: pretty JSON and a newline.
fn pretty<T: Serialize>(answer: &T) -> Result<String, CliError> {
    json_pretty(answer)
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
    /// `insecure_env`: `PLANSHARE_INSECURE` allows plain HTTP as `--insecure` does.
    fn new(args: &AdminArgs, insecure_env: bool) -> Result<Self, CliError> {
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
            "http" if args.insecure || insecure_env || is_loopback(&url) => {}
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

    /// `GET`s `path`; its JSON answer.
    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, CliError> {
        self.send(Method::GET, path, NO_BODY).await
    }

    /// `DELETE`s `path`; the answer has no body (204).
    async fn delete(&self, path: &str) -> Result<(), CliError> {
        self.request(Method::DELETE, path, NO_BODY).await.map(drop)
    }

    /// Sends one request with `body` as JSON; its JSON answer.
    async fn send<T: DeserializeOwned, B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, CliError> {
        self.request(method, path, body)
            .await?
            .json::<T>()
            .await
            .map_err(|_| CliError::Service("unreadable admin API response".to_owned()))
    }

    /// Sends one request; a successful answer, or the error it stands for.
    async fn request<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Response, CliError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            let json = serde_json::to_string(body).map_err(|e| CliError::Input(e.to_string()))?;
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(json);
        }
        let response = request
            .send()
            .await
            .map_err(|e| CliError::Unavailable(describe(&e, &self.base)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
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
        let create = NewTenant {
            name: "A".into(),
            namespace: "a".into(),
            settings: args.given(),
        };
        assert_eq!(
            serde_json::to_string(&create).unwrap(),
            r#"{"name":"A","namespace":"a","settings":{"hosts":["a.example.com"],"quota_bytes":10,"allow_anonymous":false}}"#
        );
        assert_eq!(
            serde_json::to_string(&args.update(None)).unwrap(),
            r#"{"hosts":["a.example.com"],"quota_bytes":10,"allow_anonymous":false}"#
        );
        let bare = NewTenant {
            settings: SettingsArgs::default().given(),
            ..create
        };
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"name":"A","namespace":"a"}"#
        );
        assert_eq!(
            serde_json::to_string(&SettingsArgs::default().update(Some("B".into()))).unwrap(),
            r#"{"name":"B"}"#
        );
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
        assert!(AdminClient::new(&args("http://127.0.0.1:19433", false), false).is_ok());
        assert!(AdminClient::new(&args("https://admin.example.com", false), false).is_ok());
        assert!(matches!(
            AdminClient::new(&args("http://admin.example.com", false), false),
            Err(CliError::Insecure(_))
        ));
        assert!(AdminClient::new(&args("http://admin.example.com", true), false).is_ok());
        // PLANSHARE_INSECURE=1 allows it as --insecure does.
        assert!(AdminClient::new(&args("http://admin.example.com", false), true).is_ok());
        let no_token = AdminArgs {
            token: None,
            ..args("http://127.0.0.1:1", false)
        };
        assert!(matches!(
            AdminClient::new(&no_token, false),
            Err(CliError::Usage(_))
        ));
    }
}
