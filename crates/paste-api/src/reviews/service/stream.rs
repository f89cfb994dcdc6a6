//! One follower of a review's events ([`Feed`]): the replay of what it
//! missed, then each new event once, in sequence order, with no gap — the
//! hub's signals when they line up, the catalog when they do not.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tenancy::{EventKind, ReviewEvent, Role};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use super::context::ReviewService;
use super::error::ReviewError;
use super::hub::{Holder, Signal, StreamRefusal, Subscription};
use super::ops::Caller;

/// What a follower gets next.
#[derive(Debug)]
pub(crate) enum Next {
    /// The next event.
    Event(ReviewEvent),
    /// The caller's own link was revoked (this is that event); the feed ends.
    Revoked(ReviewEvent),
    /// The review was deleted or expired; the feed ends.
    Closed(&'static str),
    /// Nothing happened for the idle time (time for a keep-alive).
    Idle,
    /// The server is shutting down; the feed ends (the client reconnects).
    ShuttingDown,
}

/// See the module documentation. Dropping it gives its stream place back.
pub(crate) struct Feed {
    service: Arc<ReviewService>,
    caller: Caller,
    subscription: Subscription,
    shutdown: watch::Receiver<bool>,
    /// The last sequence number handed out.
    last: i64,
    backlog: VecDeque<ReviewEvent>,
    /// The last read from the catalog filled a whole page: more events
    /// wait there, to be read once the backlog is handed out.
    more_in_catalog: bool,
    expires_at: Instant,
    ended: bool,
}

impl Feed {
    /// Opens a feed of the caller's review after sequence number `after`
    /// for a client at `client`: takes a stream place, then reads what was
    /// missed (in that order, so nothing committed in between is lost).
    pub(crate) async fn open(
        service: &Arc<ReviewService>,
        caller: Caller,
        after: i64,
        client: Option<IpAddr>,
    ) -> Result<Result<Feed, StreamRefusal>, ReviewError> {
        let head = &caller.principal.review;
        let holder = Holder {
            link: caller.principal.link.clone(),
            client,
        };
        let subscription = match service.hub.subscribe(&head.tenant, &head.id, holder) {
            Ok(s) => s,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let left_ms = head.expires_at.saturating_sub(crate::within::now_ms_i64());
        let expires_at =
            Instant::now() + Duration::from_millis(u64::try_from(left_ms).unwrap_or(0));
        let mut feed = Feed {
            shutdown: service.hub.shutdown_signal(),
            service: service.clone(),
            caller,
            subscription,
            last: after.max(0),
            backlog: VecDeque::new(),
            more_in_catalog: false,
            expires_at,
            ended: false,
        };
        feed.reread().await?;
        Ok(Ok(feed))
    }

    /// The last sequence number handed out.
    pub(crate) fn last(&self) -> i64 {
        self.last
    }

    /// Whether anything is ready without waiting (in hand, or further
    /// pages of a long replay in the catalog).
    pub(crate) fn has_backlog(&self) -> bool {
        !self.backlog.is_empty() || self.more_in_catalog
    }

    /// Waits for the next event, at most `idle`. Cancel-safe: an event is
    /// counted as handed out only when it is returned.
    pub(crate) async fn next(&mut self, idle: Duration) -> Result<Next, ReviewError> {
        let idle_until = Instant::now() + idle;
        loop {
            if self.ended {
                return Ok(Next::Closed("ended"));
            }
            if let Some(event) = self.backlog.pop_front() {
                if event.seq <= self.last {
                    continue;
                }
                self.last = event.seq;
                if self.revokes_me(&event) {
                    self.ended = true;
                    return Ok(Next::Revoked(event));
                }
                return Ok(Next::Event(event));
            }
            if self.more_in_catalog {
                // A replay longer than a page: the next page before waiting.
                self.reread().await?;
                continue;
            }
            if *self.shutdown.borrow() {
                return Ok(Next::ShuttingDown);
            }
            tokio::select! {
                biased;
                _ = self.shutdown.changed() => return Ok(Next::ShuttingDown),
                signal = self.subscription.rx.recv() => match signal {
                    Ok(Signal::Event(event)) => {
                        if event.seq == self.last + 1 {
                            self.backlog.push_back(Arc::unwrap_or_clone(event));
                        } else if event.seq > self.last {
                            // A gap: some event went by another way.
                            self.reread().await?;
                        }
                    }
                    Ok(Signal::Removed) => {
                        self.ended = true;
                        return Ok(Next::Closed("deleted"));
                    }
                    Ok(Signal::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if !self.still_valid().await? {
                            self.ended = true;
                            return Ok(Next::Closed("deleted"));
                        }
                        self.reread().await?;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(Next::ShuttingDown),
                },
                () = tokio::time::sleep_until(self.expires_at) => {
                    self.ended = true;
                    return Ok(Next::Closed("expired"));
                }
                () = tokio::time::sleep_until(idle_until) => return Ok(Next::Idle),
            }
        }
    }

    /// Reads the events after the last one handed out into the backlog.
    async fn reread(&mut self) -> Result<(), ReviewError> {
        let after = self
            .backlog
            .back()
            .map_or(self.last, |b| b.seq.max(self.last));
        let events = self.service.events(&self.caller, after).await?;
        self.more_in_catalog =
            i64::try_from(events.len()).is_ok_and(|n| n >= tenancy::MAX_EVENTS_PER_READ);
        for event in events {
            if self.backlog.back().is_none_or(|b| b.seq < event.seq) {
                self.backlog.push_back(event);
            }
        }
        Ok(())
    }

    /// Whether the review still exists for this caller (after notices may
    /// have been missed).
    async fn still_valid(&self) -> Result<bool, ReviewError> {
        let head = &self.caller.principal.review;
        let (tenant, id) = (head.tenant.clone(), head.id.clone());
        let now = crate::within::now_ms_i64();
        let exists = self
            .service
            .catalog_call(|c| async move {
                c.review_snapshot(&tenant, &id)
                    .await
                    .map(|s| s.is_some_and(|s| s.head.expires_at > now))
            })
            .await;
        match exists {
            Ok(exists) => Ok(exists),
            Err(ReviewError::NotFound) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// Whether `event` revokes the caller's own link.
    fn revokes_me(&self, event: &ReviewEvent) -> bool {
        event.kind == EventKind::Revoked
            && self.caller.principal.role == Role::Reviewer
            && serde_json::from_str::<serde_json::Value>(&event.data)
                .ok()
                .and_then(|v| v.get("link").and_then(|l| l.as_str()).map(str::to_owned))
                .is_some_and(|link| link == self.caller.principal.link)
    }
}
