//! The portal on its own origin, without the paste API (the
//! `planshare-portal` binary): static hosting in the style of
//! share.plannotator.ai, i.e. [`crate::router`] plus an SPA fallback.
//!
//! | request | answer |
//! |---|---|
//! | `GET`/`HEAD` `/`, `/p/{id}` (any `Accept`) | `index.html` |
//! | `GET`/`HEAD` any other path whose last segment has no `.` | `index.html` (the app shows "open a share link") |
//! | `/assets/…` not embedded, or another path naming a file | `404` |
//! | any other method | `405` with `Allow: GET, HEAD` |
//!
//! Every answer, the `404` and `405` included, carries the portal's
//! security headers.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, Uri, header};

use crate::{PortalConfig, assets, forward};

/// The standalone portal's routes (see the module docs).
///
/// # Errors
/// A [`PortalConfig`] that fails [`PortalConfig::validate`].
pub fn router(config: &PortalConfig) -> Result<Router, String> {
    let portal = crate::router(config)?;
    let inner = portal.clone();
    let spa = move |request: Request| fallback(inner.clone(), request);
    Ok(portal
        .method_not_allowed_fallback(spa.clone())
        .fallback(spa))
}

/// Whether `path` names a file (an asset, `favicon.ico`, …) rather than a
/// page of the app.
fn names_a_file(path: &str) -> bool {
    path.starts_with("/assets/") || path.rsplit('/').next().is_some_and(|s| s.contains('.'))
}

async fn fallback(portal: Router, request: Request) -> Response {
    let reading = matches!(*request.method(), Method::GET | Method::HEAD);
    if reading && !names_a_file(request.uri().path()) {
        let (mut parts, body) = request.into_parts();
        parts.uri = Uri::from_static("/");
        return forward(portal, Request::from_parts(parts, body)).await;
    }
    // The portal's own 404 carries its headers.
    let probe = Request::get("/assets/-")
        .body(Body::empty())
        .unwrap_or_default();
    let not_found = forward(portal, probe).await;
    if reading {
        return not_found;
    }
    let mut response = Response::new(Body::from("method not allowed"));
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    let headers = response.headers_mut();
    for (name, value) in not_found.headers() {
        if name != header::CONTENT_LENGTH {
            headers.insert(name, value.clone());
        }
    }
    headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    response
}

/// One embedded file and its sizes in bytes, as shipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssetSize {
    /// The path it is served at (`/` is `index.html`).
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Uncompressed.
    pub raw: usize,
    /// The gzip variant.
    pub gzip: usize,
    /// The brotli variant.
    pub brotli: usize,
}

impl AssetSize {
    /// Whether it is script or a stylesheet (what a browser downloads to
    /// run the app, besides `index.html`).
    #[must_use]
    pub fn is_js_or_css(&self) -> bool {
        self.content_type.starts_with("text/javascript")
            || self.content_type.starts_with("text/css")
    }
}

/// Every embedded file with its sizes, in serving order.
#[must_use]
pub fn asset_sizes() -> Vec<AssetSize> {
    assets::ASSETS
        .iter()
        .map(|a| AssetSize {
            path: a.path,
            content_type: a.content_type,
            raw: a.raw.len(),
            gzip: a.gzip.len(),
            brotli: a.brotli.len(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn pages_and_files_are_told_apart() {
        for page in ["/", "/p/AbCdEf12", "/p/", "/some/deep/path"] {
            assert!(!names_a_file(page), "{page}");
        }
        for file in [
            "/assets/app.js",
            "/assets/x",
            "/favicon.ico",
            "/a/robots.txt",
        ] {
            assert!(names_a_file(file), "{file}");
        }
    }

    #[tokio::test]
    async fn pages_get_the_app_files_404_and_other_methods_405_all_secured() {
        use tower::ServiceExt as _;
        let app = router(&PortalConfig::default()).unwrap();
        let call = |method: Method, path: &str| {
            let request = Request::builder()
                .method(method)
                .uri(path)
                .body(Body::empty())
                .unwrap();
            app.clone().oneshot(request)
        };
        for (method, path, status) in [
            (Method::GET, "/", StatusCode::OK),
            (Method::GET, "/p/AbCdEf12", StatusCode::OK),
            (Method::GET, "/deep/page", StatusCode::OK),
            (Method::HEAD, "/deep/page", StatusCode::OK),
            (Method::GET, "/frame", StatusCode::OK),
            (Method::GET, "/assets/nope.js", StatusCode::NOT_FOUND),
            (Method::GET, "/robots.txt", StatusCode::NOT_FOUND),
            (Method::POST, "/", StatusCode::METHOD_NOT_ALLOWED),
            (
                Method::DELETE,
                "/config.json",
                StatusCode::METHOD_NOT_ALLOWED,
            ),
            (Method::PUT, "/api/paste", StatusCode::METHOD_NOT_ALLOWED),
        ] {
            let response = call(method.clone(), path).await.unwrap();
            assert_eq!(response.status(), status, "{method} {path}");
            let headers = response.headers();
            assert!(
                headers.contains_key(header::CONTENT_SECURITY_POLICY),
                "{method} {path}"
            );
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            if status == StatusCode::OK && path != "/frame" {
                assert_eq!(
                    headers[header::CONTENT_TYPE],
                    "text/html; charset=utf-8",
                    "{path}"
                );
            }
            if status == StatusCode::METHOD_NOT_ALLOWED {
                assert_eq!(headers[header::ALLOW], "GET, HEAD");
            }
        }
    }

    #[test]
    fn sizes_cover_every_asset_and_compression_helps_scripts() {
        let sizes = asset_sizes();
        assert_eq!(sizes.len(), assets::ASSETS.len());
        let js: Vec<_> = sizes.iter().filter(|s| s.is_js_or_css()).collect();
        assert!(js.len() >= 4);
        for s in js {
            assert!(s.gzip < s.raw && s.brotli < s.raw, "{s:?}");
        }
    }
}
