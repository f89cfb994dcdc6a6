//! A [`PasteStore`] wrapper that records every operation through the
//! `metrics` facade (a no-op until a recorder is installed), in the manner
//! of object_store's wrapper stores: wrap any backend, change nothing about
//! its answers.
//!
//! | metric | labels |
//! |---|---|
//! | `planshare_store_operations_total` | `backend`, `operation`, `outcome` (`ok`, `not_found`, `already_exists`, `unavailable`, `internal`, `damaged`) |
//! | `planshare_store_operation_duration_seconds` (histogram) | `backend`, `operation` |
//! | `planshare_store_errors_total` | `backend`, `operation`, `kind` (`unavailable`, `internal`, `damaged`) |
//!
//! A damaged read is also logged once here (where and what, never its
//! bytes): the backends do not log it.

use std::sync::Arc;
use std::time::Instant;

use crate::{Namespace, PasteKey, PasteStore, StoreError, StoredPaste};

/// Store operations, by backend, operation and outcome.
pub const STORE_OPERATIONS: &str = "planshare_store_operations_total";
/// Store operation duration in seconds, by backend and operation.
pub const STORE_DURATION: &str = "planshare_store_operation_duration_seconds";
/// Store operations that failed (not-found and already-exists are answers,
/// not failures), by backend, operation and kind.
pub const STORE_ERRORS: &str = "planshare_store_errors_total";

/// A [`PasteStore`] that records the latency and outcome of every operation
/// of the store it wraps.
///
/// The label sets are fixed (backend, operation, outcome), so every series is
/// registered once, when the store is wrapped, and recording is an atomic
/// update instead of a registry lookup per request. The process's recorder
/// must be installed before that (the server does); every series therefore
/// shows from start-up, at zero until something happens.
pub struct Instrumented {
    inner: Arc<dyn PasteStore>,
    /// Indexed by [`Operation`].
    operations: [OperationMetrics; 5],
}

impl std::fmt::Debug for Instrumented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrumented")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The store operations, as the `operation` label names them.
#[derive(Clone, Copy)]
enum Operation {
    Put,
    Get,
    Delete,
    Health,
    Purge,
}

const OPERATIONS: [Operation; 5] = [
    Operation::Put,
    Operation::Get,
    Operation::Delete,
    Operation::Health,
    Operation::Purge,
];

impl Operation {
    fn label(self) -> &'static str {
        match self {
            Operation::Put => "put",
            Operation::Get => "get",
            Operation::Delete => "delete",
            Operation::Health => "health",
            Operation::Purge => "purge",
        }
    }
}
const OUTCOMES: [&str; 6] = [
    "ok",
    "not_found",
    "already_exists",
    "unavailable",
    "internal",
    "damaged",
];

/// The series of one store operation.
struct OperationMetrics {
    duration: metrics::Histogram,
    /// By outcome, in the order of [`OUTCOMES`].
    outcomes: [metrics::Counter; 6],
    /// For the outcomes `unavailable`, `internal` and `damaged`.
    errors: [metrics::Counter; 3],
}

impl OperationMetrics {
    fn register(backend: &'static str, operation: Operation) -> Self {
        let operation = operation.label();
        let outcome = |outcome: &'static str| {
            metrics::counter!(
                STORE_OPERATIONS,
                "backend" => backend,
                "operation" => operation,
                "outcome" => outcome,
            )
        };
        let error = |kind: &'static str| {
            metrics::counter!(
                STORE_ERRORS,
                "backend" => backend,
                "operation" => operation,
                "kind" => kind,
            )
        };
        OperationMetrics {
            duration: metrics::histogram!(
                STORE_DURATION,
                "backend" => backend,
                "operation" => operation
            ),
            outcomes: OUTCOMES.map(outcome),
            errors: [error("unavailable"), error("internal"), error("damaged")],
        }
    }
}

impl Instrumented {
    /// Wraps `store`.
    pub fn wrap(store: Arc<dyn PasteStore>) -> Arc<dyn PasteStore> {
        let backend = store.backend();
        Arc::new(Instrumented {
            inner: store,
            operations: OPERATIONS.map(|operation| OperationMetrics::register(backend, operation)),
        })
    }

    fn record<T>(&self, operation: Operation, started: Instant, result: &Result<T, StoreError>) {
        let series = &self.operations[operation as usize];
        let outcome = match result {
            Ok(_) => 0,
            Err(StoreError::NotFound) => 1,
            Err(StoreError::AlreadyExists) => 2,
            Err(StoreError::Unavailable { .. }) => 3,
            Err(StoreError::Internal { .. }) => 4,
            Err(StoreError::Damaged { .. }) => 5,
        };
        series.duration.record(started.elapsed().as_secs_f64());
        series.outcomes[outcome].increment(1);
        if outcome >= 3 {
            series.errors[outcome - 3].increment(1);
        }
    }
}

#[async_trait::async_trait]
impl PasteStore for Instrumented {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.put_if_absent(key, paste).await;
        self.record(Operation::Put, started, &result);
        result
    }

    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        let started = Instant::now();
        let result = self.inner.get(key).await;
        self.record(Operation::Get, started, &result);
        if let Err(StoreError::Damaged { reason, .. }) = &result {
            // The one log line of a damaged read (backends do not log it):
            // where it is and what is wrong, never its bytes.
            tracing::warn!(
                backend = self.inner.backend(),
                namespace = %key.namespace(),
                paste.id = %key.id(),
                damage = %reason,
                "damaged paste: it answers 410 until it is deleted"
            );
        }
        result
    }

    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.delete(key).await;
        self.record(Operation::Delete, started, &result);
        result
    }

    async fn health(&self) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.health().await;
        self.record(Operation::Health, started, &result);
        result
    }

    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let started = Instant::now();
        let result = self.inner.purge_namespace(namespace).await;
        self.record(Operation::Purge, started, &result);
        result
    }
}
