//! Idle event streams: N streams on one server, spread over reviews; the
//! server's resident memory before the first and once all are open, and
//! its CPU time over an idle window in which only keep-alives flow.

use super::api::Api;
use super::streams::{Counters, Follow, open_all};
use anyhow::{Context as _, bail};
use loadtests::live::IdleFigures;
use loadtests::process::ServerProcess;
use loadtests::procstat::{self, MemoryField};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Wait after the setup and after opening, before reading memory: lets
/// the server's allocator and the kernel's socket buffers settle.
const SETTLE: Duration = Duration::from_secs(2);

/// What the idle measurement is asked to do.
pub(crate) struct IdlePlan {
    pub(crate) streams: usize,
    pub(crate) per_review: usize,
    pub(crate) window: Duration,
    pub(crate) version_size: usize,
}

/// Reviews needed for `streams` streams at most `per_review` on each.
pub(crate) fn reviews_needed(streams: usize, per_review: usize) -> usize {
    streams.div_ceil(per_review.max(1))
}

pub(crate) async fn measure(
    server: &mut ServerProcess,
    store: &str,
    plan: &IdlePlan,
) -> anyhow::Result<IdleFigures> {
    let addr = server.addr();
    let pid = server.pid();
    let reviews = reviews_needed(plan.streams, plan.per_review);
    eprintln!(
        "idle: creating {reviews} reviews for {} streams ...",
        plan.streams
    );
    let mut api = Api::connect(addr).await?;
    let mut created = Vec::with_capacity(reviews);
    for _ in 0..reviews {
        created.push(api.create_review(plan.version_size).await?);
    }
    drop(api);
    tokio::time::sleep(SETTLE).await;
    let rss_before_kib = procstat::memory_kib(pid, MemoryField::Rss)?;

    let specs: Vec<Follow> = (0..plan.streams)
        .map(|i| {
            let review = &created[i / plan.per_review.max(1)];
            Follow::events(addr, &review.id, &review.owner, false)
        })
        .collect();
    let counters = Arc::new(Counters::default());
    let (stop, stopped) = watch::channel(false);
    eprintln!("idle: opening {} streams ...", plan.streams);
    let opening = Instant::now();
    let tasks = open_all(
        specs,
        &counters,
        &stopped,
        Duration::from_secs(300),
        Some("idle"),
    )
    .await?;
    let open_secs = opening.elapsed().as_secs_f64();
    eprintln!("idle: all {} open after {open_secs:.1} s", plan.streams);
    tokio::time::sleep(SETTLE).await;
    server.ensure_running()?;
    let rss_open_kib = procstat::memory_kib(pid, MemoryField::Rss)?;

    eprintln!("idle: {} s idle window ...", plan.window.as_secs_f64());
    let keep_alives_before = counters.keep_alives.load(Ordering::Relaxed);
    let cpu_before = procstat::cpu_ticks(pid)?;
    let window_start = Instant::now();
    tokio::time::sleep(plan.window).await;
    let cpu_after = procstat::cpu_ticks(pid)?;
    let window_secs = window_start.elapsed().as_secs_f64();
    let keep_alives = counters.keep_alives.load(Ordering::Relaxed) - keep_alives_before;
    let rss_end_kib = procstat::memory_kib(pid, MemoryField::Rss)?;
    let closed = counters.closed.load(Ordering::Relaxed);
    let still_open = plan.streams.saturating_sub(closed);
    let cpu_us = procstat::ticks_to_micros(
        cpu_after.saturating_sub(cpu_before),
        procstat::clock_ticks_per_second(),
    );

    // Close every stream, and give the server a moment to see it.
    let _ = stop.send(true);
    drop(stop);
    let mut tasks = tasks;
    while let Some(joined) = tasks.join_next().await {
        joined.context("a stream follower panicked")?;
    }
    // The server notices a closed stream when it next writes to it (a
    // keep-alive); wait until it has given every place back.
    let released = Api::connect(addr)
        .await?
        .wait_streams_released(Duration::from_secs(60))
        .await?;
    match released {
        Some(after) => eprintln!(
            "idle: the server released the closed streams after {:.1} s",
            after.as_secs_f64()
        ),
        None => eprintln!("warning: the server still counts open streams 60 s after they closed"),
    }
    server.ensure_running()?;
    if closed > 0 {
        eprintln!(
            "warning: {closed} streams ended during the idle window; first: {}",
            counters.first_problem().unwrap_or_default()
        );
    }
    if still_open == 0 {
        bail!("every stream ended during the idle window");
    }
    Ok(IdleFigures {
        store: store.to_owned(),
        streams: plan.streams,
        reviews,
        rss_before_kib,
        rss_open_kib,
        rss_end_kib,
        open_secs,
        window_secs,
        cpu_us,
        keep_alives,
        still_open,
        connections_kib: None,
        released_secs: released.map(|d| d.as_secs_f64()),
    })
}

/// The baseline of a stream: `n` keep-alive connections to a fresh
/// server, each after one `GET /healthz`, held idle. Returns the server's
/// `VmRSS` before the first and once all are answered, KiB. (The server
/// may close them later — its first-byte timeout — which does not matter:
/// memory is read as soon as all are answered.)
pub(crate) async fn connections(server: &ServerProcess, n: usize) -> anyhow::Result<(u64, u64)> {
    let addr = server.addr();
    let pid = server.pid();
    tokio::time::sleep(SETTLE).await;
    let before = procstat::memory_kib(pid, MemoryField::Rss)?;
    let specs = (0..n).map(|_| Follow::idle_connection(addr)).collect();
    let counters = Arc::new(Counters::default());
    let (stop, stopped) = watch::channel(false);
    let mut tasks = open_all(
        specs,
        &counters,
        &stopped,
        Duration::from_secs(300),
        Some("connections"),
    )
    .await?;
    // Shorter than the stream's settle: the server closes connections that
    // stay silent for its first-byte timeout (10 s by default).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let open = procstat::memory_kib(pid, MemoryField::Rss)?;
    let closed = counters.closed.load(Ordering::Relaxed);
    let _ = stop.send(true);
    drop(stop);
    while let Some(joined) = tasks.join_next().await {
        joined.context("a connection holder panicked")?;
    }
    if closed > 0 {
        eprintln!(
            "warning: {closed} of the {n} idle connections were closed before memory was read"
        );
    }
    Ok((before, open))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_spread_over_enough_reviews() {
        assert_eq!(reviews_needed(10_000, 32), 313);
        assert_eq!(reviews_needed(64, 32), 2);
        assert_eq!(reviews_needed(1, 32), 1);
        assert_eq!(reviews_needed(0, 32), 0);
        assert_eq!(reviews_needed(5, 0), 5);
    }
}
