//! A connection's socket shared between hyper, which reads requests and
//! writes answers on it, and the request handlers that must know when the
//! client has gone ([`paste_api::ClientGone`]).
//!
//! The server's connections allow a half-close (a client that shuts its
//! sending side once its request is out is still answered), so hyper does
//! not look for the end of input while it writes an answer. An event
//! stream or a long poll whose client went away would then keep its stream
//! place and its connection until its next write (a keep-alive, up to
//! 15 s later). The handlers of those answers wait on [`client_gone`]
//! instead, which peeks at the socket: the end of input or a reset means
//! the client has gone.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use paste_api::{ClientGone, GoneFuture};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The connection's I/O as hyper sees it: the socket behind an `Arc`, so
/// that [`client_gone`] can watch it too.
pub(crate) struct SharedSocket(Arc<TcpStream>);

impl SharedSocket {
    pub(crate) fn new(stream: TcpStream) -> Self {
        SharedSocket(Arc::new(stream))
    }

    /// What the connection's requests are told through.
    pub(crate) fn client_gone(&self) -> ClientGone {
        let socket = Arc::downgrade(&self.0);
        ClientGone::new(move || -> GoneFuture {
            let socket = socket.clone();
            Box::pin(async move {
                // Gone already if the connection is.
                if let Some(socket) = socket.upgrade() {
                    watch(socket).await;
                }
            })
        })
    }
}

/// Resolves when the peer of `socket` has closed its side or reset it.
async fn watch(socket: Arc<TcpStream>) {
    let mut byte = [0u8; 1];
    loop {
        match socket.peek(&mut byte).await {
            Ok(0) | Err(_) => return,
            // The client sent more (a pipelined request): it is there.
            // The bytes stay unread for hyper; look again later rather
            // than spin on them.
            Ok(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

impl AsyncRead for SharedSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            // Into the buffer's unfilled part as it is (`ReadBuf` is a
            // `BufMut`): no zeroing of hyper's read buffer on every read.
            match self.0.try_read_buf(buf) {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for SharedSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return Poll::Ready(done),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write_vectored(bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return Poll::Ready(done),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let shut = socket2::SockRef::from(&*self.0).shutdown(std::net::Shutdown::Write);
        match shut {
            // Already closed by the peer: nothing left to shut.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Poll::Ready(Ok(())),
            other => Poll::Ready(other),
        }
    }
}
