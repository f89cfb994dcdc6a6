//! Typed, validated keys. A backend is only ever handed a [`PasteKey`], so it
//! cannot be asked for a path outside its namespace, and every backend derives
//! its physical location from the key in exactly one function.

use std::fmt;

/// The alphabet paste ids are drawn from (the one upstream uses: `A–Z a–z 0–9`).
const ID_ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Why a namespace or id was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The namespace is empty, too long or has characters outside `[a-z0-9_-]`.
    #[error(
        "invalid namespace: must be 1-63 characters of a-z, 0-9, '-' or '_', starting with a letter or digit"
    )]
    InvalidNamespace,
    /// The id is not 6–16 characters of `[A-Za-z0-9]`.
    #[error("invalid paste id: must be {min}-{max} characters of A-Z, a-z, 0-9", min = PasteId::MIN_LEN, max = PasteId::MAX_LEN)]
    InvalidId,
    /// A generated id length outside the range the service issues.
    #[error("invalid id length {0}: ids are issued with {min}-{max} characters", min = PasteId::MIN_ISSUED_LEN, max = PasteId::MAX_LEN)]
    InvalidIdLength(usize),
    /// The operating system's random source failed.
    #[error("the operating system's random number generator failed")]
    Random,
}

/// A tenant's storage namespace: `[a-z0-9][a-z0-9_-]{0,62}`.
///
/// Lower case only, so it is the same name on case-insensitive file systems.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace(String);

impl Namespace {
    /// The namespace of the default tenant, which anonymous upstream clients use.
    pub const DEFAULT: &'static str = "default";

    /// Validates `s` as a namespace.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let bytes = s.as_bytes();
        let valid = (1..=63).contains(&bytes.len())
            && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'_');
        if valid {
            Ok(Namespace(s.to_owned()))
        } else {
            Err(KeyError::InvalidNamespace)
        }
    }

    /// The default tenant's namespace.
    pub fn default_tenant() -> Self {
        Namespace(Self::DEFAULT.to_owned())
    }

    /// The namespace as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Namespace {
    /// Where the fs backend keeps this namespace, relative to its root.
    pub(crate) fn fs_dir(&self) -> &str {
        &self.0
    }

    /// The Redis `SCAN MATCH` pattern of this namespace's keys:
    /// `<prefix><namespace>:*`, with the glob characters of the prefix
    /// escaped (namespaces have none).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn redis_pattern(&self, prefix: &str) -> String {
        let mut pattern = String::with_capacity(prefix.len() + self.0.len() + 2);
        for c in prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str(&self.0);
        pattern.push_str(":*");
        pattern
    }

    /// The S3 key prefix of this namespace's objects: `<prefix><namespace>/`.
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    pub(crate) fn object_prefix(&self, prefix: &str) -> String {
        format!("{prefix}{}/", self.0)
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Namespace({})", self.0)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A paste id: 6–16 characters of `[A-Za-z0-9]`, the pattern upstream portals
/// and paste services accept.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PasteId(String);

impl PasteId {
    /// Shortest id accepted on reads (upstream pattern `{6,16}`).
    pub const MIN_LEN: usize = 6;
    /// Longest id accepted, and the default length of issued ids (~95 bits).
    pub const MAX_LEN: usize = 16;
    /// Shortest id this service issues (upstream issues 8).
    pub const MIN_ISSUED_LEN: usize = 8;

    /// Validates `s` as a paste id.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let valid = (Self::MIN_LEN..=Self::MAX_LEN).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_alphanumeric());
        if valid {
            Ok(PasteId(s.to_owned()))
        } else {
            Err(KeyError::InvalidId)
        }
    }

    /// Draws a fresh id of `len` characters from the OS CSPRNG.
    ///
    /// Each character is a random byte below 248 taken modulo 62 (bytes of 248
    /// and above are discarded), so every symbol is equally likely.
    pub fn generate(len: usize) -> Result<Self, KeyError> {
        if !(Self::MIN_ISSUED_LEN..=Self::MAX_LEN).contains(&len) {
            return Err(KeyError::InvalidIdLength(len));
        }
        let mut id = String::with_capacity(len);
        let mut buf = [0u8; 32];
        while id.len() < len {
            getrandom::fill(&mut buf).map_err(|_| KeyError::Random)?;
            for &b in buf.iter().filter(|&&b| b < 248) {
                if id.len() == len {
                    break;
                }
                id.push(char::from(ID_ALPHABET[usize::from(b % 62)]));
            }
        }
        Ok(PasteId(id))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PasteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PasteId({})", self.0)
    }
}

impl fmt::Display for PasteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a stored value is, which decides its place beside the others of
/// its namespace: a paste is reachable by its id through the paste routes,
/// a review blob only through the review it belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum KeyKind {
    /// A paste.
    Paste,
    /// A review's version, comment set or decision feedback, named by the
    /// catalog's review rows.
    ReviewBlob,
}

/// The address of one stored value: a tenant namespace, a kind and an id.
/// Values of different kinds never share a location, so a paste id can
/// never reach a review blob.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PasteKey {
    namespace: Namespace,
    kind: KeyKind,
    id: PasteId,
}

impl PasteKey {
    /// Builds the key of paste `id` in `namespace`.
    pub fn new(namespace: Namespace, id: PasteId) -> Self {
        PasteKey {
            namespace,
            kind: KeyKind::Paste,
            id,
        }
    }

    /// Builds the key of review blob `id` in `namespace`.
    pub fn review_blob(namespace: Namespace, id: PasteId) -> Self {
        PasteKey {
            namespace,
            kind: KeyKind::ReviewBlob,
            id,
        }
    }

    /// Whether this is a paste or a review blob.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The tenant namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The paste id.
    pub fn id(&self) -> &PasteId {
        &self.id
    }

    /// Where the fs backend keeps this key, relative to its root:
    /// `<namespace>/<shard>/<file>`.
    ///
    /// Ids are case-sensitive but some file systems are not, so the file name is
    /// the lower-case hex of the id's bytes; the shard is the hex of its first
    /// two characters (3 844 shards, so a million pastes are ~260 per folder).
    /// A review blob's file name is the same hex after `r` (hex has no `r`).
    pub(crate) fn fs_location(&self) -> (String, String) {
        let hex = hex_lower(self.id.as_str().as_bytes());
        let shard = hex[..4].to_owned();
        let file = match self.kind {
            KeyKind::Paste => hex,
            KeyKind::ReviewBlob => format!("r{hex}"),
        };
        (format!("{}/{}", self.namespace.as_str(), shard), file)
    }
}

impl PasteKey {
    /// The Redis key: `<prefix><namespace>:<id>` for a paste,
    /// `<prefix><namespace>:r:<id>` for a review blob. Namespaces cannot
    /// contain `:` and ids are alphanumeric, so keys of different tenants or
    /// kinds never meet.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn redis_key(&self, prefix: &str) -> String {
        let kind = match self.kind {
            KeyKind::Paste => "",
            KeyKind::ReviewBlob => "r:",
        };
        format!(
            "{prefix}{}:{kind}{}",
            self.namespace.as_str(),
            self.id.as_str()
        )
    }

    /// The S3 object key: `<prefix><namespace>/<id>` for a paste,
    /// `<prefix><namespace>/r/<id>` for a review blob.
    pub(crate) fn object_key(&self, prefix: &str) -> String {
        let kind = match self.kind {
            KeyKind::Paste => "",
            KeyKind::ReviewBlob => "r/",
        };
        format!(
            "{prefix}{}/{kind}{}",
            self.namespace.as_str(),
            self.id.as_str()
        )
    }
}

fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_upstream_pattern() {
        for ok in ["abc123", "ABCDEFGHabcdefgh", "PwAB6RsT", "000000"] {
            assert!(PasteId::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "abcde",
            "abcdefghabcdefghX",
            "abc-1234",
            "abc_1234",
            "../etc",
            "ab%2e%2e",
            "аbcdef",
            "ａbcdef",
            "abc\u{202e}def",
            "abc def",
            "abcdef/",
            "*",
            "abc.def",
        ] {
            assert_eq!(PasteId::parse(bad), Err(KeyError::InvalidId), "{bad:?}");
        }
    }

    #[test]
    fn namespaces_are_lower_case_and_path_safe() {
        for ok in ["default", "team-a", "t_1", "0abc"] {
            assert!(Namespace::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Default",
            "-a",
            "_a",
            "a/b",
            "..",
            ".",
            "a.b",
            &"a".repeat(64),
        ] {
            assert_eq!(
                Namespace::parse(bad),
                Err(KeyError::InvalidNamespace),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn generated_ids_have_the_requested_length_and_alphabet() {
        for len in [8, 12, 16] {
            for _ in 0..200 {
                let id = PasteId::generate(len).unwrap();
                assert_eq!(id.as_str().len(), len);
                assert!(PasteId::parse(id.as_str()).is_ok());
            }
        }
        assert_eq!(PasteId::generate(7), Err(KeyError::InvalidIdLength(7)));
        assert_eq!(PasteId::generate(17), Err(KeyError::InvalidIdLength(17)));
    }

    #[test]
    fn generated_ids_use_every_symbol_about_equally() {
        let mut counts = [0u32; 62];
        for _ in 0..2_000 {
            for b in PasteId::generate(16).unwrap().as_str().bytes() {
                let pos = ID_ALPHABET.iter().position(|&c| c == b).unwrap();
                counts[pos] += 1;
            }
        }
        // 32 000 symbols, ~516 each; a biased `% 62` over all bytes would skew
        // the first 8 symbols by ~25 %. Allow a wide statistical margin.
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 380 && *max < 660, "min {min} max {max}");
    }

    #[test]
    fn redis_and_s3_keys_are_pinned() {
        let key = PasteKey::new(
            Namespace::parse("team-a").unwrap(),
            PasteId::parse("PwAB6RsT").unwrap(),
        );
        assert_eq!(
            key.redis_key("planshare:paste:"),
            "planshare:paste:team-a:PwAB6RsT"
        );
        assert_eq!(key.object_key("pastes/"), "pastes/team-a/PwAB6RsT");
        assert_eq!(key.object_key(""), "team-a/PwAB6RsT");
    }

    #[test]
    fn namespace_locations_are_pinned_and_cover_exactly_their_keys() {
        let ns = Namespace::parse("team-a").unwrap();
        assert_eq!(ns.fs_dir(), "team-a");
        assert_eq!(
            ns.redis_pattern("planshare:paste:"),
            "planshare:paste:team-a:*"
        );
        // Glob characters of a prefix match only themselves.
        assert_eq!(ns.redis_pattern("p*[x]?\\:"), "p\\*\\[x\\]\\?\\\\:team-a:*");
        assert_eq!(ns.object_prefix("pastes/"), "pastes/team-a/");
        let key = PasteKey::new(ns.clone(), PasteId::parse("PwAB6RsT").unwrap());
        assert!(
            key.object_key("pastes/")
                .starts_with(&ns.object_prefix("pastes/"))
        );
        assert!(
            key.fs_location()
                .0
                .starts_with(&format!("{}/", ns.fs_dir()))
        );
        // A namespace that extends another is not inside it.
        let longer = PasteKey::new(
            Namespace::parse("team-ab").unwrap(),
            PasteId::parse("PwAB6RsT").unwrap(),
        );
        assert!(
            !longer
                .object_key("pastes/")
                .starts_with(&ns.object_prefix("pastes/"))
        );
        assert!(!longer.redis_key("p:").starts_with("p:team-a:"));
    }

    #[test]
    fn review_blobs_live_beside_pastes_but_never_at_a_pastes_place() {
        let ns = Namespace::parse("team-a").unwrap();
        let id = PasteId::parse("PwAB6RsT").unwrap();
        let paste = PasteKey::new(ns.clone(), id.clone());
        let blob = PasteKey::review_blob(ns.clone(), id);
        assert_eq!(blob.kind(), KeyKind::ReviewBlob);
        assert_eq!(
            blob.fs_location(),
            ("team-a/5077".to_owned(), "r5077414236527354".to_owned())
        );
        assert_eq!(blob.redis_key("p:"), "p:team-a:r:PwAB6RsT");
        assert_eq!(blob.object_key("pastes/"), "pastes/team-a/r/PwAB6RsT");
        assert_ne!(paste.fs_location(), blob.fs_location());
        assert_ne!(paste.redis_key("p:"), blob.redis_key("p:"));
        assert_ne!(paste.object_key("p/"), blob.object_key("p/"));
        // Still inside the namespace, so purges and sweeps cover them.
        assert!(blob.redis_key("p:").starts_with("p:team-a:"));
        assert!(
            blob.object_key("pastes/")
                .starts_with(&ns.object_prefix("pastes/"))
        );
    }

    #[test]
    fn fs_locations_are_pinned() {
        let key = PasteKey::new(
            Namespace::parse("team-a").unwrap(),
            PasteId::parse("PwAB6RsT").unwrap(),
        );
        assert_eq!(
            key.fs_location(),
            ("team-a/5077".to_owned(), "5077414236527354".to_owned())
        );
        // Ids differing only by case get different files.
        let lower = PasteKey::new(
            Namespace::default_tenant(),
            PasteId::parse("pwab6rst").unwrap(),
        );
        assert_ne!(lower.fs_location().1, key.fs_location().1);
    }
}
