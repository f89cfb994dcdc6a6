//! `layouts`: what one durable paste costs the kernel in different on-disk
//! layouts, without the server around it.
//!
//! The fs store's creates are bound by filesystem work (a file per paste:
//! an inode, two directory entries and a link, made durable by group
//! commit). This command does the same system calls as the store, in one
//! thread and with nothing else in the way, next to the layouts it could use
//! instead, so the gain of a storage-engine change can be known before it is
//! built:
//!
//! - `store` — what `store.fs.sync = "batch"` does: a temporary file created
//!   with `O_EXCL` in the paste's shard, the record written, its mtime set,
//!   closed; one `syncfs(2)` per batch, which makes the batch's data durable
//!   and the previous batch's links; then each file linked to its final name
//!   and the temporary name removed.
//! - `tmpfile` — the same with an unnamed `O_TMPFILE` inode linked through
//!   `/proc/self/fd` (no temporary name to create and remove).
//! - `direct` — the record written under its final name, one `syncfs` per
//!   batch. Not acceptable for the store (a crash can leave a partial file
//!   under a paste's name); here for comparison only.
//! - `append` — records appended to one segment file, one `fdatasync` per
//!   batch: a log-structured store's write path (its index lives in memory).
//!
//! Every layout is run `--rounds` times, interleaved, each in a fresh
//! directory under `--dir`, and two CPU figures are kept per paste: the
//! measuring thread's own CPU time, and the CPU time of the whole machine
//! (`/proc/stat`, all CPUs, idle and steal left out) — `syncfs` hands
//! write-back to the kernel's flusher threads, which the thread's own time
//! does not see. The machine figure counts everything else that runs, so run
//! this on an otherwise quiet machine.

use anyhow::{Context as _, bail};
use clap::Args;
use loadtests::clock::UtcTime;
use loadtests::payload::Rng;
use loadtests::stats;
use rustix::fs::{AtFlags, CWD, Mode, OFlags};
use rustix::time::{ClockId, clock_gettime};
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Bytes of the store's record header (`paste_store::record`).
const HEADER_LEN: usize = 64;

/// Shard directories per run, as in the store (`<namespace>/<2 hex digits>`).
const SHARDS: usize = 256;

#[derive(Debug, Args)]
pub(crate) struct LayoutsArgs {
    /// Pastes written per run.
    #[arg(long, default_value_t = 4000)]
    pastes: usize,
    /// Characters of each paste's base64url `data` (stored decoded: 3/4).
    #[arg(long, default_value_t = 8192)]
    size: usize,
    /// Pastes per flush: what group commit gathers (about 9 under 32
    /// connections in the store's profile).
    #[arg(long, default_value_t = 9)]
    batch: usize,
    /// Runs of each layout, interleaved; medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Layouts to run, comma-separated: store, tmpfile, direct, append.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "store,tmpfile,direct,append"
    )]
    layouts: Vec<Layout>,
    /// Where the run directories are made (the filesystem under test); they
    /// are removed at the end.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Folder for `layouts-<UTC timestamp>.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Layout {
    Store,
    Tmpfile,
    Direct,
    Append,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::Store => "store",
            Layout::Tmpfile => "tmpfile",
            Layout::Direct => "direct",
            Layout::Append => "append",
        }
    }
}

/// One run's figures, per paste.
#[derive(Debug, Clone, Copy)]
struct Sample {
    thread_us: f64,
    machine_us: f64,
    wall_us: f64,
}

pub(crate) async fn layouts(args: LayoutsArgs) -> anyhow::Result<()> {
    if args.pastes == 0 || args.batch == 0 || args.rounds == 0 || args.layouts.is_empty() {
        bail!("--pastes, --batch, --rounds and --layouts must not be zero or empty");
    }
    fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    tokio::task::spawn_blocking(move || measure(&args))
        .await
        .context("the measuring thread failed")?
}

fn measure(args: &LayoutsArgs) -> anyhow::Result<()> {
    let started = UtcTime::now();
    let parent = tempfile::Builder::new()
        .prefix("planshare-layouts-")
        .tempdir_in(&args.dir)
        .with_context(|| format!("creating a directory under {}", args.dir.display()))?;
    let record = record(args.size);
    let names = names(args.pastes);
    let mut samples: Vec<(Layout, Vec<Sample>)> =
        args.layouts.iter().map(|&l| (l, Vec::new())).collect();
    for round in 0..args.rounds {
        for (layout, runs) in &mut samples {
            let root = parent.path().join(format!("{}-{round}", layout.name()));
            let sample = run(*layout, &root, &record, &names, args.batch)
                .with_context(|| format!("layout {} in {}", layout.name(), root.display()))?;
            eprintln!(
                "round {}/{} {:>8}: {:>7.1} µs CPU per paste (machine), {:>7.1} (thread), {:>7.1} wall",
                round + 1,
                args.rounds,
                layout.name(),
                sample.machine_us,
                sample.thread_us,
                sample.wall_us
            );
            runs.push(sample);
        }
    }

    let median = |runs: &[Sample], f: fn(&Sample) -> f64| {
        stats::median(&runs.iter().map(f).collect::<Vec<_>>())
    };
    let store_machine = samples
        .iter()
        .find(|(l, _)| *l == Layout::Store)
        .and_then(|(_, runs)| median(runs, |s| s.machine_us));
    let fmt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"));
    let mut md = String::new();
    writeln!(
        md,
        "# planshare-loadtest layouts, {}\n\n{} pastes of {} base64url characters ({} B records), \
         flushed every {} pastes, {} round(s), medians. Directory: {}.\n",
        started.iso(),
        args.pastes,
        args.size,
        record.len(),
        args.batch,
        args.rounds,
        args.dir.display()
    )?;
    writeln!(
        md,
        "| layout | machine CPU µs / paste | thread CPU µs / paste | wall µs / paste | machine CPU / store |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---:|")?;
    for (layout, runs) in &samples {
        let machine = median(runs, |s| s.machine_us);
        writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            layout.name(),
            fmt(machine),
            fmt(median(runs, |s| s.thread_us)),
            fmt(median(runs, |s| s.wall_us)),
            stats::ratio(machine, store_machine)
                .map_or_else(|| "–".to_owned(), |r| format!("{r:.2}"))
        )?;
    }
    print!("{md}");
    let path = args.out.join(format!("layouts-{}.md", started.compact()));
    fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("report: {}", path.display());
    Ok(())
}

/// A record of the store's shape: a header and `size` characters decoded.
fn record(size: usize) -> Vec<u8> {
    let mut rng = Rng::from_entropy(0x6c61_796f);
    let mut record = vec![0u8; HEADER_LEN + size / 4 * 3];
    for chunk in record.chunks_mut(8) {
        let bytes = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    record
}

/// `(shard, file name)` of each paste: 16 hex digits, spread over the shards.
fn names(pastes: usize) -> Vec<(usize, String)> {
    let mut rng = Rng::from_entropy(0x6e61_6d65);
    (0..pastes)
        .map(|i| (i % SHARDS, format!("{:016x}", rng.next_u64())))
        .collect()
}

fn run(
    layout: Layout,
    root: &Path,
    record: &[u8],
    names: &[(usize, String)],
    batch: usize,
) -> anyhow::Result<Sample> {
    let shards: Vec<PathBuf> = (0..SHARDS).map(|s| root.join(format!("{s:02x}"))).collect();
    for shard in &shards {
        fs::create_dir_all(shard).with_context(|| format!("creating {}", shard.display()))?;
    }
    let root_dir = File::open(root)?;
    rustix::fs::syncfs(&root_dir)?; // start from a clean filesystem
    let expires = SystemTime::now() + Duration::from_secs(7 * 24 * 3600);

    let machine_start = machine_cpu_ticks()?;
    let thread_start = thread_cpu();
    let wall_start = Instant::now();
    match layout {
        Layout::Store => {
            // Linked in the previous batch, made durable by this batch's syncfs.
            for chunk in names.chunks(batch) {
                let mut written = Vec::with_capacity(chunk.len());
                for (shard, name) in chunk {
                    let tmp = shards[*shard].join(format!(".tmp-{name}-0"));
                    let mut f = File::create_new(&tmp)?;
                    f.write_all(record)?;
                    f.set_modified(expires)?;
                    drop(f);
                    written.push((tmp, shards[*shard].join(name)));
                }
                rustix::fs::syncfs(&root_dir)?;
                for (tmp, target) in written {
                    fs::hard_link(&tmp, &target)?;
                    fs::remove_file(&tmp)?;
                }
            }
            rustix::fs::syncfs(&root_dir)?;
        }
        Layout::Tmpfile => {
            for chunk in names.chunks(batch) {
                let mut written = Vec::with_capacity(chunk.len());
                for (shard, name) in chunk {
                    let fd = rustix::fs::openat(
                        CWD,
                        &shards[*shard],
                        OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC,
                        Mode::from_raw_mode(0o644),
                    )
                    .context("O_TMPFILE (not supported by this filesystem?)")?;
                    let mut f = File::from(fd);
                    f.write_all(record)?;
                    f.set_modified(expires)?;
                    written.push((f, shards[*shard].join(name)));
                }
                rustix::fs::syncfs(&root_dir)?;
                for (f, target) in written {
                    use std::os::fd::AsRawFd as _;
                    let proc_path = format!("/proc/self/fd/{}", f.as_raw_fd());
                    rustix::fs::linkat(CWD, &proc_path, CWD, &target, AtFlags::SYMLINK_FOLLOW)?;
                }
            }
            rustix::fs::syncfs(&root_dir)?;
        }
        Layout::Direct => {
            for chunk in names.chunks(batch) {
                for (shard, name) in chunk {
                    let mut f = File::create_new(shards[*shard].join(name))?;
                    f.write_all(record)?;
                    f.set_modified(expires)?;
                }
                rustix::fs::syncfs(&root_dir)?;
            }
        }
        Layout::Append => {
            let mut segment = OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(root.join("segment"))?;
            for chunk in names.chunks(batch) {
                for _ in chunk {
                    segment.write_all(record)?;
                }
                segment.sync_data()?;
            }
        }
    }
    let wall = wall_start.elapsed();
    let thread = thread_cpu().saturating_sub(thread_start);
    let machine_ticks = machine_cpu_ticks()?.saturating_sub(machine_start);

    let per_paste = |d: Duration| d.as_secs_f64() * 1e6 / names.len() as f64;
    let tick =
        Duration::from_secs(1) / u32::try_from(loadtests::procstat::clock_ticks_per_second())?;
    Ok(Sample {
        thread_us: per_paste(thread),
        machine_us: per_paste(tick * u32::try_from(machine_ticks)?),
        wall_us: per_paste(wall),
    })
}

fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Busy clock ticks of all CPUs since boot: the first line of `/proc/stat`
/// without `idle`, `iowait` and `steal` (another guest's time), and without
/// `guest` and `guest_nice` (already in `user` and `nice`).
fn machine_cpu_ticks() -> anyhow::Result<u64> {
    let stat = fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    parse_busy_ticks(&stat).context("parsing /proc/stat")
}

fn parse_busy_ticks(stat: &str) -> anyhow::Result<u64> {
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .context("no aggregate cpu line")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .context("a field is not a number")?;
    // user nice system idle iowait irq softirq steal guest guest_nice
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    if fields.len() < 7 {
        bail!("expected at least 7 fields, found {}", fields.len());
    }
    Ok(field(0) + field(1) + field(2) + field(5) + field(6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_ticks_leave_out_idle_iowait_steal_and_guest() {
        let stat = "cpu  100 2 30 5000 40 5 6 70 9 1\ncpu0 1 1 1 1 1 1 1 1 1 1\nintr 1\n";
        assert_eq!(parse_busy_ticks(stat).unwrap(), 100 + 2 + 30 + 5 + 6);
    }

    #[test]
    fn a_short_or_missing_cpu_line_is_an_error() {
        assert!(parse_busy_ticks("intr 1\n").is_err());
        assert!(parse_busy_ticks("cpu  1 2 3\n").is_err());
        assert!(parse_busy_ticks("cpu  1 x 3 4 5 6 7\n").is_err());
    }

    #[test]
    fn records_have_the_store_shape() {
        assert_eq!(record(8192).len(), HEADER_LEN + 6144);
        assert_eq!(record(102_400).len(), HEADER_LEN + 76_800);
        let names = names(600);
        assert_eq!(names.len(), 600);
        assert!(names.iter().all(|(s, n)| *s < SHARDS && n.len() == 16));
    }

    #[test]
    fn every_layout_writes_every_paste_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let record = record(400);
        let names = names(20);
        for layout in [
            Layout::Store,
            Layout::Tmpfile,
            Layout::Direct,
            Layout::Append,
        ] {
            let root = dir.path().join(layout.name());
            match run(layout, &root, &record, &names, 3) {
                Ok(sample) => assert!(sample.wall_us > 0.0),
                // O_TMPFILE is missing on some filesystems (e.g. overlay on old kernels).
                Err(e) if layout == Layout::Tmpfile && format!("{e:#}").contains("O_TMPFILE") => {
                    continue;
                }
                Err(e) => panic!("{}: {e:#}", layout.name()),
            }
            if layout == Layout::Append {
                let len = fs::metadata(root.join("segment")).unwrap().len();
                assert_eq!(len, (record.len() * names.len()) as u64);
                continue;
            }
            for (shard, name) in &names {
                let file = root.join(format!("{shard:02x}")).join(name);
                assert_eq!(fs::read(&file).unwrap(), record, "{}", file.display());
            }
            let leftovers = fs::read_dir(&root)
                .unwrap()
                .flatten()
                .flat_map(|shard| fs::read_dir(shard.path()).unwrap().flatten())
                .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
                .count();
            assert_eq!(leftovers, 0, "{}", layout.name());
        }
    }
}
