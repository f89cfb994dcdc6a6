//! [`ErrorCode`]: every stable `code` an error body can carry, stated once.
//!
//! The server answers with these (`paste-api`'s `ApiError` names one per
//! answer), the OpenAPI document lists them (the `ErrorCode` schema), the
//! CLI matches on the enum, and the portal imports the same list as
//! `crates/portal/web/error-codes.js`, generated from [`ErrorCode::js_module`]
//! (a test fails when the committed file differs; set
//! `PLANSHARE_UPDATE_GENERATED=1` to rewrite it).

use serde::{Deserialize, Serialize};

macro_rules! codes {
    ($($(#[doc = $doc:literal])+ $variant:ident => $code:literal,)+) => {
        /// A stable, machine-readable error code (kebab-case). Error bodies
        /// carry it as a string: codes may be added, and a client that
        /// meets one it does not know still has the status and the message.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum ErrorCode {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the order stated.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The code as it travels.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }
        }
    };
}

codes! {
    /// Only the owner or an approver link may decide (403).
    ApproverOnly => "approver-only",
    /// The request head breaks HTTP in a way the parser lets through.
    BadRequest => "bad-request",
    /// The body did not arrive in time.
    BodyTimeout => "body-timeout",
    /// A body larger than the route accepts.
    BodyTooLarge => "body-too-large",
    /// The body arrived slower than the minimum rate.
    BodyTooSlow => "body-too-slow",
    /// The body broke off or could not be read.
    BodyUnreadable => "body-unreadable",
    /// The tenant catalog is down or too slow (503, retry).
    CatalogUnavailable => "catalog-unavailable",
    /// A comment set changed since the writer read it (409).
    CommentsChanged => "comments-changed",
    /// A unique value is already taken.
    Conflict => "conflict",
    /// Valid credentials of the wrong kind.
    Forbidden => "forbidden",
    /// The request's header fields are too large or too many.
    HeadersTooLarge => "headers-too-large",
    /// A create with this Idempotency-Key is still running (409, retry).
    IdempotencyInProgress => "idempotency-in-progress",
    /// The Idempotency-Key was used with another body.
    IdempotencyKeyReused => "idempotency-key-reused",
    /// A bug; the body says nothing more.
    Internal => "internal",
    /// A field is missing, mistyped or out of range.
    InvalidField => "invalid-field",
    /// An id that is not well-formed.
    InvalidId => "invalid-id",
    /// A malformed Idempotency-Key.
    InvalidIdempotencyKey => "invalid-idempotency-key",
    /// The body is not one JSON object.
    InvalidJson => "invalid-json",
    /// A paste id outside `[A-Za-z0-9]{6,16}`.
    InvalidPasteId => "invalid-paste-id",
    /// The catalog refused a value.
    InvalidValue => "invalid-value",
    /// A review has no such link.
    LinkNotFound => "link-not-found",
    /// The route exists, not for this method.
    MethodNotAllowed => "method-not-allowed",
    /// A review link already writes under another name.
    NameBound => "name-bound",
    /// An approver link that has no name decided without giving one (409).
    NameRequired => "name-required",
    /// Another link of the review writes under this name.
    NameTaken => "name-taken",
    /// No such tenant or key.
    NotFound => "not-found",
    /// Too many requests in flight (503, retry).
    Overloaded => "overloaded",
    /// Only the review's owner may do this.
    OwnerOnly => "owner-only",
    /// The paste's stored data is damaged.
    PasteDamaged => "paste-damaged",
    /// No live paste under this id.
    PasteNotFound => "paste-not-found",
    /// Data larger than the tenant allows.
    PayloadTooLarge => "payload-too-large",
    /// The change is not allowed on this record.
    Protected => "protected",
    /// The tenant's storage quota is used up.
    QuotaExceeded => "quota-exceeded",
    /// A rate limit ran out (429, retry).
    RateLimited => "rate-limited",
    /// A stored part of the review is damaged.
    ReviewDamaged => "review-damaged",
    /// This round of the review is decided already (409).
    ReviewDecided => "review-decided",
    /// No review for this id and token.
    ReviewNotFound => "review-not-found",
    /// The server is shutting down (503, retry).
    ShuttingDown => "shutting-down",
    /// No subscription of this review with this id that the caller may see.
    SubscriptionNotFound => "subscription-not-found",
    /// A push on a version that is not the latest.
    StaleParent => "stale-parent",
    /// A decision on a version that is not the latest (409).
    StaleVersion => "stale-version",
    /// Storage is down or too slow (503, retry).
    StoreUnavailable => "store-unavailable",
    /// A notification target that is not allowed: not https, private,
    /// loopback or link-local after resolution, or not resolvable (422).
    TargetNotAllowed => "target-not-allowed",
    /// The tenant is disabled.
    TenantDisabled => "tenant-disabled",
    /// The review has had the most changes one review may have.
    TooManyChanges => "too-many-changes",
    /// The review has the most live links it may have.
    TooManyLinks => "too-many-links",
    /// Too many event streams are open (429, retry).
    TooManyStreams => "too-many-streams",
    /// The review has the most subscriptions it may have.
    TooManySubscriptions => "too-many-subscriptions",
    /// The review has the most versions it may have.
    TooManyVersions => "too-many-versions",
    /// Missing or malformed credentials.
    Unauthorized => "unauthorized",
    /// The body names a field the route does not accept.
    UnknownField => "unknown-field",
    /// The body is not `application/json`.
    UnsupportedMediaType => "unsupported-media-type",
    /// A Transfer-Encoding other than chunked.
    UnsupportedTransferCoding => "unsupported-transfer-coding",
    /// A review has no such version.
    VersionNotFound => "version-not-found",
}

impl ErrorCode {
    /// The code named `code`, if it is one of ours.
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// The portal's `error-codes.js`: the same list, as a frozen object
    /// from the variant's name in lower camel case to the code.
    pub fn js_module() -> String {
        let mut out = String::from(
            "// Generated from api-types' ErrorCode (crates/api-types/src/codes.rs):\n\
             // every `code` an error body can carry. Do not edit; a test holds\n\
             // this file to the enum (PLANSHARE_UPDATE_GENERATED=1 rewrites it).\n\
             export const ERROR_CODES = Object.freeze({\n",
        );
        for code in ErrorCode::ALL {
            let name = format!("{code:?}");
            let mut camel = name[..1].to_ascii_lowercase();
            camel.push_str(&name[1..]);
            out.push_str(&format!("  {camel}: \"{}\",\n", code.as_str()));
        }
        out.push_str("});\n");
        out
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn each_code_travels_as_stated_and_is_unique() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.as_str(), "{code:?}");
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
            assert!(seen.insert(code.as_str()), "{code:?} twice");
            assert!(
                code.as_str()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{code:?}"
            );
        }
        assert_eq!(ErrorCode::parse("no-such-code"), None);
    }

    /// The clients compare codes through the list, never by spelling one:
    /// in no portal module (but the generated list) and no CLI source
    /// outside its tests does a line about a `code` hold one as a string
    /// literal (some codes are plain words, "not-found" a CSS class too).
    #[test]
    fn no_client_spells_a_code() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut sources = Vec::new();
        let vendored = [
            "error-codes.js",
            "marked.esm.js",
            "purify.es.mjs",
            "qrcode.mjs",
        ];
        for entry in std::fs::read_dir(root.join("crates/portal/web")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".js")
                && !vendored.contains(&name.as_str())
                && !name.contains(".min.")
            {
                sources.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
        let mut dirs = vec![root.join("services/cli/src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let code = text.split("#[cfg(test)]").next().unwrap_or("").to_owned();
                    sources.push((path, code));
                }
            }
        }
        assert!(sources.len() > 20, "found the sources: {}", sources.len());
        for (path, text) in &sources {
            for line in text.lines().filter(|l| l.contains("code")) {
                for code in ErrorCode::ALL {
                    let literal = format!("\"{}\"", code.as_str());
                    assert!(
                        !line.contains(&literal),
                        "{}: {line:?} spells {literal}; use ErrorCode / ERROR_CODES",
                        path.display()
                    );
                }
            }
        }
    }

    #[test]
    fn the_portal_imports_the_same_list() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../portal/web/error-codes.js");
        let generated = ErrorCode::js_module();
        if std::env::var_os("PLANSHARE_UPDATE_GENERATED").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "crates/portal/web/error-codes.js differs from ErrorCode: run \
             PLANSHARE_UPDATE_GENERATED=1 cargo test -p api-types codes"
        );
    }
}
