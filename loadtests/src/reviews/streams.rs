//! Followers of review event streams: one task and one bare `TcpStream` per
//! stream (the request written by hand, the answer decoded by
//! [`StreamDecoder`]), so that the runner can hold ten thousand at a small
//! cost of its own. Counters shared by all followers of a measurement say
//! how many are open, closed or failed and how many keep-alives came.

use loadtests::sse::{Item, StreamDecoder, events_request};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, watch};

/// How long connecting and receiving the `retry:` line may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes read at a time (events and keep-alives are far smaller).
const READ_BUFFER: usize = 2048;

/// What the followers of one measurement have seen so far.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Streams that received their `retry:` line.
    pub(crate) ready: AtomicUsize,
    /// Streams that could not be opened (connect, status, timeout).
    pub(crate) failed: AtomicUsize,
    /// Streams that were open and then ended (EOF, error, last chunk).
    pub(crate) closed: AtomicUsize,
    /// `: keep-alive` comments received, all streams together.
    pub(crate) keep_alives: AtomicU64,
    /// `comments` events received, all streams together.
    pub(crate) comments: AtomicU64,
    /// The first failure or end, for the error message.
    first_problem: Mutex<Option<String>>,
}

impl Counters {
    fn problem(&self, text: String) {
        let mut first = self
            .first_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(text);
        }
    }

    /// The first failure or end seen, if any.
    pub(crate) fn first_problem(&self) -> Option<String> {
        self.first_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// One stream to follow (or plain connection to hold).
pub(crate) struct Follow {
    pub(crate) addr: SocketAddr,
    /// The request written once connected.
    pub(crate) request: Vec<u8>,
    /// Counted as open at the `retry:` line (an event stream), or else at
    /// the response head (a plain request on a keep-alive connection).
    pub(crate) event_stream: bool,
    /// Keep the arrival time of every `comments` event.
    pub(crate) record_comments: bool,
}

impl Follow {
    /// The event stream of `review` as `token`.
    pub(crate) fn events(addr: SocketAddr, review: &str, token: &str, record: bool) -> Self {
        Self {
            addr,
            request: events_request(&addr.to_string(), review, token),
            event_stream: true,
            record_comments: record,
        }
    }

    /// A keep-alive connection that asked `GET /healthz` once and then
    /// stays open, idle.
    pub(crate) fn idle_connection(addr: SocketAddr) -> Self {
        Self {
            addr,
            request: format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes(),
            event_stream: false,
            record_comments: false,
        }
    }
}

/// When each `comments` event arrived on one stream, in order.
pub(crate) type Arrivals = Vec<Instant>;

/// Follows one stream until `stop` says so (or the stream ends). `opening`
/// is released once the stream is open (or failed), to bound the streams
/// being opened at once.
pub(crate) async fn follow(
    spec: Follow,
    counters: Arc<Counters>,
    opening: Option<OwnedSemaphorePermit>,
    mut stop: watch::Receiver<bool>,
) -> Arrivals {
    let mut arrivals = Vec::new();
    let mut opening = opening;
    let opened = tokio::time::timeout(OPEN_TIMEOUT, async {
        let mut stream = TcpStream::connect(spec.addr).await?;
        stream.set_nodelay(true)?;
        stream.write_all(&spec.request).await?;
        std::io::Result::Ok(stream)
    })
    .await;
    let mut stream = match opened {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            counters.problem(format!("connecting: {e}"));
            return arrivals;
        }
        Err(_) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            counters.problem(format!("connecting: no connection within {OPEN_TIMEOUT:?}"));
            return arrivals;
        }
    };
    let open_deadline = tokio::time::Instant::now() + OPEN_TIMEOUT;
    let mut decoder = StreamDecoder::new();
    let mut items = Vec::new();
    let mut buf = [0u8; READ_BUFFER];
    let mut ready = false;
    loop {
        let read = tokio::select! {
            read = stream.read(&mut buf) => read,
            _ = stop.changed() => return arrivals,
            () = tokio::time::sleep_until(open_deadline), if !ready => {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                counters.problem(format!("no `retry:` line within {OPEN_TIMEOUT:?}"));
                return arrivals;
            }
        };
        let now = Instant::now();
        let n = match read {
            Ok(0) => {
                end(&counters, ready, "the server closed the stream".to_owned());
                return arrivals;
            }
            Ok(n) => n,
            Err(e) => {
                end(&counters, ready, format!("reading: {e}"));
                return arrivals;
            }
        };
        items.clear();
        if let Err(e) = decoder.feed(&buf[..n], &mut items) {
            end(&counters, ready, format!("decoding: {e:#}"));
            return arrivals;
        }
        for item in &items {
            match item {
                Item::Head(200) => {
                    if !spec.event_stream && !ready {
                        ready = true;
                        counters.ready.fetch_add(1, Ordering::Relaxed);
                        drop(opening.take());
                    }
                }
                Item::Head(status) => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    counters.problem(format!("GET …/events answered HTTP {status}"));
                    return arrivals;
                }
                Item::Retry(_) => {
                    if !ready {
                        ready = true;
                        counters.ready.fetch_add(1, Ordering::Relaxed);
                        drop(opening.take());
                    }
                }
                Item::Comment(text) if text == "keep-alive" => {
                    counters.keep_alives.fetch_add(1, Ordering::Relaxed);
                }
                Item::Comment(_) => {}
                Item::Event { kind, .. } => {
                    if kind == "comments" {
                        counters.comments.fetch_add(1, Ordering::Relaxed);
                        if spec.record_comments {
                            arrivals.push(now);
                        }
                    }
                }
                Item::End => {
                    end(&counters, ready, "the stream ended".to_owned());
                    return arrivals;
                }
            }
        }
    }
}

/// Counts a stream that ended: a failure before it was open, else a close.
fn end(counters: &Counters, ready: bool, why: String) {
    if ready {
        counters.closed.fetch_add(1, Ordering::Relaxed);
    } else {
        counters.failed.fetch_add(1, Ordering::Relaxed);
    }
    counters.problem(why);
}

/// Streams being opened at once.
const OPENING_AT_ONCE: usize = 256;

/// Starts a follower for each of `specs` (at most [`OPENING_AT_ONCE`]
/// opening at a time) and waits until every one is open or failed; fails
/// when any failed or when that takes longer than `within`. Prints
/// progress when `label` is given. The followers run until `stop` changes
/// or its sender is dropped.
pub(crate) async fn open_all(
    specs: Vec<Follow>,
    counters: &Arc<Counters>,
    stop: &watch::Receiver<bool>,
    within: Duration,
    label: Option<&str>,
) -> anyhow::Result<tokio::task::JoinSet<Arrivals>> {
    let total = specs.len();
    let gate = Arc::new(tokio::sync::Semaphore::new(OPENING_AT_ONCE));
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    let mut next_report = started + Duration::from_secs(2);
    for spec in specs {
        let permit = Arc::clone(&gate).acquire_owned().await?;
        tasks.spawn(follow(
            spec,
            Arc::clone(counters),
            Some(permit),
            stop.clone(),
        ));
        if let Some(label) = label
            && Instant::now() >= next_report
        {
            next_report += Duration::from_secs(2);
            eprintln!(
                "  {label}: {} of {total} open after {:.1} s",
                counters.ready.load(Ordering::Relaxed),
                started.elapsed().as_secs_f64()
            );
        }
    }
    loop {
        let ready = counters.ready.load(Ordering::Relaxed);
        let failed = counters.failed.load(Ordering::Relaxed);
        if failed > 0 {
            anyhow::bail!(
                "{failed} of {total} streams could not be opened ({ready} open); first: {}",
                counters.first_problem().unwrap_or_default()
            );
        }
        if ready >= total {
            return Ok(tasks);
        }
        if started.elapsed() > within {
            anyhow::bail!("only {ready} of {total} streams open after {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
