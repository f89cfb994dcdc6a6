//! Where new links open (the portal base), and whether the paste service
//! has a review API: `--share-url`, else `PLANNOTATOR_SHARE_URL`, else what
//! the paste server's discovery (`GET /api/v1/discovery`) names.
//!
//! The paste server is asked once per command, with a short timeout, and
//! only when neither names a portal and the paste API is not upstream's
//! hosted one. Nothing is cached.
//!
//! | discovery answers | `share` | `review start` |
//! |---|---|---|
//! | planshare, `portal` a URL | that URL | that URL |
//! | planshare, `portal: ""` (same origin) | the paste API's origin | the paste API's origin |
//! | planshare, `portal: null` (none) | upstream's portal, with a warning | the paste API's origin, with a warning |
//! | not planshare (404, not JSON: upstream's paste service) | upstream's portal | "no review API" |
//! | no answer (down, too slow) | upstream's portal, with a warning | "review service … unavailable" |

use reqwest::Url;

use crate::client::{Discovered, PasteClient, printable, review_unavailable};
use crate::env::{DEFAULT_PASTE_URL, DEFAULT_SHARE_URL, Env};
use crate::error::CliError;
use crate::terminal::safe_text;

/// What a command makes links for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// `share`: plain share links, which upstream's portal opens too.
    Share,
    /// `review start`: review links, which only a planshare portal opens,
    /// for a review only a planshare server keeps.
    Review,
}

/// The portal base for new links: `flag` (`--share-url`), else
/// `PLANNOTATOR_SHARE_URL`, else discovery's answer from `client` (the
/// configured paste API; `None` when it could not be set up, for `share`
/// only). For [`Purpose::Review`] it also refuses a paste service that has
/// no review API.
pub async fn portal_base(
    flag: Option<&str>,
    env: &Env,
    paste_api: &str,
    client: Option<&PasteClient>,
    purpose: Purpose,
) -> Result<String, CliError> {
    let named = flag
        .map(str::to_owned)
        .or_else(|| env.share_url())
        .filter(|s| !s.is_empty());
    let upstream = is_upstream(paste_api);
    if purpose == Purpose::Review && upstream {
        // Upstream's hosted paste service has no review API: say so rather
        // than send it a request it answers with its generic 404.
        return Err(CliError::NoReviewApi(printable(
            paste_api.trim_end_matches('/'),
        )));
    }
    if let Some(named) = named {
        return Ok(named);
    }
    let Some(client) = client.filter(|_| !upstream) else {
        return Ok(DEFAULT_SHARE_URL.to_owned());
    };
    let found = client.discover().await;
    decide(found, client.base(), purpose)
}

/// The portal base for what discovery found at `base` (see the module's
/// table); warnings go to stderr.
fn decide(found: Discovered, base: &str, purpose: Purpose) -> Result<String, CliError> {
    let origin = origin(base);
    match (found, purpose) {
        (Discovered::Planshare(d), Purpose::Review) if !d.reviews => {
            Err(CliError::NoReviewApi(base.to_owned()))
        }
        (Discovered::Planshare(d), _) => match d.portal.as_deref().map(str::trim) {
            Some("") => Ok(origin),
            Some(url) if is_http_url(url) => Ok(url.trim_end_matches('/').to_owned()),
            Some(url) => {
                warn(&format!(
                    "the planshare server at {base} names a portal that is not an http(s) URL ({:?}); links open on {}",
                    safe_text(url),
                    fallback(purpose, &origin)
                ));
                Ok(fallback(purpose, &origin))
            }
            None => {
                let hint = match purpose {
                    Purpose::Share => "",
                    Purpose::Review => {
                        ": `planshare open` and `review watch` take them, but no browser page does"
                    }
                };
                warn(&format!(
                    "the planshare server at {base} serves no portal; links open on {}{hint} (set PLANNOTATOR_SHARE_URL to a planshare portal)",
                    fallback(purpose, &origin)
                ));
                Ok(fallback(purpose, &origin))
            }
        },
        (Discovered::Other, Purpose::Share) => Ok(DEFAULT_SHARE_URL.to_owned()),
        (Discovered::Other, Purpose::Review) => Err(CliError::NoReviewApi(base.to_owned())),
        (Discovered::Unreachable(why), Purpose::Share) => {
            warn(&format!(
                "could not ask the paste service at {base} where its portal is ({why}); links open on {DEFAULT_SHARE_URL} (set PLANNOTATOR_SHARE_URL to choose)"
            ));
            Ok(DEFAULT_SHARE_URL.to_owned())
        }
        (Discovered::Unreachable(why), Purpose::Review) => Err(review_unavailable(base, &why)),
    }
}

/// Where links open when the planshare server names no usable portal.
fn fallback(purpose: Purpose, origin: &str) -> String {
    match purpose {
        Purpose::Share => DEFAULT_SHARE_URL.to_owned(),
        Purpose::Review => origin.to_owned(),
    }
}

/// Whether `url` is upstream's hosted paste service (or its portal): same
/// scheme, host and port.
pub fn is_upstream(url: &str) -> bool {
    let Ok(url) = Url::parse(url.trim_end_matches('/')) else {
        return false;
    };
    [DEFAULT_PASTE_URL, DEFAULT_SHARE_URL]
        .iter()
        .filter_map(|u| Url::parse(u).ok())
        .any(|upstream| upstream.origin() == url.origin())
}

/// `scheme://host[:port]` of `base` (itself when it does not parse).
fn origin(base: &str) -> String {
    match Url::parse(base).map(|u| u.origin()) {
        Ok(origin @ url::Origin::Tuple(..)) => origin.ascii_serialization(),
        _ => base.to_owned(),
    }
}

fn is_http_url(url: &str) -> bool {
    Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
}

fn warn(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "planshare: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planshare(portal: Option<&str>, reviews: bool) -> Discovered {
        Discovered::Planshare(api_types::Discovery {
            service: "planshare".into(),
            version: "0.1.0".into(),
            api: "/api/v1".into(),
            reviews,
            portal: portal.map(str::to_owned),
        })
    }

    #[test]
    fn discovery_decides_the_portal() {
        let base = "http://127.0.0.1:19433";
        for purpose in [Purpose::Share, Purpose::Review] {
            assert_eq!(
                decide(planshare(Some(""), true), base, purpose).unwrap(),
                "http://127.0.0.1:19433"
            );
            assert_eq!(
                decide(
                    planshare(Some("https://share.example/"), true),
                    base,
                    purpose
                )
                .unwrap(),
                "https://share.example"
            );
        }
        // The API under a path: the portal is the origin.
        assert_eq!(
            decide(
                planshare(Some(""), true),
                "https://h.example/paste",
                Purpose::Share
            )
            .unwrap(),
            "https://h.example"
        );
        // No portal: upstream's for shares, the server's origin for reviews.
        assert_eq!(
            decide(planshare(None, true), base, Purpose::Share).unwrap(),
            DEFAULT_SHARE_URL
        );
        assert_eq!(
            decide(planshare(None, true), base, Purpose::Review).unwrap(),
            base
        );
        // Not planshare: upstream's portal for shares, no reviews.
        assert_eq!(
            decide(Discovered::Other, base, Purpose::Share).unwrap(),
            DEFAULT_SHARE_URL
        );
        assert!(matches!(
            decide(Discovered::Other, base, Purpose::Review),
            Err(CliError::NoReviewApi(_))
        ));
        assert!(matches!(
            decide(planshare(Some(""), false), base, Purpose::Review),
            Err(CliError::NoReviewApi(_))
        ));
        // No answer.
        assert_eq!(
            decide(Discovered::Unreachable("x".into()), base, Purpose::Share).unwrap(),
            DEFAULT_SHARE_URL
        );
        assert!(matches!(
            decide(Discovered::Unreachable("x".into()), base, Purpose::Review),
            Err(CliError::ReviewUnavailable(_))
        ));
    }

    #[test]
    fn upstream_is_told_by_origin() {
        assert!(is_upstream(DEFAULT_PASTE_URL));
        assert!(is_upstream(&format!("{DEFAULT_PASTE_URL}/")));
        assert!(is_upstream("https://share.plannotator.ai"));
        assert!(!is_upstream("http://localhost:19433"));
        assert!(!is_upstream("https://paste.example"));
        assert!(!is_upstream("not a url"));
    }

    #[tokio::test]
    async fn a_named_portal_wins_and_upstream_has_no_reviews() {
        let env = Env::from_vars(&[("PLANNOTATOR_SHARE_URL", "https://mine.example")], None);
        // No client: nothing is asked.
        assert_eq!(
            portal_base(None, &env, "http://127.0.0.1:1", None, Purpose::Share)
                .await
                .unwrap(),
            "https://mine.example"
        );
        assert_eq!(
            portal_base(
                Some("https://flag.example"),
                &env,
                "http://127.0.0.1:1",
                None,
                Purpose::Review
            )
            .await
            .unwrap(),
            "https://flag.example"
        );
        let bare = Env::from_vars(&[], None);
        assert_eq!(
            portal_base(None, &bare, DEFAULT_PASTE_URL, None, Purpose::Share)
                .await
                .unwrap(),
            DEFAULT_SHARE_URL
        );
        let refused = portal_base(None, &env, DEFAULT_PASTE_URL, None, Purpose::Review)
            .await
            .unwrap_err();
        assert_eq!(refused.exit_code(), 18);
        assert!(
            refused.to_string().contains(
                "has no review API: reviews need a planshare server; set PLANNOTATOR_PASTE_URL to one (e.g. http://localhost:19433)"
            ),
            "{refused}"
        );
    }
}
