//! Where log lines go: a buffer in memory that a thread of its own
//! ([`LOG_WRITER_THREAD`]) writes to stderr every few milliseconds.
//!
//! A request that logs a line appends it to the buffer under a lock held for
//! the copy, and goes on: it never makes a system call for the log, never
//! wakes another thread and never waits on whoever reads stderr. The writer
//! thread swaps the buffer for an empty one every [`FLUSH_EVERY`] and
//! writes it with as few `write` calls as the pipe takes. Under load that is
//! one write per few hundred lines, where a queue whose reader is woken per
//! line costs a wake-up (and often a `write`) per request.
//!
//! A reader that stops reading blocks only the writer thread. The buffer then
//! fills up to [`MAX_BUFFERED`] bytes, and later lines are dropped and counted
//! ([`LogWriter::dropped_lines`], `planshare_log_lines_dropped_total`)
//! rather than hold up requests. [`LogWriter::finish`] writes out what is
//! buffered, for a graceful stop.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// The name of the thread that writes log lines to stderr.
pub const LOG_WRITER_THREAD: &str = "log-writer";

/// How often buffered lines are written out: how late a line may appear.
const FLUSH_EVERY: Duration = Duration::from_millis(10);

/// Bytes of lines held at most while the writer is behind (about 3 000
/// request lines, a tenth of a second of them at full load).
const MAX_BUFFERED: usize = 512 * 1024;

/// The lines waiting for the writer thread, shared with every
/// [`LineSink`].
struct Shared {
    lines: Mutex<Vec<u8>>,
    /// Wakes the writer early: at shutdown.
    wake: Condvar,
    closing: AtomicBool,
    dropped: AtomicU64,
}

impl Shared {
    fn lines(&self) -> MutexGuard<'_, Vec<u8>> {
        // A panic while appending leaves at worst a partial line.
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The log's writing end: hands out [`LineSink`]s to the formatter and owns
/// the writer thread.
pub struct LogWriter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LogWriter {
    /// Starts the writer thread over `out` (stderr in the server).
    pub fn start<W: Write + Send + 'static>(out: W) -> std::io::Result<LogWriter> {
        let shared = Arc::new(Shared {
            lines: Mutex::new(Vec::with_capacity(64 * 1024)),
            wake: Condvar::new(),
            closing: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        });
        let thread = std::thread::Builder::new()
            .name(LOG_WRITER_THREAD.to_owned())
            .spawn({
                let shared = shared.clone();
                move || write_out(&shared, out)
            })?;
        Ok(LogWriter {
            shared,
            thread: Some(thread),
        })
    }

    /// Lines dropped so far because the writer was behind.
    pub fn dropped_lines(&self) -> DroppedLines {
        DroppedLines(self.shared.clone())
    }

    /// Writes out every buffered line and stops the writer thread. Blocks
    /// while stderr does (call it outside the async runtime).
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The count of dropped lines, readable after the writer is set up.
#[derive(Clone)]
pub struct DroppedLines(Arc<Shared>);

impl DroppedLines {
    pub fn get(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }
}

/// The writer thread: every [`FLUSH_EVERY`] (or at once when closing),
/// takes what is buffered and writes it out.
fn write_out<W: Write>(shared: &Shared, mut out: W) {
    let mut batch = Vec::with_capacity(64 * 1024);
    loop {
        let closing = {
            let mut lines = shared.lines();
            if !shared.closing.load(Ordering::Acquire) {
                // Let lines gather: one write per interval, not per line.
                lines = shared
                    .wake
                    .wait_timeout(lines, FLUSH_EVERY)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            std::mem::swap(&mut *lines, &mut batch);
            shared.closing.load(Ordering::Acquire)
        };
        if !batch.is_empty() {
            // A failed write (stderr closed) loses the batch; nothing
            // else can be done with it.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
            // Keep the spare buffer's size in bounds after a burst.
            batch.shrink_to(64 * 1024);
        }
        if closing && shared.lines().is_empty() {
            return;
        }
    }
}

/// One line's way into the buffer (the formatter writes each line with one
/// `write_all`).
pub struct LineSink(Arc<Shared>);

impl Write for LineSink {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut lines = self.0.lines();
        if lines.len() + line.len() > MAX_BUFFERED {
            drop(lines);
            self.0.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            lines.extend_from_slice(line);
        }
        // Claimed as written either way: a dropped line is counted, not an
        // error for the formatter to report.
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// [`MakeWriter`] for the formatter layer, which must own it.
#[derive(Clone)]
pub struct Sinks(Arc<Shared>);

impl LogWriter {
    /// The formatter's handle on the buffer.
    pub fn sinks(&self) -> Sinks {
        Sinks(self.shared.clone())
    }
}

impl<'a> MakeWriter<'a> for Sinks {
    type Writer = LineSink;

    fn make_writer(&'a self) -> LineSink {
        LineSink(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::fmt::MakeWriter as _;

    use super::*;

    /// An in-memory stderr that can be read back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_out_after_finish_in_order() {
        let out = Captured::default();
        let writer = LogWriter::start(out.clone()).unwrap();
        let mut sink = writer.sinks().make_writer();
        for i in 0..1000 {
            writeln!(sink, "line {i}").unwrap();
        }
        writer.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected);
    }

    #[test]
    fn lines_appear_without_a_finish() {
        let out = Captured::default();
        let writer = LogWriter::start(out.clone()).unwrap();
        writeln!(writer.sinks().make_writer(), "hello").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.0.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(&*out.0.lock().unwrap(), b"hello\n");
        assert_eq!(writer.dropped_lines().get(), 0);
    }

    /// A stderr nobody reads: the first write never returns.
    struct Stuck(Arc<(Mutex<bool>, Condvar)>);

    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (released, cv) = &*self.0;
            let mut released = released.lock().unwrap();
            while !*released {
                released = cv.wait(released).unwrap();
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_reader_costs_lines_not_the_logger() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let writer = LogWriter::start(Stuck(gate.clone())).unwrap();
        let mut sink = writer.sinks().make_writer();
        let line = [b'x'; 1023];
        // Far more than the buffer holds; every call returns at once.
        for _ in 0..(4 * MAX_BUFFERED / 1024) {
            sink.write_all(&line).unwrap();
            sink.write_all(b"\n").unwrap();
        }
        assert!(writer.dropped_lines().get() > 0);
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        writer.finish();
    }
}
