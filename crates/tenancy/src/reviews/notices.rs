//! [`Catalog::review_notices`]: the PostgreSQL `LISTEN` side of the
//! notifications every review change sends in its transaction (see
//! `queries.rs`), forwarded into a bounded channel by a task of its own.
//!
//! The listener has a connection of its own (a pool of one, made from the
//! catalog's connection options), so it never holds one of the catalog's
//! pooled connections. A lost connection is re-made and reported as
//! [`ReviewNotice::Resync`]; so is a notice dropped because the receiver
//! fell more than [`NOTICE_BUFFER`] behind (the task never waits on the
//! receiver). The task ends when the receiver is dropped or the catalog's
//! pool is closed.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::ReviewNotice;
use super::queries::{CHANNEL, parse_payload};
use crate::catalog::Pool;
use crate::{Catalog, CatalogError};

/// Notices buffered for a receiver that is behind.
const NOTICE_BUFFER: usize = 1024;
/// The longest wait between attempts to re-make a lost listener.
const MAX_RETRY: Duration = Duration::from_secs(5);

/// A listener on [`CHANNEL`] on a connection of its own.
async fn listen(options: &PgConnectOptions) -> Result<(PgPool, PgListener), sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .max_lifetime(None)
        .idle_timeout(None)
        .acquire_timeout(Duration::from_secs(10))
        .connect_lazy_with(options.clone());
    let mut listener = PgListener::connect_with(&pool).await?;
    // This pool is the listener's own: it is closed only here.
    listener.ignore_pool_close_event(true);
    listener.listen(CHANNEL).await?;
    Ok((pool, listener))
}

/// Hands `notice` to the receiver without waiting; when the buffer is full
/// it is dropped and `behind` set, so a `Resync` follows. `false` once the
/// receiver is gone.
fn offer(tx: &mpsc::Sender<ReviewNotice>, notice: ReviewNotice, behind: &mut bool) -> bool {
    if *behind {
        // Whatever is dropped while behind is covered by the Resync still
        // to be sent (the task sends it as soon as there is room).
        return !tx.is_closed();
    }
    match tx.try_send(notice) {
        Ok(()) => true,
        Err(TrySendError::Full(_)) => {
            *behind = true;
            true
        }
        Err(TrySendError::Closed(_)) => false,
    }
}

/// Forwards notifications to `tx` until the receiver is dropped or the
/// catalog's pool closes.
async fn forward(
    options: PgConnectOptions,
    mut pool: PgPool,
    mut listener: PgListener,
    tx: mpsc::Sender<ReviewNotice>,
    catalog_closed: sqlx::pool::CloseEvent,
) {
    tokio::pin!(catalog_closed);
    let mut behind = false;
    loop {
        let received = tokio::select! {
            () = tx.closed() => break,
            () = &mut catalog_closed => break,
            permit = tx.reserve(), if behind => {
                if let Ok(permit) = permit {
                    permit.send(ReviewNotice::Resync);
                    behind = false;
                }
                continue;
            }
            r = listener.try_recv() => r,
        };
        match received {
            Ok(Some(notification)) => match parse_payload(notification.payload()) {
                Some(notice) => {
                    if !offer(&tx, notice, &mut behind) {
                        break;
                    }
                }
                None => tracing::warn!("ignoring a malformed review notification"),
            },
            // The connection was lost and the listener re-made it (and
            // listens again): what was sent meanwhile is missed.
            Ok(None) => {
                tracing::warn!("the review listener's connection was lost and re-made");
                if !offer(&tx, ReviewNotice::Resync, &mut behind) {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "the review listener failed; listening again");
                let mut wait = Duration::from_millis(100);
                let (new_pool, new_listener) = loop {
                    tokio::select! {
                        () = tx.closed() => return,
                        () = &mut catalog_closed => return,
                        () = tokio::time::sleep(wait) => {}
                    }
                    match listen(&options).await {
                        Ok(made) => break made,
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot listen for review notices yet");
                            wait = (wait * 2).min(MAX_RETRY);
                        }
                    }
                };
                drop(listener);
                pool.close().await;
                (pool, listener) = (new_pool, new_listener);
                if !offer(&tx, ReviewNotice::Resync, &mut behind) {
                    break;
                }
            }
        }
    }
    drop(listener);
    pool.close().await;
}

impl Catalog {
    /// Notices of review changes committed by any replica, PostgreSQL only
    /// (`None` on SQLite, where one process owns the database). The
    /// receiver yields until the catalog is dropped; a lost listening
    /// connection is re-made and reported as [`ReviewNotice::Resync`].
    ///
    /// Each call listens on a connection of its own, made before this
    /// returns (so every change committed after the call is delivered). The
    /// forwarding task ends when the receiver is dropped or the catalog is
    /// [closed](Catalog::close). A receiver more than 1024 notices behind
    /// gets [`ReviewNotice::Resync`] in place of those it missed.
    pub async fn review_notices(
        &self,
    ) -> Result<Option<mpsc::Receiver<ReviewNotice>>, CatalogError> {
        let Pool::Postgres(catalog_pool) = &self.pool else {
            return Ok(None);
        };
        let options = (*catalog_pool.connect_options()).clone();
        let (pool, listener) = listen(&options).await?;
        let (tx, rx) = mpsc::channel(NOTICE_BUFFER);
        tokio::spawn(forward(
            options,
            pool,
            listener,
            tx,
            catalog_pool.close_event(),
        ));
        Ok(Some(rx))
    }
}
