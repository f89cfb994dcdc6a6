//! The paste API client: create, read and delete with bounded retries.
//!
//! Only `data` (ciphertext) and ids travel; the share key is never an argument
//! of anything here, so no request can carry it.

use std::time::Duration;

use api_types::CreatePasteResponse;
use reqwest::{Response, StatusCode, header};

use crate::error::CliError;

/// Attempts per request, the first included.
pub const MAX_ATTEMPTS: u32 = 3;
/// The longest `Retry-After` the client waits for; beyond it, it gives up.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// A paste API at a base URL such as `http://localhost:19433`.
pub struct PasteClient {
    base: String,
    http: reqwest::Client,
    /// Sent as `Authorization: Bearer` on creates, when set.
    api_key: Option<String>,
}

impl PasteClient {
    /// A client for `base`. Plain `http://` is accepted only for this machine
    /// (localhost, 127.0.0.0/8, ::1) unless `insecure` is set.
    pub fn new(base: &str, insecure: bool) -> Result<Self, CliError> {
        let base = base.trim_end_matches('/').to_owned();
        let url = reqwest::Url::parse(&base)
            .map_err(|e| CliError::Input(format!("invalid paste API URL {base:?}: {e}")))?;
        match url.scheme() {
            "https" => {}
            "http" if insecure || is_loopback(&url) => {}
            "http" => return Err(CliError::Insecure(base)),
            other => {
                return Err(CliError::Input(format!(
                    "invalid paste API URL {base:?}: scheme {other:?} is not http(s)"
                )));
            }
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("planshare/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Unavailable(format!("cannot set up HTTP: {e}")))?;
        Ok(PasteClient {
            base,
            http,
            api_key: None,
        })
    }

    /// Creates authenticate with `key` (a planshare tenant's API key).
    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key.filter(|k| !k.is_empty());
        self
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `POST /api/paste`. Retried on network errors, 429 and 5xx with the
    /// same `Idempotency-Key`, so a retry after a lost answer cannot store twice
    /// on a service that honours it.
    pub async fn create(&self, data: &str) -> Result<CreatePasteResponse, CliError> {
        let body = serde_json::json!({ "data": data }).to_string();
        let key = idempotency_key()?;
        let url = format!("{}/api/paste", self.base);
        let response = self
            .send_with_retries(|| {
                let request = self
                    .http
                    .post(&url)
                    .header(header::CONTENT_TYPE, "application/json")
                    .header("Idempotency-Key", &key)
                    .body(body.clone());
                match &self.api_key {
                    Some(api_key) => request.bearer_auth(api_key),
                    None => request,
                }
            })
            .await?;
        match response.status() {
            StatusCode::CREATED | StatusCode::OK => response
                .json::<CreatePasteResponse>()
                .await
                .map_err(|e| CliError::Service(format!("unreadable create response: {e}"))),
            StatusCode::PAYLOAD_TOO_LARGE => Err(CliError::TooLarge(
                error_message(response)
                    .await
                    .unwrap_or_else(|| "Share payload is too large".to_owned()),
            )),
            status => Err(unexpected(status, response).await),
        }
    }

    /// `GET /api/paste/{id}` → the stored `data`.
    pub async fn get(&self, id: &str) -> Result<String, CliError> {
        let url = format!("{}/api/paste/{id}", self.base);
        let response = self.send_with_retries(|| self.http.get(&url)).await?;
        match response.status() {
            StatusCode::OK => {
                let body: api_types::GetPasteResponse = response
                    .json()
                    .await
                    .map_err(|e| CliError::Service(format!("unreadable paste: {e}")))?;
                Ok(body.data)
            }
            StatusCode::NOT_FOUND => Err(CliError::NotFound),
            status => Err(unexpected(status, response).await),
        }
    }

    /// `DELETE /api/paste/{id}` with the paste's delete token.
    pub async fn delete(&self, id: &str, token: &str) -> Result<(), CliError> {
        let url = format!("{}/api/paste/{id}", self.base);
        let response = self
            .send_with_retries(|| self.http.delete(&url).bearer_auth(token))
            .await?;
        match response.status() {
            StatusCode::NO_CONTENT | StatusCode::OK => Ok(()),
            StatusCode::NOT_FOUND => Err(CliError::NotFound),
            StatusCode::UNAUTHORIZED => Err(CliError::Unauthorized(
                error_message(response).await.unwrap_or_default(),
            )),
            status => Err(unexpected(status, response).await),
        }
    }

    /// Sends the request built by `build`, retrying transient failures up to
    /// [`MAX_ATTEMPTS`] times; returns the last response otherwise.
    async fn send_with_retries(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Response, CliError> {
        let mut attempt = 1;
        loop {
            let last = attempt >= MAX_ATTEMPTS;
            let wait = match build().send().await {
                Ok(response) if last || !is_transient(response.status()) => return Ok(response),
                Ok(response) => retry_after(&response),
                Err(e) if last => return Err(CliError::Unavailable(describe(&e, &self.base))),
                Err(_) => None,
            };
            let wait = match wait {
                Some(w) if w > MAX_RETRY_AFTER => {
                    return Err(CliError::Unavailable(format!(
                        "{} asked to retry after {} s",
                        self.base,
                        w.as_secs()
                    )));
                }
                Some(w) => w,
                None => backoff(attempt),
            };
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

fn is_transient(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// 250 ms, 500 ms, … with up to 25 % jitter.
fn backoff(attempt: u32) -> Duration {
    let base = 250u64.saturating_mul(1 << attempt.saturating_sub(1).min(6));
    let mut b = [0u8; 1];
    let jitter = if getrandom::fill(&mut b).is_ok() {
        u64::from(b[0]) * base / 1024
    } else {
        0
    };
    Duration::from_millis(base + jitter)
}

fn idempotency_key() -> Result<String, CliError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| CliError::Service("no random source".into()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `url` points at this machine (plain HTTP is fine there).
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A one-line description of a transport failure talking to `base`.
pub(crate) fn describe(error: &reqwest::Error, base: &str) -> String {
    if error.is_timeout() {
        format!("{base} did not answer in time")
    } else if error.is_connect() {
        format!("cannot connect to {base}")
    } else {
        format!("request to {base} failed")
    }
}

async fn error_message(response: Response) -> Option<String> {
    let body: api_types::ErrorBody = response.json().await.ok()?;
    Some(body.error)
}

async fn unexpected(status: StatusCode, response: Response) -> CliError {
    let message = error_message(response).await.unwrap_or_default();
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        CliError::Unavailable(format!("HTTP {}{}", status.as_u16(), suffix(&message)))
    } else {
        CliError::Service(format!("HTTP {}{}", status.as_u16(), suffix(&message)))
    }
}

fn suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}
