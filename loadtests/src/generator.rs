//! The closed-loop load generator and the seeding of pastes.
//!
//! A phase runs `concurrency` tokio tasks, each with its own keep-alive
//! HTTP/1.1 connection, each sending its next request as soon as the previous
//! answer is read, until the deadline. The phase starts with a warm-up (same
//! connections, same requests, nothing recorded); only requests that *complete*
//! inside the measured window count, and the server's CPU time is sampled at
//! the window's two edges, so requests/s and CPU per request describe the same
//! interval. Unexpected statuses and transport errors are counted (by kind), not
//! fatal. Every request is bounded by the end of the window plus a grace
//! period, so a hung server cannot stretch a run.

use crate::client::Conn;
use crate::payload::{CreateBodies, Rng};
use crate::procstat;
use anyhow::{Context as _, bail};
use hdrhistogram::Histogram;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How long in-flight requests may run past the end of the measured window
/// before they are abandoned (and counted as errors).
pub const GRACE: Duration = Duration::from_secs(5);

/// Distinct error kinds remembered per phase (their counts are always exact).
const MAX_ERROR_KINDS: usize = 16;

/// Highest latency the histograms track: one minute, in microseconds.
const MAX_LATENCY_US: u64 = 60_000_000;

/// What each request of a phase does.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `POST /api/paste` with a fresh `{"data": ...}` of `size` characters;
    /// expects `201`.
    Create {
        /// Length of the `data` string.
        size: usize,
    },
    /// `GET` of the given paths (`/api/paste/<id>`), round-robin; expects `200`.
    Fetch {
        /// The paths of previously created pastes.
        paths: Arc<Vec<Uri>>,
    },
    /// `PUT /api/v1/reviews/{id}/comments` as one of `writers`, each time a
    /// fresh `data` of `size` characters that replaces the writer's set;
    /// expects `200`. Worker `i` of `c` uses writers `i`, `i + c`, `i + 2c`,
    /// … in turn, so no two workers write as the same writer.
    Comments {
        /// The writers (review path and token); at least `concurrency`.
        writers: Arc<Vec<CommentWriter>>,
        /// Length of the `data` string.
        size: usize,
    },
}

/// A review comment writer for [`Workload::Comments`]: a token and the name
/// it binds.
#[derive(Debug, Clone)]
pub struct CommentWriter {
    /// `/api/v1/reviews/<id>/comments`.
    pub path: Uri,
    /// `Bearer <token>` (the owner's or a reviewer link's).
    pub authorization: HeaderValue,
    /// The name the token binds on its first PUT (base64url-safe text: it
    /// is put into the JSON body as it is).
    pub name: String,
}

/// The `PUT …/comments` body around a [`CreateBodies`] body
/// (`{"data":"…"}`): `{"name":"<name>","version":1,"data":"…"}`. `name`
/// must need no JSON escaping.
pub fn comment_body(name: &str, create_body: &[u8]) -> bytes::Bytes {
    let rest = create_body.strip_prefix(b"{").unwrap_or(create_body);
    let mut body = Vec::with_capacity(create_body.len() + name.len() + 24);
    body.extend_from_slice(b"{\"name\":\"");
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(b"\",\"version\":1,");
    body.extend_from_slice(rest);
    bytes::Bytes::from(body)
}

impl Workload {
    /// The `Fetch` workload for ids returned by [`seed`].
    pub fn fetch(ids: &[String]) -> anyhow::Result<Self> {
        if ids.is_empty() {
            bail!("no paste ids to fetch");
        }
        let paths = ids
            .iter()
            .map(|id| {
                format!("/api/paste/{id}")
                    .parse::<Uri>()
                    .with_context(|| format!("paste id {id:?} does not make a valid path"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self::Fetch {
            paths: Arc::new(paths),
        })
    }

    fn expected(&self) -> StatusCode {
        match self {
            Self::Create { .. } => StatusCode::CREATED,
            Self::Fetch { .. } | Self::Comments { .. } => StatusCode::OK,
        }
    }
}

/// Parameters of one phase.
#[derive(Debug, Clone)]
pub struct Phase {
    /// The server's address.
    pub addr: SocketAddr,
    /// Number of connections, each with one request in flight at a time.
    pub concurrency: usize,
    /// Unrecorded warm-up before the window.
    pub warmup: Duration,
    /// Length of the measured window.
    pub duration: Duration,
    /// The server's process id, for CPU sampling (`None`: not sampled).
    pub pid: Option<u32>,
    /// Extra request headers (e.g. `Authorization` for API-key requests).
    pub headers: Arc<Vec<(HeaderName, HeaderValue)>>,
}

/// What a phase measured inside its window.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// Requests answered with the expected status.
    pub ok: u64,
    /// Requests that failed: other status, transport error or timeout.
    pub errors: u64,
    /// Error counts by kind (at most a handful of kinds are kept).
    pub error_kinds: BTreeMap<String, u64>,
    /// The measured window.
    pub window: Duration,
    /// Latency of successful requests, in microseconds.
    pub latency_us: Histogram<u64>,
    /// The server's CPU time over the window, in microseconds.
    pub cpu_us: Option<f64>,
}

impl PhaseResult {
    /// Successful requests per second over the window.
    pub fn requests_per_second(&self) -> f64 {
        self.ok as f64 / self.window.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Latency quantile `q` (0..=1) in milliseconds (0 when nothing succeeded).
    pub fn latency_ms(&self, q: f64) -> f64 {
        if self.latency_us.is_empty() {
            0.0
        } else {
            self.latency_us.value_at_quantile(q) as f64 / 1000.0
        }
    }

    /// Server CPU time per successful request, in microseconds.
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        match self.cpu_us {
            Some(cpu) if self.ok > 0 => Some(cpu / self.ok as f64),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Tally {
    ok: u64,
    errors: u64,
    error_kinds: BTreeMap<String, u64>,
    latency_us: Histogram<u64>,
}

impl Tally {
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            ok: 0,
            errors: 0,
            error_kinds: BTreeMap::new(),
            latency_us: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)?,
        })
    }

    fn error(&mut self, kind: String) {
        self.errors += 1;
        if let Some(n) = self.error_kinds.get_mut(&kind) {
            *n += 1;
        } else if self.error_kinds.len() < MAX_ERROR_KINDS {
            self.error_kinds.insert(kind, 1);
        }
    }

    fn merge(&mut self, other: Self) -> anyhow::Result<()> {
        self.ok += other.ok;
        self.errors += other.errors;
        for (kind, n) in other.error_kinds {
            if let Some(total) = self.error_kinds.get_mut(&kind) {
                *total += n;
            } else if self.error_kinds.len() < MAX_ERROR_KINDS {
                self.error_kinds.insert(kind, n);
            }
        }
        self.latency_us.add(other.latency_us)?;
        Ok(())
    }
}

/// A short description of an unexpected answer, for the error table.
fn status_kind(status: StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(120)]);
    format!("HTTP {status}: {text}")
}

/// Runs one phase: warm-up, then the measured window.
pub async fn run_phase(phase: &Phase, workload: &Workload) -> anyhow::Result<PhaseResult> {
    if phase.concurrency == 0 {
        bail!("concurrency must be at least 1");
    }
    if let Workload::Fetch { paths } = workload
        && paths.is_empty()
    {
        bail!("no paste paths to fetch");
    }
    if let Workload::Comments { writers, .. } = workload
        && writers.len() < phase.concurrency
    {
        bail!(
            "{} comment writers for {} connections: at least one each is needed",
            writers.len(),
            phase.concurrency
        );
    }
    let start = Instant::now();
    let window_start = start + phase.warmup;
    let deadline = window_start + phase.duration;
    let mut tasks = JoinSet::new();
    for index in 0..phase.concurrency {
        let workload = workload.clone();
        let addr = phase.addr;
        let headers = Arc::clone(&phase.headers);
        tasks.spawn(worker(
            index,
            phase.concurrency,
            addr,
            workload,
            headers,
            window_start,
            deadline,
        ));
    }

    let sample = |pid: Option<u32>| pid.map(procstat::cpu_ticks).transpose();
    tokio::time::sleep_until(window_start).await;
    let cpu_before = sample(phase.pid)?;
    tokio::time::sleep_until(deadline).await;
    let cpu_after = sample(phase.pid)?;

    let mut total = Tally::new()?;
    while let Some(joined) = tasks.join_next().await {
        total.merge(joined.context("load task panicked")??)?;
    }
    let hz = procstat::clock_ticks_per_second();
    let cpu_us = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) => {
            Some(procstat::ticks_to_micros(after.saturating_sub(before), hz))
        }
        _ => None,
    };
    Ok(PhaseResult {
        ok: total.ok,
        errors: total.errors,
        error_kinds: total.error_kinds,
        window: deadline - window_start,
        latency_us: total.latency_us,
        cpu_us,
    })
}

/// Where a worker's requests come from.
enum Source {
    Create(CreateBodies),
    Fetch {
        paths: Arc<Vec<Uri>>,
        next: usize,
    },
    Comments {
        bodies: CreateBodies,
        writers: Arc<Vec<CommentWriter>>,
        next: usize,
        step: usize,
    },
}

/// One request, prepared.
enum Request {
    Post(bytes::Bytes),
    Get(Uri),
    Put {
        path: Uri,
        headers: [(HeaderName, HeaderValue); 2],
        body: bytes::Bytes,
    },
}

impl Source {
    fn next_request(&mut self) -> Request {
        match self {
            Self::Create(bodies) => Request::Post(bodies.next_body()),
            Self::Fetch { paths, next } => {
                // `Workload::fetch` guarantees at least one path.
                let path = paths[*next % paths.len()].clone();
                *next = next.wrapping_add(1);
                Request::Get(path)
            }
            Self::Comments {
                bodies,
                writers,
                next,
                step,
            } => {
                // `run_phase` guarantees a writer per worker.
                let writer = &writers[*next % writers.len()];
                *next = next.wrapping_add(*step);
                Request::Put {
                    path: writer.path.clone(),
                    headers: [
                        (AUTHORIZATION, writer.authorization.clone()),
                        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
                    ],
                    body: comment_body(&writer.name, &bodies.next_body()),
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    index: usize,
    concurrency: usize,
    addr: SocketAddr,
    workload: Workload,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    window_start: Instant,
    deadline: Instant,
) -> anyhow::Result<Tally> {
    let mut tally = Tally::new()?;
    let hard_stop = deadline + GRACE;
    let in_window = |t: Instant| t >= window_start && t <= deadline;
    let expected = workload.expected();
    let create_path = Uri::from_static("/api/paste");
    let mut source = match workload {
        Workload::Create { size } => {
            Source::Create(CreateBodies::new(size, Rng::from_entropy(index as u64)))
        }
        Workload::Fetch { paths } => Source::Fetch { paths, next: index },
        Workload::Comments { writers, size } => Source::Comments {
            bodies: CreateBodies::new(size, Rng::from_entropy(index as u64)),
            writers,
            next: index,
            step: concurrency.max(1),
        },
    };
    let mut conn: Option<Conn> = None;

    while Instant::now() < deadline {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match tokio::time::timeout_at(hard_stop, Conn::connect(addr)).await {
                Ok(Ok(c)) => conn.insert(c),
                Ok(Err(e)) => {
                    if in_window(Instant::now()) {
                        tally.error(format!("connect: {e:#}"));
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Err(_) => break,
            },
        };
        // Prepare the request before the clock starts: the body copy is the
        // generator's cost, not the server's.
        let request = source.next_request();
        let sent = Instant::now();
        let reply = tokio::time::timeout_at(hard_stop, async {
            match request {
                Request::Post(body) if headers.is_empty() => {
                    c.post_json(create_path.clone(), body).await
                }
                Request::Get(path) if headers.is_empty() => c.get(path).await,
                Request::Post(body) => {
                    let mut all = headers.to_vec();
                    all.push((CONTENT_TYPE, HeaderValue::from_static("application/json")));
                    c.request(Method::POST, create_path.clone(), &all, body)
                        .await
                }
                Request::Get(path) => {
                    c.request(Method::GET, path, &headers, bytes::Bytes::new())
                        .await
                }
                Request::Put {
                    path,
                    headers: put_headers,
                    body,
                } => c.request(Method::PUT, path, &put_headers, body).await,
            }
        })
        .await;
        let done = Instant::now();
        let counted = in_window(done);
        match reply {
            Ok(Ok(reply)) if reply.status == expected => {
                if counted {
                    tally.ok += 1;
                    let us = (done - sent).as_micros().min(u128::from(MAX_LATENCY_US)) as u64;
                    tally.latency_us.saturating_record(us.max(1));
                }
            }
            Ok(Ok(reply)) => {
                if counted {
                    tally.error(status_kind(reply.status, &reply.body));
                }
            }
            Ok(Err(e)) => {
                conn = None;
                if counted {
                    tally.error(format!("transport: {e:#}"));
                }
            }
            Err(_) => {
                tally.error(format!("no answer within {GRACE:?} after the window"));
                break;
            }
        }
    }
    Ok(tally)
}

/// Creates `count` pastes of `size` characters with `POST /api/paste` over
/// `concurrency` connections and returns their ids (in completion order).
///
/// A failed create is retried twice; a third failure aborts the seeding.
/// `progress(done, count)` is called each time another tenth is done.
pub async fn seed<F>(
    addr: SocketAddr,
    size: usize,
    count: usize,
    concurrency: usize,
    progress: F,
) -> anyhow::Result<Vec<String>>
where
    F: Fn(usize, usize) + Send + Sync + 'static,
{
    seed_with(
        addr,
        size,
        count,
        concurrency,
        Arc::new(Vec::new()),
        progress,
    )
    .await
}

/// [`seed`] with extra request headers (e.g. an API key).
pub async fn seed_with<F>(
    addr: SocketAddr,
    size: usize,
    count: usize,
    concurrency: usize,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    progress: F,
) -> anyhow::Result<Vec<String>>
where
    F: Fn(usize, usize) + Send + Sync + 'static,
{
    seed_at(
        addr,
        "/api/paste",
        size,
        count,
        concurrency,
        headers,
        progress,
    )
    .await
}

/// [`seed_with`] to the create endpoint `path`: `/api/paste` (upstream's,
/// not indexed for the default tenant) or `/api/v1/pastes` (indexed in the
/// tenant catalog, with its quota).
pub async fn seed_at<F>(
    addr: SocketAddr,
    path: &'static str,
    size: usize,
    count: usize,
    concurrency: usize,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    progress: F,
) -> anyhow::Result<Vec<String>>
where
    F: Fn(usize, usize) + Send + Sync + 'static,
{
    const ATTEMPTS: usize = 3;
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let progress = Arc::new(progress);
    let mut tasks = JoinSet::new();
    for index in 0..concurrency.clamp(1, count.max(1)) {
        let (next, done, progress) = (Arc::clone(&next), Arc::clone(&done), Arc::clone(&progress));
        let headers = Arc::clone(&headers);
        tasks.spawn(async move {
            let mut ids = Vec::new();
            let mut bodies = CreateBodies::new(size, Rng::from_entropy(0x5eed ^ index as u64));
            let mut conn: Option<Conn> = None;
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let body = bodies.next_body();
                let mut last_error = None;
                for _ in 0..ATTEMPTS {
                    match create_once(&mut conn, addr, path, &headers, body.clone()).await {
                        Ok(id) => {
                            ids.push(id);
                            last_error = None;
                            break;
                        }
                        Err(e) => last_error = Some(e),
                    }
                }
                if let Some(e) = last_error {
                    return Err(e.context(format!("creating a paste failed {ATTEMPTS} times")));
                }
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                if finished * 10 / count != (finished - 1) * 10 / count {
                    progress(finished, count);
                }
            }
            anyhow::Ok(ids)
        });
    }
    let mut ids = Vec::with_capacity(count);
    while let Some(joined) = tasks.join_next().await {
        ids.extend(joined.context("seeding task panicked")??);
    }
    Ok(ids)
}

async fn create_once(
    conn: &mut Option<Conn>,
    addr: SocketAddr,
    path: &'static str,
    headers: &[(HeaderName, HeaderValue)],
    body: bytes::Bytes,
) -> anyhow::Result<String> {
    let c = match conn.as_mut() {
        Some(c) => c,
        None => conn.insert(Conn::connect_timeout(addr, Duration::from_secs(5)).await?),
    };
    let reply = match tokio::time::timeout(Duration::from_secs(30), async {
        if headers.is_empty() {
            c.post_json(Uri::from_static(path), body).await
        } else {
            let mut all = headers.to_vec();
            all.push((CONTENT_TYPE, HeaderValue::from_static("application/json")));
            c.request(Method::POST, Uri::from_static(path), &all, body)
                .await
        }
    })
    .await
    {
        Ok(Ok(reply)) => reply,
        Ok(Err(e)) => {
            *conn = None;
            return Err(e);
        }
        Err(_) => {
            *conn = None;
            bail!("POST {path}: no answer within 30 s");
        }
    };
    if reply.status != StatusCode::CREATED {
        bail!("POST {path}: {}", status_kind(reply.status, &reply.body));
    }
    let json: serde_json::Value = serde_json::from_slice(&reply.body)
        .with_context(|| format!("POST {path}: answer is not JSON"))?;
    json.get("id")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .with_context(|| format!("POST {path}: answer has no string `id`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_bodies_wrap_the_create_body() -> anyhow::Result<()> {
        let mut bodies = CreateBodies::new(40, Rng::new(3));
        let create = bodies.next_body();
        let body = comment_body("w17", &create);
        let json: serde_json::Value = serde_json::from_slice(&body)?;
        let created: serde_json::Value = serde_json::from_slice(&create)?;
        assert_eq!(json["name"], "w17");
        assert_eq!(json["version"], 1);
        assert_eq!(json["data"], created["data"]);
        assert_eq!(json.as_object().map(serde_json::Map::len), Some(3));
        Ok(())
    }
}
