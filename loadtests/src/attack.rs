//! `attack`: the two resource attacks of issue 22, at full size, against a
//! release build on its default settings (rate limits as shipped), with
//! figures of what a normal client and the probes see meanwhile.
//!
//! - `slow-bodies`: `--connections` connections from 127.0.0.1, each a
//!   `POST /api/paste` with `Content-Length: 100` and then one body byte a
//!   second. A normal client on 127.0.0.2 creates and reads a paste every
//!   100 ms and asks both probes every 500 ms. Reported: the attackers'
//!   outcomes (status and when), the normal client's latencies and
//!   statuses, and the probes' statuses.
//! - `slow-readers`: one paste of `--paste-mib` MiB of base64url text, then
//!   `--connections` connections with a 4 KiB receive buffer that ask for it
//!   and never read. The server's resident memory is sampled every 250 ms.
//!   Reported: its peak and final RSS, how the readers were answered (200,
//!   503), how many of their connections the server closed, and a normal
//!   client's reads of the same paste meanwhile.
//!
//! - `review-streams` (issue 42): `--reviews` anonymous reviews, then
//!   `--per-review` event streams opened on each (SSE, through the owner's
//!   and reviewer links), paced under the IP limiter, held for
//!   `--seconds`. A normal client on 127.0.0.2 meanwhile creates and reads
//!   pastes, reads its own review and opens a stream of its own, and asks
//!   the probes. Reported: how many streams the attacker got and how the
//!   rest were refused, the normal client's and the probes' latencies
//!   (p50 / p99 / max) and statuses, and how long after the attacker
//!   leaves its address gets a stream place again.
//! - `review-readers` (issue 42): a review whose version holds
//!   `--paste-mib` MiB of text, then `--connections` connections with a
//!   4 KiB receive buffer that ask for that version and never read. RSS as
//!   for `slow-readers`.
//!
//! Everything stays on loopback and every loop ends by itself (`--seconds`).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use loadtests::backend::StoreConfig;
use loadtests::process::{ServerProcess, free_port};
use loadtests::procstat::{MemoryField, kib_to_mib, memory_kib};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::DEFAULT_SERVER_BIN;
use crate::run::{READY_POLL, READY_TIMEOUT, check_server_bin, planshare_command, temp_dir};

/// Where the normal client's connections come from (not the attacker's address).
const NORMAL_CLIENT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Scenario {
    /// Request bodies that trickle in a byte a second.
    SlowBodies,
    /// Clients that ask for a large paste and never read the answer.
    SlowReaders,
    /// One client opening as many review event streams as it can.
    ReviewStreams,
    /// Clients that ask for a large review version and never read it.
    ReviewReaders,
}

#[derive(Debug, Args)]
pub(crate) struct AttackArgs {
    /// Which attack.
    #[arg(value_enum)]
    scenario: Scenario,
    /// The planshare server binary.
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// Attacking connections (530 and 800 in the attack that found these).
    #[arg(long)]
    connections: Option<usize>,
    /// How long the attack lasts.
    #[arg(long, default_value_t = 40)]
    seconds: u64,
    /// Size of the paste the slow readers ask for, in MiB of text.
    #[arg(long, default_value_t = 5)]
    paste_mib: usize,
    /// Client addresses the attacking connections come from, in turn
    /// (127.0.1.1, 127.0.1.2, …; at most 250): 1 is one client, more
    /// spreads the attack past the per-client caps.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=250))]
    addresses: u8,
    /// `review-streams`: anonymous reviews the attacker creates.
    #[arg(long, default_value_t = 130)]
    reviews: usize,
    /// `review-streams`: streams it opens on each.
    #[arg(long, default_value_t = 32)]
    per_review: usize,
    /// Extra server environment, `KEY=VALUE` (repeatable).
    #[arg(long = "server-env", value_parser = parse_env)]
    server_env: Vec<(String, String)>,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

pub(crate) async fn attack(args: AttackArgs) -> anyhow::Result<()> {
    check_server_bin(&args.server_bin)?;
    let work = temp_dir()?;
    let port = free_port()?;
    let mut command = planshare_command(&args.server_bin, port, work.path(), &StoreConfig::Fs)?;
    // The attack was on the default settings: the limiters as shipped.
    command.env_remove("PLANSHARE_RATE_LIMITS");
    for (key, value) in &args.server_env {
        command.env(key, value);
    }
    let mut server = ServerProcess::spawn("planshare", command, port)?;
    server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
    let duration = Duration::from_secs(args.seconds.max(1));
    match args.scenario {
        Scenario::SlowBodies => {
            let connections = args.connections.unwrap_or(530);
            slow_bodies(&server, connections, duration, args.addresses).await?;
        }
        Scenario::SlowReaders => {
            let connections = args.connections.unwrap_or(800);
            slow_readers(
                &server,
                connections,
                duration,
                args.paste_mib,
                args.addresses,
            )
            .await?;
        }
        Scenario::ReviewStreams => {
            review_streams(&server, &args, duration).await?;
        }
        Scenario::ReviewReaders => {
            let connections = args.connections.unwrap_or(200);
            review_readers(
                &server,
                connections,
                duration,
                args.paste_mib.min(4),
                args.addresses,
            )
            .await?;
        }
    }
    server.ensure_running()?;
    server.terminate(Duration::from_secs(30)).await?;
    Ok(())
}

/// The address attacking connection `i` comes from (of `addresses`).
fn attacker_address(i: usize, addresses: u8) -> Ipv4Addr {
    let n = u8::try_from(i % usize::from(addresses.max(1))).unwrap_or(0);
    Ipv4Addr::new(127, 0, 1, n + 1)
}

/// A connection to `addr` from `from`, with a receive buffer of `recv` bytes.
async fn connect_from(
    from: Ipv4Addr,
    addr: SocketAddr,
    recv: Option<u32>,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    if let Some(size) = recv {
        socket.set_recv_buffer_size(size)?;
    }
    socket.connect(addr).await
}

// ---- slow bodies ---------------------------------------------------------

async fn slow_bodies(
    server: &ServerProcess,
    connections: usize,
    duration: Duration,
    addresses: u8,
) -> anyhow::Result<()> {
    let addr = server.addr();
    println!(
        "slow bodies: {connections} connections from {addresses} address(es), a body byte a second, {} s",
        duration.as_secs()
    );
    let started = Instant::now();
    let attackers: Vec<_> = (0..connections)
        .map(|i| tokio::spawn(trickle(addr, attacker_address(i, addresses), duration)))
        .collect();
    let normal = tokio::spawn(normal_client(addr, duration));
    let probes = tokio::spawn(probe_loop(addr, duration));

    let mut outcomes: BTreeMap<u16, Vec<Duration>> = BTreeMap::new();
    for attacker in attackers {
        let (status, at) = attacker.await.context("an attacking task")?;
        outcomes.entry(status).or_default().push(at);
    }
    let normal = normal.await.context("the normal client")?;
    let probes = probes.await.context("the probes")?;
    println!("attackers (status: count, first and last answer after s; 0 = no answer):");
    for (status, times) in &outcomes {
        let first = times.iter().min().copied().unwrap_or_default();
        let last = times.iter().max().copied().unwrap_or_default();
        println!(
            "  {status}: {} ({:.1} .. {:.1})",
            times.len(),
            first.as_secs_f64(),
            last.as_secs_f64()
        );
    }
    normal.print("normal client (create + read every 100 ms, from 127.0.0.2)");
    probes.print("probes (/healthz and /readyz every 500 ms, from 127.0.0.2)");
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// One attacking connection: the head and a first byte, then a byte a
/// second, until the server answers or closes, or `duration` ends.
async fn trickle(addr: SocketAddr, from: Ipv4Addr, duration: Duration) -> (u16, Duration) {
    let started = Instant::now();
    let Ok(mut stream) = connect_from(from, addr, None).await else {
        return (0, started.elapsed());
    };
    let head = "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{";
    let _ = stream.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    while started.elapsed() < duration {
        tokio::select! {
            read = stream.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            },
            _ = tick.tick() => {
                let _ = stream.write_all(b" ").await;
            }
        }
    }
    (status_of(&answer), started.elapsed())
}

/// Latencies and statuses of a series of requests.
#[derive(Debug, Default)]
struct Tally {
    latencies: Vec<Duration>,
    statuses: BTreeMap<u16, usize>,
}

impl Tally {
    fn record(&mut self, status: u16, latency: Duration) {
        self.latencies.push(latency);
        *self.statuses.entry(status).or_default() += 1;
    }

    fn print(mut self, what: &str) {
        self.latencies.sort();
        let at = |q: f64| -> f64 {
            if self.latencies.is_empty() {
                return 0.0;
            }
            let i = ((self.latencies.len() - 1) as f64 * q).round() as usize;
            self.latencies[i].as_secs_f64() * 1000.0
        };
        println!(
            "{what}: {} requests, statuses {:?}, latency ms p50 {:.1} p99 {:.1} max {:.1}",
            self.latencies.len(),
            self.statuses,
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
}

/// A create and a read of it every 100 ms, each on a new connection from
/// [`NORMAL_CLIENT`].
async fn normal_client(addr: SocketAddr, duration: Duration) -> Tally {
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < duration {
        n += 1;
        let body = format!(r#"{{"data":"normal{n}"}}"#);
        let (status, answer, latency) = request(addr, "POST", "/api/paste", &body).await;
        tally.record(status, latency);
        if status == 201
            && let Some(id) = json_string(&answer, "id")
        {
            let (status, _, latency) = request(addr, "GET", &format!("/api/paste/{id}"), "").await;
            tally.record(status, latency);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tally
}

/// Both probes every 500 ms from [`NORMAL_CLIENT`].
async fn probe_loop(addr: SocketAddr, duration: Duration) -> Tally {
    let mut tally = Tally::default();
    let started = Instant::now();
    while started.elapsed() < duration {
        for path in ["/healthz", "/readyz"] {
            let (status, _, latency) = request(addr, "GET", path, "").await;
            tally.record(status, latency);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tally
}

/// One request on a new connection from [`NORMAL_CLIENT`], read to the end
/// (at most 30 s): status (0 when there was no answer), body, latency.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String, Duration) {
    request_from(NORMAL_CLIENT, addr, method, path, None, body).await
}

/// `len` characters of base64url text (what an encrypted paste stores).
fn base64url_text(len: usize) -> String {
    (0..len)
        .map(|i| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                    [(i * 7 + i / 61) % 64],
            )
        })
        .collect()
}

fn status_of(answer: &[u8]) -> u16 {
    String::from_utf8_lossy(answer)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn json_string(body: &str, field: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()?
        .get(field)?
        .as_str()
        .map(str::to_owned)
}

// ---- slow readers --------------------------------------------------------

async fn slow_readers(
    server: &ServerProcess,
    connections: usize,
    duration: Duration,
    paste_mib: usize,
    addresses: u8,
) -> anyhow::Result<()> {
    let addr = server.addr();
    let pid = server.pid();
    let text = base64url_text(paste_mib * 1024 * 1024);
    let (status, answer, _) = request(
        addr,
        "POST",
        "/api/paste",
        &format!(r#"{{"data":"{text}"}}"#),
    )
    .await;
    if status != 201 {
        bail!("creating the {paste_mib} MiB paste answered {status}: {answer}");
    }
    let id = json_string(&answer, "id").context("no id in the create answer")?;
    let idle_kib = memory_kib(pid, MemoryField::Rss)?;
    println!(
        "slow readers: {connections} connections from {addresses} address(es) ask for a {paste_mib} MiB paste with a 4 KiB receive buffer and never read, {} s; idle RSS {:.1} MiB",
        duration.as_secs(),
        kib_to_mib(idle_kib)
    );
    let started = Instant::now();
    let path = format!("/api/paste/{id}");
    let readers: Vec<_> = (0..connections)
        .map(|i| {
            tokio::spawn(never_read(
                addr,
                attacker_address(i, addresses),
                path.clone(),
                duration,
            ))
        })
        .collect();
    let normal = tokio::spawn({
        let path = path.clone();
        async move {
            let mut tally = Tally::default();
            let started = Instant::now();
            while started.elapsed() < duration {
                let (status, _, latency) = request(addr, "GET", &path, "").await;
                tally.record(status, latency);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            tally
        }
    });
    let mut peak_kib = idle_kib;
    let mut samples = Vec::new();
    while started.elapsed() < duration {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let kib = memory_kib(pid, MemoryField::Rss)?;
        peak_kib = peak_kib.max(kib);
        samples.push((started.elapsed(), kib));
    }
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let mut closed = 0;
    for reader in readers {
        let (status, was_closed) = reader.await.context("a reading task")?;
        *statuses.entry(status).or_default() += 1;
        closed += usize::from(was_closed);
    }
    let final_kib = memory_kib(pid, MemoryField::Rss)?;
    println!("readers' answers (status: count; 0 = none): {statuses:?}");
    println!("connections the server had closed by the end: {closed} of {connections}",);
    println!(
        "server RSS: idle {:.1} MiB, peak {:.1} MiB, at the end {:.1} MiB",
        kib_to_mib(idle_kib),
        kib_to_mib(peak_kib),
        kib_to_mib(final_kib)
    );
    let every = (samples.len() / 10).max(1);
    let trace: Vec<String> = samples
        .iter()
        .step_by(every)
        .map(|(at, kib)| format!("{:.0}s {:.0}", at.as_secs_f64(), kib_to_mib(*kib)))
        .collect();
    println!("RSS MiB over time: {}", trace.join(", "));
    normal
        .await
        .context("the normal reader")?
        .print("normal reader (GET of the same paste every 500 ms, from 127.0.0.2)");
    Ok(())
}

/// Asks for `path` with a 4 KiB receive buffer, reads the status line and
/// then nothing until `duration` ends; then reads what is left for two
/// seconds: the end of the stream within them means the server had closed
/// the connection (a live one would have sent the rest of the answer and
/// kept the connection open).
async fn never_read(
    addr: SocketAddr,
    from: Ipv4Addr,
    path: String,
    duration: Duration,
) -> (u16, bool) {
    never_read_with(addr, from, path, None, duration).await
}

/// [`never_read`] with a bearer token.
async fn never_read_with(
    addr: SocketAddr,
    from: Ipv4Addr,
    path: String,
    token: Option<String>,
    duration: Duration,
) -> (u16, bool) {
    let started = Instant::now();
    let connect = async {
        let mut stream = connect_from(from, addr, Some(4096)).await?;
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut status_line = [0u8; 12];
        stream.read_exact(&mut status_line).await?;
        Ok::<_, std::io::Error>((stream, status_of(&status_line)))
    };
    let Ok(Ok((mut stream, status))) = tokio::time::timeout(duration, connect).await else {
        return (0, false);
    };
    // Hold the connection, unread, for the rest of the attack.
    tokio::time::sleep(duration.saturating_sub(started.elapsed())).await;
    let mut buf = vec![0u8; 256 * 1024];
    let drained = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    })
    .await
    .unwrap_or(false);
    (status, drained)
}

// ---- review streams ------------------------------------------------------

/// A review the attack made: its id and the tokens that may open streams
/// on it (the owner's and its reviewer links').
struct AttackReview {
    id: String,
    tokens: Vec<String>,
}

/// The most streams one link may hold (the server's default
/// `reviews.streams_per_link`): the attack spreads its streams over as
/// many links.
const STREAMS_PER_LINK: usize = 8;

/// A request from `from` with an optional bearer token, read to the end
/// (at most 30 s): status (0 when there was no answer), body, latency.
async fn request_from(
    from: Ipv4Addr,
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String, Duration) {
    let started = Instant::now();
    let exchange = async {
        let mut stream = connect_from(from, addr, None).await?;
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(30), exchange)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&answer);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status_of(&answer), body, started.elapsed())
}

/// Creates a review from `from` with `links` reviewer links, waiting out
/// the IP limiter's 429s.
async fn attack_review(
    addr: SocketAddr,
    from: Ipv4Addr,
    data: &str,
    links: usize,
) -> anyhow::Result<AttackReview> {
    let body = format!(
        r#"{{"version":{{"data":"{data}","digest":"{}"}}}}"#,
        "d".repeat(43)
    );
    let created = paced(|| request_from(from, addr, "POST", "/api/v1/reviews", None, &body)).await;
    if created.0 != 201 {
        bail!("creating a review answered {}: {}", created.0, created.1);
    }
    let id = json_string(&created.1, "id").context("no review id")?;
    let owner = json_string(&created.1, "ownerToken").context("no owner token")?;
    let mut tokens = vec![owner.clone()];
    let path = format!("/api/v1/reviews/{id}/links");
    for _ in 0..links {
        let minted = paced(|| request_from(from, addr, "POST", &path, Some(&owner), "{}")).await;
        if minted.0 != 201 {
            bail!("minting a link answered {}: {}", minted.0, minted.1);
        }
        tokens.push(json_string(&minted.1, "token").context("no link token")?);
    }
    Ok(AttackReview { id, tokens })
}

/// Runs `call` until it is not refused by a rate limiter (429), waiting a
/// little between tries (at most 100 tries).
async fn paced<F, Fut>(mut call: F) -> (u16, String, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (u16, String, Duration)>,
{
    let mut answer = call().await;
    for _ in 0..100 {
        if answer.0 != 429 || answer.1.contains("too-many-streams") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        answer = call().await;
    }
    answer
}

/// Opens an SSE stream of `review` with `token` from `from`: the open
/// connection when the server answered 200, else the status and the
/// error's `code`.
async fn open_stream(
    addr: SocketAddr,
    from: Ipv4Addr,
    review: &str,
    token: &str,
) -> Result<TcpStream, (u16, String)> {
    let attempt = async {
        let mut stream = connect_from(from, addr, None).await?;
        let request = format!(
            "GET /api/v1/reviews/{review}/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await?;
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>((stream, head))
    };
    match tokio::time::timeout(Duration::from_secs(10), attempt).await {
        Ok(Ok((stream, head))) => {
            let status = status_of(&head);
            if status == 200 {
                return Ok(stream);
            }
            let text = String::from_utf8_lossy(&head).into_owned();
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            let code = json_string(body, "code").unwrap_or_default();
            Err((status, code))
        }
        _ => Err((0, "no answer".into())),
    }
}

async fn review_streams(
    server: &ServerProcess,
    args: &AttackArgs,
    duration: Duration,
) -> anyhow::Result<()> {
    let addr = server.addr();
    let (reviews, per_review, addresses) =
        (args.reviews.max(1), args.per_review.max(1), args.addresses);
    let links = per_review.div_ceil(STREAMS_PER_LINK).saturating_sub(1);
    println!(
        "review streams: {reviews} anonymous reviews, {per_review} event streams on each, from {addresses} address(es); held {} s",
        duration.as_secs()
    );
    let setup = Instant::now();
    let mut made = Vec::with_capacity(reviews);
    for r in 0..reviews {
        made.push(attack_review(addr, attacker_address(r, addresses), "AAAA", links).await?);
    }
    println!(
        "  set up in {:.1} s ({reviews} reviews, {} links)",
        setup.elapsed().as_secs_f64(),
        reviews * links
    );
    let own = attack_review(addr, NORMAL_CLIENT, "BBBB", 0).await?;

    let started = Instant::now();
    // The normal client runs through the attack, the hold and the leave.
    let total = duration + Duration::from_secs(60);
    let normal = tokio::spawn(normal_client(addr, total));
    let probes = tokio::spawn(probe_loop(addr, total));
    let reviewer = tokio::spawn(review_reader(
        addr,
        own.id.clone(),
        own.tokens[0].clone(),
        total,
    ));

    let mut held = Vec::new();
    let mut refused: BTreeMap<(u16, String), usize> = BTreeMap::new();
    for (r, review) in made.iter().enumerate() {
        for s in 0..per_review {
            let from = attacker_address(r * per_review + s, addresses);
            let token = &review.tokens[(s / STREAMS_PER_LINK).min(review.tokens.len() - 1)];
            let mut opened = open_stream(addr, from, &review.id, token).await;
            // The IP limiter's 429 (not too-many-streams): wait, then again.
            for _ in 0..50 {
                match &opened {
                    Err((429, code)) if code != "too-many-streams" => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        opened = open_stream(addr, from, &review.id, token).await;
                    }
                    _ => break,
                }
            }
            match opened {
                Ok(stream) => held.push(stream),
                Err(refusal) => *refused.entry(refusal).or_default() += 1,
            }
        }
    }
    let opening = started.elapsed();
    println!(
        "  attacker: {} streams open, refused {refused:?}; opening took {:.1} s",
        held.len(),
        opening.as_secs_f64()
    );
    tokio::time::sleep(duration.saturating_sub(opening)).await;
    let open_at_leave = held.len();
    drop(held);
    let left = Instant::now();
    // How long until the attacker's address gets a place again.
    let from = attacker_address(0, addresses);
    let token = &made[0].tokens[0];
    let regained = loop {
        match open_stream(addr, from, &made[0].id, token).await {
            Ok(_) => break Some(left.elapsed()),
            Err(_) if left.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => break None,
        }
    };
    match regained {
        Some(after) => println!(
            "  the attacker left ({open_at_leave} streams): its address had a stream place again after {:.0} ms",
            after.as_secs_f64() * 1000.0
        ),
        None => {
            println!("  the attacker left ({open_at_leave} streams): no place again within 30 s")
        }
    }
    normal
        .await
        .context("the normal client")?
        .print("normal client (paste create + read every 100 ms, from 127.0.0.2)");
    reviewer
        .await
        .context("the normal reviewer")?
        .print("normal reviewer (its review read + a stream opened every 500 ms, from 127.0.0.2)");
    probes
        .await
        .context("the probes")?
        .print("probes (/healthz and /readyz every 500 ms, from 127.0.0.2)");
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Every 500 ms from [`NORMAL_CLIENT`]: reads its review, and opens an
/// event stream of it and waits for the stream's first bytes (then closes
/// it).
async fn review_reader(
    addr: SocketAddr,
    review: String,
    token: String,
    duration: Duration,
) -> Tally {
    let mut tally = Tally::default();
    let started = Instant::now();
    let path = format!("/api/v1/reviews/{review}");
    while started.elapsed() < duration {
        let (status, _, latency) =
            request_from(NORMAL_CLIENT, addr, "GET", &path, Some(&token), "").await;
        tally.record(status, latency);
        let opened = Instant::now();
        let status = match open_stream(addr, NORMAL_CLIENT, &review, &token).await {
            Ok(_) => 200,
            Err((status, _)) => status,
        };
        tally.record(status, opened.elapsed());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tally
}

// ---- review readers ------------------------------------------------------

async fn review_readers(
    server: &ServerProcess,
    connections: usize,
    duration: Duration,
    mib: usize,
    addresses: u8,
) -> anyhow::Result<()> {
    let addr = server.addr();
    let pid = server.pid();
    let text = base64url_text(mib * 1024 * 1024);
    let review = attack_review(addr, attacker_address(0, 1), &text, 0).await?;
    let token = review.tokens[0].clone();
    let path = format!("/api/v1/reviews/{}/versions/1", review.id);
    let idle_kib = memory_kib(pid, MemoryField::Rss)?;
    println!(
        "review readers: {connections} connections from {addresses} address(es) ask for a review version of {mib} MiB with a 4 KiB receive buffer and never read, {} s; idle RSS {:.1} MiB",
        duration.as_secs(),
        kib_to_mib(idle_kib)
    );
    let started = Instant::now();
    let readers: Vec<_> = (0..connections)
        .map(|i| {
            let (path, token) = (path.clone(), token.clone());
            let from = attacker_address(i, addresses);
            tokio::spawn(
                async move { never_read_with(addr, from, path, Some(token), duration).await },
            )
        })
        .collect();
    let normal = tokio::spawn({
        let (path, token) = (path.clone(), token.clone());
        async move {
            let mut tally = Tally::default();
            let started = Instant::now();
            while started.elapsed() < duration {
                let (status, _, latency) =
                    request_from(NORMAL_CLIENT, addr, "GET", &path, Some(&token), "").await;
                tally.record(status, latency);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            tally
        }
    });
    let mut peak_kib = idle_kib;
    while started.elapsed() < duration {
        tokio::time::sleep(Duration::from_millis(250)).await;
        peak_kib = peak_kib.max(memory_kib(pid, MemoryField::Rss)?);
    }
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for reader in readers {
        let (status, _) = reader.await.context("a reading task")?;
        *statuses.entry(status).or_default() += 1;
    }
    let final_kib = memory_kib(pid, MemoryField::Rss)?;
    println!("readers' answers (status: count; 0 = none): {statuses:?}");
    println!(
        "server RSS: idle {:.1} MiB, peak {:.1} MiB, at the end {:.1} MiB",
        kib_to_mib(idle_kib),
        kib_to_mib(peak_kib),
        kib_to_mib(final_kib)
    );
    normal
        .await
        .context("the normal reader")?
        .print("normal reader (GET of the same version every 500 ms, from 127.0.0.2)");
    Ok(())
}
