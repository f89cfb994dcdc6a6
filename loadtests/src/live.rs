//! What `reviews` measured of live reviews, and its Markdown report: idle
//! event streams (server memory and CPU per stream), the fan-out latency of
//! a comment to its subscribers, and comment PUTs against paste creates.
//! Pure: the figures are filled in by the binary (`src/reviews/`).

use crate::stats::{median, quantile_of_sorted, ratio};
use crate::text::{fixed, ratio_text};
use std::fmt::Write as _;

/// The goal for server memory per idle stream, KiB.
pub const IDLE_KIB_GOAL: f64 = 8.0;
/// The goal for the p99 fan-out latency on one replica, ms.
pub const FANOUT_P99_GOAL_MS: f64 = 50.0;
/// The goal for the p99 fan-out latency across replicas, ms.
pub const FANOUT_REPLICAS_P99_GOAL_MS: f64 = 250.0;

/// Idle event streams on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleFigures {
    /// The store the server ran on.
    pub store: String,
    /// Streams opened (each its own connection).
    pub streams: usize,
    /// Reviews they were spread over.
    pub reviews: usize,
    /// Server `VmRSS` before the first stream, KiB.
    pub rss_before_kib: u64,
    /// Server `VmRSS` once every stream had its `retry:` line, KiB.
    pub rss_open_kib: u64,
    /// Server `VmRSS` at the end of the idle window, KiB.
    pub rss_end_kib: u64,
    /// Seconds it took to open all streams.
    pub open_secs: f64,
    /// Length of the idle window, seconds.
    pub window_secs: f64,
    /// Server CPU time over the idle window, µs.
    pub cpu_us: f64,
    /// `: keep-alive` comments the runner received in the window.
    pub keep_alives: u64,
    /// Streams still open at the end of the window.
    pub still_open: usize,
    /// The baseline on a fresh server: `VmRSS` before and with as many
    /// idle keep-alive connections (one `GET /healthz` each), KiB.
    pub connections_kib: Option<(u64, u64)>,
    /// Seconds from closing every stream (client side) until the server's
    /// `planshare_review_streams_open` gauge read 0 (`None`: not within
    /// the wait).
    pub released_secs: Option<f64>,
}

impl IdleFigures {
    /// Server memory per stream: the growth from no stream to all open, KiB.
    pub fn kib_per_stream(&self) -> Option<f64> {
        let grown = self.rss_open_kib.saturating_sub(self.rss_before_kib) as f64;
        ratio(Some(grown), Some(self.streams as f64))
    }

    /// Server memory per idle keep-alive connection (the baseline), KiB.
    pub fn kib_per_connection(&self) -> Option<f64> {
        let (before, open) = self.connections_kib?;
        ratio(
            Some(open.saturating_sub(before) as f64),
            Some(self.streams as f64),
        )
    }

    /// Server memory per stream measured at the end of the window, KiB.
    pub fn kib_per_stream_at_end(&self) -> Option<f64> {
        let grown = self.rss_end_kib.saturating_sub(self.rss_before_kib) as f64;
        ratio(Some(grown), Some(self.streams as f64))
    }

    /// Server CPU per stream per minute of idling, µs.
    pub fn cpu_us_per_stream_minute(&self) -> Option<f64> {
        let minutes = self.window_secs / 60.0;
        ratio(Some(self.cpu_us), Some(self.streams as f64 * minutes))
    }

    /// Server CPU per keep-alive comment received, µs.
    pub fn cpu_us_per_keep_alive(&self) -> Option<f64> {
        ratio(Some(self.cpu_us), Some(self.keep_alives as f64))
    }
}

/// Latency quantiles of a set of samples, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Samples.
    pub count: usize,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Smallest (negative when an event beat the PUT's answer).
    pub min_ms: f64,
}

impl Latency {
    /// The quantiles of `samples` (ms); `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        Some(Self {
            count: sorted.len(),
            p50_ms: quantile_of_sorted(&sorted, 0.5)?,
            p99_ms: quantile_of_sorted(&sorted, 0.99)?,
            max_ms: quantile_of_sorted(&sorted, 1.0)?,
            min_ms: quantile_of_sorted(&sorted, 0.0)?,
        })
    }
}

/// Comments fanned out to the subscribers of one review.
#[derive(Debug, Clone, PartialEq)]
pub struct FanoutFigures {
    /// The store the server ran on.
    pub store: String,
    /// `one replica` or `across replicas`.
    pub topology: String,
    /// Streams following the review.
    pub subscribers: usize,
    /// Comments PUT.
    pub comments: usize,
    /// Latency from each PUT's `200` to each subscriber's `comments`
    /// event, over all (comment, subscriber) pairs.
    pub latency: Option<Latency>,
    /// The same pairs timed from the moment the PUT was sent (so it
    /// includes the PUT's own handling; never negative).
    pub from_send: Option<Latency>,
    /// Pairs whose event never arrived.
    pub missing: usize,
    /// Pairs whose event arrived before the PUT's answer (counted as
    /// negative latencies).
    pub early: usize,
    /// Median latency of the PUTs themselves, ms.
    pub put_p50_ms: Option<f64>,
}

/// Comment PUTs against paste creates, same size and concurrency.
#[derive(Debug, Clone, PartialEq)]
pub struct PutFigures {
    /// The store the server ran on.
    pub store: String,
    /// Connections.
    pub concurrency: usize,
    /// Characters of `data` per request.
    pub size: usize,
    /// Comment writers the PUTs were spread over.
    pub writers: usize,
    /// Reviews those writers belong to.
    pub reviews: usize,
    /// `POST /api/paste` req/s, one per round.
    pub create_rps: Vec<f64>,
    /// `PUT …/comments` req/s, one per round.
    pub comment_rps: Vec<f64>,
    /// Server CPU µs per create, per round.
    pub create_cpu_us: Vec<f64>,
    /// Server CPU µs per comment PUT, per round.
    pub comment_cpu_us: Vec<f64>,
    /// p99 of creates, ms, per round.
    pub create_p99_ms: Vec<f64>,
    /// p99 of comment PUTs, ms, per round.
    pub comment_p99_ms: Vec<f64>,
    /// Failed requests, both kinds, all rounds.
    pub errors: u64,
}

impl PutFigures {
    /// Median comment PUT req/s over median create req/s.
    pub fn ratio(&self) -> Option<f64> {
        ratio(median(&self.comment_rps), median(&self.create_rps))
    }
}

/// The context of a `reviews` run, for the report's head.
#[derive(Debug, Clone, Default)]
pub struct LiveInfo {
    /// When the run started (UTC, `YYYY-MM-DD HH:MM:SS`).
    pub started: String,
    /// The command line.
    pub command: String,
    /// CPUs of the machine.
    pub cpus: usize,
    /// Free-form notes (settings, limits, machine load).
    pub notes: Vec<String>,
}

/// The Markdown report of a `reviews` run.
pub fn markdown(
    info: &LiveInfo,
    idle: &[IdleFigures],
    fanout: &[FanoutFigures],
    puts: &[PutFigures],
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# planshare live reviews — {}\n", info.started);
    let _ = writeln!(md, "`{}`, {} CPUs.\n", info.command, info.cpus);
    for note in &info.notes {
        let _ = writeln!(md, "- {note}");
    }
    if !info.notes.is_empty() {
        md.push('\n');
    }
    if !idle.is_empty() {
        let _ = writeln!(
            md,
            "## Idle event streams\n\n\
             | store | streams | reviews | opened in s | RSS before MiB | RSS open MiB | KiB / stream (goal ≤ {IDLE_KIB_GOAL:.0}) | KiB / stream at end | of it, KiB / idle connection | idle s | CPU µs / stream / min | keep-alives | CPU µs / keep-alive | still open | places freed after s |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for f in idle {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {:.0} | {} | {} | {} | {} | {} |",
                f.store,
                f.streams,
                f.reviews,
                f.open_secs,
                f.rss_before_kib as f64 / 1024.0,
                f.rss_open_kib as f64 / 1024.0,
                fixed(f.kib_per_stream(), 2),
                fixed(f.kib_per_stream_at_end(), 2),
                fixed(f.kib_per_connection(), 2),
                f.window_secs,
                fixed(f.cpu_us_per_stream_minute(), 1),
                f.keep_alives,
                fixed(f.cpu_us_per_keep_alive(), 1),
                f.still_open,
                fixed(f.released_secs, 1),
            );
        }
        let _ = writeln!(
            md,
            "\n`of it, KiB / idle connection`: as many keep-alive connections, each after one \
             `GET /healthz`, on a fresh server of the same store — what a connection costs \
             before it carries a stream. `places freed after`: from closing every stream \
             (runner side) until the server's `planshare_review_streams_open` gauge read 0.\n"
        );
    }
    if !fanout.is_empty() {
        let _ = writeln!(
            md,
            "## Fan-out: PUT's 200 → `comments` event on each subscriber\n\n\
             | store | topology | subscribers | comments | pairs | p50 ms | p99 ms | max ms | min ms | early | missing | PUT p50 ms | from send: p50 ms | p99 ms |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for f in fanout {
            let l = f.latency;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                f.store,
                f.topology,
                f.subscribers,
                f.comments,
                l.map_or(0, |l| l.count),
                fixed(l.map(|l| l.p50_ms), 2),
                fixed(l.map(|l| l.p99_ms), 2),
                fixed(l.map(|l| l.max_ms), 2),
                fixed(l.map(|l| l.min_ms), 2),
                f.early,
                f.missing,
                fixed(f.put_p50_ms, 2),
                fixed(f.from_send.map(|l| l.p50_ms), 2),
                fixed(f.from_send.map(|l| l.p99_ms), 2),
            );
        }
        let _ = writeln!(
            md,
            "\nGoals: p99 ≤ {FANOUT_P99_GOAL_MS:.0} ms at 1000 subscribers on one replica, \
             ≤ {FANOUT_REPLICAS_P99_GOAL_MS:.0} ms across replicas. \
             `early`: events that arrived before the PUT's answer (negative latencies, included); \
             `from send`: the same pairs timed from the moment the PUT was sent.\n"
        );
    }
    if !puts.is_empty() {
        let _ = writeln!(
            md,
            "## Comment PUTs vs paste creates (medians over rounds)\n\n\
             | store | size B | concurrency | writers / reviews | create req/s | comment PUT req/s | PUT / create | create p99 ms | PUT p99 ms | create CPU µs/req | PUT CPU µs/req | errors |\n\
             |---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for f in puts {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                f.store,
                f.size,
                f.concurrency,
                f.writers,
                f.reviews,
                fixed(median(&f.create_rps), 0),
                fixed(median(&f.comment_rps), 0),
                ratio_text(f.ratio()),
                fixed(median(&f.create_p99_ms), 2),
                fixed(median(&f.comment_p99_ms), 2),
                fixed(median(&f.create_cpu_us), 0),
                fixed(median(&f.comment_cpu_us), 0),
                f.errors,
            );
        }
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> IdleFigures {
        IdleFigures {
            store: "fs".to_owned(),
            streams: 10_000,
            reviews: 313,
            rss_before_kib: 20_000,
            rss_open_kib: 80_000,
            rss_end_kib: 90_000,
            open_secs: 3.0,
            window_secs: 30.0,
            cpu_us: 200_000.0,
            keep_alives: 20_000,
            still_open: 10_000,
            connections_kib: Some((20_000, 40_000)),
            released_secs: Some(14.5),
        }
    }

    #[test]
    fn idle_figures_per_stream() {
        let f = idle();
        assert_eq!(f.kib_per_stream(), Some(6.0));
        assert_eq!(f.kib_per_stream_at_end(), Some(7.0));
        assert_eq!(f.kib_per_connection(), Some(2.0));
        // 200 ms over 10 000 streams and half a minute: 40 µs per minute.
        assert_eq!(f.cpu_us_per_stream_minute(), Some(40.0));
        assert_eq!(f.cpu_us_per_keep_alive(), Some(10.0));
        let shrunk = IdleFigures {
            rss_open_kib: 10_000,
            keep_alives: 0,
            streams: 0,
            ..idle()
        };
        assert_eq!(shrunk.kib_per_stream(), None);
        assert_eq!(shrunk.cpu_us_per_keep_alive(), None);
        let fewer = IdleFigures {
            rss_open_kib: 10_000,
            ..idle()
        };
        assert_eq!(fewer.kib_per_stream(), Some(0.0));
    }

    #[test]
    fn latency_quantiles() {
        assert_eq!(Latency::of(&[]), None);
        let samples: Vec<f64> = (0..1000).map(|i| f64::from(i) / 10.0 - 1.0).collect();
        let l = Latency::of(&samples).unwrap_or_else(|| unreachable!());
        assert_eq!(l.count, 1000);
        assert!((l.p50_ms - 48.9).abs() < 1e-9, "{l:?}");
        assert!((l.p99_ms - 97.9).abs() < 1e-9, "{l:?}");
        assert!((l.max_ms - 98.9).abs() < 1e-9, "{l:?}");
        assert!((l.min_ms + 1.0).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn put_ratio_is_of_medians() {
        let f = PutFigures {
            store: "fs".to_owned(),
            concurrency: 32,
            size: 8192,
            writers: 256,
            reviews: 64,
            create_rps: vec![1000.0, 3000.0],
            comment_rps: vec![500.0, 1500.0, 1000.0],
            create_cpu_us: vec![],
            comment_cpu_us: vec![],
            create_p99_ms: vec![],
            comment_p99_ms: vec![],
            errors: 0,
        };
        assert_eq!(f.ratio(), Some(0.5));
        let md = markdown(&LiveInfo::default(), &[idle()], &[], &[f]);
        assert!(
            md.contains("| fs | 8192 | 32 | 256 / 64 | 2000 | 1000 | 0.50 |"),
            "{md}"
        );
        assert!(md.contains("| fs | 10000 | 313 | 3.0 | 19.5 | 78.1 | 6.00 | 7.00 | 2.00 | 30 | 40.0 | 20000 | 10.0 | 10000 | 14.5 |"), "{md}");
        assert!(!md.contains("Fan-out"));
    }

    #[test]
    fn fanout_rows() {
        let f = FanoutFigures {
            store: "redis".to_owned(),
            topology: "one replica".to_owned(),
            subscribers: 100,
            comments: 2,
            latency: Latency::of(&[1.0, 2.0, -0.5]),
            missing: 197,
            early: 1,
            put_p50_ms: Some(3.0),
            from_send: Latency::of(&[4.0, 5.0]),
        };
        let md = markdown(&LiveInfo::default(), &[], &[f], &[]);
        assert!(
            md.contains("| redis | one replica | 100 | 2 | 3 | 1.00 | 2.00 | 2.00 | -0.50 | 1 | 197 | 3.00 | 4.00 | 5.00 |"),
            "{md}"
        );
    }
}
