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
use crate::backends::keyed::{self, StoredKeyKind, ValueHead};
use crate::{PasteKey, RECORD_HEADER_LEN, StoreError};

impl RedisStore {
    /// The prefix of every key the store writes.
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// The Redis key of `key`.
    pub fn key_name(&self, key: &PasteKey) -> String {
        key.redis_key(&self.key_prefix)
    }

    /// What the key `name` (as `SCAN` gives it) is.
    pub fn classify(&self, name: &str) -> StoredKeyKind {
        keyed::classify(&self.key_prefix, ':', name)
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
            .map(|((head, len), present)| {
                (present == 1).then_some(ValueHead {
                    head,
                    len,
                    tag: None,
                })
            })
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
        let Some(dest) = keyed::quarantine_name(&self.key_prefix, ':', name) else {
            return Err(StoreError::internal("a key outside the store's prefix"));
        };
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
