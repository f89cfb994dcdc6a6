//! The rules every value of the admin API must follow, written down once.
//!
//! The catalog (`tenancy`) refuses a tenant, key or setting that breaks one of
//! them; the OpenAPI document states them (the `*_PATTERN` strings are the
//! document's regular expressions; the ranges its `minimum` and `maximum`);
//! a client can check a value before it sends it. A pattern and the predicate
//! beside it describe the same set of strings: the predicate is what the
//! server runs (no regex engine), the pattern what a client reads, and the
//! tests below (and the document's tests in `paste-api`) hold them equal.

use std::ops::RangeInclusive;

// ---- ids -------------------------------------------------------------------

/// Every tenant id starts with this.
pub const TENANT_ID_PREFIX: &str = "tnt_";
/// Every API key id starts with this.
pub const KEY_ID_PREFIX: &str = "key_";
/// Letters and digits after an id's prefix: at least one, at most this many.
pub const ID_MAX_CHARS: usize = 32;
/// A tenant id: the prefix, then 1–32 letters or digits.
pub const TENANT_ID_PATTERN: &str = "^tnt_[A-Za-z0-9]{1,32}$";
/// An API key id: the prefix, then 1–32 letters or digits.
pub const KEY_ID_PATTERN: &str = "^key_[A-Za-z0-9]{1,32}$";

/// Whether `s` is `prefix` followed by 1–[`ID_MAX_CHARS`] ASCII letters or
/// digits ([`TENANT_ID_PATTERN`], [`KEY_ID_PATTERN`]).
pub fn is_id(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|rest| {
        (1..=ID_MAX_CHARS).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

// ---- names -----------------------------------------------------------------

/// The longest tenant or key name, in characters (Unicode scalar values).
pub const NAME_MAX_CHARS: usize = 200;
/// A tenant name: no control character (C0, DEL, C1) and at least one
/// character that is not white space. Its length is capped separately
/// ([`NAME_MAX_CHARS`], the document's `maxLength`).
pub const TENANT_NAME_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$";
/// A key name: no control character; empty is allowed.
pub const KEY_NAME_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*$";

/// Whether `name` is a valid tenant name: 1–[`NAME_MAX_CHARS`] characters,
/// not only white space, no control characters.
pub fn is_tenant_name(name: &str) -> bool {
    !name.trim().is_empty() && is_key_name(name)
}

/// Whether `name` is a valid key name: at most [`NAME_MAX_CHARS`]
/// characters, no control characters.
pub fn is_key_name(name: &str) -> bool {
    name.chars().count() <= NAME_MAX_CHARS && !name.chars().any(char::is_control)
}

// ---- namespaces ------------------------------------------------------------

/// A paste-store namespace: a lower-case letter or digit, then up to 62
/// lower-case letters, digits, `-` or `_`.
pub const NAMESPACE_PATTERN: &str = "^[a-z0-9][a-z0-9_-]{0,62}$";

/// Whether `ns` matches [`NAMESPACE_PATTERN`].
pub fn is_namespace(ns: &str) -> bool {
    let b = ns.as_bytes();
    (1..=63).contains(&b.len())
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_')
}

// ---- hosts and CORS origins ------------------------------------------------

/// At most this many host names per tenant (counted as sent, duplicates
/// included).
pub const MAX_HOSTS: usize = 100;
/// At most this many CORS origins per tenant (counted as sent).
pub const MAX_CORS_ORIGINS: usize = 100;

/// The longest host name, `:port` included.
pub const HOST_MAX_LEN: usize = 253;
/// A host name: DNS labels of 1–63 letters, digits and inner hyphens (either
/// case), an optional port of 1–65535 without a sign or leading zeros.
pub const HOST_PATTERN: &str = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

/// The longest CORS origin (`https://`, a longest host).
pub const ORIGIN_MAX_LEN: usize = 261;
/// A CORS origin: `http(s)://host[:port]` with a lower-case host and no
/// path, or `*` for any origin.
pub const ORIGIN_PATTERN: &str = r"^(\*|https?://[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?)$";

/// Whether `h` is a host name as [`HOST_PATTERN`] and [`HOST_MAX_LEN`]
/// describe it.
pub fn is_host(h: &str) -> bool {
    h.len() <= HOST_MAX_LEN && host_shape(h, |b| b.is_ascii_alphanumeric())
}

/// Whether `o` is a CORS origin as [`ORIGIN_PATTERN`] and
/// [`ORIGIN_MAX_LEN`] describe it. Origins are compared exactly, so an upper
/// case host is refused rather than folded.
pub fn is_origin(o: &str) -> bool {
    if o == "*" {
        return true;
    }
    let rest = o
        .strip_prefix("https://")
        .or_else(|| o.strip_prefix("http://"));
    o.len() <= ORIGIN_MAX_LEN
        && rest.is_some_and(|h| host_shape(h, |b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// `name[:port]`: dot-separated labels of 1–63 `letter_or_digit` bytes and
/// inner hyphens; a port of 1–65535 written without a sign or leading zero.
fn host_shape(h: &str, letter_or_digit: impl Fn(u8) -> bool) -> bool {
    let (name, port) = match h.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (h, None),
    };
    let port_ok = port.is_none_or(|p| {
        !p.starts_with('0')
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|p| p > 0)
    });
    port_ok
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label.bytes().next().is_some_and(&letter_or_digit)
                && label.bytes().last().is_some_and(&letter_or_digit)
                && label.bytes().all(|b| letter_or_digit(b) || b == b'-')
        })
}

// ---- reviews ---------------------------------------------------------------

/// A review token (owner or reviewer): 32 random bytes as unpadded base64url.
pub const REVIEW_TOKEN_LEN: usize = 43;
/// A version's digest: an HMAC-SHA256 as unpadded base64url.
pub const REVIEW_DIGEST_PATTERN: &str = "^[A-Za-z0-9_-]{43}$";
/// The longest name a review writer may bind, in characters.
pub const REVIEW_NAME_MAX_CHARS: usize = 64;

/// Whether `t` has the shape of a review token (43 base64url characters).
pub fn is_review_token(t: &str) -> bool {
    t.len() == REVIEW_TOKEN_LEN && t.bytes().all(is_base64url_byte)
}

/// Whether `d` matches [`REVIEW_DIGEST_PATTERN`].
pub fn is_review_digest(d: &str) -> bool {
    d.len() == 43 && d.bytes().all(is_base64url_byte)
}

/// Whether `name` is a writer's name as the catalog keeps it: what
/// [`normalize_review_name`] makes of it is the name itself.
pub fn is_review_name(name: &str) -> bool {
    normalize_review_name(name).is_some_and(|normal| normal == name)
}

/// A writer's name as the review keeps it, or `None` when it cannot be one:
/// the name in Unicode's composed form (NFC: "A" plus a combining ring is
/// "Å"), white space at either end removed; then 1–64 characters, no
/// control characters and no invisible formatting characters
/// ([`is_invisible_format`]: a right-to-left override or a zero-width space
/// would make two names that look alike, or one that shows other than it
/// reads).
pub fn normalize_review_name(name: &str) -> Option<String> {
    use unicode_normalization::UnicodeNormalization as _;
    let normal: String = name.trim().nfc().collect();
    let normal = normal.trim();
    let chars = normal.chars().count();
    let allowed = |c: char| !c.is_control() && !is_invisible_format(c);
    ((1..=REVIEW_NAME_MAX_CHARS).contains(&chars) && normal.chars().all(allowed))
        .then(|| normal.to_owned())
}

/// Whether `c` is an invisible formatting character: bidirectional
/// overrides, embeddings, isolates and marks, zero-width spaces and
/// joiners, the byte order mark, invisible operators, interlinear
/// annotation marks and tags. They change how text around them shows (or
/// hide text) without showing themselves, so names refuse them and the CLI
/// drops them (text) or escapes them (JSON) in what it prints.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' // ARABIC LETTER MARK
            | '\u{180E}' // MONGOLIAN VOWEL SEPARATOR
            | '\u{200B}'..='\u{200F}' // zero-width space, non-joiner, joiner; LRM, RLM
            | '\u{202A}'..='\u{202E}' // LRE, RLE, PDF, LRO, RLO
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{206F}' // LRI, RLI, FSI, PDI; deprecated format controls
            | '\u{FEFF}' // zero-width no-break space (byte order mark)
            | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}' // tags
    )
}

fn is_base64url_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

// ---- numbers ---------------------------------------------------------------

/// "Unlimited" for a quota or a size: 2^62, large but far from overflowing
/// `bytes + size` in SQL.
pub const UNLIMITED: i64 = i64::MAX / 2;
/// The longest TTL any tenant may allow: 100 years, in seconds.
pub const MAX_TTL_SECS: i64 = 100 * 365 * 86_400;

/// `max_paste_size`, in bytes.
pub const MAX_PASTE_SIZE: RangeInclusive<i64> = 1..=UNLIMITED;
/// `default_ttl_secs` and `max_ttl_secs`, in seconds (0: pastes expire at
/// once, as upstream's `PASTE_TTL_DAYS=0`); besides, the default must not
/// exceed the maximum.
pub const TTL_SECS: RangeInclusive<i64> = 0..=MAX_TTL_SECS;
/// `quota_bytes` and `quota_pastes` ([`UNLIMITED`] at most).
pub const QUOTA: RangeInclusive<i64> = 0..=UNLIMITED;
/// `rate_per_sec` and `rate_burst`.
pub const RATE: RangeInclusive<i64> = 1..=1_000_000;
/// `id_length`: the length of the paste ids a tenant issues.
pub const ID_LENGTH: RangeInclusive<i64> = 8..=16;
/// `review_max_links`: live reviewer links per review (default 8).
pub const REVIEW_LINKS: RangeInclusive<i64> = 1..=1000;
/// `review_max_versions`: versions per review (default 100).
pub const REVIEW_VERSIONS: RangeInclusive<i64> = 1..=10_000;
/// The default of `review_max_links`.
pub const REVIEW_MAX_LINKS: i64 = 8;
/// The default of `review_max_versions`.
pub const REVIEW_MAX_VERSIONS: i64 = 100;
/// Changes one review may have (the events of its log): versions, minted
/// links and comment sets past it are refused. The log lives in the catalog
/// beside the review, outside the tenant's quota, so it is bounded here: a
/// review of ten thousand changes is far beyond any real one (a comment set
/// is replaced whole on each send), and a new review starts afresh.
pub const REVIEW_MAX_EVENTS: i64 = 10_000;
/// The `ttl` a paste create may ask for, in seconds: at least one, at most
/// what the most generous tenant allows (each tenant's own `max_ttl_secs`
/// is checked when the paste is created).
pub const PASTE_TTL_SECS: RangeInclusive<u64> = 1..=MAX_TTL_SECS.unsigned_abs();

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings near the edges of every string rule above.
    fn corpus() -> Vec<String> {
        let mut v: Vec<String> = [
            "",
            " ",
            "a",
            "A",
            "é",
            "-",
            "_",
            "*",
            "a b",
            " a",
            "a ",
            "\t",
            "\u{85}",
            "\u{a0}",
            "\u{3000}x",
            "x\u{7f}",
            "x\u{9f}",
            "x\u{1f}",
            "\u{2028}",
            "team-a",
            "team_a",
            "-a",
            "0a",
            "a.com",
            "A.Com",
            "a..b",
            "a-.b",
            "a.-b",
            "a.com:1",
            "a.com:0",
            "a.com:080",
            "a.com:+80",
            "a.com:65535",
            "a.com:65536",
            "a.com:",
            ":80",
            "a.com/x",
            "https://a.com",
            "http://a.com:8080",
            "https://A.com",
            "https://a.com/",
            "ftp://a.com",
            "https://",
            "https://a.com:0443",
            "tnt_default",
            "tnt_",
            "tnt_a-b",
            "tnt_Ab9",
            "key_abc",
            "key_",
            "xkey_a",
            "名前",
            "🚀",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for n in [
            31, 32, 33, 62, 63, 64, 199, 200, 201, 252, 253, 254, 260, 261, 262,
        ] {
            v.push("a".repeat(n));
            v.push("é".repeat(n));
            v.push(format!("tnt_{}", "a".repeat(n)));
            v.push(format!("key_{}", "a".repeat(n)));
            v.push(format!("https://{}", "a".repeat(n.saturating_sub(8))));
        }
        let labels = |n: usize, len: usize| vec!["a".repeat(len); n].join(".");
        for (n, len) in [(4, 62), (4, 63), (3, 63)] {
            v.push(labels(n, len));
            v.push(format!("{}:8080", labels(n, len)));
            v.push(format!("https://{}", labels(n, len)));
        }
        v
    }

    /// Each pattern (with its length cap, counted in characters) accepts
    /// exactly what its predicate accepts.
    #[test]
    fn patterns_and_predicates_agree() {
        type Rule = (&'static str, &'static str, Option<usize>, fn(&str) -> bool);
        let rules: [Rule; 7] = [
            ("tenant id", TENANT_ID_PATTERN, None, |s| {
                is_id(s, TENANT_ID_PREFIX)
            }),
            ("key id", KEY_ID_PATTERN, None, |s| is_id(s, KEY_ID_PREFIX)),
            (
                "tenant name",
                TENANT_NAME_PATTERN,
                Some(NAME_MAX_CHARS),
                is_tenant_name,
            ),
            (
                "key name",
                KEY_NAME_PATTERN,
                Some(NAME_MAX_CHARS),
                is_key_name,
            ),
            ("namespace", NAMESPACE_PATTERN, None, is_namespace),
            ("host", HOST_PATTERN, Some(HOST_MAX_LEN), is_host),
            ("origin", ORIGIN_PATTERN, Some(ORIGIN_MAX_LEN), is_origin),
        ];
        for (what, pattern, max_chars, predicate) in rules {
            let re = regex::Regex::new(pattern).unwrap();
            for value in corpus() {
                let by_pattern =
                    re.is_match(&value) && max_chars.is_none_or(|m| value.chars().count() <= m);
                assert_eq!(by_pattern, predicate(&value), "{what}: {value:?}");
            }
        }
    }

    #[test]
    fn the_id_patterns_start_with_the_prefixes() {
        assert!(TENANT_ID_PATTERN.starts_with(&format!("^{TENANT_ID_PREFIX}[")));
        assert!(KEY_ID_PATTERN.starts_with(&format!("^{KEY_ID_PREFIX}[")));
        assert!(is_id("tnt_default", TENANT_ID_PREFIX));
    }

    #[test]
    fn the_paste_ttl_reaches_the_longest_tenant_ttl() {
        assert_eq!(*PASTE_TTL_SECS.end(), 3_153_600_000);
        assert_eq!(i64::try_from(*PASTE_TTL_SECS.end()), Ok(*TTL_SECS.end()));
    }

    #[test]
    fn review_names_are_composed_trimmed_and_visible() {
        let normal = |name: &str| normalize_review_name(name);
        assert_eq!(normal("Alice").as_deref(), Some("Alice"));
        assert_eq!(normal("  Alice \t").as_deref(), Some("Alice"), "trimmed");
        assert_eq!(normal("\u{3000}Ida\u{a0}").as_deref(), Some("Ida"));
        assert_eq!(
            normal("A\u{30a}sa").as_deref(),
            Some("\u{c5}sa"),
            "a combining ring composes"
        );
        assert_eq!(normal("名前 🚀").as_deref(), Some("名前 🚀"));
        assert_eq!(normal(&"é".repeat(64)).map(|n| n.chars().count()), Some(64));
        assert_eq!(
            normal(&"e\u{301}".repeat(64)).map(|n| n.chars().count()),
            Some(64),
            "counted once composed"
        );
        for bad in [
            "",
            "   ",
            "Ali\u{200b}ce",
            "Alice\u{200b}",
            "\u{202e}ecilA",
            "Al\u{2066}ice",
            "\u{feff}Alice",
            "Al\u{200d}ice",
            "Al\u{e0041}ice",
            "Al\u{1b}[31mice",
            "Al\u{9b}ice",
            "Al\nice",
        ] {
            assert_eq!(normal(bad), None, "{bad:?}");
            assert!(!is_review_name(bad), "{bad:?}");
        }
        assert!(normal(&"a".repeat(65)).is_none());
        assert!(is_review_name("Alice"));
        assert!(!is_review_name("Alice "), "kept only as normalized");
        assert!(!is_review_name("A\u{30a}sa"));
    }
}
