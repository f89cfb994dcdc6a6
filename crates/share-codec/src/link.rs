//! Share links: building hash links and short links, and parsing every form
//! upstream accepts (`docs/wire-format.md`, "Links").
//!
//! - Hash link: `<base>/#<data>[?cb=<url>&ct=<token>]` (the `?cb=` part is
//!   a bot callback).
//! - Short link: `<base>/p/<id>#key=<43 chars>[&paste=<b64url(api)>]`, or the
//!   legacy unencrypted `<base>/p/<id>`.
//!
//! Three upstream parsers are reproduced exactly — the portal's route matcher
//! ([`match_portal_route`]), its fragment classifier
//! ([`looks_like_share_payload`]) and Import Review's URL parser
//! ([`parse_import_url`], [`find_short_link`]) — and [`parse_share_link`]
//! combines them into the one entry point a client such as the CLI needs.

use crate::b64::{decode_forgiving, encode_base64url};
use crate::crypto::ShareKey;
use crate::error::{CodecError, EMPTY_HASH, NO_HASH_OR_SHORT_LINK};

/// The public portal, upstream's default share base.
pub const DEFAULT_SHARE_BASE: &str = "https://share.plannotator.ai";

/// The hosted paste API, upstream's default since #203; links to it carry no
/// `&paste=` parameter.
pub const DEFAULT_PASTE_API: &str = "https://plannotator-paste.plannotator.workers.dev";

/// Paste ids the portal and Import Review accept: 6–16 ASCII letters/digits.
const ID_LEN: std::ops::RangeInclusive<usize> = 6..=16;

/// A bot callback from `?cb=<url>&ct=<token>` (#416).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// Where Approve / Send Feedback POST to; always `http:` or `https:`.
    pub url: String,
    /// The token sent back as `token` (`ct`), if any.
    pub token: Option<String>,
}

/// A parsed share link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareLink {
    /// A hash link: the compressed payload travels in the fragment.
    Hash {
        /// The compressed payload text (fragment up to the first `?`).
        data: String,
        /// Bot callback parameters, from the fragment or the query string.
        callback: Option<Callback>,
    },
    /// A short link: the payload is stored under `id` by a paste service.
    Short {
        /// Everything before `/p/<id>` (the portal base, e.g. `https://share.plannotator.ai`).
        base: String,
        /// The paste id.
        id: String,
        /// The decryption key text from `#key=`; `None` for legacy unencrypted pastes.
        key: Option<String>,
        /// The paste API from `&paste=`, decoded; `None` means the reader's default.
        paste_api: Option<String>,
    },
}

/// Builds a hash link exactly as upstream: `base + "/#" + data`, no
/// normalisation (a base ending in `/` gives `//#`).
pub fn hash_url(base: &str, data: &str) -> String {
    format!("{base}/#{data}")
}

/// Builds a short link `<base>/p/<id>#key=<key>`, adding
/// `&paste=<b64url(paste_api)>` only when `paste_api` is not
/// [`DEFAULT_PASTE_API`] (exact string comparison, as upstream).
pub fn short_url(base: &str, id: &str, key: &ShareKey, paste_api: &str) -> String {
    let mut url = format!("{base}/p/{id}#key={}", key.to_base64url());
    if paste_api != DEFAULT_PASTE_API {
        url.push_str("&paste=");
        url.push_str(&encode_paste_api_param(paste_api));
    }
    url
}

/// The `&paste=` value for a paste API URL: `btoa(url)` with `+/` → `-_` and
/// `=` removed. `btoa` encodes each character as one byte (Latin-1); a URL
/// with characters above U+00FF, which `btoa` rejects, is encoded as UTF-8.
pub fn encode_paste_api_param(url: &str) -> String {
    let latin1: Option<Vec<u8>> = url
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect();
    match latin1 {
        Some(bytes) => encode_base64url(&bytes),
        None => encode_base64url(url.as_bytes()),
    }
}

/// Decodes a `&paste=` value as the portal does: `atob` after `-_` → `+/`,
/// each byte read as one character (Latin-1).
///
/// # Errors
/// [`CodecError::InvalidBase64`] when `atob` would throw.
pub fn decode_paste_api_param(param: &str) -> Result<String, CodecError> {
    Ok(decode_forgiving(param)?
        .into_iter()
        .map(char::from)
        .collect())
}

/// The portal's short-link route: `^/p/([A-Za-z0-9]{6,16})$` on the pathname.
/// Sub-paths (`/share/p/<id>`) and trailing slashes do not match.
pub fn match_portal_route(pathname: &str) -> Option<&str> {
    pathname.strip_prefix("/p/").filter(|id| is_paste_id(id))
}

/// The portal's fragment classifier (#605): strip one leading `#`, cut at the
/// first `?`, then require at least 30 characters, only `[A-Za-z0-9_-]` and
/// at least one uppercase letter. Heading anchors fail it; so do padded or
/// standard-alphabet hashes, which [`crate::decompress`] would still accept.
pub fn looks_like_share_payload(fragment: &str) -> bool {
    let hash = fragment.strip_prefix('#').unwrap_or(fragment);
    let hash = hash.split('?').next().unwrap_or(hash);
    hash.len() >= 30
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && hash.bytes().any(|b| b.is_ascii_uppercase())
}

/// A match of Import Review's short-link pattern, see [`find_short_link`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortLinkMatch<'a> {
    /// Byte offset of the `/p/` that matched.
    pub start: usize,
    /// The paste id.
    pub id: &'a str,
    /// The captured fragment (after `#`), if the pattern captured one.
    pub fragment: Option<&'a str>,
}

/// Import Review's `/\/p\/([A-Za-z0-9]{6,16})(?:#(.*))?(?:\?|$)/`: the first
/// `/p/<id>` anywhere in the text that is followed by the end, a `?`, or
/// `#<fragment>` running to the end (a `?query` between the id and the `#`
/// therefore drops the fragment).
pub fn find_short_link(url: &str) -> Option<ShortLinkMatch<'_>> {
    let mut from = 0;
    while let Some(pos) = url[from..].find("/p/") {
        let start = from + pos;
        from = start + 1;
        let after = &url[start + 3..];
        let id_len = after
            .bytes()
            .take_while(u8::is_ascii_alphanumeric)
            .take(17)
            .count();
        if !ID_LEN.contains(&id_len) {
            continue;
        }
        let (id, rest) = after.split_at(id_len);
        if rest.is_empty() || rest.starts_with('?') {
            return Some(ShortLinkMatch {
                start,
                id,
                fragment: None,
            });
        }
        if let Some(fragment) = rest.strip_prefix('#').and_then(captured_fragment) {
            return Some(ShortLinkMatch {
                start,
                id,
                fragment: Some(fragment),
            });
        }
    }
    None
}

/// What `#(.*)(?:\?|$)` captures from the text after `#`: `.` stops at line
/// terminators, so the capture is everything when there is none, else the
/// text up to the last `?` before the first one.
fn captured_fragment(text: &str) -> Option<&str> {
    match text.find(['\n', '\r', '\u{2028}', '\u{2029}']) {
        None => Some(text),
        Some(end) => text[..end].rfind('?').map(|q| &text[..q]),
    }
}

/// Import Review's parser (`importFromShareUrl`), exactly: a
/// [`find_short_link`] match is a short link (key and paste API read from the
/// captured fragment with `URLSearchParams`); anything else must contain `#`,
/// and *everything* after the first `#` is the hash payload (a `?cb=` suffix
/// included, which then fails to decode, as upstream).
///
/// # Errors
/// [`CodecError::InvalidLink`] with upstream's texts [`NO_HASH_OR_SHORT_LINK`]
/// and [`EMPTY_HASH`]; [`CodecError::InvalidBase64`] for a bad `paste` value.
pub fn parse_import_url(url: &str) -> Result<ShareLink, CodecError> {
    if let Some(found) = find_short_link(url) {
        let (key, paste_api) = parse_short_fragment(found.fragment.unwrap_or(""))?;
        return Ok(ShareLink::Short {
            base: url[..found.start].to_owned(),
            id: found.id.to_owned(),
            key,
            paste_api,
        });
    }
    let (_, hash) = url
        .split_once('#')
        .ok_or_else(|| CodecError::InvalidLink(NO_HASH_OR_SHORT_LINK.to_owned()))?;
    if hash.is_empty() {
        return Err(CodecError::InvalidLink(EMPTY_HASH.to_owned()));
    }
    Ok(ShareLink::Hash {
        data: hash.to_owned(),
        callback: None,
    })
}

/// Reads `key` and `paste` from a short link's fragment with `URLSearchParams`
/// semantics (`&`-separated, `+` → space, percent-decoding, first value wins).
/// An empty `paste` counts as absent; an empty `key` is kept (and later fails
/// as an invalid key, as upstream).
///
/// # Errors
/// [`CodecError::InvalidBase64`] when `paste` is not base64.
pub fn parse_short_fragment(
    fragment: &str,
) -> Result<(Option<String>, Option<String>), CodecError> {
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    let key = search_param(fragment, "key");
    let paste = match search_param(fragment, "paste") {
        Some(p) if !p.is_empty() => Some(decode_paste_api_param(&p)?),
        _ => None,
    };
    Ok((key, paste))
}

/// Splits a hash-link fragment (`#<data>?cb=…&ct=…`, leading `#` optional) at
/// its first `?` into the payload text and the bot callback, as
/// `parseShareHash` and the callback reader do.
pub fn parse_hash_fragment(fragment: &str) -> (String, Option<Callback>) {
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    match fragment.split_once('?') {
        Some((data, query)) => (data.to_owned(), parse_callback(query)),
        None => (fragment.to_owned(), None),
    }
}

/// Reads a bot callback from query text (`cb=<url>&ct=<token>`, leading `?`
/// optional). `None` unless `cb` is present and an `http:`/`https:` URL.
pub fn parse_callback(query: &str) -> Option<Callback> {
    let query = query.strip_prefix('?').unwrap_or(query);
    let url = search_param(query, "cb").filter(|cb| is_http_url(cb))?;
    Some(Callback {
        url,
        token: search_param(query, "ct"),
    })
}

/// Parses any share link a user may paste, the way the portal would open it.
///
/// - A path ending in `/p/<6–16 alnum>` (before any `?` or `#`) is a short
///   link; `key` and `paste` come from the fragment. Unlike the portal, a
///   sub-path base (`https://host/share/p/<id>`) is accepted.
/// - Otherwise the fragment up to its first `?` is hash data, and a bot
///   callback is read from the fragment's `?cb=…&ct=…` or, failing that, from
///   the URL's own query string.
/// - Text without `#` that passes [`looks_like_share_payload`] (a bare hash)
///   is accepted as hash data.
///
/// # Errors
/// [`CodecError::InvalidLink`] with [`NO_HASH_OR_SHORT_LINK`] or
/// [`EMPTY_HASH`]; [`CodecError::InvalidBase64`] for a bad `paste` value.
pub fn parse_share_link(url: &str) -> Result<ShareLink, CodecError> {
    let url = url.trim();
    let (head, fragment) = match url.split_once('#') {
        Some((head, fragment)) => (head, Some(fragment)),
        None => (url, None),
    };
    let (path, query) = match head.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (head, None),
    };
    if let Some((base, id)) = path.rsplit_once("/p/").filter(|(_, id)| is_paste_id(id)) {
        let (key, paste_api) = parse_short_fragment(fragment.unwrap_or(""))?;
        return Ok(ShareLink::Short {
            base: base.to_owned(),
            id: id.to_owned(),
            key,
            paste_api,
        });
    }
    let Some(fragment) = fragment else {
        if !url.contains("://") && looks_like_share_payload(url) {
            return Ok(ShareLink::Hash {
                data: url.to_owned(),
                callback: None,
            });
        }
        return Err(CodecError::InvalidLink(NO_HASH_OR_SHORT_LINK.to_owned()));
    };
    let (data, callback) = parse_hash_fragment(fragment);
    if data.is_empty() {
        return Err(CodecError::InvalidLink(EMPTY_HASH.to_owned()));
    }
    let callback = callback.or_else(|| query.and_then(parse_callback));
    Ok(ShareLink::Hash { data, callback })
}

fn is_paste_id(id: &str) -> bool {
    ID_LEN.contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `new URLSearchParams(query).get(name)`.
fn search_param(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Whether `new URL(text)` would give protocol `http:` or `https:` with a
/// host: leading/trailing C0 controls and spaces are ignored, the scheme is
/// case-insensitive, and something must follow the slashes.
fn is_http_url(text: &str) -> bool {
    let text = text.trim_matches(|c: char| c <= ' ');
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let special = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    let host = rest.trim_start_matches(['/', '\\']);
    let host_end = host.find(['/', '\\', '?', '#']).unwrap_or(host.len());
    special && host_end > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_links_carry_paste_only_for_other_apis() {
        let key = ShareKey::from_bytes([0; 32]);
        let k = key.to_base64url();
        assert_eq!(
            short_url("https://s", "abcdefgh", &key, DEFAULT_PASTE_API),
            format!("https://s/p/abcdefgh#key={k}")
        );
        assert_eq!(
            short_url("https://s", "abcdefgh", &key, "http://127.0.0.1:19433"),
            format!("https://s/p/abcdefgh#key={k}&paste=aHR0cDovLzEyNy4wLjAuMToxOTQzMw")
        );
    }

    #[test]
    fn paste_param_is_latin1_like_btoa() {
        assert_eq!(
            decode_paste_api_param(&encode_paste_api_param("http://é.x")).unwrap(),
            "http://é.x"
        );
        assert_eq!(
            decode_paste_api_param("aHR0cDovLzEyNy4wLjAuMToxOTQzMw").unwrap(),
            "http://127.0.0.1:19433"
        );
        assert!(decode_paste_api_param("a").is_err());
    }

    #[test]
    fn callbacks_need_an_http_url() {
        let cb = parse_callback("cb=https%3A%2F%2Fbot.example%2Fcb&ct=tok+1").unwrap();
        assert_eq!(cb.url, "https://bot.example/cb");
        assert_eq!(cb.token.as_deref(), Some("tok 1"));
        assert_eq!(parse_callback("cb=javascript%3Aalert(1)&ct=t"), None);
        assert_eq!(parse_callback("cb=http%3A&ct=t"), None);
        assert_eq!(parse_callback("ct=t"), None);
        assert!(parse_callback("cb=HTTP://x").is_some());
    }

    #[test]
    fn share_links_of_every_form_parse() {
        let hash = "q1YqULJSUlYIyEnMU9JRSlSyio6tBQA";
        assert_eq!(
            parse_share_link(&format!("https://share.plannotator.ai/#{hash}")).unwrap(),
            ShareLink::Hash {
                data: hash.into(),
                callback: None
            }
        );
        assert_eq!(
            parse_share_link(hash).unwrap(),
            ShareLink::Hash {
                data: hash.into(),
                callback: None
            }
        );
        let with_query = format!("https://s/?cb=http%3A%2F%2Fh&ct=t#{hash}");
        let ShareLink::Hash { callback, .. } = parse_share_link(&with_query).unwrap() else {
            panic!("not a hash link")
        };
        assert_eq!(
            callback,
            Some(Callback {
                url: "http://h".into(),
                token: Some("t".into())
            })
        );
        assert_eq!(
            parse_share_link("https://h/share/p/abcdefgh?x=1#key=k&paste=aHR0cDovL3g").unwrap(),
            ShareLink::Short {
                base: "https://h/share".into(),
                id: "abcdefgh".into(),
                key: Some("k".into()),
                paste_api: Some("http://x".into()),
            }
        );
        assert_eq!(
            parse_share_link("https://h/p/abcdefgh").unwrap(),
            ShareLink::Short {
                base: "https://h".into(),
                id: "abcdefgh".into(),
                key: None,
                paste_api: None
            }
        );
    }

    #[test]
    fn share_link_errors_use_upstream_texts() {
        let err = |s| parse_share_link(s).unwrap_err().to_string();
        assert_eq!(err("https://h/page"), NO_HASH_OR_SHORT_LINK);
        assert_eq!(err("https://h/#"), EMPTY_HASH);
        assert_eq!(err("https://h/#?cb=x"), EMPTY_HASH);
    }

    #[test]
    fn import_pattern_backtracks_like_the_regex() {
        let fragment = |s| find_short_link(s).map(|m| m.fragment);
        assert_eq!(fragment("/p/abcdef#k\nx?y"), None);
        assert_eq!(fragment("/p/abcdef#k?z\nx"), Some(Some("k")));
        assert_eq!(fragment("/p/abcdef#a?b"), Some(Some("a?b")));
        assert_eq!(fragment("/p/abcdefghijklmnopq"), None);
        assert_eq!(fragment("/p/abc/p/abcdef"), Some(None));
        assert_eq!(
            find_short_link("x/p/abc/p/abcdefg?").map(|m| (m.start, m.id)),
            Some((7, "abcdefg"))
        );
    }
}
