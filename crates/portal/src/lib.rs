//! The share portal: the static web app a person opens from a share link
//! (`web/`), embedded into the binary by `build.rs` under content-hashed
//! names with gzip and brotli variants, and [`router`], which serves it:
//!
//! | path | answer | cache |
//! |---|---|---|
//! | `/`, `/p/{id}`, `/r/{id}` | `index.html` (the app reads the path and fragment) | `no-cache` + `ETag` |
//! | `/assets/<name>.<hash>.<ext>` | the asset | `immutable`, one year |
//! | `/config.json` | [`PortalConfig`] as the app reads it | `no-cache` |
//! | `/frame` | the sandboxed document raw-HTML plans are shown in (a CSP of its own, see `frame.rs`) | `no-cache` |
//!
//! Every answer carries a strict CSP (scripts and styles only from this
//! origin, no inline code, `connect-src` limited to this origin and the
//! configured paste APIs, Trusted Types required, `frame-ancestors`,
//! `base-uri`, `object-src`, `form-action` all `'none'`),
//! `Referrer-Policy: no-referrer`, `X-Content-Type-Options: nosniff` and
//! `Cross-Origin-Opener-Policy: same-origin`.
//!
//! [`router`] serves these routes alone ([`standalone::router`] adds the
//! SPA fallback of the `planshare-portal` binary); [`mount`] puts them in
//! front of the paste API on the same origin without changing what API
//! clients see:
//! `/`, `/p/{id}` and `/r/{id}` answer the app only to browser navigations (`Accept`
//! naming `text/html`), and everything else the portal does not serve —
//! other methods, other paths, non-HTML requests — goes to the API, so
//! upstream's generic 404 for `GET /` stays as it was.

mod assets;
mod frame;
pub mod standalone;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use serde::{Deserialize, Serialize};
use tower::ServiceExt as _;

/// `[portal]`: what the portal is told at `/config.json` (a self-hoster
/// changes it without rebuilding).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PortalConfig {
    /// Whether `planshare-server` serves the portal at all.
    pub enabled: bool,
    /// The paste API short links are created with and read from; empty:
    /// this origin.
    pub paste_api_url: String,
    /// Other paste APIs a link may name with `&paste=` (exact origins);
    /// anything else is refused by the app and by `connect-src`.
    pub allowed_paste_apis: Vec<String>,
    /// Base of new share links; empty: this origin.
    pub share_base_url: String,
    /// Origins a bot callback link (`cb=` in the link) may POST to: the
    /// page's Approve and Send feedback buttons reach only these (they are
    /// added to `connect-src`); a link naming another is told so.
    pub callback_origins: Vec<String>,
    /// Test builds only (feature `test-hooks`): `/config.json` tells the
    /// app to skip its HTML sanitiser, so a browser test can show that the CSP alone
    /// stops script. Set only by test code: never read from a file or the
    /// environment, and absent from a build without the feature.
    #[cfg(feature = "test-hooks")]
    #[serde(skip)]
    pub disable_sanitizer_for_tests: bool,
}

impl Default for PortalConfig {
    fn default() -> Self {
        PortalConfig {
            enabled: true,
            paste_api_url: String::new(),
            allowed_paste_apis: Vec::new(),
            share_base_url: String::new(),
            callback_origins: Vec::new(),
            #[cfg(feature = "test-hooks")]
            disable_sanitizer_for_tests: false,
        }
    }
}

impl PortalConfig {
    /// Checks that every URL is an `http(s)://host[:port]` origin (a path
    /// is allowed on the paste API URL).
    pub fn validate(&self) -> Result<(), String> {
        for (name, url) in std::iter::once(("portal.paste_api_url", &self.paste_api_url))
            .chain(std::iter::once((
                "portal.share_base_url",
                &self.share_base_url,
            )))
            .chain(
                self.allowed_paste_apis
                    .iter()
                    .map(|u| ("portal.allowed_paste_apis", u)),
            )
            .chain(
                self.callback_origins
                    .iter()
                    .map(|u| ("portal.callback_origins", u)),
            )
        {
            if !url.is_empty() && origin_of(url).is_none() {
                return Err(format!(
                    "{name}: {url:?} is not an http(s) URL such as https://paste.example.com"
                ));
            }
        }
        Ok(())
    }
}

/// `scheme://host[:port]` of an http(s) URL, without path.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next()?;
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    valid.then(|| format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// What the portal's handlers share.
#[derive(Clone)]
struct Portal {
    config_json: &'static str,
    csp: HeaderValue,
}

/// The portal's routes (see the crate docs); no fallback.
///
/// # Errors
/// A [`PortalConfig`] that fails [`PortalConfig::validate`].
pub fn router(config: &PortalConfig) -> Result<Router, String> {
    config.validate()?;
    let mut connect = vec!["'self'".to_owned()];
    for url in std::iter::once(&config.paste_api_url)
        .chain(&config.allowed_paste_apis)
        .chain(&config.callback_origins)
    {
        if let Some(origin) = origin_of(url)
            && !connect.contains(&origin)
        {
            connect.push(origin);
        }
    }
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
         connect-src {}; frame-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'; object-src 'none'; require-trusted-types-for 'script'; \
         trusted-types planshare dompurify",
        connect.join(" ")
    );
    let body = serde_json::json!({
        "pasteApiUrl": config.paste_api_url,
        "allowedPasteApis": config.allowed_paste_apis,
        "shareBaseUrl": config.share_base_url,
        "callbackOrigins": config
            .callback_origins
            .iter()
            .filter_map(|u| origin_of(u))
            .collect::<Vec<_>>(),
    });
    #[cfg(feature = "test-hooks")]
    let body = {
        let mut body = body;
        if config.disable_sanitizer_for_tests {
            body["testHooks"] = serde_json::json!({ "disableSanitizer": true });
        }
        body
    };
    let portal = Portal {
        // Built once per router, kept for the process's life.
        config_json: Box::leak(body.to_string().into_boxed_str()),
        csp: HeaderValue::from_str(&csp).map_err(|e| format!("portal CSP: {e}"))?,
    };
    Ok(Router::new()
        .route("/", get(index))
        .route("/p/{id}", get(index))
        .route("/r/{id}", get(index))
        .route("/assets/{file}", get(asset))
        .route("/config.json", get(config_json))
        .route("/frame", get(frame::frame))
        .route("/favicon.ico", get(favicon))
        .with_state(portal))
}

/// The portal in front of `api` (see the crate docs).
///
/// # Errors
/// A [`PortalConfig`] that fails [`PortalConfig::validate`].
pub fn mount(config: &PortalConfig, api: Router) -> Result<Router, String> {
    let portal = router(config)?;
    let front = Front {
        portal,
        api: api.clone(),
    };
    Ok(Router::new()
        .route("/", any(navigation))
        .route("/p/{id}", any(navigation))
        .route("/r/{id}", any(navigation))
        .route("/assets/{file}", any(static_file))
        .route("/config.json", any(static_file))
        .route("/frame", any(static_file))
        .route("/favicon.ico", any(static_file))
        .with_state(front)
        .fallback_service(api))
}

/// The two routers [`mount`] chooses between.
#[derive(Clone)]
struct Front {
    portal: Router,
    api: Router,
}

/// Whether a request is a browser navigation (`GET`/`HEAD` accepting HTML).
fn is_navigation(request: &Request) -> bool {
    let method = request.method();
    (method == http::Method::GET || method == http::Method::HEAD)
        && request
            .headers()
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.to_ascii_lowercase().contains("text/html"))
}

async fn navigation(State(front): State<Front>, request: Request) -> Response {
    let target = if is_navigation(&request) {
        front.portal
    } else {
        front.api
    };
    let mut response = forward(target, request).await;
    response
        .headers_mut()
        .append(header::VARY, HeaderValue::from_static("Accept"));
    response
}

async fn static_file(State(front): State<Front>, request: Request) -> Response {
    let method = request.method();
    let target = if method == http::Method::GET || method == http::Method::HEAD {
        front.portal
    } else {
        front.api
    };
    forward(target, request).await
}

async fn forward(router: Router, request: Request) -> Response {
    match router.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

async fn index(State(portal): State<Portal>, headers: HeaderMap) -> Response {
    match assets::find("/") {
        Some(asset) => secured(&portal, assets::respond(asset, &headers)),
        None => secured(&portal, StatusCode::NOT_FOUND.into_response()),
    }
}

async fn asset(State(portal): State<Portal>, uri: Uri, headers: HeaderMap) -> Response {
    let response = match assets::find(uri.path()) {
        Some(asset) if asset.immutable => assets::respond(asset, &headers),
        _ => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "not found",
        )
            .into_response(),
    };
    secured(&portal, response)
}

/// `/favicon.ico`, where browsers look without being told: the portal's
/// icon (an SVG, which browsers take whatever the name says).
async fn favicon(State(portal): State<Portal>, headers: HeaderMap) -> Response {
    let icon = assets::ASSETS
        .iter()
        .find(|a| a.path.starts_with("/assets/favicon.") && a.path.ends_with(".svg"));
    match icon {
        Some(asset) => secured(&portal, assets::respond(asset, &headers)),
        None => secured(&portal, StatusCode::NOT_FOUND.into_response()),
    }
}

async fn config_json(State(portal): State<Portal>) -> Response {
    let response = (
        [
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        portal.config_json,
    )
        .into_response();
    secured(&portal, response)
}

/// The headers every portal answer carries.
fn secured(portal: &Portal, mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, portal.csp.clone());
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        assert_eq!(
            origin_of("https://Paste.Example.com/api").as_deref(),
            Some("https://paste.example.com")
        );
        assert_eq!(
            origin_of("http://127.0.0.1:19433").as_deref(),
            Some("http://127.0.0.1:19433")
        );
        for bad in [
            "ftp://x",
            "javascript:alert(1)",
            "https://",
            "x",
            "https://a b",
        ] {
            assert_eq!(origin_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn invalid_urls_are_refused_with_the_setting_named() {
        let config = PortalConfig {
            allowed_paste_apis: vec!["javascript:alert(1)".into()],
            ..PortalConfig::default()
        };
        assert!(
            config
                .validate()
                .unwrap_err()
                .contains("portal.allowed_paste_apis")
        );
        assert!(PortalConfig::default().validate().is_ok());
    }

    #[cfg(feature = "test-hooks")]
    #[tokio::test]
    async fn the_sanitizer_switch_reaches_config_json_only_when_set() {
        use http_body_util::BodyExt as _;
        async fn served_config(config: &PortalConfig) -> serde_json::Value {
            let request = Request::get("/config.json")
                .body(axum::body::Body::empty())
                .unwrap();
            let response = router(config).unwrap().oneshot(request).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            serde_json::from_slice(&body).unwrap()
        }
        let on = PortalConfig {
            disable_sanitizer_for_tests: true,
            ..PortalConfig::default()
        };
        assert_eq!(
            served_config(&on).await["testHooks"],
            serde_json::json!({ "disableSanitizer": true })
        );
        assert!(
            served_config(&PortalConfig::default())
                .await
                .get("testHooks")
                .is_none()
        );
        // Never (de)serialised: no configuration file can turn it on.
        assert!(
            serde_json::from_str::<PortalConfig>(r#"{"disable_sanitizer_for_tests":true}"#)
                .is_err()
        );
        assert!(
            serde_json::to_value(&on)
                .unwrap()
                .get("disable_sanitizer_for_tests")
                .is_none()
        );
    }
}
