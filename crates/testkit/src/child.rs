//! A server binary run as a child process, for tests of what only the whole
//! process shows (its log, its signals, its exit).

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running child process: killed (SIGKILL) and reaped when dropped, so a
/// failing test leaves nothing behind.
#[derive(Debug)]
pub struct ChildServer {
    child: Child,
}

impl ChildServer {
    /// Starts `command`.
    ///
    /// # Panics
    /// When it cannot be started.
    pub fn spawn(command: &mut Command) -> ChildServer {
        match command.spawn() {
            Ok(child) => ChildServer { child },
            Err(error) => panic!("cannot start {command:?}: {error}"),
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, then waits up to `timeout` for the process to exit;
    /// whether it did.
    ///
    /// # Panics
    /// When `kill -TERM` fails, or the exit status cannot be read.
    pub async fn terminate(&mut self, timeout: Duration) -> bool {
        let pid = self.child.id().to_string();
        let signalled = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(signalled.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) => return true,
                Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(error) => panic!("cannot wait for process {pid}: {error}"),
            }
        }
        false
    }
}

/// Polls `<base>/readyz` every 25 ms until it answers 200, for `timeout` at
/// most; whether it did.
pub async fn wait_ready(base: &str, timeout: Duration) -> bool {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(5))
        .build();
    let Ok(client) = client else { return false };
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let probe = client.get(format!("{base}/readyz")).send().await;
        if probe.is_ok_and(|r| r.status() == 200) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
