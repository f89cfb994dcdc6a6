//! The deliverer: one task per process that sends what the outbox holds.
//!
//! It claims due rows (PostgreSQL: one replica per row, `SKIP LOCKED`),
//! groups them by subscription and sends each subscription's rows in order
//! on a task of its own, so a slow or dead receiver holds up only itself:
//! at most [`IN_FLIGHT`] subscriptions are being sent to at once, each
//! attempt ends within [`ATTEMPT_TIMEOUT`], and a failure puts the whole
//! target in back-off (its other rows wait with it) instead of costing one
//! attempt per notification. The API never waits for any of this: a write
//! only commits its rows and rings [`NotifyService::wake`].
//!
//! At start it gives back the claims this replica's name held before a
//! crash, so what was not delivered goes out within seconds of a restart.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue};
use tenancy::{Attempt, AttemptEnd, Catalog, OutboxItem, TargetKind, backoff_ms};
use tokio::task::JoinSet;

use super::message;
use super::service::NotifyService;
use super::sign;
use super::target::{self, GuardedResolver};
use crate::tenants::Directory;
use crate::within::now_ms_i64;

/// Subscriptions sent to at once by one process.
pub(crate) const IN_FLIGHT: usize = 64;
/// How long one attempt may take, connection to answer.
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an answer is read (then the connection is dropped).
const ANSWER_BYTES: usize = 4096;
/// How often the outbox is looked at when nothing rang.
const POLL: Duration = Duration::from_secs(1);
/// After this long, a target's remaining rows renew their claims before
/// their attempts (a third of the lease).
const RENEW_AFTER: Duration = Duration::from_millis(tenancy::CLAIM_LEASE_MS as u64 / 3);
/// How often reminders and deadlines are looked for.
const REMINDER_CHECK: Duration = Duration::from_secs(5);
/// Delivered and failed notifications are kept this long for listing.
const KEEP_DONE_MS: i64 = 7 * 86_400_000;

/// The two HTTP clients: one that reaches only public addresses, one for
/// tenants that allow private targets. Neither follows redirects or uses a
/// proxy (a proxy would resolve names where the policy cannot see).
struct Clients {
    public: reqwest::Client,
    private: reqwest::Client,
}

impl Clients {
    fn new() -> Result<Clients, reqwest::Error> {
        let base = || {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .connect_timeout(Duration::from_secs(5))
                .timeout(ATTEMPT_TIMEOUT)
                .pool_idle_timeout(Duration::from_secs(30))
                .pool_max_idle_per_host(2)
                .user_agent(concat!("planshare/", env!("CARGO_PKG_VERSION")))
        };
        Ok(Clients {
            public: base().dns_resolver(GuardedResolver).build()?,
            private: base().build()?,
        })
    }
}

/// Runs the deliverer until the service is dropped. Call once per process,
/// inside a runtime ([`crate::AppState::spawn_maintenance`] does).
pub(crate) async fn run(
    notify: std::sync::Weak<NotifyService>,
    catalog: Arc<tenancy::LazyCatalog>,
    directory: Arc<Directory>,
) {
    // The HTTP clients are made with the first notification to send: they
    // read the system's root certificates, which a server nobody
    // subscribed to never needs (and the syscall checks hold a serving
    // process to its store and catalog).
    let mut clients: Option<Arc<Clients>> = None;
    let Some(service) = notify.upgrade() else {
        return;
    };
    let replica = service.config().replica.clone();
    let wake = service.wake.clone();
    drop(service);
    let catalog = loop {
        match catalog.get().await {
            Ok(c) => break c,
            Err(error) => {
                tracing::debug!(%error, "deliverer waits for the catalog");
                tokio::time::sleep(POLL).await;
            }
        }
    };
    match catalog.release_claims(&replica).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            released = n,
            "notifications this replica held before a restart go out now"
        ),
        Err(error) => tracing::warn!(%error, "could not give back this replica's earlier claims"),
    }
    let busy: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut last_sweep = Instant::now();
    let mut last_reminders = Instant::now() - REMINDER_CHECK;
    // Whether to read the outbox this turn: not when a wake-up came from a
    // change that queued nothing (most changes, where nobody subscribed).
    let mut look = true;
    let mut queued = catalog.notices_queued();
    loop {
        let Some(service) = notify.upgrade() else {
            return;
        };
        while tasks.try_join_next().is_some() {}
        let room = IN_FLIGHT.saturating_sub(tasks.len());
        let mut claimed = Vec::new();
        if room > 0 && look {
            queued = catalog.notices_queued();
            let skip = busy.lock().map(|b| b.clone()).unwrap_or_default();
            match catalog
                .claim_outbox(
                    &replica,
                    now_ms_i64(),
                    i64::try_from(room).unwrap_or(64),
                    &skip,
                )
                .await
            {
                Ok(rows) => claimed = rows,
                Err(error) => tracing::warn!(%error, "the outbox could not be read"),
            }
        }
        let root = if claimed.iter().any(|i| i.kind == TargetKind::Webhook) {
            match service.root().await {
                Ok(root) => Some(root),
                Err(error) => {
                    tracing::warn!(%error, "webhook key unavailable; claims lapse and are retried");
                    None
                }
            }
        } else {
            None
        };
        drop(service);
        if !claimed.is_empty() && clients.is_none() {
            match Clients::new() {
                Ok(made) => clients = Some(Arc::new(made)),
                Err(error) => {
                    tracing::error!(%error, "notifications cannot be sent: no HTTP client");
                    for item in claimed.drain(..) {
                        let _ = catalog.release_claim(&replica, item.id).await;
                    }
                }
            }
        }
        let got = claimed.len();
        let mut by_target: HashMap<String, Vec<OutboxItem>> = HashMap::new();
        for item in claimed {
            by_target
                .entry(item.subscription.clone())
                .or_default()
                .push(item);
        }
        for (subscription, items) in by_target {
            if let Ok(mut b) = busy.lock() {
                b.insert(subscription.clone());
            }
            // Made above whenever anything was claimed.
            let Some(clients) = clients.clone() else {
                break;
            };
            let sender = Sender {
                catalog: catalog.clone(),
                clients,
                directory: directory.clone(),
                replica: replica.clone(),
                root,
            };
            let busy = busy.clone();
            tasks.spawn(async move {
                sender.send_all(items).await;
                if let Ok(mut b) = busy.lock() {
                    b.remove(&subscription);
                }
            });
        }
        if last_reminders.elapsed() >= REMINDER_CHECK {
            last_reminders = Instant::now();
            match catalog.queue_due_reminders(now_ms_i64()).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(queued = n, "reminders and deadline notices queued"),
                Err(error) => tracing::warn!(%error, "reminders not queued"),
            }
        }
        if last_sweep.elapsed() > Duration::from_secs(600) {
            last_sweep = Instant::now();
            if let Err(error) = catalog
                .sweep_deliveries(now_ms_i64() - KEEP_DONE_MS, 10_000)
                .await
            {
                tracing::debug!(%error, "old deliveries not swept");
            }
        }
        look = true;
        if got == 0 || tasks.len() >= IN_FLIGHT {
            tokio::select! {
                () = wake.notified() => look = catalog.notices_queued() != queued,
                () = tokio::time::sleep(POLL) => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
    }
}

/// What sending one subscription's rows needs.
struct Sender {
    catalog: Arc<Catalog>,
    clients: Arc<Clients>,
    directory: Arc<Directory>,
    replica: String,
    root: Option<[u8; 32]>,
}

impl Sender {
    /// Sends `items` (one subscription's, oldest first) until one fails:
    /// the rest then wait for the target's back-off.
    ///
    /// The rows were claimed just now for [`tenancy::CLAIM_LEASE_MS`]; a row
    /// reached after [`RENEW_AFTER`] (a slow target) has its claim renewed
    /// first and is skipped when the claim was lost. A fast target's rows
    /// cost one catalog commit each (the attempt's record), not two.
    async fn send_all(&self, items: Vec<OutboxItem>) {
        let claimed = Instant::now();
        for item in items {
            if claimed.elapsed() > RENEW_AFTER {
                match self
                    .catalog
                    .renew_claim(&self.replica, item.id, now_ms_i64())
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => continue, // taken meanwhile
                    Err(error) => {
                        tracing::warn!(%error, "claim not renewed");
                        return;
                    }
                }
            }
            if !self.send(&item).await {
                return;
            }
        }
    }

    /// One attempt at `item`, recorded; whether it was delivered.
    async fn send(&self, item: &OutboxItem) -> bool {
        let at = now_ms_i64();
        let started = Instant::now();
        let allow_private = self
            .directory
            .by_id(&item.tenant)
            .is_some_and(|t| t.notify_private_targets);
        let outcome = self.attempt(item, allow_private).await;
        let ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (status, error) = match &outcome {
            Ok(status) => (Some(i64::from(*status)), None),
            Err(why) => (None, Some(why.clone())),
        };
        let delivered = matches!(outcome, Ok(s) if (200..300).contains(&s));
        let end = match outcome {
            Ok(s) if (200..300).contains(&s) => AttemptEnd::Delivered,
            Ok(410) => AttemptEnd::Gone,
            _ => {
                let failures = self
                    .catalog
                    .target_failures(&item.tenant, &item.review, &item.subscription)
                    .await
                    .unwrap_or(0)
                    + 1;
                let next = now_ms_i64() + backoff_ms(failures);
                if next > item.created_at + tenancy::RETRY_FOR_MS {
                    AttemptEnd::GiveUp
                } else {
                    AttemptEnd::RetryAt(next)
                }
            }
        };
        let error = error.or_else(|| {
            status
                .filter(|s| !(200..300).contains(s))
                .map(|s| format!("answered {s}"))
        });
        let attempt = Attempt {
            n: item.attempts + 1,
            at,
            status,
            error,
            ms,
        };
        if let Err(error) = self.catalog.finish_attempt(item, &attempt, end).await {
            tracing::warn!(%error, notification = item.id, "attempt not recorded; the claim lapses and it is sent again");
            return false;
        }
        metrics::counter!(
            "planshare_notifications_total",
            "kind" => item.kind.as_str(),
            "outcome" => match end {
                AttemptEnd::Delivered => "delivered",
                AttemptEnd::RetryAt(_) => "retry",
                AttemptEnd::GiveUp => "failed",
                AttemptEnd::Gone => "gone",
            },
        )
        .increment(1);
        delivered
    }

    /// Sends `item` once: its answer's status, or why none came.
    async fn attempt(&self, item: &OutboxItem, allow_private: bool) -> Result<u16, String> {
        let url = target::check_url(&item.target, allow_private)?;
        let client = if allow_private {
            &self.clients.private
        } else {
            &self.clients.public
        };
        let link = message::review_url(&item.link_base, &item.review);
        let request = match item.kind {
            TargetKind::Webhook => {
                let root = self.root.ok_or("the webhook key is unavailable")?;
                let secret = sign::secret_for(&root, item.tenant.as_str(), &item.subscription);
                let body = message::webhook_body(item, &link);
                let id = message::message_id(item);
                let timestamp = now_ms_i64() / 1000;
                let mut headers = HeaderMap::new();
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                for (name, value) in [
                    ("webhook-id", id.clone()),
                    ("webhook-timestamp", timestamp.to_string()),
                    (
                        "webhook-signature",
                        sign::signature(&secret, &id, timestamp, &body),
                    ),
                ] {
                    headers.insert(
                        name,
                        HeaderValue::from_str(&value).map_err(|_| "bad header value")?,
                    );
                }
                client.post(url).headers(headers).body(body)
            }
            TargetKind::Ntfy => {
                let (title, text) = message::ntfy_text(item);
                let mut headers = HeaderMap::new();
                headers.insert(
                    "content-type",
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                headers.insert("tags", HeaderValue::from_static("memo"));
                for (name, value) in [("title", title), ("click", link)] {
                    if let Ok(v) = HeaderValue::from_str(&value) {
                        headers.insert(name, v);
                    }
                }
                client.post(url).headers(headers).body(text)
            }
            TargetKind::WebPush => return Err("web push is not delivered by this version".into()),
        };
        let response = request.send().await.map_err(describe)?;
        let status = response.status().as_u16();
        // Read a little of the answer, then let the connection go.
        let mut response = response;
        let mut read = 0;
        while read < ANSWER_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
        Ok(status)
    }
}

/// A failed send in a few words (no URL, which the log need not repeat).
fn describe(error: reqwest::Error) -> String {
    if error.is_timeout() {
        format!("no answer within {}s", ATTEMPT_TIMEOUT.as_secs())
    } else if error.is_connect() {
        "could not connect (refused, unreachable, or no public address)".into()
    } else if error.is_redirect() {
        "redirects are not followed".into()
    } else {
        "the request failed".into()
    }
}
