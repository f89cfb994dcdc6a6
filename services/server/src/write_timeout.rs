//! A write deadline for connections: hyper has none, so a client that
//! stops reading an answer kept its connection, and the answer's memory,
//! for as long as it liked. [`WriteTimeout`] fails a write (and so closes
//! the connection) when the socket has taken no byte for the timeout.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// An I/O stream whose writes fail with `TimedOut` once a write has waited
/// `timeout` without the peer taking a byte. The clock runs only while a
/// write is blocked: a connection idle between requests is not timed here.
pub(crate) struct WriteTimeout<T> {
    inner: T,
    timeout: Duration,
    /// Armed while a write waits; `None` when the last write went through.
    blocked: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    pub(crate) fn new(inner: T, timeout: Duration) -> Self {
        WriteTimeout {
            inner,
            timeout,
            blocked: None,
        }
    }

    /// What a write that returned `poll` becomes: progress disarms the
    /// clock; waiting arms it (once) and fails when it runs out.
    fn watch<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        match poll {
            Poll::Ready(result) => {
                self.blocked = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let sleep = self.blocked.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep_until(Instant::now() + timeout))
                });
                ready!(sleep.as_mut().poll(cx));
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client took no bytes of the answer within the write timeout",
                )))
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// A peer that stops reading fails the writer after the timeout; a
    /// peer that keeps reading, however slowly, keeps it going although the
    /// whole write takes longer than the timeout.
    #[tokio::test]
    async fn a_write_fails_only_when_the_peer_takes_nothing_for_the_timeout() {
        let timeout = Duration::from_secs(2);
        let (near, _far) = tokio::io::duplex(1024);
        let mut writer = WriteTimeout::new(near, timeout);
        let started = Instant::now();
        let stuck = writer.write_all(&[7u8; 4096]).await;
        let error = stuck.expect_err("nobody reads");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= timeout);

        // 1 KiB every 300 ms: 24 KiB take over 7 s, more than three timeouts.
        let (near, mut far) = tokio::io::duplex(1024);
        let mut writer = WriteTimeout::new(near, timeout);
        let reader = tokio::spawn(async move {
            let mut got = 0;
            let mut buf = [0u8; 1024];
            while got < 24 * 1024 {
                tokio::time::sleep(Duration::from_millis(300)).await;
                got += far.read(&mut buf).await.unwrap();
            }
            got
        });
        let started = Instant::now();
        writer.write_all(&[7u8; 24 * 1024]).await.unwrap();
        assert!(started.elapsed() > timeout * 3, "the write did wait");
        drop(writer);
        assert_eq!(reader.await.unwrap(), 24 * 1024);
    }
}
