//! The paste API client: create, read and delete with bounded retries.
//!
//! Only `data` (ciphertext) and ids travel; the share key is never an argument
//! of anything here, so no request can carry it. A tenant's API key goes only
//! to the paste API it was configured for (see [`PasteClient::with_api_key_for`]).
//! Redirects are never followed, and no answer is read past
//! [`MAX_ANSWER_BYTES`].

use std::time::Duration;

use api_types::CreatePasteResponse;
use reqwest::header::HeaderMap;
use reqwest::{Response, StatusCode, Url, header};

use crate::error::CliError;
use crate::terminal::is_invisible_format;

/// Attempts per request, the first included.
pub const MAX_ATTEMPTS: u32 = 3;
/// The longest `Retry-After` the client waits for; beyond it, it gives up.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// The largest answer read: upstream's largest paste (5 MiB of base64url
/// `data`) plus room for the JSON around it. Reading stops as soon as an
/// answer passes it.
pub const MAX_ANSWER_BYTES: usize = 6 * 1024 * 1024;
/// Error answers are read this far at most (they carry one message).
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// How long discovery (`GET /api/v1/discovery`) may take: it is asked
/// before making a link, so a server that does not answer must not hold
/// the command up.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(2);

/// What a client's base URL serves, for the wording of its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Service {
    /// The paste API (`share`, `open` of share links, `paste`).
    Paste,
    /// The review API (`review …`, `open` of review links).
    Review,
}

/// What the paste server's discovery answered.
#[derive(Debug)]
pub enum Discovered {
    /// A planshare server, with its answer.
    Planshare(api_types::Discovery),
    /// Something that is not a planshare server (404, not JSON, not
    /// planshare's answer): upstream's paste service, or another one.
    Other,
    /// No answer (why, without naming where): down, too slow, or failing.
    Unreachable(String),
}

/// A paste API at a base URL such as `http://localhost:19433`.
pub struct PasteClient {
    base: String,
    url: Url,
    http: reqwest::Client,
    /// What the base serves (error wording only).
    service: Service,
    /// Sent as `Authorization: Bearer` on creates and reads (and on deletes
    /// without a delete token), when set.
    api_key: Option<String>,
}

impl PasteClient {
    /// A client for `base`. Plain `http://` is accepted only for this machine
    /// (localhost, 127.0.0.0/8, ::1) unless `insecure` is set.
    pub fn new(base: &str, insecure: bool) -> Result<Self, CliError> {
        let url = Url::parse(base.trim_end_matches('/')).map_err(|e| {
            CliError::Input(format!(
                "invalid paste API URL {:?}: {e}",
                base.trim_end_matches('/')
            ))
        })?;
        // The parsed form: control characters of a link's `&paste=` are
        // percent-encoded, so messages that name the base print none.
        let base = url.as_str().trim_end_matches('/').to_owned();
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
            // A redirect would take the request to a host and scheme that
            // were never checked: it is reported, not followed.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("planshare/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Unavailable(format!("cannot set up HTTP: {e}")))?;
        Ok(PasteClient {
            base,
            url,
            http,
            service: Service::Paste,
            api_key: None,
        })
    }

    /// This client as the review API's: its errors speak of the review
    /// service.
    pub(crate) fn for_reviews(mut self) -> Self {
        self.service = Service::Review;
        self
    }

    /// `GET /api/v1/discovery`, once, without credentials, within
    /// [`DISCOVERY_TIMEOUT`].
    pub async fn discover(&self) -> Discovered {
        let url = format!("{}/api/v1/discovery", self.base);
        let sent = self
            .http
            .get(url)
            .header(header::ACCEPT, "application/json")
            .timeout(DISCOVERY_TIMEOUT)
            .send()
            .await;
        let answer = match sent {
            Ok(response) => match Answer::read(response, self).await {
                Ok(answer) => answer,
                Err(_) => return Discovered::Unreachable("its answer did not read".into()),
            },
            Err(e) => return Discovered::Unreachable(reason(&e).to_owned()),
        };
        let status = answer.status;
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Discovered::Unreachable(format!("it answered HTTP {}", status.as_u16()));
        }
        match serde_json::from_slice::<api_types::Discovery>(&answer.body) {
            Ok(found) if status == StatusCode::OK && found.service == "planshare" => {
                Discovered::Planshare(found)
            }
            _ => Discovered::Other,
        }
    }

    /// The error for a request that got no answer.
    pub(crate) fn unreachable(&self, error: &reqwest::Error) -> CliError {
        match self.service {
            Service::Paste => CliError::Unavailable(describe(error, &self.base)),
            Service::Review => review_unavailable(&self.base, reason(error)),
        }
    }

    /// Authenticates with `key` (a planshare tenant's API key) when this
    /// client's base is the paste API the key was configured for:
    /// `configured` (`--paste-url`, else `PLANNOTATOR_PASTE_URL`, else the
    /// default) has the same scheme, host and port. A paste API named by a
    /// link's `&paste=` is the link author's choice and never gets the key.
    pub fn with_api_key_for(mut self, key: Option<String>, configured: &str) -> Self {
        self.api_key = key
            .filter(|k| !k.is_empty())
            .filter(|_| same_origin(&self.url, configured));
        self
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `method <base><path>` with `bearer` (else the API key, when
    /// `api_key` is set) and an optional JSON body; the whole answer.
    /// `retry`: network errors, 429 and 5xx are retried as for pastes (only
    /// for requests that are safe to repeat).
    pub(crate) async fn send_json(
        &self,
        method: reqwest::Method,
        path: &str,
        bearer: Option<&str>,
        body: Option<String>,
        retry: bool,
    ) -> Result<Answer, CliError> {
        let url = format!("{}{path}", self.base);
        let build = || {
            let mut request = self.http.request(method.clone(), &url);
            request = match bearer {
                Some(token) => request.bearer_auth(token),
                None => self.with_key(request),
            };
            match &body {
                Some(body) => request
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(body.clone()),
                None => request,
            }
        };
        if retry {
            self.send_with_retries(build).await
        } else {
            match build().send().await {
                Ok(response) => Answer::read(response, self).await,
                Err(e) => Err(self.unreachable(&e)),
            }
        }
    }

    /// The generic error for an unexpected answer (see [`Self::failure`]).
    pub(crate) fn unexpected(answer: &Answer) -> CliError {
        Self::failure(answer, false)
    }

    /// `request` with the API key as its bearer, when there is one.
    fn with_key(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(api_key) => request.bearer_auth(api_key),
            None => request,
        }
    }

    /// `POST /api/paste`. Retried on network errors, 429, 5xx and a 409 for
    /// a create with the same `Idempotency-Key` still in progress, with the
    /// same `Idempotency-Key`, so a retry after a lost answer cannot store
    /// twice on a service that honours it.
    pub async fn create(&self, data: &str) -> Result<CreatePasteResponse, CliError> {
        let body = serde_json::json!({ "data": data }).to_string();
        let key = idempotency_key()?;
        let url = format!("{}/api/paste", self.base);
        let answer = self
            .send_with_retries(|| {
                self.with_key(
                    self.http
                        .post(&url)
                        .header(header::CONTENT_TYPE, "application/json")
                        .header("Idempotency-Key", &key)
                        .body(body.clone()),
                )
            })
            .await?;
        match answer.status {
            StatusCode::CREATED | StatusCode::OK => {
                serde_json::from_slice::<CreatePasteResponse>(&answer.body)
                    .map_err(|e| CliError::Service(format!("unreadable create response: {e}")))
            }
            StatusCode::PAYLOAD_TOO_LARGE => Err(CliError::TooLarge(
                answer
                    .message()
                    .unwrap_or_else(|| "Share payload is too large".to_owned()),
            )),
            _ => Err(Self::failure(&answer, self.api_key.is_some())),
        }
    }

    /// `GET /api/paste/{id}` → the stored `data`.
    pub async fn get(&self, id: &str) -> Result<String, CliError> {
        let url = format!("{}/api/paste/{id}", self.base);
        let answer = self
            .send_with_retries(|| self.with_key(self.http.get(&url)))
            .await?;
        match answer.status {
            StatusCode::OK => {
                let body: api_types::GetPasteResponse = serde_json::from_slice(&answer.body)
                    .map_err(|e| CliError::Service(format!("unreadable paste: {e}")))?;
                Ok(body.data)
            }
            StatusCode::NOT_FOUND => Err(CliError::NotFound),
            _ => Err(Self::failure(&answer, self.api_key.is_some())),
        }
    }

    /// `DELETE /api/paste/{id}`, authorised by the paste's delete token, or
    /// else by the API key.
    pub async fn delete(&self, id: &str, token: Option<&str>) -> Result<(), CliError> {
        let url = format!("{}/api/paste/{id}", self.base);
        let bearer = match (token, &self.api_key) {
            (Some(token), _) => token,
            (None, Some(api_key)) => api_key.as_str(),
            (None, None) => {
                return Err(CliError::Usage(
                    "paste delete needs --token (or PLANSHARE_API_KEY of the paste's tenant)"
                        .into(),
                ));
            }
        };
        let answer = self
            .send_with_retries(|| self.http.delete(&url).bearer_auth(bearer))
            .await?;
        match answer.status {
            StatusCode::NO_CONTENT | StatusCode::OK => Ok(()),
            StatusCode::NOT_FOUND => Err(CliError::NotFound),
            _ => Err(Self::failure(&answer, token.is_none())),
        }
    }

    /// The error for an answer that is none of the expected ones;
    /// `key_sent`: the request carried the API key.
    fn failure(answer: &Answer, key_sent: bool) -> CliError {
        let status = answer.status;
        let message = answer.message().unwrap_or_default();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return CliError::Unauthorized(if key_sent {
                format!(
                    "the paste service refused PLANSHARE_API_KEY (HTTP {}{})",
                    status.as_u16(),
                    suffix(&message)
                )
            } else {
                message
            });
        }
        if status.is_redirection() {
            let location = answer
                .headers
                .get(header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default();
            return CliError::Service(format!(
                "HTTP {} redirect to {:?} not followed: give the paste API's own URL",
                status.as_u16(),
                clip(&location, 200)
            ));
        }
        if answer.is_in_progress() {
            return CliError::Unavailable(format!(
                "HTTP 409{}: the same create was still in progress after {MAX_ATTEMPTS} attempts",
                suffix(&message)
            ));
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            CliError::Unavailable(format!("HTTP {}{}", status.as_u16(), suffix(&message)))
        } else {
            CliError::Service(format!("HTTP {}{}", status.as_u16(), suffix(&message)))
        }
    }

    /// Sends the request built by `build`, retrying transient failures up to
    /// [`MAX_ATTEMPTS`] times; returns the last answer otherwise.
    async fn send_with_retries(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Answer, CliError> {
        let mut attempt = 1;
        loop {
            let last = attempt >= MAX_ATTEMPTS;
            let wait = match build().send().await {
                Ok(response) if !last && is_transient(response.status()) => {
                    retry_after(response.headers())
                }
                Ok(response) => {
                    let answer = Answer::read(response, self).await?;
                    if last || !answer.is_in_progress() {
                        return Ok(answer);
                    }
                    retry_after(&answer.headers)
                }
                Err(e) if last => return Err(self.unreachable(&e)),
                Err(_) => None,
            };
            let wait = match wait {
                Some(w) if w > MAX_RETRY_AFTER => {
                    let wait = format!("asked to retry after {} s", w.as_secs());
                    return Err(match self.service {
                        Service::Paste => CliError::Unavailable(format!("{} {wait}", self.base)),
                        Service::Review => review_unavailable(&self.base, &format!("it {wait}")),
                    });
                }
                Some(w) => w,
                None => backoff(attempt),
            };
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

/// A whole answer: status, headers and a bounded body.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// Reads `response` in chunks: a success up to [`MAX_ANSWER_BYTES`] (past
    /// it, an error, and nothing more is read), anything else up to
    /// [`MAX_ERROR_BYTES`] (past it, or when it breaks off, without a body).
    pub(crate) async fn read(
        mut response: Response,
        client: &PasteClient,
    ) -> Result<Answer, CliError> {
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let success = status.is_success();
        let cap = if success {
            MAX_ANSWER_BYTES
        } else {
            MAX_ERROR_BYTES
        };
        let service = match client.service {
            Service::Paste => "paste",
            Service::Review => "review",
        };
        let too_large = || {
            CliError::TooLarge(format!(
                "the {service} service's answer is larger than {} MiB, the most planshare reads",
                MAX_ANSWER_BYTES / (1024 * 1024)
            ))
        };
        let announced = response.content_length().unwrap_or(0);
        let mut body = Vec::new();
        if announced > cap as u64 {
            return if success {
                Err(too_large())
            } else {
                Ok(Answer {
                    status,
                    headers,
                    body,
                })
            };
        }
        loop {
            match response.chunk().await {
                Ok(None) => break,
                Ok(Some(chunk)) if body.len() + chunk.len() <= cap => {
                    body.extend_from_slice(&chunk);
                }
                Ok(Some(_)) if success => return Err(too_large()),
                Err(e) if success => return Err(client.unreachable(&e)),
                Ok(Some(_)) | Err(_) => {
                    body.clear();
                    break;
                }
            }
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// An answer made up by a test.
    #[cfg(test)]
    pub(crate) fn for_tests(status: StatusCode, body: &str) -> Answer {
        Answer {
            status,
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// The `error` of a JSON error body, control characters escaped.
    pub(crate) fn message(&self) -> Option<String> {
        let body: api_types::ErrorBody = serde_json::from_slice(&self.body).ok()?;
        Some(printable(&body.error))
    }

    /// A 409 saying a create with the same `Idempotency-Key` is still running.
    /// The `code` of a JSON error body.
    pub(crate) fn code(&self) -> Option<String> {
        serde_json::from_slice::<api_types::ErrorBody>(&self.body)
            .ok()
            .and_then(|b| b.code)
    }

    fn is_in_progress(&self) -> bool {
        self.status == StatusCode::CONFLICT
            && serde_json::from_slice::<api_types::ErrorBody>(&self.body)
                .is_ok_and(|b| b.error_code() == Some(api_types::ErrorCode::IdempotencyInProgress))
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

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?;
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

/// Whether `other` names the same paste API as `url`: the same scheme, host
/// and port (the default port of the scheme when none is written).
fn same_origin(url: &Url, other: &str) -> bool {
    Url::parse(other.trim_end_matches('/')).is_ok_and(|other| {
        matches!(url.scheme(), "http" | "https") && url.origin() == other.origin()
    })
}

/// Server text made safe for a terminal: control characters and invisible
/// formatting characters ([`is_invisible_format`]: bidi overrides,
/// zero-width spaces, …) escaped (`\u{1b}`, `\n`, `\u{202e}`, …),
/// everything else as it is.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || is_invisible_format(c) {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// At most `max` characters of `text`, with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
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

/// The review API at `base` could not be used: `why`.
pub(crate) fn review_unavailable(base: &str, why: &str) -> CliError {
    CliError::ReviewUnavailable(format!("{base} unavailable: {why}"))
}

/// What went wrong with a request that got no answer, without naming where.
fn reason(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "it did not answer in time"
    } else if untrusted_certificate(error) {
        UNTRUSTED
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "the request failed"
    }
}

/// What to say when the server's certificate is not trusted: the usual
/// cause on a team instance is a private CA or a self-signed certificate,
/// which `SSL_CERT_FILE` makes trusted without turning checks off.
const UNTRUSTED: &str = "its TLS certificate is not trusted here; for a private CA or a self-signed \
     certificate, set SSL_CERT_FILE to a PEM file holding it";

/// Whether the connection failed because the server's certificate did not
/// verify (rustls says "invalid peer certificate: …" somewhere down the
/// error's sources).
fn untrusted_certificate(error: &reqwest::Error) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        if certificate_refused(&e.to_string()) {
            return true;
        }
        source = e.source();
    }
    false
}

fn certificate_refused(message: &str) -> bool {
    message.contains("invalid peer certificate")
}

/// A one-line description of a transport failure talking to `base`.
pub(crate) fn describe(error: &reqwest::Error, base: &str) -> String {
    if error.is_timeout() {
        format!("{base} did not answer in time")
    } else if untrusted_certificate(error) {
        format!("{base}: {UNTRUSTED}")
    } else if error.is_connect() {
        format!("cannot connect to {base}")
    } else {
        format!("request to {base} failed")
    }
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
    fn rustls_certificate_refusals_are_told_from_other_connect_failures() {
        assert!(certificate_refused(
            "invalid peer certificate: UnknownIssuer"
        ));
        assert!(certificate_refused(
            "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))"
        ));
        assert!(!certificate_refused("Connection refused (os error 111)"));
        assert!(!certificate_refused("dns error: failed to lookup address"));
    }

    #[test]
    fn the_api_key_goes_only_to_the_configured_origin() {
        let key = || Some("pst_live_k".to_owned());
        let keyed = |base: &str, configured: &str| {
            PasteClient::new(base, false)
                .unwrap()
                .with_api_key_for(key(), configured)
                .api_key
                .is_some()
        };
        assert!(keyed("http://127.0.0.1:9000", "http://127.0.0.1:9000/"));
        assert!(keyed(
            "http://127.0.0.1:9000/other/path",
            "http://127.0.0.1:9000"
        ));
        assert!(keyed("https://paste.example", "https://PASTE.example:443"));
        assert!(!keyed("http://127.0.0.1:9001", "http://127.0.0.1:9000"));
        assert!(!keyed("http://127.0.0.2:9000", "http://127.0.0.1:9000"));
        assert!(!keyed("http://localhost:9000", "http://127.0.0.1:9000"));
        assert!(!keyed("https://127.0.0.1:9000", "http://127.0.0.1:9000"));
        assert!(!keyed("http://127.0.0.1:9000", "not a url"));
    }

    #[test]
    fn server_text_reaches_the_terminal_escaped() {
        assert_eq!(
            printable("Payload too large (max 5 MB)"),
            "Payload too large (max 5 MB)"
        );
        assert_eq!(printable("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\nc");
        assert_eq!(
            printable("x\u{202e}y\u{200b}z\u{9b}"),
            "x\\u{202e}y\\u{200b}z\\u{9b}"
        );
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        // A link's `&paste=` URL is kept in its parsed form.
        let client = PasteClient::new("http://127.0.0.1:1/\u{1b}[31m", false).unwrap();
        assert_eq!(client.base(), "http://127.0.0.1:1/%1B[31m");
    }
}
