//! The accept loop both serving binaries run: accept (backing off when
//! accepting fails), give each connection a place under the connection
//! limit, serve it in a task of its own that holds the place until the
//! connection ends, and at shutdown drain what is in flight within a grace
//! period.
//!
//! What a connection is served with — plain HTTP or TLS, the router, the
//! deadlines of the request head — and what happens when every place is
//! taken (wait for one, refuse, or serve a few more for the probes only)
//! are the server's own: it says so through [`Serve`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long the loop waits after a failed `accept` (out of file
/// descriptors and the like) before accepting again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// One accepted connection, handed to [`Serve::serve`].
#[derive(Debug)]
pub struct Connection {
    /// Its socket.
    pub stream: TcpStream,
    /// The client's address.
    pub peer: SocketAddr,
    /// What the drain watches it by: pass the HTTP connection to
    /// [`Watcher::watch`] so that shutdown waits for its request in flight.
    pub watcher: Watcher,
}

/// What to do with a connection accepted while every place is taken.
#[derive(Debug)]
pub enum WhenFull<M> {
    /// Wait until a place is free (the connection waits, unserved).
    Wait,
    /// Close it at once.
    Refuse,
    /// Serve it anyway, in `M`'s way, holding a place of another limit.
    Serve(OwnedSemaphorePermit, M),
}

/// A server's own part of the loop: how a connection is served, and what
/// happens when every place is taken.
pub trait Serve: Clone + Send + 'static {
    /// How a connection is served, decided when it is placed (for a
    /// server that serves connections past its limit differently).
    type Mode: Send + 'static;

    /// The mode of a connection that got one of the limit's places.
    fn placed(&self) -> Self::Mode;

    /// What to do with a connection when every place is taken. The
    /// default: wait for a place.
    fn when_full(&self) -> WhenFull<Self::Mode> {
        WhenFull::Wait
    }

    /// Serves `connection` (in a task of its own) to its end.
    fn serve(self, connection: Connection, mode: Self::Mode) -> impl Future<Output = ()> + Send;
}

/// The connections of one listener: their limit and their drain.
#[derive(Debug)]
pub struct Connections {
    places: Arc<Semaphore>,
    graceful: GracefulShutdown,
}

impl Connections {
    /// At most `max` connections served at once (at least one).
    pub fn new(max: usize) -> Self {
        Connections {
            places: Arc::new(Semaphore::new(max.max(1))),
            graceful: GracefulShutdown::new(),
        }
    }

    /// Accepts on `listener` until `until` resolves, serving each
    /// connection with `server` in a task of its own; returns with the
    /// listener still open (the caller decides when to close it).
    pub async fn accept_until<S: Serve>(
        &self,
        listener: &TcpListener,
        until: impl Future<Output = ()>,
        server: &S,
    ) {
        let mut until = std::pin::pin!(until);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: back off, keep serving.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                },
                () = &mut until => return,
            };
            let (permit, mode) = match self.places.clone().try_acquire_owned() {
                Ok(permit) => (permit, server.placed()),
                Err(_) => match server.when_full() {
                    WhenFull::Serve(permit, mode) => (permit, mode),
                    WhenFull::Refuse => continue,
                    WhenFull::Wait => tokio::select! {
                        permit = self.places.clone().acquire_owned() => match permit {
                            Ok(permit) => (permit, server.placed()),
                            // Never closed; were it, nothing more could be served.
                            Err(_) => return,
                        },
                        () = &mut until => return,
                    },
                },
            };
            let connection = Connection {
                stream,
                peer,
                watcher: self.graceful.watcher(),
            };
            let server = server.clone();
            tokio::spawn(async move {
                server.serve(connection, mode).await;
                drop(permit);
            });
        }
    }

    /// Waits up to `grace` for the connections in flight to finish (each
    /// told to close once its current request is answered); `false` when
    /// the grace period ran out first (the rest are then dropped).
    pub async fn drain(self, grace: Duration) -> bool {
        tokio::time::timeout(grace, self.graceful.shutdown())
            .await
            .is_ok()
    }
}

/// Waits until `stream` has a first byte to read, up to `deadline`; the
/// byte (peeked, not consumed), or `None` when the client sent nothing in
/// time or went away. hyper's header-read timer starts only once bytes
/// arrive: a silent connection is closed by this.
pub async fn first_byte(stream: &TcpStream, deadline: tokio::time::Instant) -> Option<u8> {
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
        Ok(Ok(n)) if n > 0 => Some(first[0]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// Answers one line per connection, after `release` opens, counting
    /// the connections served at once.
    #[derive(Clone)]
    struct Echo {
        busy: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        release: Arc<Semaphore>,
        overflow: Option<Arc<Semaphore>>,
    }

    impl Serve for Echo {
        type Mode = &'static str;
        fn placed(&self) -> &'static str {
            "placed"
        }
        fn when_full(&self) -> WhenFull<&'static str> {
            match &self.overflow {
                Some(extra) => match extra.clone().try_acquire_owned() {
                    Ok(permit) => WhenFull::Serve(permit, "extra"),
                    Err(_) => WhenFull::Refuse,
                },
                None => WhenFull::Wait,
            }
        }
        async fn serve(self, mut connection: Connection, mode: &'static str) {
            let now = self.busy.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let _ = self.release.acquire().await.map(|p| p.forget());
            let _ = connection.stream.write_all(mode.as_bytes()).await;
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Waits (up to 5 s) until `busy` connections are being served.
    async fn until_busy(server: &Echo, busy: usize) {
        for _ in 0..500 {
            if server.busy.load(Ordering::SeqCst) == busy {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("never {busy} connections served at once");
    }

    async fn read_all(addr: SocketAddr) -> String {
        let mut stream = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out).await;
        out
    }

    fn echo(overflow: Option<usize>) -> Echo {
        Echo {
            busy: Arc::default(),
            most: Arc::default(),
            release: Arc::new(Semaphore::new(0)),
            overflow: overflow.map(|n| Arc::new(Semaphore::new(n))),
        }
    }

    /// Past the limit a connection waits for a place: never more than the
    /// limit served at once, and every connection served in the end.
    #[tokio::test]
    async fn connections_past_the_limit_wait_for_a_place() {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let server = echo(None);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let looped = {
            let server = server.clone();
            tokio::spawn(async move {
                let connections = Connections::new(2);
                connections
                    .accept_until(
                        &listener,
                        async {
                            let _ = stopped.await;
                        },
                        &server,
                    )
                    .await;
                connections.drain(Duration::from_secs(5)).await
            })
        };
        let clients: Vec<_> = (0..5).map(|_| tokio::spawn(read_all(addr))).collect();
        until_busy(&server, 2).await;
        // The other three were accepted by now, or are in the backlog.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(server.most.load(Ordering::SeqCst), 2, "two places");
        server.release.add_permits(5);
        for client in clients {
            assert_eq!(client.await.unwrap_or_default(), "placed");
        }
        assert_eq!(server.most.load(Ordering::SeqCst), 2);
        let _ = stop.send(());
        assert!(looped.await.unwrap_or(false), "drained within the grace");
    }

    /// A server that serves a few more past its limit does so in their
    /// own mode, and refuses the rest.
    #[tokio::test]
    async fn a_full_server_may_serve_extra_connections_or_refuse_them() {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let server = echo(Some(1));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let looped = {
            let server = server.clone();
            tokio::spawn(async move {
                let connections = Connections::new(1);
                connections
                    .accept_until(
                        &listener,
                        async {
                            let _ = stopped.await;
                        },
                        &server,
                    )
                    .await;
                connections.drain(Duration::from_secs(5)).await
            })
        };
        let held = tokio::spawn(read_all(addr));
        until_busy(&server, 1).await;
        // The one place is held: the next gets the extra place...
        let extra = tokio::spawn(read_all(addr));
        until_busy(&server, 2).await;
        // ...and the one after that is closed unanswered.
        assert_eq!(read_all(addr).await, "", "refused");
        server.release.add_permits(2);
        assert_eq!(held.await.unwrap_or_default(), "placed");
        assert_eq!(extra.await.unwrap_or_default(), "extra");
        let _ = stop.send(());
        assert!(looped.await.unwrap_or(false));
    }

    #[tokio::test]
    async fn a_silent_connection_has_no_first_byte() {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let _silent = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (stream, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
        let soon = tokio::time::Instant::now() + Duration::from_millis(100);
        assert_eq!(first_byte(&stream, soon).await, None);
        let mut talking = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        talking
            .write_all(b"G")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (stream, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
        let soon = tokio::time::Instant::now() + Duration::from_secs(5);
        assert_eq!(first_byte(&stream, soon).await, Some(b'G'));
    }
}
