//! What a request knows of the connection it came on, beyond its peer's
//! address: whether its client is still there.
//!
//! A long-lived answer (an event stream, a long poll) holds a stream place
//! and a connection place while it waits. A client that goes away (closes
//! its socket, or the process dies) must give both back at once, not at the
//! stream's next write: the server's connections allow a half-close (a
//! client that shuts its sending side once the request is out is still
//! answered), so the HTTP layer does not watch for that end of input while
//! an answer is being written. The server inserts a [`ClientGone`] into
//! each request's extensions; the stream handlers wait on it beside their
//! events.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A future that resolves once the client has gone.
pub type GoneFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Tells when the client of a request's connection has closed its side of
/// it or reset it (see the module documentation). Requests without one
/// (a router called directly, in tests) are never told.
#[derive(Clone)]
pub struct ClientGone(Arc<dyn Fn() -> GoneFuture + Send + Sync>);

impl ClientGone {
    /// `watch` makes a future that resolves when the client has gone; it
    /// is called once per long-lived answer.
    pub fn new(watch: impl Fn() -> GoneFuture + Send + Sync + 'static) -> Self {
        ClientGone(Arc::new(watch))
    }

    /// Resolves when the client has gone.
    pub(crate) fn wait(&self) -> GoneFuture {
        (self.0)()
    }

    /// For a request without one: never resolves.
    pub(crate) fn never() -> GoneFuture {
        Box::pin(std::future::pending())
    }
}

impl fmt::Debug for ClientGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientGone")
    }
}
