//! CORS with upstream's semantics: the request's `Origin` is echoed when it is
//! allowed, `http(s)://localhost[:port]` is always allowed, `*` in the list
//! allows any origin (still echoed, and an empty value when no `Origin` was
//! sent). A disallowed origin gets no CORS headers but the request still runs:
//! enforcement is the browser's. planshare adds `Vary: Origin`.

use http::HeaderValue;

/// Which origins may read responses.
#[derive(Clone, Debug)]
pub(crate) struct CorsPolicy {
    origins: Vec<String>,
    any: bool,
}

impl CorsPolicy {
    pub(crate) fn new(origins: &[String]) -> Self {
        CorsPolicy {
            any: origins.iter().any(|o| o == "*"),
            origins: origins.to_vec(),
        }
    }

    /// The `Access-Control-Allow-Origin` value for a request with `origin`, or
    /// `None` when no CORS headers are to be sent.
    pub(crate) fn allow_origin(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        match origin {
            None => self.any.then(|| HeaderValue::from_static("")),
            Some(value) => {
                let text = value.to_str().ok()?;
                let allowed =
                    self.any || is_localhost(text) || self.origins.iter().any(|o| o == text);
                allowed.then(|| value.clone())
            }
        }
    }
}

/// `^https?://localhost(:\d+)?$`
fn is_localhost(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://localhost")
        .or_else(|| origin.strip_prefix("https://localhost"));
    match rest {
        Some("") => true,
        Some(port) => port
            .strip_prefix(':')
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(policy: &CorsPolicy, origin: &str) -> Option<String> {
        policy
            .allow_origin(Some(&HeaderValue::from_str(origin).unwrap()))
            .map(|v| v.to_str().unwrap().to_owned())
    }

    #[test]
    fn exact_origins_and_any_localhost_port_are_allowed() {
        let p = CorsPolicy::new(&["https://plans.example.com".into()]);
        assert_eq!(
            allow(&p, "https://plans.example.com").as_deref(),
            Some("https://plans.example.com")
        );
        for ok in [
            "http://localhost",
            "http://localhost:5173",
            "https://localhost:1",
        ] {
            assert_eq!(allow(&p, ok).as_deref(), Some(ok));
        }
        for no in [
            "https://plans.example.com/",
            "HTTPS://PLANS.EXAMPLE.COM",
            "https://plans.example.com.evil.com",
            "http://127.0.0.1:3000",
            "http://localhost:",
            "http://localhost:80a",
            "http://localhost.evil.com",
            "null",
        ] {
            assert_eq!(allow(&p, no), None, "{no}");
        }
        assert_eq!(p.allow_origin(None), None);
    }

    #[test]
    fn a_wildcard_echoes_the_origin_and_sends_empty_without_one() {
        let p = CorsPolicy::new(&["*".into()]);
        assert_eq!(
            allow(&p, "https://x.example").as_deref(),
            Some("https://x.example")
        );
        assert_eq!(p.allow_origin(None), Some(HeaderValue::from_static("")));
    }
}
