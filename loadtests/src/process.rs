//! Servers under test as child processes: spawn on a free loopback port, wait
//! for `/readyz`, stop with SIGTERM, and — whatever happens, including an error
//! or Ctrl-C unwinding the runner — kill them when the guard is dropped.

use crate::client;
use anyhow::{Context as _, bail};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1 (bound once by the OS, then released).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("binding 127.0.0.1:0 for a free port")?;
    Ok(listener.local_addr()?.port())
}

/// A running server child process. Dropping it kills the process (SIGKILL) and
/// reaps it; [`ServerProcess::terminate`] stops it gracefully instead.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    name: String,
    addr: SocketAddr,
}

impl ServerProcess {
    /// Spawns `command`, which must listen on `127.0.0.1:port`. Its stdout is
    /// sent to our stderr (our stdout is the report) and stderr is inherited.
    pub fn spawn(name: &str, mut command: Command, port: u16) -> anyhow::Result<Self> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(std::io::stderr()))
            .stderr(Stdio::inherit());
        let child = command
            .spawn()
            .with_context(|| format!("starting {name}: {command:?}"))?;
        Ok(Self {
            child,
            name: name.to_owned(),
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The operating-system process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The name given at spawn time, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Fails when the process has already exited.
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let hint = if status.success() {
                " — a clean exit usually means something else sent it SIGTERM or SIGINT"
            } else {
                ""
            };
            bail!("{} exited unexpectedly ({status}){hint}", self.name);
        }
        Ok(())
    }

    /// Polls `GET /readyz` every `poll` until it answers 200; fails after
    /// `timeout` or as soon as the process exits. Returns the time waited.
    pub async fn wait_ready(
        &mut self,
        timeout: Duration,
        poll: Duration,
    ) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let deadline = start + timeout;
        loop {
            self.ensure_running()?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "{} did not answer 200 on http://{}/readyz within {timeout:?}",
                    self.name,
                    self.addr
                );
            }
            // A refused connection (not listening yet) is just "not ready".
            if client::probe_ready(self.addr, left.min(Duration::from_secs(1)))
                .await
                .unwrap_or(false)
            {
                return Ok(start.elapsed());
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Sends SIGTERM (through the `kill` command, so no `libc` or `unsafe` is
    /// needed) and waits up to `timeout` for a clean exit, after which the
    /// process is killed and an error returned. Returns the exit status and how
    /// long the shutdown took.
    pub async fn terminate(mut self, timeout: Duration) -> anyhow::Result<(ExitStatus, Duration)> {
        let start = Instant::now();
        let pid = self.pid().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .stdin(Stdio::null())
            .status()
            .context("running `kill -TERM`")?;
        if !sent.success() {
            bail!("`kill -TERM {pid}` failed ({sent})");
        }
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok((status, start.elapsed()));
            }
            if start.elapsed() >= timeout {
                // Drop kills it.
                bail!("{} did not exit within {timeout:?} of SIGTERM", self.name);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
