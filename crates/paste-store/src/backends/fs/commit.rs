//! Group commit for the fs backend ([`FsSync::Batch`](crate::FsSync)).
//!
//! Puts go through two threads of their own instead of the blocking pool:
//!
//! - the **write thread** takes every put handed over since it last looked
//!   and writes each to its temporary file (written, closed, not flushed);
//! - the **commit thread** runs rounds of a pipeline around `syncfs(2)` on
//!   the paste directory's filesystem. Each round takes the puts written
//!   since the last one, calls `syncfs` once — which makes durable the data
//!   of those puts *and* the directory entries linked in the previous
//!   round — then answers the previous round's puts (their names are durable
//!   now) and links the new ones to their final names (their data is
//!   durable now), for the next round's `syncfs` to make durable.
//!
//! So every put still goes "data durable → link → name durable → 201", as
//! with one `fsync` per file and directory, but a flush costs the same for
//! one put as for a hundred: under concurrency the puts share it. A round
//! starts as soon as there is work; nothing waits for a batch to fill, so a
//! lone put pays two `syncfs` calls, about what two `fsync`s cost. Handing
//! puts over in batches also saves the two thread wake-ups per put that the
//! blocking pool costs: a thread that is already busy is not woken.
//!
//! A failed `syncfs` fails every put it was meant to cover (the files are
//! removed, the puts answer `Unavailable`); nothing is retried and then
//! acknowledged. Since Linux 5.8 `syncfs` reports write-back errors of the
//! whole filesystem, which is what makes it usable for this.
//!
//! A put whose caller stops waiting still runs to its end on these threads
//! (the answer is dropped), so it never stops between two steps.

use std::fs::{self, File};
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

use tokio::sync::oneshot;

use super::{Inner, Pending, acknowledge, io_unavailable};
use crate::{PasteKey, StoreError, StoredPaste};

type Reply = oneshot::Sender<Result<(), StoreError>>;

/// The handle of the write and commit threads; dropping it lets them finish
/// what they hold and exit.
#[derive(Debug)]
pub(super) struct Committer {
    writes: Arc<Handoff<Write>>,
}

/// A put waiting for the write thread.
#[derive(Debug)]
struct Write {
    key: PasteKey,
    paste: StoredPaste,
    reply: Reply,
}

/// A put whose temporary file is written, on its way through the commit
/// thread.
#[derive(Debug)]
struct Put {
    pending: Pending,
    reply: Reply,
}

fn answer(reply: Reply, result: Result<(), StoreError>) {
    // The caller may have stopped waiting: the outcome is on disk either way.
    let _ = reply.send(result);
}

impl Committer {
    /// Starts the write and commit threads for the store's root directory.
    pub(super) fn start(inner: Arc<Inner>) -> io::Result<Committer> {
        let root = File::open(&inner.root)?;
        let writes = Arc::new(Handoff::default());
        let puts = Arc::new(Handoff::default());

        let commit_inner = inner.clone();
        let commit_puts = puts.clone();
        thread::Builder::new()
            .name("planshare-fs-commit".into())
            .spawn(move || commit_rounds(&commit_puts, &commit_inner, &root))?;

        let write_queue = writes.clone();
        let written = puts.clone();
        let spawned = thread::Builder::new()
            .name("planshare-fs-write".into())
            .spawn(move || write_batches(&write_queue, &inner, &written));
        if let Err(e) = spawned {
            puts.close(); // lets the commit thread exit
            return Err(e);
        }
        Ok(Committer { writes })
    }

    /// Stores `paste` at `key`: resolves once it is durable under its final
    /// name, or with why it is not.
    pub(super) async fn put(&self, key: PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.writes.push(Write { key, paste, reply });
        answer
            .await
            .map_err(|_| StoreError::internal("the fs store's write threads stopped"))?
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.writes.close();
    }
}

/// The write thread: writes batches of temporary files and hands them on.
fn write_batches(writes: &Handoff<Write>, inner: &Inner, puts: &Handoff<Put>) {
    while let Some(batch) = writes.take(true) {
        let mut written = Vec::with_capacity(batch.len());
        for Write { key, paste, reply } in batch {
            match inner.write_tmp_for_batch(&key, &paste) {
                Ok(Some(pending)) => written.push(Put { pending, reply }),
                Ok(None) => answer(reply, Ok(())),
                Err(e) => answer(reply, Err(e)),
            }
        }
        puts.push_all(written);
    }
    puts.close();
}

/// The commit thread: rounds of the pipeline until closed and drained.
fn commit_rounds(puts: &Handoff<Put>, inner: &Inner, root: &File) {
    // Puts linked in the previous round, waiting for their names to be durable.
    let mut linked: Vec<Put> = Vec::new();
    loop {
        let fresh = match puts.take(linked.is_empty()) {
            Some(fresh) => fresh,
            None if linked.is_empty() => return,
            None => Vec::new(),
        };
        match syncfs(root) {
            Ok(()) => {
                for put in linked.drain(..) {
                    answer(put.reply, acknowledge());
                }
                for put in fresh {
                    match inner.link_flushed(&put.pending) {
                        Ok(()) => linked.push(put),
                        Err(e) => answer(put.reply, Err(e)),
                    }
                }
            }
            Err(e) => {
                for put in linked.drain(..) {
                    // Not durable, so not acknowledged; take it back out of view.
                    let _ = fs::remove_file(&put.pending.target);
                    let error =
                        io_unavailable("cannot flush the paste directory to disk", copy(&e));
                    answer(put.reply, Err(error));
                }
                for put in fresh {
                    let _ = fs::remove_file(&put.pending.tmp);
                    let error = io_unavailable("cannot flush the paste file to disk", copy(&e));
                    answer(put.reply, Err(error));
                }
            }
        }
    }
}

/// `io::Error` is not `Clone`; each failed put gets its own.
fn copy(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

fn syncfs(root: &File) -> io::Result<()> {
    fail::fail_point!("fs::syncfs", |_| Err(io::Error::from_raw_os_error(5)));
    rustix::fs::syncfs(root).map_err(io::Error::from)
}

/// A queue from any number of producers to one consumer thread, taken in
/// batches. The consumer is only woken (a system call) when it is asleep.
#[derive(Debug)]
struct Handoff<T> {
    state: Mutex<HandoffState<T>>,
    wake: Condvar,
}

#[derive(Debug)]
struct HandoffState<T> {
    items: Vec<T>,
    closed: bool,
    sleeping: bool,
}

impl<T> Default for Handoff<T> {
    fn default() -> Self {
        Handoff {
            state: Mutex::new(HandoffState {
                items: Vec::new(),
                closed: false,
                sleeping: false,
            }),
            wake: Condvar::new(),
        }
    }
}

impl<T> Handoff<T> {
    fn lock(&self) -> MutexGuard<'_, HandoffState<T>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, item: T) {
        let mut state = self.lock();
        state.items.push(item);
        self.wake_if_asleep(state);
    }

    fn push_all(&self, items: Vec<T>) {
        if items.is_empty() {
            return;
        }
        let mut state = self.lock();
        state.items.extend(items);
        self.wake_if_asleep(state);
    }

    fn wake_if_asleep(&self, mut state: MutexGuard<'_, HandoffState<T>>) {
        if state.sleeping {
            state.sleeping = false;
            drop(state);
            self.wake.notify_one();
        }
    }

    fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        self.wake_if_asleep(state);
    }

    /// Everything queued. With `wait`, sleeps until there is something;
    /// `None` once closed with nothing left. Without `wait`, returns what
    /// there is (possibly nothing), `None` only when closed and empty.
    fn take(&self, wait: bool) -> Option<Vec<T>> {
        let mut state = self.lock();
        while wait && state.items.is_empty() && !state.closed {
            state.sleeping = true;
            state = self
                .wake
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.sleeping = false;
        if state.items.is_empty() && state.closed {
            return None;
        }
        Some(std::mem::take(&mut state.items))
    }
}
