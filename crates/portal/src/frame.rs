//! `/frame`: the document a raw-HTML plan is shown in.
//!
//! The portal page puts it in an `<iframe sandbox="allow-scripts">` (no
//! `allow-same-origin`, so it runs in an opaque origin: nothing of the
//! portal's origin — storage, cookies, the page and the link's key — is
//! reachable; no forms, popups, modals or top navigation). A frame given
//! the HTML with `srcdoc` would inherit the page's CSP, which blocks the
//! document's own `<style>`; this document has a CSP of its own instead:
//!
//! - `style-src 'unsafe-inline'`, `img-src data:`, `font-src data:`: the
//!   plan's inline CSS and embedded images show;
//! - `script-src 'self'`: only the loader (`web/frame.js`) runs — the plan's
//!   scripts are never executed (parsed inert, removed, and blocked again
//!   here), inline handlers and `javascript:` URLs are blocked;
//! - `default-src 'none'` (so no `connect-src`, `frame-src`, `media-src`…),
//!   `form-action 'none'`, `base-uri 'none'`: nothing is fetched or sent
//!   anywhere, not even to this origin;
//! - `sandbox allow-scripts`: opaque origin even if the document is
//!   opened on its own;
//! - `frame-ancestors 'self'`: only the portal frames it;
//! - Trusted Types: only the loader's policy creates HTML.
//!
//! The document itself is fixed (no plan content ever reaches the server):
//! the loader asks the parent page for the HTML with `postMessage`, shows
//! it and reports its height, so the frame fits the document.

use std::sync::OnceLock;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::assets;

/// The frame document's Content-Security-Policy.
pub(crate) const FRAME_CSP: &str = "default-src 'none'; script-src 'self'; \
     style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts; \
     require-trusted-types-for 'script'; trusted-types planshare-frame";

/// The loader's content-hashed path (`/assets/frame.<hash>.js`).
fn loader_path() -> Option<&'static str> {
    assets::ASSETS.iter().map(|a| a.path).find(|p| {
        p.strip_prefix("/assets/frame.")
            .and_then(|rest| rest.strip_suffix(".js"))
            .is_some_and(|hash| hash.len() == 10 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// The frame document: nothing but the loader.
fn document() -> Option<&'static str> {
    static DOCUMENT: OnceLock<Option<String>> = OnceLock::new();
    DOCUMENT
        .get_or_init(|| {
            loader_path().map(|loader| {
                format!(
                    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
                     <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                     <title>Shared HTML plan</title><script src=\"{loader}\"></script>\
                     </head><body></body></html>\n"
                )
            })
        })
        .as_deref()
}

/// `GET /frame`.
pub(crate) async fn frame() -> Response {
    let mut response = match document() {
        Some(html) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            html,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(FRAME_CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Ignored in a frame; there for the document opened on its own.
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert("x-dns-prefetch-control", HeaderValue::from_static("off"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_document_loads_the_embedded_loader() {
        let loader = loader_path().unwrap();
        assert!(assets::find(loader).is_some_and(|a| a.immutable));
        let html = document().unwrap();
        assert!(html.contains(&format!("<script src=\"{loader}\"></script>")));
    }

    #[test]
    fn the_frame_csp_allows_inline_css_and_nothing_that_reaches_out() {
        for directive in [
            "default-src 'none'",
            "script-src 'self';",
            "style-src 'unsafe-inline'",
            "img-src data:;",
            "form-action 'none'",
            "base-uri 'none'",
            "frame-ancestors 'self'",
            "sandbox allow-scripts;",
            "require-trusted-types-for 'script'",
        ] {
            assert!(FRAME_CSP.contains(directive), "{directive}");
        }
        for absent in [
            "allow-same-origin",
            "allow-top-navigation",
            "allow-popups",
            "allow-forms",
            "connect-src",
            "unsafe-eval",
            "script-src 'unsafe-inline'",
        ] {
            assert!(!FRAME_CSP.contains(absent), "{absent}");
        }
    }
}
