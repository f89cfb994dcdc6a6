//! Live reviews: the digest of a version's plan and review links.
//!
//! - Digest: `base64url-no-pad(HMAC-SHA256(review key, utf8(plan)))`, 43
//!   characters; the server compares digests to tell an unchanged push
//!   without seeing the plan.
//! - Review link: `<base>/r/<id>#key=<43 chars>&t=<token>[&paste=<b64url(api)>]`.
//!   `key` is the review key (AES-256-GCM, the same one for every version,
//!   comment set and decision of the review), `t` the bearer token of the
//!   owner or of one reviewer, `paste` the review API when it is not the
//!   portal's own origin (encoded as short links encode it). Everything
//!   secret stays in the fragment, which browsers never send.

use std::fmt;

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

use crate::b64::encode_base64url;
use crate::crypto::ShareKey;
use crate::error::CodecError;
use crate::link::{decode_paste_api_param, encode_paste_api_param};

/// `base64url-no-pad(HMAC-SHA256(key, message))`: 43 characters.
pub fn hmac_sha256_b64url(key: &[u8], message: &[u8]) -> String {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(message);
    encode_base64url(&mac.finalize().into_bytes())
}

/// The digest of a version's plan (the markdown; for a raw-HTML share, the
/// document) under the review key.
pub fn plan_digest(key: &ShareKey, plan: &str) -> String {
    hmac_sha256_b64url(key.as_bytes(), plan.as_bytes())
}

/// A parsed review link. Its `Debug` form hides the key and the token.
#[derive(Clone, PartialEq, Eq)]
pub struct ReviewLink {
    /// Everything before `/r/<id>` (the portal base).
    pub base: String,
    /// The review id.
    pub id: String,
    /// The review key's text from `#key=`.
    pub key: String,
    /// The bearer token from `&t=`, when the link has one.
    pub token: Option<String>,
    /// The review API from `&paste=`, decoded; `None`: the portal's origin.
    pub api: Option<String>,
}

impl fmt::Debug for ReviewLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReviewLink")
            .field("base", &self.base)
            .field("id", &self.id)
            .field("key", &"<redacted>")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("api", &self.api)
            .finish()
    }
}

/// Builds `<base>/r/<id>#key=<key>&t=<token>`, with `&paste=<b64url(api)>`
/// when `api` is given (the caller passes it when the API is not the
/// portal's own origin).
pub fn review_url(base: &str, id: &str, key: &ShareKey, token: &str, api: Option<&str>) -> String {
    let mut url = format!("{base}/r/{id}#key={}&t={token}", key.to_base64url());
    if let Some(api) = api {
        url.push_str("&paste=");
        url.push_str(&encode_paste_api_param(api));
    }
    url
}

/// Whether `url` has the shape of a review link: a path ending in
/// `/r/<6–16 letters or digits>` before any `?` or `#`.
pub fn is_review_link(url: &str) -> bool {
    review_path(url.trim()).is_some()
}

fn review_path(url: &str) -> Option<(&str, &str)> {
    let head = url.split('#').next().unwrap_or(url);
    let path = head.split('?').next().unwrap_or(head);
    path.rsplit_once("/r/").filter(|(_, id)| {
        (6..=16).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Parses a review link. `key` is required; `t` may be missing (such a link
/// is refused by whoever needs the token); an empty `paste` counts as absent.
///
/// # Errors
/// [`CodecError::InvalidLink`] when the URL is not a review link or has no
/// `key`; [`CodecError::InvalidBase64`] for a bad `paste` value.
pub fn parse_review_link(url: &str) -> Result<ReviewLink, CodecError> {
    let url = url.trim();
    let (base, id) = review_path(url).ok_or_else(|| {
        CodecError::InvalidLink("not a review link (expected …/r/<id>#key=…&t=…)".to_owned())
    })?;
    let fragment = url.split_once('#').map_or("", |(_, f)| f);
    let param = |name: &str| {
        form_urlencoded::parse(fragment.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .filter(|v| !v.is_empty())
    };
    let key = param("key").ok_or_else(|| {
        CodecError::InvalidLink("the review link has no #key= (it was cut short?)".to_owned())
    })?;
    let api = match param("paste") {
        Some(p) => Some(decode_paste_api_param(&p)?),
        None => None,
    };
    Ok(ReviewLink {
        base: base.to_owned(),
        id: id.to_owned(),
        key,
        token: param("t"),
        api,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        // Key "Jefe", data "what do ya want for nothing?":
        // 5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843.
        assert_eq!(
            hmac_sha256_b64url(b"Jefe", b"what do ya want for nothing?"),
            "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM"
        );
    }

    #[test]
    fn plan_digests_are_43_chars_and_keyed() {
        let key = ShareKey::from_bytes([7; 32]);
        let digest = plan_digest(&key, "# Plan\n");
        assert_eq!(digest, "-HBA2Nr8TdVvWuNViSpdiypAS8fTfDBDYyLdpwOHAvY");
        assert_eq!(digest.len(), 43);
        assert_ne!(
            plan_digest(&ShareKey::from_bytes([8; 32]), "# Plan\n"),
            digest
        );
    }

    #[test]
    fn review_links_round_trip_with_and_without_paste() {
        let key = ShareKey::from_bytes([1; 32]);
        let k = key.to_base64url();
        let token = "T".repeat(43);
        let plain = review_url("https://s.example", "abcdefgh", &key, &token, None);
        assert_eq!(
            plain,
            format!("https://s.example/r/abcdefgh#key={k}&t={token}")
        );
        assert_eq!(
            parse_review_link(&plain).unwrap(),
            ReviewLink {
                base: "https://s.example".into(),
                id: "abcdefgh".into(),
                key: k.clone(),
                token: Some(token.clone()),
                api: None,
            }
        );
        let with_api = review_url(
            "https://s.example/share",
            "abcdefgh",
            &key,
            &token,
            Some("http://127.0.0.1:19433"),
        );
        assert!(with_api.ends_with("&paste=aHR0cDovLzEyNy4wLjAuMToxOTQzMw"));
        let parsed = parse_review_link(&with_api).unwrap();
        assert_eq!(parsed.base, "https://s.example/share");
        assert_eq!(parsed.api.as_deref(), Some("http://127.0.0.1:19433"));
        assert!(is_review_link(&with_api));
        // The Debug form shows neither secret.
        let debug = format!("{parsed:?}");
        assert!(!debug.contains(&k) && !debug.contains(&token), "{debug}");
    }

    #[test]
    fn review_links_need_a_key_and_may_lack_a_token() {
        let no_token = parse_review_link("https://s/r/abcdefgh#key=abc").unwrap();
        assert_eq!(no_token.token, None);
        assert!(parse_review_link("https://s/r/abcdefgh#t=abc").is_err());
        assert!(parse_review_link("https://s/r/abcdefgh").is_err());
        assert!(parse_review_link("https://s/p/abcdefgh#key=k").is_err());
        assert!(!is_review_link("https://s/p/abcdefgh#key=k"));
        assert!(!is_review_link("https://s/r/abc#key=k"));
        assert!(parse_review_link("https://s/r/abcdefgh#key=k&paste=a").is_err());
    }
}
