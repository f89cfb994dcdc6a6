//! In-process memory backend, for tests and benchmarks. Lost on restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::{Namespace, PasteKey, PasteStore, StoreError, StoredPaste, now_ms};

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
