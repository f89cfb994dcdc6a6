//! In-process memory backend, for tests and benchmarks. Lost on restart.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::inventory::{
    EntryKind, InventoryEntry, Page, RecordHead, StoreInventory, TopLevel, head_of, page_after,
};
use crate::{
    KeyKind, Namespace, PasteKey, PasteStore, RecordProblem, StoreError, StoredPaste, now_ms,
    record,
};

/// Pastes in a map behind a mutex. Expired entries read as absent; they are
/// dropped when their key is written again and by a purge every
/// [`PURGE_EVERY`] puts.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<PasteKey, StoredPaste>>,
    puts: AtomicU64,
}

/// Number of puts between purges of expired entries.
const PURGE_EVERY: u64 = 4096;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many values it holds, expired ones included (for tests).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no value at all.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PasteKey, StoredPaste>> {
        // A panic while holding the lock cannot leave the map half-updated
        // (every mutation is a single insert/remove), so poisoning is ignored.
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait::async_trait]
impl PasteStore for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        let now = now_ms();
        let mut map = self.lock();
        if self.puts.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            map.retain(|_, paste| !paste.is_expired_at(now));
        }
        if map
            .get(key)
            .is_some_and(|existing| !existing.is_expired_at(now))
        {
            return Err(StoreError::AlreadyExists);
        }
        map.insert(key.clone(), paste);
        Ok(())
    }

    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        let now = now_ms();
        match self.lock().get(key) {
            Some(paste) if !paste.is_expired_at(now) => Ok(paste.clone()),
            _ => Err(StoreError::NotFound),
        }
    }

    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        self.lock().remove(key);
        Ok(())
    }

    async fn health(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|key, _| key.namespace() != namespace);
        Ok((before - map.len()) as u64)
    }
}

/// The memory store's listing: its map's keys, named `<namespace>/<id>`
/// (a paste) and `<namespace>/r/<id>` (a review blob) and listed in that
/// order; a value is always a whole record (a put wrote it), expired ones
/// included until they are dropped.
#[async_trait::async_trait]
impl StoreInventory for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn location(&self, key: &PasteKey) -> String {
        key.object_key("")
    }

    async fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<TopLevel>, StoreError> {
        let names: BTreeSet<String> = self
            .lock()
            .keys()
            .map(|key| key.namespace().as_str().to_owned())
            .collect();
        let sorted: Vec<(String, ())> = names.into_iter().map(|n| (n, ())).collect();
        let (items, next) = page_after(&sorted, after, limit);
        Ok(Page {
            items: items
                .into_iter()
                .filter_map(|(name, ())| Namespace::parse(&name).ok().map(TopLevel::Namespace))
                .collect(),
            next,
        })
    }

    async fn entries(
        &self,
        namespace: Option<&Namespace>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<InventoryEntry>, StoreError> {
        let mut sorted: Vec<(String, (PasteKey, RecordHead))> = self
            .lock()
            .iter()
            .filter(|(key, _)| namespace.is_none_or(|ns| key.namespace() == ns))
            .map(|(key, paste)| {
                let (header, _) = record::encode_parts(paste);
                let len = record::encoded_len(paste) as u64;
                (
                    self.location(key),
                    (key.clone(), head_of(&header, len, None)),
                )
            })
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let (items, next) = page_after(&sorted, cursor, limit);
        Ok(Page {
            items: items
                .into_iter()
                .map(|(name, (key, head))| InventoryEntry {
                    name,
                    kind: match key.kind() {
                        KeyKind::Paste => EntryKind::Paste(key),
                        KeyKind::ReviewBlob => EntryKind::ReviewBlob(key),
                    },
                    record: Some(head),
                })
                .collect(),
            next,
        })
    }

    async fn contains(&self, keys: &[PasteKey]) -> Result<Vec<bool>, StoreError> {
        let map = self.lock();
        Ok(keys.iter().map(|key| map.contains_key(key)).collect())
    }

    async fn check_payload(
        &self,
        entry: &InventoryEntry,
    ) -> Result<Option<Result<(), RecordProblem>>, StoreError> {
        let Some(key) = entry.kind.key() else {
            return Ok(None);
        };
        // What a put stored is a whole record; a text payload is a `String`.
        Ok(self.lock().contains_key(key).then_some(Ok(())))
    }
}
