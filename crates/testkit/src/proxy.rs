//! A TCP fault proxy for outage tests: sits between planshare and a backend
//! (Redis, S3) and, on command, passes traffic, refuses it (closes every
//! connection at once), or black-holes it (accepts and reads, never answers)
//! — the failure modes of a dead, a restarting and a hung backend.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward both ways.
    Pass,
    /// Close new and existing connections at once.
    Refuse,
    /// Accept and read, never forward or answer (existing connections too).
    Blackhole,
}

/// A running proxy; it stops when dropped.
pub struct FaultProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port in front of `upstream`.
    pub async fn start(upstream: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("proxy bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("proxy addr: {e}"));
        let (tx, _) = watch::channel(Mode::Pass);
        let mode = Arc::new(tx);
        let modes = mode.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let rx = modes.subscribe();
                tokio::spawn(handle(client, upstream, rx));
            }
        });
        FaultProxy { addr, mode, task }
    }

    /// Switches every connection, new and existing, to `mode`.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(mut client: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Mode>) {
    let current = *mode.borrow_and_update();
    match current {
        Mode::Refuse => return,
        Mode::Blackhole => return swallow(client, mode).await,
        Mode::Pass => {}
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.split();
    let (mut server_read, mut server_write) = server.split();
    let mut up = [0u8; 16 * 1024];
    let mut down = [0u8; 16 * 1024];
    loop {
        tokio::select! {
            changed = mode.changed() => {
                if changed.is_err() { return; }
                match *mode.borrow_and_update() {
                    Mode::Pass => continue,
                    Mode::Refuse => return,
                    Mode::Blackhole => break,
                }
            }
            n = client_read.read(&mut up) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if server_write.write_all(&up[..n]).await.is_err() { return },
            },
            n = server_read.read(&mut down) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if client_write.write_all(&down[..n]).await.is_err() { return },
            },
        }
    }
    drop(server);
    swallow(client, mode).await;
}

/// Reads and discards until the client leaves or the proxy refuses.
async fn swallow(mut client: TcpStream, mut mode: watch::Receiver<Mode>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        tokio::select! {
            changed = mode.changed() => {
                if changed.is_err() || *mode.borrow_and_update() == Mode::Refuse { return; }
            }
            n = client.read(&mut buf) => if matches!(n, Ok(0) | Err(_)) { return },
        }
    }
}
