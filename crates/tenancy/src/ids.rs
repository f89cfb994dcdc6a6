//! Typed ids of tenants and API keys: a prefix and random base62 characters.

use std::fmt;

use serde::{Deserialize, Serialize};

use api_types::rules;

use crate::CatalogError;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Length of the random part of generated ids (≈ 95 bits).
const RANDOM_LEN: usize = 16;

/// `n` characters of base62 from the operating system's CSPRNG, by rejection
/// sampling (no modulo bias).
pub(crate) fn random_base62(n: usize) -> Result<String, CatalogError> {
    let mut out = String::with_capacity(n);
    let mut buf = [0u8; 64];
    while out.len() < n {
        getrandom::fill(&mut buf)
            .map_err(|_| CatalogError::internal("the operating system's random source failed"))?;
        for b in buf {
            // 248 = 4 * 62: values above would bias the first characters.
            if b < 248 && out.len() < n {
                out.push(char::from(BASE62[usize::from(b % 62)]));
            }
        }
    }
    Ok(out)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:expr, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The prefix every id of this kind starts with.
            pub const PREFIX: &'static str = $prefix;

            /// Validates `s`: the prefix, then 1–32 characters of `[A-Za-z0-9]`
            /// ([`rules::is_id`]).
            pub fn parse(s: &str) -> Result<Self, CatalogError> {
                if rules::is_id(s, Self::PREFIX) {
                    Ok($name(s.to_owned()))
                } else {
                    Err(CatalogError::Invalid(format!(
                        "invalid {}: expected {}<letters and digits>",
                        $what,
                        Self::PREFIX
                    )))
                }
            }

            /// A fresh random id: the prefix and 16 base62 characters.
            pub fn generate() -> Result<Self, CatalogError> {
                Ok($name(format!("{}{}", Self::PREFIX, random_base62(RANDOM_LEN)?)))
            }

            /// The id as a string.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = CatalogError;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                $name::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

id_type!(
    /// A tenant's id: `tnt_` and base62 characters (`tnt_default` for the default tenant).
    TenantId,
    rules::TENANT_ID_PREFIX,
    "tenant id"
);
id_type!(
    /// An API key's id (not its secret): `key_` and base62 characters.
    KeyId,
    rules::KEY_ID_PREFIX,
    "key id"
);

impl TenantId {
    /// The id of the default tenant, created by the first migration.
    pub const DEFAULT: &'static str = "tnt_default";

    /// The default tenant's id.
    pub fn default_tenant() -> Self {
        TenantId(Self::DEFAULT.to_owned())
    }

    /// Whether this is the default tenant.
    pub fn is_default(&self) -> bool {
        self.0 == Self::DEFAULT
    }

    /// Wraps a value read from the database (already valid by construction).
    pub(crate) fn from_db(s: String) -> Self {
        TenantId(s)
    }
}

impl KeyId {
    /// Wraps a value read from the database (already valid by construction).
    pub(crate) fn from_db(s: String) -> Self {
        KeyId(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_and_are_distinct() {
        let a = TenantId::generate().unwrap();
        let b = TenantId::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 4 + 16);
        assert_eq!(TenantId::parse(a.as_str()).unwrap(), a);
        assert!(TenantId::parse("key_abc").is_err());
        assert!(TenantId::parse("tnt_").is_err());
        assert!(TenantId::parse("tnt_a-b").is_err());
        assert!(KeyId::parse(KeyId::generate().unwrap().as_str()).is_ok());
        assert!(TenantId::parse(TenantId::DEFAULT).is_ok());
    }
}
