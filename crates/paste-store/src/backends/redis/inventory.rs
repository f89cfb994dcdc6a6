//! The Redis store as the doctor sees it: its listing ([`StoreInventory`]:
//! its keys a `SCAN` page at a time, the heads of their values without the
//! payloads), and the repairs.
//!
//! Keys are `<prefix><namespace>:<id>` (a paste) and
//! `<prefix><namespace>:r:<id>` (a review blob). A damaged value is renamed
//! to `<prefix>.quarantine:<namespace>:…` (a namespace cannot start with a
//! dot), keeping its time to live: Redis expires it as it would have the
//! paste. Redis removes expired keys itself, and a put never replaces a
//! key (`SET … NX`), so a key the doctor checked is the key it repairs
//! unless it was deleted meanwhile (then there is nothing to repair).

use std::collections::BTreeMap;

use super::RedisStore;
use crate::backends::keyed::{self, StoredKeyKind, ValueHead};
use crate::inventory::{EntryKind, InventoryEntry, Page, StoreInventory, TopLevel, check_whole};
use crate::{Namespace, PasteKey, RECORD_HEADER_LEN, RecordProblem, StoreError};

/// Keys asked for per `SCAN` step when the whole keyspace is walked.
const SCAN_COUNT: usize = 1000;

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
    pub(crate) fn classify(&self, name: &str) -> StoredKeyKind {
        keyed::classify(&self.key_prefix, ':', name)
    }

    /// One `SCAN` step over the keys under the store's prefix followed by
    /// `within` (empty: all of them): the next cursor (0 when done) and
    /// the keys.
    async fn scan_keys(
        &self,
        within: &str,
        cursor: u64,
        count: usize,
    ) -> Result<(u64, Vec<String>), StoreError> {
        let mut pattern = String::with_capacity(self.key_prefix.len() + within.len() + 1);
        for c in self.key_prefix.chars().chain(within.chars()) {
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
    pub(crate) async fn heads(
        &self,
        names: &[String],
    ) -> Result<Vec<Option<ValueHead>>, StoreError> {
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
    pub(crate) async fn exist(&self, names: &[String]) -> Result<Vec<bool>, StoreError> {
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

/// The Redis store's listing: `SCAN` (in no order; a key may come twice if
/// the keyspace is resized meanwhile), the cursor being `SCAN`'s own; the
/// heads read with `GETRANGE` and `STRLEN` in one pipeline a page. The
/// namespaces are found by scanning the whole keyspace for each page of
/// them, keeping only that page's: there are few namespaces beside keys.
/// A key under the prefix whose first part is a namespace belongs to it
/// (listed with its entries, unknown if it is not a paste's or a review
/// blob's); any other is an unknown name at the top.
#[async_trait::async_trait]
impl StoreInventory for RedisStore {
    fn backend(&self) -> &'static str {
        "redis"
    }

    fn location(&self, key: &PasteKey) -> String {
        self.key_name(key)
    }

    async fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<TopLevel>, StoreError> {
        let limit = limit.max(1);
        // The first `limit + 1` names after `after`, by their sort name.
        let mut found: BTreeMap<String, TopLevel> = BTreeMap::new();
        let mut cursor = 0;
        loop {
            let (next, names) = self.scan_keys("", cursor, SCAN_COUNT).await?;
            for name in names {
                if self.classify(&name) == StoredKeyKind::Quarantined {
                    continue;
                }
                let rest = name.strip_prefix(&self.key_prefix).unwrap_or(&name);
                let (sort, top) = match rest.split_once(':').map(|(ns, _)| Namespace::parse(ns)) {
                    Some(Ok(ns)) => (ns.as_str().to_owned(), TopLevel::Namespace(ns)),
                    _ => (rest.to_owned(), TopLevel::Unknown(name.clone())),
                };
                if after.is_some_and(|after| sort.as_str() <= after) || found.contains_key(&sort) {
                    continue;
                }
                found.insert(sort, top);
                // One more than a page: whether there is a next one.
                if found.len() > limit + 1 {
                    found.pop_last();
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let more = found.len() > limit;
        if more {
            found.pop_last();
        }
        let next = more
            .then(|| found.last_key_value().map(|(sort, _)| sort.clone()))
            .flatten();
        Ok(Page {
            items: found.into_values().collect(),
            next,
        })
    }

    async fn entries(
        &self,
        namespace: Option<&Namespace>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<InventoryEntry>, StoreError> {
        let from = match cursor {
            Some(cursor) => cursor
                .parse()
                .map_err(|_| StoreError::internal("not a Redis listing cursor"))?,
            None => 0,
        };
        let within = namespace.map(|ns| format!("{ns}:")).unwrap_or_default();
        // `SCAN`'s `COUNT` is buckets looked at, not keys matched: a small
        // page over a sparse namespace in a large keyspace would take one
        // call per `limit` buckets. So a step starts at `limit` buckets and
        // doubles while the page is not full, until the keyspace ends or
        // about `SCAN_COUNT` buckets were looked at: a whole listing takes
        // at most about keyspace / `SCAN_COUNT` calls of a few steps each,
        // whatever the page size, and a dense namespace still comes
        // `limit` at a time (the last step's matches over `limit` at most
        // what the steps before it found).
        let mut step = limit.max(1);
        let mut names = Vec::new();
        let mut cursor = from;
        let mut looked_at = 0;
        loop {
            let (next, mut found) = self.scan_keys(&within, cursor, step).await?;
            names.append(&mut found);
            looked_at += step;
            cursor = next;
            if cursor == 0 || names.len() >= limit.max(1) || looked_at >= SCAN_COUNT {
                break;
            }
            step = (step * 2).min(SCAN_COUNT);
        }
        let next = cursor;
        let (listed, records) = keyed::classified(names, |name| self.classify(name));
        let heads = self.heads(&records).await?;
        let items = keyed::with_heads(listed, heads);
        Ok(Page {
            items,
            next: (next != 0).then(|| next.to_string()),
        })
    }

    async fn contains(&self, keys: &[PasteKey]) -> Result<Vec<bool>, StoreError> {
        let names: Vec<String> = keys.iter().map(|key| self.key_name(key)).collect();
        self.exist(&names).await
    }

    async fn check_payload(
        &self,
        entry: &InventoryEntry,
    ) -> Result<Option<Result<(), RecordProblem>>, StoreError> {
        if entry.kind == EntryKind::Unknown {
            return Ok(None);
        }
        Ok(self
            .value(&entry.name)
            .await?
            .map(|bytes| check_whole(&bytes)))
    }
}
