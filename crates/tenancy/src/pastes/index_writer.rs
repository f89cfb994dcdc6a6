//! Group commit of paste-index writes.
//!
//! Every indexed create (a non-default tenant's, a `/api/v1` one, a tenant
//! with a quota) writes its index row and quota reservation to the catalog
//! before the paste is stored. One transaction per create would cost a
//! commit — a flush with SQLite's `synchronous=FULL` — each; instead creates
//! queue their writes here and a worker commits whatever has queued up
//! while the previous commit ran, in one transaction
//! ([`Catalog::record_pastes`]). Each create still gets its own answer
//! (stored, over quota, id taken) and waits for the commit that holds it.
//!
//! One worker on SQLite (its writers serialise anyway), four on PostgreSQL.
//! The workers stop when the writer (and with it the queue) is dropped.

use std::sync::{Arc, OnceLock};

use crate::{Backend, Catalog, CatalogError, LazyCatalog, PasteRecord, TenantId};
use tokio::sync::{Mutex, mpsc, oneshot};

/// Most writes committed together.
const MAX_BATCH: usize = 256;
/// Writes waiting at most; beyond, creates wait for room (and their own
/// timeout).
const QUEUE: usize = 4096;

struct Job {
    tenant: TenantId,
    record: PasteRecord,
    reply: oneshot::Sender<Result<bool, CatalogError>>,
}

/// The queue of index writes and its workers (started on first use).
pub struct IndexWriter {
    catalog: Arc<LazyCatalog>,
    queue: OnceLock<mpsc::Sender<Job>>,
}

impl IndexWriter {
    /// A writer for `catalog`; its workers start with the first write.
    pub fn new(catalog: Arc<LazyCatalog>) -> Self {
        IndexWriter {
            catalog,
            queue: OnceLock::new(),
        }
    }

    /// [`Catalog::record_paste`], committed together with whatever other
    /// writes are waiting.
    pub async fn record(
        &self,
        tenant: TenantId,
        record: PasteRecord,
    ) -> Result<bool, CatalogError> {
        let catalog = self.catalog.get().await?;
        let queue = self.queue.get_or_init(|| start_workers(&catalog));
        let (reply, answer) = oneshot::channel();
        queue
            .send(Job {
                tenant,
                record,
                reply,
            })
            .await
            .map_err(|_| CatalogError::internal("the index writer has stopped"))?;
        answer
            .await
            .map_err(|_| CatalogError::internal("the index writer dropped a write"))?
    }
}

fn start_workers(catalog: &Arc<Catalog>) -> mpsc::Sender<Job> {
    let (queue, jobs) = mpsc::channel(QUEUE);
    let jobs = Arc::new(Mutex::new(jobs));
    let workers = match catalog.backend() {
        Backend::Sqlite => 1,
        Backend::Postgres => 4,
    };
    for _ in 0..workers {
        tokio::spawn(work(catalog.clone(), jobs.clone()));
    }
    queue
}

async fn work(catalog: Arc<Catalog>, jobs: Arc<Mutex<mpsc::Receiver<Job>>>) {
    loop {
        let batch = {
            let mut jobs = jobs.lock().await;
            let Some(first) = jobs.recv().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            batch
        };
        let writes: Vec<(TenantId, PasteRecord)> = batch
            .iter()
            .map(|job| (job.tenant.clone(), job.record.clone()))
            .collect();
        match catalog.record_pastes(&writes).await {
            Ok(results) => {
                for (job, result) in batch.into_iter().zip(results) {
                    let stored = matches!(result, Ok(true));
                    if job.reply.send(result).is_err() && stored {
                        // The create gave up waiting (its timeout): it will
                        // not store the paste, so give the reservation back.
                        if let Err(error) = catalog.forget_paste(&job.tenant, &job.record.id).await
                        {
                            tracing::warn!(%error, "cannot release an abandoned reservation");
                        }
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, writes = writes.len(), "paste index batch failed");
                for job in batch {
                    let _ = job.reply.send(Err(error.duplicate()));
                }
            }
        }
    }
}
