//! The event fan-out of one process: each review with open streams has a
//! [`Topic`], a broadcast channel its streams subscribe to.
//!
//! - A change committed by this process is published by the service right
//!   after the commit ([`Hub::publish`]): no database read per subscriber.
//! - A change committed by another replica arrives as a catalog notice
//!   (PostgreSQL `LISTEN/NOTIFY`, [`Hub::follow_notices`]): the hub reads the
//!   new events once and publishes them to the review's topic.
//! - The catalog stays the source of truth: a stream that sees a gap in the
//!   sequence numbers, or lagged behind its channel, re-reads the events it
//!   missed from the catalog. A lost notice only delays an event.
//!
//! The hub also counts streams (per review, per link, per client and per
//! process: the caps of `[reviews]`), and tells every stream when the
//! server shuts down.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tenancy::{LazyCatalog, ReviewEvent, ReviewNotice, TenantId};
use tokio::sync::{broadcast, watch};

use crate::config::ReviewConfig;

/// Streams open at once, all reviews together (gauge).
pub const STREAMS_OPEN: &str = "planshare_review_streams_open";
/// Events written to streams (SSE frames and long-poll answers).
pub const EVENTS_SENT: &str = "planshare_review_events_sent_total";

/// Signals a topic carries, most recent last. A slow stream that misses
/// some is told it lagged and re-reads from the catalog.
const TOPIC_CAPACITY: usize = 64;

type TopicKey = (TenantId, String);
/// A link of a review: the review's key and the link id.
type LinkKey = (TenantId, String, String);

/// What a stream learns from its topic.
#[derive(Clone, Debug)]
pub(crate) enum Signal {
    /// A committed event.
    Event(Arc<ReviewEvent>),
    /// The review was deleted or expired.
    Removed,
    /// Notices may have been missed: re-read from the catalog.
    Resync,
}

/// One review's channel.
pub(crate) struct Topic {
    tx: broadcast::Sender<Signal>,
    subscribers: AtomicUsize,
    /// The highest sequence number published here.
    last_seq: AtomicI64,
}

/// Why a stream could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamRefusal {
    /// The review has `streams_per_review` streams open on this process.
    Review(u32),
    /// The process has `max_streams` streams open.
    Process(u32),
    /// The caller's link has `streams_per_link` streams open on this process.
    Link(u32),
    /// The client has `streams_per_client` streams open on this process.
    Client(u32),
}

/// Streams held per link and per client (counts only; none kept at 0).
#[derive(Default)]
struct Holders {
    links: HashMap<LinkKey, u32>,
    clients: HashMap<IpAddr, u32>,
}

/// Who holds one stream place, for the per-link and per-client counts.
pub(crate) struct Holder {
    /// The link id (a reviewer's, or the owner's writer id).
    pub(crate) link: String,
    /// The client's address, when known.
    pub(crate) client: Option<IpAddr>,
}

/// The key clients are counted under: the address, an IPv6 one by its /64
/// (one host usually has a whole /64 to draw addresses from).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

/// See the module documentation.
pub(crate) struct Hub {
    catalog: Arc<LazyCatalog>,
    topics: Mutex<HashMap<TopicKey, Weak<Topic>>>,
    holders: Mutex<Holders>,
    open: AtomicUsize,
    max_streams: u32,
    per_review: u32,
    per_link: u32,
    per_client: u32,
    shutdown: watch::Sender<bool>,
}

/// A stream's place: its receiver, and its counts, given back on drop.
pub(crate) struct Subscription {
    hub: Arc<Hub>,
    key: TopicKey,
    topic: Arc<Topic>,
    link: LinkKey,
    client: Option<IpAddr>,
    pub(crate) rx: broadcast::Receiver<Signal>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.release_holder(&self.link, self.client);
        self.hub.open.fetch_sub(1, Ordering::Relaxed);
        metrics::gauge!(STREAMS_OPEN).decrement(1.0);
        if self.topic.subscribers.fetch_sub(1, Ordering::AcqRel) == 1 {
            let mut topics = self
                .hub
                .topics
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Only if the map still holds this topic and nobody joined since.
            if let Some(weak) = topics.get(&self.key)
                && weak.as_ptr() == Arc::as_ptr(&self.topic)
                && self.topic.subscribers.load(Ordering::Acquire) == 0
            {
                topics.remove(&self.key);
            }
        }
    }
}

impl Hub {
    pub(crate) fn new(catalog: Arc<LazyCatalog>, config: &ReviewConfig) -> Arc<Self> {
        Arc::new(Hub {
            catalog,
            topics: Mutex::new(HashMap::new()),
            holders: Mutex::new(Holders::default()),
            open: AtomicUsize::new(0),
            max_streams: config.max_streams,
            per_review: config.streams_per_review,
            per_link: config.streams_per_link,
            per_client: config.streams_per_client,
            shutdown: watch::Sender::new(false),
        })
    }

    /// Opens a stream's place on review `review` of `tenant` for `holder`.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        tenant: &TenantId,
        review: &str,
        holder: Holder,
    ) -> Result<Subscription, StreamRefusal> {
        let link: LinkKey = (tenant.clone(), review.to_owned(), holder.link);
        let client = holder.client.map(client_key);
        self.take_holder(&link, client)?;
        let max = usize::try_from(self.max_streams).unwrap_or(usize::MAX);
        if self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            self.release_holder(&link, client);
            return Err(StreamRefusal::Process(self.max_streams));
        }
        let key = (tenant.clone(), review.to_owned());
        let mut topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        let topic = match topics.get(&key).and_then(Weak::upgrade) {
            Some(topic) => topic,
            None => {
                let topic = Arc::new(Topic {
                    tx: broadcast::Sender::new(TOPIC_CAPACITY),
                    subscribers: AtomicUsize::new(0),
                    last_seq: AtomicI64::new(0),
                });
                topics.insert(key.clone(), Arc::downgrade(&topic));
                topic
            }
        };
        let per_review = usize::try_from(self.per_review).unwrap_or(usize::MAX);
        if topic
            .subscribers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < per_review).then_some(n + 1)
            })
            .is_err()
        {
            drop(topics);
            self.open.fetch_sub(1, Ordering::Relaxed);
            self.release_holder(&link, client);
            return Err(StreamRefusal::Review(self.per_review));
        }
        let rx = topic.tx.subscribe();
        drop(topics);
        metrics::gauge!(STREAMS_OPEN).increment(1.0);
        Ok(Subscription {
            hub: self.clone(),
            key,
            topic,
            link,
            client,
            rx,
        })
    }

    /// Counts a place against `link` and `client`, or refuses when either
    /// holds its most already.
    fn take_holder(&self, link: &LinkKey, client: Option<IpAddr>) -> Result<(), StreamRefusal> {
        let mut holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
        if holders.links.get(link).copied().unwrap_or(0) >= self.per_link {
            return Err(StreamRefusal::Link(self.per_link));
        }
        if let Some(ip) = client
            && holders.clients.get(&ip).copied().unwrap_or(0) >= self.per_client
        {
            return Err(StreamRefusal::Client(self.per_client));
        }
        *holders.links.entry(link.clone()).or_default() += 1;
        if let Some(ip) = client {
            *holders.clients.entry(ip).or_default() += 1;
        }
        Ok(())
    }

    /// Gives back a place [`take_holder`](Self::take_holder) counted.
    fn release_holder(&self, link: &LinkKey, client: Option<IpAddr>) {
        let mut holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = holders.links.get_mut(link) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                holders.links.remove(link);
            }
        }
        if let Some(ip) = client
            && let Some(n) = holders.clients.get_mut(&ip)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                holders.clients.remove(&ip);
            }
        }
    }

    /// Hands an event committed by this process to the review's streams.
    pub(crate) fn publish(&self, tenant: &TenantId, review: &str, event: ReviewEvent) {
        if let Some(topic) = self.topic(tenant, review) {
            topic.last_seq.fetch_max(event.seq, Ordering::AcqRel);
            let _ = topic.tx.send(Signal::Event(Arc::new(event)));
        }
    }

    /// Tells the review's streams that it is gone.
    pub(crate) fn removed(&self, tenant: &TenantId, review: &str) {
        if let Some(topic) = self.topic(tenant, review) {
            let _ = topic.tx.send(Signal::Removed);
        }
    }

    /// Tells every stream that the server is going away (they end, and
    /// their clients reconnect, to another replica where there is one).
    pub(crate) fn shut_down(&self) {
        self.shutdown.send_replace(true);
    }

    /// Becomes true when the server shuts down.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Tells every stream of this process to re-read from the catalog.
    fn resync_all(&self) {
        let topics: Vec<_> = self
            .topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for topic in topics {
            let _ = topic.tx.send(Signal::Resync);
        }
    }

    fn topic(&self, tenant: &TenantId, review: &str) -> Option<Arc<Topic>> {
        let topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        // The key is built only when someone listens somewhere: most
        // changes have no stream on this process.
        if topics.is_empty() {
            return None;
        }
        topics
            .get(&(tenant.clone(), review.to_owned()))
            .and_then(Weak::upgrade)
    }

    /// Follows the changes other replicas commit (PostgreSQL catalogs only)
    /// until the hub is dropped. Spawn once.
    pub(crate) async fn follow_notices(hub: Weak<Hub>) {
        let Some(catalog) = hub.upgrade().map(|h| h.catalog.clone()) else {
            return;
        };
        let catalog = loop {
            match catalog.get().await {
                Ok(c) => break c,
                Err(error) => {
                    tracing::debug!(%error, "catalog not open yet; review notices wait");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    if hub.strong_count() == 0 {
                        return;
                    }
                }
            }
        };
        let mut notices = match catalog.review_notices().await {
            Ok(Some(rx)) => rx,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for review changes of other replicas; their events reach this one's streams only when a stream re-reads");
                return;
            }
        };
        // Streams opened before the listener was up may have missed a
        // change another replica committed meanwhile: they re-read once.
        if let Some(hub) = hub.upgrade() {
            hub.resync_all();
        }
        while let Some(notice) = notices.recv().await {
            let Some(hub) = hub.upgrade() else { return };
            match notice {
                ReviewNotice::Changed {
                    tenant,
                    review,
                    seq,
                } => {
                    let Some(topic) = hub.topic(&tenant, &review) else {
                        continue;
                    };
                    let after = topic.last_seq.load(Ordering::Acquire);
                    if seq <= after {
                        continue; // published here already (our own commit)
                    }
                    match catalog
                        .review_events(&tenant, &review, after, tenancy::MAX_EVENTS_PER_READ)
                        .await
                    {
                        Ok(events) => {
                            for event in events {
                                if event.seq > topic.last_seq.fetch_max(event.seq, Ordering::AcqRel)
                                {
                                    let _ = topic.tx.send(Signal::Event(Arc::new(event)));
                                }
                            }
                        }
                        Err(error) => {
                            tracing::debug!(%error, "cannot read a review's new events; its streams re-read");
                            let _ = topic.tx.send(Signal::Resync);
                        }
                    }
                }
                ReviewNotice::Removed { tenant, review } => hub.removed(&tenant, &review),
                ReviewNotice::Resync => hub.resync_all(),
            }
        }
    }
}
