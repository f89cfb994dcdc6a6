//! The Redis store as the doctor sees it: its keys a `SCAN` page at a time,
//! the heads of their values without the payloads, and the repairs.
//!
//! Keys are `<prefix><namespace>:<id>` (a paste) and
//! `<prefix><namespace>:r:<id>` (a review blob). A damaged value is renamed
//! to `<prefix>.quarantine:<namespace>:…` (a namespace cannot start with a
//! dot), keeping its time to live: Redis expires it as it would have the
//! paste. Redis removes expired keys itself, and a put never replaces a
//! key (`SET … NX`), so a key the doctor checked is the key it repairs
//! unless it was deleted meanwhile (then there is nothing to repair).

use super::RedisStore;
use crate::{Namespace, PasteId, PasteKey, RECORD_HEADER_LEN, StoreError};

/// Where damaged values go, after the key prefix.
pub const REDIS_QUARANTINE: &str = ".quarantine:";

/// What a key under the store's prefix is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisKeyKind {
    /// A paste.
    Paste(PasteKey),
    /// A review blob.
    ReviewBlob(PasteKey),
    /// A value the doctor moved aside.
    Quarantined,
    /// A key the store never writes.
    Unknown,
}

/// The first bytes of a value (up to a record header) and its length.
#[derive(Clone, Debug)]
pub struct ValueHead {
    /// Up to [`RECORD_HEADER_LEN`] bytes.
    pub head: Vec<u8>,
    /// The value's length.
    pub len: u64,
}

impl RedisStore {
    /// The Redis key of `key`.
    pub fn key_name(&self, key: &PasteKey) -> String {
        key.redis_key(&self.key_prefix)
    }

    /// What the key `name` (as `SCAN` gives it) is.
    pub fn classify(&self, name: &str) -> RedisKeyKind {
        let Some(rest) = name.strip_prefix(self.key_prefix.as_str()) else {
            return RedisKeyKind::Unknown;
        };
        if rest.starts_with(REDIS_QUARANTINE) {
            return RedisKeyKind::Quarantined;
        }
        let mut parts = rest.split(':');
        let (Some(ns), Some(second)) = (parts.next(), parts.next()) else {
            return RedisKeyKind::Unknown;
        };
        let Ok(namespace) = Namespace::parse(ns) else {
            return RedisKeyKind::Unknown;
        };
        match (second, parts.next(), parts.next()) {
            (id, None, None) => PasteId::parse(id).map_or(RedisKeyKind::Unknown, |id| {
                RedisKeyKind::Paste(PasteKey::new(namespace, id))
            }),
            ("r", Some(id), None) => PasteId::parse(id).map_or(RedisKeyKind::Unknown, |id| {
                RedisKeyKind::ReviewBlob(PasteKey::review_blob(namespace, id))
            }),
            _ => RedisKeyKind::Unknown,
        }
    }

    /// One `SCAN` page of the keys under the store's prefix: the next
    /// cursor (0 when done) and the keys.
    pub async fn scan_keys(
        &self,
        cursor: u64,
        count: usize,
    ) -> Result<(u64, Vec<String>), StoreError> {
        let mut pattern = String::with_capacity(self.key_prefix.len() + 1);
        for c in self.key_prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('*');
        let mut scan = redis::cmd("SCAN");
        scan.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count);
        self.query(&scan).await
    }

    /// The head and length of each value of `names`; `None` for a key that
    /// is gone.
    pub async fn heads(&self, names: &[String]) -> Result<Vec<Option<ValueHead>>, StoreError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut ranges = redis::pipe();
        let mut lengths = redis::pipe();
        let mut exists = redis::pipe();
        for name in names {
            ranges
                .cmd("GETRANGE")
                .arg(name)
                .arg(0)
                .arg(RECORD_HEADER_LEN - 1);
            lengths.cmd("STRLEN").arg(name);
            exists.cmd("EXISTS").arg(name);
        }
        let heads: Vec<Vec<u8>> = self.query_pipe(&ranges).await?;
        let lens: Vec<u64> = self.query_pipe(&lengths).await?;
        // Asked last: a key deleted while its head was read is gone, not
        // an empty (damaged) value.
        let present: Vec<u8> = self.query_pipe(&exists).await?;
        Ok(heads
            .into_iter()
            .zip(lens)
            .zip(present)
            .map(|((head, len), present)| (present == 1).then_some(ValueHead { head, len }))
            .collect())
    }

    /// The whole value of `name`, if it is there.
    pub async fn value(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(name);
        self.query(&get).await
    }

    /// Whether each key of `names` exists.
    pub async fn exist(&self, names: &[String]) -> Result<Vec<bool>, StoreError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut exists = redis::pipe();
        for name in names {
            exists.cmd("EXISTS").arg(name);
        }
        let found: Vec<u8> = self.query_pipe(&exists).await?;
        Ok(found.into_iter().map(|n| n == 1).collect())
    }

    /// Renames the value of `name` into the quarantine (its time to live
    /// kept); returns the new key, or `None` when the key is gone.
    pub async fn quarantine(&self, name: &str) -> Result<Option<String>, StoreError> {
        let Some(rest) = name.strip_prefix(self.key_prefix.as_str()) else {
            return Err(StoreError::internal("a key outside the store's prefix"));
        };
        let dest = format!("{}{REDIS_QUARANTINE}{rest}", self.key_prefix);
        let mut rename = redis::cmd("RENAME");
        rename.arg(name).arg(&dest);
        match self.query::<String>(&rename).await {
            Ok(_) => Ok(Some(dest)),
            // "ERR no such key": deleted meanwhile.
            Err(_) if !self.exist(&[name.to_owned()]).await?[0] => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes the value of `name` (an expired one Redis kept: a key
    /// without a time to live).
    pub async fn remove(&self, name: &str) -> Result<bool, StoreError> {
        let mut del = redis::cmd("DEL");
        del.arg(name);
        Ok(self.query::<u64>(&del).await? == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RedisConfig;

    #[tokio::test]
    async fn keys_are_told_apart_by_their_names() {
        let store = RedisStore::open(&RedisConfig {
            url: "redis://127.0.0.1:1".into(),
            ..RedisConfig::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let ns = Namespace::parse("team-a").unwrap_or_else(|e| panic!("{e}"));
        let id = PasteId::parse("AbCd1234").unwrap_or_else(|e| panic!("{e}"));
        let paste = PasteKey::new(ns.clone(), id.clone());
        let blob = PasteKey::review_blob(ns, id);
        assert_eq!(
            store.classify(&store.key_name(&paste)),
            RedisKeyKind::Paste(paste)
        );
        assert_eq!(
            store.classify(&store.key_name(&blob)),
            RedisKeyKind::ReviewBlob(blob)
        );
        assert_eq!(
            store.classify("planshare:paste:.quarantine:team-a:AbCd1234"),
            RedisKeyKind::Quarantined
        );
        for odd in [
            "other:team-a:AbCd1234",
            "planshare:paste:team-a",
            "planshare:paste:Team:AbCd1234",
            "planshare:paste:team-a:abc",
            "planshare:paste:team-a:x:AbCd1234",
            "planshare:paste:team-a:r:AbCd1234:extra",
        ] {
            assert_eq!(store.classify(odd), RedisKeyKind::Unknown, "{odd}");
        }
    }
}
