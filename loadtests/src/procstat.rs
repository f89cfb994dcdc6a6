//! CPU time and resident memory of a server process, read from
//! `/proc/<pid>/stat` and `/proc/<pid>/status` (Linux only).
//!
//! `utime + stime` are in clock ticks. The tick rate comes from
//! `getconf CLK_TCK` when that command is available, else it is assumed to be
//! 100 Hz — the value on every mainstream Linux architecture — so the
//! resolution is 10 ms of CPU time. Over a 10-second measured phase that is
//! well under 1 % of what a busy server uses.
//!
//! Resident memory is `VmRSS` (now) and `VmHWM` (the peak since the process
//! started) of `/proc/<pid>/status`, in KiB; [`RssSampler`] polls `VmRSS`
//! while a phase runs and keeps the highest value it saw.

use anyhow::Context as _;
use std::process::Command;
use std::time::Duration;

/// The tick rate assumed when `getconf` is missing or says nothing usable.
pub const DEFAULT_CLOCK_TICKS: u64 = 100;

/// Clock ticks per second, from `getconf CLK_TCK`, else [`DEFAULT_CLOCK_TICKS`].
pub fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&hz| hz > 0)
        .unwrap_or(DEFAULT_CLOCK_TICKS)
}

/// `utime + stime` of process `pid`, in clock ticks (all threads included).
pub fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_cpu_ticks(&stat).with_context(|| format!("parsing {path}"))
}

/// Parses `utime + stime` out of the text of a `/proc/<pid>/stat` file.
///
/// The second field (the command name) is in parentheses and may itself hold
/// spaces and parentheses, so fields are counted from the *last* `)`: after it
/// come field 3 (`state`) onwards, and `utime`/`stime` are fields 14 and 15.
pub fn parse_cpu_ticks(stat: &str) -> anyhow::Result<u64> {
    let rest = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .context("no `)` after the command name")?;
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let mut next = |name: &str| -> anyhow::Result<u64> {
        fields
            .next()
            .with_context(|| format!("missing {name}"))?
            .parse::<u64>()
            .with_context(|| format!("bad {name}"))
    };
    let utime = next("utime")?;
    let stime = next("stime")?;
    Ok(utime + stime)
}

/// Converts clock ticks to microseconds at `hz` ticks per second.
pub fn ticks_to_micros(ticks: u64, hz: u64) -> f64 {
    ticks as f64 * 1_000_000.0 / hz.max(1) as f64
}

/// A field of `/proc/<pid>/status` that is a size in KiB (`VmRSS:  1234 kB`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryField {
    /// `VmRSS`: resident set size now.
    Rss,
    /// `VmHWM`: the highest resident set size since the process started.
    HighWaterMark,
}

impl MemoryField {
    fn key(self) -> &'static str {
        match self {
            Self::Rss => "VmRSS",
            Self::HighWaterMark => "VmHWM",
        }
    }
}

/// `field` of process `pid`, in KiB.
pub fn memory_kib(pid: u32, field: MemoryField) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_memory_kib(&status, field).with_context(|| format!("parsing {path}"))
}

/// Parses `field` (in KiB) out of the text of a `/proc/<pid>/status` file:
/// the line `VmRSS:\t   12345 kB`. Fails when the line is missing (a kernel
/// thread, or a process that is exiting) or its value is not `<n> kB`.
pub fn parse_memory_kib(status: &str, field: MemoryField) -> anyhow::Result<u64> {
    let key = field.key();
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .with_context(|| format!("no `{key}:` line"))?;
    let mut words = value.split_ascii_whitespace();
    let (Some(number), Some("kB"), None) = (words.next(), words.next(), words.next()) else {
        anyhow::bail!("`{key}:{value}` is not `<n> kB`");
    };
    number
        .parse::<u64>()
        .with_context(|| format!("bad {key} `{number}`"))
}

/// KiB as MiB.
pub fn kib_to_mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Polls `VmRSS` of one process every `every` on a Tokio task, until
/// [`RssSampler::finish`]; keeps the highest value read.
#[derive(Debug)]
pub struct RssSampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Option<u64>>,
}

impl RssSampler {
    /// Starts sampling process `pid` now (the first sample is immediate).
    pub fn start(pid: u32, every: Duration) -> Self {
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut peak: Option<u64> = None;
            let mut ticks = tokio::time::interval(every.max(Duration::from_millis(1)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = &mut stopped => break,
                }
                // A failed read (the process exiting) is a missing sample,
                // not an error: the phase itself reports a dead server.
                if let Ok(kib) = memory_kib(pid, MemoryField::Rss) {
                    peak = Some(peak.map_or(kib, |p| p.max(kib)));
                }
            }
            // One last sample at the end of the phase.
            if let Ok(kib) = memory_kib(pid, MemoryField::Rss) {
                peak = Some(peak.map_or(kib, |p| p.max(kib)));
            }
            peak
        });
        Self { stop, task }
    }

    /// Stops sampling; the highest `VmRSS` seen, in KiB (`None`: no sample
    /// could be read).
    pub async fn finish(self) -> Option<u64> {
        let _ = self.stop.send(());
        self.task.await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of a real `/proc/<pid>/status` (Linux 6.x).
    const STATUS: &str = "Name:\tplanshare-serve\n\
        Umask:\t0022\n\
        State:\tS (sleeping)\n\
        Tgid:\t41727\n\
        VmPeak:\t  612340 kB\n\
        VmSize:\t  547828 kB\n\
        VmLck:\t       0 kB\n\
        VmHWM:\t   18320 kB\n\
        VmRSS:\t   12044 kB\n\
        RssAnon:\t    4400 kB\n\
        RssFile:\t    7644 kB\n\
        Threads:\t5\n";

    #[test]
    fn parses_rss_and_high_water_mark() -> anyhow::Result<()> {
        assert_eq!(parse_memory_kib(STATUS, MemoryField::Rss)?, 12_044);
        assert_eq!(
            parse_memory_kib(STATUS, MemoryField::HighWaterMark)?,
            18_320
        );
        assert!((kib_to_mib(12_044) - 11.76).abs() < 0.01);
        Ok(())
    }

    #[test]
    fn rss_lines_must_be_there_and_in_kb() {
        // A kernel thread's status has no Vm* lines.
        let kernel_thread = "Name:\tkworker/0:1\nState:\tI (idle)\nThreads:\t1\n";
        assert!(parse_memory_kib(kernel_thread, MemoryField::Rss).is_err());
        // `RssAnon:` must not be taken for `VmRSS:`, nor `VmRSSx:` for it.
        assert!(parse_memory_kib("RssAnon:\t 10 kB\n", MemoryField::Rss).is_err());
        assert!(parse_memory_kib("VmRSSx:\t 10 kB\n", MemoryField::Rss).is_err());
        assert!(parse_memory_kib("VmRSS:\t 10 MB\n", MemoryField::Rss).is_err());
        assert!(parse_memory_kib("VmRSS:\t ten kB\n", MemoryField::Rss).is_err());
        assert!(parse_memory_kib("VmRSS:\t\n", MemoryField::Rss).is_err());
    }

    #[tokio::test]
    async fn samples_our_own_rss() -> anyhow::Result<()> {
        let pid = std::process::id();
        assert!(memory_kib(pid, MemoryField::Rss)? > 0);
        assert!(memory_kib(pid, MemoryField::HighWaterMark)? > 0);
        let sampler = RssSampler::start(pid, Duration::from_millis(5));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(sampler.finish().await.is_some_and(|kib| kib > 0));
        Ok(())
    }

    #[test]
    fn parses_utime_and_stime_even_with_odd_names() -> anyhow::Result<()> {
        let stat = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 \
                    250 75 0 0 20 0 8 0 12345 1000000 200 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat)?, 325);
        Ok(())
    }

    #[test]
    fn reads_our_own_process() -> anyhow::Result<()> {
        cpu_ticks(std::process::id())?;
        assert!(clock_ticks_per_second() > 0);
        Ok(())
    }
}
